"""T4 acceptance: the first loss-recovery episode of FreeBSD with D43470 (s1), FreeBSD base (s2)
and Linux 5.15 (s3), each alone against 500 Mbit/s of UDP, judged by one rule for all stacks. The
FreeBSD senders run the seed's tree (version 15.0-2024-10); where the model of that code cannot
give the seed's observation, docs/models.md ("T4's observations") names the code path."""

from pathlib import Path

import pytest

import tcplab
from tcplab.analysis.recovery import first_per_flow
from tcplab.spec import load_spec

MSS = 1448


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory):
    run = tcplab.run("T4", out=tmp_path_factory.mktemp("t4") / "run", report=False)
    eps = first_per_flow(run.recovery).set_index("flow")
    assert list(eps.index) == ["s1", "s2", "s3"]
    assert (eps["kind"] == "fast recovery").all()
    return eps


def test_base_freebsd_enters_recovery_with_one_mss(first):
    assert first.loc["s2", "cwnd_entry_bytes"] == MSS


def test_d43470_and_linux_enter_recovery_with_at_least_half_the_flight(first):
    for flow in ("s1", "s3"):
        ep = first.loc[flow]
        assert ep["cwnd_entry_bytes"] >= ep["flight_before_bytes"] / 2, flow


def test_base_freebsd_and_linux_send_tso_bursts_during_recovery(first):
    # Base: new data in recovery (tcp_output.c before D43470: cwin = snd_cwnd - (snd_nxt -
    # snd_recover) - sack_bytes_rxmt) leaves in TSO chunks; Linux: tcp_write_xmit() with TSO.
    assert first.loc["s2", "tso_sends"] and first.loc["s3", "tso_sends"]


def test_d43470_as_committed_sends_single_segment_holes_and_no_new_data(first):
    # D43470 as committed (nibanks/freebsd-src tcp_output.c @ 0714807e): new data in recovery
    # needs min(sbavail, sendwin) > max(tcp_compute_pipe(), off), i.e. cwnd beyond snd_max -
    # snd_una, which tcp_do_prr_ack()'s `pipe - del_data + snd_cnt * maxseg` does not reach; the
    # holes of this episode are single segments (every other segment lost to the UDP stream), so
    # net.inet.tcp.sack.tso = 1 has nothing to join. The seed saw TSO bursts here: see
    # docs/models.md, "T4's observations".
    ep = first.loc["s1"]
    assert not ep["tso_sends"]
    assert ep["largest_send_bytes"] == MSS


def test_no_stack_sends_fractional_segments_in_the_first_episode(first):
    # Linux never does (tcp_write_xmit() sends whole segments unless the queue empties); the
    # FreeBSD budgets of this episode are whole segments (docs/models.md lists each sub-MSS path
    # and why none fires here).
    assert not first["fractional_sends"].any()


def test_lro_stretch_acks_slow_freebsds_abc_slow_start_but_not_linuxs(first, tmp_path: Path):
    # The preset's FreeBSD receivers aggregate with LRO (an interrupt per 125 us): an ACK per
    # aggregate of n > 2 segments grows FreeBSD's cwnd by abc_l_var = 2 MSS, not n (cc.c
    # newreno_cc_ack_received(), cubic_does_slow_start()), so its slow start reaches the loss later
    # than with a receiver that hands TCP every segment; Linux's tcp_slow_start() counts every
    # packet acked and does not change.
    data, _ = load_spec("T4")
    for r in ("r1", "r2", "r3"):
        del data["hosts"][r]["nic"]
    plain = first_per_flow(tcplab.run(data, out=tmp_path / "plain", report=False).recovery).set_index("flow")
    for fb in ("s1", "s2"):
        assert first.loc[fb, "start_s"] > plain.loc[fb, "start_s"] + 0.1
    assert first.loc["s3", "start_s"] == pytest.approx(plain.loc["s3", "start_s"], abs=0.005)


def test_lost_retransmission_detection_saves_the_base_but_not_d43470_from_the_timer(first):
    # Both lose a fast retransmission to the full queue. net.inet.tcp.sack.lrd = 1 (the 2024-10
    # tree): the base sends new data in recovery, whose SACKs above snd_recover reveal the loss
    # (tcp_sack_lost_retransmission()); with D43470 no new data leaves in recovery, so only the
    # RTO repairs it.
    assert first.loc["s2", "ended_by"] == "full ack"
    assert first.loc["s1", "ended_by"] == "rto"

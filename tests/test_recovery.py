"""The loss-recovery episode analyser, on hand-built records with known answers, and on a run."""

from pathlib import Path

import pandas as pd

import tcplab
from conftest import tcplab as cli
from tcplab.analysis.recovery import episodes, first_per_flow

MSS = 1448


def ev(t_s, event, cwnd, ssthresh, outstanding, retrans, flow="a"):
    return {"t_ns": int(t_s * 1e9), "flow": flow, "event": event, "cwnd_bytes": cwnd, "ssthresh_bytes": ssthresh,
            "flight_bytes": 0, "outstanding_bytes": outstanding, "retrans_segs": retrans}


def send(t_s, nbytes, flow="a"):
    return {"t_ns": int(t_s * 1e9), "flow": flow, "seq": 0, "bytes": nbytes, "segments": 1, "retx": 0, "state": 1}


EVENTS = pd.DataFrame([
    ev(1.0, 1, MSS, 50_000, 100_000, 0), ev(1.1, 2, 50_000, 50_000, 60_000, 5),      # fast recovery, full ack
    ev(2.0, 1, 40_000, 40_000, 80_000, 7), ev(2.3, 3, MSS, 40_000, 90_000, 9),        # ... ended by an RTO
    ev(2.9, 3, MSS, 40_000, 90_000, 12), ev(3.5, 4, 30_000, 40_000, 70_000, 20),     # two timeouts, one episode
    ev(1.5, 1, 8_000, 8_000, 16_000, 0, flow="b"),                                   # never ends
])
SENDS = pd.DataFrame([send(1.01, MSS), send(1.02, 2 * MSS), send(1.05, 700), send(1.2, 64_000),
                      send(2.1, MSS), send(2.5, MSS), send(1.6, 3 * MSS, flow="b")])


def test_episodes_follow_events_with_one_rule_for_tso_and_fractional_sends():
    eps = episodes(EVENTS, SENDS, {"a": MSS, "b": MSS})
    a = eps[eps["flow"] == "a"].reset_index(drop=True)
    assert list(a["kind"]) == ["fast recovery", "fast recovery", "rto"]
    assert list(a["ended_by"]) == ["full ack", "rto", "full ack"]
    assert a["duration_s"].round(9).tolist() == [0.1, 0.3, 1.2]
    assert a.loc[0, "cwnd_entry_bytes"] == MSS and a.loc[0, "cwnd_exit_bytes"] == 50_000
    assert a.loc[0, "flight_before_bytes"] == 100_000
    assert a["retransmissions"].tolist() == [5, 2, 11]
    assert a.loc[2, "rtos"] == 2
    # episode 1 saw a 2-MSS send and a 700-byte one; the 64 KB send at 1.2 s is after it ended
    assert (a.loc[0, "tso_sends"], a.loc[0, "fractional_sends"], a.loc[0, "largest_send_bytes"]) == (True, True, 2 * MSS)
    assert (a.loc[1, "tso_sends"], a.loc[1, "fractional_sends"]) == (False, False)
    b = eps[eps["flow"] == "b"].iloc[0]
    assert b["ended_by"] == "end of run" and b["tso_sends"]


def test_a_probe_whose_loss_fast_recovery_repairs_is_its_own_episode():
    events = pd.DataFrame([
        ev(5.0, 6, 20_000, 10_000, 20_000, 0, flow="c"),   # tail loss probe
        ev(5.05, 1, 18_000, 14_000, 20_000, 1, flow="c"),  # its SACK reveals a loss
        ev(5.1, 2, 14_000, 14_000, 10_000, 2, flow="c"),
        ev(7.0, 6, 20_000, 14_000, 20_000, 2, flow="c"), ev(7.04, 7, 20_000, 14_000, 5_000, 3, flow="c"),
    ])
    eps = episodes(events, None, {"c": MSS})
    assert list(eps["kind"]) == ["tlp", "fast recovery", "tlp"]
    assert list(eps["ended_by"]) == ["fast recovery", "full ack", "probe acked"]
    assert eps["duration_s"].round(9).tolist() == [0.05, 0.05, 0.04]


def test_without_send_records_tso_and_fractional_are_unknown():
    eps = episodes(EVENTS, None, {"a": MSS, "b": MSS})
    assert eps["tso_sends"].isna().all() and eps["fractional_sends"].isna().all()
    assert list(first_per_flow(eps)["episode"]) == [1, 1]


def test_recovery_command_on_a_run_with_send_records(tmp_path: Path):
    spec = {"name": "lossy", "topology": {"kind": "pipe", "bottleneck": {"rate": "100Mbit", "rtt": "20ms", "buffer": "30p"}},
            "senders": {"s1": {"to": "r1", "time": "3s", "cc": "newreno"}}, "trace": {"sends": True}}
    run = tcplab.run(spec, out=tmp_path / "r", report=False)
    eps = run.recovery
    assert len(eps) >= 1 and eps["tso_sends"].notna().all()
    # the analyser agrees with the simulator's own counters
    assert (eps["kind"] == "fast recovery").sum() == run.info["flows"][0]["recoveries"]
    proc = cli("recovery", str(run.path), "--first", cwd=tmp_path, check=True)
    assert "fast recovery" in proc.stdout and "TSO" in proc.stdout


def test_chart_envelope_keeps_every_extreme_in_time_order():
    import numpy as np

    from tcplab.report.plots import envelope

    rng = np.random.default_rng(5)
    values = rng.integers(0, 1_000_000, 100_000)
    values[54_321] = 5_000_000  # a spike
    values[77_777] = -1  # a drop
    df = pd.DataFrame({"t_ns": np.arange(100_000), "cwnd_bytes": values})
    env = envelope(df, "cwnd_bytes", buckets=1000)
    assert len(env) <= 2000
    assert list(env["t_ns"]) == sorted(env["t_ns"])
    assert {54_321, 77_777} <= set(env["t_ns"])
    # every bucket's max survives: the envelope's max over any bucket equals the original's
    for a in range(0, 100_000, 100):
        assert env[(env.t_ns >= a) & (env.t_ns < a + 100)]["cwnd_bytes"].max() == values[a:a + 100].max()


def test_no_stack_retransmits_what_the_receiver_already_has_on_a_fifo_path(tmp_path: Path):
    # 2% random loss: recoveries and timeouts on every stack, yet no segment reaches the receiver
    # twice, because links here never reorder or duplicate (docs/models.md: why Linux's undo of
    # spurious reductions is not modelled). The counter itself is checked in receiver.rs.
    # The receivers here are plain hosts (no GRO, no interrupt moderation): with T1's moderated
    # NICs (rx_usecs = 250) Linux sees 1-3 duplicate segments in 8 s at this loss rate, whose cause
    # (a real spurious retransmission or a model artefact) is not yet established (docs/models.md,
    # "Hosts and NICs": open question).
    plain = [f"hosts.{r}.nic.{k}={v}" for r in ("r1", "r2") for k, v in (("gro", "false"), ("rx_usecs", "0"))]
    for stack in ("linux", "freebsd", "freebsd-rack"):
        run = tcplab.run("T1", out=tmp_path / stack, report=False, duration="8s",
                         set=[f"senders.*.stack={stack}", "topology.bottleneck.loss=0.02", *plain])
        for f in run.info["flows"]:
            assert f["retransmits"] > 20 and f["rtos"] + f["recoveries"] > 5, (stack, f)
            assert f["duplicates_received"] == 0, (stack, f)

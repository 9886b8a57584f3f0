"""The linux model target on the upstream scripts it was fixed against (issue 32: every script
the kernel passes, the linux model passes). Reads ../shared/packetdrill (test data outside the
repository); each row names the kernel code the model follows for it."""

from __future__ import annotations

import pytest

from tcplab.drill.runner import run

from conftest import PACKETDRILL, REPO, assert_linux_model_passes

SHARED = PACKETDRILL  # reads ../shared/packetdrill
READS_SHARED = True  # every test here (conftest.py skips them only where ../shared is absent)

# (script, what in the model makes it pass)
PASSING = [
    # tcp_cwnd_validate() / tcp_is_cwnd_limited(): slow start grows to twice max_packets_out.
    ("google/slow_start/slow-start-app-limited.pkt", "is_cwnd_limited"),
    ("google/slow_start/slow-start-app-limited-9-packets-out.pkt", "max_packets_out"),
    ("linux-selftests/tcp_slow_start_slow-start-app-limited.pkt", "is_cwnd_limited"),
    ("linux-selftests/tcp_slow_start_slow-start-app-limited-9-packets-out.pkt", "max_packets_out"),
    # tcp_cong_control(): cong_avoid with the packets newly delivered (SACKed ones once).
    ("google/limited_transmit/limited-transmit-sack.pkt", "delivered"),
    ("google/limited_transmit/limited-transmit-no-sack.pkt", "tcp_remove_reno_sacks"),
    ("linux-selftests/tcp_limited_transmit_limited-transmit-sack.pkt", "delivered"),
    ("linux-selftests/tcp_limited_transmit_limited-transmit-no-sack.pkt", "tcp_remove_reno_sacks"),
    ("google/fast_recovery/prr-ss-10pkt-lost-1.pkt", "delivered"),
    ("linux-selftests/tcp_fast_recovery_prr-ss-10pkt-lost-1.pkt", "delivered"),
    # The RACK reordering timer: usecs_to_jiffies(min(min_rtt/4, srtt) + 2 ms) on the timer
    # wheel's tick (30 ms after the SACK at HZ 250; the script allows 23-31 ms), then
    # tp->reordering from tcp_check_sack_reordering() (tcpi_reordering 3, then 5).
    ("google/sack/sack-shift-sacked-7-3-4-8-9-fack.pkt", "RACK timer in jiffies, reordering"),
    ("linux-selftests/tcp_sack_sack-shift-sacked-7-3-4-8-9-fack.pkt", "RACK timer in jiffies, reordering"),
    ("google/sack/sack-shift-sacked-2-6-8-3-9-nofack.pkt", "reordering"),
    # The loss probe re-armed only by an ACK that acknowledges data (FLAG_SET_XMIT_TIMER): a
    # SACK of the last byte alone (no whole segment) leaves it at 2 srtt + 2 ms from the send.
    ("google/fast_retransmit/fr-4pkt-fack-last-byte.pkt", "TLP not re-armed"),
    # tcp_cubic's hystart_detect=3 is the model's HyStart (ACK train and delay).
    ("google/cubic/cubic-hystart-delay-min-rtt-jumps-downward.pkt", "hystart_detect 3"),
    ("google/cubic/cubic-hystart-delay-rtt-jumps-upward.pkt", "hystart_detect 3"),
    # TCP_MAXSEG: user_mss clamps the advertised and the sending MSS; getsockopt reports it.
    ("google/mss/mss-getsockopt-tcp_maxseg-server.pkt", "getsockopt TCP_MAXSEG"),
    ("google/mss/mss-setsockopt-tcp_maxseg-server.pkt", "setsockopt TCP_MAXSEG"),
    # MSG_EOR: no segment joins data across a record's end (tcp_skb_can_collapse_to()).
    *((f"google/eor/no-coalesce-{v}.pkt", "MSG_EOR") for v in ("large", "retrans", "small", "subsequent")),
    *((f"linux-selftests/tcp_eor_no-coalesce-{v}.pkt", "MSG_EOR") for v in ("large", "small", "subsequent")),
    # The active open: tcp_connect()'s SYN with tcp_syn_options()' order, a blocking connect()
    # returning on the SYN-ACK, the SYN's RTT sample, the SYN-ACK's unscaled window; TCP_MAXSEG
    # before connect() clamps both MSS; IP_TOS changes nothing compared.
    ("google/mss/mss-setsockopt-tcp_maxseg-client.pkt", "active open, TCP_MAXSEG"),
    ("google/sack/sack-route-refresh-ip-tos.pkt", "active open, IP_TOS"),
    ("linux-selftests/tcp_sack_sack-route-refresh-ip-tos.pkt", "active open, IP_TOS"),
    # Nagle and the cork: tcp_nagle_test() with tp->nonagle (TCP_NODELAY, TCP_CORK; MSG_MORE
    # corks one push and marks no PSH), the probe timer sending held data at max(RTO, 200 ms).
    ("google/nagle/sockopt_cork_nodelay.pkt", "TCP_CORK, TCP_NODELAY"),
    ("google/nagle/sendmsg_msg_more.pkt", "MSG_MORE, probe timer"),
    ("linux-selftests/tcp_nagle_sockopt_cork_nodelay.pkt", "TCP_CORK, TCP_NODELAY"),
    ("linux-selftests/tcp_nagle_sendmsg_msg_more.pkt", "MSG_MORE, probe timer"),
    # tcp_min_tso_segs=10: tcp_tso_segs()' pieces of min(cwnd / 2, 10) segments, each with PSH;
    # the restart after idle (tcp_cwnd_restart()) is the model's.
    ("google/slow_start/slow-start-after-idle.pkt", "tcp_min_tso_segs"),
]


def test_linux_rto_probe_and_psh_of_a_large_write():
    """cubic-rto-ss-ca-cwnd-bump: RTO = srtt + max(mdev, 200 ms) = 300 ms after two 100 ms
    samples (tcp_rtt_estimator()), the probe scheduled when the write sends (tcp_write_xmit()),
    both on the timer wheel; then the PSH bits of a 200 000-byte write: 2-segment pieces carry
    PSH (__tcp_transmit_skb()), 1-segment ones only at the end of an skb that has it, and the
    first such end is at 20 001 because tcp_push_one() and forced_push() sent and cut the first
    skb while the write was still copying into it (tcp_sendmsg_locked())."""
    results, _ = run([str(SHARED / "google/cubic/cubic-rto-ss-ca-cwnd-bump.pkt")], ["linux"])
    assert (results[0].result, results[0].line) == ("pass", None), results[0].reason


@pytest.mark.parametrize(("script", "why"), PASSING, ids=[s for s, _ in PASSING])
def test_linux_model_passes(script, why):
    assert_linux_model_passes(SHARED / script, why)




def test_rack_reordering_timer_in_jiffies():
    """fr-4pkt-fack-last-mss has the same timer: the retransmission 30 ms after the SACK, where
    the script (HZ=1000 kernels) wants 35-45 ms; this kernel fails it the same way."""
    results, _ = run([str(SHARED / "google/fast_retransmit/fr-4pkt-fack-last-mss.pkt")], ["linux"])
    assert (results[0].result, results[0].line) == ("fail", 27)
    assert "happened at 0.230000 sec" in results[0].reason


def test_socket_options_as_linux_keeps_them():
    """do_tcp_getsockopt(): a listener reports its user_mss, else TCP_MSS_DEFAULT (536); an
    accepted socket its mss_cache. fcntl: O_RDWR, with O_NONBLOCK once set."""
    from tcplab.drill import model_calls
    from tcplab.drill.calls import SYMBOLS, CallFailed, Unhandled

    s = model_calls.Sock()
    maxseg = (3, "SOL_TCP", "TCP_MAXSEG")
    assert model_calls.getsockopt(s, (*maxseg, [536]), None) == 0
    assert model_calls.setsockopt(s, 6, SYMBOLS["TCP_MAXSEG"], 1100, established=False)
    assert model_calls.getsockopt(s, (*maxseg, [1100]), None) == 0
    with pytest.raises(CallFailed, match="expected: 1100 actual: 1448"):
        model_calls.getsockopt(s, (*maxseg, [1100]), 1448)
    with pytest.raises(Unhandled, match="EINVAL"):
        model_calls.setsockopt(s, 6, SYMBOLS["TCP_MAXSEG"], 40, established=False)
    assert model_calls.fcntl(s, (3, "F_GETFL")) == SYMBOLS["O_RDWR"]
    assert model_calls.fcntl(s, (3, "F_SETFL", ("|", "O_RDWR", "O_NONBLOCK"))) == 0
    assert model_calls.fcntl(s, (3, "F_GETFL")) == SYMBOLS["O_RDWR"] | SYMBOLS["O_NONBLOCK"]


def test_cubic_parameters_other_than_the_models_are_unsupported(tmp_path):
    from tcplab.drill import model_env

    env = model_env.Env()
    model_env.apply(env, "echo 3 > /sys/module/tcp_cubic/parameters/hystart_detect", tmp_path)
    with pytest.raises(model_env.NotModelled, match="hystart_detect=2: the model's cubic has hystart_detect=3"):
        model_env.apply(env, "echo 2 > /sys/module/tcp_cubic/parameters/hystart_detect", tmp_path)


RECOVERY_RECORDINGS = ["prr-newreno-dupacks.pkt", "prr-delivered-sacked.pkt", "recovery-again-at-high-seq.pkt",
                       "retransmit-quota-without-half-cwnd.pkt", "rtt-from-oldest-acked.pkt",
                       "rack-reo-wnd-after-recovery-exit.pkt", "reno-hold-at-high-seq.pkt",
                       "rack-timeout-enters-recovery.pkt"]


SENDING_RECORDINGS = ["rwnd-grow-one-skb.pkt", "rwnd-mss-grows-with-window.pkt", "writes-restart-after-idle.pkt",
                      "writes-quota-in-packets.pkt"]


@pytest.mark.parametrize("name", SENDING_RECORDINGS)
def test_sending_recordings_of_this_kernel_pass_on_the_model(name):
    """tests/drill/linux/: whole recordings of this kernel (drill --generate) on which the model sent
    differently before it cut tcp_write_xmit()'s pieces from the skbs, counted the cwnd quota in
    packets, re-synced the MSS when the window grew and restarted cwnd after idle as Linux does
    (each names its rule in its first lines)."""
    results, bad = run([str(REPO / "tests" / "drill" / "linux" / name)], ["linux"])
    assert not bad and [(r.result, r.reason) for r in results] == [("pass", "")]


@pytest.mark.parametrize("name", RECOVERY_RECORDINGS)
def test_recovery_recordings_of_this_kernel_pass_on_the_model(name):
    """tests/drill/linux/: recordings of this kernel (drill --generate; the first three minimised) on
    which the model sent differently before PRR's delivered count and recovery at high_seq followed
    Linux, and before the retransmission quota, the RTT samples, RACK's window at recovery's exit,
    Reno's hold at high_seq and RACK's timeout entering recovery did (each names its rule in its
    first lines)."""
    results, bad = run([str(REPO / "tests" / "drill" / "linux" / name)], ["linux"])
    assert not bad and [(r.result, r.reason) for r in results] == [("pass", "")]

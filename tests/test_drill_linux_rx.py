"""Linux's receiving half on the linux model target (crates/tcplab-sim/src/drill_linux_rx.rs,
python/tcplab/drill/model_rx.py): the upstream scripts it makes pass, and the rules behind them.
Reads ../shared/packetdrill (test data outside the repository) where a test names a script
there; the rest run scripts written here."""

from __future__ import annotations

import pytest

from tcplab.drill import model_env
from tcplab.drill.model_rx import tun_truesize
from tcplab.drill.runner import run

from conftest import PACKETDRILL, REPO, assert_linux_model_passes

SHARED = PACKETDRILL  # reads ../shared/packetdrill
READS_SHARED = True  # conftest.py skips these only where ../shared is absent

PASSING = [
    # tcp_data_queue_ofo(): SACK blocks of out-of-order data; tcp_rcvbuf_grow() only once
    # accept() gave the socket (sk->sk_socket); the gap filled: ACK at once, no SACK.
    "linux-selftests/tcp_ooo-before-and-after-accept.pkt",
    # tcp_measure_rcv_mss() on out-of-order data (rcv_mss 1000, the scaling ratio), then
    # tcp_grow_window() and __tcp_select_window(): win 81 << 10, never shrunk.
    "linux-selftests/tcp_ooo_rcv_mss.pkt",
    # SO_RCVBUF (locked, scale 0); 60 000 bytes in a 40 000-byte buffer: ICSK_ACK_NOMEM, win 0;
    # a bare FIN with the window closed is still queued and ACKed.
    "linux-selftests/tcp_rcv_zero_wnd_fin.pkt",
    # The first data starts quick ACKs (tcp_event_data_recv()); read(); `ethtool -K tun0 tso
    # off gso off` changes nothing TCP builds (sk_setup_caps(): TCP always has GSO).
    "linux-selftests/tcp_nagle_https_client.pkt",
    "google/nagle/https_client.pkt",
]


@pytest.mark.parametrize("script", PASSING)
def test_linux_model_passes_with_its_receiving_half(script):
    assert_linux_model_passes(SHARED / script)


def test_an_ack_below_what_was_ever_acked_is_challenged_and_its_data_dropped():
    """gro-mss-option sends data with ack 0 before anything was acknowledged: tcp_ack()'s
    `before(ack, prior_snd_una - min(max_window, bytes_acked))` drops it with a challenge ACK
    (ack 1), as this kernel does; the script (older kernels) wants ack 10001."""
    results, _ = run([str(SHARED / "google/gro/gro-mss-option.pkt")], ["linux"])
    assert (results[0].result, results[0].line) == ("fail", 20)
    assert "actual: . 1:1(0) ack 1" in results[0].reason


SCRIPT = """--mss=1000
`sysctl -q net.ipv4.tcp_rmem="4096 131072 $((32*1024*1024))"`
   +0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 bind(3, ..., ...) = 0
   +0 listen(3, 1) = 0
   +0 < S 0:0(0) win 65535 <mss 1000,nop,nop,sackOK,nop,wscale 7>
   +0 > S. 0:0(0) ack 1 win 64240 <mss 1460,nop,nop,sackOK,nop,wscale 10>
  +.1 < . 1:1(0) ack 1 win 257
   +0 accept(3, ..., ...) = 4
   +0 < P. 1:101(100) ack 1 win 257
   +0 > . 1:1(0) ack 101 win 63
  +.1 < P. 101:201(100) ack 1 win 257
   +0 > . 1:1(0) ack 201
  +.1 < F. 201:201(0) ack 1 win 257
{fin_ack}
   +0 read(4, ..., 1000) = 200
"""


def _run(tmp_path, text):
    p = tmp_path / "rx.pkt"
    p.write_text(text)
    results, bad = run([str(p)], ["linux"])
    assert not bad
    return results[0]


def test_quick_acks_then_a_fin_waits_for_the_delayed_ack_timer(tmp_path):
    """Data is ACKed at once (quick ACK mode, tcp_incr_quickack()); a FIN in ESTABLISHED puts
    the socket in pingpong mode (tcp_fin()), so __tcp_ack_snd_check() delays its ACK by ato,
    TCP_ATO_MIN = 40 ms (measured on this kernel with the same script)."""
    r = _run(tmp_path, SCRIPT.format(fin_ack=" +.04 > . 1:1(0) ack 202"))
    assert (r.result, r.line) == ("pass", None), r.reason
    r = _run(tmp_path, SCRIPT.format(fin_ack="   +0 > . 1:1(0) ack 202"))
    assert (r.result, r.line) == ("fail", 15) and "sent nothing by 0.304000" in r.reason


def test_syn_ack_window_and_scale_follow_tcp_rmem_and_so_rcvbuf(tmp_path):
    """tcp_select_initial_window(): the window is half the buffer in whole MSS (tcp_rmem[1]
    131 072: 64 240), the scale ilog2(max(tcp_rmem[2], rmem_max)) - 15 (32 MB: 10); with
    SO_RCVBUF the clamp is the buffer's window (20 000 -> 40 000 bytes: 18 980, scale 0)."""
    assert _run(tmp_path, SCRIPT.format(fin_ack=" +.04 > . 1:1(0) ack 202")).result == "pass"
    text = SCRIPT.replace("   +0 bind", "   +0 setsockopt(3, SOL_SOCKET, SO_RCVBUF, [20000], 4) = 0\n   +0 bind")
    text = text.replace("win 64240 <mss 1460,nop,nop,sackOK,nop,wscale 10>", "win 18980 <mss 1460,nop,nop,sackOK,nop,wscale 0>")
    r = _run(tmp_path, text.format(fin_ack=" +.04 > . 1:1(0) ack 202"))
    assert (r.result, r.line) == ("fail", 12), r.reason  # past the SYN-ACK; win 63 is for scale 10
    assert "tcp_window" in r.reason


def test_tun_skb_truesize_is_the_measured_one():
    """SK_MEMINFO_RMEM_ALLOC on this kernel after segments of 200 and 1000 bytes (a kmalloc'd
    head) and GSO ones of 2000 ... 10 000 bytes (page frags)."""
    assert [tun_truesize(40 + n, False) for n in (200, 1000)] == [1280, 2304]
    assert [tun_truesize(40 + n, True) for n in (2000, 4060, 4100, 9000, 10_000)] == [4352, 8448, 8448, 12_544, 12_544]


def test_ethtool_tso_and_gso_are_taken_other_features_not(tmp_path):
    env = model_env.Env()
    model_env.apply(env, "ethtool -K tun0 tso off gso off", tmp_path)
    with pytest.raises(model_env.NotModelled, match="ethtool -K tun0 gro off"):
        model_env.apply(env, "ethtool -K tun0 gro off", tmp_path)


def test_dsack_gap_fill_read_and_window_as_the_kernel():
    """tests/drill/linux/rx-dsack-window.pkt (its expectations are this kernel's): an in-order
    duplicate is D-SACKed (tcp_send_dupack()), an out-of-order one too ahead of its SACK block,
    the filled gap ACKed at once without SACK, and after a read the window, rcv_ssthresh,
    sk_rcvbuf and rmem_alloc are the kernel's."""
    results, bad = run([str(REPO / "tests/drill/linux/rx-dsack-window.pkt")], ["linux"])
    assert not bad
    assert (results[0].result, results[0].line) == ("pass", None), results[0].reason

"""The linux model's probe timer and chronographs on the upstream scripts that need them (issue 32):
zero-window probes backed off (tcp_send_probe0()), TCP_USER_TIMEOUT with a device that drops every
packet (`tc qdisc add dev tun0 root pfifo limit 0`), tcpi_busy_time and tcpi_rwnd_limited
(tcp_chrono_start/stop). Reads ../shared/packetdrill (test data outside the repository)."""

from __future__ import annotations

import pytest

from tcplab.drill.runner import run

from conftest import PACKETDRILL, assert_linux_model_passes

SHARED = PACKETDRILL  # reads ../shared/packetdrill
READS_SHARED = True  # the script tests (conftest.py skips them only where ../shared is absent)

# (script, what in the model makes it pass)
PASSING = [
    # tcp_write_wakeup() -> tcp_xmit_probe_skb(): `. 26000:26000(0)` at 300, 600, 1200 ms
    # (tcp_probe0_when(): max(RTO, 200 ms) << icsk_backoff); tcp_ack_probe() once the window opens.
    ("google/slow_start/slow-start-after-win-update.pkt", "window probes"),
    ("linux-selftests/tcp_slow_start_slow-start-after-win-update.pkt", "window probes"),
    # NET_XMIT_DROP: TCP_RESOURCE_PROBE_INTERVAL retries without backoff, tcpi_probes 6, then
    # ETIMEDOUT from tcp_probe_timer()'s user timeout.
    ("google/user_timeout/user-timeout-probe.pkt", "TCP_USER_TIMEOUT, a device that drops all"),
    ("linux-selftests/tcp_user_timeout_user-timeout-probe.pkt", "TCP_USER_TIMEOUT, a device that drops all"),
    # TCP_CHRONO_BUSY from the first send head, RWND_LIMITED from tcp_write_xmit()'s window test.
    ("google/tcp_info/tcp-info-rwnd-limited.pkt", "chrono stats"),
    ("linux-selftests/tcp_tcp_info_tcp-info-rwnd-limited.pkt", "chrono stats"),
]


@pytest.mark.parametrize(("script", "why"), PASSING, ids=[s for s, _ in PASSING])
def test_linux_model_passes(script, why):
    assert_linux_model_passes(SHARED / script, why)


_HEAD = """`../../common/defaults.sh`
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0
   +0 bind(3, ..., ...) = 0
   +0 listen(3, 1) = 0
   +0 < S 0:0(0) win 65535 <mss 1000>
   +0 > S. 0:0(0) ack 1 <mss 1460>
  +.1 < . 1:1(0) ack 1 win 65535
   +0 accept(3, ..., ...) = 4
"""


def _script(tmp_path, body: str):
    d = tmp_path / "google" / "x"
    d.mkdir(parents=True)
    (tmp_path / "google" / "common").symlink_to(SHARED / "google" / "common")
    p = d / "t.pkt"
    p.write_text(_HEAD + body)
    return run([str(p)], ["linux"])[0][0]


def test_a_window_probe_is_backed_off_and_counted(tmp_path):
    """The second probe comes twice the first's wait later (icsk_backoff 1 -> 2), each one a bare
    ACK one below snd_una; tcpi_probes counts them, tcpi_backoff is the shift."""
    r = _script(tmp_path, """   +0 write(4, ..., 1000) = 1000
   +0 > P. 1:1001(1000) ack 1
  +.1 < . 1:1(0) ack 1001 win 0
   +0 write(4, ..., 1000) = 1000
+.3~+.33 > . 1000:1000(0) ack 1
+.6~+.64 > . 1000:1000(0) ack 1
   +0 %{ assert tcpi_probes == 2, tcpi_probes; assert tcpi_backoff == 2, tcpi_backoff }%
""")
    assert (r.result, r.line) == ("pass", None), r.reason


def test_the_only_tc_commands_followed_drop_all_or_restore(tmp_path):
    from tcplab.drill import model_env

    env = model_env.Env()
    cmd = "tc qdisc delete dev tun0 root 2>/dev/null ; tc qdisc add dev tun0 root pfifo limit 0"
    model_env.apply(env, cmd, tmp_path)
    assert env.device_drops
    model_env.apply(env, "tc qdisc del dev tun0 root", tmp_path)
    assert not env.device_drops
    with pytest.raises(model_env.NotModelled, match="netem"):
        model_env.apply(env, "tc qdisc add dev tun0 root netem delay 10ms", tmp_path)
    with pytest.raises(model_env.NotModelled, match="limit 1"):
        model_env.apply(env, "tc qdisc add dev tun0 root pfifo limit 1", tmp_path)


def test_user_timeout_with_an_rto_is_unsupported(tmp_path):
    """The RTO's user timeout (tcp_write_timeout()) is not modelled: said at the line where the
    retransmission happened, not passed over."""
    r = _script(tmp_path, """   +0 setsockopt(4, SOL_TCP, TCP_USER_TIMEOUT, [3000], 4) = 0
   +0 write(4, ..., 1000) = 1000
   +0 > P. 1:1001(1000) ack 1
  +.3~+.34 > P. 1:1001(1000) ack 1
""")
    assert (r.result, r.line) == ("unsupported", 13), r.reason
    assert "tcp_write_timeout" in r.reason

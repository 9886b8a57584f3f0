"""The linux model's device, route and MTU rules (model_route.py, model_cookie.py,
crates/tcplab-sim/src/drill_mtu.rs): the two upstream scripts they make pass, and small scripts
for each rule, every one run on this machine's kernel too (it passes them: they say what Linux
6.18 does). Reads ../shared/packetdrill (the upstream scripts and the suites' defaults.sh)."""

from __future__ import annotations

import re

import pytest

from tcplab.drill import model_env
from tcplab.drill.runner import run

from conftest import PACKETDRILL

SHARED = PACKETDRILL  # reads ../shared/packetdrill
READS_SHARED = True

_LISTEN = """    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0
   +0 bind(3, ..., ...) = 0
   +0 listen(3, 10) = 0
"""
_RMEM = 'sysctl -q net.ipv4.tcp_rmem="4096 131072 $((32*1024*1024))"'  # wscale 10 here and on the host
_COOKIE_SYN = "   +0 < S 0:0(0) win 32792 <mss {mss},sackOK,TS val 100 ecr 0,nop,wscale 10>\n" \
              "   +0 > S. 0:0(0) ack 1 <mss 8960,sackOK,TS val 4000 ecr 100,nop,wscale 10>\n"

SCRIPTS = {
    # cookie_timestamp_decode(): an ACK without TS clears every option (tcp_clear_options()); the
    # unscaled 1024-byte window then bounds the MSS to half of it (tcp_bound_to_half_wnd()).
    "cookie-ack-without-ts.pkt": f"""`{_RMEM}
sysctl -q net.ipv4.tcp_syncookies=2
ip link set dev tun0 mtu 9000`
{_LISTEN}{_COOKIE_SYN.format(mss=8960)} +.01 < . 1:1(0) ack 1 win 1024
   +0 accept(3, ..., ...) = 4
   +0 %{{ assert tcpi_snd_mss == 512, tcpi_snd_mss; assert tcpi_options == 0, tcpi_options; \
assert tcpi_snd_wscale == 0, tcpi_snd_wscale }}%
""",
    # __cookie_v4_init_sequence(): the cookie keeps msstab's largest entry <= the SYN's MSS
    # (1400 -> 1300); the options come back from the TS ecr.
    "cookie-msstab-1300.pkt": f"""`{_RMEM}
sysctl -q net.ipv4.tcp_syncookies=2
ip link set dev tun0 mtu 9000`
{_LISTEN}{_COOKIE_SYN.format(mss=1400)} +.01 < . 1:1(0) ack 1 win 1024 <nop,nop,TS val 110 ecr 4000>
   +0 accept(3, ..., ...) = 4
   +0 %{{ assert tcpi_snd_mss == 1300 - 12, tcpi_snd_mss; assert tcpi_options == 7, tcpi_options; \
assert tcpi_snd_wscale == 10, tcpi_snd_wscale; assert tcpi_rcv_wscale == 10, tcpi_rcv_wscale }}%
   +0 write(4, ..., 3000) = 3000
   +0 > P. 1:2577(2576) ack 1 <nop,nop,TS val 4000 ecr 110>
   +0 > P. 2577:3001(424) ack 1 <nop,nop,TS val 4000 ecr 110>
""",
    # No cookie (tcp_syncookies=1 and no SYN flood): the MSS is the 9000-byte device's, 8960.
    "no-cookie-9k.pkt": f"""`{_RMEM}
sysctl -q net.ipv4.tcp_syncookies=1
ip link set dev tun0 mtu 9000`
{_LISTEN}{_COOKIE_SYN.format(mss=8960)} +.01 < . 1:1(0) ack 1 win 1024 <nop,nop,TS val 110 ecr 4000>
   +0 accept(3, ..., ...) = 4
   +0 %{{ assert tcpi_snd_mss == 8960 - 12, tcpi_snd_mss; assert tcpi_options == 7, tcpi_options }}%
""",
    # The route's advmss in the SYN-ACK, its mtu for the MSS; a changed route reaches the
    # connection after the next transmit (the stale dst), then tcp_current_mss() syncs to it.
    "route-change-no-probing.pkt": f"""--strict_segments
`{_RMEM}
sysctl -q net.ipv4.tcp_mtu_probing=0
ip route change 192.0.2.1 via 192.168.0.2 dev tun0 advmss 600 mtu lock 640 initcwnd 11
ethtool -K tun0 gso off tso off
`
{_LISTEN}  +.1 < S  0:0(0) win 50000 <mss 1460,nop,wscale 0>
   +0 > S. 0:0(0) ack 1 <mss 600,nop,wscale 10>
   +0 < .  1:1(0) ack 1 win 50000
  +.1 accept(3, ..., ...) = 4
   +0 `ip route change 192.0.2.1 via 192.168.0.2 dev tun0 advmss 1460 mtu lock 1500`
  +.1 write(4, ..., 1300) = 1300
   +0 > .  1:601(600) ack 1
   +0 > .  601:1201(600) ack 1
   +0 > P. 1201:1301(100) ack 1
   +0 < .  1:1(0) ack 1301 win 50000
  +.1 write(4, ..., 2000) = 2000
   +0 > .  1301:2761(1460) ack 1
   +0 > P. 2761:3301(540) ack 1
   +0 %{{ assert tcpi_snd_mss == 1460, tcpi_snd_mss }}%
""",
}


def test_upstream_mtu_scripts_pass_on_the_linux_model():
    """tcp_syncookies_ip4_9k: SYN-ACK MSS 8960 from the device, 1448 kept by the cookie; mtu_probe
    basic-v4: the 986-byte probe first, MSS 986 after its ACK."""
    scripts = [SHARED / "linux-selftests/tcp_syncookies_ip4_9k.pkt", SHARED / "google/mtu_probe/basic-v4.pkt"]
    results, bad = run([str(s) for s in scripts], ["linux"])
    assert not bad
    assert [(r.result, r.line) for r in results] == [("pass", None)] * 2, [r.reason for r in results]


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_rule_scripts_pass_on_the_kernel_and_the_model(tmp_path, name):
    path = tmp_path / name
    path.write_text(SCRIPTS[name])
    results, bad = run([str(path)], ["kernel", "linux"])
    assert not bad
    assert {r.target: (r.result, r.line) for r in results} == {"kernel": ("pass", None), "linux": ("pass", None)}, \
        [r.reason for r in results]


def test_probing_on_without_a_probe_drops_to_the_base_mss(tmp_path):
    """basic-v4 without `initcwnd 11` (cwnd 10 < 11: tcp_mtu_probe() never probes): once the new
    route is seen, tcp_sync_mss() keeps min(1460, tcp_mtu_to_mss(search_low)) = 512, as the
    kernel does."""
    text = (SHARED / "google/mtu_probe/basic-v4.pkt").read_text().replace(" initcwnd 11", "")
    text = text.replace("../common/", f"{SHARED}/google/common/")
    head, rest = text.split("  +.1 write(4, ..., 4000) = 4000", 1)
    path = tmp_path / "no-probe.pkt"
    path.write_text(head + """  +.1 write(4, ..., 1300) = 1300
   +0 > .  1:601(600) ack 1
   +0 > .  601:1201(600) ack 1
   +0 > P. 1201:1301(100) ack 1
   +0 < .  1:1(0) ack 1301 win 50000
  +.1 write(4, ..., 2000) = 2000
   +0 > .  1301:1813(512) ack 1
   +0 > .  1813:2325(512) ack 1
   +0 > .  2325:2837(512) ack 1
   +0 > P. 2837:3301(464) ack 1
""")
    results, _ = run([str(path)], ["kernel", "linux"])
    assert [(r.target, r.result) for r in results] == [("kernel", "pass"), ("linux", "pass")], \
        [r.reason for r in results]


def test_route_commands_the_model_does_not_follow_are_named(tmp_path):
    env = model_env.Env()
    model_env.apply(env, "ip route replace default via 192.168.0.2 dev tun0 mtu 1400", tmp_path)
    assert (env.route.path_mtu(), env.route.advmss_bytes()) == (1400, 1360)
    model_env.apply(env, "ip link set tun0 mtu 9000\nethtool -K tun0 tso off gso off", tmp_path)
    assert (env.route.dev_mtu, env.route.tso, env.route.gso) == (9000, False, False)
    for cmd, why in [("ip route change 192.0.2.1 via 192.168.0.2 dev tun0 rtt 10", "'rtt': not modelled"),
                     ("ip route change 10.0.0.0/8 via 192.168.0.2", "not to the remote address"),
                     ("ip link set dev tun0 up", "only 'ip link set [dev] tun0 mtu N'"),
                     ("ethtool -K tun0 gro off", "gro off: not modelled")]:
        with pytest.raises(model_env.NotModelled, match=re.escape(why)):
            model_env.apply(env, cmd, tmp_path)


def test_strict_segments_with_tso_on_is_unsupported(tmp_path):
    """With TSO on the kernel hands the device TSO packets; --strict_segments compares them one
    by one, and the model gives segments."""
    text = (SHARED / "google/mtu_probe/basic-v4.pkt").read_text().replace(" ethtool -K tun0 gso off tso off\n", "")
    text = text.replace("../common/", f"{SHARED}/google/common/")
    path = tmp_path / "tso-on.pkt"
    path.write_text(text)
    results, _ = run([str(path)], ["linux"])
    assert (results[0].result, results[0].line) == ("unsupported", 37)  # the line removed moves the probe up one
    assert "--strict_segments with TSO on" in results[0].reason

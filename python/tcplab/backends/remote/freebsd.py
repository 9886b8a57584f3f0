"""FreeBSD lab machines: pre-flight facts, the sysctls a sender's stack needs, kernel modules,
SIFTR/SIFTR2 and dummynet, each change with the command that undoes it.

NOT YET RUN AGAINST A REAL FREEBSD HOST: written from the FreeBSD 14/15 manual pages and sources
named below and tested against command outputs typed after those sources' formats
(tests/test_remote.py); docs/remote.md says so.

Sources: sysctl(8); kldload(8) (`-n`: do not fail if loaded), kldstat(8) (`-q -m MODULE`: exit
status only), kldunload(8); tcp(4) (net.inet.tcp.functions_default, .functions_available,
.cc.algorithm, .cc.available, .rfc1323, .sack.enable, .initcwnd_segments, .sendbuf_max,
.recvbuf_max, .hostcache.enable); tcp_rack(4) (`kldload tcp_rack`, which pulls in tcphpts);
siftr(4) (net.inet.siftr.enabled, .logfile, .port_filter, .ppl); SIFTR2 as in
github.com/ccfbsd/siftr2 README (commit 0084685c71bc: net.inet.siftr2.enabled, .logfile,
.port_filter, .cwnd_filter, .ppl); dummynet(4) (net.inet.ip.dummynet.pipe_slot_limit default 100,
pipe_byte_limit default 1048576) and ipfw(8) (`pipe N config bw B delay D queue Q plr P`,
`add N pipe N ip from any to any out xmit IF`, `delete N`, `pipe N delete`).
"""

from __future__ import annotations

from dataclasses import dataclass

PROBE = r'''
echo "os=$(uname -s)"; echo "release=$(uname -r)"; echo "machine=$(uname -m)"; echo "uid=$(id -u)"
echo "iperf3=$(command -v iperf3)"; echo "tcpdump=$(command -v tcpdump)"; echo "ipfw=$(command -v ipfw)"
echo "ping=$(command -v ping)"
sysctl -n net.inet.tcp.cc.available 2>/dev/null | sed 's/^/cc_line=/'
sysctl -n net.inet.tcp.functions_available 2>/dev/null | sed 's/^/stack_line=/'
for m in siftr siftr2 tcp_rack tcphpts dummynet ipfw; do
  kldstat -q -m "$m" && echo "kld=$m"
  { [ -f "/boot/kernel/$m.ko" ] || [ -f "/boot/modules/$m.ko" ]; } && echo "kldfile=$m"; done
for c in "$@"; do { [ -f "/boot/kernel/cc_$c.ko" ] || [ -f "/boot/modules/cc_$c.ko" ]; } && echo "ccmod=$c"; done
true
'''

PROVENANCE = r'''
echo "== uname"; uname -a
echo "== modules"; kldstat
for i in "$@"; do echo "== interface $i"; ifconfig -m "$i" 2>&1; done
echo "== ipfw pipes"; ipfw pipe show 2>&1 | head -50
true
'''


def kernel_cc(cc: str) -> str:
    """FreeBSD's name of an algorithm (cc_newreno(4), cc_cubic(4))."""
    return "newreno" if cc in ("reno", "newreno") else cc


def parse_table_names(lines: list[str], header: str) -> list[str]:
    """The first column of `sysctl -n net.inet.tcp.cc.available` (cc.c
    sysctl_net_inet_tcp_cc_available(): a "CCmod  D PCB count" header, then one line per module)
    or of net.inet.tcp.functions_available (tcp_subr.c sysctl_net_inet_list_available(): a
    "Stack  D Alias  PCB count" header); FreeBSD 12 and older print "newreno, cubic"."""
    out: list[str] = []
    for line in lines:
        w = line.replace(",", " ").split()
        if not w or w[0] == header:
            continue
        if len(lines) == 1 and "," in line:
            out += w
            continue
        out.append(w[0])
    return out


def stack_name(stack: str) -> str:
    """net.inet.tcp.functions_default for a tcplab stack (tcp(4), tcp_rack(4))."""
    return "rack" if stack == "freebsd-rack" else "freebsd"


def sysctl_get(key: str) -> list[str]:
    return ["sysctl", "-n", key]


def sysctl_set(key: str, value: str) -> list[str]:
    return ["sysctl", f"{key}={value}"]


def rfc1323(timestamps: bool) -> int:
    """tcp(4) rfc1323: 1 window scaling and timestamps, 2 window scaling only."""
    return 1 if timestamps else 2


def kld_load(module: str) -> list[str]:
    return ["kldload", "-n", module]


def kld_unload(module: str) -> list[str]:
    return ["kldunload", module]


#: SIFTR2 and SIFTR sysctls for one run: log into the run's folder, one port.
def siftr_sysctls(module: str, logfile: str, port: int) -> dict[str, str]:
    base = f"net.inet.{module}"
    out = {f"{base}.logfile": logfile, f"{base}.port_filter": str(port), f"{base}.ppl": "1"}
    if module == "siftr2":
        out[f"{base}.cwnd_filter"] = "0"
    return out


@dataclass(frozen=True)
class Pipe:
    """One dummynet pipe at an interface's egress (ipfw(8))."""

    number: int
    dev: str
    rate_bps: int          # 0: no rate limit (a delay-only pipe)
    delay_ms: int
    queue_packets: int | None
    queue_bytes: int | None
    loss: float
    port_label: str


def pipe_commands(p: Pipe) -> list[list[str]]:
    """`ipfw pipe N config ...` and the rule sending the interface's outgoing packets through it.
    Delay is in ms (ipfw(8)); the rule number equals the pipe number."""
    cfg = ["ipfw", "pipe", str(p.number), "config"]
    if p.rate_bps:
        cfg += ["bw", f"{p.rate_bps}bit/s"]
    if p.delay_ms:
        cfg += ["delay", str(p.delay_ms)]
    if p.queue_packets is not None:
        cfg += ["queue", str(p.queue_packets)]
    elif p.queue_bytes is not None:
        cfg += ["queue", f"{p.queue_bytes}bytes"]
    if p.loss > 0:
        cfg += ["plr", f"{p.loss:.6g}"]
    return [cfg, ["ipfw", "add", str(p.number), "pipe", str(p.number), "ip", "from", "any", "to", "any", "out", "xmit", p.dev]]


def pipe_undo(p: Pipe) -> list[list[str]]:
    """In the order to run them: the rule, then the pipe."""
    return [["ipfw", "delete", str(p.number)], ["ipfw", "pipe", str(p.number), "delete"]]


#: Rule and pipe numbers tcplab uses (ipfw rules run 1..65535; 65535 is the default rule).
PIPE_BASE = 64000

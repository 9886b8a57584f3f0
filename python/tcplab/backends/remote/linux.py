"""Linux lab machines: what pre-flight asks, the commands that change a host (each with the
command that undoes it) and the parsers of their output. Commands are argument lists; scripts
take their values as "$1".. and never have a value pasted in.

Sources: sysctl(8) and Documentation/networking/ip-sysctl.rst (net.ipv4.tcp_*), ip-route(8)
(`congctl`, `initcwnd`), tc-htb(8), tc-pfifo(8), tc-netem(8), ethtool(8), and the tracefs layout
of Documentation/trace/ftrace.rst (instances, trace_marker, trace_clock).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..shared import Shaper, linux_cc

#: One ssh call gathers every fact pre-flight needs; "$@" are the CC algorithms asked for.
PROBE = r'''
echo "os=$(uname -s)"; echo "release=$(uname -r)"; echo "machine=$(uname -m)"; echo "uid=$(id -u)"
echo "iperf3=$(command -v iperf3)"; echo "tcpdump=$(command -v tcpdump)"; echo "tc=$(command -v tc)"; echo "ping=$(command -v ping)"
echo "ethtool=$(command -v ethtool)"; echo "ping=$(command -v ping)"
echo "cc=$(cat /proc/sys/net/ipv4/tcp_available_congestion_control 2>/dev/null)"
for c in "$@"; do modinfo "tcp_$c" >/dev/null 2>&1 && echo "ccmod=$c"; done
for d in /sys/kernel/tracing /sys/kernel/debug/tracing; do
  if [ -d "$d/events/tcp/tcp_probe" ]; then echo "tracefs=$d"; break; fi; done
{ [ -d /sys/module/sch_netem ] || modinfo sch_netem >/dev/null 2>&1; } && echo "netem=yes"
true
'''

#: Provenance: uname, modules, and per data interface offloads, rings and qdiscs ("$@").
PROVENANCE = r'''
echo "== uname"; uname -a
echo "== modules"; cat /proc/modules 2>/dev/null | cut -d' ' -f1 | sort | tr '\n' ' '; echo
for i in "$@"; do
  echo "== offloads $i"; ethtool -k "$i" 2>&1 | grep -E '^(tcp-segmentation-offload|generic-segmentation-offload|generic-receive-offload|large-receive-offload|tx-checksumming|rx-checksumming):'
  echo "== rings $i"; ethtool -g "$i" 2>&1 | tr -s '\t ' ' '
  echo "== coalesce $i"; ethtool -c "$i" 2>&1 | grep -E '^(rx-usecs|tx-usecs|adaptive-rx):'
  echo "== qdisc $i"; tc -s qdisc show dev "$i" 2>&1
done
true
'''


def parse_probe(text: str) -> dict[str, list[str]]:
    """key=value lines into key -> values (a key may repeat: ccmod)."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        k, sep, v = line.partition("=")
        if sep:
            out.setdefault(k.strip(), []).append(v.strip())
    return out


#: Linux's name of an algorithm (NewReno is `reno`), as the netns backend names it.
kernel_cc = linux_cc


def sysctl_get(key: str) -> list[str]:
    return ["sysctl", "-n", key]


def sysctl_set(key: str, value: str) -> list[str]:
    return ["sysctl", "-q", "-w", f"{key}={value}"]


def norm_value(text: str) -> str:
    """`sysctl -n` prints tcp_rmem's three values with tabs; written back with spaces."""
    return " ".join(text.split())


def shaper_commands(s: Shaper, netem: str | None = None) -> list[list[str]]:
    """htb at `s.dev`'s egress (rate R ceil R, quantum one MTU, as backends/netns/host.build) with
    a pfifo/bfifo child of the port's buffer, or netem (tc-netem(8): `limit` is its queue) when
    tcplab adds the delay; txqueuelen to match."""
    rate = f"{s.rate_bps}bit"
    cmds = [["tc", "qdisc", "replace", "dev", s.dev, "root", "handle", "1:", "htb", "default", "1"],
            ["tc", "class", "add", "dev", s.dev, "parent", "1:", "classid", "1:1", "htb", "rate", rate, "ceil", rate,
             "burst", "3028", "cburst", "3028", "quantum", "1514"]]
    qlen = s.limit_packets if s.limit_packets is not None else max(1, (s.limit_bytes or 0) // 1514)
    if netem is not None:
        child = ["netem", "limit", str(qlen), *netem.split()]
    elif s.limit_packets is not None:
        child = ["pfifo", "limit", str(s.limit_packets)]
    else:
        child = ["bfifo", "limit", str(s.limit_bytes)]
    cmds.append(["tc", "qdisc", "add", "dev", s.dev, "parent", "1:1", "handle", "10:", *child])
    cmds.append(["ip", "link", "set", "dev", s.dev, "txqueuelen", str(qlen)])
    return cmds


def netem_args(delay_ns: int, loss: float) -> str:
    """netem's words for a delay and a random loss (tc-netem(8): `delay TIME`, `loss PERCENT`)."""
    words = [f"delay {delay_ns // 1000}us"] if delay_ns else []
    if loss > 0:
        words.append(f"loss {loss * 100:.6g}%")
    return " ".join(words)


def netem_root(dev: str, netem: str) -> list[list[str]]:
    """netem alone at an unbuffered port (a host's NIC, as T2's receiver: `limit` its packets held,
    1000 unless [hosts.X.netem] says)."""
    return [["tc", "qdisc", "replace", "dev", dev, "root", "handle", "1:", "netem", *netem.split()]]


def parse_ethtool_k(text: str) -> dict[str, str]:
    """`ethtool -k DEV` (feature: on|off [fixed]) -> feature -> on|off."""
    out = {}
    for line in text.splitlines():
        k, sep, v = line.partition(":")
        if sep and v.split():
            out[k.strip()] = v.split()[0]
    return out


def parse_ethtool_c(text: str) -> dict[str, str]:
    """`ethtool -c DEV`: rx-usecs, rx-frames (n/a where the driver has none)."""
    out = {}
    for line in text.splitlines():
        k, sep, v = line.partition(":")
        if sep and k.strip() in ("rx-usecs", "rx-frames") and v.split():
            out[k.strip()] = v.split()[0]
    return out


def qdisc_is_default(tc_json: list[dict]) -> bool:
    """Whether a device's root qdisc is the kernel's own (handle 0:, e.g. noqueue, pfifo_fast,
    fq_codel, mq): tcplab may replace it and `tc qdisc del root` brings it back. A qdisc someone
    configured has a handle of its own, and tcplab leaves such a device alone."""
    roots = [q for q in tc_json if q.get("root")]
    return all(q.get("handle") in ("0:", None) for q in roots)


@dataclass(frozen=True)
class RouteGet:
    via: str | None
    dev: str | None


def parse_route_get(text: str) -> RouteGet:
    """`ip -o route get DST`: its gateway and device."""
    w = text.split()
    via = w[w.index("via") + 1] if "via" in w else None
    dev = w[w.index("dev") + 1] if "dev" in w else None
    return RouteGet(via, dev)


def route_pin(dst: str, rg: RouteGet, cc: str, initcwnd: int) -> list[str]:
    """The /32 route to a receiver with the flow's CC and initial window (ip-route(8) `congctl`,
    `initcwnd`): the kernel applies both before the SYN (tcp_connect_init() -> tcp_ca_dst_init(),
    tcp_init_cwnd()), while iperf3's -C comes only after connect()."""
    how = (["via", rg.via] if rg.via else []) + (["dev", rg.dev] if rg.dev else [])
    return ["ip", "route", "replace", f"{dst}/32", *how, "congctl", kernel_cc(cc), "initcwnd", str(initcwnd)]


def route_undo(dst: str, existing: str) -> list[str]:
    """What restores the /32 route to `dst`: delete ours, or put the one that was there back."""
    old = existing.strip().splitlines()[0].split() if existing.strip() else []
    if not old:
        return ["ip", "route", "del", f"{dst}/32"]
    if old[0] != f"{dst}/32" and "/" not in old[0]:
        old[0] = f"{dst}/32"
    return ["ip", "route", "replace", *old]


TRACE_START = r'''
i="$1/instances/$2"; mkdir "$i" || exit 1
grep -q mono "$i/trace_clock" && echo mono > "$i/trace_clock"
echo 16384 > "$i/buffer_size_kb"
for e in tcp/tcp_probe tcp/tcp_cong_state_set; do
  [ -d "$i/events/$e" ] || continue
  echo "sport >= $3 && sport <= $4" > "$i/events/$e/filter" && echo 1 > "$i/events/$e/enable"; done
echo 1 > "$i/tracing_on"
'''

#: Disable and remove the run's instance (also the undo of TRACE_START).
TRACE_REMOVE = r'''
i="$1/instances/$2"; [ -d "$i" ] || exit 0
echo 0 > "$i/tracing_on"
for e in tcp/tcp_probe tcp/tcp_cong_state_set; do [ -d "$i/events/$e" ] && echo 0 > "$i/events/$e/enable"; done
rmdir "$i"
'''

TRACE_MARK = 'echo "$3" > "$1/instances/$2/trace_marker"'

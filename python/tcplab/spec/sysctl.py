"""Host settings under the sysctl names users already know, mapped onto the model's parameters.

A host's sysctls apply to it in both roles: as a sender (send buffer, initial window, congestion
control) and as a receiver (receive buffer). Explicit sender keys (`cc`, `sndbuf`, `rcvbuf`,
`initcwnd`) and a sysctl that sets the same thing may not both be given.
"""

from __future__ import annotations

from typing import Any, Callable

LINUX = "linux"
FREEBSD = "freebsd"

#: Linux names -> what each sets (shown to users); `route.initcwnd` is `ip route ... initcwnd N`.
LINUX_SYSCTLS = {
    "net.ipv4.tcp_rmem": "receive buffer: the third value (max) is the window the receiver can offer",
    "net.ipv4.tcp_wmem": "send buffer: second value (initial) and third (max) of the autotuned buffer",
    "net.ipv4.tcp_congestion_control": "congestion control of connections this host opens",
    "net.ipv4.tcp_no_metrics_save": "0 or 1; simulated runs never share cached metrics, so both act as 1",
    "route.initcwnd": "initial congestion window, segments (ip route ... initcwnd N)",
}

#: FreeBSD names, recognised so that a spec naming them gets a precise error until the FreeBSD
#: stacks are modelled.
FREEBSD_SYSCTLS = (
    "net.inet.tcp.initcwnd_segments", "net.inet.tcp.tso", "net.inet.tcp.sack.tso", "net.inet.tcp.do_prr",
    "net.inet.tcp.sendbuf_max", "net.inet.tcp.recvbuf_max", "net.inet.tcp.sendspace", "net.inet.tcp.recvspace",
    "net.inet.tcp.sendbuf_inc", "net.inet.tcp.hostcache.enable", "net.inet.tcp.functions_default",
    "net.inet.tcp.cc.algorithm", "kern.ipc.maxsockbuf",
)


def family(stack: str) -> str:
    return FREEBSD if stack.startswith("freebsd") else LINUX


def _triple(v: Any) -> tuple[int, int, int]:
    parts = str(v).split()
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"{v!r} is not three byte counts like \"4096 131072 6291456\"")
    a, b, c = (int(p) for p in parts)
    if not 0 < a <= b <= c:
        raise ValueError(f"{v!r} must be min <= default <= max, all positive")
    return a, b, c


def _int(lo: int, hi: int) -> Callable[[Any], int]:
    def parse(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise ValueError(f"{v!r} is not an integer from {lo} to {hi}")
        return v
    return parse


def apply(settings: dict[str, Any], stack_family: str, role: str) -> dict[str, Any]:
    """Translate one host's sysctls for one role ("sender" or "receiver") into flow parameters.

    Raises KeyError(name, allowed) for an unknown name and ValueError for a bad value; the
    caller turns them into SpecErrors naming the file and key."""
    out: dict[str, Any] = {}
    for name, value in settings.items():
        if name in FREEBSD_SYSCTLS:
            raise LookupError(name, "is a FreeBSD setting; the FreeBSD stacks are not modelled yet")
        if name not in LINUX_SYSCTLS:
            raise KeyError(name)
        if stack_family != LINUX:
            raise LookupError(name, "is a Linux setting, not for a FreeBSD host")
        if name == "net.ipv4.tcp_rmem":
            _, _, mx = _triple(value)
            if role == "receiver":
                out["rcvbuf_bytes"] = mx
        elif name == "net.ipv4.tcp_wmem":
            _, default, mx = _triple(value)
            if role == "sender":
                out["sndbuf_bytes"] = mx
                out["sndbuf_initial_bytes"] = default
        elif name == "net.ipv4.tcp_congestion_control":
            if role == "sender":
                out["cc"] = str(value)
        elif name == "net.ipv4.tcp_no_metrics_save":
            _int(0, 1)(value)
        elif name == "route.initcwnd":
            if role == "sender":
                out["iw_segments"] = _int(1, 10000)(value)
    return out

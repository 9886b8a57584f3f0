"""The type of every sysctl tcplab lets a spec set or sets itself on a host, and the one checker of
their values: the spec checks each host's sysctls with `value()` whatever the host's role (sender,
receiver, a host with no flow), and the kernel backends check every value they are about to write
with `written()`, so nothing unchecked reaches a machine (`sysctl -w key=abc` never runs).

Ranges are the kernels' (cited in sysctl.py beside what each one sets); a value is a TOML integer,
three byte counts in a string (tcp_rmem, tcp_wmem) or a name, never a string of digits in a spec.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from . import numbers
from .sysctl import FREEBSD_SYSCTLS, FUNCTIONS, INT_MAX, LINUX_SYSCTLS


class SysctlValueError(ValueError):
    """A value a sysctl cannot take; the message says what it takes."""


@dataclass(frozen=True)
class Int:
    """An integer in [lo, hi]."""

    lo: int
    hi: int

    def parse(self, v: Any, backend: bool) -> int:
        if isinstance(v, str) and backend and re.fullmatch(r"-?\d{1,20}", v.strip()):
            v = int(v.strip())
        if isinstance(v, bool) or not isinstance(v, int) or not self.lo <= v <= self.hi:
            raise SysctlValueError(f"{numbers.show(v)} is not an integer from {self.lo} to {self.hi}")
        return v


@dataclass(frozen=True)
class Triple:
    """"min default max" byte counts (tcp_rmem, tcp_wmem: ip-sysctl.rst), each at most INT_MAX."""

    def parse(self, v: Any, backend: bool) -> tuple[int, int, int]:
        parts = v.split() if isinstance(v, str) else []
        if len(parts) != 3 or not all(p.isdigit() and len(p) <= 10 for p in parts):
            raise SysctlValueError(f"{numbers.show(v)} is not three byte counts like \"4096 131072 6291456\"")
        a, b, c = (int(p) for p in parts)
        # The kernel takes each value from 1 to INT_MAX (proc_dointvec_minmax, extra1 SYSCTL_ONE) in
        # any order, as the backends write them ("4096 16384 8000" for an 8 KB send buffer); a spec
        # must give them in order, as its max is the buffer and its default the initial one.
        if not all(0 < x <= INT_MAX for x in (a, b, c)) or (not backend and not a <= b <= c):
            raise SysctlValueError(f"{v!r} must be min <= default <= max, all positive and at most {INT_MAX} (INT_MAX)")
        return a, b, c


@dataclass(frozen=True)
class Name:
    """A module or stack name (TCP_CA_NAME_MAX is 16 on both systems; a spec may name a
    user-written algorithm, module:Class), or one of `choices`."""

    choices: tuple[str, ...] = ()

    def parse(self, v: Any, backend: bool) -> str:
        if self.choices:
            if v not in self.choices:
                raise SysctlValueError(f"{numbers.show(v)} is not one of {', '.join(self.choices)}")
            return v
        if not isinstance(v, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}", v):
            raise SysctlValueError(f"{numbers.show(v)} is not a congestion control name (a string like \"cubic\")")
        return v


@dataclass(frozen=True)
class Path:
    """An absolute path on the host (siftr's log file, in the run's own folder)."""

    def parse(self, v: Any, backend: bool) -> str:
        if not isinstance(v, str) or not re.fullmatch(r"/[A-Za-z0-9_.+/-]{1,250}", v) or "/../" in f"{v}/":
            raise SysctlValueError(f"{numbers.show(v)} is not an absolute path of letters, digits and ._+-/")
        return v


_BOOL, _SIZE = Int(0, 1), Int(1, INT_MAX)

#: Every sysctl a spec may set ([hosts.NAME.sysctl], [stack_sysctl.FAMILY]) and its type.
SPEC_TYPES: dict[str, Any] = {
    "net.ipv4.tcp_rmem": Triple(), "net.ipv4.tcp_wmem": Triple(),
    "net.ipv4.tcp_congestion_control": Name(), "net.ipv4.tcp_no_metrics_save": _BOOL,
    "route.initcwnd": Int(1, 10000), "net.ipv4.tcp_ecn": Int(0, 2), "module.tcp_dctcp.dctcp_ect": _BOOL,
    # tcp_win_from_space(): a shift by |n|, so at most 31 either way.
    "net.ipv4.tcp_adv_win_scale": Int(-31, 31),
    "net.ipv4.tcp_sack": _BOOL, "net.ipv4.tcp_timestamps": _BOOL, "net.ipv4.tcp_window_scaling": _BOOL,
    # ip-sysctl.rst tcp_syn_retries: "should not be higher than 127"; tcp_syn_linear_timeouts (6.5+).
    "net.ipv4.tcp_syn_retries": Int(1, 127), "net.ipv4.tcp_syn_linear_timeouts": Int(0, 10),
    "net.inet.tcp.initcwnd_segments": Int(1, 10000),
    "net.inet.tcp.tso": _BOOL, "net.inet.tcp.sack.tso": _BOOL, "net.inet.tcp.do_prr": _BOOL, "net.inet.tcp.sack.lrd": _BOOL,
    "net.inet.tcp.sendbuf_max": _SIZE, "net.inet.tcp.sendspace": _SIZE, "net.inet.tcp.sendbuf_inc": Int(0, 1 << 30),
    "net.inet.tcp.recvbuf_max": _SIZE, "net.inet.tcp.recvspace": _SIZE, "net.inet.tcp.hostcache.enable": _BOOL,
    "net.inet.tcp.functions_default": Name(tuple(FUNCTIONS)), "net.inet.tcp.cc.algorithm": Name(),
    "net.inet.tcp.ecn.enable": Int(0, 2), "net.inet.tcp.sack.enable": _BOOL, "net.inet.tcp.rfc1323": Int(0, 3),
}
assert set(SPEC_TYPES) == set(LINUX_SYSCTLS) | set(FREEBSD_SYSCTLS), "every known sysctl has a type"

#: Sysctls only the backends set: the socket-buffer ceiling, dummynet's queue caps (dummynet(4)),
#: siftr(4)/siftr2's switches, and IP forwarding in the netns backend's routers.
BACKEND_TYPES: dict[str, Any] = {
    "kern.ipc.maxsockbuf": Int(1, 2 * INT_MAX + 2),
    "net.inet.ip.dummynet.pipe_slot_limit": Int(1, 10**7), "net.inet.ip.dummynet.pipe_byte_limit": Int(1, 10**10),
    **{f"net.inet.{m}.{k}": t for m in ("siftr", "siftr2")
       for k, t in (("enabled", _BOOL), ("ppl", Int(1, 2**31 - 1)), ("port_filter", Int(0, 65535)),
                    ("cwnd_filter", _BOOL), ("logfile", Path()))},
    "net.ipv4.ip_forward": _BOOL,
}


def value(name: str, v: Any) -> Any:
    """A spec's value for sysctl `name`, typed (int, (min, default, max) or str). KeyError(name)
    for a name tcplab does not know; SysctlValueError for a value of the wrong type or range."""
    if name not in SPEC_TYPES:
        raise KeyError(name)
    return SPEC_TYPES[name].parse(v, backend=False)


def written(name: str, v: Any) -> str:
    """The text `sysctl -w name=TEXT` writes, after checking `v` (an int or the backend's text)
    against the type of `name`; SysctlValueError for anything else, an unknown name included."""
    kind = SPEC_TYPES.get(name) or BACKEND_TYPES.get(name)
    if kind is None:
        raise SysctlValueError(f"{name!r} is not a sysctl tcplab sets")
    typed = kind.parse(v, backend=True)
    return " ".join(map(str, typed)) if isinstance(typed, tuple) else str(typed)

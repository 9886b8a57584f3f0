"""What a script's commands ask of the FreeBSD model targets: the `net.inet.tcp.*` and `kern.ipc.*`
sysctls of its backtick lines, mapped to model knobs (`Knobs`). A setting the models follow is
taken; one that concerns nothing the endpoint does is taken and ignored (said below, per name);
any other name or value is `unsupported` at its line (model.NotModelled), never silently dropped.
Defaults are FreeBSD's (fel1x-developer/freebsd-src @ 2d614aa2fe3e037bd11d351b0b5cfda776e65814:
tcp_usrreq.c tcp_sendspace/tcp_recvspace 32 KB / 64 KB, tcp_timer.c rexmit_* and keepinit,
tcp_input.c tcp_delacktime 40 ms and V_tcp_delack_enabled 1, uipc_sockbuf.c sb_max 2 MB,
tcp_ecn.c V_tcp_do_ecn 2 and V_tcp_ecn_maxretries 1)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from .model_env import NotModelled, _lines
from .nic_freebsd import Nic, ifconfig

MS_NS = 1_000_000
SENDBUF_MAX = 2 * 1024 * 1024  # net.inet.tcp.sendbuf_max


@dataclass
class Knobs:
    """The FreeBSD settings a script made, in the units the model reads."""

    rfc1323: int = 1  # net.inet.tcp.rfc1323: 1 both, 2 window scaling only, 3 timestamps only, 0 none
    sack: bool = True  # net.inet.tcp.sack.enable
    ecn: int = 2  # net.inet.tcp.ecn.enable: 1 ask and accept, 2 accept only, 0 off
    ecn_maxretries: int = 1  # net.inet.tcp.ecn.maxretries
    rexmit_initial_ns: int = 1000 * MS_NS
    rexmit_slop_ns: int = 200 * MS_NS
    rexmit_min_ns: int = 30 * MS_NS
    rexmit_drop_options: bool = False
    keepinit_ns: int = 75_000 * MS_NS
    delack_ns: int | None = 40 * MS_NS  # tcp_delacktime; None: net.inet.tcp.delayed_ack=0
    recvspace: int = 65_536
    sendspace: int = 32_768
    sb_max: int = 2 * 1024 * 1024  # kern.ipc.maxsockbuf
    initcwnd_segments: int = 10
    stack: str = "freebsd"  # net.inet.tcp.functions_default
    cc: str = "newreno"  # net.inet.tcp.cc.algorithm
    do_prr: bool = True  # net.inet.tcp.do_prr
    sack_lrd: bool | None = None  # net.inet.tcp.sack.lrd; None: the version's default
    sack_tso: bool = False  # net.inet.tcp.sack.tso
    tso: bool = True  # net.inet.tcp.tso
    sendbuf_inc: int = 8192  # net.inet.tcp.sendbuf_inc
    sendbuf_auto: bool = True  # net.inet.tcp.sendbuf_auto
    sendspace_set: bool = False  # whether the script set net.inet.tcp.sendspace
    nic: Nic = field(default_factory=Nic)  # the interface: --nic, `ifconfig IF [-]tso | [-]lro`
    notes: list[str] = field(default_factory=list)


def _ms(v: str) -> int:
    return int(v) * MS_NS


#: name -> (setter, allowed values or None for any); the setter maps the value onto Knobs.
_SETTERS = {
    "net.inet.tcp.rfc1323": (lambda k, v: setattr(k, "rfc1323", int(v)), ("0", "1", "2", "3")),
    "net.inet.tcp.sack.enable": (lambda k, v: setattr(k, "sack", v != "0"), ("0", "1")),
    "net.inet.tcp.ecn.enable": (lambda k, v: setattr(k, "ecn", int(v)), ("0", "1", "2")),
    "net.inet.tcp.ecn.maxretries": (lambda k, v: setattr(k, "ecn_maxretries", int(v)), None),
    "net.inet.tcp.rexmit_initial": (lambda k, v: setattr(k, "rexmit_initial_ns", _ms(v)), None),
    "net.inet.tcp.rexmit_slop": (lambda k, v: setattr(k, "rexmit_slop_ns", _ms(v)), None),
    "net.inet.tcp.rexmit_min": (lambda k, v: setattr(k, "rexmit_min_ns", _ms(v)), None),
    "net.inet.tcp.rexmit_drop_options": (lambda k, v: setattr(k, "rexmit_drop_options", v != "0"), ("0", "1")),
    "net.inet.tcp.keepinit": (lambda k, v: setattr(k, "keepinit_ns", _ms(v)), None),
    "net.inet.tcp.delacktime": (lambda k, v: setattr(k, "delack_ns", _ms(v)), None),
    "net.inet.tcp.delayed_ack": (lambda k, v: setattr(k, "delack_ns", None if v == "0" else k.delack_ns or 40 * MS_NS),
                                 ("0", "1")),
    "net.inet.tcp.recvspace": (lambda k, v: setattr(k, "recvspace", int(v)), None),
    "net.inet.tcp.sendspace": (lambda k, v: (setattr(k, "sendspace", int(v)), setattr(k, "sendspace_set", True)), None),
    "net.inet.tcp.sendbuf_auto": (lambda k, v: setattr(k, "sendbuf_auto", v != "0"), ("0", "1")),
    "net.inet.tcp.sendbuf_inc": (lambda k, v: setattr(k, "sendbuf_inc", int(v)), None),
    "kern.ipc.maxsockbuf": (lambda k, v: setattr(k, "sb_max", int(v)), None),
    "net.inet.tcp.initcwnd_segments": (lambda k, v: setattr(k, "initcwnd_segments", int(v)), None),
    "net.inet.tcp.do_prr": (lambda k, v: setattr(k, "do_prr", v != "0"), ("0", "1")),
    "net.inet.tcp.sack.lrd": (lambda k, v: setattr(k, "sack_lrd", v != "0"), ("0", "1")),
    "net.inet.tcp.sack.tso": (lambda k, v: setattr(k, "sack_tso", v != "0"), ("0", "1")),
    "net.inet.tcp.tso": (lambda k, v: setattr(k, "tso", v != "0"), ("0", "1")),
    "net.inet.tcp.functions_default": (lambda k, v: setattr(k, "stack", "freebsd-rack" if v == "rack" else "freebsd"),
                                       ("freebsd", "rack")),
    "net.inet.tcp.cc.algorithm": (lambda k, v: setattr(k, "cc", v), ("newreno", "cubic")),
    # Taken, no effect on the endpoint: the host cache starts empty in every model run (purgenow);
    # blackhole=0 answers closed ports (no closed port is modelled); syncookies only matter when
    # the syncache overflows, which one connection never does.
    "net.inet.tcp.hostcache.purgenow": (lambda k, v: None, None),
    "net.inet.tcp.blackhole": (lambda k, v: None, ("0",)),
    "net.inet.tcp.syncookies": (lambda k, v: None, None),
    "net.inet.tcp.syncookies_only": (lambda k, v: None, ("0",)),
}

#: Why a value is not followed.
_WHY = {
    "net.inet.tcp.functions_default": "only the default and RACK stacks are modelled",
    "net.inet.tcp.cc.algorithm": "only newreno and cubic are modelled for FreeBSD",
    "net.inet.tcp.blackhole": "closed ports are not modelled",
}


def flow_fields(k: Knobs, stack: str, version: str, maxseg: int) -> dict:
    """The drill endpoint's flow-config fields for these settings (config.rs FlowConfig and
    FreeBsdKnobs; defaults by version as the spec's, tcplab.spec.senders): the initial window,
    the send buffer (sendspace; without autosizing the buffer stays at what tcp_mss() rounds it
    to, roundup(sendspace, t_maxseg)), and the default stack's knobs. D43470: the 15.0-2024-10
    tree predates it, 15.0-2025 includes it, the "2023" model takes the spec's default (after)."""
    from tcplab.spec.senders import STACK_OPTIONS

    opts = STACK_OPTIONS[stack]
    by_version = opts["version"]["defaults"].get(version, {})
    # TSO needs both the interface and the sysctl: tcp_mss() `if (cap.ifcap & CSUM_TSO) {
    # tp->t_flags |= TF_TSO; ...}`, tcp_output() `if ((tp->t_flags & TF_TSO) && V_tcp_do_tso ...`.
    fb = {"d43470": stack == "freebsd" and version != "15.0-2024-10", "do_prr": k.do_prr,
          "sack_tso": k.sack_tso, "tso": k.tso and k.nic.tso, "sendbuf_inc_bytes": k.sendbuf_inc if k.sendbuf_auto else 0,
          "version": version, "sack_lrd": k.sack_lrd if k.sack_lrd is not None else by_version.get("sack_lrd", False)}
    if "rack_rto_cwnd" in opts:
        fb["rack_rto_cwnd"] = by_version.get("rack_rto_cwnd", opts["rack_rto_cwnd"]["default"])
    out: dict = {"iw_segments": k.initcwnd_segments, "freebsd": fb} | k.nic.flow_fields()
    # The buffer starts at sendspace (tcp_mss() rounds it up) and autosizing grows it to
    # sendbuf_max (tcp_subr.c V_tcp_autosndbuf_max, 2 MB).
    out["sndbuf_initial_bytes"] = k.sendspace
    out["sndbuf_bytes"] = SENDBUF_MAX
    if k.sendspace_set:
        if not k.sendbuf_auto:
            fb["sendbuf_inc_bytes"] = 8192  # autosizing's rounding at setup, capped at it:
            out["sndbuf_bytes"] = -(-k.sendspace // maxseg) * maxseg  # tcp_mss() roundup only
    return out


def apply(knobs: Knobs, command: str) -> None:
    """The sysctls of one backtick block (`sysctl [-w] name=value ...`) and its `ifconfig IF
    [-]tso | [-]lro` lines (nic_freebsd.py)."""
    for line in _lines(command):
        try:
            words = shlex.split(line, comments=True)
        except ValueError as e:
            raise NotModelled(f"command {line.strip()!r}: {e}") from None
        if not words:
            continue
        if words[0] == "ifconfig":
            why = ifconfig(knobs.nic, words)
            if why:
                raise NotModelled(why)
            continue
        if words[0] != "sysctl":
            raise NotModelled(f"command {line.strip()!r}: not modelled")
        for w in words[1:]:
            if w.startswith("-"):
                continue
            name, eq, val = w.partition("=")
            if not eq:
                raise NotModelled(f"sysctl {w!r}: reading a sysctl is not modelled")
            _set(knobs, name, val.strip('"'))


def _set(knobs: Knobs, name: str, val: str) -> None:
    if name not in _SETTERS:
        raise NotModelled(f"sysctl {name}: no model knob")
    setter, allowed = _SETTERS[name]
    if allowed is not None and val not in allowed:
        raise NotModelled(f"sysctl {name}={val}: {_WHY.get(name, f'values modelled: {allowed}')}")
    try:
        setter(knobs, val)
    except ValueError:
        raise NotModelled(f"sysctl {name}={val}: not a number") from None

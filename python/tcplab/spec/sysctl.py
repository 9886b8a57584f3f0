"""Host settings under the sysctl names users already know, mapped onto the model's parameters.

A host's sysctls apply to it in both roles: as a sender (send buffer, initial window, congestion
control) and as a receiver (receive buffer). Explicit sender keys (`cc`, `sndbuf`, `rcvbuf`,
`initcwnd`) and a sysctl that sets the same thing may not both be given.
"""

from __future__ import annotations

from typing import Any

LINUX = "linux"
FREEBSD = "freebsd"
#: Sysctl families: each stack belongs to one (family()).
FAMILIES = (LINUX, FREEBSD)

#: Linux names -> what each sets (shown to users); `route.initcwnd` is `ip route ... initcwnd N`.
LINUX_SYSCTLS = {
    "net.ipv4.tcp_rmem": "receive buffer: the third value (max) is the window the receiver can offer",
    "net.ipv4.tcp_wmem": "send buffer: second value (initial) and third (max) of the autotuned buffer",
    "net.ipv4.tcp_congestion_control": "congestion control of connections this host opens",
    "net.ipv4.tcp_no_metrics_save": "0 or 1; simulated runs never share cached metrics, so both act as 1",
    "route.initcwnd": "initial congestion window, segments (ip route ... initcwnd N)",
    "net.ipv4.tcp_ecn": "ECN (RFC 3168): 1 request and accept, 2 accept only (default), 0 off; "
                        "dctcp requests it whatever this says",
    "module.tcp_dctcp.dctcp_ect": "1: dctcp sends ECT(1), the L4S identifier (RFC 9331), instead of ECT(0); a parameter "
                                  "of L4STeam/linux's tcp_dctcp.c (mainline has none), simulator only",
    "net.ipv4.tcp_adv_win_scale": "receiver: share of the buffer offered as window, 1 - 2^-n for n > 0, "
                                  "2^n for n <= 0 (default 1: half; Linux 6.6+ measure it, docs/models.md)",
    "net.ipv4.tcp_sack": "0 or 1 (default): SACK offered in SYNs and accepted; used when both ends have it",
    "net.ipv4.tcp_timestamps": "0 or 1 (default): timestamps offered and accepted; used when both ends have them",
    "net.ipv4.tcp_window_scaling": "0 or 1 (default): window scaling; without it a window is at most 65535 bytes",
    "net.ipv4.tcp_syn_retries": "SYN retransmissions before connect() fails (default 6)",
    "net.ipv4.tcp_syn_linear_timeouts": "SYN timeouts that keep the 1 s RTO before it doubles (default 4, "
                                        "Linux 6.5+; 0 is the behaviour of older kernels)",
}

#: FreeBSD names -> what each sets.
FREEBSD_SYSCTLS = {
    "net.inet.tcp.initcwnd_segments": "initial congestion window, segments",
    "net.inet.tcp.tso": "0 or 1: TSO bursts of up to 64 KB (1, default) or single segments",
    "net.inet.tcp.sack.tso": "0 (default) or 1: hole retransmissions in SACK recovery may be TSO bursts",
    "net.inet.tcp.do_prr": "0 or 1 (default): PRR (tcp_do_prr_ack) or tcp_sack_partialack in SACK recovery",
    "net.inet.tcp.sack.lrd": "0 or 1: lost-retransmission detection in SACK recovery (default: the stack version's, "
                             "0 in 2023, 1 from 15.0-2024-10)",
    "net.inet.tcp.sendbuf_max": "largest send buffer autosizing may reach, bytes",
    "net.inet.tcp.sendspace": "initial send buffer, bytes (default 32768)",
    "net.inet.tcp.sendbuf_inc": "send-buffer autosizing step, bytes (default 8192; 0 turns autosizing off)",
    "net.inet.tcp.recvbuf_max": "receive buffer: the largest window the receiver can offer, bytes",
    "net.inet.tcp.recvspace": "initial receive buffer, bytes; receive autosizing is not modelled, the window is recvbuf_max",
    "net.inet.tcp.hostcache.enable": "0 or 1; simulated runs never share cached metrics, so both act as 0",
    "net.inet.tcp.functions_default": "TCP stack: freebsd or rack; must agree with the sender's stack",
    "net.inet.tcp.cc.algorithm": "congestion control of connections this host opens",
    "net.inet.tcp.ecn.enable": "ECN (RFC 3168): 1 request and accept, 2 accept only (default), 0 off",
    "net.inet.tcp.sack.enable": "0 or 1 (default): SACK offered and accepted; used when both ends have it",
    "net.inet.tcp.rfc1323": "RFC 7323 options: 1 window scaling and timestamps (default), 2 window scaling "
                            "only, 3 timestamps only, 0 neither",
}

#: net.inet.tcp.functions_default values and the sender stack each one names.
FUNCTIONS = {"freebsd": "freebsd", "rack": "freebsd-rack"}


def family(stack: str) -> str:
    return FREEBSD if stack.startswith("freebsd") else LINUX


#: Window per 256 bytes of receive buffer of a Linux receiver by default: tcp_adv_win_scale = 1
#: (Linux <= 6.5: tcp_win_from_space() = space - space/2) and TCP_DEFAULT_SCALING_RATIO (6.6+).
LINUX_SCALING_RATIO = 128
#: A FreeBSD receiver offers its whole buffer (sbspace()).
WHOLE_BUFFER = 256


def adv_win_scale_ratio(n: int) -> int:
    """Linux <= 6.5 tcp_win_from_space() as a ratio in 1/256: space - (space >> n) for n > 0,
    space >> -n otherwise."""
    return WHOLE_BUFFER - (WHOLE_BUFFER >> n) if n > 0 else WHOLE_BUFFER >> -n


class OsMismatch(Exception):
    """A receiving host's sysctl (args[0]) is of another family (args[1]) than its `os`."""


def receiver_scaling_ratio(settings: dict[str, Any], params: dict[str, Any], os: str | None = None) -> int:
    """The window a receiving host offers per 256 bytes of buffer: a FreeBSD host (`os =
    "freebsd"`, or configured with FreeBSD names) offers the whole buffer; any other is Linux (the
    seeds' receivers, when they are not said to be FreeBSD)."""
    for name in settings:
        fam = FREEBSD if name in FREEBSD_SYSCTLS else LINUX
        if os is not None and fam != os:
            raise OsMismatch(name, fam)
    if "rcv_scaling_ratio" in params:
        return params["rcv_scaling_ratio"]
    if os is not None:
        return WHOLE_BUFFER if os == FREEBSD else LINUX_SCALING_RATIO
    return WHOLE_BUFFER if any(name in FREEBSD_SYSCTLS for name in settings) else LINUX_SCALING_RATIO


#: The kernels' sysctl handlers store these values in a C int (proc_dointvec, sysctl_handle_int).
INT_MAX = 2**31 - 1


def apply(settings: dict[str, Any], stack_family: str, role: str) -> dict[str, Any]:
    """Translate one host's sysctls for one role ("sender" or "receiver") into flow parameters.

    `settings` hold values already typed and checked by sysctl_values.value() (int, (min, default,
    max) or str). Raises KeyError(name) for an unknown name and LookupError(name, reason) for a name
    on the wrong family; the caller turns them into SpecErrors naming the file and key."""
    out: dict[str, Any] = {}
    for name, value in settings.items():
        out |= _one(name, value, stack_family, role)
    return out


def _one(name: str, value: Any, stack_family: str, role: str) -> dict[str, Any]:
    """What one sysctl (its value typed and checked) sets for one role. A sending host's sysctls
    must be of its stack's family;
    a receiving host runs its own OS (the seeds' receivers are Linux under FreeBSD senders too), so
    either family is taken there."""
    out: dict[str, Any] = {}
    if name in FREEBSD_SYSCTLS:
        if stack_family != FREEBSD and role == "sender":
            raise LookupError(name, "is a FreeBSD setting, not for a Linux host")
        return _freebsd(name, value, role)
    if name not in LINUX_SYSCTLS:
        raise KeyError(name)
    if stack_family != LINUX and role == "sender":
        raise LookupError(name, "is a Linux setting, not for a FreeBSD host")
    if name == "net.ipv4.tcp_rmem":
        _, _, mx = value
        if role == "receiver":
            out["rcvbuf_bytes"] = mx
    elif name == "net.ipv4.tcp_wmem":
        _, default, mx = value
        if role == "sender":
            out["sndbuf_bytes"] = mx
            out["sndbuf_initial_bytes"] = default
    elif name == "net.ipv4.tcp_congestion_control":
        if role == "sender":
            out["cc"] = value
    elif name == "net.ipv4.tcp_adv_win_scale":
        if role == "receiver":
            out["rcv_scaling_ratio"] = adv_win_scale_ratio(value)
    elif name == "net.ipv4.tcp_no_metrics_save":
        pass  # simulated runs never share cached metrics
    elif name == "route.initcwnd":
        if role == "sender":
            out["iw_segments"] = value
    elif name == "net.ipv4.tcp_ecn":
        out |= _ecn(value, role)
    elif name in _LINUX_OPTIONS:
        out |= _option(_LINUX_OPTIONS[name], bool(value), role)
    elif name == "net.ipv4.tcp_syn_retries":
        if role == "sender":
            out["syn_retries"] = value
    elif name == "net.ipv4.tcp_syn_linear_timeouts":
        if role == "sender":
            out["syn_linear_timeouts"] = value
    elif name == "module.tcp_dctcp.dctcp_ect":
        # L4STeam/linux net/ipv4/tcp_dctcp.c dctcp_register(): dctcp_ect sets TCP_CONG_WANTS_ECT_1.
        if role == "sender":
            out["ect1"] = bool(value)
    return out


#: Linux switches of the TCP options a handshake negotiates.
_LINUX_OPTIONS = {"net.ipv4.tcp_sack": "sack", "net.ipv4.tcp_timestamps": "timestamps",
                  "net.ipv4.tcp_window_scaling": "window_scaling"}


def _option(option: str, on: bool, role: str) -> dict[str, Any]:
    """A TCP option switch (sack, timestamps, window_scaling): offered in the SYN by a sender,
    accepted in the SYN-ACK by a receiver (`peer.*`)."""
    return {option: on} if role == "sender" else {f"peer.{option}": on}


def _ecn(mode: int, role: str) -> dict[str, Any]:
    """net.ipv4.tcp_ecn / net.inet.tcp.ecn.enable: a sender asks for ECN with 1; a receiver
    accepts with 1 or 2 (Linux tcp_ecn_create_request(), FreeBSD tcp_ecn_syncache_respond())."""
    return {"ecn_request": mode == 1} if role == "sender" else {"ecn_accept": mode in (1, 2)}


def _freebsd(name: str, value: Any, role: str) -> dict[str, Any]:
    """One FreeBSD sysctl for one role."""
    if name == "net.inet.tcp.initcwnd_segments":
        return {"iw_segments": value} if role == "sender" else {}
    switches = {"net.inet.tcp.tso": "tso", "net.inet.tcp.sack.tso": "sack_tso", "net.inet.tcp.sack.lrd": "sack_lrd",
                "net.inet.tcp.do_prr": "do_prr"}
    if name in switches:
        knob = switches[name]
        return {f"freebsd.{knob}": bool(value)} if role == "sender" else {}
    if name == "net.inet.tcp.sendbuf_max":
        return {"sndbuf_bytes": value} if role == "sender" else {}
    if name == "net.inet.tcp.sendspace":
        return {"sndbuf_initial_bytes": value} if role == "sender" else {}
    if name == "net.inet.tcp.sendbuf_inc":
        return {"freebsd.sendbuf_inc_bytes": value} if role == "sender" else {}
    if name == "net.inet.tcp.recvbuf_max":
        return {"rcvbuf_bytes": value} if role == "receiver" else {}
    if name in ("net.inet.tcp.recvspace", "net.inet.tcp.hostcache.enable"):
        return {}  # receive autosizing is not modelled; simulated runs share no cached metrics
    if name == "net.inet.tcp.functions_default":
        return {"stack_from_sysctl": FUNCTIONS[value]} if role == "sender" else {}
    if name == "net.inet.tcp.cc.algorithm":
        return {"cc": value} if role == "sender" else {}
    if name == "net.inet.tcp.ecn.enable":
        return _ecn(value, role)
    if name == "net.inet.tcp.sack.enable":
        return _option("sack", bool(value), role)
    if name == "net.inet.tcp.rfc1323":
        # tcp_subr.c tcp_newtcpcb(): 1 TF_REQ_SCALE|TF_REQ_TSTMP, 2 TF_REQ_SCALE, 3 TF_REQ_TSTMP.
        mode = value
        return _option("window_scaling", mode in (1, 2), role) | _option("timestamps", mode in (1, 3), role)
    raise KeyError(name)

"""The spec's [senders], [hosts], [stack_sysctl] and [[background]]: validated into the model's
flows (each stack's configuration resolved here, once) and background streams."""

from __future__ import annotations

from typing import Any

from .. import user_cc
from .._native import algorithms, algorithms_for, stack_options, stacks
from ..model import App, Background, Flow
from . import limits, sysctl, sysctl_values, units
from .ctx import Ctx, join
from .hosts import HOST_KEYS, Host
from .names import flow_name_problem

DEFAULTS = {
    "stack": "linux",
    "cc": "cubic",
    "time": "10s",  # iperf3 -t default
    "write": "128KiB",  # iperf3 -l default for TCP
    "initcwnd": 10,  # RFC 6928, Linux and FreeBSD default
    "sndbuf": "16MB",
    "rcvbuf": "6MB",  # Linux tcp_rmem max default
    "mtu": 1500,
}

SENDER_KEYS = ("host", "to", "stack", "cc", "start", "time", "bytes", "write", "initcwnd", "sndbuf", "rcvbuf", "mtu", "sack",
               "timestamps", "prr", "d43470", "version", "rack_rto_cwnd", "connect", "iperf3_control", "path")
#: How a connection opens: a three-way handshake through the network (iperf3's connections: its
#: transfer times start after it), or established at the start time (`connect = "established"`).
CONNECT = ("handshake", "established")

#: Each stack's knobs with their defaults and allowed values, as the Rust stack profiles define
#: them (tcplab-sim stack.rs `options`); never restated here.
STACK_OPTIONS: dict[str, dict[str, dict[str, Any]]] = stack_options()
#: The FreeBSD default stack's sysctl knobs (net.inet.tcp.tso, .sack.tso, .sack.lrd, .do_prr, .sendbuf_inc).
FREEBSD_KNOBS = {k: v["default"] for k, v in STACK_OPTIONS["freebsd"].items() if k not in ("d43470", "version")}
#: Linux PRR versions (tcp_cwnd_reduction() before and after the mainline change; docs/models.md).
PRR_VERSIONS = tuple(STACK_OPTIONS["linux"]["prr"]["allowed"])

BACKGROUND_KEYS = ("from", "to", "rate", "size", "start", "stop")


def host_sysctls(ctx: Ctx, spec: dict[str, Any], hosts: set[str]) -> dict[str, dict[str, Any]]:
    """[hosts.NAME.sysctl] tables, by host."""
    table = ctx.table(spec.get("hosts", {}), "hosts")
    out = {}
    for name, t in table.items():
        if name not in hosts:
            raise ctx.err(f"hosts.{name}", f"{name!r} is not a host of this topology", sorted(hosts))
        t = ctx.table(t, f"hosts.{name}")
        ctx.keys(t, f"hosts.{name}", HOST_KEYS)
        out[name] = _checked(ctx, f"hosts.{name}.sysctl", t.get("sysctl", {}))
    return out


def _checked(ctx: Ctx, where: str, table: Any) -> dict[str, Any]:
    """A sysctl table whose every value has its name's type (sysctl_values.py), whichever role
    the host plays (a receiver's tcp_syn_retries = "x" is as wrong as a sender's)."""
    table = ctx.table(table, where)
    for name, value in table.items():
        try:
            sysctl_values.value(name, value)
        except KeyError:
            raise ctx.err(f'{where}."{name}"', "unknown sysctl",
                          list(sysctl.LINUX_SYSCTLS) + list(sysctl.FREEBSD_SYSCTLS)) from None
        except ValueError as e:
            raise ctx.err(f'{where}."{name}"', str(e)) from None
    return table


def _sysctl_params(ctx: Ctx, where: str, settings: dict[str, Any], stack: str, role: str) -> dict[str, Any]:
    """Model parameters from the sysctls at table `where` (e.g. hosts.s1.sysctl), each value typed
    and checked by the one sysctl checker first (sysctl_values.py)."""
    try:
        typed = {}
        for name, value in settings.items():
            try:
                typed[name] = sysctl_values.value(name, value)
            except ValueError as e:
                raise LookupError(name, str(e)) from None
        return sysctl.apply(typed, sysctl.family(stack), role)
    except KeyError as e:
        raise ctx.err(f'{where}."{e.args[0]}"', "unknown sysctl",
                      list(sysctl.LINUX_SYSCTLS) + list(sysctl.FREEBSD_SYSCTLS)) from None
    except LookupError as e:
        raise ctx.err(f'{where}."{e.args[0]}"', e.args[1]) from None


def _stack_sysctls(ctx: Ctx, spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """[stack_sysctl.linux] / [stack_sysctl.freebsd]: sysctls of every sending host whose sender
    runs a stack of that family (so one spec can run either, e.g. for `tcplab peers`)."""
    table = ctx.table(spec.get("stack_sysctl", {}), "stack_sysctl")
    ctx.keys(table, "stack_sysctl", sysctl.FAMILIES)
    return {fam: _checked(ctx, f"stack_sysctl.{fam}", t) for fam, t in table.items()}


class Sysctls:
    """Every sysctl table of a spec, read once: which model parameters a sender's sysctls set."""

    def __init__(self, ctx: Ctx, spec: dict[str, Any], hosts: set[str]):
        self.ctx = ctx
        self.hosts = host_sysctls(ctx, spec, hosts)
        self.families = _stack_sysctls(ctx, spec)

    def for_sender(self, name: str, host: str, to: str, stack: str) -> dict[str, Any]:
        ctx, fam = self.ctx, sysctl.family(stack)
        by_sysctl = (_sysctl_params(ctx, f"stack_sysctl.{fam}", self.families.get(fam, {}), stack, "sender")
                     | _sysctl_params(ctx, f"hosts.{host}.sysctl", self.hosts.get(host, {}), stack, "sender")
                     | _sysctl_params(ctx, f"hosts.{to}.sysctl", self.hosts.get(to, {}), stack, "receiver"))
        if by_sysctl.get("stack_from_sysctl", stack) != stack:
            raise ctx.err(f'hosts.{host}.sysctl."net.inet.tcp.functions_default"',
                          f"names the {by_sysctl['stack_from_sysctl']} stack but sender {name} uses {stack}")
        return by_sysctl


def _endpoints(ctx: Ctx, t: dict[str, Any], path: str, name: str, hosts: set[str]) -> tuple[str, str]:
    host = t.get("host", name)
    if not isinstance(host, str) or host not in hosts:
        raise ctx.err(join(path, "host"), f"{host!r} is not a host of this topology", sorted(hosts))
    if "to" not in t:
        raise ctx.err(join(path, "to"), "is required: the receiving host", sorted(hosts - {host}))
    to = t["to"]
    if not isinstance(to, str) or to not in hosts or to == host:
        raise ctx.err(join(path, "to"), f"{to!r} is not another host of this topology", sorted(hosts - {host}))
    return host, to


def _cc(ctx: Ctx, t: dict[str, Any], path: str, stack: str) -> str:
    """The sender's algorithm as written: a kernel module the stack offers, or module:Class."""
    if isinstance(t.get("cc"), str) and user_cc.is_user_cc(t["cc"]):
        try:
            user_cc.load(t["cc"])
        except user_cc.UserCcError as e:
            raise ctx.err(join(path, "cc"), f"{e} (a user-written algorithm is module:Class, see examples/)") from None
        return t["cc"]
    offered = list(algorithms_for(stack)) + ["reno"]
    cc = t.get("cc", DEFAULTS["cc"])
    if cc in algorithms() and cc not in offered:
        raise ctx.err(join(path, "cc"), f"{cc!r} is not modelled for the {stack} stack, which offers", offered)
    return ctx.choice(t, path, "cc", DEFAULTS["cc"], offered)


def _app(ctx: Ctx, t: dict[str, Any], path: str) -> App:
    if "time" in t and "bytes" in t:
        raise ctx.err(join(path, "bytes"), "give either time (iperf3 -t) or bytes (iperf3 -n), not both")
    if "bytes" in t:
        return App("bytes", bytes=ctx.unit(t, path, "bytes", units.parse_size_bytes, limit=limits.TRANSFER))
    return App("time", duration_ns=ctx.unit(t, path, "time", units.parse_duration_ns, DEFAULTS["time"], limits.TIME))


def _iperf3_control(ctx: Ctx, t: dict[str, Any], path: str, app: App, connect: str) -> bool:
    """`iperf3_control = true`: the simulator models iperf3's control connection around the
    transfer (docs/models.md, "iperf3's control exchange"), for a byte count over a handshake."""
    on = ctx.boolean(t, path, "iperf3_control", False)
    if on and app.kind != "bytes":
        raise ctx.err(join(path, "iperf3_control"), "needs a byte count (bytes, iperf3 -n): the client's exit is "
                      "timed for transfers only")
    if on and connect != "handshake":
        raise ctx.err(join(path, "iperf3_control"), 'needs connect = "handshake" (the data connection\'s own '
                      "handshake is part of the exchange)")
    return on


def _version_defaults(stack: str, version: Any) -> dict[str, Any]:
    """The defaults a stack's `version` sets for other keys (e.g. sndbuf_bytes), from the native
    stack options; {} for a stack without versions or an unknown version (checked later)."""
    v = STACK_OPTIONS.get(stack, {}).get("version")
    return v["defaults"].get(version, {}) if v and isinstance(version, str) else {}


def _stack_knobs(ctx: Ctx, t: dict[str, Any], path: str, stack: str, sack: bool,
                 by_sysctl: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
    """The stack's own configuration: Linux's PRR version, FreeBSD's D43470 and knobs."""
    prr = None
    if "prr" in t:
        if stack != "linux":
            raise ctx.err(join(path, "prr"), f"applies to the linux stack only, not {stack!r}")
        prr = ctx.choice(t, path, "prr", STACK_OPTIONS["linux"]["prr"]["default"], PRR_VERSIONS)
    if "d43470" in t and stack != "freebsd":
        raise ctx.err(join(path, "d43470"), f"applies to the freebsd stack only, not {stack!r}")
    if "rack_rto_cwnd" in t and stack != "freebsd-rack":
        raise ctx.err(join(path, "rack_rto_cwnd"), f"applies to the freebsd-rack stack only, not {stack!r}")
    if "version" in t and "version" not in STACK_OPTIONS.get(stack, {}):
        raise ctx.err(join(path, "version"), f"applies to the freebsd and freebsd-rack stacks only, not {stack!r}")
    if not stack.startswith("freebsd"):
        return prr, None
    if not sack:
        raise ctx.err(join(path, "sack"), f"the {stack} stack is modelled for SACK connections only; "
                      "recovery without SACK is not modelled")
    freebsd = {"d43470": ctx.boolean(t, path, "d43470", STACK_OPTIONS["freebsd"]["d43470"]["default"])
               if stack == "freebsd" else False}
    versions = STACK_OPTIONS[stack]["version"]
    freebsd["version"] = ctx.choice(t, path, "version", versions["default"], versions["allowed"])
    if stack == "freebsd":
        if freebsd["version"] == "15.0-2025" and not freebsd["d43470"]:
            raise ctx.err(join(path, "d43470"), f"version {freebsd['version']!r} includes review D43470; "
                          "d43470 = false applies to versions 2023 and 15.0-2024-10 only")
    by_version = _version_defaults(stack, freebsd.get("version"))  # e.g. sack_lrd on from late 2023
    for knob, default in FREEBSD_KNOBS.items():
        freebsd[knob] = by_sysctl.get(f"freebsd.{knob}", by_version.get(knob, default))
    if stack == "freebsd-rack":  # RACK's cwnd after an RTO: the version's default (stack/options.rs)
        rto = STACK_OPTIONS[stack]["rack_rto_cwnd"]
        freebsd["rack_rto_cwnd"] = ctx.choice(t, path, "rack_rto_cwnd", by_version.get("rack_rto_cwnd", rto["default"]),
                                              rto["allowed"])
    return prr, freebsd


def sender_flow(ctx: Ctx, name: str, t: dict[str, Any], hosts: set[str], sysctls: Sysctls,
            host_cfg: dict[str, Host]) -> tuple[Flow, dict[str, Any]]:
    """One [senders.NAME] table: its flow and its normalized table."""
    if (problem := flow_name_problem(name, "sender")) is not None:
        raise ctx.err("senders", problem)
    path = f"senders.{name}"
    t = ctx.table(t, path)
    ctx.keys(t, path, SENDER_KEYS)
    host, to = _endpoints(ctx, t, path, name, hosts)
    stack = ctx.choice(t, path, "stack", DEFAULTS["stack"], list(stacks()))
    by_sysctl = sysctls.for_sender(name, host, to, stack)
    for key, param in (("cc", "cc"), ("sndbuf", "sndbuf_bytes"), ("rcvbuf", "rcvbuf_bytes"), ("initcwnd", "iw_segments"),
                       ("sack", "sack"), ("timestamps", "timestamps")):
        if key in t and param in by_sysctl:
            raise ctx.err(join(path, key), "is also set by a sysctl of its host or receiver; give one of them")
    cc = _cc(ctx, t | {"cc": by_sysctl["cc"]} if "cc" in by_sysctl else t, path, stack)
    start = ctx.unit(t, path, "start", units.parse_duration_ns, "0s", limits.START)
    app = _app(ctx, t, path)
    write = ctx.unit(t, path, "write", units.parse_size_bytes, DEFAULTS["write"], limits.WRITE)
    # A stack version's own net.inet.tcp.sendbuf_max (stack.rs `version_defaults`).
    version_sndbuf = _version_defaults(stack, t.get("version")).get("sndbuf_bytes")
    sndbuf_default = DEFAULTS["sndbuf"] if version_sndbuf is None else f"{version_sndbuf}B"
    sndbuf = by_sysctl.get("sndbuf_bytes") or ctx.unit(t, path, "sndbuf", units.parse_size_bytes, sndbuf_default,
                                                       limits.SOCKBUF)
    rcvbuf = by_sysctl.get("rcvbuf_bytes") or ctx.unit(t, path, "rcvbuf", units.parse_size_bytes, DEFAULTS["rcvbuf"],
                                                       limits.SOCKBUF)
    mtu = ctx.integer(t, path, "mtu", DEFAULTS["mtu"], 576, 65535)
    timestamps = by_sysctl.get("timestamps", ctx.boolean(t, path, "timestamps", True))
    sack = by_sysctl.get("sack", ctx.boolean(t, path, "sack", True))
    connect = ctx.choice(t, path, "connect", CONNECT[0], CONNECT)
    iperf3_control = _iperf3_control(ctx, t, path, app, connect)
    # The receiving host's side of the handshake: what it accepts (its sysctls; all on by default).
    peer = {opt: by_sysctl.get(f"peer.{opt}", True) for opt in ("sack", "timestamps", "window_scaling")}
    peer["ecn"] = by_sysctl.get("ecn_accept", True)
    if stack.startswith("freebsd") and sack and not peer["sack"]:
        key = next(k for k in ("net.inet.tcp.sack.enable", "net.ipv4.tcp_sack") if k in sysctls.hosts.get(to, {}))
        raise ctx.err(f'hosts.{to}.sysctl."{key}"', f"turns SACK off at the receiver, but the {stack} stack of "
                      f"sender {name} is modelled for SACK connections only")
    iw = by_sysctl.get("iw_segments") or ctx.integer(t, path, "initcwnd", DEFAULTS["initcwnd"], 1, 10000)
    mss = mtu - 40 - (12 if timestamps else 0)
    prr, freebsd = _stack_knobs(ctx, t, path, stack, sack, by_sysctl)
    receiver, sender_host = host_cfg.get(to, Host()), host_cfg.get(host, Host())
    if sender_host.os is not None and sender_host.os != sysctl.family(stack):
        raise ctx.err(f"hosts.{host}.os", f"is {sender_host.os!r} but its sender {name} runs the {stack} stack")
    try:
        ratio = sysctl.receiver_scaling_ratio(sysctls.hosts.get(to, {}),
                                              _sysctl_params(ctx, f"hosts.{to}.sysctl", sysctls.hosts.get(to, {}), stack,
                                                             "receiver"), receiver.os)
    except sysctl.OsMismatch as e:
        raise ctx.err(f'hosts.{to}.sysctl."{e.args[0]}"', f"is a {e.args[1]} name but hosts.{to}.os = {receiver.os!r}") from None
    if rcvbuf * ratio >> 8 < mss:
        raise ctx.err(join(path, "rcvbuf"), f"must offer a window of at least one segment ({mss} bytes); "
                      f"receiver {to} offers {ratio}/256 of its buffer")
    # ECN is asked for by the sender (tcp_ecn = 1, or dctcp: TCP_CONG_NEEDS_ECN) and used when the
    # receiver accepts (tcp_ecn 1 or 2; 2 is both systems' default): `peer["ecn"]`.
    ecn_request = by_sysctl.get("ecn_request", False) or cc == "dctcp"
    ecn = ecn_request and peer["ecn"]
    # L4STeam/linux's dctcp with dctcp_ect = 1 sends ECT(1) once ECN is negotiated (the parameter
    # acts on dctcp only).
    ect1 = ecn_request and cc == "dctcp" and by_sysctl.get("ect1", False)
    flow = Flow(name=name, host=host, to=to, stack=stack, cc=cc, start_ns=start, app=app, mss=mss, timestamps=timestamps,
                sack=sack, iw_segments=iw, sndbuf_bytes=sndbuf, rcvbuf_bytes=rcvbuf, rcv_scaling_ratio=ratio,
                rx_nic=receiver.rx_nic, write_bytes=write, prr=prr,
                sndbuf_initial_bytes=by_sysctl.get("sndbuf_initial_bytes"), freebsd=freebsd,
                tso_max_bytes=sender_host.tso_max_bytes, tso_frags=sender_host.tso_frags,
                sender_lro=sender_host.rx_nic.coalesce == "lro", receiver_os=receiver.os, ecn=ecn, ecn_request=ecn_request, ect1=ect1,
                connect=connect, iperf3_control=iperf3_control,
                window_scaling=by_sysctl.get("window_scaling", True), peer=peer,
                syn_retries=by_sysctl.get("syn_retries"), syn_linear_timeouts=by_sysctl.get("syn_linear_timeouts"))
    return flow, _normalized(t, flow, by_sysctl) | ({"path": t["path"]} if "path" in t else {})


def _normalized(t: dict[str, Any], f: Flow, by_sysctl: dict[str, Any]) -> dict[str, Any]:
    """The sender's table with every default filled in (keys a sysctl sets are left to it)."""
    n = {"host": f.host, "to": f.to, "stack": f.stack, "cc": f.cc, "start": t.get("start", "0s")}
    if "cc" in by_sysctl:
        del n["cc"]  # set by the host's sysctl, which the resolved spec keeps
    if f.app.kind == "bytes":
        n["bytes"] = t["bytes"]
    else:
        n["time"] = t.get("time", DEFAULTS["time"])
    n["write"], n["mtu"] = t.get("write", DEFAULTS["write"]), t.get("mtu", DEFAULTS["mtu"])
    for key, param, value in (("initcwnd", "iw_segments", f.iw_segments), ("sndbuf", "sndbuf_bytes", f"{f.sndbuf_bytes}B"),
                              ("rcvbuf", "rcvbuf_bytes", f"{f.rcvbuf_bytes}B")):
        if param not in by_sysctl:
            n[key] = value
    n["sack"], n["timestamps"] = f.sack, f.timestamps
    for key in ("sack", "timestamps"):
        if key in by_sysctl:
            del n[key]  # set by the host's sysctl, which the resolved spec keeps
    n["connect"] = f.connect
    if f.iperf3_control:
        n["iperf3_control"] = True
    if f.stack == "linux":
        n["prr"] = f.prr or STACK_OPTIONS["linux"]["prr"]["default"]
    if f.stack == "freebsd":
        n["d43470"] = f.freebsd["d43470"]
    if f.freebsd is not None and f.freebsd["version"] != STACK_OPTIONS[f.stack]["version"]["default"]:
        n["version"] = f.freebsd["version"]
    return n


def senders(ctx: Ctx, spec: dict[str, Any], hosts: set[str],
            host_cfg: dict[str, Host]) -> tuple[tuple[Flow, ...], dict[str, Any]]:
    """Every [senders.NAME] table: the flows and the normalized [senders] table; `host_cfg` is
    each host's OS and NIC (spec/hosts.py)."""
    sysctls = Sysctls(ctx, spec, hosts)
    table = ctx.table(spec.get("senders", {}), "senders")
    if not table and not spec.get("workload"):
        raise ctx.err("senders", "at least one sender (or a [[workload]]) is required, e.g. [senders.s1] to = \"r1\"")
    flows, norm = [], {}
    for name, t in table.items():
        flow, norm[name] = sender_flow(ctx, name, t, hosts, sysctls, host_cfg)
        flows.append(flow)
    return tuple(flows), norm


def background(ctx: Ctx, spec: dict[str, Any], nodes: set[str], end_ns: int) -> tuple[tuple[Background, ...], list[dict]]:
    """[[background]]: constant-rate UDP streams, and their normalized tables."""
    items = spec.get("background", [])
    if not isinstance(items, list):
        raise ctx.err("background", "must be an array of tables: [[background]]")
    out, norm = [], []
    for i, t in enumerate(items):
        path = f"background[{i}]"
        t = ctx.table(t, path)
        ctx.keys(t, path, BACKGROUND_KEYS)
        for key in ("from", "to"):
            if not isinstance(t.get(key), str) or t[key] not in nodes:
                raise ctx.err(join(path, key), f"{t.get(key)!r} is not a node of this topology", sorted(nodes))
        if t["from"] == t["to"]:
            raise ctx.err(join(path, "to"), "must differ from 'from'")
        rate = ctx.unit(t, path, "rate", units.parse_rate_bps, limit=limits.RATE)
        size = ctx.unit(t, path, "size", units.parse_size_bytes, "1500B")
        if not 28 <= size <= 65535:
            raise ctx.err(join(path, "size"), f"datagram size must be 28..65535 bytes, got {size}")
        start = ctx.unit(t, path, "start", units.parse_duration_ns, "0s", limits.START)
        stop = ctx.unit(t, path, "stop", units.parse_duration_ns, f"{end_ns}ns", limits.START)
        out.append(Background(f"udp{i}", t["from"], t["to"], rate, size, start, stop))
        norm.append({"from": t["from"], "to": t["to"], "rate": t["rate"], "size": t.get("size", "1500B"),
                     "start": t.get("start", "0s"), "stop": t.get("stop", f"{end_ns}ns")})
    return tuple(out), norm

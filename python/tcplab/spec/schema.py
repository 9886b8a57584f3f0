"""The experiment spec: TOML in, validated and resolved into the simulator's config.

Every error is a SpecError naming the file, the key and what is allowed, so the CLI can print
one clear line and exit 2 before anything is written.
"""

from __future__ import annotations

import copy
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterable

from .. import paths, user_cc
from . import limits, sysctl, units
from .limits import Limit
from .units import UnitError, cli_duration

#: Features a spec may ask for that this version does not implement yet: key -> what it is.
NOT_YET: dict[str, str] = {}

TOPOLOGY_KINDS = ("dumbbell", "pipe", "switch", "tri-point")

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


class SpecError(Exception):
    """A spec problem: file, dotted key, message (and the allowed values where they are few)."""

    def __init__(self, file: str, key: str, message: str, allowed: Iterable[str] | None = None):
        self.file, self.key, self.message = file, key, message
        self.allowed = list(allowed) if allowed is not None else None
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.file}: {self.key}" if self.key else self.file
        tail = f" (allowed: {', '.join(self.allowed)})" if self.allowed else ""
        # One line whatever the spec holds: a key with a newline or a control character is escaped.
        return "".join(c if c.isprintable() else repr(c)[1:-1] for c in f"{where}: {self.message}{tail}")


@dataclass
class Resolved:
    """A validated spec: the normalized spec, the simulator config, and labels for analysis."""

    source: str
    name: str
    seed: int
    spec: dict[str, Any]
    sim_config: dict[str, Any]
    flows: list[dict[str, Any]] = field(default_factory=list)
    ports: list[dict[str, Any]] = field(default_factory=list)
    bottleneck_port: int = 0
    #: Legal but suspicious values, each "key: what"; printed once and kept in summary.json.
    warnings: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Loading and overrides


def presets_dir() -> Path:
    """Where the packaged presets live."""
    return Path(str(resources.files("tcplab") / "presets"))


def preset_names() -> list[str]:
    """Preset names (file stems), sorted by their T number."""
    return sorted(p.stem for p in presets_dir().glob("*.toml"))


def find_preset(name: str) -> Path | None:
    """A preset by file stem ('t1-dumbbell-wan'), its short id ('T1', 't1') or its name ('dumbbell-wan')."""
    low = name.lower()
    for p in presets_dir().glob("*.toml"):
        tid, _, rest = p.stem.partition("-")
        if low in (p.stem, tid, rest):
            return p
    return None


def load_spec(arg: str) -> tuple[dict[str, Any], str]:
    """Read a spec from a path or a preset name. Returns (spec dict, source label for errors)."""
    path = Path(arg)
    if not path.is_file():
        preset = find_preset(arg)
        if preset is None:
            raise SpecError(arg, "", "no such spec file or preset", preset_names())
        path = preset
    label = str(path) if path.parent != presets_dir() else f"presets/{path.name}"
    try:
        return tomllib.loads(path.read_text()), label
    except tomllib.TOMLDecodeError as e:
        raise SpecError(label, "", f"not valid TOML: {e}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(label, "", f"cannot read: {e}") from None


def apply_set(spec: dict[str, Any], assignment: str, source: str) -> None:
    """Apply one `--set key=value` (value read as TOML, else as a string; `*` matches all keys)."""
    key, sep, raw = assignment.partition("=")
    key = key.strip()
    if not sep or not key:
        raise SpecError(source, assignment, "--set takes key=value, e.g. senders.s1.cc=newreno")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    set_key(spec, key, value, source)


def set_key(spec: dict[str, Any], key: str, value: Any, source: str) -> None:
    """Set dotted `key` to `value` in `spec`, creating tables on the way; a `*` part matches every
    key of the table it is in (`senders.*.cc`). Shared by --set and [sweep] axes."""
    parts = key.split(".")

    def assign(table: dict[str, Any], i: int) -> None:
        part = parts[i]
        if part == "*":
            if not table:
                raise SpecError(source, key, "'*' matches nothing here")
            targets = list(table)
        else:
            targets = [part]
        for t in targets:
            if i == len(parts) - 1:
                table[t] = copy.deepcopy(value)
            else:
                sub = table.setdefault(t, {})
                if not isinstance(sub, dict):
                    raise SpecError(source, ".".join(parts[: i + 1]), "is a value, not a table")
                assign(sub, i + 1)

    assign(spec, 0)


# ---------------------------------------------------------------------------------------------
# Validation helpers


class _Ctx:
    def __init__(self, source: str):
        self.source = source

    def err(self, key: str, message: str, allowed: Iterable[str] | None = None) -> SpecError:
        return SpecError(self.source, key, message, allowed)

    def table(self, value: Any, key: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.err(key, f"must be a table, got {value!r}")
        return value

    def keys(self, table: dict[str, Any], path: str, allowed: Iterable[str]) -> None:
        allowed = list(allowed)
        for k in table:
            if k not in allowed:
                raise self.err(_join(path, k), "unknown key", allowed)

    def unit(self, table: dict[str, Any], path: str, key: str, parse: Callable[[object], Any], default: Any = None,
             limit: Limit | None = None) -> Any:
        raw = table.get(key, default)
        if raw is None:
            raise self.err(_join(path, key), "is required")
        try:
            value = parse(raw)
        except UnitError as e:
            raise self.err(_join(path, key), str(e)) from None
        self.within(value, limit, _join(path, key), raw)
        return value

    def within(self, value: int, limit: Limit | None, key: str, raw: Any = None) -> None:
        """Raise unless `value` is inside `limit` (limits.py: the one table of ranges)."""
        problem = limit.check(value) if limit is not None else None
        if problem:
            shown = f"{raw!r} = {value}" if raw is not None and str(raw) != str(value) else repr(value)
            raise self.err(key, f"must be in {limit.shown}, got {shown}")

    def integer(self, table: dict[str, Any], path: str, key: str, default: int, lo: int, hi: int) -> int:
        v = table.get(key, default)
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise self.err(_join(path, key), f"must be an integer from {lo} to {hi}, got {v!r}")
        return v

    def boolean(self, table: dict[str, Any], path: str, key: str, default: bool) -> bool:
        v = table.get(key, default)
        if not isinstance(v, bool):
            raise self.err(_join(path, key), f"must be true or false, got {v!r}")
        return v

    def choice(self, table: dict[str, Any], path: str, key: str, default: str, allowed: Iterable[str]) -> str:
        allowed = list(allowed)
        v = table.get(key, default)
        if v not in allowed:
            raise self.err(_join(path, key), f"{v!r} is not one of the choices", allowed)
        return v

    def probability(self, table: dict[str, Any], path: str, key: str) -> float:
        v = table.get(key, 0.0)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v < 1.0:
            raise self.err(_join(path, key), f"must be a probability in [0, 1), got {v!r}")
        return float(v)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# ---------------------------------------------------------------------------------------------
# Topology


#: Default per-packet timing noise on host links. Real hosts always have some (NIC, driver,
#: interrupts); a simulator without it phase-locks equal-rate flows (see docs/models.md).
ACCESS_JITTER = "1us"

LINK_KEYS = ("rate", "delay", "rtt", "reverse_delay", "jitter", "buffer", "reverse_buffer", "loss", "reverse_loss")


def _link(ctx: _Ctx, t: dict[str, Any], path: str, defaults: dict[str, str], shared: bool) -> tuple[dict, dict, dict]:
    """One link's two directions (forward = towards the receivers). Returns (ab, ba, normalized)."""
    ctx.keys(t, path, LINK_KEYS)
    rate = ctx.unit(t, path, "rate", units.parse_rate_bps, defaults.get("rate"), limits.RATE)
    if "delay" in t and "rtt" in t:
        raise ctx.err(_join(path, "rtt"), "give either delay (one way) or rtt, not both")
    if "rtt" in t:
        delay = ctx.unit(t, path, "rtt", units.parse_duration_ns, limit=limits.RTT) // 2
    else:
        delay = ctx.unit(t, path, "delay", units.parse_duration_ns, defaults.get("delay"), limits.DELAY)
    rdelay = ctx.unit(t, path, "reverse_delay", units.parse_duration_ns, f"{delay}ns", limits.DELAY)
    jitter = ctx.unit(t, path, "jitter", units.parse_duration_ns, defaults.get("jitter", "0ns"), limits.JITTER)
    norm: dict[str, Any] = {"rate": t.get("rate", defaults.get("rate")), "delay": f"{delay}ns", "reverse_delay": f"{rdelay}ns",
                            "jitter": t.get("jitter", defaults.get("jitter", "0ns"))}
    if shared and ("buffer" in t or "reverse_buffer" in t):
        raise ctx.err(_join(path, "buffer"), "ports of a switch share its buffer; set topology.shared_buffer instead")
    fwd_raw = t.get("buffer", defaults.get("buffer"))
    bufs = []
    for key, raw in (("buffer", fwd_raw), ("reverse_buffer", t.get("reverse_buffer", fwd_raw))):
        if raw is None:
            bufs.append((None, None))  # unlimited: a host's own queue, which TSQ keeps in check
            continue
        kind, n = ctx.unit({key: raw}, path, key, units.parse_buffer)
        ctx.within(n, limits.BUFFER_PACKETS if kind == "packets" else limits.BUFFER_BYTES, _join(path, key), raw)
        norm[key] = raw
        bufs.append((n, None) if kind == "packets" else (None, n))
    loss = ctx.probability(t, path, "loss")
    rloss = ctx.probability(t, path, "reverse_loss")
    norm["loss"], norm["reverse_loss"] = loss, rloss

    def d(delay_ns: int, buf: tuple, p: float) -> dict:
        return {"rate_bps": rate, "delay_ns": delay_ns, "buffer_packets": buf[0], "buffer_bytes": buf[1], "loss": p,
                "jitter_ns": jitter}

    return d(delay, bufs[0], loss), d(rdelay, bufs[1], rloss), norm


def _topology(ctx: _Ctx, spec: dict[str, Any]) -> tuple[list[dict], list[dict], list[dict], int, dict, dict]:
    """Nodes, links, port labels, bottleneck port, the normalized topology table, and the two
    link tables' directions by their spec path (for warnings)."""
    topo = ctx.table(spec.get("topology", {}), "topology")
    kind = ctx.choice(topo, "topology", "kind", "dumbbell", TOPOLOGY_KINDS)
    common = ["kind", "access", "bottleneck"]
    if kind == "dumbbell":
        ctx.keys(topo, "topology", common + ["pairs"])
        pairs = ctx.integer(topo, "topology", "pairs", 2, 1, 64)
        senders = [f"s{i}" for i in range(1, pairs + 1)]
        receivers = [f"r{i}" for i in range(1, pairs + 1)]
        middle = [("rt1", "router"), ("rt2", "router")]
    elif kind == "pipe":
        ctx.keys(topo, "topology", common)
        senders, receivers, middle = ["s1"], ["r1"], [("rt1", "router")]
    else:
        ctx.keys(topo, "topology", common + ["shared_buffer", "senders"])
        n = 2 if kind == "tri-point" else ctx.integer(topo, "topology", "senders", 1, 1, 64)
        if kind == "tri-point" and "senders" in topo:
            raise ctx.err("topology.senders", "tri-point has exactly two senders; use kind = 'switch' for other counts")
        senders, receivers, middle = [f"s{i}" for i in range(1, n + 1)], ["r1"], [("sw", "switch")]
    shared = kind in ("switch", "tri-point")
    nodes = [{"name": s, "kind": "host"} for s in senders + receivers] + [{"name": m, "kind": k} for m, k in middle]
    index = {n["name"]: i for i, n in enumerate(nodes)}
    norm: dict[str, Any] = {"kind": kind}
    if kind == "dumbbell":
        norm["pairs"] = len(senders)
    if shared:
        if "shared_buffer" not in topo:
            raise ctx.err("topology.shared_buffer", "is required for a switch (its one packet buffer, e.g. '125KB')")
        kind_b, n_b = ctx.unit(topo, "topology", "shared_buffer", units.parse_buffer)
        if kind_b != "bytes":
            raise ctx.err("topology.shared_buffer", "a switch buffer is a size in bytes, e.g. '125KB'")
        ctx.within(n_b, limits.BUFFER_BYTES, "topology.shared_buffer", topo["shared_buffer"])
        nodes[index["sw"]]["shared_buffer_bytes"] = n_b
        norm["shared_buffer"] = topo["shared_buffer"]
        if kind == "switch":
            norm["senders"] = len(senders)
    access_t = ctx.table(topo.get("access", {}), "topology.access")
    bott_t = ctx.table(topo.get("bottleneck", {}), "topology.bottleneck")
    access_ab, access_ba, norm["access"] = _link(ctx, access_t, "topology.access", {"rate": "10Gbit", "delay": "10us", "jitter": ACCESS_JITTER}, False)
    b_ab, b_ba, norm["bottleneck"] = _link(ctx, bott_t, "topology.bottleneck", {"delay": "10us"}, shared)
    links: list[dict] = []
    labels: list[dict] = []

    def host_side(d: dict, node: str) -> dict:
        # A host's own egress queue is unlimited: its stack does not drop its own packets (Linux
        # TSQ and qdisc backpressure stop the socket instead). Limits apply to routers/switches.
        if nodes[index[node]]["kind"] == "host":
            return d | {"buffer_packets": None, "buffer_bytes": None}
        return d

    def add(a: str, b: str, ab: dict, ba: dict) -> int:
        links.append({"a": index[a], "b": index[b], "ab": host_side(ab, a), "ba": host_side(ba, b)})
        labels.append({"port": 2 * (len(links) - 1), "from": a, "to": b, "rate_bps": ab["rate_bps"]})
        labels.append({"port": 2 * (len(links) - 1) + 1, "from": b, "to": a, "rate_bps": ba["rate_bps"]})
        return len(links) - 1

    if kind == "dumbbell":
        for s in senders:
            add(s, "rt1", access_ab, access_ba)
        bottleneck = add("rt1", "rt2", b_ab, b_ba)
        for r in receivers:
            add("rt2", r, access_ab, access_ba)
    elif kind == "pipe":
        add("s1", "rt1", access_ab, access_ba)
        bottleneck = add("rt1", "r1", b_ab, b_ba)
    else:
        for s in senders:
            add(s, "sw", access_ab, access_ba)
        bottleneck = add("sw", "r1", b_ab, b_ba)
    sides = {"topology.access": (access_ab, access_ba), "topology.bottleneck": (b_ab, b_ba)}
    return nodes, links, labels, 2 * bottleneck, norm, sides


# ---------------------------------------------------------------------------------------------
# Senders, background traffic, tracing


SENDER_KEYS = ("host", "to", "stack", "cc", "start", "time", "bytes", "write", "initcwnd", "sndbuf", "rcvbuf", "mtu", "sack",
               "timestamps", "prr", "d43470")

#: FreeBSD default-stack knobs and their defaults (FreeBSD 15: tso 1, sack.tso 0, do_prr 1,
#: sendbuf_inc 8192).
FREEBSD_KNOBS = {"tso": True, "sack_tso": False, "do_prr": True, "sendbuf_inc_bytes": 8192}
#: Linux PRR versions (tcp_cwnd_reduction() before and after the mainline change; docs/models.md).
PRR_VERSIONS = ("6.x", "5.15")


def _host_sysctls(ctx: _Ctx, spec: dict[str, Any], hosts: set[str]) -> dict[str, dict[str, Any]]:
    """[hosts.NAME.sysctl] tables, by host."""
    table = ctx.table(spec.get("hosts", {}), "hosts")
    out = {}
    for name, t in table.items():
        if name not in hosts:
            raise ctx.err(f"hosts.{name}", f"{name!r} is not a host of this topology", sorted(hosts))
        t = ctx.table(t, f"hosts.{name}")
        ctx.keys(t, f"hosts.{name}", ("sysctl", "nic"))
        out[name] = ctx.table(t.get("sysctl", {}), f"hosts.{name}.sysctl")
    return out


def _host_gro_flush_ns(ctx: _Ctx, spec: dict[str, Any]) -> dict[str, int]:
    """[hosts.NAME.nic] gro = true, rx_usecs = N: the receiving NIC aggregates consecutive segments
    that arrive within N us of the first (GRO per NAPI poll under interrupt moderation), so TCP
    ACKs the aggregate once. Off unless asked: the coalescing time is the NIC driver's."""
    out = {}
    for name, t in ctx.table(spec.get("hosts", {}), "hosts").items():
        if "nic" not in t:
            continue
        path = f"hosts.{name}.nic"
        nic = ctx.table(t["nic"], path)
        ctx.keys(nic, path, ("gro", "rx_usecs"))
        if ctx.boolean(nic, path, "gro", False):
            if "rx_usecs" not in nic:
                raise ctx.err(_join(path, "rx_usecs"), "is required with gro = true: how long the NIC collects "
                              "packets before a poll (ethtool -c rx-usecs), e.g. 50")
            out[name] = ctx.integer(nic, path, "rx_usecs", 0, 1, 100_000) * 1000
    return out


def _sysctl_params(ctx: _Ctx, where: str, settings: dict[str, Any], stack: str, role: str) -> dict[str, Any]:
    """Model parameters from the sysctls at table `where` (e.g. hosts.s1.sysctl)."""
    try:
        return sysctl.apply(settings, sysctl.family(stack), role)
    except KeyError as e:
        raise ctx.err(f'{where}."{e.args[0]}"', "unknown sysctl",
                      list(sysctl.LINUX_SYSCTLS) + list(sysctl.FREEBSD_SYSCTLS)) from None
    except LookupError as e:
        raise ctx.err(f'{where}."{e.args[0]}"', e.args[1]) from None


def _stack_sysctls(ctx: _Ctx, spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """[stack_sysctl.linux] / [stack_sysctl.freebsd]: sysctls of every sending host whose sender
    runs a stack of that family (so one spec can run either, e.g. for `tcplab peers`)."""
    table = ctx.table(spec.get("stack_sysctl", {}), "stack_sysctl")
    ctx.keys(table, "stack_sysctl", sysctl.FAMILIES)
    return {fam: ctx.table(t, f"stack_sysctl.{fam}") for fam, t in table.items()}


def _senders(ctx: _Ctx, spec: dict[str, Any], index: dict[str, int], hosts: set[str]) -> tuple[list[dict], dict, list[str]]:
    """The simulator's flows, the normalized [senders] table, and each flow's algorithm as the
    user named it (a Linux `reno` is the simulator's `newreno` but is shown as `reno`)."""
    from .. import _native

    host_sysctls = _host_sysctls(ctx, spec, hosts)
    gro_flush_ns = _host_gro_flush_ns(ctx, spec)
    family_sysctls = _stack_sysctls(ctx, spec)
    table = ctx.table(spec.get("senders", {}), "senders")
    if not table:
        raise ctx.err("senders", "at least one sender is required, e.g. [senders.s1] to = \"r1\"")
    flows, norm, cc_names = [], {}, []
    stacks = list(_native.stacks())
    for name, t in table.items():
        path = f"senders.{name}"
        t = ctx.table(t, path)
        ctx.keys(t, path, SENDER_KEYS)
        host = t.get("host", name)
        if not isinstance(host, str) or host not in hosts:
            raise ctx.err(_join(path, "host"), f"{host!r} is not a host of this topology", sorted(hosts))
        if "to" not in t:
            raise ctx.err(_join(path, "to"), "is required: the receiving host", sorted(hosts - {host}))
        to = t["to"]
        if not isinstance(to, str) or to not in hosts or to == host:
            raise ctx.err(_join(path, "to"), f"{to!r} is not another host of this topology", sorted(hosts - {host}))
        stack = t.get("stack", DEFAULTS["stack"])
        stack = ctx.choice(t, path, "stack", DEFAULTS["stack"], stacks)
        fam = sysctl.family(stack)
        from_family = _sysctl_params(ctx, f"stack_sysctl.{fam}", family_sysctls.get(fam, {}), stack, "sender")
        from_host = _sysctl_params(ctx, f"hosts.{host}.sysctl", host_sysctls.get(host, {}), stack, "sender")
        from_peer = _sysctl_params(ctx, f"hosts.{to}.sysctl", host_sysctls.get(to, {}), stack, "receiver")
        by_sysctl = from_family | from_host | from_peer
        if by_sysctl.get("stack_from_sysctl", stack) != stack:
            raise ctx.err(f'hosts.{host}.sysctl."net.inet.tcp.functions_default"',
                          f"names the {by_sysctl['stack_from_sysctl']} stack but sender {name} uses {stack}")
        for key, param in (("cc", "cc"), ("sndbuf", "sndbuf_bytes"), ("rcvbuf", "rcvbuf_bytes"), ("initcwnd", "iw_segments")):
            if key in t and param in by_sysctl:
                raise ctx.err(_join(path, key), "is also set by a sysctl of its host or receiver; give one of them")
        if "cc" in by_sysctl:
            t = t | {"cc": by_sysctl["cc"]}
        if isinstance(t.get("cc"), str) and user_cc.is_user_cc(t["cc"]):
            cc = t["cc"]
            try:
                user_cc.load(cc)
            except user_cc.UserCcError as e:
                raise ctx.err(_join(path, "cc"), f"{e} (a user-written algorithm is module:Class, see examples/)") from None
        else:
            offered = list(_native.algorithms_for(stack)) + ["reno"]
            cc = t.get("cc", DEFAULTS["cc"])
            if cc in _native.algorithms() and cc not in offered:
                raise ctx.err(_join(path, "cc"), f"{cc!r} is not modelled for the {stack} stack, which offers", offered)
            cc = ctx.choice(t, path, "cc", DEFAULTS["cc"], offered)
        start = ctx.unit(t, path, "start", units.parse_duration_ns, "0s", limits.START)
        if "time" in t and "bytes" in t:
            raise ctx.err(_join(path, "bytes"), "give either time (iperf3 -t) or bytes (iperf3 -n), not both")
        if "bytes" in t:
            nbytes = ctx.unit(t, path, "bytes", units.parse_size_bytes, limit=limits.TRANSFER)
            app = {"kind": "bytes", "bytes": nbytes}
        else:
            dur = ctx.unit(t, path, "time", units.parse_duration_ns, DEFAULTS["time"], limits.TIME)
            app = {"kind": "time", "duration_ns": dur}
        write = ctx.unit(t, path, "write", units.parse_size_bytes, DEFAULTS["write"], limits.WRITE)
        sndbuf = by_sysctl.get("sndbuf_bytes") or ctx.unit(t, path, "sndbuf", units.parse_size_bytes, DEFAULTS["sndbuf"],
                                                           limits.SOCKBUF)
        rcvbuf = by_sysctl.get("rcvbuf_bytes") or ctx.unit(t, path, "rcvbuf", units.parse_size_bytes, DEFAULTS["rcvbuf"],
                                                           limits.SOCKBUF)
        mtu = ctx.integer(t, path, "mtu", DEFAULTS["mtu"], 576, 65535)
        timestamps = ctx.boolean(t, path, "timestamps", True)
        sack = ctx.boolean(t, path, "sack", True)
        iw = by_sysctl.get("iw_segments") or ctx.integer(t, path, "initcwnd", DEFAULTS["initcwnd"], 1, 10000)
        mss = mtu - 40 - (12 if timestamps else 0)
        prr = None
        if "prr" in t:
            if stack != "linux":
                raise ctx.err(_join(path, "prr"), f"applies to the linux stack only, not {stack!r}")
            prr = ctx.choice(t, path, "prr", "6.x", PRR_VERSIONS)
        freebsd = None
        if "d43470" in t and stack != "freebsd":
            raise ctx.err(_join(path, "d43470"), f"applies to the freebsd stack only, not {stack!r}")
        if stack.startswith("freebsd"):
            if not sack:
                raise ctx.err(_join(path, "sack"), f"the {stack} stack is modelled for SACK connections only; "
                              "recovery without SACK is not modelled")
            freebsd = {"d43470": ctx.boolean(t, path, "d43470", True) if stack == "freebsd" else False}
            for knob, default in FREEBSD_KNOBS.items():
                freebsd[knob] = by_sysctl.get(f"freebsd.{knob}", default)
        ratio = sysctl.receiver_scaling_ratio(host_sysctls.get(to, {}), from_peer)
        if rcvbuf * ratio >> 8 < mss:
            raise ctx.err(_join(path, "rcvbuf"), f"must offer a window of at least one segment ({mss} bytes); "
                          f"receiver {to} offers {ratio}/256 of its buffer")
        flows.append({
            "name": name, "src": index[host], "dst": index[to], "start_ns": start, "stack": stack,
            "cc": "newreno" if cc == "reno" else cc, "mss": mss, "timestamps": timestamps, "sack": sack,
            "iw_segments": iw, "sndbuf_bytes": sndbuf, "rcvbuf_bytes": rcvbuf, "rcv_scaling_ratio": ratio,
            "gro_flush_ns": gro_flush_ns.get(to, 0), "write_bytes": write, "app": app,
            "prr": prr, "sndbuf_initial_bytes": by_sysctl.get("sndbuf_initial_bytes"), "freebsd": freebsd,
        })
        cc_names.append(cc)
        n = {"host": host, "to": to, "stack": stack, "cc": cc, "start": t.get("start", "0s")}
        if "cc" in by_sysctl:
            del n["cc"]  # set by the host's sysctl, which the resolved spec keeps
        if app["kind"] == "bytes":
            n["bytes"] = t["bytes"]
        else:
            n["time"] = t.get("time", DEFAULTS["time"])
        n["write"], n["mtu"] = t.get("write", DEFAULTS["write"]), t.get("mtu", DEFAULTS["mtu"])
        for key, param, value in (("initcwnd", "iw_segments", iw), ("sndbuf", "sndbuf_bytes", f"{sndbuf}B"),
                                  ("rcvbuf", "rcvbuf_bytes", f"{rcvbuf}B")):
            if param not in by_sysctl:
                n[key] = value
        n["sack"], n["timestamps"] = sack, timestamps
        if stack == "linux":
            n["prr"] = prr or "6.x"
        if stack == "freebsd":
            n["d43470"] = freebsd["d43470"]
        norm[name] = n
    return flows, norm, cc_names


BACKGROUND_KEYS = ("from", "to", "rate", "size", "start", "stop")


def _background(ctx: _Ctx, spec: dict[str, Any], index: dict[str, int], end_ns: int) -> tuple[list[dict], list[dict]]:
    items = spec.get("background", [])
    if not isinstance(items, list):
        raise ctx.err("background", "must be an array of tables: [[background]]")
    out, norm = [], []
    for i, t in enumerate(items):
        path = f"background[{i}]"
        t = ctx.table(t, path)
        ctx.keys(t, path, BACKGROUND_KEYS)
        for key in ("from", "to"):
            if not isinstance(t.get(key), str) or t[key] not in index:
                raise ctx.err(_join(path, key), f"{t.get(key)!r} is not a node of this topology", sorted(index))
        if t["from"] == t["to"]:
            raise ctx.err(_join(path, "to"), "must differ from 'from'")
        rate = ctx.unit(t, path, "rate", units.parse_rate_bps, limit=limits.RATE)
        size = ctx.unit(t, path, "size", units.parse_size_bytes, "1500B")
        if not 28 <= size <= 65535:
            raise ctx.err(_join(path, "size"), f"datagram size must be 28..65535 bytes, got {size}")
        start = ctx.unit(t, path, "start", units.parse_duration_ns, "0s", limits.START)
        stop = ctx.unit(t, path, "stop", units.parse_duration_ns, f"{end_ns}ns", limits.START)
        out.append({"name": f"udp{i}", "src": index[t["from"]], "dst": index[t["to"]], "rate_bps": rate,
                    "size_bytes": size, "start_ns": start, "stop_ns": stop})
        norm.append({"from": t["from"], "to": t["to"], "rate": t["rate"], "size": t.get("size", "1500B"),
                     "start": t.get("start", "0s"), "stop": t.get("stop", f"{end_ns}ns")})
    return out, norm


TRACE_KEYS = ("sample", "interval", "sends", "pcap")


def _trace(ctx: _Ctx, spec: dict[str, Any]) -> tuple[int, int, bool, dict]:
    t = ctx.table(spec.get("trace", {}), "trace")
    ctx.keys(t, "trace", TRACE_KEYS)
    sample_raw = t.get("sample", "1ms")
    sample = 0 if sample_raw == "ack" else ctx.unit(t, "trace", "sample", units.parse_duration_ns, "1ms", limits.SAMPLE)
    interval = ctx.unit(t, "trace", "interval", units.parse_duration_ns, "1s", limits.INTERVAL)
    sends = ctx.boolean(t, "trace", "sends", False)
    norm = {"sample": sample_raw, "interval": t.get("interval", "1s"), "sends": sends}
    # pcap: the netns backend's tcpdump -s 100 at the bottleneck (the simulator has `sends`).
    if ctx.boolean(t, "trace", "pcap", False):
        norm["pcap"] = True
    return sample, interval, sends, norm


MEASURE_KEYS = ("cpu",)


def _measure(ctx: _Ctx, spec: dict[str, Any]) -> tuple[bool, dict]:
    """[measure] cpu = true: time the TCP path and the CC hooks (simulator; see tcplab-sim cpu.rs)."""
    t = ctx.table(spec.get("measure", {}), "measure")
    ctx.keys(t, "measure", MEASURE_KEYS)
    cpu = ctx.boolean(t, "measure", "cpu", False)
    return cpu, ({"cpu": True} if cpu else {})


# ---------------------------------------------------------------------------------------------


TOP_KEYS = ("name", "description", "seed", "duration", "topology", "hosts", "stack_sysctl", "senders", "background", "trace",
            "measure", "peers", "sweep") + tuple(NOT_YET)

#: [peers]: the stacks and cc modules `tcplab peers` runs every sender with, and their defaults.
PEERS_KEYS = {"stacks": ["freebsd", "freebsd-rack", "linux"], "cc": ["newreno", "cubic"]}


def peers_matrix(spec: dict[str, Any], source: str) -> list[tuple[str, str]]:
    """The (stack, cc) pairs of the spec's [peers] table (the seeds' peer compare: every FreeBSD
    row against Linux with the same cc). Linux must be among the stacks."""
    from .. import _native

    ctx = _Ctx(source)
    t = ctx.table(spec.get("peers", {}), "peers")
    ctx.keys(t, "peers", PEERS_KEYS)
    allowed = {"stacks": list(_native.stacks()), "cc": list(_native.algorithms()) + ["reno"]}
    picked = {}
    for key, default in PEERS_KEYS.items():  # stacks first: they decide which cc every row can run
        v = t.get(key, default)
        if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
            raise ctx.err(f"peers.{key}", "must be a non-empty list of names", allowed[key])
        for x in v:
            if key == "cc" and x in _native.algorithms() and x not in allowed[key]:
                raise ctx.err("peers.cc", f"{x!r} is not modelled for every stack of peers.stacks", allowed[key])
            if x not in allowed[key]:
                raise ctx.err(f"peers.{key}", f"{x!r} is not known", allowed[key])
        picked[key] = list(dict.fromkeys(v))
        if key == "stacks":
            allowed["cc"] = [c for c in allowed["cc"] if all(c == "reno" or c in _native.algorithms_for(st)
                                                               for st in picked["stacks"])]
    if "linux" not in picked["stacks"]:
        raise ctx.err("peers.stacks", "must include linux: every other row is compared with it", allowed["stacks"])
    return [(st, cc) for st in picked["stacks"] for cc in picked["cc"]]

#: Seeds are the simulator's u64 RNG seed, kept within i64 so records and catalogs hold them.
SEED_MAX = 2**63 - 1

#: Simulated time allowed past the last application's end for the data in flight to drain,
#: and the cap for fixed-size transfers when no duration is given.
DRAIN_NS = 10 * 10**9
BYTES_CAP_NS = 600 * 10**9


def resolve(spec: dict[str, Any], source: str, *, seed: int | None = None, duration: str | None = None) -> Resolved:
    """Validate `spec` and build the simulator config. `duration` overrides every time-limited
    sender's `time` (the CLI's --duration)."""
    ctx = _Ctx(source)
    spec = copy.deepcopy(spec)
    ctx.keys(spec, "", TOP_KEYS)
    for key, what in NOT_YET.items():
        if key in spec:
            raise ctx.err(key, f"{what} are not implemented in this version of tcplab")
    if duration is not None:
        duration = cli_duration(duration)
        try:
            ctx.within(units.parse_duration_ns(duration), limits.TIME, "--duration", duration)
        except UnitError as e:
            raise ctx.err("--duration", str(e)) from None
        for t in ctx.table(spec.get("senders", {}), "senders").values():
            if isinstance(t, dict) and "bytes" not in t:
                t["time"] = duration
    # The name becomes the results folder's name: nothing that could leave results/ (paths.py).
    name = spec["name"] if "name" in spec else paths.slug(Path(source).stem)
    if (problem := paths.name_problem(name)) is not None:
        raise ctx.err("name", problem)
    run_seed = seed if seed is not None else ctx.integer(spec, "", "seed", 1, 0, SEED_MAX)
    if not 0 <= run_seed <= SEED_MAX:
        raise ctx.err("--seed", f"must be an integer from 0 to {SEED_MAX}, got {run_seed}")
    nodes, links, ports, bottleneck_port, topo_norm, topo_links = _topology(ctx, spec)
    index = {n["name"]: i for i, n in enumerate(nodes)}
    hosts = {n["name"] for n in nodes if n["kind"] == "host"}
    flows, senders_norm, cc_names = _senders(ctx, spec, index, hosts)
    ends = [f["start_ns"] + f["app"]["duration_ns"] for f in flows if f["app"]["kind"] == "time"]
    caps = [f["start_ns"] + BYTES_CAP_NS for f in flows if f["app"]["kind"] == "bytes"]
    if "duration" in spec:
        stop = ctx.unit(spec, "", "duration", units.parse_duration_ns, limit=limits.TIME)
    else:
        stop = max(ends + caps) + (DRAIN_NS if ends else 0)
    app_end = max(ends) if ends else stop
    udp, bg_norm = _background(ctx, spec, index, app_end)
    sample, interval, sends, trace_norm = _trace(ctx, spec)
    cpu, measure_norm = _measure(ctx, spec)
    sim_config = {
        "seed": run_seed, "stop_ns": stop, "sample_interval_ns": sample, "interval_ns": interval, "record_sends": sends,
        "measure_cpu": cpu,
        "nodes": nodes, "links": links, "flows": flows, "udp": udp,
        "monitor": [{"link": bottleneck_port // 2, "dir": "ab"}],
    }
    normalized = {"name": name, "seed": run_seed}
    if "description" in spec:
        normalized["description"] = str(spec["description"])
    if "duration" in spec:
        normalized["duration"] = spec["duration"]
    normalized.update({"topology": topo_norm, "senders": senders_norm, "trace": trace_norm})
    if spec.get("hosts"):
        normalized["hosts"] = copy.deepcopy(spec["hosts"])
    if spec.get("stack_sysctl"):
        normalized["stack_sysctl"] = copy.deepcopy(spec["stack_sysctl"])
    if spec.get("peers"):
        normalized["peers"] = copy.deepcopy(spec["peers"])
    if bg_norm:
        normalized["background"] = bg_norm
    if measure_norm:
        normalized["measure"] = measure_norm
    warnings = [f"{source}: {w}" for w in _warnings(topo_links, links, flows, udp, stop)]
    node_names = [n["name"] for n in nodes]
    flow_info = [{"name": f["name"], "host": node_names[f["src"]], "to": node_names[f["dst"]], "stack": f["stack"],
                  "cc": cc, "start_ns": f["start_ns"], "app": f["app"], "mss": f["mss"]} for f, cc in zip(flows, cc_names)]
    return Resolved(source=source, name=name, seed=run_seed, spec=normalized, sim_config=sim_config,
                    flows=flow_info, ports=ports, bottleneck_port=bottleneck_port, warnings=warnings)


def _path_links(links: list[dict], src: int, dst: int) -> list[tuple[dict, str]]:
    """The (link, direction) pairs from node `src` to `dst` (every topology here is a tree)."""
    adj: dict[int, list[tuple[int, dict, str]]] = {}
    for link in links:
        adj.setdefault(link["a"], []).append((link["b"], link, "ab"))
        adj.setdefault(link["b"], []).append((link["a"], link, "ba"))
    back: dict[int, tuple[int, dict, str]] = {}
    todo, seen = [src], {src}
    while todo:
        node = todo.pop()
        for nxt, link, d in adj.get(node, []):
            if nxt not in seen:
                seen.add(nxt)
                back[nxt] = (node, link, d)
                todo.append(nxt)
    hops = []
    while dst != src and dst in back:
        prev, link, d = back[dst]
        hops.append((link, d))
        dst = prev
    return hops[::-1]


def _warnings(topo_links: dict[str, tuple[dict, dict]], links: list[dict], flows: list[dict], udp: list[dict],
              stop_ns: int) -> list[str]:
    """Values that are legal but most likely not what the user meant, each "key: what"."""
    out = []
    packet = max(f["mss"] + 40 + (12 if f["timestamps"] else 0) for f in flows)
    for path, (ab, ba) in topo_links.items():
        for key, d in (("rate", ab), ("buffer", ab), ("reverse_buffer", ba)):
            if key == "rate" and d["rate_bps"] < limits.WARN_RATE_BELOW_BPS:
                out.append(f"{path}.rate: {d['rate_bps']} bit/s is below 1 kbit/s")
            if key != "rate" and d["buffer_bytes"] is not None and d["buffer_bytes"] < packet:
                out.append(f"{path}.{key}: {d['buffer_bytes']} B is smaller than one packet ({packet} B): "
                           "every full-size packet is dropped")
    for i, u in enumerate(udp):
        if u["rate_bps"] < limits.WARN_RATE_BELOW_BPS:
            out.append(f"background[{i}].rate: {u['rate_bps']} bit/s is below 1 kbit/s")
    for f in flows:
        rtt_ns = sum(link[d]["delay_ns"] + link["ba" if d == "ab" else "ab"]["delay_ns"]
                     for link, d in _path_links(links, f["src"], f["dst"]))
        runs_ns = min(stop_ns, f["start_ns"] + f["app"].get("duration_ns", stop_ns)) - f["start_ns"]
        if runs_ns < rtt_ns:
            out.append(f"senders.{f['name']}.time: runs {runs_ns / 1e6:g} ms, less than one round trip "
                       f"({rtt_ns / 1e6:g} ms): no data can be acknowledged")
    return out

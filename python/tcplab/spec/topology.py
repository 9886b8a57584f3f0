"""The spec's [topology]: node and link tables validated into the model's nodes and links."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..model import BufferPolicy, Direction, Link, Node
from . import aqm as aqm_spec
from . import impair as impair_spec
from . import limits, units
from . import pause as pause_spec
from .ctx import Ctx, join

KINDS = ("dumbbell", "pipe", "switch", "tri-point")

#: Default per-packet timing noise on host links. Real hosts always have some (NIC, driver,
#: interrupts); a simulator without it phase-locks equal-rate flows (see docs/models.md).
ACCESS_JITTER = "1us"

LINK_KEYS = ("rate", "delay", "rtt", "reverse_delay", "jitter", "buffer", "reverse_buffer", "loss", "reverse_loss", "aqm",
             "reverse_aqm") + impair_spec.KEYS


@dataclasses.dataclass(frozen=True)
class Topology:
    """What [topology] resolves to: nodes, links, the bottleneck's port, the normalized table,
    and each link table's two directions by spec path (for warnings)."""

    nodes: tuple[Node, ...]
    links: tuple[Link, ...]
    bottleneck_port: int
    normalized: dict[str, Any]
    tables: dict[str, tuple[Direction, Direction]]


def _buffers(ctx: Ctx, t: dict[str, Any], path: str, default: Any, norm: dict[str, Any]) -> list[tuple[int | None, int | None]]:
    """(packets, bytes) limits of the forward and reverse queues; (None, None) is unlimited."""
    fwd_raw = t.get("buffer", default)
    bufs: list[tuple[int | None, int | None]] = []
    for key, raw in (("buffer", fwd_raw), ("reverse_buffer", t.get("reverse_buffer", fwd_raw))):
        if raw is None:
            bufs.append((None, None))  # unlimited: a host's own queue, which TSQ keeps in check
            continue
        kind, n = ctx.unit({key: raw}, path, key, units.parse_buffer)
        ctx.within(n, limits.BUFFER_PACKETS if kind == "packets" else limits.BUFFER_BYTES, join(path, key), raw)
        norm[key] = raw
        bufs.append((n, None) if kind == "packets" else (None, n))
    return bufs


def link(ctx: Ctx, t: dict[str, Any], path: str, defaults: dict[str, str], shared: bool) -> tuple[Direction, Direction, dict]:
    """One link table's two directions (forward = towards the receivers) and its normalized form."""
    ctx.keys(t, path, LINK_KEYS)
    rate = ctx.unit(t, path, "rate", units.parse_rate_bps, defaults.get("rate"), limits.RATE)
    if "delay" in t and "rtt" in t:
        raise ctx.err(join(path, "rtt"), "give either delay (one way) or rtt, not both")
    if "rtt" in t:
        delay = ctx.unit(t, path, "rtt", units.parse_duration_ns, limit=limits.RTT) // 2
    else:
        delay = ctx.unit(t, path, "delay", units.parse_duration_ns, defaults.get("delay"), limits.DELAY)
    rdelay = ctx.unit(t, path, "reverse_delay", units.parse_duration_ns, f"{delay}ns", limits.DELAY)
    jitter = ctx.unit(t, path, "jitter", units.parse_duration_ns, defaults.get("jitter", "0ns"), limits.JITTER)
    norm: dict[str, Any] = {"rate": t.get("rate", defaults.get("rate")), "delay": f"{delay}ns", "reverse_delay": f"{rdelay}ns",
                            "jitter": t.get("jitter", defaults.get("jitter", "0ns"))}
    if shared and ("buffer" in t or "reverse_buffer" in t):
        raise ctx.err(join(path, "buffer"), "ports of a switch share its buffer; set topology.shared_buffer instead")
    bufs = _buffers(ctx, t, path, defaults.get("buffer"), norm)
    loss = ctx.probability(t, path, "loss")
    rloss = ctx.probability(t, path, "reverse_loss")
    norm["loss"], norm["reverse_loss"] = loss, rloss
    aqms = []
    for key, buf in (("aqm", bufs[0]), ("reverse_aqm", bufs[1])):
        if key not in t:
            aqms.append(None)
            continue
        if shared:
            raise ctx.err(join(path, key), "a queue discipline on a switch's shared buffer is not supported; "
                                           "use a dumbbell or pipe topology")
        resolved = aqm_spec.aqm(ctx, t[key], join(path, key), buf)
        aqms.append(tuple(resolved.items()) if resolved is not None else None)
        norm[key] = t[key]
    imps, delay, rdelay = _impairments(ctx, t, path, (delay, rdelay), aqms, norm)
    return (Direction(rate, delay, bufs[0][0], bufs[0][1], loss, jitter, aqms[0], impair=imps[0]),
            Direction(rate, rdelay, bufs[1][0], bufs[1][1], rloss, jitter, aqms[1], impair=imps[1]), norm)


def _impairments(ctx: Ctx, t: dict[str, Any], path: str, delays: tuple[int, int], aqms: list[Any],
                 norm: dict[str, Any]) -> tuple[list[str | None], int, int]:
    """Each direction's netem, schedule and trace (spec/impair.py); netem's `delay TIME` in place
    of the link's delay for its direction."""
    imps, out = [], list(delays)
    for i, (rev, keys) in enumerate(((False, ("delay", "rtt")), (True, ("reverse_delay",)))):
        imp, nd, n = impair_spec.direction(ctx, t, path, rev)
        if imp is not None and aqms[i] is not None:
            raise ctx.err(join(path, next(iter(n))), "impairments with a queue discipline on the same direction are "
                                                     "not supported yet")
        if nd is not None:
            if any(k in t for k in keys):
                raise ctx.err(join(path, keys[0]), f"the delay is given twice: here and in {next(iter(n))}'s delay")
            out[i] = nd
            norm.pop(keys[0], None)
        norm.update(n)
        imps.append(imp)
    return imps, out[0], out[1]


def _shape(ctx: Ctx, topo: dict[str, Any], kind: str) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """Senders, receivers and middle nodes (name, kind) of a topology kind."""
    common = ["kind", "access", "bottleneck"]
    if kind == "dumbbell":
        ctx.keys(topo, "topology", common + ["pairs"])
        pairs = ctx.integer(topo, "topology", "pairs", 2, limits.FLOWS.lo, limits.FLOWS.hi)
        return [f"s{i}" for i in range(1, pairs + 1)], [f"r{i}" for i in range(1, pairs + 1)], \
            [("rt1", "router"), ("rt2", "router")]
    if kind == "pipe":
        ctx.keys(topo, "topology", common)
        return ["s1"], ["r1"], [("rt1", "router")]
    ctx.keys(topo, "topology", common + ["shared_buffer", "senders"] + list(POLICY_KEYS) + list(pause_spec.KEYS))
    n = 2 if kind == "tri-point" else ctx.integer(topo, "topology", "senders", 1, limits.FLOWS.lo, limits.FLOWS.hi)
    if kind == "tri-point" and "senders" in topo:
        raise ctx.err("topology.senders", "tri-point has exactly two senders; use kind = 'switch' for other counts")
    return [f"s{i}" for i in range(1, n + 1)], ["r1"], [("sw", "switch")]


def _shared_buffer(ctx: Ctx, topo: dict[str, Any]) -> int:
    if "shared_buffer" not in topo:
        raise ctx.err("topology.shared_buffer", "is required for a switch (its one packet buffer, e.g. '125KB')")
    kind_b, n_b = ctx.unit(topo, "topology", "shared_buffer", units.parse_buffer)
    if kind_b != "bytes":
        raise ctx.err("topology.shared_buffer", "a switch buffer is a size in bytes, e.g. '125KB'")
    ctx.within(n_b, limits.BUFFER_BYTES, "topology.shared_buffer", topo["shared_buffer"])
    return n_b


#: How a switch's ports share its buffer (docs/models.md "Shared-buffer switches").
POLICIES = ("complete", "dynamic", "static")
POLICY_KEYS = ("shared_buffer_policy", "shared_buffer_alpha", "shared_buffer_ports")


def _buffer_policy(ctx: Ctx, topo: dict[str, Any], switch_ports: int, norm: dict[str, Any]) -> BufferPolicy:
    """shared_buffer_policy: complete sharing (default), dynamic threshold with
    shared_buffer_alpha (default 1), or a static partition among shared_buffer_ports (default:
    the switch's ports in this topology)."""
    kind = ctx.choice(topo, "topology", "shared_buffer_policy", "complete", POLICIES)
    for key, needs in (("shared_buffer_alpha", "dynamic"), ("shared_buffer_ports", "static")):
        if key in topo and kind != needs:
            raise ctx.err(f"topology.{key}", f"applies to shared_buffer_policy = '{needs}' only")
    if "shared_buffer_policy" in topo:
        norm["shared_buffer_policy"] = kind
    if kind == "dynamic":
        alpha = topo.get("shared_buffer_alpha", 1)
        lo, hi = limits.SHARED_BUFFER_ALPHA
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not lo <= alpha <= hi:
            raise ctx.err("topology.shared_buffer_alpha", f"must be a number from 1/1024 to {hi:g}, got {alpha!r} "
                          "(switch ASICs offer powers of two from 1/128 to 8)")
        norm["shared_buffer_alpha"] = alpha
        return BufferPolicy("dynamic", alpha=float(alpha))
    if kind == "static":
        lim = limits.SHARED_BUFFER_PORTS
        ports = ctx.integer(topo, "topology", "shared_buffer_ports", switch_ports, lim.lo, lim.hi)
        norm["shared_buffer_ports"] = ports
        return BufferPolicy("static", ports=ports)
    return BufferPolicy()


def topology(ctx: Ctx, spec: dict[str, Any]) -> Topology:
    """Validate [topology] and build its nodes and links."""
    topo = ctx.table(spec.get("topology", {}), "topology")
    kind = ctx.choice(topo, "topology", "kind", "dumbbell", KINDS)
    senders, receivers, middle = _shape(ctx, topo, kind)
    shared = kind in ("switch", "tri-point")
    norm: dict[str, Any] = {"kind": kind}
    if kind == "dumbbell":
        norm["pairs"] = len(senders)
    shared_bytes, policy, levels = None, BufferPolicy(), None
    if shared:
        shared_bytes = _shared_buffer(ctx, topo)
        norm["shared_buffer"] = topo["shared_buffer"]
        policy = _buffer_policy(ctx, topo, len(senders) + len(receivers), norm)
        levels = pause_spec.pause(ctx, topo, norm)
        if kind == "switch":
            norm["senders"] = len(senders)
    nodes = [Node(s, "host") for s in senders + receivers] + \
        [Node(m, k, shared_bytes, policy, levels) if k == "switch" else Node(m, k) for m, k in middle]  # type: ignore[arg-type]
    hosts = set(senders + receivers)
    access_t = ctx.table(topo.get("access", {}), "topology.access")
    bott_t = ctx.table(topo.get("bottleneck", {}), "topology.bottleneck")
    for key in ("aqm", "reverse_aqm"):
        if key in access_t:
            raise ctx.err(f"topology.access.{key}", "queue disciplines go on the bottleneck (topology.bottleneck.aqm)")
    access_ab, access_ba, norm["access"] = link(ctx, access_t, "topology.access",
                                                {"rate": "10Gbit", "delay": "10us", "jitter": ACCESS_JITTER}, False)
    b_ab, b_ba, norm["bottleneck"] = link(ctx, bott_t, "topology.bottleneck", {"delay": "10us"}, shared)
    links: list[Link] = []

    def host_side(d: Direction, node: str) -> Direction:
        # A host's own egress queue is unlimited: its stack does not drop its own packets (Linux
        # TSQ and qdisc backpressure stop the socket instead). Limits apply to routers/switches.
        return dataclasses.replace(d, buffer_packets=None, buffer_bytes=None) if node in hosts else d

    def add(a: str, b: str, ab: Direction, ba: Direction) -> int:
        links.append(Link(a, b, host_side(ab, a), host_side(ba, b)))
        return len(links) - 1

    first_hop = "sw" if shared else "rt1"
    for s in senders:
        add(s, first_hop, access_ab, access_ba)
    if kind == "dumbbell":
        bottleneck = add("rt1", "rt2", b_ab, b_ba)
        for r in receivers:
            add("rt2", r, access_ab, access_ba)
    else:
        bottleneck = add(first_hop, "r1", b_ab, b_ba)
    tables = {"topology.access": (access_ab, access_ba), "topology.bottleneck": (b_ab, b_ba)}
    return Topology(tuple(nodes), tuple(links), 2 * bottleneck, norm, tables)

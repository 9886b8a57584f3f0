"""A link table of the spec ([topology.access], [topology.bottleneck], [[topology.links]]): its two
directions (rate, delay, buffer, loss, AQM, netem's impairments), and a switch's shared buffer."""

from __future__ import annotations

from typing import Any

from ..model import BufferPolicy, Direction
from . import aqm as aqm_spec
from . import impair as impair_spec
from . import limits, units
from .ctx import Ctx, join

#: Default per-packet timing noise on host links. Real hosts always have some (NIC, driver,
#: interrupts); a simulator without it phase-locks equal-rate flows (see docs/models.md).
ACCESS_JITTER = "1us"

LINK_KEYS = ("rate", "delay", "rtt", "reverse_delay", "jitter", "buffer", "reverse_buffer", "loss", "reverse_loss", "aqm",
             "reverse_aqm") + impair_spec.KEYS


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


def shared_buffer(ctx: Ctx, t: dict[str, Any], path: str = "topology") -> int:
    """A switch's one packet buffer (`shared_buffer` of table `path`), bytes."""
    key = join(path, "shared_buffer")
    if "shared_buffer" not in t:
        raise ctx.err(key, "is required for a switch (its one packet buffer, e.g. '125KB')")
    kind_b, n_b = ctx.unit(t, path, "shared_buffer", units.parse_buffer)
    if kind_b != "bytes":
        raise ctx.err(key, "a switch buffer is a size in bytes, e.g. '125KB'")
    ctx.within(n_b, limits.BUFFER_BYTES, key, t["shared_buffer"])
    return n_b


#: How a switch's ports share its buffer (docs/models.md "Shared-buffer switches").
POLICIES = ("complete", "dynamic", "static")
POLICY_KEYS = ("shared_buffer_policy", "shared_buffer_alpha", "shared_buffer_ports")


def buffer_policy(ctx: Ctx, topo: dict[str, Any], switch_ports: int, norm: dict[str, Any],
                  path: str = "topology") -> BufferPolicy:
    """shared_buffer_policy: complete sharing (default), dynamic threshold with
    shared_buffer_alpha (default 1), or a static partition among shared_buffer_ports (default:
    the switch's ports in this topology)."""
    kind = ctx.choice(topo, path, "shared_buffer_policy", "complete", POLICIES)
    for key, needs in (("shared_buffer_alpha", "dynamic"), ("shared_buffer_ports", "static")):
        if key in topo and kind != needs:
            raise ctx.err(join(path, key), f"applies to shared_buffer_policy = '{needs}' only")
    if "shared_buffer_policy" in topo:
        norm["shared_buffer_policy"] = kind
    if kind == "dynamic":
        alpha = topo.get("shared_buffer_alpha", 1)
        lo, hi = limits.SHARED_BUFFER_ALPHA
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not lo <= alpha <= hi:
            raise ctx.err(join(path, "shared_buffer_alpha"), f"must be a number from 1/1024 to {hi:g}, got {alpha!r} "
                          "(switch ASICs offer powers of two from 1/128 to 8)")
        norm["shared_buffer_alpha"] = alpha
        return BufferPolicy("dynamic", alpha=float(alpha))
    if kind == "static":
        lim = limits.SHARED_BUFFER_PORTS
        ports = ctx.integer(topo, path, "shared_buffer_ports", switch_ports, lim.lo, lim.hi)
        norm["shared_buffer_ports"] = ports
        return BufferPolicy("static", ports=ports)
    return BufferPolicy()

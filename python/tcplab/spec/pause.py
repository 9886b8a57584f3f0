"""A switch's 802.3x flow control: `pause`, `pause_xoff`, `pause_xon` of a [topology] with a
shared-buffer switch, validated into the node's thresholds (simulator: net/pause.rs)."""

from __future__ import annotations

from typing import Any

from . import limits, units
from .ctx import Ctx, join

KEYS = ("pause", "pause_xoff", "pause_xon")


def pause(ctx: Ctx, topo: dict[str, Any], norm: dict[str, Any], path: str = "topology") -> tuple[int, int] | None:
    """(xoff, xon) bytes per ingress port when `pause = true` in the switch's table at `path`
    ([topology] of a seed kind, a switch of [[topology.nodes]]), else None. Both are required:
    an unmanaged switch does not publish its chip's levels, so a spec states them or leaves
    them unknown for `tcplab calibrate` (docs/models.md, "Ethernet flow control")."""
    on = topo.get("pause", False)
    if not isinstance(on, bool):
        raise ctx.err(join(path, "pause"), f"must be true or false, got {on!r}")
    if not on:
        for key in ("pause_xoff", "pause_xon"):
            if key in topo:
                raise ctx.err(join(path, key), "applies with pause = true only")
        return None
    levels = []
    for key in ("pause_xoff", "pause_xon"):
        if key not in topo:
            raise ctx.err(join(path, key), "is required with pause = true: the bytes an ingress port's packets "
                          "hold in the switch's buffer at which its partner is paused (xoff) and resumed (xon), "
                          "e.g. '12KB'; unknown: give a range for tcplab calibrate")
        kind, n = ctx.unit(topo, path, key, units.parse_buffer)
        if kind != "bytes":
            raise ctx.err(join(path, key), "is a size in bytes, e.g. '12KB'")
        ctx.within(n, limits.BUFFER_BYTES, join(path, key), topo[key])
        norm[key] = topo[key]
        levels.append(n)
    xoff, xon = levels
    if xon >= xoff:
        raise ctx.err(join(path, "pause_xon"), f"must be below pause_xoff ({topo['pause_xoff']!r}), got {topo['pause_xon']!r}")
    norm["pause"] = True
    return xoff, xon

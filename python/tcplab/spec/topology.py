"""The spec's [topology]: its kind read into the model's nodes and links (a graph as written,
spec/graph.py, or one a generator builds, spec/generators.py)."""

from __future__ import annotations

from typing import Any

from . import generators
from .ctx import Ctx
from .graph import Topology, graph
from .links import LINK_KEYS

__all__ = ["KINDS", "LINK_KEYS", "Topology", "topology"]

KINDS = ("dumbbell", "pipe", "switch", "tri-point", "parking-lot", "leaf-spine", "fat-tree", "graph")


def topology(ctx: Ctx, spec: dict[str, Any]) -> Topology:
    """Validate [topology] and build its nodes and links."""
    topo = ctx.table(spec.get("topology", {}), "topology")
    kind = ctx.choice(topo, "topology", "kind", "dumbbell", KINDS)
    if kind == "graph":
        return graph(ctx, topo)
    if kind == "parking-lot":
        return generators.parking_lot(ctx, topo)
    if kind == "leaf-spine":
        return generators.leaf_spine(ctx, topo)
    if kind == "fat-tree":
        return generators.fat_tree(ctx, topo)
    return generators.seed_kind(ctx, topo, kind)

"""Topology kinds that generate a graph: the seeds' dumbbell, pipe, switch and tri-point (their nodes
and links in the order they always had, so records stay byte-identical), a parking lot, a
leaf-spine fabric and a k-ary fat-tree. Host names are documented in docs/spec.md ("Topology")."""

from __future__ import annotations

from typing import Any

from ..model import BufferPolicy, Direction
from . import limits
from . import pause as pause_spec
from .ctx import Ctx
from .graph import Builder, Topology
from .links import ACCESS_JITTER, POLICY_KEYS, buffer_policy, link, shared_buffer

#: An access link's defaults: a host's NIC (10 Gbit/s, 10 us, a microsecond of timing noise).
ACCESS = {"rate": "10Gbit", "delay": "10us", "jitter": ACCESS_JITTER}
#: A data-centre fabric's defaults (leaf-spine, fat-tree): shallow per-port buffers.
FABRIC_BUFFER = "100p"
FAT_TREE_K = limits.Limit(2, 16, "2 .. 16 (even)")
FABRIC_SIZE = limits.Limit(1, 64, "1 .. 64")
HOPS = limits.Limit(1, 64, "1 .. 64")


def _shape(ctx: Ctx, topo: dict[str, Any], kind: str) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """Senders, receivers and middle nodes (name, kind) of a seed topology kind."""
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


def _access(ctx: Ctx, topo: dict[str, Any], norm: dict[str, Any], b: Builder) -> tuple[Direction, Direction]:
    """[topology.access]: every host's link (no queue discipline: those go where queues build)."""
    access_t = ctx.table(topo.get("access", {}), "topology.access")
    for key in ("aqm", "reverse_aqm"):
        if key in access_t:
            raise ctx.err(f"topology.access.{key}", "queue disciplines go on the bottleneck (topology.bottleneck.aqm)")
    ab, ba, norm["access"] = link(ctx, access_t, "topology.access", ACCESS, False)
    b.tables["topology.access"] = (ab, ba)
    return ab, ba


def seed_kind(ctx: Ctx, topo: dict[str, Any], kind: str) -> Topology:
    """dumbbell (s_i - rt1 - rt2 - r_i), pipe (s1 - rt1 - r1), switch and tri-point (s_i - sw - r1)."""
    senders, receivers, middle = _shape(ctx, topo, kind)
    shared = kind in ("switch", "tri-point")
    norm: dict[str, Any] = {"kind": kind}
    if kind == "dumbbell":
        norm["pairs"] = len(senders)
    shared_bytes, policy, levels = None, BufferPolicy(), None
    if shared:
        shared_bytes = shared_buffer(ctx, topo)
        norm["shared_buffer"] = topo["shared_buffer"]
        policy = buffer_policy(ctx, topo, len(senders) + len(receivers), norm)
        levels = pause_spec.pause(ctx, topo, norm)
        if kind == "switch":
            norm["senders"] = len(senders)
    b = Builder()
    for s in senders + receivers:
        b.node(s, "host")
    for m, k in middle:
        b.node(m, k, shared_bytes, policy, levels) if k == "switch" else b.node(m, k)
    access_ab, access_ba = _access(ctx, topo, norm, b)
    bott_t = ctx.table(topo.get("bottleneck", {}), "topology.bottleneck")
    b_ab, b_ba, norm["bottleneck"] = link(ctx, bott_t, "topology.bottleneck", {"delay": "10us"}, shared)
    b.tables["topology.bottleneck"] = (b_ab, b_ba)
    first_hop = "sw" if shared else "rt1"
    for s in senders:
        b.add(s, first_hop, access_ab, access_ba)
    if kind == "dumbbell":
        bottleneck = b.add("rt1", "rt2", b_ab, b_ba)
        for r in receivers:
            b.add("rt2", r, access_ab, access_ba)
    else:
        bottleneck = b.add(first_hop, "r1", b_ab, b_ba)
    # The seeds' order of tables (warnings are listed in it): access, then bottleneck.
    return b.topology(2 * bottleneck, norm)


def parking_lot(ctx: Ctx, topo: dict[str, Any]) -> Topology:
    """A chain of `hops` router-to-router links (rt1 - rt2 - ... - rt{hops+1}), each from
    [topology.bottleneck]; `long` pairs s_i -> r_i cross every hop (s_i at rt1, r_i at the last
    router) and `cross` pairs per hop h cross that hop only (h{h}s{j} at rt{h}, h{h}r{j} at
    rt{h+1}). Hosts' links are [topology.access]. The bottleneck is the first hop, rt1 -> rt2."""
    ctx.keys(topo, "topology", ("kind", "hops", "long", "cross", "access", "bottleneck", "bottleneck_port"))
    hops = ctx.integer(topo, "topology", "hops", 3, HOPS.lo, HOPS.hi)
    n_long = ctx.integer(topo, "topology", "long", 1, 0, limits.FLOWS.hi)
    n_cross = ctx.integer(topo, "topology", "cross", 1, 0, limits.FLOWS.hi)
    if n_long + hops * n_cross > limits.FLOWS.hi:
        raise ctx.err("topology.cross", f"makes {n_long + hops * n_cross} host pairs; at most {limits.FLOWS.hi}")
    norm: dict[str, Any] = {"kind": "parking-lot", "hops": hops, "long": n_long, "cross": n_cross}
    b = Builder()
    cross = [(h, j) for h in range(1, hops + 1) for j in range(1, n_cross + 1)]
    for name in [f"s{i}" for i in range(1, n_long + 1)] + [f"r{i}" for i in range(1, n_long + 1)] + \
            [f"h{h}{e}{j}" for h, j in cross for e in "sr"]:
        b.node(name, "host")
    for r in range(1, hops + 2):
        b.node(f"rt{r}", "router")
    access_ab, access_ba = _access(ctx, topo, norm, b)
    bott_t = ctx.table(topo.get("bottleneck", {}), "topology.bottleneck")
    h_ab, h_ba, norm["bottleneck"] = link(ctx, bott_t, "topology.bottleneck", {"delay": "10us"}, False)
    b.tables["topology.bottleneck"] = (h_ab, h_ba)
    for i in range(1, n_long + 1):
        b.add(f"s{i}", "rt1", access_ab, access_ba)
    first = b.add("rt1", "rt2", h_ab, h_ba)
    for r in range(2, hops + 1):
        b.add(f"rt{r}", f"rt{r + 1}", h_ab, h_ba)
    for i in range(1, n_long + 1):
        b.add(f"rt{hops + 1}", f"r{i}", access_ab, access_ba)
    for h, j in cross:
        b.add(f"h{h}s{j}", f"rt{h}", access_ab, access_ba)
        b.add(f"rt{h + 1}", f"h{h}r{j}", access_ab, access_ba)
    if "bottleneck_port" in topo:
        norm["bottleneck_port"] = topo["bottleneck_port"]
    return b.topology(b.port(ctx, topo, 2 * first), norm)


def _fabric(ctx: Ctx, topo: dict[str, Any], norm: dict[str, Any], b: Builder, uplink_share_bps: int) -> \
        tuple[Direction, Direction, Direction, Direction]:
    """[topology.access] (hosts' links) and [topology.fabric] (switch-to-switch links), both with
    FABRIC_BUFFER per port unless given. The fabric's rate is its `rate`, or, with
    `oversubscription = X`, `uplink_share_bps` / X (what a leaf's hosts can send over one uplink
    divided by the ratio), else the access rate."""
    access_t = ctx.table(topo.get("access", {}), "topology.access")
    fabric_t = dict(ctx.table(topo.get("fabric", {}), "topology.fabric"))
    a_ab, a_ba, norm["access"] = link(ctx, access_t, "topology.access", ACCESS | {"buffer": FABRIC_BUFFER}, False)
    b.tables["topology.access"] = (a_ab, a_ba)
    if "oversubscription" in topo:
        if "rate" in fabric_t:
            raise ctx.err("topology.oversubscription", "give either it or topology.fabric.rate, not both")
        over = topo["oversubscription"]
        if isinstance(over, bool) or not isinstance(over, (int, float)) or not 0.01 <= over <= 1000:
            raise ctx.err("topology.oversubscription", f"must be a number from 0.01 to 1000, got {over!r}")
        norm["oversubscription"] = over
        fabric_t["rate"] = f"{max(1, round(uplink_share_bps * a_ab.rate_bps / over))}bit"
    defaults = {"rate": f"{a_ab.rate_bps}bit", "delay": "10us", "buffer": FABRIC_BUFFER}
    f_ab, f_ba, norm["fabric"] = link(ctx, fabric_t, "topology.fabric", defaults, False)
    b.tables["topology.fabric"] = (f_ab, f_ba)
    return a_ab, a_ba, f_ab, f_ba


def _size(ctx: Ctx, topo: dict[str, Any], key: str, default: int, lim: limits.Limit) -> int:
    return ctx.integer(topo, "topology", key, default, lim.lo, lim.hi)


def leaf_spine(ctx: Ctx, topo: dict[str, Any]) -> Topology:
    """`leaves` leaf routers each with `hosts_per_leaf` hosts (l{i}h{j}), every leaf linked to each
    of `spines` spine routers (leaf{i}, spine{k}). ECMP on by default: a flow between leaves takes
    one spine by its hash. The bottleneck (sampled queue) is leaf1 -> l1h1, where an incast to
    l1h1 queues, unless `bottleneck_port` says otherwise."""
    ctx.keys(topo, "topology", ("kind", "leaves", "spines", "hosts_per_leaf", "oversubscription", "ecmp", "access",
                                "fabric", "bottleneck_port"))
    leaves, spines = _size(ctx, topo, "leaves", 2, FABRIC_SIZE), _size(ctx, topo, "spines", 2, FABRIC_SIZE)
    per_leaf = _size(ctx, topo, "hosts_per_leaf", 2, FABRIC_SIZE)
    ecmp = ctx.boolean(topo, "topology", "ecmp", True)
    norm: dict[str, Any] = {"kind": "leaf-spine", "leaves": leaves, "spines": spines, "hosts_per_leaf": per_leaf,
                            "ecmp": ecmp}
    b = Builder()
    hosts = [(i, f"l{i}h{j}") for i in range(1, leaves + 1) for j in range(1, per_leaf + 1)]
    for _, h in hosts:
        b.node(h, "host")
    for name in [f"leaf{i}" for i in range(1, leaves + 1)] + [f"spine{k}" for k in range(1, spines + 1)]:
        b.node(name, "router")
    a_ab, a_ba, f_ab, f_ba = _fabric(ctx, topo, norm, b, per_leaf / spines)
    for i, h in hosts:
        b.add(h, f"leaf{i}", a_ab, a_ba)
    for i in range(1, leaves + 1):
        for k in range(1, spines + 1):
            b.add(f"leaf{i}", f"spine{k}", f_ab, f_ba)
    if "bottleneck_port" in topo:
        norm["bottleneck_port"] = topo["bottleneck_port"]
    return b.topology(b.port(ctx, topo, 1), norm, ecmp)


def fat_tree(ctx: Ctx, topo: dict[str, Any]) -> Topology:
    """Al-Fares et al.'s k-ary fat-tree (SIGCOMM 2008, §3): k pods of k/2 edge routers (p{p}e{e})
    and k/2 aggregation routers (p{p}a{a}), every edge linked to every aggregation router of its
    pod; (k/2)^2 core routers (c{i}), aggregation router a of each pod linked to cores
    (a-1)k/2+1 .. a k/2; k/2 hosts per edge router (p{p}e{e}h{h}), k^3/4 in all. ECMP on by
    default. The bottleneck is p1e1 -> p1e1h1 unless `bottleneck_port` says otherwise."""
    ctx.keys(topo, "topology", ("kind", "k", "oversubscription", "ecmp", "access", "fabric", "bottleneck_port"))
    k = _size(ctx, topo, "k", 4, FAT_TREE_K)
    if k % 2:
        raise ctx.err("topology.k", f"must be even (k/2 edge and aggregation routers per pod), got {k}")
    half = k // 2
    ecmp = ctx.boolean(topo, "topology", "ecmp", True)
    norm: dict[str, Any] = {"kind": "fat-tree", "k": k, "ecmp": ecmp}
    b = Builder()
    pods = range(1, k + 1)
    edges = [(p, f"p{p}e{e}") for p in pods for e in range(1, half + 1)]
    hosts = [(edge, f"{edge}h{h}") for _, edge in edges for h in range(1, half + 1)]
    for _, h in hosts:
        b.node(h, "host")
    aggs = [(p, a, f"p{p}a{a}") for p in pods for a in range(1, half + 1)]
    for name in [e for _, e in edges] + [g for _, _, g in aggs] + [f"c{i}" for i in range(1, half * half + 1)]:
        b.node(name, "router")
    a_ab, a_ba, f_ab, f_ba = _fabric(ctx, topo, norm, b, 1.0)
    for edge, h in hosts:
        b.add(h, edge, a_ab, a_ba)
    for p, edge in edges:
        for _, _, agg in [g for g in aggs if g[0] == p]:
            b.add(edge, agg, f_ab, f_ba)
    for _, a, agg in aggs:
        for c in range((a - 1) * half + 1, a * half + 1):
            b.add(agg, f"c{c}", f_ab, f_ba)
    if "bottleneck_port" in topo:
        norm["bottleneck_port"] = topo["bottleneck_port"]
    return b.topology(b.port(ctx, topo, 1), norm, ecmp)


"""Each flow's route: the shortest path (model.Routes, as the simulator's), a sender's own `path`
(checked: nodes linked in turn, from its host to its receiver, no node twice) or, with
`topology.ecmp`, one of the equal-cost shortest paths chosen by a hash of the flow's identity and
the seed. Receivers that no link reaches are refused here, naming the key."""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

from ..model import Background, Flow, Link, Node, Probe, Routes, ports_of
from .ctx import Ctx, join
from .host_paths import BRIDGE_SUFFIX, RING_SUFFIX


def flow_hash(seed: int, f: Flow, node: str) -> int:
    """ECMP's hash at `node` of flow `f`: its 5-tuple-like identity (source and destination hosts,
    TCP, the flow's name standing for its ports) with the run's seed and the node (each router
    hashes with its own seed, as switch ASICs do, so choices at successive tiers are independent)."""
    key = f"{seed}|{f.host}|{f.to}|tcp|{f.name}|{node}".encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little")


def ecmp_path(routes: Routes, seed: int, f: Flow) -> tuple[str, ...]:
    """Flow `f`'s path: at each node, among the ports that lead one hop closer to its receiver
    (in port order), the one its hash picks."""
    dist = routes.hops_to(f.to)
    node, path = f.host, [f.host]
    while node != f.to:
        ties = [p for p in routes.out[node] if dist.get(p.to, -1) == dist[node] - 1]
        # Every port of a tie leads to a distinct neighbour unless links run in parallel.
        node = ties[flow_hash(seed, f, node) % len(ties)].to if len(ties) > 1 else ties[0].to
        path.append(node)
    return tuple(path)


def _expanded(routes: Routes, path: list[str]) -> tuple[str, ...]:
    """A path written over the topology's nodes, with the nodes a host's NIC adds between it and
    its link (spec/host_paths.py: a VM's bridge, a receiver's ring) put in."""
    out = [path[0]]
    for u, v in zip(path, path[1:]):
        if any(p.to == v for p in routes.out[u]):
            out.append(v)
            continue
        inner = {u + BRIDGE_SUFFIX, u + RING_SUFFIX, v + BRIDGE_SUFFIX, v + RING_SUFFIX}
        node, seen = u, {u}
        while node != v:  # a chain: each inner node has one way on that is not back
            node = next(p.to for p in routes.out[node] if p.to not in seen and (p.to in inner or p.to == v))
            seen.add(node)
            out.append(node)
    return tuple(out)


def _own_path(ctx: Ctx, t: dict[str, Any], path_key: str, f: Flow, kinds: dict[str, str],
              topo_routes: Routes) -> list[str]:
    """A sender's `path`, checked against the topology as written."""
    raw = t["path"]
    if not isinstance(raw, list) or len(raw) < 2 or not all(isinstance(n, str) for n in raw):
        raise ctx.err(path_key, f"must be a list of node names from {f.host!r} to {f.to!r}, got {raw!r}")
    for i, n in enumerate(raw):
        if n not in kinds:
            raise ctx.err(f"{path_key}[{i}]", f"{n!r} is not a node of this topology")
    if raw[0] != f.host or raw[-1] != f.to:
        raise ctx.err(path_key, f"must start at the sender's host {f.host!r} and end at its receiver {f.to!r}, "
                      f"got {raw[0]!r} .. {raw[-1]!r}")
    for i, n in enumerate(raw):
        if n in raw[:i]:
            raise ctx.err(f"{path_key}[{i}]", f"{n!r} is on the path twice: a loop")
        if 0 < i < len(raw) - 1 and kinds[n] == "host":
            raise ctx.err(f"{path_key}[{i}]", f"{n!r} is a host; hosts do not forward")
    for i, (u, v) in enumerate(zip(raw, raw[1:])):
        if not any(p.to == v for p in topo_routes.out[u]):
            raise ctx.err(f"{path_key}[{i + 1}]", f"{v!r} is not linked to {u!r}")
    return raw


def _reachable(ctx: Ctx, routes: Routes, frm: str, to: str, key: str) -> None:
    if not routes.reaches(frm, to):
        raise ctx.err(key, f"{to!r} cannot be reached from {frm!r}: no links join them")


def assign(ctx: Ctx, spec: dict[str, Any], topo: tuple[tuple[Node, ...], tuple[Link, ...]],
           final: tuple[tuple[Node, ...], tuple[Link, ...]], flows: tuple[Flow, ...], ecmp: bool,
           seed: int, tables: dict[str, str]) -> tuple[Flow, ...]:
    """`flows` with their paths where not the shortest one. `topo` is the topology as written (a
    sender's path is checked against it), `final` the network with the nodes of hosts' NICs;
    `tables` each flow's spec table ("senders.a", or "workload[0]" for a workload's flows, which
    have no path of their own)."""
    topo_routes, routes = Routes(topo[0], ports_of(topo[1])), Routes(final[0], ports_of(final[1]))
    kinds = {n.name: n.kind for n in topo[0]}
    table = spec.get("senders", {})
    out = []
    for f in flows:
        where = tables[f.name]
        sender = where.startswith("senders.")
        t = table[f.name] if sender else {}
        _reachable(ctx, routes, f.host, f.to, f"{where}.to" if sender else f"{where}.receivers")
        path = None
        if "path" in t:
            path = _expanded(routes, _own_path(ctx, t, f"senders.{f.name}.path", f, kinds, topo_routes))
        elif ecmp:
            path = ecmp_path(routes, seed, f)
        if path is not None and path == _nodes_of(routes, f.host, f.to):
            path = None  # the shortest path: no route of its own
        out.append(dataclasses.replace(f, path=path) if path is not None else f)
    return tuple(out)


def check_others(ctx: Ctx, final: tuple[tuple[Node, ...], tuple[Link, ...]], background: tuple[Background, ...],
                 probes: tuple[Probe, ...]) -> None:
    """UDP streams and probes take the shortest path: their ends must be joined."""
    routes = Routes(final[0], ports_of(final[1]))
    for i, u in enumerate(background):
        _reachable(ctx, routes, u.frm, u.to, f"background[{i}].to")
    for i, p in enumerate(probes):
        _reachable(ctx, routes, p.frm, p.to, join(f"probes[{i}]", "to"))


def _nodes_of(routes: Routes, src: str, dst: str) -> tuple[str, ...]:
    return (src,) + tuple(p.to for p in routes.route(src, dst))

"""`kind = "graph"`: [[topology.nodes]] and [[topology.links]] read into the model's nodes and links,
and the Builder every topology kind (spec/generators.py) fills in the same way."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from ..model import BufferPolicy, Direction, Link, Node, port_label
from . import limits
from . import pause as pause_spec
from .ctx import Ctx, join
from .links import ACCESS_JITTER, LINK_KEYS, POLICY_KEYS, buffer_policy, link, shared_buffer

NODE_KINDS = ("host", "router", "switch")
NODE_KEYS = ("name", "kind", "shared_buffer") + POLICY_KEYS + pause_spec.KEYS
GRAPH_LINK_KEYS = ("a", "b") + LINK_KEYS
GRAPH_KEYS = ("kind", "nodes", "links", "ecmp", "bottleneck_port")
#: Node names become parts of namespace and file names: letters, digits, - and _, short.
NODE_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}")
#: Most nodes a graph may have (a fat-tree of k = 16 has 1 344); the simulator's routing keys
#: hold a node index in 20 bits (tcplab-sim net/topology.rs `NODE_MASK`).
MAX_NODES = 20_000
#: A list of allowed names longer than this is left out of an error line.
SHOWN_NAMES = 24


@dataclasses.dataclass(frozen=True)
class Topology:
    """What [topology] resolves to: nodes, links, the bottleneck's port, the normalized table,
    each link table's two directions by spec path (for warnings), and whether flows are spread
    over equal-cost paths (ECMP)."""

    nodes: tuple[Node, ...]
    links: tuple[Link, ...]
    bottleneck_port: int
    normalized: dict[str, Any]
    tables: dict[str, tuple[Direction, Direction]]
    ecmp: bool = False


class Builder:
    """Nodes and links in the order a topology kind adds them. A host's own egress queue is
    unlimited: its stack does not drop its own packets (Linux TSQ and qdisc backpressure stop the
    socket instead); buffer limits apply to routers and switches."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.links: list[Link] = []
        self.tables: dict[str, tuple[Direction, Direction]] = {}
        self._hosts: set[str] = set()  # kept as nodes are added: add() asks it per link

    def node(self, name: str, kind: str, shared_bytes: int | None = None, policy: BufferPolicy = BufferPolicy(),
             pause_bytes: tuple[int, int] | None = None) -> None:
        self.nodes.append(Node(name, kind, shared_bytes, policy, pause_bytes))  # type: ignore[arg-type]
        if kind == "host":
            self._hosts.add(name)

    def add(self, a: str, b: str, ab: Direction, ba: Direction) -> int:
        """Link a <-> b; its index."""
        def host_side(d: Direction, node: str) -> Direction:
            return dataclasses.replace(d, buffer_packets=None, buffer_bytes=None) if node in self._hosts else d

        self.links.append(Link(a, b, host_side(ab, a), host_side(ba, b)))
        return len(self.links) - 1

    def port(self, ctx: Ctx, topo: dict[str, Any], default: int) -> int:
        """The bottleneck's port: `bottleneck_port` ("a->b") if given, else `default`."""
        if "bottleneck_port" not in topo:
            return default
        labels = [port_label(ln.a, ln.b) if k == 0 else port_label(ln.b, ln.a)
                  for ln in self.links for k in (0, 1)]
        want = topo["bottleneck_port"]
        if want not in labels:
            raise ctx.err("topology.bottleneck_port", f"{want!r} is not a link direction of this topology "
                          "(write it as \"FROM->TO\" of two linked nodes)", _few(labels))
        return labels.index(want)

    def topology(self, bottleneck_port: int, norm: dict[str, Any], ecmp: bool = False) -> Topology:
        return Topology(tuple(self.nodes), tuple(self.links), bottleneck_port, norm, self.tables, ecmp)


def _few(names: list[str]) -> list[str] | None:
    """Allowed names for an error line, or None when they are too many to show."""
    return names if len(names) <= SHOWN_NAMES else None


def _array(ctx: Ctx, topo: dict[str, Any], key: str, example: str) -> list[dict[str, Any]]:
    items = topo.get(key)
    if not isinstance(items, list) or not items:
        raise ctx.err(f"topology.{key}", f"is required for kind = 'graph': an array of tables, e.g. {example}")
    return [ctx.table(t, f"topology.{key}[{i}]") for i, t in enumerate(items)]


def _nodes(ctx: Ctx, b: Builder, items: list[dict[str, Any]], ports: dict[str, int]) -> list[dict[str, Any]]:
    """[[topology.nodes]] into `b`; their normalized tables."""
    if len(items) > MAX_NODES:
        raise ctx.err("topology.nodes", f"has {len(items)} nodes; at most {MAX_NODES}")
    norm, seen = [], set()
    for i, t in enumerate(items):
        path = f"topology.nodes[{i}]"
        ctx.keys(t, path, NODE_KEYS)
        name = t.get("name")
        if not isinstance(name, str) or not NODE_NAME_RE.fullmatch(name):
            raise ctx.err(join(path, "name"), f"{name!r} cannot name a node: use 1-32 letters, digits, - and _, "
                          "starting with a letter")
        if name in seen:
            raise ctx.err(join(path, "name"), f"{name!r} names two nodes")
        seen.add(name)
        kind = ctx.choice(t, path, "kind", "router", NODE_KINDS)
        n: dict[str, Any] = {"name": name, "kind": kind}
        if kind != "switch":
            for key in ("shared_buffer",) + POLICY_KEYS + pause_spec.KEYS:
                if key in t:
                    raise ctx.err(join(path, key), "applies to a switch (kind = 'switch') only")
            b.node(name, kind)
        else:
            n["shared_buffer"] = t.get("shared_buffer")
            size = shared_buffer(ctx, t, path)
            policy = buffer_policy(ctx, t, ports.get(name, 1), n, path)
            b.node(name, kind, size, policy, pause_spec.pause(ctx, t, n, path))
        norm.append(n)
    return norm


def _endpoint(ctx: Ctx, t: dict[str, Any], path: str, key: str, kinds: dict[str, str]) -> str:
    name = t.get(key)
    if not isinstance(name, str) or name not in kinds:
        raise ctx.err(join(path, key), f"{name!r} is not a node of [[topology.nodes]]", _few(sorted(kinds)))
    return name


def _switch_side(ctx: Ctx, t: dict[str, Any], path: str, a_switch: bool, b_switch: bool) -> dict[str, Any]:
    """The link table with the buffer of a switch's side refused (its ports share the switch's
    buffer) and a forward buffer not copied into a switch's reverse direction."""
    for is_switch, keys in ((a_switch, ("buffer", "aqm")), (b_switch, ("reverse_buffer", "reverse_aqm"))):
        for key in keys:
            if is_switch and key in t:
                raise ctx.err(join(path, key), "is a switch's egress: its ports share the switch's buffer "
                              "(topology.nodes shared_buffer); queue disciplines are not supported there")
    return t


def _graph_links(ctx: Ctx, b: Builder, items: list[dict[str, Any]], kinds: dict[str, str]) -> list[dict[str, Any]]:
    """[[topology.links]] into `b`; their normalized tables."""
    norm = []
    for i, t in enumerate(items):
        path = f"topology.links[{i}]"
        ctx.keys(t, path, GRAPH_LINK_KEYS)
        a, z = _endpoint(ctx, t, path, "a", kinds), _endpoint(ctx, t, path, "b", kinds)
        if a == z:
            raise ctx.err(join(path, "b"), f"links {a!r} to itself")
        if "rate" not in t:
            raise ctx.err(join(path, "rate"), "is required (e.g. '1Gbit')")
        sw_a, sw_b = kinds[a] == "switch", kinds[z] == "switch"
        t = _switch_side(ctx, {k: v for k, v in t.items() if k not in ("a", "b")}, path, sw_a, sw_b)
        host_end = "host" in (kinds[a], kinds[z])
        ab, ba, n = link(ctx, t, path, {"delay": "10us", "jitter": ACCESS_JITTER if host_end else "0ns"}, False)
        if sw_a:
            ab = dataclasses.replace(ab, buffer_packets=None, buffer_bytes=None)
        if sw_b:
            ba = dataclasses.replace(ba, buffer_packets=None, buffer_bytes=None)
            n.pop("reverse_buffer", None)
        b.add(a, z, ab, ba)
        b.tables[path] = (ab, ba)
        norm.append({"a": a, "b": z} | n)
    return norm


def _port_counts(items: list[dict[str, Any]]) -> dict[str, int]:
    """Each node's number of links (a static partition's default share count)."""
    out: dict[str, int] = {}
    for t in items:
        for key in ("a", "b"):
            if isinstance(t.get(key), str):
                out[t[key]] = out.get(t[key], 0) + 1
    return out


def graph(ctx: Ctx, topo: dict[str, Any]) -> Topology:
    """kind = "graph": nodes and links as written. The bottleneck (the port whose queue is
    sampled) is `bottleneck_port` if given, else the slowest link's a -> b (the first of equals)."""
    ctx.keys(topo, "topology", GRAPH_KEYS)
    b = Builder()
    node_items = _array(ctx, topo, "nodes", '[[topology.nodes]] name = "s1" kind = "host"')
    link_items = _array(ctx, topo, "links", '[[topology.links]] a = "s1" b = "rt1" rate = "1Gbit"')
    node_norm = _nodes(ctx, b, node_items, _port_counts(link_items))
    if len(link_items) > limits.FLOWS.hi:
        raise ctx.err("topology.links", f"has {len(link_items)} links; at most {limits.FLOWS.hi}")
    link_norm = _graph_links(ctx, b, link_items, {n.name: n.kind for n in b.nodes})
    ecmp = ctx.boolean(topo, "topology", "ecmp", False)
    slowest = min(range(len(b.links)), key=lambda i: (b.links[i].ab.rate_bps, i))
    port = b.port(ctx, topo, 2 * slowest)
    norm = {"kind": "graph", "ecmp": ecmp, "nodes": node_norm, "links": link_norm}
    if "bottleneck_port" in topo:
        norm["bottleneck_port"] = topo["bottleneck_port"]
    return b.topology(port, norm, ecmp)

"""What the netns backend builds for a resolved spec, computed without touching the system: one
namespace per node, a veth pair per link (two, with a linkem namespace between, where the link
has delay or loss to emulate), addresses, routes, egress shaping, and the iperf3 processes.

Shaping follows the seeds' routers: htb at the egress of every link direction that has a buffer
(rate R ceil R, quantum one MTU) with a pfifo (packets) or bfifo (bytes) child of that limit, and
txqueuelen set to match. htb counts L2 bytes, so TCP goodput is at most R * MSS / 1514.
"""

from __future__ import annotations

import secrets
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ...spec import Resolved

#: Link delays below this are left to the veths (~10 us) rather than emulated; they are listed.
EMULATE_MIN_DELAY_NS = 1_000_000
#: Client (sender) source ports: flow i uses CPORT_BASE + i, which the tracepoint filter selects.
CPORT_BASE = 40000
#: Server ports: flow i listens on SERVER_PORT_BASE + i, background j on BG_PORT_BASE + j.
SERVER_PORT_BASE = 5201
BG_PORT_BASE = 5301


class PlanError(Exception):
    """The spec asks for something this backend cannot build (the message says what)."""


@dataclass
class Veth:
    """One veth pair: end `a_dev` in namespace `a_ns`, end `b_dev` in `b_ns`."""
    a_ns: str
    a_dev: str
    b_ns: str
    b_dev: str


@dataclass
class Shaper:
    """htb + fifo at a device's egress."""
    ns: str
    dev: str
    rate_bps: int
    limit_packets: int | None
    limit_bytes: int | None
    port_label: str


@dataclass
class Linkem:
    """One tcplab-linkem process bridging dev_a (towards node a) and dev_b (towards node b)."""
    ns: str
    dev_a: str
    dev_b: str
    delay_ab_ns: int
    delay_ba_ns: int
    loss_ab: float
    loss_ba: float
    link_label: str


@dataclass
class Plan:
    run_id: str
    namespaces: list[str]
    node_ns: dict[str, str]
    veths: list[Veth]
    addrs: list[tuple[str, str, str]]            # (ns, dev, "10.x.y.z/24")
    routes: list[tuple[str, str, str]]           # (ns, "dst/32", via)
    routers: list[str]                           # namespaces with forwarding on
    shapers: list[Shaper]
    linkems: list[Linkem]
    host_addr: dict[str, str]                    # node name -> its address (first link)
    egress: dict[str, tuple[str, str]]           # port label -> (ns, dev) it leaves from
    not_emulated: list[str] = field(default_factory=list)
    unshaped: list[str] = field(default_factory=list)


def new_run_id() -> str:
    """A run-unique prefix: 'tl' and 4 hex digits (short: interface names have 15 characters)."""
    return "tl" + secrets.token_hex(2)


def _path(adj: dict[int, list[int]], src: int, dst: int) -> list[int]:
    prev = {src: src}
    q = deque([src])
    while q:
        n = q.popleft()
        for m in adj[n]:
            if m not in prev:
                prev[m] = n
                q.append(m)
    if dst not in prev:
        raise PlanError(f"no path from node {src} to node {dst}")
    out = [dst]
    while out[-1] != src:
        out.append(prev[out[-1]])
    return out[::-1]


def build(resolved: Resolved, run_id: str) -> Plan:
    """The plan for `resolved` under prefix `run_id`."""
    cfg = resolved.sim_config
    if cfg.get("measure_cpu"):
        raise PlanError("measure.cpu times the simulator's TCP code; the kernel's is not instrumented "
                        "(profile it with perf instead, or run on the simulator)")
    for f in cfg["flows"]:
        if f.get("gro_flush_ns"):
            raise PlanError(f"sender {f['name']!r}: its receiver's NIC coalescing (hosts.*.nic gro) is not emulated on "
                            "veths, whose GRO the backend turns off (run it on the simulator)")
    for f in resolved.flows:
        if ":" in f["cc"]:
            raise PlanError(f"sender {f['name']!r}: cc {f['cc']!r} is a Python algorithm, which runs in the simulator only")
    nodes = cfg["nodes"]
    names = [n["name"] for n in nodes]
    for n in nodes:
        if n.get("shared_buffer_bytes"):
            raise PlanError(f"node {n['name']!r} is a switch with one shared buffer; Linux queues are per interface, "
                            "so the netns backend cannot build it (use a dumbbell or pipe topology)")
    for f in resolved.flows:
        if f["stack"] != "linux":
            raise PlanError(f"sender {f['name']!r} uses the {f['stack']!r} stack; the netns backend runs this machine's "
                            "Linux TCP only (use the simulator for FreeBSD stacks)")
    if len(cfg["links"]) > 250:
        raise PlanError("more than 250 links")
    node_ns = {name: f"{run_id}-{name}" for name in names}
    namespaces = list(node_ns.values())
    veths: list[Veth] = []
    addrs: list[tuple[str, str, str]] = []
    shapers: list[Shaper] = []
    linkems: list[Linkem] = []
    egress: dict[str, tuple[str, str]] = {}
    not_emulated: list[str] = []
    unshaped: list[str] = []
    link_addr: dict[tuple[int, int], str] = {}   # (node, link) -> address without prefix
    adj: dict[int, list[int]] = {i: [] for i in range(len(nodes))}
    neighbour_addr: dict[tuple[int, int], str] = {}  # (node, neighbour) -> neighbour's address on their link
    for i, link in enumerate(cfg["links"]):
        a, b = link["a"], link["b"]
        an, bn = names[a], names[b]
        label = f"{an}<->{bn}"
        dev_a, dev_b = f"{run_id}l{i}a", f"{run_id}l{i}b"
        ab, ba = link["ab"], link["ba"]
        emulate = max(ab["delay_ns"], ba["delay_ns"]) >= EMULATE_MIN_DELAY_NS or ab["loss"] > 0 or ba["loss"] > 0
        if emulate:
            em_ns = f"{run_id}-em{i}"
            namespaces.append(em_ns)
            veths.append(Veth(node_ns[an], dev_a, em_ns, f"{run_id}l{i}x"))
            veths.append(Veth(em_ns, f"{run_id}l{i}y", node_ns[bn], dev_b))
            linkems.append(Linkem(em_ns, f"{run_id}l{i}x", f"{run_id}l{i}y", ab["delay_ns"], ba["delay_ns"],
                                  ab["loss"], ba["loss"], label))
        else:
            veths.append(Veth(node_ns[an], dev_a, node_ns[bn], dev_b))
            for d, dl in (("ab", ab), ("ba", ba)):
                if dl["delay_ns"] > 0:
                    not_emulated.append(f"{label} {d}: {dl['delay_ns'] / 1000:g} us delay (veth latency instead)")
        a_ip, b_ip = f"10.{100 + i // 250}.{i % 250}.1", f"10.{100 + i // 250}.{i % 250}.2"
        addrs += [(node_ns[an], dev_a, f"{a_ip}/24"), (node_ns[bn], dev_b, f"{b_ip}/24")]
        link_addr[(a, i)], link_addr[(b, i)] = a_ip, b_ip
        adj[a].append(b)
        adj[b].append(a)
        neighbour_addr[(a, b)], neighbour_addr[(b, a)] = b_ip, a_ip
        for frm, to, ns, dev, dl in ((an, bn, node_ns[an], dev_a, ab), (bn, an, node_ns[bn], dev_b, ba)):
            port = f"{frm}->{to}"
            egress[port] = (ns, dev)
            if dl["buffer_packets"] is None and dl["buffer_bytes"] is None:
                unshaped.append(port)
            else:
                shapers.append(Shaper(ns, dev, dl["rate_bps"], dl["buffer_packets"], dl["buffer_bytes"], port))
    host_addr = {}
    for idx, name in enumerate(names):
        first = min(i for (n, i) in link_addr if n == idx)
        host_addr[name] = link_addr[(idx, first)]
    routes: list[tuple[str, str, str]] = []
    for src in range(len(nodes)):
        for dst in range(len(nodes)):
            if src == dst:
                continue
            path = _path(adj, src, dst)
            nxt = path[1]
            dst_ip = host_addr[names[dst]]
            if nxt == dst and any(link_addr.get((dst, i)) == dst_ip and (src, i) in link_addr for i in range(len(cfg["links"]))):
                continue  # directly connected on that subnet
            routes.append((node_ns[names[src]], f"{dst_ip}/32", neighbour_addr[(src, nxt)]))
    routers = [node_ns[n["name"]] for n in nodes if n["kind"] != "host"]
    return Plan(run_id, namespaces, node_ns, veths, addrs, routes, routers, shapers, linkems, host_addr, egress,
                not_emulated, unshaped)


def path_rtt_ns(resolved: Resolved, src: str, dst: str) -> int:
    """The configured round-trip propagation delay between two nodes (both directions' link delays)."""
    cfg = resolved.sim_config
    names = [n["name"] for n in cfg["nodes"]]
    adj: dict[int, list[int]] = {i: [] for i in range(len(names))}
    delay: dict[tuple[int, int], int] = {}
    for link in cfg["links"]:
        a, b = link["a"], link["b"]
        adj[a].append(b)
        adj[b].append(a)
        delay[(a, b)], delay[(b, a)] = link["ab"]["delay_ns"], link["ba"]["delay_ns"]
    p = _path(adj, names.index(src), names.index(dst))
    return sum(delay[(p[k], p[k + 1])] + delay[(p[k + 1], p[k])] for k in range(len(p) - 1))


def describe(plan: Plan) -> dict[str, Any]:
    """The plan as plain data for the report (what was built, what was not emulated)."""
    return {
        "run_id": plan.run_id,
        "namespaces": plan.namespaces,
        "shapers": [{"port": s.port_label, "rate_bps": s.rate_bps, "limit_packets": s.limit_packets,
                     "limit_bytes": s.limit_bytes} for s in plan.shapers],
        "linkems": [{"link": e.link_label, "delay_ab_us": e.delay_ab_ns / 1000, "delay_ba_us": e.delay_ba_ns / 1000,
                     "loss_ab": e.loss_ab, "loss_ba": e.loss_ba} for e in plan.linkems],
        "not_emulated": plan.not_emulated,
        "unshaped": plan.unshaped,
    }

"""What the netns backend builds for a resolved spec, computed without touching the system: one
namespace per node, a veth pair per link (two, with a linkem namespace between, where the link
has delay or loss to emulate), addresses, routes, egress shaping, and the iperf3 processes.

Shaping follows the seeds' routers: htb at the egress of every link direction that has a buffer
(rate R ceil R, quantum one MTU) with a pfifo (packets) or bfifo (bytes) child of that limit, and
txqueuelen set to match. htb counts L2 bytes, so TCP goodput is at most R * MSS / 1514.

A direction with a queue discipline (`aqm`) gets the kernel's qdisc of that kind as htb's child
where the kernel has it (`tc` with Linux's parameter names, see tc_aqm_args), and otherwise the
same discipline inside tcplab-linkem (crates/tcplab-aqm, the simulator's code), which then also
serialises at the link's rate (no htb on that direction). Step marking has no Linux qdisc and
always runs in linkem.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

from ...model import Experiment, Link, port_label
from ...spec import impair as impair_spec
from ...spec.aqm import tc_red_eval_ewma
from ...spec.host_paths import BRIDGE_SUFFIX, RING_SUFFIX
from ..shared import Shaper

#: The most links a kernel run builds. Each is a veth pair (two, with a delay namespace where it
#: emulates something) with a /24 of its own and up to two qdiscs: a fat-tree of k = 4 (48
#: links) and a leaf-spine of 8 leaves x 4 spines x 8 hosts (96) fit this 2-core machine.
MAX_LINKS = 250
#: Link delays below this are left to the veths (~10 us) rather than emulated; they are listed.
EMULATE_MIN_DELAY_NS = 1_000_000


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
    #: Per direction: the discipline linkem runs (resolved aqm dict) and the rate it drains at.
    aqm_ab: dict[str, Any] | None = None
    aqm_ba: dict[str, Any] | None = None
    rate_ab_bps: int = 0
    rate_ba_bps: int = 0
    #: Per direction: netem's impairments, a schedule, a trace (tcplab-impair's LinkImpair with
    #: its port's seed); linkem then also serialises at the link's rate with its packet limit.
    impair_ab: dict[str, Any] | None = None
    impair_ba: dict[str, Any] | None = None
    limit_ab: int = 0
    limit_ba: int = 0


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
    #: Port label -> where its queue discipline runs ("kernel qdisc <kind>" / "tcplab-linkem <kind>").
    aqm_where: dict[str, str] = field(default_factory=dict)
    #: Port label -> where a capture of it listens, where that is not its egress device.
    capture: dict[str, tuple[str, str]] = field(default_factory=dict)


def new_run_id() -> str:
    """A run-unique prefix: 'tl' and 4 hex digits (short: interface names have 15 characters)."""
    return "tl" + secrets.token_hex(2)


def _refuse(exp: Experiment) -> None:
    """What this backend cannot build, refused before anything is touched."""
    if exp.measure_cpu:
        raise PlanError("measure.cpu times the simulator's TCP code; the kernel's is not instrumented "
                        "(profile it with perf instead, or run on the simulator)")
    for f in exp.flows:
        if f.rx_nic.coalesce == "lro":
            raise PlanError(f"sender {f.name!r}: its receiver {f.to!r} has FreeBSD's LRO (hosts.{f.to}.nic lro); the "
                            "netns backend's hosts are this machine's Linux")
        if f.receiver_os not in (None, "linux"):
            raise PlanError(f"sender {f.name!r}: its receiver {f.to!r} is a {f.receiver_os} host; the netns backend's "
                            "hosts are this machine's Linux")
        if ":" in f.cc:
            raise PlanError(f"sender {f.name!r}: cc {f.cc!r} is a Python algorithm, which runs in the simulator only")
        if f.after is not None:
            raise PlanError(f"flow {f.name!r} is a response that waits for its request (a request-response "
                            "workload); iperf3 cannot start on another flow's data: run it on the simulator")
    for n in exp.nodes:
        if n.shared_buffer_bytes:
            raise PlanError(f"node {n.name!r} is a switch with one shared buffer; Linux queues are per interface, "
                            "so the netns backend cannot build it (use a dumbbell or pipe topology)")
    for f in exp.flows:
        if f.ect1:
            raise PlanError(f"sender {f.name!r} sets module.tcp_dctcp.dctcp_ect = 1, a parameter of L4STeam/linux's "
                            "dctcp that mainline kernels lack; run it on the simulator")
        if f.stack != "linux":
            raise PlanError(f"sender {f.name!r} uses the {f.stack!r} stack; the netns backend runs this machine's "
                            "Linux TCP only (use the simulator for FreeBSD stacks)")
    if len(exp.links) > MAX_LINKS:
        raise PlanError(f"the topology has {len(exp.links)} links; the netns backend builds at most {MAX_LINKS} "
                        "(a veth pair, its addresses and qdiscs, and maybe a delay namespace per link, on this "
                        "machine; run it on the simulator)")
    for f in exp.flows:
        if f.path is not None:
            raise PlanError(f"sender {f.name!r} takes a path of its own ({' -> '.join(f.path)}: its `path` or an "
                            "ECMP choice); the netns backend routes by destination only (set topology.ecmp = false "
                            "and drop senders' paths, or run it on the simulator)")
    for n in exp.nodes:
        for suffix, key, what in ((BRIDGE_SUFFIX, "vnic_rate", "a VM behind its host's bridge"),
                                  (RING_SUFFIX, "rx_pps", "a receiver with a processing budget")):
            if n.name.endswith(suffix):
                host = n.name[: -len(suffix)]
                raise PlanError(f"hosts.{host}.nic.{key}: {host} is {what}, which the netns backend does not "
                                "build; run it on the simulator")
    hosts = {n.name for n in exp.nodes if n.kind == "host"}
    for link in exp.links:
        for node, d in ((link.a, link.ab), (link.b, link.ba)):
            if node in hosts and (d.buffer_packets or d.buffer_bytes):
                raise PlanError(f"hosts.{node}.nic.tx_queue: this machine's veths are the netns hosts' NICs and "
                                "their queue is not modelled here; run it on the simulator")


def _in_linkem(d: Any, qdiscs: set[str]) -> dict[str, Any] | None:
    """The discipline of direction `d` if linkem must run it (the kernel lacks the qdisc)."""
    if d.aqm is None:
        return None
    a = dict(d.aqm)
    # Step marking has no Linux qdisc; DualPI2 always runs in linkem too (its tc arguments are not
    # mapped yet, and this machine's kernel has no sch_dualpi2 to check them against).
    return None if a["kind"] in qdiscs and a["kind"] not in ("step", "dualpi2") else a


def _link_devices(plan: Plan, exp: Experiment, i: int, link: Link, qdiscs: set[str]) -> None:
    """Link i's veths (and a linkem namespace between them where it has delay or loss, or a
    queue discipline the kernel lacks), addresses and egress shapers, added to `plan`."""
    run_id, an, bn = plan.run_id, link.a, link.b
    label = f"{an}<->{bn}"
    dev_a, dev_b = f"{run_id}l{i}a", f"{run_id}l{i}b"
    ab, ba = link.ab, link.ba
    em_aqm = {"ab": _in_linkem(ab, qdiscs), "ba": _in_linkem(ba, qdiscs)}
    imp = {d: impair_spec.lowered(dl.impair, exp.seed, 2 * i + k) if dl.impair else None
           for k, (d, dl) in enumerate((("ab", ab), ("ba", ba)))}
    for d, dl in (("ab", ab), ("ba", ba)):
        if imp[d] is not None and dl.buffer_bytes is not None:
            raise PlanError(f"{label} {d}: an impaired direction's queue is tcplab-linkem's, which counts packets; "
                            "give its buffer in packets (e.g. '100p')")
    if max(ab.delay_ns, ba.delay_ns) >= EMULATE_MIN_DELAY_NS or ab.loss > 0 or ba.loss > 0 or any(em_aqm.values()) \
            or any(imp.values()):
        em_ns = f"{run_id}-em{i}"
        plan.namespaces.append(em_ns)
        plan.veths.append(Veth(plan.node_ns[an], dev_a, em_ns, f"{run_id}l{i}x"))
        plan.veths.append(Veth(em_ns, f"{run_id}l{i}y", plan.node_ns[bn], dev_b))
        plan.linkems.append(Linkem(em_ns, f"{run_id}l{i}x", f"{run_id}l{i}y", ab.delay_ns, ba.delay_ns, ab.loss, ba.loss,
                                   label, em_aqm["ab"], em_aqm["ba"], ab.rate_bps if em_aqm["ab"] or imp["ab"] else 0,
                                   ba.rate_bps if em_aqm["ba"] or imp["ba"] else 0, imp["ab"], imp["ba"],
                                   ab.buffer_packets or 0, ba.buffer_packets or 0))
    else:
        plan.veths.append(Veth(plan.node_ns[an], dev_a, plan.node_ns[bn], dev_b))
        for d, dl in (("ab", ab), ("ba", ba)):
            if dl.delay_ns > 0:
                plan.not_emulated.append(f"{label} {d}: {dl.delay_ns / 1000:g} us delay (veth latency instead)")
    a_ip, b_ip = link_addresses(i)
    plan.addrs += [(plan.node_ns[an], dev_a, f"{a_ip}/24"), (plan.node_ns[bn], dev_b, f"{b_ip}/24")]
    for frm, to, dev, dl, d in ((an, bn, dev_a, ab, "ab"), (bn, an, dev_b, ba, "ba")):
        port = port_label(frm, to)
        plan.egress[port] = (plan.node_ns[frm], dev)
        if em_aqm[d] is not None or imp[d] is not None:
            # The port's wire is linkem's: count what leaves it (its device towards `to`).
            plan.egress[port] = (f"{run_id}-em{i}", f"{run_id}l{i}{'y' if d == 'ab' else 'x'}")
            # linkem sends with PACKET_QDISC_BYPASS, which packet taps there do not see: a
            # capture of this port listens where its frames arrive, at `to`.
            plan.capture[port] = (plan.node_ns[to], dev_b if d == "ab" else dev_a)
            if em_aqm[d] is not None:
                plan.aqm_where[port] = f"tcplab-linkem {em_aqm[d]['kind']}"
        elif dl.aqm is not None:
            plan.aqm_where[port] = f"kernel qdisc {dict(dl.aqm)['kind']}"
            plan.shapers.append(Shaper(plan.node_ns[frm], dev, dl.rate_bps, dl.buffer_packets, dl.buffer_bytes, port,
                                       dict(dl.aqm)))
        elif dl.buffer_packets is None and dl.buffer_bytes is None:
            plan.unshaped.append(port)
        else:
            plan.shapers.append(Shaper(plan.node_ns[frm], dev, dl.rate_bps, dl.buffer_packets, dl.buffer_bytes, port))


def link_addresses(i: int) -> tuple[str, str]:
    """The addresses of link i's a and b ends (a /24 per link)."""
    return f"10.{100 + i // 250}.{i % 250}.1", f"10.{100 + i // 250}.{i % 250}.2"


def _address_on(exp: Experiment, node: str, link: int) -> str:
    a_ip, b_ip = link_addresses(link)
    return a_ip if exp.links[link].a == node else b_ip


def build(exp: Experiment, run_id: str, qdiscs: set[str] | frozenset[str] = frozenset()) -> Plan:
    """The plan for `exp` under prefix `run_id`, on a kernel with these qdisc kinds (kernel.py;
    none: every queue discipline runs in tcplab-linkem)."""
    _refuse(exp)
    names = [n.name for n in exp.nodes]
    node_ns = {name: f"{run_id}-{name}" for name in names}
    plan = Plan(run_id=run_id, namespaces=list(node_ns.values()), node_ns=node_ns, veths=[], addrs=[], routes=[],
                routers=[], shapers=[], linkems=[], host_addr={}, egress={})
    for i, link in enumerate(exp.links):
        _link_devices(plan, exp, i, link, set(qdiscs))
    # A node's address is the one on its first link.
    first_link = {name: min(i for i, ln in enumerate(exp.links) if name in (ln.a, ln.b)) for name in names}
    plan.host_addr.update({name: _address_on(exp, name, first_link[name]) for name in names})
    for src in names:
        for dst in names:
            if src == dst:
                continue
            hop = exp.route(src, dst)[0]  # routing is the model's, computed once
            if hop.to == dst and first_link[dst] == hop.link:
                continue  # directly connected on that subnet
            plan.routes.append((node_ns[src], f"{plan.host_addr[dst]}/32", _address_on(exp, hop.to, hop.link)))
    plan.routers.extend(node_ns[n.name] for n in exp.nodes if n.kind != "host")
    plan.not_emulated.extend(_hosts_not_emulated(exp))
    return plan


def _hosts_not_emulated(exp: Experiment) -> list[str]:
    """The spec's host hardware the veths cannot reproduce: their offloads are off (host.py, so
    every segment is its own packet), they have no interrupts to moderate, and tcplab-linkem's
    delay line holds every packet (no netem limit). Runs go ahead; the report lists these."""
    out = []
    for f in exp.flows:
        if f.rx_nic.active:
            n = f.rx_nic
            out.append(f"{f.to}'s NIC for {f.name}: {n.coalesce if n.coalesce != 'none' else 'no coalescing'}, "
                       f"rx-usecs {n.rx_usecs_ns // 1000}, rx-frames {n.rx_frames} (veths: no GRO, no interrupts)")
        if f.tso_max_bytes is not None:
            out.append(f"{f.host}'s TSO bursts of {f.tso_max_bytes} B (veths: TSO and GSO off)")
    for link in exp.links:
        for d, frm in ((link.ab, link.a), (link.ba, link.b)):
            if d.held_limit_packets:
                out.append(f"{frm}'s netem limit of {d.held_limit_packets} packets (tcplab-linkem holds every packet)")
    return list(dict.fromkeys(out))


def describe(plan: Plan) -> dict[str, Any]:
    """The plan as plain data for the report (what was built, what was not emulated)."""
    return {
        "run_id": plan.run_id,
        "namespaces": plan.namespaces,
        "shapers": [{"port": s.port_label, "rate_bps": s.rate_bps, "limit_packets": s.limit_packets,
                     "limit_bytes": s.limit_bytes} | ({"qdisc": tc_aqm_args(s.aqm, s.rate_bps)} if s.aqm else {})
                    for s in plan.shapers],
        "linkems": [{"link": e.link_label, "delay_ab_us": e.delay_ab_ns / 1000, "delay_ba_us": e.delay_ba_ns / 1000,
                     "loss_ab": e.loss_ab, "loss_ba": e.loss_ba}
                    | {f"{k}_{d}": v for d in ("ab", "ba") for k, v in (("rate_bps", getattr(e, f"rate_{d}_bps")),
                                                                         ("aqm", getattr(e, f"aqm_{d}")),
                                                                         ("impair", _impair_shown(getattr(e, f"impair_{d}")))) if v}
                    for e in plan.linkems],
        "queue_disciplines": plan.aqm_where,
        "not_emulated": plan.not_emulated,
        "unshaped": plan.unshaped,
    }


def _impair_shown(imp: dict[str, Any] | None) -> dict[str, Any] | None:
    """A direction's impairments for the report: a trace as its length, not its lines."""
    if imp is None:
        return None
    out = {k: v for k, v in imp.items() if k != "trace_ms"}
    if imp.get("trace_ms"):
        out["trace_opportunities"] = len(imp["trace_ms"])
    return out


def _us(ns: int) -> str:
    return f"{ns // 1000}us"


def red_burst(min_bytes: int, avpkt: int, wlog: int) -> int:
    """The smallest burst for which tc (tc_red_eval_ewma(), the same function) derives `wlog`:
    the spec keeps Wlog, tc takes burst and derives it again."""
    for burst in range(1, 100_001):
        if tc_red_eval_ewma(min_bytes, burst, avpkt) == wlog:
            return burst
    raise PlanError(f"red: no burst makes tc derive Wlog {wlog} (min {min_bytes} bytes, avpkt {avpkt})")


def tc_aqm_args(aqm: dict[str, Any], rate_bps: int) -> list[str]:
    """`tc qdisc add ... <these>`: the kernel's qdisc for a resolved discipline, with Linux's
    parameter names (tc-codel(8), tc-fq_codel(8), tc-pie(8), tc-red(8); iproute2 tc/q_*.c)."""
    k = aqm["kind"]
    ecn = ["ecn"] if aqm.get("ecn") else (["noecn"] if k in ("codel", "fq_codel", "pie") else [])
    if k in ("codel", "fq_codel"):
        args = [k, "limit", str(aqm["limit_packets"]), "target", _us(aqm["target_ns"]),
                "interval", _us(aqm["interval_ns"])]
        if k == "fq_codel":
            args += ["flows", str(aqm["flows"]), "quantum", str(aqm["quantum_bytes"]), "drop_batch",
                     str(aqm["drop_batch"])]
        if aqm.get("ce_threshold_ns"):
            args += ["ce_threshold", _us(aqm["ce_threshold_ns"])]
        return args + ecn
    if k == "pie":
        return ["pie", "limit", str(aqm["limit_packets"]), "target", _us(aqm["target_ns"]), "tupdate",
                _us(aqm["tupdate_ns"]), "alpha", str(aqm["alpha"]), "beta", str(aqm["beta"]),
                "bytemode" if aqm["bytemode"] else "nobytemode", *ecn]
    if k == "red":
        burst = red_burst(aqm["min_bytes"], aqm["avpkt_bytes"], aqm["wlog"])
        args = ["red", "limit", str(aqm["limit_bytes"]), "min", str(aqm["min_bytes"]), "max", str(aqm["max_bytes"]),
                "avpkt", str(aqm["avpkt_bytes"]), "burst", str(burst), "probability", repr(aqm["probability"]),
                "bandwidth", f"{rate_bps}bit"]
        return args + ecn + (["harddrop"] if aqm["harddrop"] else []) + (["adaptive"] if aqm["adaptive"] else [])
    raise PlanError(f"no Linux qdisc for aqm kind {k!r}")

"""The resolved experiment: what every backend runs, typed and frozen.

spec/schema.py validates a spec once and builds an `Experiment`; each backend lowers it to its own
input (backends/sim.py to the simulator's config, backends/netns/plan.py to namespaces, qdiscs and
iperf3 commands). Nothing here is a backend's format. Routing is computed here, once.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any, Literal, Mapping


def port_label(frm: str, to: str) -> str:
    """A port's name in records and reports: the link direction it serves, "rt1->rt2"."""
    return f"{frm}->{to}"


def model_cc(cc: str) -> str:
    """The algorithm the models run for a name as the user wrote it: `reno` is NewReno on both
    kernels' stacks (Linux calls its NewReno `reno`; tcp_cong.c tcp_reno), shown as written."""
    return "newreno" if cc == "reno" else cc


@dataclass(frozen=True)
class Direction:
    """One direction of a link: the egress queue and wire from one end towards the other."""

    rate_bps: int
    delay_ns: int
    buffer_packets: int | None  # None (and buffer_bytes None): unlimited, a host's own queue
    buffer_bytes: int | None
    loss: float
    jitter_ns: int
    #: Queue discipline instead of drop-tail, as (key, value) pairs of the simulator's
    #: tcplab_aqm::AqmConfig (spec/aqm.py); None = drop-tail.
    aqm: tuple[tuple[str, Any], ...] | None = None
    held_limit_packets: int | None = None  # netem's limit: packets held, its delay included
    #: netem's impairments, a schedule, a trace: tcplab-impair's LinkImpair as JSON without its
    #: seed (spec/impair.py); None = a plain link.
    impair: str | None = None


@dataclass(frozen=True)
class BufferPolicy:
    """How a shared-buffer switch's ports take from its buffer: "complete" sharing, "dynamic"
    threshold (alpha) or "static" partition (among `ports`)."""

    kind: Literal["complete", "dynamic", "static"] = "complete"
    alpha: float | None = None
    ports: int | None = None

    def as_dict(self) -> dict[str, Any]:
        extra = {"alpha": self.alpha} if self.kind == "dynamic" else {"ports": self.ports} if self.kind == "static" else {}
        return {"kind": self.kind} | extra


@dataclass(frozen=True)
class Node:
    """A host, router or switch (a switch's ports may share one buffer)."""

    name: str
    kind: Literal["host", "router", "switch"]
    shared_buffer_bytes: int | None = None
    buffer_policy: BufferPolicy = BufferPolicy()
    #: 802.3x flow control: (xoff, xon) bytes per ingress port, or None (the switch drops).
    pause_bytes: tuple[int, int] | None = None


@dataclass(frozen=True)
class Link:
    """A full-duplex link between nodes `a` and `b`; `ab` carries a -> b."""

    a: str
    b: str
    ab: Direction
    ba: Direction


@dataclass(frozen=True)
class Port:
    """An egress queue: link `link` in direction frm -> to; its index is 2 * link (+1 for b -> a)."""

    index: int
    link: int
    frm: str
    to: str
    rate_bps: int

    @property
    def label(self) -> str:
        return port_label(self.frm, self.to)


@dataclass(frozen=True)
class App:
    """What the application sends: for a time (iperf3 -t) or a number of bytes (iperf3 -n)."""

    kind: Literal["time", "bytes"]
    duration_ns: int | None = None
    bytes: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"kind": "time", "duration_ns": self.duration_ns} if self.kind == "time" else \
            {"kind": "bytes", "bytes": self.bytes}


@dataclass(frozen=True)
class RxNic:
    """A receiving host's NIC: coalescing ("none", "gro", "lro") and interrupt moderation."""

    coalesce: Literal["none", "gro", "lro"] = "none"
    rx_usecs_ns: int = 0
    rx_frames: int = 0

    @property
    def active(self) -> bool:
        return self != RxNic()


@dataclass(frozen=True)
class Flow:
    """One TCP connection (an iperf3 client and its server) and its stack's configuration."""

    name: str
    host: str
    to: str
    stack: str
    cc: str                      # as the user wrote it; `cc_model` is what the models run
    start_ns: int
    app: App
    mss: int
    timestamps: bool
    sack: bool
    iw_segments: int
    sndbuf_bytes: int
    rcvbuf_bytes: int
    rcv_scaling_ratio: int       # share of the receive buffer offered as window, /256
    rx_nic: RxNic                # the receiving host's NIC
    write_bytes: int
    prr: str | None              # linux: PRR version, None = default
    sndbuf_initial_bytes: int | None
    freebsd: Mapping[str, Any] | None  # freebsd stacks: d43470 and the default stack's knobs
    ecn: bool = False            # ECN negotiated (RFC 3168): asked for by the sender, accepted
    ecn_request: bool = False    # the sender asks for ECN in its SYN (the handshake negotiates it)
    ect1: bool = False           # send ECT(1), not ECT(0) (L4STeam/linux dctcp's dctcp_ect = 1)
    tso_max_bytes: int | None = None   # the sending host's NIC; None: the stack's (64 KB)
    tso_frags: tuple[int, int] | None = None  # the sending host's NIC TSO fragment count, size (FreeBSD)
    sender_lro: bool = False           # the sending host's NIC does LRO (FreeBSD RACK: compressed ACKs)
    receiver_os: str | None = None     # the receiving host's OS; None: the sender's stack's ACK rules
    connect: str = "handshake"   # "handshake" (SYN, SYN-ACK, ACK) or "established" at the start time
    iperf3_control: bool = False  # the simulator models iperf3's control exchange (time iperf3 -n)
    window_scaling: bool = True  # offered by the sender (RFC 7323)
    #: The receiving host's settings the handshake negotiates against: sack, timestamps,
    #: window_scaling, ecn (accepts). An option is used only if both ends have it.
    peer: Mapping[str, bool] = field(default_factory=lambda: {"sack": True, "timestamps": True,
                                                             "window_scaling": True, "ecn": True})
    syn_retries: int | None = None          # linux net.ipv4.tcp_syn_retries; None: 6
    syn_linear_timeouts: int | None = None  # linux net.ipv4.tcp_syn_linear_timeouts; None: 4 (6.5+)
    #: The nodes the flow's data crosses, host to `to` (its ACKs cross them backwards), where that
    #: is not the shortest path every other packet takes: a sender's `path`, or its ECMP choice
    #: (spec/routes.py). None: the shortest path.
    path: tuple[str, ...] | None = None
    #: The index of the flow whose data this one waits for (a response after its request, a
    #: request-response workload): it starts `start_ns` after that flow's last byte is at its
    #: receiver. None: at `start_ns`.
    after: int | None = None

    @property
    def cc_model(self) -> str:
        return model_cc(self.cc)


@dataclass(frozen=True)
class Background:
    """A constant-rate UDP stream (iperf3 -u -b)."""

    name: str
    frm: str
    to: str
    rate_bps: int
    size_bytes: int
    start_ns: int
    stop_ns: int


@dataclass(frozen=True)
class Probe:
    """A latency probe: ping from `frm` to `to` every `interval_ns` (ping -i), ICMP echo
    messages of `size_bytes` (header included: ping -s 56 is 64), IP packets of size + 20."""

    name: str
    frm: str
    to: str
    interval_ns: int
    size_bytes: int
    start_ns: int
    stop_ns: int

    @property
    def ip_bytes(self) -> int:
        return self.size_bytes + 20

    @property
    def count(self) -> int:
        """Requests sent: one at start + k * interval for every such time before stop."""
        return max(0, -(-(self.stop_ns - self.start_ns) // self.interval_ns))


@dataclass(frozen=True)
class Workload:
    """A [[workload]] expanded into flows (spec/workload.py): the flows `first_flow` ..
    `first_flow + flow_count - 1` of the experiment, all transfers (App "bytes")."""

    name: str
    kind: Literal["poisson", "incast", "request-response"]
    sizes: str                    # "web-search", "data-mining", a CDF file's name, or "NB" (every flow N bytes)
    first_flow: int
    flow_count: int
    mean_bytes: float             # the size distribution's mean (the fixed size for "fixed")
    offered_load: float | None = None   # poisson: the share of `link`'s rate the arrivals offer
    link: str | None = None             # the port label `offered_load` is a share of
    arrivals_per_s: float | None = None  # poisson: the arrival rate
    #: incast and request-response: each request as (start_ns, first flow, flow count): an
    #: incast's flows start together; a request-response pair is the request, then its response.
    requests: tuple[tuple[int, int, int], ...] = ()


@dataclass(frozen=True)
class Trace:
    """What is recorded: flow state every `sample_ns` (0: every ACK), the iperf3-style table every
    `interval_ns`, every send (`sends`), a capture at the bottleneck on the kernel (`pcap`), every
    ACK the senders receive (`acks`: window and SACK blocks)."""

    sample_ns: int
    interval_ns: int
    sends: bool
    pcap: bool
    latency: bool = False
    acks: bool = False


def ports_of(links: tuple[Link, ...]) -> tuple[Port, ...]:
    """Every egress queue of these links, by index (two per link: a -> b, then b -> a)."""
    out = []
    for i, link in enumerate(links):
        out.append(Port(2 * i, i, link.a, link.b, link.ab.rate_bps))
        out.append(Port(2 * i + 1, i, link.b, link.a, link.ba.rate_bps))
    return tuple(out)


class Routes:
    """Static shortest-path routes (fewest hops) over the ports, as the simulator computes them
    (tcplab-sim net/topology.rs `routes`): breadth-first from each node, ties to the lower port."""

    def __init__(self, nodes: tuple[Node, ...], ports: tuple[Port, ...]):
        self.out: dict[str, list[Port]] = {n.name: [] for n in nodes}
        for p in ports:
            self.out[p.frm].append(p)
        self._first_hops_of: dict[str, dict[str, Port]] = {}

    def first_hops(self, src: str) -> dict[str, Port]:
        """For every node reachable from `src`, the port a packet to it leaves `src` by
        (breadth-first; the first port that reaches a node wins). Computed once per node that
        routes, so a thousand-pair dumbbell costs two searches, not two thousand."""
        if src in self._first_hops_of:
            return self._first_hops_of[src]
        first: dict[str, Port] = {}
        frontier: deque[tuple[str, Port | None]] = deque([(src, None)])
        seen = {src}
        while frontier:
            node, via = frontier.popleft()
            for p in self.out[node]:
                if p.to not in seen:
                    seen.add(p.to)
                    first[p.to] = via or p
                    frontier.append((p.to, via or p))
        self._first_hops_of[src] = first
        return first

    def next_hop(self, node: str, dst: str) -> Port:
        mine = self.out[node]
        if len(mine) == 1:
            return mine[0]  # a host: everything leaves by its one link
        return self.first_hops(node)[dst]

    def route(self, src: str, dst: str) -> tuple[Port, ...]:
        """The ports a packet from `src` to `dst` leaves by, in order."""
        hops, node = [], src
        while node != dst:
            if len(hops) > len(self.out):
                raise KeyError((src, dst))  # no path: a host's link leads away from dst
            p = self.next_hop(node, dst)
            hops.append(p)
            node = p.to
        return tuple(hops)

    def reaches(self, src: str, dst: str) -> bool:
        return src == dst or dst in self.first_hops(src)

    def hops_to(self, dst: str) -> dict[str, int]:
        """Every node's distance in hops to `dst` (links are full-duplex: searched from `dst`)."""
        dist, frontier = {dst: 0}, deque([dst])
        while frontier:
            node = frontier.popleft()
            for p in self.out[node]:
                if p.to not in dist:
                    dist[p.to] = dist[node] + 1
                    frontier.append(p.to)
        return dist

    def port_between(self, u: str, v: str) -> Port:
        """The port from `u` to its neighbour `v` (the first, where links run in parallel)."""
        return next(p for p in self.out[u] if p.to == v)


@dataclass(frozen=True)
class Experiment:
    """A validated, resolved experiment. `spec` is the normalized spec (every default filled in),
    written as the run's spec.toml so that it runs again as it is."""

    source: str
    name: str
    seed: int
    stop_ns: int
    nodes: tuple[Node, ...]
    links: tuple[Link, ...]
    flows: tuple[Flow, ...]
    background: tuple[Background, ...]
    trace: Trace
    measure_cpu: bool
    bottleneck_port: int
    host_sysctls: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: MappingProxyType({}))
    spec: dict[str, Any] = field(default_factory=dict, compare=False)
    warnings: tuple[str, ...] = ()
    probes: tuple[Probe, ...] = ()
    workloads: tuple[Workload, ...] = ()

    @cached_property
    def ports(self) -> tuple[Port, ...]:
        """Every egress queue, by index (two per link)."""
        return ports_of(self.links)

    @property
    def bottleneck(self) -> Port:
        return self.ports[self.bottleneck_port]

    @property
    def bottleneck_aqm_kind(self) -> str:
        """The bottleneck's queue discipline: "drop-tail" or an aqm kind (codel, fq_codel, ...)."""
        return self.aqm_kind(self.bottleneck)

    def aqm_kind(self, port: Port) -> str:
        """A port's queue discipline: "drop-tail" or an aqm kind."""
        d = self._direction(port)
        return dict(d.aqm)["kind"] if d.aqm is not None else "drop-tail"

    @property
    def monitored_ports(self) -> tuple[Port, ...]:
        """The ports whose queue is sampled and whose per-packet queueing delay is measured: the
        bottleneck, then every other port with a queue discipline."""
        return (self.bottleneck,) + tuple(p for p in self.ports if p.index != self.bottleneck_port
                                          and self._direction(p).aqm is not None)

    def node_index(self, name: str) -> int:
        return [n.name for n in self.nodes].index(name)

    @cached_property
    def routes(self) -> Routes:
        return Routes(self.nodes, self.ports)

    def route(self, src: str, dst: str) -> tuple[Port, ...]:
        """The ports a packet from `src` to `dst` leaves by, in order (the shortest path)."""
        return self.routes.route(src, dst)

    def flow_route(self, f: Flow, reverse: bool = False) -> tuple[Port, ...]:
        """The ports flow `f`'s data (its ACKs, with `reverse`) leaves by: its own path if it has
        one, else the shortest path."""
        if f.path is None:
            return self.route(f.to, f.host) if reverse else self.route(f.host, f.to)
        nodes = f.path[::-1] if reverse else f.path
        return tuple(self.routes.port_between(u, v) for u, v in zip(nodes, nodes[1:]))

    def flow_rtt_ns(self, f: Flow) -> int:
        """The configured round-trip propagation delay of flow `f`'s path."""
        return sum(self._direction(p).delay_ns for p in self.flow_route(f) + self.flow_route(f, reverse=True))

    def rtt_ns(self, src: str, dst: str) -> int:
        """The configured round-trip propagation delay between two nodes (links' delays, both ways)."""
        return sum(self._direction(p).delay_ns for p in self.route(src, dst) + self.route(dst, src))

    def _direction(self, p: Port) -> Direction:
        link = self.links[p.link]
        return link.ab if p.index % 2 == 0 else link.ba

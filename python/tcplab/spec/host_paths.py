"""Host effects built as nodes on a host's path: a VM behind its host's bridge (nic.vnic_rate) and
a receiver's processing budget behind its NIC's receive ring (nic.rx_pps, rx_ring). Each splits
the host's link at a new router node and appends the new link, so the topology's link indexes
(and its bottleneck's port) stay; a spec without them resolves exactly as before."""

from __future__ import annotations

import dataclasses

from ..model import Direction, Link, Node
from . import limits
from .hosts import Host

#: The node a VM's virtual NIC delivers into (its host's bridge), and the one before a receiver's
#: CPU (its NIC's receive ring), named after the host.
BRIDGE_SUFFIX = "-bridge"
RING_SUFFIX = "-rxring"
#: The receive budget is counted in full-size packets (1500-byte IP packets: what data is).
PACKET_BITS = 1500 * 8
#: A stage with no limit of its own (the ACKs' way out of a receiver): the fastest rate a spec takes.
_UNLIMITED = Direction(limits.RATE.hi, 0, None, None, 0.0, 0)


def _split(links: list[Link], host: str, node: str, out: Direction, into: Direction) -> None:
    """`host`'s link now ends at `node`; a new link joins host -> node (`out`) and node -> host (`into`)."""
    for i, link in enumerate(links):
        if host in (link.a, link.b):
            links[i] = dataclasses.replace(link, a=node) if link.a == host else dataclasses.replace(link, b=node)
            links.append(Link(host, node, out, into))
            return


def with_host_paths(nodes: tuple[Node, ...], links: tuple[Link, ...],
                    host_cfg: dict[str, Host]) -> tuple[tuple[Node, ...], tuple[Link, ...]]:
    """The topology with each VM behind a bridge node ("s1-bridge": its egress is the host's
    physical NIC, at the link's rate and delay, its queue the VM's tx_queue; bhyve's tap and KVM's
    vhost-net hand frames to a bridge whose NIC queue is the host's; the VM reaches it at its
    virtual NIC's rate, virtio-net having no line rate of its own) and each receiver with a budget
    behind a ring node ("r1-rxring": rx_ring packets wait for a CPU that takes rx_pps full-size
    packets a second; a full ring drops)."""
    out_nodes, out_links = list(nodes), list(links)
    for name, c in host_cfg.items():
        if c.vnic_rate_bps:
            vnic = Direction(c.vnic_rate_bps, 0, None, None, 0.0, 0)
            _split(out_links, name, name + BRIDGE_SUFFIX, vnic, vnic)
            out_nodes.append(Node(name + BRIDGE_SUFFIX, "router"))
        if c.rx_budget:
            pps, ring = c.rx_budget
            cpu = Direction(pps * PACKET_BITS, 0, ring, None, 0.0, 0)
            _split(out_links, name, name + RING_SUFFIX, _UNLIMITED, cpu)
            out_nodes.append(Node(name + RING_SUFFIX, "router"))
    if len(out_nodes) == len(nodes):
        return nodes, links
    return tuple(out_nodes), tuple(out_links)

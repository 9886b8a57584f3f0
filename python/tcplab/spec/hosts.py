"""The spec's [hosts.NAME] tables beside `sysctl`: the host's OS, its NIC (receive coalescing,
interrupt moderation, TSO burst size, egress queue) and netem's packet limit on its egress (docs/spec.md)."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..model import Direction, Link, RxNic
from . import limits, units
from .ctx import Ctx, join

HOST_KEYS = ("sysctl", "nic", "netem", "os")
NIC_KEYS = ("gro", "lro", "rx_usecs", "rx_frames", "tso_max", "driver", "tso_max_segcount", "tso_max_segsize",
            "tx_queue", "vnic_rate", "rx_pps", "rx_ring")
#: FreeBSD drivers' TSO fragment limits (if_hw_tsomaxsegcount, if_hw_tsomaxsegsize), as `driver`
#: sets them (docs/models.md, issue 33). bce(4) sets none in bce_attach(), so if_attach_internal()
#: applies sys/net/if.c's defaults, `ifp->if_hw_tsomaxsegcount = 35; ifp->if_hw_tsomaxsegsize = 2048;`
#: (fel1x-developer/freebsd-src @ 2d614aa2); em(4): if_em.h `EM_MAX_SCATTER 40`, `EM_TSO_SEG_SIZE
#: 4096`, and iflib_device_register()'s `if_sethwtsomaxsegcount(ifp, scctx->isc_tx_tso_segments_max
#: - 3);` (same commit).
DRIVERS = {"bce": (35, 2048), "em": (37, 4096)}
NETEM_KEYS = ("limit",)
OSES = ("linux", "freebsd")


@dataclasses.dataclass(frozen=True)
class Host:
    """One host's settings outside its sysctls; the defaults are today's idealised host."""

    os: str | None = None            # None: not said (a receiver follows its sender's stack's ACK rules)
    rx_nic: RxNic = RxNic()          # as receiver
    tso_max_bytes: int | None = None  # as sender; None: the stack's 64 KB
    netem_limit: int | None = None   # packets netem holds on this host's egress (delay included)
    tso_frags: tuple[int, int] | None = None  # as FreeBSD sender: TSO fragment count and size limits
    tx_queue: tuple[str, int] | None = None  # ("packets" | "bytes", n): the egress queue's limit; None: unlimited
    vnic_rate_bps: int | None = None  # a VM: its virtual NIC's rate into its host's bridge; None: not a VM
    rx_budget: tuple[int, int] | None = None  # (packets/s it processes, rx ring packets); None: unlimited


def _tso_frags(ctx: Ctx, nic: dict[str, Any], path: str) -> tuple[int, int] | None:
    """driver (bce | em) and/or tso_max_segcount, tso_max_segsize: the FreeBSD NIC's TSO
    fragment limits, both or neither (tcp_m_copym() divides by the size)."""
    frags = DRIVERS[ctx.choice(nic, path, "driver", "", DRIVERS)] if "driver" in nic else None
    given = [k for k in ("tso_max_segcount", "tso_max_segsize") if k in nic]
    if len(given) == 1 and frags is None:
        other = "tso_max_segsize" if given[0] == "tso_max_segcount" else "tso_max_segcount"
        raise ctx.err(join(path, other), f"is required with {given[0]} (or give driver = \"bce\" | \"em\")")
    if not given:
        return frags
    lo_count, lo_size = limits.TSO_SEGCOUNT, limits.TSO_SEGSIZE
    count = ctx.integer(nic, path, "tso_max_segcount", frags[0] if frags else 0, lo_count.lo, lo_count.hi)
    size = ctx.unit(nic, path, "tso_max_segsize", units.parse_size_bytes, f"{frags[1]}B" if frags else None, limit=lo_size)
    return count, size


def _nic(ctx: Ctx, t: dict[str, Any], path: str, os: str | None) -> tuple[RxNic, int | None]:
    """[hosts.NAME.nic]: gro | lro, rx_usecs, rx_frames, tso_max."""
    nic = ctx.table(t, path)
    ctx.keys(nic, path, NIC_KEYS)
    gro, lro = ctx.boolean(nic, path, "gro", False), ctx.boolean(nic, path, "lro", False)
    if gro and lro:
        raise ctx.err(join(path, "lro"), "give gro (Linux) or lro (FreeBSD), not both")
    if gro and os == "freebsd":
        raise ctx.err(join(path, "gro"), "GRO is Linux's; a FreeBSD host coalesces with lro = true")
    if lro and os == "linux":
        raise ctx.err(join(path, "lro"), "this models FreeBSD's software LRO (tcp_lro.c); a Linux host has gro = true")
    usecs = ctx.integer(nic, path, "rx_usecs", 0, limits.RX_USECS.lo, limits.RX_USECS.hi)
    frames = ctx.integer(nic, path, "rx_frames", 0, limits.RX_FRAMES.lo, limits.RX_FRAMES.hi)
    if (gro or lro) and usecs == 0 and frames == 0:
        raise ctx.err(join(path, "rx_usecs"), f"is required with {'gro' if gro else 'lro'} = true: how long the NIC "
                      "collects packets before its interrupt (ethtool -c rx-usecs), e.g. 18")
    if frames and not usecs:
        raise ctx.err(join(path, "rx_usecs"), "is required with rx_frames: without a timer the last frames of a "
                      "flow would wait for ever (drivers refuse both at 0 too)")
    tso = None
    if "tso_max" in nic:
        tso = ctx.unit(nic, path, "tso_max", units.parse_size_bytes, limit=limits.TSO_MAX)
    coalesce = "gro" if gro else "lro" if lro else "none"
    return RxNic(coalesce, usecs * 1000, frames), tso  # type: ignore[arg-type]


def _tx_queue(ctx: Ctx, nic: Any, path: str) -> tuple[str, int] | None:
    """nic.tx_queue: what the host's egress holds between its stack and the wire (the driver's TX
    ring plus the interface queue: Linux txqueuelen, DEFAULT_TX_QUEUE_LEN = 1000 packets in
    include/linux/netdevice.h, plus e.g. e1000e's 256 TX descriptors; FreeBSD net.link.ifqmaxlen,
    IFQ_MAXLEN = 50 in sys/net/if.h, plus the driver's ring). Unset: unlimited, today's model (a
    stack's own queue, which TSQ keeps short). Full, it drops what the stack sends, as a network loss."""
    if not isinstance(nic, dict) or "tx_queue" not in nic:
        return None
    kind, n = ctx.unit(nic, path, "tx_queue", units.parse_buffer)
    ctx.within(n, limits.BUFFER_PACKETS if kind == "packets" else limits.BUFFER_BYTES, join(path, "tx_queue"), nic["tx_queue"])
    return kind, n


#: e1000e's default receive ring (E1000_DEFAULT_RXD, drivers/net/ethernet/intel/e1000e/e1000.h);
#: ixgbe's is 512 (IXGBE_DEFAULT_RXD), virtio-net's queue 256.
RX_RING_DEFAULT = 256


def _rx_budget(ctx: Ctx, nic: Any, path: str) -> tuple[int, int] | None:
    """nic.rx_pps (and rx_ring): the packets per second the receiving host's CPU processes (its
    per-packet cost: NAPI polls of net.core.dev_weight 64 packets within netdev_budget 300 per
    softirq, the stack's work per packet) and the packets its NIC's receive ring holds meanwhile;
    what arrives to a full ring is dropped (ethtool -S rx_missed / rx_no_buffer). Unset: unlimited."""
    if not isinstance(nic, dict) or "rx_pps" not in nic:
        if isinstance(nic, dict) and "rx_ring" in nic:
            raise ctx.err(join(path, "rx_ring"), "applies with rx_pps only (the ring fills when the host cannot keep up)")
        return None
    pps = ctx.integer(nic, path, "rx_pps", 0, limits.RX_PPS.lo, limits.RX_PPS.hi)
    ring = ctx.integer(nic, path, "rx_ring", RX_RING_DEFAULT, limits.RX_RING.lo, limits.RX_RING.hi)
    return pps, ring


def hosts(ctx: Ctx, spec: dict[str, Any], names: set[str]) -> dict[str, Host]:
    """Every [hosts.NAME] table's os, nic and netem, by host (hosts not named: the defaults)."""
    out = {}
    for name, t in ctx.table(spec.get("hosts", {}), "hosts").items():
        path = f"hosts.{name}"
        if name not in names:
            raise ctx.err(path, f"{name!r} is not a host of this topology", sorted(names))
        t = ctx.table(t, path)
        ctx.keys(t, path, HOST_KEYS)
        os = ctx.choice(t, path, "os", None, OSES) if "os" in t else None
        rx_nic, tso = _nic(ctx, t["nic"], join(path, "nic"), os) if "nic" in t else (RxNic(), None)
        frags = _tso_frags(ctx, ctx.table(t["nic"], join(path, "nic")), join(path, "nic")) if "nic" in t else None
        limit = None
        if "netem" in t:
            netem = ctx.table(t["netem"], join(path, "netem"))
            ctx.keys(netem, join(path, "netem"), NETEM_KEYS)
            lim = limits.NETEM_LIMIT
            limit = ctx.integer(netem, join(path, "netem"), "limit", 1000, lim.lo, lim.hi)
        nic = t.get("nic", {})
        vnic = ctx.unit(nic, join(path, "nic"), "vnic_rate", units.parse_rate_bps, limit=limits.RATE) \
            if isinstance(nic, dict) and "vnic_rate" in nic else None
        out[name] = Host(os, rx_nic, tso, limit, frags, _tx_queue(ctx, nic, join(path, "nic")), vnic,
                         _rx_budget(ctx, nic, join(path, "nic")))
    return out


def with_netem(links: tuple[Link, ...], host_cfg: dict[str, Host]) -> tuple[Link, ...]:
    """The links with netem's limit on the egress of each host that has one. netem's delay is the
    link's delay from that host (e.g. T2's `reverse_delay = "40ms"` on r1's link)."""
    def limited(link: Link) -> Link:
        a, b = host_cfg.get(link.a), host_cfg.get(link.b)
        ab = dataclasses.replace(link.ab, held_limit_packets=a.netem_limit) if a and a.netem_limit else link.ab
        ba = dataclasses.replace(link.ba, held_limit_packets=b.netem_limit) if b and b.netem_limit else link.ba
        return dataclasses.replace(link, ab=_queued(ab, a), ba=_queued(ba, b))
    return tuple(limited(link) for link in links)


def _queued(d: Direction, host: Host | None) -> Direction:
    """A host's egress direction with its nic.tx_queue limit (unchanged without one)."""
    if host is None or host.tx_queue is None:
        return d
    kind, n = host.tx_queue
    return dataclasses.replace(d, buffer_packets=n if kind == "packets" else None, buffer_bytes=n if kind == "bytes" else None)

"""Seeded scenarios for differential testing against the kernel (issue 32): what the application
writes and how a virtual peer treats the kernel's data (losses, ACK thinning and loss, reordering,
SACK, RTT and receive-window changes). A scenario is data: peer.py applies its rules, record.py
runs it on the kernel and writes the exchange as a packetdrill script."""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass

#: The categories, each stressing one part of the sender (see _CATEGORY).
CATEGORIES = ("writes", "data-loss", "ack-loss", "reorder", "sack", "rtt", "rwnd")
#: The peer's window scale in its SYN (the Linux suites' value): `win` values are bytes >> 7.
PEER_WSCALE = 7
#: The longest script time a recording may take (RTO backoffs after a tail loss end well before).
MAX_DURATION_US = 6_000_000


@dataclass(frozen=True)
class Scenario:
    """One generated case. Times are µs after the connection is accepted; segment indices count
    the kernel's first transmissions in MSS units, in the order they leave; ACK indices count the
    peer's ACKs in the order it makes them."""

    name: str
    category: str
    seed: int
    mss: int
    sack: bool
    writes: tuple[tuple[int, int], ...]
    rtt_us: tuple[tuple[int, int], ...]  # (from, RTT): the RTT of a segment sent at or after `from`
    window_bytes: tuple[tuple[int, int], ...]  # (from, receive window the peer advertises)
    drops: tuple[int, ...] = ()
    ack_every: int = 1
    ack_drops: tuple[int, ...] = ()
    reorder: tuple[int, ...] = ()
    reorder_us: int = 0
    delack_us: int = 40_000  # the peer's delayed-ACK timer when it thins ACKs (Linux's TCP_DELACK_MIN)
    nodelay: bool = True  # TCP_NODELAY on the connection (the model sends a write's tail at once: no Nagle)

    def total_bytes(self) -> int:
        return sum(n for _, n in self.writes)

    def text(self) -> str:
        """The scenario as JSON, byte-identical for the same seed."""
        return json.dumps(asdict(self), indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_text(cls, text: str) -> "Scenario":
        d = json.loads(text)
        for k in ("writes", "rtt_us", "window_bytes"):
            d[k] = tuple(tuple(x) for x in d[k])
        for k in ("drops", "ack_drops", "reorder"):
            d[k] = tuple(d[k])
        return cls(**d)


def generate(count: int, seed: int, categories: tuple[str, ...] = CATEGORIES) -> list[Scenario]:
    """`count` scenarios, categories in turn; scenario i depends only on (seed, i, its category)."""
    bad = [c for c in categories if c not in CATEGORIES]
    if bad:
        raise ValueError(f"unknown category {bad[0]!r}: use {', '.join(CATEGORIES)}")
    return [_one(seed, i, categories[i % len(categories)]) for i in range(count)]


def _one(seed: int, index: int, category: str) -> Scenario:
    rng = random.Random(f"{seed}:{index}:{category}")  # str seeds hash with SHA-512: stable across runs
    mss = rng.choice((1000, 1460))
    segs = rng.randint(8, 40)
    base = {"name": f"s{seed}-{index:05d}-{category}", "category": category, "seed": seed, "mss": mss,
            "sack": rng.random() < 0.8, "writes": ((0, segs * mss + rng.choice((0, 0, rng.randint(1, mss - 1)))),),
            "rtt_us": ((0, rng.randint(5, 60) * 1000),), "window_bytes": ((0, 1 << 20),)}
    base.update(_CATEGORY[category](rng, segs, mss))
    return Scenario(**base)


def _writes(rng: random.Random, segs: int, mss: int) -> dict:
    """Random write sizes at random times: partial segments, PSH placement, app-limited phases;
    half with Nagle's algorithm on (RFC 896, tcp_nagle_test()), which the model does not follow."""
    t, out = 0, []
    for _ in range(rng.randint(2, 8)):
        out.append((t, rng.choice((rng.randint(1, mss), rng.randint(1, 8 * mss), rng.randint(mss, 20 * mss)))))
        t += rng.choice((0, rng.randint(1, 20) * 1000, rng.randint(20, 300) * 1000))
    return {"writes": tuple(out), "nodelay": rng.random() < 0.5}


def _data_loss(rng: random.Random, segs: int, mss: int) -> dict:
    """1-3 first transmissions lost, anywhere (a tail loss included): SACK or dup ACKs, RACK, TLP, RTO."""
    return {"drops": tuple(sorted(rng.sample(range(segs), rng.randint(1, min(3, segs)))))}


def _ack_loss(rng: random.Random, segs: int, mss: int) -> dict:
    """ACK thinning (every 2nd or 3rd segment, delayed-ACK flush) and lost ACKs (stretch ACKs)."""
    every = rng.choice((1, 2, 2, 3))
    n_acks = segs // every + 4
    return {"ack_every": every, "ack_drops": tuple(sorted(rng.sample(range(n_acks), rng.randint(1, max(1, n_acks // 3)))))}


def _reorder(rng: random.Random, segs: int, mss: int) -> dict:
    """Segments held back a few ms: the peer SACKs around them; RACK's reordering window."""
    return {"reorder": tuple(sorted(rng.sample(range(segs), rng.randint(1, min(3, segs))))),
            "reorder_us": rng.randint(1, 25) * 1000, "sack": True}


def _sack(rng: random.Random, segs: int, mss: int) -> dict:
    """Many holes at once: SACK scoreboards, PRR, several blocks per ACK."""
    n = rng.randint(2, min(6, segs - 1))
    return {"drops": tuple(sorted(rng.sample(range(segs), n))), "sack": True}


def _rtt(rng: random.Random, segs: int, mss: int) -> dict:
    """The RTT steps up or down once or twice: RTT estimation, RTO, HyStart's delay signal."""
    t, steps = 0, [(0, rng.randint(5, 60) * 1000)]
    for _ in range(rng.randint(1, 2)):
        t += rng.randint(20, 200) * 1000
        steps.append((t, rng.randint(2, 120) * 1000))
    return {"rtt_us": tuple(steps), "drops": tuple(sorted(rng.sample(range(segs), rng.randint(0, 1))))}


def _rwnd(rng: random.Random, segs: int, mss: int) -> dict:
    """A small receive window that grows or shrinks: rwnd-limited sending, window updates."""
    t, steps = 0, [(0, rng.randint(2, 12) * mss)]
    for _ in range(rng.randint(1, 2)):
        t += rng.randint(10, 150) * 1000
        steps.append((t, rng.randint(2, 30) * mss))
    return {"window_bytes": tuple(steps)}


_CATEGORY = {"writes": _writes, "data-loss": _data_loss, "ack-loss": _ack_loss, "reorder": _reorder,
             "sack": _sack, "rtt": _rtt, "rwnd": _rwnd}

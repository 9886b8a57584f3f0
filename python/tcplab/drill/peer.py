"""The virtual receiver of a differential-test scenario: it applies the scenario's seeded rules to
each data segment the kernel sends (lose it, hold it back, deliver it after half the RTT) and
answers as a receiver does (cumulative ACK, SACK blocks most recent first as RFC 2018 §4 asks,
every segment or every `ack_every` with a delayed-ACK flush, an immediate ACK on out-of-order
data or a filled hole as RFC 5681 §4.2), some ACKs lost, the window the scenario advertises.
Pure logic in script time (µs): record.py feeds it what the kernel sent and injects what it returns."""

from __future__ import annotations

from dataclasses import dataclass, field

from .generate import PEER_WSCALE, Scenario

MAX_SACK_BLOCKS = 4  # 40 option bytes without timestamps: 2 NOPs + 2 + 4 x 8


@dataclass(frozen=True)
class Ack:
    """An ACK to inject at `t_us` (script time): cumulative `ack` (script sequence numbers), SACK
    blocks, and the window field (scaled by the peer's window scale)."""

    t_us: int
    ack: int
    sacks: tuple[tuple[int, int], ...]
    win: int


@dataclass
class Peer:
    """State of the receiving side; `t0_us` is the script time the connection was accepted."""

    sc: Scenario
    t0_us: int = 0
    rcv_nxt: int = 1  # script sequence numbers: the first data byte is 1
    high: int = 1  # end of the highest data seen sent (first transmissions start at or above it)
    segments: int = 0  # first transmissions seen, in MSS units
    acks: int = 0  # ACKs made (the lost ones included)
    pending: int = 0  # in-order segments not yet ACKed (ACK thinning)
    blocks: list[list[int]] = field(default_factory=list)  # out-of-order ranges, most recent first
    delack_due: int | None = None

    def rtt_at(self, t_us: int) -> int:
        return _step(self.sc.rtt_us, t_us - self.t0_us)

    def window_at(self, t_us: int) -> int:
        return _step(self.sc.window_bytes, t_us - self.t0_us) >> PEER_WSCALE

    def sent(self, t_us: int, seq: int, length: int) -> list[tuple[int, int, int]]:
        """The kernel sent [seq, seq+length) at `t_us`: the pieces that reach the peer, as
        (arrival time, start, end); first transmissions are judged per MSS-sized piece."""
        out = []
        rtt = self.rtt_at(t_us)
        end = seq + length
        for s in range(seq, end, self.sc.mss):
            e = min(s + self.sc.mss, end)
            delay = rtt // 2
            if s >= self.high:  # a first transmission: the scenario's rules apply
                idx = self.segments
                self.segments += 1
                self.high = e
                if idx in self.sc.drops:
                    continue
                if idx in self.sc.reorder:
                    delay += self.sc.reorder_us
            out.append((t_us + delay, s, e))
        return out

    def arrive(self, t_us: int, seq: int, end: int) -> list[Ack]:
        """A piece reaches the peer at `t_us`: the ACKs it makes (arriving back at the sender)."""
        back = self.rtt_at(t_us) - self.rtt_at(t_us) // 2
        if end <= self.rcv_nxt:  # a duplicate: ACK at once (RFC 5681 §4.2)
            return self._ack(t_us, back)
        if seq > self.rcv_nxt:  # out of order: ACK at once with SACK blocks
            self._add_block(seq, end)
            return self._ack(t_us, back)
        had_hole = bool(self.blocks)
        self.rcv_nxt = end
        self._advance()
        self.pending += 1
        if had_hole or self.blocks or self.pending >= self.sc.ack_every:
            return self._ack(t_us, back)
        if self.delack_due is None:
            self.delack_due = t_us + self.sc.delack_us
        return []

    def delack(self, t_us: int) -> list[Ack]:
        """The delayed-ACK timer (due at `delack_due`)."""
        if self.delack_due is None or t_us < self.delack_due:
            return []
        return self._ack(t_us, self.rtt_at(t_us) - self.rtt_at(t_us) // 2) if self.pending else []

    def _ack(self, t_us: int, back_us: int) -> list[Ack]:
        self.pending, self.delack_due = 0, None
        idx = self.acks
        self.acks += 1
        if idx in self.sc.ack_drops:
            return []
        sacks = tuple((s, e) for s, e in self.blocks[:MAX_SACK_BLOCKS]) if self.sc.sack else ()
        return [Ack(t_us + back_us, self.rcv_nxt, sacks, self.window_at(t_us))]

    def _add_block(self, seq: int, end: int) -> None:
        """Merge [seq, end) into the out-of-order ranges; the merged range moves to the front."""
        s, e = seq, end
        rest = []
        for b in self.blocks:
            if b[1] < s or b[0] > e:
                rest.append(b)
            else:
                s, e = min(s, b[0]), max(e, b[1])
        self.blocks = [[s, e], *rest]

    def _advance(self) -> None:
        """rcv_nxt moved: ranges it reached are delivered, and the ones above it kept."""
        moved = True
        while moved:
            moved = False
            for b in list(self.blocks):
                if b[0] <= self.rcv_nxt:
                    self.rcv_nxt = max(self.rcv_nxt, b[1])
                    self.blocks.remove(b)
                    moved = True

    def done(self) -> bool:
        return self.rcv_nxt >= 1 + self.sc.total_bytes()


def _step(steps: tuple[tuple[int, int], ...], t_us: int) -> int:
    value = steps[0][1]
    for start, v in steps:
        if t_us >= start:
            value = v
    return value

"""Sender-side traces from the kernel: the `tcp:tcp_probe` tracepoint (fires on every ACK the
sender processes; cwnd and ssthresh in packets, srtt in us — include/trace/events/tcp.h) and
`tcp:tcp_cong_state_set` (congestion-avoidance state changes), read from a tracefs instance of
the run's own, filtered by the senders' source ports, and turned into tcplab's records.

Lines are streamed and reduced while the run goes: every state change is kept, tcp_probe samples
are kept at most one per flow per sampling interval (the last one in it), so memory stays small.
"""

from __future__ import annotations

import bisect
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from ... import _native
from ...contract import LOSS_END, RECOVERY_END, RECOVERY_START, RTO, STATES
from .plan import CPORT_BASE

#: Linux's tcp_ca_state (include/net/tcp.h / uapi tcp.h).
TCP_CA_RECOVERY, TCP_CA_LOSS = 3, 4
#: ssthresh before the first reduction (TCP_INFINITE_SSTHRESH).
INFINITE_SSTHRESH = 0x7FFFFFFF


class TraceParseError(ValueError):
    """A trace line that does not have the fields the format promises; names its line number."""


@dataclass
class ProbeSample:
    t_ns: int
    sport: int
    snd_nxt: int
    snd_una: int
    cwnd_pkts: int
    ssthresh_pkts: int
    srtt_us: int


@dataclass
class StateChange:
    t_ns: int
    sport: int
    state: int


def parse_line(line: str, lineno: int = 0) -> ProbeSample | StateChange | None:
    """One ftrace text line, parsed by tcplab-trace's tcp_probe parser (the importer's); None for
    lines of other events or comments."""
    try:
        r = _native.parse_tcp_probe_line(line, lineno)
    except ValueError as e:
        raise TraceParseError(str(e)) from None
    if r is None:
        return None
    if r[0] == "probe":
        return ProbeSample(*r[1:])
    return StateChange(*r[1:])


@dataclass
class Collector:
    """Reduces a stream of parsed lines: samples bucketed by `sample_ns`, every state change."""
    sample_ns: int
    ports: set[int]
    samples: dict[int, list[ProbeSample]] = field(default_factory=dict)
    changes: list[StateChange] = field(default_factory=list)
    lines: int = 0
    bad_lines: int = 0
    overruns: int | None = None

    def add(self, item: ProbeSample | StateChange | None) -> None:
        if item is None or item.sport not in self.ports:
            return
        if isinstance(item, StateChange):
            self.changes.append(item)
            return
        lst = self.samples.setdefault(item.sport, [])
        if lst and self.sample_ns and lst[-1].t_ns // self.sample_ns == item.t_ns // self.sample_ns:
            lst[-1] = item
        else:
            lst.append(item)


class TraceSession:
    """A tracefs instance with the two tracepoints filtered to `ports`, read by a thread."""

    def __init__(self, root: Path, name: str, ports: list[int], sample_ns: int):
        self.inst = root / "instances" / name
        self.name = name
        self.collector = Collector(sample_ns, set(ports))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: str | None = None
        lo, hi = min(ports), max(ports)
        self._filters = {"tcp/tcp_probe": f"sport >= {lo} && sport <= {hi}",
                         "tcp/tcp_cong_state_set": f"sport >= {lo} && sport <= {hi}"}

    def start(self) -> None:
        self.inst.mkdir()
        (self.inst / "trace_clock").write_text("mono")  # CLOCK_MONOTONIC, as time.monotonic_ns()
        (self.inst / "buffer_size_kb").write_text("16384")
        for ev, flt in self._filters.items():
            (self.inst / "events" / ev / "filter").write_text(flt)
            (self.inst / "events" / ev / "enable").write_text("1")
        (self.inst / "tracing_on").write_text("1")
        self._thread = threading.Thread(target=self._read, name="tcplab-trace", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        fd = os.open(self.inst / "trace_pipe", os.O_RDONLY | os.O_NONBLOCK)
        buf = b""
        lineno = 0
        c = self.collector
        try:
            while True:
                try:
                    chunk = os.read(fd, 1 << 20)
                except BlockingIOError:
                    chunk = b""
                if not chunk:
                    if self._stop.is_set():
                        break
                    self._stop.wait(0.02)
                    continue
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for raw in lines:
                    lineno += 1
                    c.lines += 1
                    try:
                        c.add(parse_line(raw.decode("ascii", "replace"), lineno))
                    except TraceParseError:
                        c.bad_lines += 1
        except OSError as e:
            self.error = str(e)
        finally:
            os.close(fd)

    def close(self) -> None:
        """Stop tracing and the reader (idempotent), so the instance can be removed."""
        try:
            (self.inst / "tracing_on").write_text("0")
        except OSError:
            pass
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=10)

    def stop(self) -> Collector:
        self.close()
        try:
            self.collector.overruns = _overruns(self.inst)
        except OSError:
            pass
        return self.collector


def _overruns(inst: Path) -> int:
    total = 0
    for cpu in (inst / "per_cpu").iterdir():
        for line in (cpu / "stats").read_text().splitlines():
            if line.startswith("overrun:"):
                total += int(line.split()[1])
    return total


def to_records(c: Collector, flows: list[dict], t0_ns: int) -> tuple[list[dict], list[dict]]:
    """(flow samples rows, event rows) in the simulator's table schema. Sequence numbers are made
    relative to the first snd_una seen; cwnd and ssthresh turned from packets into bytes with the
    flow's MSS; an ssthresh never set is -1 as in simulated runs."""
    samples, events = [], []
    for i, f in enumerate(flows):
        port = CPORT_BASE + i
        mss = f["mss"]
        mine = c.samples.get(port, [])
        base = mine[0].snd_una if mine else 0
        for s in mine:
            una, nxt = (s.snd_una - base) % (1 << 32), (s.snd_nxt - base) % (1 << 32)
            ssth = -1 if s.ssthresh_pkts >= INFINITE_SSTHRESH else s.ssthresh_pkts * mss
            samples.append({"t_ns": s.t_ns - t0_ns, "flow": f["name"], "cwnd_bytes": s.cwnd_pkts * mss,
                            "ssthresh_bytes": ssth, "snd_una": una, "snd_nxt": nxt, "flight_bytes": nxt - una,
                            "srtt_us": s.srtt_us, "rto_us": -1, "bytes_sent": nxt, "bytes_acked": una,
                            "retrans_segs": -1, "state": STATES["open"]})
        prev_state = 0
        times = [s.t_ns for s in mine]
        for ch in (x for x in c.changes if x.sport == port):
            kind = None
            if ch.state == TCP_CA_RECOVERY and prev_state != TCP_CA_RECOVERY:
                kind = RECOVERY_START
            elif ch.state == TCP_CA_LOSS and prev_state != TCP_CA_LOSS:
                kind = RTO
            elif prev_state == TCP_CA_RECOVERY and ch.state != TCP_CA_RECOVERY:
                kind = RECOVERY_END
            elif prev_state == TCP_CA_LOSS and ch.state != TCP_CA_LOSS:
                kind = LOSS_END
            prev_state = ch.state
            if kind is None:
                continue
            # The state of the connection at the change: the last probe sample at or before it.
            k = bisect.bisect_right(times, ch.t_ns) - 1
            s = mine[k] if k >= 0 else None
            una = (s.snd_una - base) % (1 << 32) if s else 0
            nxt = (s.snd_nxt - base) % (1 << 32) if s else 0
            events.append({"t_ns": ch.t_ns - t0_ns, "flow": f["name"], "event": kind,
                           "cwnd_bytes": s.cwnd_pkts * mss if s else -1,
                           "ssthresh_bytes": (-1 if not s or s.ssthresh_pkts >= INFINITE_SSTHRESH else s.ssthresh_pkts * mss),
                           "flight_bytes": nxt - una, "outstanding_bytes": nxt - una, "retrans_segs": -1})
    return samples, events

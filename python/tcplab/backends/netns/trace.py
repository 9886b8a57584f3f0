"""Sender-side traces from the kernel: the `tcp:tcp_probe` tracepoint (fires on every ACK the
sender processes; cwnd and ssthresh in packets, srtt in us — include/trace/events/tcp.h) and
`tcp:tcp_cong_state_set` (congestion-avoidance state changes), read from a tracefs instance of
the run's own, filtered by the senders' source ports.

Lines are streamed and reduced while the run goes: every state change is kept, tcp_probe lines
at most one per flow per sampling interval (the last one in it). What is kept is written as the
ftrace text it was, to the run's netns/trace.txt, and becomes records through the same importer
as `tcplab import` (tcplab-trace tcp_probe.rs), so kernel state changes become events in one place.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from ... import _native



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
    """Reduces the stream of trace lines to what the run keeps, written as ftrace text to `out`
    (the run's netns/trace.txt, which tcplab-trace's tcp_probe importer turns into records):
    per flow the last tcp_probe line of every `sample_ns` bucket, and every state change."""
    sample_ns: int
    ports: set[int]
    out: TextIO
    pending: dict[int, tuple[int, str]] = field(default_factory=dict)  # port -> (bucket, line)
    lines: int = 0
    bad_lines: int = 0
    kept: int = 0
    overruns: int | None = None

    def add(self, item: ProbeSample | StateChange | None, raw: str) -> None:
        if item is None or item.sport not in self.ports:
            return
        if isinstance(item, StateChange):
            self._flush(item.sport)  # keeps each flow's lines in time order
            self._write(raw)
            return
        bucket = item.t_ns // self.sample_ns if self.sample_ns else self.lines
        held = self.pending.get(item.sport)
        if held is not None and held[0] != bucket:
            self._flush(item.sport)
        self.pending[item.sport] = (bucket, raw)

    def finish(self) -> None:
        """Write what is still held (the last bucket of each flow)."""
        for port in list(self.pending):
            self._flush(port)
        self.out.flush()

    def _flush(self, port: int) -> None:
        held = self.pending.pop(port, None)
        if held is not None:
            self._write(held[1])

    def _write(self, raw: str) -> None:
        self.out.write(raw.rstrip("\n") + "\n")
        self.kept += 1


class TraceSession:
    """A tracefs instance with the two tracepoints filtered to `ports`, read by a thread."""

    def __init__(self, root: Path, name: str, ports: list[int], sample_ns: int, out: Path):
        self.inst = root / "instances" / name
        self.name = name
        self.path = out
        self._file = out.open("w")
        self.collector = Collector(sample_ns, set(ports), self._file)
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
                    text = raw.decode("ascii", "replace")
                    try:
                        c.add(parse_line(text, lineno), text)
                    except TraceParseError:
                        c.bad_lines += 1
        except OSError as e:
            self.error = str(e)
        finally:
            os.close(fd)

    def _stop_reading(self) -> None:
        try:
            (self.inst / "tracing_on").write_text("0")
        except OSError:
            pass
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=10)

    def close(self) -> None:
        """Stop tracing and the reader, and close trace.txt (idempotent), so the instance can be
        removed. After a failed run: what is kept is incomplete, and the run's folder goes with it."""
        self._stop_reading()
        self._file.close()

    def stop(self) -> Collector:
        """End of a run: stop reading, write what is still held, close trace.txt."""
        self._stop_reading()
        try:
            self.collector.overruns = _overruns(self.inst)
        except OSError:
            pass
        if not self._file.closed:
            self.collector.finish()
            self._file.close()
        return self.collector


def _overruns(inst: Path) -> int:
    total = 0
    for cpu in (inst / "per_cpu").iterdir():
        for line in (cpu / "stats").read_text().splitlines():
            if line.startswith("overrun:"):
                total += int(line.split()[1])
    return total

"""Sender-side traces from this machine's kernel: the `tcp:tcp_probe` and `tcp:tcp_cong_state_set`
tracepoints read from a tracefs instance of the run's own, filtered by the senders' source ports,
and reduced while the run goes (../shared.py Collector) into the run's netns/trace.txt, which
becomes records through the same importer as `tcplab import` (tcplab-trace tcp_probe.rs).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from ..shared import Collector, TraceParseError, parse_line


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

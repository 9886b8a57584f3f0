"""The log readers: a testbed's logs (iperf3, SIFTR, SIFTR2, tcp_probe, pcap) into the record
tables, through tcplab-trace's streamed importer (a log is never held in memory). One path from a
log to records, for `tcplab import` (import_export.py) and the kernel backends' own logs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ._native import Importer, detect_format, import_formats
from .store import TableWriter

#: Lines (packets) parsed between record drains: bounds memory, gives progress.
STEP_LINES = 200_000


class LogError(ValueError):
    """A log that cannot be imported; the message names the file (and line)."""


def located_error(path: Path, e: Exception) -> LogError:
    msg = str(e)
    m = re.match(r"line (\d+): (.*)", msg, re.S)
    return LogError(f"{path}:{m.group(1)}: {m.group(2)}" if m else f"{path}: {msg}")


def detect(path: Path) -> str:
    """The format of the log at `path` (error if it cannot be told)."""
    with open(path, "rb") as f:
        head = f.read(64 * 1024)
    fmt = detect_format(head)
    if fmt is None:
        raise LogError(f"{path}: cannot tell the format; pass --format (one of {', '.join(import_formats())})")
    return fmt


@dataclass(frozen=True)
class Log:
    """One log to read: its path, format, label (for flows without addresses), where its origin
    lies on the run's time axis (ns), and whether that origin is a wall-clock one."""

    path: Path
    format: str
    label: str
    offset_ns: int
    wall_clock: bool = False


def read_logs(logs: list[Log], directory: Path, *, interval_ns: int, mss: int, lenient: bool,
              rename: Callable[[str], str] = lambda name: name,
              progress: Callable[[str, int, int], None] | None = None) -> tuple[Any, list[dict[str, Any]]]:
    """Read `logs` with tcplab-trace's importer into the record tables in `directory`, flows
    matched across logs by addresses and ports and named `rename(name)`. The one path from a log
    to records, for `tcplab import` and the kernel backend's own traces. Returns the importer (its
    flows) and each log's source information."""
    names: list[str] = []
    writer = TableWriter(directory, names, [])
    imp = Importer(interval_ns)
    sources = []
    try:
        for log in logs:
            try:
                imp.open(str(log.path), log.format, log.label, mss, lenient, log.offset_ns)
                size = log.path.stat().st_size
                while imp.step(STEP_LINES):
                    names[:] = [rename(x["name"]) for x in imp.flows()]
                    writer.write(imp.take_tables())
                    if progress:
                        progress(log.path.name, imp.position(), size)
                info = imp.close()
            except (ValueError, OSError) as e:
                raise located_error(log.path, e) from None
            sources.append(info | {"path": str(log.path), "offset_s": log.offset_ns / 1e9,
                                   "clock": "wall" if log.wall_clock else "own start"})
        imp.finish()
        names[:] = [rename(x["name"]) for x in imp.flows()]
        writer.write(imp.take_tables())
    finally:
        writer.close()
    return imp, sources

"""One function finishes a results folder, whoever produced it (a backend's run or an import):
summary.json, cpu.json, the catalog row, report.html and meta.json."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from .analysis.summary import cpu_cost
from .catalog import write_summary
from .report.make import make_report
from .store import write_json


def finish_run(directory: Path, summary: dict[str, Any], meta: dict[str, Any], *, key: str,
               flows: list[dict[str, Any]], report: bool, wall0_s: float, labels: dict[str, Any] | None = None,
               cpu: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write what every results folder has around its tables (which the producer wrote, with
    spec.toml): summary.json, cpu.json (with the simulator's CPU samples `cpu`), the catalog row
    under `key` (with `labels`, a sweep point's), report.html of `flows` (name, start_ns) and
    last meta.json, its wall time counted from `wall0_s` (time.monotonic()). Returns the summary."""
    write_json(directory / "summary.json", summary)
    if cpu:
        write_json(directory / "cpu.json", cpu_cost(cpu, summary))
    write_summary(directory, summary, key, labels)
    if report:
        make_report(directory, flows, summary, meta)
    meta["wall_s"] = round(time.monotonic() - wall0_s, 3)
    write_json(directory / "meta.json", meta)
    return summary

"""The report's entry point: report.html for a finished results folder, whoever produced it
(each table read once, each series decimated once: report/series.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..analysis.recovery import episode_list
from . import html as report_html, interactive
from .panels import PageModel, RunTables, add_run
from .text import listed_flows


def make_report(directory: Path, flows: list[dict[str, Any]], summary: dict[str, Any], meta: dict[str, Any]) -> Path:
    """report.html in `directory`: the summary, the interactive charts of `flows` (name,
    start_ns), recovery episodes and, where measured, the CPU section."""
    tables = RunTables.read(directory, summary)
    listed = listed_flows(summary)
    if len(listed) < len(summary["flows"]):  # a large workload's flows: in its tables, not charted one by one
        names = {f["flow"] for f in listed}
        tables = tables.only(names)
        flows = [f for f in flows if f["name"] in names]
    mss = {f["flow"]: f["mss_bytes"] for f in summary["flows"]}
    eps = episode_list(tables.events, tables.sends if len(tables.sends) else None, mss)
    model = PageModel()
    add_run(model, tables, eps)
    intervals = tables.intervals.records()
    del tables  # the charts are built: the tables go before the page is
    spec_text = (directory / "spec.toml").read_text()
    cpu_path = directory / "cpu.json"
    cpu_html = report_html.cpu_section(json.loads(cpu_path.read_text())) if cpu_path.is_file() else ""
    return report_html.write(directory, summary, meta, spec_text, intervals, flows, interactive.section(model),
                             report_html.recovery_section(eps) + cpu_html)

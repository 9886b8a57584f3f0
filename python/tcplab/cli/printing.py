"""What `tcplab run`, `show` and `import` print: a run's intervals and summary, a table of
iterations, where the results and the report are."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from rich.table import Table

from ..report.text import interval_lines, latency_table, listed_flows, summary_table, workload_tables
from ..runs import Run
from .common import out_console


def _print_finished(path: Path, iterations: int, intervals: bool, report: bool) -> None:
    """What `tcplab run` prints at the end: the run (or its iterations' table), where it is."""
    if iterations == 1:
        _print_run(path, intervals)
        if (path / "cpu.json").is_file():
            c = json.loads((path / "cpu.json").read_text())
            out_console.print(f"CPU ({c['samples']} samples): congestion-control hooks p = {100 * c['cc_share']:.3f}% "
                              f"± {100 * c['cc_share_ci95']:.3f}% (w = p/GB = {c['cc_share_per_gb']}), TCP path "
                              f"{100 * c['tcp_share']:.2f}% ± {100 * c['tcp_share_ci95']:.2f}% (w = {c['tcp_share_per_gb']}), "
                              f"{c['gb_delivered']} GB delivered")
    else:
        runs = json.loads((path / "iterations.json").read_text())
        _print_iterations([Run(path / r).info for r in runs["runs"]], runs["seeds"])
        sys.stdout.write((path / "stats.txt").read_text())
    out_console.print(f"results: {path}")
    if report:
        report_path = path / "report.html" if iterations == 1 else path / "iterations.html"
        out_console.print(f"report:  {report_path}")


def _print_run(path: Path, with_intervals: bool) -> None:
    r = Run(path)
    info = r.info
    if with_intervals:
        flows = []
        for f in listed_flows(info):
            flows.append({"name": f["flow"], "start_ns": int(round(f["start_s"] * 1e9))})
        from ..store import read_rows  # loaded on use (pyarrow); rows, not pandas: `tcplab run` imports pandas only to report

        for line in interval_lines(read_rows(path, "intervals"), flows):
            out_console.print(line, markup=False)
    out_console.print(summary_table(info))
    if (lat := latency_table(info)) is not None:
        out_console.print(lat)
    for t in workload_tables(info):
        out_console.print(t)


def _print_iterations(summaries: list[dict], seeds: list[int]) -> None:
    t = Table(title=f"{summaries[0]['name']}: {len(seeds)} iterations (seeds {seeds[0]}..{seeds[-1]})")
    for col in ("flow", "mean Mbit/s", "stddev", "min", "max", "mean retr"):
        t.add_column(col, justify="left" if col == "flow" else "right")
    for i, f in enumerate(summaries[0]["flows"]):
        xs = [s["flows"][i]["throughput_mbps"] or 0.0 for s in summaries]
        rs = [s["flows"][i]["retransmits"] for s in summaries]
        t.add_row(f["flow"], f"{statistics.fmean(xs):.2f}", f"{statistics.stdev(xs):.2f}", f"{min(xs):.2f}", f"{max(xs):.2f}",
                  f"{statistics.fmean(rs):.1f}")
    out_console.print(t)

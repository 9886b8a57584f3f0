"""compare.html: any number of runs (simulator, kernel, a testbed's imported logs) overlaid on the
same interactive charts, each aligned at its first flow's start, with the per-flow table and each
run's bottleneck (where its queue discipline ran, drops, ECN marks, queue delay)."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from . import interactive
from .html import _CSS, _table
from .panels import overlay_model
from .text import LATENCY_COLUMNS, bottleneck_rows, latency_rows


def flow_rows(runs: list[tuple[str, Path, dict[str, Any]]], diffs: dict[str, list[dict[str, Any]]]) -> list[list[Any]]:
    """One row per run and flow: throughput, its difference from the first run, retransmissions,
    recovery episodes, cwnd distance from the first run (analysis.compare)."""
    rows = []
    for i, (label, _, info) in enumerate(runs):
        vs = {r.get("b_flow", r["flow"]): r for r in diffs.get(label, [])}  # b_flow: paired across names
        for f in info["flows"]:
            d = vs.get(f["flow"])
            rows.append([label, info.get("backend", "") or "-", f["flow"], f["stack"], f["cc"], f["throughput_mbps"],
                         "base" if i == 0 else (None if d is None or d["diff_pct"] is None else f"{d['diff_pct']:+.1f}%"),
                         f["retransmits"], f["recoveries"], f["rtos"], f.get("srtt_ms"),
                         None if d is None or d["cwnd_relative_diff"] is None else f"{100 * d['cwnd_relative_diff']:.1f}%"])
    return rows


def write(out_dir: Path, runs: list[tuple[str, Path, dict[str, Any]]], diffs: dict[str, list[dict[str, Any]]]) -> Path:
    """out_dir/compare.html."""
    model = overlay_model(runs)
    table = _table("compare-table", ["run", "backend", "flow", "stack", "cc", "Mbit/s", f"vs {runs[0][0]}", "retransmits",
                                     "recoveries", "RTOs", "srtt ms", "cwnd |diff| vs first"], flow_rows(runs, diffs), left=5)
    cols = ("run", "discipline", "where", "utilisation", "drops", "ecn_marks", "max_queue_packets",
            "queue_delay_p50_ms", "queue_delay_p95_ms", "queue_delay_p99_ms")
    bott = _table("bottleneck-table", ["run", "discipline", "where", "utilisation", "drops", "ECN marks",
                                       "max queue packets", "queue delay p50 ms", "p95 ms", "p99 ms"],
                  [[r[c] for c in cols] for r in bottleneck_rows([x[0] for x in runs], [x[2] for x in runs])], left=3)
    # Probes' and flows' RTT and the queues other than the bottleneck's (above), run by run.
    lat = [[label, *r] for label, _, info in runs for r in latency_rows(info, skip_port=(info.get("bottleneck") or {}).get("link"))]
    if lat:
        bott += _table("compare-latency-table", ["run", "latency under load", *LATENCY_COLUMNS[1:]], lat, left=3)
    listing = "".join(f"<li><b>{html.escape(label)}</b>: <code>{html.escape(str(path))}</code> "
                      f"({html.escape(info['name'])}, backend {html.escape(str(info.get('backend') or '-'))})</li>"
                      for label, path, info in runs)
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>tcplab compare: {html.escape(", ".join(r[0] for r in runs))}</title>
<style>{_CSS}</style></head><body>
<h1>Compare {len(runs)} runs</h1>
<p class="sub">Each run's time starts at its first flow's start. Toggle a run's flows above the charts;
differences are from the first run (cwnd |diff|: mean absolute difference on a 10 ms grid relative to its mean cwnd).</p>
<ul id="runs">{listing}</ul>
<section id="summary"><h2>Flows</h2>{table}</section>
<section id="bottleneck"><h2>Bottleneck</h2>{bott}</section>
{interactive.section(model)}
</body></html>
"""
    path = out_dir / "compare.html"
    path.write_text(page)
    return path

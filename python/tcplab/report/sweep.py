"""sweep.html: one self-contained page per sweep: for each part, each metric against the swept
parameter (mean over iterations with its 95% confidence interval, one line per combination of
the other axes), the seeds' table of every point as % vs the part's first point, marked
where the difference is significant (Student's t, pooled s, as ministat), with links to each
run's report; and where a part sweeps names (algorithms, stacks), those names ranked by
throughput."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..analysis.stats import ci_half_width, describe, difference  # noqa: E402
from ..catalog import connect, param_column  # noqa: E402
from ..spec import units  # noqa: E402
from . import interactive  # noqa: E402
from .html import _CSS, _show  # noqa: E402
from .panels import overlay_model  # noqa: E402

matplotlib.rcParams["svg.hashsalt"] = "tcplab"

#: (catalog column of the runs view, label). Fairness only where runs have several flows; the
#: latency figures only where runs measured them ([trace] latency, an AQM, [[probes]]).
METRICS = [("throughput_mbps", "throughput, all flows (Mbit/s)"), ("utilisation", "bottleneck utilisation"),
           ("retransmits", "retransmitted segments"), ("fairness_jain", "Jain fairness"),
           ("queue_delay_p50_ms", "bottleneck queue delay p50 (ms)"), ("queue_delay_p99_ms", "bottleneck queue delay p99 (ms)"),
           ("probe_rtt_p50_ms", "probe RTT p50 (ms)"), ("probe_rtt_p99_ms", "probe RTT p99 (ms)")]
OPTIONAL_METRICS = {"queue_delay_p50_ms", "queue_delay_p99_ms", "probe_rtt_p50_ms", "probe_rtt_p99_ms"}
CONFIDENCE = 0.95


def numeric(value: Any) -> float | None:
    """A swept value as a number for an axis: plain numbers, or rates, sizes and durations with
    units (15Mbit -> 15e6, 6MB -> 6e6 bytes, 10ms -> 1e7 ns); None if it is a name."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    for parse in (units.parse_rate_bps, units.parse_size_bytes, units.parse_duration_ns):
        try:
            return float(parse(value))
        except (units.UnitError, TypeError, ValueError):
            continue
    return None


def _x_axis(part: dict[str, Any]) -> tuple[str, bool]:
    """The axis the charts put on x: the first whose values are all numeric, else the first."""
    for ax in part["axes"]:
        if all(numeric(v) is not None for v in ax["values"]):
            return ax["key"], True
    return part["axes"][0]["key"], False


def _points(index: dict[str, Any], part: str) -> list[dict[str, Any]]:
    """The part's parameter combinations, in plan order, each with its iterations' run folders."""
    out: dict[int, dict[str, Any]] = {}
    for p in index["points"]:
        if p["part"] == part:
            e = out.setdefault(p["point"], {"point": p["point"], "params": p["params"], "runs": []})
            e["runs"].append(p["run"])
            e.setdefault("status", []).append(p.get("status", "pending"))
    return [out[k] for k in sorted(out)]


def _chart(part: dict[str, Any], pts: list[dict[str, Any]], values: dict[str, dict[str, list[float]]], metric: str,
           label: str, out: Path) -> str:
    xkey, is_num = _x_axis(part)
    others = [a["key"] for a in part["axes"] if a["key"] != xkey] if part["mode"] == "product" else []
    xs_cat = next(a["values"] for a in part["axes"] if a["key"] == xkey)
    lines: dict[str, list[tuple[float, float, float]]] = {}
    for p in pts:
        vals = values[metric].get(str(p["point"]), [])
        if not vals:
            continue
        s = describe(vals)
        ci = ci_half_width(s, CONFIDENCE) or 0.0
        x = numeric(p["params"][xkey]) if is_num else float(xs_cat.index(p["params"][xkey]))
        name = ", ".join(f"{k.split('.')[-1]}={p['params'][k]}" for k in others) or "all"
        lines.setdefault(name, []).append((x, s.mean, ci))
    fig, ax = plt.subplots(figsize=(8, 3.6))
    for name, rows in lines.items():
        rows.sort()
        ax.errorbar([r[0] for r in rows], [r[1] for r in rows], yerr=[r[2] for r in rows], marker="o", capsize=3,
                    linewidth=1.2, label=name)
    xnums = [numeric(v) for v in xs_cat] if is_num else []
    if xnums and min(xnums) > 0 and max(xnums) / min(xnums) >= 8:
        ax.set_xscale("log")  # rate and buffer sweeps span decades (T5: 15..160 Mbit/s)
        ax.minorticks_off()
    if not is_num:
        ax.set_xticks(range(len(xs_cat)), [str(v) for v in xs_cat])
    elif all(isinstance(v, str) for v in xs_cat):
        ticks = sorted({numeric(v) for v in xs_cat})
        ax.set_xticks(ticks, [str(v) for v in sorted(xs_cat, key=numeric)], rotation=45 if len(ticks) > 6 else 0)
    ax.set_xlabel(xkey)
    ax.set_ylabel(label)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    if len(lines) > 1:
        ax.legend(fontsize=8)
    fig.tight_layout()
    stem = f"sweep_{part['name']}_{metric}"
    fig.savefig(out / f"{stem}.svg", metadata={"Date": None})
    plt.close(fig)
    svg = (out / f"{stem}.svg").read_text()
    return f'<figure data-chart="{stem}">{svg[svg.index("<svg"):]}<figcaption>{html.escape(label)} vs {html.escape(xkey)}' \
           f" (mean over iterations; bars: {CONFIDENCE * 100:.0f}% confidence interval)</figcaption></figure>"


def _cell_vs(base: list[float], vals: list[float]) -> str:
    if not base or not vals:
        return "-"
    b, s = describe(base), describe(vals)
    if b.mean == 0:
        return "-"
    pct = (s.mean - b.mean) * 100 / b.mean
    d = difference(b, s, CONFIDENCE)
    if d is None:
        return f"{pct:+.1f}%"
    return f"{pct:+.1f}% ± {d.pct_error:.1f}%" + (" *" if d.significant else " (no difference proven)")


def _run_link(i: int, run: str, status: str) -> str:
    """Iteration i's report, or its log when it failed."""
    if status == "done":
        return f'<a href="{html.escape(run)}/report.html">{i + 1}</a>'
    if status == "failed":
        return f'<a class="bad" href="logs/{html.escape(run.split("/")[-1])}.log">{i + 1}: failed</a>'
    return f"{i + 1}: not run"


def _table(part: dict[str, Any], pts: list[dict[str, Any]], values: dict[str, dict[str, list[float]]],
           metrics: list[tuple[str, str]]) -> str:
    keys = [a["key"] for a in part["axes"]]
    head = [*keys, "N"] + [f"{label} (mean ± CI)" for _, label in metrics] + ["throughput vs first row", "runs"]
    rows = []
    base = values["throughput_mbps"].get(str(pts[0]["point"]), []) if pts else []
    for p in pts:
        cells = [html.escape(str(p["params"][k])) for k in keys]
        tp = values["throughput_mbps"].get(str(p["point"]), [])
        cells.append(str(len(tp)))
        for m, _ in metrics:
            vals = values[m].get(str(p["point"]), [])
            if not vals:
                cells.append("-")
                continue
            s = describe(vals)
            ci = ci_half_width(s, CONFIDENCE)
            cells.append(html.escape(_show(s.mean) + ("" if ci is None else f" ± {_show(ci)}")))
        cells.append(html.escape(_cell_vs(base, tp)))
        cells.append(" ".join(_run_link(i, r, st) for i, (r, st) in enumerate(zip(p["runs"], p["status"]))))
        rows.append("<tr>" + "".join(f'<td{" class=l" if i < len(keys) else ""}>{c}</td>' for i, c in enumerate(cells))
                    + "</tr>")
    th = "".join(f'<th{" class=l" if i < len(keys) else ""}>{html.escape(h)}</th>' for i, h in enumerate(head))
    return f'<table class="sweep-table" data-part="{html.escape(part["name"])}"><thead><tr>{th}</tr></thead>' \
           f'<tbody>{"".join(rows)}</tbody></table>'


def _ranking(part: dict[str, Any], pts: list[dict[str, Any]], values: dict[str, dict[str, list[float]]]) -> str:
    """The values of the part's one axis of names (T7: the algorithms) ranked by mean throughput,
    within each combination of the other axes; each against the best, * where Student's t proves
    the difference. Empty when the part has no such axis (or several)."""
    named = [a["key"] for a in part["axes"] if not all(numeric(v) is not None for v in a["values"])]
    # Names taken in step with another axis (a zip, as T5's buffers with its rates) are not rivals.
    if len(named) != 1 or (part["mode"] == "zip" and len(part["axes"]) > 1):
        return ""
    key = named[0]
    others = [a["key"] for a in part["axes"] if a["key"] != key]
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for p in pts:
        if values["throughput_mbps"].get(str(p["point"])):
            groups.setdefault(tuple(p["params"][k] for k in others), []).append(p)
    def mean_tp(p: dict[str, Any]) -> float:
        return describe(values["throughput_mbps"][str(p["point"])]).mean

    tables = []
    for group, members in groups.items():
        if len(members) < 3:
            continue
        members.sort(key=mean_tp, reverse=True)  # stable: ties keep the plan's order
        best = values["throughput_mbps"][str(members[0]["point"])]
        rows = []
        for rank, p in enumerate(members, 1):
            tp = values["throughput_mbps"][str(p["point"])]
            s = describe(tp)
            ci = ci_half_width(s, CONFIDENCE)
            rx = values["retransmits"].get(str(p["point"]), [])
            cells = [str(rank), html.escape(str(p["params"][key])), str(len(tp)),
                     html.escape(_show(s.mean) + ("" if ci is None else f" ± {_show(ci)}")),
                     html.escape(_show(describe(rx).mean)) if rx else "-",
                     "best" if rank == 1 else html.escape(_cell_vs(best, tp))]
            rows.append("<tr>" + "".join(f'<td{" class=l" if i == 1 else ""}>{c}</td>' for i, c in enumerate(cells)) + "</tr>")
        where = ", ".join(f"{k.split('.')[-1]} = {v}" for k, v in zip(others, group))
        head = ["rank", key, "N", "throughput (Mbit/s, mean ± CI)", "retransmits (mean)", "vs best"]
        th = "".join(f'<th{" class=l" if i == 1 else ""}>{html.escape(h)}</th>' for i, h in enumerate(head))
        tables.append(f'<table class="ranking" data-part="{html.escape(part["name"])}"><caption>Ranked by throughput'
                      f'{" (" + html.escape(where) + ")" if where else ""}</caption><thead><tr>{th}</tr></thead>'
                      f'<tbody>{"".join(rows)}</tbody></table>')
    return "".join(tables)


#: Runs overlaid on the sweep page's interactive charts (each point's first finished iteration).
OVERLAY_RUNS = 12


def _overlay(sweep_dir: Path, index: dict[str, Any], by_run) -> str:
    """The interactive charts with the first OVERLAY_RUNS points' runs overlaid, named by their
    parameters (and part, when there are several)."""
    several = len(index["parts"]) > 1
    runs, seen = [], set()
    for part in index["parts"]:
        for p in _points(index, part["name"]):
            r = next((r for r in p["runs"] if r in by_run.index), None)
            if r is None or r in seen:
                continue
            seen.add(r)
            label = ", ".join(f"{k.split('.')[-1]}={v}" for k, v in p["params"].items())
            runs.append(((f"{part['name']}: " if several else "") + label, sweep_dir / r,
                         json.loads((sweep_dir / r / "summary.json").read_text())))
    if not runs:
        return ""
    more = len(runs) - OVERLAY_RUNS
    title = "Charts: each point's run overlaid" + (f" (the first {OVERLAY_RUNS}; {more} more in their reports)" if more > 0 else "")
    return interactive.section(overlay_model(runs[:OVERLAY_RUNS]), title)


def write(sweep_dir: Path) -> Path:
    """sweep_dir/sweep.html from sweep.json and the runs' catalog rows."""
    index = json.loads((sweep_dir / "sweep.json").read_text())
    con = connect(sweep_dir / "runs")
    runs = con.execute("SELECT * FROM runs").df()
    runs["run"] = "runs/" + runs["run"].str.rstrip("/")
    plots = sweep_dir / "plots"
    plots.mkdir(exist_ok=True)
    sections = []
    by_run = runs.set_index("run")
    for part in index["parts"]:
        pts = _points(index, part["name"])
        values: dict[str, dict[str, list[float]]] = {m: {} for m, _ in METRICS}
        several_flows = False
        for p in pts:
            for r in p["runs"]:
                if r not in by_run.index:
                    continue  # failed or not run yet
                row = by_run.loc[r]
                several_flows |= int(row["flows"]) > 1
                for m, _ in METRICS:
                    v = row.get(m)
                    if v is not None and v == v:
                        values[m].setdefault(str(p["point"]), []).append(float(v))
        metrics = [(m, label) for m, label in METRICS if (m != "fairness_jain" or several_flows)
                   and (m not in OPTIONAL_METRICS or values[m])]
        charts = "".join(_chart(part, pts, values, m, label, plots) for m, label in metrics)
        missing = sum(1 for p in index["points"] if p["part"] == part["name"] and p.get("status") != "done")
        axes = "; ".join(f"{a['key']} ({param_column(a['key'])}) = {a['values']}" for a in part["axes"])
        sections.append(
            f'<section class="part" id="part-{html.escape(part["name"])}"><h2>{html.escape(part["name"])}</h2>'
            f'<p>{html.escape(part["mode"])} of {html.escape(axes)}; {part["iterations"]} iteration(s) each'
            + (f'; <span class="bad">{missing} run(s) not finished</span>' if missing else "")
            + f"</p>{_ranking(part, pts, values)}{charts}{_table(part, pts, values, metrics)}</section>")
    overlay = _overlay(sweep_dir, index, by_run)
    status = "complete" if index["complete"] else "incomplete (re-run the same command to finish it)"
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>tcplab sweep: {html.escape(index['name'])}</title>
<style>{_CSS}</style></head><body>
<h1>{html.escape(index['name'])}: sweep</h1>
<p class="sub">{len(index['points'])} points ({len({p['run'] for p in index['points']})} runs: points with the same resolved spec share one) on the {html.escape(index['backend'])} backend from {html.escape(index['source'])};
{status}. "vs first row": difference of the mean summed throughput from the part's first row, as % with its
{CONFIDENCE * 100:.0f}% error, * where Student's t (pooled s) proves it; with one iteration no test is possible.</p>
{''.join(sections)}
{overlay}
</body></html>
"""
    path = sweep_dir / "sweep.html"
    tmp = sweep_dir / ".sweep.html.tmp"
    tmp.write_text(page)
    tmp.rename(path)
    return path

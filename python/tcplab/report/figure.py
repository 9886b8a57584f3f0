"""`tcplab plot`: any panel of a run's report (or a flow's time-sequence graph) as a static PNG,
SVG or PDF for a chosen time window, at full resolution, for papers."""

from __future__ import annotations

import os
from pathlib import Path

from ..analysis.recovery import episode_list
from ..runs import Run
from . import plots
from ..options import OptionError, seconds
from .panels import PANELS, PageModel, RunTables, add_run

#: What `tcplab plot --what` draws: the time panels and the time-sequence graph.
WHAT = tuple(p[0] for p in PANELS) + ("tseq",)
FORMATS = (".png", ".svg", ".pdf")


class PlotError(ValueError):
    """A plot request that cannot be drawn; the message names the option and the allowed values."""


def plot_run(run_dir: Path, what: list[str], flow: str | None, lo_s: float | None, hi_s: float | None,
             out: Path, explicit: bool = True) -> list[Path]:
    """Draw `what` (default every panel and each flow's tseq; `explicit` False: the default, which
    leaves out the probes chart of a run without probes) into `out`: a file (one chart) or a
    folder (<what>[_<flow>].png and .svg). Times are the report's: seconds from the first flow's start."""
    run = Run(run_dir)
    info = run.info
    names = [f["flow"] for f in info["flows"]]
    for w in what:
        if w not in WHAT:
            raise PlotError(f"--what: {w!r} is not a chart; allowed: {', '.join(WHAT)}")
    if flow is not None and flow not in names:
        raise PlotError(f"--flow: {run_dir} has no flow {flow!r}; its flows: {', '.join(names)}")
    try:  # a window in seconds: finite, and within what nanoseconds in 64 bits can hold
        lo_s, hi_s = seconds(lo_s, "--from"), seconds(hi_s, "--to")
    except OptionError as e:
        raise PlotError(str(e)) from None
    if lo_s is not None and hi_s is not None and hi_s <= lo_s:
        raise PlotError(f"--from {lo_s} must be before --to {hi_s}")
    single = out.suffix.lower() in FORMATS
    jobs = [(w, f) for w in what for f in ([flow] if flow else names if w == "tseq" else [None])]
    if single and len(jobs) != 1:
        raise PlotError(f"--out {out}: one file holds one chart, this asks for {len(jobs)} "
                        "(choose one --what and, for tseq, one --flow; or give a folder)")
    tables = RunTables.read(run.path, info)
    origin = min(int(round((f["start_s"] or 0) * 1e9)) for f in info["flows"]) if info["flows"] else 0
    if lo_s is not None or hi_s is not None:
        lo_ns = origin + int((lo_s if lo_s is not None else -1e9) * 1e9)
        hi_ns = origin + int((hi_s if hi_s is not None else 1e9) * 1e9)
        margin = (hi_ns - lo_ns) // 10 if lo_s is not None and hi_s is not None else 0
        tables = tables.window(lo_ns - margin, hi_ns + margin)
    if flow is not None:
        info = dict(info, flows=[f for f in info["flows"] if f["flow"] == flow])
        tables.summary = info
    mss = {f["flow"]: f["mss_bytes"] for f in info["flows"]}
    eps = episode_list(tables.events, tables.sends if len(tables.sends) else None, {**mss, **{n: 0 for n in names if n not in mss}},
                       by_name=True)
    if flow is not None:
        eps = [e for e in eps if e.flow == flow]
    model = PageModel()
    add_run(model, tables, eps, full=True)
    written = []
    if not single:
        out.mkdir(parents=True, exist_ok=True)
    if explicit is False:  # every chart by default: a run without probes has no probes chart
        jobs = [(w, f) for w, f in jobs if w != "probes" or "probes" in model.panels]
    for w, f in jobs:
        if w != "tseq" and w not in model.panels:
            raise PlotError(f"--what {w}: {run_dir} recorded nothing for this chart")
        targets = [out] if single else [out / f"{w}{'_' + f if f else ''}{ext}" for ext in (".png", ".svg")]
        for target in targets:
            # Drawn under a hidden name and renamed: a chart is never seen half-written.
            tmp = target.parent / f".{target.stem}.partial-{os.getpid()}{target.suffix}"
            try:
                if w == "tseq":
                    plots.tseq_chart(model, f, lo_s, hi_s, tmp)
                else:
                    plots.panel_chart(model, w, lo_s, hi_s, tmp)
                tmp.rename(target)
            finally:
                tmp.unlink(missing_ok=True)
            written.append(target)
    return written

"""The commands that read results: presets, show, recovery, compare, plot, ls, query, stats."""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from .. import api, options
from ..analysis.flowmap import FlowMapError
from ..analysis.stats import MINISTAT_CONFIDENCE, SampleFileError, read_sample
from ..report.ministat import MAX_SAMPLES, render
from ..report.text import bottleneck_rows, bottleneck_table, compare_table, latency_table, recovery_table
from ..runs import Run
from ..spec.schema import find_preset, preset_names
from .common import _check_target, _fail, _option, _reads_results, _warn, out_console
from .printing import _print_iterations, _print_run


def presets() -> None:
    """List the presets, one line each."""
    for name in preset_names():
        path = find_preset(name)
        data = tomllib.loads(path.read_text())
        tid, _, short = name.partition("-")
        print(f"{tid.upper():4} {short:22} {data.get('description', '')}")


@_reads_results
def show(
    rundir: Annotated[Path, typer.Argument(help="A results folder written by tcplab run.")],
    intervals: Annotated[bool, typer.Option(help="Print iperf3-style interval lines.")] = True,
) -> None:
    """Re-print a finished run: intervals and summary."""
    if (rundir / "iterations.json").is_file():
        runs = json.loads((rundir / "iterations.json").read_text())
        summaries = [Run(rundir / r).info for r in runs["runs"]]
        _print_iterations(summaries, runs["seeds"])
        if (rundir / "stats.txt").is_file():
            sys.stdout.write((rundir / "stats.txt").read_text())
        return
    try:
        Run(rundir)
    except FileNotFoundError as e:
        _fail(str(e))
    from ..store import verify_tables  # loaded on use: `tcplab --help` starts without pyarrow

    verify_tables(rundir)
    _print_run(rundir, intervals)


@_reads_results
def recovery(
    rundir: Annotated[Path, typer.Argument(help="A results folder written by tcplab run.")],
    first: Annotated[bool, typer.Option("--first", help="Only each flow's first episode.")] = False,
) -> None:
    """Loss-recovery episodes: cwnd/ssthresh at entry and exit, flight, retransmissions, TSO and
    fractional sends."""
    from ..analysis.recovery import first_per_flow  # loaded on use: numpy, which `tcplab --help` does without

    try:
        r = Run(rundir)
    except FileNotFoundError as e:
        _fail(str(e))
    from ..store import verify_tables  # loaded on use, as in show

    verify_tables(rundir)
    eps = r.recovery
    if first:
        eps = first_per_flow(eps)
    if not len(eps):
        out_console.print("no loss-recovery episodes")
        return
    out_console.print(recovery_table(eps, f"{r.info['name']}: loss recovery"))
    if eps["tso_sends"].isna().all():
        out_console.print("TSO/fractional: n/a (the run did not record sends; set trace.sends = true)")


@_reads_results
def compare(
    runs: Annotated[list[Path], typer.Argument(help="Two or more results folders (e.g. the simulator's, the kernel's, an imported testbed run); the first is the base.")],
    out: Annotated[Optional[Path], typer.Option(help="Write compare.html (every run overlaid on the interactive charts), compare.json and, for two runs, overlaid cwnd charts here.")] = None,
    map_: Annotated[Optional[list[str]], typer.Option("--map", help="Pair a flow of the first run with another run's flow named differently, by name or endpoint: s1=10.0.0.1:5201 (repeatable; imported flows are otherwise paired by server port or order).")] = None,
    force: Annotated[bool, typer.Option(help="Replace an existing compare folder at --out.")] = False,
) -> None:
    """Runs side by side, each against the first: per-flow throughput and difference,
    retransmissions, recovery episodes, cwnd-trajectory distance; with --out, an overlay page."""
    if len(runs) < 2:
        _fail(f"compare needs at least two results folders, got {len(runs)}")
    try:
        infos = [Run(r).info for r in runs]
    except FileNotFoundError as e:
        _fail(str(e))
    if out is not None:
        _check_target(out, force, "compare", inputs=tuple(runs))
    try:
        rows = api.compare(*runs, out=out, flow_map=map_, force=force)
    except FlowMapError as e:
        _fail(str(e))
    if not rows:
        _fail(f"{runs[0]} has no flow in common with {', '.join(str(r) for r in runs[1:])}: pair flows with "
              "--map FLOW=FLOW_OR_ENDPOINT, e.g. --map s1=10.0.0.1:5201")
    labels = api.run_labels(infos)
    for i, (r, info) in enumerate(zip(runs[1:], infos[1:]), start=1):
        mine = [x for x in rows if x.get("vs", labels[i]) == labels[i]]
        if mine:
            out_console.print(compare_table(mine, f"{infos[0]['name']}: {runs[0]} vs {r}", (labels[0], labels[i])))
    out_console.print(bottleneck_table(bottleneck_rows(labels, infos)))
    # Probes' and flows' RTT, and queues other than the bottleneck's (in the table above).
    if (lat := latency_table(infos[0], labels, infos[1:], skip_bottleneck=True)) is not None:
        out_console.print(lat)
    if out:
        out_console.print(f"compare: {out / 'compare.html'}")


@_reads_results
def plot(
    rundir: Annotated[Path, typer.Argument(help="A results folder (simulated, kernel or imported run).")],
    what: Annotated[Optional[list[str]], typer.Option(help="throughput, cwnd, flight, srtt, probes, queue or tseq (repeatable; default all).")] = None,
    flow: Annotated[Optional[str], typer.Option(help="Only this flow (e.g. s1).")] = None,
    from_: Annotated[Optional[float], typer.Option("--from", help="Window start, seconds from the first flow's start (as in the report).")] = None,
    to: Annotated[Optional[float], typer.Option(help="Window end, seconds.")] = None,
    out: Annotated[Optional[Path], typer.Option(help="A file (.png, .svg, .pdf) for one chart, or a folder (default RUNDIR/plots).")] = None,
    force: Annotated[bool, typer.Option(help="Replace an existing chart file, or write into an existing folder of charts.")] = False,
) -> None:
    """Static charts for papers: any panel of the report, or a flow's time-sequence graph, for a
    chosen window at full resolution."""
    from ..report.figure import FORMATS, WHAT, PlotError, plot_run  # loaded on use: matplotlib

    try:
        Run(rundir)
    except FileNotFoundError as e:
        _fail(str(e))
    from_, to = _option(options.seconds, from_, "--from"), _option(options.seconds, to, "--to")
    chart = out is not None and out.suffix.lower() in FORMATS
    # RUNDIR/plots is the run's own: plotting again redraws it.
    _check_target(out or rundir / "plots", force, "chart" if chart else "plots", inputs=(rundir,) if out else (),
                  resume=out is None)
    try:
        paths = plot_run(rundir, list(what or WHAT), flow, from_, to, out or rundir / "plots", explicit=bool(what))
    except PlotError as e:
        _fail(str(e))
    for p in paths:
        out_console.print(str(p))


@_reads_results
def ls_(
    root: Annotated[Path, typer.Argument(help="A folder of results (searched recursively).")] = Path("results"),
) -> None:
    """List every finished run under ROOT from the catalog: name, backend, seed, sweep point,
    summed throughput, utilisation."""
    # Loaded on use: DuckDB and the catalog (pyarrow), for these two commands only.
    import duckdb

    from ..catalog import Catalog, CatalogError

    try:
        cat = Catalog(root)
        df = cat.query("SELECT * FROM runs ORDER BY run")
    except CatalogError as e:
        _fail(str(e))
    except duckdb.Error as e:
        _fail(f"ls: {root}: a run's catalog row cannot be read: {str(e).splitlines()[0]}")
    t = Table(show_edge=False)
    params = [c for c in df.columns if c.startswith("p_")]
    for c in ["run", "name", "backend", "seed", "flows", "Mbit/s", "util %"] + params:
        t.add_column(c, justify="left" if c in ("run", "name", "backend") or c.startswith("p_") else "right")
    damaged = {run: why for run, why, _ in cat.damaged}  # listed as such, naming the file: `show` refuses them
    rows = {r["run"]: [r["run"], r["name"], r["backend"], str(r["seed"]), str(r["flows"]), f"{r['throughput_mbps']:.2f}",
                       "-" if r["utilisation"] != r["utilisation"] else f"{r['utilisation'] * 100:.1f}",
                       *[("" if r[c] is None else str(r[c])) for c in params]] for _, r in df.iterrows()}
    rows |= {run: [run, f"damaged: {why}", *["-"] * (5 + len(params))] for run, why in damaged.items()}
    for run in sorted(rows):
        t.add_row(*rows[run])
    out_console.print(t)
    out_console.print(f"{len(rows) - len(damaged)} run(s) under {root}" + (f", {len(damaged)} damaged" if damaged else ""))


@_reads_results
def query(
    sql: Annotated[str, typer.Argument(help="SQL over the views runs, flow_results, flows, intervals, queues, ports, events.")],
    root: Annotated[Path, typer.Option(help="The folder of results to query (searched recursively).")] = Path("results"),
    csv: Annotated[bool, typer.Option(help="Print CSV instead of a table.")] = False,
) -> None:
    """Query the results catalog with SQL (embedded DuckDB over the runs' Parquet files)."""
    # Loaded on use, as for ls.
    import duckdb

    from ..catalog import Catalog, CatalogError

    try:
        cat = Catalog(root)
        _warn([f"query: skipped {run}: {why}" for run, why, kept in cat.damaged if not kept])
        df = cat.query(sql)
    except CatalogError as e:
        _fail(str(e))
    except duckdb.Error as e:
        _fail(f"query: {str(e).splitlines()[0]}")
    if csv:
        sys.stdout.write(df.to_csv(index=False))
        return
    t = Table(show_edge=False)
    for c in df.columns:
        t.add_column(str(c))
    for row in df.itertuples(index=False):
        t.add_row(*["" if v is None else str(v) for v in row])
    out_console.print(t)


def stats(
    files: Annotated[list[str], typer.Argument(help="Up to 7 sample files, one number per line ('-' for stdin); the first is the base.")],
    confidence: Annotated[float, typer.Option("-c", "--confidence", help="Confidence level: 80, 90, 95, 98, 99 or 99.5.")] = 95.0,
    column: Annotated[int, typer.Option("-C", "--column", min=1, help="Column to read (from 1).")] = 1,
    delimiters: Annotated[str, typer.Option("-d", "--delimiters", help="Field delimiter characters.")] = " \t",
    summary_only: Annotated[bool, typer.Option("-n", help="Summary statistics only: no plot, no test.")] = False,
    separate: Annotated[bool, typer.Option("-s", help="Average/median/stddev bars on separate lines.")] = False,
    width: Annotated[Optional[int], typer.Option("-w", "--width", min=4, help="Plot width (default 74, or the terminal's).")] = None,
) -> None:
    """Compare samples as FreeBSD's ministat does: N, min, max, median, avg, stddev, and against
    the first sample "Difference at C% confidence" (Student's t, pooled s) or "No difference
    proven", with the ASCII distribution plot. Same options, same output."""
    if confidence not in MINISTAT_CONFIDENCE:
        _fail(f"-c: {confidence:g} is not a confidence level ministat knows; allowed: "
              + ", ".join(f"{c:g}" for c in MINISTAT_CONFIDENCE))
    if not delimiters:
        _fail("-d: the delimiter string cannot be empty")
    if len(files) > MAX_SAMPLES:
        _fail(f"at most {MAX_SAMPLES} samples, got {len(files)}")
    if width is None:
        width = 74
        if sys.stdout.isatty():  # as ministat: $COLUMNS, else the terminal's width - 2
            cols = os.environ.get("COLUMNS", "")
            width = int(cols) if cols.isdigit() and len(cols) < 6 else max(4, os.get_terminal_size().columns - 2)
    try:
        values = [read_sample(f, column, delimiters) for f in files]
    except SampleFileError as e:
        _fail(str(e))
    names = ["<stdin>" if f == "-" else f for f in files]
    sys.stdout.write(render(values, names, confidence_pct=confidence, width=width, separate=separate,
                            summary_only=summary_only))

"""The `tcplab` command: run, sweep, peers, show, recovery, compare, import, export, ls, query,
stats, presets."""

from __future__ import annotations

import json
import shlex
import statistics
import sys
import tomllib
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from . import Run, __version__, api
from .report.text import interval_lines, latency_table, peers_table, summary_table
from .spec import SpecError, resolve
from .spec.schema import find_preset, preset_names

# Help texts are plain text: "[peers]" and "[sweep]" name spec tables, they are not Rich markup.
app = typer.Typer(help="tcplab: a laboratory for TCP congestion control.", no_args_is_help=True, add_completion=False,
                  rich_markup_mode=None, context_settings={"help_option_names": ["-h", "--help"]})
# Piped output (logs, CI) gets a wide console so tables are not truncated at 80 columns. What is
# printed is literal: names, paths and messages quote user text, where "[x]" is not markup and
# "FILE:100:" is a line number, not an emoji (markup=True only with escape(), below).
out_console = Console(highlight=False, markup=False, emoji=False, width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, highlight=False, markup=False, emoji=False)


def _fail(message: str, code: int = 2) -> None:
    from rich.markup import escape

    # Escaped: messages quote spec text, and "[sweep ...]" or "[senders.s1]" are not markup.
    err_console.print(f"[bold red]error:[/] {escape(message)}", markup=True, soft_wrap=True)
    raise typer.Exit(code)


def _reads_results(command):
    """For commands that read results folders: a folder damaged after it was written (a table
    truncated or deleted, summary.json edited) fails with one line naming the file, exit 2."""
    import functools

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        from .store import DamagedResults

        try:
            return command(*args, **kwargs)
        except DamagedResults as e:
            _fail(f"damaged results: {e}")
        except Exception as e:  # noqa: BLE001 - narrowed just below
            # DuckDB (query, ls) and pandas report a truncated table or a missing column as these.
            from .paths import UnsafePath

            if isinstance(e, UnsafePath) or not isinstance(e, (KeyError, ValueError, TypeError, IndexError, OSError)) \
                    and "duckdb" not in type(e).__module__:
                raise  # an --out refused (_literal_errors says so), or a bug
            # The folders read (not an --out being written), and the error's own file if it has one.
            given = [(k, x) for k, v in [*enumerate(args), *kwargs.items()] for x in (v if isinstance(v, list) else [v])]
            folders = ", ".join(str(v) for k, v in given if isinstance(v, Path) and k != "out")
            if isinstance(e, OSError) and e.filename:
                _fail(f"{e.filename}: {e.strerror or type(e).__name__}")
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            _fail(f"damaged or incomplete results in {folders}: {type(e).__name__}: {first}")

    return wrapper


def _check_target(target: Path, force: bool, kind: str = "run", inputs: tuple = (), resume: bool = False,
                  lock: bool = True) -> None:
    """Before any work: the output is new (or an empty folder), or --force and it is tcplab's own
    `kind`; locked against a second writer until the command ends (outdir.guard)."""
    from .outdir import guard
    from .paths import UnsafePath

    try:
        _, claim = guard(target, force=force, kind=kind, inputs=inputs, resume=resume, lock=lock)
    except UnsafePath as e:
        _fail(str(e))
    if claim is not None:
        _claims.append(claim)  # released when the command ends (_literal_errors)


#: Exit status of an interrupted command: 128 + SIGINT, as a shell reports it (and `sweep` did).
INTERRUPTED = 130
#: The --out locks the running command holds.
_claims: list = []


def _literal_errors(command):
    """Every command: an interrupt (Ctrl-C, SIGTERM) exits INTERRUPTED in one line; an --out
    refused late (outdir.OutDirError: another writer took it meanwhile) exits 2 in one line; the
    --out locks it took are released."""
    import functools

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        from .paths import UnsafePath

        held = len(_claims)
        try:
            return command(*args, **kwargs)
        except KeyboardInterrupt:
            _fail("interrupted", INTERRUPTED)
        except UnsafePath as e:
            _fail(str(e))
        finally:
            while len(_claims) > held:
                _claims.pop().release()

    return wrapper


def _warn(warnings: list[str]) -> None:
    """Legal but suspicious spec values (spec/warnings.py), each printed once."""
    from rich.markup import escape

    for w in dict.fromkeys(warnings):
        err_console.print(f"[bold yellow]warning:[/] {escape(w)}", markup=True, soft_wrap=True)


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}", style="bold", markup=False), BarColumn(),
        TextColumn("{task.fields[sim]:>8} sim"), TimeElapsedColumn(), TimeRemainingColumn(),
        console=err_console, transient=True,
    )


@app.command()
def run(
    spec: Annotated[str, typer.Argument(help="Spec file (TOML) or preset name (e.g. T1, dumbbell-wan).")],
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="Override a key: --set senders.s1.cc=newreno (repeatable; * matches all).")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Results folder (default results/<name>-<time>).")] = None,
    seed: Annotated[Optional[int], typer.Option(help="Seed (default: the spec's, else 1).")] = None,
    iterations: Annotated[int, typer.Option(min=1, help="Run this many seeds: seed, seed+1, ...")] = 1,
    duration: Annotated[Optional[str], typer.Option(help="Override every time-limited sender's time, e.g. 20s (a bare number is seconds, as iperf3 -t).")] = None,
    force: Annotated[bool, typer.Option(help="Replace an existing results folder.")] = False,
    intervals: Annotated[bool, typer.Option(help="Print iperf3-style interval lines.")] = True,
    report: Annotated[bool, typer.Option(help="Make charts and report.html.")] = True,
    backend: Annotated[str, typer.Option(help="sim (the simulator), netns (this machine's Linux TCP in network namespaces; root) or remote (your lab's machines over ssh; needs --testbed).")] = "sim",
    testbed: Annotated[Optional[Path], typer.Option(help="LAB.toml: the machines of --backend remote (docs/remote.md).")] = None,
) -> None:
    """Run an experiment and write its results folder (simulator by default, real Linux TCP, or your lab)."""
    from .runner import BACKENDS, default_out

    try:
        data, source = api.spec_data(spec, set_)
        if "sweep" in data:
            raise SpecError(source, "sweep", f"this spec is a parameter sweep: run it with `tcplab sweep {spec}`")
        resolved = resolve(data, source, seed=seed, duration=duration)
    except SpecError as e:
        _fail(str(e))
    _warn(list(resolved.warnings))
    if backend not in BACKENDS:
        _fail(f"--backend: {backend!r} is not a backend; allowed: {', '.join(BACKENDS)}")
    if backend == "netns":
        _netns_precheck(resolved)
    _remote_precheck(backend, testbed, [resolved])
    target = out or default_out(resolved.name)
    _check_target(target, force)
    from .backends.sim import UserCcRaised

    try:
        with _remote_errors():
            path = _run_with_progress(resolved, target, force, report, backend, iterations, testbed)
    except _netns_errors(backend) as e:
        _fail(f"netns backend: {e}")
    except UserCcRaised as e:
        _fail(f"{e}; nothing was kept")
    except KeyboardInterrupt:
        _fail("interrupted; nothing was kept", INTERRUPTED)
    _print_finished(path, iterations, intervals, report)


def _netns_errors(backend: str) -> tuple[type[Exception], ...]:
    """The netns backend's own failures, caught for a one-line message; its modules are imported
    only when it runs (a simulated run starts faster without them)."""
    if backend != "netns":
        return ()
    from .backends.netns import HostError, PlanError

    return (HostError, PlanError)


def _netns_precheck(resolved) -> None:
    """Refuse early, before any output, what the netns backend cannot run."""
    import os

    from .backends.netns import PlanError
    from .backends.netns.plan import build

    if os.geteuid() != 0:
        _fail("the netns backend needs root (network namespaces, qdiscs, tracefs): run it with sudo")
    try:
        build(resolved, "tl0000")
    except PlanError as e:
        _fail(f"netns backend: {e}")


def _remote_precheck(backend: str, testbed: Optional[Path], experiments: list) -> None:
    """--testbed goes with --backend remote; LAB.toml is read and matched to the spec before any
    output or connection."""
    if backend != "remote":
        if testbed is not None:
            _fail("--testbed is for --backend remote")
        return
    if testbed is None:
        _fail("--backend remote needs --testbed LAB.toml (docs/remote.md)")
    from .backends.remote import LabError, load_lab
    from .backends.remote.lab import check_against

    try:
        lab = load_lab(testbed)
        for exp in experiments:
            check_against(lab, exp)
    except LabError as e:
        _fail(str(e))


def _remote_errors():
    """The remote backend's failures as one line each (pre-flight: one line per problem), exit 2."""
    import contextlib

    @contextlib.contextmanager
    def guard():
        try:
            yield
        except Exception as e:
            # Imported here, on failure only: a simulated run starts without the remote backend.
            from .backends.remote import LabError, PreflightFailed, RemoteError

            if isinstance(e, PreflightFailed):
                from rich.markup import escape

                for line in e.problems:
                    err_console.print(f"[bold red]error:[/] {escape(line)}", markup=True, soft_wrap=True)
                err_console.print("every host was restored" if e.after_changes else "nothing was changed on any host",
                                  markup=False)
                raise typer.Exit(2) from None
            if isinstance(e, (RemoteError, LabError)):
                _fail(f"remote backend: {e}")
            raise

    return guard()


def _command() -> str:
    return shlex.join(["tcplab", *sys.argv[1:]])


def _run_with_progress(resolved, target: Path, force: bool, report: bool, backend: str, iterations: int,
                       testbed: Optional[Path] = None) -> Path:
    """tcplab.run under a progress bar; the results folder."""
    with _progress() as prog:
        task = prog.add_task(resolved.name, total=1000, sim="0.0s")

        def step(i: int, now: int, stop: int) -> None:
            desc = resolved.name if iterations == 1 else f"{resolved.name} [{i + 1}/{iterations}]"
            prog.update(task, completed=1000 * (i + now / stop) / iterations, description=desc, sim=f"{now / 1e9:.1f}s")

        done = api.run(resolved, out=target, force=force, report=report, backend=backend, iterations=iterations,
                       progress=step, command=_command(), testbed=testbed)
    return done.path if iterations == 1 else done[0].path.parent


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
        for f in info["flows"]:
            flows.append({"name": f["flow"], "start_ns": int(round(f["start_s"] * 1e9))})
        from .store import read_rows  # pyarrow rows: `tcplab run` imports pandas only to report

        for line in interval_lines(read_rows(path, "intervals"), flows):
            out_console.print(line, markup=False)
    out_console.print(summary_table(info))
    if (lat := latency_table(info)) is not None:
        out_console.print(lat)


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


@app.command()
def peers(
    spec: Annotated[str, typer.Argument(help="Spec file (TOML) or preset name (e.g. T1).")],
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="Override a key before the matrix is applied (repeatable).")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Results folder (default results/<name>-peers-<time>).")] = None,
    seed: Annotated[Optional[int], typer.Option(help="Seed (default: the spec's, else 1).")] = None,
    duration: Annotated[Optional[str], typer.Option(help="Override every time-limited sender's time, e.g. 20s (a bare number is seconds, as iperf3 -t).")] = None,
    force: Annotated[bool, typer.Option(help="Replace an existing results folder.")] = False,
    report: Annotated[bool, typer.Option(help="Make each run's report and peers.html.")] = True,
    iterations: Annotated[int, typer.Option(min=1, help="Seeds per pair (seed, seed+1, ...); the differences get a t-test.")] = 1,
    backend: Annotated[str, typer.Option(help="sim, or remote (your lab's machines; needs --testbed).")] = "sim",
    testbed: Annotated[Optional[Path], typer.Option(help="LAB.toml for --backend remote (docs/remote.md).")] = None,
) -> None:
    """Peer compare: run the experiment with every sender on each stack x cc of its [peers] table
    (default freebsd, freebsd-rack, linux x newreno, cubic) and print each row as % vs Linux."""
    from .runner import default_out

    try:
        plan = api.plan_peers(spec, set=set_, seed=seed, duration=duration, iterations=iterations)
    except SpecError as e:
        _fail(str(e))
    _warn(plan.warnings)
    if backend not in ("sim", "remote"):
        _fail(f"--backend: {backend!r} is not a backend for peers; allowed: sim, remote")
    _remote_precheck(backend, testbed, list(plan.experiments.values()))
    target = out or default_out(f"{plan.name}-peers")
    _check_target(target, force)
    total = len(plan.pairs) * iterations
    with _progress() as prog:
        task = prog.add_task(plan.name, total=1000, sim="0.0s")

        def step(k: int, now: int, stop: int) -> None:
            st, cc = plan.pairs[k // iterations]
            prog.update(task, completed=1000 * (k + now / stop) / total,
                        description=f"{plan.name} {st}/{cc} [{k + 1}/{total}]", sim=f"{now / 1e9:.1f}s")

        with _remote_errors():
            done = api.peers(plan, out=target, force=force, report=report, progress=step, command=_command(),
                             backend=backend, testbed=testbed)
    out_console.print(peers_table(done.rows, f"{plan.name}: peer compare"))
    out_console.print(f"results: {done.path}")
    if report:
        out_console.print(f"report:  {done.path / 'peers.html'}")


@app.command()
def presets() -> None:
    """List the presets, one line each."""
    for name in preset_names():
        path = find_preset(name)
        data = tomllib.loads(path.read_text())
        tid, _, short = name.partition("-")
        print(f"{tid.upper():4} {short:22} {data.get('description', '')}")


@app.command()
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
    from .store import verify_tables

    verify_tables(rundir)
    _print_run(rundir, intervals)


@app.command()
@_reads_results
def recovery(
    rundir: Annotated[Path, typer.Argument(help="A results folder written by tcplab run.")],
    first: Annotated[bool, typer.Option("--first", help="Only each flow's first episode.")] = False,
) -> None:
    """Loss-recovery episodes: cwnd/ssthresh at entry and exit, flight, retransmissions, TSO and
    fractional sends."""
    from .analysis.recovery import first_per_flow
    from .report.text import recovery_table

    try:
        r = Run(rundir)
    except FileNotFoundError as e:
        _fail(str(e))
    from .store import verify_tables

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


@app.command()
@_reads_results
def compare(
    runs: Annotated[list[Path], typer.Argument(help="Two or more results folders (e.g. the simulator's, the kernel's, an imported testbed run); the first is the base.")],
    out: Annotated[Optional[Path], typer.Option(help="Write compare.html (every run overlaid on the interactive charts), compare.json and, for two runs, overlaid cwnd charts here.")] = None,
    force: Annotated[bool, typer.Option(help="Replace an existing compare folder at --out.")] = False,
) -> None:
    """Runs side by side, each against the first: per-flow throughput and difference,
    retransmissions, recovery episodes, cwnd-trajectory distance; with --out, an overlay page."""
    from .report.text import bottleneck_rows, bottleneck_table, compare_table

    if len(runs) < 2:
        _fail(f"compare needs at least two results folders, got {len(runs)}")
    try:
        infos = [Run(r).info for r in runs]
    except FileNotFoundError as e:
        _fail(str(e))
    if out is not None:
        _check_target(out, force, "compare", inputs=tuple(runs))
    rows = api.compare(*runs, out=out, force=force)
    if not rows:
        _fail(f"{runs[0]} has no flow in common with {', '.join(str(r) for r in runs[1:])}")
    labels = api.run_labels(infos)
    for i, (r, info) in enumerate(zip(runs[1:], infos[1:]), start=1):
        mine = [x for x in rows if x.get("vs", labels[i]) == labels[i]]
        if mine:
            out_console.print(compare_table(mine, f"{infos[0]['name']}: {runs[0]} vs {r}", (labels[0], labels[i])))
    out_console.print(bottleneck_table(bottleneck_rows(labels, infos)))
    from .report.text import latency_table

    # Probes' and flows' RTT, and queues other than the bottleneck's (in the table above).
    if (lat := latency_table(infos[0], labels, infos[1:], skip_bottleneck=True)) is not None:
        out_console.print(lat)
    if out:
        out_console.print(f"compare: {out / 'compare.html'}")


@app.command()
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
    from .report.figure import FORMATS, WHAT, PlotError, plot_run

    try:
        Run(rundir)
    except FileNotFoundError as e:
        _fail(str(e))
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


@app.command("import")
def import_(
    logs: Annotated[list[Path], typer.Argument(help="Logs of one experiment: iperf3 text or -J JSON, SIFTR, SIFTR2, tcp_probe ftrace text, pcap/pcapng.")],
    format_: Annotated[Optional[list[str]], typer.Option("--format", "-f", help="auto (default), siftr, siftr2, siftr2-plot, tcp_probe, iperf3-json, iperf3-text or pcap; once for all logs or once per log.")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Results folder (default results/<name>-<timestamp>).")] = None,
    name: Annotated[Optional[str], typer.Option(help="Run name (default: the first log's file name).")] = None,
    lenient: Annotated[bool, typer.Option(help="Skip malformed lines and count them (the count is in the summary and report) instead of stopping at the first.")] = False,
    interval: Annotated[str, typer.Option(help="Interval of the iperf3-style table derived from logs without iperf3's own.")] = "1s",
    mss: Annotated[int, typer.Option(min=0, help="MSS in bytes for logs that do not state it (tcp_probe counts cwnd in packets; default 1448).")] = 0,
    force: Annotated[bool, typer.Option(help="Replace an existing --out folder.")] = False,
    report: Annotated[bool, typer.Option(help="Write report.html.")] = True,
) -> None:
    """Build a run folder from a real testbed's logs: same tables, summary and report as a
    simulated run. Logs of one experiment are combined, their flows matched by addresses and ports."""
    from .runner import default_out
    from .spec.units import parse_duration_ns
    from .testbed import LogError, import_logs

    try:
        interval_ns = parse_duration_ns(interval)
    except ValueError as e:
        _fail(f"--interval: {e}")
    from .paths import name_problem, slug

    if name is not None and (problem := name_problem(name)):
        _fail(f"--name: {problem}")
    target = out or default_out(name or slug(logs[0].stem))
    _check_target(target, force)
    command = _command()
    with Progress(TextColumn("{task.description}", style="bold", markup=False), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                  TimeElapsedColumn(), console=err_console, transient=True) as bar:
        tasks: dict[str, int] = {}

        def step(log: str, done: int, total: int) -> None:
            if log not in tasks:
                tasks[log] = bar.add_task(log, total=max(total, 1))
            bar.update(tasks[log], completed=done)

        try:
            path, summary = import_logs(logs, target, formats=format_, name=name, lenient=lenient, interval_s=interval_ns / 1e9,
                                        mss=mss, force=force, report=report, command=command, progress=step)
        except (LogError, FileExistsError) as e:
            _fail(str(e))
    _print_run(path, True)
    out_console.print(f"results: {path}")
    if report:
        out_console.print(f"report:  {path / 'report.html'}")


@app.command()
@_reads_results
def export(
    rundir: Annotated[Path, typer.Argument(help="A results folder (simulated, kernel or imported run).")],
    to: Annotated[list[str], typer.Option(help="siftr2, tcp_probe or iperf3-json (repeatable).")],
    out: Annotated[Optional[Path], typer.Option(help="Folder for the logs (default <rundir>/export).")] = None,
    force: Annotated[bool, typer.Option(help="Replace an existing --out folder.")] = False,
) -> None:
    """Write a run as the logs testbed tools produce (SIFTR2, tcp_probe ftrace text, iperf3 -J),
    for the scripts users already have."""
    from .testbed import LogError, export_run

    try:
        Run(rundir)
    except FileNotFoundError as e:
        _fail(str(e))
    _check_target(out or rundir / "export", force, "export", inputs=(rundir,))
    try:
        paths = export_run(rundir, out or rundir / "export", to, force=force)
    except (LogError, FileExistsError) as e:
        _fail(str(e))
    for p in paths:
        out_console.print(str(p))


@app.command()
def sweep(
    spec: Annotated[str, typer.Argument(help="Spec file (TOML) with a [sweep] table, or a preset (e.g. T5).")],
    jobs: Annotated[Optional[int], typer.Option("--jobs", "-j", min=1, help="Runs at a time (default: one per core).")] = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="Override a key of the base spec (repeatable).")] = None,
    axis: Annotated[Optional[list[str]], typer.Option(help="KEY=[v1, v2, ...]: sweep these axes instead of the spec's [sweep] (repeatable).")] = None,
    mode: Annotated[Optional[str], typer.Option(help="product or zip (default: the spec's, else product).")] = None,
    iterations: Annotated[Optional[int], typer.Option(min=1, help="Seeds per parameter combination (default: the spec's, else 1).")] = None,
    duration: Annotated[Optional[str], typer.Option(help="Override every time-limited sender's time, e.g. 20s (a bare number is seconds, as iperf3 -t).")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Sweep folder (default results/<name>-sweep-<hash of its runs>, so the same command resumes).")] = None,
    executor: Annotated[str, typer.Option(help="local (processes on this machine) or ray (a Ray cluster).")] = "local",
    address: Annotated[Optional[str], typer.Option(help="Ray cluster address (host:port); default: start a local Ray instance.")] = None,
    backend: Annotated[str, typer.Option(help="sim, netns (root; one run at a time) or remote (your lab; --testbed; one run at a time).")] = "sim",
    testbed: Annotated[Optional[Path], typer.Option(help="LAB.toml for --backend remote (docs/remote.md).")] = None,
    report: Annotated[bool, typer.Option(help="Make each run's report and sweep.html.")] = True,
) -> None:
    """Run a parameter sweep: every combination of the [sweep] axes (x iterations), in parallel,
    resumable: re-running the same command skips finished runs and redoes the rest."""
    import os
    import signal

    from . import sweeps as sweepmod
    from .runner import BACKENDS
    from .sweeps.ray_executor import RayUnavailable

    if backend not in BACKENDS:
        _fail(f"--backend: {backend!r} is not a backend; allowed: {', '.join(BACKENDS)}")
    if executor not in sweepmod.EXECUTORS:
        _fail(f"--executor: {executor!r} is not an executor; allowed: {', '.join(sweepmod.EXECUTORS)}")
    if mode is not None and mode not in ("product", "zip"):
        _fail(f"--mode: {mode!r} is not a sweep mode; allowed: product, zip")
    jobs = jobs or os.cpu_count() or 1
    if backend in ("netns", "remote"):
        if jobs != 1 or executor != "local":
            _fail(f"--backend {backend} runs one run at a time (one machine, one lab): use --jobs 1 and the local executor")
    try:
        data, source = api.spec_data(spec, set_)
        pl = sweepmod.plan(data, source, backend=backend, duration=duration, iterations=iterations, axes=axis,
                           mode=mode, out=out, testbed=str(testbed) if testbed else None)
    except SpecError as e:
        _fail(str(e))
    _warn([w for p in pl.points for w in p.resolved.warnings])
    if backend == "netns":
        _netns_precheck(pl.points[0].resolved)
    _remote_precheck(backend, testbed, [pl.points[0].resolved])
    _check_target(pl.out, False, "sweep", resume=True, lock=False)  # the sweep locks its folder itself
    command = _command()
    out_console.print(f"sweep: {len(pl.keys)} runs ({len(pl.parts)} part(s)) in {pl.out}")

    def on_term(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, on_term)
    prog = Progress(TextColumn("{task.description}", style="bold", markup=False), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                    TextColumn("{task.fields[failed]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                    console=err_console, transient=True)
    try:
        with prog:
            task = prog.add_task(pl.name, total=len(pl.keys), failed="")

            def step(o: sweepmod.Outcome) -> None:
                prog.update(task, completed=o.skipped + o.done + len(o.failed),
                            failed=f"[red]{len(o.failed)} failed[/]" if o.failed else "")

            try:
                outcome = sweepmod.execute(pl, jobs=jobs, executor=executor, address=address, report=report,
                                           command=command, progress=step)
            except sweepmod.SweepBusy as e:
                _fail(str(e))
            except RayUnavailable as e:
                _fail(str(e))
            except RuntimeError as e:
                _fail(f"sweep: {e}")
    finally:
        signal.signal(signal.SIGTERM, old)
    finished = outcome.skipped + outcome.done
    out_console.print(f"{finished} of {outcome.total} runs finished ({outcome.skipped} before this invocation), "
                      f"{len(outcome.failed)} failed")
    for key, err in list(outcome.failed.items())[:10]:
        out_console.print(f"  failed {key}: {err}  (log: {pl.out / 'logs' / (key + '.log')})")
    if outcome.report:
        out_console.print(f"report:  {outcome.report}")
    out_console.print(f"results: {pl.out}")
    if outcome.interrupted:
        err_console.print("[bold red]interrupted:[/] finished runs are kept; run the same command again to do the rest",
                          markup=True)
        raise typer.Exit(INTERRUPTED)
    if outcome.failed:
        raise typer.Exit(1)


@app.command("ls")
@_reads_results
def ls_(
    root: Annotated[Path, typer.Argument(help="A folder of results (searched recursively).")] = Path("results"),
) -> None:
    """List every finished run under ROOT from the catalog: name, backend, seed, sweep point,
    summed throughput, utilisation."""
    import duckdb

    from .catalog import Catalog, CatalogError

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


@app.command()
@_reads_results
def query(
    sql: Annotated[str, typer.Argument(help="SQL over the views runs, flow_results, flows, intervals, queues, ports, events.")],
    root: Annotated[Path, typer.Option(help="The folder of results to query (searched recursively).")] = Path("results"),
    csv: Annotated[bool, typer.Option(help="Print CSV instead of a table.")] = False,
) -> None:
    """Query the results catalog with SQL (embedded DuckDB over the runs' Parquet files)."""
    import duckdb

    from .catalog import Catalog, CatalogError

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


@app.command()
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
    import os

    from .analysis.stats import MINISTAT_CONFIDENCE, SampleFileError, read_sample
    from .report.ministat import MAX_SAMPLES, render

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
            width = int(cols) if cols.isdigit() else max(4, os.get_terminal_size().columns - 2)
    try:
        values = [read_sample(f, column, delimiters) for f in files]
    except SampleFileError as e:
        _fail(str(e))
    names = ["<stdin>" if f == "-" else f for f in files]
    sys.stdout.write(render(values, names, confidence_pct=confidence, width=width, separate=separate,
                            summary_only=summary_only))


netns_app = typer.Typer(help="The real-kernel backend's housekeeping.", no_args_is_help=True)
app.add_typer(netns_app, name="netns")


@netns_app.command("cleanup")
def netns_cleanup() -> None:
    """Remove what killed netns runs left behind (namespaces, processes, trace instances) — only
    what tcplab's registry says it created."""
    import os

    from .backends.netns import host

    if os.geteuid() != 0:
        _fail("tcplab netns cleanup needs root")
    done = host.cleanup_leftovers()
    out_console.print(f"removed the leftovers of {len(done)} run(s)" + (f": {', '.join(done)}" if done else ""))


remote_app = typer.Typer(help="The remote backend's housekeeping.", no_args_is_help=True)
app.add_typer(remote_app, name="remote")


@remote_app.command("restore")
def remote_restore(
    lab: Annotated[Path, typer.Argument(help="The LAB.toml the killed run used.")],
) -> None:
    """Undo on the lab's machines what killed remote runs left (sysctls, qdiscs, routes, modules,
    processes, files), from the journal each run keeps next to LAB.toml."""
    from .backends.remote import LabError, restore

    try:
        done, failed = restore(lab)
    except LabError as e:
        _fail(str(e))
    out_console.print(f"restored {len(done)} run(s)" + (f": {', '.join(done)}" if done else ""))
    if failed:
        for line in failed:
            err_console.print(f"error: {line}", markup=False, soft_wrap=True)
        raise typer.Exit(1)


@app.command()
def doctor() -> None:
    """What this machine offers the kernel backend: root, tools, the tcp_probe tracepoint, which
    queue disciplines the kernel has (tried in a scratch namespace; the others run in
    tcplab-linkem), which congestion controls are available or load on demand, ECN."""
    import os
    import shutil

    from .backends.netns import host, kernel

    out_console.print(f"kernel {os.uname().release}")
    if os.geteuid() != 0:
        _fail("tcplab doctor probes qdiscs in a scratch namespace and loads CC modules: run it as root")
    missing = [t for t in host.TOOLS if shutil.which(t) is None]
    out_console.print(f"tools: {'all of ' + ', '.join(host.TOOLS) if not missing else 'MISSING ' + ', '.join(missing)}")
    try:
        host.tracefs()
        out_console.print("tcp:tcp_probe tracepoint: yes")
    except host.HostError as e:
        out_console.print(f"tcp:tcp_probe tracepoint: no ({e})")
    feat = kernel.features(load_ccs=True)
    for q, v in feat["qdiscs"].items():
        where = "" if v == "yes" else f"  -> {kernel.WITHOUT[q]}" if q in kernel.WITHOUT else ""
        out_console.print(f"qdisc {q:9} {v if v == 'yes' else 'no: ' + v}{where}", markup=False)
    out_console.print("qdisc step      no Linux qdisc  -> runs in tcplab-linkem", markup=False)
    cc = feat["congestion_control"]
    out_console.print(f"congestion control available: {' '.join(cc['available'])}; loads on demand: "
                      f"{' '.join(x for x in cc['loadable'] if x not in cc['available']) or 'none'}; "
                      f"missing: {' '.join(cc['missing']) or 'none'}", markup=False)
    if "dctcp" in cc["missing"]:
        out_console.print("dctcp: this kernel has no tcp_dctcp; DCTCP runs on the simulator only here")
    out_console.print(f"ECN (net.ipv4.tcp_ecn, set per namespace): {'yes' if feat['tcp_ecn_sysctl'] else 'no'}")


@app.command()
def version() -> None:
    """Print tcplab's version."""
    out_console.print(f"tcplab {__version__}")


for _command_info in [*app.registered_commands, *netns_app.registered_commands, *remote_app.registered_commands]:
    _command_info.callback = _literal_errors(_command_info.callback)


def main() -> None:
    from .interrupts import raise_on_sigterm

    raise_on_sigterm()
    app()


if __name__ == "__main__":
    main()

"""The commands between tcplab and a testbed's logs: import, export."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from .. import options
from ..paths import name_problem, slug
from ..runs import Run
from ..spec.units import parse_duration_ns
from .common import _check_target, _command, _fail, _option, _reads_results, err_console, out_console
from .printing import _print_run


def import_(
    logs: Annotated[list[Path], typer.Argument(help="Logs of one experiment: iperf3 text or -J JSON, SIFTR, SIFTR2, tcp_probe ftrace text, pcap/pcapng.")],
    format_: Annotated[Optional[list[str]], typer.Option("--format", "-f", help="auto (default), siftr, siftr2, siftr2-plot, tcp_probe, iperf3-json, iperf3-text or pcap; once for all logs or once per log.")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Results folder (default results/<name>-<timestamp>).")] = None,
    name: Annotated[Optional[str], typer.Option(help="Run name (default: the first log's file name).")] = None,
    lenient: Annotated[bool, typer.Option(help="Skip malformed lines and count them (the count is in the summary and report) instead of stopping at the first.")] = False,
    interval: Annotated[str, typer.Option(help="Interval of the iperf3-style table derived from logs without iperf3's own.")] = "1s",
    mss: Annotated[int, typer.Option(min=0, help="MSS in bytes for logs that do not state it (tcp_probe counts cwnd in packets); 0: 1448.")] = 0,
    force: Annotated[bool, typer.Option(help="Replace an existing --out folder.")] = False,
    report: Annotated[bool, typer.Option(help="Write report.html.")] = True,
) -> None:
    """Build a run folder from a real testbed's logs: same tables, summary and report as a
    simulated run. Logs of one experiment are combined, their flows matched by addresses and ports."""
    # Loaded on use: numpy, pyarrow and the report, after the arguments are checked.
    from ..import_export import LogError, import_logs
    from ..runner import default_out

    mss, logs = _option(options.mss, mss), _option(options.paths, logs, "logs")
    try:
        interval_ns = parse_duration_ns(interval)
    except ValueError as e:
        _fail(f"--interval: {e}")
    if interval_ns <= 0:
        _fail(f"--interval {interval}: must be longer than 0 (the derived intervals table needs a length)")
    if name is not None and (problem := name_problem(name)):
        _fail(f"--name: {problem}")
    target = out or default_out(name or slug(logs[0].stem))
    _check_target(target, force)
    command = _command()
    with Progress(TextColumn("{task.description}", style="bold", markup=False), BarColumn(),
                  TextColumn("{task.percentage:>3.0f}%"), TimeElapsedColumn(), console=err_console, transient=True) as bar:
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


@_reads_results
def export(
    rundir: Annotated[Path, typer.Argument(help="A results folder (simulated, kernel or imported run).")],
    to: Annotated[list[str], typer.Option(help="siftr2, tcp_probe or iperf3-json (repeatable).")],
    out: Annotated[Optional[Path], typer.Option(help="Folder for the logs (default <rundir>/export).")] = None,
    force: Annotated[bool, typer.Option(help="Replace an existing --out folder.")] = False,
) -> None:
    """Write a run as the logs testbed tools produce (SIFTR2, tcp_probe ftrace text, iperf3 -J),
    for the scripts users already have."""
    from ..import_export import LogError, export_run  # loaded on use, as for import

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

"""`tcplab drill`: packetdrill scripts on targets (drill/); a table on the terminal, `--json FILE` a
list of {"script", "target", "result", "line", "reason"}."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.table import Table
from rich.text import Text

from ..drill.targets import DEFAULT_TIMEOUT_S, TARGETS
from ..outdir import guard
from ..paths import UnsafePath
from .common import _claims, _fail, err_console, out_console

if TYPE_CHECKING:
    from ..drill.result import Result


def drill(
    scripts: Annotated[Optional[list[str]], typer.Argument(help="Scripts (.pkt) or folders of scripts.")] = None,
    target: Annotated[Optional[list[str]], typer.Option(
        "--target", "-t", help=f"Where to run them, repeatable: {', '.join(TARGETS)}.")] = None,
    json_out: Annotated[Optional[Path], typer.Option("--json", help="Also write the results to this JSON file.")] = None,
    force: Annotated[bool, typer.Option(help="Replace an existing --json file, --report or --out folder of tcplab drill.")] = False,
    timeout_s: Annotated[float, typer.Option("--timeout-s", help="Give up on one script after this long.")] = DEFAULT_TIMEOUT_S,
    generate: Annotated[int, typer.Option(help="Differential testing: generate this many scenarios, record each on "
                                                "the kernel, replay the recordings on the model targets.")] = 0,
    seed: Annotated[int, typer.Option(help="With --generate: the seed (same seed, same scenarios).")] = 1,
    category: Annotated[Optional[list[str]], typer.Option(
        help="With --generate, repeatable: writes, data-loss, ack-loss, reorder, sack, rtt, rwnd (default: all).")] = None,
    out: Annotated[Optional[Path], typer.Option(help="With --generate: the folder for scenarios, recordings and "
                                                      "minimised scripts.")] = None,
    check_kernel: Annotated[bool, typer.Option(help="With --generate: also replay each recording on the kernel "
                                                    "target (the runner checked against the kernel itself).")] = False,
    minimise: Annotated[bool, typer.Option(help="With --generate: minimise each disagreeing recording.")] = True,
    report: Annotated[Optional[Path], typer.Option(help="Also write a conformance page (HTML) into this folder.")] = None,
    nic: Annotated[Optional[list[str]], typer.Option(
        "--nic", help="FreeBSD targets, repeatable: the endpoint's interface as the spec's [hosts.NAME.nic] keys, "
                      "KEY=VALUE with KEY driver (bce, em), tso_max_segcount, tso_max_segsize, tso_max, tso, lro "
                      "(default: packetdrill's tun(4), no TSO, no LRO; a script's `ifconfig IF [-]tso|[-]lro` "
                      "changes it).")] = None,
) -> None:
    """Run packetdrill scripts (the stacks' own TCP test suites) on this kernel or a stack model:
    pass / fail (first mismatch: line and what differed) / unsupported (what is missing).
    With --generate N: differential testing of the models against this kernel."""
    # Loaded on use: the reader and the targets (~0.1 s) stay out of every other command's start-up.
    from ..drill.runner import RunnerError, check_nic, check_targets, expand, run

    try:
        targets = check_targets(target or ["kernel"])
        iface = check_nic(nic or [], targets)
        if iface is not None and generate:
            raise RunnerError("--nic is for scripts on the FreeBSD targets, not --generate")
        if not generate or scripts:
            expand(scripts or [])
    except RunnerError as e:
        _fail(str(e))
    if generate:
        _generated(generate, seed, category or [], targets, out, check_kernel, minimise, json_out, report, force)
        return
    if not scripts:
        _fail("give scripts or folders to run, or --generate N")
    if out is not None:
        _fail("--out is for --generate; the results of scripts go to --json FILE and --report DIR")
    if json_out is not None:
        _guard_json(json_out, force, scripts)
    page = _report_dir(report, force, scripts)
    results, bad = run(scripts, targets, timeout_s, progress=_progress_line, nic=iface)
    _print_table(results)
    if json_out is not None:
        _write_json(json_out, [r.as_dict() for r in results])
    if page is not None:
        _write_report(page, results)
    for e in bad:
        err_console.print(f"error: {e}", markup=False, soft_wrap=True)
    raise typer.Exit(2 if bad else 1 if any(r.result == "fail" for r in results) else 0)


def _generated(count: int, seed: int, categories: list[str], targets: list[str], out: Path | None,
               check_kernel: bool, minimise: bool, json_out: Path | None, report: Path | None, force: bool) -> None:
    """--generate: the folder through the output guard, the run, the summary; exit 1 if a model disagreed."""
    import time

    from ..store import RunDir
    from .drill_diff import check_options, print_summary, run_generated

    models = check_options(targets, out, categories)
    if json_out is not None:
        _guard_json(json_out, force, [])
    page = _report_dir(report, force, [])
    try:
        rd = RunDir(out, force=force, kind="drill-diff")  # type: ignore[arg-type]
    except UnsafePath as e:
        _fail(str(e))
    start = time.monotonic()
    try:
        cases = run_generated(count, seed, categories, models, rd.tmp, rd.final, check_kernel, minimise)
    except BaseException:
        rd.abort()
        raise
    rd.commit()
    results = [r for c in cases for r in c.results]
    print_summary(cases, models, time.monotonic() - start)
    if json_out is not None:
        _write_json(json_out, [r.as_dict() for r in results])
    if page is not None:
        _write_report(page, results, f"differential testing: {count} scenarios (seed {seed}) recorded on the kernel",
                      {c.script: c.scenario.category for c in cases})
    raise typer.Exit(1 if any(r.result == "fail" for r in results) else 0)


def _report_dir(report: Path | None, force: bool, scripts: list[str]):  # noqa: ANN202 - a store.RunDir or None
    """The --report folder through the output guard, before any work."""
    if report is None:
        return None
    from ..store import RunDir

    try:
        return RunDir(report, force=force, kind="conformance", inputs=tuple(scripts))
    except UnsafePath as e:
        _fail(str(e))


def _write_report(page, results: list[Result], title: str = "packetdrill conformance",  # noqa: ANN001 - a store.RunDir
                  groups: dict[str, str] | None = None) -> None:
    from ..report.conformance import write

    write(page.tmp, [r.as_dict() for r in results], title, groups)
    out_console.print(f"conformance page: {page.commit() / 'index.html'}", markup=False)


def _guard_json(target: Path, force: bool, scripts: list[str]) -> None:
    """The output guard every command's --out passes (outdir.guard), before any work: a new file, or
    --force over an earlier `tcplab drill --json` file only; locked until the command ends."""
    try:
        _, claim = guard(target, force=force, kind="drill", inputs=scripts)
    except UnsafePath as e:
        _fail(str(e))
    _claims.append(claim)


def _write_json(target: Path, rows: list[dict]) -> None:
    """Written under a hidden name and renamed: a killed run never leaves a half-written file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.stem}.partial-{os.getpid()}{target.suffix}"
    tmp.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, target)


def _progress_line(r: Result) -> None:
    if err_console.is_terminal:
        err_console.print(f"{r.result:11} {r.target:12} {r.script}", markup=False, highlight=False)


def _print_table(results: list[Result]) -> None:
    from ..drill.result import RESULTS  # loaded with the runner

    table = Table(show_edge=False, pad_edge=False)
    for col in ("script", "target", "result", "line", "reason"):
        table.add_column(col, overflow="fold")
    style = {"pass": "green", "fail": "red", "unsupported": "yellow"}
    for r in results:
        # Text cells: printed literally (a reason quotes the script), the result in its colour.
        table.add_row(Text(r.script), Text(r.target), Text(r.result, style=style[r.result]),
                      "" if r.line is None else str(r.line), Text(r.reason))
    out_console.print(table)
    for t in dict.fromkeys(r.target for r in results):
        counts = {k: sum(1 for r in results if r.target == t and r.result == k) for k in RESULTS}
        out_console.print(f"{t}: " + ", ".join(f"{n} {k}" for k, n in counts.items()), markup=False)

"""`tcplab drill`: packetdrill scripts on targets (drill/); a table on the terminal, `--json FILE` a
list of {"script", "target", "result", "line", "reason"}."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table
from rich.text import Text

from ..drill.result import RESULTS, Result
from ..drill.runner import DEFAULT_TIMEOUT_S, TARGETS, RunnerError, check_targets, expand, run
from .common import _fail, err_console, out_console


def _check_json(target: Path, force: bool) -> None:
    """Before any work: the --json file is new, or --force replaces an existing file (never a folder)."""
    if target.is_dir():
        _fail(f"{target} is a folder: --json names a file")
    if target.exists() and not force:
        _fail(f"{target} already exists (choose another --json or pass --force)")
    if not target.parent.is_dir():
        _fail(f"{target.parent}: no such folder for --json")


def drill(
    scripts: Annotated[list[str], typer.Argument(help="Scripts (.pkt) or folders of scripts.")],
    target: Annotated[Optional[list[str]], typer.Option(
        "--target", "-t", help=f"Where to run them, repeatable: {', '.join(TARGETS)}.")] = None,
    json_out: Annotated[Optional[Path], typer.Option("--json", help="Also write the results to this JSON file.")] = None,
    force: Annotated[bool, typer.Option(help="Replace an existing --json file.")] = False,
    timeout_s: Annotated[float, typer.Option("--timeout-s", help="Give up on one script after this long.")] = DEFAULT_TIMEOUT_S,
) -> None:
    """Run packetdrill scripts (the stacks' own TCP test suites) on this kernel or a stack model:
    pass / fail (first mismatch: line and what differed) / unsupported (what is missing)."""
    try:
        targets = check_targets(target or ["kernel"])
        expand(scripts)
    except RunnerError as e:
        _fail(str(e))
    if json_out is not None:
        _check_json(json_out, force)
    results, bad = run(scripts, targets, timeout_s, progress=_progress_line)
    _print_table(results)
    if json_out is not None:
        json_out.write_text(json.dumps([r.as_dict() for r in results], indent=1) + "\n")
    for e in bad:
        err_console.print(f"error: {e}", markup=False, soft_wrap=True)
    raise typer.Exit(2 if bad else 1 if any(r.result == "fail" for r in results) else 0)


def _progress_line(r: Result) -> None:
    if err_console.is_terminal:
        err_console.print(f"{r.result:11} {r.target:12} {r.script}", markup=False, highlight=False)


def _print_table(results: list[Result]) -> None:
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

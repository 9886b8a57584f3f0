"""`tcplab drill --generate N`: differential testing against the kernel (drill/diff.py) with a
progress bar, the agreement rate per category and the first divergence of each disagreeing case."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from ..drill.targets import MODEL_TARGETS
from .common import _fail, err_console, out_console


def check_options(targets: list[str], out: Path | None, categories: list[str]) -> list[str]:
    """The model targets to replay on; one line and exit 2 for what cannot be run."""
    from ..drill.generate import CATEGORIES

    models = [t for t in targets if t in MODEL_TARGETS]
    if "kernel" not in targets or not models:
        _fail("--generate records on the kernel and replays on models: give --target kernel and a model target "
              "(e.g. --target kernel --target linux)")
    if out is None:
        _fail("--generate needs --out DIR (the folder its scenarios, recordings and minimised scripts go to)")
    bad = [c for c in categories if c not in CATEGORIES]
    if bad:
        _fail(f"unknown --category {bad[0]!r}: use {', '.join(CATEGORIES)}")
    return models


def run_generated(count: int, seed: int, categories: list[str], models: list[str], folder: Path, final: Path,
                  check_kernel: bool, shrink: bool) -> list:
    """The run with its progress (a bar on a terminal, a line every 5 % otherwise); the cases."""
    from ..drill import diff
    from ..drill.generate import CATEGORIES

    cats = tuple(categories) or CATEGORIES
    start = time.monotonic()
    if err_console.is_terminal:
        cols = (TextColumn("drill --generate"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                TimeElapsedColumn(), TimeRemainingColumn())
        with Progress(*cols, console=err_console, transient=True) as bar:
            task = bar.add_task("", total=count)

            def show(i: int, n: int, case) -> None:  # noqa: ANN001 - a diff.Case
                bar.update(task, completed=i, description=_agree_text(case, models[0], i))
            cases = diff.run(count, seed, cats, models, folder, check_kernel, shrink, progress=show)
    else:
        step = max(1, count // 20)

        def line(i: int, n: int, case) -> None:  # noqa: ANN001 - a diff.Case
            text = _agree_text(case, models[0], i)  # counts every case, shown every 5 %
            if i % step == 0 or i == n:
                err_console.print(f"[{i}/{n}] {time.monotonic() - start:.0f} s: {text}", markup=False, highlight=False)
        cases = diff.run(count, seed, cats, models, folder, check_kernel, shrink, progress=line)
    for c in cases:  # paths as they will be once the folder is in place
        c.script = str(final / Path(c.script).relative_to(folder))
        c.results = [replace(r, script=c.script) for r in c.results]
        if c.minimised:
            c.minimised = str(final / Path(c.minimised).relative_to(folder))
    diff.write_summary(folder, cases, models, seed)
    return cases


_agreed: dict[str, int] = {}


def _agree_text(case, model: str, done: int) -> str:  # noqa: ANN001 - a diff.Case
    _agreed[model] = _agreed.get(model, 0) + any(r.target == model and r.result == "pass" for r in case.results)
    return f"{model} agrees on {_agreed[model]}/{done}"


def print_summary(cases: list, models: list[str], seconds: float) -> None:
    """Agreement per category and target, then the first divergence of each disagreeing case."""
    from ..drill.diff import agreement

    for m in models:
        table = Table(title=f"kernel vs {m}: agreement per category", show_edge=False, pad_edge=False)
        for col in ("category", "scenarios", "recorded", "agree", "disagree", "unsupported", "kernel-unstable",
                    "agreement"):
            table.add_column(col, justify="left" if col == "category" else "right")
        for cat, row in agreement(cases, m).items():
            replayed = row["pass"] + row["fail"]
            rate = f"{100 * row['pass'] / replayed:.1f} %" if replayed else "-"
            table.add_row(cat, *(str(row[k]) for k in ("scenarios", "recorded", "pass", "fail", "unsupported", "unstable")),
                          rate)
        out_console.print(table)
    rows = Table(title="first divergence of each disagreeing case", show_edge=False, pad_edge=False)
    for col in ("scenario", "target", "line", "first divergence", "minimised"):
        rows.add_column(col, overflow="fold")
    for c in cases:
        for r in c.results:
            if r.result == "fail":
                small = f"{c.minimised} ({c.minimised_lines} lines)" if c.minimised else ""
                rows.add_row(Text(c.scenario.name), r.target, str(r.line), Text(r.reason), Text(small))
            elif r.result == "unsupported" or (r.target == "kernel" and r.result != "pass"):
                rows.add_row(Text(c.scenario.name), r.target, str(r.line), Text(f"{r.result}: {r.reason}"), "")
        if c.recorded:
            rows.add_row(Text(c.scenario.name), "kernel", "", Text(f"not recorded: {c.recorded}"), "")
    if rows.row_count:
        out_console.print(rows)
    out_console.print(f"{len(cases)} scenarios in {seconds:.0f} s", markup=False)

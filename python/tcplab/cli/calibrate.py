"""The calibrate command: a spec's unknowns found from a measured run (tcplab.calibrate)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from .. import api
from ..spec import SpecError
from .common import INTERRUPTED, _check_target, _fail, err_console, out_console


def calibrate(
    measured: Annotated[Path, typer.Argument(help="The measured run: a results folder of any backend or of `tcplab import`.")],
    spec: Annotated[str, typer.Argument(help="Spec file (TOML) with unknowns: { between = [MIN, MAX] } or { one_of = [...] }.")],
    out: Annotated[Path, typer.Option(help="Calibration folder; the same command with the same --out goes on after an interruption.")],
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="Override a key of the spec (repeatable).")] = None,
    observe: Annotated[Optional[list[str]], typer.Option(help="An observable to match (repeatable): throughput, loss_episodes, cwnd_at_loss, rtt, retransmits, utilisation (default: every one the measured run has data for).")] = None,
    weight: Annotated[Optional[list[str]], typer.Option(help="NAME=W: an observable's weight in the score (repeatable; default 1 each), e.g. throughput=3.")] = None,
    budget: Annotated[Optional[int], typer.Option(min=1, max=100_000, help="Candidates to score in all (default: 20 + 20 per unknown).")] = None,
    seeds: Annotated[Optional[int], typer.Option(min=1, max=100, help="Seeds per candidate, averaged (default: 2 where the path has random loss, known or unknown; else 1).")] = None,
    jobs: Annotated[Optional[int], typer.Option("--jobs", "-j", min=1, help="Runs at a time (default: one per core).")] = None,
    executor: Annotated[str, typer.Option(help="local (processes on this machine) or ray (a Ray cluster).")] = "local",
    address: Annotated[Optional[str], typer.Option(help="Ray cluster address (host:port); default: start a local Ray instance.")] = None,
    report: Annotated[bool, typer.Option(help="Write calibration.html and the twin's report.")] = True,
) -> None:
    """Find the values of a spec's unknowns for which the simulator reproduces a measured run; write
    calibrated.toml (runs as it is), calibration.json and calibration.html into --out."""
    from .. import calibrate as cal  # loaded on use: optuna, numpy, the executors
    from ..sweeps import EXECUTORS
    from ..sweeps.ray_executor import RayUnavailable

    if executor not in EXECUTORS:
        _fail(f"--executor: {executor!r} is not an executor; allowed: {', '.join(EXECUTORS)}")
    if not (measured / "summary.json").is_file():
        _fail(f"{measured}: not a results folder (no summary.json): give a run of any backend or of `tcplab import`")
    weights = _weights(weight or [])
    try:
        data, source = api.spec_data(spec, set_)
        found = cal.find(data, source)
        if found:
            cal.check_ends(data, source, found)
    except SpecError as e:
        _fail(str(e))
    _check_target(out, False, "calibrate", inputs=(measured,), resume=True, lock=False)
    prog = Progress(TextColumn("{task.description}", style="bold", markup=False), BarColumn(),
                    TextColumn("{task.completed}/{task.total}"), TextColumn("{task.fields[best]}", markup=False),
                    TimeElapsedColumn(), TimeRemainingColumn(), console=err_console, transient=True)
    try:
        with prog:
            task = prog.add_task("calibrate", total=budget or cal.default_budget(len(found)), best="")

            def step(done: int, total: int, best: float | None) -> None:
                prog.update(task, completed=done, total=total, best="" if best is None else f"best score {best:.4f}")

            done = cal.calibrate(measured, data, out, source=source, observe=observe, weights=weights, budget=budget, jobs=jobs or os.cpu_count() or 1,
                                 seeds=seeds, executor=executor, address=address, report=report, progress=step)
    except SpecError as e:
        _fail(str(e))
    except (RuntimeError, RayUnavailable) as e:  # no candidate could run; workers kept dying; no Ray cluster
        _fail(f"calibrate: {e}")
    except KeyboardInterrupt:
        _fail(f"interrupted: the scored candidates are kept in {out}; run the same command again to go on", INTERRUPTED)
    _print(done)


def _weights(given: list[str]) -> dict[str, float]:
    """--weight NAME=W, each W a number from 0 to 1000 (read by numbers.py), NAME an observable."""
    from ..calibrate.observables import OBSERVABLES
    from ..spec.numbers import NumberError, real

    out = {}
    for g in given:
        name, eq, w = g.partition("=")
        if not eq or name not in OBSERVABLES:
            _fail(f"--weight {g}: give NAME=W with NAME one of {', '.join(OBSERVABLES)}, e.g. throughput=3")
        try:
            out[name] = real(w, f"--weight {name}", 0.0, 1000.0)
        except NumberError as e:
            _fail(str(e))
    return out


def _print(done) -> None:
    r = done.result
    out_console.print(f"{r['evaluations']} candidates scored ({r['runs']} runs), best score {r['best_score']}")
    for u in r["unknowns"]:
        spread = f", spread {u['spread']:.2f} of its range" if "spread" in u else ""
        out_console.print(f"  {u['key']} = {u['value']}  ({u['verdict']}{spread})")
    for o in r["observables"]:
        out_console.print(f"  {o['observable']}: measured {o['measured']}, twin {o['twin']}, error {o['error']:.3f}")
    out_console.print(f"calibrated: {done.calibrated}")
    out_console.print(f"results: {done.path}")
    if (done.path / "calibration.html").is_file():
        out_console.print(f"report:  {done.path / 'calibration.html'}")

"""The commands that run experiments: run, peers, sweep."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from .. import api, options
from ..backends import Backend, peer_backends
from ..report.text import peers_table
from ..spec import SpecError, resolve
from .common import (INTERRUPTED, _backend, _backend_failed, _check_backend, _check_target, _command, _fail, _option,
                     _progress, _warn, err_console, out_console)
from .printing import _print_finished


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
    from ..runner import default_out  # loaded on use: the report and pyarrow, after the arguments are checked

    _option(options.iterations, iterations)
    try:
        data, source = api.spec_data(spec, set_)
        if "sweep" in data:
            raise SpecError(source, "sweep", f"this spec is a parameter sweep: run it with `tcplab sweep {spec}`")
        resolved = resolve(data, source, seed=seed, duration=duration)
    except SpecError as e:
        _fail(str(e))
    _warn(list(resolved.warnings))
    be = _backend(backend, testbed)
    _check_backend(be, [resolved])
    target = out or default_out(resolved.name)
    _check_target(target, force)
    try:
        path = _run_with_progress(resolved, target, force, report, be, iterations)
    except be.errors as e:
        _backend_failed(be, e)
    except KeyboardInterrupt:
        _fail("interrupted; nothing was kept", INTERRUPTED)
    _print_finished(path, iterations, intervals, report)


def _run_with_progress(resolved, target: Path, force: bool, report: bool, backend: Backend, iterations: int) -> Path:
    """tcplab.run under a progress bar; the results folder."""
    with _progress() as prog:
        task = prog.add_task(resolved.name, total=1000, sim="0.0s")

        def step(i: int, now: int, stop: int) -> None:
            desc = resolved.name if iterations == 1 else f"{resolved.name} [{i + 1}/{iterations}]"
            prog.update(task, completed=1000 * (i + now / max(stop, 1)) / iterations, description=desc, sim=f"{now / 1e9:.1f}s")

        done = api.run(resolved, out=target, force=force, report=report, backend=backend, iterations=iterations,
                       progress=step, command=_command())
    return done.path if iterations == 1 else done[0].path.parent


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
    from ..runner import default_out  # loaded on use: the report and pyarrow, after the arguments are checked

    _option(options.iterations, iterations), _option(options.seed, seed)
    try:
        plan = api.plan_peers(spec, set=set_, seed=seed, duration=duration, iterations=iterations)
    except SpecError as e:
        _fail(str(e))
    _warn(plan.warnings)
    _option(options.choice, backend, peer_backends(), "--backend", "a backend for peers")
    be = _backend(backend, testbed)
    _check_backend(be, list(plan.experiments.values()))
    target = out or default_out(f"{plan.name}-peers")
    _check_target(target, force)
    total = len(plan.pairs) * iterations
    with _progress() as prog:
        task = prog.add_task(plan.name, total=1000, sim="0.0s")

        def step(k: int, now: int, stop: int) -> None:
            st, cc = plan.pairs[k // iterations]
            prog.update(task, completed=1000 * (k + now / max(stop, 1)) / total,
                        description=f"{plan.name} {st}/{cc} [{k + 1}/{total}]", sim=f"{now / 1e9:.1f}s")

        try:
            done = api.peers(plan, out=target, force=force, report=report, progress=step, command=_command(),
                             backend=be)
        except be.errors as e:
            _backend_failed(be, e)
    out_console.print(peers_table(done.rows, f"{plan.name}: peer compare"))
    out_console.print(f"results: {done.path}")
    if report:
        out_console.print(f"report:  {done.path / 'peers.html'}")


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
    from .. import sweeps as sweepmod  # loaded on use: executors, runner, pyarrow

    be = _backend(backend, testbed)
    if executor not in sweepmod.EXECUTORS:
        _fail(f"--executor: {executor!r} is not an executor; allowed: {', '.join(sweepmod.EXECUTORS)}")
    if mode is not None and mode not in ("product", "zip"):
        _fail(f"--mode: {mode!r} is not a sweep mode; allowed: product, zip")
    jobs = jobs or os.cpu_count() or 1
    if not be.parallel:
        if jobs != 1 or executor != "local":
            _fail(f"--backend {backend} runs one run at a time (one machine, one lab): use --jobs 1 and the local executor")
    try:
        data, source = api.spec_data(spec, set_)
        pl = sweepmod.plan(data, source, backend=be, duration=duration, iterations=iterations, axes=axis,
                           mode=mode, out=out)
    except SpecError as e:
        _fail(str(e))
    _warn([w for p in pl.points for w in p.resolved.warnings])
    _check_backend(be, [pl.points[0].resolved])
    _check_target(pl.out, False, "sweep", resume=True, lock=False)  # the sweep locks its folder itself
    out_console.print(f"sweep: {len(pl.keys)} runs ({len(pl.parts)} part(s)) in {pl.out}")
    outcome = _sweep_with_progress(pl, jobs, executor, address, report)
    _print_sweep(pl, outcome)


def _sweep_with_progress(pl, jobs: int, executor: str, address: Optional[str], report: bool):
    """sweeps.execute under a progress bar of runs done and failed, SIGTERM as Ctrl-C; its outcome."""
    from .. import sweeps as sweepmod  # loaded on use: executors, runner, pyarrow
    from ..sweeps.ray_executor import RayUnavailable

    command = _command()

    def on_term(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, on_term)
    prog = Progress(TextColumn("{task.description}", style="bold", markup=False), BarColumn(),
                    TextColumn("{task.completed}/{task.total}"),
                    TextColumn("{task.fields[failed]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                    console=err_console, transient=True)
    try:
        with prog:
            task = prog.add_task(pl.name, total=len(pl.keys), failed="")

            def step(o: sweepmod.Outcome) -> None:
                prog.update(task, completed=o.skipped + o.done + len(o.failed),
                            failed=f"[red]{len(o.failed)} failed[/]" if o.failed else "")

            try:
                return sweepmod.execute(pl, jobs=jobs, executor=executor, address=address, report=report,
                                        command=command, progress=step)
            except sweepmod.SweepBusy as e:
                _fail(str(e))
            except RayUnavailable as e:
                _fail(str(e))
            except RuntimeError as e:
                _fail(f"sweep: {e}")
    finally:
        signal.signal(signal.SIGTERM, old)


def _print_sweep(pl, outcome) -> None:
    """What `tcplab sweep` prints at the end; exit 130 when interrupted, 1 when a run failed."""
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

"""Runs one experiment end to end: backend -> records -> store -> analysis -> report, into a
results folder that appears only when complete."""

from __future__ import annotations

import datetime as _dt
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable


from .version import __version__
from .analysis.peers import compare
from .analysis.summary import summarize
from .backends import Backend, default as default_backend
from .model import Experiment
from .report import html as report_html
from .report.ministat import iterations_report
from .results import finish_run
from .spec.sweep import run_key
from .store import RunDir, write_json, write_toml

Progress = Callable[[int, int], None]


def git_revision() -> str:
    """The source tree's git revision, or 'unknown' outside a checkout."""
    if os.environ.get("TCPLAB_GIT_REVISION"):
        return os.environ["TCPLAB_GIT_REVISION"]
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    if out.returncode != 0:
        return "unknown"
    return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def _into(directory: Path, exp: Experiment, progress: Progress | None, report: bool, command: str,
          backend: Backend, labels: dict[str, Any] | None = None) -> dict[str, Any]:
    """One run into `directory` on `backend`. `labels`: its place in a sweep, for the catalog."""
    wall0 = time.monotonic()
    write_toml(directory / "spec.toml", exp.spec)
    totals = backend.run(exp, directory, progress)
    summary = summarize(exp, totals, directory)
    meta = {
        "tcplab_version": __version__,
        "git_revision": git_revision(),
        "seed": exp.seed,
        "backend": backend.name,
        **backend.meta(),
        "source": exp.source,
        "description": exp.spec.get("description", ""),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "python": sys.version.split()[0],
    }
    if labels:
        meta["sweep"] = labels
    if "host" in totals.get("emulation", {}):  # a kernel run: its kernel, qdiscs, congestion controls
        meta["kernel"] = totals["emulation"]["host"]
    return finish_run(directory, summary, meta, key=run_key(exp, backend.name), labels=labels, cpu=totals.get("cpu"),
                      flows=[{"name": f.name, "start_ns": f.start_ns} for f in exp.flows], report=report,
                      wall0_s=wall0)


def execute(exp: Experiment, out: Path, *, force: bool = False, progress: Progress | None = None,
            report: bool = True, command: str = "", backend: Backend | None = None,
            labels: dict[str, Any] | None = None) -> tuple[Path, dict[str, Any]]:
    """Run into `out`, atomically, on `backend` (default: the simulator). Returns (final folder,
    summary)."""
    rd = RunDir(out, force=force)
    try:
        summary = _into(rd.tmp, exp, progress, report, command, backend or default_backend(), labels)
        return rd.commit(), summary
    except BaseException:
        rd.abort()
        raise


def execute_iterations(resolve_seed: Callable[[int], Experiment], seeds: list[int], out: Path, *, force: bool = False,
                       progress: Callable[[int, int, int], None] | None = None, report: bool = True,
                       command: str = "", backend: Backend | None = None) -> tuple[Path, list[dict[str, Any]]]:
    """Run one iteration per seed into out/iter-NNN, then write out/iterations.json."""
    backend = backend or default_backend()
    rd = RunDir(out, force=force)
    try:
        summaries = []
        for i, seed in enumerate(seeds):
            sub = rd.tmp / f"iter-{i + 1:03d}"
            sub.mkdir()
            step = (lambda now, stop, i=i: progress(i, now, stop)) if progress else None
            summaries.append(_into(sub, resolve_seed(seed), step, report, command, backend))
        write_json(rd.tmp / "iterations.json", {"seeds": seeds, "runs": [f"iter-{i + 1:03d}" for i in range(len(seeds))]})
        stats_text = iterations_report(summaries)
        (rd.tmp / "stats.txt").write_text(stats_text)
        if report:
            report_html.write_iterations(rd.tmp, summaries[0]["name"], summaries,
                                         [f"iter-{i + 1:03d}" for i in range(len(seeds))], stats_text)
        write_toml(rd.tmp / "spec.toml", resolve_seed(seeds[0]).spec | {"seed": seeds[0]})
        return rd.commit(), summaries
    except BaseException:
        rd.abort()
        raise


def execute_peers(resolve_pair: Callable[[str, str, int], Experiment], pairs: list[tuple[str, str]], out: Path, *,
                  force: bool = False, progress: Callable[[int, int, int], None] | None = None, report: bool = True,
                  command: str = "", iterations: int = 1,
                  backend: Backend | None = None) -> tuple[Path, list[dict[str, Any]]]:
    """Run every (stack, cc) pair into out/<stack>-<cc> (with iterations > 1, one folder per seed
    under it, out/<stack>-<cc>/iter-NNN; `resolve_pair(stack, cc, i)` gives iteration i's spec),
    then write out/peers.json and, with `report`, out/peers.html (the peer-compare table linking
    each run's report)."""
    backend = backend or default_backend()
    rd = RunDir(out, force=force)
    try:
        runs, links = [], []
        for i, (stack, cc) in enumerate(pairs):
            sub = rd.tmp / f"{stack}-{cc}"
            sub.mkdir()
            summaries = []
            for it in range(iterations):
                step = (lambda now, stop, k=i * iterations + it: progress(k, now, stop)) if progress else None
                where = sub if iterations == 1 else sub / f"iter-{it + 1:03d}"
                where.mkdir(exist_ok=True)
                summaries.append(_into(where, resolve_pair(stack, cc, it), step, report, command, backend))
            runs.append((stack, cc, summaries))
            links.append(f"{stack}-{cc}" + ("" if iterations == 1 else "/iter-001"))
        rows = compare(runs)
        name = runs[0][2][0]["name"]
        write_json(rd.tmp / "peers.json", {"name": name, "runs": [f"{st}-{cc}" for st, cc in pairs], "rows": rows,
                                           "iterations": iterations, "command": command})
        if report:
            report_html.write_peers(rd.tmp, name, rows, links)
        return rd.commit(), rows
    except BaseException:
        rd.abort()
        raise


def default_out(name: str) -> Path:
    """results/<name>-<UTC timestamp>, the convention of flent's data files."""
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return Path("results") / f"{name}-{stamp}"



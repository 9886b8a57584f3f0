"""Runs one resolved spec end to end: backend -> records -> store -> analysis -> report, into a
results folder that appears only when complete."""

from __future__ import annotations

import datetime as _dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable


from . import __version__
from .analysis.summary import cpu_cost, summarize
from .backends import sim as sim_backend
from .catalog import write_summary
from .report import html as report_html
from .spec import Resolved
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


BACKENDS = ("sim", "netns", "remote")


def _backend_run(backend: str, testbed: str | None = None):
    if backend == "netns":
        from .backends import netns

        return netns.run
    if backend == "remote":
        import functools

        from .backends import remote

        return functools.partial(remote.run, testbed=testbed)
    return sim_backend.run


def _into(directory: Path, resolved: Resolved, progress: Progress | None, report: bool, command: str,
          backend: str = "sim", labels: dict[str, Any] | None = None, testbed: str | None = None) -> dict[str, Any]:
    """One run into `directory`. `labels`: its place in a sweep, for the catalog."""
    wall0 = time.monotonic()
    write_toml(directory / "spec.toml", resolved.spec)
    totals = _backend_run(backend, testbed)(resolved, directory, progress)
    summary = summarize(resolved, totals, directory)
    write_json(directory / "summary.json", summary)
    if totals.get("cpu"):
        write_json(directory / "cpu.json", cpu_cost(totals["cpu"], summary))
    write_summary(directory, summary, run_key(resolved, backend), labels)
    meta = {
        "tcplab_version": __version__,
        "git_revision": git_revision(),
        "seed": resolved.seed,
        "backend": backend,
        **({"testbed": str(testbed)} if testbed else {}),
        "source": resolved.source,
        "description": resolved.spec.get("description", ""),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "python": sys.version.split()[0],
    }
    if labels:
        meta["sweep"] = labels
    if "host" in totals.get("emulation", {}):  # a kernel run: its kernel, qdiscs, congestion controls
        meta["kernel"] = totals["emulation"]["host"]
    if report:
        make_report(directory, [{"name": f.name, "start_ns": f.start_ns} for f in resolved.flows], summary, meta)
    meta["wall_s"] = round(time.monotonic() - wall0, 3)
    write_json(directory / "meta.json", meta)
    return summary


def make_report(directory: Path, flows: list[dict[str, Any]], summary: dict[str, Any], meta: dict[str, Any]) -> Path:
    """report.html for a results folder: each table read once, decimated once (report.series)."""
    from .analysis.recovery import episode_list
    from .report import interactive
    from .report.panels import PageModel, RunTables, add_run

    tables = RunTables.read(directory, summary)
    mss = {f["flow"]: f["mss_bytes"] for f in summary["flows"]}
    eps = episode_list(tables.events, tables.sends if len(tables.sends) else None, mss)
    model = PageModel()
    add_run(model, tables, eps)
    intervals = tables.intervals.records()
    del tables  # the charts are built: the tables go before the page is
    spec_text = (directory / "spec.toml").read_text()
    cpu_path = directory / "cpu.json"
    cpu_html = report_html.cpu_section(json.loads(cpu_path.read_text())) if cpu_path.is_file() else ""
    return report_html.write(directory, summary, meta, spec_text, intervals, flows, interactive.section(model),
                             report_html.recovery_section(eps) + cpu_html)


def execute(resolved: Resolved, out: Path, *, force: bool = False, progress: Progress | None = None,
            report: bool = True, command: str = "", backend: str = "sim",
            labels: dict[str, Any] | None = None, testbed: str | None = None) -> tuple[Path, dict[str, Any]]:
    """Run into `out`, atomically, on `backend` (sim, netns, or remote with the LAB.toml
    `testbed`). Returns (final folder, summary)."""
    rd = RunDir(out, force=force)
    try:
        summary = _into(rd.tmp, resolved, progress, report, command, backend, labels, testbed)
        return rd.commit(), summary
    except BaseException:
        rd.abort()
        raise


def execute_iterations(resolve_seed: Callable[[int], Resolved], seeds: list[int], out: Path, *, force: bool = False,
                       progress: Callable[[int, int, int], None] | None = None, report: bool = True,
                       command: str = "", backend: str = "sim", testbed: str | None = None) -> tuple[Path, list[dict[str, Any]]]:
    """Run one iteration per seed into out/iter-NNN, then write out/iterations.json."""
    rd = RunDir(out, force=force)
    try:
        summaries = []
        for i, seed in enumerate(seeds):
            sub = rd.tmp / f"iter-{i + 1:03d}"
            sub.mkdir()
            step = (lambda now, stop, i=i: progress(i, now, stop)) if progress else None
            summaries.append(_into(sub, resolve_seed(seed), step, report, command, backend, testbed=testbed))
        write_json(rd.tmp / "iterations.json", {"seeds": seeds, "runs": [f"iter-{i + 1:03d}" for i in range(len(seeds))]})
        from .report.ministat import iterations_report

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


def execute_peers(resolve_pair: Callable[[str, str, int], Resolved], pairs: list[tuple[str, str]], out: Path, *,
                  force: bool = False, progress: Callable[[int, int, int], None] | None = None, report: bool = True,
                  command: str = "", iterations: int = 1, backend: str = "sim",
                  testbed: str | None = None) -> tuple[Path, list[dict[str, Any]]]:
    """Run every (stack, cc) pair into out/<stack>-<cc> (with iterations > 1, one folder per seed
    under it, out/<stack>-<cc>/iter-NNN; `resolve_pair(stack, cc, i)` gives iteration i's spec),
    then write out/peers.json and, with `report`, out/peers.html (the peer-compare table linking
    each run's report)."""
    from .analysis.peers import compare

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
                summaries.append(_into(where, resolve_pair(stack, cc, it), step, report, command, backend, testbed=testbed))
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



"""Sweeps: plan the runs of a [sweep], skip those already finished, run the rest on an executor
(local processes or Ray), land each run atomically, then write the sweep's index and report.

A sweep folder:
  sweep.json        the plan (parts, axes, every point with its run key) and each run's status;
                    "complete": true only when every run finished
  runs/<key>/       one results folder per run, as `tcplab run` writes it (catalogued)
  logs/<key>.log    per run: where it sits in the sweep, its outcome or its traceback
  sweep.html        the sweep report (metric vs parameter, tables vs the base point, links)

A run is finished exactly when runs/<key>/ exists: folders appear by rename when complete, so a
killed sweep leaves only hidden partial folders, which the next invocation removes and redoes.
"""

from __future__ import annotations

import copy
import fcntl
import hashlib
import io
import json
import os
import shutil
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..backends import Backend, default as default_backend
from ..outdir import check as check_out
from ..paths import name_problem
from ..spec import SpecError
from ..spec.sweep import Part, Point, parse_axis, parts as spec_parts, points as spec_points
from ..store import RunDir
from .local import run_local
from .ray_executor import run_ray

EXECUTORS = ("local", "ray")


@dataclass
class Plan:
    name: str
    source: str
    backend: Backend
    parts: list[Part]
    points: list[Point]
    out: Path

    @property
    def keys(self) -> list[str]:
        """Unique run keys in plan order (two points with the same resolved spec share a run)."""
        return list(dict.fromkeys(p.key for p in self.points))


@dataclass
class Outcome:
    total: int
    skipped: int  # finished before this invocation
    done: int = 0
    failed: dict[str, str] = field(default_factory=dict)  # key -> error
    interrupted: bool = False
    report: Path | None = None

    @property
    def complete(self) -> bool:
        return not self.failed and not self.interrupted and self.skipped + self.done == self.total


def plan(spec: dict[str, Any], source: str, *, backend: Backend | None = None, duration: str | None = None,
         iterations: int | None = None, axes: list[str] | None = None, mode: str | None = None,
         out: Path | None = None) -> Plan:
    """Resolve every run of the sweep, on `backend` (default: the simulator). `axes` (--axis
    KEY=[...]) replace the spec's [sweep] with one part; `mode` and `iterations` override the spec's."""
    backend = backend or default_backend()
    spec = copy.deepcopy(spec)
    if axes:
        table: dict[str, Any] = dict(parse_axis(a, source) for a in axes)
        old = spec.get("sweep") if isinstance(spec.get("sweep"), dict) else {}
        if "iterations" in old and not any(isinstance(v, dict) for v in old.values()):
            table["iterations"] = old["iterations"]
        spec["sweep"] = table
    if mode is not None:
        sw = spec.get("sweep")
        if isinstance(sw, dict):
            subs = [v for v in sw.values() if isinstance(v, dict)]
            for t in subs or [sw]:
                t["mode"] = mode
    sweep_parts = spec_parts(spec, source, iterations=iterations)
    pts = spec_points(spec, source, sweep_parts, backend=backend.name, duration=duration)
    name = pts[0].resolved.name
    if out is None:
        digest = hashlib.sha256("\n".join(sorted({p.key for p in pts})).encode()).hexdigest()[:8]
        out = Path("results") / f"{name}-sweep-{digest}"
    return Plan(name, source, backend, sweep_parts, pts, out)


class SweepBusy(Exception):
    pass


class _Lock:
    """One invocation per sweep folder at a time (flock on sweep/.lock, released on exit)."""

    def __init__(self, out: Path):
        out.mkdir(parents=True, exist_ok=True)
        self.fh = open(out / ".lock", "w")
        try:
            fcntl.flock(self.fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.fh.close()
            raise SweepBusy(f"{out}: another tcplab sweep is running in this folder") from None

    def release(self) -> None:
        self.fh.close()


def _atomic_text(path: Path, text: str) -> None:
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}"
    tmp.write_text(text)
    tmp.rename(path)


def _labels(sweep_name: str, p: Point) -> dict[str, Any]:
    return {"sweep": sweep_name, "sweep_part": p.part, "point": p.index, "iteration": p.iteration, "params": p.params}


def _index(pl: Plan, status: dict[str, dict[str, Any]], complete: bool) -> dict[str, Any]:
    return {
        "name": pl.name, "source": pl.source, "backend": pl.backend.name, "complete": complete,
        "parts": [{"name": pt.name, "mode": pt.mode, "iterations": pt.iterations,
                   "axes": [{"key": k, "values": v} for k, v in pt.axes]} for pt in pl.parts],
        "points": [{"part": p.part, "point": p.index, "iteration": p.iteration, "params": p.params, "seed": p.resolved.seed,
                    "run": f"runs/{p.key}"} | status.get(p.key, {"status": "pending"}) for p in pl.points],
    }


def _cost_estimate(resolved: Any) -> float:
    """A run's simulation work, roughly: packets the bottleneck can carry in the simulated time."""
    return resolved.bottleneck.rate_bps * resolved.stop_ns


def _land(res: dict[str, Any], runs: Path) -> None:
    """A run that came back as an archive (Ray) into runs/<key>, atomically. Members are
    unpacked with tarfile's "data" filter: an absolute path, '..', a link out of the folder or a
    device file is refused (tarfile.FilterError), so nothing lands outside runs/<key>."""
    if name_problem(res["key"]) is not None:
        raise ValueError(f"a task returned the run key {res['key']!r}, which cannot name a folder")
    rd = RunDir(runs / res["key"])
    try:
        with tarfile.open(fileobj=io.BytesIO(res["archive"]), mode="r:gz") as tar:
            tar.extractall(rd.tmp, filter="data")
        rd.commit()
    except BaseException:
        rd.abort()
        raise


def execute(pl: Plan, *, jobs: int = 1, executor: str = "local", address: str | None = None, report: bool = True,
            command: str = "", progress: Callable[[Outcome], None] | None = None) -> Outcome:
    """Run what is not finished yet. Ctrl-C / SIGTERM: workers stop, partial runs are removed,
    and the outcome says interrupted; the next invocation goes on from there."""
    if executor not in EXECUTORS:
        raise SpecError("--executor", "", f"{executor!r} is not an executor", EXECUTORS)
    check_out(pl.out, force=False, kind="sweep", resume=True)  # a sweep folder goes on; anything else is refused
    lock = _Lock(pl.out)
    try:
        runs, logs = pl.out / "runs", pl.out / "logs"
        runs.mkdir(exist_ok=True)
        logs.mkdir(exist_ok=True)
        for stale in list(runs.glob(".*.partial-*")) + list(runs.glob(".*.old-*")):
            shutil.rmtree(stale, ignore_errors=True)  # a killed invocation's; we hold the lock
        keys = pl.keys
        finished = {k for k in keys if (runs / k).is_dir()}
        status = {k: {"status": "done"} for k in finished}
        _atomic_text(pl.out / "sweep.json", json.dumps(_index(pl, status, False), indent=2, sort_keys=True) + "\n")
        first = {}
        for p in pl.points:
            first.setdefault(p.key, p)
        for k in finished:
            if not (logs / f"{k}.log").is_file():
                # Killed between a run's rename and its log: the run is complete, say so.
                p = first[k]
                _atomic_text(logs / f"{k}.log", f"run {k}: part {p.part}, point {p.index}, iteration {p.iteration}, "
                             f"seed {p.resolved.seed}\nparams: {json.dumps(p.params, sort_keys=True)}\n"
                             "status: done (by an earlier invocation, killed before it wrote this log)\n")
        tasks = [{"key": k, "resolved": first[k].resolved, "backend": pl.backend,
                  "labels": _labels(pl.name, first[k]),
                  "report": report, "command": command} for k in keys if k not in finished]
        # Longest first (LPT scheduling), so a long run does not start last and leave a core idle
        # at the end; results do not depend on the order.
        tasks.sort(key=lambda t: -_cost_estimate(t["resolved"]))
        outcome = Outcome(total=len(keys), skipped=len(finished))
        if progress:
            progress(outcome)

        def on_result(res: dict[str, Any]) -> None:
            key = res["key"]
            if res["status"] == "done" and res.get("archive") is not None:
                _land(res, runs)
            p = first[key]
            log = [f"run {key}: part {p.part}, point {p.index}, iteration {p.iteration}, seed {p.resolved.seed}",
                   "params: " + json.dumps(p.params, sort_keys=True),
                   f"status: {res['status']}" + (f" in {res['compute_s']} s" if res.get("compute_s") is not None else "")]
            if res["status"] == "done":
                outcome.done += 1
                status[key] = {"status": "done"}
                log.append(res.get("line", ""))
            else:
                outcome.failed[key] = res["error"]
                status[key] = {"status": "failed", "error": res["error"]}
                log += [f"error: {res['error']}", res.get("traceback") or ""]
            _atomic_text(logs / f"{key}.log", "\n".join(log).rstrip() + "\n")
            if progress:
                progress(outcome)

        try:
            if executor == "ray":
                run_ray(tasks, address, jobs, on_result)
            else:
                run_local(tasks, str(runs), jobs, on_result)
        except KeyboardInterrupt:
            outcome.interrupted = True
        _atomic_text(pl.out / "sweep.json", json.dumps(_index(pl, status, outcome.complete), indent=2, sort_keys=True) + "\n")
        if report and not outcome.interrupted and outcome.done + outcome.skipped:
            from ..report.sweep import write as write_report  # loaded on use: workers import this package, without matplotlib

            outcome.report = write_report(pl.out)
        return outcome
    finally:
        lock.release()


__all__ = ["EXECUTORS", "Outcome", "Plan", "SweepBusy", "execute", "plan"]

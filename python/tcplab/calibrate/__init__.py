"""`tcplab calibrate MEASURED SPEC --out DIR`: find the values of a spec's unknowns (spec/unknowns.py)
for which the simulator reproduces a measured run (any backend's results folder, or an import of a
testbed's logs), then write the twin: calibrated.toml, calibration.json, calibration.html and the
twin's run (docs/calibrate.md)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..analysis import flowmap
from ..api import spec_data
from ..outdir import OutDirError, guard
from ..runs import Run
from ..spec import SpecError, resolve
from ..spec.unknowns import Unknown, ends, find, fix
from . import observables as obs
from .output import SPREAD_MAX, atomic, best_trials, observable_rows, unknown_row, write_calibrated
from .search import Evaluator, Target, done_count, requeue_unscored, study, suggest

__all__ = ["Calibration", "calibrate", "check_ends", "find", "target"]

#: What a calibration folder's calibrate.json holds; a second invocation must ask the same to go on.
REQUEST_KEYS = ("measured", "spec", "observables", "weights", "seeds")


@dataclass
class Calibration:
    """A finished calibration: its folder and calibration.json as a dict."""

    path: Path
    result: dict[str, Any]

    @property
    def calibrated(self) -> Path:
        return self.path / "calibrated.toml"


def batch_size(jobs: int) -> int:
    """Candidates asked for at a time: four per job, at least 8. Each batch starts the executor's
    workers anew (about 1 s each here, importing tcplab), and a candidate of a small spec runs in
    0.1 s: fewer, larger batches; the sampler's constant liar keeps a batch's candidates apart."""
    return max(8, 4 * jobs)


def default_budget(unknowns: int) -> int:
    """Candidates scored by default: 20, and 20 per unknown (bench/calibrate_recovery.py: one or two
    unknowns are found within their tolerance in 30 to 60)."""
    return 20 + 20 * unknowns


def default_seeds(exp_links: tuple, found: list[Unknown]) -> int:
    """Seeds per candidate by default: 2 where the path drops at random (a loss that is unknown, or
    set above zero), whose runs differ by seed far more than the access links' 1 us jitter makes
    them; else 1."""
    lossy = any(u.parts[-1] in ("loss", "reverse_loss") for u in found) or \
        any(d.loss > 0 for link in exp_links for d in (link.ab, link.ba))
    return 2 if lossy else 1


def check_ends(spec: dict[str, Any], source: str, found: list[Unknown]) -> None:
    """Every end of every range (each choice of every set) must be a value the key takes: the spec is
    resolved with each in turn (the others at their first end), so a bad one fails naming its key."""
    firsts = {u.key: ends(u)[0] for u in found}
    for u in found:
        for v in ends(u):
            resolve(fix(spec, firsts | {u.key: v}, found), source)


def target(measured: Path, spec: dict[str, Any], source: str, found: list[Unknown], observe: list[str] | None,
           weights: dict[str, float] | None) -> Target:
    """The measured run's features on the observables chosen (default: all it has data for), its
    flows paired with the spec's (by name, else by server port or order: analysis/flowmap.py)."""
    info = Run(measured).info
    exp = resolve(fix(spec, {u.key: ends(u)[0] for u in found}, found), source)
    twin = {"flows": [{"flow": f.name, "from": f.host, "to": f.to, "start_s": f.start_ns / 1e9} for f in exp.flows]}
    pairs, _ = flowmap.match(info, twin)
    names = [f["flow"] for f in info["flows"]]
    if len(pairs) != len(names):
        raise SpecError(source, "senders", f"the measured run's flows ({', '.join(names)}) cannot all be paired with "
                        f"this spec's ({', '.join(f.name for f in exp.flows)}): give the spec one sender per measured flow")
    feats = obs.features(measured, names)
    chosen = list(observe) if observe else [n for n in obs.OBSERVABLES if n in feats]
    for n in chosen:
        if n not in obs.OBSERVABLES:
            raise SpecError("--observe", "", f"{n!r} is not an observable", obs.OBSERVABLES)
        if n not in feats:
            raise SpecError("--observe", "", f"{n!r}: the measured run {measured} has no data for it "
                            f"(it has: {', '.join(x for x in obs.OBSERVABLES if x in feats) or 'none'})")
    if not chosen:
        raise SpecError(str(measured), "", "has no data any observable is read from (intervals, events, flows)")
    return Target(feats, chosen, dict(weights or {}), [pairs[n] for n in names], pairs)


def _request(out: Path, request: dict[str, Any]) -> None:
    """Write the request, or check that a calibration being continued asked the same."""
    path = out / "calibrate.json"
    if path.is_file():
        old = json.loads(path.read_text())
        if {k: old.get(k) for k in REQUEST_KEYS} != {k: request[k] for k in REQUEST_KEYS}:
            raise OutDirError(f"{out} holds a calibration of another measured run, spec, observables or seeds: "
                              "choose another --out")
        return
    atomic(path, lambda tmp: tmp.write_text(json.dumps(request, indent=2, sort_keys=True) + "\n"))


def calibrate(measured: str | Path, spec: str | Path | dict[str, Any], out: str | Path, *, source: str | None = None,
              observe: list[str] | None = None, weights: dict[str, float] | None = None, budget: int | None = None,
              jobs: int = 1, seeds: int | None = None, executor: str = "local", address: str | None = None,
              report: bool = True, progress: Callable[[int, int, float | None], None] | None = None) -> Calibration:
    """Search the unknowns of `spec` until `budget` candidates are scored (those of an interrupted
    invocation into the same `out` count; default: default_budget), then write the outputs. `spec`:
    a file, a preset or a dict (named `source` in messages)."""
    measured = Path(measured)
    if not isinstance(spec, dict):
        spec, source = spec_data(spec)
    source = source or "<dict>"
    found = find(spec, source)
    if not found:
        raise SpecError(source, "", "has no unknowns to calibrate: give a value as { between = [MIN, MAX] } "
                        "or { one_of = [...] } (docs/calibrate.md)")
    check_ends(spec, source, found)
    budget = budget or default_budget(len(found))
    seeds = seeds or default_seeds(resolve(fix(spec, {u.key: ends(u)[0] for u in found}, found), source).links, found)
    tgt = target(measured, spec, source, found, observe, weights)
    real, claim = guard(out, force=False, kind="calibrate", inputs=[measured], resume=True)
    try:
        real.mkdir(parents=True, exist_ok=True)
        _request(real, {"measured": str(measured.resolve()), "spec": spec, "source": source,
                        "observables": tgt.chosen, "weights": tgt.weights, "seeds": seeds})
        ev = Evaluator(spec, source, found, tgt, real, seeds, jobs, executor, address)
        st = _search(ev, budget, jobs, progress)
        return _finish(ev, st, measured, report)
    finally:
        claim.release()


def _search(ev: Evaluator, budget: int, jobs: int, progress) -> Any:
    """Ask, run and tell in batches until `budget` candidates are scored."""
    import optuna  # loaded on use

    st = study(ev.out, seed=1)
    requeue_unscored(st)

    def show() -> None:
        if progress:
            done = [t for t in st.get_trials(deepcopy=False) if t.state == optuna.trial.TrialState.COMPLETE]
            progress(len(done), budget, min((t.value for t in done), default=None))

    show()
    while (left := budget - done_count(st)) > 0:
        trials = [st.ask() for _ in range(min(left, batch_size(jobs)))]
        batch = []
        for t in trials:
            values = suggest(t, ev.found)
            t.set_user_attr("values", values)
            batch.append(ev.candidate_points(t.number, values))
        outcome = ev.run(batch, None)
        if outcome.interrupted:
            raise KeyboardInterrupt
        for t, pts in zip(trials, batch):
            feats = ev.features(pts)
            if feats is None:
                st.tell(t, state=optuna.trial.TrialState.FAIL)
                continue
            loss, errs = ev.target.score(feats)
            t.set_user_attr("errors", errs)
            t.set_user_attr("runs", [p.key for p in pts])
            st.tell(t, loss if math.isfinite(loss) else 1e9)
        show()
    return st


def _finish(ev: Evaluator, st: Any, measured: Path, report: bool) -> Calibration:
    """calibrated.toml, the twin's run (DIR/twin), calibration.json and calibration.html."""
    import optuna  # loaded on use

    from ..runner import execute
    from ..report import calibration as page

    scored = [t for t in st.get_trials(deepcopy=False) if t.state == optuna.trial.TrialState.COMPLETE]
    if not scored:
        raise RuntimeError("no candidate could be run; see the logs in " + str(ev.out / "evals" / "logs"))
    near = best_trials(scored)
    best = near[0]
    calibrated = fix(ev.spec, best.user_attrs["values"], ev.found)
    write_calibrated(ev.out / "calibrated.toml", calibrated)
    twin_path, _ = execute(resolve(calibrated, str(ev.out / "calibrated.toml")), ev.out / "twin", force=True,
                           report=report, command="tcplab calibrate")
    twin = obs.features(twin_path, ev.target.flows)
    _, errs = ev.target.score(twin)
    failed = sum(1 for t in st.get_trials(deepcopy=False) if t.state == optuna.trial.TrialState.FAIL)
    result = {
        "measured": str(measured), "spec": ev.source, "seeds": ev.seeds, "evaluations": len(scored),
        "runs": len(scored) * ev.seeds, "failed_candidates": failed, "best_score": round(best.value, 6),
        "unknowns": [unknown_row(u, best, near, [t.user_attrs["values"] for t in near]) for u in ev.found],
        "observables": observable_rows(ev.target, twin, errs),
        "flows": ev.target.pairs, "twin": "twin", "calibrated": "calibrated.toml",
        "identifiability": {"best_candidates": len(near), "spread_max": SPREAD_MAX,
                            "rule": "spread = share of the range the best candidates cover; identifiable if <= spread_max"},
    }
    atomic(ev.out / "calibration.json", lambda tmp: tmp.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n"))
    if report:
        page.write(ev.out, measured, twin_path, result)
    return Calibration(ev.out, result)

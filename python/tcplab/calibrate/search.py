"""The search of a calibration: optuna asks for candidates (values of the unknowns), a batch of
them runs on the simulator through the sweep executors (local processes or Ray; every seed of a
candidate is one run of the batch), each is scored against the measured run and told back.

optuna's study lives in DIR/optuna.journal (its journal storage: an append-only file), and each
candidate's runs in DIR/evals/ (a sweep folder, its runs keyed by their resolved spec), so a
killed calibration goes on where it stopped: the trials it had asked for and not scored are asked
again with the same values, and their finished runs are found, not run again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .. import sweeps
from ..backends import default as default_backend
from ..spec import resolve
from ..spec.sweep import Part, Point, run_key
from ..spec.unknowns import Unknown, fix
from . import observables as obs

STUDY = "calibrate"


@dataclass
class Target:
    """What candidates are scored against: the measured features, the observables chosen and
    their weights, the measured flows in order and the twin's flow for each."""

    measured: dict[str, np.ndarray]
    chosen: list[str]
    weights: dict[str, float]
    flows: list[str]              # the twin's flow names, in the measured run's order
    pairs: dict[str, str] = field(default_factory=dict)

    def score(self, twin: dict[str, np.ndarray]) -> tuple[float, dict[str, float]]:
        errs = {n: obs.error(n, self.measured[n], twin[n]) if n in twin else 1.0 for n in self.chosen}
        return sum(self.weights.get(n, 1.0) * e for n, e in errs.items()), errs


def study(out: Path, seed: int):
    """The optuna study of `out` (created, or loaded to go on)."""
    import optuna  # loaded on use: only calibrate needs it
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = JournalStorage(JournalFileBackend(str(out / "optuna.journal")))
    # TPE (Bergstra et al. 2011) with a joint model of the unknowns (multivariate): a loss pulls
    # buffer and loss rate the same way, and a product of one-dimensional models misses that.
    # constant_liar: candidates asked together in a batch spread out instead of repeating.
    st = optuna.create_study(study_name=STUDY, storage=storage, direction="minimize", load_if_exists=True)
    # The sampler's seed goes on with the trials so far: a resumed calibration whose sampler started
    # from `seed` again would draw its first random candidates again.
    st.sampler = optuna.samplers.TPESampler(seed=seed + len(st.trials), multivariate=True, constant_liar=True,
                                            n_startup_trials=10)
    return st


def suggest(trial: Any, found: list[Unknown]) -> dict[str, Any]:
    """The trial's value for every unknown, as spec values."""
    values = {}
    for u in found:
        if not u.is_range:
            values[u.key] = u.choices[trial.suggest_categorical(u.key, list(range(len(u.choices))))]
        elif u.kind in ("probability", "real"):
            values[u.key] = u.value(trial.suggest_float(u.key, u.lo, u.hi, log=u.log))
        else:
            values[u.key] = u.value(trial.suggest_int(u.key, math.ceil(u.lo), math.floor(u.hi), log=u.log))
    return values


def requeue_unscored(st: Any) -> int:
    """Trials a killed invocation asked for and never scored: failed, and asked again with the same
    values (their finished runs are found in evals/). How many."""
    import optuna  # loaded on use

    stale = [t for t in st.get_trials(deepcopy=False) if t.state == optuna.trial.TrialState.RUNNING]
    for t in stale:
        st.tell(t.number, state=optuna.trial.TrialState.FAIL)
        st.enqueue_trial(t.params, skip_if_exists=False)
    return len(stale)


def done_count(st: Any) -> int:
    import optuna  # loaded on use

    return sum(1 for t in st.get_trials(deepcopy=False) if t.state == optuna.trial.TrialState.COMPLETE)


@dataclass
class Evaluator:
    """Runs candidates' specs on the simulator through the sweep executors and scores them."""

    spec: dict[str, Any]
    source: str
    found: list[Unknown]
    target: Target
    out: Path
    seeds: int = 1
    jobs: int = 1
    executor: str = "local"
    address: str | None = None
    points: list[Point] = field(default_factory=list)

    def candidate_points(self, number: int, values: dict[str, Any]) -> list[Point]:
        """The runs of one candidate: the spec with its values, at seeds seed .. seed + seeds - 1."""
        spec = fix(self.spec, values, self.found)
        first = resolve(spec, f"{self.source} [candidate {number}]")
        runs = [first] + [resolve(spec, first.source, seed=first.seed + i) for i in range(1, self.seeds)]
        return [Point("calibrate", number, i + 1, values, r, run_key(r, "sim")) for i, r in enumerate(runs)]

    def run(self, batch: list[list[Point]], progress: Callable[[sweeps.Outcome], None] | None) -> sweeps.Outcome:
        """Every run of `batch` not finished yet (the sweep folder DIR/evals keeps them)."""
        for pts in batch:
            self.points += pts
        part = Part("calibrate", "product", self.seeds, [(u.key, []) for u in self.found])
        pl = sweeps.Plan("calibrate", self.source, default_backend(), [part], self.points, self.out / "evals")
        return sweeps.execute(pl, jobs=self.jobs, executor=self.executor, address=self.address, report=False,
                              command="tcplab calibrate", progress=progress)

    def features(self, pts: list[Point]) -> dict[str, np.ndarray] | None:
        """The candidate's features, averaged over its seeds; None if a run of it failed."""
        runs = self.out / "evals" / "runs"
        if not all((runs / p.key).is_dir() for p in pts):
            return None
        return obs.mean([obs.features(runs / p.key, self.target.flows) for p in pts])

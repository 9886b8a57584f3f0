"""What a calibration writes: calibration.json (each unknown's value, its spread over the best
candidates and whether the data identify it; each observable measured, twin and error; the
evaluations used) and calibrated.toml (the spec with every unknown fixed, which runs as it is).

Identifiability, as calibration.json states it: the best candidates are the best
max(NEAR_MIN, NEAR_SHARE of all) scored ones; an unknown's spread is the part of its range (on its
scale) those candidates cover. The sampler puts most candidates near what scores well, so a
narrow spread means the score rises when the unknown moves, and a wide one that candidates far
apart score about the same: the data do not tell them apart. Identifiable: spread <= SPREAD_MAX
(a set: every best candidate picks the same value).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ..spec.unknowns import Unknown
from ..store import write_toml
from . import observables as obs

NEAR_MIN = 5
NEAR_SHARE = 0.1
SPREAD_MAX = 0.2


def best_trials(trials: list[Any]) -> list[Any]:
    """The best candidates: the NEAR_MIN or NEAR_SHARE best scored trials, best first."""
    ranked = sorted(trials, key=lambda t: t.value)
    return ranked[:max(NEAR_MIN, int(NEAR_SHARE * len(ranked)))]


def unknown_row(u: Unknown, best: Any, near: list[Any], values: list[dict[str, Any]]) -> dict[str, Any]:
    """calibration.json's row for one unknown: value, range, spread over the best candidates,
    identifiable. `values`: the spec values of the near trials, as their user attributes hold them."""
    row: dict[str, Any] = {"key": u.key, "value": best.user_attrs["values"][u.key], "candidates": len(near)}
    if u.is_range:
        raw = [t.params[u.key] for t in near]
        spread = max(u.fraction(x) for x in raw) - min(u.fraction(x) for x in raw) if raw else 1.0
        row |= {"range": [u.value(u.lo), u.value(u.hi)], "scale": "log" if u.log else "linear",
                "best_candidates": [u.value(min(raw)), u.value(max(raw))], "spread": round(spread, 4),
                "identifiable": bool(len(near) >= NEAR_MIN and spread <= SPREAD_MAX)}
    else:
        picked = [v[u.key] for v in values]
        row |= {"one_of": list(u.choices), "best_candidates": sorted({repr(p) for p in picked}),
                "identifiable": bool(len(near) >= NEAR_MIN and len({repr(p) for p in picked}) == 1)}
    row["verdict"] = ("identified" if row["identifiable"] else
                      "NOT identified: the best candidates spread across "
                      f"{'its range' if u.is_range else 'its set'} and score about as well (the observables do "
                      "not tell them apart, or too few candidates: raise --budget)")
    return row


def observable_rows(target: Any, twin: dict[str, np.ndarray], errors: dict[str, float]) -> list[dict[str, Any]]:
    """calibration.json's row per observable: measured and twin (one number each), the error."""
    return [{"observable": n, "measured": _num(obs.summary_value(n, target.measured[n])),
             "twin": _num(obs.summary_value(n, twin[n])) if n in twin else None, "error": round(errors[n], 6),
             "weight": target.weights.get(n, 1.0)} for n in target.chosen]


def _num(x: float) -> float | None:
    return None if np.isnan(x) else round(float(x), 6)


def atomic(path: Path, write) -> None:
    """Write `path` through `write(tmp)` under a temporary name, then rename: never half-written."""
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}"
    write(tmp)
    tmp.rename(path)


def write_calibrated(path: Path, spec: dict[str, Any]) -> None:
    atomic(path, lambda tmp: write_toml(tmp, spec))

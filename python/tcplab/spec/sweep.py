"""Parameter sweeps: a spec's [sweep] table expanded into points (one spec per parameter
combination and iteration), each validated before anything runs.

    [sweep]                                   # one sweep ...
    mode = "product"                          # or "zip" (lists of equal length, taken in step)
    iterations = 3                            # seeds seed, seed+1, ... per parameter combination
    "topology.bottleneck.rate" = ["15Mbit", "20Mbit"]
    "senders.*.cc" = ["newreno", "cubic"]

    [sweep.rmem]                              # ... or several named parts, run one after another
    "senders.s1.rcvbuf" = ["12MB", "6MB"]     # (T7's sweeps A, B and C in one file)

Keys are dotted paths as for --set (`*` matches every sender). A run is identified by the hash of
its resolved spec (which holds its seed) and backend, so a re-run of a sweep finds the runs it
already finished whatever order the points come in.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import tomllib
from dataclasses import dataclass
from typing import Any

from ..model import Experiment
from . import keys
from .schema import SpecError, resolve, set_key

MODES = ("product", "zip")
OPTION_KEYS = ("mode", "iterations")


@dataclass
class Point:
    """One run of a sweep: which part, which parameter combination, which iteration."""

    part: str
    index: int  # parameter combination within the part, from 0
    iteration: int  # from 1
    params: dict[str, Any]  # sweep key -> value as written in the spec
    resolved: Experiment
    key: str  # run identity: hash of the resolved spec and backend


@dataclass
class Part:
    name: str
    mode: str
    iterations: int
    axes: list[tuple[str, list[Any]]]


def run_key(resolved: Experiment, backend: str) -> str:
    """A run's identity: the resolved spec (which includes the seed) and the backend."""
    blob = json.dumps({"spec": resolved.spec, "backend": backend}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _part(source: str, name: str, t: dict[str, Any], where: str, iterations: int | None) -> Part:
    axes = []
    for k, v in t.items():
        if k in OPTION_KEYS:
            continue
        if not isinstance(v, list) or not v:
            raise SpecError(source, f"{where}.{k}", f"must be a non-empty list of values, got {v!r}")
        axes.append((k, v))
    if not axes:
        raise SpecError(source, where, "has no axes: give lists, e.g. \"senders.*.cc\" = [\"newreno\", \"cubic\"]")
    mode = t.get("mode", "product")
    if mode not in MODES:
        raise SpecError(source, f"{where}.mode", f"{mode!r} is not a sweep mode", MODES)
    if mode == "zip" and len({len(v) for _, v in axes}) > 1:
        lengths = ", ".join(f"{k}: {len(v)}" for k, v in axes)
        raise SpecError(source, where, f"mode zip takes lists of equal length ({lengths})")
    its = t.get("iterations", 1) if iterations is None else iterations
    if isinstance(its, bool) or not isinstance(its, int) or not 1 <= its <= 10_000:
        raise SpecError(source, f"{where}.iterations", f"must be an integer from 1 to 10000, got {its!r}")
    return Part(name, mode, its, axes)


def parts(spec: dict[str, Any], source: str, *, iterations: int | None = None) -> list[Part]:
    """The parts of the spec's [sweep] table (`iterations` overrides theirs)."""
    t = spec.get("sweep")
    if not isinstance(t, dict) or not t:
        raise SpecError(source, "sweep", "this spec has no [sweep] table (or pass --axis KEY=[...])")
    subs = {k: v for k, v in t.items() if isinstance(v, dict)}
    if subs and len(subs) != len(t):
        raise SpecError(source, "sweep", "either axes (lists) or named parts ([sweep.NAME] tables), not both")
    if subs:
        return [_part(source, name, sub, f"sweep.{name}", iterations) for name, sub in subs.items()]
    return [_part(source, "main", t, "sweep", iterations)]


def combinations(part: Part) -> list[dict[str, Any]]:
    keys = [k for k, _ in part.axes]
    lists = [v for _, v in part.axes]
    rows = itertools.product(*lists) if part.mode == "product" else zip(*lists)
    return [dict(zip(keys, row)) for row in rows]


def points(spec: dict[str, Any], source: str, sweep_parts: list[Part], *, backend: str = "sim",
           duration: str | None = None) -> list[Point]:
    """Every run of the sweep, resolved (so a bad value fails here, naming its key, before any run
    starts). Iteration i of a combination runs with seed base + i - 1, as `tcplab run --iterations`."""
    base = copy.deepcopy(spec)
    base.pop("sweep", None)
    out = []
    for part in sweep_parts:
        for index, params in enumerate(combinations(part)):
            point_spec = copy.deepcopy(base)
            for k, v in params.items():
                set_key(point_spec, k, v, source)
            where = f"{source} [sweep{'' if part.name == 'main' else '.' + part.name} " \
                    + ", ".join(f"{k}={v}" for k, v in params.items()) + "]"
            first = resolve(point_spec, where, duration=duration)
            for it in range(1, part.iterations + 1):
                r = first if it == 1 else resolve(point_spec, where, seed=first.seed + it - 1, duration=duration)
                out.append(Point(part.name, index, it, params, r, run_key(r, backend)))
    return out


def parse_axis(arg: str, source: str) -> tuple[str, list[Any]]:
    """`--axis KEY=[v1, v2]` (a TOML list; KEY quoted as in TOML, keys.py)."""
    example = "'senders.*.cc=[\"newreno\", \"cubic\"]'"
    try:
        key, _, raw = keys.assignment(arg, "--axis", example)
        value = keys.value(raw)
    except keys.BadKey as e:
        raise SpecError(source, f"--axis {arg if len(arg) <= 80 else arg[:80] + '...'}", str(e)) from None
    if not isinstance(value, list) or not value:
        raise SpecError(source, arg, f"--axis takes KEY=[v1, v2, ...], e.g. {example}")
    return key, value

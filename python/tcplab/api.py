"""tcplab's Python API: run, peers and compare, the operations every CLI command is a thin layer
over (cli/ adds argument parsing, progress bars and printing, nothing else)."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

from . import options
from ._native import stack_options
from .analysis import flowmap
from .backends import NAMES, Backend, create, peer_backends
from .model import Experiment
from .paths import slug
from .runs import Run
from .spec import load_spec, resolve
from .spec.schema import SpecError, apply_set, check_shape, peers_matrix, split_stack

#: progress(i, now_ns, stop_ns): run i of several is at simulated (or wall) time now of stop.
Progress = Callable[[int, int, int], None]


def spec_data(spec: str | Path | dict[str, Any], assignments: list[str] | None = None) -> tuple[dict[str, Any], str]:
    """A spec (file path, preset name, or dict, copied) with `--set`-style assignments applied."""
    if isinstance(spec, dict):
        check_shape(spec, "<dict>")  # before the copy: nesting, nan, absurd integers (spec/shape.py)
        try:
            data, source = json.loads(json.dumps(spec)), "<dict>"
        except (TypeError, ValueError) as e:  # a value no spec holds (bytes, a set, an object)
            raise SpecError("<dict>", "", f"holds a value that is not TOML data: {e}") from None
    else:
        data, source = load_spec(str(spec))
    for s in assignments or []:
        apply_set(data, s, source)
    return data, source


def with_seed(exp: Experiment, seed: int) -> Experiment:
    """The same experiment under another seed (what resolving the spec with --seed gives)."""
    return dataclasses.replace(exp, seed=seed, spec=exp.spec | {"seed": seed})


def _backend(backend: str | Backend, testbed: str | Path | None) -> Backend:
    """A Backend as given, or the one registered under its name with its options."""
    return backend if isinstance(backend, Backend) else create(backend, testbed)


@contextlib.contextmanager
def output(out: str | Path | None, name: str):
    """The results folder: `out`, else `name` in a new temporary folder, which is removed again
    when the work fails (no empty tcplab-* folders left behind)."""
    if out is not None:
        yield Path(out)
        return
    parent = Path(tempfile.mkdtemp(prefix="tcplab-"))
    try:
        yield parent / name
    except BaseException:
        shutil.rmtree(parent, ignore_errors=True)
        raise


def run(spec: str | Path | dict[str, Any] | Experiment, *, set: list[str] | None = None, seed: int | None = None,
        duration: str | None = None, out: str | Path | None = None, report: bool = True, force: bool = False,
        backend: str | Backend = "sim", iterations: int = 1, progress: Progress | None = None,
        command: str = "tcplab.run()", testbed: str | Path | None = None):
    """Run a spec (file path, preset name, dict, or an Experiment from `tcplab.resolve`) on
    `backend` ("sim"; "netns": this machine's Linux TCP, as root; "remote": the machines of the
    LAB.toml `testbed`, over ssh; or a Backend). Returns its Run; with
    `iterations` > 1, one Run per seed (seed, seed + 1, ...), in a folder with their statistics.
    Without `out`, results go to a new temporary folder."""
    from .runner import execute, execute_iterations  # loaded on use: `import tcplab` stays free of pyarrow

    if not isinstance(backend, Backend):
        options.backend(backend, NAMES, "backend")
    options.iterations(iterations, "iterations")
    seed = options.seed(seed, "seed")
    if isinstance(spec, Experiment):
        if set or duration is not None:
            raise options.OptionError("set, duration: apply them to the spec; an Experiment is already resolved")
        exp = with_seed(spec, seed) if seed is not None else spec
    else:
        data, source = spec_data(spec, set)
        exp = resolve(data, source, seed=seed, duration=options.duration(duration, "duration"))
    be = _backend(backend, testbed)
    with output(out, exp.name) as target:
        if iterations == 1:
            step = (lambda now, stop: progress(0, now, stop)) if progress else None
            path, _ = execute(exp, target, force=force, progress=step, report=report, command=command, backend=be)
            return Run(path)
        seeds = [exp.seed + i for i in range(iterations)]
        path, _ = execute_iterations(lambda s: with_seed(exp, s), seeds, target, force=force, progress=progress,
                                     report=report, command=command, backend=be)
    return [Run(path / f"iter-{i + 1:03d}") for i in range(iterations)]


@dataclasses.dataclass(frozen=True)
class PeersPlan:
    """A peer compare, validated: every (stack, cc) pair's experiment for each iteration."""

    name: str
    pairs: list[tuple[str, str]]
    iterations: int
    experiments: dict[tuple[str, str, int], Experiment]

    @property
    def warnings(self) -> list[str]:
        return list(dict.fromkeys(w for e in self.experiments.values() for w in e.warnings))


def plan_peers(spec: str | Path | dict[str, Any], *, set: list[str] | None = None, seed: int | None = None,
               duration: str | None = None, iterations: int = 1) -> PeersPlan:
    """Resolve (and so validate) every pair of the spec's [peers] matrix before anything runs."""
    options.iterations(iterations, "iterations")
    seed, duration = options.seed(seed, "seed"), options.duration(duration, "duration")
    data, source = spec_data(spec, set)
    pairs = peers_matrix(data, source)
    experiments = {}
    for row, cc in pairs:
        d = copy.deepcopy(data)
        stack, version = split_stack(row)
        apply_set(d, f"senders.*.stack={stack}", source)
        apply_set(d, f"senders.*.cc={cc}", source)
        for t in d.get("senders", {}).values():  # the row's version; a stack without versions has none
            if isinstance(t, dict) and version is not None:
                t["version"] = version
            elif isinstance(t, dict) and "version" not in stack_options().get(stack, {}):
                t.pop("version", None)
        first = resolve(d, source, seed=seed, duration=duration)
        for it in range(iterations):
            experiments[(row, cc, it)] = with_seed(first, first.seed + it) if it else first
    return PeersPlan(experiments[(*pairs[0], 0)].name, pairs, iterations, experiments)


@dataclasses.dataclass(frozen=True)
class Peers:
    """A finished peer compare: its folder and the table's rows (each row % vs Linux)."""

    path: Path
    rows: list[dict[str, Any]]


def peers(spec: str | Path | dict[str, Any] | PeersPlan, *, set: list[str] | None = None, seed: int | None = None,
          duration: str | None = None, out: str | Path | None = None, report: bool = True, force: bool = False,
          iterations: int = 1, progress: Progress | None = None, command: str = "tcplab.peers()",
          backend: str | Backend = "sim", testbed: str | Path | None = None) -> Peers:
    """Peer compare: the experiment with every sender on each stack x cc of its [peers] table
    (default freebsd, freebsd-rack, linux x newreno, cubic), each row compared with Linux's."""
    from .runner import execute_peers  # loaded on use, as in run()

    if not isinstance(backend, Backend):
        options.backend(backend, peer_backends(), "backend")
    plan = spec if isinstance(spec, PeersPlan) else plan_peers(spec, set=set, seed=seed, duration=duration,
                                                                iterations=iterations)
    be = _backend(backend, testbed)
    with output(out, f"{plan.name}-peers") as target:
        path, rows = execute_peers(lambda st, cc, it: plan.experiments[(st, cc, it)], plan.pairs, target, force=force,
                                   progress=progress, report=report, command=command, iterations=plan.iterations,
                                   backend=be)
    return Peers(path, rows)


def compare(run_a: str | Path, run_b: str | Path, *more: str | Path, out: str | Path | None = None,
            flow_map: list[str] | dict[str, str] | None = None, force: bool = False) -> list[dict[str, Any]]:
    """Runs side by side (e.g. the simulator's, the kernel's and a testbed's imported logs), each
    against the first: per-flow throughput and its difference, retransmissions, recovery episodes,
    cwnd-trajectory distance. With `out`, also compare.json, compare.html (every run overlaid on
    the interactive charts) and, for two runs, overlaid cwnd charts there. Rows for the flows the
    first run shares with each other run; with three runs or more each row names its run (`vs`).
    Flows are paired by name, by `flow_map` ({"s1": "10.0.0.1:5201"} or ["s1=10.0.0.1:5201"]), then
    by server port or order where one run names them by address (analysis/flowmap.py); a row
    whose other flow has another name holds it as `b_flow`, and every row says `matched_by`.
    An existing `out` is refused, unless `force` and it is a compare folder (never a run)."""
    # Loaded on use: pandas, pyarrow and matplotlib, which `import tcplab` does without.
    from .analysis.compare import compare as compare_runs
    from .report import compare as compare_page
    from .report.plots import cwnd_overlay
    from .report.text import bottleneck_rows
    from .store import RunDir, write_json

    paths = [Path(p) for p in (run_a, run_b, *more)]
    runs = [Run(p) for p in paths]
    infos = [r.info for r in runs]
    labels = run_labels(infos)
    explicit = flowmap.parse(flow_map)
    flowmap.unused(explicit, infos[1:])
    sa = runs[0].table("flows")
    rows, diffs, samples_b = [], {}, []
    for label, r, info in zip(labels[1:], runs[1:], infos[1:]):
        pairs, how = flowmap.match(infos[0], info, explicit)
        samples_b.append(flowmap.renamed(r.table("flows"), pairs))
        part = compare_runs(infos[0], flowmap.as_base(info, pairs), sa, samples_b[-1], runs[0].recovery,
                            flowmap.renamed(r.recovery, pairs))
        part = [dict(x, matched_by=how, **({"b_flow": pairs[x["flow"]]} if pairs[x["flow"]] != x["flow"] else {}))
                for x in part]
        diffs[label] = part
        rows += [dict(x, vs=label) for x in part] if more else part
    if out is not None and rows:
        rd = RunDir(Path(out), force=force, kind="compare", inputs=tuple(paths))
        try:
            write_json(rd.tmp / "compare.json", {"runs": [str(p) for p in paths], "labels": labels, "rows": rows,
                                                 "bottleneck": bottleneck_rows(labels, infos),
                                                 **({"a": str(paths[0]), "b": str(paths[1])} if not more else {})})
            if not more:
                for r in rows:
                    cwnd_overlay(sa, samples_b[0], r["flow"], compare_labels(infos[0], infos[1]), rd.tmp,
                                 f"cwnd_{slug(r['flow'])}")
            compare_page.write(rd.tmp, list(zip(labels, paths, infos)), diffs)
            rd.commit()
        except BaseException:
            rd.abort()
            raise
    return rows


def run_labels(infos: list[dict[str, Any]]) -> list[str]:
    """Each compared run's label: A, B, C ... with its backend."""
    return [f"{chr(65 + i) if i < 26 else f'R{i + 1}'} ({info.get('backend') or 'sim'})" for i, info in enumerate(infos)]


def compare_labels(info_a: dict[str, Any], info_b: dict[str, Any]) -> tuple[str, str]:
    """The two runs' names in a comparison: A and B with their backends."""
    return f"A ({info_a.get('backend', 'sim')})", f"B ({info_b.get('backend', 'sim')})"

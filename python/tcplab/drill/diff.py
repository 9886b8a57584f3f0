"""Differential testing against the kernel (`tcplab drill --generate N`): seeded scenarios
(generate.py) recorded on this machine's kernel (record.py, a child process in a fresh namespace
as the kernel target's), each recording replayed on the model targets with packetdrill's
tolerances (model.py), optionally on the kernel target itself (the runner checked against its
own recording), and each disagreement minimised (minimise.py). Writes into one folder:
scenarios/NAME.json, scripts/NAME.pkt, minimised/NAME.pkt and drill-diff.json."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from .generate import CATEGORIES, Scenario, generate
from .kernel import _kill, run_script as run_kernel, signals_held, spawn
from .minimise import divergence, kind, minimise
from .model_targets import run_script as run_model
from .parse import parse_file
from .result import Result

RECORD_TIMEOUT_S = 30.0
#: The marker file of a --generate folder (outdir's rule for a kind of its own: `<kind>.json`).
SUMMARY = "drill-diff.json"


@dataclass
class Case:
    """One scenario: where its recording is, the verdicts on it (the kernel's own replay among
    them when asked), the minimised script of the first model that disagreed."""

    scenario: Scenario
    script: str
    recorded: str = ""  # "" when recorded, else why not
    results: list[Result] = field(default_factory=list)
    minimised: str | None = None
    minimised_result: Result | None = None
    minimised_on_kernel: str | None = None  # the kernel's verdict on the minimised script, when checked
    minimised_lines: int = 0
    #: Why the kernel failed its own recording twice (then no model is judged on it), else "".
    kernel_unstable: str = ""

    def as_dict(self) -> dict:
        return {"name": self.scenario.name, "category": self.scenario.category, "script": self.script,
                "recorded": self.recorded or "yes", "results": [r.as_dict() for r in self.results],
                "minimised": self.minimised,
                "minimised_result": self.minimised_result.as_dict() if self.minimised_result else None,
                "minimised_on_kernel": self.minimised_on_kernel, "minimised_lines": self.minimised_lines,
                "kernel_unstable": self.kernel_unstable or None}


def record(sc: Scenario, folder: Path, timeout_s: float = RECORD_TIMEOUT_S) -> tuple[str, str]:
    """(script path, "" or why it could not be recorded): the scenario run on the kernel."""
    spath = folder / "scenarios" / f"{sc.name}.json"
    script = folder / "scripts" / f"{sc.name}.pkt"
    with signals_held():  # the child's handle kept before a Ctrl-C can stop this process
        child = spawn([sys.executable, "-m", "tcplab.drill.record", str(spath), str(script)])
    try:
        out, err = child.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill(child)
        return str(script), f"did not finish within {timeout_s:g} s"
    except BaseException:
        _kill(child)
        raise
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            d = json.loads(line)
            return str(script), "" if d["ok"] else d["reason"]
    return str(script), "recorder crashed: " + ((err.strip().splitlines() or [f"exit {child.returncode}"])[-1])


def write_scenarios(scenarios: list[Scenario], folder: Path) -> None:
    (folder / "scenarios").mkdir(parents=True, exist_ok=True)
    (folder / "scripts").mkdir(exist_ok=True)
    for sc in scenarios:
        (folder / "scenarios" / f"{sc.name}.json").write_text(sc.text())


def run_case(sc: Scenario, folder: Path, models: list[str], check_kernel: bool, shrink: bool,
             checked: set | None = None) -> Case:
    """Record, replay, minimise one scenario. The minimised script is checked on the kernel with
    `check_kernel`, else for the first case of each (target, category, kind of divergence) not
    in `checked` (a second a check: a long run checks one of each)."""
    script, why = record(sc, folder)
    case = Case(sc, script, why)
    if why:
        return case
    parsed = parse_file(script)
    if check_kernel:
        case.results.append(_kernel_replay(case, parsed))
    case.results += [run_model(script, parsed, m) for m in models]
    failing = [r for r in case.results if r.target != "kernel" and r.result == "fail" and not case.kernel_unstable]
    if shrink and failing:
        key = (failing[0].target, sc.category, kind(failing[0].reason))
        verify = check_kernel or checked is None or key not in checked
        if checked is not None:
            checked.add(key)
        _shrink(case, folder, failing[0].target, verify)
    return case


def _kernel_replay(case: Case, parsed) -> Result:  # noqa: ANN001 - a parsed Script
    """The kernel target on the case's own recording, run a second time when it fails: the kernel
    is not deterministic against its recording at µs edges (RACK's `tcp_rack_advance()` compares
    a retransmission's ACK delay with the min RTT, `tcp_rack_detect_loss()` send times with the
    reordering window, timers fall on jiffies), and a replay's timing moves those edges. Failing
    twice marks the case `kernel_unstable`: it cannot judge a model, so agreement leaves it out."""
    first = run_kernel(case.script, parsed, RECORD_TIMEOUT_S * 4)
    if first.result != "fail":
        return first
    again = run_kernel(case.script, parsed, RECORD_TIMEOUT_S * 4)
    if again.result == "fail":
        case.kernel_unstable = f"line {again.line}: {again.reason}"
    elif again.result == "pass":  # said, not hidden: the first replay failed
        again = replace(again, reason=f"passed when replayed again; the first replay failed at line "
                                                  f"{first.line}: {first.reason}")
    return again


def _shrink(case: Case, folder: Path, target: str, verify: bool) -> None:
    """The minimised script; checked on the kernel with `verify`, and kept only if the kernel
    still passes it (it is the kernel's behaviour only then), else the recording cut after the
    divergence is kept."""
    text = Path(case.script).read_text()
    small, result = minimise(text, target)
    out = folder / "minimised" / Path(case.script).name
    out.parent.mkdir(exist_ok=True)
    out.write_text(small)
    verdict = run_kernel(str(out), parse_file(out), RECORD_TIMEOUT_S * 4) if verify else None
    if verdict is not None and verdict.result != "pass":
        first = divergence(text, target)
        small = "\n".join(text.splitlines()[:first.line]) + "\n"
        out.write_text(small)
        result, verdict = divergence(small, target), run_kernel(str(out), parse_file(out), RECORD_TIMEOUT_S * 4)
    case.minimised, case.minimised_result = str(out), result
    case.minimised_on_kernel = verdict.result if verdict is not None else None
    case.minimised_lines = len(small.splitlines())


def agreement(cases: list[Case], target: str) -> dict[str, dict[str, int]]:
    """Per category (and "all"): scenarios, recorded, pass (agree), fail, unsupported on `target`,
    and `unstable`: recordings the kernel itself failed twice, which judge no model."""
    out: dict[str, dict[str, int]] = {}
    for c in cases:
        for key in (c.scenario.category, "all"):
            row = out.setdefault(key, {"scenarios": 0, "recorded": 0, "pass": 0, "fail": 0, "unsupported": 0,
                                       "unstable": 0})
            row["scenarios"] += 1
            row["recorded"] += not c.recorded
            row["unstable"] += bool(c.kernel_unstable)
            for r in c.results:
                if r.target == target and not c.kernel_unstable:
                    row[r.result] += 1
    return {k: out[k] for k in [*CATEGORIES, "all"] if k in out}


def run(count: int, seed: int, categories: tuple[str, ...], models: list[str], folder: Path,
        check_kernel: bool = False, shrink: bool = True,
        progress: Callable[[int, int, Case], None] | None = None) -> list[Case]:
    """Every scenario: recorded, replayed, minimised; drill-diff.json written after each one."""
    scenarios = generate(count, seed, categories)
    write_scenarios(scenarios, folder)
    cases: list[Case] = []
    checked: set = set()
    for i, sc in enumerate(scenarios):
        cases.append(run_case(sc, folder, models, check_kernel, shrink, checked))
        write_summary(folder, cases, models, seed)
        if progress:
            progress(i + 1, len(scenarios), cases[-1])
    return cases


def write_summary(folder: Path, cases: list[Case], models: list[str], seed: int) -> None:
    body = {"seed": seed, "agreement": {m: agreement(cases, m) for m in models},
            "cases": [c.as_dict() for c in cases]}
    tmp = folder / f".{SUMMARY}.partial"
    tmp.write_text(json.dumps(body, indent=1) + "\n")
    tmp.replace(folder / SUMMARY)

"""Runs scripts on targets: folders expanded to their scripts, each script parsed once, each
target asked in turn. Targets: `kernel` (this machine's Linux, kernel.py); the stack models
`linux`, `freebsd`, `freebsd-rack` and `rfc` (model.py; model_freebsd.py for the FreeBSD stacks,
model_rfc.py for rfc), a FreeBSD target optionally with a source version (`freebsd@15.0-2025`)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from .kernel import run_script
from .model_targets import run_script as run_model
from .parse import parse_file
from .result import Result
from .syntax import Script, ScriptError
from .targets import DEFAULT_TIMEOUT_S, MODEL_TARGETS, TARGETS


class RunnerError(ValueError):
    """A path or target the runner cannot use (one line)."""


def expand(paths: list[str]) -> list[str]:
    """Scripts named by `paths`, in order: a file as given, a folder as its *.pkt files below it
    (sorted), each path as the user spelled it plus what lies below."""
    out: list[str] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            found = sorted(path.rglob("*.pkt"))
            if not found:
                raise RunnerError(f"{p}: no .pkt scripts in this folder")
            out += [str(f) for f in found]
        elif path.is_file():
            out.append(p)
        else:
            raise RunnerError(f"{p}: no such script or folder")
    return out


def check_nic(options: list[str], targets: list[str]):  # noqa: ANN201 - nic_freebsd.Nic or None
    """--nic KEY=VALUE options: the FreeBSD targets' interface; only with FreeBSD targets."""
    from .nic_freebsd import NicError, parse

    if not options:
        return None
    other = [t for t in targets if t.split("@")[0] not in ("freebsd", "freebsd-rack")]
    if other:
        raise RunnerError(f"--nic: the freebsd and freebsd-rack targets' interface; not for target {other[0]!r}")
    try:
        return parse(options)
    except NicError as e:
        raise RunnerError(str(e)) from None


def check_targets(targets: list[str]) -> list[str]:
    from .model_freebsd import version_problem

    bad = [t for t in targets if t not in TARGETS and version_problem(t) is not None]
    if bad:
        why = version_problem(bad[0]) if "@" in bad[0] else f"use {', '.join(TARGETS)}"
        raise RunnerError(f"unknown target {bad[0]!r}: {why}")
    return list(dict.fromkeys(targets))


def run_one(path: str, script: Script, target: str, timeout_s: float, nic=None) -> Result:  # noqa: ANN001
    if target.split("@")[0] in MODEL_TARGETS:
        return run_model(path, script, target, nic)
    return run_script(path, script, timeout_s)


def run(paths: list[str], targets: list[str], timeout_s: float = DEFAULT_TIMEOUT_S,
        progress: Callable[[Result], None] | None = None, nic=None) -> tuple[list[Result], list[ScriptError]]:  # noqa: ANN001
    """Every script on every target: (results, scripts that could not be read). A script that
    cannot be read gets a `fail` on each target, with the line and what is wrong. `nic`
    (nic_freebsd.Nic, from --nic) is the FreeBSD targets' interface."""
    results: list[Result] = []
    bad: list[ScriptError] = []
    for path in expand(paths):
        try:
            script = parse_file(path)
        except ScriptError as e:
            bad.append(e)
            script = None
        for target in check_targets(targets):
            if script is None:
                r = Result(path, target, "fail", bad[-1].line or None, f"bad script: {bad[-1].message}")
            else:
                r = run_one(path, script, target, timeout_s, nic)
            results.append(r)
            if progress:
                progress(r)
    return results, bad

"""A script's verdict on a model target: which engine runs it (model.py's linux one,
model_freebsd.py's for freebsd and freebsd-rack, model_rfc.py's), and its result. Kept apart from
the engines so that each imports only what it builds on (rfc -> freebsd -> linux's base)."""

from __future__ import annotations

from .engine import Failed, Unsupported
from .model import STACKS, ModelEngine, static_problems
from .model_freebsd import FreeBSDEngine
from .model_rfc import RfcEngine
from .result import Result
from .syntax import Script

#: Why a target is not built on the endpoint yet.
NOT_WIRED = "not a model target"
FREEBSD = ("freebsd", "freebsd-rack")


def run_script(path: str, script: Script, target: str, nic=None) -> Result:  # noqa: ANN001 - nic_freebsd.Nic
    """The verdict of one script on model `target` (a FreeBSD target's interface: `nic`)."""
    if target.split("@")[0] not in STACKS:
        return Result(path, target, "unsupported", None, NOT_WIRED)
    freebsd = target.split("@")[0] in FREEBSD
    problem = static_problems(script, mtu_and_ipv6=freebsd or target == "rfc")
    if problem:
        return Result(path, target, "unsupported", problem[0], problem[1])
    if target == "rfc":
        eng: ModelEngine = RfcEngine(script, target)
    elif freebsd:
        eng = FreeBSDEngine(script, target, nic)
    else:
        eng = ModelEngine(script, target)
    try:
        if script.init is not None:  # the cleanup command runs after the endpoint is done: nothing to model
            eng.shell(script.init_line, script.init.command)
        eng.run()
    except Unsupported as e:
        return Result(path, target, "unsupported", e.line, e.reason)
    except Failed as e:
        return Result(path, target, "fail", e.line, e.reason)
    note = "; ".join(eng.env.notes)
    return Result(path, target, "pass", None, f"defaults not followed: {note}" if note else "")

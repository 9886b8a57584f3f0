"""Minimises a recorded script on which a model diverges from the kernel: the script is cut after
the first divergence, then delta debugging (Zeller and Hildebrandt, "Simplifying and Isolating
Failure-Inducing Input", IEEE TSE 28(2), 2002: ddmin) removes inbound packets as long as the model
still diverges at the same event in the same way. Only the model runs inside the loop (ms per
try); the caller checks the result on the kernel, since removed ACKs may change what it sends."""

from __future__ import annotations

import re
from typing import Callable

from .model_targets import run_script
from .parse import parse_text
from .result import Result
from .syntax import ScriptError

#: The handshake's packets stay: the model needs its passive open.
_INBOUND = re.compile(r"^\d+\.\d+ < \.")
_KIND = re.compile(r"[:(;]")


def divergence(text: str, target: str, name: str = "<script>") -> Result:
    """The verdict of `text` on model `target` (a script that cannot be read is a fail)."""
    try:
        script = parse_text(text, name)
    except ScriptError as e:
        return Result(name, target, "fail", e.line, f"bad script: {e.message}")
    return run_script(name, script, target)


def kind(reason: str) -> str:
    """What differed, without the numbers: `timing error`, `live packet field tcp_psh`, ..."""
    return _KIND.split(reason, 1)[0].strip()


def minimise(text: str, target: str = "linux") -> tuple[str, Result | None]:
    """(the smallest script found that keeps the first divergence, that divergence); a script
    on which the model does not fail comes back as it is, with None."""
    first = divergence(text, target)
    if first.result != "fail" or first.line is None:
        return text, None
    lines = text.splitlines()[:first.line]
    fail_at = first.line - 1  # index of the diverging line
    acks = [i for i, ln in enumerate(lines) if _INBOUND.match(ln) and i < fail_at][1:]  # not the handshake ACK

    def still(kept: list[int]) -> bool:
        drop = set(acks) - set(kept)
        cand = [ln for i, ln in enumerate(lines) if i not in drop]
        r = divergence("\n".join(cand) + "\n", target)
        return r.result == "fail" and r.line == fail_at + 1 - len(drop) and kind(r.reason) == kind(first.reason)

    kept = ddmin(acks, still)
    drop = set(acks) - set(kept)
    out = "\n".join(ln for i, ln in enumerate(lines) if i not in drop) + "\n"
    return out, divergence(out, target)


def ddmin(items: list[int], test: Callable[[list[int]], bool]) -> list[int]:
    """ddmin: a 1-minimal subset of `items` on which `test` holds (it holds on `items`)."""
    n = 2
    while len(items) >= 2:
        size = -(-len(items) // n)
        chunks = [items[i:i + size] for i in range(0, len(items), size)]
        for chunk in chunks:
            rest = [x for x in items if x not in chunk]
            if test(rest):
                items, n = rest, max(n - 1, 2)
                break
        else:
            if n >= len(items):
                break
            n = min(len(items), 2 * n)
    if len(items) == 1 and test([]):
        return []
    return items

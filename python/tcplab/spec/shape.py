"""What any spec must be before its keys are read, wherever it came from (a file, `--set`, a
sweep axis, a dict given to the Python API): tables and arrays nested at most MAX_DEPTH deep, and
every number finite and of a sane length. Checked by one iterative walk, so a spec nested 100 000
deep is refused in one line instead of overflowing the interpreter's stack in a copy or a compare.
"""

from __future__ import annotations

import math
from typing import Any

from . import numbers

#: The deepest nesting a spec uses is 5 (hosts.s1.sysctl."key", sweep.part."axis"[i]); a sweep axis
#: can hold a table of tables. 32 leaves room and stays far from Python's recursion limit (1000).
MAX_DEPTH = 32


def _key(path: tuple[Any, ...]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            text = str(part)
            bare = text and all(c.isalnum() or c in "_-" for c in text)
            out += ("." if out else "") + (text if bare else f'"{text}"')
    return out


def problem(value: Any) -> tuple[str, str] | None:
    """(key, what is wrong) for the first value of `value` (a spec, or a part of one) that no key
    can take, else None."""
    stack: list[tuple[tuple[Any, ...], Any]] = [((), value)]
    while stack:
        path, v = stack.pop()
        if len(path) > MAX_DEPTH:
            return _key(path[:MAX_DEPTH]), f"tables and arrays nested more than {MAX_DEPTH} deep"
        if isinstance(v, dict):
            stack.extend((path + (k,), x) for k, x in reversed(list(v.items())))
        elif isinstance(v, (list, tuple)):
            stack.extend((path + (i,), x) for i, x in reversed(list(enumerate(v))))
        elif isinstance(v, float) and not math.isfinite(v):
            return _key(path), f"{v!r} is not a finite number (nan and infinities are refused)"
        elif isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 10**numbers.MAX_DIGITS:
            return _key(path), f"{numbers.show(v)} is longer than any number tcplab takes"
    return None

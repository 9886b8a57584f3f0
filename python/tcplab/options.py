"""The checks of every argument that is not a spec key — command-line options and the Python API's
keyword arguments alike — so `tcplab.run(spec, backend="zzz")` fails as `tcplab run --backend zzz`
does: an OptionError whose message is the CLI's one line. Numbers go through spec/numbers.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from .spec import numbers
from .spec.schema import SEED_MAX
from .spec.units import cli_duration

#: `iterations` of run and peers, as a sweep's (spec/sweep.py).
MAX_ITERATIONS = 10_000
#: An MSS is a 16-bit TCP option (RFC 9293 §3.7.1); 0: the importer's default.
MSS_MAX = 65_535
#: A plot window's bounds (|--from|, |--to|), seconds either side of the first flow's start: a
#: year, far beyond any run, well inside int64 ns (~292 years).
WINDOW_S = 365 * 86400


class OptionError(ValueError):
    """An argument tcplab cannot take; str() is the one line the CLI prints."""


def choice(value: Any, allowed: Iterable[str], label: str, what: str) -> str:
    """`value` if it is one of `allowed`."""
    allowed = tuple(allowed)
    if not isinstance(value, str) or value not in allowed:
        raise OptionError(f"{label}: {numbers.show(value)} is not {what}; allowed: {', '.join(allowed)}")
    return value


def backend(value: Any, allowed: Iterable[str], label: str = "--backend") -> str:
    return choice(value, allowed, label, "a backend")


def integer(value: Any, label: str, lo: int, hi: int) -> int:
    """An int in [lo, hi] (not a bool, not a float, not a string)."""
    if isinstance(value, str):
        raise OptionError(f"{label}: must be an integer from {lo} to {hi}, got {numbers.show(value)}")
    try:
        return numbers.integer(value, label, lo, hi)
    except numbers.NumberError as e:
        raise OptionError(str(e)) from None


def iterations(value: Any, label: str = "--iterations") -> int:
    return integer(value, label, 1, MAX_ITERATIONS)


def seed(value: Any, label: str = "--seed") -> int | None:
    return None if value is None else integer(value, label, 0, SEED_MAX)


def mss(value: Any, label: str = "--mss") -> int:
    return integer(value, label, 0, MSS_MAX)


def duration(value: Any, label: str = "--duration") -> str | None:
    """A duration override as the spec reads it: "20s", or a bare number of seconds (20, "20")."""
    if value is None:
        return None
    try:
        return cli_duration(value)
    except numbers.NumberError as e:  # units.UnitError is one
        raise OptionError(f"{label}: {e}") from None


def seconds(value: Any, label: str) -> float | None:
    """A finite number of seconds within WINDOW_S (plot's --from/--to), or None."""
    if value is None:
        return None
    try:
        return numbers.real(value, "", -WINDOW_S, WINDOW_S)
    except numbers.NumberError as e:
        raise OptionError(f"{label}: {numbers.show(value)} is not a time in seconds; {e}") from None


def interval(value: Any, label: str) -> float:
    """An interval length in seconds (import's --interval): finite and longer than 0, since the
    iperf3-style table derived from logs needs a length."""
    s = seconds(value, label)
    if s is None or s <= 0:
        raise OptionError(f"{label} {numbers.show(value)}: must be longer than 0 (the derived intervals table needs a length)")
    return s


def paths(value: Any, label: str) -> list[Path]:
    """One path (a str or Path: a single log) or a list of them; at least one."""
    items = [value] if isinstance(value, (str, Path)) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(p, (str, Path)) for p in items):
        raise OptionError(f"{label}: expected a path or a list of paths, got {numbers.show(value)}")
    if not items or any(str(p) == "" for p in items):
        raise OptionError(f"{label}: no logs given" if not items else f"{label}: an empty path")
    for p in items:
        try:  # what the system refuses to look up (a name past NAME_MAX, a NUL byte) is said so
            Path(p).is_file()
        except (OSError, ValueError) as e:
            raise OptionError(f"{label}: {numbers.show(str(p))}: {getattr(e, 'strerror', None) or e}") from None
    return [Path(p) for p in items]


#: The longest name an option takes (formats, backends): anything longer is no name tcplab knows.
NAME_MAX = 64


def names(value: Any, label: str, required: bool = False) -> list[str] | None:
    """One name (a str) or a list of names, e.g. formats; None stays None unless `required`."""
    if value is None and not required:
        return None
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not items or not all(isinstance(x, str) for x in items):
        raise OptionError(f"{label}: expected a name or a non-empty list of names, got {numbers.show(value)}")
    for x in items:
        if len(x) > NAME_MAX:
            raise OptionError(f"{label}: {numbers.show(x)} is not a name tcplab knows (at most {NAME_MAX} characters)")
    return list(items)

"""Validation primitives of the spec: SpecError (file, key, message, allowed values) and Ctx,
typed reads of one table's keys against the ranges of limits.py."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from . import numbers
from .limits import Limit
from .numbers import NumberError


class SpecError(Exception):
    """A spec problem: file, dotted key, message (and the allowed values where they are few)."""

    def __init__(self, file: str, key: str, message: str, allowed: Iterable[str] | None = None):
        self.file, self.key, self.message = file, key, message
        self.allowed = list(allowed) if allowed is not None else None
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.file}: {self.key}" if self.key else self.file
        tail = f" (allowed: {', '.join(self.allowed)})" if self.allowed else ""
        # One line whatever the spec holds: a key with a newline or a control character is escaped.
        return "".join(c if c.isprintable() else repr(c)[1:-1] for c in f"{where}: {self.message}{tail}")



class Ctx:
    """Validation of one spec file: typed reads of keys that raise SpecError naming file and key."""

    def __init__(self, source: str):
        self.source = source

    def err(self, key: str, message: str, allowed: Iterable[str] | None = None) -> SpecError:
        return SpecError(self.source, key, message, allowed)

    def table(self, value: Any, key: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.err(key, f"must be a table, got {value!r}")
        return value

    def keys(self, table: dict[str, Any], path: str, allowed: Iterable[str]) -> None:
        allowed = list(allowed)
        for k in table:
            if k not in allowed:
                raise self.err(join(path, k), "unknown key", allowed)

    def unit(self, table: dict[str, Any], path: str, key: str, parse: Callable[[object], Any], default: Any = None,
             limit: Limit | None = None) -> Any:
        raw = table.get(key, default)
        if raw is None:
            raise self.err(join(path, key), "is required")
        try:
            value = parse(raw)
        except NumberError as e:  # units.UnitError is one
            raise self.err(join(path, key), str(e)) from None
        self.within(value, limit, join(path, key), raw)
        return value

    def within(self, value: int, limit: Limit | None, key: str, raw: Any = None) -> None:
        """Raise unless `value` is inside `limit` (limits.py: the one table of ranges)."""
        problem = limit.check(value) if limit is not None else None
        if problem:
            shown = f"{numbers.show(raw)} = {numbers.show(value)}" if raw is not None and raw != value else numbers.show(value)
            raise self.err(key, f"must be in {limit.shown}, got {shown}")

    def integer(self, table: dict[str, Any], path: str, key: str, default: int, lo: int, hi: int) -> int:
        v = table.get(key, default)
        if isinstance(v, str):  # a spec writes integers bare: "5" is a string there
            raise self.err(join(path, key), f"must be an integer from {lo} to {hi}, got {numbers.show(v)}")
        try:
            return numbers.integer(v, "", lo, hi)
        except NumberError as e:
            raise self.err(join(path, key), str(e)) from None

    def boolean(self, table: dict[str, Any], path: str, key: str, default: bool) -> bool:
        v = table.get(key, default)
        if not isinstance(v, bool):
            raise self.err(join(path, key), f"must be true or false, got {v!r}")
        return v

    def choice(self, table: dict[str, Any], path: str, key: str, default: str, allowed: Iterable[str]) -> str:
        allowed = list(allowed)
        v = table.get(key, default)
        if v not in allowed:
            raise self.err(join(path, key), f"{v!r} is not one of the choices", allowed)
        return v

    def probability(self, table: dict[str, Any], path: str, key: str) -> float:
        v = table.get(key, 0.0)
        try:
            p = numbers.finite(v, "") if not isinstance(v, str) else None
        except NumberError:
            p = None
        if p is None or not 0.0 <= p < 1.0:
            raise self.err(join(path, key), f"must be a probability in [0, 1), got {numbers.show(v)}")
        return p


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key

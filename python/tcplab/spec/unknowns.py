"""Unknowns: a network or host value given as a range or a set instead of a value, for
`tcplab calibrate` to find from a measured run (docs/calibrate.md).

    [topology.bottleneck]
    buffer = { between = ["32p", "2048p"] }          # any value in the range (both ends included)
    loss = { between = [0, 0.01] }
    rate = { between = ["5Mbit", "50Mbit"], scale = "log" }   # searched on a log scale
    [topology]
    shared_buffer_policy = { one_of = ["complete", "dynamic"] }

Only the network and the hosts' NIC and queues may be unknown; a stack's parameter (senders,
sysctls, the hosts' OS) is what a calibration judges, so it is refused. A spec with unknowns
does not run: `resolve` refuses it with the line `needs_calibration` writes.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from typing import Any

from . import keys, numbers, units
from .ctx import SpecError

#: What an unknown's table may hold.
UNKNOWN_KEYS = ("between", "one_of", "scale")
SCALES = ("linear", "log")

#: Keys that may be unknown, by the quantity they hold (how `between` reads and writes them).
LINK_KINDS = {"rate": "rate", "delay": "duration", "rtt": "duration", "reverse_delay": "duration", "jitter": "duration",
              "buffer": "buffer", "reverse_buffer": "buffer", "loss": "probability", "reverse_loss": "probability"}
TOPOLOGY_KINDS = {"shared_buffer": "buffer", "shared_buffer_alpha": "real", "shared_buffer_ports": "integer",
                  "shared_buffer_policy": "choice", "pause_xoff": "buffer", "pause_xon": "buffer"}
NIC_KINDS = {"rx_usecs": "integer", "rx_frames": "integer", "tso_max": "size", "gro": "choice", "lro": "choice",
             "tx_queue": "buffer", "vnic_rate": "rate", "rx_pps": "integer", "rx_ring": "integer"}


@dataclasses.dataclass(frozen=True)
class Unknown:
    """One unknown: its dotted key, the quantity, and either a range (lo, hi in the base unit:
    bit/s, ns, bytes or packets) or the choices."""

    key: str
    parts: tuple[str, ...]
    kind: str                      # rate, duration, buffer, size, probability, real, integer, choice
    lo: float | None = None
    hi: float | None = None
    choices: tuple[Any, ...] = ()
    log: bool = False
    buffer_unit: str = ""          # "packets" or "bytes" for a buffer range

    @property
    def is_range(self) -> bool:
        return not self.choices

    def value(self, x: Any) -> Any:
        """The spec value for the number `x` (or a choice): "123p", "45000000bit", 0.003 ..."""
        if not self.is_range:
            return x
        if self.kind in ("probability", "real"):
            return float(x)
        n = int(round(x))
        return {"rate": f"{n}bit", "duration": f"{n}ns", "size": f"{n}B",
                "buffer": f"{n}p" if self.buffer_unit == "packets" else f"{n}B"}.get(self.kind, n)

    def fraction(self, x: float) -> float:
        """Where `x` lies in the range, 0..1 (on the log scale for a log unknown)."""
        if self.log:
            return (math.log(x) - math.log(self.lo)) / max(math.log(self.hi) - math.log(self.lo), 1e-300)
        return (x - self.lo) / (self.hi - self.lo) if self.hi > self.lo else 0.0


def _kind(parts: list[str]) -> str | None:
    """The quantity at `parts` if that key may be unknown, else None."""
    if len(parts) == 3 and parts[:2] in (["topology", "bottleneck"], ["topology", "access"]):
        return LINK_KINDS.get(parts[2])
    if len(parts) == 2 and parts[0] == "topology":
        return TOPOLOGY_KINDS.get(parts[1])
    if len(parts) == 4 and parts[0] == "hosts" and parts[2] == "nic":
        return NIC_KINDS.get(parts[3])
    if parts[:1] == ["hosts"] and parts[2:] == ["netem", "limit"]:
        return "integer"
    return None


def _is_unknown(value: Any) -> bool:
    return isinstance(value, dict) and bool({"between", "one_of"} & set(value))


def _walk(table: dict[str, Any], path: list[str]):
    for k, v in table.items():
        if _is_unknown(v):
            yield path + [k], v
        elif isinstance(v, dict) and not (path == [] and k == "sweep"):
            yield from _walk(v, path + [k])


_PARSE = {"rate": units.parse_rate_bps, "duration": units.parse_duration_ns, "size": units.parse_size_bytes}


def _bound(source: str, key: str, kind: str, raw: Any) -> tuple[float, str]:
    """One end of a range in the base unit, and its buffer unit."""
    try:
        if kind == "buffer":
            unit, n = units.parse_buffer(raw)
            return float(n), unit
        if kind in _PARSE:
            return float(_PARSE[kind](raw)), ""
        if kind == "integer":
            return float(numbers.integer(raw, "", 0, 10**12)), ""
        if isinstance(raw, str):  # a spec writes numbers bare: "0.01" is a string there
            raise numbers.NumberError(f"must be a number, got {numbers.show(raw)}")
        return numbers.finite(raw, ""), ""
    except numbers.NumberError as e:
        raise SpecError(source, key, str(e)) from None


def _read(source: str, parts: list[str], t: dict[str, Any]) -> Unknown:
    key = keys.join(parts)
    kind = _kind(parts)
    if kind is None:
        stack = parts[0] in ("senders", "stack_sysctl", "background") or parts[2:3] in (["sysctl"], ["os"])
        why = ("a stack's parameter cannot be unknown: the stacks are what a calibration judges" if stack else
               "cannot be unknown; unknowns are network and host values: topology.bottleneck.* and topology.access.* "
               "(rate, delay, rtt, reverse_delay, jitter, buffer, reverse_buffer, loss, reverse_loss), the switch's "
               "shared_buffer*, hosts.NAME.nic.*, hosts.NAME.netem.limit")
        raise SpecError(source, key, why)
    for k in t:
        if k not in UNKNOWN_KEYS:
            raise SpecError(source, f"{key}.{k}", "unknown key", UNKNOWN_KEYS)
    if "between" in t and "one_of" in t:
        raise SpecError(source, key, "give between (a range) or one_of (a set), not both")
    scale = t.get("scale", "linear")
    if scale not in SCALES:
        raise SpecError(source, f"{key}.scale", f"{scale!r} is not a scale", SCALES)
    if "one_of" in t:
        choices = t["one_of"]
        if not isinstance(choices, list) or not choices or len({repr(c) for c in choices}) != len(choices):
            raise SpecError(source, f"{key}.one_of", f"must be a non-empty list of distinct values, got {numbers.show(choices)}")
        if "scale" in t:
            raise SpecError(source, f"{key}.scale", "applies to between only")
        return Unknown(key, tuple(parts), kind, choices=tuple(choices))
    return _range(source, key, parts, kind, t["between"], scale == "log")


def _range(source: str, key: str, parts: list[str], kind: str, ends: Any, log: bool) -> Unknown:
    where = f"{key}.between"
    if kind == "choice":
        raise SpecError(source, where, "this key takes a set: one_of = [...]")
    if not isinstance(ends, list) or len(ends) != 2:
        raise SpecError(source, where, f"must be [min, max], got {numbers.show(ends)}")
    (lo, unit_lo), (hi, unit_hi) = (_bound(source, where, kind, e) for e in ends)
    if unit_lo != unit_hi:
        raise SpecError(source, where, f"both ends in packets or both in bytes, got {ends[0]!r} and {ends[1]!r}")
    if lo > hi:
        raise SpecError(source, where, f"min {numbers.show(ends[0])} is larger than max {numbers.show(ends[1])}")
    if log and lo <= 0:
        raise SpecError(source, f"{key}.scale", f"a log scale needs a min above zero, got {numbers.show(ends[0])}")
    if kind == "probability" and not 0 <= lo <= hi < 1:
        raise SpecError(source, where, f"must be probabilities in [0, 1), got {numbers.show(ends)}")
    return Unknown(key, tuple(parts), kind, lo, hi, log=log, buffer_unit=unit_lo)


def find(spec: dict[str, Any], source: str) -> list[Unknown]:
    """Every unknown of `spec`, checked (SpecError naming the key for a bad one)."""
    return [_read(source, parts, t) for parts, t in _walk(spec, [])]


def fix(spec: dict[str, Any], values: dict[str, Any], found: list[Unknown]) -> dict[str, Any]:
    """A copy of `spec` with each unknown set to its value in `values` (by key, a spec value)."""
    out = copy.deepcopy(spec)
    for u in found:
        table = out
        for p in u.parts[:-1]:
            table = table[p]
        table[u.parts[-1]] = values[u.key]
    return out


def ends(u: Unknown) -> list[Any]:
    """The spec values at the ends of the unknown (its choices for a set)."""
    return [u.value(u.lo), u.value(u.hi)] if u.is_range else list(u.choices)


def needs_calibration(found: list[Unknown], source: str) -> SpecError:
    """The one line `tcplab run` (and everything that resolves a spec) answers a spec with unknowns."""
    names = ", ".join(u.key for u in found)
    return SpecError(source, found[0].key, f"is unknown (a range or a set; unknowns here: {names}): find them with "
                     "`tcplab calibrate MEASURED SPEC --out DIR`, then run DIR/calibrated.toml")

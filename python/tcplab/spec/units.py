"""Unit strings of experiment specs: rates, durations, sizes and buffers.

Conventions (documented in docs/spec.md):
- rates are bit/s: "1Gbit", "500Mbit", "100Mbps", "64kbit", "1500bit";
- durations: "40ms", "20us", "1.5s", "100ns", "2min";
- sizes are bytes: "1500B", "125KB" (SI, 1000-based), "64KiB" (IEC, 1024-based), and iperf3's
  bare suffixes "1M", "64K", "1G", which iperf3 itself reads as 1024-based;
- buffers are a size or a packet count: "256p".
No space is allowed between number and unit, so "40 ms" is an error, as is an unknown unit.
A value must be a whole number of the base unit (ns, bit/s, bytes): "23.9B" and "1.5ns" are
refused, not rounded. The number itself is read by numbers.py (the one reader of numbers).
"""

from __future__ import annotations

import re

from . import numbers

_NUM = f"({numbers.DECIMAL})"

RATE_UNITS = {
    "bit": 1, "bps": 1,
    "kbit": 10**3, "Kbit": 10**3, "kbps": 10**3, "Kbps": 10**3,
    "Mbit": 10**6, "Mbps": 10**6,
    "Gbit": 10**9, "Gbps": 10**9,
    "Tbit": 10**12, "Tbps": 10**12,
}
#: The base unit each kind of quantity is counted in, for messages.
BASE = {"rate": "bit/s", "duration": "nanoseconds", "size": "bytes"}
DURATION_UNITS = {"ns": 1, "us": 10**3, "ms": 10**6, "s": 10**9, "min": 60 * 10**9}
SIZE_UNITS = {
    "B": 1,
    "KB": 10**3, "MB": 10**6, "GB": 10**9,
    "KiB": 2**10, "MiB": 2**20, "GiB": 2**30,
    "K": 2**10, "M": 2**20, "G": 2**30,
}


class UnitError(numbers.NumberError):
    """A value that is not a valid quantity; the message lists the accepted forms."""


def _parse(text: object, units: dict[str, int], what: str, example: str) -> int:
    if isinstance(text, bool) or not isinstance(text, str):
        raise UnitError(f"expected a {what} string like {example!r}, got {numbers.show(text)}")
    if (problem := numbers.too_long(text)) is not None:
        raise UnitError(problem)
    m = re.fullmatch(_NUM + r"([A-Za-z]+)", text)
    if not m or m.group(2) not in units:
        raise UnitError(f"{text!r} is not a {what}; use a number and one of {', '.join(units)} with no space, e.g. {example!r}")
    # Exact decimal arithmetic: "18446744073709551615ns" stays that integer (a float would not),
    # so range checks see the value the user wrote; a fraction of the base unit is refused, not
    # rounded (a probe of "23.9B" would otherwise pass a 24-byte minimum).
    value = numbers.decimal(m.group(1), what) * units[m.group(2)]
    if value.denominator != 1:
        raise UnitError(f"{text!r} is not a whole number of {BASE[what]}")
    return int(value)


def parse_rate_bps(text: object) -> int:
    """'1Gbit' -> 1_000_000_000."""
    v = _parse(text, RATE_UNITS, "rate", "1Gbit")
    if v <= 0:
        raise UnitError(f"rate {text!r} must be positive")
    return v


def parse_duration_ns(text: object) -> int:
    """'40ms' -> 40_000_000."""
    return _parse(text, DURATION_UNITS, "duration", "40ms")


def parse_size_bytes(text: object) -> int:
    """'1MB' -> 1_000_000; '1M' -> 1_048_576 (iperf3's -l 1M)."""
    return _parse(text, SIZE_UNITS, "size", "1MB")


def parse_buffer(text: object) -> tuple[str, int]:
    """'256p' -> ('packets', 256); '125KB' -> ('bytes', 125000). Zero is refused."""
    if isinstance(text, str) and (problem := numbers.too_long(text)) is not None:
        raise UnitError(problem)
    if isinstance(text, str) and re.fullmatch(r"\d+p", text):
        n = int(text[:-1])
        kind = "packets"
    else:
        try:
            n = parse_size_bytes(text)
        except UnitError:
            raise UnitError(f"{text!r} is not a buffer; use packets like '256p' or a size like '125KB'") from None
        kind = "bytes"
    if n <= 0:
        raise UnitError(f"buffer {text!r} must be larger than zero")
    return kind, n


def cli_duration(value: object) -> str:
    """A command line's (or the API's) duration: a bare number means seconds, as iperf3's `-t 5`
    does; `20` and `"20"` are "20s". Anything else is left to the duration parser to judge."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = numbers.finite(value, "duration")
        if seconds < 0:
            raise UnitError(f"{value!r} is not a duration: it is negative")
        value = repr(seconds) if isinstance(value, float) else str(value)
        if "e" in value:  # 1e-05: written out, as the unit parser reads plain decimals only
            value = f"{seconds:.9f}".rstrip("0").rstrip(".")
    if not isinstance(value, str):
        raise UnitError(f"expected a duration like '20s' or a number of seconds, got {value!r}")
    return f"{value.strip()}s" if re.fullmatch(_NUM, value.strip()) else value.strip()


def format_rate(bps: float) -> str:
    """Human rate with iperf3's units."""
    for unit, scale in (("Gbits/sec", 1e9), ("Mbits/sec", 1e6), ("Kbits/sec", 1e3)):
        if bps >= scale:
            return f"{bps / scale:.3g} {unit}"
    return f"{bps:.0f} bits/sec"

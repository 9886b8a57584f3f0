"""The one reader of numbers, whatever they come from: spec values, `--set`, command-line options,
sample files and the Python API. NaN, infinities, values out of their range and digit strings
longer than any quantity tcplab takes are refused with a one-line NumberError.

Python itself refuses to convert integers of more than 4300 digits (sys.get_int_max_str_digits(),
CVE-2020-10735) with a ValueError that names an interpreter setting; tcplab stops far earlier, at
MAX_DIGITS, and says so in its own words.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

#: The longest number tcplab reads, in characters (sign, digits, point and exponent): the largest
#: quantity it takes, 2^64 ns written out, has 20 digits.
MAX_DIGITS = 40

#: A plain decimal: digits, an optional fraction; what unit strings ("1.5Mbit") are made of.
DECIMAL = r"\d+(?:\.\d+)?"
#: What float() reads besides nan/inf: sign, digits, fraction, exponent.
_FLOAT_RE = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_INT_RE = re.compile(r"[+-]?\d+")


class NumberError(ValueError):
    """A value that is not a number tcplab takes; the message says what and why, in one line."""


def _digits(n: int) -> int:
    """Decimal digits of |n| without converting it to a string (which Python refuses past 4300)."""
    n = abs(n)
    if n < 10**MAX_DIGITS:
        return len(str(n))
    d = int(n.bit_length() * math.log10(2)) + 1  # the count or one more
    return d - 1 if n < 10 ** (d - 1) else d


def _at(what: str, message: str) -> str:
    return f"{what}: {message}" if what else message


def show(value: Any) -> str:
    """repr(value) for a one-line message, cut when long (a 4000-digit integer is legal TOML)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**MAX_DIGITS:
        return f"an integer of {_digits(value)} digits"
    text = repr(value)
    return text if len(text) <= 2 * MAX_DIGITS else f"{text[:MAX_DIGITS]}... ({len(text)} characters)"


def _shown(text: str) -> str:
    """A number as it may appear in a one-line message: long ones are cut."""
    return repr(text) if len(text) <= MAX_DIGITS else f"a number of {len(text)} characters ({text[:12]}...)"


def too_long(text: str) -> str | None:
    """Why `text` is too long to be read as a number, or None."""
    if len(text) > MAX_DIGITS:
        return f"{_shown(text)} is longer than any number tcplab takes (at most {MAX_DIGITS} characters)"
    return None


def decimal(text: str, what: str) -> Fraction:
    """An exact non-negative decimal ("1.5", "40") of at most MAX_DIGITS characters."""
    if (problem := too_long(text)) is not None:
        raise NumberError(_at(what, f"{problem}"))
    if not re.fullmatch(DECIMAL, text):
        raise NumberError(_at(what, f"{text!r} is not a decimal number"))
    return Fraction(text)


def finite(value: Any, what: str) -> float:
    """A finite float from a float, an int or a numeric string; nan and infinities refused."""
    if isinstance(value, bool):
        raise NumberError(_at(what, f"must be a number, got {show(value)}"))
    if isinstance(value, str):
        text = value.strip()
        if (problem := too_long(text)) is not None:
            raise NumberError(_at(what, f"{problem}"))
        nonfinite = re.fullmatch(r"[+-]?(nan|inf|infinity)", text, re.IGNORECASE)
        if not nonfinite and not _FLOAT_RE.fullmatch(text):
            raise NumberError(_at(what, f"{value!r} is not a number"))
        if nonfinite or not math.isfinite(float(text)):  # 1e400 reads as inf
            raise NumberError(_at(what, f"{value!r} is not a finite number (nan and infinities are refused)"))
        value = float(text)
    elif isinstance(value, int):
        if abs(value) >= 10**MAX_DIGITS:
            raise NumberError(_at(what, f"an integer of {_digits(value)} digits is out of range"))
        value = float(value)
    elif not isinstance(value, float):
        raise NumberError(_at(what, f"must be a number, got {show(value)}"))
    if not math.isfinite(value):
        raise NumberError(_at(what, f"{value!r} is not a finite number (nan and infinities are refused)"))
    return value


def real(value: Any, what: str, lo: float, hi: float) -> float:
    """A finite float in [lo, hi]."""
    v = finite(value, what)
    if not lo <= v <= hi:
        raise NumberError(_at(what, f"must be from {lo:g} to {hi:g}, got {v:g}"))
    return v


def integer(value: Any, what: str, lo: int, hi: int) -> int:
    """An int in [lo, hi] from an int or a string of digits; bools, floats and nan refused."""
    if isinstance(value, str):
        text = value.strip()
        if (problem := too_long(text)) is not None:
            raise NumberError(_at(what, f"{problem}"))
        if not _INT_RE.fullmatch(text):
            raise NumberError(_at(what, f"must be an integer from {lo} to {hi}, got {show(value)}"))
        value = int(text)
    if isinstance(value, bool) or not isinstance(value, int):
        raise NumberError(_at(what, f"must be an integer from {lo} to {hi}, got {show(value)}"))
    if not lo <= value <= hi:
        raise NumberError(_at(what, f"must be an integer from {lo} to {hi}, got {show(value)}"))
    return value

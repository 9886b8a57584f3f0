"""Dotted keys and values of `--set KEY=VALUE`, `--axis KEY=[...]` and [sweep] axes, read by TOML's
rules (toml.io v1.0.0 "Keys"): bare parts of letters, digits, `_` and `-`, quoted parts for the
rest, so `hosts.s1.sysctl."net.ipv4.tcp_sack"` is three parts, the last with dots in it. tcplab
adds one bare part of its own, `*`: every key of the table it is in.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

from . import numbers, shape

_BARE = re.compile(r"[A-Za-z0-9_-]+|\*")
#: A basic string with its escapes, or a literal string (no escapes): TOML's two one-line quotes.
_QUOTED = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'')


class BadKey(ValueError):
    """A key or value that cannot be read; the message says what is wrong, in one line."""


def split(key: str) -> list[str]:
    """`a.b."c.d".'e'` -> ["a", "b", "c.d", "e"]; whitespace around dots is ignored, as in TOML."""
    parts, i, text = [], 0, key.strip()
    if not text:
        raise BadKey("an empty key")
    while True:
        while i < len(text) and text[i] in " \t":
            i += 1
        m = _QUOTED.match(text, i) or _BARE.match(text, i)
        if m is None:
            raise BadKey(f"{key!r} is not a dotted key: quote a part that holds other characters than letters, "
                            "digits, _ and - (e.g. hosts.s1.sysctl.\"net.ipv4.tcp_sack\")")
        token = m.group(0)
        parts.append(tomllib.loads(f"k = {token}")["k"] if token[0] in "\"'" else token)
        i = m.end()
        while i < len(text) and text[i] in " \t":
            i += 1
        if i == len(text):
            return parts
        if text[i] != ".":
            raise BadKey(f"{key!r} is not a dotted key: expected '.' after {token}")
        i += 1


def join(parts: list[str]) -> str:
    """The parts as one dotted key, quoting those that are not bare (the inverse of split)."""
    return ".".join(p if _BARE.fullmatch(p) else '"' + p.replace("\\", "\\\\").replace('"', '\\"') + '"' for p in parts)


def value(raw: str) -> Any:
    """A `--set` value: TOML if it reads as TOML ("5", "[1, 2]", "{kind = \"codel\"}", "true"),
    else the text itself (so `cc=cubic` needs no quotes). Numbers are read by numbers.py's rules."""
    text = raw.strip()
    if (problem := numbers.too_long(text)) is not None and re.fullmatch(r"[-+0-9_.eE]+", text):
        raise BadKey(problem)
    try:
        v = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw
    except RecursionError:
        raise BadKey(f"a value nested deeper than {shape.MAX_DEPTH} tables or arrays") from None
    except ValueError as e:  # an integer past Python's conversion limit, inside an array
        raise BadKey(f"not a value tcplab can read ({str(e).split(':')[0].lower()})") from None
    if (found := shape.problem(v)) is not None:
        where, what = found
        raise BadKey(f"{what}" + (f" (at {where})" if where else ""))
    return v


def assignment(text: str, option: str, example: str) -> tuple[str, list[str], str]:
    """`KEY=VALUE` -> (KEY as written, its parts, VALUE's text). The first `=` outside quotes
    ends the key, so a quoted part may hold '='."""
    i, quote = 0, None
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "=":
            break
        i += 1
    if i == len(text):
        raise BadKey(f"{option} takes KEY=VALUE, e.g. {example}")
    key = text[:i].strip()
    return key, split(key), text[i + 1:]

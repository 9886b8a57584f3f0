"""System call arguments and results of packetdrill scripts: numbers, symbols (`SOL_TCP`,
`O_RDWR|O_NONBLOCK`), `...`, `[list]`, `{struct}`, `name(arg)=value`, strings (parser.y
`expression`)."""

from __future__ import annotations

import re

from .syntax import ELLIPSIS, Call, Struct, Text

_TOKEN = re.compile(r"\s*(\.\.\.|0x[0-9a-fA-F]+|-?\d+|[A-Za-z_][A-Za-z0-9_]*|\"(?:[^\"\\]|\\.)*\"|[\[\]{}(),=|])")


class ValueSyntax(ValueError):
    """An argument list that is not packetdrill syntax."""


def _tokens(text: str) -> list[str]:
    out, i = [], 0
    while i < len(text):
        if text[i:].strip() == "":
            break
        m = _TOKEN.match(text, i)
        if not m:
            raise ValueSyntax(f"unexpected {text[i:].strip()[:20]!r}")
        out.append(m.group(1))
        i = m.end()
    return out


class _Reader:
    def __init__(self, text: str) -> None:
        self.toks, self.i = _tokens(text), 0

    def peek(self) -> str | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, want: str | None = None) -> str:
        t = self.peek()
        if t is None or (want is not None and t != want):
            raise ValueSyntax(f"expected {want or 'a value'}, got {t or 'end of line'}")
        self.i += 1
        return t

    def expr(self):
        v = self.atom()
        if self.peek() == "|":
            parts = [v]
            while self.peek() == "|":
                self.take("|")
                parts.append(self.atom())
            return ("|", *parts)
        return v

    def atom(self):
        t = self.take()
        if t == "[":
            return self.seq("]")
        if t == "{":
            return Struct(tuple(self.fields()))
        if t == ELLIPSIS:
            return ELLIPSIS
        if t.startswith('"'):
            return Text(bytes(t[1:-1], "utf-8").decode("unicode_escape"))
        if t.startswith("0x"):
            return int(t, 16)
        if t.lstrip("-").isdigit():
            return int(t)
        if re.fullmatch(r"[A-Za-z_]\w*", t):
            return t
        raise ValueSyntax(f"unexpected {t!r}")

    def seq(self, close: str) -> list:
        items = []
        while self.peek() != close:
            items.append(self.expr())
            if self.peek() == ",":
                self.take(",")
            elif self.peek() != close:
                raise ValueSyntax(f"expected ',' or '{close}', got {self.peek() or 'end of line'}")
        self.take(close)
        return items

    def fields(self):
        while self.peek() != "}":
            yield self.field()
            if self.peek() == ",":
                self.take(",")
            elif self.peek() != "}":
                raise ValueSyntax(f"expected ',' or '}}', got {self.peek() or 'end of line'}")
        self.take("}")

    def field(self):
        t = self.peek()
        nxt = self.toks[self.i + 1] if self.i + 1 < len(self.toks) else None
        if t and re.fullmatch(r"[A-Za-z_]\w*", t) and nxt in ("=", "("):
            self.take()
            if nxt == "(":
                self.take("(")
                arg = self.expr()
                self.take(")")
                self.take("=")
                return (t, (Call(t, arg), self.expr()))
            self.take("=")
            return (t, self.expr())
        return (None, self.expr())


def parse_list(text: str) -> list:
    """The comma-separated arguments of a call."""
    r = _Reader(text)
    if r.peek() is None:
        return []
    items = []
    while True:
        items.append(r.expr())
        if r.peek() is None:
            return items
        r.take(",")


_ERRNO = re.compile(r"([A-Z][A-Z0-9_]*)(?:\s*\((.*)\))?\s*$")


def parse_result(text: str) -> tuple[object, str | None]:
    """`= 0`, `= -1 EINPROGRESS (Operation now in progress)`, `= 0x2 (flags O_RDWR)`, `= ...`."""
    m = re.match(r"(\.\.\.|-?0x[0-9a-fA-F]+|-?\d+|[A-Za-z_]\w*)\s*(.*)$", text, re.S)
    if not m:
        raise ValueSyntax(f"bad result {text[:20]!r}")
    first, rest = m.group(1), m.group(2).strip()
    value: object = ELLIPSIS if first == ELLIPSIS else int(first, 0) if re.fullmatch(r"-?(0x[0-9a-fA-F]+|\d+)", first) else first
    if not rest:
        return value, None
    if rest.startswith("("):  # a note, as `0x2 (flags O_RDWR)`
        return value, None
    e = _ERRNO.match(rest)
    if not e:
        raise ValueSyntax(f"bad errno {rest[:20]!r}")
    return value, e.group(1)

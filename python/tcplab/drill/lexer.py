"""Splits a packetdrill script into statements (one event each, with its first line number),
dropping comments; backtick commands and %{ }% blocks are kept whole, whatever they contain."""

from __future__ import annotations

from .syntax import ScriptError

_OPEN, _CLOSE = "([{", ")]}"


def statements(path: str, text: str) -> list[tuple[int, str]]:
    """The statements of `text`: a statement ends at a newline outside brackets, quotes,
    backticks and code blocks (packetdrill's lexer.l treats those the same way)."""
    out: list[tuple[int, str]] = []
    buf: list[str] = []
    line, start, depth, i, n = 1, 0, 0, 0, len(text)

    def flush() -> None:
        s = "".join(buf).strip()
        if s:
            out.append((start, s))
        buf.clear()

    while i < n:
        c = text[i]
        if not "".join(buf).strip() and not c.isspace():
            start = line
        if text.startswith("//", i):
            i = _skip_to(text, i, "\n", keep_end=True)
            continue
        if text.startswith("/*", i):
            j = _find(path, text, i + 2, "*/", line, "comment")
            line += text.count("\n", i, j)
            i = j
            continue
        for opener, closer, what in (("`", "`", "command"), ("%{", "}%", "code block"), ('"', '"', "string")):
            if text.startswith(opener, i):
                j = _find(path, text, i + len(opener), closer, line, what)
                buf.append(text[i:j])
                line += text.count("\n", i, j)
                i = j
                break
        else:
            if c in _OPEN:
                depth += 1
            elif c in _CLOSE:
                depth = max(0, depth - 1)
            if c == "\n":
                line += 1
                if depth == 0:
                    flush()
                else:
                    buf.append(" ")
            else:
                buf.append(c)
            i += 1
    if depth:
        raise ScriptError(path, start, "unbalanced brackets at end of file")
    flush()
    return out


def _skip_to(text: str, i: int, end: str, keep_end: bool) -> int:
    j = text.find(end, i)
    if j < 0:
        return len(text)
    return j if keep_end else j + len(end)


def _find(path: str, text: str, i: int, closer: str, line: int, what: str) -> int:
    """Index just past `closer` from `i`; an unterminated block is a script error at its line."""
    j = text.find(closer, i)
    if j < 0:
        raise ScriptError(path, line, f"unterminated {what}")
    return j + len(closer)

"""Runs packetdrill scripts (the stacks' own TCP test suites) against targets: this machine's
kernel now, tcplab's stack models next. Reader: parse.py; kernel target: kernel.py."""

__all__ = ["Script", "ScriptError", "parse_file", "parse_text"]


def __getattr__(name: str):
    """The reader's names, loaded on first use: every `tcplab` command line imports this package
    (for the drill command's targets), and the reader is only needed when scripts are read."""
    if name in ("parse_file", "parse_text"):
        from . import parse
        return getattr(parse, name)
    if name in ("Script", "ScriptError"):
        from . import syntax
        return getattr(syntax, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

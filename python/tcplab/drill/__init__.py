"""Runs packetdrill scripts (the stacks' own TCP test suites) against targets: this machine's
kernel now, tcplab's stack models next. Reader: parse.py; kernel target: kernel.py."""

from .parse import parse_file, parse_text
from .syntax import Script, ScriptError

__all__ = ["Script", "ScriptError", "parse_file", "parse_text"]

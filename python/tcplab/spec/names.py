"""The one rule for the names of flows a spec writes (senders, latency probes): they become parts
of file names (plot's `cwnd_s1.png`, an export's `s1.siftr2`) and column values, so they hold no
path separator, no space, no leading dash, and are short enough for any file system."""

from __future__ import annotations

import re

FLOW_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
FLOW_NAME_RULE = "1-64 letters, digits, - and _, starting with a letter or digit"


def flow_name_problem(name: object, what: str) -> str | None:
    """None when `name` can name a sender or a probe (`what`), else the message for the error."""
    if isinstance(name, str) and FLOW_NAME_RE.fullmatch(name):
        return None
    shown = repr(name) if not isinstance(name, str) or len(name) <= 40 else f"{name[:40]!r}... ({len(name)} characters)"
    return f"{shown} cannot name a {what}: use {FLOW_NAME_RULE}"

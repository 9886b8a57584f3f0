"""Names that become file names: checked, so results stay inside the folder the user chose,
whatever a spec, a log or an archive says (the folder itself: outdir.py)."""

from __future__ import annotations

import re
from pathlib import Path

#: A run or sweep name: letters, digits, '.', '_', '+', '-'; no separator, no leading dot; 100 at most.
NAME_RE = re.compile(r"[^\W_][\w.+-]{0,99}")
NAME_RULE = "1-100 letters, digits, '.', '_', '+' or '-', starting with a letter or digit"


class UnsafePath(ValueError):
    """A name or folder tcplab will not write to; the message says why and what is allowed."""


def name_problem(name: object) -> str | None:
    """None when `name` can be a folder name under results/, else what is wrong with it."""
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        return f"{name!r} cannot name a results folder: use {NAME_RULE}"
    return None


def slug(text: str) -> str:
    """A safe name made from `text` (a file's stem): other characters become '-'."""
    s = re.sub(r"[^\w.+-]+", "-", text).strip("-._")[:100]
    return s if NAME_RE.fullmatch(s) else "run"


def inside(root: Path, path: Path) -> bool:
    """Whether `path` is `root` or below it, after resolving '..' and symbolic links."""
    r, p = root.resolve(), path.resolve()
    return p == r or r in p.parents

"""Names that become file names, and folders tcplab replaces: checked, so results stay inside
the folder the user chose, whatever a spec, a log or an archive says."""

from __future__ import annotations

import re
from pathlib import Path

#: A run or sweep name: letters, digits, '.', '_', '+', '-'; no separator, no leading dot; 100 at most.
NAME_RE = re.compile(r"[^\W_][\w.+-]{0,99}")
NAME_RULE = "1-100 letters, digits, '.', '_', '+' or '-', starting with a letter or digit"
#: Files that mark a folder as tcplab's own results (a run, its iterations, peers, a sweep, an export).
RESULT_MARKERS = ("meta.json", "summary.json", "iterations.json", "peers.json", "sweep.json", "compare.json", "export.json")


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


def replaceable(folder: Path) -> None:
    """Raise unless `folder` (about to be replaced by --force) is tcplab's own results or empty:
    `--out ~ --force` must not delete a home directory."""
    if not folder.exists():
        return
    if not folder.is_dir():
        raise UnsafePath(f"{folder} is a file, not a results folder")
    if any((folder / m).is_file() for m in RESULT_MARKERS) or not any(folder.iterdir()):
        return
    raise UnsafePath(f"{folder} is not a tcplab results folder (no {', '.join(RESULT_MARKERS[:2])}); "
                     "--force replaces only results folders: choose another --out")


def inside(root: Path, path: Path) -> bool:
    """Whether `path` is `root` or below it, after resolving '..' and symbolic links."""
    r, p = root.resolve(), path.resolve()
    return p == r or r in p.parents

"""`tcplab remote restore LAB.toml`: undo, on the lab's machines, what killed runs left (each run's
journal, kept next to LAB.toml), and the undoing a run does itself when it ends."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Callable

from .journal import Journal, owner_alive, pending
from .lab import load_lab
from .ssh import RemoteError, Ssh, control_dir


def undo_runner(sshs: dict[str, Ssh]) -> Callable[[str, list[str]], tuple[bool, str]]:
    def run(host: str, words: list[str]) -> tuple[bool, str]:
        s = sshs.get(host)
        if s is None:
            return False, f"{host} is no longer in LAB.toml"
        try:
            p = s.run(words, check=False, timeout=60)
        except RemoteError as e:
            return False, str(e)
        return p.returncode == 0, (p.stderr.strip() or p.stdout.strip())[-300:]

    return run


def restore(lab_path: str | Path) -> tuple[list[str], list[str]]:
    """Undo what runs on this lab left (their journals), unless their process still runs.
    Returns (run ids restored, lines that could not be undone)."""
    lab = load_lab(lab_path)
    done, failed = [], []
    cdir = control_dir()
    sshs = {n: Ssh(lab, m, cdir) for n, m in lab.machines.items()}
    try:
        for path in pending(lab.journal_dir):
            if owner_alive(path):
                continue
            j = Journal.load(path)
            problems = j.undo(undo_runner(sshs))
            failed += problems
            if not problems:
                done.append(j.run_id)
            old = Path(j.control_dir) if j.control_dir.startswith("/tmp/tcplab-ssh-") else None
            if old is not None and old.is_dir():  # the killed run's ssh masters (ControlPersist)
                for n, m in lab.machines.items():
                    Ssh(lab, m, old).close()
                shutil.rmtree(old, ignore_errors=True)
    finally:
        for s in sshs.values():
            s.close()
        shutil.rmtree(cdir, ignore_errors=True)
    return done, failed

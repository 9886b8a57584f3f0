"""The local journal of a remote run: before tcplab changes anything on a lab machine it appends
the command that undoes it (the old sysctl value, `tc qdisc del`, the old route, the run's folder)
to a JSON file next to LAB.toml, written atomically. Restoring runs the undo commands in reverse
order; the same code serves the end of a run (success, failure, Ctrl-C, SIGTERM) and
`tcplab remote restore LAB.toml` after a run was SIGKILLed.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ...outdir import pid_alive


@dataclass
class Journal:
    path: Path
    run_id: str
    lab: str
    control_dir: str = ""  # the run's ssh control sockets: masters a killed run left are ended
    entries: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @classmethod
    def create(cls, directory: Path, run_id: str, lab: str, control_dir: str = "") -> "Journal":
        directory.mkdir(parents=True, exist_ok=True)
        j = cls(directory / f"{run_id}.json", run_id, lab, control_dir)
        j._write()
        return j

    @classmethod
    def load(cls, path: Path) -> "Journal":
        data = json.loads(path.read_text())
        return cls(path, data["run_id"], data["lab"], data.get("control_dir", ""), data["entries"])

    def record(self, host: str, what: str, undo: list[str], *, ignore: str | None = None) -> None:
        """Before a change on `host`: the argument list that undoes it (`ignore`: an error text
        that means it is already undone)."""
        with self._lock:  # hosts are configured in parallel
            self.entries.append({"host": host, "what": what, "undo": [str(w) for w in undo], "ignore": ignore,
                                 "done": False})
            self._write()

    def _write(self) -> None:
        tmp = self.path.with_suffix(".partial")
        tmp.write_text(json.dumps({"run_id": self.run_id, "lab": self.lab, "control_dir": self.control_dir,
                                   "owner_pid": os.getpid(),
                                   "written": time.time(), "entries": self.entries}, indent=1))
        tmp.replace(self.path)

    def undo(self, run: Callable[[str, list[str]], tuple[bool, str]]) -> list[str]:
        """Run every pending undo, newest first, with `run(host, words) -> (ok, error)`.
        Returns one line per undo that failed (kept in the journal); removes the journal when
        everything is undone."""
        failed = []
        for e in reversed(self.entries):
            if e["done"]:
                continue
            ok, err = run(e["host"], e["undo"])
            if ok or (e.get("ignore") and e["ignore"] in err):
                e["done"] = True
                self._write()
            else:
                failed.append(f"{e['host']}: could not undo {e['what']}: {err}")
        if not failed:
            self.path.unlink(missing_ok=True)
        return failed


def pending(directory: Path) -> list[Path]:
    """Journals of runs on this lab that were not restored, oldest first."""
    return sorted(directory.glob("*.json"), key=lambda p: p.stat().st_mtime) if directory.is_dir() else []


def owner_alive(path: Path) -> bool:
    """Whether the process that wrote the journal still runs (then it restores itself)."""
    try:
        pid = json.loads(path.read_text()).get("owner_pid")
    except (OSError, ValueError):
        return False
    if not pid or pid == os.getpid():
        return False
    return pid_alive(pid)

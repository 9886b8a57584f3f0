"""The remote backend: runs a spec on the user's own lab machines over ssh (LAB.toml maps the
spec's nodes to machines) and writes the same tables, summary and report as the other backends.
The run's phases: phases.py; undoing what killed runs left: restore.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...model import Experiment
from .. import Backend, Progress, Refused
from . import phases
from .lab import LabError, check_against, load_lab
from .preflight import PreflightFailed
from .restore import restore
from .ssh import RemoteError

__all__ = ["RemoteBackend", "restore", "RemoteError", "PreflightFailed", "LabError", "load_lab"]


class RemoteBackend(Backend):
    """The machines of a LAB.toml, over ssh; one run at a time (one lab)."""

    name = "remote"
    parallel = False
    peers = True
    errors = (RemoteError, LabError, PreflightFailed)

    def __init__(self, lab: str | Path):
        self.lab = Path(lab).resolve()  # absolute: runs may change directory; meta.json records it

    @classmethod
    def from_options(cls, testbed: str | Path | None = None) -> Backend:
        if testbed is None:
            raise Refused("--backend remote needs --testbed LAB.toml (docs/remote.md)")
        return cls(testbed)

    def check(self, experiments: list[Experiment]) -> None:
        """LAB.toml is read and matched to each experiment before any output or connection."""
        try:
            lab = load_lab(self.lab)
            for exp in experiments:
                check_against(lab, exp)
        except LabError as e:
            raise Refused(str(e)) from None

    def run(self, exp: Experiment, directory: Path, progress: Progress | None = None) -> dict[str, Any]:
        return phases.run(exp, directory, progress, self.lab)

    def meta(self) -> dict[str, Any]:
        return {"testbed": str(self.lab)}

    def explain(self, e: BaseException) -> tuple[list[str], str | None]:
        if isinstance(e, PreflightFailed):
            return list(e.problems), "every host was restored" if e.after_changes else "nothing was changed on any host"
        return [f"remote backend: {e}"], None

"""Backends run an Experiment and stream its records into a results folder, each behind the one
small interface `Backend` (its name, what it checks before a run, the errors it raises, run), found
by name in `REGISTRY`. A backend owns its own configuration (the remote one its LAB.toml)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar

if TYPE_CHECKING:  # typing only: the model needs no import to name it here
    from ..model import Experiment

#: progress(now_ns, stop_ns): the run is at simulated (or wall) time now of stop.
Progress = Callable[[int, int], None]


class Refused(ValueError):
    """A backend cannot run this here (the message says why, in one line): raised before any
    output is written or any machine is touched."""


class Backend:
    """One way to run an Experiment. A subclass sets `name` and implements `run`; it refuses in
    `check` what it cannot run, and names in `errors` the failures it reports in one line."""

    name: ClassVar[str]
    #: Several runs at once (a sweep's --jobs) are fine; not where runs share one machine or lab.
    parallel: ClassVar[bool] = True
    #: Runs peer compares (the experiment on every stack x cc): a backend that has the stacks.
    peers: ClassVar[bool] = False
    #: Its own failures, which `explain` turns into lines for the user instead of a traceback.
    errors: ClassVar[tuple[type[BaseException], ...]] = ()

    @classmethod
    def from_options(cls, testbed: str | Path | None = None) -> Backend:
        """The backend for the CLI's and the API's options (only the remote backend takes a LAB.toml)."""
        if testbed is not None:
            raise Refused("--testbed is for --backend remote")
        return cls()

    def check(self, experiments: list[Experiment]) -> None:
        """Refuse (Refused) what this backend cannot run, before any output."""

    def run(self, exp: Experiment, directory: Path, progress: Progress | None = None) -> dict[str, Any]:
        """Run `exp`, writing the record tables into `directory`; the totals analysis/summary.py reads."""
        raise NotImplementedError

    def meta(self) -> dict[str, Any]:
        """What meta.json records of this backend besides its name."""
        return {}

    def explain(self, e: BaseException) -> tuple[list[str], str | None]:
        """One of `errors` as error lines, and a note to print after them (or None)."""
        return [f"{self.name} backend: {e}"], None


#: name -> (module, class). Imported on first use: a simulated run starts without loading the
#: kernel backends' modules.
REGISTRY: dict[str, tuple[str, str]] = {
    "sim": ("tcplab.backends.sim", "SimBackend"),
    "netns": ("tcplab.backends.netns", "NetnsBackend"),
    "remote": ("tcplab.backends.remote", "RemoteBackend"),
}
NAMES = tuple(REGISTRY)


def backend_class(name: str) -> type[Backend]:
    """The class registered as `name` (Refused for a name that is not a backend)."""
    if name not in REGISTRY:
        raise Refused(f"--backend: {name!r} is not a backend; allowed: {', '.join(NAMES)}")
    module, cls = REGISTRY[name]
    return getattr(importlib.import_module(module), cls)


def peer_backends() -> tuple[str, ...]:
    """The backends that run peer compares (those with every stack)."""
    return tuple(n for n in NAMES if backend_class(n).peers)


def create(name: str, testbed: str | Path | None = None) -> Backend:
    """The backend `name` with the options it takes (Refused for a wrong name or option)."""
    return backend_class(name).from_options(testbed)


def default() -> Backend:
    """The default backend, the simulator."""
    return create("sim")

"""The real-kernel backend: runs a spec on this machine's Linux TCP in network namespaces, with
htb/pfifo bottlenecks, tcplab-linkem for delay and loss, iperf3 for traffic and the tcp_probe
tracepoint for cwnd, and writes the same tables as the simulator. The run's phases: phases.py."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ...model import Experiment
from .. import Backend, Progress, Refused
from . import phases, plan as planmod
from .host import HostError
from .plan import PlanError

__all__ = ["NetnsBackend", "HostError", "PlanError"]


class NetnsBackend(Backend):
    """This machine's Linux TCP in network namespaces (root); one run at a time."""

    name = "netns"
    parallel = False
    errors = (HostError, PlanError)

    def check(self, experiments: list[Experiment]) -> None:
        if os.geteuid() != 0:
            raise Refused("the netns backend needs root (network namespaces, qdiscs, tracefs): run it with sudo")
        for exp in experiments:
            try:
                planmod.build(exp, "tl0000")
            except PlanError as e:
                raise Refused(f"netns backend: {e}") from None

    def run(self, exp: Experiment, directory: Path, progress: Progress | None = None) -> dict[str, Any]:
        return phases.run(exp, directory, progress)

"""Python's share of a `tcplab run`: the process's CPU time minus the time spent inside the
simulator's own calls (run_until, take_tables), each timed around the call, printed to stderr
when the run ends. Everything else — start-up imports, the command line, spec resolution, record
conversion and Parquet writing, the summary, the report — is Python's share.

    PYTHONPATH=python taskset -c 0 .venv/bin/python bench/python_share.py run T1 --no-intervals [--no-report] ...

Any `tcplab` arguments after the script name. To compare with an older commit, run the same
command with PYTHONPATH pointing at that commit's python/ (with its native module built).
"""

from __future__ import annotations

import atexit
import os
import runpy
import sys
import time

from tcplab import _native
from tcplab.backends import sim as sim_backend

spent = {"run_until": 0.0, "take_tables": 0.0}


class _TimedSimulation:
    """The native simulation with its two per-step calls timed (process CPU time)."""

    def __init__(self, *args):
        self._sim = _native.Simulation(*args)

    def run_until(self, t_ns: int):
        c0 = time.process_time()
        try:
            return self._sim.run_until(t_ns)
        finally:
            spent["run_until"] += time.process_time() - c0

    def take_tables(self):
        c0 = time.process_time()
        try:
            return self._sim.take_tables()
        finally:
            spent["take_tables"] += time.process_time() - c0

    def __getattr__(self, name: str):
        return getattr(self._sim, name)


class _Native:
    Simulation = _TimedSimulation

    def __getattr__(self, name: str):
        return getattr(_native, name)


def _report() -> None:
    t = os.times()
    cpu_s = t.user + t.system
    print(f"process CPU {cpu_s:.3f} s: simulator run_until {spent['run_until']:.3f} s, take_tables "
          f"{spent['take_tables']:.3f} s; Python {cpu_s - sum(spent.values()):.3f} s", file=sys.stderr)


sim_backend._native = _Native()
atexit.register(_report)
sys.argv = ["tcplab", *sys.argv[1:]]
runpy.run_module("tcplab.cli", run_name="__main__")

#!/usr/bin/env python3
"""What a congestion-control algorithm written in Python costs: the same run (NewReno over a
100 Mbit/s x 10 ms pipe, ~1-BDP queue, `rfc` stack) with the built-in `newreno` and with
examples/aimd.py, which computes exactly the same (identical records, tests/test_user_cc.py),
timed in-process in alternating rounds. Usage: bench/user_cc.py [--duration 60s] [--rounds 3]"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SPEC = {
    "name": "user-cc-bench",
    "topology": {"kind": "pipe", "bottleneck": {"rate": "100Mbit", "delay": "5ms", "buffer": "84p", "loss": 0.0001}},
    "senders": {"s1": {"to": "r1", "stack": "rfc", "cc": "newreno", "time": "60s"}},
}


def once(cc: str, duration: str) -> tuple[float, int]:
    from tcplab.backends import sim
    from tcplab.spec import resolve

    spec = {**SPEC, "senders": {"s1": {**SPEC["senders"]["s1"], "cc": cc, "time": duration}}}
    resolved = resolve(spec, "bench")
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        totals = sim.run(resolved, Path(d))
        return time.perf_counter() - t0, totals["events"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--duration", default="60s")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    os.chdir(REPO)  # examples/ importable
    sys.path.insert(0, str(REPO))
    times: dict[str, list[float]] = {"newreno": [], "examples.aimd:Aimd": []}
    events = 0
    for r in range(a.rounds):
        for cc in (list(times) if r % 2 == 0 else list(times)[::-1]):
            t, events = once(cc, a.duration)
            times[cc].append(t)
    n, p = statistics.median(times["newreno"]), statistics.median(times["examples.aimd:Aimd"])
    print(f"{a.duration} simulated, {events} events, {a.rounds} alternating rounds (wall s):")
    print(f"  built-in newreno        {n:.3f}  {times['newreno']}")
    print(f"  examples/aimd.py        {p:.3f}  {times['examples.aimd:Aimd']}")
    print(f"  Python algorithm: {p / n:.2f}x the built-in's time")


if __name__ == "__main__":
    main()

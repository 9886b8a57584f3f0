"""How long a calibration of a T1-sized run takes: T1 (two CUBIC flows, 1 Gbit/s x 40 ms) for 60 s
simulated with hidden bottleneck buffer, random loss and rate, calibrated with those three as
unknowns (the default budget: 20 + 20 per unknown = 80 candidates, one seed each). Prints the wall
time, the candidates and runs, and each value found against the hidden one.

Usage: .venv/bin/python bench/calibrate_t1.py [--duration 60s] [--budget N] [--jobs 2] [--seeds 1] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import tcplab
from tcplab.api import spec_data
from tcplab.calibrate import calibrate
from tcplab.spec.schema import set_key

HIDDEN = {"topology.bottleneck.buffer": "400p", "topology.bottleneck.loss": 0.00002,
          "topology.bottleneck.rate": "800Mbit"}
UNKNOWN = {"topology.bottleneck.buffer": {"between": ["64p", "2048p"]},
           "topology.bottleneck.loss": {"between": [0.000001, 0.001], "scale": "log"},
           "topology.bottleneck.rate": {"between": ["200Mbit", "1Gbit"]}}


def t1(values: dict, duration: str) -> dict:
    data, _ = spec_data("T1", [f"senders.*.time={duration}"])
    for k, v in values.items():
        set_key(data, k, v, "bench")
    return data


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", default="60s")
    ap.add_argument("--budget", type=int)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=1, help="seeds per candidate (calibrate's default here would be 2: loss)")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    out = a.out or Path(tempfile.mkdtemp(prefix="tcplab-t1-calibration-"))
    t0 = time.monotonic()
    measured = tcplab.run(t1(HIDDEN, a.duration), out=out / "measured", report=False).path
    print(f"measured run (T1, {a.duration}): {time.monotonic() - t0:.1f} s", flush=True)
    t0 = time.monotonic()
    cal = calibrate(measured, t1(UNKNOWN, a.duration), out / "calibration", source="T1", budget=a.budget, jobs=a.jobs,
                    seeds=a.seeds)
    wall = time.monotonic() - t0
    r = cal.result
    print(f"calibration: {r['evaluations']} candidates, {r['runs']} runs, {wall:.0f} s wall ({wall / 60:.1f} min), "
          f"--jobs {a.jobs}")
    for u in r["unknowns"]:
        print(f"  {u['key']}: hidden {HIDDEN[u['key']]}, found {u['value']} ({u['verdict'].split(':')[0]}, "
              f"spread {u['spread']})")
    for o in r["observables"]:
        print(f"  {o['observable']}: measured {o['measured']}, twin {o['twin']}, error {o['error']:.3f}")
    print(f"folders in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

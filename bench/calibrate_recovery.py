"""Parameter recovery of `tcplab calibrate` on the simulator: a "measured" run simulated with known
hidden values, then calibrated from a spec where those values are unknowns; each value found is
checked against the hidden one within the case's tolerance (a share of the range, or for an
unknown on a log scale the relative error), and calibrate's own verdict (identifiable or not) is shown.

Usage: .venv/bin/python bench/calibrate_recovery.py [--budget N] [--jobs 2] [--only NAME] [--out DIR]
Prints one line per unknown and the wall time of each calibration; exit 1 if a recovery misses.
"""

from __future__ import annotations

import argparse
import copy
import math
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import tcplab
from tcplab.calibrate import calibrate
from tcplab.spec.schema import set_key

BASE = """
name = "recover"
seed = 1
[topology]
kind = "dumbbell"
pairs = 1
[topology.access]
rate = "100Mbit"
delay = "1ms"
[topology.bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "100p"
[senders.s1]
to = "r1"
cc = "cubic"
time = "20s"
"""

#: name -> (hidden values, unknowns, seeds, tolerance: share of the range, or a ratio on a log scale)
CASES = {
    "buffer": ({"topology.bottleneck.buffer": "100p"},
               {"topology.bottleneck.buffer": {"between": ["16p", "1000p"]}}, 1, 0.05),
    "rate": ({"topology.bottleneck.rate": "12Mbit"},
             {"topology.bottleneck.rate": {"between": ["5Mbit", "50Mbit"], "scale": "log"}}, 1, 0.05),
    "loss": ({"topology.bottleneck.loss": 0.002, "topology.bottleneck.buffer": "1000p"},
             {"topology.bottleneck.loss": {"between": [0.0001, 0.02], "scale": "log"}}, 2, 0.3),
    "buffer+rate": ({"topology.bottleneck.buffer": "60p", "topology.bottleneck.rate": "30Mbit"},
                    {"topology.bottleneck.buffer": {"between": ["16p", "500p"]},
                     "topology.bottleneck.rate": {"between": ["10Mbit", "100Mbit"], "scale": "log"}}, 1, 0.1),
    "host queue": ({"topology.access.delay": "5ms", "topology.access.rate": "20Mbit", "topology.bottleneck.rate": "40Mbit",
                    "hosts.s1.netem.limit": 30},
                   {"hosts.s1.netem.limit": {"between": [5, 300]}}, 1, 0.1),
    "tx queue": ({"topology.access.rate": "20Mbit", "topology.bottleneck.rate": "40Mbit", "hosts.s1.nic.tx_queue": "30p"},
                 {"hosts.s1.nic.tx_queue": {"between": ["5p", "300p"]}}, 1, 0.1),
    "rx budget": ({"hosts.r1.nic.rx_pps": 1200, "hosts.r1.nic.rx_ring": 64},
                  {"hosts.r1.nic.rx_pps": {"between": [200, 5000], "scale": "log"}}, 1, 0.1),
    "delay+buffer": ({"topology.bottleneck.delay": "25ms", "topology.bottleneck.buffer": "200p"},
                     {"topology.bottleneck.delay": {"between": ["1ms", "50ms"]},
                      "topology.bottleneck.buffer": {"between": ["16p", "1000p"]}}, 1, 0.1),
}


def _spec(values: dict) -> dict:
    data = tomllib.loads(BASE)
    for k, v in values.items():
        set_key(data, k, copy.deepcopy(v), "bench")
    return data


def miss(row: dict, hidden, tolerance: float) -> float:
    """How far the value found is from the hidden one: a ratio (log scale), else a share of the range."""
    from tcplab.spec.unknowns import find

    u = find(_spec({row["key"]: {"between": row["range"], "scale": row["scale"]}}), "bench")[0]
    found, truth = u.fraction(_base(u, row["value"])), u.fraction(_base(u, hidden))
    if row["scale"] == "log":
        return math.exp(abs(found - truth) * (math.log(u.hi) - math.log(u.lo))) - 1  # relative error
    return abs(found - truth)


def _base(u, value) -> float:
    """A spec value in the unknown's base unit (bit/s, ns, packets)."""
    from tcplab.spec import unknowns

    if isinstance(value, (int, float)):
        return float(value)
    return unknowns._bound("bench", u.key, u.kind, value)[0]


def run_case(name: str, out: Path, budget: int, jobs: int) -> bool:
    hidden, unknown, seeds, tol = CASES[name]
    measured = tcplab.run(_spec(hidden), out=out / f"{name}-measured", report=False)
    t0 = time.monotonic()
    cal = calibrate(measured.path, _spec(hidden | unknown), out / f"{name}-calibration", source="bench",
                    budget=budget, jobs=jobs, seeds=seeds, report=False)
    wall = time.monotonic() - t0
    ok = True
    for row in cal.result["unknowns"]:
        m = miss(row, hidden[row["key"]], tol)
        good = m <= tol
        ok &= good
        print(f"{name:13s} {row['key']:30s} hidden {hidden[row['key']]!s:>10} found {row['value']!s:>14} "
              f"miss {m:.3f} (tolerance {tol}) {'ok' if good else 'MISSED'}; "
              f"calibrate says {'identifiable' if row['identifiable'] else 'NOT identifiable'} "
              f"(spread {row.get('spread')})", flush=True)
    print(f"{name:13s} {cal.result['evaluations']} candidates, {cal.result['runs']} runs, {wall:.1f} s", flush=True)
    return ok


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=int, help="candidates per case (default: calibrate's, 20 + 20 per unknown)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", action="append")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    out = a.out or Path(tempfile.mkdtemp(prefix="tcplab-recovery-"))
    results = [run_case(n, out, a.budget, a.jobs) for n in (a.only or CASES)]
    print(f"{sum(results)} of {len(results)} cases recovered; folders in {out}")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Out of sample on this machine's kernel (root: the netns backend): a dumbbell whose bottleneck
rate, buffer and random loss the calibration is not told is run with Linux cubic, reno and bbr;
the twin is calibrated on the cubic run only (its results folder, then an import of its raw logs:
the tcp_probe trace and iperf3's JSON), and reno and bbr are predicted on the twin and compared
with their own kernel runs: throughput, retransmissions, RTT p50 and p95 errors.

Usage: .venv/bin/python bench/calibrate_kernel.py [--duration 30s] [--budget 80] [--seeds 2] [--loss 0.0005] [--out DIR]
Prints the hidden and found values, then one markdown row per prediction (docs/fidelity.md).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import numpy as np

import tcplab
from tcplab.calibrate import calibrate
from tcplab.spec.schema import set_key
from tcplab.store import read_table

HIDDEN = {"topology.bottleneck.rate": "40Mbit", "topology.bottleneck.buffer": "80p", "topology.bottleneck.loss": 0.0005}
UNKNOWN = {"topology.bottleneck.rate": {"between": ["10Mbit", "100Mbit"], "scale": "log"},
           "topology.bottleneck.buffer": {"between": ["10p", "500p"]},
           "topology.bottleneck.loss": {"between": [0.00001, 0.01], "scale": "log"}}
BASE = """
name = "kernel-twin"
seed = 1
[topology]
kind = "dumbbell"
pairs = 1
[topology.access]
rate = "1Gbit"
delay = "100us"
[topology.bottleneck]
rate = "100Mbit"
delay = "10ms"
[senders.s1]
to = "r1"
cc = "cubic"
time = "30s"
"""
CCS = ("cubic", "reno", "bbr")


def spec(values: dict, duration: str, cc: str = "cubic") -> dict:
    data = tomllib.loads(BASE)
    for k, v in (values | {"senders.s1.cc": cc, "senders.s1.time": duration}).items():
        set_key(data, k, copy.deepcopy(v), "bench")
    return data


def metrics(run: Path) -> dict:
    """Throughput (Mbit/s), retransmissions, RTT p50/p95 (ms, the sampled srtt) of a one-flow run."""
    info = json.loads((run / "summary.json").read_text())
    f = info["flows"][0]
    srtt = read_table(run, "flows", ["srtt_us"])["srtt_us"].to_numpy(dtype=float)
    srtt = srtt[srtt > 0] / 1e3
    return {"throughput_mbps": f["throughput_mbps"], "retransmits": f["retransmits"],
            "rtt_p50_ms": float(np.percentile(srtt, 50)), "rtt_p95_ms": float(np.percentile(srtt, 95))}


def errors(twin: dict, kernel: dict) -> dict:
    return {k: (twin[k] - kernel[k]) / kernel[k] if kernel[k] else float("nan") for k in kernel}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", default="30s")
    ap.add_argument("--budget", type=int, default=80)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--loss", type=float, default=HIDDEN["topology.bottleneck.loss"], help="the hidden random loss")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    HIDDEN["topology.bottleneck.loss"] = a.loss
    out = a.out or Path(tempfile.mkdtemp(prefix="tcplab-kernel-twin-"))
    kernel = {cc: tcplab.run(spec(HIDDEN, a.duration, cc), out=out / f"kernel-{cc}", backend="netns", report=False).path
              for cc in CCS}
    imported = tcplab.import_logs([kernel["cubic"] / "netns" / "trace.txt", kernel["cubic"] / "netns" / "iperf3-1.json"],
                                  out=out / "imported-cubic", report=False).path
    rows = []
    for label, measured in (("results folder", kernel["cubic"]), ("imported logs", imported)):
        t0 = time.monotonic()
        cal = calibrate(measured, spec(UNKNOWN, a.duration), out / f"calibration-{label.split()[0]}", source="bench",
                        budget=a.budget, jobs=2, seeds=a.seeds, report=True)
        wall = time.monotonic() - t0
        print(f"calibrated on the cubic {label}: {cal.result['evaluations']} candidates, {cal.result['runs']} runs, "
              f"{wall:.0f} s")
        for u in cal.result["unknowns"]:
            print(f"  {u['key']}: hidden {HIDDEN[u['key']]}, found {u['value']} ({u['verdict'].split(':')[0]}, "
                  f"spread {u['spread']})")
        twin = tomllib.loads(cal.calibrated.read_text())
        for cc in CCS:
            twin_cc = copy.deepcopy(twin)
            set_key(twin_cc, "senders.s1.cc", cc, "bench")
            pred = tcplab.run(twin_cc, out=out / f"twin-{label.split()[0]}-{cc}", report=False).path
            e, k, t = errors(metrics(pred), metrics(kernel[cc])), metrics(kernel[cc]), metrics(pred)
            rows.append(f"| {label} | {cc}{' (calibrated on)' if cc == 'cubic' else ''} | "
                        f"{k['throughput_mbps']:.1f} / {t['throughput_mbps']:.1f} ({100 * e['throughput_mbps']:+.0f}%) | "
                        f"{k['retransmits']} / {t['retransmits']} ({100 * e['retransmits']:+.0f}%) | "
                        f"{k['rtt_p50_ms']:.1f} / {t['rtt_p50_ms']:.1f} ({100 * e['rtt_p50_ms']:+.0f}%) | "
                        f"{k['rtt_p95_ms']:.1f} / {t['rtt_p95_ms']:.1f} ({100 * e['rtt_p95_ms']:+.0f}%) |")
    print("| calibrated on | cc | Mbit/s kernel / twin | retransmits | RTT p50 ms | RTT p95 ms |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    print(f"folders in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

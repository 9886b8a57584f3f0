"""Benchmark of the sweep executor, side by side with what users do without it.

1. Speed-up: a CPU-bound sweep (8 runs of a 100 Mbit/s pipe, ~2-3 s of CPU each) with --jobs 1
   and --jobs 2; wall time of each, and the ratio (issue 7's target: >= 1.8x on 2 cores).
2. Per-run overhead: sweeps of 10 and 40 tiny runs (--jobs 1, no reports); the marginal wall time
   per run minus the marginal time inside the runs themselves (each run's compute time, from its
   log) is what the executor adds per run (target: < 100 ms). Compared with a shell loop of
   `tcplab run` processes over the same runs, the way sweeps are done by hand.

Hypervisor steal during each measurement is printed: it inflates wall time on a shared VM.
Usage: .venv/bin/python bench/sweep.py
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TCPLAB = [sys.executable, "-m", "tcplab.cli"]

BASE = """
name = "{name}"
seed = 1
[topology]
kind = "pipe"
[topology.bottleneck]
rate = "{rate}"
delay = "10ms"
buffer = "100p"
[senders.s1]
to = "r1"
time = "{time}"
"""


def steal() -> int:
    with open("/proc/stat") as fh:
        return int(fh.readline().split()[8])


def timed(args: list[str], cwd: Path) -> tuple[float, int]:
    s0, t0 = steal(), time.monotonic()
    subprocess.run(args, cwd=cwd, check=True, capture_output=True)
    return time.monotonic() - t0, steal() - s0


def compute_s(sweep_dir: Path) -> float:
    return sum(float(m.group(1)) for p in (sweep_dir / "logs").glob("*.log")
               for m in [re.search(r"status: done in ([0-9.]+) s", p.read_text())] if m)


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="tcplab-bench-sweep-"))
    cpu = work / "cpu.toml"
    cpu.write_text(BASE.format(name="cpu", rate="100Mbit", time="30s")
                   + '[sweep]\n"senders.s1.cc" = ["newreno", "cubic"]\n'
                   '"topology.bottleneck.delay" = ["5ms", "10ms", "20ms", "40ms"]\n')
    print("1. CPU-bound sweep, 8 runs (100 Mbit/s pipe, 30 s simulated each), no reports")
    walls = {}
    for jobs in (1, 2):
        wall, st = timed([*TCPLAB, "sweep", str(cpu), "--jobs", str(jobs), "--out", f"cpu-j{jobs}", "--no-report"], work)
        walls[jobs] = wall
        print(f"   --jobs {jobs}: {wall:6.2f} s wall (steal {st / 100:.2f} CPU-s), runs' own time "
              f"{compute_s(work / f'cpu-j{jobs}'):.2f} s")
    print(f"   speed-up 2 jobs vs 1: {walls[1] / walls[2]:.2f}x")

    print("2. Per-run overhead: sweeps of tiny runs (10 Mbit/s, 0.2 s simulated), --jobs 1, no reports")
    res = {}
    for n in (10, 40):
        spec = work / f"tiny{n}.toml"
        seeds = list(range(1, n + 1))
        spec.write_text(BASE.format(name=f"tiny{n}", rate="10Mbit", time="200ms") + f"[sweep]\nseed = {seeds}\n")
        wall, st = timed([*TCPLAB, "sweep", str(spec), "--jobs", "1", "--out", f"tiny{n}", "--no-report"], work)
        res[n] = (wall, compute_s(work / f"tiny{n}"))
        print(f"   {n} runs: {wall:6.2f} s wall, runs' own time {res[n][1]:.2f} s (steal {st / 100:.2f} CPU-s)")
    marginal_wall = (res[40][0] - res[10][0]) / 30
    marginal_run = (res[40][1] - res[10][1]) / 30
    print(f"   marginal wall per run {marginal_wall * 1000:.0f} ms, of which inside the run {marginal_run * 1000:.0f} ms:"
          f" executor overhead {(marginal_wall - marginal_run) * 1000:.0f} ms per run; fixed start-up "
          f"{res[10][0] - 10 * marginal_wall:.2f} s")

    single = work / "single.toml"
    single.write_text(BASE.format(name="single", rate="10Mbit", time="200ms"))
    t0 = time.monotonic()
    for s in range(1, 11):
        subprocess.run([*TCPLAB, "run", str(single), "--seed", str(s), "--out", f"loop/{s}", "--no-report",
                        "--no-intervals"], cwd=work, check=True, capture_output=True)
    loop = time.monotonic() - t0
    print(f"   the same 10 runs as a shell loop of `tcplab run`: {loop:.2f} s wall, {loop / 10 * 1000:.0f} ms per run"
          f" (vs {res[10][0]:.2f} s for the sweep of 10)")
    print(f"(work folder {work})")


if __name__ == "__main__":
    main()

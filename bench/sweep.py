"""Benchmark of the sweep executor, side by side with what users do without it.

1. Speed-up: a CPU-bound sweep, T5's rate sweep (11 runs, 15..160 Mbit/s, 1010 s simulated each;
   `--t5-duration 300s` for a quicker look), with --jobs 1 and --jobs 2: wall time of each and the ratio (issue 7's target:
   >= 1.8x on 2 cores). Beside it, what this machine gives any two processes: one `tcplab run` of
   a CPU-bound spec alone, then two at once (the ceiling for any executor).
2. Per-run overhead: sweeps of 10 and 80 tiny runs (--jobs 1, no reports), three times each
   (medians); the marginal wall time per run minus the marginal time inside the runs themselves
   (each run's compute time, from its log) is what the executor adds per run (target: < 100 ms).
   Compared with a shell loop of `tcplab run` processes over the same runs, the way sweeps are
   done by hand.

Hypervisor steal during each measurement is printed: it inflates wall time on a shared VM.
Usage: .venv/bin/python bench/sweep.py [--t5-duration 300s]
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


def gaps_overhead_ms(sweep_dir: Path) -> float:
    """What the executor adds between runs, from the driver's side: the logs are written by the
    driver as each result arrives, so consecutive log times minus the later run's own time is
    the time spent outside runs (queueing, result transfer, log, progress), per run."""
    logs = []
    for p in (sweep_dir / "logs").glob("*.log"):
        m = re.search(r"status: done in ([0-9.]+) s", p.read_text())
        logs.append((p.stat().st_mtime_ns, float(m.group(1))))
    logs.sort()
    gaps = [(b[0] - a[0]) / 1e6 - b[1] * 1000 for a, b in zip(logs, logs[1:])]
    return sorted(gaps)[len(gaps) // 2]


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="tcplab-bench-sweep-"))
    dur = sys.argv[sys.argv.index("--t5-duration") + 1] if "--t5-duration" in sys.argv else None
    shown = dur or "1010 s (the preset's)"
    print(f"1. CPU-bound sweep: T5 (11 runs, 15..160 Mbit/s), {shown} simulated each, no reports")
    walls = {}
    for jobs in (1, 2):
        wall, st = timed([*TCPLAB, "sweep", "T5", *(["--duration", dur] if dur else []), "--jobs", str(jobs),
                          "--out", f"t5-j{jobs}", "--no-report"], work)
        walls[jobs] = wall
        print(f"   --jobs {jobs}: {wall:6.2f} s wall (steal {st / 100:.2f} CPU-s), runs' own time "
              f"{compute_s(work / f't5-j{jobs}'):.2f} s")
    print(f"   speed-up 2 jobs vs 1: {walls[1] / walls[2]:.2f}x")
    one = work / "one.toml"
    one.write_text(BASE.format(name="one", rate="1Gbit", time="150s"))
    args = [*TCPLAB, "run", str(one), "--no-report", "--no-intervals", "--force", "--out"]
    alone, _ = timed([*args, "alone"], work)
    s0, t0 = steal(), time.monotonic()
    pair = [subprocess.Popen([*args, f"pair{i}"], cwd=work, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL) for i in (1, 2)]
    for p in pair:
        p.wait()
    both, st = time.monotonic() - t0, steal() - s0
    print(f"   this machine's ceiling: one CPU-bound `tcplab run` {alone:.2f} s alone, two at once {both:.2f} s "
          f"(steal {st / 100:.2f} CPU-s): {2 * alone / both:.2f}x")

    print("2. Per-run overhead: sweeps of tiny runs (10 Mbit/s, 0.2 s simulated), --jobs 1, no reports")
    res = {}
    for n in (10, 80):
        spec = work / f"tiny{n}.toml"
        spec.write_text(BASE.format(name=f"tiny{n}", rate="10Mbit", time="200ms") + f"[sweep]\nseed = {list(range(1, n + 1))}\n")
        trials = []
        for k in range(3):
            wall, st = timed([*TCPLAB, "sweep", str(spec), "--jobs", "1", "--out", f"tiny{n}-{k}", "--no-report"], work)
            trials.append((wall, compute_s(work / f"tiny{n}-{k}"), st))
        trials.sort()
        res[n] = trials[1]
        print(f"   {n} runs: {res[n][0]:6.2f} s wall (median of 3: " + ", ".join(f"{t[0]:.2f}" for t in trials)
              + f"), runs' own time {res[n][1]:.2f} s, steal {sum(t[2] for t in trials) / 100:.2f} CPU-s")
        if n == 80:
            per = [gaps_overhead_ms(work / f"tiny{n}-{k}") for k in range(3)]
            print("   executor time between consecutive runs (median gap minus the run's own time): "
                  + ", ".join(f"{x:.1f}" for x in per) + " ms per run")
    marginal_wall = (res[80][0] - res[10][0]) / 70
    marginal_run = (res[80][1] - res[10][1]) / 70
    print(f"   marginal wall per run {marginal_wall * 1000:.0f} ms, of which inside the run {marginal_run * 1000:.0f} ms:"
          f" difference {(marginal_wall - marginal_run) * 1000:.0f} ms per run (start-up noise dominates it); fixed start-up "
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

#!/usr/bin/env python3
"""The simulator's cost per delivered segment as the window grows and as flows are added.

Two curves, each point one simulation in its own process (so its peak RSS is its own):
- window: one Reno flow (linux stack) over a 10 ms RTT dumbbell whose bottleneck rate sets the
  window, from ~10 to ~20 000 segments, 1-BDP drop-tail buffer; plus the issue's two anchor runs
  (1 Gbit/s with a 0.1-BDP buffer for 20 s, ~900 segments; 10 Gbit/s with a 2-BDP buffer for
  3 s, ~12 000 segments), slow start and its recoveries included;
- flows: N pairs at 10 Mbit/s access each over a 10 Gbit/s, 10 ms bottleneck, N = 2 .. 1000.

Each point times the native simulation with its records drained every simulated second, as
`tcplab run` does (the Parquet writing is not in it; `bench/t1_vs.sh` times whole runs), and
prints wall and CPU seconds (the process's own, steady when the machine is shared), delivered
segments (bytes delivered / MSS), CPU nanoseconds per delivered segment, events per segment and peak RSS. Writes bench/results/scale-<curve>.tsv and, when
matplotlib is there, bench/results/scale.png.

Usage: bench/scale.py [--curve window|flows|both] [--quick]     (--quick: shorter runs)
       bench/scale.py --spec N OUT.toml    (writes the N-pair spec, e.g. for `tcplab run OUT.toml`)
       bench/scale.py --configs DIR [--quick]   (the window cases as simulator configs, for every
                                                 stack: what bench/window_vs.sh runs)
       bench/scale.py --configs DIR --curve flows [--quick]   (the flows cases, n2.json ..
                                                 n1000.json: what bench/flows_vs.sh runs)
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MSS = 1448
RTT_S = 0.010


def dumbbell(pairs: int, access: str, bottleneck: str, buffer: str, duration: str, cc: str) -> dict:
    """A dumbbell spec: `pairs` linux senders, each to its own receiver, all starting at 0."""
    spec = {
        "name": f"scale-{pairs}",
        "seed": 1,
        "topology": {
            "kind": "dumbbell", "pairs": pairs,
            "access": {"rate": access, "delay": "10us", "buffer": "10000p"},
            "bottleneck": {"rate": bottleneck, "delay": f"{int(RTT_S * 1e6) // 2 - 20}us", "buffer": buffer},
        },
        "senders": {f"s{i}": {"to": f"r{i}", "stack": "linux", "cc": cc, "time": duration,
                              "sndbuf": "512MiB", "rcvbuf": "512MiB"}
                    for i in range(1, pairs + 1)},
        "trace": {"sample": "1ms", "interval": "1s"},
    }
    return spec


def window_cases(quick: bool) -> list[tuple[str, dict]]:
    """(label, spec): a one-flow window sweep and the issue's two anchor runs."""
    out = []
    for segs in (10, 100, 1000, 5000, 20000):
        rate_bps = segs * (MSS + 52) * 8 / RTT_S
        secs = 2 if quick else max(3, min(20, int(2e10 / rate_bps)))
        out.append((f"w{segs}", dumbbell(1, "100Gbit", f"{int(rate_bps)}bit", f"{segs}p", f"{secs}s", "reno")))
    out.append(("anchor-1G-0.1BDP", dumbbell(1, "100Gbit", "1Gbit", "83p", "5s" if quick else "20s", "reno")))
    out.append(("anchor-10G-2BDP", dumbbell(1, "100Gbit", "10Gbit", "16667p", "1s" if quick else "3s", "reno")))
    return out


def flow_cases(quick: bool) -> list[tuple[str, dict]]:
    dur = "2s" if quick else "10s"
    return [(f"n{n}", dumbbell(n, "10Mbit", "10Gbit", "10000p", dur, "cubic")) for n in (2, 10, 100, 300, 1000)]


def write_configs(out: Path, quick: bool, curve: str) -> None:
    """The window cases, for each stack, or the flows cases, as the simulator's own JSON config
    (examples/run_config)."""
    from tcplab.backends.sim import lower
    from tcplab.spec.schema import resolve

    out.mkdir(parents=True, exist_ok=True)
    if curve == "flows":
        for label, spec in flow_cases(quick):
            (out / f"{label}.json").write_text(json.dumps(lower(resolve(spec, spec["name"]))))
        return
    for stack in ("linux", "freebsd", "freebsd-rack", "rfc"):
        for label, spec in window_cases(quick):
            for sender in spec["senders"].values():
                sender["stack"] = stack
            (out / f"{label}-{stack}.json").write_text(json.dumps(lower(resolve(spec, spec["name"]))))


def measure(spec: dict) -> dict:
    """Run one spec's simulation here (the child process) and report its cost."""
    from tcplab import _native
    from tcplab.backends.sim import lower
    from tcplab.spec.schema import resolve

    cfg = lower(resolve(spec, spec["name"]))
    t0, c0 = time.perf_counter(), time.process_time()
    sim = _native.Simulation(json.dumps(cfg), {})
    t_built = time.perf_counter()
    while sim.now_ns < sim.stop_ns and not sim.flows_done():
        sim.run_until(min(sim.now_ns + 1_000_000_000, sim.stop_ns))
        sim.take_tables()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    stats = sim.flow_stats()
    segs = sum(f["bytes_delivered"] for f in stats) / MSS
    return {
        "wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "build_s": round(t_built - t0, 3), "segments": int(segs),
        "ns_per_segment": round(cpu * 1e9 / max(segs, 1), 1),
        "events_per_segment": round(sim.events_processed / max(segs, 1), 2),
        "retrans_segs": sum(f["retrans_segs"] for f in stats),
        "max_cwnd_segs": max(f["cwnd_bytes"] for f in stats) // MSS,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def run_curve(name: str, cases: list[tuple[str, dict]], out_dir: Path) -> list[dict]:
    rows = []
    cols = ["case", "wall_s", "cpu_s", "build_s", "segments", "ns_per_segment", "events_per_segment", "retrans_segs",
            "max_cwnd_segs", "peak_rss_mb"]
    print("\t".join(cols))
    for label, spec in cases:
        res = subprocess.run([sys.executable, __file__, "--child"], input=json.dumps(spec), capture_output=True,
                             text=True, check=True)
        row = {"case": label} | json.loads(res.stdout)
        rows.append(row)
        print("\t".join(str(row[c]) for c in cols), flush=True)
    (out_dir / f"scale-{name}.tsv").write_text("\n".join(["\t".join(cols)] + ["\t".join(str(r[c]) for c in cols)
                                                                            for r in rows]) + "\n")
    return rows


def plot(out_dir: Path) -> None:
    """Both curves that have a table in `out_dir`, side by side."""
    curves = {}
    for name in ("window", "flows"):
        path = out_dir / f"scale-{name}.tsv"
        if path.exists():
            head, *lines = path.read_text().splitlines()
            cols = head.split("\t")
            curves[name] = [dict(zip(cols, ln.split("\t"))) for ln in lines]
            for r in curves[name]:
                r["ns_per_segment"] = float(r["ns_per_segment"])
                r["max_cwnd_segs"] = int(r["max_cwnd_segs"])
    if not curves:
        return
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(1, len(curves), figsize=(5 * len(curves), 3.5), squeeze=False)
    for ax, (name, rows) in zip(axes[0], curves.items()):
        pts = [r for r in rows if not r["case"].startswith("anchor")]
        x = [int(r["case"][1:]) for r in pts]  # the path's BDP in segments, or the number of flows
        ax.plot(x, [r["ns_per_segment"] for r in pts], marker="o")
        ax.set_xscale("log")
        ax.set_xlabel("one flow, BDP in segments (1-BDP buffer)" if name == "window" else "flows at 10 Mbit/s each")
        ax.set_ylabel("CPU ns per delivered segment")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_dir / "scale.png", dpi=100)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--curve", choices=("window", "flows", "both"), default="both")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--spec", nargs=2, metavar=("PAIRS", "OUT"), help="write the PAIRS-pair spec of the flows curve")
    ap.add_argument("--configs", metavar="DIR", type=Path, help="write the window cases' simulator configs")
    a = ap.parse_args()
    if a.configs:
        write_configs(a.configs, a.quick, a.curve)
        return
    if a.spec:
        import tomli_w

        Path(a.spec[1]).write_text(tomli_w.dumps(dumbbell(int(a.spec[0]), "10Mbit", "10Gbit", "10000p", "10s", "cubic")))
        return
    if a.child:
        print(json.dumps(measure(json.loads(sys.stdin.read()))))
        return
    out_dir = REPO / "bench" / "results"
    out_dir.mkdir(exist_ok=True)
    if a.curve in ("window", "both"):
        run_curve("window", window_cases(a.quick), out_dir)
    if a.curve in ("flows", "both"):
        run_curve("flows", flow_cases(a.quick), out_dir)
    plot(out_dir)


if __name__ == "__main__":
    main()

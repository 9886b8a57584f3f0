#!/usr/bin/env python3
"""A workload of many flows on ~1000 hosts: wall time, events/s, peak RSS, memory per flow and
per node, and the cost per delivered segment against T1's dumbbell.

Cases, each simulated in its own process (its peak RSS its own), native simulation with records
drained every simulated second as `tcplab run` does (bench/scale.py's `measure`):
- t1: the T1 dumbbell (2 CUBIC flows, 1 Gbit/s x 40 ms) for 20 s, the reference cost;
- workload on `--topology leaf-spine` (the default): FLOWS Poisson flows (sizes SIZES) between
  any two of HOSTS hosts (32 a leaf, HOSTS / 32 leaves, 8 spines, 10 Gbit/s x 5 us links, uplinks
  at oversubscription 1, ECMP), arriving at LOAD of the hosts' summed link rate;
- workload on `--topology dumbbell`: the same flows at LOAD of the 100 Gbit/s bottleneck of a
  dumbbell of HOSTS / 2 pairs behind 10 Gbit/s x 5 us access links, 20 us bottleneck delay;
- build-only cases for memory: the same network with 1 and FLOWS flows built, not run (memory
  per flow), and the smallest such network with one flow (memory per node, against the big one).

Also times the spec's expansion into flows (spec.resolve) and the lowering to the simulator's
config (Python), and each simulation's build apart from its run (CPU seconds; a short flow's
connection costs about as much to build as to run). Prints one table; writes
bench/results/workload-scale.tsv.

Usage: bench/workload_scale.py [--topology leaf-spine|dumbbell] [--flows 100000] [--hosts 1024]
       [--sizes 20KB|web-search|...] [--load 0.5]
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
sys.path.insert(0, str(REPO / "bench"))
from scale import MSS, measure  # noqa: E402  (the same measurement as the flows curve)


def network(pairs: int) -> dict:
    """A dumbbell of `pairs` pairs: 10 Gbit/s x 5 us access, 100 Gbit/s x 20 us bottleneck."""
    return {"kind": "dumbbell", "pairs": pairs, "access": {"rate": "10Gbit", "delay": "5us", "buffer": "1000p"},
            "bottleneck": {"rate": "100Gbit", "delay": "20us", "buffer": "5000p"}}


def leaf_spine(hosts: int) -> dict:
    """`hosts` hosts, 32 a leaf, 8 spines; 10 Gbit/s x 5 us links, uplinks at oversubscription 1."""
    return {"kind": "leaf-spine", "leaves": max(hosts // 32, 1), "spines": 8, "hosts_per_leaf": min(hosts, 32),
            "oversubscription": 1, "access": {"rate": "10Gbit", "delay": "5us", "buffer": "1000p"},
            "fabric": {"delay": "5us", "buffer": "1000p"}}


def mean_bytes(size_key: dict) -> float:
    """The size distribution's mean, as the spec reads it (one flow of it on a small dumbbell)."""
    from tcplab.spec.schema import resolve

    spec = {"name": "mean", "topology": network(1),
            "workload": [{"kind": "poisson", **size_key, "arrival_rate": 1.0, "flows": 1, "senders": "s*", "receivers": "r*"}]}
    return resolve(spec, "mean").workloads[0].mean_bytes


def workload_spec(topology: str, hosts: int, flows: int, sizes: str, load: float) -> dict:
    size_key = {"sizes": sizes} if sizes in ("web-search", "data-mining") or sizes.endswith(".cdf") else {"bytes": sizes}
    if topology == "dumbbell":
        net, ends, rate = network(max(hosts // 2, 1)), {"senders": "s*", "receivers": "r*"}, {"load": load}
    else:
        net, ends = leaf_spine(hosts), {"senders": "l*h*", "receivers": "l*h*"}
        n = net["leaves"] * net["hosts_per_leaf"]
        rate = {"arrival_rate": round(load * n * 10e9 / (8 * mean_bytes(size_key)), 3)}
    return {"name": f"wl-{flows}", "seed": 1, "topology": net,
            "workload": [{"kind": "poisson", **size_key, **rate, **ends, "flows": flows, "cc": "cubic"}],
            "trace": {"sample": "10ms", "interval": "1s"}}


def t1_spec() -> dict:
    from tcplab.spec.schema import load_spec

    spec, _ = load_spec("T1")
    for s in spec["senders"].values():
        s["time"] = "20s"
    return spec


def rss_mb() -> float:
    """This process's resident set now (VmRSS), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def build_only(spec: dict) -> dict:
    """Resolve, lower and build the simulation without running it: the memory it holds."""
    from tcplab import _native
    from tcplab.backends.sim import lower
    from tcplab.spec.schema import resolve

    t0 = time.perf_counter()
    exp = resolve(spec, spec["name"])
    t1 = time.perf_counter()
    cfg = json.dumps(lower(exp))
    t2 = time.perf_counter()
    before = rss_mb()
    sim = _native.Simulation(cfg, {})
    built = rss_mb()
    del sim
    return {"resolve_s": round(t1 - t0, 3), "lower_s": round(t2 - t1, 3), "flows": len(exp.flows),
            "nodes": len(exp.nodes), "sim_build_mb": round(built - before, 2),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def run_only(spec: dict) -> dict:
    """bench/scale.py's measurement, plus the simulation's CPU after its build apart (a workload
    of short flows spends much of its time building 100 000 connections)."""
    from tcplab import _native
    from tcplab.backends.sim import lower
    from tcplab.spec.schema import resolve

    out = measure(spec)
    cfg = json.dumps(lower(resolve(spec, spec["name"])))
    c0 = time.process_time()
    sim = _native.Simulation(cfg, {})
    c1 = time.process_time()
    while sim.now_ns < sim.stop_ns and not sim.flows_done():
        sim.run_until(min(sim.now_ns + 1_000_000_000, sim.stop_ns))
        sim.take_tables()
    run_cpu = time.process_time() - c1
    segs = sum(f["bytes_delivered"] for f in sim.flow_stats()) / MSS
    return out | {"build_cpu_s": round(c1 - c0, 3), "run_cpu_s": round(run_cpu, 3),
                  "run_ns_per_segment": round(run_cpu * 1e9 / max(segs, 1), 1),
                  "run_events_per_s": round(sim.events_processed / run_cpu) if run_cpu else None}


def child(kind: str, spec: dict) -> dict:
    return build_only(spec) if kind == "build" else run_only(spec)


def run(kind: str, spec: dict) -> dict:
    res = subprocess.run([sys.executable, __file__, "--child", kind], input=json.dumps(spec), capture_output=True,
                         text=True, check=True)
    return json.loads(res.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flows", type=int, default=100_000)
    ap.add_argument("--topology", choices=("leaf-spine", "dumbbell"), default="leaf-spine")
    ap.add_argument("--hosts", type=int, default=1024)
    ap.add_argument("--sizes", default="20KB")
    ap.add_argument("--load", type=float, default=0.5)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child, json.loads(sys.stdin.read()))))
        return
    big = workload_spec(a.topology, a.hosts, a.flows, a.sizes, a.load)
    one = workload_spec(a.topology, a.hosts, 1, a.sizes, a.load)
    tiny = workload_spec(a.topology, 2, 1, a.sizes, a.load)
    b_big, b_one, b_tiny = run("build", big), run("build", one), run("build", tiny)
    per_flow_kb = (b_big["sim_build_mb"] - b_one["sim_build_mb"]) * 1024 / (a.flows - 1)
    per_node_kb = (b_one["sim_build_mb"] - b_tiny["sim_build_mb"]) * 1024 / (b_one["nodes"] - b_tiny["nodes"])
    rows = []
    for label, spec in (("t1", t1_spec()), (f"workload {a.flows} x {a.sizes}", big)):
        rows.append({"case": label} | run("run", spec))
    rows[1]["case"] += f" ({a.topology}, {b_big['nodes']} nodes)"
    cols = ["case", "wall_s", "cpu_s", "build_cpu_s", "run_cpu_s", "segments", "ns_per_segment", "run_ns_per_segment",
            "events_per_segment", "run_events_per_s", "peak_rss_mb"]
    lines = ["\t".join(cols)] + ["\t".join(str(r[c]) for c in cols) for r in rows]
    t1, w = rows[0], rows[1]
    lines.append(f"# workload cost per delivered segment: {w['ns_per_segment'] / t1['ns_per_segment']:.2f} x T1's with "
                 f"the build, {w['run_ns_per_segment'] / t1['run_ns_per_segment']:.2f} x after it")
    lines.append(f"# spec expansion of {a.flows} flows: resolve {b_big['resolve_s']} s, lower {b_big['lower_s']} s")
    lines.append(f"# simulator memory at build: {b_big['sim_build_mb']} MB for {a.flows} flows and {b_big['nodes']} nodes; "
                 f"{per_flow_kb:.2f} KB per flow, {per_node_kb:.2f} KB per node (MSS {MSS})")
    print("\n".join(lines))
    out = REPO / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "workload-scale.tsv").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

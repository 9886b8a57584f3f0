#!/usr/bin/env python3
"""The modCC study's question for tcplab itself: what do modular congestion-control hooks cost?
Runs T5 (NewReno, 15..160 Mbit/s x 10 ms, ~1-BDP queue) on two builds of the simulator, side by
side: the default one, whose senders call their CC module through a trait object (a vtable, as
FreeBSD's cc(4) calls through function pointers), and one built with `--features static-cc`,
whose senders hold an enum of the concrete modules matched in place. It checks both give the
same records (digest), times each build over the sweep in alternating rounds (wall), and counts
instructions of one run under callgrind (repeatable whatever the machine is doing).

Usage: bench/dispatch.py [--duration 1010s] [--rounds 3] [--callgrind-duration 60s]"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def configs(work: Path, duration: str, only: str | None = None) -> list[Path]:
    from tcplab.backends.sim import lower
    from tcplab.spec import resolve

    data = tomllib.loads((REPO / "python/tcplab/presets/t5-modcc-rate-sweep.toml").read_text())
    sweep = data.pop("sweep")
    data.pop("measure", None)
    out = []
    for rate, buf in zip(sweep["topology.bottleneck.rate"], sweep["topology.bottleneck.buffer"]):
        if only and rate != only:
            continue
        d = json.loads(json.dumps(data))
        d["topology"]["bottleneck"].update({"rate": rate, "buffer": buf})
        cfg = lower(resolve(d, "T5", duration=duration))
        p = work / f"t5-{rate}-{duration}.json"
        p.write_text(json.dumps(cfg))
        out.append(p)
    return out


def build(work: Path, static: bool) -> Path:
    args = ["cargo", "build", "--release", "-q", "-p", "tcplab-sim", "--example", "run_config"]
    if static:
        args += ["--features", "static-cc"]
    subprocess.run(args, cwd=REPO, check=True)
    dst = work / ("run_static" if static else "run_dyn")
    shutil.copy(REPO / "target/release/examples/run_config", dst)
    return dst


def run(binary: Path, cfgs: list[Path]) -> list[tuple[str, int, float, str]]:
    out = subprocess.run([str(binary), *map(str, cfgs)], capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        path, events, wall, digest = line.split("\t")
        rows.append((Path(path).stem, int(events), float(wall), digest))
    return rows


def instructions(binary: Path, cfg: Path, work: Path) -> int:
    p = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={work / 'cg.out'}", str(binary), str(cfg)],
                       capture_output=True, text=True, check=True)
    m = re.search(r"Collected : (\d+)", p.stderr)
    if not m:
        sys.exit(f"callgrind printed no total:\n{p.stderr[-2000:]}")
    return int(m.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", default="1010s")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--callgrind-duration", default="60s")
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tcplab-dispatch-"))
    cfgs = configs(work, a.duration)
    dyn_bin, static_bin = build(work, False), build(work, True)
    totals: dict[str, list[float]] = {"dyn": [], "static": []}
    digests: dict[str, dict[str, str]] = {"dyn": {}, "static": {}}
    per_rate: dict[str, dict[str, list[float]]] = {"dyn": {}, "static": {}}
    for r in range(a.rounds):
        order = [("dyn", dyn_bin), ("static", static_bin)] if r % 2 == 0 else [("static", static_bin), ("dyn", dyn_bin)]
        for name, b in order:
            rows = run(b, cfgs)
            totals[name].append(sum(w for _, _, w, _ in rows))
            for stem, _, w, d in rows:
                digests[name][stem] = d
                per_rate[name].setdefault(stem, []).append(w)
    same = digests["dyn"] == digests["static"]
    print(f"T5, {len(cfgs)} rates x {a.duration} simulated, {a.rounds} alternating rounds; identical records in both builds: {same}")
    print(f"{'rate':>18} {'dyn s':>8} {'static s':>9} {'static/dyn':>11}")
    for stem in per_rate["dyn"]:
        d, s = statistics.median(per_rate["dyn"][stem]), statistics.median(per_rate["static"][stem])
        print(f"{stem:>18} {d:8.3f} {s:9.3f} {s / d:11.3f}")
    d, s = statistics.median(totals["dyn"]), statistics.median(totals["static"])
    print(f"{'sweep (median)':>18} {d:8.3f} {s:9.3f} {s / d:11.3f}   rounds dyn {totals['dyn']} static {totals['static']}")
    cg = configs(work, a.callgrind_duration, only="100Mbit")[0]
    i_dyn, i_static = instructions(dyn_bin, cg, work), instructions(static_bin, cg, work)
    print(f"callgrind, 100Mbit x {a.callgrind_duration}: dyn {i_dyn:,} instructions, static {i_static:,} "
          f"({(i_static - i_dyn) / i_dyn:+.3%})")
    if not same:
        sys.exit("the two builds gave different records")


if __name__ == "__main__":
    main()

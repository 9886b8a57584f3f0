#!/usr/bin/env bash
# Benchmark: the T1 preset (200 s, 2 flows, 1 Gbit/s) on one core. For the simulation alone and
# for the whole job (charts and report included): wall time (median of 3), CPU time, peak RSS,
# simulated packets per wall second, and the hypervisor steal seen during the runs (a VM here can
# lose its core for a while; steal inflates wall time, not CPU time).
# Usage: bench/t1.sh [extra tcplab run args]
set -euo pipefail
cd "$(dirname "$0")/.."
tcplab=.venv/bin/tcplab
[ -x "$tcplab" ] || { echo "run ./scripts/install first" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
steal() { awk '/^cpu /{print $9}' /proc/stat; }

measure() {  # label, extra args...
    local label=$1; shift
    : > "$out/times"
    local s0; s0=$(steal)
    for _ in 1 2 3; do
        /usr/bin/time -f "%e %U %S %M" -a -o "$out/times" taskset -c 0 "$tcplab" run T1 --out "$out/run" --force --no-intervals "$@" >/dev/null
    done
    local s1; s1=$(steal)
    .venv/bin/python - "$label" "$out/times" "$out/run/summary.json" "$((s1 - s0))" <<'PY'
import json, statistics, sys
label, times, summary, steal_ticks = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rows = [list(map(float, l.split())) for l in open(times) if l.strip()]
wall = statistics.median(r[0] for r in rows)
cpu = statistics.median(r[1] + r[2] for r in rows)
rss = max(r[3] for r in rows) / 1024
sim = json.load(open(summary))["simulator"]
print(f"{label:30s} wall {wall:6.2f} s (runs {', '.join(f'{r[0]:.2f}' for r in rows)})  cpu {cpu:6.2f} s  "
      f"peak RSS {rss:4.0f} MB  {sim['packets'] / 1e6:5.1f} M packets  {sim['packets'] / wall / 1e6:4.2f} M packets/s  "
      f"steal {steal_ticks / 100:.1f} s")
PY
}

echo "T1 dumbbell-wan, 200 s, 2 flows, 1 Gbit/s, one core (taskset -c 0); $(nproc) cores, $(uname -r)"
measure "simulation only (--no-report)" --no-report "$@"
measure "whole job (charts, report)" "$@"

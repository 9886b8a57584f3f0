#!/usr/bin/env bash
# Benchmark: the T1 preset (200 s, 2 flows, 1 Gbit/s) on one core. Prints wall time, peak RSS
# and simulated packets per wall second, for the simulation alone and for the whole job (charts
# and report included). Usage: bench/t1.sh [extra tcplab run args]
set -euo pipefail
cd "$(dirname "$0")/.."
tcplab=.venv/bin/tcplab
[ -x "$tcplab" ] || { echo "run ./scripts/install first" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

measure() {  # label, extra args...
    local label=$1; shift
    /usr/bin/time -f "%e %M" -o "$out/time" taskset -c 0 "$tcplab" run T1 --out "$out/run" --force --no-intervals "$@" >/dev/null
    read -r wall rss_kb < "$out/time"
    .venv/bin/python - "$label" "$wall" "$rss_kb" "$out/run/summary.json" <<'PY'
import json, sys
label, wall, rss_kb, summary = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
sim = json.load(open(summary))["simulator"]
print(f"{label:28s} wall {wall:6.2f} s   peak RSS {rss_kb / 1024:6.0f} MB   "
      f"{sim['packets'] / 1e6:6.1f} M packets, {sim['events'] / 1e6:6.1f} M events   "
      f"{sim['packets'] / wall / 1e6:5.2f} M packets/s")
PY
}

echo "T1 dumbbell-wan, 200 s, 2 flows, 1 Gbit/s, one core (taskset -c 0); $(nproc) cores, $(uname -r)"
measure "simulation only (--no-report)" --no-report "$@"
measure "whole job (charts, report)" "$@"

#!/usr/bin/env bash
# Differential testing at scale (issue 32): N seeded scenarios (default 2000, every category in
# turn) recorded on this machine's kernel and replayed on the linux model, each disagreement
# minimised (one of each category and kind of divergence checked on the kernel). Needs root (a
# network namespace and a TUN device per scenario). Prints the agreement per category and the
# wall time; the folder keeps the scenarios, recordings, minimised scripts and drill-diff.json.
# About 1.5-2 s a scenario on this machine (2 cores): 2000 take about an hour.
# Usage: sudo bench/drill_diff.sh [N] [SEED] [OUT]     (OUT default $TMPDIR/drill-diff-N-sSEED: tens of MB)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-2000}
seed=${2:-1}
out=${3:-${TMPDIR:-/tmp}/drill-diff-$n-s$seed}
py=.venv/bin/python
[ -x "$py" ] || { echo "run ./scripts/install first" >&2; exit 1; }
start=$(date +%s)
status=0
"$py" -m tcplab.cli drill --generate "$n" --seed "$seed" --target kernel --target linux \
    --out "$out" --json "$out.json" --force || status=$?
echo "drill_diff: $n scenarios, seed $seed, $(( $(date +%s) - start )) s wall; results in $out"
# 1 = some scenario disagreed (the expected outcome); anything else is an error of the run.
[ "$status" -le 1 ]

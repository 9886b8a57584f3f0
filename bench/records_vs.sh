#!/usr/bin/env bash
# Refactor check: every preset's records, this checkout against an older commit REV, side by side.
# Builds REV's native module in a temporary git worktree (as bench/t1_vs.sh does), runs the same
# fixed-seed jobs with both builds (T1 peers 60 s, T2/T3 30 s, T4, T6, T5, T7, T8 and T9 sweeps shortened)
# and compares every table (flows, intervals, queues, ports, events, sends) and summary.json with
# bench/records_diff.py. Exit 0 when all are identical, 1 otherwise.
# Usage: bench/records_vs.sh REV [--quick]     (--quick: 5 s runs, for use while refactoring)
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: bench/records_vs.sh REV [--quick]}
quick=0; [ "${2:-}" = "--quick" ] && quick=1
py=.venv/bin/python
[ -x "$py" ] || { echo "run ./scripts/install first" >&2; exit 1; }
. bench/old_checkout.sh
old_checkout "$rev"
old_native
# This checkout's module as built by the last `pip install -e` (scripts/install) or maturin.
long() { [ "$quick" = 1 ] && echo 5s || echo "$1"; }
jobs=(
    "peers T1 --duration $(long 60s) --no-report --seed 3"
    "run T2 --duration $(long 30s) --no-report --seed 3"
    "run T3 --duration $(long 30s) --no-report --seed 3"
    "run T4 --no-report --seed 3"
    "run T6 --no-report --seed 3"
    "sweep T5 --duration $(long 10s) -j 2 --no-report"
    "sweep T7 --duration $(long 3s) -j 2 --no-report"
    "sweep T8 --duration $(long 10s) -j 2 --no-report"
    "sweep T9 --duration 1s -j 2 --no-report"
)
status=0
for i in "${!jobs[@]}"; do
    for build in old new; do
        [ "$build" = old ] && pp="$old/python" || pp="$PWD/python"
        # shellcheck disable=SC2086
        PYTHONPATH=$pp TCPLAB_NO_PROGRESS=1 "$py" -m tcplab.cli ${jobs[$i]} --out "$work/$build-$i" \
            >/dev/null 2>"$work/$build-$i.err" || { echo "$build: ${jobs[$i]} failed:"; tail -3 "$work/$build-$i.err"; status=1; }
    done
    if [ ! -d "$work/old-$i" ] || [ ! -d "$work/new-$i" ]; then
        echo "FAILED     ${jobs[$i]}"; status=1
    elif "$py" bench/records_diff.py "$work/old-$i" "$work/new-$i"; then
        echo "identical  ${jobs[$i]}"
    else
        echo "DIFFERENT  ${jobs[$i]}"; status=1
    fi
done
exit $status

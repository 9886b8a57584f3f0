#!/usr/bin/env bash
# Refactor check for the kernel backends: the netns and remote plans of every preset (every sweep
# point), this checkout against an older commit REV, side by side (bench/plans_dump.py: plans,
# namespace sysctls, iperf3 clients; a generated LAB.toml per delay/shaping mode). Builds REV's
# native module as bench/records_vs.sh does. Exit 0 when identical, 1 otherwise (the diff printed).
# Usage: bench/plans_vs.sh REV
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: bench/plans_vs.sh REV}
py=.venv/bin/python
[ -x "$py" ] || { echo "run ./scripts/install first" >&2; exit 1; }
. bench/old_checkout.sh
old_checkout "$rev"
old_native
PYTHONPATH="$old/python" "$py" bench/plans_dump.py > "$work/old.txt"
PYTHONPATH="$PWD/python" "$py" bench/plans_dump.py > "$work/new.txt"
if cmp -s "$work/old.txt" "$work/new.txt"; then
    echo "identical: $(wc -l < "$work/new.txt") plans"
else
    diff "$work/old.txt" "$work/new.txt" | head -50; exit 1
fi

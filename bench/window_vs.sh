#!/usr/bin/env bash
# The window curve of bench/scale.py (one flow, 10 to 20 000 segments, and issue 23's two anchor
# runs), for every stack, this checkout side by side with an older commit REV: each case runs in
# the simulator alone (examples/run_config, records drained each simulated second) with both
# builds, alternating, and prints the events, each build's CPU seconds (user + system of the
# process) and whether the digests of all records are equal (equal = identical results).
# Exit 0 when every digest is equal, 1 otherwise.
# Usage: bench/window_vs.sh REV [--quick] [CASE_GLOB]     (e.g. 'w5000-*', '*-linux')
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: bench/window_vs.sh REV [--quick] [CASE_GLOB]}
quick=""; [ "${2:-}" = "--quick" ] && { quick="--quick"; shift; }
glob=${2:-*}
py=.venv/bin/python
[ -x "$py" ] || { echo "run ./scripts/install first" >&2; exit 1; }
. bench/old_checkout.sh
old_checkout "$rev"
(cd "$old" && CARGO_TARGET_DIR="$work/target" cargo build -q --release -p tcplab-sim --example run_config)
cp "$work/target/release/examples/run_config" "$work/run_config-old"
cargo build -q --release -p tcplab-sim --example run_config
cp target/release/examples/run_config "$work/run_config-new"
PYTHONPATH=python "$py" bench/scale.py --configs "$work/cfg" $quick
TIMEFORMAT='%U %S'
status=0
printf 'case\tevents\tcpu_s_%s\tcpu_s_new\tratio\trecords\n' "$rev"
for cfg in "$work"/cfg/$glob.json; do
    declare -A out=() cpu=()
    for build in old new; do
        t=$( { time "$work/run_config-$build" "$cfg" >"$work/out-$build" 2>/dev/null; } 2>&1 )
        cpu[$build]=$(echo "$t" | awk '{print $1 + $2}')
        out[$build]=$(cut -f2,4 "$work/out-$build")
    done
    same=identical; [ "${out[old]}" = "${out[new]}" ] || { same=DIFFERENT; status=1; }
    ratio=$(awk -v a="${cpu[old]}" -v b="${cpu[new]}" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(basename "$cfg" .json)" "$(cut -f2 "$work/out-new")" \
        "${cpu[old]}" "${cpu[new]}" "$ratio" "$same"
done
exit $status

#!/usr/bin/env bash
# The flows curve of bench/scale.py (2 to 1000 pairs at 10 Mbit/s over a 10 Gbit/s bottleneck),
# this checkout side by side with an older commit REV. Each case runs with both builds,
# alternating (old first in odd rounds, new first in even ones), ROUNDS times: `bench/scale.py`'s own measurement (native simulation, records drained
# into Python each simulated second; CPU ns per delivered segment, events per segment, peak RSS),
# then the simulator alone (examples/run_config) for the digest of all its records (equal =
# identical results). Prints one line per run and the median CPU ns per segment per case and build.
# Exit 0 when every digest is equal, 1 otherwise.
# Usage: bench/flows_vs.sh REV [ROUNDS] [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: bench/flows_vs.sh REV [ROUNDS] [--quick]}
rounds=${2:-1}
quick=""; [ "${3:-}" = "--quick" ] && quick="--quick"
py=.venv/bin/python
[ -x "$py" ] || { echo "run ./scripts/install first" >&2; exit 1; }
. bench/old_checkout.sh
old_checkout "$rev"
# Two commands: with --example, cargo would build no library of tcplab-py.
(cd "$old" && CARGO_TARGET_DIR="$work/target" cargo build -q --release -p tcplab-py)
(cd "$old" && CARGO_TARGET_DIR="$work/target" cargo build -q --release -p tcplab-sim --example run_config)
cp "$work/target/release/lib_native.so" "$old/python/tcplab/_native.abi3.so"
cp "$work/target/release/examples/run_config" "$work/run_config-old"
cargo build -q --release -p tcplab-py
cargo build -q --release -p tcplab-sim --example run_config
cp target/release/lib_native.so python/tcplab/_native.abi3.so
cp target/release/examples/run_config "$work/run_config-new"
PYTHONPATH=python "$py" bench/scale.py --configs "$work/cfg" --curve flows $quick
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
status=0
printf 'case\tbuild\tcpu_s\tns_per_segment\tevents_per_segment\tpeak_rss_mb\trecords\n'
for cfg in $(ls "$work"/cfg/n*.json | sort -V); do
    case=$(basename "$cfg" .json)
    spec=$(PYTHONPATH=python "$py" -c "import sys, json; sys.path.insert(0, 'bench'); import scale
print(json.dumps(dict(scale.flow_cases(bool('$quick')))['$case']))")
    for r in $(seq "$rounds"); do
        # Which build goes first alternates between rounds (running second was up to 5% slower
        # with the same build on both sides).
        order="old new"; [ $((r % 2)) = 0 ] && order="new old"
        for build in $order; do
            [ "$build" = old ] && pp="$old/python" || pp="$PWD/python"
            m=$(echo "$spec" | PYTHONPATH=$pp "$py" bench/scale.py --child)
            "$work/run_config-$build" "$cfg" | cut -f2,4 >"$work/digest-$build"
            printf '%s\t%s\t%s\n' "$case" "$build" "$(echo "$m" | "$py" -c "import sys, json; m = json.load(sys.stdin)
print('\t'.join(str(m[k]) for k in ('cpu_s', 'ns_per_segment', 'events_per_segment', 'peak_rss_mb')))")	$(cut -f2 "$work/digest-$build")" | tee -a "$work/rows"
        done
        [ "$(cat "$work/digest-old")" = "$(cat "$work/digest-new")" ] || { echo "DIFFERENT records: $case"; status=1; }
    done
done
echo "median CPU ns per delivered segment ($rev -> this checkout):"
"$py" - "$work/rows" <<'PY'
import statistics, sys
rows = [ln.split("\t") for ln in open(sys.argv[1]).read().splitlines()]
cases = list(dict.fromkeys(r[0] for r in rows))
for c in cases:
    med = {b: statistics.median(float(r[3]) for r in rows if r[0] == c and r[1] == b) for b in ("old", "new")}
    print(f"{c}\t{med['old']:.0f}\t{med['new']:.0f}")
PY
exit $status

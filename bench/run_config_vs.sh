#!/usr/bin/env bash
# Several builds of the simulator alone (`examples/run_config` binaries, copied aside by the
# caller) on one resolved config, side by side: ROUNDS rounds, each running every build once, the
# order rotated by one build per round (running second or third was up to 5% slower with the same
# build everywhere). Prints each run's user CPU seconds and the record digest (equal digests =
# identical results), then the median user CPU per build. For comparing variants of a change on
# this shared machine, where only runs close in time compare.
# Usage: bench/run_config_vs.sh ROUNDS CONFIG.json BINARY...
set -euo pipefail
rounds=${1:?usage: bench/run_config_vs.sh ROUNDS CONFIG.json BINARY...}
cfg=${2:?usage: bench/run_config_vs.sh ROUNDS CONFIG.json BINARY...}
shift 2
bins=("$@")
[ ${#bins[@]} -ge 1 ] || { echo "give at least one binary" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); config $cfg"
n=${#bins[@]}
for r in $(seq 0 $((rounds - 1))); do
    for k in $(seq 0 $((n - 1))); do
        i=$(((k + r) % n))
        /usr/bin/time -f "%U" -o "$work/t" "${bins[$i]}" "$cfg" >"$work/out"
        user=$(cat "$work/t")
        echo "$user" >>"$work/times-$i"
        printf 'round %d  %-40s user %6.2f s  digest %s  load %s\n' "$((r + 1))" "${bins[$i]}" "$user" \
            "$(cut -f4 "$work/out")" "$(cut -d' ' -f1 /proc/loadavg)"
    done
done
echo "median user CPU s:"
for i in $(seq 0 $((n - 1))); do
    printf '  %-40s %s\n' "${bins[$i]}" "$(sort -n "$work/times-$i" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')"
done

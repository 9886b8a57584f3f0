#!/usr/bin/env bash
# Benchmark: T1 on one core, this checkout side by side with an older commit REV, alternating the
# two builds run by run (this machine's speed drifts within minutes, so only side-by-side runs
# compare). REV's native module is built in a temporary git worktree and put first on PYTHONPATH;
# both run with this checkout's .venv. Prints each run's wall and user time, peak RSS, the steal and
# load seen, the medians per build, then
# the callgrind instruction count of a 20 s T1 for each build, the whole process and the simulator's
# part (Simulation::run_until, inclusive) (valgrind; installed if missing and root, as
# scripts/install does for the test tools). Each build keeps its Python bytecode in a cache of its
# own (PYTHONPYCACHEPREFIX), filled by an untimed 1 s run before the measurements: with
# PYTHONDONTWRITEBYTECODE=1 a build whose tree holds no __pycache__ would compile its modules in
# every run (~0.5 G instructions of a 2.9 G count) while one with stale __pycache__ files would
# not, and the comparison would measure that.
# Usage: bench/t1_vs.sh REV [RUNS=3] [--no-report]
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: bench/t1_vs.sh REV [RUNS] [--no-report]}
runs=${2:-3}
shift $(( $# >= 2 ? 2 : 1 ))
tcplab_py=.venv/bin/python
[ -x "$tcplab_py" ] || { echo "run ./scripts/install first" >&2; exit 1; }
if ! command -v valgrind >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >/dev/null
    else
        echo "bench: valgrind missing; run: sudo apt-get install valgrind" >&2; exit 1
    fi
fi
. bench/old_checkout.sh
old_checkout "$rev"
(cd "$old" && CARGO_TARGET_DIR="$work/target" cargo build -q --release -p tcplab-py)
cp "$work/target/release/lib_native.so" "$old/python/tcplab/_native.abi3.so"
steal() { awk '/^cpu /{print $9}' /proc/stat; }
path_of() { [ "$1" = old ] && echo "$old/python" || echo "$PWD/python"; }
# Runs a command with build $1's tcplab and its own bytecode cache (written even under
# PYTHONDONTWRITEBYTECODE).
py_run() {
    local build=$1
    shift
    env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX="$work/pyc-$build" PYTHONPATH="$(path_of "$build")" "$@"
}
for build in old new; do
    py_run $build "$tcplab_py" -m tcplab.cli run T1 --duration 1s --out "$work/warm-$build" --force \
        --no-intervals "$@" >/dev/null
done
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); each run: tcplab run T1 --no-intervals $*"
for i in $(seq 1 "$runs"); do
    for build in old new; do
        s0=$(steal)
        py_run $build /usr/bin/time -f "%e %U %M" -o "$work/t" taskset -c 0 "$tcplab_py" -m tcplab.cli \
            run T1 --out "$work/run-$build" --force --no-intervals "$@" >/dev/null
        s1=$(steal)
        read -r wall user rss_kb < "$work/t"
        echo "$wall $user $rss_kb" >> "$work/times-$build"
        printf '%-4s run %d  wall %6.2f s  user %6.2f s  peak RSS %4d MB  steal %d ticks  load %s\n' "$build" "$i" "$wall" \
            "$user" "$((rss_kb / 1024))" "$((s1 - s0))" "$(cut -d' ' -f1 /proc/loadavg)"
    done
done
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
for build in old new; do
    printf '%-4s median of %d: wall %.2f s, user %.2f s, peak RSS %d MB\n' "$build" "$runs" \
        "$(cut -d' ' -f1 "$work/times-$build" | median)" "$(cut -d' ' -f2 "$work/times-$build" | median)" \
        "$(( $(cut -d' ' -f3 "$work/times-$build" | median | cut -d. -f1) / 1024 ))"
done
for build in old new; do
    py_run $build valgrind --tool=callgrind --callgrind-out-file="$work/cg-$build" "$tcplab_py" -m tcplab.cli \
        run T1 --duration 20s --out "$work/cg-run-$build" --force --no-intervals --no-report >/dev/null 2> "$work/cg-$build.err"
    sim_ir=$(callgrind_annotate --inclusive=yes --auto=no --threshold=100 "$work/cg-$build" 2>/dev/null |
        awk '/tcplab_sim::sim::Simulation::run_until( |$)/ {gsub(",", "", $1); if ($1 + 0 > m) m = $1 + 0} END {print m + 0}')
    printf '%-4s callgrind, 20 s of T1: %s instructions, %s in the simulator (run_until)\n' "$build" \
        "$(sed -n 's/.*Collected : //p' "$work/cg-$build.err")" "$sim_ir"
done
# As data (bench/records_diff.py): how the tables are cut into row groups may differ.
"$tcplab_py" bench/records_diff.py "$work/cg-run-old" "$work/cg-run-new" && echo "records of the 20 s runs: identical" \
    || echo "records of the 20 s runs: differ"

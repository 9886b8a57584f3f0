#!/usr/bin/env bash
# This machine's memory latency by working-set size (bench/mem_latency.rs): nanoseconds per load of
# a random pointer chase, alone and with 4 or 8 chases interleaved, on 4 KB and 2 MB pages. What one
# cache miss costs at the working set of a many-flow run (bench/README.md, issue 23, flows).
# Usage: bench/mem_latency.sh        (one core: taskset -c 0)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)/mem_latency
trap 'rm -rf "$(dirname "$bin")"' EXIT
rustc -O --edition 2021 bench/mem_latency.rs -o "$bin"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
taskset -c 0 "$bin"

#!/usr/bin/env bash
# linkem accuracy (issue 4): a pipe s1 -> rt1 -> r1 with a 20 ms each-way delay element and an htb
# bottleneck at RATE, loaded by one UDP flow at 1.1 x RATE for DURATION (as root). Prints, from the
# run's emulation self-check: RTT configured vs measured (ping, before and after the load), the
# delay element's lateness (departure - (kernel arrival stamp + delay): mean, max, histogram),
# ring drops, and the achieved vs configured bottleneck rate.
# Usage: sudo bench/linkem.sh [RATE ...]   (default: 100Mbit 1Gbit)
set -euo pipefail
cd "$(dirname "$0")/.."
rates=("$@")
[ ${#rates[@]} -eq 0 ] && rates=(100Mbit 1Gbit)
dur=${DURATION:-10s}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for rate in "${rates[@]}"; do
    cat > "$tmp/spec.toml" <<SPEC
name = "linkem-bench"
[topology]
kind = "pipe"
[topology.access]
rate = "10Gbit"
delay = "0us"
[topology.bottleneck]
rate = "$rate"
delay = "20ms"
buffer = "1000p"
[senders.s1]
to = "r1"
cc = "cubic"
time = "$dur"
[[background]]
from = "s1"
to = "r1"
rate = "$rate"
SPEC
    # The UDP load alone would be $rate; the TCP flow adds on top, so the queue is kept full.
    .venv/bin/tcplab run "$tmp/spec.toml" --backend netns --out "$tmp/run-$rate" --no-intervals --no-report >/dev/null
    .venv/bin/python - "$tmp/run-$rate" "$rate" <<'PY'
import json, sys
s = json.load(open(f"{sys.argv[1]}/summary.json"))
e = s["emulation"]
print(f"== bottleneck {sys.argv[2]} ==")
for r in e["rtt_check"]:
    print(f"RTT {r['when']:6}: configured {r['configured_ms']} ms, measured min {r['measured_min_ms']} ms, error {r['error_ms']} ms")
for l in e["linkem"]:
    for d in ("ab", "ba"):
        x = l[d]
        print(f"linkem {d}: {x['frames_in']} frames in, {x['frames_out']} out, ring drops {x['ring_drops']}, "
              f"late mean {x['late_mean_us']} us, max {x['late_max_us']} us, histogram {x['late_hist']}")
rc = e["rate_check"]
print(f"rate: configured {rc['configured_mbps']} Mbit/s, achieved {rc['achieved_l2_mbps']} Mbit/s of L2 frames "
      f"({rc['error'] * 100:+.2f}%), queue backlogged: {rc['queue_backlogged']}")
b = s["bottleneck"]
print(f"under load: link utilisation {b['utilisation']}, faithful: {e['faithful']} {e['problems']}")
PY
done

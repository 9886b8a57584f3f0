#!/usr/bin/env python3
"""Write T11's cellular traces (python/tcplab/presets/traces/cellular-{down,up}.mm): mahimahi's
delivery-opportunity format, one line per 1500-byte opportunity, its millisecond repeated for
several in one millisecond (mahimahi/src/packet/link_queue.cc; the Cellsim/Sprout traces' form).

The capacity is a seeded model, not a measurement: every 20 ms slot the log of the rate takes an
AR(1) step around a mean (phi 0.95: seconds-long swings, as in the Verizon/T-Mobile LTE traces of
Winstein et al., "Stochastic Forecasts Achieve High Throughput and Low Delay over Cellular
Networks", NSDI 2013), and with probability 0.5% a slot starts an outage of 100-300 ms at 1% of
the mean (handovers). Within a slot the opportunities are spread evenly (a credit carried from
millisecond to millisecond). Same seed, same files:

    python3 scripts/cellular_trace.py            # writes both files, 30 s each (they loop)
"""

from __future__ import annotations

import math
import random
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "python" / "tcplab" / "presets" / "traces"
SLOT_MS, PACKET_BITS = 20, 1500 * 8


def opportunities(mean_mbps: float, seconds: int, seed: int) -> list[int]:
    """The trace's timestamps (ms, 1-based, nondecreasing) over `seconds`."""
    rng = random.Random(seed)
    mu, x, outage, credit, out = math.log(mean_mbps), math.log(mean_mbps), 0, 0.0, []
    for slot in range(seconds * 1000 // SLOT_MS):
        x = mu + 0.95 * (x - mu) + 0.25 * rng.gauss(0.0, 1.0)
        if outage == 0 and rng.random() < 0.005:
            outage = rng.randint(100, 300) // SLOT_MS
        mbps = mean_mbps * 0.01 if outage else min(math.exp(x), 8 * mean_mbps)
        outage = max(0, outage - 1)
        per_ms = mbps * 1e6 / PACKET_BITS / 1000
        for ms in range(slot * SLOT_MS + 1, (slot + 1) * SLOT_MS + 1):
            credit += per_ms
            n = int(credit)
            credit -= n
            out += [ms] * n
    if not out or out[-1] != seconds * 1000:
        out.append(seconds * 1000)  # the period: the trace's last line
    return out


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, mbps, seed in (("cellular-down.mm", 12.0, 11), ("cellular-up.mm", 4.0, 12)):
        ms = opportunities(mbps, 30, seed)
        (OUT / name).write_text("".join(f"{m}\n" for m in ms))
        print(f"{name}: {len(ms)} opportunities in 30 s = {len(ms) * PACKET_BITS / 30 / 1e6:.2f} Mbit/s")


if __name__ == "__main__":
    main()

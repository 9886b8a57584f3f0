"""Latency under load: percentiles by rank, and the latency probes' rows of summary.json (the
`probes` table, whichever backend wrote it: the simulator's echo requests or the kernel's ping)."""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

#: The percentiles every latency figure reports (flent's and the issue's p50, p95, p99).
QUANTILES = (0.50, 0.95, 0.99)


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The `q` quantile (0 < q <= 1) by nearest rank: the ceil(q n)-th smallest value, the rule the
    simulator's delay histogram uses (tcplab-sim hist.rs) and numpy's method="inverted_cdf"."""
    if not sorted_values:
        raise ValueError("no values")
    rank = min(max(math.ceil(q * len(sorted_values)), 1), len(sorted_values))
    return sorted_values[rank - 1]


def summary_ms(values_ns: Iterable[int], nd: int = 3) -> dict[str, float] | None:
    """min, mean, p50, p95, p99 and max of durations given in ns, in ms; None without values."""
    v = sorted(values_ns)
    if not v:
        return None
    out = {"min": v[0], "mean": sum(v) / len(v)}
    out |= {f"p{round(q * 100)}": percentile(v, q) for q in QUANTILES}
    out["max"] = v[-1]
    return {k: round(x / 1e6, nd) for k, x in out.items()}


def probe_rows(probes, stats: list[dict[str, Any]], table) -> list[dict[str, Any]]:
    """summary.json's `probes`: per probe its path, requests sent, answered and lost (request or
    reply dropped; requests still in flight at the end count as neither), loss as % of the
    requests whose fate is known, and the answered requests' round-trip times in ms."""
    rows = []
    for p, st in zip(probes, stats, strict=True):
        mine = table[table["probe"] == p.name] if len(table) else table
        rtts = [int(x) for x in mine["rtt_ns"] if x >= 0] if len(mine) else []
        known = st["answered"] + st["lost"]
        rows.append({"probe": p.name, "from": p.frm, "to": p.to, "interval_ms": p.interval_ns / 1e6,
                     "size_bytes": p.size_bytes, "sent": st["sent"], "answered": st["answered"], "lost": st["lost"],
                     "loss_pct": round(100 * st["lost"] / known, 3) if known else None, "rtt_ms": summary_ms(rtts)})
    return rows

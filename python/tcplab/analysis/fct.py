"""FCT slowdown of a run's [[workload]] flows: each flow's ideal FCT on an empty network, its
slowdown (FCT / ideal), p50 and p99 by size bucket, and each request's completion (an incast's,
a request-response pair's).

Ideal FCT (HPCC, Li et al. SIGCOMM 2019, §5.1, as its simulator computes it: third.cc qp_finish()
`standalone_fct = base_rtt + total_bytes * 8 / b`, where base_rtt is the pair's round-trip
propagation delay plus one packet's transmission at every hop, total_bytes the payload plus every
packet's headers, b the path's bottleneck rate; Parsimon and m3 use the same), with two changes
for TCP: a connection that opens with a handshake spends one more round trip before its first
byte (the FCT is counted from the SYN), and the first packet's transmission at the bottleneck is
counted once (HPCC counts it in both terms), so the ideal is a lower bound no run beats:

    ideal = [rtt if handshake] + rtt + sum over the forward hops but the slowest of
            (first packet's bytes x 8 / rate) + (bytes + segments x header) x 8 / bottleneck rate

with rtt the configured propagation delay both ways, segments = ceil(bytes / MSS) and header the
IP + TCP header (40 bytes, 52 with timestamps). No slow start, delayed ACK or queueing: a flow
alone on the network still has a slowdown above 1 when its window, not the link, limits it.
"""

from __future__ import annotations

import math
from typing import Any

from ..model import Experiment, Flow

#: Size buckets of the FCT-slowdown table (bytes, upper bound exclusive): HPCC and Parsimon
#: report short flows below 100 KB and long flows above 10 MB (decimal units).
BUCKETS = (("<100KB", 0, 100_000), ("100KB-10MB", 100_000, 10_000_000), (">10MB", 10_000_000, None))


def header_bytes(f: Flow) -> int:
    """IPv4 + TCP header of each segment: 20 + 20, and 12 for the timestamp option (RFC 7323)."""
    return 40 + (12 if f.timestamps else 0)


def ideal_fct_ns(exp: Experiment, f: Flow) -> int:
    """The flow's FCT alone on the network (the module's definition), in whole nanoseconds."""
    size = f.app.bytes or 0
    hdr = header_bytes(f)
    route = exp.flow_route(f)  # its own path (ECMP, a sender's path) where it has one
    rates = [p.rate_bps for p in route]
    slowest = rates.index(min(rates))
    first_bits = (min(size, f.mss) + hdr) * 8
    store_forward_s = sum(first_bits / r for i, r in enumerate(rates) if i != slowest)
    wire_bits = (size + math.ceil(size / f.mss) * hdr) * 8
    rtt_ns = exp.flow_rtt_ns(f)
    handshake_ns = rtt_ns if f.connect == "handshake" else 0
    return handshake_ns + rtt_ns + math.ceil((store_forward_s + wire_bits / rates[slowest]) * 1e9)


def percentile(xs: list[float], q: float) -> float | None:
    """The q-quantile by nearest rank (the ceil(q n)-th smallest; Hyndman & Fan type 1): a value
    some flow had, the same on every platform."""
    if not xs:
        return None
    s = sorted(xs)
    return s[max(0, math.ceil(q * len(s)) - 1)]


def _r(x: float | None, nd: int = 4) -> float | None:
    return None if x is None else round(float(x), nd)


def slowdown_table(sizes: list[int], slowdowns: list[float | None]) -> list[dict[str, Any]]:
    """Rows by size bucket, then "all": flows, completed, p50 and p99 slowdown (of the completed)."""
    rows = []
    for label, lo, hi in BUCKETS + (("all", 0, None),):
        pick = [s for b, s in zip(sizes, slowdowns) if b >= lo and (hi is None or b < hi)]
        done = [s for s in pick if s is not None]
        rows.append({"bucket": label, "flows": len(pick), "completed": len(done),
                     "p50": _r(percentile(done, 0.5)), "p99": _r(percentile(done, 0.99))})
    return rows


def _requests(w: Any, start_ns: list[int], fct_ns: list[int | None]) -> dict[str, Any]:
    """Each request's completion: from its start to its last flow's last byte acknowledged (an
    incast's last response; a request-response pair's response)."""
    times = []
    for start, first, n in w.requests:
        ends = [start_ns[i] + fct_ns[i] for i in range(first, first + n) if fct_ns[i] is not None]
        times.append((max(ends) - start) / 1e6 if len(ends) == n else None)
    done = [t for t in times if t is not None]
    return {"requests": len(times), "flows_each": w.requests[0][2] if w.requests else 0, "completed": len(done),
            "completion_ms": {"p50": _r(percentile(done, 0.5), 3), "p99": _r(percentile(done, 0.99), 3),
                              "max": _r(max(done), 3) if done else None}}


def workloads(exp: Experiment, flow_rows: list[dict[str, Any]], start_ns: list[int],
              fct_ns: list[int | None]) -> list[dict[str, Any]]:
    """summary.json's `workloads`: each workload's table; adds ideal_fct_s, slowdown and the
    workload's name to its flows' rows. `start_ns[i]`: when flow i started (a response: when its request was in);
    `fct_ns[i]`: its FCT from then (None: it did not complete)."""
    out = []
    for w in exp.workloads:
        sizes, slow = [], []
        for i in range(w.first_flow, w.first_flow + w.flow_count):
            f, ideal = exp.flows[i], ideal_fct_ns(exp, exp.flows[i])
            s = fct_ns[i] / ideal if fct_ns[i] is not None else None
            flow_rows[i]["ideal_fct_s"], flow_rows[i]["slowdown"] = _r(ideal / 1e9, 9), _r(s, 6)
            flow_rows[i]["workload"] = w.name
            sizes.append(f.app.bytes or 0)
            slow.append(s)
        row: dict[str, Any] = {"name": w.name, "kind": w.kind, "sizes": w.sizes, "flows": w.flow_count,
                               "mean_bytes": _r(w.mean_bytes, 1), "bytes": sum(sizes), "fct_slowdown": slowdown_table(sizes, slow)}
        if w.kind == "poisson":
            row |= {"offered_load": w.offered_load, "link": w.link, "arrivals_per_s": _r(w.arrivals_per_s, 3)}
        if w.requests:
            row["requests"] = _requests(w, start_ns, fct_ns)
        out.append(row)
    return out

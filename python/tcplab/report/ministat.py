"""ministat(1)'s report, character for character: the legend, the ASCII distribution plot, the
N/Min/Max/Median/Avg/Stddev table and, for every sample after the first, "Difference at C%
confidence" or "No difference proven" (FreeBSD usr.bin/ministat/ministat.c: PlotSet(),
DumpPlot(), Vitals(), Relative())."""

from __future__ import annotations

import math

from ..analysis.stats import Sample, describe, difference

#: ministat's plot symbols: sample i is drawn with SYMBOLS[i + 1]; points of samples 1 and 2 in
#: the same cell show as '*' (1 | 2 = 3), as in ministat.
SYMBOLS = " x+*%#@O"
MAX_SAMPLES = len(SYMBOLS) - 1


def _g(v: float, spec: str = "") -> str:
    """C's %g / %13.8g (Python's 'g' spells numbers, inf and nan the same way)."""
    return format(v, spec + "g")


def _ratio(a: float, b: float) -> float:
    """a / b with C's IEEE result for b == 0 (inf or nan) instead of an exception."""
    if b == 0:
        return math.nan if a == 0 else math.copysign(math.inf, a)
    return a / b


def _plot(samples: list[Sample], width: int, separate: bool) -> list[str]:
    lo = min(min(s.min, s.mean - s.stddev) for s in samples)
    hi = max(max(s.max, s.mean + s.stddev) for s in samples)
    span = hi - lo
    if span == 0:
        return ["[no plot, span is zero width]"]
    dx = span / (width - 1.0)
    x0 = lo - 0.5 * dx

    def cell(v: float) -> int:
        return int((v - x0) / dx)  # C's truncating conversion

    grid: dict[tuple[int, int], int] = {}  # (row from the bottom, column) -> OR of sample numbers
    height = 0
    bars: list[list[str] | None] = [None] * len(samples)
    for k, s in enumerate(samples, 1):
        # Points in the same column stack upwards. ministat sets the plot's height from each
        # sample in turn (the last one wins, so it can shrink), and when a sample needs more rows
        # than the current height it clears the rows from that height up, which can erase points
        # an earlier sample put there. Reproduced, so that the plot is ministat's.
        tallest, run, prev = 1, 0, -1
        cols = [cell(p) for p in s.points]
        for c in cols:
            run = run + 1 if c == prev else 1
            prev = c
            tallest = max(tallest, run)
        if tallest + 1 > height:
            for key in [key for key in grid if height <= key[0] < tallest + 1]:
                del grid[key]
        height = tallest + 1
        run, prev = 0, -1
        for c in cols:
            run = run + 1 if c == prev else 1
            prev = c
            grid[(run, c)] = grid.get((run, c), 0) | k
        b = k - 1 if separate else 0
        if bars[b] is None:
            bars[b] = [" "] * width
        bar = bars[b]
        if s.n > 1:
            left, right = cell(s.mean - s.stddev), cell(s.mean + s.stddev)
            bar[right] = "|"
            bar[left] = "|"
            for i in range(left + 1, right):
                if bar[i] == " ":
                    bar[i] = "_"
        bar[cell(s.median)] = "M"
        bar[cell(s.mean)] = "A"
    edge = "+" + "-" * width + "+"
    rows = [edge]
    for row in range(height - 1, 0, -1):
        rows.append("|" + "".join(SYMBOLS[grid.get((row, c), 0)] if grid.get((row, c), 0) < len(SYMBOLS)
                                  else f"[{grid[(row, c)]:02x}]" for c in range(width)) + "|")
    rows += ["|" + "".join(b) + "|" for b in bars if b is not None]
    rows.append(edge)
    return rows


def render(values: list[list[float]], names: list[str], *, confidence_pct: float = 95.0, width: int = 74,
           separate: bool = False, summary_only: bool = False) -> str:
    """The whole ministat report for samples in `values` (each in input order), as one string."""
    if not 1 <= len(values) <= MAX_SAMPLES:
        raise ValueError(f"ministat compares 1 to {MAX_SAMPLES} samples")
    samples = [describe(v) for v in values]
    lines = [f"{SYMBOLS[i + 1]} {name}" for i, name in enumerate(names)]
    if not summary_only:
        lines += _plot(samples, width, separate)
    lines.append("    N           Min           Max        Median           Avg        Stddev")
    for i, s in enumerate(samples):
        lines.append(f"{SYMBOLS[i + 1]} {s.n:3d} {_g(s.min, '13.8')} {_g(s.max, '13.8')} {_g(s.median, '13.8')} "
                     f"{_g(s.mean, '13.8')} {_g(s.stddev, '13.8')}")
        if i == 0 or summary_only:
            continue
        d = difference(samples[0], s, confidence_pct / 100.0)
        if d is not None and d.significant:
            lines += [f"Difference at {confidence_pct:.1f}% confidence", f"\t{_g(d.diff)} +/- {_g(d.error)}",
                      f"\t{_g(_ratio(d.diff * 100, samples[0].mean))}% +/- {_g(_ratio(d.error * 100, samples[0].mean))}%", f"\t(Student's t, pooled s = {_g(d.pooled_s)})"]
        else:
            lines.append(f"No difference proven at {confidence_pct:.1f}% confidence")
    return "\n".join(lines) + "\n"


def iterations_report(summaries: list[dict], width: int = 74) -> str:
    """The seeds' ministat tables for `tcplab run --iterations`: one sample per flow over the
    iterations. Fixed-size transfers are compared by completion time, each group of equal size
    against its first flow (T6: IW10/20/40 against IW3, for 65 KB and for 1 MB), and, where the
    run modelled iperf3's control exchange, by `time iperf3 -n` (`iperf3_s`) too; time-limited
    flows by throughput against the first of them; latency probes by their RTT p50 and p99. Empty
    with fewer than 2 iterations."""
    if len(summaries) < 2:
        return ""
    flows = summaries[0]["flows"]
    groups: dict[str, list[int]] = {}
    for i, f in enumerate(flows):
        key = f"completion time (s) of {f['bytes_written']}-byte transfers" if f["kind"] == "bytes" \
            else "throughput (Mbit/s) of time-limited flows"
        groups.setdefault(key, []).append(i)
        if "iperf3_s" in f:
            groups.setdefault(f"time iperf3 -n (s) of {f['bytes_written']}-byte transfers", []).append(i)
    parts = []
    for title, idx in groups.items():
        metric = ("completion_s" if title.startswith("completion") else "iperf3_s" if title.startswith("time iperf3")
                  else "throughput_mbps")
        values = [[float(s["flows"][i][metric]) if s["flows"][i][metric] is not None else math.nan for s in summaries]
                  for i in idx]
        if any(math.isnan(v) for vs in values for v in vs):
            parts.append(f"{title}: not every transfer completed; no comparison\n")
            continue
        others = list(range(1, len(idx)))
        for c in range(0, max(1, len(others)), MAX_SAMPLES - 1):  # ministat takes at most 7 samples
            chunk = [0] + others[c:c + MAX_SAMPLES - 1]
            parts.append(f"{title}, {len(summaries)} iterations:\n"
                         + render([values[k] for k in chunk], [flows[idx[k]]["flow"] for k in chunk], width=width))
    parts += _probe_parts(summaries, width)
    return "\n".join(parts)


def _probe_parts(summaries: list[dict], width: int) -> list[str]:
    """The latency probes' RTT p50 and p99 over the iterations, each probe against the first."""
    probes = summaries[0].get("probes") or []
    out = []
    for q in ("p50", "p99"):
        values = [[(s["probes"][i]["rtt_ms"] or {}).get(q, math.nan) for s in summaries] for i in range(len(probes))]
        if not probes or any(math.isnan(v) for vs in values for v in vs):
            continue
        names = [p["probe"] for p in probes][:MAX_SAMPLES]
        out.append(f"probe RTT {q} (ms), {len(summaries)} iterations:\n" + render(values[:MAX_SAMPLES], names, width=width))
    return out

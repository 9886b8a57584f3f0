"""The seeds' "peer compare": one row per (stack, cc) run of the same experiment, each non-Linux
row also given as % difference from Linux with the same cc."""

from __future__ import annotations

from typing import Any

from .stats import describe, difference

COLUMNS = ["stack", "cc", "n", "throughput_mbps", "utilisation", "fairness_jain", "retransmits", "rtos", "vs_linux_pct",
           "vs_linux_error_pct", "vs_linux_significant"]


def _row(stack: str, cc: str, summary: dict[str, Any]) -> dict[str, Any]:
    flows = summary["flows"]
    return {
        "stack": stack, "cc": cc,
        # Sum over the senders of their throughput to the receiving application (iperf3's SUM line).
        "throughput_mbps": sum(f["throughput_mbps"] or 0.0 for f in flows),
        "utilisation": summary["bottleneck"]["utilisation"],
        "fairness_jain": summary["fairness_jain"],
        "retransmits": sum(f["retransmits"] for f in flows),
        "rtos": sum(f["rtos"] for f in flows),
    }


def compare(runs: list[tuple[str, str, dict[str, Any] | list[dict[str, Any]]]],
            confidence: float = 0.95) -> list[dict[str, Any]]:
    """Rows for (stack, cc, summary or list of iteration summaries) runs, in the given order: each
    metric the mean over iterations. vs_linux_pct = 100 x (throughput - Linux's) / Linux's for
    the same cc; None on Linux rows or when Linux moved nothing. With >= 2 iterations on both
    sides, vs_linux_error_pct and vs_linux_significant come from Student's t with pooled s over
    the iterations' summed throughputs (ministat's test); else they are None."""
    rows, samples = [], []
    for st, cc, s in runs:
        its = s if isinstance(s, list) else [s]
        per = [_row(st, cc, x) for x in its]
        row = {"stack": st, "cc": cc, "n": len(per)}
        for k in ("throughput_mbps", "utilisation", "fairness_jain", "retransmits", "rtos"):
            vals = [r[k] for r in per if r[k] is not None]
            row[k] = (sum(vals) / len(vals) if len(per) > 1 else vals[0]) if vals else None
        rows.append(row)
        samples.append([r["throughput_mbps"] for r in per])
    linux = {r["cc"]: i for i, r in enumerate(rows) if r["stack"] == "linux"}
    for r, xs in zip(rows, samples):
        r["vs_linux_pct"] = r["vs_linux_error_pct"] = r["vs_linux_significant"] = None
        i = linux.get(r["cc"])
        if r["stack"] == "linux" or i is None or not rows[i]["throughput_mbps"]:
            continue
        base = rows[i]["throughput_mbps"]
        r["vs_linux_pct"] = 100.0 * (r["throughput_mbps"] - base) / base
        d = difference(describe(samples[i]), describe(xs), confidence)
        if d is not None:
            r["vs_linux_error_pct"], r["vs_linux_significant"] = d.pct_error, d.significant
    return rows

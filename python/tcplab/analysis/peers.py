"""The seeds' "peer compare": one row per (stack, cc) run of the same experiment, each non-Linux
row also given as % difference from Linux with the same cc."""

from __future__ import annotations

from typing import Any

COLUMNS = ["stack", "cc", "throughput_mbps", "utilisation", "fairness_jain", "retransmits", "rtos", "vs_linux_pct"]


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


def compare(runs: list[tuple[str, str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Rows for (stack, cc, summary) runs, in the given order. vs_linux_pct = 100 x (throughput -
    Linux's) / Linux's for the same cc; None on Linux rows or when Linux moved nothing."""
    rows = [_row(st, cc, s) for st, cc, s in runs]
    linux = {r["cc"]: r["throughput_mbps"] for r in rows if r["stack"] == "linux"}
    for r in rows:
        base = linux.get(r["cc"])
        r["vs_linux_pct"] = None if r["stack"] == "linux" or not base else 100.0 * (r["throughput_mbps"] - base) / base
    return rows

"""Charts of a run as PNG and SVG: throughput and cwnd vs time, cwnd in the first second, and
the bottleneck queue."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

# Reproducible SVG ids and no timestamps in the files.
matplotlib.rcParams["svg.hashsalt"] = "tcplab"
_SVG_META = {"Date": None}
_PNG_META = {"Software": None}


def _finish(ax, xlabel: str, ylabel: str, title: str, legend: str) -> None:
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(loc=legend, fontsize=8)
    ax.set_title(title)


def _save(fig, out: Path, stem: str) -> list[str]:
    fig.tight_layout()
    fig.savefig(out / f"{stem}.png", dpi=110, metadata=_PNG_META)
    fig.savefig(out / f"{stem}.svg", metadata=_SVG_META)
    plt.close(fig)
    return [f"{stem}.png", f"{stem}.svg"]


def throughput(intervals: pd.DataFrame, flows: list[dict[str, Any]], out: Path) -> list[str]:
    """Per-flow and summed bitrate per interval (bytes delivered to the application)."""
    fig, ax = plt.subplots(figsize=(9, 4))
    total: dict[float, float] = {}
    for f in flows:
        mine = intervals[intervals["flow"] == f["name"]]
        if not len(mine):
            continue
        t = mine["t_end_ns"] / 1e9
        mbps = mine["bytes"] * 8 / ((mine["t_end_ns"] - mine["t_start_ns"]) / 1e9) / 1e6
        ax.step(t, mbps, where="pre", label=f["name"], linewidth=1)
        for te, v in zip(t.round(6), mbps):
            total[te] = total.get(te, 0.0) + v
    if len(flows) > 1 and total:
        ts = sorted(total)
        ax.step(ts, [total[x] for x in ts], where="pre", label="sum", color="black", linewidth=1.2)
    _finish(ax, "time (s)", "throughput (Mbit/s)", "Throughput per interval", "lower right")
    return _save(fig, out, "throughput")


def cwnd(samples: pd.DataFrame, flows: list[dict[str, Any]], out: Path, first_second: bool = False) -> list[str]:
    """cwnd vs time per flow, for the whole run or each flow's first second."""
    fig, ax = plt.subplots(figsize=(9, 4))
    for f in flows:
        mine = samples[samples["flow"] == f["name"]]
        if first_second:
            mine = mine[mine["t_ns"] <= f["start_ns"] + 1_000_000_000]
            t = (mine["t_ns"] - f["start_ns"]) / 1e3 / 1e3
        else:
            t = mine["t_ns"] / 1e9
        ax.plot(t, mine["cwnd_bytes"] / 1e3, label=f["name"], linewidth=0.8, drawstyle="steps-post")
    _finish(ax, "time since flow start (ms)" if first_second else "time (s)", "cwnd (kB)",
            "cwnd in each flow's first second" if first_second else "cwnd", "upper right")
    return _save(fig, out, "cwnd_first_second" if first_second else "cwnd")


def queue(queues: pd.DataFrame, out: Path) -> list[str]:
    """Bottleneck queue length in packets."""
    fig, ax = plt.subplots(figsize=(9, 3))
    for port, rows in queues.groupby("port", sort=True):
        ax.plot(rows["t_ns"] / 1e9, rows["queue_packets"], label=str(port), linewidth=0.6)
    _finish(ax, "time (s)", "queue (packets)", "Bottleneck queue", "upper right")
    return _save(fig, out, "queue")

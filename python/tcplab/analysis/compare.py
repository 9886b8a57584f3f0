"""Two runs of one experiment side by side (typically the simulator's and the kernel's): per-flow
throughput and its difference, retransmissions, recovery episodes, and a cwnd-trajectory distance.

The distance: both flows' cwnd are put on a common 10 ms grid (last sample at or before each grid
point, from the later of the two first samples to the earlier of the two last), and reported as
the mean absolute difference in bytes and relative to the mean cwnd of run A (0 = identical).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

GRID_NS = 10_000_000


def cwnd_distance(a: pd.DataFrame, b: pd.DataFrame, grid_ns: int = GRID_NS) -> dict[str, float | None]:
    """Mean |cwnd_a - cwnd_b| on a common grid; inputs have t_ns and cwnd_bytes."""
    if not len(a) or not len(b):
        return {"mean_abs_bytes": None, "relative": None, "points": 0}
    a, b = a.sort_values("t_ns"), b.sort_values("t_ns")
    lo, hi = max(a["t_ns"].iloc[0], b["t_ns"].iloc[0]), min(a["t_ns"].iloc[-1], b["t_ns"].iloc[-1])
    if hi <= lo:
        return {"mean_abs_bytes": None, "relative": None, "points": 0}
    grid = np.arange(lo, hi + 1, grid_ns)

    def on_grid(df: pd.DataFrame) -> np.ndarray:
        idx = np.searchsorted(df["t_ns"].to_numpy(), grid, side="right") - 1
        return df["cwnd_bytes"].to_numpy()[idx].astype(float)

    ga, gb = on_grid(a), on_grid(b)
    mad = float(np.mean(np.abs(ga - gb)))
    mean_a = float(np.mean(ga))
    return {"mean_abs_bytes": round(mad, 1), "relative": round(mad / mean_a, 4) if mean_a else None, "points": int(len(grid))}


def compare(info_a: dict[str, Any], info_b: dict[str, Any], samples_a: pd.DataFrame, samples_b: pd.DataFrame,
            episodes_a: pd.DataFrame, episodes_b: pd.DataFrame) -> list[dict[str, Any]]:
    """One row per flow present in both runs."""
    fa = {f["flow"]: f for f in info_a["flows"]}
    fb = {f["flow"]: f for f in info_b["flows"]}
    rows = []
    for name in [f["flow"] for f in info_a["flows"] if f["flow"] in fb]:
        a, b = fa[name], fb[name]
        ta, tb = a["throughput_mbps"], b["throughput_mbps"]
        dist = cwnd_distance(samples_a[samples_a["flow"] == name] if len(samples_a) else samples_a,
                             samples_b[samples_b["flow"] == name] if len(samples_b) else samples_b)
        ea = int((episodes_a["flow"] == name).sum()) if len(episodes_a) else 0
        eb = int((episodes_b["flow"] == name).sum()) if len(episodes_b) else 0
        rows.append({
            "flow": name, "cc": a["cc"],
            "a_mbps": ta, "b_mbps": tb,
            "diff_mbps": None if ta is None or tb is None else round(tb - ta, 3),
            "diff_pct": None if not ta or tb is None else round((tb - ta) / ta * 100, 2),
            "a_retransmits": a["retransmits"], "b_retransmits": b["retransmits"],
            "a_episodes": ea, "b_episodes": eb,
            "cwnd_mean_abs_diff_bytes": dist["mean_abs_bytes"], "cwnd_relative_diff": dist["relative"],
        })
    return rows

"""A finished run's results folder as Python objects: `Run`, its summary and its tables as pandas
DataFrames with units in their names (pandas and pyarrow load on first use: `import tcplab` stays light)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class Run:
    """A finished run's results folder, with its tables as pandas DataFrames (units in names)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not (self.path / "summary.json").is_file():
            raise FileNotFoundError(f"{self.path} is not a tcplab results folder (no summary.json)")

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r})"

    @property
    def info(self) -> dict[str, Any]:
        """summary.json as a dict (DamagedResults if it is not the summary tcplab writes)."""
        from .store import DamagedResults  # loaded on use: `import tcplab` stays free of pyarrow

        path = self.path / "summary.json"
        try:
            info = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise DamagedResults(f"{path}: cannot be read ({e})") from None
        flows = info.get("flows") if isinstance(info, dict) else None
        if not isinstance(flows, list) or not all(isinstance(f, dict) and "flow" in f for f in flows) or "name" not in info:
            raise DamagedResults(f"{path}: is not a tcplab summary (no name, or no list of flows)")
        return info

    @property
    def summary(self):
        """One row per flow: throughput_mbps, retransmits, completion_s, ..."""
        import pandas as pd  # loaded on use, as every table's reader

        return pd.DataFrame(self.info["flows"])

    def table(self, name: str):
        """Any recorded table: flows, intervals, queues, ports, events."""
        from .store import read_table  # loaded on use: pyarrow and pandas

        return read_table(self.path, name)

    @property
    def intervals(self):
        """iperf3-style intervals with t_start_s, t_end_s and rate_mbps added."""
        df = self.table("intervals")
        if len(df):
            df["t_start_s"] = df["t_start_ns"] / 1e9
            df["t_end_s"] = df["t_end_ns"] / 1e9
            df["rate_mbps"] = df["bytes"] * 8 / (df["t_end_ns"] - df["t_start_ns"]) * 1e3
        return df

    @property
    def recovery(self):
        """Loss-recovery episodes per flow (see tcplab.analysis.recovery)."""
        from .analysis.recovery import episodes  # loaded on use: numpy and pandas

        sends = self.table("sends")
        mss = {f["flow"]: f["mss_bytes"] for f in self.info["flows"]}
        return episodes(self.table("events"), sends if len(sends) else None, mss)

    @property
    def flows(self):
        """Sampled flow state with t_s added."""
        df = self.table("flows")
        if len(df):
            df["t_s"] = df["t_ns"] / 1e9
        return df

"""What a calibration compares between the measured run and a twin candidate: each observable's
values read from a results folder (any backend, or an import), and its error, a relative number
so that observables of different units add up (docs/calibrate.md states each formula)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..store import read_json, read_table

#: Observables, in the order they are shown; all of those the measured run has data for are the default.
OBSERVABLES = ("throughput", "loss_episodes", "cwnd_at_loss", "rtt", "retransmits", "utilisation")
#: Episodes are counted per flow in this many equal slices of its time, so their timing counts.
EPISODE_SLICES = 10
#: The recovery_start and rto event codes (record contract: _native.record_contract()["events"]).
EPISODE_EVENTS = (1, 3)
RTT_PERCENTILES = (5, 50, 95)


def _per_flow(df, flow: str):
    return df[df["flow"] == flow] if len(df) and "flow" in df.columns else df.iloc[0:0]


def _throughput(run: Path, flows: list[str], info: dict[str, Any]) -> np.ndarray | None:
    """Each flow's per-interval throughput (Mbit/s), flow after flow, in interval order; the last
    short interval (the run's end cuts it: a few ms with what the flow drained) is left out."""
    iv = read_table(run, "intervals", ["flow", "t_start_ns", "t_end_ns", "bytes"])
    if not len(iv):
        return None
    parts = []
    for f in flows:
        d = _per_flow(iv, f).sort_values("t_start_ns")
        span = (d["t_end_ns"] - d["t_start_ns"]).to_numpy(dtype=float)
        keep = span >= 0.5 * np.median(span) if len(span) else span > 0
        d, span = d[keep], span[keep]
        parts.append(np.where(span > 0, d["bytes"].to_numpy(dtype=float) * 8e3 / np.maximum(span, 1), 0.0))
    return np.concatenate(parts) if parts else None


def _episodes(run: Path, flows: list[str], info: dict[str, Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """Per flow, loss episodes (recovery entries and RTOs) counted in EPISODE_SLICES slices of its
    time; and per flow the median cwnd (bytes) at a recovery's start (nan without one)."""
    ev = read_table(run, "events", ["t_ns", "flow", "event", "cwnd_bytes"])
    if not len(ev):
        return None
    starts = {f["flow"]: f.get("start_s") or 0.0 for f in info["flows"]}
    span_s = {f["flow"]: f.get("duration_s") or 0.0 for f in info["flows"]}
    counts, cwnd = [], []
    for f in flows:
        d = _per_flow(ev, f)
        d = d[d["event"].isin(EPISODE_EVENTS)]
        t = d["t_ns"].to_numpy(dtype=float) / 1e9 - starts.get(f, 0.0)
        edges = np.linspace(0.0, max(span_s.get(f, 0.0), float(t.max()) if len(t) else 0.0, 1e-9), EPISODE_SLICES + 1)
        counts.append(np.histogram(t, edges)[0].astype(float))
        at = d[d["event"] == 1]["cwnd_bytes"].to_numpy(dtype=float)
        cwnd.append(float(np.median(at)) if len(at) else np.nan)
    return np.concatenate(counts), np.array(cwnd)


def _rtt(run: Path, flows: list[str], info: dict[str, Any]) -> np.ndarray | None:
    """Per flow, the p5, p50 and p95 of the sampled smoothed RTT (ms): p5 near the path's base RTT,
    the others with its queueing (a buffer and a delay trade against each other in p50 alone)."""
    fl = read_table(run, "flows", ["flow", "srtt_us"])
    if not len(fl):
        return None
    out = []
    for f in flows:
        s = _per_flow(fl, f)["srtt_us"].to_numpy(dtype=float)
        s = s[s > 0] / 1e3
        out += [float(p) for p in np.percentile(s, RTT_PERCENTILES)] if len(s) else [np.nan] * len(RTT_PERCENTILES)
    return np.array(out)


def features(run: Path, flows: list[str]) -> dict[str, np.ndarray]:
    """Every observable the run has data for, its flows in the order given (names of this run)."""
    info = read_json(run / "summary.json")
    out: dict[str, np.ndarray] = {}
    if (tp := _throughput(run, flows, info)) is not None:
        out["throughput"] = tp
    if (eps := _episodes(run, flows, info)) is not None:
        out["loss_episodes"] = eps[0]
        if not np.all(np.isnan(eps[1])):
            out["cwnd_at_loss"] = eps[1]
    by_name = {f["flow"]: f for f in info["flows"]}
    if (rtt := _rtt(run, flows, info)) is not None and not np.all(np.isnan(rtt)):
        # The smallest RTT measured (iperf3's min_rtt, the model's): the base RTT, which a queue
        # that never drains hides from every percentile of the samples.
        low = [by_name.get(f, {}).get("min_rtt_ms") for f in flows]
        out["rtt"] = np.concatenate([rtt, [float(x) for x in low]]) if all(x for x in low) else rtt
    if all(by_name.get(f, {}).get("retransmits") is not None for f in flows):
        out["retransmits"] = np.array([float(by_name[f]["retransmits"]) for f in flows])
    util = (info.get("bottleneck") or {}).get("utilisation")
    if util is not None:
        out["utilisation"] = np.array([float(util)])
    return out


def mean(runs: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The seeds' features averaged (element by element; a vector cut to the shortest run's)."""
    out = {}
    for name in set.intersection(*(set(r) for r in runs)):
        n = min(len(r[name]) for r in runs)
        with np.errstate(all="ignore"):
            stack = np.vstack([r[name][:n] for r in runs])
            out[name] = np.nanmean(stack, axis=0) if not np.all(np.isnan(stack)) else stack[0]
    return out


def error(name: str, measured: np.ndarray, twin: np.ndarray) -> float:
    """The relative error of one observable (0 is a perfect match)."""
    n = min(len(measured), len(twin))
    m, t = measured[:n], twin[:n]
    if name == "throughput":  # RMS of the interval differences, relative to the mean measured rate
        return float(np.sqrt(np.mean((t - m) ** 2)) / max(np.mean(np.abs(m)), 1e-9)) if n else 1.0
    if name == "retransmits":
        return float(np.sum(np.abs(t - m)) / max(np.sum(m), 1.0))
    if name == "loss_episodes":  # the count, and the timing: the distance of the cumulative counts per flow
        mc = np.cumsum(m.reshape(-1, EPISODE_SLICES), axis=1)
        tc = np.cumsum(t.reshape(-1, EPISODE_SLICES), axis=1)
        return float((abs(t.sum() - m.sum()) + np.abs(tc - mc).mean(axis=1).sum()) / max(m.sum(), 1.0))
    if name == "utilisation":
        return float(abs(t[0] - m[0]) / max(m[0], 0.01))
    keep = ~(np.isnan(m) | np.isnan(t))  # cwnd_at_loss, rtt: mean relative difference
    if not keep.any():
        return 0.0 if np.isnan(m).all() and np.isnan(t).all() else 1.0
    return float(np.mean(np.abs(t[keep] - m[keep]) / np.maximum(np.abs(m[keep]), 1e-9)))


def summary_value(name: str, v: np.ndarray) -> float:
    """One number to show for an observable: total episodes or retransmissions, mean otherwise."""
    if name in ("loss_episodes", "retransmits"):
        return float(np.nansum(v))
    return float(np.nanmean(v)) if len(v) and not np.all(np.isnan(v)) else float("nan")

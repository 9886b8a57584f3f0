"""Static charts (matplotlib, PNG/SVG/PDF) for papers: any panel of the interactive report or a
flow's time-sequence graph for a window (`tcplab plot`), and two runs' cwnd overlaid (`tcplab
compare --out`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .tseq import KINDS  # noqa: E402

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


def envelope(df: pd.DataFrame, column: str, buckets: int = 4000) -> pd.DataFrame:
    """At most 2 * buckets rows that keep each bucket's minimum and maximum of `column` in time
    order: a chart ~1000 pixels wide shows the same line, spikes and drops included, from a
    fraction of the points (drawing 200 000 points per flow dominated the report's cost)."""
    n = len(df)
    if n <= 2 * buckets:
        return df
    values = df[column].to_numpy()
    edges = np.linspace(0, n, buckets + 1).astype(int)
    keep = []
    for a, b in zip(edges[:-1], edges[1:]):
        if b > a:
            chunk = values[a:b]
            keep += sorted({a + int(chunk.argmin()), a + int(chunk.argmax())})
    return df.iloc[keep]


def cwnd_overlay(samples_a: pd.DataFrame, samples_b: pd.DataFrame, flow: str, labels: tuple[str, str], out: Path,
                 stem: str) -> list[str]:
    """One flow's cwnd from two runs on one chart (e.g. simulator vs kernel)."""
    fig, ax = plt.subplots(figsize=(9, 4))
    for df, label, style in ((samples_a, labels[0], "-"), (samples_b, labels[1], "--")):
        mine = df[df["flow"] == flow] if len(df) else df
        if len(mine):
            env = envelope(mine, "cwnd_bytes")
            ax.plot(env["t_ns"] / 1e9, env["cwnd_bytes"] / 1e3, style, label=f"{label}", linewidth=0.9)
    _finish(ax, "time (s)", "cwnd (KB)", f"{flow}: cwnd, two runs", "lower right")
    return _save(fig, out, stem)


# --- any panel of the interactive pages, for a chosen window (`tcplab plot`) ---------------------

def _decoded(s: dict[str, Any], blobs: dict[str, dict]) -> tuple[np.ndarray, np.ndarray]:
    """A page series at its finest level: (t in seconds, values)."""
    src = blobs[s["detail"]] if s.get("detail") else s["ov"].value()
    t = np.cumsum(np.asarray(src["t"], dtype=np.int64)) / 1e6
    return t, np.array([np.nan if v is None else v for v in src["y"]], dtype=float)


def _episodes(ax, model, lo: float | None, hi: float | None, group: str | None = None) -> None:
    for e in model.episodes:
        if (group is None or e["group"] == group) and (hi is None or e["start"] <= hi) and (lo is None or e["end"] >= lo):
            ax.axvspan(e["start"], max(e["end"], e["start"] + 1e-4), color="orange", alpha=0.15, linewidth=0)


def panel_chart(model, pid: str, lo: float | None, hi: float | None, out: Path) -> None:
    """One time panel (throughput, cwnd, flight, srtt, queue) as a static chart file `out`."""
    p = model.panels[pid]
    fig, ax = plt.subplots(figsize=(9, 3.6))
    ax2 = None
    for s in p["series"]:
        t, y = _decoded(s, model.blobs)
        a = ax
        if s["axis"] == "y2":
            ax2 = ax2 or ax.twinx()
            a = ax2
        a.plot(t, y, label=s["name"], linewidth=0.9, drawstyle="steps-post" if s["step"] else "default",
               linestyle="--" if s["dash"] else "-")
    _episodes(ax, model, lo, hi)
    if lo is not None or hi is not None:
        ax.set_xlim(lo, hi)
    if ax2 is not None:
        ax2.set_ylabel(p["y2label"])
        ax2.set_ylim(bottom=0)
    _finish(ax, "time (s)", p["ylabel"], p["title"], "upper right")
    _save_one(fig, out)


def tseq_chart(model, flow: str, lo: float | None, hi: float | None, out: Path) -> None:
    """A flow's time-sequence graph (report.tseq) as a static chart file `out`."""
    g = next(q for q in model.tseq if q["flow"] == flow)
    fig, ax = plt.subplots(figsize=(9, 5))
    colours = {0: "#222222", 1: "#1f5fbf", 2: "#c000c0", 3: "#e00000", 4: "#ff8c00"}
    if g["sends"]:
        b = model.blobs[g["sends"]]
        t = np.cumsum(np.asarray(b["t"], dtype=np.int64)) / 1e6
        seq = np.cumsum(np.asarray(b["s"], dtype=np.int64))
        size, kind = np.asarray(b["b"]), np.asarray(b["k"])
        for k, name in KINDS.items():
            m = kind == k
            if m.any():
                ax.vlines(t[m], seq[m], seq[m] + size[m], colors=colours[k], linewidth=1.6 if k >= 3 else 0.9, label=name)
    if g["sacks"]:
        b = model.blobs[g["sacks"]]
        t = np.cumsum(np.asarray(b["t"], dtype=np.int64)) / 1e6
        st = np.cumsum(np.asarray(b["s"], dtype=np.int64))
        ax.vlines(t, st, st + np.asarray(b["e"]), colors="#9600c8", linewidth=1.4, label="SACK block")
    ylo, yhi = [], []
    for s in g["lines"]:
        t, y = _decoded(s, model.blobs)
        ax.plot(t, y, drawstyle="steps-post", linewidth=0.9, linestyle="--" if s["dash"] else "-", label=s["name"])
        if not s.get("edge") and len(y) and not np.isnan(y).all():
            ylo.append(np.nanmin(y))
            yhi.append(np.nanmax(y))
    _episodes(ax, model, lo, hi, g["group"])
    if ylo:  # as the page: a receive-window edge far above the data stays above the chart
        pad = max(1.0, (max(yhi) - min(ylo)) * 0.05)
        ax.set_ylim(min(ylo) - pad, max(yhi) + pad)
    if lo is not None or hi is not None:
        ax.set_xlim(lo, hi)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("sequence (bytes, relative)")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=7)
    ax.set_title(g["title"])
    _save_one(fig, out)


def _save_one(fig, out: Path) -> None:
    fig.tight_layout()
    meta = _SVG_META if out.suffix == ".svg" else _PNG_META if out.suffix == ".png" else None
    fig.savefig(out, dpi=130, metadata=meta)
    plt.close(fig)

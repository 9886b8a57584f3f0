"""A flow's time-sequence graph (Stevens / tcptrace style, as Wireshark's "tcptrace" graph):
every send as a vertical bar from its first to its last byte (so a TSO burst stands tall and a
fractional segment short), retransmissions and tail-loss probes marked, the cumulative ACK line,
the SACK blocks each ACK carried and the receive-window edge (ACK + window) — from the run's
`sends`, `acks` and `flows` tables, whatever produced them (simulator, kernel pcap, imports)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..contract import TLP
from . import series as S
from .columns import MISSING, Columns

#: Mark kinds in the page (and in `tcplab plot --what tseq`): code -> name.
KINDS = {0: "segment", 1: "TSO burst", 2: "fractional", 3: "retransmission", 4: "probe"}


def send_kinds(sends: Columns, mss: int, probe_t_ns: np.ndarray) -> np.ndarray:
    """Each send's kind: probe (sent when a tail-loss probe fired), retransmission, TSO burst
    (more than one MSS), fractional (less than one MSS) or one segment."""
    b = sends["bytes"]
    k = np.zeros(len(sends), dtype=np.int64)
    if mss > 0:
        k[b > mss] = 1
        k[(b > 0) & (b < mss)] = 2
    k[sends["retx"] == 1] = 3
    if len(probe_t_ns):
        k[np.isin(sends["t_ns"], probe_t_ns)] = 4
    return k


def _pick(t_ns: np.ndarray, share: int, focus: S.Focus) -> tuple[np.ndarray, list[tuple[int, int]] | None]:
    """Which rows to embed: all if they fit, else the focus windows in order while they fit.
    Returns the mask and the windows (None: all)."""
    if len(t_ns) <= share:
        return np.ones(len(t_ns), dtype=bool), None
    keep = np.zeros(len(t_ns), dtype=bool)
    wins = []
    for a, b in focus.windows:
        i, j = np.searchsorted(t_ns, [a, b])
        if keep.sum() + (j - i) > share:
            break
        keep[i:j] = True
        wins.append((a, b))
    return keep, wins


def sack_blocks(acks: Columns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every SACK block the ACKs carried, in time order (blocks of one ACK in their order):
    (t_ns, start, end)."""
    t, parts = acks["t_ns"], []
    for i in range(1, 5):
        a, b = acks[f"sack{i}_start"], acks[f"sack{i}_end"]
        ok = (a >= 0) & (b > a)
        parts.append((t[ok], a[ok], b[ok]))
    bt, start, end = (np.concatenate(p) for p in zip(*parts))
    order = np.argsort(bt, kind="stable")
    return bt[order], start[order], end[order]


def add_tseq(model, tables, flow: dict[str, Any], focus: S.Focus, origin: int, run_i: int, pre: str, line_share: S.Share,
             n_runs: int = 1, full: bool = False) -> None:
    """Add one flow's time-sequence graph to the page model (`full`: every send, no budget)."""
    name, mss = flow["flow"], int(flow.get("mss_bytes") or 0)
    share = 1 << 62 if full else S.PAGE_SENDS // (max(1, len(tables.summary["flows"])) * max(1, n_runs))
    g: dict[str, Any] = {"run": run_i, "flow": name, "group": pre + name, "title": f"{pre}{name}: time-sequence graph",
                         "mss": mss, "lines": [], "sends": None, "sacks": None, "windows": None, "notes": []}
    mine = tables.sends.of("flow", name).by_time()
    mine = mine.take(mine["seq"] >= 0) if len(mine) else mine
    if len(mine):
        ev = tables.events.of("flow", name)
        probes = ev["t_ns"][ev["event"] == TLP] if len(ev) else np.array([])
        kinds = send_kinds(mine, mss, probes)
        t = mine["t_ns"]
        keep, wins = _pick(t, share, focus)
        seq = mine["seq"][keep]
        key = f"d{len(model.blobs)}"
        model.blobs[key] = {"t": S.encode_times(t[keep], origin), "s": np.diff(seq, prepend=0).tolist(),
                            "b": mine["bytes"][keep].tolist(), "k": kinds[keep].tolist()}
        g["sends"] = key
        g["counts"] = {KINDS[k]: int((kinds == k).sum()) for k in KINDS}
        if wins is not None:
            g["windows"] = [[(a - origin) / 1e9, (b - origin) / 1e9] for a, b in wins]
            g["notes"].append(f"{len(t)} sends: those in {len(wins)} window(s) (first second, recovery episodes) are "
                              f"in this page; `tcplab plot RUN --what tseq --flow {name} --from A --to B` draws any window.")
    else:
        g["notes"].append(f"Segments: {MISSING['sends']}.")
        if tables.path is not None and (tables.path / "netns" / "bottleneck.pcap").is_file():
            g["notes"].append("This kernel run's capture is netns/bottleneck.pcap: `tcplab import "
                              "RUN/netns/bottleneck.pcap --out X` makes a run whose time-sequence graphs draw it.")
    ma = tables.acks.of("flow", name).by_time()
    mf = tables.flows.of("flow", name).by_time()

    def line(label: str, t: np.ndarray, y: np.ndarray, f: S.Focus, dash: bool = False, edge: bool = False) -> None:
        s = S.series(t, y, origin, 0, line_share, f, model.blobs, step=True)
        s.update(name=label, step=True, dash=dash, edge=edge)
        g["lines"].append(s)

    if len(ma):
        t, ack = ma["t_ns"], ma["ack"]
        line("cumulative ACK", t, ack.astype(float), focus)
        rw = ma["rwnd_bytes"].astype(float)
        if (rw >= 0).any():
            line("receive-window edge", t, np.where(rw >= 0, ack + rw, np.nan), focus, dash=True, edge=True)
        bt, start, end = sack_blocks(ma)
        if len(bt):
            keep, _ = _pick(bt, share, focus)
            st = start[keep]
            key = f"d{len(model.blobs)}"
            model.blobs[key] = {"t": S.encode_times(bt[keep], origin), "s": np.diff(st, prepend=0).tolist(),
                                "e": (end[keep] - st).tolist()}
            g["sacks"] = key
    elif len(mf) and (mf["snd_una"] >= 0).any():
        una = mf["snd_una"]
        ok = una >= 0
        line("cumulative ACK (flow samples)", mf["t_ns"][ok], una[ok].astype(float), focus)
        g["notes"].append(f"ACK line from the flow samples; SACK blocks and the receive-window edge: {MISSING['acks']}.")
    else:
        g["notes"].append(f"ACK line: {MISSING['acks']}.")
    nxt = mf["snd_nxt"] if len(mf) else None
    if nxt is not None and (nxt >= 0).any():
        ok = nxt >= 0
        line("highest sequence sent (snd_nxt)", mf["t_ns"][ok], nxt[ok].astype(float), focus, dash=True)
    if g["sends"] is None and not g["lines"]:
        g["notes"].append("Nothing to draw for this flow.")
    model.tseq.append(g)

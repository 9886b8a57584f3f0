"""What the interactive charts show, built from a results folder's tables: the linked time panels
(throughput, cwnd/ssthresh, flight against the receive window, srtt, probes' ping RTT, bottleneck
queue and drops),
the recovery episodes that shade them, and each flow's time-sequence graph. One or several runs
(a compare page) go into one PageModel; each run's time starts at its first flow's start."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..analysis.recovery import Episode, episode_list
from . import columns as C
from . import series as S
from .columns import MISSING, Columns
from .tseq import add_tseq

#: Panels in page order: (id, title, y label with unit, unit for read-outs, y2 label, y2 unit).
PANELS = [
    ("throughput", "Throughput per interval", "Mbit/s", "Mbit/s", None, None),
    ("cwnd", "cwnd and ssthresh", "kB", "kB", None, None),
    ("flight", "Bytes in flight and the receive window", "kB", "kB", None, None),
    ("srtt", "Smoothed RTT", "ms", "ms", None, None),
    ("probes", "Latency probes: ping RTT per request", "ms", "ms", None, None),
    ("queue", "Bottleneck queue and drops", "packets", "packets", "drops per interval", "drops"),
]

@dataclass
class PageModel:
    """Everything a page's charts need: panels, episodes, time-sequence graphs, detail blobs."""

    runs: list[dict[str, Any]] = field(default_factory=list)
    panels: dict[str, dict[str, Any]] = field(default_factory=dict)
    episodes: list[dict[str, Any]] = field(default_factory=list)
    tseq: list[dict[str, Any]] = field(default_factory=list)
    blobs: S.Blobs = field(default_factory=S.Blobs)
    notes: list[str] = field(default_factory=list)

    def panel(self, pid: str) -> dict[str, Any]:
        if pid not in self.panels:
            _, title, ylabel, unit, y2label, y2unit = next(p for p in PANELS if p[0] == pid)
            self.panels[pid] = {"id": pid, "title": title, "ylabel": ylabel, "unit": unit, "y2label": y2label,
                                "y2unit": y2unit, "series": [], "notes": []}
        return self.panels[pid]

    def as_json(self) -> dict[str, Any]:
        order = [p[0] for p in PANELS]
        return {"runs": self.runs, "panels": [self.panels[k] for k in order if k in self.panels],
                "episodes": self.episodes, "tseq": self.tseq, "notes": self.notes}


#: Columns the charts read (the rest of a table is not loaded).
READ_COLUMNS = {
    "flows": ["t_ns", "flow", "cwnd_bytes", "ssthresh_bytes", "snd_una", "snd_nxt", "flight_bytes", "srtt_us"],
    "queues": ["t_ns", "port", "queue_packets"],
    "ports": ["t_start_ns", "t_end_ns", "port", "drops"],
}


@dataclass
class RunTables:
    """One run's tables as the charts read them (each read once, only the columns they draw)."""

    summary: dict[str, Any]
    flows: Columns
    intervals: Columns
    queues: Columns
    ports: Columns
    events: Columns
    sends: Columns
    acks: Columns
    path: Path | None = None
    probes: Columns = field(default_factory=Columns)

    @classmethod
    def read(cls, run_dir: Path, summary: dict[str, Any]) -> "RunTables":
        return cls(summary, *(C.read(run_dir, t, READ_COLUMNS.get(t)) for t in ("flows", "intervals", "queues", "ports", "events",
                                                                                 "sends", "acks")),
                   path=run_dir, probes=C.read(run_dir, "probes"))

    def window(self, lo_ns: int, hi_ns: int) -> "RunTables":
        """Only the rows within [lo_ns, hi_ns] (intervals and port counters that overlap it)."""
        def cut(t: Columns, a: str, b: str | None = None) -> Columns:
            if not len(t):
                return t
            return t.take((t.codes(b or a) >= lo_ns) & (t.codes(a) <= hi_ns))

        return RunTables(self.summary, cut(self.flows, "t_ns"), cut(self.intervals, "t_start_ns", "t_end_ns"),
                         cut(self.queues, "t_ns"), cut(self.ports, "t_start_ns", "t_end_ns"), self.events,
                         cut(self.sends, "t_ns"), cut(self.acks, "t_ns"), self.path, cut(self.probes, "t_ns"))


    def only(self, names: set[str]) -> "RunTables":
        """Only the rows of the flows `names` (the per-flow tables), the summary's rows of them."""
        def keep(t: Columns) -> Columns:
            if not len(t) or "flow" not in t.names:
                return t
            wanted = np.array([n in names for n in t.names["flow"]], dtype=bool)
            return t.take(np.nonzero(wanted[t.codes("flow")])[0]) if len(wanted) else t

        summary = dict(self.summary, flows=[f for f in self.summary["flows"] if f["flow"] in names])
        return RunTables(summary, keep(self.flows), keep(self.intervals), self.queues, self.ports, keep(self.events),
                         keep(self.sends), keep(self.acks), self.path, self.probes)


def _focus(eps: list[Episode], flows: list[dict[str, Any]], flow: str | None) -> S.Focus:
    """Full-resolution windows: each flow's first second, then recovery episodes in time order."""
    wins = [(int((f["start_s"] or 0) * 1e9), int((f["start_s"] or 0) * 1e9) + 1_000_000_000) for f in flows
            if flow is None or f["flow"] == flow]
    mine = [r for r in eps if flow is None or r.flow == flow]
    # In start order as pandas' sort_values (quicksort) put them: ties keep that order too.
    for i in np.argsort(np.array([r.start_s for r in mine], dtype=float), kind="quicksort"):
        r = mine[i]
        dur = r.duration_s if r.duration_s == r.duration_s and r.duration_s is not None else 0.2
        pad = max(0.05, dur)
        wins.append((int((r.start_s - pad) * 1e9), int((r.start_s + dur + pad) * 1e9)))
    return S.Focus(wins)


def _nan_below(v: np.ndarray, floor: int, strict: bool = False) -> np.ndarray:
    """`v` as floats with NaN where it is below `floor` (at or below, `strict`): unknown values."""
    return np.where(v > floor if strict else v >= floor, v, np.nan)


def add_run(model: PageModel, tables: RunTables, eps: list[Episode], label: str | None = None,
            n_runs: int = 1, full: bool = False) -> None:
    """Add one run's series, episodes and time-sequence graphs to the page (`full`: every sample,
    no page budget: static charts of a window)."""
    summ = tables.summary
    flows = summ["flows"]
    origin = min(int(round((f["start_s"] or 0) * 1e9)) for f in flows) if flows else 0
    run_i = len(model.runs)
    model.runs.append({"label": label or summ["name"], "name": summ["name"], "origin_s": origin / 1e9,
                       "backend": summ.get("backend", "")})
    pre = f"{label} " if label else ""
    # The page's budgets shared by its series: their number is known roughly up front.
    share = S.page_share(max(1, len(flows) * 6 + 2) * n_runs, full)
    focus_all = _focus(eps, flows, None)
    focus_of: dict[str, S.Focus] = {}  # each flow's, built once (a thousand flows, six series each)

    def flow_focus(flow: str) -> S.Focus:
        if flow not in focus_of:
            focus_of[flow] = _focus(eps, flows, flow)
        return focus_of[flow]

    def add(pid: str, name: str, group: str, t: Any, y: Any, decimals: int, flow: str | None, step: bool = True,
            axis: str = "y", dash: bool = False, edge: bool = False) -> None:
        focus = flow_focus(flow) if flow else focus_all
        s = S.series(np.asarray(t), np.asarray(y), origin, decimals, share, focus, model.blobs, step=step)
        s.update(name=pre + name, group=pre + group, run=run_i, step=step, axis=axis, dash=dash, edge=edge)
        model.panel(pid)["series"].append(s)

    _throughput(tables, flows, add)
    fl = tables.flows
    for f in flows:
        name = f["flow"]
        mine = fl.of("flow", name).by_time()
        if len(mine):  # one column of one flow at a time: the table is held once
            t = mine["t_ns"]
            cwnd = mine["cwnd_bytes"]
            if (cwnd >= 0).any():
                add("cwnd", f"{name} cwnd", name, t, cwnd / 1e3, 3, name)
                ss = _nan_below(mine["ssthresh_bytes"], 0) / 1e3
                if (~np.isnan(ss)).any():
                    add("cwnd", f"{name} ssthresh", name, t, ss, 3, name, dash=True)
            del cwnd
            flight = mine["flight_bytes"]
            if (flight >= 0).any():
                add("flight", f"{name} in flight", name, t, _nan_below(flight, 0) / 1e3, 3, name)
            del flight
            srtt = mine["srtt_us"]
            if (srtt > 0).any():
                add("srtt", f"{name} srtt", name, t, _nan_below(srtt, 0, strict=True) / 1e3, 3, name, step=False)
            del srtt, t
        mine_a = tables.acks.of("flow", name)
        if len(mine_a) and (mine_a["rwnd_bytes"] >= 0).any():
            mine_a = mine_a.by_time()
            add("flight", f"{name} receive window", name, mine_a["t_ns"],
                _nan_below(mine_a["rwnd_bytes"], 0) / 1e3, 3, name, dash=True, edge=True)
    if not len(tables.acks):
        model.panel("flight")["notes"].append(f"{pre}receive window: {MISSING['acks']}.")
    if not len(fl):
        for pid in ("cwnd", "flight", "srtt"):
            model.panel(pid)["notes"].append(f"{pre}{MISSING['flows']}.")
    _probes(tables, add, model, pre)
    _queue(tables, add, model, pre)
    for r in eps:
        dur = r.duration_s if r.duration_s is not None and r.duration_s == r.duration_s else 0.0
        model.episodes.append({"run": run_i, "flow": r.flow, "group": pre + r.flow, "n": int(r.episode), "kind": r.kind,
                               "start": round(r.start_s - origin / 1e9, 6), "end": round(r.start_s + dur - origin / 1e9, 6),
                               "retx": None if r.retransmissions is None or r.retransmissions != r.retransmissions
                               else int(r.retransmissions)})
    for f in flows:
        add_tseq(model, tables, f, flow_focus(f["flow"]), origin, run_i, pre, share, n_runs, full)


def _throughput(tables: RunTables, flows: list[dict[str, Any]], add) -> None:
    iv = tables.intervals
    if not len(iv):
        return
    total: dict[int, float] = {}
    for f in flows:
        mine = iv.of("flow", f["flow"]).sort_by("t_start_ns")
        if not len(mine):
            continue
        mbps = mine["bytes"] * 8 / ((mine["t_end_ns"] - mine["t_start_ns"]) / 1e9) / 1e6
        # A step chart holds each interval's rate from its start; the last interval ends at t_end.
        t = np.r_[mine["t_start_ns"], mine["t_end_ns"][-1]]
        add("throughput", f"{f['flow']}", f["flow"], t, np.r_[mbps, mbps[-1]], 3, f["flow"])
        for te, v in zip(mine["t_end_ns"] // 1_000_000, mbps):
            total[int(te)] = total.get(int(te), 0.0) + float(v)
    if len(flows) > 1 and total:
        ts = np.array(sorted(total), dtype=np.int64) * 1_000_000
        vals = np.array([total[k] for k in sorted(total)])
        starts = np.r_[int(iv["t_start_ns"].min()), ts[:-1]]
        add("throughput", "sum", "sum", np.r_[starts, ts[-1]], np.r_[vals, vals[-1]], 3, None)


def _probes(tables: RunTables, add, model: PageModel, pre: str) -> None:
    """Each probe's round-trip times at the requests' send times (flent's ping plot); lost
    requests leave a gap and are counted in the panel's note."""
    pr = tables.probes
    if not len(pr):
        return
    for name in sorted(pr.present("probe")):
        mine = pr.of("probe", name).by_time()
        rtt_ns = mine["rtt_ns"]
        add("probes", f"{name} RTT", f"probe {name}", mine["t_ns"], _nan_below(rtt_ns, 0) / 1e6, 3, None, step=False)
        lost = int((rtt_ns < 0).sum())
        if lost:
            model.panel("probes")["notes"].append(f"{pre}{name}: {lost} of {len(mine)} requests lost (gaps).")


def _queue(tables: RunTables, add, model: PageModel, pre: str) -> None:
    q = tables.queues
    if not len(q):
        why = ("the run's logs do not describe the path" if tables.summary.get("import") else
               "the queue is sampled every trace.sample period, so not with sample = \"ack\"")
        model.panel("queue")["notes"].append(f"{pre}no queue samples: {why}.")
    ports = sorted(q.present("port")) if len(q) else _bottleneck_ports(tables)
    for port in ports:
        rows = q.of("port", port).by_time()
        if len(rows):
            add("queue", f"queue {port}", "queue", rows["t_ns"], rows["queue_packets"], 0, None, step=True)
        mine = tables.ports.of("port", port).sort_by("t_start_ns")
        if len(mine):
            t = np.r_[mine["t_start_ns"], mine["t_end_ns"][-1]]
            d = mine["drops"].astype(float)
            add("queue", f"drops {port}", "queue", t, np.r_[d, d[-1]], 0, None, axis="y2")


def _bottleneck_ports(tables: RunTables) -> list[str]:
    """The bottleneck's port label (summary), when the queue was not sampled."""
    b = tables.summary.get("bottleneck") or {}
    p = tables.ports
    if not len(p) or not b.get("link"):
        return []
    return [x for x in p.present("port") if str(x) == b["link"]][:1]


def overlay_model(runs: list[tuple[str, Path, dict[str, Any]]]) -> PageModel:
    """One page model holding every run, its series named by the run's label."""
    model = PageModel()
    for label, path, info in runs:
        tables = RunTables.read(path, info)
        mss = {f["flow"]: f["mss_bytes"] for f in info["flows"]}
        eps = episode_list(tables.events, tables.sends if len(tables.sends) else None, mss)
        add_run(model, tables, eps, label=label, n_runs=len(runs))
    return model

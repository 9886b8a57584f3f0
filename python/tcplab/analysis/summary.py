"""summary.json, for every kind of run: the numbers a run is judged by (per-flow throughput,
bottleneck utilisation, retransmissions, Jain's fairness index: Jain, Chiu & Hawe, DEC-TR-301,
1984). `summarize` for runs of a backend (simulator, kernel), from its totals and tables;
`summarize_import` for logs brought home, from the tables alone; both build rows with `flow_row`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..contract import RECOVERY_START, RTO
from ..model import Experiment
from ..store import read_columns, read_table
from .fct import workloads as fct_workloads
from .latency import probe_rows


def jain_index(xs: list[float]) -> float | None:
    """(sum x)^2 / (n * sum x^2); 1 is perfectly fair, 1/n maximally unfair."""
    if len(xs) < 2 or not any(xs):
        return None
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


def _r(x: float | None, nd: int = 6) -> float | None:
    return None if x is None else round(float(x), nd)


def flow_row(*, flow: str, frm: str, to: str, stack: str, cc: str, start_s: float | None, kind: str,
             duration_s: float | None, completion_s: float | None, throughput_mbps: float | None,
             bytes_delivered: int | None, bytes_written: int | None, retransmits: int | None, recoveries: int,
             rtos: int, duplicates_received: int | None, final_cwnd_bytes: int | None, srtt_ms: float | None,
             min_rtt_ms: float | None, mss_bytes: int, fct_s: float | None = None, connect_ms: float | None = None,
             syn_retransmits: int | None = None) -> dict[str, Any]:
    """One flow's row of summary.json, the same for every kind of run (simulated, kernel, remote,
    imported): what a run is judged by, in units named in the keys. `completion_s` is iperf3's
    (from the connection set up to the last byte acknowledged), `fct_s` from the first SYN,
    `connect_ms` the handshake (None where a run has no such measurement)."""
    return {"flow": flow, "from": frm, "to": to, "stack": stack, "cc": cc, "start_s": start_s, "kind": kind,
            "duration_s": duration_s, "completion_s": completion_s, "fct_s": fct_s, "connect_ms": connect_ms,
            "throughput_mbps": throughput_mbps, "bytes_delivered": bytes_delivered, "bytes_written": bytes_written,
            "retransmits": retransmits, "syn_retransmits": syn_retransmits,
            "recoveries": recoveries, "rtos": rtos, "duplicates_received": duplicates_received,
            "final_cwnd_bytes": final_cwnd_bytes, "srtt_ms": srtt_ms, "min_rtt_ms": min_rtt_ms, "mss_bytes": mss_bytes}


def summarize(exp: Experiment, totals: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """Build summary.json's content from the experiment, the backend's totals and the tables."""
    # Numpy columns, not pandas: `tcplab run` starts and finishes without importing pandas
    # (bench/README.md, issue 23); the sums and quotients are the same int64 and float64 ones.
    intervals = read_columns(run_dir, "intervals", ["flow", "t_start_ns", "t_end_ns", "bytes"])
    ports = read_columns(run_dir, "ports", ["port", "t_start_ns", "t_end_ns", "tx_bytes"])
    flows = _flow_rows(exp, totals, intervals)
    port_tot = next(p for p in totals["ports"] if p["port"] == exp.bottleneck_port)
    time_flows = [s for s in flows if s["kind"] == "time"]
    out = {
        "name": exp.name,
        "seed": exp.seed,
        "backend": totals.get("backend", "sim"),
        "flows": flows,
        "bottleneck": _bottleneck(exp, totals, flows, intervals, ports, port_tot),
        "fairness_jain": _r(jain_index([s["throughput_mbps"] or 0.0 for s in time_flows])),
        "background": totals["udp"],
    }
    _latency(out, exp, totals, port_tot)
    if exp.workloads:  # FCT slowdown by size bucket, incast completions (analysis/fct.py)
        out["workloads"] = fct_workloads(exp, flows, [st.get("start_ns", f.start_ns) for f, st in zip(exp.flows, totals["flows"])],
                                         [st.get("fct_ns") for st in totals["flows"]])
    if "ecn_marks" in port_tot:  # the bottleneck runs a queue discipline
        out["bottleneck"]["aqm"] = {"kind": exp.bottleneck_aqm_kind, "drops": port_tot["aqm_drops"],
                                    "ecn_marks": port_tot["ecn_marks"]}
    paused = [{"port": exp.ports[p["port"]].label, "xoff_frames": p["pause_frames"], "paused_s": _r(p["paused_ns"] / 1e9)}
              for p in totals["ports"] if "pause_frames" in p]
    if paused:  # 802.3x: each port into a switch with flow control, how often and how long it was paused
        out["flow_control"] = paused
    impaired = [{"port": exp.ports[p["port"]].label, **p["impair"]} for p in totals["ports"] if p.get("impair")]
    if impaired:  # netem's counts per impaired port and its first decisions (tcplab_impair::digest)
        out["impairments"] = impaired
    if exp.probes:  # (pandas, only for runs with probes)
        out["probes"] = probe_rows(exp.probes, totals["probes"], read_table(run_dir, "probes"))
    if "events" in totals:
        out["simulator"] = {"events": totals["events"], "packets": totals["packets"], "end_s": _r(totals["end_ns"] / 1e9)}
    if "emulation" in totals:
        out["emulation"] = totals["emulation"]
    if "testbed" in totals:
        out["testbed"] = totals["testbed"]
    if exp.warnings:
        out["warnings"] = exp.warnings
    return out


def _flow_rows(exp: Experiment, totals: dict[str, Any], intervals: dict[str, Any]) -> list[dict[str, Any]]:
    """Each flow's row: a time-limited flow's throughput from the bytes of its intervals, a
    transfer's from its completion."""
    per_flow_bytes: dict[str, int] = {}
    if intervals:
        # One pass over the rows, summed in int64 (a mask per flow was flows x rows: minutes for
        # a workload of 100 000 flows).
        import numpy as np  # loaded on use, as read_columns loads it (`import tcplab` does not)

        names, at = np.unique(intervals["flow"], return_inverse=True)
        sums = np.zeros(len(names), dtype=np.int64)
        np.add.at(sums, at, intervals["bytes"].astype(np.int64, copy=False))
        per_flow_bytes = {str(n): int(v) for n, v in zip(names, sums)}
    flows = []
    for info, st in zip(exp.flows, totals["flows"], strict=True):
        app = info.app
        if app.kind == "time":
            duration_s = app.duration_ns / 1e9
            measured = per_flow_bytes.get(info.name, 0)
            completion_s = None
        else:
            completion_s = st["completion_ns"] / 1e9 if st["completion_ns"] is not None else None
            duration_s = completion_s
            measured = st["bytes_delivered"]
        tput = measured * 8 / duration_s / 1e6 if duration_s else None
        # A response starts once its request is in (the simulator reports when); others on time.
        start_ns = st.get("start_ns", info.start_ns) if info.after is not None else info.start_ns
        flows.append(flow_row(
            flow=info.name, frm=info.host, to=info.to, stack=info.stack, cc=info.cc, start_s=_r(start_ns / 1e9),
            kind=app.kind, duration_s=_r(duration_s), completion_s=_r(completion_s), throughput_mbps=_r(tput),
            bytes_delivered=st["bytes_delivered"], bytes_written=st["bytes_written"], retransmits=st["retrans_segs"],
            recoveries=st["recoveries"], rtos=st["rtos"],
            # Spurious retransmissions as the receiver saw them (the simulator counts them).
            duplicates_received=st.get("dup_segs_received"), final_cwnd_bytes=st["cwnd_bytes"],
            srtt_ms=_r(st["srtt_ns"] / 1e6, 3), min_rtt_ms=_r(st["min_rtt_ns"] / 1e6, 3),
            mss_bytes=st.get("mss_bytes", info.mss),
            fct_s=_r(st["fct_ns"] / 1e9) if st.get("fct_ns") is not None else None,
            connect_ms=_r(st["connect_ns"] / 1e6, 3) if st.get("connect_ns") is not None else None,
            syn_retransmits=st.get("syn_retrans")))
        if st.get("connect_failed"):
            flows[-1]["connect_failed"] = True
        if info.iperf3_control or "iperf3_ns" in st:
            # `time iperf3 -n`: the client from its start to its exit (None if it had not exited).
            flows[-1]["iperf3_s"] = _r(st["iperf3_ns"] / 1e9) if st.get("iperf3_ns") is not None else None
        if "ece_acks" in st:  # the connection negotiated ECN
            flows[-1]["ecn"] = {"ce_segments_received": st["ce_segs_received"], "ece_acks": st["ece_acks"],
                                "window_reductions": st["ecn_reductions"]}
    return flows


def _window_ns(exp: Experiment, totals: dict[str, Any], flows: list[dict[str, Any]]) -> tuple[int, int]:
    """The measurement window: from the first start to the last time-limited application's end
    (or the last completion)."""
    # A real-kernel run reports when each client actually started; the simulator starts on time.
    starts = [st.get("start_ns", f.start_ns) for f, st in zip(exp.flows, totals["flows"])]
    ends = []
    # A time-limited flow's window is the spec's [start, start + time] on the ports' counter grid,
    # though after a handshake its data runs the connect time later (iperf3's -t counts from the
    # connection; docs/models.md, "Connection setup"); a transfer ends at its FCT (connect time +
    # iperf3's completion time).
    for f, t_start, s, st in zip(exp.flows, starts, flows, totals["flows"]):
        if f.app.kind == "time":
            ends.append(t_start + f.app.duration_ns)
        elif s.get("iperf3_s") is not None and s["fct_s"] is not None:
            # Inside iperf3 the data connection opens later (data_syn_ns) and the client may exit
            # before its last byte is acknowledged.
            data_end = st.get("data_syn_ns", 0) + int(s["fct_s"] * 1e9)
            ends.append(t_start + max(int(s["iperf3_s"] * 1e9), data_end))
        elif s["completion_s"] is not None:
            connect_ns = int((s.get("connect_ms") or 0) * 1e6)
            ends.append(t_start + connect_ns + int(s["completion_s"] * 1e9))
    return min(starts), max(ends) if ends else totals["end_ns"]


def _bottleneck(exp: Experiment, totals: dict[str, Any], flows: list[dict[str, Any]], intervals: dict[str, Any],
                ports: dict[str, Any], port_tot: dict[str, Any]) -> dict[str, Any]:
    """The bottleneck's utilisation and goodput over the measurement window, on the port
    counters' interval grid, and its drops."""
    t0, t1 = _window_ns(exp, totals, flows)
    label = exp.bottleneck.label
    rate = exp.bottleneck.rate_bps
    # Counter intervals overlapping the window (on the simulator's grid they lie exactly inside it;
    # a kernel run's sampler starts and stops a little off it).
    bott = {}
    if ports:
        keep = (ports["port"] == label) & (ports["t_end_ns"] > t0) & (ports["t_start_ns"] < t1)
        bott = {c: v[keep] for c, v in ports.items()} if keep.any() else {}
    window_s = (bott["t_end_ns"].max() - bott["t_start_ns"].min()) / 1e9 if bott else 0.0
    util = bott["tx_bytes"].sum() * 8 / (rate * window_s) if window_s else None
    time_flows = [s for s in flows if s["kind"] == "time"]
    # Goodput over the same window as the link: bytes delivered to the applications in it (the
    # sum of per-flow average rates would overstate it when flows run over different spans).
    if intervals and window_s:
        t_lo, t_hi = bott["t_start_ns"].min(), bott["t_end_ns"].max()
        inside = (intervals["t_start_ns"] >= t_lo) & (intervals["t_end_ns"] <= t_hi)
        goodput = intervals["bytes"][inside].sum() * 8 / window_s / 1e6
    else:
        goodput = 0.0
    return {
        "link": label,
        "rate_mbps": _r(rate / 1e6),
        "window_s": _r(window_s),
        "utilisation": _r(util),
        "goodput_mbps": _r(goodput),
        "goodput_utilisation": _r(goodput * 1e6 / rate) if time_flows else None,
        "drops": port_tot["drops"],
        "random_losses": port_tot["losses"],
        "max_queue_packets": port_tot["max_queue_packets"],
    }


def _latency(out: dict[str, Any], exp: Experiment, totals: dict[str, Any], port_tot: dict[str, Any]) -> None:
    """Where latency is measured (trace.latency, a queue discipline, probes): each flow's RTT
    percentiles, the bottleneck's and every monitored queue's queueing delay, into `out`."""
    qd = port_tot.get("queue_delay")
    latency = exp.trace.latency or exp.bottleneck_aqm_kind != "drop-tail" or bool(exp.probes)
    for row, st in zip(out["flows"], totals["flows"]):
        if latency and st.get("rtt"):
            # The sender's RTT samples (its estimator's, timestamps included) as percentiles.
            row["rtt_ms"] = {"samples": st["rtt"]["samples"],
                             **{k: _r(st["rtt"][f"{k}_ns"] / 1e6, 3) for k in ("p50", "p95", "p99")}}
    if qd and latency:
        # Per packet, arrival at the bottleneck to the start of its transmission (histogram
        # buckets of 1.6%; tcplab-sim hist.rs).
        out["bottleneck"]["queue_delay_ms"] = _queue_delay_ms(qd)
    if latency:
        # Every monitored queue (the bottleneck, then the other ports with a discipline).
        by_index = {p["port"]: p for p in totals["ports"]}
        queues = [{"port": p.label, "aqm": exp.aqm_kind(p), "queue_delay_ms": _queue_delay_ms(qd_p)}
                  for p in exp.monitored_ports if (qd_p := by_index.get(p.index, {}).get("queue_delay"))]
        if queues:
            out["queues"] = queues


def _queue_delay_ms(qd: dict[str, Any]) -> dict[str, Any]:
    return {"packets": qd["packets"], "mean": _r(qd["mean_ns"] / 1e6, 3),
            **{k: _r(qd[f"{k}_ns"] / 1e6, 3) for k in ("p50", "p95", "p99", "max")}}


def cpu_cost(cpu: dict[str, Any], summary: dict[str, Any]) -> dict[str, Any]:
    """The modCC study's figures from a run's CPU samples (tcplab-sim cpu.rs): the share p of the
    run's samples in the CC hooks and in the whole TCP path (endpoints, hooks included), each with
    its binomial 95% half-width 1.96 sqrt(p (1 - p) / n), the work per GB delivered w = p / GB, and
    the CPU milliseconds per GB (p x sampled time / GB).
    Measured, so not deterministic: kept in cpu.json."""
    gb = sum(f["bytes_delivered"] or 0 for f in summary["flows"]) / 1e9
    n = cpu["samples_other"] + cpu["samples_tcp"] + cpu["samples_cc"]
    out: dict[str, Any] = {"gb_delivered": _r(gb), "samples": n, "sample_period_us": cpu["sample_period_ns"] / 1e3,
                           "sampled_s": _r(n * cpu["sample_period_ns"] / 1e9)}
    for part, k in (("cc", cpu["samples_cc"]), ("tcp", cpu["samples_tcp"] + cpu["samples_cc"])):
        p = k / n if n else None
        out[f"{part}_share"] = _r(p)
        out[f"{part}_share_ci95"] = _r(1.96 * (p * (1 - p) / n) ** 0.5) if p is not None else None
        out[f"{part}_share_per_gb"] = _r(p / gb) if p is not None and gb else None
        # The same as CPU time: in a simulator the run's CPU grows with the traffic, so the time
        # per GB compares rates more directly than the share does.
        out[f"{part}_cpu_ms_per_gb"] = _r(p * n * cpu["sample_period_ns"] / 1e6 / gb, 3) if p is not None and gb else None
    return out


def summarize_import(run_dir: Path, name: str, flows: list[dict[str, Any]], sources: list[dict[str, Any]]) -> dict[str, Any]:
    """summary.json for an imported run: per-flow numbers from its tables (aggregated by DuckDB),
    since logs carry no simulator totals; the same flow rows (`flow_row`) as a run's."""
    import duckdb  # loaded on use: only an import's summary queries its tables with SQL

    con = duckdb.connect()
    have = {t: (run_dir / f"{t}.parquet").is_file() for t in ("flows", "intervals", "events", "sends")}

    def per_flow(table: str, sql: str) -> dict[str, tuple]:
        if not have[table]:
            return {}
        path = str(run_dir / f"{table}.parquet").replace("'", "''")  # a quote in --out is a quote, not SQL
        rows = con.execute(sql.replace("FROM T", f"FROM read_parquet('{path}')")).fetchall()
        return {r[0]: r[1:] for r in rows}

    iv = per_flow("intervals", "SELECT flow, min(t_start_ns), max(t_end_ns), sum(bytes), "
                               "sum(CASE WHEN retrans_segs >= 0 THEN retrans_segs END), count(*) FILTER (WHERE retrans_segs < 0) FROM T GROUP BY flow")
    fl = per_flow("flows", "SELECT flow, min(t_ns), arg_max(cwnd_bytes, t_ns), arg_max(srtt_us, t_ns), "
                           "min(srtt_us) FILTER (WHERE srtt_us > 0) FROM T GROUP BY flow")
    ev = per_flow("events", f"SELECT flow, count(*) FILTER (WHERE event = {RECOVERY_START}), count(*) FILTER (WHERE event = {RTO}) FROM T GROUP BY flow")
    se = per_flow("sends", "SELECT flow, min(t_ns), count(*) FILTER (WHERE retx = 1), count(*) FILTER (WHERE retx < 0) FROM T GROUP BY flow")
    out_flows = []
    for f in flows:
        n = f["name"]
        src, _, dst = n.partition("->")
        i, s, e, d = iv.get(n), fl.get(n), ev.get(n), se.get(n)
        starts = [x for x in (i and i[0], s and s[0], d and d[0]) if x is not None]
        start_ns = min(starts) if starts else 0
        if i:
            duration_s = (i[1] - i[0]) / 1e9
            delivered = f["bytes_received"] if f["bytes_received"] is not None else int(i[2])
            retx = None if i[4] else (int(i[3]) if i[3] is not None else None)
        else:
            duration_s, delivered, retx = None, f["bytes_received"], None
        if retx is None and d and not d[2]:
            retx = int(d[1])
        tput = delivered * 8 / duration_s / 1e6 if delivered is not None and duration_s else None
        out_flows.append(flow_row(
            flow=n, frm=src, to=dst or "?", stack=f["stack"] or "unknown", cc=f["cc"] or "unknown",
            start_s=_r(start_ns / 1e9), kind="time", duration_s=_r(duration_s), completion_s=None,
            throughput_mbps=_r(tput), bytes_delivered=delivered, bytes_written=None, retransmits=retx,
            recoveries=int(e[0]) if e else 0, rtos=int(e[1]) if e else 0, duplicates_received=None,
            final_cwnd_bytes=int(s[1]) if s and s[1] is not None and s[1] >= 0 else None,
            srtt_ms=_r(s[2] / 1e3, 3) if s and s[2] is not None and s[2] >= 0 else None,
            min_rtt_ms=_r(s[3] / 1e3, 3) if s and s[3] is not None else None, mss_bytes=f["mss"] or 0))
    fairness = jain_index([x["throughput_mbps"] for x in out_flows if x["throughput_mbps"] is not None])
    return {"name": name, "seed": None, "backend": "import", "flows": out_flows, "bottleneck": {},
            "fairness_jain": _r(fairness), "background": [],
            "import": {"sources": sources, "bad_lines": sum(s["bad_lines"] for s in sources)}}

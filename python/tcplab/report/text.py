"""iperf3-style interval lines and the run summary for the terminal."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: `tcplab run` starts without importing pandas
    import pandas as pd
from rich.table import Table

from ..model import port_label


def iperf_bytes(n: float) -> str:
    """iperf3's transfer column: 1024-based units with 3 significant digits ('112 MBytes')."""
    for unit, scale in (("GBytes", 2**30), ("MBytes", 2**20), ("KBytes", 2**10)):
        if n >= scale:
            v = n / scale
            return f"{v:.3g} {unit}" if v < 100 else f"{v:.0f} {unit}"
    return f"{n:.0f} Bytes"


def interval_lines(intervals: pd.DataFrame | list[dict[str, Any]], flows: list[dict[str, Any]]) -> list[str]:
    """Per-flow interval lines as iperf3 prints them with `-f m`: Interval, Transfer, Bitrate,
    Retr, Cwnd. Times are relative to each flow's start; bytes are those delivered to the
    receiving application in the interval. `intervals`: the table as a DataFrame or as rows
    (`store.read_rows`, which needs no pandas)."""
    rows = intervals.to_dict("records") if hasattr(intervals, "to_dict") else intervals
    by_flow: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_flow.setdefault(row["flow"], []).append(row)
    lines = []
    width = max((len(f["name"]) for f in flows), default=2)
    header = f"[{'ID':>{width}}] Interval           Transfer     Bitrate         Retr  Cwnd"
    for f in flows:
        mine = by_flow.get(f["name"], [])
        if not mine:
            continue
        lines.append(header)
        start = f["start_ns"]
        for row in mine:
            t0, t1 = (row["t_start_ns"] - start) / 1e9, (row["t_end_ns"] - start) / 1e9
            mbps = row["bytes"] * 8 / ((row["t_end_ns"] - row["t_start_ns"]) / 1e9) / 1e6
            lines.append(
                f"[{f['name']:>{width}}] {t0:6.2f}-{t1:<6.2f} sec  {iperf_bytes(row['bytes']):>11}  {mbps:7.1f} Mbits/sec"
                f"  {row['retrans_segs']:4d}  {iperf_bytes(row['cwnd_bytes']):>11}"
            )
    return lines


#: A run of more flows than this lists its workloads' flows in summary.json and the catalog only:
#: the terminal, report.html's tables and its charts show the other flows and each workload's tables.
LIST_MAX_FLOWS = 100


def listed_flows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The flow rows the terminal and the report show one by one (module's LIST_MAX_FLOWS)."""
    flows = summary["flows"]
    if len(flows) <= LIST_MAX_FLOWS or not summary.get("workloads"):
        return flows
    return [f for f in flows if "workload" not in f]


def unlisted_note(summary: dict[str, Any]) -> str | None:
    """What the flow table leaves out, where it does."""
    n = len(summary["flows"]) - len(listed_flows(summary))
    return (f"{n} workload flows not listed one by one (more than {LIST_MAX_FLOWS} flows): each workload's tables "
            "below; every flow in summary.json and `tcplab query \"SELECT * FROM flow_results\"`") if n else None


def summary_table(summary: dict[str, Any]) -> Table:
    """Per-flow throughput, retransmits, RTT; caption with utilisation and fairness."""
    seed = "" if summary["seed"] is None else f"seed {summary['seed']}, "
    t = Table(title=f"{summary['name']} ({seed}{summary['backend']})")
    connects = any(f.get("connect_ms") is not None for f in summary["flows"])
    handshake_cols = ("FCT", "connect ms", "SYN retr") if connects else ()
    iperf3 = any("iperf3_s" in f for f in summary["flows"])  # with iperf3's control exchange
    cols = ("flow", "path", "stack", "cc", "Mbit/s", "completion", *handshake_cols, *(("iperf3 -n",) if iperf3 else ()),
            "retr", "recov", "RTOs", "srtt ms")
    for col in cols:
        t.add_column(col, justify="right" if col not in ("flow", "path", "stack", "cc") else "left")
    for f in listed_flows(summary):
        # completion: iperf3's (from the connection set up); FCT from the first SYN.
        handshake = (("-" if f.get("fct_s") is None else f"{f['fct_s']:.3f} s",
                      "-" if f.get("connect_ms") is None else f"{f['connect_ms']:.1f}",
                      str(f.get("syn_retransmits") or 0)) if connects else ())
        t.add_row(
            f["flow"], port_label(f["from"], f["to"]), f["stack"], f["cc"],
            "-" if f["throughput_mbps"] is None else f"{f['throughput_mbps']:.1f}",
            "-" if f["completion_s"] is None else f"{f['completion_s']:.3f} s",
            *handshake,
            *(("-" if f.get("iperf3_s") is None else f"{f['iperf3_s']:.3f} s",) if iperf3 else ()),
            str(f["retransmits"]), str(f["recoveries"]), str(f["rtos"]),
            "-" if not f["srtt_ms"] else f"{f['srtt_ms']:.1f}",
        )
    b = summary["bottleneck"]
    parts = []
    if b:
        parts.append(f"bottleneck {b['link']} {b['rate_mbps']:g} Mbit/s")
        if b["utilisation"] is not None:
            parts.append(f"utilisation {100 * b['utilisation']:.1f}%")
        if b["goodput_utilisation"] is not None:
            parts.append(f"goodput {b['goodput_mbps']:.1f} Mbit/s ({100 * b['goodput_utilisation']:.1f}%)")
        parts.append(f"drops {b['drops']}")
        if "aqm" in b:
            parts.append(f"{b['aqm']['kind']}: {b['aqm']['drops']} AQM drops, {b['aqm']['ecn_marks']} ECN marks")
        qd = b.get("queue_delay_ms")
        if qd:
            parts.append(f"queue delay p50/p95/p99 {qd['p50']:.2f}/{qd['p95']:.2f}/{qd['p99']:.2f} ms")
    for fc in (x for x in summary.get("flow_control", []) if x["xoff_frames"]):
        parts.append(f"PAUSE {fc['port']}: {fc['xoff_frames']} XOFF, paused {fc['paused_s']:g} s")
    imp = summary.get("import")
    if imp is not None:
        parts.append(f"imported from {len(imp['sources'])} log(s), {imp['bad_lines']} malformed line(s) skipped")
    if summary["fairness_jain"] is not None:
        parts.append(f"Jain fairness {summary['fairness_jain']:.3f}")
    em = summary.get("emulation")
    if em is not None:
        parts.append("emulation faithful" if em["faithful"] else "EMULATION UNFAITHFUL: " + "; ".join(em["problems"]))
    if (note := unlisted_note(summary)) is not None:
        parts.append(note)
    t.caption = ", ".join(parts)
    return t


def latency_rows(summary: dict[str, Any], skip_port: str | None = None) -> list[list[str]]:
    """Latency under load, one row per probe, flow and queue (but `skip_port`'s) that measured it:
    what, path, samples, p50/p95/p99/max ms, lost (probes). Shared by the terminal and report.html."""
    def ms(d: dict[str, Any], k: str) -> str:
        return "-" if d.get(k) is None else f"{d[k]:.2f}"

    rows = []
    for p in summary.get("probes", []):
        r = p["rtt_ms"] or {}
        rows.append([f"{p['probe']} (ping RTT)", port_label(p["from"], p["to"]), str(p["answered"]),
                     *(ms(r, k) for k in ("p50", "p95", "p99", "max")), f"{p['lost']} ({p['loss_pct'] or 0:g}%)"])
    for f in summary["flows"]:
        if "rtt_ms" in f:
            r = f["rtt_ms"]
            rows.append([f"{f['flow']} (TCP RTT)", port_label(f["from"], f["to"]), str(r["samples"]),
                         *(ms(r, k) for k in ("p50", "p95", "p99")), "-", ""])
    b = summary.get("bottleneck") or {}
    # Every monitored queue; runs written before `queues` existed have the bottleneck's only.
    queues = summary.get("queues") or ([{"port": b["link"], "aqm": b.get("aqm", {}).get("kind", "drop-tail"),
                                         "queue_delay_ms": b["queue_delay_ms"]}] if b.get("queue_delay_ms") else [])
    for qu in queues:
        if qu["port"] == skip_port:
            continue
        q = qu["queue_delay_ms"]
        rows.append([f"{qu['aqm']} (queue delay)", qu["port"], str(q["packets"]),
                     *(ms(q, k) for k in ("p50", "p95", "p99", "max")), ""])
    return rows


LATENCY_COLUMNS = ["", "path", "samples", "p50 ms", "p95 ms", "p99 ms", "max ms", "lost"]


def latency_table(summary: dict[str, Any], labels: list[str] | None = None, others: list[dict[str, Any]] = (),
                  skip_bottleneck: bool = False) -> Table | None:
    """Probes' RTT, flows' RTT and queueing delay percentiles; None when nothing measured them.
    With `others` (compare), every run's rows, each led by its label from `labels`;
    `skip_bottleneck`: without the bottleneck's queue (shown by bottleneck_table)."""
    runs = [summary, *others]
    rows = [[*([labels[i]] if labels else []), *r] for i, s in enumerate(runs)
            for r in latency_rows(s, skip_port=(s.get("bottleneck") or {}).get("link") if skip_bottleneck else None)]
    if not rows:
        return None
    t = Table(title="latency under load")
    for col in (["run"] if labels else []) + LATENCY_COLUMNS:
        t.add_column(col, justify="left" if col in ("run", "", "path") else "right")
    for r in rows:
        t.add_row(*r)
    return t


WORKLOAD_COLUMNS = ["workload", "sizes", "size bucket", "flows", "completed", "slowdown p50", "slowdown p99"]
REQUEST_COLUMNS = ["requests of", "requests", "flows each", "completed", "completion p50 ms", "p99 ms", "max ms"]


def workload_rows(summary: dict[str, Any]) -> tuple[list[list[str]], list[list[str]]]:
    """The FCT-slowdown rows (each workload by size bucket; analysis/fct.py) and the request rows
    (an incast's or a request-response workload's completions). Shared by the terminal and report.html."""
    def num(v: Any, fmt: str) -> str:
        return "-" if v is None else format(v, fmt)

    slow, reqs = [], []
    for w in summary.get("workloads", []):
        load = f" at {100 * w['offered_load']:g}% of {w['link']}" if w.get("offered_load") else ""
        for b in w["fct_slowdown"]:
            slow.append([w["name"], f"{w['kind']} {w['sizes']}{load}", b["bucket"], str(b["flows"]), str(b["completed"]),
                         num(b["p50"], ".2f"), num(b["p99"], ".2f")])
        if "requests" in w:
            i, c = w["requests"], w["requests"]["completion_ms"]
            reqs.append([f"{w['name']} ({w['kind']})", str(i["requests"]), str(i["flows_each"]), str(i["completed"]),
                         num(c["p50"], ".3f"), num(c["p99"], ".3f"), num(c["max"], ".3f")])
    return slow, reqs


def workload_tables(summary: dict[str, Any]) -> list[Table]:
    """The FCT-slowdown table and the requests table, where the run has them."""
    out = []
    for title, cols, rows in zip(("FCT slowdown (FCT / ideal FCT on an empty network)", "requests: from the request's "
                                  "start to its last response's last byte acknowledged"),
                                 (WORKLOAD_COLUMNS, REQUEST_COLUMNS), workload_rows(summary)):
        if rows:
            t = Table(title=title)
            for col in cols:
                t.add_column(col, justify="left" if col in ("workload", "sizes", "size bucket", "requests of") else "right")
            for r in rows:
                t.add_row(*r)
            out.append(t)
    return out


def _kb(v: Any) -> str:
    return "-" if v is None or v != v else f"{v / 1000:.1f}"


def _yes(v: Any) -> str:
    return "n/a" if v is None or v != v else ("yes" if v else "no")


def recovery_table(eps: pd.DataFrame, title: str) -> Table:
    """Loss-recovery episodes: one row each."""
    t = Table(title=title)
    for col in ("flow", "#", "kind", "start s", "dur ms", "cwnd in kB", "ssthr in kB", "cwnd out kB", "flight kB",
                "retx", "TSO", "fractional", "ended by"):
        t.add_column(col, justify="left" if col in ("flow", "kind", "ended by") else "right")
    for r in eps.itertuples(index=False):
        t.add_row(str(r.flow), str(r.episode), r.kind, f"{r.start_s:.3f}",
                  "-" if r.duration_s is None or r.duration_s != r.duration_s else f"{1000 * r.duration_s:.1f}",
                  _kb(r.cwnd_entry_bytes), _kb(r.ssthresh_entry_bytes), _kb(r.cwnd_exit_bytes), _kb(r.flight_before_bytes),
                  "-" if r.retransmissions is None or r.retransmissions != r.retransmissions else str(int(r.retransmissions)),
                  _yes(r.tso_sends), _yes(r.fractional_sends), r.ended_by)
    return t


def peers_table(rows: list[dict[str, Any]], title: str) -> Table:
    """The peer-compare rows: summed throughput, utilisation, fairness, and % vs Linux same cc
    (means over iterations, with the 95% error and * where the difference is proven)."""
    t = Table(title=title)
    for col in ("stack", "cc", "N", "Mbit/s", "util", "Jain", "retr", "RTOs", "vs Linux"):
        t.add_column(col, justify="left" if col in ("stack", "cc") else "right")
    for r in rows:
        vs = "-" if r["vs_linux_pct"] is None else f"{r['vs_linux_pct']:+.1f}%"
        if r.get("vs_linux_significant") is not None:
            vs += f" ± {r['vs_linux_error_pct']:.1f}%" + (" *" if r["vs_linux_significant"] else " (n.s.)")
        retr = r["retransmits"]
        t.add_row(r["stack"], r["cc"], str(r.get("n", 1)), f"{r['throughput_mbps']:.1f}",
                  "-" if r["utilisation"] is None else f"{100 * r['utilisation']:.1f}%",
                  "-" if r["fairness_jain"] is None else f"{r['fairness_jain']:.3f}",
                  f"{retr:.1f}" if isinstance(retr, float) else str(retr),
                  f"{r['rtos']:.1f}" if isinstance(r["rtos"], float) else str(r["rtos"]), vs)
    return t


def compare_table(rows: list[dict[str, Any]], title: str, labels: tuple[str, str]) -> Table:
    """`tcplab compare`: one row per flow, B relative to A; flows paired across names (an imported
    run's are named by address, analysis/flowmap.py) show both names and how they were paired."""
    how = {r.get("matched_by", "name") for r in rows} - {"name", ""}
    t = Table(title=title + (f" (flows paired by {', '.join(sorted(how))})" if how else ""))
    for col in ("flow", "cc", f"{labels[0]} Mbit/s", f"{labels[1]} Mbit/s", "diff", "retr A", "retr B", "episodes A",
                "episodes B", "cwnd |diff|"):
        t.add_column(col, justify="left" if col in ("flow", "cc") else "right")
    for r in rows:
        t.add_row(r["flow"] + (f" = {r['b_flow']}" if "b_flow" in r else ""), r["cc"], _num(r["a_mbps"]), _num(r["b_mbps"]),
                  "-" if r["diff_pct"] is None else f"{r['diff_pct']:+.1f}%", str(r["a_retransmits"]),
                  str(r["b_retransmits"]), str(r["a_episodes"]), str(r["b_episodes"]),
                  "-" if r["cwnd_relative_diff"] is None else f"{r['cwnd_relative_diff'] * 100:.1f}%")
    return t


def bottleneck_rows(labels: list[str], infos: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each run's bottleneck as `tcplab compare` shows it: where its queue discipline ran
    (simulator, kernel qdisc, tcplab-linkem), utilisation, drops, ECN marks, queue delay."""
    rows = []
    for label, info in zip(labels, infos):
        b = info.get("bottleneck", {})
        aqm, qd = b.get("aqm", {}), b.get("queue_delay_ms", {})
        where = (info.get("emulation", {}).get("queue_disciplines") or {}).get(b.get("link", ""))
        rows.append({"run": label, "discipline": aqm.get("kind", "drop-tail"),
                     "where": where or ("simulator" if info.get("backend", "sim") == "sim" else "kernel fifo"),
                     "utilisation": b.get("utilisation"), "drops": b.get("drops"), "ecn_marks": aqm.get("ecn_marks"),
                     "max_queue_packets": b.get("max_queue_packets"),
                     **{f"queue_delay_{k}_ms": qd.get(k) for k in ("p50", "p95", "p99")}})
    return rows


def bottleneck_table(rows: list[dict[str, Any]]) -> Table:
    """`tcplab compare`: the runs' bottlenecks side by side."""
    t = Table(title="bottleneck")
    cols = ("run", "discipline", "where", "util", "drops", "ECN marks", "max queue pkts", "qdelay p50 ms", "p95 ms",
            "p99 ms")
    for col in cols:
        t.add_column(col, justify="left" if col in ("run", "discipline", "where") else "right")
    for r in rows:
        t.add_row(r["run"], r["discipline"], r["where"], "-" if r["utilisation"] is None else f"{r['utilisation']:.3f}",
                  *("-" if r[k] is None else str(r[k]) for k in ("drops", "ecn_marks", "max_queue_packets")),
                  *(_num3(r[f"queue_delay_{k}_ms"]) for k in ("p50", "p95", "p99")))
    return t


def _num3(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"

"""report.html: one self-contained offline page (interactive charts with their library and data
inline, no external files) with the summary, the charts, the interval tables and the run's
provenance."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from ..analysis.stats import ci_half_width, describe
from ..model import port_label
from . import interactive
from .panels import overlay_model
from .text import (LATENCY_COLUMNS, REQUEST_COLUMNS, WORKLOAD_COLUMNS, interval_lines, latency_rows, listed_flows,
                   unlisted_note, workload_rows)

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{margin-bottom:0}.sub{color:#666;margin-top:.2em}
.ok{color:#185c18}.bad{color:#a00000}
table{border-collapse:collapse;margin:1em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}
th{background:#f3f3f3}td.l,th.l{text-align:left}
figure{margin:1.5em 0}figure img{max-width:100%;border:1px solid #eee}
figcaption{color:#555;font-size:.9em}
pre{background:#f7f7f7;padding:1em;overflow-x:auto;font-size:.85em}
"""


def _show(v: Any) -> str:
    """Numbers as a reader wants them: 1 decimal from 100 up, else 3 significant decimals."""
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.1f}" if abs(v) >= 100 else f"{v:.3f}"
    return str(v)


def _table(table_id: str, header: list[str], rows: list[list[Any]], left: int = 0) -> str:
    def cell(tag: str, i: int, v: Any) -> str:
        cls = ' class="l"' if i < left else ""
        return f"<{tag}{cls}>{html.escape(_show(v))}</{tag}>"

    head = "".join(cell("th", i, h) for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(cell("td", i, v) for i, v in enumerate(r)) + "</tr>" for r in rows)
    return f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def recovery_section(eps: list[Any] | None) -> str:
    """The loss-recovery table (first 50 episodes; the charts' episode list zooms to any):
    `eps` as analysis.recovery.episode_list gives them."""
    if eps is None or not len(eps):
        return '<section id="recovery"><h2>Loss recovery</h2><p>No loss-recovery episodes.</p></section>'

    def yes(v: Any) -> str:
        return "n/a" if v is None or v != v else ("yes" if v else "no")

    rows = [[r.flow, r.episode, r.kind, r.start_s, None if r.duration_s is None or r.duration_s != r.duration_s else r.duration_s * 1e3,
             r.cwnd_entry_bytes, r.ssthresh_entry_bytes, r.cwnd_exit_bytes, r.flight_before_bytes, r.retransmissions,
             yes(r.tso_sends), yes(r.fractional_sends), r.ended_by] for r in eps[:50]]
    table = _table("recovery-table", ["flow", "#", "kind", "start s", "duration ms", "cwnd entry B", "ssthresh entry B",
                                      "cwnd exit B", "flight before B", "retransmissions", "TSO sends", "fractional sends",
                                      "ended by"], rows, left=3)
    more = f"<p>{len(eps) - 50} more episodes: <code>tcplab recovery RUNDIR</code>.</p>" if len(eps) > 50 else ""
    return f'<section id="recovery"><h2>Loss recovery</h2>{table}{more}</section>'


def testbed_section(tb: dict[str, Any] | None) -> str:
    """A remote run's lab: each host, its clock, what tcplab changed there; the path checks."""
    if not tb:
        return ""
    hosts = _table("testbed-hosts", ["node", "os", "release", "clock offset ms", "± ms", "sysctls tcplab set (was -> set)"],
                   [[n, h["os"], h.get("release"), h.get("clock_offset_ms"), h.get("clock_bound_ms"),
                     "; ".join(f"{k}: {v['was']} -> {v['set']}" for k, v in h.get("sysctls", {}).items())]
                    for n, h in tb["hosts"].items()], left=3)
    rtt = _table("testbed-rtt", ["flow", "configured ms", "measured min ms", "error ms"],
                 [[r["flow"], r["configured_ms"], r["measured_min_ms"], r["error_ms"]] for r in tb.get("rtt_check", [])], left=1)
    rc = tb.get("rate_check") or {}
    rate = (f"<p>Bottleneck {html.escape(str(rc.get('port')))}: UDP payload {rc.get('received_mbps')} Mbit/s received, "
            f"{rc.get('expected_mbps')} expected ({rc.get('frame_bytes')}-byte frames), error {rc.get('error')}.</p>") if rc else ""
    return (f'<section id="testbed"><h2>Testbed</h2><p>{html.escape(tb["lab"])}: delay by the {html.escape(tb["delay"])}, '
            f'shaping by the {html.escape(tb["shaping"])}; every change was restored after the run '
            f"(provenance: remote/provenance.json).</p>{hosts}<h3>Path</h3>{rtt}{rate}</section>")


def emulation_section(em: dict[str, Any] | None) -> str:
    """A kernel run's emulation self-check: verdict, RTT and rate checks, queues, what was built."""
    if not em:
        return ""
    verdict = ("<p class=ok>Emulation faithful: every self-check within its bound (RTT 1 ms, rate 5%, delay element late by 1 ms on average or 5 ms for 1% of frames).</p>"
               if em["faithful"] else
               f"<p class=bad><b>Emulation unfaithful</b>: {html.escape('; '.join(em['problems']))}</p>")
    rtt = _table("rtt-check", ["flow", "when", "configured ms", "measured min ms", "error ms"],
                 [[r["flow"], r["when"], r["configured_ms"], r["measured_min_ms"], r["error_ms"]] for r in em["rtt_check"]], left=2)
    rc = em.get("rate_check") or {}
    rate = _table("rate-check", ["port", "configured Mbit/s", "achieved Mbit/s (L2, at the qdisc; median)",
                                 "250 ms windows (backlogged ones *)", "error"],
                  [[rc.get("port"), rc.get("configured_mbps"), rc.get("achieved_l2_mbps"),
                    " ".join(f"{w['mbps']:.1f}" + ("*" if w["backlogged"] else "") for w in rc.get("windows", [])),
                    rc.get("error")]], left=1) if rc else "<p>No shaped bottleneck: no rate check.</p>"
    queues = _table("queue-check", ["port", "limit pkts", "limit bytes", "drops", "max backlog sampled"],
                    [[q["port"], q["limit_packets"], q["limit_bytes"], q["drops"], q["max_backlog_sampled_packets"]]
                     for q in em["queue_check"]], left=1)
    lk = _table("linkem", ["link", "dir", "delay us", "frames in", "frames out", "lost", "ring drops", "late mean us", "late > 5 ms",
                          "late max us"],
                [[e["link"], d, e[d]["delay_us"], e[d]["frames_in"], e[d]["frames_out"], e[d]["lost"], e[d]["ring_drops"],
                  e[d]["late_mean_us"], e[d].get("late_hist", {}).get(">=5000us", 0), e[d]["late_max_us"]]
                 for e in em["linkem"] for d in ("ab", "ba") if d in e], left=2)
    plan = em["plan"]
    notes = "".join(f"<li>{html.escape(x)}</li>" for x in
                    [f"offloads: {em['offloads']}", f"delay element: {em['delay_element']}",
                     f"kernel {em['host']['kernel']}, netem available: {em['host']['netem']}",
                     "CPU during the run: " + ", ".join(f"{k} {v * 100:.1f}%" for k, v in em.get("cpu", {}).items()),
                     "host-global (shared by all namespaces): tcp_allowed_congestion_control = "
                     + " ".join(em["host"]["tcp_allowed_congestion_control (host-global)"])]
                    + [f"not emulated: {x}" for x in plan["not_emulated"]]
                    + [f"unshaped (no buffer in the spec, veth speed): {x}" for x in plan["unshaped"]])
    tr = em["trace"]
    trace = (f"<p>tcp_probe / tcp_cong_state_set: {tr['lines']} lines, {tr['bad_lines']} malformed, "
             f"{tr['overruns']} ring-buffer overruns.</p>")
    return (f'<section id="emulation"><h2>Emulation self-check</h2>{verdict}<h3>RTT</h3>{rtt}<h3>Bottleneck rate</h3>{rate}'
            f"<h3>Queues</h3>{queues}<h3>Delay element</h3>{lk}{trace}<ul>{notes}</ul></section>")


def cpu_section(cpu: dict[str, Any]) -> str:
    """[measure] cpu: the CPU share (sampled) and work per GB of the CC hooks and the TCP path."""
    def pct(v: Any, ci: Any) -> Any:
        return None if v is None else f"{100 * v:.3f}% ± {100 * ci:.3f}%"

    rows = [[what, pct(cpu[f"{k}_share"], cpu[f"{k}_share_ci95"]), cpu[f"{k}_share_per_gb"]]
            for what, k in (("congestion-control hooks", "cc"), ("TCP path (hooks included)", "tcp"))]
    table = _table("cpu-table", ["code path", "share p of the run's CPU (95% CI)", "w = p / GB"], rows, left=1)
    return (f'<section id="cpu"><h2>CPU cost</h2>{table}<p>{cpu["samples"]} samples every {cpu["sample_period_us"]:g} us '
            f'({cpu["sampled_s"]} s of simulation), {cpu["gb_delivered"]} GB delivered. Measured on this machine: varies '
            "from run to run and is not part of the deterministic results.</p></section>")


def import_section(imp: dict[str, Any] | None) -> str:
    """The logs an imported run came from, with malformed lines skipped under --lenient."""
    if imp is None:
        return ""
    rows = [[s["path"], s["format"], s["version"], s["clock"], s["offset_s"], s["bad_lines"],
             "; ".join(s["notes"] + s["first_errors"])] for s in imp["sources"]]
    table = _table("import-table", ["log", "format", "version", "clock", "offset s", "malformed lines skipped", "notes"], rows, left=3)
    return f'<section id="import"><h2>Imported logs</h2>{table}<p>Malformed lines skipped in all: {imp["bad_lines"]}.</p></section>'


def workload_section(summary: dict[str, Any]) -> str:
    """The workloads' FCT-slowdown and request tables (report/text.workload_rows), if any."""
    slow_rows, request_rows = workload_rows(summary)
    return "" if not slow_rows else (
        '<section id="workloads"><h2>Workloads: FCT slowdown</h2>'
        + _table("slowdown-table", WORKLOAD_COLUMNS, slow_rows, left=3)
        + (_table("requests-table", REQUEST_COLUMNS, request_rows, left=1) if request_rows else "")
        + "<p>Slowdown = FCT (from the SYN to the last byte acknowledged) / ideal FCT: the flow alone on the "
          "network at its path's bottleneck rate, handshake and one round trip included (docs/stats.md). p50 and "
          "p99 by nearest rank over the completed flows. A request (an incast's, a request-response pair's) "
          "completes when its last response is acknowledged.</p></section>")


def write(run_dir: Path, summary: dict[str, Any], meta: dict[str, Any], spec_toml: str, intervals, flows: list[dict[str, Any]],
          charts_html: str, recovery_html: str = "") -> Path:
    """Write run_dir/report.html around `charts_html` (report.interactive.section)."""
    b = summary["bottleneck"] or {}
    # `time iperf3 -n` (client start to exit) beside the data's completion, for runs that model it.
    iperf3 = any("iperf3_s" in f for f in summary["flows"])
    flow_rows = [[f["flow"], port_label(f["from"], f["to"]), f["stack"], f["cc"], f["start_s"], f["throughput_mbps"],
                  f["completion_s"], *([f.get("fct_s"), f.get("iperf3_s")] if iperf3 else []), f["bytes_delivered"],
                  f["retransmits"], f["recoveries"], f["rtos"], f["srtt_ms"]] for f in listed_flows(summary)]
    flows_html = _table("flows-table", ["flow", "path", "stack", "cc", "start s", "Mbit/s", "completion s",
                                        *(["FCT s", "time iperf3 -n s"] if iperf3 else []), "bytes delivered",
                                        "retransmits", "recoveries", "RTOs", "srtt ms"], flow_rows, left=4)
    if (note := unlisted_note(summary)) is not None:
        flows_html += f"<p>{html.escape(note)}.</p>"
        names = {f["flow"] for f in listed_flows(summary)}
        flows = [f for f in flows if f["name"] in names]
    if b:
        util = None if b["utilisation"] is None else f"{100 * b['utilisation']:.2f}%"
        gutil = None if b["goodput_utilisation"] is None else f"{100 * b['goodput_utilisation']:.2f}%"
        bott_html = _table("bottleneck-table", ["link", "rate Mbit/s", "window s", "utilisation (L3)", "goodput Mbit/s",
                                                "goodput utilisation", "drops", "random losses", "max queue pkts", "Jain fairness"],
                           [[b["link"], b["rate_mbps"], b["window_s"], util, b["goodput_mbps"], gutil, b["drops"],
                             b["random_losses"], b["max_queue_packets"], summary["fairness_jain"]]], left=1)
        if "aqm" in b or "queue_delay_ms" in b:
            aqm, qd = b.get("aqm", {}), b.get("queue_delay_ms", {})
            bott_html += _table("latency-table", ["queue discipline", "AQM drops", "ECN marks", "queue delay p50 ms",
                                                  "p95 ms", "p99 ms", "max ms", "packets"],
                                [[aqm.get("kind", "drop-tail"), aqm.get("drops"), aqm.get("ecn_marks"), qd.get("p50"),
                                  qd.get("p95"), qd.get("p99"), qd.get("max"), qd.get("packets")]], left=1)
        # Probes' and flows' RTT percentiles, and the queues other than the bottleneck's (above).
        rtt_rows = latency_rows(summary, skip_port=b["link"])
        if rtt_rows:
            bott_html += _table("rtt-table", ["latency under load", *LATENCY_COLUMNS[1:]], rtt_rows, left=2)
        ecn_rows = [[f["flow"], f["ecn"]["ce_segments_received"], f["ecn"]["ece_acks"], f["ecn"]["window_reductions"]]
                    for f in summary["flows"] if "ecn" in f]
        if ecn_rows:
            bott_html += _table("ecn-table", ["flow (ECN)", "CE segments received", "ECE ACKs", "window reductions"],
                                ecn_rows, left=1)
    else:
        bott_html = "<p>No bottleneck link: the run was imported from logs, which do not describe the path.</p>"
    work_html = workload_section(summary)
    lines = interval_lines(intervals, flows)
    iv_html = (f'<details id="intervals"><summary>iperf3-style intervals ({sum(1 for l in lines if not l.startswith("[ ID") and "Interval" not in l)} lines)</summary>'
               f'<pre id="intervals-table">{html.escape(chr(10).join(lines))}</pre></details>')
    prov_rows = [[k, meta[k]] for k in ("tcplab_version", "git_revision", "seed", "backend", "created", "wall_s", "command") if k in meta]
    prov_html = _table("provenance-table", ["", ""], prov_rows, left=2)
    desc = html.escape(meta.get("description", ""))
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>tcplab: {html.escape(summary['name'])}</title>
<style>{_CSS}</style></head><body>
<h1>{html.escape(summary['name'])}</h1><p class="sub">{desc}</p>
<section id="summary"><h2>Flows</h2>{flows_html}<h2>Bottleneck</h2>{bott_html}</section>
{work_html}
{emulation_section(summary.get("emulation"))}
{testbed_section(summary.get("testbed"))}
{import_section(summary.get("import"))}
{charts_html}
{recovery_html}
<section><h2>Intervals</h2>{iv_html}</section>
<section id="provenance"><h2>Provenance</h2>{prov_html}<h3>Resolved spec</h3><pre id="spec">{html.escape(spec_toml)}</pre></section>
</body></html>
"""
    out = run_dir / "report.html"
    out.write_text(page)
    return out


def write_peers(out_dir: Path, name: str, rows: list[dict[str, Any]], links: list[str]) -> Path:
    """out_dir/peers.html: the peer-compare table, each row linking its run's report (links[i]:
    the folder of row i's run, or of its first iteration), and every row's run overlaid on the
    interactive charts (its first iteration)."""
    runs = [(f"{r['stack']}/{r['cc']}", out_dir / link, json.loads((out_dir / link / "summary.json").read_text()))
            for r, link in zip(rows, links)]
    charts = interactive.section(overlay_model(runs), "Charts: every row's run overlaid")
    def vs(r: dict[str, Any]) -> str:
        if r["vs_linux_pct"] is None:
            return "-"
        if r["vs_linux_significant"] is None:
            return f"{r['vs_linux_pct']:+.1f}%"
        return f"{r['vs_linux_pct']:+.1f}% ± {r['vs_linux_error_pct']:.1f}%" + (
            " *" if r["vs_linux_significant"] else " (no difference proven)")

    body = "".join(
        "<tr>" + f'<td class="l"><a href="{html.escape(link)}/report.html">{html.escape(r["stack"])}</a></td>'
        + f'<td class="l">{html.escape(r["cc"])}</td>'
        + "".join(f"<td>{html.escape(_show(v))}</td>" for v in (
            r.get("n", 1), r["throughput_mbps"], None if r["utilisation"] is None else f"{100 * r['utilisation']:.1f}%",
            r["fairness_jain"], r["retransmits"], r["rtos"]))
        + f"<td>{html.escape(vs(r))}</td></tr>"
        for r, link in zip(rows, links))
    head = "".join(f'<th{" class=l" if i < 2 else ""}>{h}</th>' for i, h in enumerate(
        ["stack", "cc", "N", "Mbit/s (sum)", "utilisation", "Jain fairness", "retransmits", "RTOs", "vs Linux, same cc"]))
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>tcplab: {html.escape(name)} peer compare</title>
<style>{_CSS}</style></head><body>
<h1>{html.escape(name)}: peer compare</h1>
<p class="sub">Every sender on each stack with each cc; "vs Linux" is the difference in summed throughput from
the Linux run with the same cc. With N iterations the values are means, and the difference carries its 95% error
and * where Student's t with pooled s (as ministat) proves it.</p>
<table id="peers-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>
{charts}
</body></html>
"""
    path = out_dir / "peers.html"
    path.write_text(page)
    return path



#: Per-flow metrics of an iterations page: (summary key, label).
_ITER_METRICS = [("throughput_mbps", "Mbit/s"), ("completion_s", "completion s"), ("retransmits", "retransmits"),
                 ("recoveries", "recoveries"), ("rtos", "RTOs"), ("min_rtt_ms", "min RTT ms")]


def write_iterations(out_dir: Path, name: str, summaries: list[dict[str, Any]], runs: list[str], stats_text: str) -> Path:
    """out_dir/iterations.html: per flow, each metric's mean with its 95% confidence interval over
    the iterations (Student's t, n - 1 degrees of freedom), the seeds' ministat tables, and links
    to every iteration's report."""
    metrics = [(k, label) for k, label in _ITER_METRICS
               if any(f.get(k) is not None for s in summaries for f in s["flows"])]
    rows = []
    for i, f in enumerate(summaries[0]["flows"]):
        cells = [f["flow"], f["stack"], f["cc"]]
        for k, _ in metrics:
            vals = [s["flows"][i][k] for s in summaries if s["flows"][i].get(k) is not None]
            if not vals:
                cells.append("-")
                continue
            d = describe(vals)
            ci = ci_half_width(d)
            cells.append(_show(float(d.mean)) + ("" if ci is None else f" ± {_show(ci)}"))
        rows.append(cells)
    table = _table("iterations-table", ["flow", "stack", "cc"] + [f"{label} (mean ± 95% CI)" for _, label in metrics],
                   rows, left=3)
    links = " ".join(f'<a href="{html.escape(r)}/report.html">{html.escape(r)}</a>' for r in runs)
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>tcplab: {html.escape(name)}, {len(runs)} iterations</title>
<style>{_CSS}</style></head><body>
<h1>{html.escape(name)}: {len(runs)} iterations</h1>
<p class="sub">Means over the iterations (one seed each) with their 95% confidence intervals (Student's t, n - 1
degrees of freedom).</p>
{table}
<h2>Compared as ministat compares them</h2>
<pre id="ministat">{html.escape(stats_text) or "(one iteration: nothing to compare)"}</pre>
<h2>Each iteration</h2><p>{links}</p>
</body></html>
"""
    path = out_dir / "iterations.html"
    path.write_text(page)
    return path

"""The netns run's self-checks: whether the emulation was as configured (each flow's RTT before
and after the traffic, the bottleneck's rate, the delay element's lateness, CPU steal), reported
in summary.json's `emulation` section, `faithful` or with the problems found."""

from __future__ import annotations

import subprocess
import time
from typing import Any

from ...model import Experiment, port_label
from ..shared import RATE_CHECK_PORT, Collector
from . import host, plan as planmod
from .host import Procs, in_ns

#: A self-check beyond these marks the run "emulation unfaithful" (issue 4's thresholds).
MAX_RATE_ERROR = 0.05
MAX_RTT_ERROR_MS = 1.0
#: Frames the delay element sent more than 5 ms late: a run of them can end a CUBIC slow start
#: early (HyStart's delay threshold is 4..16 ms, tcp_cubic.c HYSTART_DELAY_MIN/MAX), so more
#: than this share of them makes the run unfaithful even if the mean is small.
MAX_LATE_5MS_SHARE = 0.01


class SelfCheck:
    """The checks of one run: `before` the traffic (RTT, rate), `after` it (RTT again), and the
    `section` that judges them with what the run measured."""

    def __init__(self, exp: Experiment, p: planmod.Plan):
        self.exp, self.p = exp, p
        self.rtt_cfg = {f.name: exp.flow_rtt_ns(f) / 1e6 for f in exp.flows}
        self.rtt_before: dict[str, float | None] = {}
        self.rtt_after: dict[str, float | None] = {}
        self.calibration: dict[str, Any] | None = None

    def _rtts(self) -> dict[str, float | None]:
        return {f.name: ping_rtt_ms(self.p.node_ns[f.host], self.p.host_addr[f.to]) for f in self.exp.flows}

    def before(self, procs: Procs) -> None:
        self.rtt_before = self._rtts()
        self.calibration = calibrate_rate(self.exp, self.p, procs)

    def after(self) -> None:
        self.rtt_after = self._rtts()

    def section(self, info: dict[str, Any], sysctls: dict[str, dict[str, str]], linkem_stats: list[dict[str, Any]],
                cpu: dict[str, Any], ports_tot: list[dict[str, Any]], collector: Collector, trace_error: str | None,
                max_queue: dict[str, int]) -> dict[str, Any]:
        """The emulation section: what was built, and whether RTT, rate, queues and timing were as
        configured (`faithful`, with the problems found)."""
        p = self.p
        rtt_check = []
        for f in self.exp.flows:
            for when, val in (("before", self.rtt_before[f.name]), ("after", self.rtt_after[f.name])):
                err = None if val is None else round(val - self.rtt_cfg[f.name], 3)
                rtt_check.append({"flow": f.name, "when": when, "configured_ms": round(self.rtt_cfg[f.name], 3),
                                  "measured_min_ms": val, "error_ms": err})
        # A path with netem's impairments, a schedule or a trace has no one RTT to hold ping's
        # minimum against (jitter, reordering and a trace's waits move it): shown, not judged.
        impaired = {f.name for f in self.exp.flows
                    if any(self.exp._direction(pt).impair for pt in self.exp.flow_route(f) + self.exp.flow_route(f, reverse=True))}
        for r in rtt_check:
            if r["flow"] in impaired:
                r["judged"] = False
        problems = [f"RTT {r['flow']} {r['when']}: " + ("no reply" if r["error_ms"] is None else f"{r['error_ms']:+.3f} ms")
                    for r in rtt_check if r.get("judged", True)
                    and (r["error_ms"] is None or abs(r["error_ms"]) > MAX_RTT_ERROR_MS)]
        calibration = self.calibration
        if calibration and isinstance(calibration.get("error"), str):
            problems.append(f"rate {calibration['port']}: {calibration['error']}")
        elif calibration and abs(calibration["error"]) > MAX_RATE_ERROR:
            problems.append(f"rate {calibration['port']}: {calibration['error'] * 100:+.1f}%")
        problems += lateness_problems(linkem_stats)
        if problems and cpu["steal"] >= 0.02:
            problems.append(f"CPU steal {cpu['steal'] * 100:.0f}% during the run (the hypervisor withheld the vCPUs)")
        queue_check = [{"port": s.port_label, "limit_packets": s.limit_packets, "limit_bytes": s.limit_bytes,
                        "drops": next((pt["drops"] for pt in ports_tot if port_label(pt["from"], pt["to"]) == s.port_label), 0),
                        "max_backlog_sampled_packets": max_queue.get(s.port_label)} for s in p.shapers]
        return {
            "host": info, "plan": planmod.describe(p), "sysctls": sysctls,
            "offloads": "TSO, GSO, GRO and tx checksum off on every veth",
            "delay_element": "tcplab-linkem (userspace, AF_PACKET)" if p.linkems else "none",
            "queue_disciplines": p.aqm_where,
            "rtt_check": rtt_check, "rate_check": calibration, "queue_check": queue_check, "linkem": linkem_stats,
            "cpu": cpu, "trace": {"lines": collector.lines, "kept": collector.kept, "bad_lines": collector.bad_lines,
                                  "overruns": collector.overruns, "error": trace_error},
            "faithful": not problems, "problems": problems,
        }


def ping_rtt_ms(ns: str, addr: str, count: int = 12) -> float | None:
    """Smallest of `count` pings (the first, which waits for ARP, is dropped)."""
    out = host.run(in_ns(ns, ["ping", "-n", "-c", str(count), "-i", "0.05", "-W", "2", addr]), check=False,
                   timeout=30).stdout
    times = [float(x.split("=")[1]) for x in out.split() if x.startswith("time=")]
    return min(times[1:]) if len(times) > 1 else None


def cpu_jiffies() -> list[int]:
    """The aggregate `cpu` line of /proc/stat: user nice system idle iowait irq softirq steal ..."""
    with open("/proc/stat") as fh:
        return [int(x) for x in fh.readline().split()[1:9]]


def cpu_share(before: list[int], after: list[int]) -> dict[str, float]:
    """Shares of CPU time between two /proc/stat readings. Steal is time the hypervisor gave our
    vCPUs to someone else: a delay element starved of it is late, which is a cause the report
    should name rather than a fidelity result (proc(5), /proc/stat)."""
    d = [a - b for a, b in zip(after, before)]
    total = max(1, sum(d))
    return {"busy": round(1 - (d[3] + d[4] + d[7]) / total, 3), "steal": round(d[7] / total, 3),
            "iowait": round(d[4] / total, 3)}


def lateness_problems(linkem_stats: list[dict[str, Any]]) -> list[str]:
    """The delay element's lateness held against the same 1 ms as the RTT check (mean), and its
    tail (frames > 5 ms late) against MAX_LATE_5MS_SHARE."""
    out = []
    for e in linkem_stats:
        for d in ("ab", "ba"):
            st = e.get(d)
            if not st or not st.get("frames_out"):
                continue
            late5 = st.get("late_hist", {}).get(">=5000us", 0) / st["frames_out"]
            if st["late_mean_us"] > MAX_RTT_ERROR_MS * 1000:
                out.append(f"delay element {e['link']} {d}: mean lateness {st['late_mean_us'] / 1000:.1f} ms")
            elif late5 > MAX_LATE_5MS_SHARE:
                out.append(f"delay element {e['link']} {d}: {late5 * 100:.1f}% of frames > 5 ms late")
    return out


def calibrate_rate(exp: Experiment, p: planmod.Plan, procs: Procs) -> dict[str, Any] | None:
    """Achieved vs configured bottleneck rate: a UDP flow at 1.5x the rate keeps the bottleneck
    queue backlogged, and the bytes its fifo dequeues (L2 frames, as htb counts them) per 250 ms
    give the rate htb actually delivers. Counted at the qdisc, not at an iperf3 receiver, so a
    receiver that cannot keep up does not look like a slow link. The rate is the median of the
    windows whose queue was backlogged at both ends: a window where the *sender* was descheduled
    long enough to drain the queue measures the sender, not the shaper; every window is kept in
    the result, so a shaper that is slow in most windows still shows."""
    bott = exp.bottleneck
    label = bott.label
    if label not in {s.port_label for s in p.shapers}:
        return None
    ns, dev = p.egress[label]
    f0 = exp.flows[0]
    src, dst = p.node_ns[f0.host], p.node_ns[f0.to]
    port = str(RATE_CHECK_PORT)
    procs.start(in_ns(dst, ["iperf3", "-s", "-1", "-p", port]))
    time.sleep(0.3)
    client = procs.start(in_ns(src, ["iperf3", "-c", p.host_addr[f0.to], "-p", port, "-u", "-b",
                                     str(int(bott.rate_bps * 1.5)), "-l", "1472", "-t", "3"]))
    time.sleep(0.5)
    samples = []
    for _ in range(9):
        before = time.monotonic_ns()
        q = host.qdisc_stats(ns, dev)
        # The counters were read somewhere between before and after: take the midpoint.
        samples.append((q, (before + time.monotonic_ns()) // 2))
        time.sleep(0.25)
    try:
        client.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        client.kill()
    if not all(q for q, _ in samples):
        return {"port": label, "error": "no qdisc counters"}
    windows = []
    for (q0, t0), (q1, t1) in zip(samples, samples[1:]):
        windows.append({"mbps": round((q1["bytes"] - q0["bytes"]) * 8 / ((t1 - t0) / 1e9) / 1e6, 3),
                        "backlogged": q0["backlog_packets"] > 0 and q1["backlog_packets"] > 0})
    usable = sorted(w["mbps"] for w in windows if w["backlogged"])
    if not usable:
        return {"port": label, "configured_mbps": bott.rate_bps / 1e6, "windows": windows,
                "error": "queue never stayed backlogged"}
    achieved = usable[len(usable) // 2]
    return {"port": label, "configured_mbps": bott.rate_bps / 1e6, "achieved_l2_mbps": achieved,
            "queue_backlogged": len(usable), "windows": windows,
            "error": round(achieved * 1e6 / bott.rate_bps - 1, 4)}

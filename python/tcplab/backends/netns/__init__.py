"""The real-kernel backend: runs a spec on this machine's Linux TCP in network namespaces, with
htb/pfifo bottlenecks, tcplab-linkem for delay and loss, iperf3 for traffic and the tcp_probe
tracepoint for cwnd, and writes the same tables as the simulator.

Order of a run: preflight -> plan -> register -> build -> linkem -> self-check (RTT, rate) ->
servers -> trace -> clients and pings (each at its start time) -> sample counters until done -> collect ->
self-check (RTT again) -> teardown (always: on success, error, Ctrl-C and SIGTERM).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ...model import Experiment as Resolved, Flow, model_cc, port_label
from ...contract import COLUMNS
from ...store import write_rows
from ...logs import Log, LogError, read_logs
from . import host, kernel, ping, plan as planmod, trace
from .host import HostError, in_ns
from .plan import BG_PORT_BASE, CPORT_BASE, SERVER_PORT_BASE, PlanError

__all__ = ["run", "HostError", "PlanError", "linkem_command"]

#: A self-check beyond these marks the run "emulation unfaithful" (issue 4's thresholds).
MAX_RATE_ERROR = 0.05
MAX_RTT_ERROR_MS = 1.0
QUEUE_SAMPLE_NS = 100_000_000
#: Frames the delay element sent more than 5 ms late: a run of them can end a CUBIC slow start
#: early (HyStart's delay threshold is 4..16 ms, tcp_cubic.c HYSTART_DELAY_MIN/MAX), so more
#: than this share of them makes the run unfaithful even if the mean is small.
MAX_LATE_5MS_SHARE = 0.01


class Interrupted(KeyboardInterrupt):
    """SIGTERM arrived; raised in the main thread so teardown runs and the CLI reports it as an
    interruption, like Ctrl-C."""


def linkem_command() -> list[str]:
    """How to start the link emulator: $TCPLAB_LINKEM (a tcplab-linkem binary, e.g. a debug
    build), else this interpreter running the copy inside the native module (`python -m
    tcplab.linkem`), which every install has, a wheel's included."""
    env = os.environ.get("TCPLAB_LINKEM")
    if env:
        return [env]
    return [sys.executable, "-m", "tcplab.linkem"]


def _sysctls(resolved: Resolved, p: planmod.Plan) -> dict[str, dict[str, str]]:
    """Per-namespace sysctls: no cached metrics anywhere (or ssthresh carries over between runs);
    the flows' buffer maxima as tcp_wmem at senders and tcp_rmem at receivers, and a receiving
    host's tcp_adv_win_scale as given (kernels 6.6+ keep the sysctl but no longer read it)."""
    out: dict[str, dict[str, str]] = {ns: {"net.ipv4.tcp_no_metrics_save": "1"} for ns in p.node_ns.values()}
    for f in resolved.flows:
        src, dst = p.node_ns[f.host], p.node_ns[f.to]
        out[src]["net.ipv4.tcp_wmem"] = f"4096 16384 {f.sndbuf_bytes}"
        out[dst]["net.ipv4.tcp_rmem"] = f"4096 131072 {f.rcvbuf_bytes}"
        if f.ecn:  # RFC 3168 negotiation by the kernel itself (receivers accept by default, 2)
            out[src]["net.ipv4.tcp_ecn"] = "1"
        # What the receiving host turns off (the kernel's handshake negotiates it; on by default).
        for opt, name in (("sack", "net.ipv4.tcp_sack"), ("timestamps", "net.ipv4.tcp_timestamps"),
                          ("window_scaling", "net.ipv4.tcp_window_scaling"), ("ecn", "net.ipv4.tcp_ecn")):
            if not f.peer[opt]:
                out[dst][name] = "0"
        scale = resolved.host_sysctls.get(f.to, {}).get("net.ipv4.tcp_adv_win_scale")
        if scale is not None:
            out[dst]["net.ipv4.tcp_adv_win_scale"] = str(scale)
    return out


def _kernel_cc(cc: str) -> str:
    """The kernel's name of a spec algorithm (Linux calls NewReno `reno`, tcp_cong.c)."""
    return "reno" if model_cc(cc) == "newreno" else cc


def _route_congctl(resolved: Resolved, p: planmod.Plan) -> list[list[str]]:
    """`ip route replace` commands that give each flow's route its congestion control (`congctl`).

    iperf3 sets `-C` only after connect() returns (iperf_client_api.c iperf_create_streams()), so
    a connection starts with the namespace's default, and if that is bbr (this machine's kernel
    default) bbr_init() has already set sk_pacing_status = SK_PACING_NEEDED, which the switch to
    cubic or reno keeps: they would run paced by TCP itself (tcp_output.c
    tcp_needs_internal_pacing()), unlike on a host whose default is what it runs. A route's
    congctl is applied before the SYN (tcp_connect_init() -> tcp_ca_dst_init()); the namespace
    default cannot be used, as a non-init namespace may only default to an algorithm in
    tcp_allowed_congestion_control (tcp_set_default_congestion_control())."""
    cmds = []
    for f in resolved.flows:
        ns, dst = p.node_ns[f.host], p.host_addr[f.to]
        words = host.run(in_ns(ns, ["ip", "-o", "route", "get", dst])).stdout.split()
        how = [w for key in ("via", "dev") if key in words for w in (key, words[words.index(key) + 1])]
        cmds.append(in_ns(ns, ["ip", "route", "replace", f"{dst}/32", *how, "congctl", _kernel_cc(f.cc)]))
    return cmds


def _ping_rtt_ms(ns: str, addr: str, count: int = 12) -> float | None:
    """Smallest of `count` pings (the first, which waits for ARP, is dropped)."""
    out = host.run(in_ns(ns, ["ping", "-n", "-c", str(count), "-i", "0.05", "-W", "2", addr]), check=False,
                   timeout=30).stdout
    times = [float(x.split("=")[1]) for x in out.split() if x.startswith("time=")]
    return min(times[1:]) if len(times) > 1 else None


def _cpu_jiffies() -> list[int]:
    """The aggregate `cpu` line of /proc/stat: user nice system idle iowait irq softirq steal ..."""
    with open("/proc/stat") as fh:
        return [int(x) for x in fh.readline().split()[1:9]]


def _cpu_share(before: list[int], after: list[int]) -> dict[str, float]:
    """Shares of CPU time between two /proc/stat readings. Steal is time the hypervisor gave our
    vCPUs to someone else: a delay element starved of it is late, which is a cause the report
    should name rather than a fidelity result (proc(5), /proc/stat)."""
    d = [a - b for a, b in zip(after, before)]
    total = max(1, sum(d))
    return {"busy": round(1 - (d[3] + d[4] + d[7]) / total, 3), "steal": round(d[7] / total, 3),
            "iowait": round(d[4] / total, 3)}


class _Procs:
    """Child processes of a run, killed at teardown whatever happened."""

    def __init__(self) -> None:
        self.items: list[subprocess.Popen] = []

    def start(self, args: list[str], **kw: Any) -> subprocess.Popen:
        p = subprocess.Popen(args, **({"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True} | kw))
        self.items.append(p)
        return p

    def kill_all(self) -> None:
        for p in self.items:
            if p.poll() is None:
                p.kill()
        for p in self.items:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass


def _start_linkems(p: planmod.Plan, procs: _Procs, seed: int, stats_dir: Path) -> list[tuple[planmod.Linkem, subprocess.Popen, Path]]:
    exe = linkem_command()
    out = []
    for i, e in enumerate(p.linkems):
        stats = stats_dir / f"linkem-{i}.json"
        args = in_ns(e.ns, [*exe, "--a", e.dev_a, "--b", e.dev_b, "--delay-ab-us", str(e.delay_ab_ns // 1000),
                            "--delay-ba-us", str(e.delay_ba_ns // 1000), "--loss-ab", repr(e.loss_ab),
                            "--loss-ba", repr(e.loss_ba), *_linkem_aqm_args(e), "--seed", str(seed + i),
                            "--stats", str(stats)])
        proc = procs.start(args)
        line = proc.stdout.readline() if proc.stdout else ""
        if line.strip() != "ready":
            err = proc.stderr.read() if proc.stderr and proc.poll() is not None else ""
            raise HostError(f"tcplab-linkem in {e.ns} did not start: {err.strip() or line.strip()}")
        out.append((e, proc, stats))
    return out


def _linkem_aqm_args(e: planmod.Linkem) -> list[str]:
    """The rate and discipline of each direction whose queue discipline linkem runs (the resolved
    aqm dict is the JSON that crates/tcplab-aqm's AqmConfig reads, as the simulator's does)."""
    out = []
    for d in ("ab", "ba"):
        aqm = getattr(e, f"aqm_{d}")
        if aqm is not None:
            out += [f"--rate-{d}-bps", str(getattr(e, f"rate_{d}_bps")), f"--aqm-{d}", json.dumps(aqm)]
    return out


def _linkem_port(p: planmod.Plan, label: str, linkem_stats: list[dict[str, Any]]) -> dict[str, Any] | None:
    """linkem's stats of the direction that is port `label`, if linkem runs its discipline."""
    for e, st in zip(p.linkems, linkem_stats):
        a, b = e.link_label.split("<->")
        for d, port in (("ab", port_label(a, b)), ("ba", port_label(b, a))):
            if port == label and getattr(e, f"aqm_{d}") is not None:
                return st.get(d)
    return None


def _linkem_queue_rows(p: planmod.Plan, label: str, linkem_stats: list[dict[str, Any]],
                       t0_real_ns: int) -> list[dict[str, Any]]:
    """The bottleneck's queue samples as linkem took them (CLOCK_REALTIME, every 100 ms), on
    the run's clock."""
    st = _linkem_port(p, label, linkem_stats)
    samples = ((st or {}).get("discipline") or {}).get("queue_samples", [])
    return [{"t_ns": x[0] - t0_real_ns, "port": label, "queue_packets": x[1], "queue_bytes": x[2]}
            for x in samples if x[0] >= t0_real_ns]


def _linkem_port_drops(p: planmod.Plan, rows: list[dict[str, Any]], linkem_stats: list[dict[str, Any]],
                       t0_real_ns: int) -> None:
    """The per-interval drops of ports whose discipline linkem runs (the sampler reads htb's
    counters, which these ports do not have): the discipline's drop count at each interval's
    ends, from linkem's 100 ms samples (the final total after the last)."""
    import bisect

    for label in p.aqm_where:
        disc = (_linkem_port(p, label, linkem_stats) or {}).get("discipline")
        if not disc:
            continue
        times = [x[0] - t0_real_ns for x in disc["queue_samples"]]
        cum = [x[3] for x in disc["queue_samples"]]

        def drops_by(t_ns: int) -> int:
            i = bisect.bisect_right(times, t_ns)
            return disc["drops"] if i == len(times) else (cum[i - 1] if i else 0)

        for r in rows:
            if r["port"] == label:
                r["drops"] = drops_by(r["t_end_ns"]) - drops_by(r["t_start_ns"])


def _stop_linkems(items: list[tuple[planmod.Linkem, subprocess.Popen, Path]]) -> list[dict[str, Any]]:
    res = []
    for e, proc, stats in items:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        data = json.loads(stats.read_text()) if stats.is_file() else {}
        res.append({"link": e.link_label} | data)
    return res


def _lateness_problems(linkem_stats: list[dict[str, Any]]) -> list[str]:
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


def _calibrate_rate(resolved: Resolved, p: planmod.Plan, procs: _Procs) -> dict[str, Any] | None:
    """Achieved vs configured bottleneck rate: a UDP flow at 1.5x the rate keeps the bottleneck
    queue backlogged, and the bytes its fifo dequeues (L2 frames, as htb counts them) per 250 ms
    give the rate htb actually delivers. Counted at the qdisc, not at an iperf3 receiver, so a
    receiver that cannot keep up does not look like a slow link. The rate is the median of the
    windows whose queue was backlogged at both ends: a window where the *sender* was descheduled
    long enough to drain the queue measures the sender, not the shaper; every window is kept in
    the result, so a shaper that is slow in most windows still shows."""
    bott = resolved.bottleneck
    label = bott.label
    if label not in {s.port_label for s in p.shapers}:
        return None
    ns, dev = p.egress[label]
    f0 = resolved.flows[0]
    src, dst = p.node_ns[f0.host], p.node_ns[f0.to]
    port = str(BG_PORT_BASE + 90)
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


def _iperf_args(f: Flow, i: int, dst_addr: str, interval_ns: int) -> list[str]:
    args = ["iperf3", "-c", dst_addr, "-p", str(SERVER_PORT_BASE + i), "--cport", str(CPORT_BASE + i), "-C",
            _kernel_cc(f.cc), "-l", str(f.write_bytes), "-J",
            "-i", f"{max(interval_ns, 100_000_000) / 1e9:g}"]
    if f.app.kind == "time":
        args += ["-t", f"{f.app.duration_ns / 1e9:g}"]
    else:
        args += ["-n", str(f.app.bytes)]
    return args


def _netstat(ns: str) -> dict[str, int]:
    """TcpExt and Tcp counters of a namespace (per-netns, so per sender here)."""
    vals: dict[str, int] = {}
    for path in ("/proc/net/netstat", "/proc/net/snmp"):
        lines = host.run(in_ns(ns, ["cat", path]), check=False).stdout.splitlines()
        for head, body in zip(lines[::2], lines[1::2]):
            prefix = head.split(":")[0]
            for k, v in zip(head.split()[1:], body.split()[1:]):
                try:
                    vals[f"{prefix}.{k}"] = int(v)
                except ValueError:
                    pass
    return vals


class _Sampler(threading.Thread):
    """Port counters every interval and the bottleneck queue every 100 ms, relative to t0."""

    def __init__(self, p: planmod.Plan, bott_label: str, interval_ns: int, t0_ns: int):
        super().__init__(name="tcplab-sampler", daemon=True)
        self.p, self.bott, self.interval_ns, self.t0 = p, bott_label, interval_ns, t0_ns
        self.stop_ev = threading.Event()
        self.ports: list[dict[str, Any]] = []
        self.queues: list[dict[str, Any]] = []
        self.max_queue: dict[str, int] = {}
        self._shaped = {s.port_label: s for s in p.shapers}
        self.final_q: dict[str, dict[str, int]] = {}

    def _snapshot(self) -> dict[str, tuple[int, int, int]]:
        by_ns: dict[str, dict[str, tuple[int, int]]] = {}
        snap = {}
        for label, (ns, dev) in self.p.egress.items():
            if ns not in by_ns:
                by_ns[ns] = host.link_tx(ns)
            b, pk = by_ns[ns].get(dev, (0, 0))
            drops = host.qdisc_stats(ns, dev).get("drops", 0) if label in self._shaped else 0
            snap[label] = (b, pk, drops)
        return snap

    def _rows(self, snap: dict[str, tuple[int, int, int]], prev: dict[str, tuple[int, int, int]], t_start: int,
              t_end: int) -> None:
        for label, (b, pk, dr) in snap.items():
            pb, ppk, pdr = prev[label]
            self.ports.append({"t_start_ns": t_start, "t_end_ns": t_end, "port": label, "tx_bytes": b - pb,
                               "tx_packets": pk - ppk, "drops": dr - pdr, "losses": 0})

    def run(self) -> None:
        prev = self._snapshot()
        prev_t = time.monotonic_ns() - self.t0
        next_port = prev_t + self.interval_ns
        ns, dev = self.p.egress[self.bott]
        while True:
            if self.stop_ev.is_set():
                # The last, partial interval, so the counters cover the whole run.
                self._rows(self._snapshot(), prev, prev_t, time.monotonic_ns() - self.t0)
                for s in self.p.shapers:
                    if s.aqm is not None:
                        self.final_q[s.port_label] = host.qdisc_stats(s.ns, s.dev)
                break
            now = time.monotonic_ns() - self.t0
            if self.bott in self._shaped:
                q = host.qdisc_stats(ns, dev)
                self.queues.append({"t_ns": now, "port": self.bott, "queue_packets": q.get("backlog_packets", 0),
                                    "queue_bytes": q.get("backlog_bytes", 0)})
                self.max_queue[self.bott] = max(self.max_queue.get(self.bott, 0), q.get("backlog_packets", 0))
            if now >= next_port:
                snap = self._snapshot()
                self._rows(snap, prev, prev_t, now)
                prev, prev_t = snap, now
                next_port = now + self.interval_ns
            self.stop_ev.wait(QUEUE_SAMPLE_NS / 1e9)


def run(resolved: Resolved, directory: Path, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Run `resolved` on real Linux TCP, writing tables into `directory`. Returns totals in the
    simulator's shape plus an `emulation` section (what was built and the self-checks)."""
    info = host.preflight({_kernel_cc(f.cc) for f in resolved.flows})
    feat = kernel.features()
    info["kernel_features"] = feat
    p = planmod.build(resolved, planmod.new_run_id(), kernel.qdiscs_available(feat))
    root = host.tracefs()
    instance = f"tcplab-{p.run_id}"
    host.register(p, extra={"instance": instance})
    procs = _Procs()
    old_term = signal.getsignal(signal.SIGTERM)

    def on_term(signum: int, frame: Any) -> None:
        raise Interrupted("SIGTERM")

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_term)
    sessions: list[trace.TraceSession] = []
    try:
        return _run(resolved, directory, progress, p, info, root, instance, procs, sessions)
    finally:
        for session in sessions:
            session.close()  # the reader holds trace_pipe open, which keeps the instance alive
        procs.kill_all()
        left = host.teardown(p.run_id, p.namespaces, instance)
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, old_term)
        if left:
            raise HostError(f"could not remove {', '.join(left)}; run `tcplab netns cleanup`")


@dataclass
class _Live:
    """A kernel run under way: what its phases hand each other."""

    work: Path
    linkems: list[tuple[planmod.Linkem, subprocess.Popen, Path]]
    rtt_cfg: dict[str, float]
    rtt_before: dict[str, float | None]
    calibration: dict[str, Any] | None
    stats_before: dict[str, dict[str, int]]
    pcap: subprocess.Popen | None
    session: trace.TraceSession
    #: Per namespace, the sysctls set in it (they go with the namespace at teardown; no
    #: host-global value is changed).
    sysctls: dict[str, dict[str, str]]
    t0: int = 0
    t0_real: int = 0  # time.time_ns() at t0: linkem stamps its queue samples with CLOCK_REALTIME
    sampler: Any = None
    clients: dict[str, tuple[subprocess.Popen, int]] = field(default_factory=dict)  # name -> (iperf3 -c, launched)
    results: dict[str, tuple[dict[str, Any], int]] = field(default_factory=dict)    # name -> (its -J report, launched)
    pings: dict[str, tuple[subprocess.Popen, int]] = field(default_factory=dict)    # probe -> (ping, launched)


def _run(resolved: Resolved, directory: Path, progress: Callable[[int, int], None] | None, p: planmod.Plan,
         info: dict[str, Any], root: Path, instance: str, procs: _Procs,
         sessions: list[trace.TraceSession]) -> dict[str, Any]:
    """A kernel run in phases: set up, launch and wait, then records and self-checks."""
    cpu_before = _cpu_jiffies()
    live = _set_up(resolved, directory, p, root, instance, procs, sessions)
    _launch_and_wait(resolved, p, procs, live, progress)
    collector = live.session.stop()
    if live.pcap is not None:
        live.pcap.send_signal(signal.SIGINT)
        try:
            live.pcap.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            live.pcap.kill()
    _collect_clients(live)
    stats_after = {f.name: _netstat(p.node_ns[f.host]) for f in resolved.flows}
    rtt_after = {f.name: _ping_rtt_ms(p.node_ns[f.host], p.host_addr[f.to]) for f in resolved.flows}
    linkem_stats = _stop_linkems(live.linkems)
    live.sampler.queues += _linkem_queue_rows(p, resolved.bottleneck.label, linkem_stats, live.t0_real)
    _linkem_port_drops(p, live.sampler.ports, linkem_stats, live.t0_real)
    cpu = _cpu_share(cpu_before, _cpu_jiffies())
    # Every kernel counter that moved in each sender's namespace (TcpExt and Tcp: HyStart's
    # TCPHystartTrainDetect/DelayDetect and their cwnds, SACK recoveries, undo, TLP, ...).
    counters = {f.name: {k: v - live.stats_before[f.name].get(k, 0) for k, v in sorted(stats_after[f.name].items())
                         if v != live.stats_before[f.name].get(k, 0)} for f in resolved.flows}
    (live.work / "counters.json").write_text(json.dumps(counters, indent=1) + "\n")
    flow_totals = _write_records(resolved, directory, p, live, counters)
    probe_totals = _collect_pings(resolved, directory, live)
    ports_tot = _port_totals(resolved, p, live, linkem_stats)
    udp = _udp_totals(resolved, live)
    emulation = _self_check(resolved, p, info, live, rtt_after, linkem_stats, cpu, ports_tot, collector)
    for u in resolved.background:
        (live.work / f"iperf3-{u.name}.json").write_text(json.dumps(live.results.get(u.name, ({}, 0))[0], indent=1))
    return {"backend": "netns", "end_ns": time.monotonic_ns() - live.t0, "flows": flow_totals, "ports": ports_tot,
            "udp": udp, "probes": probe_totals, "emulation": emulation}


def _set_up(resolved: Resolved, directory: Path, p: planmod.Plan, root: Path, instance: str, procs: _Procs,
            sessions: list[trace.TraceSession]) -> _Live:
    """Namespaces, sysctls, routes, link emulators, the pre-run self-checks, servers, capture, tracing."""
    sysctls = _sysctls(resolved, p)
    host.build(p, sysctls)
    for cmd in _route_congctl(resolved, p):
        host.run(cmd)
    work = directory / "netns"
    work.mkdir()
    linkems = _start_linkems(p, procs, resolved.seed, work)
    host.register(p, pids=[x[1].pid for x in linkems], extra={"instance": instance})
    flows = resolved.flows
    rtt_cfg = {f.name: resolved.rtt_ns(f.host, f.to) / 1e6 for f in flows}
    rtt_before = {f.name: _ping_rtt_ms(p.node_ns[f.host], p.host_addr[f.to]) for f in flows}
    calibration = _calibrate_rate(resolved, p, procs)
    # Servers, one per flow and per background stream.
    for i, f in enumerate(flows):
        procs.start(in_ns(p.node_ns[f.to], ["iperf3", "-s", "-1", "-p", str(SERVER_PORT_BASE + i)]))
    for j, u in enumerate(resolved.background):
        procs.start(in_ns(p.node_ns[u.to], ["iperf3", "-s", "-1", "-J", "-p", str(BG_PORT_BASE + j)]))
    time.sleep(0.5)
    stats_before = {f.name: _netstat(p.node_ns[f.host]) for f in flows}
    pcap = None
    if resolved.trace.pcap:
        # tcpdump -s 100 on the bottleneck's egress device, as the seeds capture (snaplen 100).
        ns, dev = p.egress[resolved.bottleneck.label]
        pcap = procs.start(in_ns(ns, ["tcpdump", "-q", "-n", "-i", dev, "-s", "100", "-w", str(work / "bottleneck.pcap")]))
        time.sleep(0.5)
    session = trace.TraceSession(root, instance, [CPORT_BASE + i for i in range(len(flows))], resolved.trace.sample_ns,
                                 work / "trace.txt")
    sessions.append(session)
    session.start()
    return _Live(work, linkems, rtt_cfg, rtt_before, calibration, stats_before, pcap, session, sysctls)


def _launch_and_wait(resolved: Resolved, p: planmod.Plan, procs: _Procs, live: _Live,
                     progress: Callable[[int, int], None] | None) -> None:
    """Start the bottleneck sampler, every client at its start time (background first), and wait
    for the TCP clients to finish."""
    flows = resolved.flows
    live.t0 = t0 = time.monotonic_ns()
    live.t0_real = time.time_ns()
    live.sampler = _Sampler(p, resolved.bottleneck.label, resolved.trace.interval_ns, t0)
    live.sampler.start()
    launches: list[tuple[int, str, list[str], str]] = []
    for j, u in enumerate(resolved.background):
        dur = max(0.1, (min(u.stop_ns, resolved.stop_ns) - u.start_ns) / 1e9)
        args = ["iperf3", "-c", p.host_addr[u.to], "-p", str(BG_PORT_BASE + j), "-u", "-b", str(u.rate_bps),
                "-l", str(max(1, u.size_bytes - 28)), "-t", f"{dur:g}", "-J"]
        launches.append((u.start_ns, f"udp{j}", in_ns(p.node_ns[u.frm], args), "udp"))
    for i, f in enumerate(flows):
        args = _iperf_args(f, i, p.host_addr[f.to], resolved.trace.interval_ns)
        launches.append((f.start_ns, f.name, in_ns(p.node_ns[f.host], args), "tcp"))
    for pr in resolved.probes:
        n = ping.count(pr, resolved.stop_ns)
        if n:
            words = ping.command(pr, p.host_addr[pr.frm], p.host_addr[pr.to], n)
            launches.append((pr.start_ns, pr.name, in_ns(p.node_ns[pr.frm], words), "ping"))
    launches.sort(key=lambda x: x[0])
    ping_files = {pr.name: i + 1 for i, pr in enumerate(resolved.probes)}
    end_ns = max(f.start_ns + (f.app.duration_ns or 0) for f in flows)
    deadline_ns = max(resolved.stop_ns, end_ns) + 60_000_000_000
    for start_ns, name, args, kind in launches:
        while time.monotonic_ns() - t0 < start_ns:
            time.sleep(min(0.05, (start_ns - (time.monotonic_ns() - t0)) / 1e9 + 0.0005))
        if kind == "ping":  # its output goes to a file as it comes: a long run's lines would fill a pipe
            i = ping_files[name]
            with (live.work / f"ping-{i}.txt").open("w") as out, (live.work / f"ping-{i}.err").open("w") as err:
                live.pings[name] = (procs.start(args, stdout=out, stderr=err), time.monotonic_ns() - t0)
        else:
            live.clients[name] = (procs.start(args), time.monotonic_ns() - t0)
    # Until every TCP client and every ping (its last request plus the linger) has finished.
    waiting = [live.clients[f.name][0] for f in flows] + [proc for proc, _ in live.pings.values()]
    deadline_ns = max([deadline_ns] + [pr.stop_ns + (ping.LINGER_S + 60) * 10**9 for pr in resolved.probes])
    while any(proc.poll() is None for proc in waiting):
        now = time.monotonic_ns() - t0
        if progress:
            progress(min(now, end_ns), end_ns)
        if now > deadline_ns:
            raise HostError("iperf3 clients or pings did not finish within 60 s of their end")
        time.sleep(0.2)
    time.sleep(0.2)
    live.sampler.stop_ev.set()
    live.sampler.join(timeout=10)


def _collect_clients(live: _Live) -> None:
    """Each client's iperf3 -J report into live.results."""
    for name, (proc, launched_ns) in live.clients.items():
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        try:
            live.results[name] = (json.loads(out), launched_ns)
        except ValueError:
            raise HostError(f"iperf3 client {name} gave no JSON: {err.strip()[:300]}") from None
        if "error" in live.results[name][0]:
            raise HostError(f"iperf3 client {name}: {live.results[name][0]['error']}")


def _flow_names(resolved: Resolved, p: planmod.Plan) -> dict[str, str]:
    """The importer's name of each flow ("addr:port->addr:port", from its addresses and ports in the
    trace and in iperf3's report) -> the spec's name."""
    return {port_label(f"{p.host_addr[f.host]}:{CPORT_BASE + i}", f"{p.host_addr[f.to]}:{SERVER_PORT_BASE + i}"): f.name
            for i, f in enumerate(resolved.flows)}


def _write_records(resolved: Resolved, directory: Path, p: planmod.Plan, live: _Live,
                   counters: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
    """The run's tables: flows, intervals and events from the raw logs (netns/trace.txt and each
    client's iperf3 -J report) through the same importer as `tcplab import`; ports and queues from
    the sampler. Returns per-flow totals from iperf3's end sums and the kernel's counters."""
    logs = []
    trace_path = live.work / "trace.txt"
    first = next((trace.parse_line(line) for line in trace_path.open() if trace.parse_line(line)), None)
    if first is not None:  # the importer counts a trace's time from its first line
        logs.append(Log(trace_path, "tcp_probe", "trace", first.t_ns - live.t0))
    for i, f in enumerate(resolved.flows):
        data, launched = live.results[f.name]
        path = live.work / f"iperf3-{i + 1}.json"  # by index: a sender's name is the spec's, not a file name
        path.write_text(json.dumps(data, indent=1))
        logs.append(Log(path, "iperf3-json", f.name, launched))
    names = _flow_names(resolved, p)
    mss = {f.mss for f in resolved.flows}
    try:
        read_logs(logs, directory, interval_ns=resolved.trace.interval_ns, mss=min(mss), lenient=True,
                  rename=lambda n: names.get(n, n))
    except LogError as e:
        raise HostError(f"the run's own logs could not be read: {e}") from None
    for table, rows in (("ports", live.sampler.ports), ("queues", live.sampler.queues)):
        write_rows(directory, table, rows, COLUMNS[table])
    return [_flow_totals(f, *live.results[f.name], counters[f.name]) for f in resolved.flows]


def _collect_pings(resolved: Resolved, directory: Path, live: _Live) -> list[dict[str, Any]]:
    """Each probe's ping output (netns/ping-<i>.txt, written as it ran) into the `probes` table; its
    totals."""
    rows, out = [], []
    for i, pr in enumerate(resolved.probes):
        if pr.name not in live.pings:  # no request before the run's end
            out.append({"name": pr.name, "sent": 0, "answered": 0, "lost": 0})
            continue
        proc, launched = live.pings[pr.name]
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        try:
            res = ping.parse((live.work / f"ping-{i + 1}.txt").read_text())
        except ping.PingOutputError as e:
            err = (live.work / f"ping-{i + 1}.err").read_text()
            raise HostError(f"ping for probe {pr.name}: {e}: {err.strip()[:300]}") from None
        rows += ping.rows(pr, res, launched, live.t0_real)  # ping -D prints the wall clock
        out.append(ping.totals(pr, res))
    write_rows(directory, "probes", rows, COLUMNS["probes"])
    return out


def _flow_totals(f: Flow, data: dict[str, Any], launched: int, counters: dict[str, int]) -> dict[str, Any]:
    """One flow's totals in the simulator's shape: iperf3's end sums, the kernel's counters."""
    snd, rcv = data["end"]["streams"][0]["sender"], data["end"]["streams"][0]["receiver"]
    d = {k: counters.get(k, 0) for k in ("TcpExt.TCPSackRecovery", "TcpExt.TCPRenoRecovery", "TcpExt.TCPTimeouts")}
    last = [iv["streams"][0] for iv in data.get("intervals", [])]
    return {
        "flow": f.name, "cc": f.cc, "stack": "linux", "start_ns": launched,
        "bytes_written": int(snd["bytes"]), "bytes_delivered": int(rcv["bytes"]), "bytes_sent": int(snd["bytes"]),
        "retrans_segs": int(snd.get("retransmits", 0)),
        "recoveries": d["TcpExt.TCPSackRecovery"] + d["TcpExt.TCPRenoRecovery"], "rtos": d["TcpExt.TCPTimeouts"],
        "completion_ns": None if f.app.kind == "time" else int(rcv["seconds"] * 1e9),
        "cwnd_bytes": int(last[-1].get("snd_cwnd", 0)) if last else 0,
        "srtt_ns": int(snd.get("mean_rtt", 0)) * 1000, "min_rtt_ns": int(snd.get("min_rtt", 0)) * 1000,
    }


def _port_totals(resolved: Resolved, p: planmod.Plan, live: _Live, linkem_stats: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per port: bytes and packets sent, queue drops (qdisc), random losses (linkem), max queue."""
    losses_by_port: dict[str, int] = {}
    for e, st in zip(p.linkems, linkem_stats):
        a, b = e.link_label.split("<->")
        losses_by_port[port_label(a, b)] = st.get("ab", {}).get("lost", 0)
        losses_by_port[port_label(b, a)] = st.get("ba", {}).get("lost", 0)
    out = []
    for port in resolved.ports:
        rows = [r for r in live.sampler.ports if r["port"] == port.label]
        out.append({"port": port.index, "from": port.frm, "to": port.to, "rate_bps": port.rate_bps,
                    "tx_bytes": sum(r["tx_bytes"] for r in rows), "tx_packets": sum(r["tx_packets"] for r in rows),
                    "drops": sum(r["drops"] for r in rows), "losses": losses_by_port.get(port.label, 0),
                    "max_queue_packets": live.sampler.max_queue.get(port.label, 0)}
                   | _aqm_totals(p, port.label, live, linkem_stats))
    return out


def _aqm_totals(p: planmod.Plan, label: str, live: _Live, linkem_stats: list[dict[str, Any]]) -> dict[str, Any]:
    """A port's queue discipline totals in the simulator's shape: drops, ECN marks and, where
    linkem runs it, the per-frame sojourn percentiles (arrival to start of transmission)."""
    if label not in p.aqm_where:
        return {}
    st = _linkem_port(p, label, linkem_stats)
    if st is not None:
        disc = st.get("discipline") or {}
        soj = disc.get("sojourn_us", {})
        return {"drops": disc.get("drops", 0), "aqm_drops": disc.get("drops", 0), "ecn_marks": disc.get("ecn_marks", 0),
                "max_queue_packets": disc.get("max_queue_frames", 0),
                "queue_delay": {"packets": soj.get("frames", 0),
                                **{f"{k}_ns": int(soj.get(k, 0) * 1000) for k in ("mean", "p50", "p95", "p99", "max")}}}
    q = live.sampler.final_q.get(label, {})  # the kernel's qdisc: its own counters
    return {"aqm_drops": q.get("drops", 0), "ecn_marks": q.get("ecn_marks", 0)}


def _udp_totals(resolved: Resolved, live: _Live) -> list[dict[str, Any]]:
    udp = []
    for j, u in enumerate(resolved.background):
        data = live.results.get(f"udp{j}", ({}, 0))[0]
        sent, recv = data.get("end", {}).get("sum_sent", {}), data.get("end", {}).get("sum_received", {})
        udp.append({"name": u.name, "sent": int(sent.get("packets", 0)),
                    "received": int(recv.get("packets", 0)) - int(recv.get("lost_packets", 0)),
                    "received_bytes": int(recv.get("bytes", 0))})
    return udp


def _self_check(resolved: Resolved, p: planmod.Plan, info: dict[str, Any], live: _Live,
                rtt_after: dict[str, float | None], linkem_stats: list[dict[str, Any]], cpu: dict[str, Any],
                ports_tot: list[dict[str, Any]], collector: Any) -> dict[str, Any]:
    """The emulation section: what was built, and whether RTT, rate, queues and timing were as
    configured (`faithful`, with the problems found)."""
    rtt_check = []
    for f in resolved.flows:
        for when, val in (("before", live.rtt_before[f.name]), ("after", rtt_after[f.name])):
            err = None if val is None else round(val - live.rtt_cfg[f.name], 3)
            rtt_check.append({"flow": f.name, "when": when, "configured_ms": round(live.rtt_cfg[f.name], 3),
                              "measured_min_ms": val, "error_ms": err})
    problems = [f"RTT {r['flow']} {r['when']}: " + ("no reply" if r["error_ms"] is None else f"{r['error_ms']:+.3f} ms")
                for r in rtt_check if r["error_ms"] is None or abs(r["error_ms"]) > MAX_RTT_ERROR_MS]
    calibration = live.calibration
    if calibration and isinstance(calibration.get("error"), str):
        problems.append(f"rate {calibration['port']}: {calibration['error']}")
    elif calibration and abs(calibration["error"]) > MAX_RATE_ERROR:
        problems.append(f"rate {calibration['port']}: {calibration['error'] * 100:+.1f}%")
    problems += _lateness_problems(linkem_stats)
    if problems and cpu["steal"] >= 0.02:
        problems.append(f"CPU steal {cpu['steal'] * 100:.0f}% during the run (the hypervisor withheld the vCPUs)")
    queue_check = [{"port": s.port_label, "limit_packets": s.limit_packets, "limit_bytes": s.limit_bytes,
                    "drops": next((pt["drops"] for pt in ports_tot if port_label(pt["from"], pt["to"]) == s.port_label), 0),
                    "max_backlog_sampled_packets": live.sampler.max_queue.get(s.port_label)} for s in p.shapers]
    return {
        "host": info, "plan": planmod.describe(p), "sysctls": live.sysctls,
        "offloads": "TSO, GSO, GRO and tx checksum off on every veth",
        "delay_element": "tcplab-linkem (userspace, AF_PACKET)" if p.linkems else "none",
        "queue_disciplines": p.aqm_where,
        "rtt_check": rtt_check, "rate_check": calibration, "queue_check": queue_check, "linkem": linkem_stats,
        "cpu": cpu, "trace": {"lines": collector.lines, "kept": collector.kept, "bad_lines": collector.bad_lines,
                              "overruns": collector.overruns, "error": live.session.error},
        "faithful": not problems, "problems": problems,
    }

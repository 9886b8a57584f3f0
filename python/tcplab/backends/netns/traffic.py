"""A netns run's traffic, the phase between building the network and tearing it down: iperf3
servers, the capture and the trace, every client at its start time, the sampler of the shaped
ports, and then what they report: the clients' iperf3 -J reports, the pings, the kernel's
counters, and the record tables made from them."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable

from ...contract import COLUMNS
from ...logs import Log
from ...model import Experiment
from ...store import write_rows
from .. import ping
from ..shared import (BG_PORT_BASE, CPORT_BASE, SERVER_PORT_BASE, Collector, Live, deadline_ns, end_ns, first_time_ns,
                      flow_totals, iperf_server, launches, linux_cc, write_records)
from . import host, plan as planmod, trace
from .host import HostError, Procs, in_ns

#: The bottleneck's queue is sampled this often.
QUEUE_SAMPLE_NS = 100_000_000


class Traffic:
    """The traffic of one run and what it reported. `live` is the run's shared state (t0, the
    clients, the sampled ports and queues)."""

    def __init__(self, exp: Experiment, p: planmod.Plan, procs: Procs, live: Live):
        self.exp, self.p, self.procs, self.live = exp, p, procs, live
        self.results: dict[str, tuple[dict[str, Any], int]] = {}   # client -> (its -J report, launched)
        self.pings: dict[str, tuple[subprocess.Popen, int]] = {}   # probe -> (ping, launched)
        self.exits: dict[str, int] = {}   # client -> when its process exited (ns from t0): `time iperf3 -n`
        self.counters_before: dict[str, dict[str, int]] = {}
        self.counters_after: dict[str, dict[str, int]] = {}
        self.pcap: subprocess.Popen | None = None
        self.session: trace.TraceSession | None = None
        self.sampler: Sampler | None = None
        #: Called when the traffic's time zero is taken (the link emulators' schedules start).
        self.on_time_zero: Callable[[], None] | None = None

    def start(self, root: Path, instance: str, sessions: list[trace.TraceSession]) -> None:
        """Servers (one per flow and per background stream), the capture, and tracing."""
        exp, p = self.exp, self.p
        for i, f in enumerate(exp.flows):
            self.procs.start(in_ns(p.node_ns[f.to], iperf_server(SERVER_PORT_BASE + i)))
        for j, u in enumerate(exp.background):
            self.procs.start(in_ns(p.node_ns[u.to], iperf_server(BG_PORT_BASE + j, json_out=True)))
        time.sleep(0.5)
        self.counters_before = {f.name: netstat(p.node_ns[f.host]) for f in exp.flows}
        if exp.trace.pcap:
            # tcpdump -s 100 on the bottleneck's egress device, as the seeds capture (snaplen 100).
            ns, dev = p.capture.get(exp.bottleneck.label, p.egress[exp.bottleneck.label])
            self.pcap = self.procs.start(in_ns(ns, ["tcpdump", "-q", "-n", "-i", dev, "-s", "100", "-w",
                                                    str(self.live.work / "bottleneck.pcap")]))
            time.sleep(0.5)
        self.session = trace.TraceSession(root, instance, [CPORT_BASE + i for i in range(len(exp.flows))],
                                          exp.trace.sample_ns, self.live.work / "trace.txt")
        sessions.append(self.session)
        self.session.start()

    def run(self, progress: Callable[[int, int], None] | None) -> None:
        """Start the bottleneck sampler, every client at its start time (background first), and wait
        for the TCP clients and the pings to finish."""
        exp, p, live = self.exp, self.p, self.live
        live.t0 = t0 = time.monotonic_ns()
        live.t0_wall = time.time_ns()
        if self.on_time_zero:
            self.on_time_zero()
        self.sampler = Sampler(p, exp.bottleneck.label, exp.trace.interval_ns, live)
        self.sampler.start()
        ping_files = {pr.name: i + 1 for i, pr in enumerate(exp.probes)}
        for x in launches(exp, p.host_addr.__getitem__, lambda f: linux_cc(f.cc), bind=False):
            while time.monotonic_ns() - t0 < x.start_ns:
                time.sleep(min(0.05, (x.start_ns - (time.monotonic_ns() - t0)) / 1e9 + 0.0005))
            args = in_ns(p.node_ns[x.frm], x.words)
            if x.kind == "ping":  # its output goes to a file as it comes: a long run's lines would fill a pipe
                i = ping_files[x.name]
                with (live.work / f"ping-{i}.txt").open("w") as out, (live.work / f"ping-{i}.err").open("w") as err:
                    self.pings[x.name] = (self.procs.start(args, stdout=out, stderr=err), time.monotonic_ns() - t0)
            else:
                launched = time.monotonic_ns() - t0
                live.clients[x.name] = (self.procs.start(args), launched)
                self._watch_exit(x.name, live.clients[x.name][0], t0)
        # Until every TCP client and every ping (its last request plus the linger) has finished.
        waiting = [live.clients[f.name][0] for f in exp.flows] + [proc for proc, _ in self.pings.values()]
        end, deadline = end_ns(exp), deadline_ns(exp)
        while any(proc.poll() is None for proc in waiting):
            now = time.monotonic_ns() - t0
            if progress:
                progress(min(now, end), end)
            if now > deadline:
                raise HostError("iperf3 clients or pings did not finish within 60 s of their end")
            time.sleep(0.2)
        time.sleep(0.2)
        self.sampler.stop_ev.set()
        self.sampler.join(timeout=10)

    def _watch_exit(self, name: str, proc: subprocess.Popen, t0: int) -> None:
        """Note when the client exits, as `time` would (the loop below polls only every 0.2 s)."""
        def wait() -> None:
            proc.wait()
            self.exits[name] = time.monotonic_ns() - t0
        threading.Thread(target=wait, daemon=True, name=f"exit-{name}").start()

    def stop(self) -> Collector:
        """Tracing and capture stopped, each client's iperf3 -J report read, the counters after."""
        assert self.session is not None
        collector = self.session.stop()
        if self.pcap is not None:
            self.pcap.send_signal(signal.SIGINT)
            try:
                self.pcap.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                self.pcap.kill()
        for name, (proc, launched_ns) in self.live.clients.items():
            try:
                out, err = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
            try:
                self.results[name] = (json.loads(out), launched_ns)
            except ValueError:
                raise HostError(f"iperf3 client {name} gave no JSON: {err.strip()[:300]}") from None
            if "error" in self.results[name][0]:
                raise HostError(f"iperf3 client {name}: {self.results[name][0]['error']}")
        self.counters_after = {f.name: netstat(self.p.node_ns[f.host]) for f in self.exp.flows}
        return collector

    def counters(self) -> dict[str, dict[str, int]]:
        """Every kernel counter that moved in each sender's namespace (TcpExt and Tcp: HyStart's
        TCPHystartTrainDetect/DelayDetect and their cwnds, SACK recoveries, undo, TLP, ...), kept
        in netns/counters.json."""
        before, after = self.counters_before, self.counters_after
        counters = {f.name: {k: v - before[f.name].get(k, 0) for k, v in sorted(after[f.name].items())
                             if v != before[f.name].get(k, 0)} for f in self.exp.flows}
        (self.live.work / "counters.json").write_text(json.dumps(counters, indent=1) + "\n")
        return counters

    def records(self, directory: Path, counters: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
        """The run's tables from its raw logs (netns/trace.txt and each client's iperf3 -J report)
        and the sampler; per-flow totals from iperf3's end sums and the kernel's counters."""
        exp, live = self.exp, self.live
        logs = []
        trace_path = live.work / "trace.txt"
        first = first_time_ns(trace_path)
        if first is not None:  # the importer counts a trace's time from its first line
            logs.append(Log(trace_path, "tcp_probe", "trace", first - live.t0))
        for i, f in enumerate(exp.flows):
            data, launched = self.results[f.name]
            path = live.work / f"iperf3-{i + 1}.json"  # by index: a sender's name is the spec's, not a file name
            path.write_text(json.dumps(data, indent=1))
            logs.append(Log(path, "iperf3-json", f.name, launched))
        write_records(exp, directory, live, logs, self.p.host_addr.__getitem__, HostError)
        totals = [flow_totals(f, *self.results[f.name], counters[f.name]) for f in exp.flows]
        for f, t in zip(exp.flows, totals):
            if f.iperf3_control and f.name in self.exits:  # the real client, launch to exit
                t["iperf3_ns"] = self.exits[f.name] - self.results[f.name][1]
        return totals

    def probes(self, directory: Path) -> list[dict[str, Any]]:
        """Each probe's ping output (netns/ping-<i>.txt, written as it ran) into the `probes`
        table; its totals."""
        rows, out = [], []
        for i, pr in enumerate(self.exp.probes):
            if pr.name not in self.pings:  # no request before the run's end
                out.append({"name": pr.name, "sent": 0, "answered": 0, "lost": 0})
                continue
            proc, launched = self.pings[pr.name]
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            try:
                res = ping.parse((self.live.work / f"ping-{i + 1}.txt").read_text())
            except ping.PingOutputError as e:
                err = (self.live.work / f"ping-{i + 1}.err").read_text()
                raise HostError(f"ping for probe {pr.name}: {e}: {err.strip()[:300]}") from None
            rows += ping.rows(pr, res, launched, self.live.t0_wall)  # ping -D prints the wall clock
            out.append(ping.totals(pr, res))
        write_rows(directory, "probes", rows, COLUMNS["probes"])
        return out

    def udp_reports(self) -> list[dict[str, Any]]:
        """Each background stream's iperf3 -J report ({} where it gave none), kept in netns/."""
        reports = [self.results.get(f"udp{j}", ({}, 0))[0] for j in range(len(self.exp.background))]
        for u, data in zip(self.exp.background, reports):
            (self.live.work / f"iperf3-{u.name}.json").write_text(json.dumps(data, indent=1))
        return reports


class Sampler(threading.Thread):
    """Port counters every interval and the bottleneck queue every 100 ms, relative to t0, into
    `live`; at the end, the counters of the kernel's queue disciplines (`final_q`)."""

    def __init__(self, p: planmod.Plan, bott_label: str, interval_ns: int, live: Live):
        super().__init__(name="tcplab-sampler", daemon=True)
        self.p, self.bott, self.interval_ns, self.t0 = p, bott_label, interval_ns, live.t0
        self.stop_ev = threading.Event()
        self.ports, self.queues, self.max_queue = live.ports, live.queues, live.max_queue
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


def netstat(ns: str) -> dict[str, int]:
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

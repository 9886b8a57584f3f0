"""A remote run's traffic: servers, traces (tcp_probe on Linux, SIFTR2 or SIFTR on FreeBSD) and
captures on the lab's machines, every client at its start time on this machine's clock, and the
sampler of the shaped queues until the clients are done."""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ...model import Experiment, Flow
from ..shared import (BG_PORT_BASE, SERVER_PORT_BASE, Launch, Live, deadline_ns, end_ns, iperf_server, launches)
from . import freebsd, linux, plan as planmod
from .host import RemoteHost
from .lab import Lab, LabError
from .ssh import RemoteError

QUEUE_SAMPLE_S = 0.2
#: Between the end of set-up and the first client: every host's servers and traces are ready.
LEAD_S = 1.0
MARK = "tcplab-t0"


@dataclass
class RemoteLive(Live):
    """A remote run under way: besides what every kernel run keeps, where each Linux sender's trace
    marker lies on this machine's clock and why the sampler stopped, if it did."""

    marks: dict[str, int] = field(default_factory=dict)  # Linux sender -> its marker's local ns from t0
    sampler_error: str | None = None


def start_servers(exp: Experiment, lab: Lab, hosts: dict[str, RemoteHost]) -> None:
    for i, f in enumerate(exp.flows):
        hosts[f.to].start(f"server-{i + 1}", iperf_server(SERVER_PORT_BASE + i, lab.machines[f.to].address or ""))
    for j, u in enumerate(exp.background):
        hosts[u.to].start(f"udp-server-{j + 1}", iperf_server(BG_PORT_BASE + j, lab.machines[u.to].address or "", True))
    time.sleep(0.5)


def start_traces(exp: Experiment, lab: Lab, plans: dict[str, planmod.HostPlan], hosts: dict[str, RemoteHost],
                  run_id: str) -> dict[str, str]:
    """tcp_probe on Linux senders (a tracefs instance of the run's own, filtered to its flows'
    source ports, read by `cat trace_pipe` into the run's folder); SIFTR2 (else SIFTR) on FreeBSD
    senders, logging to the run's folder. Returns sender -> trace kind."""
    out: dict[str, str] = {}
    if not lab.trace:
        return out
    for n, p in plans.items():
        if not p.sender:
            continue
        h = hosts[n]
        if h.os == "linux":
            root = h.facts["tracefs"]
            inst = instance(run_id, n)
            h.journal.record(n, f"trace instance {inst}", ["sh", "-c", linux.TRACE_REMOVE, "sh", root, inst])
            h.guard_processes()  # undone first: `cat trace_pipe` keeps the instance busy
            h.ssh.sh(linux.TRACE_START, root, inst, str(min(p.cports)), str(max(p.cports)), what="start tcp_probe tracing")
            h.start("trace", ["cat", f"{root}/instances/{inst}/trace_pipe"])
            out[n] = "tcp_probe"
        else:
            have = set(h.facts.get("kld", [])) | set(h.facts.get("kldfile", []))
            module = "siftr2" if "siftr2" in have else "siftr"
            h.kld(module)
            port = SERVER_PORT_BASE + next(i for i, f in enumerate(exp.flows) if f.host == n) if len(p.cports) == 1 else 0
            for k, v in freebsd.siftr_sysctls(module, f"{h.workdir}/{module}.log", port).items():
                h.sysctl(k, v)
            h.sysctl(f"net.inet.{module}.enabled", "1")
            out[n] = module
    return out


def instance(run_id: str, node: str) -> str:
    """The run's tracefs instance on a host (named per node too: lab machines may share a kernel,
    as the namespaces of tests/test_remote.py do)."""
    return f"tcplab-{run_id}-{safe(node)}"


def stop_trace(h: RemoteHost, kind: str, run_id: str) -> None:
    if kind == "tcp_probe":
        h.ssh.sh('echo 0 > "$1/instances/$2/tracing_on"', h.facts["tracefs"], instance(run_id, h.node), what="stop tracing")
        time.sleep(0.3)  # what is still in the ring reaches cat
        h.stop(["trace"])
    else:
        h.ssh.run(freebsd.sysctl_set(f"net.inet.{kind}.enabled", "0"), what=f"stop {kind}")  # flushes its log (siftr(4))


def start_pcaps(exp: Experiment, lab: Lab, plans: dict[str, planmod.HostPlan], hosts: dict[str, RemoteHost]) -> list[str]:
    """tcpdump -s 100 on each sender's data interface, as the seeds capture (trace.pcap)."""
    out = []
    if not exp.trace.pcap:
        return out
    for n, p in plans.items():
        m = lab.machines[n]
        if p.sender:
            if not m.interface:
                raise LabError(lab.path, f"hosts.{n}.interface", "is required with trace.pcap: the data interface to capture on")
            hosts[n].start("pcap", ["tcpdump", "-q", "-n", "-i", m.interface, "-s", "100", "-w",
                                    f"{hosts[n].workdir}/sender.pcap", "tcp"])
            out.append(n)
    if out:
        time.sleep(0.5)
    for n in out:  # a capture that could not start says why, before any traffic
        if not hosts[n].running(["pcap"]):
            raise RemoteError(f"{n}: tcpdump did not start: {hosts[n].read('pcap.err').strip()[-300:]}")
    return out


def _mark(h: RemoteHost, run_id: str, live: RemoteLive) -> None:
    """A line in the sender's trace at a known local time: the trace's clock against ours (to
    within half the ssh round trip)."""
    a = time.monotonic_ns()
    h.ssh.sh(linux.TRACE_MARK, h.facts["tracefs"], instance(run_id, h.node), MARK, what="trace marker")
    live.marks[h.node] = (a + time.monotonic_ns()) // 2 - live.t0


def launch_and_wait(exp: Experiment, lab: Lab, plans: dict[str, planmod.HostPlan], hosts: dict[str, RemoteHost],
                     live: RemoteLive, traces: dict[str, str], run_id: str,
                     progress: Callable[[int, int], None] | None) -> None:
    """Every client at its start time on this machine's clock (each from its own thread, so one
    host's ssh round trip does not delay another's), then wait for the TCP clients by PID."""
    live.t0 = time.monotonic_ns() + int(LEAD_S * 1e9)
    live.t0_wall = time.time_ns() + int(LEAD_S * 1e9)
    for n, kind in traces.items():
        if kind == "tcp_probe":
            _mark(hosts[n], run_id, live)
    def kernel_cc(f: Flow) -> str:
        return (linux if hosts[f.host].os == "linux" else freebsd).kernel_cc(f.cc)

    todo = launches(exp, lambda n: lab.machines[n].address or "", kernel_cc, bind=True)
    errors: list[BaseException] = []

    def launch(x: Launch) -> None:
        name = f"ping-{x.name}" if x.kind == "ping" else x.name
        try:
            while (wait := live.t0 + x.start_ns - time.monotonic_ns()) > 0:
                time.sleep(min(0.05, wait / 1e9))
            a = time.monotonic_ns()
            hosts[x.frm].start(f"client-{safe(name)}", x.words)
            live.clients[name] = (hosts[x.frm], (a + time.monotonic_ns()) // 2 - live.t0)
        except BaseException as e:  # noqa: BLE001 - reported in the main thread
            errors.append(e)

    threads = [threading.Thread(target=launch, args=(x,), daemon=True) for x in todo]
    for t in threads:
        t.start()
    stop = threading.Event()
    sampler = threading.Thread(target=_sample, args=(exp, plans, hosts, live, stop), daemon=True)
    sampler.start()
    try:
        end, deadline = end_ns(exp), deadline_ns(exp)
        while True:
            if errors:
                raise errors[0]
            now = time.monotonic_ns() - live.t0
            if progress and now > 0:
                progress(min(now, end), end)
            if all(not t.is_alive() for t in threads) and not errors:
                by_host: dict[str, list[str]] = {}
                for f in exp.flows:
                    by_host.setdefault(f.host, []).append(f"client-{safe(f.name)}")
                for pr in exp.probes:  # and every ping's last reply (or its linger)
                    by_host.setdefault(pr.frm, []).append(f"client-ping-{safe(pr.name)}")
                if not any(hosts[n].running(names) for n, names in by_host.items()):
                    break
            if now > deadline:
                raise RemoteError("iperf3 clients or pings did not finish within 60 s of their end")
            time.sleep(0.5)
        bg_left = {}
        for j, u in enumerate(exp.background):
            bg_left.setdefault(u.frm, []).append(f"client-udp{j}")
        for n, names in bg_left.items():
            hosts[n].stop(names, "INT")  # iperf3 writes its -J report on SIGINT
    finally:
        stop.set()
        sampler.join(timeout=10)


def safe(name: str) -> str:
    """A sender's name as part of a remote file name."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def _qdisc_fifo(items: list[dict[str, Any]]) -> dict[str, int]:
    """Bytes, packets, drops and backlog of the queue under htb (pfifo, bfifo or netem)."""
    for q in items:
        if q.get("kind") in ("pfifo", "bfifo", "netem") and q.get("parent") == "1:1":
            return {"bytes": q.get("bytes", 0), "packets": q.get("packets", 0), "drops": q.get("drops", 0),
                    "backlog_packets": q.get("qlen", 0), "backlog_bytes": q.get("backlog", 0)}
    return {}


def _sample(exp: Experiment, plans: dict[str, planmod.HostPlan], hosts: dict[str, RemoteHost], live: RemoteLive,
            stop: threading.Event) -> None:
    """Every QUEUE_SAMPLE_S, the counters of each Linux shaped port (one ssh call per router):
    the bottleneck's backlog into `queues`, every port's bytes and drops per interval into `ports`."""
    shaped = {(n, s.dev): s.port_label for n, p in plans.items() if p.os == "linux" for s in p.shapers}
    if not shaped:
        return
    by_host: dict[str, list[str]] = {}
    for n, dev in shaped:
        by_host.setdefault(n, []).append(dev)
    bott = exp.bottleneck.label
    interval = exp.trace.interval_ns
    # Time-limited clients end together at their planned end; 200 ms later the queue has drained.
    ends = [f.start_ns + f.app.duration_ns for f in exp.flows if f.app.duration_ns]
    end_cut = max(ends) + 200_000_000 if ends else 1 << 62

    def snapshot() -> tuple[int, dict[str, dict[str, int]]]:
        out = {}
        for n, devs in by_host.items():
            text = hosts[n].ssh.sh('for d in "$@"; do tc -s -j qdisc show dev "$d"; echo; done', *devs, what="sample qdiscs",
                                   timeout=10).stdout
            for dev, line in zip(devs, [x for x in text.splitlines() if x.strip()]):
                out[shaped[(n, dev)]] = _qdisc_fifo(json.loads(line))
        return time.monotonic_ns() - live.t0, out

    try:
        # The first reading just before the common start, counted as at 0: nothing is launched
        # before it, so the counters at the start are these (the interval grid starts at 0, as
        # the clients' reports do).
        while (wait := live.t0 - 100_000_000 - time.monotonic_ns()) > 0 and not stop.is_set():
            stop.wait(wait / 1e9)
        _, snap = snapshot()
        prev = {k: (v.get("bytes", 0), v.get("packets", 0), v.get("drops", 0)) for k, v in snap.items()}
        prev_t, next_port = 0, min(interval, end_cut)
        while True:
            final = stop.is_set()
            t, snap = snapshot()
            if bott in snap and t >= 0:
                q = snap[bott]
                live.queues.append({"t_ns": t, "port": bott, "queue_packets": q.get("backlog_packets", 0),
                                    "queue_bytes": q.get("backlog_bytes", 0)})
                live.max_queue[bott] = max(live.max_queue.get(bott, 0), q.get("backlog_packets", 0))
            if t >= next_port or final:
                for label, v in snap.items():
                    b, pk, dr = v.get("bytes", 0), v.get("packets", 0), v.get("drops", 0)
                    pb, ppk, pdr = prev.get(label, (b, pk, dr))
                    live.ports.append({"t_start_ns": prev_t, "t_end_ns": t, "port": label, "tx_bytes": b - pb,
                                       "tx_packets": pk - ppk, "drops": dr - pdr, "losses": 0})
                    prev[label] = (b, pk, dr)
                prev_t, next_port = t, t + interval
                if prev_t < end_cut:  # an interval boundary just after the clients' end
                    next_port = min(next_port, end_cut)
            if final:
                break
            stop.wait(QUEUE_SAMPLE_S)
    except (RemoteError, ValueError) as e:
        live.sampler_error = str(e)

"""The remote backend: runs a spec on the user's own lab machines over ssh (LAB.toml maps the
spec's nodes to machines) and writes the same tables, summary and report as the other backends.

Order of a run: LAB.toml -> plan -> pre-flight on every host (read-only) -> journal -> configure
(sysctls, modules, shaping, routes; each change recorded first) -> path check (RTT, rate) ->
servers -> traces (tcp_probe / SIFTR2) -> clients at their start times on one clock -> sample the
shaped queues until done -> stop by PID -> fetch logs -> import them with the importers of
`tcplab import` -> provenance -> restore (always: on success, error, Ctrl-C and SIGTERM; what a
SIGKILLed run left, `tcplab remote restore LAB.toml` undoes from the journal).
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ...contract import COLUMNS
from ...model import Experiment, Flow, port_label
from ...store import write_rows
from ...logs import Log, LogError, read_logs
from ..netns import ping
from ..netns.plan import BG_PORT_BASE, CPORT_BASE, SERVER_PORT_BASE
from ..netns.trace import Collector, TraceParseError, parse_line
from . import freebsd, linux, plan as planmod, preflight
from .host import RemoteHost
from .journal import Journal, owner_alive, pending
from .lab import Lab, LabError, check_against, load_lab
from .preflight import PreflightFailed
from .ssh import RemoteError, Ssh, control_dir

__all__ = ["run", "restore", "RemoteError", "PreflightFailed", "LabError", "load_lab"]

QUEUE_SAMPLE_S = 0.2
#: Between the end of set-up and the first client: every host's servers and traces are ready.
LEAD_S = 1.0
MARK = "tcplab-t0"


class Interrupted(KeyboardInterrupt):
    """SIGTERM arrived; raised in the main thread so the hosts are restored, as for Ctrl-C."""


def _undo_runner(sshs: dict[str, Ssh]) -> Callable[[str, list[str]], tuple[bool, str]]:
    def run(host: str, words: list[str]) -> tuple[bool, str]:
        s = sshs.get(host)
        if s is None:
            return False, f"{host} is no longer in LAB.toml"
        try:
            p = s.run(words, check=False, timeout=60)
        except RemoteError as e:
            return False, str(e)
        return p.returncode == 0, (p.stderr.strip() or p.stdout.strip())[-300:]

    return run


def restore(lab_path: str | Path) -> tuple[list[str], list[str]]:
    """Undo what runs on this lab left (their journals), unless their process still runs.
    Returns (run ids restored, lines that could not be undone)."""
    lab = load_lab(lab_path)
    done, failed = [], []
    cdir = control_dir()
    sshs = {n: Ssh(lab, m, cdir) for n, m in lab.machines.items()}
    try:
        for path in pending(lab.journal_dir):
            if owner_alive(path):
                continue
            j = Journal.load(path)
            problems = j.undo(_undo_runner(sshs))
            failed += problems
            if not problems:
                done.append(j.run_id)
            old = Path(j.control_dir) if j.control_dir.startswith("/tmp/tcplab-ssh-") else None
            if old is not None and old.is_dir():  # the killed run's ssh masters (ControlPersist)
                for n, m in lab.machines.items():
                    Ssh(lab, m, old).close()
                shutil.rmtree(old, ignore_errors=True)
    finally:
        for s in sshs.values():
            s.close()
        shutil.rmtree(cdir, ignore_errors=True)
    return done, failed


@dataclass
class _Live:
    """A remote run under way: what its phases hand each other."""

    work: Path
    t0: int = 0                      # local monotonic ns of the common start
    t0_wall: int = 0                 # the same instant on this machine's wall clock
    clients: dict[str, tuple[RemoteHost, int]] = field(default_factory=dict)   # name -> (host, launched ns)
    marks: dict[str, int] = field(default_factory=dict)                         # Linux sender -> mark's local ns
    ports: list[dict[str, Any]] = field(default_factory=list)
    queues: list[dict[str, Any]] = field(default_factory=list)
    max_queue: dict[str, int] = field(default_factory=dict)
    sampler_error: str | None = None


def run(exp: Experiment, directory: Path, progress: Callable[[int, int], None] | None = None, *,
        testbed: str | Path | None = None) -> dict[str, Any]:
    """Run `exp` on the machines of LAB.toml `testbed`, writing tables into `directory`."""
    if testbed is None:
        raise LabError("--testbed", "", "the remote backend needs a LAB.toml (tcplab run SPEC --backend remote --testbed LAB.toml)")
    lab = load_lab(testbed)
    check_against(lab, exp)
    _refuse(exp)
    plans = planmod.build(exp, lab)
    run_id = "rt" + secrets.token_hex(3)
    cdir = control_dir()
    journal = Journal(lab.journal_dir / f"{run_id}.json", run_id, str(lab.path))
    sshs = {n: Ssh(lab, m, cdir) for n, m in lab.machines.items()}
    hosts = {n: RemoteHost(m, sshs[n], journal, run_id) for n, m in lab.machines.items()}
    old_term = signal.getsignal(signal.SIGTERM)

    def on_term(signum: int, frame: Any) -> None:
        raise Interrupted("SIGTERM")

    main = threading.current_thread() is threading.main_thread()
    if main:
        signal.signal(signal.SIGTERM, on_term)
    journal_made = False
    try:
        facts = preflight.run(hosts, plans, exp, lab)
        for n, h in hosts.items():
            h.facts = facts[n]
        journal = Journal.create(lab.journal_dir, run_id, str(lab.path), str(cdir))
        journal_made = True
        for h in hosts.values():
            h.journal = journal
        return _run(exp, directory, progress, lab, plans, hosts, run_id)
    finally:
        failed = journal.undo(_undo_runner(sshs)) if journal_made else []
        for s in sshs.values():
            s.close()
        shutil.rmtree(cdir, ignore_errors=True)
        if main:
            signal.signal(signal.SIGTERM, old_term)
        if failed:
            cause = sys.exc_info()[1]  # what stopped the run, if something did: said too
            why = f"the run stopped ({type(cause).__name__}: {cause}) and " if cause is not None else ""
            raise RemoteError(f"{why}could not restore everything (run `tcplab remote restore LAB.toml` once the "
                              "hosts are reachable): " + "; ".join(failed))


def _refuse(exp: Experiment) -> None:
    if exp.measure_cpu:
        raise RemoteError("measure.cpu times the simulator's TCP code; profile a real host with perf/pmcstat instead")
    for f in exp.flows:
        if ":" in f.cc:
            raise RemoteError(f"sender {f.name!r}: cc {f.cc!r} is a Python algorithm, which runs in the simulator only")


def _on_each(hosts: dict[str, RemoteHost], fn: Callable[[RemoteHost], Any]) -> dict[str, Any]:
    """fn on every host at once (one thread each); the first failure is raised after all ended."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, len(hosts))) as pool:
        futures = {n: pool.submit(fn, h) for n, h in hosts.items()}
    return {n: f.result() for n, f in futures.items()}


def _configure(exp: Experiment, lab: Lab, plans: dict[str, planmod.HostPlan], hosts: dict[str, RemoteHost]) -> None:
    """Every host's changes, hosts in parallel (the journal serialises its writes)."""
    _on_each(hosts, lambda h: _configure_host(plans[h.node], h))


def _configure_host(p: planmod.HostPlan, h: RemoteHost) -> None:
    h.make_workdir()
    for mod in p.klds:
        h.kld(mod)
    for k, v in p.sysctls_raise_only.items():
        h.sysctl(k, str(v), raise_only=True)
    for k, v in p.sysctls.items():
        h.sysctl(k, v)
    for s in p.shapers:
        h.shape(s, p.netem.get(s.dev))
    for dev, words in p.netem.items():
        if dev not in {s.dev for s in p.shapers}:
            h.netem_only(dev, words)
    for pipe in p.pipes:
        h.pipe(pipe)
    if p.nic:
        h.nic(h.m.interface or "", p.nic)
    for dst, cc, iw in p.routes:
        h.pin_route(dst, cc, iw)
    h.guard_processes()




def _ping_ms(h: RemoteHost, dst: str) -> float | None:
    out = h.ssh.run(["ping", "-n", "-c", "6", "-i", "0.2", dst], check=False, timeout=30, what=f"ping {dst}").stdout
    times = [float(x.split("=")[1]) for x in out.split() if x.startswith("time=")]
    return min(times[1:]) if len(times) > 1 else None


def _path_check(exp: Experiment, lab: Lab, hosts: dict[str, RemoteHost]) -> dict[str, Any]:
    """Each flow's RTT against the spec's, and the bottleneck's rate with a UDP flow at 1.5x it;
    beyond LAB.toml's tolerances the run stops here, before any traffic."""
    rtts, problems = [], []
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=len(exp.flows)) as pool:
        pings = [pool.submit(_ping_ms, hosts[f.host], lab.machines[f.to].address or "") for f in exp.flows]
    for f, ping in zip(exp.flows, pings):
        want = exp.rtt_ns(f.host, f.to) / 1e6
        got = ping.result()
        rtts.append({"flow": f.name, "configured_ms": round(want, 3), "measured_min_ms": got,
                     "error_ms": None if got is None else round(got - want, 3)})
        if got is None:
            problems.append(f"{f.host}: no ping reply from {f.to} ({lab.machines[f.to].address}) over the data plane: "
                            "check the testbed's addresses and routes (hosts.*.address)")
        elif abs(got - want) > lab.rtt_tolerance_ms:
            problems.append(f"{f.name}: path RTT {got:.3f} ms but the spec's is {want:.3f} ms (checks.rtt_tolerance_ms = "
                            f"{lab.rtt_tolerance_ms:g}): " + ("the testbed's delay is not as the spec says"
                                                                if lab.delay == "testbed" else "the delay tcplab added is off"))
    rate = _rate_check(exp, lab, hosts) if not problems else None
    if rate and isinstance(rate.get("error"), float) and abs(rate["error"]) > lab.rate_tolerance:
        problems.append(f"bottleneck {rate['port']}: UDP at 1.5x its rate got {rate['received_mbps']:.1f} Mbit/s of payload, "
                        f"{rate['error'] * 100:+.1f}% from the {rate['expected_mbps']:.1f} expected "
                        f"(checks.rate_tolerance = {lab.rate_tolerance:g})")
    elif rate and isinstance(rate.get("error"), str):
        problems.append(f"bottleneck {rate['port']}: rate check failed: {rate['error']}")
    if problems:
        raise PreflightFailed(problems, after_changes=True)
    return {"rtt_check": rtts, "rate_check": rate}


def _rate_check(exp: Experiment, lab: Lab, hosts: dict[str, RemoteHost]) -> dict[str, Any]:
    """UDP payload delivered at 1.5x the bottleneck's rate for 2 s: htb counts L2 frames (1514
    bytes for 1472 of payload), a switch line rate adds preamble, FCS and gap (1538)."""
    b = exp.bottleneck
    f0 = next(f for f in exp.flows if b in exp.route(f.host, f.to))
    src, dst = hosts[f0.host], hosts[f0.to]
    port = BG_PORT_BASE + 90
    dst.start("ratecheck-server", planmod.iperf_server(port, dst.m.address or ""))
    time.sleep(0.5)
    out = src.ssh.run(["iperf3", "-c", dst.m.address or "", "-B", src.m.address or "", "-p", str(port), "-u", "-b",
                       str(int(b.rate_bps * 1.5)), "-l", "1472", "-t", "2", "-J"], check=False, timeout=60,
                      what="rate check (iperf3 -u)").stdout
    frame = 1514 if lab.shaping == "tcplab" else 1538
    expected = b.rate_bps * 1472 / frame / 1e6
    try:
        rcv = json.loads(out)["end"]["sum_received"]
        got = rcv["bytes"] * 8 / rcv["seconds"] / 1e6
    except (ValueError, KeyError, ZeroDivisionError):
        return {"port": b.label, "error": f"iperf3 -u gave no report: {out[:200]}"}
    return {"port": b.label, "configured_mbps": b.rate_bps / 1e6, "expected_mbps": round(expected, 3),
            "received_mbps": round(got, 3), "frame_bytes": frame, "error": round(got / expected - 1, 4)}


def _run(exp: Experiment, directory: Path, progress: Callable[[int, int], None] | None, lab: Lab,
         plans: dict[str, planmod.HostPlan], hosts: dict[str, RemoteHost], run_id: str) -> dict[str, Any]:
    work = directory / "remote"
    work.mkdir()
    live = _Live(work)
    _configure(exp, lab, plans, hosts)
    path = _path_check(exp, lab, hosts) if lab.check_path else {"rtt_check": [], "rate_check": None}
    before = {n: _counters(h) for n, h in hosts.items() if plans[n].sender}
    _start_servers(exp, lab, hosts)
    traces = _start_traces(exp, lab, plans, hosts, run_id)
    pcaps = _start_pcaps(exp, lab, plans, hosts)
    _launch_and_wait(exp, lab, plans, hosts, live, traces, run_id, progress)
    for n, kind in traces.items():
        _stop_trace(hosts[n], kind, run_id)
    for n in pcaps:
        hosts[n].stop(["pcap"])
    after = {n: _counters(hosts[n]) for n in before}
    prov = _provenance(lab, hosts)
    logs = _fetch(exp, lab, hosts, live, traces, pcaps)
    flows = _write_records(exp, lab, directory, live, logs, before, after)
    probes = _fetch_pings(exp, directory, hosts, live)
    (work / "provenance.json").write_text(json.dumps(prov, indent=1) + "\n")
    ports = _port_totals(exp, live)
    udp = _udp_totals(exp, live)
    testbed = {"lab": str(lab.path), "run_id": run_id, "delay": lab.delay, "shaping": lab.shaping,
               "hosts": {n: {"os": h.os, "release": h.facts.get("release"), "clock_offset_ms": h.facts.get("clock_offset_ms"),
                             "clock_bound_ms": h.facts.get("clock_bound_ms"), "ssh_rtt_ms": h.facts.get("ssh_rtt_ms"),
                             **h.describe_changes()} for n, h in hosts.items()},
               "configured": planmod.describe(plans), "traces": traces, "sampler_error": live.sampler_error, **path}
    return {"backend": "remote", "end_ns": time.monotonic_ns() - live.t0, "flows": flows, "ports": ports, "udp": udp,
            "probes": probes, "testbed": testbed}


def _start_servers(exp: Experiment, lab: Lab, hosts: dict[str, RemoteHost]) -> None:
    for i, f in enumerate(exp.flows):
        hosts[f.to].start(f"server-{i + 1}", planmod.iperf_server(SERVER_PORT_BASE + i, lab.machines[f.to].address or ""))
    for j, u in enumerate(exp.background):
        hosts[u.to].start(f"udp-server-{j + 1}", planmod.iperf_server(BG_PORT_BASE + j, lab.machines[u.to].address or "", True))
    time.sleep(0.5)


def _start_traces(exp: Experiment, lab: Lab, plans: dict[str, planmod.HostPlan], hosts: dict[str, RemoteHost],
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
            inst = _instance(run_id, n)
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


def _instance(run_id: str, node: str) -> str:
    """The run's tracefs instance on a host (named per node too: lab machines may share a kernel,
    as the namespaces of tests/test_remote.py do)."""
    return f"tcplab-{run_id}-{_safe(node)}"


def _stop_trace(h: RemoteHost, kind: str, run_id: str) -> None:
    if kind == "tcp_probe":
        h.ssh.sh('echo 0 > "$1/instances/$2/tracing_on"', h.facts["tracefs"], _instance(run_id, h.node), what="stop tracing")
        time.sleep(0.3)  # what is still in the ring reaches cat
        h.stop(["trace"])
    else:
        h.ssh.run(freebsd.sysctl_set(f"net.inet.{kind}.enabled", "0"), what=f"stop {kind}")  # flushes its log (siftr(4))


def _start_pcaps(exp: Experiment, lab: Lab, plans: dict[str, planmod.HostPlan], hosts: dict[str, RemoteHost]) -> list[str]:
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


def _mark(h: RemoteHost, run_id: str, live: _Live) -> None:
    """A line in the sender's trace at a known local time: the trace's clock against ours (to
    within half the ssh round trip)."""
    a = time.monotonic_ns()
    h.ssh.sh(linux.TRACE_MARK, h.facts["tracefs"], _instance(run_id, h.node), MARK, what="trace marker")
    live.marks[h.node] = (a + time.monotonic_ns()) // 2 - live.t0


def _launch_and_wait(exp: Experiment, lab: Lab, plans: dict[str, planmod.HostPlan], hosts: dict[str, RemoteHost],
                     live: _Live, traces: dict[str, str], run_id: str,
                     progress: Callable[[int, int], None] | None) -> None:
    """Every client at its start time on this machine's clock (each from its own thread, so one
    host's ssh round trip does not delay another's), then wait for the TCP clients by PID."""
    live.t0 = time.monotonic_ns() + int(LEAD_S * 1e9)
    live.t0_wall = time.time_ns() + int(LEAD_S * 1e9)
    for n, kind in traces.items():
        if kind == "tcp_probe":
            _mark(hosts[n], run_id, live)
    launches: list[tuple[int, str, RemoteHost, list[str]]] = []
    for j, u in enumerate(exp.background):
        dur = max(0.1, (min(u.stop_ns, exp.stop_ns) - u.start_ns) / 1e9)
        launches.append((u.start_ns, f"udp{j}", hosts[u.frm], planmod.udp_client(
            j, lab.machines[u.frm].address or "", lab.machines[u.to].address or "", u.rate_bps, u.size_bytes, dur)))
    for i, f in enumerate(exp.flows):
        cc = (linux if hosts[f.host].os == "linux" else freebsd).kernel_cc(f.cc)
        launches.append((f.start_ns, f.name, hosts[f.host], planmod.iperf_client(
            f, i, lab.machines[f.host].address or "", lab.machines[f.to].address or "", exp.trace.interval_ns, cc)))
    for pr in exp.probes:  # iputils ping, as the netns backend runs it
        if n := ping.count(pr, exp.stop_ns):
            launches.append((pr.start_ns, f"ping-{pr.name}", hosts[pr.frm], ping.command(
                pr, lab.machines[pr.frm].address or "", lab.machines[pr.to].address or "", n)))
    errors: list[BaseException] = []

    def launch(start_ns: int, name: str, h: RemoteHost, words: list[str]) -> None:
        try:
            while (wait := live.t0 + start_ns - time.monotonic_ns()) > 0:
                time.sleep(min(0.05, wait / 1e9))
            a = time.monotonic_ns()
            h.start(f"client-{_safe(name)}", words)
            live.clients[name] = (h, (a + time.monotonic_ns()) // 2 - live.t0)
        except BaseException as e:  # noqa: BLE001 - reported in the main thread
            errors.append(e)

    threads = [threading.Thread(target=launch, args=x, daemon=True) for x in launches]
    for t in threads:
        t.start()
    stop = threading.Event()
    sampler = threading.Thread(target=_sample, args=(exp, plans, hosts, live, stop), daemon=True)
    sampler.start()
    try:
        end_ns = max(f.start_ns + (f.app.duration_ns or 0) for f in exp.flows)
        deadline = max([exp.stop_ns, end_ns] + [pr.stop_ns + ping.LINGER_S * 10**9 for pr in exp.probes]) + 60_000_000_000
        while True:
            if errors:
                raise errors[0]
            now = time.monotonic_ns() - live.t0
            if progress and now > 0:
                progress(min(now, end_ns), end_ns)
            if all(not t.is_alive() for t in threads) and not errors:
                by_host: dict[str, list[str]] = {}
                for f in exp.flows:
                    by_host.setdefault(f.host, []).append(f"client-{_safe(f.name)}")
                for pr in exp.probes:  # and every ping's last reply (or its linger)
                    by_host.setdefault(pr.frm, []).append(f"client-ping-{_safe(pr.name)}")
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


def _safe(name: str) -> str:
    """A sender's name as part of a remote file name."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def _qdisc_fifo(items: list[dict[str, Any]]) -> dict[str, int]:
    """Bytes, packets, drops and backlog of the queue under htb (pfifo, bfifo or netem)."""
    for q in items:
        if q.get("kind") in ("pfifo", "bfifo", "netem") and q.get("parent") == "1:1":
            return {"bytes": q.get("bytes", 0), "packets": q.get("packets", 0), "drops": q.get("drops", 0),
                    "backlog_packets": q.get("qlen", 0), "backlog_bytes": q.get("backlog", 0)}
    return {}


def _sample(exp: Experiment, plans: dict[str, planmod.HostPlan], hosts: dict[str, RemoteHost], live: _Live,
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


def _counters(h: RemoteHost) -> dict[str, int]:
    """TCP counters of a sender: Linux TcpExt/Tcp (/proc/net/netstat, snmp); FreeBSD the lines of
    `netstat -s -p tcp` that the summary uses (usr.bin/netstat/inet.c tcp_stats())."""
    vals: dict[str, int] = {}
    if h.os == "linux":
        text = h.ssh.sh("cat /proc/net/netstat /proc/net/snmp", what="read TCP counters").stdout
        lines = text.splitlines()
        for head, body in zip(lines[::2], lines[1::2]):
            prefix = head.split(":")[0]
            for k, v in zip(head.split()[1:], body.split()[1:]):
                if v.lstrip("-").isdigit():
                    vals[f"{prefix}.{k}"] = int(v)
        return vals
    text = h.ssh.run(["netstat", "-s", "-p", "tcp"], check=False, what="netstat -s").stdout
    return parse_freebsd_netstat(text)


def parse_freebsd_netstat(text: str) -> dict[str, int]:
    """SACK recovery episodes and retransmit timeouts from FreeBSD's `netstat -s -p tcp`."""
    vals = {}
    for line in text.splitlines():
        w = line.split()
        if not w or not w[0].isdigit():
            continue
        rest = " ".join(w[1:])
        if rest.startswith("SACK recovery episode"):
            vals["TcpExt.TCPSackRecovery"] = int(w[0])
        elif rest.startswith("retransmit timeout"):
            vals["TcpExt.TCPTimeouts"] = int(w[0])
    return vals


def _provenance(lab: Lab, hosts: dict[str, RemoteHost]) -> dict[str, Any]:
    """Per host: uname, modules, each data interface's offloads, rings and qdiscs, the sysctls
    tcplab set (old and new values) and pre-flight's facts."""
    out = {}
    for n, h in hosts.items():
        ifs = sorted({*(h.m.interfaces.values()), *([h.m.interface] if h.m.interface else [])})
        script = linux.PROVENANCE if h.os == "linux" else freebsd.PROVENANCE
        text = h.ssh.sh(script, *ifs, check=False, what="provenance", timeout=60).stdout
        out[n] = {"ssh": h.m.ssh, "facts": h.facts, "changes": h.describe_changes(), "report": text}
    return out


def _fetch(exp: Experiment, lab: Lab, hosts: dict[str, RemoteHost], live: _Live, traces: dict[str, str],
           pcaps: list[str]) -> list[Log]:
    """The run's logs, home: each client's iperf3 -J report, each sender's trace (tcp_probe
    reduced on the way as the netns backend does; SIFTR/SIFTR2 as written), the captures."""
    logs = []
    for i, f in enumerate(exp.flows):
        h, launched = live.clients[f.name]
        text = h.read(f"client-{_safe(f.name)}.out")
        path = live.work / f"iperf3-{i + 1}.json"
        path.write_text(text)
        try:
            data = json.loads(text)
        except ValueError:
            err = h.read(f"client-{_safe(f.name)}.err")
            raise RemoteError(f"{f.host}: iperf3 client {f.name} gave no JSON: {(err or text).strip()[:300]}") from None
        if "error" in data:
            raise RemoteError(f"{f.host}: iperf3 client {f.name}: {data['error']}")
        logs.append(Log(path, "iperf3-json", f.name, launched))
    for j, u in enumerate(exp.background):
        if f"udp{j}" in live.clients:
            h, _ = live.clients[f"udp{j}"]
            (live.work / f"iperf3-udp{j}.json").write_text(h.read(f"client-udp{j}.out"))
    for n, kind in traces.items():
        h = hosts[n]
        if kind == "tcp_probe":
            log = _fetch_tcp_probe(exp, h, live, plans_ports=[CPORT_BASE + i for i, f in enumerate(exp.flows) if f.host == n])
            if log:
                logs.append(log)
        else:
            path = live.work / f"{n}-{kind}.log"
            with path.open("wb") as out:
                h.ssh.fetch(f"{h.workdir}/{kind}.log", out)
            from ... import _native

            origin = _native.origin_ns(str(path), kind)
            off = int((h.facts.get("clock_offset_ms") or 0) * 1e6)
            logs.append(Log(path, kind, n, (origin - off - live.t0_wall) if origin is not None else 0, origin is not None))
    for n in pcaps:
        with (live.work / f"{n}.pcap").open("wb") as out:
            hosts[n].ssh.fetch(f"{hosts[n].workdir}/sender.pcap", out)
    return logs


def _fetch_pings(exp: Experiment, directory: Path, hosts: dict[str, RemoteHost], live: _Live) -> list[dict[str, Any]]:
    """Each probe's ping output (kept as remote/ping-<i>.txt) into the `probes` table, its -D
    times moved onto this machine's clock by the host's measured offset; the probes' totals."""
    rows, out = [], []
    for i, pr in enumerate(exp.probes):
        if f"ping-{pr.name}" not in live.clients:  # no request before the run's end
            out.append({"name": pr.name, "sent": 0, "answered": 0, "lost": 0})
            continue
        h, launched = live.clients[f"ping-{pr.name}"]
        text = h.read(f"client-ping-{_safe(pr.name)}.out")
        (live.work / f"ping-{i + 1}.txt").write_text(text)
        try:
            res = ping.parse(text)
        except ping.PingOutputError as e:
            err = h.read(f"client-ping-{_safe(pr.name)}.err")
            raise RemoteError(f"{pr.frm}: ping for probe {pr.name}: {e}: {err.strip()[:300]}") from None
        off = int((h.facts.get("clock_offset_ms") or 0) * 1e6)
        rows += ping.rows(pr, res, launched, live.t0_wall + off)
        out.append(ping.totals(pr, res))
    write_rows(directory, "probes", rows, COLUMNS["probes"])
    return out


_TS = re.compile(r"\s(\d+)\.(\d+):\s")


def _fetch_tcp_probe(exp: Experiment, h: RemoteHost, live: _Live, plans_ports: list[int]) -> Log | None:
    """Stream the raw trace through the same reduction as the netns backend (last line per flow
    per sampling interval, every state change) into remote/<host>-trace.txt; its place on the
    run's time axis from the marker line written at a known local time."""
    path = live.work / f"{h.node}-trace.txt"
    proc = h.ssh.stream(f"{h.workdir}/trace.out")
    mark_ns = None
    first_ns = None
    with path.open("w") as out:
        c = Collector(exp.trace.sample_ns, set(plans_ports), out)
        assert proc.stdout is not None
        for lineno, raw in enumerate(proc.stdout, 1):
            text = raw.decode("ascii", "replace")
            c.lines += 1
            if MARK in text and "tracing_mark_write" in text:
                m = _TS.search(text)
                if m:
                    mark_ns = int(m.group(1)) * 10**9 + int(m.group(2).ljust(9, "0")[:9])
                continue
            try:
                item = parse_line(text, lineno)
            except TraceParseError:
                c.bad_lines += 1
                continue
            if item is not None and item.sport in c.ports and first_ns is None:
                first_ns = item.t_ns
            c.add(item, text)
        c.finish()
    proc.wait(timeout=60)
    if first_ns is None:
        return None
    if mark_ns is None:
        raise RemoteError(f"{h.node}: the trace has no marker line; its clock cannot be placed on the run's")
    # The importer counts a trace's time from its first kept line: where that lies on our axis.
    kept_first = next((parse_line(x) for x in path.open() if parse_line(x)), None)
    first = kept_first.t_ns if kept_first else first_ns
    return Log(path, "tcp_probe", h.node, first - mark_ns + live.marks[h.node])


def _flow_names(exp: Experiment, lab: Lab) -> dict[str, str]:
    return {port_label(f"{lab.machines[f.host].address}:{CPORT_BASE + i}",
                       f"{lab.machines[f.to].address}:{SERVER_PORT_BASE + i}"): f.name for i, f in enumerate(exp.flows)}


def _write_records(exp: Experiment, lab: Lab, directory: Path, live: _Live, logs: list[Log],
                   before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
    names = _flow_names(exp, lab)
    try:
        read_logs(logs, directory, interval_ns=exp.trace.interval_ns, mss=min(f.mss for f in exp.flows), lenient=True,
                  rename=lambda n: names.get(n, n))
    except LogError as e:
        raise RemoteError(f"the run's own logs could not be read: {e}") from None
    for table, rows in (("ports", live.ports), ("queues", live.queues)):
        write_rows(directory, table, rows, COLUMNS[table])
    counters = {n: {k: v - before[n].get(k, 0) for k, v in after[n].items() if v != before[n].get(k, 0)} for n in after}
    (live.work / "counters.json").write_text(json.dumps(counters, indent=1, sort_keys=True) + "\n")
    out = []
    for i, f in enumerate(exp.flows):
        data = json.loads((live.work / f"iperf3-{i + 1}.json").read_text())
        out.append(_flow_totals(f, data, live.clients[f.name][1], counters.get(f.host, {})))
    return out


def _flow_totals(f: Flow, data: dict[str, Any], launched: int, counters: dict[str, int]) -> dict[str, Any]:
    """One flow's totals in the simulator's shape: iperf3's end sums and the sender host's
    counters (host-wide: exact when the host runs one flow, as in the seeds' testbeds)."""
    snd, rcv = data["end"]["streams"][0]["sender"], data["end"]["streams"][0]["receiver"]
    last = [iv["streams"][0] for iv in data.get("intervals", [])]
    return {
        "flow": f.name, "cc": f.cc, "stack": f.stack, "start_ns": launched,
        "bytes_written": int(snd["bytes"]), "bytes_delivered": int(rcv["bytes"]), "bytes_sent": int(snd["bytes"]),
        "retrans_segs": int(snd.get("retransmits", 0)),
        "recoveries": counters.get("TcpExt.TCPSackRecovery", 0) + counters.get("TcpExt.TCPRenoRecovery", 0),
        "rtos": counters.get("TcpExt.TCPTimeouts", 0),
        "completion_ns": None if f.app.kind == "time" else int(rcv["seconds"] * 1e9),
        "cwnd_bytes": int(last[-1].get("snd_cwnd", 0)) if last else 0,
        "srtt_ns": int(snd.get("mean_rtt", 0)) * 1000, "min_rtt_ns": int(snd.get("min_rtt", 0)) * 1000,
    }


def _port_totals(exp: Experiment, live: _Live) -> list[dict[str, Any]]:
    out = []
    for port in exp.ports:
        rows = [r for r in live.ports if r["port"] == port.label]
        out.append({"port": port.index, "from": port.frm, "to": port.to, "rate_bps": port.rate_bps,
                    "tx_bytes": sum(r["tx_bytes"] for r in rows), "tx_packets": sum(r["tx_packets"] for r in rows),
                    "drops": sum(r["drops"] for r in rows), "losses": 0,
                    "max_queue_packets": live.max_queue.get(port.label, 0)})
    return out


def _udp_totals(exp: Experiment, live: _Live) -> list[dict[str, Any]]:
    udp = []
    for j, u in enumerate(exp.background):
        p = live.work / f"iperf3-udp{j}.json"
        try:
            data = json.loads(p.read_text()) if p.is_file() else {}
        except ValueError:
            data = {}
        sent, recv = data.get("end", {}).get("sum_sent", {}), data.get("end", {}).get("sum_received", {})
        udp.append({"name": u.name, "sent": int(sent.get("packets", 0)),
                    "received": int(recv.get("packets", 0)) - int(recv.get("lost_packets", 0)),
                    "received_bytes": int(recv.get("bytes", 0))})
    return udp

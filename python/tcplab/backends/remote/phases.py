"""A remote run, in order: LAB.toml -> plan -> pre-flight on every host (read-only) -> journal ->
configure (sysctls, modules, shaping, routes; each change recorded first) -> path check (RTT,
rate) -> servers -> traces (tcp_probe / SIFTR2) -> clients at their start times on one clock ->
sample the shaped queues until done -> stop by PID (traffic.py) -> fetch logs -> import them with
the importers of `tcplab import` (fetch.py) -> provenance -> restore (always: on success, error,
Ctrl-C and SIGTERM; what a SIGKILLed run left, `tcplab remote restore LAB.toml` undoes from the
journal: restore.py)."""

from __future__ import annotations

import json
import secrets
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from ...model import Experiment
from ..shared import RATE_CHECK_PORT, iperf_server, port_totals, sigterm_interrupts, udp_totals
from . import fetch, plan as planmod, preflight, traffic
from .host import RemoteHost
from .journal import Journal
from .lab import Lab, check_against, load_lab
from .preflight import PreflightFailed
from .restore import undo_runner
from .ssh import RemoteError, Ssh, control_dir
from .traffic import RemoteLive


def run(exp: Experiment, directory: Path, progress: Callable[[int, int], None] | None, lab_path: Path) -> dict[str, Any]:
    """Run `exp` on the machines of LAB.toml `lab_path`, writing tables into `directory`."""
    lab = load_lab(lab_path)
    check_against(lab, exp)
    _refuse(exp)
    plans = planmod.build(exp, lab)
    run_id = "rt" + secrets.token_hex(3)
    cdir = control_dir()
    journal = Journal(lab.journal_dir / f"{run_id}.json", run_id, str(lab.path))
    sshs = {n: Ssh(lab, m, cdir) for n, m in lab.machines.items()}
    hosts = {n: RemoteHost(m, sshs[n], journal, run_id) for n, m in lab.machines.items()}
    with sigterm_interrupts():
        return _restoring(exp, directory, progress, lab, plans, run_id, journal, sshs, hosts, cdir)


def _restoring(exp: Experiment, directory: Path, progress: Callable[[int, int], None] | None, lab: Lab,
               plans: dict[str, planmod.HostPlan], run_id: str, journal: Journal, sshs: dict[str, Ssh],
               hosts: dict[str, RemoteHost], cdir: Path) -> dict[str, Any]:
    """Pre-flight, the journal, the run; then every host restored from the journal, whatever happened."""
    journal_made = False
    try:
        facts = preflight.run(hosts, plans, exp, lab)
        for n, h in hosts.items():
            h.facts = facts[n]
        journal = Journal.create(lab.journal_dir, run_id, str(lab.path), str(cdir))
        journal_made = True
        for h in hosts.values():
            h.journal = journal
        return _phases(exp, directory, progress, lab, plans, hosts, run_id)
    finally:
        failed = journal.undo(undo_runner(sshs)) if journal_made else []
        for s in sshs.values():
            s.close()
        shutil.rmtree(cdir, ignore_errors=True)
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
        if f.after is not None:
            raise RemoteError(f"flow {f.name!r} is a response that waits for its request (a request-response "
                              "workload); iperf3 cannot start on another flow's data: run it on the simulator")


def _on_each(hosts: dict[str, RemoteHost], fn: Callable[[RemoteHost], Any]) -> dict[str, Any]:
    """fn on every host at once (one thread each); the first failure is raised after all ended."""
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
    port = RATE_CHECK_PORT
    dst.start("ratecheck-server", iperf_server(port, dst.m.address or ""))
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


def _phases(exp: Experiment, directory: Path, progress: Callable[[int, int], None] | None, lab: Lab,
         plans: dict[str, planmod.HostPlan], hosts: dict[str, RemoteHost], run_id: str) -> dict[str, Any]:
    work = directory / "remote"
    work.mkdir()
    live = RemoteLive(work)
    _configure(exp, lab, plans, hosts)
    path = _path_check(exp, lab, hosts) if lab.check_path else {"rtt_check": [], "rate_check": None}
    before = {n: fetch.counters(h) for n, h in hosts.items() if plans[n].sender}
    traffic.start_servers(exp, lab, hosts)
    traces = traffic.start_traces(exp, lab, plans, hosts, run_id)
    pcaps = traffic.start_pcaps(exp, lab, plans, hosts)
    traffic.launch_and_wait(exp, lab, plans, hosts, live, traces, run_id, progress)
    for n, kind in traces.items():
        traffic.stop_trace(hosts[n], kind, run_id)
    for n in pcaps:
        hosts[n].stop(["pcap"])
    after = {n: fetch.counters(hosts[n]) for n in before}
    prov = fetch.provenance(lab, hosts)
    logs = fetch.logs(exp, lab, hosts, live, traces, pcaps)
    flows = fetch.records(exp, lab, directory, live, logs, before, after)
    probes = fetch.probes(exp, directory, hosts, live)
    (work / "provenance.json").write_text(json.dumps(prov, indent=1) + "\n")
    ports = port_totals(exp, live)
    udp = udp_totals(exp, fetch.udp_reports(exp, live))
    testbed = {"lab": str(lab.path), "run_id": run_id, "delay": lab.delay, "shaping": lab.shaping,
               "hosts": {n: {"os": h.os, "release": h.facts.get("release"), "clock_offset_ms": h.facts.get("clock_offset_ms"),
                             "clock_bound_ms": h.facts.get("clock_bound_ms"), "ssh_rtt_ms": h.facts.get("ssh_rtt_ms"),
                             **h.describe_changes()} for n, h in hosts.items()},
               "configured": planmod.describe(plans), "traces": traces, "sampler_error": live.sampler_error, **path}
    return {"backend": "remote", "end_ns": time.monotonic_ns() - live.t0, "flows": flows, "ports": ports, "udp": udp,
            "probes": probes, "testbed": testbed}

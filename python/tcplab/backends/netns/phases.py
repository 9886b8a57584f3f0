"""A netns run as a sequence of phases, each in its own module and owning its state:

    preflight and plan (host.py, kernel.py, plan.py) -> Network (network.py: namespaces, sysctls,
    routes, link emulators) -> SelfCheck.before (checks.py: RTT, rate) -> Traffic (traffic.py:
    servers, capture, trace, clients and pings at their start times, the sampler) -> SelfCheck.after
    -> records and totals (traffic.py, linkem.py, ../shared.py) -> the emulation section

and, whatever happened (success, error, Ctrl-C, SIGTERM), teardown (`_Machine`, host.teardown)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from ...model import Experiment
from ..shared import Live, linux_cc, port_totals, sigterm_interrupts, udp_totals
from . import host, kernel, linkem, plan as planmod, trace
from .checks import SelfCheck, cpu_jiffies, cpu_share
from .host import HostError, Procs
from .network import Network
from .traffic import Traffic


class _Machine:
    """What a run starts on this machine (processes, trace readers), stopped on exit, then the
    registered namespaces and trace instance removed."""

    def __init__(self, p: planmod.Plan, instance: str):
        self.p, self.instance = p, instance
        self.procs = Procs()
        self.sessions: list[trace.TraceSession] = []

    def __enter__(self) -> _Machine:
        return self

    def __exit__(self, *exc: Any) -> None:
        for session in self.sessions:
            session.close()  # the reader holds trace_pipe open, which keeps the instance alive
        self.procs.kill_all()
        left = host.teardown(self.p.run_id, self.p.namespaces, self.instance)
        if left:
            raise HostError(f"could not remove {', '.join(left)}; run `tcplab netns cleanup`")


def run(exp: Experiment, directory: Path, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Run `exp` on real Linux TCP, writing tables into `directory`. Returns totals in the
    simulator's shape plus an `emulation` section (what was built and the self-checks)."""
    info = kernel.preflight({linux_cc(f.cc) for f in exp.flows})
    feat = kernel.features()
    info["kernel_features"] = feat
    p = planmod.build(exp, planmod.new_run_id(), kernel.qdiscs_available(feat))
    root = host.tracefs()
    instance = f"tcplab-{p.run_id}"
    host.register(p, extra={"instance": instance})
    with sigterm_interrupts(), _Machine(p, instance) as machine:
        return _phases(exp, directory, progress, info, root, machine)


def _phases(exp: Experiment, directory: Path, progress: Callable[[int, int], None] | None, info: dict[str, Any],
            root: Path, machine: _Machine) -> dict[str, Any]:
    """Build, check, run the traffic, check again, then records and totals."""
    p = machine.p
    cpu_before = cpu_jiffies()
    live = Live(directory / "netns")
    live.work.mkdir()
    net = Network.build(exp, p, machine.procs, live.work, machine.instance)
    checks = SelfCheck(exp, p)
    checks.before(machine.procs)
    traffic = Traffic(exp, p, machine.procs, live)
    traffic.on_time_zero = net.mark_time_zero
    traffic.start(root, machine.instance, machine.sessions)
    traffic.run(progress)
    collector = traffic.stop()
    checks.after()
    linkem_stats = net.stop_linkems()
    live.queues += linkem.queue_rows(p, exp.bottleneck.label, linkem_stats, live.t0_wall)
    linkem.port_drops(p, live.ports, linkem_stats, live.t0_wall)
    cpu = cpu_share(cpu_before, cpu_jiffies())
    counters = traffic.counters()
    flows = traffic.records(directory, counters)
    probes = traffic.probes(directory)
    final_q = traffic.sampler.final_q if traffic.sampler else {}
    ports = port_totals(exp, live, linkem.losses_by_port(p, linkem_stats),
                        lambda label: linkem.aqm_totals(p, label, final_q, linkem_stats)
                        | linkem.impair_totals(p, label, linkem_stats))
    udp = udp_totals(exp, traffic.udp_reports())
    trace_error = traffic.session.error if traffic.session else None
    emulation = checks.section(info, net.sysctls, linkem_stats, cpu, ports, collector, trace_error, live.max_queue)
    return {"backend": "netns", "end_ns": time.monotonic_ns() - live.t0, "flows": flows, "ports": ports,
            "udp": udp, "probes": probes, "emulation": emulation}

"""The network a netns run builds on this machine, its first phase after the plan: namespaces,
veths, shaping and sysctls (host.build), each flow's route with its congestion control, and the
link emulators. Everything it creates is registered first and removed at teardown (host.py)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...model import Experiment
from ...spec.sysctl_values import written
from ..shared import linux_cc
from . import host, linkem, plan as planmod
from .host import Procs, in_ns


@dataclass
class Network:
    """What was built: the plan, the sysctls set in each namespace (they go with the namespace at
    teardown; no host-global value is changed) and the running link emulators."""

    plan: planmod.Plan
    sysctls: dict[str, dict[str, str]]
    linkems: list[tuple[planmod.Linkem, subprocess.Popen, Path]]

    @classmethod
    def build(cls, exp: Experiment, p: planmod.Plan, procs: Procs, work: Path, instance: str) -> Network:
        """Namespaces, sysctls, routes and link emulators (registered before they run)."""
        sysctls = namespace_sysctls(exp, p)
        host.build(p, sysctls)
        for cmd in route_congctl(exp, p):
            host.run(cmd)
        linkems = linkem.start(p, procs, exp.seed, work)
        host.register(p, pids=[x[1].pid for x in linkems], extra={"instance": instance})
        return cls(p, sysctls, linkems)

    def mark_time_zero(self) -> None:
        """The traffic starts now: the link emulators' schedules and traces begin."""
        linkem.mark_time_zero(self.linkems)

    def stop_linkems(self) -> list[dict[str, Any]]:
        """Stop the link emulators; their statistics."""
        return linkem.stop(self.linkems)


def namespace_sysctls(exp: Experiment, p: planmod.Plan) -> dict[str, dict[str, str]]:
    """Per-namespace sysctls: no cached metrics anywhere (or ssthresh carries over between runs);
    the flows' buffer maxima as tcp_wmem at senders and tcp_rmem at receivers, and a receiving
    host's tcp_adv_win_scale as given (kernels 6.6+ keep the sysctl but no longer read it)."""
    out: dict[str, dict[str, str]] = {ns: {"net.ipv4.tcp_no_metrics_save": "1"} for ns in p.node_ns.values()}
    for f in exp.flows:
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
        scale = exp.host_sysctls.get(f.to, {}).get("net.ipv4.tcp_adv_win_scale")
        if scale is not None:
            out[dst]["net.ipv4.tcp_adv_win_scale"] = str(scale)
    # Through the one sysctl checker (spec/sysctl_values.py), as the remote backend's plans.
    return {ns: {k: written(k, v) for k, v in values.items()} for ns, values in out.items()}


def route_congctl(exp: Experiment, p: planmod.Plan) -> list[list[str]]:
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
    for f in exp.flows:
        ns, dst = p.node_ns[f.host], p.host_addr[f.to]
        words = host.run(in_ns(ns, ["ip", "-o", "route", "get", dst])).stdout.split()
        how = [w for key in ("via", "dev") if key in words for w in (key, words[words.index(key) + 1])]
        cmds.append(in_ns(ns, ["ip", "route", "replace", f"{dst}/32", *how, "congctl", linux_cc(f.cc)]))
    return cmds

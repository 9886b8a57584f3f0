"""What the running kernel offers the netns backend: which queue disciplines `tc qdisc add`
accepts (tried in a scratch namespace of its own, removed again), which TCP congestion controls
are available or load on demand, and whether ECN is there. Recorded in every kernel run's
provenance and shown by `tcplab doctor`; the checks before a run (`preflight`).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from . import host
from .host import TOOLS, HostError
from .plan import new_run_id

#: The qdiscs tried, each with the smallest parameter set `tc` accepts for it.
QDISC_PROBES: dict[str, list[str]] = {
    "codel": ["codel"],
    "fq_codel": ["fq_codel"],
    "pie": ["pie"],
    "red": ["red", "limit", "400000", "avpkt", "1000", "bandwidth", "100mbit"],
    "fq": ["fq"],
    "netem": ["netem"],
    "dualpi2": ["dualpi2"],
    "htb": ["htb"],
    "pfifo": ["pfifo"],
    "bfifo": ["bfifo"],
}
#: What the backend does where the kernel lacks a qdisc.
WITHOUT = {
    "codel": "runs in tcplab-linkem", "fq_codel": "runs in tcplab-linkem", "pie": "runs in tcplab-linkem",
    "red": "runs in tcplab-linkem", "netem": "delay and loss run in tcplab-linkem",
    "fq": "TCP paces itself where it needs to (tcp_output.c tcp_needs_internal_pacing())",
    "dualpi2": "runs in tcplab-linkem",
}
#: Congestion controls tried (with the spec's own added by the caller).
CC_PROBES = ("reno", "cubic", "bbr", "dctcp", "vegas", "westwood", "htcp", "illinois", "bic", "hybla", "scalable",
             "highspeed", "yeah", "lp", "nv", "cdg", "veno", "prague")
AVAILABLE_CC = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")


def _run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=20)


def probe_qdiscs() -> dict[str, str]:
    """Each qdisc of QDISC_PROBES -> "yes" or why not (tc's message). Needs root; creates the
    namespace `tlXXXX-qdisc` with one veth pair, registered first like a run's (so `tcplab netns
    cleanup` finds it after a kill) and deleted whatever happens."""
    run_id = new_run_id()
    ns = f"{run_id}-qdisc"
    host.register(SimpleNamespace(run_id=run_id, namespaces=[ns]))
    out: dict[str, str] = {}
    try:
        if _run(["ip", "netns", "add", ns]).returncode != 0:
            return {k: "not tried (could not create a namespace)" for k in QDISC_PROBES}
        made = _run(["ip", "-n", ns, "link", "add", "name", "q0", "type", "veth", "peer", "name", "q1"])
        if made.returncode != 0:
            return {k: f"not tried (veth: {made.stderr.strip()})" for k in QDISC_PROBES}
        for kind, args in QDISC_PROBES.items():
            r = _run(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "q0", "root", *args])
            out[kind] = "yes" if r.returncode == 0 else (r.stderr.strip().splitlines() or ["failed"])[0]
            _run(["ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", "q0", "root"])
    finally:
        host.teardown(run_id, [ns])
    return out


def cc_loadable(name: str) -> bool:
    """Whether the kernel accepts `name` on a socket: setsockopt(TCP_CONGESTION) with
    CAP_NET_ADMIN loads a `tcp_<name>` module on demand (net/ipv4/tcp_cong.c
    tcp_set_congestion_control() -> tcp_ca_find_autoload()). No connection is made."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, name.encode())
        return True
    except OSError:
        return False
    finally:
        s.close()


def probe_ccs(load: bool) -> dict[str, Any]:
    """The available congestion controls, and with `load` which of CC_PROBES load on demand (a
    module that loads stays loaded, as after `iperf3 -C`); without it nothing is loaded."""
    before = AVAILABLE_CC.read_text().split()
    out: dict[str, Any] = {"available": before}
    if load:
        ok = {cc: cc in before or cc_loadable(cc) for cc in CC_PROBES}
        out |= {"loadable": sorted(k for k, v in ok.items() if v), "missing": sorted(k for k, v in ok.items() if not v)}
    return out


@lru_cache(maxsize=2)
def features(load_ccs: bool = False) -> dict[str, Any]:
    """The kernel's qdiscs, congestion controls and ECN support (probed once per process)."""
    ecn = Path("/proc/sys/net/ipv4/tcp_ecn")
    return {
        "kernel": os.uname().release,
        "qdiscs": probe_qdiscs(),
        "congestion_control": probe_ccs(load_ccs),
        "tcp_ecn_sysctl": ecn.is_file(),
    }


def qdiscs_available(feat: dict[str, Any]) -> set[str]:
    """The qdisc kinds `tc qdisc add` accepted."""
    return {k for k, v in feat["qdiscs"].items() if v == "yes"}


def preflight(ccs: set[str]) -> dict[str, object]:
    """Check root, tools, tracefs and the congestion-control modules; report host-global settings."""
    if os.geteuid() != 0:
        raise HostError("the netns backend needs root (network namespaces, qdiscs, tracefs): run it with sudo")
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        raise HostError(f"missing tools: {', '.join(missing)} (./scripts/install as root installs them)")
    avail = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    for cc in sorted(ccs):
        if cc not in avail and not cc_loadable(cc):  # loads tcp_<cc> on demand where the kernel has it
            raise HostError(f"congestion control {cc!r}: this kernel has no tcp_{cc} (not built in, no module "
                            f"to load); available: {', '.join(avail)}. Run it on the simulator (the default backend)")
    avail = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    allowed = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control").read_text().split()
    return {
        "kernel": os.uname().release,
        "tcp_available_congestion_control": avail,
        "tcp_allowed_congestion_control (host-global)": allowed,
        "netem": netem_available(),
    }


def netem_available() -> bool:
    """Whether this kernel has sch_netem (users' machines may; this project's CI machine does not)."""
    if Path("/sys/module/sch_netem").exists():
        return True
    if shutil.which("modprobe") is None:
        return False
    p = subprocess.run(["modprobe", "-n", "sch_netem"], capture_output=True)
    return p.returncode == 0

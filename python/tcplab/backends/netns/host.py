"""The system side of the netns backend: building a plan with ip/tc/ethtool/sysctl
(argument lists only, never a shell line), the registry of what a run created, and teardown.

Everything a run creates carries its run-unique prefix and is written to a registry file under
/run/tcplab before it is created, so `tcplab netns cleanup` can remove the leftovers of a killed
run — and only those: it deletes namespaces named in registry files, never by pattern alone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from .plan import Plan, tc_aqm_args

REGISTRY_DIR = Path(os.environ.get("TCPLAB_NETNS_REGISTRY", "/run/tcplab"))
TOOLS = ("ip", "tc", "ethtool", "iperf3", "ping")


class HostError(Exception):
    """A system step failed or a prerequisite is missing (the message says which and how to fix it)."""


def run(args: list[str], *, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
    """Run one command (an argument list) and return it; raise HostError naming it on failure."""
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise HostError(f"{args[0]} is not installed (run ./scripts/install as root)") from None
    except subprocess.TimeoutExpired:
        raise HostError(f"{' '.join(args)} did not finish in {timeout:g} s") from None
    if check and p.returncode != 0:
        raise HostError(f"{' '.join(args)} failed: {p.stderr.strip() or p.stdout.strip()}")
    return p


def in_ns(ns: str, args: list[str]) -> list[str]:
    return ["ip", "netns", "exec", ns, *args]


class Procs:
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


def tracefs() -> Path:
    """The tracefs mount point, mounting it if needed."""
    root = Path("/sys/kernel/tracing")
    if not (root / "events").is_dir():
        run(["mount", "-t", "tracefs", "nodev", str(root)])
    if not (root / "events/tcp/tcp_probe").is_dir():
        raise HostError("this kernel has no tcp:tcp_probe tracepoint")
    return root


# ---------------------------------------------------------------------------------------------
# Registry


def _registry(run_id: str) -> Path:
    return REGISTRY_DIR / f"{run_id}.json"


def register(plan: Plan, pids: list[int] | None = None, extra: dict | None = None) -> None:
    """Record (atomically) what run `plan.run_id` creates, before creating it."""
    REGISTRY_DIR.mkdir(parents=True, exist_ok=True)
    data = {"run_id": plan.run_id, "namespaces": plan.namespaces, "pids": pids or [], "created": time.time(),
            "owner_pid": os.getpid()} | (extra or {})
    tmp = _registry(plan.run_id).with_suffix(".partial")
    tmp.write_text(json.dumps(data))
    tmp.rename(_registry(plan.run_id))


def _kill_ns_processes(ns: str) -> None:
    p = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
    for pid in p.stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def teardown(run_id: str, namespaces: list[str], instance: str | None = None) -> list[str]:
    """Kill the processes in the run's namespaces, delete them (their veths go with them), remove
    its tracefs instance and registry file. Returns what could not be removed."""
    left = []
    existing = set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split())
    for ns in namespaces:
        if not ns.startswith(run_id) or ns not in existing:
            continue
        _kill_ns_processes(ns)
    for ns in namespaces:
        if ns.startswith(run_id) and ns in existing:
            if subprocess.run(["ip", "netns", "delete", ns], capture_output=True).returncode != 0:
                left.append(ns)
    if instance:
        inst = Path("/sys/kernel/tracing/instances") / instance
        if inst.exists():
            for ev in ("tcp/tcp_probe", "tcp/tcp_cong_state_set"):
                try:
                    (inst / "events" / ev / "enable").write_text("0")
                except OSError:
                    pass
            try:
                inst.rmdir()
            except OSError:
                left.append(str(inst))
    if not left:
        _registry(run_id).unlink(missing_ok=True)
    return left


def cleanup_leftovers() -> list[str]:
    """Tear down every run in the registry whose owner process is gone. Returns the run ids."""
    done = []
    if not REGISTRY_DIR.is_dir():
        return done
    for f in sorted(REGISTRY_DIR.glob("tl*.json")):
        try:
            data = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        owner = data.get("owner_pid")
        if owner and Path(f"/proc/{owner}").exists() and owner != os.getpid():
            continue  # still running
        for pid in data.get("pids", []):
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        teardown(data["run_id"], data["namespaces"], data.get("instance"))
        done.append(data["run_id"])
    return done


# ---------------------------------------------------------------------------------------------
# Building


def _offloads_off(ns: str, dev: str) -> None:
    # 64 KB GSO super-packets would count as one packet in a pfifo (shared/netns-notes.md); the
    # frames linkem forwards must carry real checksums.
    run(in_ns(ns, ["ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off", "tx", "off"]), check=False)


def build(plan: Plan, sysctls: dict[str, dict[str, str]]) -> None:
    """Create the namespaces, veths, addresses, routes, shaping and sysctls of `plan`."""
    for ns in plan.namespaces:
        run(["ip", "netns", "add", ns])
        run(in_ns(ns, ["ip", "link", "set", "dev", "lo", "up"]))
    for v in plan.veths:
        run(["ip", "link", "add", "name", v.a_dev, "netns", v.a_ns, "type", "veth", "peer", "name", v.b_dev,
             "netns", v.b_ns])
    for v in plan.veths:
        for ns, dev in ((v.a_ns, v.a_dev), (v.b_ns, v.b_dev)):
            _offloads_off(ns, dev)
            run(in_ns(ns, ["ip", "link", "set", "dev", dev, "up"]))
    for ns, dev, cidr in plan.addrs:
        run(in_ns(ns, ["ip", "addr", "add", cidr, "dev", dev]))
    for ns in plan.routers:
        run(in_ns(ns, ["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"]))
    for ns, values in sysctls.items():
        for key, value in values.items():
            run(in_ns(ns, ["sysctl", "-q", "-w", f"{key}={value}"]))
    for s in plan.shapers:
        rate = str(s.rate_bps)
        run(in_ns(s.ns, ["tc", "qdisc", "replace", "dev", s.dev, "root", "handle", "1:", "htb", "default", "1"]))
        run(in_ns(s.ns, ["tc", "class", "add", "dev", s.dev, "parent", "1:", "classid", "1:1", "htb", "rate", f"{rate}bit",
                         "ceil", f"{rate}bit", "burst", "3028", "cburst", "3028", "quantum", "1514"]))
        if s.aqm is not None:
            child = tc_aqm_args(s.aqm, s.rate_bps)
            qlen = s.aqm.get("limit_packets") or max(1, s.aqm.get("limit_bytes", 1514) // 1514)
        elif s.limit_packets is not None:
            child = ["pfifo", "limit", str(s.limit_packets)]
            qlen = s.limit_packets
        else:
            child = ["bfifo", "limit", str(s.limit_bytes)]
            qlen = max(1, (s.limit_bytes or 0) // 1514)
        run(in_ns(s.ns, ["tc", "qdisc", "add", "dev", s.dev, "parent", "1:1", "handle", "10:", *child]))
        run(in_ns(s.ns, ["ip", "link", "set", "dev", s.dev, "txqueuelen", str(qlen)]))
    for ns, dst, via in plan.routes:
        run(in_ns(ns, ["ip", "route", "add", dst, "via", via]))
    wait_carrier(plan)


def wait_carrier(plan: Plan, timeout_s: float = 5.0) -> None:
    """veths can report NO-CARRIER briefly after feature changes: wait until all are up."""
    deadline = time.monotonic() + timeout_s
    for v in plan.veths:
        for ns, dev in ((v.a_ns, v.a_dev), (v.b_ns, v.b_dev)):
            while True:
                out = run(in_ns(ns, ["ip", "-j", "link", "show", "dev", dev])).stdout
                if "NO-CARRIER" not in out and '"operstate":"DOWN"' not in out:
                    break
                if time.monotonic() > deadline:
                    raise HostError(f"{dev} in {ns} has no carrier after {timeout_s:g} s")
                time.sleep(0.05)


#: The qdiscs under htb whose counters are the port's queue.
CHILD_KINDS = ("pfifo", "bfifo", "codel", "fq_codel", "pie", "red")


def qdisc_stats(ns: str, dev: str) -> dict[str, int]:
    """Bytes, packets, drops, backlog (and an AQM's ECN marks) of the qdisc under htb on `dev`."""
    out = run(in_ns(ns, ["tc", "-s", "-j", "qdisc", "show", "dev", dev]), check=False).stdout
    try:
        items = json.loads(out or "[]")
    except ValueError:
        return {}
    for q in items:
        if q.get("kind") in CHILD_KINDS:
            # xstats, printed into the qdisc's JSON object (iproute2 tc/q_codel.c
            # codel_print_xstats() and its fq_codel/pie/red siblings): "ecn_mark" (and "ce_mark"
            # for ce_threshold marks), red's "marked". Not yet read from a kernel that has them.
            marks = q.get("ecn_mark", 0) + q.get("ce_mark", 0) + q.get("marked", 0)
            return {"bytes": q.get("bytes", 0), "packets": q.get("packets", 0), "drops": q.get("drops", 0),
                    "backlog_packets": q.get("qlen", 0), "backlog_bytes": q.get("backlog", 0), "ecn_marks": marks}
    return {}


def link_tx(ns: str) -> dict[str, tuple[int, int]]:
    """tx (bytes, packets) of every device in namespace `ns`."""
    out = run(in_ns(ns, ["ip", "-s", "-j", "link", "show"]), check=False).stdout
    try:
        items = json.loads(out or "[]")
    except ValueError:
        return {}
    res = {}
    for it in items:
        tx = it.get("stats64", {}).get("tx", {})
        res[it.get("ifname", "")] = (tx.get("bytes", 0), tx.get("packets", 0))
    return res

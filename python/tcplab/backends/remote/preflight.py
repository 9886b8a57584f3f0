"""Pre-flight: before anything changes on any machine, each one is asked (one ssh call, read-only)
for its OS and kernel, tools, tracing, CC algorithms and TCP stacks, and its clock is compared
with this machine's. Every problem becomes one line naming the host and the fix."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ...model import Experiment
from . import freebsd, linux
from .host import RemoteHost
from .lab import Lab
from .plan import HostPlan
from .ssh import RemoteError

INSTALL = {"linux": "apt-get install {0} (Debian/Ubuntu) or dnf install {0}", "freebsd": "pkg install {0}"}


#: Probe keys that may repeat (kept as lists in the facts); every other key is one value.
LISTS = ("kld", "kldfile", "ccmod", "cc_line", "stack_line")


class PreflightFailed(Exception):
    """Pre-flight found problems; `problems` holds one line each. `after_changes`: found by the
    path check, after configuration (the hosts are restored before the error is shown)."""

    def __init__(self, problems: list[str], after_changes: bool = False):
        self.problems = problems
        self.after_changes = after_changes
        super().__init__("\n".join(problems))


def clock_offset(h: RemoteHost, samples: int = 5) -> tuple[float, float, float]:
    """The machine's clock minus ours, in ms, by Cristian's method: the sample with the shortest
    round trip, its reading taken as at the midpoint; the bound is half that round trip (plus half
    a second where `date` prints whole seconds only). Returns (offset_ms, bound_ms, rtt_ms)."""
    best = None
    for _ in range(samples):
        t0 = time.time_ns()
        out = h.ssh.run(["date", "-u", "+%s.%N"], what="date", timeout=20).stdout.strip()
        t1 = time.time_ns()
        secs, _, frac = out.partition(".")
        if not secs.isdigit():
            raise RemoteError(f"{h.node}: `date -u +%s.%N` printed {out[:40]!r}, not a time")
        coarse = not frac.isdigit()
        remote_ns = int(secs) * 10**9 + (int(frac.ljust(9, "0")[:9]) if not coarse else 500_000_000)
        rtt = t1 - t0
        if best is None or rtt < best[2]:
            best = (remote_ns - (t0 + t1) // 2, rtt // 2 + (500_000_000 if coarse else 0), rtt)
    assert best is not None
    return best[0] / 1e6, best[1] / 1e6, best[2] / 1e6


def _probe(h: RemoteHost, ccs: list[str]) -> dict[str, list[str]]:
    script = linux.PROBE if h.os == "linux" else freebsd.PROBE
    return linux.parse_probe(h.ssh.sh(script, *ccs, what="pre-flight probe", timeout=30).stdout)


def _one(h: RemoteHost, p: HostPlan, exp: Experiment, lab: Lab) -> tuple[list[str], dict[str, Any]]:
    """One host's problems and facts."""
    n = h.node
    try:
        facts = _probe(h, sorted(p.ccs))
    except RemoteError as e:
        return [str(e) + " (check LAB.toml's ssh destination, your ssh config and that the host is up)"], {}
    got_os = (facts.get("os") or [""])[0]
    want = {"linux": "Linux", "freebsd": "FreeBSD"}[h.os]
    if got_os != want:
        return [f"{n}: LAB.toml says os = \"{h.os}\" but the machine runs {got_os or 'something unknown'} "
                f"(fix hosts.{n}.os or the ssh destination)"], facts
    problems = []
    if (facts.get("uid") or [""])[0] != "0":
        problems.append(f"{n}: commands run as uid {(facts.get('uid') or ['?'])[0]}, not root: log in as root or set "
                        f"hosts.{n}.sudo = true (with passwordless sudo for that user)")
    traffic = p.sender or any(f.to == n for f in exp.flows) or any(n in (b.frm, b.to) for b in exp.background)
    if traffic and not (facts.get("iperf3") or [""])[0]:
        problems.append(f"{n}: iperf3 is not installed (not on the PATH of an ssh session): "
                        + INSTALL[h.os].format("iperf3"))
    if any(pr.frm == n for pr in exp.probes) and not (facts.get("ping") or [""])[0]:
        problems.append(f"{n}: ping is not installed (not on the PATH of an ssh session), which its probe needs: "
                        + INSTALL[h.os].format("iputils-ping"))
    if exp.trace.pcap and p.sender and not (facts.get("tcpdump") or [""])[0]:
        problems.append(f"{n}: tcpdump is not installed and the spec asks for a capture (trace.pcap): "
                        + INSTALL[h.os].format("tcpdump"))
    if h.os == "linux":
        avail = set(" ".join(facts.get("cc", [])).split()) | set(facts.get("ccmod", []))
        if p.sender and lab.trace and not facts.get("tracefs"):
            problems.append(f"{n}: no tcp:tcp_probe tracepoint in tracefs (mount it: mount -t tracefs nodev "
                            "/sys/kernel/tracing; the kernel needs CONFIG_FTRACE), or set checks.trace = false to run without cwnd traces")
        if (p.shapers or p.netem) and not (facts.get("tc") or [""])[0]:
            problems.append(f"{n}: tc is not installed: " + INSTALL["linux"].format("iproute2"))
        if any(p.netem.values()) and not facts.get("netem"):
            problems.append(f"{n}: this kernel has no netem (sch_netem), which testbed.delay = \"tcplab\" needs here: "
                            "install the kernel's extra modules or let the testbed add the delay (testbed.delay = \"testbed\")")
    else:
        avail = set(freebsd.parse_table_names(facts.get("cc_line", []), "CCmod")) | set(facts.get("ccmod", []))
        stacks = set(freebsd.parse_table_names(facts.get("stack_line", []), "Stack"))
        kld, files = set(facts.get("kld", [])), set(facts.get("kldfile", []))
        if "tcp_rack" in p.klds and "rack" not in stacks and "tcp_rack" not in files:
            problems.append(f"{n}: the RACK stack is neither loaded nor installed (no tcp_rack.ko): build it "
                            "(options TCPHPTS, WITH_EXTRA_TCP_STACKS=1) or run this sender on the freebsd stack")
        if p.sender and lab.trace and not ({"siftr2", "siftr"} & (kld | files)):
            problems.append(f"{n}: neither siftr2 nor siftr is loaded or installed: kldload siftr (siftr(4)) or build "
                            "siftr2 (github.com/ccfbsd/siftr2), or set checks.trace = false")
        if p.pipes and "ipfw" not in kld:
            problems.append(f"{n}: ipfw is not loaded; tcplab will not load it (its default rule denies all traffic, "
                            "ssh included): load it with net.inet.ip.fw.default_to_accept=1 in /boot/loader.conf, "
                            "or set testbed.shaping/delay = \"testbed\"")
    for cc in sorted(p.ccs):
        if cc not in avail:
            problems.append(f"{n}: congestion control {cc!r} is not available (has: {', '.join(sorted(avail)) or 'none'}): "
                            + ("load its module (modprobe tcp_" + cc + ")" if h.os == "linux" else f"kldload cc_{cc}")
                            + " or choose another cc in the spec")
    facts_out: dict[str, Any] = {k: (v if k in LISTS else v[0]) for k, v in facts.items()}
    return problems, facts_out


def run(hosts: dict[str, RemoteHost], plans: dict[str, HostPlan], exp: Experiment, lab: Lab) -> dict[str, Any]:
    """Check every host (in parallel); raise PreflightFailed with all problems, else the facts."""
    problems: list[str] = []
    facts: dict[str, Any] = {}
    with ThreadPoolExecutor(max_workers=max(1, len(hosts))) as pool:
        done = {n: pool.submit(_one, h, plans[n], exp, lab) for n, h in hosts.items()}
        results = {n: f.result() for n, f in done.items()}
    for n in hosts:
        probs, f = results[n]
        problems += probs
        facts[n] = f
    reachable = [n for n in hosts if facts[n]]
    if not problems:
        with ThreadPoolExecutor(max_workers=max(1, len(reachable))) as pool:
            clocks = {n: pool.submit(clock_offset, hosts[n]) for n in reachable}
        for n in reachable:
            try:
                off, bound, rtt = clocks[n].result()
            except RemoteError as e:
                problems.append(str(e))
                continue
            facts[n]["clock_offset_ms"] = round(off, 3)
            facts[n]["clock_bound_ms"] = round(bound, 3)
            facts[n]["ssh_rtt_ms"] = round(rtt, 3)
            if abs(off) - bound > lab.max_clock_offset_ms:
                problems.append(f"{n}: clock is {off:+.1f} ms off this machine's (±{bound:.1f} ms), more than "
                                f"checks.max_clock_offset_ms = {lab.max_clock_offset_ms:g}: synchronise it (chrony, ntpd, "
                                "ptp4l) so the hosts' logs line up")
    if problems:
        raise PreflightFailed(problems)
    return facts

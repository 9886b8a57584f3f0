"""The netns run's link emulators: a tcplab-linkem process per emulated link (delay, loss and,
where the kernel has no qdisc for it, the queue discipline), their start and stop, and their
statistics as the run's queue samples, drops and queue-discipline totals."""

from __future__ import annotations

import bisect
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from ...model import port_label
from . import plan as planmod
from .host import HostError, Procs, in_ns


def linkem_command() -> list[str]:
    """How to start the link emulator: $TCPLAB_LINKEM (a tcplab-linkem binary, e.g. a debug
    build), else this interpreter running the copy inside the native module (`python -m
    tcplab.linkem`), which every install has, a wheel's included."""
    env = os.environ.get("TCPLAB_LINKEM")
    if env:
        return [env]
    return [sys.executable, "-m", "tcplab.linkem"]


def start(p: planmod.Plan, procs: Procs, seed: int, stats_dir: Path) -> list[tuple[planmod.Linkem, subprocess.Popen, Path]]:
    exe = linkem_command()
    out = []
    for i, e in enumerate(p.linkems):
        stats = stats_dir / f"linkem-{i}.json"
        args = in_ns(e.ns, [*exe, "--a", e.dev_a, "--b", e.dev_b, "--delay-ab-us", str(e.delay_ab_ns // 1000),
                            "--delay-ba-us", str(e.delay_ba_ns // 1000), "--loss-ab", repr(e.loss_ab),
                            "--loss-ba", repr(e.loss_ba), *aqm_args(e, stats_dir / f"linkem-{i}"), "--seed", str(seed + i),
                            "--stats", str(stats)])
        proc = procs.start(args)
        line = proc.stdout.readline() if proc.stdout else ""
        if line.strip() != "ready":
            err = proc.stderr.read() if proc.stderr and proc.poll() is not None else ""
            raise HostError(f"tcplab-linkem in {e.ns} did not start: {err.strip() or line.strip()}")
        out.append((e, proc, stats))
    return out


def aqm_args(e: planmod.Linkem, files: Path | None = None) -> list[str]:
    """The rate and discipline of each direction whose queue discipline linkem runs (the resolved
    aqm dict is the JSON that crates/tcplab-aqm's AqmConfig reads, as the simulator's does), and
    of each impaired direction its rate, packet limit and impairments (tcplab-impair's LinkImpair
    JSON; written to `files`-ab.json / -ba.json and passed as @FILE when given: a trace's JSON is
    longer than one argument may be)."""
    out = []
    for d in ("ab", "ba"):
        aqm, imp = getattr(e, f"aqm_{d}"), getattr(e, f"impair_{d}")
        if aqm is not None:
            out += [f"--rate-{d}-bps", str(getattr(e, f"rate_{d}_bps")), f"--aqm-{d}", json.dumps(aqm)]
        if imp is not None:
            # An impaired direction's wire and queue are linkem's (plan.py), as in the simulator.
            text = json.dumps(imp)
            if files is not None:
                path = files.with_name(f"{files.name}-{d}.json")
                path.write_text(text)
                text = f"@{path}"
            out += [f"--rate-{d}-bps", str(getattr(e, f"rate_{d}_bps")), f"--limit-{d}", str(getattr(e, f"limit_{d}")),
                    f"--impair-{d}", text]
    return out


def mark_time_zero(items: list[tuple[planmod.Linkem, subprocess.Popen, Path]]) -> None:
    """The run's traffic starts now: schedules and traces count from here (SIGUSR1)."""
    for e, proc, _ in items:
        if (e.impair_ab or e.impair_ba) and proc.poll() is None:
            proc.send_signal(signal.SIGUSR1)


def stop(items: list[tuple[planmod.Linkem, subprocess.Popen, Path]]) -> list[dict[str, Any]]:
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


def port_stats(p: planmod.Plan, label: str, linkem_stats: list[dict[str, Any]], what: str = "aqm") -> dict[str, Any] | None:
    """linkem's stats of the direction that is port `label`, if linkem runs its discipline (or,
    with `what` = "impair", its impairments)."""
    for e, st in zip(p.linkems, linkem_stats):
        a, b = e.link_label.split("<->")
        for d, port in (("ab", port_label(a, b)), ("ba", port_label(b, a))):
            if port == label and getattr(e, f"{what}_{d}") is not None:
                return st.get(d)
    return None


def impair_totals(p: planmod.Plan, label: str, linkem_stats: list[dict[str, Any]]) -> dict[str, Any]:
    """An impaired port's totals in the simulator's shape: its queue's drops (linkem's FIFO) and
    what netem did (`impair`: losses, duplicates, reorders, corruptions, the first decisions)."""
    st = port_stats(p, label, linkem_stats, "impair")
    if st is None:
        return {}
    return {"drops": st.get("queue_drops", 0), "impair": st.get("impair") or {}}


def queue_rows(p: planmod.Plan, label: str, linkem_stats: list[dict[str, Any]],
                       t0_real_ns: int) -> list[dict[str, Any]]:
    """The bottleneck's queue samples as linkem took them (CLOCK_REALTIME, every 100 ms), on
    the run's clock."""
    st = port_stats(p, label, linkem_stats)
    samples = ((st or {}).get("discipline") or {}).get("queue_samples", [])
    return [{"t_ns": x[0] - t0_real_ns, "port": label, "queue_packets": x[1], "queue_bytes": x[2]}
            for x in samples if x[0] >= t0_real_ns]


def port_drops(p: planmod.Plan, rows: list[dict[str, Any]], linkem_stats: list[dict[str, Any]],
                       t0_real_ns: int) -> None:
    """The per-interval drops of ports whose discipline linkem runs (the sampler reads htb's
    counters, which these ports do not have): the discipline's drop count at each interval's
    ends, from linkem's 100 ms samples (the final total after the last)."""
    for label in p.aqm_where:
        disc = (port_stats(p, label, linkem_stats) or {}).get("discipline")
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


def aqm_totals(p: planmod.Plan, label: str, final_q: dict[str, dict[str, int]], linkem_stats: list[dict[str, Any]]) -> dict[str, Any]:
    """A port's queue discipline totals in the simulator's shape: drops, ECN marks and, where
    linkem runs it, the per-frame sojourn percentiles (arrival to start of transmission)."""
    if label not in p.aqm_where:
        return {}
    st = port_stats(p, label, linkem_stats)
    if st is not None:
        disc = st.get("discipline") or {}
        soj = disc.get("sojourn_us", {})
        return {"drops": disc.get("drops", 0), "aqm_drops": disc.get("drops", 0), "ecn_marks": disc.get("ecn_marks", 0),
                "max_queue_packets": disc.get("max_queue_frames", 0),
                "queue_delay": {"packets": soj.get("frames", 0),
                                **{f"{k}_ns": int(soj.get(k, 0) * 1000) for k in ("mean", "p50", "p95", "p99", "max")}}}
    q = final_q.get(label, {})  # the kernel's qdisc: its own counters
    return {"aqm_drops": q.get("drops", 0), "ecn_marks": q.get("ecn_marks", 0)}


def losses_by_port(p: planmod.Plan, linkem_stats: list[dict[str, Any]]) -> dict[str, int]:
    """Random losses (the links' `loss`) each port's linkem direction made."""
    out: dict[str, int] = {}
    for e, st in zip(p.linkems, linkem_stats):
        a, b = e.link_label.split("<->")
        out[port_label(a, b)] = st.get("ab", {}).get("lost", 0)
        out[port_label(b, a)] = st.get("ba", {}).get("lost", 0)
    return out

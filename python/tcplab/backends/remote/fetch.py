"""What a remote run brings home once its clients are done: the TCP counters and provenance of
each host, the clients' iperf3 reports, the traces (tcp_probe reduced on the way as the netns
backend's are; SIFTR/SIFTR2 as written), the captures and the pings, and the records and totals
made from them with the importers of `tcplab import`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..._native import origin_ns
from ...contract import COLUMNS
from ...logs import Log
from ...model import Experiment
from ...store import write_rows
from .. import ping
from ..shared import CPORT_BASE, Collector, TraceParseError, first_time_ns, flow_totals, parse_line, write_records
from . import freebsd, linux
from .host import RemoteHost
from .lab import Lab
from .ssh import RemoteError
from .traffic import MARK, RemoteLive, safe


def counters(h: RemoteHost) -> dict[str, int]:
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


def provenance(lab: Lab, hosts: dict[str, RemoteHost]) -> dict[str, Any]:
    """Per host: uname, modules, each data interface's offloads, rings and qdiscs, the sysctls
    tcplab set (old and new values) and pre-flight's facts."""
    out = {}
    for n, h in hosts.items():
        ifs = sorted({*(h.m.interfaces.values()), *([h.m.interface] if h.m.interface else [])})
        script = linux.PROVENANCE if h.os == "linux" else freebsd.PROVENANCE
        text = h.ssh.sh(script, *ifs, check=False, what="provenance", timeout=60).stdout
        out[n] = {"ssh": h.m.ssh, "facts": h.facts, "changes": h.describe_changes(), "report": text}
    return out


def logs(exp: Experiment, lab: Lab, hosts: dict[str, RemoteHost], live: RemoteLive, traces: dict[str, str],
           pcaps: list[str]) -> list[Log]:
    """The run's logs, home: each client's iperf3 -J report, each sender's trace (tcp_probe
    reduced on the way as the netns backend does; SIFTR/SIFTR2 as written), the captures."""
    logs = []
    for i, f in enumerate(exp.flows):
        h, launched = live.clients[f.name]
        text = h.read(f"client-{safe(f.name)}.out")
        path = live.work / f"iperf3-{i + 1}.json"
        path.write_text(text)
        try:
            data = json.loads(text)
        except ValueError:
            err = h.read(f"client-{safe(f.name)}.err")
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
            log = _tcp_probe(exp, h, live, plans_ports=[CPORT_BASE + i for i, f in enumerate(exp.flows) if f.host == n])
            if log:
                logs.append(log)
        else:
            path = live.work / f"{n}-{kind}.log"
            with path.open("wb") as out:
                h.ssh.fetch(f"{h.workdir}/{kind}.log", out)
            origin = origin_ns(str(path), kind)
            off = int((h.facts.get("clock_offset_ms") or 0) * 1e6)
            logs.append(Log(path, kind, n, (origin - off - live.t0_wall) if origin is not None else 0, origin is not None))
    for n in pcaps:
        with (live.work / f"{n}.pcap").open("wb") as out:
            hosts[n].ssh.fetch(f"{hosts[n].workdir}/sender.pcap", out)
    return logs


def probes(exp: Experiment, directory: Path, hosts: dict[str, RemoteHost], live: RemoteLive) -> list[dict[str, Any]]:
    """Each probe's ping output (kept as remote/ping-<i>.txt) into the `probes` table, its -D
    times moved onto this machine's clock by the host's measured offset; the probes' totals."""
    rows, out = [], []
    for i, pr in enumerate(exp.probes):
        if f"ping-{pr.name}" not in live.clients:  # no request before the run's end
            out.append({"name": pr.name, "sent": 0, "answered": 0, "lost": 0})
            continue
        h, launched = live.clients[f"ping-{pr.name}"]
        text = h.read(f"client-ping-{safe(pr.name)}.out")
        (live.work / f"ping-{i + 1}.txt").write_text(text)
        try:
            res = ping.parse(text)
        except ping.PingOutputError as e:
            err = h.read(f"client-ping-{safe(pr.name)}.err")
            raise RemoteError(f"{pr.frm}: ping for probe {pr.name}: {e}: {err.strip()[:300]}") from None
        off = int((h.facts.get("clock_offset_ms") or 0) * 1e6)
        rows += ping.rows(pr, res, launched, live.t0_wall + off)
        out.append(ping.totals(pr, res))
    write_rows(directory, "probes", rows, COLUMNS["probes"])
    return out


_TS = re.compile(r"\s(\d+)\.(\d+):\s")


def _tcp_probe(exp: Experiment, h: RemoteHost, live: RemoteLive, plans_ports: list[int]) -> Log | None:
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
    kept_first = first_time_ns(path)
    first = kept_first if kept_first is not None else first_ns
    return Log(path, "tcp_probe", h.node, first - mark_ns + live.marks[h.node])


def records(exp: Experiment, lab: Lab, directory: Path, live: RemoteLive, logs: list[Log],
            before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
    """The run's tables from the logs brought home and the sampler (../shared.py); each flow's
    totals from its iperf3 report and the counters that moved on its sender (remote/counters.json)."""
    write_records(exp, directory, live, logs, lambda n: lab.machines[n].address or "", RemoteError)
    counters = {n: {k: v - before[n].get(k, 0) for k, v in after[n].items() if v != before[n].get(k, 0)} for n in after}
    (live.work / "counters.json").write_text(json.dumps(counters, indent=1, sort_keys=True) + "\n")
    out = []
    for i, f in enumerate(exp.flows):
        data = json.loads((live.work / f"iperf3-{i + 1}.json").read_text())
        out.append(flow_totals(f, data, live.clients[f.name][1], counters.get(f.host, {})))
    return out


def udp_reports(exp: Experiment, live: RemoteLive) -> list[dict[str, Any]]:
    """Each background stream's iperf3 -J report as fetched ({} where there is none)."""
    reports = []
    for j in range(len(exp.background)):
        p = live.work / f"iperf3-udp{j}.json"
        try:
            reports.append(json.loads(p.read_text()) if p.is_file() else {})
        except ValueError:
            reports.append({})
    return reports

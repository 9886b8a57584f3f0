"""What the two backends that drive real kernels share (netns: namespaces on this machine;
remote: a lab's machines over ssh): the ports and commands of their iperf3 processes, when each
client starts and how long to wait for it, a run's live state, SIGTERM as an interruption, the
reduction of a tcp_probe trace, and the records and totals made from the logs they bring home."""

from __future__ import annotations

import contextlib
import signal
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, TextIO

from .._native import parse_tcp_probe_line
from ..contract import COLUMNS
from ..logs import Log, LogError, read_logs
from ..model import Experiment, Flow, model_cc, port_label
from ..store import write_rows
from . import ping

#: Client (sender) source ports: flow i uses CPORT_BASE + i, which the trace filters select.
CPORT_BASE = 40000
#: Server ports: flow i listens on SERVER_PORT_BASE + i, background j on BG_PORT_BASE + j.
SERVER_PORT_BASE = 5201
BG_PORT_BASE = 5301
#: The kernel backends' rate check: a UDP flow at 1.5x the bottleneck's rate, on this port.
RATE_CHECK_PORT = BG_PORT_BASE + 90
#: Clients and pings still running this long after their planned end fail the run.
FINISH_GRACE_NS = 60_000_000_000


@dataclass
class Shaper:
    """htb + fifo (or + the kernel's AQM qdisc) at a device's egress."""
    ns: str
    dev: str
    rate_bps: int
    limit_packets: int | None
    limit_bytes: int | None
    port_label: str
    aqm: dict[str, Any] | None = None


def linux_cc(cc: str) -> str:
    """Linux's name of a spec algorithm (NewReno is `reno`, net/ipv4/tcp_cong.c tcp_reno)."""
    return "reno" if model_cc(cc) == "newreno" else cc


def _bind(address: str | None) -> list[str]:
    return ["-B", address] if address else []


def iperf_server(port: int, bind: str | None = None, json_out: bool = False) -> list[str]:
    return ["iperf3", "-s", "-1", "-p", str(port), *_bind(bind), *(["-J"] if json_out else [])]


def iperf_client(f: Flow, i: int, dst: str, interval_ns: int, cc: str, bind: str | None = None) -> list[str]:
    """iperf3 as the seeds run it: -c dst [-B src] --cport P -C cc -l W -J -i I -t T (or -n N)."""
    args = ["iperf3", "-c", dst, *_bind(bind), "-p", str(SERVER_PORT_BASE + i), "--cport", str(CPORT_BASE + i),
            "-C", cc, "-l", str(f.write_bytes), "-J", "-i", f"{max(interval_ns, 100_000_000) / 1e9:g}"]
    if f.app.kind == "time":
        args += ["-t", f"{f.app.duration_ns / 1e9:g}"]
    else:
        args += ["-n", str(f.app.bytes)]
    return args


def udp_client(j: int, dst: str, rate_bps: int, size_bytes: int, duration_s: float, bind: str | None = None) -> list[str]:
    """Background stream j: iperf3 -u at `rate_bps` in datagrams of `size_bytes` (IP + UDP headers included)."""
    return ["iperf3", "-c", dst, *_bind(bind), "-p", str(BG_PORT_BASE + j), "-u", "-b", str(rate_bps),
            "-l", str(max(1, size_bytes - 28)), "-t", f"{duration_s:g}", "-J"]


@dataclass(frozen=True)
class Launch:
    """A client to start at `start_ns` on node `frm`: a TCP flow (named as the spec's sender), a
    background stream (udp<j>) or a probe's ping (the probe's name)."""
    start_ns: int
    name: str
    kind: str  # tcp, udp or ping
    frm: str
    words: list[str]


def launches(exp: Experiment, address: Callable[[str], str], cc: Callable[[Flow], str], bind: bool) -> list[Launch]:
    """Every client of the run in start order (background first at equal times), with `address`
    of each node, each flow's kernel `cc`, and (`bind`) the source address given to iperf3."""
    out = []
    for j, u in enumerate(exp.background):
        dur = max(0.1, (min(u.stop_ns, exp.stop_ns) - u.start_ns) / 1e9)
        out.append(Launch(u.start_ns, f"udp{j}", "udp", u.frm, udp_client(
            j, address(u.to), u.rate_bps, u.size_bytes, dur, address(u.frm) if bind else None)))
    for i, f in enumerate(exp.flows):
        out.append(Launch(f.start_ns, f.name, "tcp", f.host, iperf_client(
            f, i, address(f.to), exp.trace.interval_ns, cc(f), address(f.host) if bind else None)))
    for pr in exp.probes:
        if n := ping.count(pr, exp.stop_ns):
            out.append(Launch(pr.start_ns, pr.name, "ping", pr.frm, ping.command(pr, address(pr.frm), address(pr.to), n)))
    return sorted(out, key=lambda x: x.start_ns)


def end_ns(exp: Experiment) -> int:
    """When the last time-limited client is planned to end (the progress bar's end); with
    transfers only (whose end nobody knows before), the run's stop time, their limit."""
    timed = [f.start_ns + f.app.duration_ns for f in exp.flows if f.app.duration_ns]
    return max(timed) if timed else max(exp.stop_ns, 1)


def deadline_ns(exp: Experiment) -> int:
    """After this, clients or pings still running fail the run."""
    return max([exp.stop_ns, end_ns(exp)] + [pr.stop_ns + ping.LINGER_S * 10**9 for pr in exp.probes]) + FINISH_GRACE_NS


class Interrupted(KeyboardInterrupt):
    """SIGTERM arrived; raised in the main thread so that what the run changed is undone and the
    CLI reports an interruption, as for Ctrl-C."""


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Within: SIGTERM raises Interrupted in the main thread (elsewhere signals cannot be set)."""
    main = threading.current_thread() is threading.main_thread()
    old = signal.getsignal(signal.SIGTERM)

    def on_term(signum: int, frame: Any) -> None:
        raise Interrupted("SIGTERM")

    if main:
        signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        if main:
            signal.signal(signal.SIGTERM, old)


@dataclass
class Live:
    """A run under way, as its phases hand it on: times in ns of this machine's monotonic clock
    from t0 (the common start), the clients launched, and the shaped ports' counters."""

    work: Path
    t0: int = 0
    t0_wall: int = 0  # time.time_ns() at t0 (linkem's queue samples, ping -D, remote clocks)
    clients: dict[str, tuple[Any, int]] = field(default_factory=dict)  # name -> (process or host, launched ns)
    ports: list[dict[str, Any]] = field(default_factory=list)          # per interval: bytes, packets, drops
    queues: list[dict[str, Any]] = field(default_factory=list)         # the bottleneck's backlog samples
    max_queue: dict[str, int] = field(default_factory=dict)            # port -> largest backlog sampled


def flow_names(exp: Experiment, address: Callable[[str], str]) -> dict[str, str]:
    """The importer's name of each flow ("addr:port->addr:port", from its addresses and ports in
    the traces and in iperf3's reports) -> the spec's name."""
    return {port_label(f"{address(f.host)}:{CPORT_BASE + i}", f"{address(f.to)}:{SERVER_PORT_BASE + i}"): f.name
            for i, f in enumerate(exp.flows)}


def write_records(exp: Experiment, directory: Path, live: Live, logs: list[Log], address: Callable[[str], str],
                  error: type[Exception]) -> None:
    """The run's tables: flows, intervals and events from its own logs (traces, each client's
    iperf3 -J report) through the same importer as `tcplab import`; ports and queues as sampled.
    A log the importer cannot read raises `error`, the backend's own."""
    names = flow_names(exp, address)
    try:
        read_logs(logs, directory, interval_ns=exp.trace.interval_ns, mss=min(f.mss for f in exp.flows), lenient=True,
                  rename=lambda n: names.get(n, n))
    except LogError as e:
        raise error(f"the run's own logs could not be read: {e}") from None
    for table, rows in (("ports", live.ports), ("queues", live.queues)):
        write_rows(directory, table, rows, COLUMNS[table])


def flow_totals(f: Flow, data: dict[str, Any], launched: int, counters: dict[str, int]) -> dict[str, Any]:
    """One flow's totals in the simulator's shape: iperf3's end sums and the sender's TCP counters
    (per namespace; on a lab machine host-wide, exact when it runs one flow, as the seeds' do)."""
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


def udp_totals(exp: Experiment, reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each background stream's packets sent and received, from its iperf3 -u -J report ({} if none)."""
    udp = []
    for u, data in zip(exp.background, reports, strict=True):
        sent, recv = data.get("end", {}).get("sum_sent", {}), data.get("end", {}).get("sum_received", {})
        udp.append({"name": u.name, "sent": int(sent.get("packets", 0)),
                    "received": int(recv.get("packets", 0)) - int(recv.get("lost_packets", 0)),
                    "received_bytes": int(recv.get("bytes", 0))})
    return udp


def port_totals(exp: Experiment, live: Live, losses: dict[str, int] | None = None,
                extra: Callable[[str], dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Per port: bytes and packets sent, queue drops, random `losses` (by port label), the largest
    queue sampled, and what `extra(label)` adds (a queue discipline's totals)."""
    out = []
    for port in exp.ports:
        rows = [r for r in live.ports if r["port"] == port.label]
        out.append({"port": port.index, "from": port.frm, "to": port.to, "rate_bps": port.rate_bps,
                    "tx_bytes": sum(r["tx_bytes"] for r in rows), "tx_packets": sum(r["tx_packets"] for r in rows),
                    "drops": sum(r["drops"] for r in rows), "losses": (losses or {}).get(port.label, 0),
                    "max_queue_packets": live.max_queue.get(port.label, 0)}
                   | (extra(port.label) if extra else {}))
    return out


# --- tcp_probe traces ---------------------------------------------------------------------------
# The `tcp:tcp_probe` tracepoint fires on every ACK a sender processes (cwnd and ssthresh in
# packets, srtt in us: include/trace/events/tcp.h); `tcp:tcp_cong_state_set` on each congestion
# state change. A trace is reduced while it is read: every state change is kept, tcp_probe lines
# at most one per flow per sampling interval (the last in it), written as the ftrace text they
# were, which tcplab-trace's tcp_probe importer turns into records.


class TraceParseError(ValueError):
    """A trace line that does not have the fields the format promises; names its line number."""


@dataclass
class ProbeSample:
    t_ns: int
    sport: int
    snd_nxt: int
    snd_una: int
    cwnd_pkts: int
    ssthresh_pkts: int
    srtt_us: int


@dataclass
class StateChange:
    t_ns: int
    sport: int
    state: int


def parse_line(line: str, lineno: int = 0) -> ProbeSample | StateChange | None:
    """One ftrace text line, parsed by tcplab-trace's tcp_probe parser (the importer's); None for
    lines of other events or comments."""
    try:
        r = parse_tcp_probe_line(line, lineno)
    except ValueError as e:
        raise TraceParseError(str(e)) from None
    if r is None:
        return None
    if r[0] == "probe":
        return ProbeSample(*r[1:])
    return StateChange(*r[1:])


def first_time_ns(path: Path) -> int | None:
    """The time of a reduced trace's first line (the importer counts the trace's time from it)."""
    return next((item.t_ns for line in path.open() if (item := parse_line(line))), None)


@dataclass
class Collector:
    """Reduces the stream of trace lines to what the run keeps, written as ftrace text to `out`:
    per flow the last tcp_probe line of every `sample_ns` bucket, and every state change."""
    sample_ns: int
    ports: set[int]
    out: TextIO
    pending: dict[int, tuple[int, str]] = field(default_factory=dict)  # port -> (bucket, line)
    lines: int = 0
    bad_lines: int = 0
    kept: int = 0
    overruns: int | None = None

    def add(self, item: ProbeSample | StateChange | None, raw: str) -> None:
        if item is None or item.sport not in self.ports:
            return
        if isinstance(item, StateChange):
            self._flush(item.sport)  # keeps each flow's lines in time order
            self._write(raw)
            return
        bucket = item.t_ns // self.sample_ns if self.sample_ns else self.lines
        held = self.pending.get(item.sport)
        if held is not None and held[0] != bucket:
            self._flush(item.sport)
        self.pending[item.sport] = (bucket, raw)

    def finish(self) -> None:
        """Write what is still held (the last bucket of each flow)."""
        for port in list(self.pending):
            self._flush(port)
        self.out.flush()

    def _flush(self, port: int) -> None:
        held = self.pending.pop(port, None)
        if held is not None:
            self._write(held[1])

    def _write(self, raw: str) -> None:
        self.out.write(raw.rstrip("\n") + "\n")
        self.kept += 1

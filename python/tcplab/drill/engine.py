"""Runs one parsed script against this machine's kernel, in real time, inside the network
namespace the caller is in (kernel.py puts each script in a fresh one). The event loop follows
packetdrill's run.c: relative times anchored as adjust_relative_event_times(), timing checked by
verify_time() (tolerance --tolerance_usecs, default 4000, or --tolerance_percent, default 12.5,
of the gap since the previous event, whichever is larger), outbound packets sniffed as they leave,
code blocks snapshotting tcp_info and run after the script as code.c does."""

from __future__ import annotations

import os
import queue
import re
import socket
import struct
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from . import calls as callsmod
from . import netdev, packets, tcpinfo
from .syntax import ABSOLUTE_RANGE, ANY, RELATIVE, RELATIVE_RANGE, Code, Event, Packet, Script, Shell, Syscall, TcpOption

BIND_PORT = 8080  # config.c: live_bind_port / live_connect_port
FIRST_REMOTE_PORT = 48000


class Failed(Exception):
    """The kernel did not do what the script says (line, reason)."""

    def __init__(self, line: int | None, reason: str) -> None:
        super().__init__(reason)
        self.line, self.reason = line, reason


class Unsupported(Failed):
    """The script needs something this target cannot do (line, what)."""


@dataclass
class Conn:
    """The connection under test: ports and the script->live sequence offset of our side."""

    local_port: int = BIND_PORT
    remote_port: int = FIRST_REMOTE_PORT
    local_offset: int | None = None
    syn_seen: bool = False


class Engine:
    """One run: `run()` returns when the script passed, else raises Failed (or Unsupported);
    `notes` says what the target did on the script's behalf."""

    def __init__(self, script: Script, tun: netdev.Tun, congestion: str | None) -> None:
        self.script, self.tun, self.congestion = script, tun, congestion
        opts = script.options
        self.tolerance_us = int(opts.get("tolerance_usecs", "4000"))
        self.tolerance_pct = float(opts.get("tolerance_percent", "12.5"))
        self.calls = callsmod.Calls((netdev.LOCAL_IP, BIND_PORT), (netdev.REMOTE_IP, BIND_PORT), self._new_socket)
        self.conn = Conn()
        self.next_port = FIRST_REMOTE_PORT
        self.ts_map: dict[int, int] = {}
        self.start_us = 0
        self.last: tuple[int, bool] | None = None  # (script time, was an inbound packet)
        self.snapshots: list[tuple[int, dict[str, int]]] = []
        self.blocking: tuple[threading.Event, Event, list] | None = None
        self.blocker = _Blocker()
        self.notes: list[str] = []
        self.trace = bool(os.environ.get("TCPLAB_DRILL_TRACE"))  # event times on stderr, for debugging

    def _new_socket(self, s: socket.socket) -> None:
        if self.congestion:  # the script asked for it by sysctl; the namespace may not set it
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, self.congestion.encode())

    def now_us(self) -> int:
        return time.time_ns() // 1000 - self.start_us

    def run(self) -> None:
        self.start_us = _jiffy_aligned_start_us()
        for ev in self.script.events:
            start, end, block_end = self._adjust(ev)
            if self.trace:
                print(f"{self.now_us() / 1e6:.6f} line {ev.line} due {start / 1e6:.6f}", file=sys.stderr)
            self._event(ev, start, end, block_end)
            self.last = (start, _is_inbound(ev))
        self._await_blocking()
        if self.script.cleanup:
            self._shell(self.script.cleanup_line, self.script.cleanup.command)
        self._run_code()

    def _adjust(self, ev: Event) -> tuple[int, int | None, int | None]:
        """Script times made absolute (run.c adjust_relative_event_times)."""
        t = ev.time
        if t.kind not in (ANY, RELATIVE, RELATIVE_RANGE):
            return t.start_us, t.end_us, t.blocking_end_us
        if self.last is not None and self.last[1] and _is_inbound(ev):
            offset = self.last[0]
        else:
            offset = self.now_us()
        block_end = t.blocking_end_us + offset if t.blocking_end_us is not None and t.kind == RELATIVE else t.blocking_end_us
        return t.start_us + offset, (t.end_us + offset if t.end_us is not None else None), block_end

    def _event(self, ev: Event, start: int, end: int | None, block_end: int | None) -> None:
        body = ev.body
        if isinstance(body, Packet) and body.direction == ">":
            self._outbound(ev, body, start, end)
            return
        self._wait_until(start)
        if isinstance(body, Packet):
            self._inbound(ev, body)
        elif isinstance(body, Syscall):
            self._syscall(ev, body, start, block_end)
        elif isinstance(body, Shell):
            self._shell(ev.line, body.command)
        elif isinstance(body, Code):
            self._snapshot(ev)

    def check_time(self, line: int, kind: str, start: int, end: int | None, actual: int, what: str) -> None:
        """run.c verify_time()."""
        if kind == ANY:
            return
        tol = self.tolerance_us
        if self.last is not None:
            tol = max(tol, int(self.tolerance_pct / 100.0 * (start - self.last[0])))
        if kind in (ABSOLUTE_RANGE, RELATIVE_RANGE):
            if actual < start - tol or actual > (end or start) + tol:
                raise Failed(line, f"timing error: expected {what} in time range {start / 1e6:.6f}~{(end or start) / 1e6:.6f} "
                                   f"sec but happened at {actual / 1e6:.6f} sec")
            return
        if actual < start - tol or actual > start + tol:
            raise Failed(line, f"timing error: expected {what} at {start / 1e6:.6f} sec but happened at "
                               f"{actual / 1e6:.6f} sec; tolerance {tol / 1e6:.6f} sec")

    def _wait_until(self, script_us: int) -> None:
        """run.c wait_for_event(): sleep, then spin the last stretch."""
        while True:
            left = script_us - self.now_us()
            if left <= 0:
                return
            if left > 1500 or self.blocking is not None:  # a blocking call's thread needs the GIL
                time.sleep(max(left - 1000, 50) / 1e6)

    # Packets -----------------------------------------------------------------------------------
    def _inbound(self, ev: Event, p: Packet) -> None:
        if p.icmp is not None:
            self.tun.send(self._icmp(ev, p))
            return
        if "S" in p.flags and "." not in p.flags:  # a new passive connection from a new remote port
            self.conn = Conn(remote_port=self.next_port)
            self.next_port += 1
        off = self.conn.local_offset or 0
        if p.ack is not None and "." in p.flags and self.conn.local_offset is None:
            raise Failed(ev.line, "inbound ACK before the kernel's SYN: no sequence number to map it to")
        opts = tuple(self._map_option(ev, o, off) for o in (p.options or ()))
        try:
            raw_opts = packets.encode_options(opts)
        except ValueError as e:
            raise Failed(ev.line, str(e)) from None
        tcp = packets.tcp_segment(_ip4(netdev.REMOTE_IP), _ip4(netdev.LOCAL_IP), self.conn.remote_port,
                                  self.conn.local_port, p.seq, (p.ack or 0) + off, packets.tcp_flags(p.flags),
                                  p.win or 0, raw_opts, p.length)
        tos = {"noecn": 0, "ect1": 1, "ect0": 2, "ce": 3}.get(p.ecn or "noecn", 0)
        mss = int(self.script.options.get("mss", "0") or 0)
        self.tun.send(packets.ipv4(_ip4(netdev.REMOTE_IP), _ip4(netdev.LOCAL_IP), 6, tcp, tos=tos), mss)

    def _map_option(self, ev: Event, o: TcpOption, off: int) -> TcpOption:
        if o.kind == "sack":
            return TcpOption("sack", tuple(v + off for v in o.values))
        if o.kind == "TS":
            val, ecr = o.values
            if ecr == 0:
                return o
            if ecr not in self.ts_map:
                raise Failed(ev.line, f"unable to infer live TS ecr for script TS ecr {ecr}; "
                                      "no matching or preceding outbound TS val")
            return TcpOption("TS", (val, self.ts_map[ecr]))
        return o

    def _icmp(self, ev: Event, p: Packet) -> bytes:
        """ICMP fragmentation needed (RFC 1191) quoting our segment's IP header and first 8 bytes."""
        kind, code, mtu = p.icmp or ("", "", None)
        if (kind, code) != ("unreachable", "frag_needed") or mtu is None:
            raise Unsupported(ev.line, f"icmp {kind} {code}: only IPv4 'unreachable frag_needed mtu N' is supported")
        off = self.conn.local_offset or 0
        quoted_tcp = packets.tcp_segment(_ip4(netdev.LOCAL_IP), _ip4(netdev.REMOTE_IP), self.conn.local_port,
                                         self.conn.remote_port, p.seq + off, 0, 0x10, 0, b"", 0)[:8]
        quoted = packets.ipv4(_ip4(netdev.LOCAL_IP), _ip4(netdev.REMOTE_IP), 6, bytes(20 + p.length))[:20] + quoted_tcp
        icmp = struct.pack("!BBHHH", 3, 4, 0, 0, mtu) + quoted
        icmp = icmp[:2] + struct.pack("!H", packets.checksum(icmp)) + icmp[4:]
        return packets.ipv4(_ip4(netdev.REMOTE_IP), _ip4(netdev.LOCAL_IP), 1, icmp)

    def _outbound(self, ev: Event, p: Packet, start: int, end: int | None) -> None:
        """run_packet.c do_outbound_script_packet(): the connection's next packets, joined until
        they carry the script's payload (packetdrill's default, without --strict_segments)."""
        deadline_s = 60.0 if ev.time.kind == ANY else max(0, max(start, end or start) - self.now_us()) / 1e6 + 2.0
        parts: list[packets.Seen] = []
        while not parts or sum(x.payload_len for x in parts) < p.length and "strict_segments" not in self.script.options:
            seen = self._sniff(deadline_s)
            if seen is None:
                raise Failed(ev.line, "Timed out waiting for packet")
            if seen.flags & 0x02 and not self.conn.syn_seen:  # the kernel's ISN: script seq 0 maps to it
                self.conn.local_offset = (seen.seq - p.seq) & 0xFFFFFFFF
                self.conn.syn_seen = True
            if parts:
                err = packets.fragment_error(seen, parts[-1], sum(x.payload_len for x in parts), p.length)
                if err:
                    raise Failed(ev.line, f"{err}; script: {_describe(p)}; actual: {self._describe_seen(seen)}")
            parts.append(seen)
        seen = packets.aggregate(parts) if len(parts) > 1 else parts[0]
        err = packets.compare(p, seen, self.conn.local_offset or 0)
        if err:
            raise Failed(ev.line, f"{err}; script: {_describe(p)}; actual: {self._describe_seen(seen)}")
        self._learn_ts(p, seen)
        self.check_time(ev.line, ev.time.kind, start, end, seen.time_us - self.start_us, "outbound packet")

    def _sniff(self, timeout_s: float) -> packets.Seen | None:
        deadline = time.monotonic() + timeout_s
        while True:
            got = self.tun.receive(max(0.0, deadline - time.monotonic()))
            if got is None:
                return None
            seen = packets.decode(*got)
            if seen is None or seen.src != _ip4(netdev.LOCAL_IP) or seen.dst != _ip4(netdev.REMOTE_IP):
                continue
            if seen.flags & 0x02 and not seen.flags & 0x10 and seen.sport != self.conn.local_port:
                self.conn = Conn(local_port=seen.sport, remote_port=seen.dport)  # an active open
            if (seen.sport, seen.dport) != (self.conn.local_port, self.conn.remote_port):
                continue  # not the connection under test (packetdrill ignores unknown sockets' packets)
            if self.trace:
                print(f"  sniffed at {(seen.time_us - self.start_us) / 1e6:.6f}: {self._describe_seen(seen)}", file=sys.stderr)
            return seen

    def _learn_ts(self, p: Packet, seen: packets.Seen) -> None:
        want = [o for o in (p.options or ()) if o.kind == "TS"]
        got = [d for k, d in seen.options if k == 8 and len(d) == 8]
        if want and got:
            self.ts_map[want[0].values[0]] = struct.unpack("!I", got[0][:4])[0]

    def _describe_seen(self, s: packets.Seen) -> str:
        seq = (s.seq - (self.conn.local_offset or 0)) & 0xFFFFFFFF
        opts = ",".join(packets.option_text(k, d) for k, d in s.options)
        return (f"{packets.flags_text(s.flags)} {seq}:{seq + s.payload_len}({s.payload_len}) ack {s.ack} win {s.win}"
                + (f" <{opts}>" if opts else ""))

    # System calls, commands, code --------------------------------------------------------------
    def _syscall(self, ev: Event, call: Syscall, start: int, block_end: int | None) -> None:
        self._await_blocking()
        self.check_time(ev.line, ev.time.kind, start, None, self.now_us(), "system call start")
        if block_end is not None:
            box, done = self.blocker.submit(lambda: self._make_call(ev, call))
            self.blocking = (done, ev, [block_end, box])
            return
        self._check_result(ev, call, *self._make_call(ev, call))

    def _make_call(self, ev: Event, call: Syscall) -> tuple[int, str | None, int]:
        try:
            result, err = self.calls.run(call)
        except callsmod.Unhandled as e:
            raise Unsupported(ev.line, str(e)) from None
        except callsmod.CallFailed as e:
            raise Failed(ev.line, str(e)) from None
        return result, err, self.now_us()

    def _await_blocking(self) -> None:
        if self.blocking is None:
            return
        finished, ev, (block_end, box) = self.blocking
        finished.wait(10.0)
        self.blocking = None
        if not box:
            raise Failed(ev.line, f"blocking {ev.body.name}() did not return")  # type: ignore[union-attr]
        if isinstance(box[0], BaseException):
            raise box[0]
        result, err, done = box[0]
        self.check_time(ev.line, ev.time.kind, block_end, None, done, "blocking system call return")
        self._check_result(ev, ev.body, result, err)  # type: ignore[arg-type]

    def _check_result(self, ev: Event, call: Syscall, result: int, err: str | None, _done_us: int = 0) -> None:
        """run_system_call.c: the result, then the errno, as the script gives them."""
        if call.result != "..." and result != call.result:
            raise Failed(ev.line, f"Expected result {call.result} but got {result}" + (f" with errno {err}" if err else ""))
        if call.errno and err != call.errno:
            raise Failed(ev.line, f"Expected errno {call.errno} but got {err or 'success'}")

    def _shell(self, line: int, command: str) -> None:
        env = dict(os.environ, PACKETDRILL_PID=str(os.getpid()), PATH=_root_path(os.environ.get("PATH", "")))
        folder = Path(self.script.path).resolve().parent
        command = helper_paths(command, folder, self.notes)
        p = subprocess.run(["/bin/sh", "-c", command], cwd=folder, env=env, capture_output=True, text=True)
        if p.returncode != 0:
            first = (p.stderr.strip() or p.stdout.strip()).splitlines()
            raise Failed(line, f"command failed (exit {p.returncode}): {command.strip().splitlines()[-1]!s}"
                               + (f": {first[-1]}" if first else ""))

    def _snapshot(self, ev: Event) -> None:
        s = self.calls.under_test
        if s is None:
            raise Failed(ev.line, "no socket to use for code")
        try:
            self.snapshots.append((ev.line, {**tcpinfo.read(s), **tcpinfo.read_meminfo(s)}))
        except OSError as e:  # code.c: "can't find getsockopt to get TCP info"
            raise Failed(ev.line, f"runtime error in code: getsockopt(TCP_INFO): {e.strerror}") from None

    def _run_code(self) -> None:
        """code.c: one Python program, each block after the tcp_info it saw, run at the end."""
        scope: dict = dict(tcpinfo.SYMBOLS)
        for (line, info), code in zip(self.snapshots, (e.body for e in self.script.events if isinstance(e.body, Code))):
            scope.update(info)
            text = _dedent(code.text)
            try:
                exec(compile(text, f"{self.script.path}:{line}", "exec"), scope)  # noqa: S102
            except AssertionError as e:
                raise Failed(line, f"assertion failed in Python code: {_assert_text(text, e)}") from None
            except Exception as e:  # noqa: BLE001 - the script's own Python: any error fails it, as packetdrill
                raise Failed(line, f"error in Python code: {type(e).__name__}: {e}") from None


def _root_path(path: str) -> str:
    """PATH with the system folders root's shell has: the suites call sysctl, tc, ip, ethtool, nstat."""
    parts = [p for p in path.split(":") if p]
    return ":".join(parts + [p for p in ("/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/bin", "/bin") if p not in parts])


_HELPER = re.compile(r"(?<![\w/.$])(\.\.?/[\w./-]+)")


def helper_paths(command: str, folder: Path, notes: list[str]) -> str:
    """`command` with each relative helper path that does not exist from `folder` replaced by the
    `common/<name>` found in `folder` or an ancestor: upstream google/packetdrill keeps
    defaults.sh both in gtests/net/common and gtests/net/tcp/common, and its scripts call either."""
    def fix(m: re.Match) -> str:
        rel = m.group(1)
        if (folder / rel).exists():
            return rel
        for up in [folder, *folder.parents[:3]]:
            cand = up / "common" / Path(rel).name
            if cand.is_file():
                note = f"{rel} read as {cand}"
                if note not in notes:
                    notes.append(note)
                return str(cand)
        return rel

    return _HELPER.sub(fix, command)


class _Blocker:
    """run_system_call.c's system call thread: started before the script, it makes the blocking
    calls (`0.1...0.2 connect(...)`) while the script goes on."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self) -> None:
        while True:
            fn, box, done = self.jobs.get()
            try:
                box.append(fn())
            except BaseException as e:  # noqa: BLE001 - handed to the main thread, which raises it
                box.append(e)
            done.set()

    def submit(self, fn) -> tuple[list, threading.Event]:  # noqa: ANN001 - a call of no arguments
        box: list = []
        done = threading.Event()
        self.jobs.put((fn, box, done))
        return box, done


def _jiffy_aligned_start_us() -> int:
    """run.c schedule_start_time_usecs(): start 250 µs into a jiffy, after a few ticks of
    times(2), so millisecond-spaced events do not straddle jiffy edges."""
    last, ticks, start = os.times().elapsed, 0, time.time_ns() // 1000
    while ticks < 3:
        now = os.times().elapsed
        if now != last:
            ticks, start, last = ticks + 1, time.time_ns() // 1000, now
    return start + 250


def _is_inbound(ev: Event) -> bool:
    return isinstance(ev.body, Packet) and ev.body.direction == "<"


def _ip4(text: str) -> bytes:
    return socket.inet_aton(text)


def _describe(p: Packet) -> str:
    opts = "<...>" if p.options is None else ("<" + ",".join(
        " ".join([o.kind, *map(str, o.values)]) for o in p.options) + ">" if p.options else "")
    return f"{p.flags} {p.seq}:{p.end_seq}({p.length})" + (f" ack {p.ack}" if p.ack is not None else "") + \
        (f" win {p.win}" if p.win is not None else "") + (f" {opts}" if opts else "")


def _dedent(text: str) -> str:
    """The block as Python: packetdrill writes it verbatim after its variables; a block on the
    `%{` line starts with a space, which Python would take for an indent."""
    return textwrap.dedent(text.lstrip("\n")).lstrip() + "\n"


def _assert_text(text: str, e: AssertionError) -> str:
    """The failing assert line and the value it printed."""
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    lines = text.splitlines()
    where = lines[tb.tb_lineno - 1].strip() if tb is not None and 0 < tb.tb_lineno <= len(lines) else ""
    return f"{where} (value: {e})" if str(e) else where

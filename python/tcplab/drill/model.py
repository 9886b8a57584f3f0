"""The model targets (`linux`, ...): one modelled endpoint of the stack (tcplab_sim::drill,
`_native.DrillEndpoint`) driven in virtual time by the script's inbound packets and system calls.
Its segments are compared as the kernel target compares the kernel's (packets.compare,
fragment_error, aggregate; engine's verify_time rule, where the model's time is exact), and its
tcp_info is read by the code blocks, run at the end as code.c does. What a script needs that the
model lacks is `unsupported`, with the line."""

from __future__ import annotations

import re
import struct
from pathlib import Path

from . import model_calls, model_env, packets
from .calls import SYMBOLS, CallFailed, Unhandled, value
from .engine import ANY, Engine, Failed, Unsupported, _describe
from .result import Result
from .syntax import RELATIVE, RELATIVE_RANGE, Code, Event, Packet, Script, Shell, Syscall, Text

#: The model each target runs (stack profile names of crates/tcplab-sim/src/stack).
STACKS = {"linux": "linux", "freebsd": "freebsd", "freebsd-rack": "freebsd-rack", "rfc": "rfc"}
OWN_MSS = 1460  # MTU 1500 less 40: what Linux advertises on packetdrill's tun0 (--mtu default)
NS_PER_US = 1000
_INFO = re.compile(r"\btcpi_\w+")


class ModelEngine:
    """One run of a script on a stack model; `run()` raises Failed or Unsupported."""

    #: Whether the engine models its receive window (outbound `win` values checked).
    MODELS_RCV_WINDOW = False
    #: How long a `*` (any time) outbound packet is waited for.
    ANY_WAIT_US = 60_000_000

    def __init__(self, script: Script, stack: str) -> None:
        self.script, self.stack = script, stack
        self.tolerance_us = int(script.options.get("tolerance_usecs", "4000"))
        self.tolerance_pct = float(script.options.get("tolerance_percent", "12.5"))
        self.env = model_env.Env()
        self.cc = "cubic"
        self.now_us = 0
        self.last: tuple[int, bool] | None = None
        self.ep = None  # the DrillEndpoint once the handshake completed
        self.pending: list[packets.Seen] = []
        self.syn: dict | None = None
        self.fin_sent = False
        self.peer_fin = 0
        self.snapshots: list[tuple[int, dict[str, int]]] = []
        self.writes: set[int] = set()  # ends of the application's writes (PSH, see _wire)
        self.peer_ts = 0
        self.sock = model_calls.Sock()
        self.accepted_fd: int | None = None

    def run(self) -> None:
        for ev in self.script.events:
            start, end = self._adjust(ev)
            self._event(ev, start, end)
            self.last = (start, _inbound(ev))
        Engine._run_code(self)  # type: ignore[arg-type]

    def _adjust(self, ev: Event) -> tuple[int, int | None]:
        t = ev.time
        if t.kind not in (ANY, RELATIVE, RELATIVE_RANGE):
            return t.start_us, t.end_us
        off = self.last[0] if self.last is not None and self.last[1] and _inbound(ev) else self.now_us
        return t.start_us + off, (t.end_us + off if t.end_us is not None else None)

    def check_time(self, *a) -> None:  # noqa: ANN002 - engine.Engine.check_time's arguments
        Engine.check_time(self, *a)  # type: ignore[arg-type]

    def _event(self, ev: Event, start: int, end: int | None) -> None:
        body = ev.body
        if isinstance(body, Packet) and body.direction == ">":
            self._outbound(ev, body, start, end)
            return
        self._advance(start)
        if isinstance(body, Packet):
            self._inbound(ev, body)
        elif isinstance(body, Syscall):
            if ev.time.blocking_end_us is not None:
                raise Unsupported(ev.line, "blocking system calls not modelled")
            self._syscall(ev, body)
        elif isinstance(body, Shell):
            self.shell(ev.line, body.command)
        elif isinstance(body, Code):
            self._snapshot(ev, body)

    def shell(self, line: int, command: str) -> None:
        try:
            model_env.apply(self.env, command, Path(self.script.path).resolve().parent)
        except model_env.NotModelled as e:
            raise Unsupported(line, str(e)) from None
        self.cc = self.env.sysctls.get("tcp_congestion_control", self.cc)

    def _advance(self, t_us: int) -> None:
        self.now_us = max(self.now_us, t_us)
        if self.ep is not None:
            self.ep.advance(self.now_us * NS_PER_US)
            self._collect()

    # Inbound ------------------------------------------------------------------------------------
    def _inbound(self, ev: Event, p: Packet) -> None:
        if p.icmp is not None:
            raise Unsupported(ev.line, "inbound ICMP not modelled")
        if "R" in p.flags:
            raise Unsupported(ev.line, "inbound RST not modelled")
        if p.length:
            raise Unsupported(ev.line, "inbound data: the model endpoint sends only (its receiver half is not joined to it)")
        ts = [o.values for o in (p.options or ()) if o.kind == "TS"]
        if ts:
            self.peer_ts = ts[0][0]
        if "S" in p.flags:
            self._syn(ev, p)
        elif self.ep is None:
            self._handshake_ack(ev, p)
        else:
            self._ack(ev, p, ts[0][1] if ts else None)

    def _syn(self, ev: Event, p: Packet) -> None:
        if "." in p.flags or self.syn is not None:
            raise Unsupported(ev.line, "only one passive open (SYN in, SYN-ACK out) is modelled")
        opts = {o.kind: o.values for o in (p.options or ())}
        want_ts = "TS" in opts and self.env.sysctls.get("tcp_timestamps", "1") != "0"
        sack = "sackOK" in opts and self.env.sysctls.get("tcp_sack", "1") != "0"
        ecn = "E" in p.flags and "W" in p.flags and self.env.sysctls.get("tcp_ecn", "2") in ("1", "2")
        peer_mss = opts.get("mss", (536,))[0]
        own_mss = self._advmss()
        self.syn = {"ts": want_ts, "sack": sack, "ecn": ecn, "wscale": opts.get("wscale", (None,))[0],
                    "mss": min(peer_mss, own_mss) - (12 if want_ts else 0), "t": self.now_us}
        # tcp_options_write(): MSS; SACK-permitted and TS together, else NOP NOP TS or NOP NOP
        # SACK-permitted; NOP and window scale.
        o: list[tuple[int, bytes]] = [(2, struct.pack("!H", own_mss))]
        if want_ts:
            o += ([(4, b"")] if sack else [(1, b""), (1, b"")]) + [(8, struct.pack("!II", self._ts(), self.peer_ts))]
        elif sack:
            o += [(1, b""), (1, b""), (4, b"")]
        if self.syn["wscale"] is not None:
            try:
                o += [(1, b""), (3, bytes([model_env.rcv_wscale(self.env)]))]
            except model_env.NotModelled as e:
                raise Unsupported(ev.line, str(e)) from None
        self._emit(0x12 | (0x40 if ecn else 0), 0, 0, o, self.now_us, win=65535)

    def _advmss(self) -> int:
        """The MSS this end advertises: the route's (MTU less 40) clamped by TCP_MAXSEG
        (tcp_mss_clamp())."""
        return min(OWN_MSS, self.sock.user_mss) if self.sock.user_mss else OWN_MSS

    def _handshake_ack(self, ev: Event, p: Packet) -> None:
        if self.syn is None or p.ack != 1:
            raise Unsupported(ev.line, "an ACK before a modelled passive open")
        s = self.syn
        stack = STACKS[self.stack]
        try:
            from tcplab._native import DrillEndpoint
            self.ep = DrillEndpoint(stack, self.cc, s["mss"], s["sack"], s["ts"], s["wscale"] or 0, s["ecn"],
                                    self.now_us * NS_PER_US, (self.now_us - s["t"]) * NS_PER_US,
                                    (p.win or 0) << (s["wscale"] or 0), hz=model_env.kernel_hz())
        except ValueError as e:
            raise Unsupported(ev.line, str(e)) from None

    def _ack(self, ev: Event, p: Packet, ecr: int | None) -> None:
        if "F" in p.flags:
            self.peer_fin = 1
            self._emit(0x10, self.ep.written() + 1 + int(self.fin_sent), 0, self._ts_opts(), self.now_us)
        sacks = [o.values for o in (p.options or ()) if o.kind == "sack"]
        blocks = [(v[i] - 1, v[i + 1] - 1) for v in sacks for i in range(0, len(v) - 1, 2)]
        ack = min(max((p.ack or 1) - 1, 0), self.ep.written())
        ecr_ns = ecr * 1_000_000 if ecr else None
        self.ep.segment(self.now_us * NS_PER_US, ack, p.win or 0, blocks, "E" in p.flags, ecr_ns)
        self._collect()

    # Outbound -----------------------------------------------------------------------------------
    def _ts(self, t_us: int | None = None) -> int:
        return (self.now_us if t_us is None else t_us) // 1000  # Linux's ms TS clock

    def _ts_opts(self, t_us: int | None = None) -> list[tuple[int, bytes]]:
        if not (self.syn and self.syn["ts"]):
            return []
        return [(1, b""), (1, b""), (8, struct.pack("!II", self._ts(t_us), self.peer_ts))]

    def _emit(self, flags: int, seq: int, length: int, opts: list[tuple[int, bytes]], t_us: int,
              win: int = 0, tos: int = 0) -> None:
        olen = sum(1 if k in (0, 1) else 2 + len(d) for k, d in opts)
        self.pending.append(packets.Seen(b"", b"", tos, 40 + olen + length, 0, 0, seq, 1 + self.peer_fin, flags, win,
                                         list(opts), length, t_us))

    def _collect(self) -> None:
        for t_ns, seq, length, _retx, ecn, cwr, psh in self.ep.take_sent():
            end = seq + length
            # tcp_push() marks the last skb of each write with PSH; tso_fragment() keeps it on
            # the tail: the segment that ends a write carries it (a whole skb's: the endpoint).
            flags = 0x10 | (0x08 if psh or end in self.writes else 0) | (0x80 if cwr else 0)
            t_us = t_ns // NS_PER_US
            self._emit(flags, seq + 1, length, self._ts_opts(t_us), t_us, tos=ecn)

    def _outbound(self, ev: Event, p: Packet, start: int, end: int | None) -> None:
        if p.win is not None and "S" not in p.flags and not self.MODELS_RCV_WINDOW:
            raise Unsupported(ev.line, "outbound window value: the endpoint's receive window is not modelled")
        # As late as verify_time() would accept it (a `*` packet: within a minute).
        tol = max(self.tolerance_us, int(self.tolerance_pct / 100.0 * (start - (self.last or (0, False))[0])))
        limit = (end or start) + max(tol, self.ANY_WAIT_US if ev.time.kind == ANY else 0)
        parts: list[packets.Seen] = []
        while not parts or sum(x.payload_len for x in parts) < p.length and "strict_segments" not in self.script.options:
            seen = self._next_packet(limit)
            if seen is None:
                raise Failed(ev.line, f"Timed out waiting for packet (the model sent nothing by {limit / 1e6:.6f} sec)")
            if parts:
                err = packets.fragment_error(seen, parts[-1], sum(x.payload_len for x in parts), p.length)
                if err:
                    raise Failed(ev.line, f"{err}; script: {_describe(p)}; actual: {_text(seen)}")
            parts.append(seen)
        seen = packets.aggregate(parts) if len(parts) > 1 else parts[0]
        err = packets.compare(p, seen, 0)
        if err:
            raise Failed(ev.line, f"{err}; script: {_describe(p)}; actual: {_text(seen)}")
        self.now_us = max(self.now_us, seen.time_us)
        self.check_time(ev.line, ev.time.kind, start, end, seen.time_us, "outbound packet")

    def _next_packet(self, limit_us: int) -> packets.Seen | None:
        """The model's next segment: one already sent, else the timers' up to `limit_us`."""
        while not self.pending:
            d = self.ep.deadline() if self.ep is not None else None
            if d is None or d // NS_PER_US > limit_us:
                return None
            self.ep.advance(d)
            self._collect()
        return self.pending.pop(0)

    # System calls and code ----------------------------------------------------------------------
    def _syscall(self, ev: Event, call: Syscall) -> None:
        try:
            result = self._call(ev, call)
        except Unhandled as e:
            raise Unsupported(ev.line, str(e)) from None
        except CallFailed as e:
            raise Failed(ev.line, str(e)) from None
        if call.result != "..." and result != call.result:
            raise Failed(ev.line, f"Expected result {call.result} but got {result}")

    def _call(self, ev: Event, call: Syscall) -> int:
        name, a = call.name, call.args
        if call.errno:
            raise Unhandled(f"{name}() failing with {call.errno}: not modelled")
        if name in ("socket", "bind", "listen"):
            return call.result if name == "socket" else 0
        if name == "accept":
            if self.ep is None:
                raise Unhandled("accept() before the handshake completed: not modelled")
            self.accepted_fd = call.result
            return call.result
        if name == "getsockopt":
            conn = self.ep is not None and value(a[0]) == self.accepted_fd
            mss = dict(self.ep.tcp_info())["tcpi_snd_mss"] if conn else None
            return model_calls.getsockopt(self.sock, a, mss)
        if name == "fcntl":
            return model_calls.fcntl(self.sock, a)
        if name == "setsockopt":
            return self._setsockopt(a)
        if name in ("write", "send") and (name == "write" or value(a[3]) in (0, SYMBOLS["MSG_EOR"])):
            n = value(a[2])
            if self.ep is None:
                raise Unhandled(f"{name}() before the connection is established")
            if name == "send" and value(a[3]) == SYMBOLS["MSG_EOR"]:
                self.ep.write_eor(self.now_us * NS_PER_US, n)
            else:
                self.ep.write(self.now_us * NS_PER_US, n)
            self.writes.add(self.ep.written())
            self._collect()
            return n
        if name == "close":
            return self._close()
        if name in ("send", "sendto", "sendmsg") and "MSG_" in repr(a):
            raise Unhandled(f"{name}() with flags (MSG_MORE: Nagle's cork; sendmsg and sendto flags): not modelled")
        raise Unhandled(f"{name}(): not modelled")

    def _setsockopt(self, a: tuple) -> int:
        level, opt = value(a[1]), value(a[2])
        raw = a[3][0] if isinstance(a[3], list) and a[3] else a[3]
        if not isinstance(raw, Text) and model_calls.setsockopt(self.sock, level, opt, value(raw), self.ep is not None):
            return 0
        if (level, opt) == (SYMBOLS["SOL_SOCKET"], SYMBOLS["SO_REUSEADDR"]):
            return 0
        if (level, opt) == (SYMBOLS["SOL_SOCKET"], SYMBOLS["SO_SNDBUF"]):
            return 0  # the model's buffer (tcp_wmem[2]) holds every write of the suites' scripts
        if opt == SYMBOLS["TCP_CONGESTION"] and isinstance(a[3], Text):
            if self.ep is not None:
                raise Unhandled("TCP_CONGESTION on an established connection: not modelled")
            self.cc = str(a[3])
            return 0
        if opt == SYMBOLS["TCP_NODELAY"]:
            return 0  # the model sends a write's tail at once (no Nagle hold), as TCP_NODELAY
        prefix = {SYMBOLS["SOL_SOCKET"]: "SO_", SYMBOLS["SOL_TCP"]: "TCP_", SYMBOLS["SOL_IP"]: "IP_"}.get(level, "?")
        names = [k for k, v in SYMBOLS.items() if k.startswith(prefix) and v == opt and not k.startswith("IP_PMTU")]
        raise Unhandled(f"setsockopt {names[0] if names else f'level {level} option {opt}'}: not modelled")

    def _close(self) -> int:
        if self.ep is None:
            return 0
        if dict(self.ep.tcp_info())["tcpi_notsent_bytes"]:
            raise Unhandled("close() with unsent data: FIN on a data segment not modelled")
        self.fin_sent = True
        self._emit(0x11, self.ep.written() + 1, 0, self._ts_opts(), self.now_us)
        return 0

    def _snapshot(self, ev: Event, body: Code) -> None:
        if self.ep is None:
            raise Unsupported(ev.line, "tcp_info before the connection is established: not modelled")
        info = dict(self.ep.tcp_info())
        info["tcpi_advmss"] = self._advmss()  # tp->advmss: tcp_mss_clamp() of the route's MSS
        missing = sorted(set(_INFO.findall(body.text)) - set(info))
        if missing:
            raise Unsupported(ev.line, f"tcp_info field {missing[0]} not modelled")
        self.snapshots.append((ev.line, info))


def _inbound(ev: Event) -> bool:
    return isinstance(ev.body, Packet) and ev.body.direction == "<"


def _text(s: packets.Seen) -> str:
    opts = ",".join(packets.option_text(k, d) for k, d in s.options)
    return f"{packets.flags_text(s.flags)} {s.seq}:{s.seq + s.payload_len}({s.payload_len}) ack {s.ack}" + \
        (f" <{opts}>" if opts else "")


def static_problems(script: Script, mtu_and_ipv6: bool = False) -> tuple[int | None, str] | None:
    """What stops a model run before it starts (line, what). `mtu_and_ipv6`: the target takes the
    MSS from --mtu and the IP version (the FreeBSD and rfc targets)."""
    if script.ip_version() not in (("ipv4", "ipv6") if mtu_and_ipv6 else ("ipv4",)):
        runs = "IPv4 and IPv6" if mtu_and_ipv6 else "IPv4"
        return None, f"--ip_version={script.ip_version()}: the model target runs {runs} scripts"
    for line, why in script.unsupported:
        return line, why
    known = {"ip_version", "tolerance_usecs", "tolerance_percent", "mtu", "mss", "strict_segments", "debug", "verbose"}
    for k in script.options:
        if k not in known:
            return None, f"--{k}: not supported by the model target"
    if script.options.get("mtu", "1500") != "1500" and not mtu_and_ipv6:
        return None, "--mtu other than 1500: not modelled"
    return None

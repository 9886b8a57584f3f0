"""The model targets (`linux`, ...): one modelled endpoint of the stack (tcplab_sim::drill,
`_native.DrillEndpoint`) driven in virtual time by the script's inbound packets and system calls.
Its segments are compared as the kernel target compares the kernel's (packets.compare,
fragment_error, aggregate; engine's verify_time rule, where the model's time is exact), and its
tcp_info is read by the code blocks, run at the end as code.c does. What a script needs that the
model lacks is `unsupported`, with the line."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

from . import model_calls, model_cookie, model_env, packets
from .model_rx import LinuxReceive
from .calls import SYMBOLS, CallFailed, Unhandled, value
from .engine import ANY, Engine, Failed, Unsupported, _describe
from .result import Result
from .syntax import ABSOLUTE, RELATIVE, RELATIVE_RANGE, Code, Event, Packet, Script, Shell, Struct, Syscall, Text

#: The model each target runs (stack profile names of crates/tcplab-sim/src/stack).
STACKS = {"linux": "linux", "freebsd": "freebsd", "freebsd-rack": "freebsd-rack", "rfc": "rfc"}
NS_PER_US = 1000
_INFO = re.compile(r"\b(?:tcpi|SK_MEMINFO)_\w+")


class ModelEngine(LinuxReceive):
    """One run of a script on a stack model; `run()` raises Failed or Unsupported."""

    #: Whether the engine models its receive window (outbound `win` values checked).
    MODELS_RCV_WINDOW = True
    #: How long a `*` (any time) outbound packet is waited for.
    ANY_WAIT_US = 60_000_000

    def __init__(self, script: Script, stack: str) -> None:
        self.script, self.stack = script, stack
        self.tolerance_us = int(script.options.get("tolerance_usecs", "4000"))
        self.tolerance_pct = float(script.options.get("tolerance_percent", "12.5"))
        self.env = model_env.Env()
        self.env.route.dev_mtu = int(script.options.get("mtu", "1500"))  # packetdrill's tun0 MTU
        self.cc = "cubic"
        self.now_us = 0
        self.last: tuple[int, bool] | None = None
        self.ep = None  # the DrillEndpoint once the handshake completed
        self.pending: list[packets.Seen] = []
        self.syn: dict | None = None
        self.fin_sent = False
        self.snapshots: list[tuple[int, dict[str, int]]] = []
        self.peer_ts = 0
        self.sock = model_calls.Sock()
        self.accepted_fd: int | None = None
        self.active: dict | None = None  # an active open's SYN: what it asked for, when
        self.nagle: dict[int, bool] = {}  # TCP_NODELAY and TCP_CORK as set before the connection
        self.blocked: tuple[int, int, Syscall] | None = None  # a blocking connect(): line, end, call
        self.user_timeout_ms = 0  # TCP_USER_TIMEOUT (an accepted socket inherits the listener's)

    def run(self) -> None:
        for ev in self.script.events:
            start, end = self._adjust(ev)
            self._event(ev, start, end)
            self.last = (start, _inbound(ev))
        Engine._run_code(self)  # type: ignore[arg-type]
        if self.blocked is not None:
            raise Failed(self.blocked[0], "the blocking connect() had not returned by the end of the script")

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
            self._rto_user_timeout(ev.line)
            return
        self._advance(start)
        if isinstance(body, Packet):
            self._inbound(ev, body)
        elif isinstance(body, Syscall):
            if ev.time.blocking_end_us is not None:
                # packetdrill runs it on its own thread: the script goes on from its start; its
                # return is checked when the SYN-ACK comes (the end shifted as the start was).
                if body.name != "connect":
                    raise Unsupported(ev.line, "blocking system calls other than connect() not modelled")
                self.blocked = (ev.line, ev.time.blocking_end_us + start - ev.time.start_us, body)
                self._connect(ev.line, value(body.args[0]))
                return
            self._syscall(ev, body)
        elif isinstance(body, Shell):
            self.shell(ev.line, body.command)
        elif isinstance(body, Code):
            self._snapshot(ev, body)
        self._rto_user_timeout(ev.line)

    def _rto_user_timeout(self, line: int) -> None:
        if self.user_timeout_ms and self.ep is not None and dict(self.ep.tcp_info())["tcpi_retransmits"]:
            raise Unsupported(line, "TCP_USER_TIMEOUT with an RTO (tcp_write_timeout(), "
                              "tcp_clamp_rto_to_user_timeout()): not modelled")

    def shell(self, line: int, command: str) -> None:
        generation = self.env.route.generation
        try:
            model_env.apply(self.env, command, Path(self.script.path).resolve().parent)
        except model_env.NotModelled as e:
            raise Unsupported(line, str(e)) from None
        self.cc = self.env.sysctls.get("tcp_congestion_control", self.cc)
        if self.ep is not None and self.env.route.generation != generation and self.stack == "linux":
            self.ep.route_changed(self.env.route.path_mtu())
        if self.env.device_drops and self.stack != "linux":
            raise Unsupported(line, "a device that drops every packet: modelled on the linux model only")
        if self.ep is not None:
            if self.env.device_drops and dict(self.ep.tcp_info())["tcpi_unacked"]:
                raise Unsupported(line, "a device that drops every packet with data in flight (retransmissions "
                                  "it refuses): not modelled")
            self.ep.set_xmit_refused(self.now_us * NS_PER_US, self.env.device_drops)

    def _advance(self, t_us: int) -> None:
        self.now_us = max(self.now_us, t_us)
        while (d := self._rx_deadline()) is not None and d <= self.now_us * NS_PER_US:
            self._rx_fire(d)
        if self.ep is not None:
            self.ep.advance(self.now_us * NS_PER_US)
            self._collect()

    def _rx_deadline(self) -> int | None:
        return self.rx.deadline() if self.rx is not None and self.ep is not None else None

    def _rx_fire(self, d: int) -> None:
        """The sender's timers up to the receiver's at `d`, then the receiver's."""
        self.ep.advance(d)
        self._collect()
        self.rx.advance(d)
        self._rx_flush()

    # Inbound ------------------------------------------------------------------------------------
    def _inbound(self, ev: Event, p: Packet) -> None:
        if p.icmp is not None:
            raise Unsupported(ev.line, "inbound ICMP not modelled")
        if "R" in p.flags:
            raise Unsupported(ev.line, "inbound RST not modelled")
        if self.env.device_drops or (self.ep is not None and self.ep.timed_out()):
            raise Unsupported(ev.line, "an inbound packet while the device drops every packet or after a "
                              "timeout: not modelled")
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
        if "." in p.flags and self.active is not None and self.ep is None:
            self._synack(ev, p)
            return
        if "." in p.flags or self.syn is not None or self.active is not None:
            raise Unsupported(ev.line, "only one passive or active open is modelled")
        opts = {o.kind: o.values for o in (p.options or ())}
        want_ts = "TS" in opts and self.env.sysctls.get("tcp_timestamps", "1") != "0"
        sack = "sackOK" in opts and self.env.sysctls.get("tcp_sack", "1") != "0"
        ecn = "E" in p.flags and "W" in p.flags and self.env.sysctls.get("tcp_ecn", "2") in ("1", "2")
        # tcp_conn_request(): with tcp_syncookies=2 every SYN gets a cookie (`if ((syncookies ==
        # 2 || inet_csk_reqsk_queue_is_full(sk)) && !isn)`), and then `if (!tmp_opt.tstamp_ok)
        # inet_rsk(req)->ecn_ok = 0;` (the ECN bit rides in the TS val).
        cookie = self.env.sysctls.get("tcp_syncookies") == "2"
        ecn = ecn and (want_ts or not cookie)
        clamp = self._mss_clamp(opts.get("mss", (536,))[0])
        self.syn = {"ts": want_ts, "sack": sack, "ecn": ecn, "wscale": opts.get("wscale", (None,))[0],
                    "clamp": clamp, "mss": self._mss(clamp, want_ts), "t": self.now_us, "cookie": cookie}
        own_mss = self._advmss()
        # tcp_openreq_init_rwin(): the window in whole MSS less the TS option.
        self._rx_new(own_mss, own_mss - (12 if want_ts else 0), self.syn["wscale"] is not None, sack)
        ts = model_cookie.init_timestamp_ms(self._ts(), self.syn["wscale"], sack, ecn) if cookie else None
        o = self._syn_options(ev.line, want_ts, sack, self.syn["wscale"] is not None, self.peer_ts, ts)
        self._emit(0x12 | (0x40 if ecn else 0), 0, 0, o, self.now_us, win=self.rx.syn_fields()[1], ack=1)

    def _syn_options(self, line: int, ts: bool, sack: bool, wscale: bool, ecr: int,
                     tsval: int | None = None) -> list[tuple[int, bytes]]:
        """tcp_options_write(): MSS; SACK-permitted and TS together, else NOP NOP TS or NOP NOP
        SACK-permitted; NOP and window scale."""
        o: list[tuple[int, bytes]] = [(2, struct.pack("!H", self._advmss()))]
        if ts:
            val = (self._ts() if tsval is None else tsval) % (1 << 32)  # a cookie TS may wrap below 0
            o += ([(4, b"")] if sack else [(1, b""), (1, b"")]) + [(8, struct.pack("!II", val, ecr))]
        elif sack:
            o += [(1, b""), (1, b""), (4, b"")]
        if wscale:
            o += [(1, b""), (3, bytes([self.rx.syn_fields()[0]]))]
        return o

    # Active open (tcp_v4_connect() -> tcp_connect(); tcp_rcv_synsent_state_process()) ---------
    def _connect(self, line: int, fd: int) -> None:
        """The SYN: the options tcp_syn_options() asks for (sysctls tcp_timestamps, tcp_sack,
        tcp_window_scaling), ECE and CWR with tcp_ecn=1 (tcp_ecn_send_syn()). A SYN
        retransmission (1 s, TCP_TIMEOUT_INIT) is not modelled: a script that expects one is
        unsupported there."""
        if self.syn is not None or self.active is not None:
            raise Unsupported(line, "only one passive or active open is modelled")
        on = lambda name: self.env.sysctls.get(name, "1") != "0"  # noqa: E731 - the defaults are 1
        self.active = {"ts": on("tcp_timestamps"), "sack": on("tcp_sack"), "ws": on("tcp_window_scaling"),
                       "ecn": self.env.sysctls.get("tcp_ecn", "2") == "1", "t": self.now_us, "fd": fd}
        a = self.active
        self._rx_new(self._advmss(), self._advmss(), a["ws"], a["sack"])  # tcp_connect_init()
        self._emit(0x02 | (0xC0 if a["ecn"] else 0), 0, 0, self._syn_options(line, a["ts"], a["sack"], a["ws"], 0),
                   self.now_us, win=self.rx.syn_fields()[1])

    def _synack(self, ev: Event, p: Packet) -> None:
        """What both sides agreed to, the endpoint established from the SYN's RTT sample, the ACK
        (tcp_send_ack()), and a blocking connect() returns."""
        a, opts = self.active, {o.kind: o.values for o in (p.options or ())}
        ts = a["ts"] and "TS" in opts
        wscale = opts["wscale"][0] if a["ws"] and "wscale" in opts else None
        clamp = self._mss_clamp(opts.get("mss", (536,))[0])
        self.syn = {"ts": ts, "sack": a["sack"] and "sackOK" in opts, "ecn": a["ecn"] and "E" in p.flags,
                    "wscale": wscale, "t": a["t"], "clamp": clamp, "mss": self._mss(clamp, ts)}
        # RFC 7323 §2.2: the SYN-ACK's window is not scaled.
        self._establish(ev, p.win or 0)
        self.accepted_fd = a["fd"]
        self.rx.accept()
        ack, win, sacks = self._rx_fields(self.now_us)
        self._emit(0x10, 1, 0, self._ts_opts() + sacks, self.now_us, win=win, ack=ack)
        if self.blocked is not None:
            line, end, call = self.blocked
            self.blocked = None
            self.check_time(line, ABSOLUTE, end, None, self.now_us, "system call return")
            if call.result != 0:
                raise Failed(line, f"Expected result {call.result} but got 0")

    def _advmss(self) -> int:
        """The MSS this end advertises: the route's (dst_metric_advmss(): its advmss, else its MTU
        less 40; model_route.py) clamped by TCP_MAXSEG (tcp_mss_clamp())."""
        own = self.env.route.advmss_bytes()
        return min(own, self.sock.user_mss) if self.sock.user_mss else own

    def _mss_clamp(self, peer_mss: int) -> int:
        """tp->rx_opt.mss_clamp: the peer's MSS, at most TCP_MAXSEG's (tcp_parse_options() with
        user_mss)."""
        return min(peer_mss, self.sock.user_mss) if self.sock.user_mss else peer_mss

    def _mss(self, clamp: int, ts: bool) -> int:
        """The connection's MSS: tcp_sync_mss() of the route's MTU, `pmtu - 40` at most the
        clamp (tcp_mtu_to_mss()), less the TS option."""
        return min(self.env.route.path_mtu() - 40, clamp) - (12 if ts else 0)

    def _handshake_ack(self, ev: Event, p: Packet) -> None:
        if self.syn is None or self.active is not None or p.ack != 1:
            raise Unsupported(ev.line, "an ACK before a modelled passive open")
        if self.syn.get("cookie"):
            # cookie_v4_check(): the connection is rebuilt from the cookie's MSS and the options
            # the ACK's TS ecr gives back (model_cookie.py); its first RTT is the ecr's
            # (treq->snt_synack = 0: tcp_synack_rtt_meas() falls back on the TS option).
            syn = model_cookie.rebuild(self.syn, any(o.kind == "TS" for o in (p.options or ())), self.env.sysctls)
            if syn is None:
                raise Unsupported(ev.line, "a SYN cookie refused (an option turned off since the SYN): not modelled")
            syn["clamp"] = model_cookie.cookie_mss(syn["clamp"])
            syn["mss"] = self._mss(syn["clamp"], syn["ts"])
            self.syn = syn
        win = (p.win or 0) << (self.syn["wscale"] or 0)
        # tcp_create_openreq_child() sets max_window from this ACK before tcp_v4_syn_recv_sock()'s
        # tcp_sync_mss(), whose tcp_bound_to_half_wnd() caps the MSS at half of it.
        self.syn["mss"] = _bound_to_half_wnd(self.syn["mss"], win, 12 if self.syn["ts"] else 0)
        self._establish(ev, win)

    def _establish(self, ev: Event, win_bytes: int) -> None:
        """The endpoint, established now: the handshake's time is its first RTT sample."""
        s, route = self.syn, self.env.route
        rtt_us = self.now_us - s["t"]
        if s.get("cookie"):
            rtt_us = max(self.now_us // 1000 - model_cookie.init_timestamp_ms(
                s["t"] // 1000, s["wscale"], s["sack"], s["ecn"]), 1) * 1000 if s["ts"] else None
        # tcp_init_transfer(): `tcp_snd_cwnd_set(tp, tcp_init_cwnd(tp, __sk_dst_get(sk)));`
        flow = json.dumps({"iw_segments": route.init_cwnd()}) if route.init_cwnd() != 10 else None
        try:
            from tcplab._native import DrillEndpoint
            self.ep = DrillEndpoint(STACKS[self.stack], self.cc, s["mss"], s["sack"], s["ts"], s["wscale"] or 0,
                                    s["ecn"], self.now_us * NS_PER_US,
                                    None if rtt_us is None else rtt_us * NS_PER_US, win_bytes,
                                    flow_json=flow, hz=model_env.kernel_hz())
        except ValueError as e:
            raise Unsupported(ev.line, str(e)) from None
        if self.stack == "linux":
            probing = None
            if self.env.sysctls.get("tcp_mtu_probing", "0") == "2":
                probing = (int(self.env.sysctls.get("tcp_base_mss", "1024")),
                           int(self.env.sysctls.get("tcp_probe_threshold", "8")))
            self.ep.set_path_mtu(route.path_mtu(), s.get("clamp", s["mss"]), 12 if s["ts"] else 0, probing)
        self.ep.set_min_tso_segs(int(self.env.sysctls.get("tcp_min_tso_segs", "2")))
        if self.env.device_drops:
            raise Unsupported(ev.line, "a connection opened while the device drops every packet: not modelled")
        if self.user_timeout_ms:
            self.ep.set_user_timeout(self.user_timeout_ms)
        self.rx.established(s["mss"], s["wscale"] is not None, s["ts"])
        t = self.now_us * NS_PER_US
        for opt, on in self.nagle.items():
            (self.ep.set_nodelay if opt == SYMBOLS["TCP_NODELAY"] else self.ep.set_cork)(t, on)

    def _ack(self, ev: Event, p: Packet, ecr: int | None) -> None:
        if self._too_old_ack(p):
            return
        try:
            self._rx_segment(ev, p)
        except Unhandled as e:
            raise Unsupported(ev.line, str(e)) from None
        if "F" in p.flags and self.fin_sent:
            self.rx.ack_now(self.now_us * NS_PER_US)  # tcp_fin() in FIN_WAIT1/2: tcp_send_ack()
        sacks = [o.values for o in (p.options or ()) if o.kind == "sack"]
        blocks = [(v[i] - 1, v[i + 1] - 1) for v in sacks for i in range(0, len(v) - 1, 2)]
        ack = min(max((p.ack or 1) - 1, 0), self.ep.written())
        old = ack < dict(self.ep.tcp_info())["tcpi_bytes_acked"]
        if not (p.length and old and not blocks):
            # tcp_ack(): an ACK older than snd_una with no SACK changes nothing ("old_ack").
            ecr_ns = ecr * 1_000_000 if ecr else None
            self.ep.segment(self.now_us * NS_PER_US, ack, p.win or 0, blocks, "E" in p.flags, ecr_ns)
        self._rx_flush()
        self._collect()
        self.rx.ack_check(self.now_us * NS_PER_US)
        self._rx_flush()

    def _too_old_ack(self, p: Packet) -> bool:
        """tcp_ack() since 6.7: an ACK below snd_una - min(max_window, bytes_acked) ("do not
        accept ACK for bytes we never sent", RFC 5961 5.2) gets a challenge ACK
        (tcp_send_challenge_ack()) and the segment is dropped, its data too."""
        una = dict(self.ep.tcp_info())["tcpi_bytes_acked"]
        self.max_window = max(self.max_window, (p.win or 0) << (self.syn["wscale"] or 0))
        if (p.ack or 0) - 1 >= una - min(self.max_window, una):
            return False
        self.rx.ack_now(self.now_us * NS_PER_US)
        self._rx_flush()
        return True

    # Outbound -----------------------------------------------------------------------------------
    def _ts(self, t_us: int | None = None) -> int:
        return (self.now_us if t_us is None else t_us) // 1000  # Linux's ms TS clock

    def _ts_opts(self, t_us: int | None = None) -> list[tuple[int, bytes]]:
        if not (self.syn and self.syn["ts"]):
            return []
        return [(1, b""), (1, b""), (8, struct.pack("!II", self._ts(t_us), self.peer_ts))]

    def _emit(self, flags: int, seq: int, length: int, opts: list[tuple[int, bytes]], t_us: int,
              win: int = 0, tos: int = 0, ack: int = 0) -> None:
        olen = sum(1 if k in (0, 1) else 2 + len(d) for k, d in opts)
        self.pending.append(packets.Seen(b"", b"", tos, 40 + olen + length, 0, 0, seq, ack, flags, win,
                                         list(opts), length, t_us))

    def _collect(self) -> None:
        for t_ns, seq, length, _retx, ecn, cwr, psh in self.ep.take_sent():
            # PSH as the endpoint's skbs give it (tcplab_sim::drill_skb: tcp_sendmsg_locked()'s
            # tcp_mark_push(), tso_fragment(), __tcp_transmit_skb()'s PSH on a TSO piece).
            flags = 0x10 | (0x08 if psh else 0) | (0x80 if cwr else 0)
            t_us = t_ns // NS_PER_US
            self.rx.advance(t_ns)  # the receiver's timers due before this segment
            self._rx_flush()
            ack, win, sacks = self._rx_fields(t_us)
            # seq + 1 wraps for a window probe before any data was acknowledged (snd_una - 1).
            self._emit(flags, (seq + 1) & 0xFFFFFFFF, length, self._ts_opts(t_us) + sacks, t_us, win=win, tos=ecn,
                       ack=ack)

    def _outbound(self, ev: Event, p: Packet, start: int, end: int | None) -> None:
        if "S" in p.flags and "." not in p.flags and self.active is not None and not self.pending:
            raise Unsupported(ev.line, "a SYN retransmission: not modelled on the linux model")
        if "strict_segments" in self.script.options and p.length and self.stack == "linux" and self.env.route.tso:
            raise Unsupported(ev.line, "--strict_segments with TSO on: the model gives MSS segments, not TSO packets")
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
            ds = [x for x in (self.ep.deadline() if self.ep is not None else None, self._rx_deadline()) if x is not None]
            if not ds or min(ds) // NS_PER_US > limit_us:
                return None
            if min(ds) == self._rx_deadline():
                self._rx_fire(min(ds))
            else:
                self.ep.advance(min(ds))
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
        timed_out = self.ep is not None and self.ep.timed_out()
        if name in ("write", "send", "sendmsg") and timed_out:
            # tcp_sendmsg_locked() on a closed socket: sk_stream_wait_connect() returns sock_error().
            if call.errno != "ETIMEDOUT":
                raise CallFailed(f"Expected result {call.result} but got -1 ETIMEDOUT (the connection timed out)")
            return -1
        if call.errno and not (name == "connect" and call.errno == "EINPROGRESS" and self.sock.nonblock):
            raise Unhandled(f"{name}() failing with {call.errno}: not modelled")
        if name in ("socket", "bind", "listen"):
            return call.result if name == "socket" else 0
        if name == "accept":
            if self.ep is None:
                raise Unhandled("accept() before the handshake completed: not modelled")
            self.accepted_fd = call.result
            self.rx.accept()
            return call.result
        if name in ("read", "recv"):
            if name == "recv" and value(a[3]) != 0:
                raise Unhandled("recv() with flags: not modelled")
            return self._rx_read(a)
        if name == "getsockopt":
            conn = self.ep is not None and value(a[0]) == self.accepted_fd
            mss = dict(self.ep.tcp_info())["tcpi_snd_mss"] if conn else None
            return model_calls.getsockopt(self.sock, a, mss)
        if name == "fcntl":
            return model_calls.fcntl(self.sock, a)
        if name == "setsockopt":
            return self._setsockopt(a)
        if name in ("write", "send", "sendmsg"):
            n, flags = _send_args(name, a)
            if flags & ~(SYMBOLS["MSG_EOR"] | SYMBOLS["MSG_MORE"]):
                raise Unhandled(f"{name}() with flags {flags:#x}: not modelled (MSG_EOR and MSG_MORE are)")
            if self.ep is None:
                raise Unhandled(f"{name}() before the connection is established")
            self.ep.send(self.now_us * NS_PER_US, n, bool(flags & SYMBOLS["MSG_EOR"]), bool(flags & SYMBOLS["MSG_MORE"]))
            self._collect()
            return n
        if name == "close":
            return self._close(value(a[0]))
        if name == "connect" and call.errno == "EINPROGRESS" and self.sock.nonblock:
            self._connect(ev.line, value(a[0]))
            return -1
        raise Unhandled(f"{name}(): not modelled")

    def _setsockopt(self, a: tuple) -> int:
        level, opt = value(a[1]), value(a[2])
        raw = a[3][0] if isinstance(a[3], list) and a[3] else a[3]
        if not isinstance(raw, Text) and model_calls.setsockopt(self.sock, level, opt, value(raw), self.ep is not None):
            return 0
        if not isinstance(raw, Text) and self._rx_setsockopt(level, opt, value(raw)):
            return 0
        if (level, opt) == (SYMBOLS["SOL_SOCKET"], SYMBOLS["SO_REUSEADDR"]):
            return 0
        if (level, opt) == (SYMBOLS["SOL_SOCKET"], SYMBOLS["SO_SNDBUF"]):
            return 0  # the model's buffer (tcp_wmem[2]) holds every write of the suites' scripts
        if (level, opt) == (SYMBOLS["SOL_TCP"], SYMBOLS["TCP_CONGESTION"]) and isinstance(a[3], Text):
            if self.ep is not None:
                raise Unhandled("TCP_CONGESTION on an established connection: not modelled")
            self.cc = str(a[3])
            return 0
        if (level, opt) in ((SYMBOLS["SOL_TCP"], SYMBOLS["TCP_NODELAY"]), (SYMBOLS["SOL_TCP"], SYMBOLS["TCP_CORK"])):
            # tp->nonagle: an accepted socket inherits the listener's (the child is its clone).
            on = bool(value(raw))
            self.nagle[opt] = on
            if self.ep is not None:
                (self.ep.set_nodelay if opt == SYMBOLS["TCP_NODELAY"] else self.ep.set_cork)(self.now_us * NS_PER_US, on)
                self._collect()
            return 0
        if (level, opt) == (SYMBOLS["SOL_TCP"], SYMBOLS["TCP_USER_TIMEOUT"]) and self.stack == "linux" \
                and not isinstance(raw, Text):
            # do_tcp_setsockopt(): `if (val < 0) return -EINVAL; icsk_user_timeout = val` (ms).
            if value(raw) < 0:
                raise Unhandled("setsockopt TCP_USER_TIMEOUT failing with EINVAL: not modelled")
            self.user_timeout_ms = value(raw)
            if self.ep is not None:
                self.ep.set_user_timeout(self.user_timeout_ms)
            return 0
        if (level, opt) == (SYMBOLS["SOL_IP"], SYMBOLS["IP_TOS"]):
            # The DSCP bits: packetdrill compares a packet's ToS byte only for the ECN field a
            # script gives; the route refresh it may cause (ip_setsockopt() -> sk_dst_reset())
            # changes nothing the model sends.
            return 0
        prefix = {SYMBOLS["SOL_SOCKET"]: "SO_", SYMBOLS["SOL_TCP"]: "TCP_", SYMBOLS["SOL_IP"]: "IP_"}.get(level, "?")
        names = [k for k, v in SYMBOLS.items() if k.startswith(prefix) and v == opt and not k.startswith("IP_PMTU")]
        raise Unhandled(f"setsockopt {names[0] if names else f'level {level} option {opt}'}: not modelled")

    def _close(self, fd: int) -> int:
        if fd != self.accepted_fd:
            if self.ep is None and self.syn is not None:
                raise Unhandled("close() of the listener with a connection not accepted: not modelled")
            if self.ep is None:
                self._new_socket()  # the listener goes: a later socket() starts afresh
            return 0
        if self.ep is None or self.ep.timed_out():
            return 0  # tcp_write_err() purged the queue and closed the connection: nothing to send
        if self._rx_unread():
            # tcp_close(): unread data aborts the connection (tcp_send_active_reset()). The RST
            # goes to a socket the script no longer holds; the model sends none and forgets
            # the connection, so that the script may open another.
            self.ep = self.rx = self.syn = self.active = self.accepted_fd = None
            return 0
        if dict(self.ep.tcp_info())["tcpi_notsent_bytes"]:
            raise Unhandled("close() with unsent data: FIN on a data segment not modelled")
        ack, win, sacks = self._rx_fields(self.now_us)
        self.fin_sent = True
        self._emit(0x11, self.ep.written() + 1, 0, self._ts_opts() + sacks, self.now_us, win=win, ack=ack)
        return 0

    def _new_socket(self) -> None:
        """Nothing left of the last connection: the next socket() has the defaults."""
        self.sock, self.nagle, self.rcvbuf_opt, self.fin_sent = model_calls.Sock(), {}, None, False

    def _snapshot(self, ev: Event, body: Code) -> None:
        if self.ep is None:
            raise Unsupported(ev.line, "tcp_info before the connection is established: not modelled")
        info = dict(self.ep.tcp_info())
        info["tcpi_advmss"] = self._advmss()  # tp->advmss: tcp_mss_clamp() of the route's MSS
        info.update(self._rx_info())
        info.update(_options_info(self.syn, info.get("tcpi_rcv_wscale", 0)))
        missing = sorted(set(_INFO.findall(body.text)) - set(info))
        if missing:
            raise Unsupported(ev.line, f"tcp_info field {missing[0]} not modelled")
        self.snapshots.append((ev.line, info))


def _bound_to_half_wnd(mss: int, max_window: int, opt_bytes: int) -> int:
    """tcp_bound_to_half_wnd() (include/net/tcp.h): `if (tp->max_window > TCP_MSS_DEFAULT)
    cutoff = (tp->max_window >> 1); else cutoff = tp->max_window; if (cutoff && pktsize >
    cutoff) return max_t(int, cutoff, 68U - tp->tcp_header_len);`."""
    cutoff = max_window >> 1 if max_window > 536 else max_window
    return max(cutoff, 68 - 20 - opt_bytes) if cutoff and mss > cutoff else mss


def _options_info(syn: dict, rcv_wscale: int) -> dict[str, int]:
    """tcp_get_info()'s options: `if (tp->rx_opt.tstamp_ok) info->tcpi_options |=
    TCPI_OPT_TIMESTAMPS; if (tcp_is_sack(tp)) ... TCPI_OPT_SACK; if (tp->rx_opt.wscale_ok) {
    ... TCPI_OPT_WSCALE; info->tcpi_snd_wscale = tp->rx_opt.snd_wscale; info->tcpi_rcv_wscale =
    tp->rx_opt.rcv_wscale; } if (tp->ecn_flags & TCP_ECN_OK) ... TCPI_OPT_ECN`."""
    ws = syn["wscale"] is not None
    opts = (1 if syn["ts"] else 0) | (2 if syn["sack"] else 0) | (4 if ws else 0) | (8 if syn["ecn"] else 0)
    return {"tcpi_options": opts, "tcpi_snd_wscale": syn["wscale"] if ws else 0,
            "tcpi_rcv_wscale": rcv_wscale if ws else 0}


def _send_args(name: str, a: tuple) -> tuple[int, int]:
    """The bytes and flags of write(fd, buf, n), send(fd, buf, n, flags) or sendmsg(fd, msg,
    flags) (the iovecs' lengths added; a msghdr with control messages is not modelled)."""
    if name == "write":
        return value(a[2]), 0
    if name == "send":
        return value(a[2]), value(a[3])
    fields = dict(a[1].items) if isinstance(a[1], Struct) else {}
    if "msg_iov" not in fields or "msg_control" in fields:
        raise Unhandled("sendmsg() without msg_iov or with control messages: not modelled")
    return sum(value(e.items[-1][1]) for e in fields["msg_iov"][1]), value(a[2])


def _inbound(ev: Event) -> bool:
    return isinstance(ev.body, Packet) and ev.body.direction == "<"


def _text(s: packets.Seen) -> str:
    opts = ",".join(packets.option_text(k, d) for k, d in s.options)
    return f"{packets.flags_text(s.flags)} {s.seq}:{s.seq + s.payload_len}({s.payload_len}) ack {s.ack}" + \
        (f" <{opts}>" if opts else "")


def static_problems(script: Script, mtu_and_ipv6: bool = False) -> tuple[int | None, str] | None:
    """What stops a model run before it starts (line, what). `mtu_and_ipv6`: the target runs IPv6
    too (the FreeBSD and rfc targets); every target takes --mtu (linux: model_route.py)."""
    if script.ip_version() not in (("ipv4", "ipv6") if mtu_and_ipv6 else ("ipv4",)):
        runs = "IPv4 and IPv6" if mtu_and_ipv6 else "IPv4"
        return None, f"--ip_version={script.ip_version()}: the model target runs {runs} scripts"
    for line, why in script.unsupported:
        return line, why
    known = {"ip_version", "tolerance_usecs", "tolerance_percent", "mtu", "mss", "strict_segments", "debug", "verbose"}
    for k in script.options:
        if k not in known:
            return None, f"--{k}: not supported by the model target"
    return None

"""The FreeBSD model targets (`freebsd`, `freebsd-rack`): the model engine with FreeBSD's
connection setup (passive open as syncache_add()/syncache_respond(), active open as
tcp_connect()/tcp_output() with SYN retransmission, simultaneous open), its wire format
(wire_freebsd.py), a receiving half (`_native.DrillReceiver`: tcp_do_segment()'s data path, the
SACK list, delayed ACKs, the window), its sysctls (env_freebsd.py) and tcp_fill_info()
(tcpinfo_freebsd.py). The sender is the stack model's, as for the linux target."""

from __future__ import annotations

import dataclasses
import json

from . import env_freebsd, packets, tcpinfo_freebsd, wire_freebsd as wire
from .calls import SYMBOLS, Unhandled, value
from .engine import Failed, Unsupported
from .model import NS_PER_US, ModelEngine
from .model_env import NotModelled
from .syntax import ABSOLUTE, Event, Packet, Syscall

#: FreeBSD socket options the suites set (netinet/tcp.h): TCP_NOOPT, TCP_KEEPINIT.
TCP_NOOPT, TCP_KEEPINIT = 8, 128
ERRNO = {"ETIMEDOUT": 110, 0: 0}


class FreeBSDEngine(ModelEngine):
    """One run of a script on the FreeBSD default or RACK stack model."""

    MODELS_RCV_WINDOW = True
    #: Two TCPTV_REXMTMAX (64 s) backoffs: a `*` SYN retransmission comes within that.
    ANY_WAIT_US = 130_000_000

    def __init__(self, script, target: str, nic=None) -> None:  # noqa: ANN001 - syntax.Script, nic_freebsd.Nic
        stack, _, version = target.partition("@")
        super().__init__(script, stack)
        self.version = version or "2023"
        self.k = env_freebsd.Knobs(stack=stack)
        if nic is not None:  # --nic; the script's ifconfig lines change this copy
            self.k.nic = dataclasses.replace(nic)
        self.cc = self.k.cc
        self.mtu = int(script.options.get("mtu", "1500"))
        # IPv6 changes only the header the MSS leaves room for: the model's segments are compared
        # by their TCP fields and lengths, as for IPv4.
        self.v6 = script.ip_version() == "ipv6"
        self.state = "TCPI_CLOSED"
        self.rx = None  # DrillReceiver once established
        self.opening = None  # DrillOpen in SYN_SENT
        self.conn_fd: int | None = None
        self.so_error = 0
        self.nonblock = False
        self.noopt = False
        self.keepinit_ns: int | None = None
        self.neg: dict = {}  # negotiated: maxseg, ts, sack, snd_scale, rcv_scale, ecn, syn_win, req

    # Commands -----------------------------------------------------------------------------------
    def shell(self, line: int, command: str) -> None:
        try:
            env_freebsd.apply(self.k, command)
        except NotModelled as e:
            raise Unsupported(line, str(e)) from None
        if self.k.stack != self.stack:
            raise Unsupported(line, f"net.inet.tcp.functions_default selects the {self.k.stack} stack: "
                                    f"run this script with --target {self.k.stack}")
        self.cc = self.k.cc

    # A blocking connect() -------------------------------------------------------------------------
    def _event(self, ev: Event, start: int, end: int | None) -> None:
        t = ev.time
        if isinstance(ev.body, Syscall) and t.blocking_end_us is not None:
            # packetdrill runs a blocking call on its own thread: the script goes on from the
            # call's start; its result and return time are checked when it returns.
            if ev.body.name != "connect" or t.kind != ABSOLUTE or self.nonblock:
                raise Unsupported(ev.line, "blocking system calls other than a blocking connect() not modelled")
            self._advance(start)
            self.blocked = (ev.line, start, t.blocking_end_us, ev.body)
            self._start_connect(value(ev.body.args[0]))
            return
        super()._event(ev, start, end)

    def _unblock(self, t_us: int, result: int, errno: str | None) -> None:
        """The blocking connect() returns at `t_us`: time (verify_time) and outcome checked."""
        if self.blocked is None:
            return
        line, start, end, call = self.blocked
        self.blocked = None
        self.check_time(line, ABSOLUTE, end, None, t_us, "system call return")
        if (result, errno) != (call.result, call.errno):
            want, got = f"{call.result} {call.errno or ''}".strip(), f"{result} {errno or ''}".strip()
            raise Failed(line, f"Expected result {want} but got {got}")

    def run(self) -> None:
        self.blocked = None
        super().run()
        if self.blocked is not None:
            raise Failed(self.blocked[0], "the blocking connect() had not returned by the end of the script")

    # Timers -------------------------------------------------------------------------------------
    def _deadline(self) -> int | None:
        ds = [o.deadline() for o in (self.ep, self.rx, self.opening) if o is not None]
        ds = [d for d in ds if d is not None]
        return min(ds) if ds else None

    def _fire(self, t_ns: int) -> None:
        """Every timer due by `t_ns`, in time order."""
        while (d := self._deadline()) is not None and d <= t_ns:
            if self.opening is not None and self.opening.deadline() == d:
                self._syn_timer(d)
            elif self.rx is not None and self.rx.deadline() == d:
                self._ack(d // NS_PER_US)
            else:
                self.ep.advance(d)
                self._collect()

    def _advance(self, t_us: int) -> None:
        self._fire(max(self.now_us, t_us) * NS_PER_US)  # each timer at its own time
        self.now_us = max(self.now_us, t_us)
        if self.ep is not None:
            self.ep.advance(self.now_us * NS_PER_US)
            self._collect()

    def _next_packet(self, limit_us: int) -> packets.Seen | None:
        while not self.pending:
            d = self._deadline()
            if d is None or d // NS_PER_US > limit_us:
                return None
            self._fire(d)
        return self.pending.pop(0)

    # Segments out -------------------------------------------------------------------------------
    def _out(self, flags: int, seq: int, length: int, opts: list, t_us: int, ack: int, win: int, tos: int = 0) -> None:
        olen = sum(1 if k in (0, 1) else 2 + len(d) for k, d in opts)
        self.pending.append(packets.Seen(b"", b"", tos, 40 + olen + length, 0, 0, seq, ack, flags, win,
                                         list(opts), length, t_us))

    def _ts(self, t_us: int | None = None) -> int:
        return wire.ts_val(self.now_us if t_us is None else t_us)

    def _seg_opts(self, t_us: int, sacks: list) -> list:
        """tcp_addoptions() for an established segment: TS when both sides use it, SACK blocks."""
        ts = (self._ts(t_us), self.peer_ts) if self.neg.get("ts") else None
        return wire.addoptions(ts=ts, sacks=[(s, e) for s, e in sacks])

    def _snd_max(self) -> int:
        return 1 + (self.ep.written() if self.ep is not None else 0) + int(self.fin_sent)

    def _ack(self, t_us: int, flags: int = 0x10) -> None:
        """tcp_output() with nothing to send but an ACK (or a FIN): seq snd_max, the receiver's fields."""
        ack, win, sacks = self.rx.sent()
        seq = self._snd_max() - (1 if flags & 0x01 else 0)
        self._out(flags, seq, 0, self._seg_opts(t_us, sacks), t_us, ack, win)

    def _collect(self) -> None:
        if self.ep is None:
            return
        written = self.ep.written()
        for t_ns, seq, length, _retx, ecn, cwr, _psh in self.ep.take_sent():
            t_us = t_ns // NS_PER_US
            ack, win, sacks = self.rx.sent()
            # tcp_output(): PSH when the segment reaches the end of the send buffer
            # (`off + len == sbused(&so->so_snd)`).
            flags = 0x10 | (0x08 if seq + length == written else 0) | (0x80 if cwr else 0)
            self._out(flags, seq + 1, length, self._seg_opts(t_us, sacks), t_us, ack, win, tos=ecn)

    # Connection setup ---------------------------------------------------------------------------
    def _want(self) -> tuple[bool, bool, bool]:
        """(window scaling, timestamps, SACK) this host asks for (net.inet.tcp.rfc1323 1 both, 2
        scaling only, 3 timestamps only; sack.enable; TCP_NOOPT none)."""
        if self.noopt:
            return False, False, False
        return self.k.rfc1323 in (1, 2), self.k.rfc1323 in (1, 3), self.k.sack

    def _syn_opts(self, ws: bool, ts: bool, sack: bool, shift: int = 0) -> list:
        if self.noopt:
            return []
        if shift >= 3 and self.k.rexmit_drop_options:
            # tcp_timer_rexmt(): `if (tcp_rexmit_drop_options && (tp->t_state == TCPS_SYN_SENT)
            # && (tp->t_rxtshift == 3)) tp->t_flags &= ~(TF_REQ_SCALE|TF_REQ_TSTMP|TF_SACK_PERMIT)`.
            ws = ts = sack = False
        return wire.addoptions(mss=wire.mss_option(self.mtu, self.v6),
                               wscale=wire.wscale_for(self.k.sb_max) if ws else None,
                               sackperm=sack, ts=(self._ts(), self.peer_ts if self.state != "TCPI_SYN_SENT" else 0)
                               if ts else None)

    def _send_syn(self, shift: int) -> None:
        ws, ts, sack = self._want()
        flags = 0x02 | wire.syn_ecn_flags(self.k, shift)
        win = wire.syn_window(self.k.recvspace)
        self._out(flags, 0, 0, self._syn_opts(ws, ts, sack, shift), self.now_us, 0, win)

    def _syn_timer(self, t_ns: int) -> None:
        self.now_us = max(self.now_us, t_ns // NS_PER_US)
        shift = self.opening.fire(t_ns)
        if shift is None:  # tcp_drop(tp, ETIMEDOUT)
            self.opening, self.state, self.so_error = None, "TCPI_CLOSED", ERRNO["ETIMEDOUT"]
            self._unblock(self.now_us, -1, "ETIMEDOUT")
        else:
            self._send_syn(shift)

    def _inbound(self, ev: Event, p: Packet) -> None:
        if p.icmp is not None or "R" in p.flags:
            raise Unsupported(ev.line, "inbound ICMP and RST not modelled")
        ts = [o.values for o in (p.options or ()) if o.kind == "TS"]
        if ts:
            self.peer_ts = ts[0][0]
        if "S" in p.flags:
            self._syn_in(ev, p)
            return
        if self.rx is None:
            if self.state != "TCPI_SYN_RECEIVED" or p.ack != 1:
                raise Unsupported(ev.line, "a segment before the connection is set up: not modelled")
            self._establish(ev, p)
        self._segment(ev, p, ts[0][1] if ts else None)

    def _syn_in(self, ev: Event, p: Packet) -> None:
        opts = {o.kind: o.values for o in (p.options or ())}
        if "." in p.flags:
            if self.state != "TCPI_SYN_SENT" or p.ack != 1:
                raise Unsupported(ev.line, "a SYN-ACK outside SYN_SENT: not modelled")
            self.opening = None
            self._negotiate(p, opts)
            self._establish(ev, p)
            self._ack(self.now_us)
            self._unblock(self.now_us, 0, None)
            return
        if self.state not in ("TCPI_LISTEN", "TCPI_SYN_SENT") or self.neg:
            raise Unsupported(ev.line, "a second SYN: not modelled")
        simultaneous = self.state == "TCPI_SYN_SENT"
        self.opening = None
        self._negotiate(p, opts)
        n = self.neg
        # syncache_respond() (passive) / tcp_output() in SYN_RECEIVED (simultaneous open): MSS,
        # window scale, SACK-permitted, TS as agreed; window min(space, TCP_MAXWIN); ECE when the
        # SYN asked for ECN (tcp_ecn_syncache_respond()).
        space = n["hiwat"] if simultaneous else self.k.recvspace
        n["syn_win"] = wire.syn_window(space)
        o = wire.addoptions(mss=wire.mss_option(self.mtu, self.v6), wscale=n["rcv_scale"] if n["ws"] else None,
                            sackperm=n["sack"], ts=(self._ts(), self.peer_ts) if n["ts"] else None)
        if self.noopt:
            o = []
        self.state = "TCPI_SYN_RECEIVED"
        self._syn_t = self.now_us
        self._out(0x12 | (0x40 if n["ecn"] else 0), 0, 0, o, self.now_us, 1, n["syn_win"])

    def _negotiate(self, p: Packet, opts: dict) -> None:
        """What both sides agreed to (tcp_do_segment() in SYN_SENT; syncache_add())."""
        ws, ts, sack = self._want()
        ws, ts, sack = ws and "wscale" in opts, ts and "TS" in opts, sack and "sackOK" in opts
        maxseg = wire.maxseg(opts.get("mss", (None,))[0], self.mtu, self.v6)
        ecn = "E" in p.flags and ("W" in p.flags or "." in p.flags) and self.k.ecn in (1, 2)
        self.neg = {"ws": ws, "ts": ts, "sack": sack, "maxseg": maxseg, "ecn": ecn,
                    "snd_scale": min(opts["wscale"][0], 14) if ws else 0,
                    "rcv_scale": wire.wscale_for(self.k.sb_max) if ws else 0,
                    "hiwat": wire.rcv_hiwat(self.k, maxseg), "syn_win": wire.syn_window(self.k.recvspace)}

    def _establish(self, ev: Event, p: Packet) -> None:
        from tcplab._native import DrillEndpoint, DrillReceiver

        n = self.neg
        payload = n["maxseg"] - (12 if n["ts"] else 0)
        rtt_us = self.now_us - getattr(self, "_syn_t", self.now_us)
        flow = self._flow_fields(n["maxseg"])
        try:
            self.ep = DrillEndpoint(self.stack, self.cc, payload, n["sack"], n["ts"], n["snd_scale"], n["ecn"],
                                    self.now_us * NS_PER_US, rtt_us * NS_PER_US if rtt_us else None,
                                    (p.win or 0) << (n["snd_scale"] if "S" not in p.flags else 0), json.dumps(flow))
        except ValueError as e:
            raise Unsupported(ev.line, str(e)) from None
        delack = self.k.delack_ns
        self.rx = DrillReceiver(n["hiwat"], n["rcv_scale"], n["maxseg"], n["sack"], n["ts"], delack, 1, n["syn_win"])
        self.state = "TCPI_ESTABLISHED"

    def _flow_fields(self, maxseg: int) -> dict:
        """The endpoint's flow-config fields from the script's sysctls and the target's version."""
        return env_freebsd.flow_fields(self.k, self.stack, self.version, maxseg)

    def _open_timer(self) -> tuple[int, int, int, int]:
        """(initial, slop, minimum, retries) of the SYN timer: rexmit_initial, rexmit_slop,
        rexmit_min, TCP_MAXRXTSHIFT."""
        k = self.k
        return k.rexmit_initial_ns, k.rexmit_slop_ns, k.rexmit_min_ns, 12

    def _segment(self, ev: Event, p: Packet, ecr: int | None) -> None:
        now_ns = self.now_us * NS_PER_US
        fin = "F" in p.flags
        if p.length or fin:
            self.rx.segment(now_ns, p.seq, p.length, fin)
            if fin and self.state == "TCPI_ESTABLISHED":
                self.state = "TCPI_CLOSE_WAIT"
        if "." in p.flags and p.ack is not None:
            sacks = [o.values for o in (p.options or ()) if o.kind == "sack"]
            blocks = [(v[i] - 1, v[i + 1] - 1) for v in sacks for i in range(0, len(v) - 1, 2)]
            ack = min(max(p.ack - 1, 0), self.ep.written())
            self.ep.segment(now_ns, ack, p.win or 0, blocks, "E" in p.flags, ecr * 1_000_000 if ecr else None)
            self._collect()
            if self.fin_sent and p.ack == self._snd_max():
                self.state = {"TCPI_FIN_WAIT_1": "TCPI_FIN_WAIT_2", "TCPI_LAST_ACK": "TCPI_CLOSED",
                              "TCPI_CLOSING": "TCPI_TIME_WAIT"}.get(self.state, self.state)
        if fin and self.state in ("TCPI_FIN_WAIT_1", "TCPI_FIN_WAIT_2"):
            self.state = "TCPI_CLOSING" if self.state == "TCPI_FIN_WAIT_1" else "TCPI_TIME_WAIT"
        if self.rx.ack_due(now_ns):
            self._ack(self.now_us)

    # System calls -------------------------------------------------------------------------------
    def _call(self, ev: Event, call) -> int:  # noqa: ANN001 - syntax.Syscall
        name, a = call.name, call.args
        if name == "listen":
            self.state = "TCPI_LISTEN"
            return 0
        if name == "fcntl":
            return self._fcntl(a)
        if name == "getsockopt":
            return self._getsockopt(ev, a, call)
        if name == "connect":
            return self._connect(call)
        if name in ("write", "send") and self.nonblock and self.ep is not None:
            # sosend_generic() on a non-blocking socket copies what fits in so_snd, each copy's
            # tcp_output() growing the buffer (sendbuf_auto) before the next.
            if name == "send" and value(a[3]) != 0:
                raise Unhandled(f"{name}() with flags: not modelled")
            n = self.ep.write_nonblocking(self.now_us * NS_PER_US, value(a[2]))
            self._collect()
            if n == 0:
                raise Unhandled(f"{name}() on a full buffer (EAGAIN): not modelled")
            return n
        if name in ("recv", "read"):
            return self._recv(a, name)
        if name == "close":
            return self._close_fd(value(a[0]))
        if name == "accept":
            if self.ep is None:
                raise Unhandled("accept() before the handshake completed: not modelled")
            self.conn_fd = call.result
            return call.result
        if call.errno:
            raise Unhandled(f"{name}() failing with {call.errno}: not modelled")
        return super()._call(ev, call)

    def _setsockopt(self, a: tuple) -> int:
        if value(a[1]) == SYMBOLS["IPPROTO_TCP"] and a[2] in ("TCP_NOOPT", "TCP_KEEPINIT"):
            if a[2] == "TCP_NOOPT":
                self.noopt = bool(a[3][0])
            else:
                self.keepinit_ns = a[3][0] * 1_000_000_000  # seconds (tcp_ctloutput(): `ui * hz`)
            return 0
        return super()._setsockopt(a)

    def _fcntl(self, a: tuple) -> int:
        if a[1] == "F_GETFL":
            return SYMBOLS["O_RDWR"] | (SYMBOLS["O_NONBLOCK"] if self.nonblock else 0)
        if a[1] == "F_SETFL":
            self.nonblock = bool(value(a[2]) & SYMBOLS["O_NONBLOCK"])
            return 0
        raise Unhandled(f"fcntl {a[1]}: not modelled")

    def _getsockopt(self, ev: Event, a: tuple, call) -> int:  # noqa: ANN001
        opt = a[2]
        if opt == "SO_RCVBUF":
            got = self.rx.state()[3] if self.rx is not None else self.k.recvspace
        elif opt == "SO_ERROR":
            got = self.so_error
        else:
            raise Unhandled(f"getsockopt {opt}: not modelled")
        want = a[3][0] if isinstance(a[3], list) and a[3] else None
        if isinstance(want, str):
            want = ERRNO.get(want, want)
        if want is not None and want != "..." and want != got:
            raise Failed(ev.line, f"getsockopt {opt}: expected {a[3][0]} but got {got}")
        return 0

    def _connect(self, call) -> int:  # noqa: ANN001
        if not self.nonblock or call.errno != "EINPROGRESS":
            raise Unhandled("connect() other than non-blocking with EINPROGRESS: not modelled")
        self._start_connect(value(call.args[0]))
        return -1

    def _start_connect(self, fd: int) -> None:
        """tcp_connect() and the first SYN; TT_KEEP armed with TP_KEEPINIT."""
        from tcplab._native import DrillOpen

        self.state, self.conn_fd = "TCPI_SYN_SENT", fd
        k = self.k
        keepinit = self.keepinit_ns if self.keepinit_ns is not None else k.keepinit_ns
        self.opening = DrillOpen(self.now_us * NS_PER_US, *self._open_timer(), keepinit)
        self._syn_t = self.now_us
        self._send_syn(0)

    def _syscall(self, ev: Event, call) -> None:  # noqa: ANN001
        if call.name == "connect" and call.errno == "EINPROGRESS" and call.result == -1:
            try:
                self._connect(call)
            except Unhandled as e:
                raise Unsupported(ev.line, str(e)) from None
            return
        super()._syscall(ev, call)

    def _recv(self, a: tuple, name: str) -> int:
        if self.rx is None:
            raise Unhandled(f"{name}() before the connection is established: not modelled")
        flags = value(a[3]) if name == "recv" and len(a) > 3 else 0
        peek = bool(flags & SYMBOLS["MSG_PEEK"])
        if flags & ~SYMBOLS["MSG_PEEK"]:
            raise Unhandled(f"{name}() flags other than MSG_PEEK: not modelled")
        readable, fin, _, _ = self.rx.state()
        if readable == 0 and not fin:
            raise Unhandled(f"{name}() with nothing to read (EAGAIN or blocking): not modelled")
        got, update = self.rx.read(value(a[2]), peek)
        if update:  # tcp_usr_rcvd() -> tcp_output(): a window update
            self._ack(self.now_us)
        return got

    def _close_fd(self, fd: int) -> int:
        if fd != self.conn_fd:
            return 0  # the listening socket: the syncache holds nothing the scripts use
        if self.state in ("TCPI_SYN_SENT", "TCPI_SYN_RECEIVED", "TCPI_CLOSED"):
            # tcp_usrclosed(): before ESTABLISHED nothing is sent (SYN_RECEIVED keeps TF_NEEDFIN).
            self.opening = None
            self.state = "TCPI_CLOSED" if self.state != "TCPI_SYN_RECEIVED" else self.state
            return 0
        if self.ep.written() + 1 > self._snd_max() - int(self.fin_sent) or \
                dict(self.ep.tcp_info())["tcpi_notsent_bytes"]:
            raise Unhandled("close() with unsent data: FIN on a data segment not modelled")
        closing = {"TCPI_ESTABLISHED": "TCPI_FIN_WAIT_1", "TCPI_CLOSE_WAIT": "TCPI_LAST_ACK"}
        self.state = closing.get(self.state, self.state)
        self.fin_sent = True
        self._ack(self.now_us, flags=0x11)
        return 0

    # Code blocks --------------------------------------------------------------------------------
    def _snapshot(self, ev: Event, body) -> None:  # noqa: ANN001 - syntax.Code
        n = self.neg
        raw = dict(self.ep.raw_state()) if self.ep is not None else None
        rcv = None
        if self.rx is not None:
            rcv = (self.rx.state()[2], max(0, self.rx.state()[3] - self.rx.state()[0]))
        info = tcpinfo_freebsd.fill(self.state, {"TCPI_OPT_TIMESTAMPS": n.get("ts", False),
                                                 "TCPI_OPT_SACK": n.get("sack", False),
                                                 "TCPI_OPT_WSCALE": n.get("ws", False),
                                                 "TCPI_OPT_ECN": n.get("ecn", False)},
                                    n.get("maxseg", wire.mss_option(self.mtu, self.v6)), raw, rcv,
                                    (n.get("snd_scale", 0), n.get("rcv_scale", 0)))
        from .model import _INFO

        missing = sorted(set(_INFO.findall(body.text)) - set(info) - set(tcpinfo_freebsd.STATES))
        if missing:
            raise Unsupported(ev.line, f"tcp_info field {missing[0]} not filled by tcp_fill_info() or not modelled")
        info.update(tcpinfo_freebsd.STATES)
        info.update(tcpinfo_freebsd.OPTIONS)
        self.snapshots.append((ev.line, info))


def version_problem(target: str) -> str | None:
    """Why `target` is not a FreeBSD target with a version (`freebsd@15.0-2025`), or None: the
    versions are the spec's (`stack = "freebsd@15.0-2025"`, docs/models.md)."""
    from tcplab.spec.senders import STACK_OPTIONS

    stack, at, version = target.partition("@")
    if not at or stack not in ("freebsd", "freebsd-rack"):
        return "a version applies to the freebsd and freebsd-rack targets only"
    allowed = STACK_OPTIONS[stack]["version"]["allowed"]
    if version not in allowed:
        return f"{stack} versions are {', '.join(allowed)}"
    return None

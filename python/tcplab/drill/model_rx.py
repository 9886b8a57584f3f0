"""Linux's receiving half on the linux model target: inbound data and FINs to
`_native.DrillLinuxReceiver` (crates/tcplab-sim/src/drill_linux_rx.rs: tcp_data_queue(), the
out-of-order queue and its SACK blocks, quick and delayed ACKs, the advertised window, the
buffer), its ACKs and the ACK fields of every segment the endpoint sends, read(), SO_RCVBUF, and
the skb sizes of packetdrill's TUN device. A mixin of model.ModelEngine (the linux engine)."""

from __future__ import annotations

import struct

from . import model_env
from .calls import SYMBOLS, Unhandled, value
from .syntax import Event, Packet

NS_PER_US = 1000
#: Linux's default tcp_rmem (net/ipv4/tcp.c tcp_init(): 4 KB, 128 KB, 6 MB).
TCP_RMEM_DEFAULT = (4096, 131072, 6 << 20)
#: SOCK_MIN_RCVBUF on x86-64 (2048 + SKB_TRUESIZE(256)).
SOCK_MIN_RCVBUF = 2304


def tun_truesize(ip_len: int, gso: bool) -> int:
    """skb->truesize of an IPv4 packet of `ip_len` bytes the TUN device hands the kernel, as this
    kernel (6.18) charges it to sk_rmem_alloc (SK_MEMINFO_RMEM_ALLOC measured after each
    segment with `tcplab drill -t kernel`: payloads 200, 1000 -> 1280, 2304; GSO 2000, 4060,
    4100, 9000, 10 000 -> 4352, 8448, 8448, 12 544, 12 544). drivers/net/tun.c tun_get_user():
    a GSO packet's bytes go to page frags (alloc_skb_with_frags(): whole pages, PAGE_ALIGN of
    the packet) beside a 256-byte sk_buff; a smaller one is copied into a kmalloc'd head (64
    bytes of headroom, the size SKB_DATA_ALIGN'ed plus skb_shared_info, rounded up to the slab's
    power of two)."""
    if gso:
        return 256 + (ip_len + 4095) // 4096 * 4096
    head = (64 + ip_len + 63) // 64 * 64 + 320
    return 256 + (1 << (head - 1).bit_length())


def tcp_rmem(env: model_env.Env) -> tuple[int, int, int]:
    """tcp_rmem as the script's commands set it (min, default, max)."""
    words = env.sysctls.get("tcp_rmem", "").split()
    if len(words) != 3:
        return TCP_RMEM_DEFAULT
    a, b, c = (model_env.shell_int(w) for w in words)
    return a, b, c


class LinuxReceive:
    """The receiving half's part of the linux engine (model.ModelEngine)."""

    rx = None  # DrillLinuxReceiver from the SYN (passive) or connect() (active)
    rcvbuf_opt: int | None = None  # SO_RCVBUF on the socket (an accepted socket inherits it)
    max_window = 0  # tp->max_window: the largest window the peer offered (bytes)

    def _rx_new(self, advmss: int, window_mss: int, wscale_ok: bool, sack: bool) -> None:
        """The socket's receive side at its SYN or SYN-ACK: sk_rcvbuf is tcp_rmem[1], or twice
        SO_RCVBUF (sk_setsockopt(): `max(val * 2, SOCK_MIN_RCVBUF)`, val at most rmem_max,
        SOCK_RCVBUF_LOCK)."""
        from tcplab._native import DrillLinuxReceiver

        _, rmem1, rmem2 = tcp_rmem(self.env)
        locked = self.rcvbuf_opt is not None
        rcvbuf = max(2 * min(self.rcvbuf_opt, model_env.RMEM_MAX_DEFAULT), SOCK_MIN_RCVBUF) if locked else rmem1
        hz = model_env.kernel_hz() or 250
        self.rx = DrillLinuxReceiver(rcvbuf, locked, rmem2, model_env.RMEM_MAX_DEFAULT, advmss, window_mss,
                                     wscale_ok, sack, self.env.sysctls.get("tcp_dsack", "1") != "0", hz,
                                     500_000_000 // hz)

    def _rx_setsockopt(self, level: int, opt: int, val: int) -> bool:
        """SO_RCVBUF before the connection (after it the window is not re-clamped: unsupported)."""
        if (level, opt) != (SYMBOLS["SOL_SOCKET"], SYMBOLS["SO_RCVBUF"]) or self.stack != "linux":
            return False
        if self.ep is not None:
            raise Unhandled("setsockopt SO_RCVBUF on an established connection: not modelled")
        self.rcvbuf_opt = val
        return True

    def _rx_segment(self, ev: Event, p: Packet) -> None:
        """The segment's data and FIN into the receiving half (before the sender sees its ACK:
        tcp_data_queue() runs after tcp_ack(), but the ACK's own data is what the sender's
        transmissions acknowledge, so the order of the two does not show)."""
        if not p.length and "F" not in p.flags:
            return
        if self.rx is None:
            raise Unhandled("data before the connection is set up: not modelled")
        mss = int(self.script.options.get("mss", "0"))
        opt_len = sum(_opt_len(o.kind, o.values) for o in (p.options or ()))
        gso = bool(mss) and p.length > mss
        info = dict(self.ep.tcp_info())
        self.rx.set_rtt(info["tcpi_rtt"], info["tcpi_rto"] * (model_env.kernel_hz() or 250) // 1_000_000)
        self.rx.segment(self.now_us * NS_PER_US, p.seq, p.length, mss if gso else 0,
                        tun_truesize(40 + opt_len + p.length, gso), 20 + opt_len, "F" in p.flags, "P" in p.flags)

    def _rx_flush(self) -> None:
        """The receiving half's pure ACKs, in order."""
        if self.rx is None:
            return
        for t_ns, ack, win, sacks in self.rx.take_acks():
            t_us = t_ns // NS_PER_US
            self._emit(0x10, self._snd_nxt(), 0, self._ts_opts(t_us) + _sack_opts(sacks, bool(self.syn and self.syn["ts"])), t_us, win=win, ack=ack)

    def _snd_nxt(self) -> int:
        return 1 + (self.ep.written() if self.ep is not None else 0) + int(self.fin_sent)

    def _rx_fields(self, t_us: int) -> tuple[int, int, list]:
        """A segment leaving at `t_us`: its ACK, window field and SACK options."""
        _, ack, win, sacks = self.rx.data_sent(t_us * NS_PER_US)
        return ack, win, _sack_opts(sacks, bool(self.syn and self.syn["ts"]))

    def _rx_read(self, a: tuple) -> int:
        """read(fd, buf, n) / recv(fd, buf, n, 0): what is readable; nothing readable before
        the peer's FIN would block or fail with EAGAIN: not modelled."""
        if self.rx is None:
            raise Unhandled("read() before the connection is set up: not modelled")
        readable, fin, _ = self.rx.state()
        if readable == 0 and not fin:
            raise Unhandled("read() with nothing to read (blocking or EAGAIN): not modelled")
        got = self.rx.read(self.now_us * NS_PER_US, value(a[2]), False)
        self._rx_flush()
        return got

    def _rx_unread(self) -> bool:
        return self.rx is not None and self.rx.state()[0] > 0

    def _rx_info(self) -> dict[str, int]:
        return dict(self.rx.info()) if self.rx is not None else {}


def _opt_len(kind: str, values: tuple) -> int:
    """An inbound option's length in the header (kind names as syntax.py gives them)."""
    if kind == "sack":
        return 2 + 4 * len(values)
    return {"mss": 4, "wscale": 3, "sackOK": 2, "TS": 10}.get(kind, 1)


def _sack_opts(sacks: list, ts: bool) -> list[tuple[int, bytes]]:
    """tcp_established_options() and tcp_options_write(): NOP, NOP, SACK with the blocks (a
    D-SACK block first), as many as the 40 option bytes hold beside TS (3, else 4)."""
    if not sacks:
        return []
    sacks = sacks[:3 if ts else 4]
    return [(1, b""), (1, b""), (5, b"".join(struct.pack("!II", s, e) for s, e in sacks))]



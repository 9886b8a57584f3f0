"""FreeBSD's wire format for the model targets `freebsd` and `freebsd-rack`: which options a
segment carries and in what order, the window-scale shift, the SYN's and SYN-ACK's windows and
MSS, the PSH rule and the TS clock. Read in fel1x-developer/freebsd-src @
2d614aa2fe3e037bd11d351b0b5cfda776e65814 (sys/netinet/*), function named at each rule."""

from __future__ import annotations

import struct

from .env_freebsd import Knobs

TCP_MAXWIN = 65_535
TCP_MAX_WINSHIFT = 14
TCP_MAXOLEN = 40
TCP_MSSDFLT = 536  # net.inet.tcp.mssdflt: the MSS when the peer's SYN has none (tcp_mss_update())
TCP_V6MSSDFLT = 1220  # net.inet.tcp.v6mssdflt
IP4_TCP_HDR = 40  # sizeof(struct tcpiphdr): tcp_mssopt() = link MTU - 40
IP6_TCP_HDR = 60  # sizeof(struct ip6_hdr) + sizeof(struct tcphdr)


def addoptions(mss: int | None = None, wscale: int | None = None, sackperm: bool = False,
               ts: tuple[int, int] | None = None, sacks: list[tuple[int, int]] | None = None) -> list[tuple[int, bytes]]:
    """tcp_output.c tcp_addoptions(): the options in bit order TOF_MSS, TOF_SCALE, TOF_SACKPERM,
    TOF_TS, TOF_SACK, each aligned with NOPs as the loop does (MSS to 4 bytes; window scale to an
    odd offset; SACK-permitted to an even one; TS and SACK to 4n+2), then EOLs to a 4-byte end.
    SACK blocks: as many as fit in the 40 option bytes."""
    out: list[tuple[int, bytes]] = []
    n = 0

    def pad(cond) -> None:  # noqa: ANN001 - the loop condition on optlen
        nonlocal n
        while cond(n):
            out.append((1, b""))
            n += 1

    if mss is not None:
        pad(lambda k: k % 4)
        out.append((2, struct.pack("!H", mss)))
        n += 4
    if wscale is not None:
        pad(lambda k: not k or k % 2 != 1)
        out.append((3, bytes([wscale])))
        n += 3
    if sackperm:
        pad(lambda k: k % 2)
        out.append((4, b""))
        n += 2
    if ts is not None:
        pad(lambda k: not k or k % 4 != 2)
        out.append((8, struct.pack("!II", ts[0] & 0xFFFFFFFF, ts[1] & 0xFFFFFFFF)))
        n += 10
    if sacks:
        pad(lambda k: not k or k % 4 != 2)
        room = (TCP_MAXOLEN - n - 2) // 8
        blocks = sacks[:room]
        out.append((5, b"".join(struct.pack("!II", s & 0xFFFFFFFF, e & 0xFFFFFFFF) for s, e in blocks)))
        n += 2 + 8 * len(blocks)
    if n % 4:
        out += [(0, b"")] * (4 - n % 4)
    return out


def wscale_for(sb_max: int) -> int:
    """The shift a SYN or SYN-ACK asks for: the smallest that scales TCP_MAXWIN up to sb_max
    (kern.ipc.maxsockbuf): tcp_usrreq.c tcp_connect() / tcp_syncache.c syncache_add(): `while
    (wscale < TCP_MAX_WINSHIFT && (TCP_MAXWIN << wscale) < sb_max) wscale++;`."""
    w = 0
    while w < TCP_MAX_WINSHIFT and (TCP_MAXWIN << w) < sb_max:
        w += 1
    return w


def mss_option(mtu: int, v6: bool = False) -> int:
    """tcp_mssopt(): the interface MTU less the IP (v4 or v6) and TCP headers (`min_protoh`)."""
    return mtu - (IP6_TCP_HDR if v6 else IP4_TCP_HDR)


def maxseg(peer_mss: int | None, mtu: int, v6: bool = False) -> int:
    """tcp_mss_update(): min(link MTU - min_protoh, the peer's MSS or tcp_mssdflt / tcp_v6mssdflt),
    at least 64."""
    dflt = TCP_V6MSSDFLT if v6 else TCP_MSSDFLT
    return max(min(mss_option(mtu, v6), peer_mss if peer_mss else dflt), 64)


def rcv_hiwat(k: Knobs, maxseg_bytes: int) -> int:
    """so_rcv.sb_hiwat after tcp_input.c tcp_mss(): `bufsize = roundup(bufsize, mss)`, at most
    sb_max (and unchanged when the buffer is smaller than the MSS)."""
    b = k.recvspace
    if b <= maxseg_bytes:
        return b
    return min(-(-b // maxseg_bytes) * maxseg_bytes, k.sb_max)


def syn_window(space: int) -> int:
    """A SYN's or SYN-ACK's window field: never scaled (tcp_output.c: `min(sbspace(&so->so_rcv),
    TCP_MAXWIN)`; syncache_add(): sc_wnd = min(sol_sbrcv_hiwat, TCP_MAXWIN))."""
    return min(space, TCP_MAXWIN)


def syn_ecn_flags(k: Knobs, shift: int) -> int:
    """tcp_ecn.c tcp_ecn_output_syn_sent(): with net.inet.tcp.ecn.enable=1 the SYN carries ECE and
    CWR, a retransmitted one while `t_rxtshift <= V_tcp_ecn_maxretries`."""
    if k.ecn != 1:
        return 0
    return 0x40 | 0x80 if shift == 0 or shift <= k.ecn_maxretries else 0


def ts_val(t_us: int) -> int:
    """tcp_ts_getticks(): the millisecond clock (hz = 1000); a per-connection offset is added
    (tcp_new_ts_offset()), which packetdrill does not compare (--tcp_ts_tick_usecs unset)."""
    return t_us // 1000

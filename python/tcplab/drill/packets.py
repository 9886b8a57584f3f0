"""IPv4/TCP bytes for the kernel target: inbound script packets built for injection, outbound
kernel packets decoded and compared with the script as packetdrill's run_packet.c does
(verify_outbound_live_packet: IP length and ECN, TCP flags, seq, ack, window, options; TS val not
checked, as packetdrill's default --tcp_ts_tick_usecs=0)."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from .syntax import Packet, TcpOption

_FLAG_BITS = {"F": 0x01, "S": 0x02, "R": 0x04, "P": 0x08, ".": 0x10, "U": 0x20, "E": 0x40, "W": 0x80}
_AE = 0x100  # AccECN's AE bit: the low bit of the 4 reserved bits (RFC 9768 §3.2.1)
_ECN = {"noecn": 0, "ect1": 1, "ect0": 2, "ce": 3}
_OPT_KIND = {"eol": 0, "nop": 1, "mss": 2, "wscale": 3, "sackOK": 4, "sack": 5, "TS": 8}
_KIND_NAME = {v: k for k, v in _OPT_KIND.items()}


def checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071)."""
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def tcp_flags(flags: str) -> int:
    bits = 0
    for c in flags:
        bits |= _AE if c == "A" else _FLAG_BITS[c]
    return bits


def encode_options(options: tuple[TcpOption, ...]) -> bytes:
    out = b""
    for o in options:
        k = _OPT_KIND[o.kind]
        if o.kind in ("eol", "nop"):
            out += bytes([k])
        elif o.kind == "mss":
            out += struct.pack("!BBH", k, 4, o.values[0])
        elif o.kind == "wscale":
            out += struct.pack("!BBB", k, 3, o.values[0])
        elif o.kind == "sackOK":
            out += struct.pack("!BB", k, 2)
        elif o.kind == "TS":
            out += struct.pack("!BBII", k, 10, *(v & 0xFFFFFFFF for v in o.values))
        elif o.kind == "sack":
            out += struct.pack("!BB", k, 2 + 4 * len(o.values)) + b"".join(struct.pack("!I", v & 0xFFFFFFFF) for v in o.values)
    if len(out) % 4:
        raise ValueError("TCP options must fill whole 32-bit words (add nop or eol)")
    return out


def ipv4(src: bytes, dst: bytes, proto: int, payload: bytes, tos: int = 0, ttl: int = 64) -> bytes:
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + len(payload), 0, 0, ttl, proto, 0, src, dst)
    return hdr[:10] + struct.pack("!H", checksum(hdr)) + hdr[12:] + payload


def tcp_segment(src: bytes, dst: bytes, sport: int, dport: int, seq: int, ack: int, flags: int, win: int,
                options: bytes, payload_len: int) -> bytes:
    doff = (20 + len(options)) // 4
    hdr = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, (doff << 4) | (flags >> 8),
                      flags & 0xFF, win, 0, 0) + options
    seg = hdr + bytes(payload_len)
    pseudo = struct.pack("!4s4sBBH", src, dst, 0, 6, len(seg))
    return seg[:16] + struct.pack("!H", checksum(pseudo + seg)) + seg[18:]


@dataclass
class Seen:
    """An outbound IPv4/TCP packet as the kernel sent it (numbers as on the wire)."""

    src: bytes
    dst: bytes
    tos: int
    total_len: int
    sport: int
    dport: int
    seq: int
    ack: int
    flags: int
    win: int
    options: list[tuple[int, bytes]] = field(default_factory=list)
    payload_len: int = 0
    time_us: int = 0

    def options_len(self) -> int:
        return (self.total_len - 20 - self.payload_len) - 20


def decode(data: bytes, time_us: int) -> Seen | None:
    """The IPv4/TCP packet in `data`, or None for anything else."""
    if len(data) < 40 or data[0] >> 4 != 4 or data[9] != 6:
        return None
    ihl = (data[0] & 0xF) * 4
    total = struct.unpack("!H", data[2:4])[0]
    t = data[ihl:total]
    sport, dport, seq, ack, off, fl, win = struct.unpack("!HHIIBBH", t[:16])
    doff = (off >> 4) * 4
    s = Seen(data[12:16], data[16:20], data[1], total, sport, dport, seq, ack, fl | ((off & 1) << 8), win)
    s.options = _options(t[20:doff])
    s.payload_len = len(t) - doff
    s.time_us = time_us
    return s


def _options(raw: bytes) -> list[tuple[int, bytes]]:
    out, i = [], 0
    while i < len(raw):
        k = raw[i]
        if k in (0, 1):
            out.append((k, b""))
            i += 1
            continue
        if i + 1 >= len(raw) or raw[i + 1] < 2:
            out.append((k, raw[i + 1:]))
            break
        ln = raw[i + 1]
        out.append((k, raw[i + 2:i + ln]))
        i += ln
    return out


def flags_text(bits: int) -> str:
    s = "".join(c for c, b in _FLAG_BITS.items() if c != "." and bits & b)
    return s + ("." if bits & 0x10 else "") + ("A" if bits & _AE else "")


def option_text(kind: int, data: bytes) -> str:
    name = _KIND_NAME.get(kind, str(kind))
    if kind in (2,) and len(data) == 2:
        return f"mss {struct.unpack('!H', data)[0]}"
    if kind == 3 and len(data) == 1:
        return f"wscale {data[0]}"
    if kind == 8 and len(data) == 8:
        return "TS val {} ecr {}".format(*struct.unpack("!II", data))
    if kind == 5:
        vals = struct.unpack(f"!{len(data) // 4}I", data[:len(data) // 4 * 4])
        return "sack " + " ".join(f"{vals[i]}:{vals[i + 1]}" for i in range(0, len(vals) - 1, 2))
    return name


def expected_options(p: Packet) -> list[tuple[int, bytes]] | None:
    """The script's options as (kind, data) pairs, or None for `<...>`."""
    if p.options is None:
        return None
    return _options(encode_options(p.options)) if p.options else []


def _field(name: str, expected: int, actual: int) -> str | None:
    """run_packet.c check_field's message."""
    if expected == actual:
        return None
    return f"live packet field {name}: expected: {expected} (0x{expected:x}) vs actual: {actual} (0x{actual:x})"


def compare(p: Packet, s: Seen, local_offset: int) -> str | None:
    """The first difference packetdrill reports between script packet `p` and the kernel's `s`
    (seq mapped by `local_offset`, the kernel's ISN minus the script's), or None when they match."""
    want_opts = expected_options(p)
    opts_len = len(encode_options(p.options)) if p.options else 0
    if p.options is None:
        opts_len = s.options_len()
    if p.length != s.payload_len:
        return f"live packet payload: expected {p.length} bytes vs actual {s.payload_len} bytes"
    err = _field("ipv4_total_length", 40 + opts_len + p.length, s.total_len)
    if err is None and p.ecn is not None:
        if p.ecn == "ect01":
            err = None if s.tos & 3 in (1, 2) else f"live packet field ip_ecn: expected: 0x1 or 0x2 vs actual: 0x{s.tos & 3:x}"
        else:
            err = _field("ip_ecn", _ECN[p.ecn], s.tos & 3)
    want = tcp_flags(p.flags)
    checks = [("tcp_data_offset", (20 + opts_len) // 4, (20 + s.options_len()) // 4)]
    for name, bit in (("tcp_fin", 0x01), ("tcp_syn", 0x02), ("tcp_rst", 0x04), ("tcp_psh", 0x08), ("tcp_ack", 0x10),
                      ("tcp_urg", 0x20), ("tcp_ece", 0x40), ("tcp_cwr", 0x80), ("tcp_ae", _AE)):
        checks.append((name, int(bool(want & bit)), int(bool(s.flags & bit))))
    checks.append(("tcp_seq", p.seq & 0xFFFFFFFF, (s.seq - local_offset) & 0xFFFFFFFF))
    checks.append(("tcp_ack_seq", (p.ack or 0) & 0xFFFFFFFF, s.ack))
    if p.win is not None:
        checks.append(("tcp_window", p.win, s.win))
    for name, e, a in checks:
        err = err or _field(name, e, a)
    if err or want_opts is None:
        return err
    return _compare_options(want_opts, s.options)


def _compare_options(want: list[tuple[int, bytes]], got: list[tuple[int, bytes]]) -> str | None:
    """verify_outbound_live_tcp_options: same kinds in the same order; values equal except the
    timestamp (val unchecked at tcp_ts_tick_usecs=0, ecr never compared)."""
    if len(want) != len(got) or any(w[0] != g[0] for w, g in zip(want, got)):
        return "bad outbound TCP options: expected <{}> actual <{}>".format(
            ",".join(option_text(*w) for w in want), ",".join(option_text(*g) for g in got))
    for w, g in zip(want, got):
        if w[0] in (0, 1, 8):
            continue
        if w[1] != g[1]:
            kind = "bad length" if len(w[1]) != len(g[1]) else "bad value"
            return f"{kind} in outbound TCP option (kind={w[0]}): expected: {option_text(*w)} actual: {option_text(*g)}"
    return None


def fragment_error(cur: Seen, prev: Seen, sniffed: int, expected: int) -> str | None:
    """run_packet.c verify_packet_fragments(): `cur` continues `prev` (same headers but for the
    sequence number, which follows on) and, unless it is the last, is as long as `prev`."""
    checks = [("tcp_data_offset", prev.options_len() // 4 + 5, cur.options_len() // 4 + 5),
              ("tcp_seq", (prev.seq + prev.payload_len) & 0xFFFFFFFF, cur.seq), ("tcp_ack_seq", prev.ack, cur.ack),
              ("tcp_window", prev.win, cur.win)]
    for name, bit in (("tcp_syn", 0x02), ("tcp_rst", 0x04), ("tcp_ack", 0x10), ("tcp_urg", 0x20), ("tcp_ece", 0x40),
                      ("tcp_ae", _AE)):
        checks.append((name, int(bool(prev.flags & bit)), int(bool(cur.flags & bit))))
    for name, e, a in checks:
        err = _field(name, e, a)
        if err:
            return err
    if cur.payload_len < expected - sniffed and cur.payload_len != prev.payload_len:
        return (f"fragment payload: expected {prev.payload_len} bytes vs actual {cur.payload_len} bytes; total payload: "
                f"expected {expected} bytes vs actual {cur.payload_len + sniffed} bytes")
    return None


def aggregate(parts: list[Seen]) -> Seen:
    """packet.c aggregate_packets(): the last part's headers and time, the first part's sequence
    number and CWR bit, the payloads together."""
    first, last = parts[0], parts[-1]
    extra = sum(p.payload_len for p in parts) - last.payload_len
    flags = (last.flags & ~0x80) | (first.flags & 0x80)
    return Seen(last.src, last.dst, last.tos, last.total_len + extra, last.sport, last.dport, first.seq, last.ack,
                flags, last.win, list(last.options), last.payload_len + extra, last.time_us)

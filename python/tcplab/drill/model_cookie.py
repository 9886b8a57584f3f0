"""SYN cookies on the linux model (net.ipv4.tcp_syncookies=2: every SYN answered with a cookie),
as net/ipv4/syncookies.c keeps a connection's options without state (torvalds/linux @ 003e07a1,
the file unchanged in substance since v6.18): the MSS the cookie encodes, a `msstab` entry, and
the options the SYN-ACK's TS val carries in its low 6 bits."""

from __future__ import annotations

#: syncookies.c `static __u16 const msstab[] = { 536, 1300, 1440, 1460 };` (IPv4).
MSSTAB = (536, 1300, 1440, 1460)
TSBITS = 6  # `#define TSBITS 6`
TS_OPT_WSCALE_MASK, TS_OPT_SACK, TS_OPT_ECN = 0xF, 1 << 4, 1 << 5


def cookie_mss(mss: int) -> int:
    """__cookie_v4_init_sequence(): `for (mssind = ARRAY_SIZE(msstab) - 1; mssind ; mssind--) if
    (mss >= msstab[mssind]) break; *mssp = msstab[mssind];` — the largest entry at most `mss`
    (536 below it), which __cookie_v4_check() gives back as the connection's req->mss."""
    for entry in reversed(MSSTAB[1:]):
        if mss >= entry:
            return entry
    return MSSTAB[0]


def init_timestamp_ms(now_ms: int, wscale: int | None, sack: bool, ecn: bool) -> int:
    """cookie_init_timestamp(): the SYN-ACK's TS val, the clock with its 6 low bits replaced by
    the options (`options = ireq->wscale_ok ? ireq->snd_wscale : TS_OPT_WSCALE_MASK;` SACK bit
    4, ECN bit 5), moved back 64 when that is ahead of the clock."""
    options = (wscale if wscale is not None else TS_OPT_WSCALE_MASK) | (TS_OPT_SACK if sack else 0) \
        | (TS_OPT_ECN if ecn else 0)
    ts = (now_ms >> TSBITS) << TSBITS | options
    return ts - (1 << TSBITS) if ts > now_ms else ts


def rebuild(syn: dict, ack_has_ts: bool, sysctls: dict[str, str]) -> dict | None:
    """cookie_v4_check() on the handshake's ACK: the options the connection gets, from what the
    SYN-ACK's TS encoded (cookie_timestamp_decode(): an ACK without TS clears them all,
    `tcp_clear_options()`; cookie_ecn_ok()), or None when the cookie is refused (an option the
    host has turned off since)."""
    if not ack_has_ts:
        return dict(syn, ts=False, sack=False, wscale=None, ecn=False)
    if sysctls.get("tcp_timestamps", "1") == "0":
        return None
    if syn["sack"] and sysctls.get("tcp_sack", "1") == "0":
        return None
    if syn["wscale"] is not None and sysctls.get("tcp_window_scaling", "1") == "0":
        return None
    ecn = syn["ecn"] and sysctls.get("tcp_ecn", "2") != "0"
    return dict(syn, ecn=ecn)

"""Linux `struct tcp_info` (include/uapi/linux/tcp.h, as of Linux 6.18) decoded from
getsockopt(TCP_INFO), with the names packetdrill's code.c gives %{ }% blocks."""

from __future__ import annotations

import socket
import struct

# (name, struct format) in declaration order; natural alignment, as the C struct on x86-64.
# Through tcpi_total_rto_time (Linux 6.7) the struct is 248 bytes; Linux 6.18 appends the
# AccECN counters (tcpi_received_ce ... tcpi_accecn_opt_seen, 280 bytes).
_FIELDS = [
    ("tcpi_state", "B"), ("tcpi_ca_state", "B"), ("tcpi_retransmits", "B"), ("tcpi_probes", "B"),
    ("tcpi_backoff", "B"), ("tcpi_options", "B"), ("_wscale", "B"), ("_app_limited", "B"),
    ("tcpi_rto", "I"), ("tcpi_ato", "I"), ("tcpi_snd_mss", "I"), ("tcpi_rcv_mss", "I"),
    ("tcpi_unacked", "I"), ("tcpi_sacked", "I"), ("tcpi_lost", "I"), ("tcpi_retrans", "I"), ("tcpi_fackets", "I"),
    ("tcpi_last_data_sent", "I"), ("tcpi_last_ack_sent", "I"), ("tcpi_last_data_recv", "I"),
    ("tcpi_last_ack_recv", "I"),
    ("tcpi_pmtu", "I"), ("tcpi_rcv_ssthresh", "I"), ("tcpi_rtt", "I"), ("tcpi_rttvar", "I"),
    ("tcpi_snd_ssthresh", "I"), ("tcpi_snd_cwnd", "I"), ("tcpi_advmss", "I"), ("tcpi_reordering", "I"),
    ("tcpi_rcv_rtt", "I"), ("tcpi_rcv_space", "I"), ("tcpi_total_retrans", "I"),
    ("tcpi_pacing_rate", "Q"), ("tcpi_max_pacing_rate", "Q"), ("tcpi_bytes_acked", "Q"),
    ("tcpi_bytes_received", "Q"), ("tcpi_segs_out", "I"), ("tcpi_segs_in", "I"),
    ("tcpi_notsent_bytes", "I"), ("tcpi_min_rtt", "I"), ("tcpi_data_segs_in", "I"), ("tcpi_data_segs_out", "I"),
    ("tcpi_delivery_rate", "Q"), ("tcpi_busy_time", "Q"), ("tcpi_rwnd_limited", "Q"), ("tcpi_sndbuf_limited", "Q"),
    ("tcpi_delivered", "I"), ("tcpi_delivered_ce", "I"), ("tcpi_bytes_sent", "Q"), ("tcpi_bytes_retrans", "Q"),
    ("tcpi_dsack_dups", "I"), ("tcpi_reord_seen", "I"), ("tcpi_rcv_ooopack", "I"), ("tcpi_snd_wnd", "I"),
    ("tcpi_rcv_wnd", "I"), ("tcpi_rehash", "I"), ("tcpi_total_rto", "H"), ("tcpi_total_rto_recoveries", "H"),
    ("tcpi_total_rto_time", "I"),
    ("tcpi_received_ce", "I"), ("tcpi_delivered_e1_bytes", "I"), ("tcpi_delivered_e0_bytes", "I"),
    ("tcpi_delivered_ce_bytes", "I"), ("tcpi_received_e1_bytes", "I"), ("tcpi_received_e0_bytes", "I"),
    ("tcpi_received_ce_bytes", "I"), ("tcpi_accecn_fail_mode", "H"), ("tcpi_accecn_opt_seen", "H"),
]

#: The symbols code.c's write_symbols() defines for %{ }% blocks (values from include/net/tcp_states.h,
#: include/uapi/linux/tcp.h tcp_ca_state and TCPI_OPT_*).
SYMBOLS = {
    "TCP_ESTABLISHED": 1, "TCP_SYN_SENT": 2, "TCP_SYN_RECV": 3, "TCP_FIN_WAIT1": 4, "TCP_FIN_WAIT2": 5,
    "TCP_TIME_WAIT": 6, "TCP_CLOSE": 7, "TCP_CLOSE_WAIT": 8, "TCP_LAST_ACK": 9, "TCP_LISTEN": 10, "TCP_CLOSING": 11,
    "TCP_CA_Open": 0, "TCP_CA_Disorder": 1, "TCP_CA_CWR": 2, "TCP_CA_Recovery": 3, "TCP_CA_Loss": 4,
    "TCPI_OPT_TIMESTAMPS": 1, "TCPI_OPT_SACK": 2, "TCPI_OPT_WSCALE": 4, "TCPI_OPT_ECN": 8, "TCPI_OPT_ECN_SEEN": 16,
    "TCPI_OPT_SYN_DATA": 32, "TCPI_OPT_USEC_TS": 64, "TCPI_OPT_TFO_CHILD": 128,
}


def decode(raw: bytes) -> dict[str, int]:
    """The fields `raw` holds (the kernel returns as many bytes as it knows, up to the asked length)."""
    out: dict[str, int] = {}
    off = 0
    for name, fmt in _FIELDS:
        size = struct.calcsize(fmt)
        off = (off + size - 1) // size * size
        if off + size > len(raw):
            break
        out[name] = struct.unpack_from(fmt, raw, off)[0]
        off += size
    w = out.pop("_wscale", 0)
    out["tcpi_snd_wscale"], out["tcpi_rcv_wscale"] = w & 0xF, w >> 4
    a = out.pop("_app_limited", 0)
    out["tcpi_delivery_rate_app_limited"], out["tcpi_fastopen_client_fail"] = a & 1, (a >> 1) & 3
    return out


def read(sock: socket.socket) -> dict[str, int]:
    """getsockopt(TCP_INFO) of `sock`, decoded."""
    return decode(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 512))


#: SO_MEMINFO's array (include/uapi/linux/sock_diag.h SK_MEMINFO_*), as code.c write_so_meminfo() names it.
MEMINFO = ("SK_MEMINFO_RMEM_ALLOC", "SK_MEMINFO_RCVBUF", "SK_MEMINFO_WMEM_ALLOC", "SK_MEMINFO_SNDBUF",
           "SK_MEMINFO_FWD_ALLOC", "SK_MEMINFO_WMEM_QUEUED", "SK_MEMINFO_OPTMEM", "SK_MEMINFO_BACKLOG",
           "SK_MEMINFO_DROPS")
SO_MEMINFO = 55


def read_meminfo(sock: socket.socket) -> dict[str, int]:
    """getsockopt(SO_MEMINFO) of `sock`: what code.c adds to each snapshot after tcp_info."""
    raw = sock.getsockopt(socket.SOL_SOCKET, SO_MEMINFO, 4 * len(MEMINFO))
    return dict(zip(MEMINFO, struct.unpack(f"{len(raw) // 4}I", raw)))

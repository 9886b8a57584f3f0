"""`struct tcp_info` as FreeBSD's tcp_fill_info() (sys/netinet/tcp_usrreq.c; read in the copy with
TF2_ECN_PERMIT, as fel1x-developer/freebsd-src @ 2d614aa2 has it) fills it, for the FreeBSD model
targets' %{ }% blocks: tcpi_state is t_state with FreeBSD's numbers (tcp_fsm.h, named TCPI_* as
packetdrill's code.c gives them on FreeBSD); tcpi_snd_cwnd and tcpi_snd_ssthresh are snd_cwnd and
snd_ssthresh in bytes, not segments; tcpi_rto is t_rxtcur * tick and tcpi_rtt / tcpi_rttvar are
t_srtt and t_rttvar in µs (the model's own estimates, not rounded to FreeBSD's 1 ms ticks);
tcpi_snd_mss and tcpi_rcv_mss are t_maxseg; rcv_nxt, snd_nxt, snd_wnd and rcv_space (rcv_wnd) as
the stack holds them (sequence numbers script-relative, the ISN being 0); tcpi_snd_rexmitpack is
t_sndrexmitpack (segments retransmitted). Fields tcp_fill_info() does not fill (Linux's ca_state,
sacked, lost, ...) are absent: a block that reads one is `unsupported`."""

from __future__ import annotations

#: tcp_fsm.h TCPS_* (FreeBSD's t_state numbers).
STATES = {
    "TCPI_CLOSED": 0, "TCPI_LISTEN": 1, "TCPI_SYN_SENT": 2, "TCPI_SYN_RECEIVED": 3, "TCPI_ESTABLISHED": 4,
    "TCPI_CLOSE_WAIT": 5, "TCPI_FIN_WAIT_1": 6, "TCPI_CLOSING": 7, "TCPI_LAST_ACK": 8, "TCPI_FIN_WAIT_2": 9,
    "TCPI_TIME_WAIT": 10,
}
#: TCPI_OPT_* (netinet/tcp.h).
OPTIONS = {"TCPI_OPT_TIMESTAMPS": 1, "TCPI_OPT_SACK": 2, "TCPI_OPT_WSCALE": 4, "TCPI_OPT_ECN": 8, "TCPI_OPT_TOE": 16}
INFINITE_SSTHRESH = 0x3FFFFFFF << 14  # TCP_MAXWIN << TCP_MAX_WINSHIFT: snd_ssthresh before any loss


def fill(state: str, options: dict[str, bool], mss: int, raw: dict[str, int] | None,
         rcv: tuple[int, int] | None, wscale: tuple[int, int]) -> dict[str, int]:
    """tcp_fill_info(): `state` a TCPI_* name; `raw` the sender's DrillEndpoint.raw_state() (None
    before the connection is established); `rcv` (rcv_nxt, rcv_wnd) of the receiving half;
    `wscale` (snd_scale, rcv_scale) when both sides scale."""
    opts = sum(OPTIONS[k] for k, on in options.items() if on)
    info = {"tcpi_state": STATES[state], "tcpi_options": opts, "tcpi_snd_mss": mss, "tcpi_rcv_mss": mss,
            "tcpi_snd_wscale": wscale[0], "tcpi_rcv_wscale": wscale[1]}
    if rcv is not None:
        info["tcpi_rcv_nxt"], info["tcpi_rcv_space"] = rcv
    if raw is not None:
        info.update({
            "tcpi_snd_cwnd": raw["cwnd_bytes"],
            "tcpi_snd_ssthresh": min(raw["ssthresh_bytes"], 0xFFFFFFFF),
            "tcpi_snd_wnd": raw["snd_wnd_bytes"],
            "tcpi_snd_nxt": 1 + raw["snd_nxt"],
            "tcpi_rto": raw["rto_ns"] // 1000,
            "tcpi_rtt": raw["srtt_ns"] // 1000,
            "tcpi_rttvar": raw["rttvar_ns"] // 1000,
            "tcpi_snd_rexmitpack": raw["retrans_segs"],
        })
    return info

"""The `rfc` model target: the project's textbook sender (crates/tcplab-sim/src/stack rfc(): RFC
5681 NewReno with RFC 6675 SACK recovery, RFC 6298 timers, RFC 9438 CUBIC on request) behind a wire
format the RFCs leave open. The RFCs fix neither an option order, a window, a delayed-ACK timer
nor a tcp_info, so the target takes FreeBSD's (model_freebsd.py): tcp_addoptions()' order and
alignment (RFC 7323 Appendix A's NOP padding), the receiving half of drill_rx.rs (RFC 2018 SACK
blocks, the most recent first; RFC 2883 D-SACK; RFC 5681 §4.2: an ACK for every second full-size
segment, at once for out-of-order data, 40 ms delayed-ACK timer; RFC 1122 receiver silly-window
avoidance), the active open's RFC 6298 §5.5 doubling from 1 s and tcp_fill_info()'s units (cwnd
in bytes). Host settings come from the FreeBSD sysctl names those parts read; the FreeBSD
sender's knobs (do_prr, sack.lrd, ...) and a functions_default are unsupported here."""

from __future__ import annotations

from . import env_freebsd
from .engine import Unsupported
from .model_env import NotModelled
from .model_freebsd import FreeBSDEngine

#: FreeBSD sysctls that set the FreeBSD sender (not the textbook one): unsupported on rfc.
SENDER_ONLY = ("net.inet.tcp.do_prr", "net.inet.tcp.sack.lrd", "net.inet.tcp.sack.tso", "net.inet.tcp.tso",
               "net.inet.tcp.sendbuf_inc", "net.inet.tcp.sendbuf_auto", "net.inet.tcp.functions_default",
               "net.inet.tcp.rexmit_slop", "net.inet.tcp.rexmit_min", "net.inet.tcp.rexmit_drop_options")


class RfcEngine(FreeBSDEngine):
    """One run of a script on the textbook stack."""

    def __init__(self, script, target: str) -> None:  # noqa: ANN001 - syntax.Script
        super().__init__(script, "freebsd")
        self.stack = "rfc"
        self.k.stack = "rfc"

    def shell(self, line: int, command: str) -> None:
        for name in SENDER_ONLY:
            if name in command:
                raise Unsupported(line, f"sysctl {name}: a FreeBSD sender knob; the rfc target's sender is the "
                                        "textbook one")
        try:
            env_freebsd.apply(self.k, command)
        except NotModelled as e:
            raise Unsupported(line, str(e)) from None
        self.cc = self.k.cc

    def _flow_fields(self, maxseg: int) -> dict:
        return {"iw_segments": self.k.initcwnd_segments}

    def _open_timer(self) -> tuple[int, int, int, int]:
        # RFC 6298 §2.1 / §5.5: 1 s, doubled per timeout, no slop (the simulator's SynTimer::Rfc).
        return 1_000_000_000, 0, 1_000_000_000, 12

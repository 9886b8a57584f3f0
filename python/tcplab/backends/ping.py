"""Latency probes on the kernel: iputils `ping` in the probe's `from` namespace, and its output
turned into the `probes` table the simulator writes.

ping -D prints each reply as "[<unix time>] 64 bytes from A: icmp_seq=N ttl=T time=R ms", as
flent's PingRunner reads it (tohojo/flent flent/runners.py); a request that got no reply has no
line, so it is lost unless a reply line names it. iputils prints `time=` with 3 significant
digits (ping_common.c: 0.001 ms below 1 ms, 0.01 below 10, 0.1 below 100, then whole ms), so a
kernel RTT is that precise; the closing "N packets transmitted, M received" gives the count sent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..model import Probe

#: Seconds ping waits for the last replies after its last request (-W): far above any RTT a
#: spec can build, so a reply still missing then is lost.
LINGER_S = 2

_REPLY = re.compile(r"^\[(\d+\.\d+)\] \d+ bytes from [^:]+: icmp_seq=(\d+) .*time=(\d+(?:\.\d+)?) ms")
_TOTALS = re.compile(r"^(\d+) packets transmitted, (\d+) received")


def command(p: Probe, src_addr: str, dst_addr: str, count: int) -> list[str]:
    """ping for probe `p`: -n numeric, -D timestamps, -i interval, -s payload (the ICMP message
    less its 8-byte header), -c requests, -W the linger for the last replies, -I the node's own
    address (a router's other interfaces' addresses are not routed back to it)."""
    return ["ping", "-n", "-D", "-i", f"{p.interval_ns / 1e9:g}", "-s", str(p.size_bytes - 8), "-c", str(count),
            "-W", str(LINGER_S), "-I", src_addr, dst_addr]


def count(p: Probe, run_stop_ns: int) -> int:
    """Requests the probe sends: one at start + k * interval before its stop and the run's, as the
    simulator sends them."""
    stop = min(p.stop_ns, run_stop_ns + 1)
    return max(0, -(-(stop - p.start_ns) // p.interval_ns))


@dataclass
class PingResult:
    """One probe's requests: sent, and per icmp_seq its reply's receive time (unix ns) and RTT (ns)."""

    sent: int
    replies: dict[int, tuple[int, int]]


class PingOutputError(ValueError):
    """ping's output lacks its closing totals (it was killed, or is not iputils ping)."""


def parse(text: str) -> PingResult:
    """ping -D output -> sent and the replies (a duplicate reply, "(DUP!)", keeps the first)."""
    replies: dict[int, tuple[int, int]] = {}
    sent = None
    for line in text.splitlines():
        m = _REPLY.match(line)
        if m:
            seq = int(m.group(2))
            if seq not in replies:
                # Decimal: a unix time in ns has 19 digits, more than a float holds exactly.
                replies[seq] = (int(Decimal(m.group(1)) * 10**9), int(Decimal(m.group(3)) * 10**6))
            continue
        t = _TOTALS.match(line)
        if t:
            sent = int(t.group(1))
    if sent is None:
        raise PingOutputError("no 'packets transmitted' line")
    return PingResult(sent, replies)


def rows(p: Probe, res: PingResult, launched_ns: int, unix_t0_ns: int) -> list[dict[str, Any]]:
    """The `probes` table's rows: every request sent, with its send time relative to the run's t0
    (the reply's time less its RTT; for a lost request, its place in ping's schedule from the
    launch) and its RTT, -1 when lost."""
    out = []
    for seq in range(1, res.sent + 1):
        if seq in res.replies:
            recv_ns, rtt_ns = res.replies[seq]
            out.append({"t_ns": recv_ns - rtt_ns - unix_t0_ns, "probe": p.name, "seq": seq, "rtt_ns": rtt_ns})
        else:
            out.append({"t_ns": launched_ns + (seq - 1) * p.interval_ns, "probe": p.name, "seq": seq, "rtt_ns": -1})
    return out


def totals(p: Probe, res: PingResult) -> dict[str, Any]:
    """The probe's totals in the simulator's shape (every request's fate is known once ping ends)."""
    answered = sum(1 for s in res.replies if s <= res.sent)
    return {"name": p.name, "sent": res.sent, "answered": answered, "lost": res.sent - answered}

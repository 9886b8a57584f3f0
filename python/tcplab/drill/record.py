"""Records a differential-test scenario on this machine's kernel: in a fresh network namespace with
the kernel target's TUN device (netdev.py), a listening socket, the scenario's writes, and the
virtual peer (peer.py) answering each data segment the kernel sends, in real time. The exchange is
written as a packetdrill script: inbound packets at the times they were injected, outbound
packets as the kernel sent them, at its transmit times. `python -m tcplab.drill.record SCENARIO
SCRIPT` is the child process kernel.py's rules apply to (its namespace dies with it)."""

from __future__ import annotations

import heapq
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from . import netdev, packets
from .engine import BIND_PORT, FIRST_REMOTE_PORT, _jiffy_aligned_start_us
from .generate import MAX_DURATION_US, PEER_WSCALE, Scenario
from .kernel import unhold
from .peer import Ack, Peer
from .syntax import TcpOption

#: Settings both the kernel and the linux model follow (model_env.LINUX_SYSCTLS): the suites'
#: buffers (window scale 8), no timestamps (no TS ecr to map), no F-RTO, D-SACK or TSO deferral.
#: The congestion control line comes first: a namespace may refuse it (the kernel target then
#: sets it per socket), and a backtick block's status is its last command's.
SYSCTLS = """sysctl -q net.ipv4.tcp_congestion_control=cubic
sysctl -q net.ipv4.tcp_rmem="4096 540000 15728640" net.ipv4.tcp_wmem="4096 262144 4194304"
sysctl -q net.ipv4.tcp_timestamps=0 net.ipv4.tcp_sack=1 net.ipv4.tcp_dsack=0 net.ipv4.tcp_frto=0
sysctl -q net.ipv4.tcp_fack=0 net.ipv4.tcp_reordering=3 net.ipv4.tcp_recovery=1 net.ipv4.tcp_early_retrans=3
sysctl -q net.ipv4.tcp_min_tso_segs=2 net.ipv4.tcp_tso_win_divisor=100 net.ipv4.tcp_slow_start_after_idle=1
sysctl -q net.ipv4.tcp_ecn=0 net.ipv4.tcp_pacing_ss_ratio=200 net.ipv4.tcp_pacing_ca_ratio=120
"""
CONGESTION = "cubic"


def _ip4(text: str) -> bytes:
    return socket.inet_aton(text)


class Recorder:
    """One scenario on the kernel; `run()` returns the script text."""

    def __init__(self, sc: Scenario, tun: netdev.Tun) -> None:
        self.sc, self.tun = sc, tun
        self.peer = Peer(sc)
        self.log: list[tuple[int, int, str]] = []  # (script µs, order, line)
        self.heap: list[tuple[int, int, str, object]] = []  # (due µs, order, kind, payload)
        self.order = 0
        self.offset = 0  # the kernel's ISN (script seq 0)
        self.start_us = 0
        self.conn: socket.socket | None = None
        self.late_us = 0  # how late the latest inbound packet or write came (a busy machine)

    def now_us(self) -> int:
        return time.time_ns() // 1000 - self.start_us

    def _line(self, t_us: int, text: str) -> None:
        self.order += 1
        self.log.append((t_us, self.order, f"{t_us / 1e6:.6f} {text}"))

    def _at(self, t_us: int, kind: str, payload: object) -> None:
        self.order += 1
        heapq.heappush(self.heap, (t_us, self.order, kind, payload))

    def run(self) -> str:
        lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lsock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, CONGESTION.encode())
        lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lsock.bind((netdev.LOCAL_IP, BIND_PORT))
        lsock.listen(1)
        self.start_us = _jiffy_aligned_start_us()
        self._wait(0)
        opts = "mss {},sackOK,nop,nop,nop,wscale {}" if self.sc.sack else "mss {},nop,wscale {}"
        t_syn = self._inject(0, "S", 0, 0, 65535, packets.encode_options(_syn_options(self.sc)))
        self._line(t_syn, f"< S 0:0(0) win 65535 <{opts.format(self.sc.mss, PEER_WSCALE)}>")
        synack = self._expect_synack()
        t_ack = synack + self.peer.rtt_at(synack)
        self._wait(t_ack)
        win = self.peer.window_at(t_ack)
        t_ack = self._inject(t_ack, ".", 1, 1 + self.offset, win, b"")
        self._line(t_ack, f"< . 1:1(0) ack 1 win {win}")
        self.conn, _ = lsock.accept()
        self.conn.setblocking(False)
        self._line(t_ack, "accept(3, ..., ...) = 4")
        if self.sc.nodelay:
            self.conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._line(t_ack, "setsockopt(4, SOL_TCP, TCP_NODELAY, [1], 4) = 0")
        self.peer.t0_us = t_ack
        for t, n in self.sc.writes:
            self._at(t_ack + t, "write", n)
        self._loop()
        return self.script()

    def _loop(self) -> None:
        writes_left = len(self.sc.writes)
        while self.now_us() < MAX_DURATION_US:
            if writes_left == 0 and self.peer.done() and not any(k == "ack" for _, _, k, _ in self.heap):
                return
            due = self.heap[0][0] if self.heap else self.now_us() + 200_000
            left = due - self.now_us()
            if left > 1500:  # sleep in select until shortly before, then spin (engine._wait_until)
                got = self.tun.receive((left - 1000) / 1e6)
                if got is not None:
                    self._outbound(*got)
                continue
            self._drain()
            if left > 0:
                continue
            t, _, kind, payload = heapq.heappop(self.heap)
            writes_left -= kind == "write"
            self._due(t, kind, payload)

    def _drain(self) -> None:
        got = self.tun.receive(0)
        while got is not None:
            self._outbound(*got)
            got = self.tun.receive(0)

    def _due(self, t: int, kind: str, payload: object) -> None:
        if kind == "write":
            n = int(payload)  # type: ignore[call-overload]
            self._line(self._late(t), f"write(4, ..., {n}) = {n}")
            sent = self.conn.send(bytes(n))  # type: ignore[union-attr]
            if sent != n:
                raise RuntimeError(f"write of {n} bytes took {sent}: the send buffer is too small")
        elif kind == "arrive":
            for ack in self.peer.arrive(t, *payload):  # type: ignore[misc]
                self._at(ack.t_us, "ack", ack)
            if self.peer.delack_due is not None:
                self._at(self.peer.delack_due, "delack", None)
        elif kind == "delack":
            for ack in self.peer.delack(t):
                self._at(ack.t_us, "ack", ack)
        elif kind == "ack":
            self._ack(t, payload)  # type: ignore[arg-type]

    def _ack(self, t: int, a: Ack) -> None:
        opts = b""
        text = f"< . 1:1(0) ack {a.ack} win {a.win}"
        if a.sacks:
            flat = [v for b in a.sacks for v in b]
            opts = packets.encode_options((TcpOption("nop"), TcpOption("nop"),
                                           TcpOption("sack", tuple(v + self.offset for v in flat))))
            text += " <nop,nop,sack " + " ".join(f"{s}:{e}" for s, e in a.sacks) + ">"
        self._line(self._inject(t, ".", 1, a.ack + self.offset, a.win, opts), text)

    def _late(self, due_us: int) -> int:
        """Now, the time an event due at `due_us` happens (what the script records); the
        latest it came is noted in the script's header."""
        now = self.now_us()
        self.late_us = max(self.late_us, now - due_us)
        return now

    def _inject(self, due_us: int, flags: str, seq: int, ack: int, win: int, opts: bytes) -> int:
        """Inject a packet due at `due_us`; the script time it went in."""
        tcp = packets.tcp_segment(_ip4(netdev.REMOTE_IP), _ip4(netdev.LOCAL_IP), FIRST_REMOTE_PORT, BIND_PORT, seq,
                                  ack, packets.tcp_flags(flags), win, opts, 0)
        t = self._late(due_us)
        self.tun.send(packets.ipv4(_ip4(netdev.REMOTE_IP), _ip4(netdev.LOCAL_IP), 6, tcp))
        return t

    def _wait(self, t_us: int) -> None:
        while self.now_us() < t_us:
            pass

    def _expect_synack(self) -> int:
        while True:
            got = self.tun.receive(3.0)
            if got is None:
                raise RuntimeError("the kernel sent no SYN-ACK")
            s = self._mine(*got)
            if s is not None and s.flags & 0x12 == 0x12:
                self.offset = s.seq
                t = s.time_us - self.start_us
                opts = ",".join(packets.option_text(k, d) for k, d in s.options)
                self._line(t, f"> {packets.flags_text(s.flags)} 0:0(0) ack {s.ack} <{opts}>")
                return t

    def _mine(self, data: bytes, stamp_us: int) -> packets.Seen | None:
        s = packets.decode(data, stamp_us)
        if s is None or (s.sport, s.dport) != (BIND_PORT, FIRST_REMOTE_PORT):
            return None
        return s

    def _outbound(self, data: bytes, stamp_us: int) -> None:
        s = self._mine(data, stamp_us)
        if s is None:
            return
        t = s.time_us - self.start_us
        seq = (s.seq - self.offset) & 0xFFFFFFFF
        opts = ",".join(packets.option_text(k, d) for k, d in s.options)
        self._line(t, f"> {packets.flags_text(s.flags)} {seq}:{seq + s.payload_len}({s.payload_len}) ack {s.ack}"
                      + (f" <{opts}>" if opts else ""))
        if s.payload_len:
            for arrival, start, end in self.peer.sent(t, seq, s.payload_len):
                self._at(arrival, "arrive", (start, end))

    def script(self) -> str:
        sc = self.sc
        head = [f"// tcplab drill --generate: scenario {sc.name} (category {sc.category}, seed {sc.seed}),",
                f"// recorded on Linux {os.uname().release}: inbound packets as injected, outbound as the kernel sent them",
                f"// (events came up to {self.late_us} us after the peer's rules had them due).",
                "`" + SYSCTLS.rstrip("\n") + "`", "",
                "0.000000 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3",
                "0.000000 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0",
                "0.000000 bind(3, ..., ...) = 0", "0.000000 listen(3, 1) = 0"]
        return "\n".join(head + [text for _, _, text in sorted(self.log)]) + "\n"


def _syn_options(sc: Scenario) -> tuple:
    o = TcpOption
    if sc.sack:
        return (o("mss", (sc.mss,)), o("sackOK"), o("nop"), o("nop"), o("nop"), o("wscale", (PEER_WSCALE,)))
    return (o("mss", (sc.mss,)), o("nop"), o("wscale", (PEER_WSCALE,)))


def _child(scenario_path: str, script_path: str) -> dict:
    """In the child: a new namespace, the settings, the recording."""
    sc = Scenario.from_text(Path(scenario_path).read_text())
    try:
        netdev.enter_new_netns()
        netdev.realtime()
        tun = netdev.Tun()
        subprocess.run(["/bin/sh", "-c", SYSCTLS], capture_output=True, env={"PATH": "/usr/sbin:/sbin:/usr/bin:/bin"})
        text = Recorder(sc, tun).run()
    except (netdev.NetdevError, RuntimeError, OSError) as e:
        return {"ok": False, "reason": f"{type(e).__name__}: {e}"}
    Path(script_path).write_text(text)
    return {"ok": True, "reason": ""}


if __name__ == "__main__":
    unhold()  # held back by signals_held() while the recorder started it
    print(json.dumps(_child(sys.argv[1], sys.argv[2])), flush=True)

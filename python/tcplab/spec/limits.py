"""The allowed range of every quantity a spec can hold: one table, used by validation and docs.

Each range is what the models and backends are meant for, inside what the native simulator
accepts (its config is u64 nanoseconds, bit/s and bytes; tests/test_limits.py builds a
simulation at every upper and lower bound to check that). docs/spec.md lists the same table.
"""

from __future__ import annotations

from dataclasses import dataclass

_S = 10**9  # ns per second
DAY_NS = 86_400 * _S


@dataclass(frozen=True)
class Limit:
    """An inclusive range [lo, hi] in the quantity's base unit, and how to show it."""

    lo: int
    hi: int
    shown: str  # "LO .. HI" in units the spec takes (tests/test_numbers.py reads them back)

    def check(self, value: int) -> str | None:
        """None if `value` is inside, else the message for the error."""
        if self.lo <= value <= self.hi:
            return None
        return f"must be in {self.shown}, got {value}"


#: Link rate (bit/s): 1 bit/s to 10 Tbit/s.
RATE = Limit(1, 10**13, "1bit .. 10Tbit")
#: One-way propagation delay of a link direction: 0 to 10 s (geostationary paths are ~0.3 s).
DELAY = Limit(0, 10 * _S, "0s .. 10s")
#: Per-packet host timing noise.
JITTER = Limit(0, 1 * _S, "0s .. 1s")
#: netem's jitter (sch_netem.c tabledist() takes sigma as an s32 of ns).
NETEM_JITTER = Limit(0, 2**31 - 1, "0s .. 2147483647ns")
#: A sender's time (iperf3 -t) and the spec's duration: up to one simulated day.
TIME = Limit(1, DAY_NS, "1ns .. 86400s (a day)")
#: A link's round-trip time, when given instead of its one-way delay.
RTT = Limit(0, 2 * DELAY.hi, "0s .. 20s")
#: When a sender or a background stream starts or stops.
START = Limit(0, DAY_NS, "0s .. 86400s (a day)")
#: A fixed-size transfer (iperf3 -n): 1 B to 1 TB.
TRANSFER = Limit(1, 10**12, "1B .. 1000GB")
#: The application's write size (iperf3 -l).
WRITE = Limit(1, 64 * 2**20, "1B .. 64MiB")
#: Socket buffers: up to INT_MAX, what Linux's tcp_rmem/tcp_wmem accept (the window offered is
#: further capped at 1 GiB by window scaling, RFC 7323 s2.3).
SOCKBUF = Limit(1, 2**31 - 1, "1B .. 2147483647B")
#: A queue limit in bytes, and in packets.
BUFFER_BYTES = Limit(1, 10**10, "1B .. 10GB")
BUFFER_PACKETS = Limit(1, 10**7, "1p .. 10000000p")
#: A host NIC's interrupt moderation (ethtool -C rx-usecs; drivers hold it in 16 bits or less,
#: e.g. bnx2 0x3ff, ixgbe IXGBE_MAX_EITR >> 2 ~ 1022) and frame trigger (rx-frames).
RX_USECS = Limit(0, 100_000, "0 .. 100000 (us)")
RX_FRAMES = Limit(0, 65_535, "0 .. 65535")
#: A receiving host's processing rate (packets/s; a core handles ~1-3 Mpps of TCP) and its NIC's
#: receive ring (ethtool -g: 4096 descriptors at most on e1000e and ixgbe, 32768 on mlx5).
RX_PPS = Limit(1, 10**9, "1 .. 1000000000 (packets/s)")
RX_RING = Limit(1, 65_536, "1 .. 65536 (packets)")
#: The largest TSO burst a sending NIC takes (Linux gso_max_size: up to GSO_MAX_SIZE 512 KiB with
#: BIG TCP; 64 KiB by default).
TSO_MAX = Limit(1, 512 * 1024, "1B .. 512KiB")
#: A TSO burst's DMA fragments (FreeBSD if_hw_tsomaxsegcount): tcp_m_copym() sends nothing below 2.
TSO_SEGCOUNT = Limit(2, 1024, "2 .. 1024")
#: One DMA fragment's size (if_hw_tsomaxsegsize).
TSO_SEGSIZE = Limit(512, 65536, "512B .. 64KiB")
#: netem's `limit` (packets it holds, its delay included; default 1000).
NETEM_LIMIT = Limit(1, 10**7, "1 .. 10000000 (packets)")
#: A shared-buffer switch's dynamic-threshold multiplier (Choudhury & Hahne; switch ASICs offer
#: powers of two from 1/128 to 8) and how many ports a static partition divides it among.
SHARED_BUFFER_ALPHA = (1 / 1024, 1024.0)
SHARED_BUFFER_PORTS = Limit(1, 1024, "1 .. 1024")
#: A latency probe's interval (ping -i; iputils lets root go to 2 ms, flent's default is 200 ms)
#: and its ICMP echo size, header included (ping -s 56 sends 64: at least 16 bytes of payload
#: for the send time ping carries, at most what fits a 1500-byte IP packet).
PROBE_INTERVAL = Limit(10**6, DAY_NS, "1ms .. 86400s")
PROBE_SIZE = Limit(24, 1480, "24B .. 1480B")
#: Tracing: the flow-state sample period (or "ack") and the interval table's period.
SAMPLE = Limit(1000, DAY_NS, "1us .. 86400s, or \"ack\"")
INTERVAL = Limit(10**6, DAY_NS, "1ms .. 86400s")
#: Sender/receiver pairs of a dumbbell, senders of a switch. The simulator's memory per flow is
#: constant (hosts keep no routing row; bench/README.md states a flow's cost); tests/test_limits.py
#: builds and runs the largest.
FLOWS = Limit(1, 10_000, "1 .. 10000")
#: Flows a run's [[workload]] tables make, all together (bench/scale.py runs 100 000).
WORKLOAD_FLOWS = Limit(1, 1_000_000, "1 .. 1000000")

#: Below these a value is legal but probably a typo: the CLI warns (and summary.json keeps it).
WARN_RATE_BELOW_BPS = 1000

#: Every limit by the spec keys it applies to, for docs/spec.md and the tests.
BY_KEY: dict[str, Limit] = {
    "rate": RATE, "delay / rtt / reverse_delay": DELAY, "jitter": JITTER, "netem delay JITTER": NETEM_JITTER,
    "senders.*.time, duration": TIME, "start, stop": START, "bytes": TRANSFER, "write": WRITE,
    "sndbuf, rcvbuf": SOCKBUF, "buffer (size)": BUFFER_BYTES, "buffer (packets)": BUFFER_PACKETS,
    "trace.sample": SAMPLE, "trace.interval": INTERVAL, "topology.pairs, topology.senders": FLOWS,
    "workload flows (all together)": WORKLOAD_FLOWS,
    "hosts.*.nic.rx_usecs": RX_USECS,
    "hosts.*.nic.rx_frames": RX_FRAMES, "hosts.*.nic.tso_max": TSO_MAX, "hosts.*.netem.limit": NETEM_LIMIT,
    "hosts.*.nic.tso_max_segcount": TSO_SEGCOUNT, "hosts.*.nic.tso_max_segsize": TSO_SEGSIZE,
    "hosts.*.nic.rx_pps": RX_PPS, "hosts.*.nic.rx_ring": RX_RING,
    "topology.shared_buffer_ports": SHARED_BUFFER_PORTS,
    "probes.interval": PROBE_INTERVAL, "probes.size": PROBE_SIZE,
}

"""Latency probes on the kernel backend: ping's -D output parsed into the probes table (no root),
and — as root, which CI is — a short dumbbell run whose ping sees the configured RTT when idle
and the drop-tail queue behind a cubic flow, leaving nothing behind."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import kernel_dumbbell

from tcplab.backends import ping
from tcplab.model import Probe
from tcplab.store import read_table

ROOT = Path(__file__).resolve().parents[1]
TCPLAB = [sys.executable, "-m", "tcplab.cli"]

# iputils ping 20221126 -D as it prints: seq 3 lost, seq 4 answered twice.
PING_OUT = """PING 10.100.2.2 (10.100.2.2) 56(84) bytes of data.
[1732412345.100500] 64 bytes from 10.100.2.2: icmp_seq=1 ttl=62 time=20.5 ms
[1732412345.200400] 64 bytes from 10.100.2.2: icmp_seq=2 ttl=62 time=20.4 ms
[1732412345.420000] 64 bytes from 10.100.2.2: icmp_seq=4 ttl=62 time=120 ms
[1732412345.421000] 64 bytes from 10.100.2.2: icmp_seq=4 ttl=62 time=121 ms (DUP!)
[1732412345.480810] 64 bytes from 10.100.2.2: icmp_seq=5 ttl=62 time=0.810 ms

--- 10.100.2.2 ping statistics ---
5 packets transmitted, 4 received, +1 duplicates, 20% packet loss, time 401ms
rtt min/avg/max/mdev = 0.810/45.100/121.000/50.000 ms
"""


def test_ping_output_becomes_the_probes_table():
    pr = Probe("ping0", "s2", "r2", 100_000_000, 64, 0, 10**9)
    assert ping.command(pr, "10.0.0.1", "10.0.0.2", 10) == ["ping", "-n", "-D", "-i", "0.1", "-s", "56", "-c", "10",
                                                            "-W", "2", "-I", "10.0.0.1", "10.0.0.2"]
    assert ping.count(pr, 10 * 10**9) == 10 and ping.count(pr, 450_000_000) == 5  # at 0, .., 400 ms
    res = ping.parse(PING_OUT)
    assert res.sent == 5 and sorted(res.replies) == [1, 2, 4, 5]
    unix_t0 = 1732412345_000000000
    rows = ping.rows(pr, res, launched_ns=80_000_000, unix_t0_ns=unix_t0)
    assert [(r["seq"], r["rtt_ns"]) for r in rows] == [(1, 20_500_000), (2, 20_400_000), (3, -1), (4, 120_000_000),
                                                       (5, 810_000)]
    # Send time = reply time - RTT, relative to t0; a lost request's from the launch and interval.
    assert [r["t_ns"] for r in rows] == [80_000_000, 180_000_000, 280_000_000, 300_000_000, 480_000_000]
    assert ping.totals(pr, res) == {"name": "ping0", "sent": 5, "answered": 4, "lost": 1}
    with pytest.raises(ping.PingOutputError):
        ping.parse(PING_OUT.split("---")[0])  # killed before its totals


SPEC = kernel_dumbbell("netns-probes", 1, "20Mbit", "10ms", "100p") + """[senders.s1]
to = "r1"
cc = "cubic"
time = "3s"
start = "1s"
[[probes]]
from = "s2"
to = "r2"
interval = "50ms"
[[probes]]
name = "router"
from = "rt1"
to = "r1"
interval = "100ms"
"""


def test_kernel_ping_sees_the_base_rtt_idle_and_the_queue_under_load(tmp_path):
    from test_netns import _leftovers, _require_root, _wait_for_quiet_cpus

    _require_root()
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    out = tmp_path / "run"
    try:
        _wait_for_quiet_cpus()
        p = subprocess.run([*TCPLAB, "run", str(spec), "--backend", "netns", "--out", str(out), "--no-intervals"],
                           capture_output=True, text=True, timeout=180, cwd=ROOT)
        assert p.returncode == 0, p.stderr[-3000:]
        assert "ping RTT" in p.stdout
        s = json.loads((out / "summary.json").read_text())
        pr, router = s["probes"]
        everything = read_table(out, "probes")
        t = everything[everything["probe"] == "ping0"]
        # 4 s (the sender's end) at 50 ms: 80 requests, each with a row; ping's own count agrees.
        assert pr["sent"] == 80 == len(t) and list(t["seq"]) == list(range(1, 81))
        assert pr["answered"] + pr["lost"] == 80 and pr["lost"] == int((t["rtt_ns"] < 0).sum())
        assert "80 packets transmitted" in (out / "netns" / "ping-1.txt").read_text()
        base_ms = 2 * (10 + 2 * 0.05)  # configured propagation; serialisation of 84 B is ~40 us
        idle = t[(t["t_ns"] < 0.9e9) & (t["rtt_ns"] >= 0)]["rtt_ns"].to_numpy() / 1e6
        assert len(idle) >= 15 and abs(np.median(idle) - base_ms) < 1.0, idle
        # cubic fills the 100-packet drop-tail buffer (60 ms at 20 Mbit/s) within its 3 s.
        loaded = t[(t["t_ns"] > 2e9) & (t["t_ns"] < 4e9) & (t["rtt_ns"] >= 0)]["rtt_ns"].to_numpy() / 1e6
        assert np.percentile(loaded, 95, method="inverted_cdf") > base_ms + 20, loaded
        assert np.max(loaded) < base_ms + 100 * 1514 * 8 / 20e6 * 1e3 + 5, loaded
        # A router pings from its own address (-I): its replies are routed back to it.
        r = everything[(everything["probe"] == "router") & (everything["t_ns"] < 0.9e9)]
        assert router["sent"] == 40 and len(r) == 9 and (r["rtt_ns"] >= 0).all(), router
        assert abs(np.median(r["rtt_ns"]) / 1e6 - 2 * (10 + 0.05)) < 1.0, r
    finally:
        subprocess.run([*TCPLAB, "netns", "cleanup"], capture_output=True, cwd=ROOT)  # runs whose owner died
    # Nothing of this run is left (other runs may be under way on a shared machine: only ours).
    run_id = s["emulation"]["plan"]["run_id"]
    left = _leftovers()
    assert not [n for n in left["namespaces"] + left["veths"] + left["trace_instances"] if run_id in n], left
    assert not subprocess.run(["pgrep", "-f", "ping -n -D"], capture_output=True).stdout

"""Linux's other congestion-control modules run from a spec and show their defining behaviour
on a 100 Mbit/s x 40 ms path with a one-BDP (350-packet) buffer. The arithmetic itself is tested
against hand calculations in each crates/tcplab-sim/src/cc/*.rs; T7 (test_sweep.py) runs all eight."""

from __future__ import annotations

import json

from conftest import REPO, tcplab
from tcplab.store import read_table

SPEC = """
name = "zoo"
seed = 1
[topology]
kind = "pipe"
[topology.access]
rate = "1Gbit"
delay = "10us"
[topology.bottleneck]
rate = "100Mbit"
delay = "20ms"
buffer = "350p"
[senders.s1]
to = "r1"
stack = "linux"
cc = "{cc}"
time = "{time}"
"""


def _run(tmp_path, cc, time, out=None):
    spec = tmp_path / f"{cc}.toml"
    spec.write_text(SPEC.format(cc=cc, time=time))
    out = tmp_path / (out or cc)
    tcplab("run", str(spec), "--out", str(out), "--no-report", cwd=REPO)
    return out, json.loads((out / "summary.json").read_text())


def _after(table, t_s, column="t_ns"):
    return table[table[column] >= t_s * 1e9]


def test_vegas_settles_with_alpha_to_beta_packets_queued(tmp_path):
    out, s = _run(tmp_path, "vegas", "30s")
    # Slow start overshoots (Vegas checks once per round); then one packet per RTT down to the
    # point where 2 (alpha) to 4 (beta) packets sit in the queue, and no loss after that.
    queue = _after(read_table(out, "queues"), 25)["queue_packets"]
    assert queue.max() <= 6 and 1 <= queue.mean() <= 4, queue.describe()
    ports = read_table(out, "ports")
    assert _after(ports, 2, "t_start_ns")["drops"].sum() == 0
    assert s["bottleneck"]["utilisation"] > 0.95


def test_bbr_fills_the_pipe_with_a_short_queue_and_the_same_seed_gives_the_same_run(tmp_path):
    out, s = _run(tmp_path, "bbr", "12s")
    # STARTUP's 2.89x overshoot fills the buffer once; then PROBE_BW keeps ~BDP in flight plus
    # the short 1.25x probes: no drops after the first second, a queue far below the buffer.
    ports = read_table(out, "ports")
    assert _after(ports, 1, "t_start_ns")["drops"].sum() == 0
    queue = _after(read_table(out, "queues"), 2)["queue_packets"]
    assert queue.mean() < 50 and queue.max() < 175, queue.describe()
    # bbr_init() takes min_rtt from tcp_min_rtt(), which holds the handshake's RTT: 60-byte SYNs
    # see no 1500-byte serialisation, so no data RTT matches it, the 10 s filter expires and
    # PROBE_RTT (4 packets for 200 ms) takes its bite from the 10-11 s interval; every other
    # second after the first carries the pipe (94 Mbit/s of payload on 100 Mbit/s of IP).
    rates = [b * 8 / 1e6 for b in read_table(out, "intervals")["bytes"]]
    assert all(r > 93 for i, r in enumerate(rates) if i not in (0, 10)), rates
    assert rates[10] < 85, rates
    assert s["bottleneck"]["utilisation"] > 0.93
    # PROBE_BW's starting phase is random (prandom in bbr_reset_probe_bw_mode): from the seed.
    again, _ = _run(tmp_path, "bbr", "12s", out="bbr-again")
    for name in ("flows", "queues", "summary.json"):
        path = f"{name}.parquet" if name != "summary.json" else name
        assert (out / path).read_bytes() == (again / path).read_bytes(), name


def _first_reduction(out):
    """cwnd on the last ACK before the first fast recovery, and the ssthresh the module chose."""
    flows, events = read_table(out, "flows"), read_table(out, "events")
    start = events[events["event"] == 1].iloc[0]  # RecoveryStart
    before = flows[flows["t_ns"] < start["t_ns"]].iloc[-1]
    return before["cwnd_bytes"], start["ssthresh_bytes"]


def test_each_module_chooses_its_own_ssthresh_at_the_first_loss(tmp_path):
    # tcp_bic.c bictcp_recalc_ssthresh: 819/1024 above low_window; tcp_htcp.c: beta starts at
    # BETA_MIN = 0.5; tcp_westwood.c: tcp_reno_ssthresh (BWE x RTTmin comes when recovery ends);
    # tcp_yeah.c: cwnd minus the estimated queue, at least cwnd >> 3 and at most cwnd/2 removed;
    # tcp_scalable.c: cwnd - cwnd >> 3; FreeBSD cc_htcp.c htcp_ssthresh_update: cwnd x 128 >> 8;
    # tcp_highspeed.c: its table index moves only in congestion avoidance, so a first loss in slow
    # start still uses b = 0.5 although the window (~1370 packets) is far above 38.
    bounds = {("linux", "bic"): (0.79, 0.81), ("linux", "htcp"): (0.49, 0.51), ("linux", "westwood"): (0.49, 0.51),
              ("linux", "yeah"): (0.49, 0.876), ("linux", "scalable"): (0.87, 0.876), ("freebsd", "htcp"): (0.499, 0.501),
              ("linux", "highspeed"): (0.49, 0.51)}
    for (stack, cc), (lo, hi) in bounds.items():
        spec = tmp_path / f"{stack}-{cc}.toml"
        spec.write_text(SPEC.format(cc=cc, time="3s").replace('stack = "linux"', f'stack = "{stack}"')
                        + '[trace]\nsample = "ack"\n')
        tcplab("run", str(spec), "--out", str(tmp_path / f"{stack}-{cc}"), "--no-report", cwd=REPO)
        cwnd, ssthresh = _first_reduction(tmp_path / f"{stack}-{cc}")
        assert lo <= ssthresh / cwnd <= hi, (stack, cc, cwnd, ssthresh)
    # Westwood+: when that recovery ends, cwnd = ssthresh = its bandwidth estimate x RTTmin, not
    # Reno's half (CA_EVENT_COMPLETE_CWR).
    events = read_table(tmp_path / "linux-westwood", "events")
    start, end = events[events["event"] == 1].iloc[0], events[events["event"] == 2].iloc[0]
    assert end["cwnd_bytes"] == end["ssthresh_bytes"] != start["ssthresh_bytes"], (start, end)

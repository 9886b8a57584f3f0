"""Latency probes ([[probes]], ping) on the simulator: the base RTT from independent arithmetic,
the standing queue of a drop-tail buffer behind a bulk flow, FQ-CoDel's isolation of the sparse
probe, loss counting, percentile arithmetic against numpy, and one-line errors for bad input."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from tcplab import _native
from tcplab.analysis.latency import percentile, summary_ms
from tcplab.analysis.summary import summarize
from tcplab.backends import sim as simb
from tcplab.spec import SpecError, resolve
from tcplab.store import read_table

ACCESS_BPS, ACCESS_DELAY_NS = 10**9, 50_000
BOTTLENECK_BPS, BOTTLENECK_DELAY_NS = 10 * 10**6, 10_000_000

BASE = {
    "name": "probes",
    "topology": {"kind": "dumbbell", "pairs": 2,
                 "access": {"rate": "1Gbit", "delay": "50us", "jitter": "0us"},
                 "bottleneck": {"rate": "10Mbit", "delay": "10ms", "buffer": "100p"}},
    # The bulk flow, s1 -> r1; the probe pings from the other pair's hosts, so it shares only the
    # bottleneck with it (not s1's own NIC queue).
    "senders": {"s1": {"to": "r1", "cc": "newreno", "time": "8s", "start": "2s"}},
    "probes": [{"from": "s2", "to": "r2", "interval": "100ms"}],
}


def _tx_ns(ip_bytes: int, rate_bps: int) -> int:
    return math.ceil(ip_bytes * 8 * 10**9 / rate_bps)


def base_rtt_ns(icmp_bytes: int) -> int:
    """Three hops each way (access, bottleneck, access): each serialises the probe's IP packet
    (ICMP message + 20-byte IP header) and propagates it."""
    ip = icmp_bytes + 20
    one_way = 2 * (_tx_ns(ip, ACCESS_BPS) + ACCESS_DELAY_NS) + _tx_ns(ip, BOTTLENECK_BPS) + BOTTLENECK_DELAY_NS
    return 2 * one_way


def _run(spec: dict, tmp_path, duration: str | None = None):
    exp = resolve(spec, "t.toml", duration=duration)
    totals = simb.run(exp, tmp_path)
    return summarize(exp, totals, tmp_path), read_table(tmp_path, "probes")


def test_an_idle_path_gives_the_base_rtt_exactly(tmp_path):
    spec = copy.deepcopy(BASE)
    spec["probes"] = [{"name": "small", "from": "s2", "to": "r2", "interval": "100ms", "stop": "1s"},
                      {"name": "big", "from": "s2", "to": "r2", "interval": "300ms", "size": 1480, "start": "50ms",
                       "stop": "1s"}]
    summary, table = _run(spec, tmp_path)
    # 64-byte echo (84 IP bytes): 2 x (2 x (672 ns + 50 us) + 67.2 us + 10 ms) = 20.337088 ms.
    assert base_rtt_ns(64) == 20_337_088
    for name, size, n in (("small", 64, 10), ("big", 1480, 4)):
        mine = table[table["probe"] == name]
        assert list(mine["seq"]) == list(range(1, n + 1)), "ping counts icmp_seq from 1"
        assert set(mine["rtt_ns"]) == {base_rtt_ns(size)}
        assert list(mine["t_ns"]) == [(i * 100 if name == "small" else 50 + i * 300) * 10**6 for i in range(n)]
    rows = {p["probe"]: p for p in summary["probes"]}
    assert rows["small"]["sent"] == rows["small"]["answered"] == 10 and rows["small"]["loss_pct"] == 0
    assert rows["big"]["rtt_ms"]["p99"] == round(base_rtt_ns(1480) / 1e6, 3)


def test_behind_a_bulk_flow_the_probe_sees_the_drop_tail_queue(tmp_path):
    summary, table = _run(BASE, tmp_path)
    base_ms = base_rtt_ns(64) / 1e6
    full_ms = 100 * _tx_ns(1500, BOTTLENECK_BPS) / 1e6  # 100 packets of 1500 B at 10 Mbit/s: 120 ms
    idle = table[table["t_ns"] < 2 * 10**9]
    loaded = table[(table["t_ns"] >= 4 * 10**9) & (table["t_ns"] < 10 * 10**9)]
    assert set(idle["rtt_ns"]) == {base_rtt_ns(64)}
    rtt_ms = loaded["rtt_ns"].to_numpy() / 1e6
    assert (rtt_ms >= base_ms).all()
    # The queue never holds more than the buffer plus the packet on the wire, and NewReno fills it
    # before every loss: the largest RTT is the base plus a full buffer (the probes, 100 ms
    # apart, catch it nearly full), never more than that and the packet being serialised.
    one_pkt_ms = _tx_ns(1500, BOTTLENECK_BPS) / 1e6
    assert base_ms + 0.9 * full_ms <= rtt_ms.max() <= base_ms + full_ms + one_pkt_ms
    # After a loss NewReno halves cwnd = BDP + buffer (about 17 + 100 packets), so about 41
    # packets still queue: the standing queue never drains. Its RTT is base + that queue.
    assert np.percentile(rtt_ms, 1, method="inverted_cdf") >= base_ms + 0.25 * full_ms
    # The probe samples the queue in time, the bottleneck's delay histogram per packet (a spec
    # with probes reports it); at a busy constant-rate link the two agree at the top, where the
    # sawtooth spends its time, to the histogram's buckets and the probes' 100 ms sampling.
    qd = summary["bottleneck"]["queue_delay_ms"]
    # Over the same span: the histogram holds every packet from the bulk flow's start (2 s), so
    # the probes from then on (its first slow start and recovery included, which can leave the
    # queue full for a while: a loss inside the first recovery does, since the linux model
    # grows by the packets delivered).
    busy = table[(table["t_ns"] >= 2 * 10**9) & (table["t_ns"] < 10 * 10**9)]
    queued_ms = busy["rtt_ns"].to_numpy() / 1e6 - base_ms
    for q in (95, 99):
        assert abs(np.percentile(queued_ms, q, method="inverted_cdf") - qd[f"p{q}"]) < 2 * one_pkt_ms, (q, qd)
    # Percentiles in summary.json are the nearest-rank ones of the same samples.
    answered = table[table["rtt_ns"] >= 0]["rtt_ns"].to_numpy()
    got = summary["probes"][0]["rtt_ms"]
    for q in (50, 95, 99):
        assert got[f"p{q}"] == round(np.percentile(answered, q, method="inverted_cdf") / 1e6, 3)


def test_fq_codel_keeps_the_sparse_probe_near_the_base_rtt(tmp_path):
    base_ms = base_rtt_ns(64) / 1e6
    one_pkt_ms = _tx_ns(1500, BOTTLENECK_BPS) / 1e6
    out = {}
    for aqm in ("drop-tail", "fq_codel"):
        spec = copy.deepcopy(BASE)
        spec["topology"]["bottleneck"]["aqm"] = aqm
        (tmp_path / aqm).mkdir()
        summary, table = _run(spec, tmp_path / aqm)
        loaded = table[(table["t_ns"] >= 4 * 10**9) & (table["t_ns"] < 10 * 10**9)]
        out[aqm] = loaded["rtt_ns"].to_numpy() / 1e6, summary
    rtt, summary = out["fq_codel"]
    # RFC 8290 s4.1: a flow that empties its queue between packets is a new flow each time and is
    # served before the old flows; it waits for the packet being serialised and, when the bulk
    # flow had drained and is new too, for that flow's one quantum (1514 B: one packet). The
    # reply shares the reverse bottleneck with the bulk flow's ACKs (52-64 B, 42-51 us each).
    assert len(rtt) == 60 and rtt.max() <= base_ms + 2 * one_pkt_ms + 0.2, rtt.max()
    assert np.median(rtt) <= base_ms + one_pkt_ms
    assert summary["probes"][0]["lost"] == 0
    # The bulk flow itself is held near CoDel's 5 ms target, far below drop-tail's queue.
    assert summary["bottleneck"]["queue_delay_ms"]["p50"] < 10
    tail = out["drop-tail"][0]
    assert np.median(tail) > base_ms + 30 > np.median(rtt) + 25
    # `tcplab compare` puts both runs' latency rows in one table, each led by its run's label.
    from tcplab.report.text import latency_rows, latency_table

    t = latency_table(out["drop-tail"][1], ["A", "B"], [summary])
    rows_a, rows_b = latency_rows(out["drop-tail"][1]), latency_rows(summary)
    assert t.row_count == len(rows_a) + len(rows_b) and rows_b[0][0] == "ping0 (ping RTT)"
    assert list(t.columns[0].cells) == ["A"] * len(rows_a) + ["B"] * len(rows_b)


def test_lost_requests_and_replies_are_counted(tmp_path):
    spec = copy.deepcopy(BASE)
    spec["topology"]["bottleneck"] |= {"loss": 0.2, "reverse_loss": 0.2}
    spec["senders"]["s1"]["start"] = "9s"
    spec["probes"] = [{"from": "s2", "to": "r2", "interval": "20ms", "stop": "4s"}]
    summary, table = _run(spec, tmp_path, duration="1s")
    p = summary["probes"][0]
    lost = int((table["rtt_ns"] < 0).sum())
    assert p["sent"] == 200 and p["lost"] == lost and p["answered"] == 200 - lost
    # Each request crosses two lossy directions: P(answered) = 0.8^2; 200 requests.
    assert 0.64 * 200 - 4 * math.sqrt(200 * 0.64 * 0.36) < p["answered"] < 0.64 * 200 + 4 * math.sqrt(200 * 0.64 * 0.36)
    assert p["loss_pct"] == round(100 * lost / 200, 3)
    assert set(table[table["rtt_ns"] >= 0]["rtt_ns"]) == {base_rtt_ns(64)}


def test_percentiles_match_numpy_on_the_same_samples():
    rng = np.random.default_rng(7)
    for n in (1, 2, 7, 100, 1001):
        xs = rng.exponential(5e6, n).astype(np.int64) + 1
        srt = sorted(int(x) for x in xs)
        for q in (0.5, 0.95, 0.99):
            want = int(np.percentile(xs, q * 100, method="inverted_cdf"))
            assert percentile(srt, q) == want
            # The simulator's histogram (per-flow RTT, per-queue delay): the lower bound of the
            # bucket holding that sample, within 1/64 below it.
            (h,) = _native.histogram_quantiles([int(x) for x in xs], [q])
            assert want * (1 - 1 / 64) <= h <= want
        s = summary_ms(xs)
        assert s["mean"] == round(xs.mean() / 1e6, 3) and s["max"] == round(xs.max() / 1e6, 3)


@pytest.mark.parametrize("probe,key,words", [
    ({"from": "s9", "to": "r2"}, "probes[0].from", "not a node of this topology (allowed: s1, s2, r1, r2, rt1, rt2)"),
    ({"from": "s2", "to": "s2"}, "probes[0].to", "must differ"),
    ({"from": "s2", "to": "r2", "interval": "0ms"}, "probes[0].interval", "must be in 1ms .. 86400s"),
    ({"from": "s2", "to": "r2", "interval": "-5ms"}, "probes[0].interval", "is not a duration"),
    ({"from": "s2", "to": "r2", "interval": 0.2}, "probes[0].interval", "expected a duration string"),
    ({"from": "s2", "to": "r2", "size": 8}, "probes[0].size", "must be in 24B .. 1480B"),
    ({"from": "s2", "to": "r2", "size": "9000B"}, "probes[0].size", "must be in 24B .. 1480B"),
    ({"from": "s2", "to": "r2", "count": 5}, "probes[0].count", "unknown key (allowed: name, from, to, interval"),
    ({"from": "s2", "to": "r2", "start": "2s", "stop": "1s"}, "probes[0].stop", "must be after start"),
    ({"from": "s2", "to": "r2", "name": "s1"}, "probes[0].name", "already the name of a sender"),
    ({"from": "s2", "to": "r2", "name": "a b"}, "probes[0].name", "letters, digits"),
])
def test_bad_probes_fail_with_one_line_naming_the_key(probe, key, words):
    spec = copy.deepcopy(BASE)
    spec["probes"] = [probe]
    with pytest.raises(SpecError) as e:
        resolve(spec, "exp.toml")
    msg = str(e.value)
    assert msg.startswith(f"exp.toml: {key}: ") and words in msg and "\n" not in msg, msg


def test_probes_must_be_an_array_of_tables():
    spec = copy.deepcopy(BASE)
    spec["probes"] = {"from": "s2", "to": "r2"}
    with pytest.raises(SpecError, match=r"^exp.toml: probes: must be an array of tables"):
        resolve(spec, "exp.toml")
    spec["probes"] = [{"from": "s2", "to": "r2"}, {"from": "s1", "to": "r1"}]
    names = [p.name for p in resolve(spec, "exp.toml").probes]
    assert names == ["ping0", "ping1"]


@pytest.mark.parametrize("key,at", [("interval", "1ms"), ("interval", "1day"), ("size", "24B"), ("size", "1480B")])
def test_every_probe_bound_runs_in_the_simulator(key, at):
    import json

    spec = copy.deepcopy(BASE)
    spec["probes"] = [{"from": "s2", "to": "r2", key: at.replace("1day", "86400s")}]
    sim = _native.Simulation(json.dumps(simb.lower(resolve(spec, "bounds.toml"))), {})
    sim.run_until(30_000_000)
    (st,) = sim.probe_stats()
    assert st["sent"] == (31 if at == "1ms" else 1) and st["answered"] >= 1  # at 0, 1, .., 30 ms


def test_the_remote_backend_needs_a_linux_machine_with_an_address_at_each_probe_end(tmp_path):
    from test_remote import _lab_toml

    from tcplab.backends.remote.lab import LabError, check_against, load_lab

    spec = copy.deepcopy(BASE)
    spec["senders"] = {"s1": {"to": "r1", "time": "1s"}}
    check_against(load_lab(_lab_toml(tmp_path)), resolve(spec, "exp.toml"))  # s2 -> r2: both have addresses
    spec["probes"] = [{"from": "rt1", "to": "r2"}]
    with pytest.raises(LabError, match=r"hosts.rt1.address: is required for a node that sends or receives"):
        check_against(load_lab(_lab_toml(tmp_path)), resolve(spec, "exp.toml"))
    spec["probes"] = [{"from": "s2", "to": "r2"}]
    text = _lab_toml(tmp_path).read_text().replace('[hosts.s2]\nssh = "lab-s2"\nos = "linux"',
                                                   '[hosts.s2]\nssh = "lab-s2"\nos = "freebsd"')
    (tmp_path / "bsd.toml").write_text(text)
    with pytest.raises(LabError, match=r"hosts.s2.os: is 'freebsd' but probe 'ping0' pings from it, which needs a linux"):
        check_against(load_lab(tmp_path / "bsd.toml"), resolve(spec, "exp.toml"))


def test_every_queue_with_a_discipline_is_monitored_and_reported(tmp_path):
    spec = copy.deepcopy(BASE)
    spec["topology"]["bottleneck"] |= {"aqm": "codel", "reverse_aqm": "fq_codel"}
    exp = resolve(spec, "t.toml", duration="2s")
    assert [p.label for p in exp.monitored_ports] == ["rt1->rt2", "rt2->rt1"]
    totals = simb.run(exp, tmp_path)
    summary = summarize(exp, totals, tmp_path)
    qs = {q["port"]: q for q in summary["queues"]}
    assert [(q["port"], q["aqm"]) for q in summary["queues"]] == [("rt1->rt2", "codel"), ("rt2->rt1", "fq_codel")]
    assert qs["rt1->rt2"]["queue_delay_ms"] == summary["bottleneck"]["queue_delay_ms"]
    # One delay sample per packet that started its transmission: the port's packets sent, less
    # the one on the wire at the end, if any.
    ports = {p["port"]: p for p in totals["ports"]}
    for q in summary["queues"]:
        port = next(p for p in exp.ports if p.label == q["port"])
        assert 0 <= q["queue_delay_ms"]["packets"] - ports[port.index]["tx_packets"] <= 1
    sampled = read_table(tmp_path, "queues")
    assert set(sampled["port"]) == {"rt1->rt2", "rt2->rt1"}


def test_a_sweep_catalogs_and_charts_the_probes_rtt_per_discipline(tmp_path):
    import tcplab

    spec = copy.deepcopy(BASE)
    spec["senders"]["s1"] |= {"start": "0s", "time": "4s"}
    spec["probes"] = [{"from": "s2", "to": "r2", "interval": "50ms", "start": "2s"}]
    spec["sweep"] = {"aqm": {"topology.bottleneck.aqm": ["drop-tail", "fq_codel"]}}
    runs = tcplab.sweep(spec, jobs=1, out=tmp_path / "sw").set_index("p_topology_bottleneck_aqm")
    assert set(runs.index) == {"drop-tail", "fq_codel"} and (runs["probe"] == "ping0").all()
    assert runs.loc["fq_codel", "probe_rtt_p99_ms"] < base_rtt_ns(64) / 1e6 + 2.5 < runs.loc["drop-tail", "probe_rtt_p50_ms"]
    assert (runs["probe_loss_pct"] == 0).all()
    # Every request is in the probes view; the catalog's percentiles are those of its rows.
    rows = tcplab.query("SELECT run, rtt_ns FROM probes", tmp_path / "sw" / "runs")
    for run, row in runs.set_index("run").iterrows():
        mine = rows[rows["run"] == run]["rtt_ns"].to_numpy()
        assert len(mine) == 40  # 2 s at 50 ms
        assert row["probe_rtt_p99_ms"] == round(np.percentile(mine, 99, method="inverted_cdf") / 1e6, 3)
    page = (tmp_path / "sw" / "sweep.html").read_text()
    assert 'data-chart="sweep_aqm_probe_rtt_p99_ms"' in page and "probe RTT p99 (ms) (mean" in page


def test_the_resolved_spec_with_probes_runs_again_as_it_is():
    spec = copy.deepcopy(BASE)
    spec["probes"] = [{"from": "s2", "to": "r2", "size": 100}, {"name": "r", "from": "rt1", "to": "r1", "start": "1s"}]
    exp = resolve(spec, "a.toml")
    again = resolve(exp.spec, "b.toml")
    assert again.probes == exp.probes and again.spec == exp.spec
    assert exp.spec["probes"][0] == {"name": "ping0", "from": "s2", "to": "r2", "interval": "200ms", "size": "100B",
                                     "start": "0s", "stop": "10000000000ns"}
    assert [p.count for p in exp.probes] == [50, 45]  # 10 s at 200 ms; 9 s


def test_iterations_compare_the_probes_rtt_percentiles():
    from tcplab.report.ministat import iterations_report

    def summary(p50: float, p99: float) -> dict:
        flow = {"flow": "s1", "kind": "time", "bytes_written": 1, "throughput_mbps": 9.0, "completion_s": None}
        return {"flows": [flow], "probes": [{"probe": "ping0", "rtt_ms": {"p50": p50, "p99": p99}}]}

    text = iterations_report([summary(20.0, 40.0), summary(22.0, 44.0), summary(24.0, 48.0)])
    p50 = text.split("probe RTT p50 (ms), 3 iterations:")[1].split("probe RTT p99")[0]
    assert "x ping0" in p50 and p50.split("\n")[-3].split()[:6] == ["x", "3", "20", "24", "22", "22"], p50
    assert "probe RTT p99 (ms), 3 iterations:" in text

"""netem's impairments, schedules and mahimahi traces on the simulator, each against independent
arithmetic: jitter moments (iproute2's tables rebuilt here in Python from normal.c and pareto.c),
the reorder share with a gap, Gilbert-Elliott's mean loss and burst length, duplication and
corruption rates, the crate's decision sequence, a trace's opportunities per second, a rate
step's effect on queue and cwnd; and one-line errors for bad input."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest

from tcplab import _native
from tcplab.analysis.summary import summarize
from tcplab.backends import sim as simb
from tcplab.spec import SpecError, resolve
from tcplab.spec import impair as impair_spec
from tcplab.store import read_table

DELAY_NS = 10_000_000

BASE = {
    "name": "impair",
    "topology": {"kind": "dumbbell", "pairs": 2,
                 "access": {"rate": "1Gbit", "delay": "50us", "jitter": "0us"},
                 "bottleneck": {"rate": "10Mbit", "reverse_delay": "10ms", "buffer": "1000p",
                                "netem": "delay 10ms"}},
    # A short flow first; the probe (s2 -> r2) runs alone afterwards, so only netem moves its RTT.
    "senders": {"s1": {"to": "r1", "cc": "newreno", "time": "500ms"}},
    "probes": [{"from": "s2", "to": "r2", "interval": "2ms", "start": "1s", "stop": "21s"}],
}


def base_rtt_ns() -> int:
    """The probe's RTT without netem's jitter: 84 IP bytes over access, bottleneck, access each way."""
    tx = lambda rate: math.ceil(84 * 8 * 10**9 / rate)  # noqa: E731
    one_way = 2 * (tx(10**9) + 50_000) + tx(10 * 10**6) + DELAY_NS
    return 2 * one_way


def _run(netem: str, tmp_path, **bottleneck):
    spec = copy.deepcopy(BASE)
    spec["topology"]["bottleneck"] |= {"netem": netem} | bottleneck
    exp = resolve(spec, "t.toml")
    totals = simb.run(exp, tmp_path)
    return exp, summarize(exp, totals, tmp_path), read_table(tmp_path, "probes")


def _rtt_offsets_ms(table) -> np.ndarray:
    rtt = table["rtt_ns"].to_numpy()
    return (rtt[rtt >= 0] - base_rtt_ns()) / 1e6


# iproute2's tables, rebuilt here from netem/normal.c and netem/pareto.c (independently of the Rust).
def _normal_table() -> list[int]:
    table = [0.0] * 16385
    x = -10.0
    while x < 10.05:
        table[round(16384 * (0.5 + 0.5 * math.erf(x / math.sqrt(2.0))))] = x
        x += 0.00005
    return [max(-32768, min(32767, round(table[i] * 8192))) for i in range(0, 16384, 4)]


def _pareto_table() -> list[int]:
    out = []
    for i in range(65536, 0, -16):
        d = (1.0 / (i / 65536) ** (1.0 / 3.0) - 1.5) * (4.0 / 3.0) * 8192
        out.append(round(min(d, 32767.0)))
    return out


def _table_moments_ms(table: list[int], sigma_ms: float) -> tuple[float, float]:
    t = np.array(table, dtype=float) / 8192 * sigma_ms
    return float(t.mean()), float(t.std())


def test_uniform_jitter_has_the_uniform_moments(tmp_path):
    _, _, table = _run("delay 10ms 4ms", tmp_path)
    off = _rtt_offsets_ms(table)
    assert len(off) == 10_000
    # netem's default: uniform on [-4, 4) ms around the delay: mean 0, sd 8 / sqrt(12).
    assert abs(off.mean()) < 0.1 and abs(off.std() - 8 / math.sqrt(12)) < 0.05, (off.mean(), off.std())
    # (A probe can wait behind the one before at the bottleneck: 67 us at 10 Mbit/s.)
    assert -4.0 <= off.min() and off.max() < 4.0 + 0.07


@pytest.mark.parametrize("dist,table", [("normal", _normal_table), ("pareto", _pareto_table)])
def test_table_jitter_has_its_tables_moments(tmp_path, dist, table):
    _, _, probes = _run(f"delay 10ms 4ms distribution {dist}", tmp_path)
    off = _rtt_offsets_ms(probes)
    mean, sd = _table_moments_ms(table(), 4.0)
    # 10 000 draws: the mean within 4 standard errors, the sd within 4%.
    assert abs(off.mean() - mean) < 4 * sd / 100 and abs(off.std() - sd) < 0.04 * sd, (dist, off.mean(), mean, off.std(), sd)


def test_reorder_with_a_gap_sends_the_expected_share_at_once(tmp_path):
    _, summary, table = _run("delay 10ms reorder 25% gap 5", tmp_path)
    off = _rtt_offsets_ms(table)
    # A reordered probe skips the 10 ms: gap 5, P 25%: one in (5 - 1 + 1 / 0.25) = 8.
    share = (off < -5).mean()
    assert abs(share - 1 / 8) < 4 * math.sqrt(0.125 * 0.875 / len(off)), share
    imp = summary["impairments"][0]
    assert imp["port"] == "rt1->rt2" and imp["reordered"] > 0


def test_gilbert_elliott_has_its_mean_loss_and_burst_length(tmp_path):
    _, _, table = _run("delay 10ms loss gemodel 2% 25%", tmp_path)
    lost = (table.sort_values("seq")["rtt_ns"].to_numpy() < 0)
    # Loss only in the bad state (1-h = 100%): P(bad) = p / (p + r), bursts of mean 1 / r.
    rate = lost.mean()
    starts = np.flatnonzero(lost & ~np.concatenate([[False], lost[:-1]]))
    burst = lost.sum() / len(starts)
    assert abs(rate - 0.02 / 0.27) < 0.25 * 0.02 / 0.27, rate
    assert abs(burst - 4.0) < 1.0, burst


def test_duplication_and_corruption_have_their_rates(tmp_path):
    _, summary, table = _run("delay 10ms duplicate 10% corrupt 5%", tmp_path)
    imp = next(i for i in summary["impairments"] if i["port"] == "rt1->rt2")
    decided = imp["duplicated"] / 0.1  # about the packets netem saw
    assert 0.04 * 0.8 < imp["corrupted"] / decided < 0.06 * 1.2
    # A corrupted probe is discarded at the far end: lost.
    assert abs((table["rtt_ns"] < 0).mean() - 0.05) < 0.015


def test_the_simulator_makes_the_crates_decisions_for_the_seed(tmp_path):
    netem = "delay 10ms 2ms 25% distribution paretonormal reorder 10% 20% duplicate 2% corrupt 1% loss state 1% 30%"
    exp, summary, _ = _run(netem, tmp_path)
    port = exp.bottleneck_port
    cfg = json.loads(exp.links[port // 2].ab.impair)["netem"]
    want = _native.netem_decisions(json.dumps(cfg), impair_spec.seed(exp.seed, port), DELAY_NS, 256)
    got = next(i for i in summary["impairments"] if i["port"] == "rt1->rt2")["first_decisions"]
    assert got == want and len(set(want)) > 10


def _trace(tmp_path) -> tuple[str, int]:
    """A 100 ms trace: two opportunities every ms for 50 ms, then one every other ms (1250/s)."""
    lines = [str(ms) for ms in range(1, 101) for _ in range(2 if ms <= 50 else ms % 2 == 0)]
    path = tmp_path / "cell.down"
    path.write_text("\n".join(lines) + "\n")
    return str(path), len(lines) * 10


def test_a_trace_gives_its_opportunities_per_second(tmp_path):
    trace, per_s = _trace(tmp_path)
    spec = copy.deepcopy(BASE)
    spec["topology"]["bottleneck"] = {"rate": "100Mbit", "delay": "10ms", "buffer": "1000p", "trace": trace}
    spec["background"] = [{"from": "s2", "to": "r2", "rate": "30Mbit", "size": "1500B", "start": "0s", "stop": "10s"}]
    spec["probes"] = []
    exp = resolve(spec, "t.toml", duration="10s")
    (tmp_path / "run").mkdir()
    simb.run(exp, tmp_path / "run")
    ports = read_table(tmp_path / "run", "ports")
    bott = ports[ports["port"] == "rt1->rt2"]
    # A backlogged queue (30 Mbit/s offered, 15 Mbit/s of opportunities): every opportunity
    # carries one 1500-byte packet (and the flow's few packets share the first seconds).
    per_second = bott.groupby(bott["t_start_ns"] // 10**9)["tx_packets"].sum().to_numpy()
    assert all(abs(n - per_s) <= 1 for n in per_second[1:9]), (per_s, per_second)


def test_a_rate_step_moves_the_queue_and_cwnd(tmp_path):
    # 20 -> 5 -> 20 Mbit/s under one cubic flow, 80 ms RTT, a 50-packet buffer: the bottleneck
    # sends at each rate, the queue overflows at the step down, cwnd falls towards the new BDP +
    # buffer (50 KB + 75 KB from 200 KB + 75 KB) and grows again after the step up.
    spec = copy.deepcopy(BASE)
    spec["topology"]["bottleneck"] = {"rate": "20Mbit", "delay": "40ms", "buffer": "50p",
                                      "schedule": [{"at": "8s", "rate": "5Mbit"}, {"at": "16s", "rate": "20Mbit"}]}
    spec["senders"] = {"s1": {"to": "r1", "cc": "cubic", "time": "24s"}}
    spec["probes"] = []
    spec["trace"] = {"sample": "100ms"}
    exp = resolve(spec, "t.toml")
    simb.run(exp, tmp_path)
    flows, ports, queues = (read_table(tmp_path, t) for t in ("flows", "ports", "queues"))
    bott = ports[ports["port"] == "rt1->rt2"]
    sec = 10**9
    rate = lambda a, b: bott[(bott["t_start_ns"] >= a * sec) & (bott["t_end_ns"] <= b * sec)]["tx_bytes"].sum() * 8 / (b - a) / 1e6  # noqa: E731
    assert 18 < rate(3, 8) <= 20 and 4 < rate(10, 16) <= 5 and 17 < rate(19, 24) <= 20, (rate(3, 8), rate(10, 16), rate(19, 24))
    cwnd = lambda a, b: flows[(flows["t_ns"] >= a * sec) & (flows["t_ns"] < b * sec)]["cwnd_bytes"].mean()  # noqa: E731
    assert cwnd(12, 16) < 0.6 * cwnd(4, 8) and cwnd(20, 24) > 1.5 * cwnd(12, 16), (cwnd(4, 8), cwnd(12, 16), cwnd(20, 24))
    q = queues[queues["port"] == "rt1->rt2"]
    assert q[(q["t_ns"] >= 8 * sec) & (q["t_ns"] < 9 * sec)]["queue_packets"].max() >= 45


@pytest.mark.parametrize("key,value,message", [
    ("netem", "delay 10ms jump 5%", "'jump' is not a netem option this reads"),
    ("netem", "delay 10ms loss gemodel 200%", "is not a percentage from 0% to 100%"),
    ("netem", "reorder 5%", "reordering needs a delay"),
    ("netem", "delay 10ms distribution weibull", "distribution 'weibull' is not one of the choices"),
    ("schedule", [{"at": "1s"}], "changes nothing"),
    ("schedule", [{"at": "1s", "rate": "0bit"}], "rate"),
])
def test_bad_impairments_fail_in_one_line_naming_the_key(key, value, message):
    spec = copy.deepcopy(BASE)
    spec["topology"]["bottleneck"] = {"rate": "10Mbit", "buffer": "100p", key: value}
    with pytest.raises(SpecError) as e:
        resolve(spec, "bad.toml")
    text = str(e.value)
    assert text.startswith("bad.toml: topology.bottleneck.") and message in text and "\n" not in text, text


def test_a_malformed_trace_names_its_file_and_line(tmp_path):
    path = tmp_path / "bad.up"
    path.write_text("1\n2\nthree\n")
    spec = copy.deepcopy(BASE)
    spec["topology"]["bottleneck"] = {"rate": "10Mbit", "buffer": "100p", "reverse_trace": str(path)}
    with pytest.raises(SpecError) as e:
        resolve(spec, "bad.toml")
    assert str(e.value) == f"bad.toml: topology.bottleneck.reverse_trace: {path}: line 3: \"three\" is not a whole " \
                           "number of milliseconds"


def test_the_delay_given_twice_is_refused():
    spec = copy.deepcopy(BASE)
    spec["topology"]["bottleneck"]["delay"] = "5ms"
    with pytest.raises(SpecError, match="the delay is given twice"):
        resolve(spec, "bad.toml")


def test_t11_replays_its_traces_both_ways_and_t13_steps_its_rate(tmp_path):
    from tcplab.spec import load_spec
    from tcplab.spec.schema import presets_dir
    assert impair_spec.PRESETS == presets_dir()  # where a preset's traces are found
    data, src = load_spec("T11")
    data.pop("sweep")
    exp = resolve(data, src, duration="10s")
    b = exp.links[exp.bottleneck_port // 2]
    down, up = (json.loads(d.impair)["trace_ms"] for d in (b.ab, b.ba))
    # The project's traces: 30 s each, 14.6 and 5.6 Mbit/s of 1500-byte opportunities.
    assert down[-1] == up[-1] == 30_000 and abs(len(down) * 12_000 / 30 / 1e6 - 14.6) < 0.1
    assert abs(len(up) * 12_000 / 30 / 1e6 - 5.6) < 0.1
    (tmp_path / "t11").mkdir()
    summary = summarize(exp, simb.run(exp, tmp_path / "t11"), tmp_path / "t11")
    assert 8 < summary["flows"][0]["throughput_mbps"] < 20
    data, src = load_spec("T13")
    data.pop("sweep")
    exp = resolve(data, src)
    ab = json.loads(exp.links[exp.bottleneck_port // 2].ab.impair)
    assert ab["schedule"] == [{"at_ns": 20 * 10**9, "rate_bps": 20 * 10**6}, {"at_ns": 40 * 10**9, "rate_bps": 100 * 10**6}]
    (tmp_path / "t13").mkdir()
    simb.run(exp, tmp_path / "t13")
    ports = read_table(tmp_path / "t13", "ports")
    bott = ports[ports["port"] == "rt1->rt2"]
    mbps = bott.groupby(bott["t_start_ns"] // 10**9)["tx_bytes"].sum().to_numpy() * 8 / 1e6
    assert mbps[10:20].min() > 90 and mbps[22:40].max() <= 20.1 and mbps[45:55].min() > 90, mbps


def test_an_impaired_run_repeats_exactly_for_its_seed(tmp_path):
    netem = "delay 10ms 3ms distribution paretonormal reorder 5% duplicate 1% corrupt 1% loss gemodel 1% 30%"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _, sa, pa = _run(netem, tmp_path / "a")
    _, sb, pb = _run(netem, tmp_path / "b")
    assert sa == sb and pa.equals(pb)
    for t in ("flows", "intervals", "ports", "queues"):
        assert (tmp_path / "a" / f"{t}.parquet").read_bytes() == (tmp_path / "b" / f"{t}.parquet").read_bytes()

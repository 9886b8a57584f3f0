"""[[workload]]: CDF sampling against the CDF, Poisson arrivals, the offered load, incast,
request-response, the ideal FCT and slowdown by hand, bad CDFs and keys in one line; DCTCP against
cubic at 50 % load."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from conftest import tcplab
from tcplab.analysis.fct import ideal_fct_ns, percentile, slowdown_table
from tcplab.spec import SpecError, resolve
from tcplab.spec.workload import PRESETS, read_cdf

CDFS = PRESETS / "cdfs"


def spec(*workloads: dict, pairs: int = 4, rate: str = "1Gbit", delay: str = "50us", **top) -> dict:
    """A dumbbell of `pairs` pairs (10 Gbit/s x 10 us access) and the given workloads."""
    return {"name": "wl", "seed": 1, "topology": {
        "kind": "dumbbell", "pairs": pairs, "access": {"rate": "10Gbit", "delay": "10us"},
        "bottleneck": {"rate": rate, "delay": delay, "buffer": "200p"}}, "workload": list(workloads), **top}


def points(path: Path) -> list[tuple[float, float]]:
    """The file's points, read here without the module's reader."""
    out = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            x, p = line.split()
            out.append((float(x), float(p)))
    return out


def cdf_at(pts: list[tuple[float, float]], x: float) -> float:
    """The piecewise-linear CDF at x (right-continuous at a step)."""
    if x < pts[0][0]:
        return 0.0
    best = 0.0
    for (x0, p0), (x1, p1) in zip(pts, pts[1:]):
        if x0 <= x < x1:
            return p0 + (p1 - p0) * (x - x0) / (x1 - x0)
        if x >= x1:
            best = p1
    return best


@pytest.mark.parametrize("name", ["web-search", "data-mining"])
def test_sampled_sizes_follow_the_cdf_by_kolmogorov_smirnov(name: str):
    pts = points(CDFS / f"{name}.cdf")
    cdf = read_cdf(CDFS / f"{name}.cdf", ValueError)
    rng = random.Random(7)
    xs = sorted(cdf.quantile(rng.random()) for _ in range(20_000))
    n = len(xs)
    d = max(max(abs((i + 1) / n - cdf_at(pts, x)), abs(i / n - cdf_at(pts, x))) for i, x in enumerate(xs)
            if not (i + 1 < n and xs[i + 1] == x))  # at a point mass the empirical CDF jumps once
    assert d < 1.36 / math.sqrt(n), d  # the 5 % critical value of the KS statistic


def test_means_are_pfabrics():
    # pFabric's scripts: meanFlowSize = 5117 * 1460 (data mining); 1138 * 1460 (web search), which
    # linear interpolation of the same table gives as 1141 packets (sum of midpoint x mass by hand).
    dm = read_cdf(CDFS / "data-mining.cdf", ValueError).mean_bytes
    ws = read_cdf(CDFS / "web-search.cdf", ValueError).mean_bytes
    assert round(dm / 1460) == 5117
    mids = [(6 + 6) / 2 * .15, (6 + 13) / 2 * .05, (13 + 19) / 2 * .1, (19 + 33) / 2 * .1, (33 + 53) / 2 * .13,
            (53 + 133) / 2 * .07, (133 + 667) / 2 * .1, (667 + 1333) / 2 * .1, (1333 + 3333) / 2 * .1,
            (3333 + 6667) / 2 * .07, (6667 + 20000) / 2 * .03]
    assert ws == pytest.approx(sum(mids) * 1460)


def test_poisson_arrivals_have_the_rate_and_exponential_gaps():
    lam, stop_s = 2000.0, 2.0
    exp = resolve(spec({"kind": "poisson", "bytes": "1KB", "arrival_rate": lam, "senders": "s*", "receivers": "r*",
                        "stop": f"{stop_s}s"}), "t.toml")
    starts = [f.start_ns / 1e9 for f in exp.flows]
    n = len(starts)
    assert abs(n - lam * stop_s) < 4 * math.sqrt(lam * stop_s)
    gaps = sorted(b - a for a, b in zip([0.0] + starts, starts))
    assert sum(gaps) / n == pytest.approx(1 / lam, rel=0.05)
    d = max(abs((i + 1) / n - (1 - math.exp(-lam * g))) for i, g in enumerate(gaps))
    assert d < 1.36 / math.sqrt(n), d
    assert {f.host for f in exp.flows} == {"s1", "s2", "s3", "s4"} and all(f.to.startswith("r") for f in exp.flows)
    assert all(f.app.bytes == 1000 for f in exp.flows)


def test_load_sets_the_arrival_rate_and_the_drawn_bytes_offer_it():
    # Fixed sizes: lambda = 0.5 x 1 Gbit/s / (8 x 100 000 B) = 625 flows/s exactly.
    exp = resolve(spec({"kind": "poisson", "bytes": "100KB", "load": 0.5, "senders": "s*", "receivers": "r*",
                        "stop": "1s"}), "t.toml")
    assert exp.workloads[0].arrivals_per_s == pytest.approx(625.0)
    # Drawn sizes: the bytes offered over the span, over the link's capacity, near 50 %.
    exp = resolve(spec({"kind": "poisson", "sizes": "web-search", "load": 0.5, "senders": "s*", "receivers": "r*",
                        "stop": "40s"}), "t.toml")
    offered = sum(f.app.bytes for f in exp.flows) * 8 / (1e9 * 40)
    assert offered == pytest.approx(0.5, rel=0.15), offered


def test_the_resolved_spec_makes_the_same_flows_again(tmp_path: Path):
    (tmp_path / "my.cdf").write_text("1000 0\n5000 0.5\n90000 1\n")
    s = spec({"kind": "poisson", "sizes": "my.cdf", "load": 0.4, "senders": "s*", "receivers": ["r1", "r2"], "stop": "1s"},
             {"kind": "request-response", "bytes": "30KB", "arrival_rate": 50.0, "senders": "r*", "receivers": "s*",
              "stop": "1s", "think": "1ms"},
             {"kind": "incast", "sizes": "data-mining", "senders": ["s1", "s2"], "receivers": ["r3"], "requests": 2})
    (tmp_path / "w.toml").write_text(toml(s))
    exp = resolve(s, str(tmp_path / "w.toml"))
    again = resolve(exp.spec, "elsewhere/spec.toml")  # the run's spec.toml, read from another folder
    assert again.flows == exp.flows and again.workloads == exp.workloads


def test_same_seed_same_flows_another_seed_others():
    w = {"kind": "poisson", "sizes": "data-mining", "load": 0.3, "senders": "s*", "receivers": "r*", "stop": "1s"}
    key = lambda e: [(f.name, f.host, f.to, f.start_ns, f.app.bytes) for f in e.flows]  # noqa: E731
    assert key(resolve(spec(w), "t.toml")) == key(resolve(spec(w), "t.toml"))
    assert key(resolve(spec(w), "t.toml")) != key(resolve(spec(w), "t.toml", seed=2))
    assert key(resolve(spec(w), "t.toml")) != key(resolve(spec(w | {"seed": 9}), "t.toml"))


def test_ideal_fct_and_slowdown_by_hand(tmp_path: Path):
    """One 1000-byte flow alone: wire 1000 + 52 = 1052 B; rtt 2 x (10 + 100 + 10) us = 240 us,
    twice with the handshake; 1052 B through the two 10 Gbit/s access hops (0.8416 us each) and the
    100 Mbit/s bottleneck (84.16 us): 480 + 1.6832 + 84.16 us = 565 843.2 ns, rounded up."""
    s = spec({"kind": "poisson", "bytes": "1000B", "arrival_rate": 1.0, "flows": 1, "senders": ["s1"],
              "receivers": ["r1"]}, pairs=1, rate="100Mbit", delay="100us")
    exp = resolve(s, "t.toml")
    assert ideal_fct_ns(exp, exp.flows[0]) == 565_844
    path = tmp_path / "one.toml"
    path.write_text(toml(s))
    tcplab("run", str(path), "--out", str(tmp_path / "one"), "--no-report", cwd=tmp_path, check=True)
    summ = json.loads((tmp_path / "one" / "summary.json").read_text())
    f = summ["flows"][0]
    assert f["slowdown"] == pytest.approx(f["fct_s"] / 565_844e-9, rel=2e-3)  # fct_s is in whole microseconds
    # Alone, one segment: the ideal but for the SYN, SYN-ACK and ACK's own 16 us at 100 Mbit/s and
    # the access links' jitter.
    assert 1.0 <= f["slowdown"] < 1.05
    assert summ["workloads"][0]["fct_slowdown"][0] | {} == {"bucket": "<100KB", "flows": 1, "completed": 1,
                                                            "p50": round(f["slowdown"], 4), "p99": round(f["slowdown"], 4)}


def test_percentiles_by_nearest_rank_and_buckets():
    xs = [float(i) for i in range(1, 101)]
    assert percentile(xs, 0.5) == 50.0 and percentile(xs, 0.99) == 99.0 and percentile([3.0], 0.99) == 3.0
    rows = slowdown_table([50_000, 150_000, 20_000_000, 99_999], [2.0, 3.0, None, 4.0])
    assert rows[0] == {"bucket": "<100KB", "flows": 2, "completed": 2, "p50": 2.0, "p99": 4.0}
    assert rows[2] == {"bucket": ">10MB", "flows": 1, "completed": 0, "p50": None, "p99": None}
    assert rows[3]["flows"] == 4 and rows[3]["completed"] == 3


def test_incast_completes_each_request_after_its_last_response(tmp_path: Path):
    s = {"name": "incast", "seed": 1, "topology": {"kind": "switch", "senders": 8, "shared_buffer": "300KB",
                                                   "access": {"rate": "10Gbit", "delay": "5us"},
                                                   "bottleneck": {"rate": "1Gbit", "delay": "5us"}},
         "workload": [{"kind": "incast", "bytes": "64KB", "senders": "s*", "receivers": ["r1"], "requests": 3,
                       "interval": "20ms", "start": "1ms"}]}
    path = tmp_path / "incast.toml"
    path.write_text(toml(s))
    proc = tcplab("run", str(path), "--out", str(tmp_path / "i"), "--no-intervals", cwd=tmp_path, check=True)
    assert "requests: from the request's start" in proc.stdout and "w1 (incast)" in proc.stdout
    page = (tmp_path / "i" / "report.html").read_text()
    assert 'id="slowdown-table"' in page and 'id="requests-table"' in page
    summ = json.loads((tmp_path / "i" / "summary.json").read_text())
    inc = summ["workloads"][0]["requests"]
    assert inc["requests"] == 3 and inc["flows_each"] == 8 and inc["completed"] == 3
    by_req = [[f for f in summ["flows"][8 * k:8 * k + 8]] for k in range(3)]
    done_ms = sorted(max(f["start_s"] + f["fct_s"] for f in fs) * 1e3 - (1 + 20 * k) for k, fs in enumerate(by_req))
    assert inc["completion_ms"]["max"] == pytest.approx(done_ms[-1], abs=2e-3)
    # 8 x 64 KB through the 1 Gbit/s port to r1 take at least 4.1 ms at line rate.
    assert done_ms[0] >= 8 * 64_000 * 8 / 1e9 * 1e3


def test_a_response_starts_once_its_request_is_in(tmp_path: Path):
    """request-response: clients r1..r4 ask servers s1..s4 (the responses cross the bottleneck);
    each response starts `think` after its request's last byte reached the server (the
    simulator's after_flow), and the pair completes when the response's last byte is acknowledged."""
    s = spec({"kind": "request-response", "sizes": "web-search", "arrival_rate": 200.0, "senders": "r*",
              "receivers": "s*", "stop": "50ms", "request": "2KB", "think": "50us"})
    exp = resolve(s, "t.toml")
    reqs, resps = exp.flows[0::2], exp.flows[1::2]
    assert all(q.name.endswith("-req") and q.app.bytes == 2000 and q.host.startswith("r") for q in reqs)
    assert all(r.after == 2 * k and r.start_ns == 50_000 and (r.host, r.to) == (q.to, q.host)
               for k, (q, r) in enumerate(zip(reqs, resps)))
    path = tmp_path / "rr.toml"
    path.write_text(toml(s))
    tcplab("run", str(path), "--out", str(tmp_path / "rr"), "--no-report", "--no-intervals", cwd=tmp_path, check=True)
    summ = json.loads((tmp_path / "rr" / "summary.json").read_text())
    rows = summ["flows"]
    one_way_s = (10 + 50 + 10) * 1e-6
    for q, r in zip(rows[0::2], rows[1::2]):
        # The request's handshake (a round trip) and its first byte's way to the server at least.
        assert r["start_s"] >= q["start_s"] + 3 * one_way_s + 50e-6, (q, r)
        assert r["start_s"] <= q["start_s"] + q["fct_s"] + 50e-6 + 1e-6, (q, r)
    ends = sorted((r["start_s"] + r["fct_s"] - q["start_s"]) * 1e3 for q, r in zip(rows[0::2], rows[1::2]))
    req = summ["workloads"][0]["requests"]
    assert req["requests"] == len(reqs) == req["completed"] and req["flows_each"] == 2
    assert req["completion_ms"]["max"] == pytest.approx(ends[-1], abs=2e-3)


def test_kernel_backends_refuse_a_response_that_waits(tmp_path: Path):
    from tcplab.backends.netns.plan import PlanError, _refuse
    s = spec({"kind": "request-response", "bytes": "10KB", "arrival_rate": 100.0, "senders": "r*",
              "receivers": "s*", "flows": 1})
    with pytest.raises(PlanError, match="flow 'w1-1' is a response that waits for its request"):
        _refuse(resolve(s, "t.toml"))


def test_set_and_sweep_keys_reach_a_workload_by_index():
    from tcplab.spec.schema import apply_set
    s = spec({"kind": "poisson", "bytes": "10KB", "arrival_rate": 100.0, "senders": "s*", "receivers": "r*", "flows": 3})
    apply_set(s, "workload.0.cc=newreno", "t.toml")
    assert {f.cc for f in resolve(s, "t.toml").flows} == {"newreno"}
    apply_set(s, "workload.*.initcwnd=4", "t.toml")
    assert {f.iw_segments for f in resolve(s, "t.toml").flows} == {4}
    with pytest.raises(SpecError, match="workload.1: an array of 1 tables takes an index from 0 to 0"):
        apply_set(s, "workload.1.cc=cubic", "t.toml")


def test_a_large_workload_is_summarised_not_listed():
    from tcplab.report.text import LIST_MAX_FLOWS, listed_flows, unlisted_note
    rows = [{"flow": f"s{i}"} for i in range(3)] + [{"flow": f"w1-{i}", "workload": "w1"} for i in range(LIST_MAX_FLOWS)]
    summ = {"flows": rows, "workloads": [{}]}
    assert [f["flow"] for f in listed_flows(summ)] == ["s0", "s1", "s2"]
    assert unlisted_note(summ).startswith(f"{LIST_MAX_FLOWS} workload flows not listed")
    small = {"flows": rows[:LIST_MAX_FLOWS], "workloads": [{}]}
    assert listed_flows(small) == rows[:LIST_MAX_FLOWS] and unlisted_note(small) is None


CDF_CASES = {
    "decreasing": ("1000 0\n500 0.5\n2000 1\n", "line 2: sizes must not decrease"),
    "probability falls": ("1000 0\n2000 0.6\n3000 0.4\n4000 1\n", "line 3: probabilities must not decrease"),
    "not ending at 1": ("1000 0\n2000 0.9\n", "the last probability must be 1"),
    "bad line": ("# sizes\n1000 0\n2000 half\n", "line 3: '2000 half' is not two numbers"),
    "three columns": ("1000 1 0\n", "line 1: expected 'SIZE_BYTES PROBABILITY'"),
}


@pytest.mark.parametrize("case", sorted(CDF_CASES))
def test_bad_cdf_names_the_file_and_line(tmp_path: Path, case: str):
    text, expected = CDF_CASES[case]
    (tmp_path / "bad.cdf").write_text(text)
    s = spec({"kind": "poisson", "sizes": "bad.cdf", "load": 0.5, "senders": "s*", "receivers": "r*", "stop": "1s"})
    (tmp_path / "w.toml").write_text(toml(s))
    with pytest.raises(SpecError) as e:
        resolve(s, str(tmp_path / "w.toml"))
    assert str(e.value).startswith(f"{tmp_path / 'w.toml'}: workload[0].sizes: {tmp_path / 'bad.cdf'}"), str(e.value)
    assert expected in str(e.value)


def test_bad_workload_fails_in_one_line_exit_2(tmp_path: Path):
    cases = [({"kind": "burst"}, "workload[0].kind: 'burst' is not one of the choices (allowed: poisson, incast, "
                                 "request-response)"),
             ({"loda": 0.5}, "workload[0].loda: unknown key (allowed: kind,"),
             ({"load": 1.5}, "workload[0].load: must be a share of the link's rate in (0, 1], got 1.5"),
             ({"receivers": ["r9"]}, "workload[0].receivers: 'r9' is not a host of this topology"),
             ({"link": "rt9->rt2"}, "workload[0].link: 'rt9->rt2' is not a link direction of this topology"),
             ({"sizes": "web"}, "workload[0].sizes: cannot read"),
             ({"cc": "vegass"}, "workload[0].cc: 'vegass' is not one of the choices")]
    base = {"kind": "poisson", "sizes": "web-search", "load": 0.5, "senders": "s*", "receivers": "r*", "stop": "1s"}
    for change, expected in cases:
        path = tmp_path / "bad.toml"
        path.write_text(toml(spec(base | change)))
        proc = tcplab("run", str(path), "--out", str(tmp_path / "out"), cwd=tmp_path)
        lines = [x for x in proc.stderr.splitlines() if x.strip()]
        assert proc.returncode == 2 and len(lines) == 1, proc.stderr
        assert lines[0].startswith(f"error: {path}: {expected}"), lines[0]
        assert not (tmp_path / "out").exists()


def test_dctcp_against_cubic_at_half_load_gives_slowdown_tables(tmp_path: Path):
    """Web-search flows at 50 % of a 10 Gbit/s x 0.2 ms dumbbell, DCTCP with step marking at 65
    packets against cubic with drop-tail (T9's path): both runs produce the table; the numbers are
    reported (docs/stats.md), not asserted."""
    tables = {}
    for cc, aqm in (("dctcp", {"kind": "step", "threshold": "65p"}), ("cubic", None)):
        s = spec({"kind": "poisson", "sizes": "web-search", "load": 0.5, "senders": "s*", "receivers": "r*",
                  "stop": "150ms", "cc": cc}, pairs=8, rate="10Gbit", delay="70us")
        s["topology"]["access"]["rate"] = "40Gbit"
        s["topology"]["bottleneck"]["buffer"] = "1000p"
        if aqm:
            s["topology"]["bottleneck"]["aqm"] = aqm
        path = tmp_path / f"{cc}.toml"
        path.write_text(toml(s))
        tcplab("run", str(path), "--out", str(tmp_path / cc), "--no-report", "--no-intervals", cwd=tmp_path, check=True)
        tables[cc] = json.loads((tmp_path / cc / "summary.json").read_text())["workloads"][0]["fct_slowdown"]
    for cc, rows in tables.items():
        print(cc, [(r["bucket"], r["flows"], r["p50"], r["p99"]) for r in rows])
        assert [r["bucket"] for r in rows] == ["<100KB", "100KB-10MB", ">10MB", "all"]
        assert rows[-1]["completed"] == rows[-1]["flows"] > 20


def toml(d: dict) -> str:
    """A spec dict as TOML (tables, arrays of tables, inline tables one level down)."""
    def value(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"
        return repr(v)

    out: list[str] = []

    def table(prefix: str, t: dict, header: str | None):
        if header:
            out.append(header)
        subs = []
        for k, v in t.items():
            if isinstance(v, dict) and not (prefix and k in ("aqm",)):
                subs.append((k, v))
            elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
                subs.append((k, v))
            else:
                out.append(f'"{k}" = {value(v)}')
        for k, v in subs:
            name = f"{prefix}.{k}" if prefix else k
            if isinstance(v, list):
                for x in v:
                    table(name, x, f"[[{name}]]")
            else:
                table(name, v, f"[{name}]")

    table("", d, None)
    return "\n".join(out) + "\n"

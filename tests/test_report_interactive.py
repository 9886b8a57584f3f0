"""The interactive report in headless Chromium (Debian's chromium driven by Playwright): linked
zoom, hover read-outs, flow toggles, recovery episodes, T4's time-sequence graph, a compare page
of three runs; `tcplab plot` for a window. Screenshots go to the test's output folder
(TCPLAB_SHOTS, default a pytest temporary folder), not to git."""

from __future__ import annotations

import hashlib
import os
import tomllib
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import tcplab
from conftest import open_page
from tcplab.cli import app
from tcplab.report import interactive
from tcplab.report import series as S

CHART_PANELS = ["throughput", "cwnd", "flight", "srtt", "queue"]
#: dygraphs-0.0.14-py3-none-any.whl's dygraphs/assets/dygraph-combined.js: dygraphs 1.1.1, MIT.
DYGRAPHS_SHA256 = "f70b8be65997bb88bc75ac0b2a5d576a7163d5bc7f366c07bdf770ed30b7658d"


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    d = Path(os.environ.get("TCPLAB_SHOTS") or tmp_path_factory.mktemp("shots"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def x_range(page, chart: str) -> list[float]:
    return page.evaluate(f"tcplab.chart('{chart}').g.xAxisRange()")


@pytest.fixture(scope="module")
def t1(tmp_path_factory) -> Path:
    return tcplab.run("T1", duration="8s", out=tmp_path_factory.mktemp("t1") / "run").path


@pytest.fixture(scope="module")
def t4(tmp_path_factory) -> Path:
    # The three senders start at 0, 25 and 50 s; 2 s each hold every flow's first recovery.
    return tcplab.run("T4", duration="2s", out=tmp_path_factory.mktemp("t4") / "run").path


def test_the_page_inlines_dygraphs_1_1_1_from_the_pinned_pypi_package(t1):
    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    pins = pyproject["project"]["dependencies"]
    assert "dygraphs==0.0.14" in pins and metadata.version("dygraphs") == "0.0.14"
    js = interactive.dygraphs_js()
    assert js is not None and js.is_relative_to(Path(metadata.distribution("dygraphs").locate_file(""))), js
    text = js.read_bytes()
    assert hashlib.sha256(text).hexdigest() == DYGRAPHS_SHA256
    assert b'VERSION="1.1.1"' in text and b"MIT-licensed" in text.splitlines()[0]
    page = (t1 / "report.html").read_text()
    assert f"<script>{text.decode()}</script>" in page and "/usr/share" not in page


def test_without_the_dygraphs_package_the_charts_section_names_it(monkeypatch):
    monkeypatch.setattr(interactive, "DYGRAPHS_DIST", "tcplab-test-no-such-distribution")
    assert interactive.dygraphs_js() is None
    text = interactive.section(model=None)  # the model is not read when the library is missing
    assert "Interactive charts need the <code>tcplab-test-no-such-distribution</code> package" in text


def test_t1_report_panels_zoom_together_hover_toggle_and_episodes(browser, t1, shots):
    page = open_page(browser, t1 / "report.html")
    for p in CHART_PANELS:
        assert page.locator(f"#chart-{p} canvas").count() >= 1, p
    page.screenshot(path=str(shots / "t1-report.png"), full_page=True)
    full = x_range(page, "cwnd")
    # Zoom by dragging across the middle of the cwnd chart, as a user does.
    page.locator("#panel-cwnd").scroll_into_view_if_needed()
    box = page.locator("#chart-cwnd canvas").first.bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.4, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.5, y, steps=8)
    page.mouse.up()
    page.wait_for_function("tcplab.range() !== null")
    zoomed = x_range(page, "cwnd")
    assert zoomed[1] - zoomed[0] < 0.3 * (full[1] - full[0])
    for p in ("throughput", "flight", "srtt", "queue"):
        assert x_range(page, p) == pytest.approx(zoomed), p
    # Hover: the legend reads the values under the mouse, with units.
    page.mouse.move(box["x"] + box["width"] * 0.5, y)
    legend = page.locator("#legend-cwnd").inner_text()
    assert "kB" in legend and any(ch.isdigit() for ch in legend.split("kB")[0]), legend
    page.screenshot(path=str(shots / "t1-zoomed.png"), full_page=True)
    # Toggle s1: its series disappear from every panel, s2's stay.
    page.locator("#toggle-s1").uncheck()
    assert page.evaluate("tcplab.visible('cwnd', 's1 cwnd')") is False
    assert page.evaluate("tcplab.visible('srtt', 's1 srtt')") is False
    assert page.evaluate("tcplab.visible('cwnd', 's2 cwnd')") is True
    page.locator("#toggle-s1").check()
    assert page.evaluate("tcplab.visible('cwnd', 's1 cwnd')") is True
    # Click a recovery episode's shading on the chart: every panel zooms to it.
    page.locator("#reset-zoom").click()
    page.wait_for_function("tcplab.range() === null")
    page.locator("#panel-cwnd").scroll_into_view_if_needed()
    box = page.locator("#chart-cwnd canvas").first.bounding_box()
    ep = page.evaluate("tcplab.model.episodes.find(e => e.end > e.start)")
    assert ep is not None, "T1 has loss recoveries in 8 s"
    x_px = page.evaluate(f"tcplab.chart('cwnd').g.toDomXCoord({(ep['start'] + ep['end']) / 2})")
    page.mouse.click(box["x"] + x_px, box["y"] + box["height"] * 0.3)
    page.wait_for_function("tcplab.range() !== null")
    lo, hi = page.evaluate("tcplab.range()")
    x = (ep["start"] + ep["end"]) / 2
    # The zoom frames the episode under the click (the shortest one there when flows overlap).
    under = [e for e in page.evaluate("tcplab.model.episodes") if e["start"] <= x <= e["end"]]
    assert any(lo <= e["start"] and hi >= e["end"] and hi - lo <= 1.6 * (e["end"] - e["start"]) + 0.011 for e in under), (lo, hi, under)
    assert hi - lo < 0.1 * (full[1] - full[0])
    assert x_range(page, "throughput") == pytest.approx([lo, hi])
    # T1 records no sends: its time-sequence graphs say which option gives them.
    assert "trace.sends = true" in page.locator("#tseq-s1").inner_text()
    assert page.errors == []


def test_t4_time_sequence_graph_shows_tso_and_retransmissions_in_freebsds_first_recovery(browser, t4, shots):
    page = open_page(browser, t4 / "report.html")
    idx = page.evaluate("tcplab.model.episodes.findIndex(e => e.flow === 's1')")
    page.locator(f'#episodes button[data-ep="{idx}"]').click()
    page.wait_for_function("tcplab.range() !== null")
    page.wait_for_timeout(200)
    lo, hi = page.evaluate("tcplab.range()")
    marks = page.evaluate("tcplab.marks('s1')")
    assert marks["TSO burst"] > 0 and marks["retransmission"] > 0, marks
    # Every send of the window is drawn: the count matches the sends table's (an independent read).
    sends = pd.read_parquet(t4 / "sends.parquet")
    sends = sends[(sends["flow"] == "s1") & (sends["seq"] >= 0)]
    t_s = (sends["t_ns"] // 1000) / 1e6
    assert sum(marks.values()) == int(((t_s >= lo) & (t_s <= hi)).sum())
    assert page.locator("#tseq-s1 canvas").count() >= 1
    page.locator("#tseq-s1").scroll_into_view_if_needed()
    canvas = page.locator("#tseq-s1 canvas").first.bounding_box()
    page.mouse.move(canvas["x"] + canvas["width"] * 0.5, canvas["y"] + canvas["height"] * 0.5)
    assert "MSS" in page.locator("#tseq-readout-s1").inner_text()
    page.locator("#tseq-s1").screenshot(path=str(shots / "t4-tseq-s1-first-recovery.png"))
    page.screenshot(path=str(shots / "t4-report.png"), full_page=True)
    assert page.errors == []


def test_compare_page_of_three_runs_renders(browser, t1, tmp_path, shots):
    b = tcplab.run("T1", duration="8s", set=["senders.*.cc=newreno"], out=tmp_path / "b").path
    c = tcplab.run("T1", duration="8s", seed=7, out=tmp_path / "c").path
    res = CliRunner().invoke(app, ["compare", str(t1), str(b), str(c), "--out", str(tmp_path / "cmp")])
    assert res.exit_code == 0, res.output
    page = open_page(browser, tmp_path / "cmp" / "compare.html")
    assert page.locator("#compare-table tbody tr").count() == 6
    names = page.evaluate("tcplab.chart('cwnd').series.map(s => s.name)")
    for label in ("A (sim) s1 cwnd", "B (sim) s1 cwnd", "C (sim) s2 cwnd"):
        assert label in names
    page.locator("#toggle-B__sim__s1").uncheck()
    assert page.evaluate("tcplab.visible('cwnd', 'B (sim) s1 cwnd')") is False
    page.locator("#run-2").uncheck()  # all of C's flows
    assert page.evaluate("[tcplab.visible('cwnd', 'C (sim) s1 cwnd'), tcplab.visible('cwnd', 'C (sim) s2 cwnd'),"
                         " tcplab.visible('cwnd', 'A (sim) s1 cwnd')]") == [False, False, True]
    page.screenshot(path=str(shots / "compare-3.png"), full_page=True)
    assert page.errors == []


def test_plot_draws_one_panel_for_a_window_and_names_allowed_values(t4, tmp_path):
    # The window opens just before s1's first retransmission (where it falls depends on the preset's
    # hosts: with T4's LRO receivers it is near 0.74 s) and spans 0.3 s.
    sends = pd.read_parquet(t4 / "sends.parquet")
    first_retx_s = sends[(sends["flow"] == "s1") & (sends["retx"] > 0)]["t_ns"].min() / 1e9
    out = tmp_path / "f.svg"
    res = CliRunner().invoke(app, ["plot", str(t4), "--what", "tseq", "--flow", "s1", "--from", f"{first_retx_s - 0.02:.3f}",
                                   "--to", f"{first_retx_s + 0.28:.3f}", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_text().lstrip().startswith("<?xml") and "retransmission" in out.read_text()
    bad = CliRunner().invoke(app, ["plot", str(t4), "--what", "tsq"])
    assert bad.exit_code == 2 and "allowed: throughput, cwnd, flight, srtt, probes, queue, tseq" in bad.output
    bad = CliRunner().invoke(app, ["plot", str(t4), "--flow", "s9"])
    assert bad.exit_code == 2 and "its flows: s1, s2, s3" in bad.output


def _m4_brute(t, y, buckets, lo, hi):
    width = (hi - lo) // buckets + 1
    keep = set()
    for b in np.unique((t - lo) // width):
        idx = np.flatnonzero((t - lo) // width == b)
        keep |= {idx[0], idx[-1], idx[np.argmin(y[idx])], idx[np.argmax(y[idx])]}
    return sorted(keep)


def test_m4_keeps_each_buckets_first_min_max_and_last_sample():
    rng = np.random.default_rng(5)
    t = np.sort(rng.integers(0, 10**9, 20_000))
    y = rng.integers(0, 50, len(t)).astype(float)  # ties: the first of equal minima is kept
    got = S.m4_indices(t, y, 300)
    assert got.tolist() == _m4_brute(t, y, 300, int(t[0]), int(t[-1]))
    assert len(got) <= 4 * 300


def test_detail_keeps_every_sample_of_the_first_focus_window_within_the_budget():
    t = np.arange(0, 10**9, 1000, dtype=np.int64)  # 1 M samples, 1 us apart
    y = np.sin(t / 1e7)
    idx, res = S.detail_indices(t, y, 100_000, S.Focus([(200_000_000, 230_000_000), (900_000_000, 990_000_000)]))
    assert len(idx) <= 100_000
    inside = idx[(t[idx] >= 200_000_000) & (t[idx] < 230_000_000)]
    assert len(inside) == 30_000  # every sample of the first window
    assert "1 focus window" in res  # the second (90 000 samples) does not fit half the budget


def test_a_page_of_many_series_shares_its_budgets_and_a_few_keep_full_overviews():
    # A few flows (~26 series): each series keeps its 1000-bucket overview and 600 000 / 26 detail samples.
    assert S.page_share(26) == S.Share(1000, 600_000 // 26)
    assert S.page_share(200).overview_buckets == 1000
    # A thousand flows (~6000 series): the page's 200 000 buckets split, detail at its floor.
    many = S.page_share(6002)
    assert many == S.Share(200_000 // 6002, 100)
    # Floors hold however many series share the page; static charts get every sample.
    assert S.page_share(10**6) == S.Share(S.MIN_OVERVIEW_BUCKETS, S.MIN_DETAIL_POINTS)
    assert S.page_share(10**6, full=True) == S.Share(1000, 1 << 62)
    # A 10 s flow sampled every ms, as one of those thousand flows: its overview has at most four
    # samples per bucket and its detail at most its share.
    t = np.arange(0, 10**10, 10**6, dtype=np.int64)
    y = np.sin(t / 3e8) * 1e3
    blobs = S.Blobs()
    s = S.series(t, y, 0, 3, many, S.Focus([(0, 10**9)]), blobs)
    assert len(s["ov"].value()["t"]) <= 4 * many.overview_buckets
    assert len(blobs[s["detail"]]["t"]) <= many.detail_points


def test_peers_and_sweep_pages_overlay_their_runs_on_the_same_charts(browser, tmp_path, shots):
    peers = tcplab.peers("T1", duration="1s", out=tmp_path / "peers")
    page = open_page(browser, peers.path / "peers.html")
    names = page.evaluate("tcplab.chart('cwnd').series.map(s => s.name)")
    for st, cc in [("freebsd@15.0-2025", "newreno"), ("freebsd-rack@15.0-2025", "cubic"), ("linux", "cubic")]:
        assert f"{st}/{cc} s1 cwnd" in names, names
    assert page.locator("#peers-table tbody tr").count() == 6
    page.screenshot(path=str(shots / "peers.png"), full_page=True)
    assert page.errors == []
    spec = {"name": "sw", "seed": 5, "topology": {"kind": "pipe", "bottleneck": {"rate": "10Mbit", "delay": "5ms", "buffer": "20p"}},
            "senders": {"s1": {"to": "r1", "time": "1s"}}, "sweep": {"senders.s1.cc": ["newreno", "cubic"]}}
    tcplab.sweep(spec, jobs=1, out=tmp_path / "sweep")
    page = open_page(browser, tmp_path / "sweep" / "sweep.html")
    names = page.evaluate("tcplab.chart('cwnd').series.map(s => s.name)")
    assert "cc=newreno s1 cwnd" in names and "cc=cubic s1 cwnd" in names, names
    page.screenshot(path=str(shots / "sweep.png"), full_page=True)
    assert page.errors == []


def test_step_series_lose_only_repeated_values():
    y = np.array([1, 1, 1, 2, 2, 3, 3, 3], dtype=float)
    assert S.changes(y).tolist() == [True, False, False, True, False, True, False, True]


def _pcap(packets: list[tuple[float, bytes]]) -> bytes:
    """A libpcap file of raw IPv4 packets (link type 101), microsecond timestamps."""
    import struct

    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 101)
    for t, pkt in packets:
        out += struct.pack("<IIII", int(t), int(round((t % 1) * 1e6)), len(pkt), len(pkt)) + pkt
    return out


def _tcp(src: int, dst: int, sport: int, dport: int, seq: int, ack: int, flags: int, window: int, opts: bytes = b"",
         payload: int = 0) -> bytes:
    import struct

    opts += b"\x01" * (-len(opts) % 4)
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, (5 + len(opts) // 4) << 4, flags, window, 0, 0) + opts
    total = 20 + len(tcp) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 0, 0, 64, 6, 0, src.to_bytes(4, "big"), dst.to_bytes(4, "big"))
    return ip + tcp + b"\0" * payload


def test_a_capture_gives_the_acks_window_scaled_as_negotiated_and_sack_blocks_relative(tmp_path):
    import struct

    a, b = 0x0A000001, 0x0A000002
    isn_a, isn_b = 1000, 5000
    ws7 = b"\x03\x03\x07"
    pkts = [
        (1.0, _tcp(a, b, 40000, 5201, isn_a, 0, 0x02, 65535, b"\x02\x04\x05\xb4" + ws7)),           # SYN, wscale 7
        (1.01, _tcp(b, a, 5201, 40000, isn_b, isn_a + 1, 0x12, 65535, b"\x02\x04\x05\xb4" + ws7)),  # SYN-ACK, wscale 7
        (1.02, _tcp(a, b, 40000, 5201, isn_a + 1, isn_b + 1, 0x10, 512)),
        (1.03, _tcp(a, b, 40000, 5201, isn_a + 1, isn_b + 1, 0x18, 512, payload=1000)),
        (1.04, _tcp(a, b, 40000, 5201, isn_a + 1001, isn_b + 1, 0x18, 512, payload=1000)),
        (1.05, _tcp(a, b, 40000, 5201, isn_a + 2001, isn_b + 1, 0x18, 512, payload=1000)),
        # The receiver ACKs the first 1000 bytes and SACKs the third segment: [2000, 3000) relative.
        (1.06, _tcp(b, a, 5201, 40000, isn_b + 1, isn_a + 1001, 0x10, 100,
                    b"\x01\x01\x05\x0a" + struct.pack("!II", isn_a + 2001, isn_a + 3001))),
    ]
    (tmp_path / "c.pcap").write_bytes(_pcap(pkts))
    lab = tcplab.import_logs([tmp_path / "c.pcap"], out=tmp_path / "run", report=False)
    acks = lab.table("acks")
    row = acks[acks["flow"] == "10.0.0.1:40000->10.0.0.2:5201"].iloc[-1]
    assert (row["ack"], row["rwnd_bytes"]) == (1000, 100 << 7)  # RFC 7323: scaled by the receiver's shift
    assert (row["sack1_start"], row["sack1_end"], row["sack2_start"]) == (2000, 3000, -1)


def test_a_probes_panel_reads_ping_rtt_and_zooms_with_the_others(browser, tmp_path, shots):
    spec = {"name": "probes", "topology": {"kind": "dumbbell", "pairs": 2, "bottleneck": {"rate": "10Mbit", "delay": "10ms",
                                                                                          "buffer": "100p"}},
            "senders": {"s1": {"to": "r1", "time": "3s"}},
            "probes": [{"from": "s2", "to": "r2", "interval": "50ms"}]}
    run = tcplab.run(spec, out=tmp_path / "run").path
    page = open_page(browser, run / "report.html")
    assert page.locator("#chart-probes canvas").count() >= 1
    page.locator("#panel-probes").scroll_into_view_if_needed()
    box = page.locator("#chart-probes canvas").first.bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.6, y)
    legend = page.locator("#legend-probes").inner_text()
    assert "ping0 RTT" in legend and "ms" in legend, legend
    page.mouse.move(box["x"] + box["width"] * 0.3, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.5, y, steps=8)
    page.mouse.up()
    page.wait_for_function("tcplab.range() !== null")
    assert x_range(page, "cwnd") == pytest.approx(x_range(page, "probes"))
    page.screenshot(path=str(shots / "probes-report.png"), full_page=True)
    assert page.errors == []

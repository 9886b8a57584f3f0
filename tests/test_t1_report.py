"""The main job: T1 runs its full 200 s and its report opens cleanly in headless Chromium."""

import shutil
from pathlib import Path

import pandas as pd
import pytest

from conftest import tcplab

PANELS = ["throughput", "cwnd", "flight", "srtt", "queue"]
TABLES = ["flows-table", "bottleneck-table", "provenance-table"]


@pytest.fixture(scope="module")
def t1_run(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("t1")
    out = tmp / "t1"
    tcplab("run", "T1", "--out", str(out), "--no-intervals", cwd=tmp, check=True)
    return out


@pytest.mark.slow
def test_t1_runs_full_200_seconds_with_all_outputs(t1_run: Path):
    import json

    s = json.loads((t1_run / "summary.json").read_text())
    assert [f["duration_s"] for f in s["flows"]] == [200.0, 200.0]
    assert s["bottleneck"]["window_s"] == 200.0
    # Regression guard, not a target: two CUBIC flows keep a 1-BDP-ish drop-tail link busy.
    assert s["bottleneck"]["utilisation"] > 0.8
    assert s["fairness_jain"] > 0.9
    for f in ("spec.toml", "meta.json", "report.html", "flows.parquet", "intervals.parquet", "queues.parquet"):
        assert (t1_run / f).is_file(), f
    # The page budget (report/series.py): the 200 s run's page stays a few MB.
    assert (t1_run / "report.html").stat().st_size < 30e6


@pytest.mark.slow
def test_t1_report_renders_in_chromium_without_console_errors(t1_run: Path):
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    assert chromium, "chromium is installed by scripts/install --test"
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((t1_run / "report.html").as_uri())
        page.wait_for_function("window.tcplab && window.tcplab.ready", timeout=30_000)
        for c in PANELS:
            assert page.locator(f"#chart-{c} canvas").count() >= 1, c
        # The overview spans the whole run; zooming into one second loads the detail level, which
        # holds every change of s1's cwnd in that second (counted here from the table itself).
        assert page.evaluate("tcplab.chart('cwnd').g.xAxisRange()")[1] >= 199.9
        count = ("(() => { const g = tcplab.chart('cwnd').g; let n = 0; for (let i = 0; i < g.numRows(); i++) {"
                 " const t = g.getValue(i, 0); if (t >= 18 && t <= 19 && g.getValue(i, 1) !== null) n++; } return n; })()")
        overview = page.evaluate(count)
        page.evaluate("tcplab.zoom(18, 19)")
        zoomed = page.evaluate(count)
        fl = pd.read_parquet(t1_run / "flows.parquet", columns=["t_ns", "flow", "cwnd_bytes"])
        s1 = fl[fl["flow"] == "s1"]
        changed = s1["cwnd_bytes"].diff().fillna(1) != 0
        changes = int((changed & (s1["t_ns"] >= 18e9) & (s1["t_ns"] <= 19e9)).sum())
        assert zoomed >= changes > overview, (zoomed, changes, overview)
        for t in TABLES:
            assert page.locator(f"table#{t} tbody tr").count() >= 1, t
        assert page.locator("table#flows-table tbody tr").count() == 2
        assert page.locator("table#recovery-table tbody tr").count() >= 2
        assert "seed" in page.locator("#provenance").inner_text()
        browser.close()
    assert errors == []

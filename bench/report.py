"""Report cost on T1's 200 s: report generation time (median of N, wall and CPU, report only,
from a finished run's tables), its peak RSS (in a process of its own that only imports tcplab
and makes the report), page size, and time to first render in headless Chromium (navigation
start to every chart drawn), each for the default trace and for per-ACK samples
(trace.sample = "ack").

    PYTHONPATH=python .venv/bin/python bench/report.py [--repeat 3] [--duration 200s] [--keep DIR [--reuse]]

Prints one line per case (run_s: the simulation without report, null when reused); numbers are of
this machine, run by run, and of its load at the time (`uptime` is printed first).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tcplab
from tcplab.report.make import make_report


def first_render_s(page_path: Path) -> tuple[float, float]:
    """(seconds from navigation start to every chart drawn, of which the page's own script ms)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        page = b.new_page(viewport={"width": 1200, "height": 900})
        t0 = time.monotonic()
        page.goto(page_path.as_uri(), timeout=120_000)
        page.wait_for_function("window.tcplab && window.tcplab.ready", timeout=120_000)
        wall = time.monotonic() - t0
        script_ms = page.evaluate("tcplab.renderMs")
        b.close()
    return wall, script_ms


# The child's own peak (VmHWM: Linux carries ru_maxrss over exec, so a child started by this
# process would report this process's peak).
_RSS_CHILD = """
import json, sys
from pathlib import Path
from tcplab.report.make import make_report
def hwm_mb():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")) // 1024
out = Path(sys.argv[1])
info, meta = json.loads((out / "summary.json").read_text()), json.loads((out / "meta.json").read_text())
flows = [{"name": f["flow"], "start_ns": int(round(f["start_s"] * 1e9))} for f in info["flows"]]
before = hwm_mb()
make_report(out, flows, info, meta)
print(before, hwm_mb())
"""


def report_rss_mb(out: Path) -> tuple[int, int]:
    """(peak RSS after importing the report's modules, peak RSS after making the report), MB."""
    proc = subprocess.run([sys.executable, "-c", _RSS_CHILD, str(out)], capture_output=True, text=True, check=True)
    before, after = proc.stdout.split()
    return int(before), int(after)


def case(name: str, sets: list[str], duration: str, repeat: int, keep: Path, reuse: bool) -> dict:
    out = keep / name
    run_s = None
    if reuse and (out / "summary.json").is_file():
        run = tcplab.Run(out)
    else:
        if out.exists():
            shutil.rmtree(out)
        t0 = time.monotonic()
        run = tcplab.run("T1", set=sets, duration=duration, out=out, report=False)
        run_s = round(time.monotonic() - t0, 2)
    info = run.info
    flows = [{"name": f["flow"], "start_ns": int(round(f["start_s"] * 1e9))} for f in info["flows"]]
    meta = json.loads((out / "meta.json").read_text())
    times, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.monotonic(), time.process_time()
        make_report(out, flows, info, meta)
        times.append(time.monotonic() - t0)
        cpu.append(time.process_time() - c0)
    rss_imports_mb, rss_mb = report_rss_mb(out)
    page = out / "report.html"
    render_s, script_ms = first_render_s(page)
    import pyarrow.parquet as pq  # after tcplab, which chooses Arrow's allocator before pyarrow loads

    rows = sum(pq.ParquetFile(out / f"{t}.parquet").metadata.num_rows for t in ("flows", "queues")
               if (out / f"{t}.parquet").is_file())
    return {"case": name, "run_s": run_s, "samples": rows, "report_s_median": round(statistics.median(times), 2),
            "report_s_all": [round(t, 2) for t in times], "report_cpu_s_median": round(statistics.median(cpu), 2),
            "report_peak_rss_mb": rss_mb,
            "peak_rss_after_imports_mb": rss_imports_mb, "page_mb": round(page.stat().st_size / 1e6, 2),
            "first_render_s": round(render_s, 2), "script_ms": round(script_ms)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--duration", default="200s")
    ap.add_argument("--keep", type=Path, default=None, help="keep the runs here (default: a temporary folder)")
    ap.add_argument("--cases", default="default,per-ack")
    ap.add_argument("--reuse", action="store_true", help="with --keep: report on the runs already there")
    a = ap.parse_args()
    keep = a.keep or Path(tempfile.mkdtemp(prefix="tcplab-bench-report-"))
    keep.mkdir(parents=True, exist_ok=True)
    print("# " + subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(), flush=True)
    sets = {"default": [], "per-ack": ["trace.sample=ack"]}
    for name in a.cases.split(","):
        print(json.dumps(case(name, sets[name], a.duration, a.repeat, keep, a.reuse)), flush=True)
    if a.keep is None:
        shutil.rmtree(keep)


if __name__ == "__main__":
    main()

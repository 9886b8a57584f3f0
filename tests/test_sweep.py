"""Sweeps as a user runs them: expansion and errors, parallel resumable execution (killed midway
and re-run gives the uninterrupted result), failures recorded, the Ray executor's catalog equal to
the local one, the catalog's views, and the sweep report."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, tcplab
from tcplab.catalog import query
from tcplab.spec import SpecError, load_spec
from tcplab.spec.sweep import parts, points

BASE = """
name = "{name}"
seed = 5
[topology]
kind = "pipe"
[topology.bottleneck]
rate = "10Mbit"
delay = "5ms"
buffer = "20p"
[senders.s1]
to = "r1"
time = "{time}"
"""

#: The issue's acceptance sweep: 2 x 3 x 2 with 3 iterations (36 runs of one simulated second).
SWEEP_2x3x2 = BASE.format(name="grid", time="1s") + """
[sweep]
iterations = 3
"topology.bottleneck.rate" = ["5Mbit", "10Mbit"]
"topology.bottleneck.buffer" = ["10p", "20p", "40p"]
"senders.s1.cc" = ["newreno", "cubic"]
"""


def _spec(tmp_path: Path, text: str, name: str = "sweep.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _expand(tmp_path: Path, text: str):
    data, source = load_spec(str(_spec(tmp_path, text)))
    return points(data, source, parts(data, source))


def test_product_zip_iterations_and_parts_expand_as_written(tmp_path):
    pts = _expand(tmp_path, SWEEP_2x3x2)
    assert len(pts) == 36 and len({p.key for p in pts}) == 36
    first = [p for p in pts if p.iteration == 1]
    assert [p.params["topology.bottleneck.rate"] for p in first[:6]] == ["5Mbit"] * 6
    assert [p.params["senders.s1.cc"] for p in first[:2]] == ["newreno", "cubic"]
    # Iteration i runs with seed base + i - 1, as `tcplab run --iterations`.
    assert sorted({p.resolved.seed for p in pts}) == [5, 6, 7]
    p0 = first[0]
    assert p0.resolved.bottleneck.rate_bps == 5_000_000
    assert p0.resolved.flows[0].cc == "newreno" and "sweep" not in p0.resolved.spec

    zipped = _expand(tmp_path, BASE.format(name="z", time="1s") + """
[sweep]
mode = "zip"
"topology.bottleneck.rate" = ["5Mbit", "20Mbit"]
"topology.bottleneck.buffer" = ["10p", "40p"]
""")
    assert [(p.params["topology.bottleneck.rate"], p.params["topology.bottleneck.buffer"]) for p in zipped] == \
        [("5Mbit", "10p"), ("20Mbit", "40p")]

    named = _expand(tmp_path, BASE.format(name="n", time="1s") + """
[sweep.a]
"senders.s1.rcvbuf" = ["1MB", "6MB"]
[sweep.b]
"senders.*.cc" = ["newreno", "cubic"]
""")
    assert [(p.part, p.index) for p in named] == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    # rcvbuf 6MB is the default and cc cubic too: the same resolved spec, the same run key.
    assert named[1].key == named[3].key and len({p.key for p in named}) == 3


@pytest.mark.parametrize("sweep,expected", [
    ('mode = "zip"\n"senders.s1.cc" = ["newreno", "cubic"]\n"topology.bottleneck.rate" = ["5Mbit"]',
     "sweep: mode zip takes lists of equal length (senders.s1.cc: 2, topology.bottleneck.rate: 1)"),
    ('"senders.s1.cc" = "cubic"', "sweep.senders.s1.cc: must be a non-empty list of values, got 'cubic'"),
    ('mode = "grid"\n"senders.s1.cc" = ["cubic"]', "sweep.mode: 'grid' is not a sweep mode (allowed: product, zip)"),
    ('"senders.s1.cc" = ["newreno", "bogus"]', "[sweep senders.s1.cc=bogus]: senders.s1.cc: 'bogus' is not one of the choices"),
    ('iterations = 0\n"senders.s1.cc" = ["cubic"]', "sweep.iterations: must be an integer from 1 to 10000, got 0"),
])
def test_bad_sweeps_fail_before_anything_runs_naming_the_key(tmp_path, sweep, expected):
    spec = _spec(tmp_path, BASE.format(name="bad", time="1s") + "[sweep]\n" + sweep + "\n")
    proc = tcplab("sweep", str(spec), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: {spec}") and expected in lines[0], proc.stderr
    assert not (tmp_path / "results").exists()


def _run_files(sweep_dir: Path) -> dict[str, bytes]:
    """Every deterministic file of every run (not meta.json: wall clock; not report.html: it embeds meta)."""
    out = {}
    for p in sorted((sweep_dir / "runs").rglob("*")):
        if p.is_file() and p.name not in ("meta.json", "report.html") and "plots" not in p.parts:
            out[str(p.relative_to(sweep_dir))] = p.read_bytes()
    return out


@pytest.mark.slow
def test_sweep_killed_midway_and_rerun_equals_an_uninterrupted_sweep(tmp_path):
    spec = _spec(tmp_path, BASE.format(name="resume", time="4s") + """
[sweep]
"topology.bottleneck.rate" = ["5Mbit", "10Mbit", "20Mbit", "40Mbit"]
"senders.s1.cc" = ["newreno", "cubic"]
""")
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    tcplab("sweep", str(spec), "--jobs", "2", "--out", str(whole), "--no-report", cwd=tmp_path, check=True)

    proc = subprocess.Popen([sys.executable, "-m", "tcplab.cli", "sweep", str(spec), "--jobs", "2", "--out", str(cut),
                             "--no-report"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        runs = cut / "runs"
        if runs.is_dir() and len([p for p in runs.iterdir() if not p.name.startswith(".")]) >= 2:
            break
        time.sleep(0.05)
    workers = [int(x) for x in subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                                               text=True).stdout.split()]
    assert workers, "the driver has no worker processes"
    proc.send_signal(signal.SIGKILL)  # the hardest stop: no handler runs in the driver
    proc.communicate()
    done_before = {p.name for p in (cut / "runs").iterdir() if not p.name.startswith(".")}
    assert 2 <= len(done_before) < 8, done_before
    # The workers follow their driver (PR_SET_PDEATHSIG): none goes on writing into the folder.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(Path(f"/proc/{w}").exists() for w in workers):
        time.sleep(0.1)
    assert not [w for w in workers if Path(f"/proc/{w}").exists()], "orphaned sweep workers"
    index = json.loads((cut / "sweep.json").read_text())
    assert index["complete"] is False

    again = tcplab("sweep", str(spec), "--jobs", "2", "--out", str(cut), "--no-report", cwd=tmp_path, check=True)
    assert f"8 of 8 runs finished ({len(done_before)} before this invocation), 0 failed" in again.stdout
    entries = sorted(p.name for p in (cut / "runs").iterdir())
    assert len(entries) == 8 and not [e for e in entries if e.startswith(".")], entries  # each run once, no partials
    assert json.loads((cut / "sweep.json").read_text())["complete"] is True
    assert _run_files(cut) == _run_files(whole)
    # Runs finished before the kill were not redone: their logs were written by the first invocation only.
    for key in done_before:
        assert (cut / "logs" / f"{key}.log").read_text().count("status: done") == 1


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_and_says_how_to_resume(tmp_path):
    # 600 simulated seconds take a few seconds of wall time: long enough that both runs are still
    # under way when the signal comes (a 20 s run had finished within the half second below).
    spec = _spec(tmp_path, BASE.format(name="intr", time="600s") + '[sweep]\n"senders.s1.cc" = ["newreno", "cubic"]\n')
    out = tmp_path / "s"
    # The sweep starts with SIGINT at its default disposition, as from a terminal: an ignored SIGINT
    # is inherited across exec and Python then installs no KeyboardInterrupt handler (a background
    # job's convention), and a library used in-process by an earlier test can leave this pytest
    # process's SIGINT ignored (seen in the full suite only).
    proc = subprocess.Popen([sys.executable, "-m", "tcplab.cli", "sweep", str(spec), "--jobs", "2", "--out", str(out)],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(out.glob("runs/.*.partial-*")):
        time.sleep(0.05)
    time.sleep(0.5)  # both runs under way
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted: finished runs are kept; run the same command again to do the rest" in stderr
    assert list((out / "runs").iterdir()) == []  # the partial runs were removed, nothing looks complete
    assert json.loads((out / "sweep.json").read_text())["complete"] is False


def test_a_failing_run_is_recorded_and_the_sweep_goes_on(tmp_path):
    # A user-written algorithm that loads (a valid spec value) but raises once the run is under way.
    (tmp_path / "broken.py").write_text("class Cc:\n    def on_ack(self, s, dupack):\n        s.cwnd_bytes = 1 // 0\n")
    spec = _spec(tmp_path, BASE.format(name="fail", time="1s") + '[sweep]\n"senders.s1.cc" = ["cubic", "broken:Cc"]\n')
    proc = tcplab("sweep", str(spec), "--out", "s", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "1 of 2 runs finished (0 before this invocation), 1 failed" in proc.stdout
    index = json.loads((tmp_path / "s" / "sweep.json").read_text())
    st = {p["params"]["senders.s1.cc"]: p for p in index["points"]}
    assert st["cubic"]["status"] == "done" and st["broken:Cc"]["status"] == "failed"
    assert "broken:Cc raised ZeroDivisionError" in st["broken:Cc"]["error"] and index["complete"] is False
    log = (tmp_path / "s" / "logs" / (st["broken:Cc"]["run"].split("/")[1] + ".log")).read_text()
    assert "status: failed" in log and "Traceback" in log
    # The report still shows the finished run and says what is missing.
    page = (tmp_path / "s" / "sweep.html").read_text()
    assert "1 run(s) not finished" in page and page.count('<a href="runs/') == 1 and '<a class="bad" href="logs/' in page


@pytest.mark.slow
def test_the_2x3x2_sweep_with_3_iterations_gives_the_same_catalog_locally_and_on_ray(tmp_path):
    spec = _spec(tmp_path, SWEEP_2x3x2)
    tcplab("sweep", str(spec), "--out", "local", "--no-report", cwd=tmp_path, check=True)
    ray = tcplab("sweep", str(spec), "--out", "ray", "--executor", "ray", "--jobs", "2", "--no-report", cwd=tmp_path)
    assert ray.returncode == 0, ray.stderr[-3000:]
    assert "36 of 36 runs finished" in ray.stdout
    sql = "SELECT * FROM flow_results ORDER BY run, flow"
    a, b = query(sql, tmp_path / "local"), query(sql, tmp_path / "ray")
    assert len(a) == 36 and a.equals(b)
    assert _run_files(tmp_path / "local") == _run_files(tmp_path / "ray")


def test_ray_executor_reports_an_unreachable_cluster(tmp_path):
    spec = _spec(tmp_path, BASE.format(name="noray", time="1s") + '[sweep]\n"senders.s1.cc" = ["cubic"]\n')
    proc = tcplab("sweep", str(spec), "--out", "s", "--executor", "ray", "--address", "127.0.0.1:1", cwd=tmp_path)
    assert proc.returncode == 2 and "cannot reach the Ray cluster at 127.0.0.1:1" in proc.stderr, proc.stderr


@pytest.mark.slow
def test_sweep_report_and_catalog_queries(tmp_path):
    spec = _spec(tmp_path, BASE.format(name="rep", time="2s") + """
[sweep]
iterations = 2
"topology.bottleneck.rate" = ["5Mbit", "20Mbit"]
"senders.s1.cc" = ["newreno", "cubic"]
""")
    proc = tcplab("sweep", str(spec), "--out", "results/rep", cwd=tmp_path, check=True)
    assert "report:  results/rep/sweep.html" in proc.stdout
    sd = tmp_path / "results" / "rep"
    page = (sd / "sweep.html").read_text()
    assert page.count('data-chart="sweep_main_') == 3  # one flow: no fairness chart
    assert page.count("<tr>") == 1 + 4  # header + one row per parameter combination
    assert page.count('<a href="runs/') == 8
    for href in {h.split('"')[0] for h in page.split('<a href="')[1:]}:
        assert (sd / href).is_file(), href
    # Throughput scales with the bottleneck rate: the 20 Mbit/s rows differ from the first row, significantly.
    assert page.count(" *</td>") >= 2

    # A plain run lands in the same catalog.
    tcplab("run", str(_spec(tmp_path, BASE.format(name="single", time="1s"), "single.toml")), "--out", "results/single",
           "--no-report", "--no-intervals", cwd=tmp_path, check=True)
    runs = query("SELECT run, name, seed, p_senders_s1_cc, throughput_mbps FROM runs ORDER BY run", tmp_path / "results")
    assert len(runs) == 9 and sorted(set(runs["name"])) == ["rep", "single"]
    means = query("SELECT p_topology_bottleneck_rate AS rate, avg(throughput_mbps) AS mbps FROM runs "
                  "WHERE name = 'rep' GROUP BY rate ORDER BY rate", tmp_path / "results")
    assert list(means["rate"]) == ["20Mbit", "5Mbit"]
    assert 17 < means["mbps"][0] < 20 and 4 < means["mbps"][1] < 5
    # Time series views carry the run they come from.
    n = query("SELECT count(DISTINCT run) AS n FROM intervals", tmp_path / "results")["n"][0]
    assert n == 9

    ls = tcplab("ls", "results", cwd=tmp_path, check=True)
    assert "9 run(s) under results" in ls.stdout and "p_senders_s1_cc" in ls.stdout
    q = tcplab("query", "SELECT count(*) AS n FROM flow_results", "--root", "results", "--csv", cwd=tmp_path, check=True)
    assert q.stdout == "n\n9\n"
    bad = tcplab("query", "SELECT nope FROM runs", "--root", "results", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.startswith("error: query: Binder Error"), bad.stderr
    missing = tcplab("ls", "nowhere", cwd=tmp_path)
    assert missing.returncode == 2 and "nowhere: no such folder" in missing.stderr


def test_a_second_invocation_on_a_running_sweep_is_refused(tmp_path):
    import fcntl

    spec = _spec(tmp_path, BASE.format(name="busy", time="1s") + '[sweep]\n"senders.s1.cc" = ["cubic"]\n')
    out = tmp_path / "s"
    out.mkdir()
    with open(out / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        proc = tcplab("sweep", str(spec), "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 2 and "another tcplab sweep is running in this folder" in proc.stderr


def test_python_api_sweep_and_query(tmp_path):
    import tomllib

    import tcplab

    data = tomllib.loads(BASE.format(name="api", time="1s") + '[sweep]\n"senders.s1.cc" = ["newreno", "cubic"]\n')
    runs = tcplab.sweep(data, out=tmp_path / "s", jobs=1, report=False)
    assert list(runs["p_senders_s1_cc"]) == ["newreno", "cubic"] and (runs["throughput_mbps"] > 9).all()
    again = tcplab.sweep(data, out=tmp_path / "s", jobs=1, report=False)  # resumed: nothing to do
    assert again.equals(runs)
    n = tcplab.query("SELECT count(*) AS n FROM flows", tmp_path / "s")["n"][0]
    assert n > 100  # the flow-state samples of both runs


@pytest.mark.slow
def test_t5_and_t7_presets_run_as_sweeps_with_their_reports(tmp_path):
    t5 = tcplab("sweep", "T5", "--duration", "5s", "--out", "t5", cwd=tmp_path)
    assert t5.returncode == 0, t5.stderr[-2000:]
    assert "11 of 11 runs finished" in t5.stdout
    rows = query("SELECT p_topology_bottleneck_rate AS rate, bottleneck_rate_mbps, utilisation FROM runs", tmp_path / "t5")
    assert len(rows) == 11 and sorted(rows["bottleneck_rate_mbps"]) == [15, 20, 25, 30, 40, 50, 63, 80, 100, 130, 160]
    # NewReno with a one-BDP queue keeps the pipe busy at every rate (slow start included in 5 s).
    assert (rows["utilisation"] > 0.85).all(), rows
    page = (tmp_path / "t5" / "sweep.html").read_text()
    assert page.count('class="part"') == 1 and page.count("<tr>") == 1 + 11

    t7 = tcplab("sweep", "T7", "--duration", "500ms", "--iterations", "1", "--out", "t7", cwd=tmp_path)
    assert t7.returncode == 0, t7.stderr[-2000:]
    # 8 receive buffers + 8 CCs clean + 8 CCs with 10% loss, one run (cubic, clean, 6MB) shared.
    assert "23 of 23 runs finished" in t7.stdout
    page = (tmp_path / "t7" / "sweep.html").read_text()
    assert 'id="part-rmem"' in page and 'id="part-cc"' in page and 'id="part-cc_loss"' in page
    # The two parts that sweep algorithms rank them (the receive-buffer part has no names to rank).
    assert page.count('class="ranking" data-part="cc"') == 1 and page.count('class="ranking" data-part="cc_loss"') == 1
    # Points of all parts, through sweep.json (a run two parts share carries the first part's labels).
    tp = dict(query("SELECT run, throughput_mbps FROM runs", tmp_path / "t7" / "runs").itertuples(index=False))
    index = json.loads((tmp_path / "t7" / "sweep.json").read_text())
    at = {(p["part"], tuple(sorted(p["params"].items()))): tp[p["run"].split("/")[1]] for p in index["points"]}
    # The window limit bites: 6.3 KB of receive buffer carries far less than 12 MB over 0.2 ms.
    assert at[("rmem", (("senders.s1.rcvbuf", "6.3KB"),))] < 0.5 * at[("rmem", (("senders.s1.rcvbuf", "12MB"),))]
    clean = {k[1][0][1]: v for k, v in at.items() if k[0] == "cc"}
    lossy = {k[1][0][1]: v for k, v in at.items() if k[0] == "cc_loss"}
    assert len(clean) == len(lossy) == 8
    # On the clean path every algorithm fills the 10 Gbit/s link (after a sub-ms slow start).
    assert all(v > 0.9 * 10_000 for v in clean.values()), clean
    # 10% random loss: the loss-based algorithms collapse; BBR v1 treats loss below its policer
    # threshold (20%) as noise and keeps most of the link.
    for name in ("cubic", "reno", "bic", "htcp", "vegas"):
        assert 0 < lossy[name] < 0.2 * clean[name], (name, clean[name], lossy[name])
    assert lossy["bbr"] > 0.5 * clean["bbr"], lossy


@pytest.mark.slow
def test_ray_executor_on_a_started_cluster_by_address(tmp_path):
    """`ray start --head` then `--address`, as on a real cluster (one machine here), with the
    token authentication Ray's `ray start` enables by default."""
    import socket

    spec = _spec(tmp_path, BASE.format(name="addr", time="1s") + '[sweep]\n"senders.s1.cc" = ["newreno", "cubic"]\n')
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ray_cli = str(Path(sys.executable).parent / "ray")
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(tmp_path), "COLUMNS": "200"}
    try:
        # A token in ~/.ray/auth_token makes `ray start` enable token authentication ...
        subprocess.run([ray_cli, "get-auth-token", "--generate"], env=env, cwd=tmp_path, check=True, capture_output=True,
                       timeout=60)
        subprocess.run([ray_cli, "start", "--head", "--port", str(port), "--num-cpus", "2", "--include-dashboard=false",
                        "--disable-usage-stats"], env=env, cwd=tmp_path, check=True, capture_output=True, timeout=120)
        assert (tmp_path / ".ray" / "auth_token").is_file()
        # ... and a driver connecting by address sends it in token mode.
        proc = subprocess.run([sys.executable, "-m", "tcplab.cli", "sweep", str(spec), "--out", "s", "--executor", "ray",
                               "--address", f"127.0.0.1:{port}", "--no-report"], env=env | {"RAY_AUTH_MODE": "token"},
                              cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "2 of 2 runs finished" in proc.stdout
        runs = query("SELECT p_senders_s1_cc FROM runs ORDER BY 1", tmp_path / "s")
        assert list(runs["p_senders_s1_cc"]) == ["cubic", "newreno"]
    finally:
        subprocess.run([ray_cli, "stop", "--force"], env=env, cwd=tmp_path, capture_output=True, timeout=120)


def test_a_finished_run_whose_log_was_lost_gets_one_on_resume(tmp_path):
    """A driver killed between a run's rename and its log leaves a complete run without a log;
    the next invocation does not redo the run and writes the log saying so."""
    spec = _spec(tmp_path, BASE.format(name="lost", time="1s") + '[sweep]\n"senders.s1.cc" = ["newreno", "cubic"]\n')
    tcplab("sweep", str(spec), "--out", "s", "--no-report", cwd=tmp_path, check=True)
    logs = sorted((tmp_path / "s" / "logs").iterdir())
    logs[0].unlink()
    again = tcplab("sweep", str(spec), "--out", "s", "--no-report", cwd=tmp_path, check=True)
    assert "2 of 2 runs finished (2 before this invocation), 0 failed" in again.stdout
    assert "status: done (by an earlier invocation, killed before it wrote this log)" in logs[0].read_text()

"""tcplab calibrate on the simulator: hidden values of a simulated "measured" run recovered within a
stated tolerance, an unknown the observables cannot see reported as not identifiable, a resumed
calibration going on where it stopped, the twin running and comparing as any run, bad requests
refused in one line."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from conftest import tcplab
import tcplab as api
from tcplab.calibrate import calibrate
from tcplab.spec.schema import set_key

BASE = """
name = "twin"
seed = 1
[topology]
kind = "pipe"
[topology.access]
rate = "100Mbit"
delay = "1ms"
[topology.bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "100p"
[senders.s1]
to = "r1"
cc = "cubic"
time = "8s"
"""


def _spec(**values) -> dict:
    data = tomllib.loads(BASE)
    for k, v in values.items():
        set_key(data, k.replace("__", "."), v, "t.toml")
    return data


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> Path:
    """The "testbed": the spec with its hidden values (buffer 100p, rate 20Mbit)."""
    return api.run(_spec(), out=tmp_path_factory.mktemp("m") / "measured", report=False).path


def _row(result: dict, key: str) -> dict:
    return next(u for u in result["unknowns"] if u["key"] == key)


@pytest.mark.slow
def test_buffer_and_rate_recovered_within_tolerance(measured: Path, tmp_path: Path):
    spec = _spec(topology__bottleneck__buffer={"between": ["16p", "1000p"]},
                 topology__bottleneck__rate={"between": ["5Mbit", "80Mbit"], "scale": "log"})
    cal = calibrate(measured, spec, tmp_path / "cal", source="t.toml", budget=60, jobs=2, report=False)
    buf, rate = _row(cal.result, "topology.bottleneck.buffer"), _row(cal.result, "topology.bottleneck.rate")
    assert abs(int(buf["value"][:-1]) - 100) <= 0.1 * (1000 - 16), buf      # 10% of the range
    assert abs(int(rate["value"][:-3]) / 20e6 - 1) <= 0.1, rate            # 10% of the value
    assert rate["identifiable"] and buf["identifiable"]
    assert cal.result["evaluations"] == 60 and cal.result["runs"] == 60
    obs = {o["observable"]: o for o in cal.result["observables"]}
    assert set(obs) == {"throughput", "loss_episodes", "cwnd_at_loss", "rtt", "retransmits", "utilisation"}
    assert obs["throughput"]["error"] < 0.1


@pytest.mark.slow
def test_host_queue_recovered(tmp_path: Path):
    """A sender host's netem queue (its packets held in a 5 ms delay on a 20 Mbit/s NIC) as the
    bottleneck: its limit found from the run."""
    hidden = dict(topology__access__delay="5ms", topology__access__rate="20Mbit", topology__bottleneck__rate="40Mbit")
    measured = api.run(_spec(**hidden, hosts__s1__netem__limit=30), out=tmp_path / "m", report=False).path
    spec = _spec(**hidden, hosts__s1__netem__limit={"between": [5, 300]})
    cal = calibrate(measured, spec, tmp_path / "cal", source="t.toml", budget=30, jobs=2, report=False)
    row = _row(cal.result, "hosts.s1.netem.limit")
    assert abs(row["value"] - 30) <= 0.1 * 295 and row["identifiable"], row


def test_an_unknown_the_observables_cannot_see_is_not_identifiable(measured: Path, tmp_path: Path):
    """The reverse buffer holds only ACKs, which never queue on this path: every value scores the same."""
    spec = _spec(topology__bottleneck__reverse_buffer={"between": ["50p", "5000p"]})
    cal = calibrate(measured, spec, tmp_path / "cal", source="t.toml", budget=12, jobs=2, report=False)
    row = _row(cal.result, "topology.bottleneck.reverse_buffer")
    assert not row["identifiable"] and row["spread"] > 0.2 and row["verdict"].startswith("NOT identified")


@pytest.mark.slow
def test_cli_writes_the_twin_resumes_and_the_twin_runs_and_compares(measured: Path, tmp_path: Path):
    spec = tmp_path / "twin.toml"
    spec.write_text(BASE.replace('buffer = "100p"', 'buffer = { between = ["16p", "1000p"] }'))
    out = tmp_path / "cal"
    first = tcplab("calibrate", str(measured), str(spec), "--out", str(out), "--budget", "8", "-j", "2")
    assert first.returncode == 0, first.stderr
    assert "topology.bottleneck.buffer = " in first.stdout and (out / "calibration.html").is_file()
    runs = {p.name: p.stat().st_mtime_ns for p in (out / "evals" / "runs").iterdir()}
    again = tcplab("calibrate", str(measured), str(spec), "--out", str(out), "--budget", "12", "-j", "2")
    assert again.returncode == 0, again.stderr
    result = json.loads((out / "calibration.json").read_text())
    assert result["evaluations"] == 12
    # The first 8 candidates were kept, not run again (two candidates with the same values share a run).
    after = {p.name: p.stat().st_mtime_ns for p in (out / "evals" / "runs").iterdir()}
    assert all(after[k] == t for k, t in runs.items()) and len(after) > len(runs)
    page = (out / "calibration.html").read_text()
    assert "Measured and twin" in page and 'id="unknowns-table"' in page and "topology.bottleneck.buffer" in page
    run = tcplab("run", str(out / "calibrated.toml"), "--out", str(tmp_path / "again"), "--no-report")
    assert run.returncode == 0, run.stderr
    cmp = tcplab("compare", str(measured), str(out / "twin"), "--out", str(tmp_path / "cmp"))
    assert cmp.returncode == 0, cmp.stderr


def test_an_interrupted_candidate_is_asked_again(measured: Path, tmp_path: Path):
    """A trial asked for and never scored (the invocation was killed) is failed and asked again
    with the same values."""
    from tcplab.calibrate.search import study

    out = tmp_path / "cal"
    spec = _spec(topology__bottleneck__buffer={"between": ["16p", "1000p"]})
    calibrate(measured, spec, out, source="t.toml", budget=4, jobs=2, report=False)
    st = study(out, seed=1)
    killed = st.ask()
    killed.suggest_int("topology.bottleneck.buffer", 16, 1000)
    cal = calibrate(measured, spec, out, source="t.toml", budget=5, jobs=1, report=False)
    trials = study(out, seed=1).trials
    assert trials[killed.number].state.name == "FAIL"
    assert trials[-1].params == killed.params and trials[-1].state.name == "COMPLETE"
    assert cal.result["evaluations"] == 5


@pytest.mark.parametrize("args, expected", [
    (["--observe", "goodput"], "--observe: 'goodput' is not an observable (allowed: throughput,"),
    (["--weight", "goodput=2"], "--weight goodput=2: give NAME=W with NAME one of throughput,"),
    (["--weight", "rtt=-1"], "--weight rtt: must be from 0 to 1000, got -1"),
    (["--set", "topology.bottleneck.buffer=100p"], "has no unknowns to calibrate"),
    (["--set", 'senders.s1.cc={one_of=["reno","cubic"]}'], "senders.s1.cc: a stack's parameter cannot be unknown"),
    (["--set", 'topology.bottleneck.rate={between=["1bit","100Tbit"]}'], "topology.bottleneck.rate: must be in 1bit .. 10Tbit"),
])
def test_bad_requests_fail_in_one_line(measured: Path, tmp_path: Path, args, expected):
    spec = tmp_path / "twin.toml"
    spec.write_text(BASE.replace('buffer = "100p"', 'buffer = { between = ["16p", "1000p"] }'))
    proc = tcplab("calibrate", str(measured), str(spec), "--out", str(tmp_path / "cal"), *args)
    assert proc.returncode == 2, proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], proc.stderr
    assert not (tmp_path / "cal").exists()


def test_a_folder_of_another_kind_or_another_calibration_is_refused(measured: Path, tmp_path: Path):
    spec = tmp_path / "twin.toml"
    spec.write_text(BASE.replace('buffer = "100p"', 'buffer = { between = ["16p", "1000p"] }'))
    proc = tcplab("calibrate", str(measured), str(spec), "--out", str(measured.parent))
    assert proc.returncode == 2 and "an input of this command" in proc.stderr
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x").write_text("")
    proc = tcplab("calibrate", str(measured), str(spec), "--out", str(tmp_path / "other"))
    assert proc.returncode == 2 and "exists and is not a calibrate folder" in proc.stderr
    out = tmp_path / "cal"
    assert tcplab("calibrate", str(measured), str(spec), "--out", str(out), "--budget", "2").returncode == 0
    other = tcplab("calibrate", str(measured), str(spec), "--out", str(out), "--budget", "2", "--seeds", "2")
    assert other.returncode == 2 and "holds a calibration of another" in other.stderr


def test_calibrates_from_imported_logs(measured: Path, tmp_path: Path):
    """The measured run as a testbed gives it, its tcp_probe trace and iperf3 JSON (flows named by
    address), imported: paired with the spec's sender by server port, every observable the logs
    carry used (no utilisation: logs do not see the bottleneck)."""
    logs = api.export(measured, ["tcp_probe", "iperf3-json"], out=tmp_path / "logs")
    imported = api.import_logs(logs, out=tmp_path / "imported", report=False).path
    spec = _spec(topology__bottleneck__buffer={"between": ["16p", "1000p"]})
    cal = calibrate(imported, spec, tmp_path / "cal", source="t.toml", budget=8, jobs=2, report=False)
    assert list(cal.result["flows"].values()) == ["s1"]
    assert [o["observable"] for o in cal.result["observables"]] == ["throughput", "loss_episodes", "cwnd_at_loss",
                                                                     "rtt", "retransmits"]


@pytest.mark.slow
def test_killed_midway_then_the_same_command_finishes(measured: Path, tmp_path: Path):
    """SIGTERM while a batch runs: exit 130 in one line, the scored candidates kept; the same command
    again ends with the whole budget scored and the killed batch's candidates asked again."""
    import signal
    import subprocess
    import sys
    import time

    spec = tmp_path / "twin.toml"
    spec.write_text(BASE.replace('buffer = "100p"', 'buffer = { between = ["16p", "1000p"] }'))
    out = tmp_path / "cal"
    cmd = [sys.executable, "-m", "tcplab.cli", "calibrate", str(measured), str(spec), "--out", str(out),
           "--budget", "24", "-j", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any((out / "evals" / "runs").glob("*")):
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted: the scored candidates are kept" in err and not (out / "calibration.json").exists()
    again = tcplab("calibrate", str(measured), str(spec), "--out", str(out), "--budget", "24", "-j", "2")
    assert again.returncode == 0, again.stderr
    result = json.loads((out / "calibration.json").read_text())
    assert result["evaluations"] == 24 and result["failed_candidates"] >= 1  # the killed batch, asked again


@pytest.mark.slow
def test_calibration_page_overlays_measured_and_twin(browser, measured: Path, tmp_path: Path):
    from conftest import open_page

    spec = _spec(topology__bottleneck__buffer={"between": ["16p", "1000p"]})
    cal = calibrate(measured, spec, tmp_path / "cal", source="t.toml", budget=4, jobs=2)
    page = open_page(browser, cal.path / "calibration.html")
    assert page.locator("#unknowns-table tbody tr").count() == 1
    assert page.locator("#observables-table tbody tr").count() == 6
    names = page.evaluate("tcplab.chart('cwnd').series.map(s => s.name)")
    assert "measured s1 cwnd" in names and "twin s1 cwnd" in names, names
    assert page.errors == []


def test_two_seeds_by_default_where_the_path_drops_at_random():
    from tcplab.calibrate import default_seeds
    from tcplab.spec import resolve
    from tcplab.spec.unknowns import find, fix

    def seeds(**values) -> int:
        spec = _spec(topology__bottleneck__buffer={"between": ["16p", "1000p"]}, **values)
        found = find(spec, "t.toml")
        lowest = {u.key: u.value(u.lo) if u.is_range else u.choices[0] for u in found}
        return default_seeds(resolve(fix(spec, lowest, found), "t.toml").links, found)

    assert seeds() == 1
    assert seeds(topology__bottleneck__loss=0.001) == 2
    assert seeds(topology__bottleneck__loss={"between": [0, 0.01]}) == 2

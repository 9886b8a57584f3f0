"""Each case of a new user's bad or odd input (issue 22), through the real command: it runs, or it
fails in one line naming the file and the key, exit 2; results never leave their root."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from conftest import SMALL_SPEC, tcplab

SHORT = SMALL_SPEC.replace('time = "3s"', 'time = "300ms"').replace('start = "500ms"', 'start = "0s"')


def _one_error_line(proc, *parts: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for p in parts:
        assert p in lines[0], lines[0]
    return lines[0]


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


def test_a_name_that_climbs_out_of_results_is_refused_and_writes_nothing(tmp_path):
    work = tmp_path / "a" / "b" / "c"
    work.mkdir(parents=True)
    spec = work / "s.toml"
    spec.write_text(SHORT.replace('name = "small"', 'name = "../../../x"'))
    proc = tcplab("run", str(spec), cwd=work)
    _one_error_line(proc, str(spec), "name:", "cannot name a results folder")
    assert _files(tmp_path) == {"a", "a/b", "a/b/c", "a/b/c/s.toml"}


@pytest.mark.parametrize("key, value, shown", [
    ("rate", '"99999999999999999999Gbit"', "topology.bottleneck.rate: must be in 1bit .. 10Tbit"),
    ("delay", '"99999999999s"', "topology.bottleneck.delay: must be in 0s .. 10s"),
])
def test_huge_link_values_fail_in_one_line_with_the_range(tmp_path, key, value, shown):
    spec = tmp_path / "s.toml"
    old = {"rate": 'rate = "50Mbit"', "delay": 'delay = "10ms"'}[key]
    spec.write_text(SHORT.replace(old, f"{key} = {value}", 1))
    _one_error_line(tcplab("run", str(spec), cwd=tmp_path), str(spec), shown)
    assert not (tmp_path / "results").exists()


def test_a_time_beyond_u64_fails_in_one_line(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(SHORT.replace('time = "300ms"', 'time = "18446744073709551615ns"', 1))
    _one_error_line(tcplab("run", str(spec), cwd=tmp_path), str(spec), "senders.s1.time: must be in 1ns .. 86400s",
                    "18446744073709551615")


def test_a_one_bit_link_and_a_one_byte_buffer_run_with_warnings_kept_in_the_summary(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(SHORT.replace('rate = "50Mbit"', 'rate = "1bit"').replace('buffer = "60p"', 'buffer = "1B"'))
    proc = tcplab("run", str(spec), "--out", "r", "--no-report", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    warnings = [l for l in proc.stderr.splitlines() if l.startswith("warning:")]
    assert any("topology.bottleneck.rate: 1 bit/s is below 1 kbit/s" in w for w in warnings), proc.stderr
    assert any("topology.bottleneck.buffer: 1 B is smaller than one packet" in w for w in warnings), proc.stderr
    assert len(warnings) == len(set(warnings))
    kept = json.loads((tmp_path / "r" / "summary.json").read_text())["warnings"]
    assert [f"warning: {w}" for w in kept] == warnings


def test_a_run_shorter_than_one_rtt_is_warned(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(SHORT.replace('time = "300ms"', 'time = "5ms"'))
    proc = tcplab("run", str(spec), "--out", "r", "--no-report", "--no-intervals", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "senders.s1.time: runs 5 ms, less than one round trip (20.2 ms)" in proc.stderr


def test_a_bare_duration_is_seconds_as_iperf3_t(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(SHORT)
    proc = tcplab("run", str(spec), "--duration", "0.5", "--out", "r", "--no-report", "--no-intervals", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    flows = json.loads((tmp_path / "r" / "summary.json").read_text())["flows"]
    assert [f["duration_s"] for f in flows] == [0.5, 0.5]
    _one_error_line(tcplab("run", str(spec), "--duration", "5 s", cwd=tmp_path), "--duration", "is not a duration")


@pytest.mark.parametrize("command, words", [("peers", "[peers] table"), ("sweep", "[sweep] axes")])
def test_help_shows_literal_brackets(command, words):
    proc = tcplab(command, "--help")
    assert proc.returncode == 0
    assert words in " ".join(proc.stdout.split())


def test_a_linux_reno_flow_is_shown_as_reno(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(SHORT.replace('cc = "newreno"', 'cc = "reno"'))
    proc = tcplab("run", str(spec), "--out", "r", "--no-report", "--no-intervals", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    flows = json.loads((tmp_path / "r" / "summary.json").read_text())["flows"]
    assert [f["cc"] for f in flows] == ["cubic", "reno"]
    assert " reno " in proc.stdout and "newreno" not in proc.stdout


def test_force_replaces_only_a_results_folder(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(SHORT)
    precious = tmp_path / "home"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    proc = tcplab("run", str(spec), "--out", str(precious), "--force", "--no-report", cwd=tmp_path)
    _one_error_line(proc, str(precious), "not a tcplab results folder")
    assert (precious / "thesis.tex").read_text() == "years of work"
    # A results folder is replaced as before.
    assert tcplab("run", str(spec), "--out", "r", "--no-report", cwd=tmp_path).returncode == 0
    assert tcplab("run", str(spec), "--out", "r", "--no-report", "--force", cwd=tmp_path).returncode == 0


def test_an_import_name_that_climbs_out_is_refused(tmp_path):
    log = tmp_path / "x.json"
    log.write_text("{}")
    proc = tcplab("import", str(log), "--name", "../../evil", cwd=tmp_path)
    _one_error_line(proc, "--name", "cannot name a results folder")
    assert _files(tmp_path) == {"x.json"}


def test_a_sweep_archive_cannot_unpack_outside_its_run_folder(tmp_path):
    from tcplab.sweeps import _land

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = b"owned"
        info = tarfile.TarInfo("../../escaped.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    runs = tmp_path / "sweep" / "runs"
    runs.mkdir(parents=True)
    with pytest.raises(tarfile.FilterError):
        _land({"key": "0123abcd", "archive": buf.getvalue()}, runs)
    assert _files(tmp_path) == {"sweep", "sweep/runs"}
    with pytest.raises(ValueError, match="cannot name a folder"):
        _land({"key": "../x", "archive": buf.getvalue()}, runs)

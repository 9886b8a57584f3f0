"""The Python API checks its arguments as the CLI checks its options (options.py), with the same
one-line messages, before any work and without leaving temporary folders behind; a string where a
list is expected is one item."""

from __future__ import annotations

import json
import tempfile

import pytest
import tomllib

import tcplab
from conftest import SMALL_SPEC, tcplab as cli
from tcplab.options import OptionError
from tcplab.spec import SpecError
from tcplab.logs import LogError

SPEC = tomllib.loads(SMALL_SPEC.replace('time = "3s"', 'time = "200ms"').replace('start = "500ms"', 'start = "0s"'))


@pytest.fixture
def no_stray_temp_folders(tmp_path, monkeypatch):
    """tempfile's folder set to an empty one of this test's (others' tests use /tmp too), which
    must stay empty."""
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    yield
    assert list(private.iterdir()) == []


@pytest.mark.parametrize("kwargs, message", [
    ({"backend": "zzz"}, "backend: 'zzz' is not a backend; allowed: sim, netns, remote"),
    ({"seed": "x"}, "seed: must be an integer from 0 to 9223372036854775807, got 'x'"),
    ({"seed": 1.5}, "got 1.5"), ({"seed": True}, "got True"), ({"seed": -1}, "got -1"),
    ({"iterations": 0}, "iterations: must be an integer from 1 to 10000, got 0"),
    ({"duration": float("nan")}, "duration: nan is not a finite number"),
    ({"duration": "5 s"}, "'5 s' is not a duration"),
])
def test_run_refuses_bad_arguments_with_the_clis_message(kwargs, message, no_stray_temp_folders):
    with pytest.raises((OptionError, SpecError)) as e:
        tcplab.run(SPEC, report=False, **kwargs)
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("args, message", [
    (["run", "s.toml", "--backend", "zzz"], "--backend: 'zzz' is not a backend; allowed: sim, netns, remote"),
    (["run", "s.toml", "--iterations", "20000"], "--iterations: must be an integer from 1 to 10000, got 20000"),
    (["peers", "s.toml", "--iterations", "20000"], "--iterations: must be an integer from 1 to 10000, got 20000"),
    (["peers", "s.toml", "--seed", "99999999999999999999"], "--seed: must be an integer from 0 to 9223372036854775807"),
])
def test_the_cli_says_the_same_in_one_line(tmp_path, args, message):
    (tmp_path / "s.toml").write_text(SMALL_SPEC)
    proc = cli(*args, cwd=tmp_path)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "results").exists()


def test_a_bare_number_duration_is_seconds_as_on_the_command_line(tmp_path):
    run = tcplab.run(SPEC, duration=0.25, out=tmp_path / "r", report=False)
    assert list(run.summary["duration_s"]) == [0.25, 0.25]
    run = tcplab.run(SPEC, duration=1, out=tmp_path / "r1", report=False)
    assert list(run.summary["duration_s"]) == [1.0, 1.0]


def test_peers_checks_its_backend_and_iterations(no_stray_temp_folders):
    with pytest.raises(OptionError, match="backend: 'netns' is not a backend; allowed: sim, remote"):
        tcplab.peers(SPEC, backend="netns")
    with pytest.raises(OptionError, match="iterations: must be an integer from 1 to 10000, got 0"):
        tcplab.peers(SPEC, iterations=0)


def test_import_logs_takes_one_path_or_a_list_and_refuses_none(tmp_path, no_stray_temp_folders):
    with pytest.raises(OptionError, match="logs: no logs given"):
        tcplab.import_logs([])
    with pytest.raises(OptionError, match="mss: must be an integer from 0 to 65535, got 99999999999"):
        tcplab.import_logs(["x.pcap"], mss=99999999999)
    # A string is one log (not one log per character); a failed import leaves no temporary folder.
    with pytest.raises(LogError, match=r"^x\.pcap: no such file$"):
        tcplab.import_logs("x.pcap")
    (tmp_path / "noise.json").write_text("{}")
    with pytest.raises(LogError):
        tcplab.import_logs(str(tmp_path / "noise.json"), formats="iperf3-json")


def test_export_takes_one_format_or_a_list(tmp_path):
    spec = json.loads(json.dumps(SPEC))
    spec["trace"] = {"sends": True}
    run = tcplab.run(spec, out=tmp_path / "r", report=False)
    one = tcplab.export(run.path, "tcp_probe", out=tmp_path / "e1")
    assert [p.name for p in one] == ["tcp_probe.txt"]
    both = tcplab.export(run.path, ["siftr2", "tcp_probe"], out=tmp_path / "e2")
    assert sorted(p.name for p in both) == ["siftr2.log", "tcp_probe.txt"]
    with pytest.raises(OptionError, match="formats: expected a name or a non-empty list of names"):
        tcplab.export(run.path, [], out=tmp_path / "e3")


def test_a_run_that_fails_without_out_leaves_no_temporary_folder(monkeypatch, no_stray_temp_folders):
    import tcplab.runner

    def fails(exp, target, **kwargs):
        target.mkdir()
        raise RuntimeError("the backend failed")

    monkeypatch.setattr(tcplab.runner, "execute", fails)
    with pytest.raises(RuntimeError, match="the backend failed"):
        tcplab.run(SPEC)


def test_ministat_refuses_non_finite_samples():
    with pytest.raises(ValueError, match="sample 2: nan is not a finite number"):
        tcplab.ministat([1, 2, 3], [1, float("nan"), 3])


def test_a_resolved_experiment_takes_no_duration(no_stray_temp_folders):
    exp = tcplab.resolve(SPEC, "<dict>")
    with pytest.raises(OptionError, match="an Experiment is already resolved"):
        tcplab.run(exp, duration="1s")


def _nested(depth: int) -> dict:
    d: dict = {}
    x = d
    for _ in range(depth):
        x["a"] = {}
        x = x["a"]
    return d


@pytest.mark.parametrize("spec, message", [
    (_nested(100_000), "tables and arrays nested more than 32 deep"),
    ({"name": b"x"}, "holds a value that is not TOML data"),
    ({"seed": 10**5000}, "seed: an integer of 5001 digits is longer than any number tcplab takes"),
    ({"seed": float("nan")}, "seed: nan is not a finite number"),
])
def test_a_spec_dict_no_file_could_hold_fails_in_one_line(spec, message, no_stray_temp_folders):
    with pytest.raises(SpecError) as e:
        tcplab.run(spec)
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("kwargs, message", [({"jobs": "x"}, "jobs: must be an integer from 1 to 4096, got 'x'"),
                                             ({"jobs": 0}, "got 0"),
                                             ({"executor": "zzz"}, "executor: 'zzz' is not an executor; allowed: local, ray")])
def test_sweep_checks_jobs_and_executor_before_any_run(kwargs, message, tmp_path):
    with pytest.raises(OptionError, match=message):
        tcplab.sweep("T5", out=tmp_path / "sw", **kwargs)
    assert not (tmp_path / "sw").exists()

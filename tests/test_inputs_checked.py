"""A new user's inputs that used to crash, pass unchecked or mislead, each through the real command
or API: a sysctl of the wrong type on any host, numbers of absurd size or no finite value, specs
nested too deep, drop-tail with keys, probes beyond the senders, unsafe sender names, fractional
bytes, a directory as spec, quoted keys in --set/--axis. Each either runs as documented or fails
in one line, exit 2, writing nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SMALL_SPEC, tcplab
from tcplab.spec import SpecError, resolve
import tomllib

SHORT = SMALL_SPEC.replace('time = "3s"', 'time = "300ms"').replace('start = "500ms"', 'start = "0s"')
LONG = "9" * 5000


def _one_error_line(proc, *parts: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and lines[0].startswith("error: "), proc.stderr
    for p in parts:
        assert p in lines[0], lines[0]
    return lines[0]


def _spec(tmp_path: Path, text: str = SHORT) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(text)
    return p


# -- sysctls: typed by name, whatever the host's role ----------------------------------------------


@pytest.mark.parametrize("host, key, value, shown", [
    ("s1", "net.ipv4.tcp_adv_win_scale", '"abc"', "'abc' is not an integer from -31 to 31"),
    ("r1", "net.ipv4.tcp_syn_retries", '"x"', "'x' is not an integer from 1 to 127"),
    ("r1", "net.ipv4.tcp_congestion_control", "5", "5 is not a congestion control name"),
    ("r2", "net.ipv4.tcp_rmem", '"1 2"', "is not three byte counts"),
    ("s2", "net.ipv4.tcp_sack", "true", "True is not an integer from 0 to 1"),
])
def test_a_sysctl_of_the_wrong_type_fails_on_any_host(tmp_path, host, key, value, shown):
    spec = _spec(tmp_path, SHORT + f'\n[hosts.{host}.sysctl]\n"{key}" = {value}\n')
    _one_error_line(tcplab("run", str(spec), cwd=tmp_path), f'hosts.{host}.sysctl."{key}"', shown)
    assert not (tmp_path / "results").exists()


def test_a_remote_plan_refuses_a_sysctl_value_that_bypassed_the_spec(tmp_path):
    import dataclasses

    from tcplab.backends.remote import plan as planmod
    from tcplab.backends.remote.lab import LabError, load_lab

    lab = tmp_path / "LAB.toml"
    lab.write_text('name = "l"\n[testbed]\ndelay = "testbed"\nshaping = "testbed"\n' + "".join(
        f'[hosts.{n}]\nssh = "x-{n}"\nos = "linux"\naddress = "10.0.0.{i + 1}"\n'
        for i, n in enumerate(("s1", "s2", "r1", "r2", "rt1", "rt2"))))
    exp = resolve(tomllib.loads(SHORT), "s.toml")
    ok = planmod.build(exp, load_lab(lab))
    assert ok["r1"].sysctls["net.ipv4.tcp_rmem"].startswith("4096 ")
    bad = dataclasses.replace(exp, host_sysctls={"r1": {"net.ipv4.tcp_syn_retries": "x; reboot"}})
    with pytest.raises(LabError, match=r"sysctl net.ipv4.tcp_syn_retries: 'x; reboot' is not an integer"):
        planmod.build(bad, load_lab(lab))


def test_the_remote_host_gate_refuses_an_unchecked_sysctl():
    from tcplab.backends.remote.host import RemoteHost
    from tcplab.backends.remote.ssh import RemoteError

    h = RemoteHost.__new__(RemoteHost)  # no ssh: the check comes before any command
    h.node, h.os = "r1", "linux"
    with pytest.raises(RemoteError, match="r1: sysctl net.ipv4.tcp_adv_win_scale: 'abc' is not an integer"):
        h.sysctl("net.ipv4.tcp_adv_win_scale", "abc")
    with pytest.raises(RemoteError, match="is not a sysctl tcplab sets"):
        h.sysctl("kernel.core_pattern", "|/bin/sh")


# -- numbers: one line, exit 2 -------------------------------------------------------------------


def test_drop_tail_with_keys_names_the_key_and_the_allowed_keys(tmp_path):
    spec = _spec(tmp_path, SHORT.replace('buffer = "60p"', 'buffer = "60p"\naqm = {kind="drop-tail", limit=5}'))
    _one_error_line(tcplab("run", str(spec), cwd=tmp_path), "topology.bottleneck.aqm.limit", "(allowed: kind)")
    spec = _spec(tmp_path)
    _one_error_line(tcplab("run", str(spec), "--set", 'topology.bottleneck.reverse_aqm={kind="drop-tail", limit=5}',
                           cwd=tmp_path), "topology.bottleneck.reverse_aqm.limit", "(allowed: kind)")


@pytest.mark.parametrize("body", [
    "x = " + "{a=" * 2000 + "1" + "}" * 2000,
    "x = " + "[" * 50000 + "]" * 50000,
    "[" + ".".join(["a"] * 3000) + "]\nx = 1",
    SHORT + f"\n[trace]\nsample = {LONG}\n",
])
def test_specs_nested_too_deep_or_with_absurd_integers_fail_in_one_line(tmp_path, body):
    spec = _spec(tmp_path, body)
    line = _one_error_line(tcplab("run", str(spec), cwd=tmp_path), str(spec))
    assert len(line) < 300


@pytest.mark.parametrize("args, shown", [
    (["--set", f"seed={LONG}"], "longer than any number tcplab takes"),
    (["--set", "topology.bottleneck.loss=nan"], "not a finite number"),
    (["--duration", LONG], "--duration: a number of 5001 characters"),
    (["--duration", "inf"], "--duration"),
])
def test_absurd_numbers_in_options_fail_in_one_line(tmp_path, args, shown):
    _one_error_line(tcplab("run", str(_spec(tmp_path)), *args, cwd=tmp_path), shown)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("run")
    (d / "s.toml").write_text(SHORT)
    tcplab("run", str(d / "s.toml"), "--out", str(d / "r"), "--no-report", check=True)
    return d / "r"


@pytest.mark.parametrize("option, value", [("--from", "inf"), ("--from", "-inf"), ("--from", "1e308"), ("--to", "nan")])
def test_plot_windows_must_be_finite_seconds(finished_run, tmp_path, option, value):
    _one_error_line(tcplab("plot", str(finished_run), option, value, "--out", str(tmp_path / "p"), cwd=tmp_path), option)
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize("bad", ["nan", "inf", "1e400", LONG])
def test_stats_refuses_non_finite_samples_naming_file_and_line(tmp_path, bad):
    (tmp_path / "a.txt").write_text(f"1\n2\n{bad}\n4\n")
    _one_error_line(tcplab("stats", "a.txt", cwd=tmp_path), "a.txt:3: ")


def test_import_mss_out_of_range_fails_before_reading(tmp_path):
    (tmp_path / "x.json").write_text("{}")
    _one_error_line(tcplab("import", "x.json", "--mss", "99999999999", cwd=tmp_path), "--mss: must be an integer from 0 to 65535")
    assert {p.name for p in tmp_path.iterdir()} == {"x.json"}


# -- probes run until their stop -------------------------------------------------------------------


def test_probes_past_the_senders_run_to_their_stop(tmp_path):
    spec = SHORT + """
[[probes]]
from = "s1"
to = "r1"
interval = "1s"
stop = "30s"
[[probes]]
from = "s2"
to = "r2"
start = "15s"
stop = "20s"
"""
    proc = tcplab("run", str(_spec(tmp_path, spec)), "--out", "r", "--no-report", "--no-intervals", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    probes = json.loads((tmp_path / "r" / "summary.json").read_text())["probes"]
    assert [(p["sent"], p["answered"] + p["lost"]) for p in probes] == [(30, 30), (25, 25)]


def test_a_duration_that_cuts_a_probe_short_is_warned(tmp_path):
    spec = 'duration = "2s"\n' + SHORT + '[[probes]]\nfrom = "s1"\nto = "r1"\ninterval = "1s"\nstop = "30s"\n'
    proc = tcplab("run", str(_spec(tmp_path, spec)), "--out", "r", "--no-report", "--no-intervals", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "probes[0].stop: 30 s is after the run's duration (2 s): 27 of its 30 requests are never sent" in proc.stderr


# -- names, files and keys -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a b/../../c", "x" * 300, "", "-rf"])
def test_sender_names_follow_the_probe_name_rule(tmp_path, name):
    spec = SHORT.replace("[senders.s2]", f"[senders.{json.dumps(name)}]\nhost = \"s2\"")
    _one_error_line(tcplab("run", str(_spec(tmp_path, spec)), cwd=tmp_path), "senders:", "cannot name a sender",
                    "letters, digits, - and _")


@pytest.mark.parametrize("size", ['"23.9B"', '"64.5B"'])
def test_fractional_probe_sizes_are_refused(tmp_path, size):
    spec = SHORT + f'[[probes]]\nfrom = "s1"\nto = "r1"\nsize = {size}\n'
    _one_error_line(tcplab("run", str(_spec(tmp_path, spec)), cwd=tmp_path), "probes[0].size", "not a whole number of bytes")


def test_range_errors_name_only_units_the_spec_takes(tmp_path):
    spec = SHORT.replace('time = "300ms"', 'time = "86401s"', 1)
    line = _one_error_line(tcplab("run", str(_spec(tmp_path, spec)), cwd=tmp_path), "1ns .. 86400s")
    assert "day" not in line.split("must be in")[1].split(",")[0].replace("(a day)", "")


@pytest.mark.parametrize("target, shown", [("dir", "is a directory"), ("/dev/null", "is not a regular file")])
def test_a_spec_that_is_not_a_file_says_so(tmp_path, target, shown):
    (tmp_path / "dir").mkdir()
    _one_error_line(tcplab("run", target, cwd=tmp_path), shown)


def test_set_and_axis_take_quoted_keys(tmp_path):
    spec = _spec(tmp_path)
    proc = tcplab("run", str(spec), "--set", 'hosts.r1.sysctl."net.ipv4.tcp_sack"=0', "--out", "r", "--no-report",
                  "--no-intervals", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    kept = tomllib.loads((tmp_path / "r" / "spec.toml").read_text())
    assert kept["hosts"]["r1"]["sysctl"] == {"net.ipv4.tcp_sack": 0}
    from tcplab.spec.sweep import parse_axis

    assert parse_axis("hosts.r1.sysctl.'net.ipv4.tcp_sack'=[0, 1]", "x") == ('hosts.r1.sysctl.\'net.ipv4.tcp_sack\'', [0, 1])
    from tcplab import sweeps

    data = tomllib.loads(SHORT)
    pl = sweeps.plan(data, "s.toml", axes=['hosts.r1.sysctl."net.ipv4.tcp_sack"=[0, 1]'], out=tmp_path / "sw")
    assert [p.resolved.host_sysctls["r1"] for p in pl.points] == [{"net.ipv4.tcp_sack": 0}, {"net.ipv4.tcp_sack": 1}]


def test_a_key_that_is_not_dotted_toml_is_refused_in_one_line(tmp_path):
    _one_error_line(tcplab("run", str(_spec(tmp_path)), "--set", "hosts.r1.sysctl.net ipv4=1", cwd=tmp_path),
                    "is not a dotted key")


@pytest.mark.parametrize("body", [f"name = {LONG}\n", "x = " + "[" * 50000 + "]" * 50000 + "\n"])
def test_a_lab_file_with_absurd_numbers_or_nesting_fails_in_one_line(tmp_path, body):
    from tcplab.backends.remote.lab import LabError, load_lab

    (tmp_path / "LAB.toml").write_text(body)
    with pytest.raises(LabError) as e:
        load_lab(tmp_path / "LAB.toml")
    assert "\n" not in str(e.value) and len(str(e.value)) < 200


def test_a_log_name_longer_than_the_system_takes_fails_in_one_line(tmp_path):
    _one_error_line(tcplab("import", "9" * 367, cwd=tmp_path), "logs: ", "File name too long")
    assert list(tmp_path.iterdir()) == []

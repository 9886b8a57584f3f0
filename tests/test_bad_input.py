"""Bad specs fail with one clear line naming file, key and allowed values, exit status 2, and
leave no results folder behind."""

from pathlib import Path

import pytest

from conftest import SMALL_SPEC, tcplab

CASES = {
    "unknown key": (("[senders.s1]", "[senders.s1]\ncolour = \"blue\""), "senders.s1.colour: unknown key (allowed: host, to,"),
    "negative rate": (('rate = "50Mbit"', 'rate = "-50Mbit"'), "topology.bottleneck.rate:"),
    "space in unit": (('delay = "10ms"', 'delay = "10 ms"'), "topology.bottleneck.delay: '10 ms' is not a duration"),
    "unknown unit": (('delay = "10ms"', 'delay = "10xs"'), "topology.bottleneck.delay: '10xs' is not a duration"),
    "zero buffer": (('buffer = "60p"', 'buffer = "0p"'), "topology.bottleneck.buffer: buffer '0p' must be larger than zero"),
    "missing host": (('to = "r1"', 'to = "r9"'), "senders.s1.to: 'r9' is not another host of this topology (allowed: r1, r2, s2)"),
    "unknown cc": (('cc = "cubic"', 'cc = "vegass"'), "senders.s1.cc: 'vegass' is not one of the choices (allowed: newreno, cubic, "
                   "cubic-rfc9438, bic, htcp, vegas, westwood, yeah, scalable, highspeed, bbr, dctcp, reno)"),
    "linux cc on freebsd": (('cc = "cubic"', 'cc = "vegas"\nstack = "freebsd"'),
                            "senders.s1.cc: 'vegas' is not modelled for the freebsd stack, which offers "
                            "(allowed: newreno, cubic, cubic-rfc9438, htcp, dctcp, reno)"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_spec_fails_with_one_line_and_exit_2_and_no_folder(tmp_path: Path, case: str):
    (old, new), expected = CASES[case]
    assert old in SMALL_SPEC
    spec = tmp_path / "bad.toml"
    spec.write_text(SMALL_SPEC.replace(old, new, 1))
    out = tmp_path / "results" / "run"
    proc = tcplab("run", str(spec), "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"error: {spec}: "), lines[0]
    assert expected in lines[0]
    assert not (tmp_path / "results").exists()
    assert not list(tmp_path.glob("**/*.partial-*"))


def test_unknown_preset_lists_the_presets(tmp_path: Path):
    proc = tcplab("run", "T99", cwd=tmp_path)
    assert proc.returncode == 2
    assert "no such spec file or preset" in proc.stderr and "t1-dumbbell-wan" in proc.stderr


def test_invalid_toml_names_the_file(tmp_path: Path):
    spec = tmp_path / "broken.toml"
    spec.write_text("name = \n")
    proc = tcplab("run", str(spec), cwd=tmp_path)
    assert proc.returncode == 2 and f"{spec}: not valid TOML" in proc.stderr


def test_bad_set_override_is_a_clear_error(tmp_path: Path, small_spec: Path):
    proc = tcplab("run", str(small_spec), "--set", "senders.s1.cc=bogus", cwd=tmp_path)
    assert proc.returncode == 2 and "senders.s1.cc: 'bogus' is not one of the choices" in proc.stderr


@pytest.mark.parametrize("preset", ["T5", "T7"])
def test_sweep_presets_given_to_run_point_to_tcplab_sweep(tmp_path: Path, preset: str):
    proc = tcplab("run", preset, cwd=tmp_path)
    assert proc.returncode == 2
    assert f"sweep: this spec is a parameter sweep: run it with `tcplab sweep {preset}`" in proc.stderr
    assert not (tmp_path / "results").exists()

"""Property tests of the number reader, the sysctl checker and the Python API's arguments: numbers
as strings of any length or value, sysctl values of every type on every host, API arguments of
every type. Each either is taken (a finite value in range; a plan whose every sysctl passes the
checker; a run started) or refused with one line; never a traceback of another kind.

CI runs TCPLAB_FUZZ_EXAMPLES (default 150) examples per property; by hand, e.g.
  TCPLAB_FUZZ_EXAMPLES=2000 .venv/bin/python -m pytest tests/test_fuzz_numbers.py
"""

from __future__ import annotations

import copy
import math
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import tomllib
from hypothesis import HealthCheck, given, settings, strategies as st
from typer.testing import CliRunner

import tcplab
from conftest import SMALL_SPEC
from tcplab.backends import Refused
from tcplab.cli import app
from tcplab.options import OptionError
from tcplab.spec import SpecError, numbers, resolve, units
from tcplab.spec.schema import apply_set
from tcplab.spec.sysctl_values import SPEC_TYPES, SysctlValueError, written
from tcplab.logs import LogError

EXAMPLES = int(os.environ.get("TCPLAB_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
BASE = tomllib.loads(SMALL_SPEC.replace('time = "3s"', 'time = "200ms"').replace('start = "500ms"', 'start = "0s"'))
runner = CliRunner()

# Numbers written as text: digits of any length (past Python's 4300-digit limit too), signs,
# points, exponents, nan and infinities in any case, and noise.
digits = st.integers(1, 6000).map(lambda n: "9" * n)
number_texts = st.one_of(
    digits, st.integers().map(str), st.floats().map(repr), st.decimals(allow_nan=False).map(str),
    st.builds(lambda a, b: f"{a}e{b}", st.integers(-10**6, 10**6), st.integers(-10**4, 10**4)),
    st.sampled_from(["nan", "NaN", "-nan", "inf", "-Infinity", "1e400", "-1e400", "1e-400", "", " ", ".", "-", "+.5",
                     "0x10", "1_000", "１２"]),
    st.text(alphabet="0123456789.eE+-naifNAIF_ ", max_size=60))
UNITS = ["ns", "us", "ms", "s", "min", "bit", "Mbit", "Gbit", "B", "KB", "KiB", "M", "p", ""]


def _one_line(e: Exception) -> None:
    text = str(e)
    assert "\n" not in text and 0 < len(text) < 400, text


@FUZZ
@given(number_texts)
def test_numbers_as_text_read_finite_or_fail_in_one_line(text):
    for read, bound in ((lambda: numbers.finite(text, "x"), math.inf), (lambda: numbers.integer(text, "x", -10**6, 10**6), 10**6),
                        (lambda: numbers.real(text, "x", -1e9, 1e9), 1e9)):
        try:
            v = read()
        except numbers.NumberError as e:
            _one_line(e)
        else:
            assert math.isfinite(v) and abs(v) <= bound


@FUZZ
@given(number_texts, st.sampled_from(UNITS))
def test_unit_strings_parse_to_whole_numbers_or_fail_in_one_line(text, unit):
    for parse in (units.parse_duration_ns, units.parse_rate_bps, units.parse_size_bytes, units.parse_buffer):
        try:
            v = parse(text + unit)
        except units.UnitError as e:
            _one_line(e)
        else:
            assert isinstance(v[1] if isinstance(v, tuple) else v, int)


@FUZZ
@given(number_texts, st.sampled_from(["--duration", "--set seed", "--set topology.bottleneck.loss",
                                      "--set senders.s1.initcwnd", "--set topology.bottleneck.rate"]))
def test_numbers_from_options_resolve_or_fail_naming_the_key(text, where):
    data = copy.deepcopy(BASE)
    try:
        if where == "--duration":
            exp = resolve(data, "s.toml", duration=text)
        else:
            apply_set(data, f"{where.split()[1]}={text}", "s.toml")
            exp = resolve(data, "s.toml")
    except SpecError as e:
        _one_line(e)
        assert str(e).startswith("s.toml: ")
    else:
        assert exp.stop_ns > 0


@FUZZ
@given(number_texts)
def test_stats_files_with_any_number_print_or_fail_in_one_line(text):
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "a.txt"
        f.write_text(f"1\n2\n{text}\n4\n")
        result = runner.invoke(app, ["stats", "-n", str(f)])
        assert result.exit_code in (0, 2) and (result.exception is None or isinstance(result.exception, SystemExit))
        if result.exit_code == 2:
            lines = [l for l in result.stderr.splitlines() if l.strip()]
            assert len(lines) == 1 and lines[0].startswith(f"error: {f}:"), result.stderr


@FUZZ
@given(number_texts, st.sampled_from(["--from", "--to"]))
def test_plot_windows_and_mss_are_checked_by_the_option_reader(text, option):
    for check in (lambda: tcplab.options.seconds(text, option), lambda: tcplab.options.mss(text)):
        try:
            v = check()
        except OptionError as e:
            _one_line(e)
        else:
            assert v is None or math.isfinite(v)


# -- sysctls ----------------------------------------------------------------------------------------

any_value = st.one_of(st.integers(-2**70, 2**70), st.integers(-3, 130), st.booleans(), st.floats(), number_texts,
                      st.text(max_size=30), st.sampled_from(["4096 131072 6291456", "1 2 3", "cubic", "rack", "freebsd",
                                                            "x; reboot", "$(id)", "/tmp/x.log"]),
                      st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@FUZZ
@given(st.sampled_from(sorted(SPEC_TYPES)), any_value, st.sampled_from(["s1", "s2", "r1", "r2"]),
       st.sampled_from(["linux", "freebsd"]))
def test_sysctl_values_of_every_type_are_checked_on_every_host_and_in_every_plan(name, value, host, stack):
    from tcplab.backends.remote import plan as planmod
    from tcplab.backends.remote.lab import LabError, load_lab

    data = copy.deepcopy(BASE)
    data.setdefault("hosts", {})[host] = {"sysctl": {name: value}}
    for s in data["senders"].values():
        s["stack"] = stack
        s["cc"] = "cubic"
    try:
        exp = resolve(data, "s.toml")
    except SpecError as e:
        _one_line(e)
        return
    with tempfile.TemporaryDirectory() as d:
        lab = Path(d) / "LAB.toml"
        lab.write_text('name = "l"\n[testbed]\ndelay = "testbed"\nshaping = "testbed"\n' + "".join(
            f'[hosts.{n}]\nssh = "x-{n}"\nos = "{stack if n.startswith("s") else "linux"}"\naddress = "10.0.0.{i + 1}"\n'
            for i, n in enumerate(("s1", "s2", "r1", "r2", "rt1", "rt2"))))
        try:
            plans = planmod.build(exp, load_lab(lab))
        except LabError as e:  # what LAB.toml cannot do (e.g. a NIC setting): one line, never an unchecked value
            _one_line(e)
            return
    for p in plans.values():
        for k, v in p.sysctls.items():
            assert written(k, v) == v  # checked and in the form sysctl takes


@FUZZ
@given(st.sampled_from(sorted(SPEC_TYPES)), any_value)
def test_the_writer_gate_takes_only_checked_text(name, value):
    try:
        text = written(name, value if not isinstance(value, bool) else str(value))
    except SysctlValueError as e:
        _one_line(e)
    else:
        assert text == text.strip() and not any(c in text for c in ";$`|&\n\"'") and written(name, text) == text


# -- the Python API's arguments -------------------------------------------------------------------------

arguments = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.integers(-2, 3), st.floats(),
                      st.text(max_size=12), number_texts, st.lists(st.text(max_size=5), max_size=2),
                      st.sampled_from(["sim", "netns", "remote", "zzz", "0.1", "0.1s", "1"]))


class _Ran(Exception):
    """The stubbed backend was reached: every argument was accepted."""


@contextmanager
def _private_tmp():
    """tempfile's folder set to a new empty one (others' tests use /tmp too); asserts that
    nothing is left in it."""
    with tempfile.TemporaryDirectory() as d, mock.patch.object(tempfile, "tempdir", d):
        yield
        assert os.listdir(d) == [], os.listdir(d)


@FUZZ
@given(st.fixed_dictionaries({}, optional={"backend": arguments, "seed": arguments, "iterations": arguments,
                                           "duration": arguments}))
def test_api_arguments_of_every_type_are_taken_or_refused_in_one_line(kwargs):
    def stub(*args, **kw):
        raise _Ran

    with _private_tmp(), mock.patch("tcplab.runner.execute", stub), mock.patch("tcplab.runner.execute_iterations", stub):
        try:
            tcplab.run(BASE, report=False, **kwargs)
        except _Ran:
            assert kwargs.get("backend", "sim") in ("sim", "netns", "remote")
        except (OptionError, SpecError, Refused) as e:  # Refused: a backend's own (remote without a LAB.toml)
            _one_line(e)


@FUZZ
@given(arguments, arguments)
def test_import_and_export_arguments_of_every_type_fail_in_one_line(logs, formats):
    for call in (lambda: tcplab.import_logs(logs, formats=formats, report=False),
                 lambda: tcplab.export("/nonexistent-run", formats)):
        with _private_tmp():
            try:
                call()
            except (OptionError, LogError, FileNotFoundError, OSError) as e:
                _one_line(e)

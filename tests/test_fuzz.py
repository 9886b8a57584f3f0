"""Property tests of every input path (issue 22): generated specs, mutated real logs and damaged
results folders, each through the real command (in-process, so hundreds of examples fit in CI).
Each either completes or exits 2 with one line naming the file; never a traceback, never a file
outside the results root, never a half-written run.

CI runs TCPLAB_FUZZ_EXAMPLES (default 150) examples per property; by hand, e.g.
  TCPLAB_FUZZ_EXAMPLES=3000 .venv/bin/python -m pytest tests/test_fuzz.py
"""

from __future__ import annotations

import copy
import os
import random
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

import tomli_w
from hypothesis import HealthCheck, given, settings, strategies as st
from typer.testing import CliRunner

from conftest import SMALL_SPEC, tcplab
from tcplab.cli import app
from tcplab.spec import SpecError, resolve
from tcplab.spec.schema import BACKGROUND_KEYS, LINK_KEYS, SENDER_KEYS, TOP_KEYS

import tomllib

EXAMPLES = int(os.environ.get("TCPLAB_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])

BASE = tomllib.loads(SMALL_SPEC.replace('time = "3s"', 'time = "200ms"').replace('start = "500ms"', 'start = "20ms"')
                     .replace('rate = "100Mbit"', 'rate = "20Mbit"').replace('rate = "50Mbit"', 'rate = "10Mbit"'))
#: A valid spec is simulated only when it is this small (packets the fastest link can carry in
#: the run); bigger valid ones are checked to validate, not run (a day of 10 Tbit/s is legal).
RUN_BUDGET_PACKETS = 20_000

runner = CliRunner()

# ---------------------------------------------------------------------------------------------
# Values a typo, a shared file or an attacker could put anywhere.

UNITS = ["bit", "kbit", "Mbit", "Gbit", "Tbit", "bps", "ns", "us", "ms", "s", "min", "B", "KB", "MB", "KiB", "M", "p", "",
         "xs", " ms"]
numbers = st.one_of(st.integers(-10, 10**6), st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from([0, 1, 2**63 - 1, 2**64, -1]))
unit_strings = st.builds(lambda n, u: f"{n}{u}", st.one_of(st.integers(0, 10**25), st.decimals(0, 10**6, places=3),
                                                         st.sampled_from(["-1", "1e9", "0.0000001", "99999999999999999999"])),
                         st.sampled_from(UNITS))
names = st.one_of(st.text(min_size=0, max_size=30),
                  st.sampled_from(["../../../x", "/etc/passwd", "a/b", "..", ".", "", "~", "x\x00y", "résumé", "名前",
                                   "a" * 300, ".hidden", "-rf", "run name", "C:\\x"]))
scalars = st.one_of(numbers, unit_strings, names, st.booleans())
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                      max_leaves=6)

PLACES = ([(k,) for k in TOP_KEYS] + [("topology", "kind"), ("topology", "pairs")]
          + [("topology", side, k) for side in ("access", "bottleneck") for k in LINK_KEYS]
          + [("senders", s, k) for s in ("s1", "s2") for k in SENDER_KEYS]
          + [("background", 0, k) for k in BACKGROUND_KEYS]
          + [("trace", k) for k in ("sample", "interval", "sends")])
keys = st.one_of(st.sampled_from(PLACES), st.tuples(st.sampled_from(["senders", "topology", "trace", "hosts"]),
                                                    st.text(max_size=10)))
# A mutation: set a place to a value, or delete it.
mutations = st.lists(st.tuples(keys, st.one_of(values, st.just(KeyError))), min_size=1, max_size=4)


def _mutate(spec: dict, key: tuple, value) -> None:
    t = spec
    for part in key[:-1]:
        if part == 0:  # [[background]]
            t = t.setdefault("background", [{"from": "s1", "to": "r1", "rate": "1Mbit"}])
            t = t[0] if isinstance(t, list) and t and isinstance(t[0], dict) else {}
            continue
        nxt = t.get(part) if isinstance(t, dict) else None
        if not isinstance(nxt, dict):
            nxt = {}
            if isinstance(t, dict):
                t[part] = nxt
        t = nxt
    if not isinstance(t, dict):
        return
    if value is KeyError:
        t.pop(key[-1], None)
    else:
        t[key[-1]] = value


def _toml(spec: dict) -> str | None:
    try:
        return tomli_w.dumps(spec)
    except (TypeError, ValueError, OverflowError):  # values TOML cannot hold (NaN keys, huge ints)
        return None


@contextmanager
def _workdir():
    old = os.getcwd()
    with tempfile.TemporaryDirectory() as d:
        os.chdir(d)
        try:
            yield Path(d)
        finally:
            os.chdir(old)


def _check_tree(work: Path, allowed_files: set[str]) -> None:
    """Nothing outside results/ but the inputs; every folder under it a complete run."""
    for p in work.rglob("*"):
        rel = p.relative_to(work).as_posix()
        assert rel in allowed_files or rel == "results" or rel.startswith("results/"), f"wrote outside results/: {rel}"
        assert ".partial-" not in rel, f"half-written run left: {rel}"
    for run in (work / "results").glob("*") if (work / "results").is_dir() else []:
        assert (run / "summary.json").is_file() and (run / "meta.json").is_file(), f"incomplete run {run}"


def _assert_one_line_or_ok(result, file_label: str) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (0, 2), (result.exit_code, result.output)
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        lines = [l for l in result.stderr.splitlines() if l.strip()]
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("error: ") and file_label in lines[0], lines[0]


def _packets(resolved) -> float:
    fastest = max(max(ln.ab.rate_bps, ln.ba.rate_bps) for ln in resolved.links)
    udp = sum(u.rate_bps for u in resolved.background)
    return (fastest + udp) * resolved.stop_ns / 1e9 / 8 / 1500


@FUZZ
@given(mutations)
def test_generated_specs_run_or_fail_in_one_line(muts):
    spec = copy.deepcopy(BASE)
    for key, value in muts:
        _mutate(spec, key, value)
    text = _toml(spec)
    if text is None:
        return
    with _workdir() as work:
        Path("spec.toml").write_text(text)
        try:  # the validation layer alone: a SpecError or a resolved spec, nothing else
            resolved = resolve(tomllib.loads(text), "spec.toml")
        except SpecError:
            resolved = None
        if resolved is not None and _packets(resolved) > RUN_BUDGET_PACKETS:
            return  # valid and long: validated above, too long to simulate in a test
        result = runner.invoke(app, ["run", "spec.toml", "--no-report", "--no-intervals"])
        _assert_one_line_or_ok(result, "spec.toml")
        # `tcplab run` refuses a [sweep] spec (pointing to `tcplab sweep`); otherwise it runs what resolves.
        assert (result.exit_code == 0) == (resolved is not None and "sweep" not in spec), result.output
        _check_tree(work, {"spec.toml"})


# ---------------------------------------------------------------------------------------------
# Real logs, mutated.

_logs_cache: dict[str, bytes] = {}


def _real_logs() -> dict[str, bytes]:
    """A short simulated run exported as a testbed's logs (siftr2, tcp_probe, iperf3 -J)."""
    if not _logs_cache:
        with tempfile.TemporaryDirectory() as d:
            d = Path(d)
            (d / "s.toml").write_text(tomli_w.dumps(BASE | {"trace": {"sends": True, "sample": "ack", "interval": "50ms"}}))
            tcplab("run", str(d / "s.toml"), "--out", str(d / "run"), "--no-report", check=True)
            tcplab("export", str(d / "run"), "--to", "siftr2", "--to", "tcp_probe", "--to", "iperf3-json", check=True)
            for p in sorted((d / "run" / "export").iterdir()):
                _logs_cache[p.name] = p.read_bytes()
    return _logs_cache


def _damage(data: bytes, rnd: random.Random, how: str) -> bytes:
    lines = data.split(b"\n")
    i = rnd.randrange(len(lines))
    if how == "truncate":
        return data[: rnd.randrange(len(data) + 1)]
    if how == "flip":
        b = bytearray(data)
        for _ in range(rnd.randint(1, 8)):
            b[rnd.randrange(len(b))] = rnd.randrange(256)
        return bytes(b)
    if how == "garbage-line":
        lines.insert(i, bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 80))))
    elif how == "drop-line":
        del lines[i]
    elif how == "duplicate-line":
        lines.insert(i, lines[i])
    elif how == "field":
        fields = lines[i].split(b",") if b"," in lines[i] else lines[i].split(b" ")
        fields[rnd.randrange(len(fields))] = rnd.choice([b"", b"-1", b"99999999999999999999999", b"nan", b"x", b"\xff"])
        lines[i] = (b"," if b"," in lines[i] else b" ").join(fields)
    return b"\n".join(lines)


@FUZZ
@given(st.sampled_from(["siftr2.log", "tcp_probe.txt", "iperf3-1.json"]),
       st.sampled_from(["truncate", "flip", "garbage-line", "drop-line", "duplicate-line", "field"]),
       st.integers(0, 2**32), st.booleans())
def test_mutated_real_logs_import_or_fail_in_one_line(name, how, seed, lenient):
    logs = _real_logs()
    with _workdir() as work:
        Path(name).write_bytes(_damage(logs[name], random.Random(seed), how))
        args = ["import", name, "--no-report", "--out", "results/imp"] + (["--lenient"] if lenient else [])
        result = runner.invoke(app, args)
        _assert_one_line_or_ok(result, name)
        _check_tree(work, {name})


# ---------------------------------------------------------------------------------------------
# Results folders damaged after the fact.

_run_cache: list[Path] = []


def _finished_run() -> Path:
    if not _run_cache:
        d = Path(tempfile.mkdtemp(prefix="tcplab-fuzz-"))
        (d / "s.toml").write_text(tomli_w.dumps(BASE | {"trace": {"sends": True}}))
        tcplab("run", str(d / "s.toml"), "--out", str(d / "run"), "--no-report", check=True)
        _run_cache.append(d / "run")
    return _run_cache[0]


DAMAGES = ["delete", "truncate", "flip", "empty", "json-garbage"]
COMMANDS = [["show", "R"], ["recovery", "R"], ["compare", "R", "R"], ["export", "R", "--to", "siftr2", "--to", "tcp_probe",
            "--to", "iperf3-json", "--out", "results/exp"], ["query", "SELECT * FROM flow_results", "--root", "results"],
            ["ls", "results"], ["plot", "R", "--what", "tseq", "--flow", "s1", "--out", "results/p.png"],
            ["compare", "R", "R", "R", "--out", "results/cmp"]]


@FUZZ
@given(st.sampled_from(["summary.json", "meta.json", "flows.parquet", "intervals.parquet", "events.parquet",
                        "ports.parquet", "queues.parquet", "sends.parquet", "summary.parquet"]),
       st.sampled_from(DAMAGES), st.integers(0, 2**32), st.sampled_from(range(len(COMMANDS))))
def test_damaged_results_folders_fail_in_one_line(member, damage, seed, command):
    with _workdir() as work:
        run = work / "results" / "R"
        shutil.copytree(_finished_run(), run)
        target = run / member
        if target.exists():
            data = target.read_bytes()
            rnd = random.Random(seed)
            if damage == "delete":
                target.unlink()
            elif damage == "empty":
                target.write_bytes(b"")
            elif damage == "json-garbage":
                target.write_bytes(rnd.choice([b"[]", b"{}", b'{"flows": 3}', b'{"name": 1, "flows": [1]}', b"null"]))
            else:
                target.write_bytes(_damage(data, rnd, damage) if data else data)
        args = [a if a != "R" else "results/R" for a in COMMANDS[command]]
        result = runner.invoke(app, args)
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
        assert result.exit_code in (0, 2), (result.exit_code, result.output)
        if result.exit_code == 2:
            lines = [l for l in result.stderr.splitlines() if l.strip()]
            assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
        # Nothing half-written: an export either completed or left no folder.
        assert not list(work.rglob("*.partial-*"))

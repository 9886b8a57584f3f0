"""Property tests of every input path (issue 22): generated specs, mutated real logs and damaged
results folders, each through the real command (in-process, so hundreds of examples fit in CI).
Each either completes or exits 2 with one line naming the file; never a traceback, never a file
outside the results root, never a half-written run.

CI runs TCPLAB_FUZZ_EXAMPLES (default 150) examples per property; by hand, e.g.
  TCPLAB_FUZZ_EXAMPLES=3000 .venv/bin/python -m pytest tests/test_fuzz.py
"""

from __future__ import annotations

import copy
import json
import os
import random
import shutil
import struct
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
# Log fields, packet headers and noise (issue 31, row 11): every numeric field is checked, no
# header is read from a payload, and noise is no run.

SIFTR2_HEAD = "enable_time_secs=1700000000\tenable_time_usecs=000000\tsiftrver=2.2\tsysname=FreeBSD\tsysver=1\tipmode=4\n"
SIFTR2_BODY = "o,1700000000.000100,0a0b0c0d,14480,1073725440,0,0,0,0,4,40000,200000,0,0,0,0,0,0,1000,1000,1448"
SIFTR2_FOOT = ("disable_time_secs=1700000001\tdisable_time_usecs=000000\tglobal_flow_cnt=1\t"
               "flow_list=0a0b0c0d,10.0.0.1,5201,10.0.0.2,40000,0,0,1448,1,0,0,5,5;\n")
number_strings = st.one_of(st.integers(-2**70, 2**70).map(str), st.floats().map(str),
                           st.sampled_from(["nan", "inf", "-inf", "1e400", "0x10", "1_000", "", " 7", "+1", "4294967295",
                                            "4294967296", "99999999999999999999999"]),
                           st.text(alphabet="0123456789abcdefx.-+e ", max_size=24))


@FUZZ
@given(st.integers(2, 20), number_strings)
def test_every_siftr2_number_is_read_or_refused_naming_line_and_field(field, value):
    fields = SIFTR2_BODY.split(",")
    fields[field] = value
    with _workdir() as work:
        Path("s.siftr2").write_text(SIFTR2_HEAD + ",".join(fields) + "\n" + SIFTR2_FOOT)
        result = runner.invoke(app, ["import", "s.siftr2", "--no-report", "--out", "results/imp"])
        _assert_one_line_or_ok(result, "s.siftr2")
        v = value.strip(" \t")
        radix = 16 if field == 2 else 10  # the flowid is %08x (a 0x prefix is read too), the rest %u
        if radix == 16 and v[:2] in ("0x", "0X"):
            v = v[2:]
        digits = "0123456789abcdefABCDEF"[: radix + (6 if radix == 16 else 0)]
        fits = (v != "" and all(c in digits for c in v) and len(v) <= (16 if radix == 16 else 19)
                and int(v, radix) <= 2**32 - 1)
        if fits:
            assert result.exit_code == 0, result.output
        else:
            assert result.exit_code == 2 and "s.siftr2:2:" in result.stderr and f"(field {field + 1})" in result.stderr, result.stderr
        _check_tree(work, {"s.siftr2"})


def _pcap(packets: list[bytes]) -> bytes:
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 101)
    for i, p in enumerate(packets):
        out += struct.pack("<IIII", i, 0, len(p), len(p)) + p
    return out


TCP_SEG = struct.pack(">HHIIBBHHH", 40000, 5201, 1000, 1, 0x50, 0x18, 65535, 0, 0) + b"\xab" * 64


def _ipv4(ihl: int, opts: bytes, total: int) -> bytes:
    return struct.pack(">BBHHHBBH4s4s", 0x40 | ihl, 0, total, 0, 0x4000, 64, 6, 0, bytes([10, 0, 0, 1]),
                       bytes([10, 0, 0, 2])) + opts + TCP_SEG


#: An IPv4 header of any length: options of exactly the bytes it announces (any content), or
#: none at all (the header length raised over the TCP header and payload).
ipv4_packets = st.integers(0, 15).flatmap(lambda ihl: st.builds(
    _ipv4, st.just(ihl), st.one_of(st.just(b""), st.binary(min_size=max(0, 4 * ihl - 20), max_size=max(0, 4 * ihl - 20))),
    st.one_of(st.just(4 * ihl + len(TCP_SEG)), st.integers(0, 2**16 - 1))))


def _ipv6(headers: list[tuple[int, int]], plen: int | None) -> bytes:
    """IPv6 with the extension headers (type, length byte) chained to TCP; `plen` None: right."""
    chain = b""
    for k, (kind, n) in enumerate(headers):
        nxt = headers[k + 1][0] if k + 1 < len(headers) else 6
        chain += bytes([nxt, 0, 0, 0, 0, 0, 0, 9]) if kind == 44 else bytes([nxt, n]) + bytes(8 * (1 + n) - 2)
    first = headers[0][0] if headers else 6
    plen = len(chain) + len(TCP_SEG) if plen is None else plen
    return struct.pack(">IHBB16s16s", 0x60000000, plen, first, 64, bytes(15) + b"\x01", bytes(15) + b"\x02") + chain + TCP_SEG


ipv6_packets = st.builds(_ipv6, st.lists(st.tuples(st.sampled_from([0, 43, 44, 60]), st.integers(0, 4)), max_size=5),
                         st.one_of(st.none(), st.integers(0, 2**16 - 1)))


@FUZZ
@given(st.one_of(ipv4_packets, ipv6_packets))
def test_any_ip_header_gives_the_true_flow_or_is_refused_never_one_read_from_the_payload(packet):
    with _workdir() as work:
        Path("c.pcap").write_bytes(_pcap([packet]))
        result = runner.invoke(app, ["import", "c.pcap", "--no-report", "--out", "results/imp"])
        _assert_one_line_or_ok(result, "c.pcap")
        if result.exit_code == 0:
            flows = [f["flow"] for f in json.loads((work / "results/imp/summary.json").read_text())["flows"]]
            assert flows in (["10.0.0.1:40000->10.0.0.2:5201"], ["[::1]:40000->[::2]:5201"]), flows
        else:
            assert "packet 1 (byte offset 24)" in result.stderr or "no TCP flow found" in result.stderr, result.stderr
        _check_tree(work, {"c.pcap"})


@FUZZ
@given(st.sampled_from(["siftr", "siftr2", "siftr2-plot", "tcp_probe", "iperf3-json", "iperf3-text", "pcap"]),
       st.binary(max_size=4000))
def test_noise_in_any_format_is_no_run_even_lenient(fmt, noise):
    with _workdir() as work:
        Path("noise").write_bytes(noise)
        result = runner.invoke(app, ["import", "noise", "--format", fmt, "--lenient", "--no-report", "--out", "results/imp"])
        _assert_one_line_or_ok(result, "noise")
        assert result.exit_code == 2, (fmt, noise[:80], result.output)
        _check_tree(work, {"noise"})


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

"""Property tests of issue 31's surfaces: the analysis commands over results folders whose tables
are truncated or have bytes changed (each command either prints and writes exactly what it does
on the intact folder, or exits 2 in one line naming the damaged file: never changed values), and
every writing command's --out over generated paths (symlinks, files, long names, unwritable
parents, inputs): one line and nothing touched, or a complete output where it was asked for.

The example count is test_fuzz.py's (TCPLAB_FUZZ_EXAMPLES, default 150) divided by FUZZ_SHARE;
by hand, e.g. TCPLAB_FUZZ_EXAMPLES=2000 FUZZ_SHARE=1 .venv/bin/python -m pytest tests/test_fuzz_outputs.py
(FUZZ_SEED=n: another sequence of examples, to split a long run over processes).
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

from hypothesis import given, seed, settings, strategies as st
from typer.testing import CliRunner

from conftest import tcplab
from test_fuzz import FUZZ, _finished_run, _workdir
from tcplab.cli import app

SHARE = int(os.environ.get("FUZZ_SHARE", "3"))
#: FUZZ_SEED=n: examples from seed n instead of the fixed sequence (a long run split over processes).
SEED = os.environ.get("FUZZ_SEED")
SOME = settings(FUZZ, max_examples=max(10, FUZZ.max_examples // SHARE), derandomize=SEED is None)
reseed = seed(int(SEED)) if SEED else (lambda f: f)
runner = CliRunner()

TABLES = ["flows.parquet", "intervals.parquet", "events.parquet", "ports.parquet", "queues.parquet", "sends.parquet",
          "summary.parquet"]
READERS = {
    "show": ["show", "R"],
    "recovery": ["recovery", "R"],
    "compare": ["compare", "R", "G"],
    "compare-base": ["compare", "G", "R", "--out", "out/cmp"],
    "export": ["export", "R", "--to", "siftr2", "--to", "tcp_probe", "--to", "iperf3-json", "--out", "out/exp"],
    "plot": ["plot", "R", "--what", "cwnd", "--what", "queue", "--out", "out/plots"],
}


def _outputs(work: Path) -> dict[str, bytes]:
    out = work / "out"
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()} \
        if out.is_dir() else {}


def _invoke_in_copy(args: list[str], damage=None):
    """The command in a fresh folder holding the run as R (damaged by `damage`) and G (intact)."""
    with _workdir() as work:
        shutil.copytree(_finished_run(), work / "R")
        shutil.copytree(_finished_run(), work / "G")
        (work / "out").mkdir()
        if damage:
            damage(work / "R")
        result = runner.invoke(app, args)
        return result, _outputs(work), sorted(p.name for p in work.rglob(".*"))


_baseline: dict[str, tuple] = {}


def _intact(command: str):
    if command not in _baseline:
        result, files, _ = _invoke_in_copy(READERS[command])
        assert result.exit_code == 0, result.output
        _baseline[command] = (result.stdout, files)
    return _baseline[command]


def _damage(member: str, how: str, seed: int):
    def apply(run: Path) -> None:
        p = run / member
        data = bytearray(p.read_bytes())
        rnd = random.Random(seed)
        if how == "truncate":
            data = data[: rnd.randrange(len(data))]
        elif how == "flip":
            for _ in range(rnd.randint(1, 16)):
                data[rnd.randrange(len(data))] ^= rnd.randrange(1, 256)
        else:  # 64 contiguous bytes, anywhere
            at = rnd.randrange(max(1, len(data) - 64))
            for i in range(at, min(len(data), at + 64)):
                data[i] ^= 0xFF
        p.write_bytes(bytes(data))

    return apply


@reseed
@SOME
@given(st.sampled_from(TABLES), st.sampled_from(["truncate", "flip", "flip64"]), st.integers(0, 2**32),
       st.sampled_from(sorted(READERS)))
def test_damaged_tables_are_refused_naming_the_file_or_change_nothing(member, how, seed, command):
    stdout, files = _intact(command)
    result, got, hidden = _invoke_in_copy(READERS[command], _damage(member, how, seed))
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert hidden == [], hidden  # no .partial-, .old- or .lock left
    if result.exit_code == 0:
        # Damage the command did not read (another table, or bytes no reader uses): all as intact.
        assert result.stdout == stdout and got == files, (member, how, seed)
    else:
        assert result.exit_code == 2, result.output
        lines = [l for l in result.stderr.splitlines() if l.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: ") and member in lines[0], result.stderr
        assert got == {}, sorted(got)  # nothing half-written


# ---------------------------------------------------------------------------------------------
# --out over generated paths.

WRITERS = {
    "run": (["run", "s.toml", "--no-report", "--no-intervals"], "summary.json"),
    "import": (["import", "log.json", "--no-report"], "summary.json"),
    "export": (["export", "A", "--to", "iperf3-json"], "iperf3-1.json"),
    "compare": (["compare", "A", "B"], "compare.json"),
    "plot-file": (["plot", "A", "--what", "tseq", "--flow", "s1"], None),
    "plot-folder": (["plot", "A", "--what", "cwnd"], "cwnd.png"),
}
PLACES = ["new", "missing/parents/new", "empty", "full", "run", "cmp", "file", "chart.png", "link-to-run",
          "link-to-full", "link-to-empty", "link-to-file", "dangling", "loop", "file/under", "A", "A/..", ".",
          "/sys/tcplab-fuzz/x", "/proc/tcplab-fuzz"]
names = st.one_of(st.sampled_from(PLACES), st.integers(200, 320).map(lambda n: "n" * n),
                  st.text(st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",)), min_size=1,
                          max_size=40))


def _log() -> Path:
    """The finished run exported as iperf3 -J (one flow): an import's input."""
    log = _finished_run().parent / "log.json"
    if not log.is_file():
        tcplab("export", str(_finished_run()), "--to", "iperf3-json", "--out", str(log.parent / "exp"), check=True)
        shutil.copy(log.parent / "exp" / "iperf3-1.json", log)
    return log


def _scene(work: Path) -> None:
    """The inputs (A, B, s.toml, log.json) and every kind of place an --out can name."""
    shutil.copytree(_finished_run(), work / "A")
    shutil.copytree(_finished_run(), work / "B")
    shutil.copytree(_finished_run(), work / "run")
    (work / "s.toml").write_text((_finished_run().parent / "s.toml").read_text())
    shutil.copy(_log(), work / "log.json")
    (work / "empty").mkdir()
    (work / "full").mkdir()
    (work / "full" / "thesis.tex").write_text("years of work")
    (work / "cmp").mkdir()
    (work / "cmp" / "compare.json").write_text("{}")
    (work / "file").write_text("a file")
    (work / "chart.png").write_bytes(b"\x89PNG")
    for link, to in [("link-to-run", "run"), ("link-to-full", "full"), ("link-to-empty", "empty"),
                     ("link-to-file", "file"), ("dangling", "nowhere"), ("loop", "loop")]:
        os.symlink(to, work / link)


def _snapshot(work: Path) -> dict[str, bytes | str | None]:
    out = {}
    for p in sorted(work.rglob("*")):
        rel = p.relative_to(work).as_posix()
        out[rel] = os.readlink(p) if p.is_symlink() else p.read_bytes() if p.is_file() else None
    return out


@reseed
@SOME
@given(st.sampled_from(sorted(WRITERS)), names, st.booleans())
def test_out_anywhere_is_written_completely_or_refused_in_one_line_touching_nothing(command, place, force):
    args, marker = WRITERS[command]
    if command == "plot-file":
        place = place if place.endswith(".png") else place + ".png"
    if command == "plot-folder" and place.lower().endswith((".png", ".svg", ".pdf")):
        marker = None  # a chart's file name: one chart, written as that file
    with _workdir() as work:
        _scene(work)
        before = _snapshot(work)
        target = Path(os.path.realpath(place if place.startswith("/") else work / place))
        try:
            existed = target.exists() and (target.is_file() or any(target.iterdir()))
        except OSError:  # a name the file system cannot hold
            existed = False
        result = runner.invoke(app, [*args, "--out", place] + (["--force"] if force else []))
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
        after = _snapshot(work)
        assert not [p for p in after if ".partial-" in p or ".old-" in p or p.endswith(".lock")], sorted(after)
        inputs = [a for a in args if a in ("A", "B")]  # never written; another run, with --force, may be
        for precious in ["full/thesis.tex", "file", "s.toml", "log.json", *[p for p in before if p.split("/")[0] in inputs]]:
            assert after.get(precious) == before[precious], precious
        if result.exit_code == 2:
            lines = [l for l in result.stderr.splitlines() if l.strip()]
            assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
            assert after == before, sorted(set(after) ^ set(before))
            return
        assert result.exit_code == 0, result.output
        assert not existed or force, f"{place} existed and was written without --force"
        assert target.is_file() if marker is None else (target / marker).is_file(), sorted(after)

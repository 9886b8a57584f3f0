"""Issue 31's rows 1, 5, 6, 15 and 17, as a new user met them: where a command writes (--out) is
checked before any work by one guard (outdir.py), locked against a second writer, replaced only
when it is tcplab's own, and what killed writers leave is swept; interrupts exit 130."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import SHORT_SPEC, tcplab
from tcplab.cli import app

SHORT = SHORT_SPEC
#: Long enough (tens of seconds) to be caught midway; refused or interrupted long before its end.
LONG = SHORT.replace('time = "300ms"', 'time = "120s"').replace("loss = 0.001", "").replace('"50Mbit"', '"1Gbit"') \
    .replace('"100Mbit"', '"2Gbit"').replace('"60p"', '"600p"')

runner = CliRunner()


def _one_error_line(result, *parts: str, code: int = 2) -> str:
    assert result.exit_code == code, (result.exit_code, result.output)
    lines = [l for l in result.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for p in parts:
        assert p in lines[0], lines[0]
    return lines[0]


def _tree(root: Path) -> dict[str, bytes | None]:
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() and not p.is_symlink() else None)
            for p in sorted(root.rglob("*"))}


@pytest.fixture
def work(tmp_path, finished, monkeypatch) -> Path:
    """A folder with spec.toml, a finished run A and a copy B; the current directory."""
    (tmp_path / "s.toml").write_text(SHORT)
    shutil.copytree(finished, tmp_path / "A")
    shutil.copytree(finished, tmp_path / "B")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def no_work(monkeypatch):
    """Any simulation, import, export or chart is a test failure: a refusal must come first."""
    import tcplab.api
    import tcplab.report.figure
    import tcplab.import_export

    def forbidden(*a, **k):
        raise AssertionError("the command started its work before refusing its --out")

    for mod, name in [(tcplab.api, "run"), (tcplab.api, "peers"), (tcplab.api, "compare"), (tcplab.import_export, "import_logs"),
                      (tcplab.import_export, "export_run"), (tcplab.report.figure, "plot_run")]:
        monkeypatch.setattr(mod, name, forbidden)


# Row 1 ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("force", [[], ["--force"]])
@pytest.mark.parametrize("target", ["A", "B", "C"])
def test_compare_never_writes_over_a_results_folder(work, force, target, no_work):
    if target == "C":
        shutil.copytree(work / "A", work / "C")  # a run that is not an input
    before = _tree(work)
    result = runner.invoke(app, ["compare", "A", "B", "--out", target, *force])
    why = "an input of this command" if target != "C" else ("already exists" if not force else "not a tcplab compare folder")
    _one_error_line(result, target, why)
    assert _tree(work) == before


def test_compare_writes_a_new_folder_and_replaces_only_its_own_with_force(work):
    assert runner.invoke(app, ["compare", "A", "B", "--out", "cmp"]).exit_code == 0
    assert (work / "cmp" / "compare.json").is_file()
    _one_error_line(runner.invoke(app, ["compare", "A", "B", "--out", "cmp"]), "cmp", "already exists")
    assert runner.invoke(app, ["compare", "A", "B", "--out", "cmp", "--force"]).exit_code == 0
    assert sorted(p.name for p in work.iterdir() if p.name.startswith(".")) == []


# Row 5 ----------------------------------------------------------------------------------------

def test_force_through_a_symlink_replaces_the_run_it_points_to(work):
    os.symlink("A", work / "latest")
    result = runner.invoke(app, ["run", "s.toml", "--out", "latest", "--force", "--no-report", "--no-intervals"])
    assert result.exit_code == 0, result.output
    assert (work / "latest").is_symlink() and os.readlink(work / "latest") == "A"
    assert (work / "A" / "summary.json").is_file()
    assert [p.name for p in work.iterdir() if p.name.startswith(".")] == []  # no .A.old-PID, no lock


@pytest.mark.parametrize("command", [["run", "s.toml"], ["import", "log.json"], ["export", "A", "--to", "iperf3-json"],
                                     ["compare", "A", "B"], ["plot", "A", "--what", "tseq", "--flow", "s1"],
                                     ["peers", "s.toml"]])
@pytest.mark.parametrize("case", ["dangling-symlink", "300-characters", "parent-is-a-file", "unwritable-parent",
                                  "symlink-loop"])
def test_an_out_that_cannot_be_written_is_refused_before_any_work(work, command, case, no_work):
    (work / "log.json").write_text("{}")
    (work / "file").write_text("not a folder")
    out, shown = {
        "dangling-symlink": ("dangling", "symbolic link to nowhere, which does not exist"),
        "300-characters": ("x" * 300, "a name of 300 characters"),
        "parent-is-a-file": ("file/x", "file is a file, not a folder"),
        "unwritable-parent": ("/sys/tcplab-out/x", "cannot write /sys/tcplab-out/x"),
        "symlink-loop": ("loop", "loop is a symbolic link to loop"),
    }[case]
    os.symlink("nowhere", work / "dangling")
    os.symlink("loop", work / "loop")
    before = _tree(work)
    _one_error_line(runner.invoke(app, [*command, "--out", out]), shown)
    assert _tree(work) == before


# Row 6 and row 15 -----------------------------------------------------------------------------

def _start(args: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tcplab.cli", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={"PATH": "/usr/bin:/bin", "HOME": str(cwd)},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _wait_for(pattern: str, where: Path, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while not list(where.glob(pattern)):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_second_writer_is_refused_at_once_and_an_interrupt_exits_130_leaving_nothing(tmp_path, sig):
    (tmp_path / "long.toml").write_text(LONG)
    first = _start(["run", "long.toml", "--out", "c", "--no-report"], tmp_path)
    try:
        _wait_for(".c.partial-*", tmp_path, first)
        second = tcplab("run", "long.toml", "--out", "c", "--no-report", cwd=tmp_path)
        assert second.returncode == 2 and first.poll() is None, second.stderr
        lines = [l for l in second.stderr.splitlines() if l.strip()]
        assert lines == [f"error: {tmp_path / 'c'}: another tcplab process is writing it (it holds "
                         f"{tmp_path / '.c.lock'}); wait for it or choose another --out"]
        first.send_signal(sig)
        _, err = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 130, err
    assert [l for l in err.splitlines() if l.strip()] == ["error: interrupted; nothing was kept"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.toml"]


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_what_killed_runs_left_is_swept_at_the_next_write_into_the_folder(work):
    pid = _dead_pid()
    (work / f".gone.partial-{pid}").mkdir()
    (work / f".gone.partial-{pid}" / "flows.parquet").write_bytes(b"half")
    shutil.copytree(work / "A", work / f".prev.old-{pid}")  # killed between its two renames
    (work / f".gone.lock").write_text(f"{pid}\n")
    (work / f".mine.partial-{os.getpid()}").mkdir()  # a live writer's: kept
    result = runner.invoke(app, ["run", "s.toml", "--out", "new", "--no-report", "--no-intervals"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in work.iterdir() if p.name.startswith(".")) == [f".mine.partial-{os.getpid()}"]
    assert (work / "prev" / "summary.json").read_bytes() == (work / "A" / "summary.json").read_bytes()


def test_sigkill_midway_then_the_next_run_sweeps_the_partial_folder(tmp_path):
    (tmp_path / "long.toml").write_text(LONG)
    (tmp_path / "s.toml").write_text(SHORT)
    proc = _start(["run", "long.toml", "--out", "k", "--no-report"], tmp_path)
    _wait_for(".k.partial-*", tmp_path, proc)
    proc.kill()
    proc.communicate()
    assert list(tmp_path.glob(".k.partial-*"))
    tcplab("run", "s.toml", "--out", "other", "--no-report", cwd=tmp_path, check=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.toml", "other", "s.toml"]


# Row 17 ---------------------------------------------------------------------------------------

def test_sweep_out_an_existing_run_is_refused(work, monkeypatch):
    import tcplab.sweeps

    monkeypatch.setattr(tcplab.sweeps, "execute", lambda *a, **k: pytest.fail("the sweep ran"))
    before = _tree(work)
    result = runner.invoke(app, ["sweep", "T5", "--duration", "1s", "--out", "A", "--no-report"])
    _one_error_line(result, "A exists and is not a sweep folder")
    assert _tree(work) == before


def test_the_lock_and_leftover_files_are_named_after_the_target_only(tmp_path):
    from tcplab.outdir import Claim, OutDirError, check

    real = check(tmp_path / "x", force=False)
    claim = Claim.take(real)
    assert (tmp_path / ".x.lock").read_text() == f"{os.getpid()}\n"
    again = Claim.take(real)  # the CLI claims, then the writer: one lock, held until both let go
    again.release()
    assert (tmp_path / ".x.lock").exists()
    claim.release()
    assert not (tmp_path / ".x.lock").exists()
    with pytest.raises(OutDirError, match="an empty path"):
        check("", force=False)


def test_a_killed_plots_partial_chart_is_swept_and_the_charts_redrawn(work):
    pid = _dead_pid()
    (work / "A" / "plots").mkdir()
    (work / "A" / "plots" / f".cwnd.partial-{pid}.png").write_bytes(b"\x89PNG half")
    result = runner.invoke(app, ["plot", "A", "--what", "cwnd"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (work / "A" / "plots").iterdir()) == ["cwnd.png", "cwnd.svg"]
    assert [p.name for p in (work / "A").iterdir() if p.name.startswith(".")] == []


def test_the_python_api_sweep_refuses_an_existing_run_too(work):
    import tcplab
    from tcplab.outdir import OutDirError

    before = _tree(work)
    with pytest.raises(OutDirError, match="A exists and is not a sweep folder"):
        tcplab.sweep("T5", duration="1s", out=work / "A", jobs=1, report=False)
    assert _tree(work) == before


def test_a_new_commands_kind_is_marked_by_its_own_json(work):
    from tcplab.outdir import OutDirError, check

    (work / "cal").mkdir()
    (work / "cal" / "calibrate.json").write_text("{}")
    assert check(work / "cal", force=True, kind="calibrate") == (work / "cal").resolve()
    with pytest.raises(OutDirError, match="A is not a tcplab calibrate folder; --force replaces only those"):
        check(work / "A", force=True, kind="calibrate")
    with pytest.raises(OutDirError, match="cal is not a tcplab results folder"):
        check(work / "cal", force=True, kind="run")


def test_a_folder_this_user_cannot_read_on_the_way_is_one_line(tmp_path):
    """As another user (the suite runs as root, which reads everything): in a child process."""
    (tmp_path / "locked" / "inner").mkdir(parents=True)
    (tmp_path / "locked").chmod(0)
    code = ("import os\nfrom tcplab.outdir import OutDirError, check\nos.setgid(65534)\nos.setuid(65534)\n"
            f"try:\n    check({str(tmp_path / 'locked' / 'inner' / 'x')!r}, force=False)\n"
            "except OutDirError as e:\n    print(e)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    (tmp_path / "locked").chmod(0o755)
    assert proc.stdout == f"cannot write {tmp_path}/locked/inner/x: Permission denied ({tmp_path}/locked/inner/x)\n", \
        proc.stderr


def test_an_import_into_a_folder_named_with_a_quote(work):
    """Found by the 2000-example fuzzing: the import's summary read its tables with SQL built from
    the folder's path, and a quote in --out ended the SQL string."""
    (work / "exp").mkdir()
    result = runner.invoke(app, ["export", "A", "--to", "iperf3-json", "--out", "exp/e"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["import", "exp/e/iperf3-1.json", "--out", "it's", "--no-report"])
    assert result.exit_code == 0, result.output
    assert (work / "it's" / "summary.json").is_file()

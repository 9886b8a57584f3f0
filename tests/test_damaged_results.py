"""Issue 31 rows 7, 10 and 13: errors printed literally (no markup, no emoji); a missing table named;
damaged tables detected by their page checksums instead of giving changed values; and the real
cause of an analysis command's failure, with its file, instead of "damaged or incomplete results"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from conftest import SMALL_SPEC, tcplab
from tcplab.cli import app

SHORT = SMALL_SPEC.replace('time = "3s"', 'time = "300ms"').replace('start = "500ms"', 'start = "0s"')
runner = CliRunner()


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("finished")
    (d / "s.toml").write_text(SHORT.replace("[senders.s1]", "[trace]\nsends = true\n\n[senders.s1]"))
    tcplab("run", str(d / "s.toml"), "--out", str(d / "run"), "--no-report", "--no-intervals", check=True)
    return d / "run"


@pytest.fixture
def run(tmp_path, finished, monkeypatch) -> Path:
    shutil.copytree(finished, tmp_path / "R")
    shutil.copytree(finished, tmp_path / "G")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "R"


def _one_error_line(result, *parts: str) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = [l for l in result.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for p in parts:
        assert p in lines[0], lines[0]
    return lines[0]


# Row 7 ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["s_bad100.siftr2:100:", "x:1234:", ":fire:", "[red]x[/]", "[bold]"])
def test_errors_and_paths_are_printed_literally(tmp_path, monkeypatch, text):
    monkeypatch.chdir(tmp_path)
    _one_error_line(runner.invoke(app, ["run", f"{text}.toml"]), f"error: {text}.toml: no such spec file")
    _one_error_line(runner.invoke(app, ["import", text]), f"{text}: ")
    (tmp_path / "s.toml").write_text(SHORT)
    (tmp_path / "d").mkdir()
    result = runner.invoke(app, ["run", "s.toml", "--out", f"d/{text}", "--no-report", "--no-intervals"])
    assert result.exit_code == 0, result.output
    assert f"results: d/{text}\n" in result.stdout


# Row 10 ---------------------------------------------------------------------------------------

def test_every_table_is_written_with_page_checksums(run):
    from tcplab.store import DamagedResults, read_arrow

    tables = sorted(run.glob("*.parquet"))
    assert {p.stem for p in tables} >= {"flows", "intervals", "events", "sends", "queues", "ports", "summary"}
    for p in tables:
        assert read_arrow(p).num_rows > 0
        meta = pq.ParquetFile(p).metadata.row_group(0).column(0)
        start = meta.dictionary_page_offset or meta.data_page_offset
        data = bytearray(p.read_bytes())
        for i in range(start + 30, start + 38):  # past the first page's header, inside its values
            data[i] ^= 0xFF
        p.write_bytes(bytes(data))
        with pytest.raises(DamagedResults, match="CRC checksum verification failed"):
            read_arrow(p)


def test_export_without_its_table_names_it(run):
    (run / "intervals.parquet").unlink()
    _one_error_line(runner.invoke(app, ["export", "R", "--to", "iperf3-json"]), "R/intervals.parquet: missing")
    assert not (run / "export").exists()


def _flip(path: Path, n: int = 64) -> None:
    data = bytearray(path.read_bytes())
    for i in range(len(data) // 2, len(data) // 2 + n):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("command", [["show", "R"], ["recovery", "R"], ["compare", "R", "G"], ["compare", "G", "R"],
                                     ["export", "R", "--to", "siftr2", "--to", "tcp_probe", "--to", "iperf3-json"],
                                     ["plot", "R", "--what", "cwnd"]])
def test_64_flipped_bytes_in_flows_parquet_are_detected(run, command):
    _flip(run / "flows.parquet")
    _one_error_line(runner.invoke(app, command), "R/flows.parquet: damaged")
    assert not (run / "export").exists() and not (run / "plots").exists()


# Row 13 ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("option, value", [("--from", "nan"), ("--to", "nan"), ("--from", "inf"), ("--to", "-inf"),
                                           ("--from", "1e308")])
def test_plot_window_not_a_time_is_named(run, option, value):
    line = _one_error_line(runner.invoke(app, ["plot", "R", option, value]), f"{option}: ", "is not a time in seconds")
    assert "damaged" not in line


def test_plot_out_into_a_missing_folder_makes_it_and_onto_a_file_is_refused(run, tmp_path):
    args = ["plot", "R", "--what", "tseq", "--flow", "s1"]
    result = runner.invoke(app, [*args, "--out", "new/sub/x.png"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "new" / "sub" / "x.png").stat().st_size > 0
    _one_error_line(runner.invoke(app, [*args, "--out", "new/sub/x.png"]), "new/sub/x.png already exists")
    assert runner.invoke(app, [*args, "--out", "new/sub/x.png", "--force"]).exit_code == 0
    (tmp_path / "notes.txt").write_text("mine")
    _one_error_line(runner.invoke(app, [*args, "--out", "notes.txt"]), "notes.txt is a file, not a folder")
    (tmp_path / "paper.pdf").write_text("mine")
    _one_error_line(runner.invoke(app, [*args, "--out", "paper.pdf"]), "paper.pdf already exists")
    (tmp_path / "charts").mkdir()
    (tmp_path / "charts" / "notes.txt").write_text("mine")
    _one_error_line(runner.invoke(app, ["plot", "R", "--out", "charts", "--force"]), "charts is not a tcplab folder of charts")
    _one_error_line(runner.invoke(app, [*args, "--out", "notes.txt/x.png"]), "notes.txt is a file, not a folder")
    assert (tmp_path / "notes.txt").read_text() == "mine"
    # Plotting into the run's own plots folder again redraws it.
    assert runner.invoke(app, ["plot", "R", "--what", "cwnd"]).exit_code == 0
    assert runner.invoke(app, ["plot", "R", "--what", "cwnd"]).exit_code == 0


def test_export_out_under_a_file_is_refused_naming_it(run, tmp_path):
    (tmp_path / "f").write_text("x")
    _one_error_line(runner.invoke(app, ["export", "R", "--to", "iperf3-json", "--out", "f/x"]),
                    f"cannot write f/x: {tmp_path / 'f'} is a file, not a folder")


@pytest.mark.parametrize("member", ["meta.json", "summary.json"])
@pytest.mark.parametrize("command", [["show", "R"], ["export", "R", "--to", "iperf3-json"], ["compare", "G", "R"],
                                     ["plot", "R", "--what", "cwnd"], ["recovery", "R"]])
def test_bad_json_names_its_file(run, member, command):
    (run / member).write_text("{bad")
    result = runner.invoke(app, command)
    if member == "meta.json" and command[0] != "export":
        assert result.exit_code == 0, result.output  # these commands do not read meta.json
        return
    line = _one_error_line(result, f"R/{member}: ")
    assert "JSONDecodeError" not in line and "damaged or incomplete" not in line


def test_compare_blames_the_input_not_its_own_out(run, tmp_path):
    (run / "flows.parquet").unlink()
    pq.write_table(pq.read_table(tmp_path / "G" / "ports.parquet"), run / "flows.parquet")  # a table, wrong columns
    result = runner.invoke(app, ["compare", "G", "R", "--out", "cmp"])
    line = _one_error_line(result, "R/flows.parquet: damaged, column 't_start_ns' (int64) is not one of the flows table's")
    assert "cmp" not in line and not (tmp_path / "cmp").exists()
    assert json.loads((tmp_path / "G" / "summary.json").read_text())["name"] == "small"


def test_a_column_renamed_by_a_changed_footer_byte_is_named(run):
    """Found by the 2000-example fuzzing: the footer (column names, types) has no page checksum."""
    p = run / "flows.parquet"
    data = p.read_bytes()
    footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    at = data.index(b"snd_nxt", footer)  # the schema's column name
    p.write_bytes(data[:at] + b"snd_nxu" + data[at + 7:])
    for command in (["compare", "G", "R", "--out", "cmp"], ["show", "R"], ["export", "R", "--to", "tcp_probe"]):
        _one_error_line(runner.invoke(app, command), "R/flows.parquet: damaged, column 'snd_nxu' (int64) is not one of "
                                                     "the flows table's")


def test_a_column_name_made_invalid_utf8_is_named(run):
    p = run / "flows.parquet"
    data = p.read_bytes()
    footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    at = data.index(b"snd_nxt", footer)
    p.write_bytes(data[:at] + b"snd\xff\xfext" + data[at + 7:])
    _one_error_line(runner.invoke(app, ["show", "R"]), "R/flows.parquet: damaged, cannot be read ('utf-8' codec")

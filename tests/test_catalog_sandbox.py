"""Issue 31 row 2: `tcplab query` and tcplab.query read the results root's own files and nothing
else, write nowhere, load no extension and cannot change their configuration; and row 14: a run
missing its summaries is listed by `ls` as damaged, naming the file, and `query` says it skipped it."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from tcplab.catalog import CatalogError, CatalogWarning, query
from tcplab.cli import app

runner = CliRunner()


@pytest.fixture
def root(tmp_path, finished, monkeypatch) -> Path:
    shutil.copytree(finished, tmp_path / "results" / "a")
    shutil.copytree(finished, tmp_path / "results" / "b")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "results"


def _tree(root: Path) -> dict[str, bytes | None]:
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


ATTEMPTS = [
    ("COPY (SELECT 1 AS x) TO '{tmp}/out.csv'", "COPY statements are refused"),
    ("COPY flows TO '{root}/a/summary.json' (FORMAT csv)", "COPY statements are refused"),
    ("COPY flows TO '{root}/a/flows.parquet' (USE_TMP_FILE false)", "COPY statements are refused"),
    ("ATTACH '{tmp}/new.db' AS x", "ATTACH statements are refused"),
    ("SELECT * FROM read_text('/etc/passwd')", 'Cannot access file "/etc/passwd"'),
    ("SELECT * FROM read_csv('/etc/hostname')", 'Cannot access file "/etc/hostname"'),
    ("SELECT * FROM read_json_auto('{root}/a/meta.json')", "meta.json"),
    ("SELECT * FROM glob('/etc/*')", 'Cannot access file "/etc/*"'),
    ("INSTALL httpfs", "LOAD statements are refused"),
    ("LOAD httpfs", "LOAD statements are refused"),
    ("SET enable_external_access = true", "SET statements are refused"),
    ("SELECT 1; SET threads = 1", "one SQL statement at a time, got 2"),
    ("PRAGMA enable_profiling", "PRAGMA statements are refused"),
    ("CREATE TABLE t AS SELECT 1", "CREATE statements are refused"),
    ("", "no SQL given"),
    ("   ", "no SQL given"),
]


@pytest.mark.parametrize("sql, shown", ATTEMPTS)
def test_a_query_that_reads_outside_or_writes_is_refused_in_one_line(root, tmp_path, sql, shown):
    sql = sql.format(tmp=tmp_path, root=root.resolve())
    before = _tree(tmp_path)
    result = runner.invoke(app, ["query", sql, "--root", "results"])
    assert result.exit_code == 2, result.output
    lines = [l for l in result.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: query: ") and shown in lines[0], result.stderr
    assert _tree(tmp_path) == before


@pytest.mark.parametrize("sql, shown", ATTEMPTS)
def test_the_python_api_refuses_the_same(root, tmp_path, sql, shown):
    before = _tree(tmp_path)
    with pytest.raises((CatalogError, duckdb.Error), match=shown.replace("(", r"\(").replace("*", r"\*")):
        query(sql.format(tmp=tmp_path, root=root.resolve()), root)
    assert _tree(tmp_path) == before


def test_reading_queries_still_see_every_view(root):
    df = query("SELECT run, count(*) AS n FROM flows GROUP BY run ORDER BY run", root)
    assert list(df["run"]) == ["a", "b"] and (df["n"] > 0).all()
    assert len(query("EXPLAIN SELECT * FROM runs", root))
    assert list(query("SELECT run FROM runs ORDER BY run", root)["run"]) == ["a", "b"]


@pytest.mark.parametrize("missing", ["summary.parquet", "summary.json"])
def test_a_run_missing_a_summary_is_listed_as_damaged_and_query_says_what_it_skipped(root, missing):
    (root / "a" / missing).unlink()
    result = runner.invoke(app, ["ls", "results"])
    assert result.exit_code == 0, result.output
    row = next(l for l in result.stdout.splitlines() if l.split("│")[0].strip() == "a")
    assert f"damaged: no {missing}" in row
    assert "1 run(s) under results, 1 damaged" in result.stdout
    q = runner.invoke(app, ["query", "SELECT run FROM runs ORDER BY run", "--root", "results", "--csv"])
    assert q.exit_code == 0, q.output
    if missing == "summary.parquet":  # no catalog row: left out, and said so
        assert q.stdout.split() == ["run", "b"]
        assert q.stderr.strip() == "warning: query: skipped a: no summary.parquet"
        with pytest.warns(CatalogWarning, match="skipped 1 damaged run"):
            query("SELECT 1", root)
    else:  # its catalog row is intact: included
        assert q.stdout.split() == ["run", "a", "b"] and q.stderr == ""


def test_a_damaged_catalog_row_is_listed_as_damaged_naming_the_file(root):
    p = root / "a" / "summary.parquet"
    data = bytearray(p.read_bytes())
    for i in range(len(data) // 3, len(data) // 3 + 64):
        data[i] ^= 0xFF
    p.write_bytes(bytes(data))
    result = runner.invoke(app, ["ls", "results"])
    assert result.exit_code == 0, result.output
    row = next(l for l in result.stdout.splitlines() if l.split("│")[0].strip() == "a")
    assert "damaged: summary.parquet: damaged" in row

"""The record store's pandas-free path: Arrow arrays built from buffers equal pyarrow's own, and
`tcplab run`, with its report or without, never imports pandas (its import was a sixth of T1's
run time)."""

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import REPO, SMALL_SPEC
from tcplab import arrowbuf
from tcplab.store import read_columns, read_rows, read_table


@pytest.mark.parametrize("type_,values", [
    (pa.int64(), [3, None, -7, 2**62]),
    (pa.float64(), [1.5, None, -0.0, 1e300]),
    (pa.string(), ["s1", None, "", "r\u00e9seau", "x" * 100]),
    (pa.int64(), [None] * 9),
    (pa.string(), []),
])
def test_arrays_from_buffers_equal_pyarrows_own(type_, values):
    assert arrowbuf.array(values, type_).equals(pa.array(values, type_))


def test_table_from_rows_equals_from_pylist():
    schema = pa.schema([("name", pa.string()), ("seed", pa.int64()), ("mbps", pa.float64())])
    rows = [{"name": "a", "seed": 1, "mbps": 2.5}, {"name": None, "mbps": 3}, {"seed": 4}]
    assert arrowbuf.table(rows, schema).equals(pa.Table.from_pylist(rows, schema=schema))


def test_columns_read_back_as_written(tmp_path: Path):
    flow = pa.DictionaryArray.from_arrays(arrowbuf.int32s([1, 0, 1]), arrowbuf.strings(["s1", "s2"]))
    t = pa.Table.from_arrays([arrowbuf.int64s(b"".join(v.to_bytes(8, "little", signed=True) for v in (5, -1, 2**40))), flow,
                              pa.array([1, None, 3], pa.int64())], names=["t_ns", "flow", "gaps"])
    # Two row groups, so columns come back in chunks.
    pq.write_table(t, tmp_path / "x.parquet", row_group_size=2)
    cols = read_columns(tmp_path, "x", ["t_ns", "flow", "gaps"])
    assert cols["t_ns"].tolist() == [5, -1, 2**40] and str(cols["t_ns"].dtype) == "int64"
    assert cols["flow"].tolist() == ["s2", "s1", "s2"]
    assert cols["gaps"].tolist() == [1, None, 3]
    assert read_rows(tmp_path, "x") == [{"t_ns": 5, "flow": "s2", "gaps": 1}, {"t_ns": -1, "flow": "s1", "gaps": None},
                                        {"t_ns": 2**40, "flow": "s2", "gaps": 3}]
    assert read_columns(tmp_path, "absent", ["t_ns"]) == {} and read_rows(tmp_path, "absent") == []


@pytest.mark.parametrize("report", ["--no-report", "--report"])
def test_run_does_not_import_pandas_and_sums_as_pandas_would(tmp_path: Path, report: str):
    spec = tmp_path / "small.toml"
    spec.write_text(SMALL_SPEC)
    out = tmp_path / "r"
    code = ("import runpy, sys; sys.argv = ['tcplab', 'run', sys.argv[1], '--out', sys.argv[2], sys.argv[3]];\n"
            "try: runpy.run_module('tcplab.cli', run_name='__main__')\n"
            "except SystemExit as e: assert not e.code, e.code\n"
            "print('pandas imported:', 'pandas' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code, str(spec), str(out), report], capture_output=True, text=True, cwd=REPO,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "[s1]   0.00-1.00   sec" in proc.stdout
    assert proc.stdout.strip().endswith("pandas imported: False")
    assert (out / "report.html").is_file() == (report == "--report")
    # The summary's sums, done independently with pandas over the same tables.
    summary = json.loads((out / "summary.json").read_text())
    iv = read_table(out, "intervals")
    for f in summary["flows"]:
        mine = iv[iv["flow"] == f["flow"]]
        assert f["throughput_mbps"] == round(mine["bytes"].sum() * 8 / f["duration_s"] / 1e6, 6)
    ports = read_table(out, "ports")
    b = summary["bottleneck"]
    bott = ports[ports["port"] == b["link"]]
    window_s = (bott["t_end_ns"].max() - bott["t_start_ns"].min()) / 1e9
    assert b["window_s"] == round(window_s, 6)
    assert b["utilisation"] == round(bott["tx_bytes"].sum() * 8 / (b["rate_mbps"] * 1e6 * window_s), 6)

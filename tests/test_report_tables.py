"""The report's pandas-free reading (report/columns.py, analysis.recovery.episode_list, the page's
blobs as JSON text) gives what the pandas code before it gave: the same rows, names, orders and
values, checked here against pandas itself on tables written as tcplab writes them."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from tcplab import arrowbuf
from tcplab.analysis.recovery import COLUMNS, episode_list, episodes, frame_rows
from tcplab.report import columns as C
from tcplab.report.series import Blobs, script_json
from tcplab.store import TableWriter, read_table

MSS = 1448
NAMES = [f"s{i}" for i in range(1, 13)]  # s10 sorts before s2 as a string, after it as a code


def _i64(values) -> bytes:
    return np.asarray(values, dtype="<i8").tobytes()


def _events_and_sends(tmp_path: Path) -> Path:
    """events and sends of 12 flows through store.TableWriter, in two flushes whose name lists
    differ (an import learns flows as it streams), with open and closed episodes of every kind."""
    rng = np.random.default_rng(7)
    names = NAMES[:6]
    w = TableWriter(tmp_path, names, [])
    w.FLUSH_ROWS = 1 << 30
    for batch in range(2):
        n = 400
        flow = rng.integers(0, len(names), n)
        t = np.sort(rng.integers(0, 5_000_000_000, n)) + batch * 5_000_000_000
        t[5] = t[4]  # a tie in time within the table
        ev = rng.choice([1, 2, 3, 4, 5, 6, 7], n)
        retrans = rng.integers(-1, 50, n)
        w.write({"events": {"t_ns": _i64(t), "flow": _i64(flow), "event": _i64(ev), "cwnd_bytes": _i64(rng.integers(0, 10**6, n)),
                            "ssthresh_bytes": _i64(rng.integers(-1, 10**6, n)), "flight_bytes": _i64(np.zeros(n)),
                            "outstanding_bytes": _i64(rng.integers(0, 10**6, n)), "retrans_segs": _i64(retrans)},
                 "sends": {"t_ns": _i64(np.sort(rng.integers(0, 10**10, 4 * n))), "flow": _i64(rng.integers(0, len(names), 4 * n)),
                           "seq": _i64(np.zeros(4 * n)), "bytes": _i64(rng.choice([500, MSS, 3 * MSS], 4 * n)),
                           "segments": _i64(np.ones(4 * n)), "retx": _i64(np.zeros(4 * n)), "state": _i64(np.ones(4 * n))}})
        w._flush("events")
        w._flush("sends")
        names.extend(NAMES[6:])  # the second flush knows all twelve
    w.close()
    return tmp_path


def _same(a, b) -> bool:
    return len(a) == len(b) and all(
        type(x) is type(y) and (x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y)))
        for r, s in zip(a, b) for x, y in zip(r, s))


def test_columns_read_names_as_pandas_categories_and_values_as_written(tmp_path: Path):
    run = _events_and_sends(tmp_path)
    assert pq.ParquetFile(run / "events.parquet").metadata.num_row_groups == 2
    cols = C.read(run, "events")
    df = read_table(run, "events", names_as_categories=True)
    assert cols.names["flow"] == list(df["flow"].cat.categories) == NAMES
    assert cols["flow"].tolist() == df["flow"].astype(str).tolist()
    for c in df.columns.drop("flow"):
        assert cols[c].dtype == np.int64 and (cols[c] == df[c].to_numpy()).all()
    s3 = cols.of("flow", "s3")
    assert s3["t_ns"].tolist() == df[df["flow"] == "s3"]["t_ns"].tolist()
    assert len(cols.of("flow", "nobody")) == 0 and len(C.read(run, "absent")) == 0
    assert cols.present("flow") == list(df["flow"].astype(str).unique())
    shuffled = cols.take(np.random.default_rng(1).permutation(len(cols)))
    assert (shuffled.by_time()["t_ns"] == np.sort(cols["t_ns"])).all()
    assert shuffled.sort_by("t_ns")["event"].tolist() == \
        df.iloc[shuffled.rows].sort_values("t_ns")["event"].tolist()  # pandas' quicksort ties, kept


def test_episode_list_equals_pandas_episodes_row_for_row(tmp_path: Path):
    run = _events_and_sends(tmp_path)
    mss = {n: MSS for n in NAMES}
    ev_df, sends_df = read_table(run, "events", names_as_categories=True), read_table(run, "sends", names_as_categories=True)
    want = list(episodes(ev_df, sends_df, mss).itertuples(index=False))
    got = episode_list(C.read(run, "events"), C.read(run, "sends"), mss)
    assert len(got) > 50 and {e.ended_by for e in got} >= {"end of run", "full ack", "rto", "new episode"}
    assert _same(got, want)
    assert [e.flow for e in got][:1] == ["s1"] and "s10" in {e.flow for e in got}
    # As strings (tcplab plot reads them so), s10 comes before s2.
    want_str = list(episodes(read_table(run, "events"), None, mss).itertuples(index=False))
    got_str = episode_list(C.read(run, "events"), None, mss, by_name=True)
    assert _same(got_str, want_str) and [e.flow for e in got_str] != [e.flow for e in got]


def test_frame_rows_hold_values_as_a_dataframe_does():
    full = dict.fromkeys(COLUMNS, 4)  # every row has every column, as the analyser writes them
    rows = [full | {"flow": "a", "episode": 1, "duration_s": None, "cwnd_exit_bytes": None, "retransmissions": 3,
                    "tso_sends": None, "fractional_sends": False, "largest_send_bytes": 2 * MSS, "start_s": 1.5,
                    "smallest_send_bytes": None},
            full | {"flow": "b", "episode": 2, "duration_s": 0.25, "cwnd_exit_bytes": 7, "retransmissions": None,
                    "tso_sends": True, "fractional_sends": True, "largest_send_bytes": 2, "start_s": 2,
                    "smallest_send_bytes": None}]
    want = list(pd.DataFrame(rows, columns=COLUMNS).itertuples(index=False))
    assert _same(frame_rows(rows), want)
    assert frame_rows([]) == [] and len(pd.DataFrame([], columns=COLUMNS)) == 0


def test_blobs_hold_the_pages_json_and_read_back_the_same_values():
    blobs = Blobs()
    data = {"t": [0, 1000, 250], "y": [1.5, None, 1e-3, 123456.789]}
    blobs["d0"] = data
    assert blobs.texts() == [("d0", script_json(data))] and blobs["d0"] == data
    assert script_json({"s": "</script>"}) == '{"s":"<\\/script>"}'


def test_plain_string_names_are_coded_in_sorted_order(tmp_path: Path):
    t = pa.Table.from_arrays([pa.array(["r2", "r10", "r2"]), arrowbuf.int64s(_i64([3, 1, 2]))], names=["port", "t_ns"])
    pq.write_table(t, tmp_path / "queues.parquet")
    cols = C.read(tmp_path, "queues")
    assert cols.names["port"] == ["r10", "r2"] and cols["port"].tolist() == ["r2", "r10", "r2"]
    assert cols.by_time()["port"].tolist() == ["r10", "r2", "r2"]


def _encode_values_by_objects(y, decimals):
    """The page's values as encode_values made them before it avoided object arrays."""
    y = np.asarray(y, dtype=float)
    out = (np.round(y) if decimals <= 0 else np.round(y, decimals)).astype(object)
    out[np.isnan(y)] = None
    return [None if v is None else int(v) for v in out.tolist()] if decimals <= 0 else out.tolist()


def test_encode_values_as_by_python_objects():
    from tcplab.report.series import encode_values

    rng = np.random.default_rng(1)
    for decimals in (0, 1, 3):
        for y in ([], [np.nan], [1.5, np.nan, -0.4, 2.5, -2.5, 3e20, -0.0, 2.0**53 + 2], rng.normal(0, 1e6, 1000)):
            want, got = _encode_values_by_objects(y, decimals), encode_values(y, decimals)
            assert got == want and [type(v) for v in got] == [type(v) for v in want]


def test_many_names_are_grouped_once_with_the_same_rows_as_a_scan():
    rng = np.random.default_rng(3)
    names = [f"s{i}" for i in range(40)]
    codes = rng.integers(0, 39, 5000).astype(np.int32)  # s39 has no rows
    cols = C.Columns({"flow": codes, "t_ns": np.arange(5000, dtype=np.int64)}, {"flow": names})
    scanned = cols.take(np.arange(len(cols)))  # a selection: scanned per name
    assert len(names) > C.GROUP_NAMES
    for n in names + ["nobody"]:
        assert cols.of("flow", n)["t_ns"].tolist() == scanned.of("flow", n)["t_ns"].tolist() \
            == [i for i, c in enumerate(codes) if names[c] == n]


def test_raw_json_is_placed_as_its_text_and_names_cannot_be_mistaken_for_it():
    from tcplab.report.series import RawJSON

    ov = {"t": [0, 1000], "y": [1.5, None]}
    doc = {"series": [{"ov": RawJSON(ov), "name": "\u0000x:0"}, {"ov": RawJSON({"t": [], "y": []}), "name": "</b>"}]}
    plain = {"series": [{"ov": ov, "name": "\u0000x:0"}, {"ov": {"t": [], "y": []}, "name": "</b>"}]}
    assert script_json(doc) == script_json(plain) and RawJSON(ov).value() == ov

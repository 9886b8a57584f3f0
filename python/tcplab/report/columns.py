"""A results table as the report reads it: numpy columns straight from Parquet, without pandas
(whose import alone cost the report ~0.4 s and ~40 MB; bench/README.md, issue 23). Name columns
(flow, port, probe) stay codes into their list of names, as Parquet's dictionary holds them, and
a selection of rows is kept as indices until a column is asked for, so the report holds each
table once and copies one column of one flow at a time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ..store import damage_named, open_parquet

#: What a run lacks and where it would come from, by table.
MISSING = {
    "sends": "no sends recorded: set trace.sends = true (simulator), trace.pcap = true (kernel), "
             "or import a pcap (tcpdump -s 100 at the sender) or a SIFTR2 log",
    "acks": "no ACK records (window, SACK blocks): set trace.acks = true (simulator) or import a pcap "
            "that holds the ACKs",
    "flows": "no flow samples: the run recorded no cwnd/ACK samples (trace.sample; kernel: tcp_probe)",
}

#: Above this many names a table is grouped by name once (a sort) rather than scanned per name.
GROUP_NAMES = 16


class Columns:
    """Equal-length numpy columns, optionally a selection (`rows`, indices) of them. A name
    column is an array of codes into `names[column]`."""

    def __init__(self, cols: dict[str, np.ndarray] | None = None, names: dict[str, list[str]] | None = None,
                 rows: np.ndarray | None = None):
        self.cols = cols or {}
        self.names = names or {}
        self.rows = rows
        self._n = len(rows) if rows is not None else len(next(iter(self.cols.values()))) if self.cols else 0
        self._cache: dict[tuple[str, str], Any] = {}

    def __len__(self) -> int:
        return self._n

    def __contains__(self, col: str) -> bool:
        return col in self.cols

    def __getitem__(self, col: str) -> np.ndarray:
        """A column's values for the selected rows (a name column: its names, as an object array)."""
        v = self.codes(col)
        return np.asarray(self.names[col], dtype=object)[v] if col in self.names else v

    def codes(self, col: str) -> np.ndarray:
        """A column's stored values for the selected rows (a name column: its codes)."""
        v = self.cols[col]
        return v if self.rows is None else v[self.rows]

    def take(self, idx: np.ndarray) -> "Columns":
        """The rows at positions `idx` (or where the boolean mask `idx` is true) of this selection."""
        idx = np.flatnonzero(idx) if idx.dtype == bool else idx
        return Columns(self.cols, self.names, idx if self.rows is None else self.rows[idx])

    def of(self, col: str, name: str) -> "Columns":
        """The rows whose name column `col` is `name` (none if the table never names it), in
        table order."""
        if not len(self) or name not in self.names.get(col, ()):
            return self.take(np.zeros(0, dtype=np.int64))
        code = self._code_of(col)[name]
        if self.rows is None and len(self.names[col]) > GROUP_NAMES:
            order, bounds = self._grouped(col)
            return self.take(order[bounds[code]:bounds[code + 1]])
        return self.take(self.codes(col) == code)

    def _code_of(self, col: str) -> dict[str, int]:
        """Each name's code (its first place in the list, as list.index)."""
        key = ("code", col)
        if key not in self._cache:
            self._cache[key] = {n: i for i, n in reversed(list(enumerate(self.names[col])))}
        return self._cache[key]

    def _grouped(self, col: str) -> tuple[np.ndarray, np.ndarray]:
        """The rows ordered by the name's code, each name's rows in table order (a stable sort),
        and where each code's rows start: one sort instead of a scan of the table per name."""
        key = ("grouped", col)
        if key not in self._cache:
            codes = self.cols[col]
            order = np.argsort(codes, kind="stable")
            self._cache[key] = (order, np.searchsorted(codes[order], np.arange(len(self.names[col]) + 1)))
        return self._cache[key]

    def sort_by(self, col: str, kind: str = "quicksort") -> "Columns":
        """Rows ordered by `col`: numpy's argsort of `kind`, as pandas' sort_values sorts (its
        default quicksort is not stable, so the same call keeps ties where pandas put them)."""
        return self if not len(self) else self.take(np.argsort(self.codes(col), kind=kind))

    def by_time(self, col: str = "t_ns") -> "Columns":
        """Rows in time order (records are written in time order: sorted only when they are not)."""
        if len(self) < 2:
            return self
        t = self.codes(col)
        return self if bool((t[1:] >= t[:-1]).all()) else self.sort_by(col, "stable")

    def present(self, col: str) -> list[str]:
        """The names in column `col`, in order of first appearance."""
        codes = self.codes(col)
        if not len(codes):
            return []
        _, first = np.unique(codes, return_index=True)
        return [self.names[col][c] for c in codes[np.sort(first)]]

    def records(self) -> list[dict[str, Any]]:
        """The rows as dicts of Python values (names as strings), in order."""
        values = {c: self[c].tolist() for c in self.cols}
        return [dict(zip(values, vals)) for vals in zip(*values.values())]


def _numpy(chunked: pa.ChunkedArray) -> np.ndarray:
    """A numeric column as numpy without pandas; nulls (none in tcplab's records) become NaN."""
    dtype = np.dtype(chunked.type.to_pandas_dtype())
    parts = []
    for c in chunked.chunks:
        data = np.frombuffer(c.buffers()[1], dtype=dtype, count=len(c) + c.offset)[c.offset:]
        if c.null_count:
            bits = np.frombuffer(c.buffers()[0], dtype=np.uint8)
            valid = np.unpackbits(bits, bitorder="little", count=len(c) + c.offset)[c.offset:].astype(bool)
            data = np.where(valid, data, np.nan)
        parts.append(data)
    return np.concatenate(parts) if len(parts) != 1 else parts[0]


def _column(arr: pa.ChunkedArray) -> tuple[np.ndarray, list[str] | None]:
    """One column as numpy, and for a name column its names (the column then holds codes)."""
    if pa.types.is_dictionary(arr.type):
        if not arr.num_chunks:
            return np.zeros(0, dtype=np.int32), []
        return _numpy(pa.chunked_array([c.indices for c in arr.chunks], type=arr.type.index_type)), \
            arr.chunks[0].dictionary.to_pylist()
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        # Plain strings (tables written from rows, store.write_rows): coded here, names sorted.
        values = [v for c in arr.chunks for v in c.to_pylist()]
        names = sorted(set(values))
        where = {v: i for i, v in enumerate(names)}
        return np.array([where[v] for v in values], dtype=np.int32), names
    if not arr.num_chunks:
        return np.zeros(0, dtype=np.dtype(arr.type.to_pandas_dtype())), None
    return _numpy(arr), None


def read(run_dir: Path, name: str, columns: list[str] | None = None) -> Columns:
    """`columns` (those the file has; default all) of one table; empty if the run recorded none.
    Read a column at a time: a column that comes in several chunks is joined into one array, its
    chunks freed, before the next is read."""
    path = Path(run_dir) / f"{name}.parquet"
    if not path.is_file():
        return Columns()
    cols: dict[str, np.ndarray] = {}
    names: dict[str, list[str]] = {}
    with damage_named(path):
        pf = open_parquet(path)
        have = pf.schema_arrow.names
        if not pf.metadata.num_rows:
            return Columns()
        for col in [c for c in columns if c in have] if columns else have:
            # unify_dictionaries: one list of names for the whole column, as pandas' categories.
            table = pf.read(columns=[col], use_pandas_metadata=False).unify_dictionaries()
            values, col_names = _column(table.column(0))
            cols[col] = values
            if col_names is not None:
                names[col] = col_names
            del table
    return Columns(cols, names)

"""The results folder of a run: written under a temporary name and renamed when complete, so
nothing half-written ever looks like a finished run.

Layout: spec.toml (resolved spec), summary.json, meta.json (provenance: version, git revision,
wall clock), <table>.parquet (zstd, a CRC of every page, verified by the one reader) for flows, intervals, queues, ports, events, probes (with
[[probes]]) and (if recorded) sends and acks, report.html (and plots/ after `tcplab plot`).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import tomli_w

from . import arrowbuf
from .contract import COLUMNS
from .outdir import OutDirError, guard

TABLES = tuple(COLUMNS)  # flows, intervals, queues, ports, events, sends (the record contract)
#: Tables whose integer `flow` column is replaced by the flow's name; `port` by its label.
_FLOW_TABLES = {"flows", "intervals", "events", "sends", "acks"}
_PORT_TABLES = {"queues", "ports"}


class DamagedResults(Exception):
    """A results folder whose files cannot be read as tcplab wrote them (truncated, edited,
    missing a table); the message names the file."""


class TableWriter:
    """Streams record batches from the simulator into one Parquet file per table.

    Batches are held as raw column bytes and converted and written once `FLUSH_ROWS` rows of a
    table have gathered (and at close): one Parquet write per 64 Ki rows instead of one per
    simulated second, whose fixed cost was most of a run's record writing, while what is held
    stays ~8 MB (T1: 107 MB peak RSS against 130 MB at 256 Ki rows, the same CPU time;
    bench/README.md). Only the name columns are dictionary-encoded: on the integer
    columns Parquet's dictionary costs time and makes T1's files larger (7.9 vs 5.1 MB of flows)."""

    #: Rows of one table gathered before they are written as one row group.
    FLUSH_ROWS = 1 << 16

    def __init__(self, directory: Path, flow_names: list[str], port_labels: list[str], probe_names: list[str] = ()):
        """`flow_names` is read at each write, so a caller that learns flows while it streams (an
        import) may extend it between writes; a batch's dictionary is the list as it is then."""
        self.directory = directory
        self.flow_names = flow_names
        self.port_labels = arrowbuf.strings(port_labels)
        self.probe_names = arrowbuf.strings(list(probe_names))
        self.writers: dict[str, pq.ParquetWriter] = {}
        # Per table: (number of flow names when its first batch came, {column: [bytes]}, rows).
        self.pending: dict[str, tuple[int, dict[str, list[bytes]], int]] = {}

    def _arrow(self, name: str, columns: dict[str, list[bytes]]) -> pa.Table | None:
        """The held batches as one table whose columns are chunked over the batches' own bytes
        (no copy: joining them first briefly doubled what a flush holds)."""
        flow_names = arrowbuf.strings(self.flow_names) if name in _FLOW_TABLES else None
        arrays, names = [], []
        for col, parts in columns.items():
            if flow_names is not None and col == "flow":
                names_of: pa.Array | None = flow_names
            elif name in _PORT_TABLES and col == "port":
                names_of = self.port_labels
            elif name == "probes" and col == "probe":
                names_of = self.probe_names
            else:
                names_of = None
            if names_of is None:
                chunks = [arrowbuf.int64s(raw) for raw in parts]
            else:
                chunks = [pa.DictionaryArray.from_arrays(arrowbuf.int32s(np.frombuffer(raw, dtype="<i8")), names_of)
                          for raw in parts]
            arrays.append(pa.chunked_array(chunks, type=chunks[0].type))
            names.append(col)
        if not arrays or len(arrays[0]) == 0:
            return None
        return pa.Table.from_arrays(arrays, names=names)

    def write(self, batch: dict[str, dict[str, bytes]]) -> None:
        """Append one batch {table: {column: int64 bytes}}."""
        for name, columns in batch.items():
            rows = len(next(iter(columns.values()), b"")) // 8
            if rows == 0:
                continue
            if name in self.pending and self.pending[name][0] != len(self.flow_names):
                self._flush(name)  # the flow list grew: earlier batches keep their dictionary
            n_names, cols, held = self.pending.setdefault(name, (len(self.flow_names), {c: [] for c in columns}, 0))
            for c, raw in columns.items():
                cols[c].append(raw)
            self.pending[name] = (n_names, cols, held + rows)
            if held + rows >= self.FLUSH_ROWS:
                self._flush(name)

    def _flush(self, name: str) -> None:
        _, cols, _ = self.pending.pop(name)
        table = self._arrow(name, cols)
        if table is None:
            return
        if name not in self.writers:
            self.writers[name] = pq.ParquetWriter(self.directory / f"{name}.parquet", table.schema,
                                                  use_dictionary=["flow", "port", "probe"], **PARQUET_OPTIONS)
        self.writers[name].write_table(table)

    def close(self) -> None:
        """Write what is held and close the files. A table that never received a row has no
        file; read_table() returns an empty DataFrame for it."""
        for name in list(self.pending):
            self._flush(name)
        for w in self.writers.values():
            w.close()


def write_rows(directory: Path, name: str, rows: list[dict[str, Any]], columns: list[str]) -> None:
    """One table from row dicts (backends that produce records in Python, e.g. netns): int64
    columns except `flow`, `port` and `probe`, which are strings; no file when there are no rows."""
    import pandas as pd  # loaded on use: a simulated run writes its tables without pandas

    if not rows:
        return
    df = pd.DataFrame(rows, columns=columns)
    for c in columns:
        if c not in ("flow", "port", "probe"):
            df[c] = df[c].astype("int64")
    df.to_parquet(directory / f"{name}.parquet", index=False, **PARQUET_OPTIONS)


def write_json(path: Path, data: Any) -> None:
    """Deterministic JSON: sorted keys, fixed indentation, trailing newline."""
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def read_json(path: Path) -> Any:
    """A JSON file of a results folder, or DamagedResults naming it (not a bare JSONDecodeError)."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise DamagedResults(f"{path}: damaged, cannot be read ({e})") from None


def write_toml(path: Path, data: dict[str, Any]) -> None:
    path.write_text(tomli_w.dumps(data))


class RunDir:
    """A results folder being written: everything goes to `.<name>.partial-<pid>` first, under
    the lock of outdir.guard (which checked `final` before any work)."""

    def __init__(self, final: Path, force: bool = False, kind: str = "run", inputs: tuple = ()):
        self.out = Path(final)
        self.final, self.claim = guard(self.out, force=force, kind=kind, inputs=inputs)
        self.force = force
        self.tmp = self.final.parent / f".{self.final.name}.partial-{os.getpid()}"
        try:
            if self.tmp.exists():
                shutil.rmtree(self.tmp)
            self.tmp.mkdir()
        except BaseException:
            self._release()
            raise

    def commit(self) -> Path:
        """Atomically put the finished folder in place; the path as the caller named it."""
        try:
            if self.final.exists() and self.force:
                old = self.final.parent / f".{self.final.name}.old-{os.getpid()}"
                self.final.rename(old)
                self.tmp.rename(self.final)
                shutil.rmtree(old)
            else:
                try:
                    self.tmp.rename(self.final)  # replaces an empty folder, not a full one
                except OSError as e:
                    raise OutDirError(f"{self.out}: cannot put the results in place ({e.strerror}); they were "
                                      "not kept") from None
        finally:
            self._release()
        return self.out

    def abort(self) -> None:
        """Remove the partial folder."""
        shutil.rmtree(self.tmp, ignore_errors=True)
        self._release()

    def _release(self) -> None:
        if self.claim is not None:
            self.claim.release()
            self.claim = None


#: How every table is written: zstd, with a CRC of each page so that damage is detected on read.
PARQUET_OPTIONS = {"compression": "zstd", "write_page_checksum": True}


def open_parquet(path: Path) -> pq.ParquetFile:
    """The one way a results table is opened: each page's checksum verified as it is read, so a
    damaged file fails (DamagedResults, naming it) instead of giving changed values. Read it
    inside `damage_named(path)`."""
    with damage_named(path):
        pf = pq.ParquetFile(path, page_checksum_verification=True)
        schema = pf.schema_arrow  # names decoded here: a changed byte may leave them invalid UTF-8
    _check_schema(path, schema)
    return pf


def _check_schema(path: Path, schema: pa.Schema) -> None:
    """A record table's columns are the contract's, int64 but for the names: the footer that
    describes them has no checksum, and a changed byte there renames or retypes a column."""
    known = COLUMNS.get(path.stem)
    if known is None:
        return
    for field in schema:
        names = field.name in ("flow", "port", "probe")
        t = field.type.value_type if pa.types.is_dictionary(field.type) else field.type
        ok = pa.types.is_string(t) or pa.types.is_large_string(t) if names else pa.types.is_int64(t)
        if field.name not in known or not ok:
            raise DamagedResults(f"{path}: damaged, column {field.name!r} ({field.type}) is not one of the "
                                 f"{path.stem} table's")


class damage_named:
    """Context: a table that cannot be read (truncated, bytes changed, not Parquet) becomes one
    DamagedResults naming the file."""

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, e, tb) -> bool:
        if e is not None and isinstance(e, (pa.ArrowException, OSError, EOFError, UnicodeDecodeError)):
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise DamagedResults(f"{self.path}: damaged, cannot be read ({first})") from None
        return False


def read_arrow(path: Path, columns: list[str] | None = None, pandas_metadata: bool = False) -> pa.Table:
    """A whole table (or `columns`) as Arrow, verified (open_parquet)."""
    with damage_named(path):
        return open_parquet(path).read(columns=columns, use_pandas_metadata=pandas_metadata)


def read_columns(run_dir: Path, name: str, columns: list[str]) -> dict[str, np.ndarray]:
    """`columns` of one table as numpy arrays, without pandas (`flow` and `port` as arrays of
    strings); {} if the run recorded no such table or it has no rows."""
    path = Path(run_dir) / f"{name}.parquet"
    if not path.exists():
        return {}
    table = read_arrow(path, columns)
    if table.num_rows == 0:
        return {}
    return {c: arrowbuf.column(table.column(c)) for c in columns}


def read_rows(run_dir: Path, name: str) -> list[dict[str, Any]]:
    """One table as a list of row dicts, without pandas (small tables: intervals, ports); [] if
    the run recorded none."""
    path = Path(run_dir) / f"{name}.parquet"
    if not path.exists():
        return []
    return [row for batch in read_arrow(path).to_batches() for row in batch.to_pylist()]


def read_table(run_dir: Path, name: str, columns: list[str] | None = None, names_as_categories: bool = False):
    """One table of a finished run as a pandas DataFrame (empty if the run recorded none): only
    `columns` if given; `flow` and `port` as strings, or as pandas categories (faster to filter)."""
    import pandas as pd  # loaded on use: `tcplab run` and the report read tables without pandas

    path = Path(run_dir) / f"{name}.parquet"
    if not path.exists():
        return pd.DataFrame()
    df = read_arrow(path, columns, pandas_metadata=True).to_pandas()
    for col in ("flow", "port", "probe"):
        if col in df and hasattr(df[col], "cat") and not names_as_categories:
            df[col] = df[col].astype(str)
    return df


def verify_tables(run_dir: Path) -> None:
    """Read every table of a run once, page by page, checksums verified (DamagedResults naming the
    first damaged file): for commands that print a run from a few of its tables (show,
    recovery), so a run with any damaged table is refused whichever one it is."""
    for path in sorted(Path(run_dir).glob("*.parquet")):
        with damage_named(path):
            for _ in open_parquet(path).iter_batches(batch_size=1 << 16, use_pandas_metadata=False):
                pass


def require_table(run_dir: Path, name: str, why: str) -> Path:
    """The path of a table a command needs, or DamagedResults naming it when it is missing."""
    path = Path(run_dir) / f"{name}.parquet"
    if not path.is_file():
        raise DamagedResults(f"{path}: missing ({why}); the run recorded none, or the file was removed")
    return path

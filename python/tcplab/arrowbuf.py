"""Arrow arrays built from raw buffers, and read back, without pandas: `pa.array()`,
`Table.from_pylist()` and `to_numpy()` import pandas to inspect their arguments (~0.5 s, a sixth
of what `tcplab run T1 --no-report` may take; bench/README.md, issue 23)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa


def int64s(raw: bytes | np.ndarray) -> pa.Array:
    """An int64 array over little-endian int64 bytes (the simulator's record columns), no copy."""
    buf = pa.py_buffer(raw)
    return pa.Array.from_buffers(pa.int64(), buf.size // 8, [None, buf])


def int32s(values: np.ndarray) -> pa.Array:
    """An int32 array (dictionary indices) from integers."""
    data = np.ascontiguousarray(values, dtype="<i4")
    return pa.Array.from_buffers(pa.int32(), len(data), [None, pa.py_buffer(data)])


def _validity(values: list[Any]) -> tuple[pa.Buffer | None, int]:
    valid = np.array([v is not None for v in values], dtype=bool)
    nulls = int(len(values) - valid.sum())
    return (pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None), nulls


def strings(values: list[str | None]) -> pa.Array:
    """A string array (None for null)."""
    data = [b"" if v is None else v.encode() for v in values]
    offsets = np.zeros(len(data) + 1, dtype="<i4")
    np.cumsum([len(d) for d in data], out=offsets[1:])
    validity, nulls = _validity(values)
    return pa.Array.from_buffers(pa.string(), len(data), [validity, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))],
                                 null_count=nulls)


def array(values: list[Any], type_: pa.DataType) -> pa.Array:
    """`pa.array(values, type_)` for string, int64 and float64 columns with None as null."""
    if pa.types.is_string(type_):
        return strings(values)
    dtype = {pa.int64(): "<i8", pa.float64(): "<f8"}[type_]
    data = np.array([0 if v is None else v for v in values], dtype=dtype)
    validity, nulls = _validity(values)
    return pa.Array.from_buffers(type_, len(data), [validity, pa.py_buffer(data)], null_count=nulls)


def table(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """`pa.Table.from_pylist(rows, schema=schema)` for string, int64 and float64 fields."""
    return pa.Table.from_arrays([array([r.get(f.name) for r in rows], f.type) for f in schema], schema=schema)


def column(col: pa.ChunkedArray) -> np.ndarray:
    """A column as numpy: integers and floats as they are, anything else (strings, dictionary
    strings, nulls) as an object array of Python values."""
    chunks = col.chunks
    numeric = pa.types.is_integer(col.type) or pa.types.is_floating(col.type)
    if numeric and all(c.null_count == 0 for c in chunks):
        dtype = np.dtype(col.type.to_pandas_dtype())
        parts = [np.frombuffer(c.buffers()[1], dtype=dtype, count=len(c), offset=c.offset * dtype.itemsize) for c in chunks]
        return np.concatenate(parts) if parts else np.array([], dtype=dtype)
    return np.array([v for c in chunks for v in c.to_pylist()], dtype=object)

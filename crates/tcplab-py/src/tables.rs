//! Records to Python: a table's columns as little-endian int64 bytes (numpy's "<i8").

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use tcplab_trace::records::Recorder;

/// A column as little-endian bytes (numpy's "<i8").
pub(crate) fn le_bytes(col: &[i64]) -> std::borrow::Cow<'_, [u8]> {
    if cfg!(target_endian = "little") {
        // SAFETY: i64 has no padding and any byte pattern is a valid u8; the length is exact.
        std::borrow::Cow::Borrowed(unsafe {
            std::slice::from_raw_parts(col.as_ptr().cast::<u8>(), std::mem::size_of_val(col))
        })
    } else {
        std::borrow::Cow::Owned(col.iter().flat_map(|v| v.to_le_bytes()).collect())
    }
}

/// Drain buffered records: {table: {column: little-endian int64 bytes}}.
pub(crate) fn tables_to_py<'py>(
    py: Python<'py>,
    rec: &mut Recorder,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    for table in rec.tables_mut() {
        let cols = PyDict::new(py);
        table.drain_with(|name, col| cols.set_item(name, PyBytes::new(py, &le_bytes(col))))?;
        out.set_item(table.name, cols)?;
    }
    Ok(out)
}

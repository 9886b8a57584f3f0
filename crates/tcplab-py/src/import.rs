//! Importing logs into records: `Importer` (tcplab-trace's `Import`), format detection, a log's
//! origin, one tcp_probe line.

use std::path::PathBuf;

use crate::tables::tables_to_py;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use tcplab_trace::import::{self, Import, Source};

/// Logs of one experiment being imported into records (tcplab-trace's `Import`).
#[pyclass(unsendable)]
pub(crate) struct Importer {
    inner: Import,
    current: Option<Source>,
}

pub(crate) fn parse_err(e: tcplab_trace::lines::ParseError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

#[pymethods]
impl Importer {
    #[new]
    fn new(interval_ns: i64) -> Self {
        Importer {
            inner: Import::new(interval_ns),
            current: None,
        }
    }

    /// Start reading `path` as `format`; its times are shifted by `offset_ns`.
    #[pyo3(signature = (path, format, label, mss, lenient, offset_ns))]
    fn open(
        &mut self,
        path: PathBuf,
        format: &str,
        label: &str,
        mss: u32,
        lenient: bool,
        offset_ns: i64,
    ) -> PyResult<()> {
        let mut ctx = self.inner.ctx(offset_ns);
        self.current =
            Some(Source::open(&mut ctx, &path, format, label, mss, lenient).map_err(parse_err)?);
        Ok(())
    }

    /// Read up to `budget` lines (packets) of the open log; False once it is exhausted.
    fn step(&mut self, budget: usize) -> PyResult<bool> {
        let src = self
            .current
            .as_mut()
            .ok_or_else(|| PyValueError::new_err("no log open"))?;
        let mut ctx = self.inner.ctx(src.offset_ns);
        src.step(&mut ctx, budget).map_err(parse_err)
    }

    /// Bytes of the open log read so far.
    fn position(&self) -> u64 {
        self.current.as_ref().map_or(0, Source::position)
    }

    /// Close the open log; returns what it said about itself (format, version, bad lines, notes).
    fn close<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let src = self
            .current
            .take()
            .ok_or_else(|| PyValueError::new_err("no log open"))?;
        let d = PyDict::new(py);
        d.set_item("format", src.format)?;
        d.set_item("version", &src.version)?;
        d.set_item("bad_lines", src.skipped.count)?;
        d.set_item("first_errors", src.skipped.first.clone())?;
        d.set_item("notes", src.notes.clone())?;
        let mut ctx = self.inner.ctx(src.offset_ns);
        let rows = src.finish(&mut ctx);
        self.inner.keep_derived(rows);
        Ok(d)
    }

    /// After the last log: emit derived intervals for flows no iperf3 log covered.
    fn finish(&mut self) {
        self.inner.finish();
    }

    /// Drain buffered records, as Simulation.take_tables.
    fn take_tables<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        tables_to_py(py, &mut self.inner.rec)
    }

    /// The flows found, in order: name, mss, cc, stack, bytes_received (None where unknown).
    fn flows<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for f in &self.inner.flows.flows {
            let d = PyDict::new(py);
            d.set_item("name", &f.name)?;
            d.set_item("mss", f.mss)?;
            d.set_item("cc", &f.cc)?;
            d.set_item("stack", &f.stack)?;
            d.set_item("bytes_received", f.bytes_received)?;
            list.append(d)?;
        }
        Ok(list)
    }
}

/// The format of a log from its first bytes, or None.
#[pyfunction]
pub(crate) fn detect_format(head: &[u8]) -> Option<&'static str> {
    import::detect(head)
}

/// A log's wall-clock origin in ns since the epoch, where its format records one.
#[pyfunction]
pub(crate) fn origin_ns(path: PathBuf, format: &str) -> PyResult<Option<i64>> {
    import::origin_ns(&path, format).map_err(parse_err)
}

/// One line of tcp_probe / tcp_cong_state_set ftrace text (tcplab_trace::tcp_probe::parse_line):
/// ("probe", t_ns, sport, snd_nxt, snd_una, cwnd_pkts, ssthresh_pkts, srtt_us),
/// ("state", t_ns, sport, cong_state), or None for other lines; ValueError names the line.
#[pyfunction]
pub(crate) fn parse_tcp_probe_line<'py>(
    py: Python<'py>,
    line: &str,
    lineno: u64,
) -> PyResult<Option<Bound<'py, pyo3::types::PyTuple>>> {
    use tcplab_trace::tcp_probe::{endpoint_port, parse_line, ProbeLine};
    let parsed = parse_line(lineno, line.as_bytes()).map_err(parse_err)?;
    Ok(match parsed {
        None => None,
        Some(ProbeLine::Probe {
            t_ns,
            src,
            snd_nxt,
            snd_una,
            cwnd_pkts,
            ssthresh_pkts,
            srtt_us,
            ..
        }) => {
            let sport = endpoint_port(src).unwrap_or(0);
            Some(
                (
                    "probe",
                    t_ns,
                    sport,
                    snd_nxt,
                    snd_una,
                    cwnd_pkts,
                    ssthresh_pkts,
                    srtt_us,
                )
                    .into_pyobject(py)?,
            )
        }
        Some(ProbeLine::State {
            t_ns,
            sport,
            cong_state,
            ..
        }) => Some(("state", t_ns, sport, cong_state).into_pyobject(py)?),
    })
}

/// Formats the importer reads.
#[pyfunction]
pub(crate) fn import_formats() -> Vec<&'static str> {
    import::FORMATS.to_vec()
}

//! PyO3 bindings of tcplab-sim. No logic lives here: only conversion to and from Python.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use tcplab_sim::config::SimConfig;
use tcplab_sim::sim;

/// A running simulation built from the resolved-config JSON that `tcplab.spec` produces.
#[pyclass(unsendable)]
struct Simulation {
    inner: sim::Simulation,
}

#[pymethods]
impl Simulation {
    #[new]
    fn new(config_json: &str) -> PyResult<Self> {
        let cfg = SimConfig::from_json(config_json).map_err(PyValueError::new_err)?;
        let inner = sim::Simulation::new(&cfg).map_err(PyValueError::new_err)?;
        Ok(Simulation { inner })
    }

    /// Handle every event up to simulated time `t_ns`.
    fn run_until(&mut self, t_ns: u64) {
        self.inner.run_until(t_ns);
    }

    #[getter]
    fn now_ns(&self) -> u64 {
        self.inner.now
    }

    #[getter]
    fn stop_ns(&self) -> u64 {
        self.inner.stop_ns
    }

    #[getter]
    fn events_processed(&self) -> u64 {
        self.inner.events_processed()
    }

    /// Packets created so far (data, ACKs, UDP).
    #[getter]
    fn packets_created(&self) -> u64 {
        self.inner.created
    }

    fn flows_done(&self) -> bool {
        self.inner.flows_done()
    }

    /// Drain buffered records: {table: {column: little-endian int64 bytes}}.
    fn take_tables<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for table in self.inner.rec.tables_mut() {
            let cols = PyDict::new(py);
            let names = table.columns;
            for (name, col) in names.iter().zip(table.take()) {
                let bytes: Vec<u8> = col.iter().flat_map(|v| v.to_le_bytes()).collect();
                cols.set_item(*name, PyBytes::new(py, &bytes))?;
            }
            out.set_item(table.name, cols)?;
        }
        Ok(out)
    }

    /// Totals per flow, as a list of dicts.
    fn flow_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for f in self.inner.flow_stats() {
            let d = PyDict::new(py);
            d.set_item("flow", f.name)?;
            d.set_item("cc", f.cc)?;
            d.set_item("stack", f.stack)?;
            d.set_item("start_ns", f.start_ns)?;
            d.set_item("bytes_written", f.bytes_written)?;
            d.set_item("bytes_delivered", f.bytes_delivered)?;
            d.set_item("bytes_sent", f.bytes_sent)?;
            d.set_item("retrans_segs", f.retrans_segs)?;
            d.set_item("recoveries", f.recoveries)?;
            d.set_item("rtos", f.rtos)?;
            d.set_item("completion_ns", f.completion_ns)?;
            d.set_item("cwnd_bytes", f.cwnd_bytes)?;
            d.set_item("srtt_ns", f.srtt_ns)?;
            d.set_item("min_rtt_ns", f.min_rtt_ns)?;
            list.append(d)?;
        }
        Ok(list)
    }

    /// Totals per egress port, as a list of dicts.
    fn port_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for (i, p) in self.inner.ports.iter().enumerate() {
            let (tx_bytes, tx_packets) = p.transmitted(self.inner.now);
            let d = PyDict::new(py);
            d.set_item("port", i)?;
            d.set_item("from", &self.inner.node_names[p.from as usize])?;
            d.set_item("to", &self.inner.node_names[p.to as usize])?;
            d.set_item("rate_bps", p.rate_bps)?;
            d.set_item("tx_bytes", tx_bytes)?;
            d.set_item("tx_packets", tx_packets)?;
            d.set_item("drops", p.drops)?;
            d.set_item("losses", p.losses)?;
            d.set_item("max_queue_packets", p.max_queue_packets)?;
            list.append(d)?;
        }
        Ok(list)
    }

    /// Totals per UDP source, as a list of dicts.
    fn udp_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for u in &self.inner.udp {
            let d = PyDict::new(py);
            d.set_item("name", &u.cfg.name)?;
            d.set_item("sent", u.sent)?;
            d.set_item("received", u.received)?;
            d.set_item("received_bytes", u.received_bytes)?;
            list.append(d)?;
        }
        Ok(list)
    }

    /// Turn on per-packet auditing (for invariant tests).
    fn enable_audit(&mut self) {
        self.inner.audit = Some(Default::default());
    }

    /// Raise ValueError naming the first broken invariant.
    fn check_invariants(&self) -> PyResult<()> {
        self.inner.check_invariants().map_err(PyValueError::new_err)
    }
}

/// Congestion-control algorithms the simulator knows.
#[pyfunction]
fn algorithms() -> Vec<&'static str> {
    tcplab_sim::cc::ALGORITHMS.to_vec()
}

/// Stack profiles the simulator knows.
#[pyfunction]
fn stacks() -> Vec<&'static str> {
    tcplab_sim::stack::PROFILES.to_vec()
}

/// The native module `tcplab._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Simulation>()?;
    m.add_function(wrap_pyfunction!(algorithms, m)?)?;
    m.add_function(wrap_pyfunction!(stacks, m)?)?;
    Ok(())
}

//! Running a simulation from Python: `Simulation` (build from the resolved config, run to a
//! time, drain the records, totals and checks), and the delay histogram's quantiles.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use crate::pycc;
use crate::tables::tables_to_py;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use tcplab_sim::config::SimConfig;
use tcplab_sim::sim;

/// A running simulation built from the resolved-config JSON that `tcplab.spec` produces.
#[pyclass(unsendable)]
pub(crate) struct Simulation {
    inner: sim::Simulation,
    /// The first exception a user-written algorithm raised.
    error: Rc<RefCell<Option<PyErr>>>,
}

#[pymethods]
impl Simulation {
    /// `user_cc`: {flow index: object} for flows whose cc is a user-written Python algorithm.
    #[new]
    #[pyo3(signature = (config_json, user_cc = None))]
    fn new(
        py: Python<'_>,
        config_json: &str,
        user_cc: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let cfg = SimConfig::from_json(config_json).map_err(PyValueError::new_err)?;
        let error: Rc<RefCell<Option<PyErr>>> = Rc::default();
        let mut objects: HashMap<usize, Py<PyAny>> = HashMap::new();
        if let Some(d) = user_cc {
            for (k, v) in d.iter() {
                objects.insert(k.extract()?, v.unbind());
            }
        }
        let mut made: PyResult<()> = Ok(());
        let mut external =
            |i: usize, _name: &str| -> Option<Box<dyn tcplab_sim::cc::CongestionControl>> {
                let obj = objects.remove(&i)?;
                match pycc::PyCc::new(py, obj, error.clone()) {
                    Ok(m) => Some(Box::new(m)),
                    Err(e) => {
                        made = Err(e);
                        None
                    }
                }
            };
        let inner = sim::Simulation::with_external_cc(&cfg, &mut external);
        made?;
        let inner = inner.map_err(PyValueError::new_err)?;
        Ok(Simulation { inner, error })
    }

    /// Handle every event up to simulated time `t_ns`. An exception raised by a user-written
    /// algorithm is raised here (the simulation stops being trustworthy from that point).
    fn run_until(&mut self, t_ns: u64) -> PyResult<()> {
        self.inner.run_until(t_ns);
        match self.error.borrow_mut().take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
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
        tables_to_py(py, &mut self.inner.rec)
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
            d.set_item("dup_segs_received", f.dup_segs_received)?;
            d.set_item("completion_ns", f.completion_ns)?;
            d.set_item("fct_ns", f.fct_ns)?;
            d.set_item("connect_ns", f.connect_ns)?;
            // Only with iperf3's control exchange.
            if let Some(t) = f.iperf3_ns {
                d.set_item("iperf3_ns", t)?;
            }
            if let Some(t) = f.data_syn_ns {
                d.set_item("data_syn_ns", t)?;
            }
            d.set_item("syn_retrans", f.syn_retrans)?;
            d.set_item("synack_retrans", f.synack_retrans)?;
            d.set_item("connect_failed", f.connect_failed)?;
            d.set_item("mss_bytes", f.mss_bytes)?;
            let (sack, ts, ws) = f.options;
            let o = PyDict::new(py);
            o.set_item("sack", sack)?;
            o.set_item("timestamps", ts)?;
            o.set_item("window_scaling", ws)?;
            d.set_item("options", o)?;
            d.set_item("cwnd_bytes", f.cwnd_bytes)?;
            d.set_item("srtt_ns", f.srtt_ns)?;
            d.set_item("min_rtt_ns", f.min_rtt_ns)?;
            if f.rtt_hist.n > 0 {
                let h = &f.rtt_hist;
                let q = PyDict::new(py);
                q.set_item("samples", h.n)?;
                q.set_item("p50_ns", h.quantile(0.50))?;
                q.set_item("p95_ns", h.quantile(0.95))?;
                q.set_item("p99_ns", h.quantile(0.99))?;
                d.set_item("rtt", q)?;
            }
            if let Some((ce, ece, reductions)) = f.ecn {
                d.set_item("ce_segs_received", ce)?;
                d.set_item("ece_acks", ece)?;
                d.set_item("ecn_reductions", reductions)?;
            }
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
            d.set_item("max_queue_packets", p.max_queue_packets())?;
            if let Some(h) = p.delay_hist().filter(|h| h.n > 0) {
                // Per-packet queueing delay at this (monitored) port: arrival to transmission.
                let q = PyDict::new(py);
                q.set_item("packets", h.n)?;
                q.set_item("mean_ns", h.mean_ns())?;
                q.set_item("p50_ns", h.quantile(0.50))?;
                q.set_item("p95_ns", h.quantile(0.95))?;
                q.set_item("p99_ns", h.quantile(0.99))?;
                q.set_item("max_ns", h.max_ns)?;
                d.set_item("queue_delay", q)?;
            }
            if let Some((frames, paused_ns)) = self.inner.pause_counts(i) {
                // A partner's queue that PAUSE stops is no discipline of the spec's.
                d.set_item("pause_frames", frames)?;
                d.set_item("paused_ns", paused_ns)?;
            } else if let Some(a) = p.aqm() {
                d.set_item("aqm_drops", a.stats().drops)?;
                d.set_item("ecn_marks", a.stats().ecn_marks)?;
            }
            if let Some(m) = p.impaired() {
                let c = m.counts;
                let x = PyDict::new(py);
                x.set_item("netem_lost", c.netem_lost)?;
                x.set_item("duplicated", c.duplicated)?;
                x.set_item("reordered", c.reordered)?;
                x.set_item("corrupted", c.corrupted)?;
                x.set_item("first_decisions", m.first.clone())?;
                d.set_item("impair", x)?;
            }
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

    /// Totals per latency probe, as a list of dicts: requests sent, replies received, requests
    /// or replies lost (the rest were in flight when the run ended).
    fn probe_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for p in &self.inner.probes {
            let d = PyDict::new(py);
            d.set_item("name", &p.cfg.name)?;
            d.set_item("sent", p.sent)?;
            d.set_item("answered", p.answered)?;
            d.set_item("lost", p.lost)?;
            list.append(d)?;
        }
        Ok(list)
    }

    /// CPU samples of a run measuring them ([measure] cpu), or None: {other, tcp, cc} sample
    /// counts and the sampling period (see tcplab_sim::cpu).
    fn cpu_report<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(m) = &self.inner.cpu else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        d.set_item("samples_other", m.samples[0])?;
        d.set_item("samples_tcp", m.samples[1])?;
        d.set_item("samples_cc", m.samples[2])?;
        d.set_item("sample_period_ns", tcplab_sim::cpu::SAMPLE_PERIOD_NS)?;
        Ok(Some(d))
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

/// The `qs` quantiles of `samples_ns` as the simulator's delay histogram gives them (tcplab-sim
/// hist.rs; the per-flow RTT and per-queue delay percentiles), for checks against other
/// arithmetic.
#[pyfunction]
pub(crate) fn histogram_quantiles(samples_ns: Vec<u64>, qs: Vec<f64>) -> Vec<Option<u64>> {
    let mut h = tcplab_sim::net::hist::DelayHistogram::default();
    for s in samples_ns {
        h.add(s);
    }
    qs.into_iter().map(|q| h.quantile(q)).collect()
}

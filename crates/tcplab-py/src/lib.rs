//! PyO3 bindings of tcplab-sim and tcplab-trace. No logic lives here: only conversion to and
//! from Python.

mod pycc;

use std::cell::RefCell;
use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::rc::Rc;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use tcplab_sim::config::SimConfig;
use tcplab_sim::sim;
use tcplab_trace::flows::FlowKey;
use tcplab_trace::import::{self, Import, Source};
use tcplab_trace::records::Recorder;
use tcplab_trace::write;

/// A column as little-endian bytes (numpy's "<i8").
fn le_bytes(col: &[i64]) -> std::borrow::Cow<'_, [u8]> {
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
fn tables_to_py<'py>(py: Python<'py>, rec: &mut Recorder) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    for table in rec.tables_mut() {
        let cols = PyDict::new(py);
        table.drain_with(|name, col| cols.set_item(name, PyBytes::new(py, &le_bytes(col))))?;
        out.set_item(table.name, cols)?;
    }
    Ok(out)
}

/// A running simulation built from the resolved-config JSON that `tcplab.spec` produces.
#[pyclass(unsendable)]
struct Simulation {
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
            if let Some(a) = p.aqm() {
                d.set_item("aqm_drops", a.stats().drops)?;
                d.set_item("ecn_marks", a.stats().ecn_marks)?;
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
fn histogram_quantiles(samples_ns: Vec<u64>, qs: Vec<f64>) -> Vec<Option<u64>> {
    let mut h = tcplab_sim::hist::DelayHistogram::default();
    for s in samples_ns {
        h.add(s);
    }
    qs.into_iter().map(|q| h.quantile(q)).collect()
}

/// Congestion-control algorithms the simulator knows.
#[pyfunction]
fn algorithms() -> Vec<&'static str> {
    tcplab_sim::cc::ALGORITHMS.to_vec()
}

/// The algorithms a stack offers (the Linux modules only on `linux`).
#[pyfunction]
fn algorithms_for(stack: &str) -> PyResult<Vec<&'static str>> {
    let profile = tcplab_sim::stack::profile(stack)
        .ok_or_else(|| PyValueError::new_err(format!("unknown stack {stack:?}")))?;
    Ok(tcplab_sim::cc::algorithms_for(profile.cc_family))
}

/// Stack profiles the simulator knows.
#[pyfunction]
fn stacks() -> Vec<&'static str> {
    tcplab_sim::stack::PROFILES.to_vec()
}

fn knob_value<'py>(
    py: Python<'py>,
    v: tcplab_sim::stack::KnobValue,
) -> PyResult<Bound<'py, PyAny>> {
    use tcplab_sim::stack::KnobValue;
    Ok(match v {
        KnobValue::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        KnobValue::Int(i) => i.into_pyobject(py)?.into_any(),
        KnobValue::Text(t) => t.into_pyobject(py)?.into_any(),
    })
}

/// Per stack, the knobs a flow may set: {stack: {knob: {"default": value, "allowed": [values]
/// or None (any value of the type), "doc": str}}}.
#[pyfunction]
fn stack_options(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let out = PyDict::new(py);
    for &name in tcplab_sim::stack::PROFILES {
        let knobs = PyDict::new(py);
        for k in tcplab_sim::stack::options(name).unwrap_or_default() {
            let d = PyDict::new(py);
            d.set_item("default", knob_value(py, k.default)?)?;
            if k.allowed.is_empty() {
                d.set_item("allowed", py.None())?;
            } else {
                let allowed = k
                    .allowed
                    .iter()
                    .map(|&v| knob_value(py, v))
                    .collect::<PyResult<Vec<_>>>()?;
                d.set_item("allowed", PyList::new(py, allowed)?)?;
            }
            d.set_item("doc", k.doc)?;
            if k.name == "version" {
                // Per version, the defaults it sets for other keys (stack.rs version_defaults).
                let per = PyDict::new(py);
                for v in &k.allowed {
                    let tcplab_sim::stack::KnobValue::Text(v) = *v else {
                        continue;
                    };
                    let dd = PyDict::new(py);
                    for (key, val) in tcplab_sim::stack::version_defaults(name, v) {
                        dd.set_item(key, knob_value(py, val)?)?;
                    }
                    per.set_item(v, dd)?;
                }
                d.set_item("defaults", per)?;
            }
            knobs.set_item(k.name, d)?;
        }
        out.set_item(name, knobs)?;
    }
    Ok(out)
}

/// The records' contract: {"tables": {table: [columns]}, "events": {name: code},
/// "states": {name: code}} as tcplab-trace and the simulator write them.
#[pyfunction]
fn record_contract(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    use tcplab_trace::records as r;
    let tables = PyDict::new(py);
    for (name, cols) in [
        ("flows", r::FLOW_COLUMNS),
        ("intervals", r::INTERVAL_COLUMNS),
        ("queues", r::QUEUE_COLUMNS),
        ("ports", r::PORT_COLUMNS),
        ("events", r::EVENT_COLUMNS),
        ("sends", r::SEND_COLUMNS),
        ("acks", r::ACK_COLUMNS),
        ("probes", r::PROBE_COLUMNS),
    ] {
        tables.set_item(name, cols.to_vec())?;
    }
    let events = PyDict::new(py);
    for e in tcplab_sim::tcp::sender::SenderEvent::ALL {
        events.set_item(e.name(), e.code())?;
    }
    let states = PyDict::new(py);
    use tcplab_trace::flows::{LOSS, OPEN, RECOVERY};
    for (name, code) in [("open", OPEN), ("recovery", RECOVERY), ("loss", LOSS)] {
        states.set_item(name, code)?;
    }
    let d = PyDict::new(py);
    d.set_item("tables", tables)?;
    d.set_item("events", events)?;
    d.set_item("states", states)?;
    Ok(d)
}

/// Logs of one experiment being imported into records (tcplab-trace's `Import`).
#[pyclass(unsendable)]
struct Importer {
    inner: Import,
    current: Option<Source>,
}

fn parse_err(e: tcplab_trace::lines::ParseError) -> PyErr {
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
fn detect_format(head: &[u8]) -> Option<&'static str> {
    import::detect(head)
}

/// A log's wall-clock origin in ns since the epoch, where its format records one.
#[pyfunction]
fn origin_ns(path: PathBuf, format: &str) -> PyResult<Option<i64>> {
    import::origin_ns(&path, format).map_err(parse_err)
}

fn column(cols: &Bound<'_, PyDict>, name: &str) -> PyResult<Vec<i64>> {
    let v = cols
        .get_item(name)?
        .ok_or_else(|| PyValueError::new_err(format!("column {name} missing")))?;
    let b: &[u8] = v.extract()?;
    Ok(b.chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect())
}

fn columns(cols: &Bound<'_, PyDict>, names: &[&str]) -> PyResult<Vec<Vec<i64>>> {
    names.iter().map(|n| column(cols, n)).collect()
}

fn write_flows(flows: &Bound<'_, PyList>) -> PyResult<Vec<write::WriteFlow>> {
    flows
        .iter()
        .map(|f| {
            let d = f.downcast::<PyDict>()?;
            let get = |k: &str| {
                d.get_item(k)?
                    .ok_or_else(|| PyValueError::new_err(format!("flow field {k} missing")))
            };
            Ok(write::WriteFlow {
                key: FlowKey {
                    laddr: get("laddr")?.extract()?,
                    lport: get("lport")?.extract()?,
                    faddr: get("faddr")?.extract()?,
                    fport: get("fport")?.extract()?,
                },
                stack: get("stack")?.extract()?,
                cc: get("cc")?.extract()?,
                mss: get("mss")?.extract()?,
            })
        })
        .collect()
}

fn create(path: &PathBuf) -> PyResult<BufWriter<File>> {
    File::create(path)
        .map(BufWriter::new)
        .map_err(|e| PyOSError::new_err(format!("{}: {e}", path.display())))
}

fn io_err(e: std::io::Error) -> PyErr {
    PyOSError::new_err(e.to_string())
}

/// Write a SIFTR2 log from time-ordered columns (see tcplab_trace::write::SiftrRows).
#[pyfunction]
fn write_siftr2(
    path: PathBuf,
    enable_ns: i64,
    flows: &Bound<'_, PyList>,
    cols: &Bound<'_, PyDict>,
) -> PyResult<()> {
    let c = columns(
        cols,
        &[
            "t_ns",
            "flow",
            "outbound",
            "cwnd_bytes",
            "ssthresh_bytes",
            "srtt_us",
            "rto_us",
            "flight_bytes",
            "seq",
            "ack",
            "data_bytes",
            "state",
        ],
    )?;
    let rows = write::SiftrRows {
        t_ns: &c[0],
        flow: &c[1],
        outbound: &c[2],
        cwnd_bytes: &c[3],
        ssthresh_bytes: &c[4],
        srtt_us: &c[5],
        rto_us: &c[6],
        flight_bytes: &c[7],
        seq: &c[8],
        ack: &c[9],
        data_bytes: &c[10],
        state: &c[11],
    };
    write::siftr2(&mut create(&path)?, enable_ns, &write_flows(flows)?, &rows).map_err(io_err)
}

/// Write tcp_probe ftrace text from time-ordered columns (see tcplab_trace::write::ProbeRows).
#[pyfunction]
fn write_tcp_probe(
    path: PathBuf,
    flows: &Bound<'_, PyList>,
    cols: &Bound<'_, PyDict>,
) -> PyResult<()> {
    let c = columns(
        cols,
        &[
            "t_ns",
            "flow",
            "cwnd_bytes",
            "ssthresh_bytes",
            "snd_una",
            "snd_nxt",
            "srtt_us",
            "change_t_ns",
            "change_flow",
            "change_state",
        ],
    )?;
    let rows = write::ProbeRows {
        t_ns: &c[0],
        flow: &c[1],
        cwnd_bytes: &c[2],
        ssthresh_bytes: &c[3],
        snd_una: &c[4],
        snd_nxt: &c[5],
        srtt_us: &c[6],
        change_t_ns: &c[7],
        change_flow: &c[8],
        change_state: &c[9],
    };
    write::tcp_probe(&mut create(&path)?, &write_flows(flows)?, &rows).map_err(io_err)
}

/// Write one flow's iperf3 -J document from its interval columns.
#[pyfunction]
fn write_iperf3_json(
    path: PathBuf,
    flow: &Bound<'_, PyList>,
    start_secs: i64,
    cols: &Bound<'_, PyDict>,
    bytes_received: u64,
) -> PyResult<()> {
    let c = columns(
        cols,
        &[
            "t_start_ns",
            "t_end_ns",
            "bytes",
            "retrans_segs",
            "cwnd_bytes",
            "srtt_us",
        ],
    )?;
    let rows: Vec<write::IntervalRow> = (0..c[0].len())
        .map(|i| write::IntervalRow {
            t_start_ns: c[0][i],
            t_end_ns: c[1][i],
            bytes: c[2][i],
            retrans_segs: c[3][i],
            cwnd_bytes: c[4][i],
            srtt_us: c[5][i],
        })
        .collect();
    let flows = write_flows(flow)?;
    let f = flows
        .first()
        .ok_or_else(|| PyValueError::new_err("one flow expected"))?;
    write::iperf3_json(&mut create(&path)?, f, start_secs, &rows, bytes_received).map_err(io_err)
}

/// One line of tcp_probe / tcp_cong_state_set ftrace text (tcplab_trace::tcp_probe::parse_line):
/// ("probe", t_ns, sport, snd_nxt, snd_una, cwnd_pkts, ssthresh_pkts, srtt_us),
/// ("state", t_ns, sport, cong_state), or None for other lines; ValueError names the line.
#[pyfunction]
fn parse_tcp_probe_line<'py>(
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
/// The netns backend's link emulator (tcplab-linkem), run in this process until SIGTERM/SIGINT:
/// `python -m tcplab.linkem ARGS`. Returns its exit status. Carried here so that an installed
/// wheel has every backend without a separate binary.
#[pyfunction]
fn linkem_main(py: Python<'_>, args: Vec<String>) -> i32 {
    py.allow_threads(|| tcplab_linkem::run(args))
}

#[pyfunction]
fn import_formats() -> Vec<&'static str> {
    import::FORMATS.to_vec()
}

/// The native module `tcplab._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Simulation>()?;
    m.add_class::<Importer>()?;
    m.add_class::<pycc::CcState>()?;
    m.add_function(wrap_pyfunction!(detect_format, m)?)?;
    m.add_function(wrap_pyfunction!(linkem_main, m)?)?;
    m.add_function(wrap_pyfunction!(origin_ns, m)?)?;
    m.add_function(wrap_pyfunction!(write_siftr2, m)?)?;
    m.add_function(wrap_pyfunction!(write_tcp_probe, m)?)?;
    m.add_function(wrap_pyfunction!(write_iperf3_json, m)?)?;
    m.add_function(wrap_pyfunction!(import_formats, m)?)?;
    m.add_function(wrap_pyfunction!(parse_tcp_probe_line, m)?)?;
    m.add_function(wrap_pyfunction!(algorithms, m)?)?;
    m.add_function(wrap_pyfunction!(algorithms_for, m)?)?;
    m.add_function(wrap_pyfunction!(stacks, m)?)?;
    m.add_function(wrap_pyfunction!(histogram_quantiles, m)?)?;
    m.add_function(wrap_pyfunction!(stack_options, m)?)?;
    m.add_function(wrap_pyfunction!(record_contract, m)?)?;
    Ok(())
}

//! User-written congestion control in Python: an object with FreeBSD cc(4)-named hook methods,
//! called by the simulator through the same trait as its own modules. Only conversion lives
//! here: the object reads and sets `CcState` (cwnd and ssthresh in bytes, and what the stack
//! knows); what it sets is handed back to the stack.

use std::cell::RefCell;
use std::rc::Rc;

use pyo3::prelude::*;
use tcplab_sim::cc::{newreno, AckKind, CcHooks, CcView, CongSignal, LinuxCcOps, Window};
use tcplab_sim::time::Ns;

/// What a Python algorithm sees and sets (FreeBSD `struct cc_var`): cwnd and ssthresh are its to
/// write; the rest is the stack's, read-only.
#[pyclass(unsendable)]
pub struct CcState {
    /// Congestion window, bytes (writable).
    #[pyo3(get, set)]
    pub cwnd_bytes: u64,
    /// Slow-start threshold, bytes (writable).
    #[pyo3(get, set)]
    pub ssthresh_bytes: u64,
    /// Sender MSS, bytes.
    #[pyo3(get)]
    pub mss_bytes: u64,
    /// Initial window, bytes.
    #[pyo3(get)]
    pub iw_bytes: u64,
    /// Bytes newly acknowledged by this ACK.
    #[pyo3(get)]
    pub bytes_acked: u64,
    /// Bytes in flight (RFC 6675 pipe).
    #[pyo3(get)]
    pub flight_bytes: u64,
    /// Whether sending was limited by cwnd (grow only then).
    #[pyo3(get)]
    pub cwnd_limited: bool,
    /// Whether the connection is in loss recovery.
    #[pyo3(get)]
    pub in_recovery: bool,
    /// Smoothed RTT, us (0 before the first sample).
    #[pyo3(get)]
    pub srtt_us: u64,
    /// Smallest RTT seen, us.
    #[pyo3(get)]
    pub min_rtt_us: u64,
    /// Simulated time, ns.
    #[pyo3(get)]
    pub now_ns: u64,
}

#[pymethods]
impl CcState {
    /// cwnd < ssthresh (RFC 5681 §3.1).
    #[getter]
    fn in_slow_start(&self) -> bool {
        self.cwnd_bytes < self.ssthresh_bytes
    }
}

const HOOKS: [&str; 7] = [
    "conn_init",
    "on_ack",
    "on_cong_signal",
    "post_recovery",
    "after_idle",
    "on_rtt_sample",
    "on_new_round",
];

/// A Python object as a congestion-control module.
pub struct PyCc {
    obj: Py<PyAny>,
    state: Py<CcState>,
    has: [bool; 7],
    error: Rc<RefCell<Option<PyErr>>>,
}

impl PyCc {
    /// Wrap `obj`; its first exception goes to `error`.
    pub fn new(
        py: Python<'_>,
        obj: Py<PyAny>,
        error: Rc<RefCell<Option<PyErr>>>,
    ) -> PyResult<Self> {
        let mut has = [false; 7];
        for (i, h) in HOOKS.iter().enumerate() {
            has[i] = obj.bind(py).hasattr(*h)?;
        }
        let state = Py::new(
            py,
            CcState {
                cwnd_bytes: 0,
                ssthresh_bytes: 0,
                mss_bytes: 0,
                iw_bytes: 0,
                bytes_acked: 0,
                flight_bytes: 0,
                cwnd_limited: false,
                in_recovery: false,
                srtt_us: 0,
                min_rtt_us: 0,
                now_ns: 0,
            },
        )?;
        Ok(PyCc {
            obj,
            state,
            has,
            error,
        })
    }

    /// Call hook `i` with the state and `args`; copy cwnd/ssthresh back. After an exception
    /// nothing more is called (the run ends with it).
    fn call<A>(
        &self,
        v: &CcView,
        win: &mut Window,
        i: usize,
        args: impl FnOnce(Python<'_>, &Py<CcState>) -> PyResult<A>,
    ) where
        A: for<'py> IntoPyObject<'py, Target = pyo3::types::PyTuple>,
    {
        if !self.has[i] || self.error.borrow().is_some() {
            return;
        }
        Python::with_gil(|py| {
            {
                let mut s = self.state.borrow_mut(py);
                s.cwnd_bytes = win.cwnd;
                s.ssthresh_bytes = win.ssthresh;
                s.mss_bytes = v.mss;
                s.iw_bytes = v.iw;
                s.bytes_acked = v.bytes_this_ack;
                s.flight_bytes = v.flight;
                s.cwnd_limited = v.cwnd_limited;
                s.in_recovery = v.in_recovery;
                s.srtt_us = v.srtt_ns / 1000;
                s.min_rtt_us = v.min_rtt_ns / 1000;
                s.now_ns = v.now;
            }
            let r = args(py, &self.state).and_then(|a| self.obj.call_method1(py, HOOKS[i], a));
            match r {
                Ok(_) => {
                    let s = self.state.borrow(py);
                    // A window below one segment cannot send; the stacks keep at least one.
                    win.cwnd = s.cwnd_bytes.max(v.mss);
                    win.ssthresh = s.ssthresh_bytes.max(v.mss);
                }
                Err(e) => *self.error.borrow_mut() = Some(e),
            }
        });
    }
}

impl CcHooks for PyCc {
    fn name(&self) -> &'static str {
        "python"
    }
    fn conn_init(&mut self, v: &CcView, win: &mut Window) {
        self.call(v, win, 0, |py, s| Ok((s.clone_ref(py),)));
    }
    fn ack_received(&mut self, v: &CcView, win: &mut Window, kind: AckKind) {
        self.call(v, win, 1, |py, s| {
            Ok((s.clone_ref(py), kind == AckKind::DupAck))
        });
    }
    fn cong_signal(&mut self, v: &CcView, win: &mut Window, sig: CongSignal) {
        let name = match sig {
            CongSignal::NDupAck => "loss",
            CongSignal::Rto => "rto",
            CongSignal::RtoErr => "rto_err",
            CongSignal::Ecn => "ecn",
        };
        self.call(v, win, 2, |py, s| Ok((s.clone_ref(py), name)));
    }
    fn post_recovery(&mut self, v: &CcView, win: &mut Window) {
        self.call(v, win, 3, |py, s| Ok((s.clone_ref(py),)));
    }
    fn after_idle(&mut self, v: &CcView, win: &mut Window) {
        if self.has[4] {
            self.call(v, win, 4, |py, s| Ok((s.clone_ref(py),)));
        } else {
            newreno::after_idle(v, win); // the trait's default (RFC 5681 §4.1)
        }
    }
    fn rtt_sample(&mut self, v: &CcView, win: &mut Window, rtt_ns: Ns) {
        self.call(v, win, 5, |py, s| Ok((s.clone_ref(py), rtt_ns / 1000)));
    }
    fn new_round(&mut self, v: &CcView, win: &mut Window) {
        self.call(v, win, 6, |py, s| Ok((s.clone_ref(py),)));
    }
}

impl LinuxCcOps for PyCc {}

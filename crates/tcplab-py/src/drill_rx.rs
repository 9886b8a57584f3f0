//! The receiving half and the active open of a drill endpoint (`tcplab_sim::drill_rx`,
//! `tcplab_sim::drill_open`), for `tcplab drill`'s model targets.

use pyo3::prelude::*;
use tcplab_sim::drill_open::{ActiveOpen, OpenEvent, OpenTimer};
use tcplab_sim::drill_rx::{Receiver, RxConfig};

/// `DrillReceiver(hiwat, rcv_scale, maxseg, sack, timestamps, delack_ns, rcv_nxt, syn_win)`.
#[pyclass(unsendable)]
pub struct DrillReceiver {
    inner: Receiver,
}

#[pymethods]
impl DrillReceiver {
    #[new]
    #[allow(clippy::too_many_arguments)] // the receiver's settings, field by field
    #[pyo3(signature = (hiwat, rcv_scale, maxseg, sack, timestamps, delack_ns, rcv_nxt, syn_win))]
    fn new(
        hiwat: u64,
        rcv_scale: u32,
        maxseg: u64,
        sack: bool,
        timestamps: bool,
        delack_ns: Option<u64>,
        rcv_nxt: u64,
        syn_win: u64,
    ) -> Self {
        let cfg = RxConfig {
            hiwat,
            rcv_scale,
            maxseg,
            sack,
            timestamps,
            delack_ns,
        };
        DrillReceiver {
            inner: Receiver::new(cfg, rcv_nxt, syn_win),
        }
    }

    /// A segment arrives; True when an ACK is owed at once.
    fn segment(&mut self, now_ns: u64, seq: u64, len: u64, fin: bool) -> bool {
        self.inner.on_segment(now_ns, seq, len, fin)
    }

    /// Whether an ACK is owed at `now_ns` (at once, or the delayed ACK's timer is due).
    fn ack_due(&self, now_ns: u64) -> bool {
        self.inner.ack_due(now_ns)
    }

    /// The delayed ACK's time, or None.
    fn deadline(&self) -> Option<u64> {
        self.inner.deadline()
    }

    /// A segment goes out: (ack, window field, SACK blocks).
    fn sent(&mut self) -> (u64, u32, Vec<(u64, u64)>) {
        let f = self.inner.sent();
        (f.ack, f.win, f.sacks)
    }

    /// The application reads up to `n` bytes: (bytes, whether a window update goes out).
    fn read(&mut self, n: u64, peek: bool) -> (u64, bool) {
        self.inner.read(n, peek)
    }

    /// Bytes readable, the peer's FIN received, rcv_nxt, sb_hiwat.
    fn state(&self) -> (u64, bool, u64, u64) {
        let r = &self.inner;
        (r.readable(), r.fin_rcvd(), r.rcv_nxt(), r.hiwat())
    }
}

/// `DrillOpen(now_ns, initial_ns, slop_ns, min_ns, retries, keepinit_ns)`: FreeBSD's SYN_SENT.
#[pyclass(unsendable)]
pub struct DrillOpen {
    inner: ActiveOpen,
}

#[pymethods]
impl DrillOpen {
    #[new]
    #[pyo3(signature = (now_ns, initial_ns, slop_ns, min_ns, retries, keepinit_ns))]
    fn new(
        now_ns: u64,
        initial_ns: u64,
        slop_ns: u64,
        min_ns: u64,
        retries: u32,
        keepinit_ns: u64,
    ) -> Self {
        let timer = OpenTimer::FreeBsd {
            initial_ns,
            slop_ns,
            min_ns,
            retries,
            keepinit_ns,
        };
        DrillOpen {
            inner: ActiveOpen::new(timer, now_ns),
        }
    }

    /// The next timer, or None.
    fn deadline(&self) -> Option<u64> {
        self.inner.deadline()
    }

    /// The timer due at `now_ns`: the SYN's retransmission shift, or None when connect() fails.
    fn fire(&mut self, now_ns: u64) -> Option<u32> {
        match self.inner.on_timer(now_ns) {
            OpenEvent::Resend(k) => Some(k),
            OpenEvent::GiveUp => None,
        }
    }
}

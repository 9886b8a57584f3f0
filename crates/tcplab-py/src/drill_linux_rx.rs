//! Linux's receiving half of a drill endpoint (`tcplab_sim::drill_linux_rx`), for `tcplab
//! drill`'s linux target.

use pyo3::prelude::*;
use tcplab_sim::drill_linux_rx::{AckOut, LinuxReceiver, LinuxRxConfig, Segment};

/// `DrillLinuxReceiver(rcvbuf, rcvbuf_locked, rmem_max, core_rmem_max, advmss, window_mss,
/// wscale_ok, sack, dsack, hz, phase_ns)`: the listener's or connecting socket's half.
#[pyclass(unsendable)]
pub struct DrillLinuxReceiver {
    inner: LinuxReceiver,
}

type Ack = (u64, u64, u32, Vec<(u64, u64)>);

fn row(a: AckOut) -> Ack {
    (a.t_ns, a.ack, a.win, a.sacks)
}

#[pymethods]
impl DrillLinuxReceiver {
    #[new]
    #[allow(clippy::too_many_arguments)] // the socket's receive settings, field by field
    #[pyo3(signature = (rcvbuf, rcvbuf_locked, rmem_max, core_rmem_max, advmss, window_mss, wscale_ok, sack, dsack, hz, phase_ns))]
    fn new(
        rcvbuf: u64,
        rcvbuf_locked: bool,
        rmem_max: u64,
        core_rmem_max: u64,
        advmss: u64,
        window_mss: u64,
        wscale_ok: bool,
        sack: bool,
        dsack: bool,
        hz: u64,
        phase_ns: u64,
    ) -> Self {
        let cfg = LinuxRxConfig {
            rcvbuf,
            rcvbuf_locked,
            rmem_max,
            core_rmem_max,
            advmss,
            window_mss,
            wscale_ok,
            sack,
            dsack,
            hz,
            phase_ns,
        };
        DrillLinuxReceiver {
            inner: LinuxReceiver::new(cfg),
        }
    }

    /// (window scale offered, the SYN's or SYN-ACK's window field).
    fn syn_fields(&self) -> (u32, u32) {
        (self.inner.rcv_wscale(), self.inner.syn_window())
    }

    /// The connection is set up with the peer's MSS; `peer_wscale`: both sides scale;
    /// `timestamps`: on.
    fn established(&mut self, mss_cache: u64, peer_wscale: bool, timestamps: bool) {
        self.inner.established(mss_cache, peer_wscale, timestamps);
    }

    /// accept() returned the socket.
    fn accept(&mut self) {
        self.inner.accept();
    }

    /// The sender's srtt (µs) and RTO (jiffies).
    fn set_rtt(&mut self, srtt_us: u64, rto_j: u64) {
        self.inner.set_rtt(srtt_us, rto_j);
    }

    /// A segment arrives (its data and FIN).
    #[allow(clippy::too_many_arguments)] // the segment's fields
    fn segment(
        &mut self,
        now_ns: u64,
        seq: u64,
        len: u64,
        gso_size: u64,
        truesize: u64,
        header_len: u64,
        fin: bool,
        psh: bool,
    ) {
        let s = Segment {
            seq,
            len,
            gso_size,
            truesize,
            header_len,
            fin,
            psh,
        };
        self.inner.segment(now_ns, &s);
    }

    /// __tcp_ack_snd_check() after the segment's ACK was processed.
    fn ack_check(&mut self, now_ns: u64) {
        self.inner.ack_check(now_ns);
    }

    /// tcp_send_ack() now (e.g. tcp_fin() after this end's FIN).
    fn ack_now(&mut self, now_ns: u64) {
        self.inner.send_ack(now_ns);
    }

    /// The next timer, or None.
    fn deadline(&self) -> Option<u64> {
        self.inner.deadline()
    }

    /// The timers due by `now_ns`.
    fn advance(&mut self, now_ns: u64) {
        self.inner.advance(now_ns);
    }

    /// Pure ACKs sent: (t_ns, ack, window field, SACK blocks).
    fn take_acks(&mut self) -> Vec<Ack> {
        self.inner.take_acks().into_iter().map(row).collect()
    }

    /// A data (or FIN) segment leaves at `now_ns`: its (t_ns, ack, window field, SACK blocks).
    fn data_sent(&mut self, now_ns: u64) -> Ack {
        row(self.inner.data_sent(now_ns))
    }

    /// The application reads up to `n` bytes: the bytes read.
    fn read(&mut self, now_ns: u64, n: u64, peek: bool) -> u64 {
        self.inner.read(now_ns, n, peek)
    }

    /// (bytes readable, the peer's FIN received, rcv_nxt).
    fn state(&self) -> (u64, bool, u64) {
        (
            self.inner.readable(),
            self.inner.fin_rcvd(),
            self.inner.rcv_nxt(),
        )
    }

    /// The tcp_info and SO_MEMINFO fields of the receiving half.
    fn info(&self) -> Vec<(&'static str, i64)> {
        self.inner.info()
    }
}

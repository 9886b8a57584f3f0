//! The drill endpoint (`tcplab_sim::drill`): one modelled stack endpoint that `tcplab drill`'s
//! model targets drive from a packetdrill script.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tcplab_sim::drill::{Endpoint, Host, Inbound, Peer};

/// One endpoint: `DrillEndpoint(stack, cc, mss, sack, timestamps, wscale, ecn, now_ns,
/// handshake_rtt_ns, win_bytes, hz=None)` (`hz`: the host kernel's CONFIG_HZ; None: the
/// simulator's).
#[pyclass(unsendable)]
pub struct DrillEndpoint {
    inner: Endpoint,
}

#[pymethods]
impl DrillEndpoint {
    #[new]
    #[allow(clippy::too_many_arguments)] // the handshake's outcome, field by field
    #[pyo3(signature = (stack, cc, mss, sack, timestamps, wscale, ecn, now_ns, handshake_rtt_ns, win_bytes, flow_json=None, hz=None))]
    fn new(
        stack: &str,
        cc: &str,
        mss: u32,
        sack: bool,
        timestamps: bool,
        wscale: u8,
        ecn: bool,
        now_ns: u64,
        handshake_rtt_ns: Option<u64>,
        win_bytes: u64,
        flow_json: Option<&str>,
        hz: Option<u64>,
    ) -> PyResult<Self> {
        let peer = Peer {
            mss,
            sack,
            timestamps,
            wscale,
            ecn,
        };
        let host = hz.map_or_else(Host::default, Host::with_hz);
        Endpoint::on_host(
            &host,
            stack,
            cc,
            peer,
            now_ns,
            handshake_rtt_ns,
            win_bytes,
            flow_json,
        )
        .map(|inner| DrillEndpoint { inner })
        .map_err(PyValueError::new_err)
    }

    /// The application writes `bytes` at `now_ns`.
    fn write(&mut self, now_ns: u64, bytes: u64) {
        self.inner.write(now_ns, bytes);
    }

    /// The application sends `bytes` at `now_ns` with MSG_EOR.
    fn write_eor(&mut self, now_ns: u64, bytes: u64) {
        self.inner.write_eor(now_ns, bytes);
    }

    /// send(2) of `bytes` at `now_ns` with MSG_EOR (`eor`) and MSG_MORE (`more`).
    #[pyo3(signature = (now_ns, bytes, eor=false, more=false))]
    fn send(&mut self, now_ns: u64, bytes: u64, eor: bool, more: bool) {
        self.inner.send(now_ns, bytes, eor, more);
    }

    /// setsockopt(TCP_NODELAY) at `now_ns` (the linux stack).
    fn set_nodelay(&mut self, now_ns: u64, on: bool) {
        self.inner.set_nodelay(now_ns, on);
    }

    /// The route's MTU, the peer's MSS clamp and the option bytes per segment; `probing`:
    /// tcp_mtu_probing=2 with (tcp_base_mss, tcp_probe_threshold) (the linux stack).
    #[pyo3(signature = (pmtu, mss_clamp, opt_bytes, probing=None))]
    fn set_path_mtu(
        &mut self,
        pmtu: u64,
        mss_clamp: u64,
        opt_bytes: u64,
        probing: Option<(u64, u64)>,
    ) {
        self.inner.set_path_mtu(pmtu, mss_clamp, opt_bytes, probing);
    }

    /// The route to the peer changed: its MTU is now `mtu` (seen after the next transmit).
    fn route_changed(&mut self, mtu: u64) {
        self.inner.route_changed(mtu);
    }

    /// sysctl tcp_min_tso_segs (the linux stack).
    fn set_min_tso_segs(&mut self, segs: u64) {
        self.inner.set_min_tso_segs(segs);
    }

    /// setsockopt(TCP_CORK) at `now_ns` (the linux stack).
    fn set_cork(&mut self, now_ns: u64, on: bool) {
        self.inner.set_cork(now_ns, on);
    }

    /// A non-blocking write of `bytes` at `now_ns`: the bytes the stack copied in.
    fn write_nonblocking(&mut self, now_ns: u64, bytes: u64) -> u64 {
        self.inner.write_nonblocking(now_ns, bytes)
    }

    /// An ACK arrives: cumulative `ack` (bytes from the first data byte), the raw window field,
    /// SACK blocks, ECE, the TS ecr as the send time it echoes.
    #[pyo3(signature = (now_ns, ack, win, sacks, ece, ts_ecr_ns))]
    fn segment(
        &mut self,
        now_ns: u64,
        ack: u64,
        win: u32,
        sacks: Vec<(u64, u64)>,
        ece: bool,
        ts_ecr_ns: Option<u64>,
    ) {
        self.inner.on_segment(
            now_ns,
            &Inbound {
                ack,
                win,
                sacks,
                ece,
                ts_ecr_ns,
            },
        );
    }

    /// setsockopt(TCP_USER_TIMEOUT) in ms (the linux stack).
    fn set_user_timeout(&mut self, ms: u64) {
        self.inner.set_user_timeout(ms);
    }

    /// Whether the local device drops every packet from `now_ns` on (a qdisc with no room).
    fn set_xmit_refused(&mut self, now_ns: u64, on: bool) {
        self.inner.set_xmit_refused(now_ns, on);
    }

    /// Whether the connection timed out (the next write fails with ETIMEDOUT).
    fn timed_out(&self) -> bool {
        self.inner.timed_out()
    }

    /// Fire the timers due up to `now_ns`.
    fn advance(&mut self, now_ns: u64) {
        self.inner.advance(now_ns);
    }

    /// The next timer, or None.
    fn deadline(&self) -> Option<u64> {
        self.inner.deadline()
    }

    /// Segments sent since the last call: (t_ns, seq, len, retx, ecn, cwr, psh).
    #[allow(clippy::type_complexity)] // a row as Python reads it
    fn take_sent(&mut self) -> Vec<(u64, u64, u32, bool, u8, bool, bool)> {
        self.inner
            .take_sent()
            .into_iter()
            .map(|o| (o.t_ns, o.seq, o.len, o.retx, o.ecn, o.cwr, o.psh))
            .collect()
    }

    /// Bytes the application has written.
    fn written(&self) -> u64 {
        self.inner.written()
    }

    /// The sender's windows and timers in their own units (bytes, ns).
    fn raw_state(&self) -> Vec<(&'static str, i64)> {
        self.inner.raw_state()
    }

    /// tcp_info fields the model holds, as tcp_get_info() fills them.
    fn tcp_info(&self) -> Vec<(&'static str, i64)> {
        self.inner.tcp_info()
    }
}

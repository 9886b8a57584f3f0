//! A congestion-control module whose hooks mark the thread as in the CC code path, for the CPU
//! sampler (`[measure] cpu`, crate::cpu).

use super::{
    AckKind, CaState, CcHooks, CcView, CongSignal, CongestionControl, LinuxCcOps, RateSample,
    Window,
};
use crate::cpu::in_cc;
use crate::time::Ns;

/// A congestion-control module whose hooks mark the thread as in the CC code path.
pub struct MarkedCc {
    inner: Box<dyn CongestionControl>,
}

impl MarkedCc {
    /// Wrap `inner`.
    pub fn new(inner: Box<dyn CongestionControl>) -> Self {
        MarkedCc { inner }
    }
}

impl CcHooks for MarkedCc {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn conn_init(&mut self, v: &CcView, win: &mut Window) {
        in_cc(|| self.inner.conn_init(v, win))
    }
    fn ack_received(&mut self, v: &CcView, win: &mut Window, kind: AckKind) {
        in_cc(|| self.inner.ack_received(v, win, kind))
    }
    fn cong_signal(&mut self, v: &CcView, win: &mut Window, sig: CongSignal) {
        in_cc(|| self.inner.cong_signal(v, win, sig))
    }
    fn post_recovery(&mut self, v: &CcView, win: &mut Window) {
        in_cc(|| self.inner.post_recovery(v, win))
    }
    fn after_idle(&mut self, v: &CcView, win: &mut Window) {
        in_cc(|| self.inner.after_idle(v, win))
    }
    fn rtt_sample(&mut self, v: &CcView, win: &mut Window, rtt_ns: Ns) {
        in_cc(|| self.inner.rtt_sample(v, win, rtt_ns))
    }
    fn new_round(&mut self, v: &CcView, win: &mut Window) {
        in_cc(|| self.inner.new_round(v, win))
    }
    fn pacing_rate_bps(&self, v: &CcView, win: &Window) -> Option<u64> {
        in_cc(|| self.inner.pacing_rate_bps(v, win))
    }
}

impl LinuxCcOps for MarkedCc {
    fn set_state(&mut self, v: &CcView, win: &mut Window, new: CaState) {
        in_cc(|| self.inner.set_state(v, win, new))
    }
    fn pkts_acked(&mut self, v: &CcView, win: &mut Window, pkts: u32, rtt_ns: Option<Ns>) {
        in_cc(|| self.inner.pkts_acked(v, win, pkts, rtt_ns))
    }
    fn in_ack_event(&mut self, v: &CcView, win: &mut Window, slow_path: bool) {
        in_cc(|| self.inner.in_ack_event(v, win, slow_path))
    }
    fn owns_cwnd(&self) -> bool {
        self.inner.owns_cwnd()
    }
    fn cong_control(&mut self, v: &CcView, win: &mut Window, rs: &RateSample) {
        in_cc(|| self.inner.cong_control(v, win, rs))
    }
    fn needs_pacing(&self) -> bool {
        self.inner.needs_pacing()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::CcVars;
    use crate::cc::{build_boxed as build, Family};

    #[test]
    fn a_marked_module_computes_exactly_what_the_module_computes() {
        let mut plain = build("cubic", Family::Linux).unwrap();
        let mut marked = MarkedCc::new(build("cubic", Family::Linux).unwrap());
        let (mut a, mut b) = (CcVars::new(1448, 10), CcVars::new(1448, 10));
        for i in 0..2000 {
            for (cc, v) in [
                (plain.as_mut(), &mut a),
                (&mut marked as &mut dyn CongestionControl, &mut b),
            ] {
                v.bytes_this_ack = 1448;
                if i == 700 {
                    cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
                    v.win.cwnd = v.win.ssthresh;
                } else {
                    cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
                }
            }
        }
        assert_eq!((a.win.cwnd, a.win.ssthresh), (b.win.cwnd, b.win.ssthresh));
    }
}

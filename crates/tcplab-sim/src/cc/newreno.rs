//! NewReno: RFC 5681 slow start and congestion avoidance with RFC 3465 byte counting, and the
//! building blocks other modules reuse (FreeBSD `newreno_cc_*` in `sys/netinet/cc/cc.c`).

use super::{AckKind, CcHooks, CcView, CongSignal, LinuxCcOps, Window};

/// RFC 3465 §2.2 limit L on the slow-start increase per ACK, in MSS (FreeBSD `abc_l_var` = 2).
pub const ABC_L: u64 = 2;

/// Reusable state for byte-counted congestion avoidance (FreeBSD `t_bytes_acked`).
#[derive(Clone, Debug, Default)]
pub struct ByteCounter {
    /// Bytes acknowledged since cwnd last grew in congestion avoidance.
    pub bytes_acked: u64,
}

/// Slow start increase for one ACK: min(bytes acked, L * MSS) (RFC 3465 §2.2, FreeBSD
/// `newreno_cc_ack_received`).
pub fn slow_start(v: &CcView, win: &mut Window) {
    let incr = v.bytes_this_ack.min(ABC_L * v.mss);
    win.cwnd += incr;
}

/// Congestion avoidance with appropriate byte counting: one MSS per cwnd's worth of bytes
/// acknowledged (RFC 3465 §2.1; FreeBSD `newreno_cc_ack_received`, `t_bytes_acked`).
pub fn congestion_avoidance(v: &CcView, win: &mut Window, bc: &mut ByteCounter) {
    bc.bytes_acked += v.bytes_this_ack;
    if bc.bytes_acked >= win.cwnd {
        bc.bytes_acked -= win.cwnd;
        win.cwnd += v.mss;
    }
}

/// RFC 5681 eq. (4): ssthresh = max(FlightSize / 2, 2 * SMSS).
pub fn halve_flight(v: &CcView) -> u64 {
    (v.flight / 2).max(2 * v.mss)
}

/// RFC 6582 §3.2 step 3 option 1 (full ACK): cwnd = min(ssthresh, max(FlightSize, SMSS) + SMSS),
/// so that leaving recovery cannot release a burst.
pub fn post_recovery(v: &CcView, win: &mut Window) {
    win.cwnd = win.ssthresh.min(v.flight.max(v.mss) + v.mss);
}

/// RFC 5681 §4.1 restart window: cwnd = min(IW, cwnd) after an idle period.
pub fn after_idle(v: &CcView, win: &mut Window) {
    win.cwnd = win.cwnd.min(v.iw);
}

/// Classic NewReno (RFC 5681, RFC 6582, RFC 3465 with L = 2).
#[derive(Clone, Debug, Default)]
pub struct NewReno {
    bc: ByteCounter,
}

impl CcHooks for NewReno {
    fn name(&self) -> &'static str {
        "newreno"
    }

    fn ack_received(&mut self, v: &CcView, win: &mut Window, kind: AckKind) {
        // cwnd grows only when the window, not the application or rwnd, limited sending
        // (RFC 7661 idea; FreeBSD `CCF_CWND_LIMITED`).
        if kind != AckKind::Ack || !v.cwnd_limited {
            return;
        }
        if win.in_slow_start() {
            slow_start(v, win);
        } else {
            congestion_avoidance(v, win, &mut self.bc);
        }
    }

    fn cong_signal(&mut self, v: &CcView, win: &mut Window, sig: CongSignal) {
        match sig {
            CongSignal::NDupAck | CongSignal::Ecn | CongSignal::Rto => {
                win.ssthresh = halve_flight(v);
                self.bc.bytes_acked = 0;
            }
            CongSignal::RtoErr => {}
        }
    }

    fn post_recovery(&mut self, v: &CcView, win: &mut Window) {
        post_recovery(v, win);
    }
}

impl LinuxCcOps for NewReno {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::CcVars;

    fn vars() -> CcVars {
        let mut v = CcVars::new(1000, 10_000);
        v.cwnd_limited = true;
        v
    }

    #[test]
    fn slow_start_adds_at_most_two_mss_per_ack() {
        let mut cc = NewReno::default();
        let mut v = vars();
        v.bytes_this_ack = 5000; // stretch ACK of 5 segments
        cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        assert_eq!(v.win.cwnd, 12_000);
        v.bytes_this_ack = 500;
        cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        assert_eq!(v.win.cwnd, 12_500);
    }

    #[test]
    fn congestion_avoidance_adds_one_mss_per_window_acked() {
        let mut cc = NewReno::default();
        let mut v = vars();
        v.win.ssthresh = 10_000;
        // ten ACKs of 2 segments each = 20 segments = 2 windows of 10 segments ... the second
        // window is 11 segments, so 20_000 bytes gives exactly one increase, 22_000 two.
        for _ in 0..10 {
            v.bytes_this_ack = 2000;
            cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        }
        assert_eq!(v.win.cwnd, 11_000);
        v.bytes_this_ack = 2000;
        cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        assert_eq!(v.win.cwnd, 12_000);
    }

    #[test]
    fn no_growth_when_not_cwnd_limited() {
        let mut cc = NewReno::default();
        let mut v = vars();
        v.cwnd_limited = false;
        v.bytes_this_ack = 2000;
        cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        assert_eq!(v.win.cwnd, 10_000);
    }

    #[test]
    fn loss_halves_flight_with_two_mss_floor() {
        let mut cc = NewReno::default();
        let mut v = vars();
        v.flight = 30_000;
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        assert_eq!(v.win.ssthresh, 15_000);
        v.flight = 1_000;
        cc.cong_signal(&v.view, &mut v.win, CongSignal::Rto);
        assert_eq!(v.win.ssthresh, 2_000);
    }

    #[test]
    fn post_recovery_never_exceeds_flight_plus_one_mss() {
        let mut v = vars();
        v.win.ssthresh = 15_000;
        v.flight = 4_000;
        post_recovery(&v.view, &mut v.win);
        assert_eq!(v.win.cwnd, 5_000);
        v.flight = 20_000;
        post_recovery(&v.view, &mut v.win);
        assert_eq!(v.win.cwnd, 15_000);
    }
}

//! CUBIC as specified by RFC 9438 (the RFC, not a kernel's variant: FreeBSD's cc_cubic.c and
//! Linux's tcp_cubic.c differ in arithmetic and arrive as stack-specific modules).
//!
//! Window arithmetic is in segments as real numbers, exactly as the RFC writes it; cwnd in
//! `CcVars` stays in bytes and fractional growth is carried in `pending_bytes`.

use super::newreno::{self, ByteCounter};
use super::{AckKind, CcHooks, CcView, CongSignal, LinuxCcOps, Window};
use crate::time::{secs, Ns};

/// RFC 9438 §5.1: C = 0.4 (segments / s^3).
pub const C: f64 = 0.4;
/// RFC 9438 §4.6: beta_cubic = 0.7.
pub const BETA: f64 = 0.7;

/// State of the current congestion-avoidance epoch.
#[derive(Clone, Debug)]
struct Epoch {
    /// When this congestion-avoidance stage began (RFC 9438 §4.2 "t" origin).
    start: Ns,
    /// K, seconds (RFC 9438 eq. 2).
    k_s: f64,
    /// W_est, segments (RFC 9438 §4.3).
    w_est: f64,
}

/// RFC 9438 CUBIC with fast convergence and the Reno-friendly region.
#[derive(Clone, Debug, Default)]
pub struct Cubic {
    /// W_max, segments: cwnd just before the last reduction (after fast convergence).
    w_max: f64,
    /// cwnd_prior, segments: cwnd when ssthresh was last set (RFC 9438 §4.3 alpha switch).
    cwnd_prior: f64,
    epoch: Option<Epoch>,
    /// Fractional bytes of growth not yet added to cwnd.
    pending_bytes: f64,
    bc: ByteCounter,
}

impl Cubic {
    /// W_cubic(t) = C (t - K)^3 + W_max (RFC 9438 eq. 1), segments.
    pub fn w_cubic(&self, t_s: f64) -> f64 {
        let k = self.epoch.as_ref().map_or(0.0, |e| e.k_s);
        C * (t_s - k).powi(3) + self.w_max
    }

    /// W_max in segments (for tests and traces).
    pub fn w_max_segments(&self) -> f64 {
        self.w_max
    }

    fn begin_epoch(&mut self, v: &CcView, win: &Window) -> Epoch {
        let cwnd_epoch = win.cwnd as f64 / v.mss as f64;
        // RFC 9438 eq. 2. When the window already exceeds W_max (no reduction since slow start,
        // or growth past the old maximum), the plateau is where we are: K = 0, W_max = cwnd.
        let k_s = if cwnd_epoch < self.w_max {
            ((self.w_max - cwnd_epoch) / C).cbrt()
        } else {
            self.w_max = cwnd_epoch;
            0.0
        };
        Epoch {
            start: v.now,
            k_s,
            w_est: cwnd_epoch,
        }
    }

    fn congestion_avoidance(&mut self, v: &CcView, win: &mut Window) {
        if self.epoch.is_none() {
            self.epoch = Some(self.begin_epoch(v, win));
        }
        let mss = v.mss as f64;
        let cwnd_seg = win.cwnd as f64 / mss;
        let acked_seg = v.bytes_this_ack as f64 / mss;
        let (t_s, w_est) = {
            let e = self.epoch.as_mut().expect("epoch set above");
            // RFC 9438 §4.3: alpha_cubic = 3 (1 - beta) / (1 + beta) until W_est reaches cwnd_prior.
            let alpha = if e.w_est >= self.cwnd_prior {
                1.0
            } else {
                3.0 * (1.0 - BETA) / (1.0 + BETA)
            };
            e.w_est += alpha * acked_seg / cwnd_seg;
            (secs(v.now - e.start), e.w_est)
        };
        if self.w_cubic(t_s) < w_est {
            // Reno-friendly region (RFC 9438 §4.3): cwnd = W_est.
            let target = (w_est * mss) as u64;
            if target > win.cwnd {
                win.cwnd = target;
            }
            return;
        }
        // Concave / convex regions (RFC 9438 §4.4, §4.5): target = W_cubic(t + RTT) clamped to
        // [cwnd, 1.5 cwnd]; cwnd += (target - cwnd) / cwnd per segment acknowledged.
        let rtt_s = secs(v.srtt_ns);
        let target = self.w_cubic(t_s + rtt_s).clamp(cwnd_seg, 1.5 * cwnd_seg);
        self.pending_bytes += (target - cwnd_seg) / cwnd_seg * acked_seg * mss;
        let whole = self.pending_bytes.floor();
        if whole >= 1.0 {
            win.cwnd += whole as u64;
            self.pending_bytes -= whole;
        }
    }
}

impl CcHooks for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn ack_received(&mut self, v: &CcView, win: &mut Window, kind: AckKind) {
        if kind != AckKind::Ack || !v.cwnd_limited {
            return;
        }
        if win.in_slow_start() {
            // RFC 9438 §4.10: standard slow start (RFC 5681 with RFC 3465 byte counting).
            newreno::slow_start(v, win);
        } else {
            self.congestion_avoidance(v, win);
        }
    }

    fn cong_signal(&mut self, v: &CcView, win: &mut Window, sig: CongSignal) {
        match sig {
            CongSignal::NDupAck | CongSignal::Ecn | CongSignal::Rto => {
                let cwnd_seg = win.cwnd as f64 / v.mss as f64;
                // RFC 9438 §4.7 fast convergence.
                self.w_max = if cwnd_seg < self.w_max {
                    cwnd_seg * (1.0 + BETA) / 2.0
                } else {
                    cwnd_seg
                };
                self.cwnd_prior = cwnd_seg;
                // RFC 9438 §4.6: ssthresh = flight_size * beta_cubic, at least 2 segments.
                win.ssthresh = ((v.flight as f64 * BETA) as u64).max(2 * v.mss);
                self.epoch = None;
                self.pending_bytes = 0.0;
                self.bc = ByteCounter::default();
            }
            CongSignal::RtoErr => {}
        }
    }

    fn post_recovery(&mut self, v: &CcView, win: &mut Window) {
        newreno::post_recovery(v, win);
    }

    fn after_idle(&mut self, v: &CcView, win: &mut Window) {
        newreno::after_idle(v, win);
        // RFC 9438 §5.8: an idle period must not count as elapsed time in the cubic function.
        self.epoch = None;
    }
}

impl LinuxCcOps for Cubic {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::CcVars;
    use crate::time::MS;

    const MSS: u64 = 1000;

    fn vars(cwnd_seg: u64) -> CcVars {
        let mut v = CcVars::new(MSS, 10 * MSS);
        v.win.cwnd = cwnd_seg * MSS;
        v.cwnd_limited = true;
        v.srtt_ns = 100 * MS;
        v
    }

    #[test]
    fn loss_sets_w_max_and_ssthresh_from_flight() {
        let mut cc = Cubic::default();
        let mut v = vars(100);
        v.flight = 100 * MSS;
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        assert_eq!(cc.w_max_segments(), 100.0);
        assert_eq!(v.win.ssthresh, 70 * MSS);
    }

    #[test]
    fn fast_convergence_lowers_w_max_when_below_previous_max() {
        let mut cc = Cubic::default();
        let mut v = vars(100);
        v.flight = 100 * MSS;
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        v.win.cwnd = 80 * MSS;
        v.flight = 80 * MSS;
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        assert!((cc.w_max_segments() - 80.0 * 1.7 / 2.0).abs() < 1e-9);
    }

    #[test]
    fn k_is_time_to_regain_w_max() {
        // Independent: K = cbrt((W_max - cwnd_epoch) / C) = cbrt(30 / 0.4) = cbrt(75).
        let mut cc = Cubic::default();
        let mut v = vars(100);
        v.flight = 100 * MSS;
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        v.win.cwnd = v.win.ssthresh;
        v.now = 5 * MS;
        v.bytes_this_ack = MSS;
        cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        let k = cc.epoch.as_ref().unwrap().k_s;
        assert!((k - 75f64.cbrt()).abs() < 1e-12, "k {k}");
        assert!((cc.w_cubic(k) - 100.0).abs() < 1e-9);
    }

    #[test]
    fn acks_follow_rfc9438_per_ack_increment_towards_the_target() {
        // Independent calculation of RFC 9438 §4.4/4.5: for each ACK of one segment,
        // cwnd += (target - cwnd) / cwnd with target = W_cubic(t + RTT) clamped to [cwnd, 1.5 cwnd].
        let mut cc = Cubic::default();
        let mut v = vars(100);
        v.flight = 100 * MSS;
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        v.win.cwnd = 70 * MSS;
        v.win.ssthresh = 70 * MSS;
        v.now = 0;
        v.bytes_this_ack = MSS;
        cc.ack_received(&v.view, &mut v.win, AckKind::Ack); // starts the epoch at t = 0
        let k = (30.0f64 / 0.4).cbrt();
        let w = |t: f64| 0.4 * (t - k).powi(3) + 100.0;
        let mut expect = v.win.cwnd as f64 / MSS as f64;
        v.now = 2_000 * MS;
        for _ in 0..70 {
            let target = w(2.0 + 0.1).clamp(expect, 1.5 * expect);
            expect += (target - expect) / expect;
            cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        }
        let got = v.win.cwnd as f64 / MSS as f64;
        assert!((got - expect).abs() < 0.01, "got {got} expected {expect}");
        assert!(got > 85.0 && got < 86.0); // ~85.5: the gap to W_cubic = 96.2 closes geometrically
    }

    #[test]
    fn reno_friendly_region_follows_w_est_when_cubic_is_slower() {
        // With a tiny W_max gap and short RTT, W_est grows faster than the flat cubic plateau.
        let mut cc = Cubic::default();
        let mut v = vars(10);
        v.flight = 10 * MSS;
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        v.win.cwnd = 7 * MSS;
        v.win.ssthresh = 7 * MSS;
        v.srtt_ns = MS;
        v.bytes_this_ack = MSS;
        let alpha = 3.0 * (1.0 - BETA) / (1.0 + BETA);
        let mut w_est = 7.0;
        for i in 0..7 {
            v.now = i * MS / 10;
            let cwnd_seg = v.win.cwnd as f64 / MSS as f64;
            w_est += alpha / cwnd_seg;
            cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        }
        // W_cubic(0.6 ms) = 0.4 (0.0006 - cbrt(7.5))^3 + 10 = 7.0016 < W_est = 7.53.
        assert!(cc.w_cubic(0.0006) < w_est);
        assert_eq!(v.win.cwnd, (w_est * MSS as f64) as u64);
    }
}

//! FreeBSD H-TCP (sys/netinet/cc/cc_htcp.c, freebsd/freebsd-src @ 023681d6) as it ships: the
//! increase alpha grows with the ticks since the last congestion event (HTCP_CALC_ALPHA, hz =
//! 1000), applied once per cwnd of bytes acked through the stack's ABC counting; with the default
//! sysctls (net.inet.tcp.cc.htcp.adaptive_backoff = 0, rtt_scaling = 0) beta stays 0.5 and alpha
//! is not RTT-scaled. Slow start, the first second after an event and after-idle are NewReno's.

use super::freebsd::{newreno_ack, newreno_after_idle, rto_ssthresh, ticks, AbcCounter};
use super::{AckKind, CcHooks, CcView, CongSignal, LinuxCcOps, Window};
use crate::time::FREEBSD_HZ as HZ;

const HTCP_SHIFT: u32 = 8;
const HTCP_INIT_ALPHA: i64 = 1;
/// HTCP_DELTA_L: one second in ticks.
const DELTA_L: i64 = HZ;
/// 0.5 << HTCP_SHIFT.
const HTCP_MINBETA: u64 = 128;
const HTCP_MIN_RTT_SAMPLES: u64 = 8;
/// TCPTV_SRTTBASE: "no idea yet".
const SRTTBASE: i64 = 0;
/// htcp_max_diff = INT_MAX / ((1 << HTCP_ALPHA_INC_SHIFT) * 10).
const MAX_DIFF: i64 = i32::MAX as i64 / 160;
/// The initial ssthresh, TCP_MAXWIN << TCP_MAX_WINSHIFT.
const INITIAL_SSTHRESH: u64 = 65_535 << 14;

/// HTCP_CALC_ALPHA(diff): 1 + 10 (diff / hz) + (diff / 2hz)^2, in int arithmetic shifted by 4.
pub fn calc_alpha(diff: i64) -> i64 {
    (16 + (160 * diff) / HZ + (diff / HZ) * ((diff << 4) / (4 * HZ))) >> 4
}

/// struct htcp.
#[derive(Clone, Debug, Default)]
pub struct FreeBsdHtcp {
    abc: AbcCounter,
    prev_cwnd: u64,
    alpha: i64,
    beta: u64,
    maxrtt: i64,
    minrtt: i64,
    t_last_cong: i64,
}

impl FreeBsdHtcp {
    /// htcp_recalc_alpha()
    fn recalc_alpha(&mut self, now: i64) {
        if now < self.t_last_cong {
            self.t_last_cong = now - DELTA_L;
        }
        let diff = now - self.t_last_cong - DELTA_L;
        if diff < MAX_DIFF {
            self.alpha = if diff > 0 { calc_alpha(diff) } else { 1 };
        }
    }

    /// htcp_record_rtt(): srtt in ticks, once 8 samples are in.
    fn record_rtt(&mut self, v: &CcView) {
        if v.rtt_samples < HTCP_MIN_RTT_SAMPLES {
            return;
        }
        let srtt = (v.srtt_ns / 1_000_000) as i64;
        if srtt < self.minrtt || self.minrtt == SRTTBASE {
            self.minrtt = srtt;
        }
        if srtt > self.maxrtt {
            self.maxrtt = srtt;
        }
    }

    /// The bookkeeping of a congestion event: maxrtt hysteresis, ssthresh = cwnd x beta (0.5 on
    /// the first event and, without adaptive backoff, on every one), the event's time and cwnd.
    fn congestion_event(&mut self, v: &CcView, win: &mut Window) {
        self.maxrtt = self.minrtt + (self.maxrtt - self.minrtt) * 95 / 100;
        // htcp_ssthresh_update(): htcp_recalc_beta() gives HTCP_MINBETA without adaptive backoff.
        let beta = if win.ssthresh >= INITIAL_SSTHRESH {
            HTCP_MINBETA
        } else {
            self.beta
        };
        win.ssthresh = (win.cwnd * beta) >> HTCP_SHIFT;
        self.t_last_cong = ticks(v.now);
        self.prev_cwnd = win.cwnd;
    }
}

impl CcHooks for FreeBsdHtcp {
    fn name(&self) -> &'static str {
        "htcp"
    }

    /// htcp_cb_init()
    fn conn_init(&mut self, v: &CcView, _win: &mut Window) {
        *self = FreeBsdHtcp {
            alpha: HTCP_INIT_ALPHA,
            beta: HTCP_MINBETA,
            maxrtt: SRTTBASE,
            minrtt: SRTTBASE,
            t_last_cong: ticks(v.now),
            ..FreeBsdHtcp::default()
        };
    }

    /// htcp_ack_received(), after the stack's ABC accounting (tcp_input.c cc_ack_received()).
    fn ack_received(&mut self, v: &CcView, win: &mut Window, kind: AckKind) {
        if kind != AckKind::Ack || v.in_recovery {
            return;
        }
        self.abc.account(v, win);
        self.record_rtt(v);
        if !v.cwnd_limited || !(win.cwnd <= win.ssthresh || self.abc.sent_a_wnd) {
            return;
        }
        self.beta = HTCP_MINBETA; // htcp_recalc_beta() without adaptive backoff
        self.recalc_alpha(ticks(v.now));
        if self.alpha == 1 || win.cwnd <= win.ssthresh {
            newreno_ack(v, win, &mut self.abc);
        } else {
            // With ABC (net.inet.tcp.rfc3465 = 1): alpha segments per cwnd of bytes acked.
            win.cwnd += self.alpha as u64 * v.mss;
            self.abc.sent_a_wnd = false;
        }
    }

    /// htcp_cong_signal()
    fn cong_signal(&mut self, v: &CcView, win: &mut Window, sig: CongSignal) {
        match sig {
            CongSignal::NDupAck => self.congestion_event(v, win),
            CongSignal::Ecn => {
                self.congestion_event(v, win);
                win.cwnd = win.ssthresh;
                self.prev_cwnd = win.cwnd;
            }
            CongSignal::Rto => {
                // The stack calls this on the first timeout only (t_rxtshift == 1), where the
                // kernel leaves t_last_cong alone ("the first one is a reasonable chance of a
                // false alarm").
                win.ssthresh = rto_ssthresh(v, 1, 2);
                win.cwnd = v.mss;
                self.abc.reset();
            }
            CongSignal::RtoErr => {}
        }
    }

    /// htcp_post_recovery(): pipe < ssthresh ? max(pipe, mss) + mss : beta x the cwnd before.
    fn post_recovery(&mut self, v: &CcView, win: &mut Window) {
        win.cwnd = if v.flight < win.ssthresh {
            v.flight.max(v.mss) + v.mss
        } else {
            (((self.beta * self.prev_cwnd / v.mss) >> HTCP_SHIFT).max(1)) * v.mss
        };
    }

    fn after_idle(&mut self, v: &CcView, win: &mut Window) {
        newreno_after_idle(v, win);
    }
}

impl LinuxCcOps for FreeBsdHtcp {}

#[cfg(test)]
mod tests {
    //! Reference arithmetic: cc_htcp.c HTCP_CALC_ALPHA, htcp_ack_received, htcp_post_recovery.
    use super::*;
    use crate::cc::CcVars;

    #[test]
    fn alpha_is_the_htcp_polynomial_in_fixed_point() {
        // 1 s after the first second: 1 + 10 * 1 + (1/2)^2 -> (16 + 160 + 1 * (16000 / 4000)) >> 4
        // = (16 + 160 + 4) >> 4 = 11.
        assert_eq!(calc_alpha(1000), 11);
        // 3 s: (16 + 480 + 3 * 12) >> 4 = 532 >> 4 = 33 (exact polynomial: 1 + 30 + 2.25 = 33.25).
        assert_eq!(calc_alpha(3000), 33);
        // Half a second: (16 + 80 + 0) >> 4 = 6.
        assert_eq!(calc_alpha(500), 6);
    }

    #[test]
    fn after_the_first_second_cwnd_grows_alpha_segments_per_window() {
        let mut cc = FreeBsdHtcp::default();
        let mut v = CcVars::new(1000, 10_000);
        v.now = 0;
        cc.conn_init(&v.view, &mut v.win);
        v.win.cwnd = 100_000;
        v.win.ssthresh = 50_000;
        v.cwnd_limited = true;
        v.bytes_this_ack = 2000;
        // 3 s after the connection began (diff = 2000 ticks): alpha = (16 + 320 + 2*8) >> 4 = 22.
        v.now = 3_000_000_000;
        for _ in 0..49 {
            cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        }
        assert_eq!(v.win.cwnd, 100_000); // 98 KB acked: not yet a window
        cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        assert_eq!(cc.alpha, 22);
        assert_eq!(v.win.cwnd, 122_000);
    }

    #[test]
    fn loss_halves_and_recovery_ends_at_beta_times_the_cwnd_before() {
        let mut cc = FreeBsdHtcp::default();
        let mut v = CcVars::new(1448, 14_480);
        cc.conn_init(&v.view, &mut v.win);
        v.win.cwnd = 144_800;
        v.win.ssthresh = INITIAL_SSTHRESH;
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        assert_eq!(v.win.ssthresh, 72_400);
        v.flight = 100_000; // pipe >= ssthresh at the full ACK
        cc.post_recovery(&v.view, &mut v.win);
        assert_eq!(v.win.cwnd, ((128 * 144_800 / 1448) >> 8) * 1448); // 50 segments
        v.flight = 10_000;
        cc.post_recovery(&v.view, &mut v.win);
        assert_eq!(v.win.cwnd, 10_000 + 1448);
    }
}

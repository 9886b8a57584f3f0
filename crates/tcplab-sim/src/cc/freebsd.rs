//! FreeBSD's congestion-control modules as the kernel computes them: in bytes, with its integer
//! and fixed-point arithmetic and 1 ms ticks (hz = 1000). `newreno` follows sys/netinet/cc/cc.c
//! (newreno_cc_ack_received, newreno_cc_cong_signal, newreno_cc_post_recovery,
//! newreno_cc_after_idle) as called by cc_newreno.c; `cubic` follows sys/netinet/cc/cc_cubic.c
//! and cc_cubic.h (cubic_ack_received, cubic_ssthresh_update, cubic_post_recovery,
//! cubic_record_rtt, cubic_k, cubic_cwnd, tf_cwnd) as they ship — not RFC 9438. Both read at
//! freebsd/freebsd-src @ 00d3b744 (cc.c, cc_cubic.c) and 0162500b (cc_cubic.h).
//!
//! HyStart++ (cc_cubic.c CSS) runs only when the stack sets CCF_HYSTART_ALLOWED, which the default
//! stack does not, so it is not modelled.

use super::{AckKind, CcHooks, CcView, CongSignal, LinuxCcOps, Window};
use crate::time::{FREEBSD_HZ as HZ, FREEBSD_TICK_US as TICK_US};

/// net.inet.tcp.abc_l_var default.
pub const ABC_L_VAR: u64 = 2;
/// net.inet.tcp.cc.newreno.beta default (percent).
pub const NEWRENO_BETA: u64 = 50;
/// cc_cubic.h fixed-point constants (CUBIC_SHIFT 8).
pub const CUBIC_SHIFT: u32 = 8;
/// ~0.7 << CUBIC_SHIFT.
pub const CUBIC_BETA: u64 = 179;
/// ~0.3 << CUBIC_SHIFT.
pub const ONE_SUB_CUBIC_BETA: u64 = 77;
/// 3 * ONE_SUB_CUBIC_BETA.
pub const THREE_X_PT3: u64 = 231;
/// (2 << CUBIC_SHIFT) - ONE_SUB_CUBIC_BETA.
pub const TWO_SUB_PT3: u64 = 435;
/// ~0.4 << CUBIC_SHIFT.
pub const CUBIC_C_FACTOR: i64 = 102;
/// (1 + beta) / 2 << CUBIC_SHIFT.
pub const CUBIC_FC_FACTOR: u64 = 217;
/// Samples before cubic trusts srtt.
pub const CUBIC_MIN_RTT_SAMPLES: u64 = 8;
const CUBED_ROOT_MAX_ULONG: i64 = 448_845;

/// The kernel's `ticks` counter at `now`.
pub fn ticks(now: crate::time::Ns) -> i64 {
    (now / 1_000_000) as i64
}

/// tcp_input.c cc_ack_received(): before the module runs, the stack counts bytes acked in
/// congestion avoidance (at most abc_l_var segments per ACK) and raises CCF_ABC_SENTAWND once a
/// cwnd's worth has been acked; in slow start the count is reset.
#[derive(Clone, Debug, Default)]
pub struct AbcCounter {
    bytes_acked: u64,
    pub(crate) sent_a_wnd: bool,
}

impl AbcCounter {
    pub(crate) fn account(&mut self, v: &CcView, win: &Window) {
        if win.cwnd > win.ssthresh {
            self.bytes_acked += v.bytes_this_ack.min(v.nsegs.max(1) * ABC_L_VAR * v.mss);
            if self.bytes_acked >= win.cwnd {
                self.bytes_acked -= win.cwnd;
                self.sent_a_wnd = true;
            }
        } else {
            self.sent_a_wnd = false;
            self.bytes_acked = 0;
        }
    }

    pub(crate) fn reset(&mut self) {
        self.bytes_acked = 0;
    }
}

/// Slow-start increase of newreno_cc_ack_received() and cubic_does_slow_start(): at most
/// abc_l_var segments per ACK (`min(ccv->bytes_this_ack, ccv->nsegs * abc_val * mss)`, nsegs
/// the ACKs a compressed batch stands for), only one while retransmitting after an RTO
/// (snd_nxt != snd_max).
fn abc_slow_start_incr(v: &CcView) -> u64 {
    if v.after_rto {
        v.bytes_this_ack.min(v.mss)
    } else {
        v.bytes_this_ack.min(v.nsegs.max(1) * ABC_L_VAR * v.mss)
    }
}

/// newreno_cc_ack_received() (cc.c).
pub(crate) fn newreno_ack(v: &CcView, win: &mut Window, abc: &mut AbcCounter) {
    let incr = if win.cwnd > win.ssthresh {
        if abc.sent_a_wnd {
            abc.sent_a_wnd = false;
            v.mss
        } else {
            0
        }
    } else {
        abc_slow_start_incr(v)
    };
    win.cwnd += incr;
}

/// newreno_cc_post_recovery(): pipe < ssthresh ? max(pipe, mss) + mss : ssthresh. `v.flight` is
/// tcp_compute_pipe() as the stack computes it when the full ACK arrives.
fn newreno_post_recovery(v: &CcView, win: &mut Window) {
    win.cwnd = if v.flight < win.ssthresh {
        v.flight.max(v.mss) + v.mss
    } else {
        win.ssthresh
    };
}

/// newreno_cc_after_idle(): ssthresh = max(ssthresh, 3/4 cwnd) (RFC 2861), cwnd = min(IW, cwnd).
pub(crate) fn newreno_after_idle(v: &CcView, win: &mut Window) {
    win.ssthresh = win.ssthresh.max(win.cwnd - (win.cwnd >> 2));
    win.cwnd = win.cwnd.min(v.iw);
}

/// The CC_RTO ssthresh of newreno_cc_cong_signal(): max(2, min(snd_wnd, pipe) / 2 / mss) * mss,
/// set only on the first timeout of a window (the stack calls the hook only then).
pub(crate) fn rto_ssthresh(v: &CcView, num: u64, den: u64) -> u64 {
    (v.snd_wnd.min(v.flight) * num / den / v.mss).max(2) * v.mss
}

/// FreeBSD NewReno (cc_newreno.c with the shared cc.c functions).
#[derive(Clone, Debug, Default)]
pub struct FreeBsdNewReno {
    abc: AbcCounter,
}

impl CcHooks for FreeBsdNewReno {
    fn name(&self) -> &'static str {
        "newreno"
    }

    fn ack_received(&mut self, v: &CcView, win: &mut Window, kind: AckKind) {
        if kind != AckKind::Ack || v.in_recovery {
            return;
        }
        self.abc.account(v, win);
        if v.cwnd_limited {
            newreno_ack(v, win, &mut self.abc);
        }
    }

    fn cong_signal(&mut self, v: &CcView, win: &mut Window, sig: CongSignal) {
        // cwin = max(cwnd * beta / (100 * mss), 2) * mss: from cwnd, rounded down to segments.
        let cwin = (win.cwnd * NEWRENO_BETA / (100 * v.mss)).max(2) * v.mss;
        match sig {
            CongSignal::NDupAck => win.ssthresh = cwin,
            CongSignal::Ecn => {
                win.ssthresh = cwin;
                win.cwnd = cwin;
            }
            CongSignal::Rto => {
                win.ssthresh = rto_ssthresh(v, 1, 2);
                self.abc.reset();
            }
            CongSignal::RtoErr => {}
        }
    }

    fn post_recovery(&mut self, v: &CcView, win: &mut Window) {
        newreno_post_recovery(v, win);
    }

    fn after_idle(&mut self, v: &CcView, win: &mut Window) {
        newreno_after_idle(v, win);
    }
}

impl LinuxCcOps for FreeBsdNewReno {}

/// cc_cubic.h cubic_k(): K = cbrt(W_max * (1 - beta) / C) in fixed point (CUBIC_SHIFT), by the
/// Apple KT-32 polynomial approximation the kernel uses, not by an exact cube root.
pub fn cubic_k(wmax_pkts: u64) -> i64 {
    let mut s = ((wmax_pkts * ONE_SUB_CUBIC_BETA) << CUBIC_SHIFT) as i64 / CUBIC_C_FACTOR;
    let mut p = 0u32;
    while s >= 256 {
        s >>= 3;
        p += 1;
    }
    let k = (((s * 275) >> CUBIC_SHIFT) + 98) - (((s * s * 120) >> CUBIC_SHIFT) >> CUBIC_SHIFT);
    k << p
}

/// cc_cubic.h cubic_cwnd(): W_max + C (t - K)^3 segments, t in microseconds, in bytes.
pub fn cubic_cwnd(usecs_since_epoch: i64, wmax: u64, smss: u64, k: i64) -> u64 {
    let hz_tick = HZ * TICK_US;
    let mut c = ((usecs_since_epoch << CUBIC_SHIFT) - k * hz_tick) / hz_tick;
    if c > CUBED_ROOT_MAX_ULONG {
        return i32::MAX as u64;
    }
    if c < -CUBED_ROOT_MAX_ULONG {
        return 0;
    }
    c = c * c * c;
    let cwnd = ((c * CUBIC_C_FACTOR) >> 32) * smss as i64 + wmax as i64;
    cwnd.max(0) as u64
}

/// cc_cubic.h tf_cwnd(): the "TCP-friendly" window W_max * beta + 3(1-beta)/(1+beta) * t/RTT.
pub fn tf_cwnd(usecs_since_epoch: i64, rtt_usecs: i64, wmax: u64, smss: u64) -> u64 {
    let t = usecs_since_epoch.max(0) as u64;
    let rtt = rtt_usecs.max(1) as u64;
    ((wmax * CUBIC_BETA) + (((THREE_X_PT3 * t * smss) << CUBIC_SHIFT) / (TWO_SUB_PT3 * rtt)))
        >> CUBIC_SHIFT
}

/// FreeBSD CUBIC (cc_cubic.c) as it ships.
#[derive(Clone, Debug)]
pub struct FreeBsdCubic {
    abc: AbcCounter,
    k: i64,
    sum_rtt_usecs: i64,
    w_max: u64,
    /// CUBICFLAG_CONG_EVENT, _IN_SLOWSTART, _IN_APPLIMIT, _RTO_EVENT.
    cong_event: bool,
    in_slowstart: bool,
    in_applimit: bool,
    rto_event: bool,
    /// 0 = TCPTV_SRTTBASE: no estimate yet.
    min_rtt_usecs: i64,
    mean_rtt_usecs: i64,
    epoch_ack_count: i64,
    t_epoch: i64,
    undo_w_max: u64,
}

impl Default for FreeBsdCubic {
    /// cubic_cb_init().
    fn default() -> Self {
        FreeBsdCubic {
            abc: AbcCounter::default(),
            k: 0,
            sum_rtt_usecs: 0,
            w_max: 0,
            cong_event: false,
            in_slowstart: false,
            in_applimit: false,
            rto_event: false,
            min_rtt_usecs: 0,
            mean_rtt_usecs: 1,
            epoch_ack_count: 0,
            t_epoch: 0,
            undo_w_max: 0,
        }
    }
}

impl FreeBsdCubic {
    /// cubic_record_rtt(): after CUBIC_MIN_RTT_SAMPLES, srtt (us) feeds min_rtt and the epoch mean.
    fn record_rtt(&mut self, v: &CcView) {
        if v.rtt_samples < CUBIC_MIN_RTT_SAMPLES {
            return;
        }
        let srtt_us = (v.srtt_ns / 1000) as i64;
        if srtt_us < self.min_rtt_usecs || self.min_rtt_usecs == 0 {
            // max(tick >> TCP_RTT_SHIFT, srtt): 1000 >> 5 = 31 us.
            self.min_rtt_usecs = srtt_us.max(TICK_US >> 5);
            if self.min_rtt_usecs > self.mean_rtt_usecs {
                self.mean_rtt_usecs = self.min_rtt_usecs;
            }
        }
        self.sum_rtt_usecs += srtt_us;
        self.epoch_ack_count += 1;
    }

    /// cubic_ssthresh_update(): fast convergence, then ssthresh = cwnd/2 on the first congestion
    /// event (with W_max = 0.7 cwnd) and 0.7 cwnd afterwards.
    fn ssthresh_update(&mut self, v: &CcView, win: &mut Window) {
        let mut cwnd = win.cwnd;
        if cwnd < self.w_max {
            cwnd = (cwnd * CUBIC_FC_FACTOR) >> CUBIC_SHIFT;
        }
        self.undo_w_max = self.w_max;
        self.w_max = cwnd;
        let ssthresh = if !self.cong_event {
            self.w_max = (cwnd * CUBIC_BETA) >> CUBIC_SHIFT;
            cwnd >> 1
        } else {
            (cwnd * CUBIC_BETA) >> CUBIC_SHIFT
        };
        win.ssthresh = ssthresh.max(2 * v.mss);
    }
}

impl CcHooks for FreeBsdCubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn conn_init(&mut self, v: &CcView, win: &mut Window) {
        self.w_max = win.cwnd;
        self.t_epoch = ticks(v.now);
    }

    fn ack_received(&mut self, v: &CcView, win: &mut Window, kind: AckKind) {
        if kind != AckKind::Ack || v.in_recovery {
            return;
        }
        self.abc.account(v, win);
        self.record_rtt(v);
        if !v.cwnd_limited {
            self.in_applimit = true;
            return;
        }
        if win.cwnd <= win.ssthresh || self.min_rtt_usecs == 0 {
            // cubic_does_slow_start() without HyStart++.
            self.in_slowstart = true;
            win.cwnd += abc_slow_start_incr(v);
            return;
        }
        let now_ticks = ticks(v.now);
        if self.rto_event && self.in_slowstart {
            // RFC 8312 §4.7: after an RTO, the epoch restarts at the current cwnd.
            self.rto_event = false;
            self.in_slowstart = false;
            self.w_max = win.cwnd;
            self.t_epoch = now_ticks;
            self.k = 0;
        } else if self.in_slowstart || self.in_applimit {
            self.in_slowstart = false;
            self.in_applimit = false;
            self.t_epoch = now_ticks;
            self.k = cubic_k(self.w_max / v.mss);
        }
        let usecs_since_epoch = (now_ticks - self.t_epoch) * TICK_US;
        let w_est = tf_cwnd(usecs_since_epoch, self.mean_rtt_usecs, self.w_max, v.mss);
        let w_cubic = cubic_cwnd(
            usecs_since_epoch + self.mean_rtt_usecs,
            self.w_max,
            v.mss,
            self.k,
        );
        self.abc.sent_a_wnd = false;
        if w_cubic < w_est {
            if win.cwnd < w_est {
                win.cwnd = w_est.min(i32::MAX as u64);
            }
        } else if win.cwnd < w_cubic {
            // cwnd jumps straight to the curve: no per-ACK cap.
            win.cwnd = w_cubic.min(i32::MAX as u64);
        }
        if !self.cong_event && self.w_max < win.cwnd {
            self.w_max = win.cwnd;
            self.k = cubic_k(self.w_max / v.mss);
        }
    }

    fn cong_signal(&mut self, v: &CcView, win: &mut Window, sig: CongSignal) {
        let now_ticks = ticks(v.now);
        match sig {
            CongSignal::NDupAck | CongSignal::Ecn => {
                self.ssthresh_update(v, win);
                self.cong_event = true;
                self.t_epoch = now_ticks;
                self.k = cubic_k(self.w_max / v.mss);
                if sig == CongSignal::Ecn {
                    win.cwnd = win.ssthresh; // CC_ECN cuts cwnd itself; for NDUPACK the stack does
                }
            }
            CongSignal::Rto => {
                win.ssthresh = rto_ssthresh(v, CUBIC_BETA, 1 << CUBIC_SHIFT);
                self.cong_event = true;
                self.rto_event = true;
                self.undo_w_max = self.w_max;
                self.abc.reset();
            }
            CongSignal::RtoErr => {
                self.cong_event = false;
                self.rto_event = false;
                self.w_max = self.undo_w_max;
            }
        }
    }

    fn post_recovery(&mut self, v: &CcView, win: &mut Window) {
        win.cwnd = if v.flight < win.ssthresh {
            v.flight.max(v.mss) + v.mss
        } else {
            ((self.w_max * CUBIC_BETA) >> CUBIC_SHIFT).max(2 * v.mss)
        };
        if self.epoch_ack_count > 0 && self.sum_rtt_usecs >= self.epoch_ack_count {
            self.mean_rtt_usecs = self.sum_rtt_usecs / self.epoch_ack_count;
        }
        self.epoch_ack_count = 0;
        self.sum_rtt_usecs = 0;
    }

    fn after_idle(&mut self, v: &CcView, win: &mut Window) {
        self.w_max = self.w_max.max(win.cwnd);
        self.k = cubic_k(self.w_max / v.mss);
        newreno_after_idle(v, win);
        self.t_epoch = ticks(v.now);
    }
}

impl LinuxCcOps for FreeBsdCubic {}

#[cfg(test)]
mod tests {
    //! Reference arithmetic: each expectation is computed here independently of the module, from
    //! the formulas of sys/netinet/cc/cc.c and cc_cubic.h.
    use super::*;
    use crate::cc::CcVars;

    const MSS: u64 = 1448;

    fn vars(cwnd_segs: u64) -> CcVars {
        let mut v = CcVars::new(MSS, 10 * MSS);
        v.win.cwnd = cwnd_segs * MSS;
        v.cwnd_limited = true;
        v.snd_wnd = u64::MAX / 4;
        v
    }

    #[test]
    fn newreno_ndupack_halves_cwnd_rounded_down_to_segments() {
        // cc.c newreno_cc_cong_signal(): max(cwnd * 50 / (100 * mss), 2) * mss.
        let mut cc = FreeBsdNewReno::default();
        let mut v = vars(0);
        v.win.cwnd = 101 * MSS + 700; // 101.48 segments
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        assert_eq!(v.win.ssthresh, 50 * MSS); // 147_587 * 50 / 144_800 = 50.96 -> 50
        assert_eq!(
            v.win.cwnd,
            101 * MSS + 700,
            "the module does not cut cwnd; the stack does"
        );
        v.win.cwnd = 3 * MSS;
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        assert_eq!(v.win.ssthresh, 2 * MSS);
    }

    #[test]
    fn newreno_rto_uses_min_of_window_and_pipe() {
        // cc.c newreno_cc_cong_signal() CC_RTO: max(2, min(snd_wnd, pipe) / 2 / mss) * mss.
        let mut cc = FreeBsdNewReno::default();
        let mut v = vars(100);
        v.flight = 61 * MSS;
        v.snd_wnd = 1_000_000;
        cc.cong_signal(&v.view, &mut v.win, CongSignal::Rto);
        assert_eq!(v.win.ssthresh, 30 * MSS); // 88_328 / 2 = 44_164 -> 30 segments
        v.snd_wnd = 10 * MSS;
        cc.cong_signal(&v.view, &mut v.win, CongSignal::Rto);
        assert_eq!(v.win.ssthresh, 5 * MSS);
    }

    #[test]
    fn newreno_slow_start_then_abc_congestion_avoidance() {
        // Slow start (cwnd <= ssthresh): + min(acked, 2 mss), only mss after an RTO. Congestion
        // avoidance: the stack counts min(acked, 2 mss) per ACK and one mss is added when a
        // cwnd's worth has been counted.
        let mut cc = FreeBsdNewReno::default();
        let mut v = vars(10);
        v.win.ssthresh = 12 * MSS;
        v.bytes_this_ack = 3 * MSS; // stretch ACK
        cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        assert_eq!(v.win.cwnd, 12 * MSS);
        v.after_rto = true;
        cc.ack_received(&v.view, &mut v.win, AckKind::Ack); // cwnd == ssthresh is still slow start
        assert_eq!(v.win.cwnd, 13 * MSS);
        v.after_rto = false;
        // Now cwnd = 13 > ssthresh: 13 segments must be counted, 2 per ACK at most -> 7 ACKs of 3.
        for i in 1..=7 {
            v.bytes_this_ack = 3 * MSS;
            cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
            let want = if i < 7 { 13 } else { 14 };
            assert_eq!(v.win.cwnd, want * MSS, "after ACK {i}");
        }
        // No growth in recovery.
        v.in_recovery = true;
        for _ in 0..20 {
            cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        }
        assert_eq!(v.win.cwnd, 14 * MSS);
    }

    #[test]
    fn newreno_post_recovery_and_after_idle() {
        let mut cc = FreeBsdNewReno::default();
        let mut v = vars(40);
        v.win.ssthresh = 20 * MSS;
        v.flight = 5 * MSS + 10;
        cc.post_recovery(&v.view, &mut v.win);
        assert_eq!(v.win.cwnd, 6 * MSS + 10);
        v.flight = 25 * MSS;
        cc.post_recovery(&v.view, &mut v.win);
        assert_eq!(v.win.cwnd, 20 * MSS);
        v.win.cwnd = 40 * MSS;
        cc.after_idle(&v.view, &mut v.win);
        assert_eq!((v.win.cwnd, v.win.ssthresh), (10 * MSS, 30 * MSS));
    }

    #[test]
    fn cubic_k_matches_the_kt32_polynomial_and_the_cube_root() {
        // The polynomial by hand for W_max = 100 segments: s = (100*77 << 8) / 102 = 19_325;
        // rebased three times by >> 3: 2415, 301, 37 (p = 3); K = ((37*275)>>8) + 98 -
        // (((37*37*120)>>8)>>8) = 39 + 98 - 2 = 135; << 3 = 1080, i.e. 4.22 s.
        assert_eq!(cubic_k(100), 1080);
        // It approximates cbrt(W_max * 0.3 / 0.4) within a few percent across the range.
        for w in [10u64, 50, 100, 500, 1000, 5000] {
            let exact = (w as f64 * (77.0 / 256.0) / (102.0 / 256.0)).cbrt() * 256.0;
            let k = cubic_k(w) as f64;
            assert!((k - exact).abs() / exact < 0.06, "w={w}: {k} vs {exact}");
        }
    }

    #[test]
    fn cubic_cwnd_follows_the_curve() {
        // At t = K the window is W_max; one second later C * 1^3 = 102/256 segments more.
        let k = 1080; // 4.22 s
        let wmax = 100 * MSS;
        let t_k_us = k * 1_000_000 / 256;
        assert_eq!(cubic_cwnd(t_k_us, wmax, MSS, k), wmax);
        // t - K = 1 s exactly: (256^3 * 102) >> 32 = 0.398 -> 0 whole segments.
        assert_eq!(cubic_cwnd(t_k_us + 1_000_000, wmax, MSS, k), wmax);
        // t - K = 3 s: 768^3 * 102 >> 32 = 10.75 -> 10 segments.
        assert_eq!(
            cubic_cwnd(t_k_us + 3_000_000, wmax, MSS, k),
            wmax + 10 * MSS
        );
        // t = 0: W_max - C K^3 = 100 - 0.398 * 4.22^3 = 100 - 29.9; the arithmetic shift floors
        // -29.9 to -30.
        let at0 = cubic_cwnd(0, wmax, MSS, k) as i64;
        assert_eq!(at0, (100 - 30) * MSS as i64);
    }

    #[test]
    fn cubic_first_loss_halves_then_later_losses_take_0_7() {
        let mut cc = FreeBsdCubic::default();
        let mut v = vars(100);
        cc.conn_init(&v.view, &mut v.win);
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        assert_eq!(v.win.ssthresh, 50 * MSS);
        assert_eq!(cc.w_max, (100 * MSS * 179) >> 8);
        // Second event at cwnd 80 segments, above W_max (69.9 segments): no fast convergence,
        // ssthresh = 80 * 179 / 256.
        v.win.cwnd = 80 * MSS;
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        assert_eq!(v.win.ssthresh, (80 * MSS * 179) >> 8);
        assert_eq!(cc.w_max, 80 * MSS);
        // Third at 60 segments < W_max: fast convergence takes 217/256 of cwnd first.
        v.win.cwnd = 60 * MSS;
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        let fc = (60 * MSS * 217) >> 8;
        assert_eq!(cc.w_max, fc);
        assert_eq!(v.win.ssthresh, (fc * 179) >> 8);
        // post_recovery with a large pipe: cwnd = 0.7 W_max.
        v.flight = 100 * MSS;
        cc.post_recovery(&v.view, &mut v.win);
        assert_eq!(v.win.cwnd, (fc * 179) >> 8);
    }

    /// cc_cubic.c / cc.c slow start: `incr = min(ccv->bytes_this_ack, ccv->nsegs * abc_val *
    /// maxseg)`: a compressed batch of 3 ACKs covering 6 segments grows cwnd by 6 segments, one
    /// ACK for the same 6 segments by 2 (docs/research/freebsd-second-reading.md §3.1).
    #[test]
    fn abc_caps_slow_start_at_nsegs_times_abc_l_var_segments() {
        for nsegs in [1, 3] {
            let mut cc = FreeBsdNewReno::default();
            let mut v = vars(20);
            v.bytes_this_ack = 6 * MSS;
            v.nsegs = nsegs;
            cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
            assert_eq!(v.win.cwnd, 20 * MSS + (6 * MSS).min(nsegs * 2 * MSS));
        }
    }

    #[test]
    fn cubic_slow_start_lasts_until_eight_rtt_samples() {
        // min_rtt_usecs stays at TCPTV_SRTTBASE until 8 samples: slow start even above ssthresh.
        let mut cc = FreeBsdCubic::default();
        let mut v = vars(20);
        cc.conn_init(&v.view, &mut v.win);
        v.win.ssthresh = 10 * MSS;
        v.srtt_ns = 40_000_000;
        v.rtt_samples = 7;
        v.bytes_this_ack = 2 * MSS;
        cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        assert_eq!(v.win.cwnd, 22 * MSS);
        v.rtt_samples = 8;
        cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        assert_ne!(
            v.win.cwnd,
            24 * MSS,
            "congestion avoidance once srtt is trusted"
        );
        assert_eq!(cc.min_rtt_usecs, 40_000);
    }
}

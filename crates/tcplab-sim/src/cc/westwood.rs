//! Linux Westwood+ (net/ipv4/tcp_westwood.c): Reno growth, but after a loss cwnd and ssthresh
//! follow the bandwidth estimated from the ACK stream times the minimum RTT, in bytes per jiffy
//! and jiffies as the kernel keeps them.

use super::linux::{jiffies, reno_cong_avoid, reno_ssthresh, usecs_to_jiffies};
use super::{AckKind, CcHooks, CcView, CongSignal, LinuxCcOps, Window};
use crate::time::Ns;
use crate::time::LINUX_HZ as HZ;

/// TCP_WESTWOOD_RTT_MIN: the shortest bandwidth-sampling window, HZ / 20 (50 ms).
const RTT_MIN: u32 = (HZ / 20) as u32;
/// TCP_WESTWOOD_INIT_RTT: 20 s, deliberately conservative until the first sample.
const INIT_RTT: u32 = (20 * HZ) as u32;

/// struct westwood, plus the Reno snd_cwnd_cnt.
#[derive(Clone, Debug, Default)]
pub struct Westwood {
    bw_ns_est: u32,
    bw_est: u32,
    rtt_win_sx: u32,
    bk: u32,
    snd_una: u64,
    cumul_ack: u32,
    accounted: u32,
    rtt: u32,
    rtt_min: u32,
    first_ack: bool,
    reset_rtt_min: bool,
    cwnd_cnt: u32,
}

/// westwood_do_filter(): a low-pass filter with constant coefficients, (7a + b) / 8.
fn do_filter(a: u32, b: u32) -> u32 {
    (7 * a + b) >> 3
}

impl Westwood {
    /// westwood_filter()
    fn filter(&mut self, delta: u32) {
        if self.bw_ns_est == 0 && self.bw_est == 0 {
            self.bw_ns_est = self.bk / delta;
            self.bw_est = self.bw_ns_est;
        } else {
            self.bw_ns_est = do_filter(self.bw_ns_est, self.bk / delta);
            self.bw_est = do_filter(self.bw_est, self.bw_ns_est);
        }
    }

    /// westwood_update_window(): close the sampling window after max(RTT, 50 ms).
    fn update_window(&mut self, v: &CcView) {
        let now = jiffies(v.now);
        let delta = now.wrapping_sub(self.rtt_win_sx) as i32;
        if self.first_ack {
            self.snd_una = v.snd_una;
            self.first_ack = false;
        }
        if self.rtt != 0 && delta > self.rtt.max(RTT_MIN) as i32 {
            self.filter(delta as u32);
            self.bk = 0;
            self.rtt_win_sx = now;
        }
    }

    fn update_rtt_min(&mut self) {
        if self.reset_rtt_min {
            self.rtt_min = self.rtt;
            self.reset_rtt_min = false;
        } else {
            self.rtt_min = self.rtt_min.min(self.rtt);
        }
    }

    /// westwood_acked_count(): bytes this ACK accounts for, with dupacks credited one MSS each
    /// and taken back from the cumulative ACK that follows.
    fn acked_count(&mut self, v: &CcView) -> u32 {
        let mss = v.mss as u32;
        self.cumul_ack = (v.snd_una - self.snd_una) as u32;
        if self.cumul_ack == 0 {
            self.accounted += mss;
            self.cumul_ack = mss;
        }
        if self.cumul_ack > mss {
            if self.accounted >= self.cumul_ack {
                self.accounted -= self.cumul_ack;
                self.cumul_ack = mss;
            } else {
                self.cumul_ack -= self.accounted;
                self.accounted = 0;
            }
        }
        self.snd_una = v.snd_una;
        self.cumul_ack
    }

    /// tcp_westwood_bw_rttmin(): BWE x RTTmin in packets, at least 2 (u32 as the kernel).
    fn bw_rttmin(&self, v: &CcView) -> u64 {
        (self.bw_est.wrapping_mul(self.rtt_min) / v.mss as u32).max(2) as u64
    }
}

impl CcHooks for Westwood {
    fn name(&self) -> &'static str {
        "westwood"
    }

    /// tcp_westwood_init()
    fn conn_init(&mut self, v: &CcView, _win: &mut Window) {
        *self = Westwood {
            reset_rtt_min: true,
            rtt: INIT_RTT,
            rtt_min: INIT_RTT,
            rtt_win_sx: jiffies(v.now),
            snd_una: v.snd_una,
            first_ack: true,
            ..Westwood::default()
        };
    }

    fn ack_received(&mut self, v: &CcView, win: &mut Window, kind: AckKind) {
        reno_cong_avoid(v, win, &mut self.cwnd_cnt, kind);
    }

    /// tcp_reno_ssthresh(); on a timeout, CA_EVENT_LOSS then sets ssthresh = BWE x RTTmin.
    fn cong_signal(&mut self, v: &CcView, win: &mut Window, sig: CongSignal) {
        match sig {
            CongSignal::RtoErr => {}
            CongSignal::Rto => {
                win.ssthresh = self.bw_rttmin(v) * v.mss;
                self.reset_rtt_min = true;
                self.cwnd_cnt = 0;
            }
            CongSignal::NDupAck | CongSignal::Ecn => {
                win.ssthresh = reno_ssthresh(v, win);
                self.cwnd_cnt = 0;
            }
        }
    }

    /// CA_EVENT_COMPLETE_CWR (tcp_end_cwnd_reduction()): ssthresh = cwnd = BWE x RTTmin.
    fn post_recovery(&mut self, v: &CcView, win: &mut Window) {
        win.ssthresh = self.bw_rttmin(v) * v.mss;
        win.cwnd = win.ssthresh;
    }
}

impl LinuxCcOps for Westwood {
    /// tcp_westwood_pkts_acked(): the last RTT sample, in jiffies.
    fn pkts_acked(&mut self, _v: &CcView, _win: &mut Window, _pkts: u32, rtt_ns: Option<Ns>) {
        if let Some(r) = rtt_ns.filter(|&r| r >= 1000) {
            self.rtt = usecs_to_jiffies((r / 1000) as u32);
        }
    }

    /// tcp_westwood_ack(): count the bytes this ACK delivered into the sampling window.
    fn in_ack_event(&mut self, v: &CcView, _win: &mut Window, slow_path: bool) {
        self.update_window(v);
        if slow_path {
            let acked = self.acked_count(v);
            self.bk = self.bk.wrapping_add(acked);
        } else {
            // westwood_fast_bw()
            self.bk = self.bk.wrapping_add((v.snd_una - self.snd_una) as u32);
            self.snd_una = v.snd_una;
        }
        self.update_rtt_min();
    }
}

#[cfg(test)]
mod tests {
    //! Reference arithmetic: net/ipv4/tcp_westwood.c westwood_filter(), westwood_acked_count(),
    //! tcp_westwood_bw_rttmin(), tcp_westwood_event().
    use super::*;
    use crate::cc::CcVars;

    #[test]
    fn bandwidth_is_filtered_per_window_and_sets_the_window_after_recovery() {
        let mut cc = Westwood::default();
        let mut v = CcVars::new(1000, 10_000);
        cc.conn_init(&v.view, &mut v.win);
        cc.pkts_acked(&v.view, &mut v.win, 1, Some(40_000_000)); // 40 ms = 10 jiffies
                                                                 // 1000 bytes every 1 ms (250 kB per 250-jiffy second = 4000 bytes per jiffy).
        for ms in 1..=200u64 {
            v.now = ms * 1_000_000;
            v.snd_una = ms * 1000;
            cc.in_ack_event(&v.view, &mut v.win, false);
        }
        // Windows close when more than max(10, 12) jiffies have passed: at jiffy 13 (ms 52), 26
        // (ms 104), 39 (ms 156). The first ACK only sets snd_una, so the first window holds ms
        // 2..51: 50000 / 13 = 3846; the next two 52000 / 13 = 4000 each. The filter:
        // bw_ns = (7 * 3846 + 4000) >> 3 = 3865, bw = (7 * 3846 + 3865) >> 3 = 3848;
        // bw_ns = (7 * 3865 + 4000) >> 3 = 3881, bw = (7 * 3848 + 3881) >> 3 = 3852.
        assert_eq!(cc.rtt_min, 10);
        assert_eq!(cc.bw_est, 3852);
        v.win.cwnd = 100_000;
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        assert_eq!(v.win.ssthresh, 50_000); // Reno's half at the start of recovery
        cc.post_recovery(&v.view, &mut v.win);
        // then BWE x RTTmin = bw_est * 10 / 1000 packets.
        assert_eq!(v.win.cwnd, (cc.bw_est as u64 * 10 / 1000) * 1000);
        assert_eq!(v.win.ssthresh, v.win.cwnd);
    }

    #[test]
    fn dupacks_are_credited_then_taken_back_from_the_cumulative_ack() {
        let mut cc = Westwood::default();
        let mut v = CcVars::new(1000, 10_000);
        cc.conn_init(&v.view, &mut v.win);
        cc.first_ack = false;
        // Three dupacks: 1000 bytes each, accounted 3000.
        for _ in 0..3 {
            assert_eq!(cc.acked_count(&v), 1000);
        }
        // The ACK covering 5000 bytes counts only 5000 - 3000.
        v.snd_una = 5000;
        assert_eq!(cc.acked_count(&v), 2000);
        assert_eq!(cc.accounted, 0);
    }
}

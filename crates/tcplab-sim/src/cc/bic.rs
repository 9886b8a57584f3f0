//! Linux BIC (net/ipv4/tcp_bic.c): binary search towards the window of the last loss, in packets
//! and jiffies as the kernel computes it, with its module defaults (fast_convergence 1,
//! max_increment 16, low_window 14, beta 819/1024, initial_ssthresh 0, smooth_part 20).

use super::linux::{cong_avoid_ai, jiffies, pkts, slow_start_then};
use super::{AckKind, CaState, CcHooks, CcView, CongSignal, LinuxCcOps, Window};
use crate::time::LINUX_HZ as HZ;

const BICTCP_BETA_SCALE: u32 = 1024;
/// In binary search, go to point (max + min) / B.
const BICTCP_B: u32 = 4;
const MAX_INCREMENT: u32 = 16;
const LOW_WINDOW: u32 = 14;
const BETA: u32 = 819;
const SMOOTH_PART: u32 = 20;
const ACK_RATIO_SHIFT: u32 = 4;

/// struct bictcp.
#[derive(Clone, Debug)]
pub struct Bic {
    cnt: u32,
    last_max_cwnd: u32,
    last_cwnd: u32,
    last_time: u32,
    epoch_start: u32,
    /// Estimated packets per ACK << ACK_RATIO_SHIFT.
    delayed_ack: u32,
    cwnd_cnt: u32,
}

impl Default for Bic {
    fn default() -> Self {
        Bic {
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            epoch_start: 0,
            delayed_ack: 2 << ACK_RATIO_SHIFT,
            cwnd_cnt: 0,
        }
    }
}

impl Bic {
    /// bictcp_reset()
    fn reset(&mut self) {
        *self = Bic {
            cwnd_cnt: self.cwnd_cnt,
            ..Bic::default()
        };
    }

    /// bictcp_update(): ca->cnt for this cwnd.
    fn update(&mut self, cwnd: u32, now: u32) {
        if self.last_cwnd == cwnd && now.wrapping_sub(self.last_time) as i32 <= (HZ / 32) as i32 {
            return;
        }
        self.last_cwnd = cwnd;
        self.last_time = now;
        if self.epoch_start == 0 {
            self.epoch_start = now;
        }
        // Start off normal.
        if cwnd <= LOW_WINDOW {
            self.cnt = cwnd;
            return;
        }
        if cwnd < self.last_max_cwnd {
            // Binary increase.
            let dist = (self.last_max_cwnd - cwnd) / BICTCP_B;
            self.cnt = if dist > MAX_INCREMENT {
                cwnd / MAX_INCREMENT // linear increase
            } else if dist <= 1 {
                (cwnd * SMOOTH_PART) / BICTCP_B
            } else {
                cwnd / dist
            };
        } else if cwnd < self.last_max_cwnd + BICTCP_B {
            // Slow start (max probing).
            self.cnt = (cwnd * SMOOTH_PART) / BICTCP_B;
        } else if cwnd < self.last_max_cwnd + MAX_INCREMENT * (BICTCP_B - 1) {
            self.cnt = (cwnd * (BICTCP_B - 1)) / (cwnd - self.last_max_cwnd);
        } else {
            self.cnt = cwnd / MAX_INCREMENT;
        }
        // In slow start or at very low utilisation: at least 5% per RTT.
        if self.last_max_cwnd == 0 && self.cnt > 20 {
            self.cnt = 20;
        }
        self.cnt = ((self.cnt << ACK_RATIO_SHIFT) / self.delayed_ack).max(1);
    }
}

impl CcHooks for Bic {
    fn name(&self) -> &'static str {
        "bic"
    }

    fn conn_init(&mut self, _v: &CcView, _win: &mut Window) {
        self.reset();
    }

    /// bictcp_cong_avoid()
    fn ack_received(&mut self, v: &CcView, win: &mut Window, kind: AckKind) {
        if let Some(acked) = slow_start_then(v, win, kind) {
            self.update(pkts(v, win), jiffies(v.now));
            let w = self.cnt;
            cong_avoid_ai(v, win, &mut self.cwnd_cnt, w, acked);
        }
    }

    /// bictcp_recalc_ssthresh()
    fn cong_signal(&mut self, v: &CcView, win: &mut Window, sig: CongSignal) {
        if sig == CongSignal::RtoErr {
            return;
        }
        let cwnd = pkts(v, win);
        self.epoch_start = 0;
        // Wmax and fast convergence.
        self.last_max_cwnd = if cwnd < self.last_max_cwnd {
            (cwnd * (BICTCP_BETA_SCALE + BETA)) / (2 * BICTCP_BETA_SCALE)
        } else {
            cwnd
        };
        let ssthresh = if cwnd <= LOW_WINDOW {
            (cwnd >> 1).max(2)
        } else {
            ((cwnd * BETA) / BICTCP_BETA_SCALE).max(2)
        };
        win.ssthresh = ssthresh as u64 * v.mss;
        self.cwnd_cnt = 0;
    }
}

impl LinuxCcOps for Bic {
    /// bictcp_state(): everything is forgotten on a timeout.
    fn set_state(&mut self, _v: &CcView, _win: &mut Window, new: CaState) {
        if new == CaState::Loss {
            self.reset();
        }
    }

    /// bictcp_acked(): the packets-per-ACK ratio, ratio = (15 * ratio + sample) / 16, in Open.
    fn pkts_acked(
        &mut self,
        v: &CcView,
        _win: &mut Window,
        pkts: u32,
        _rtt_ns: Option<crate::time::Ns>,
    ) {
        if v.ca_state == CaState::Open {
            self.delayed_ack =
                (self.delayed_ack + pkts).wrapping_sub(self.delayed_ack >> ACK_RATIO_SHIFT);
        }
    }
}

#[cfg(test)]
mod tests {
    //! Reference arithmetic: net/ipv4/tcp_bic.c bictcp_update() and bictcp_recalc_ssthresh().
    use super::*;
    use crate::cc::CcVars;

    fn vars(cwnd_pkts: u64) -> CcVars {
        let mut v = CcVars::new(1000, 10_000);
        v.win.cwnd = cwnd_pkts * 1000;
        v.win.ssthresh = 1; // congestion avoidance
        v.cwnd_limited = true;
        v
    }

    #[test]
    fn ssthresh_is_819_1024_above_low_window_and_half_below() {
        let mut cc = Bic::default();
        let mut v = vars(100);
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        assert_eq!(v.win.ssthresh, 79_000); // 100 * 819 / 1024 = 79.98 -> 79
        assert_eq!(cc.last_max_cwnd, 100);
        // Fast convergence: a loss below the last maximum lowers it to cwnd * (1 + beta) / 2.
        v.win.cwnd = 90_000;
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        assert_eq!(cc.last_max_cwnd, 90 * 1843 / 2048); // 80
        let mut v = vars(12);
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        assert_eq!(v.win.ssthresh, 6000);
    }

    #[test]
    fn cnt_follows_the_binary_search_regions() {
        // Independent: with delayed_ack = 2 packets per ACK (32 >> 4), cnt = region value * 16 / 32.
        let cases = [
            (200, 100, 100 / 16), // far below: dist 25 > 16 -> linear, cwnd / max_increment
            (200, 180, 180 / 5),  // dist (200 - 180) / 4 = 5 -> cwnd / dist
            (200, 197, 197 * 20 / 4), // dist 0 <= 1 -> cwnd * smooth_part / B
            (200, 202, 202 * 20 / 4), // just above Wmax (< Wmax + B): slow max probing
            (200, 220, 220 * 3 / 20), // < Wmax + 48: cwnd * (B - 1) / (cwnd - Wmax)
            (200, 300, 300 / 16), // far above: linear
        ];
        for (wmax, cwnd, region) in cases {
            let mut cc = Bic {
                last_max_cwnd: wmax,
                ..Bic::default()
            };
            cc.update(cwnd, 1000);
            assert_eq!(
                cc.cnt,
                ((region << 4) / 32).max(1),
                "Wmax {wmax} cwnd {cwnd}"
            );
        }
    }

    #[test]
    fn grows_one_packet_per_cnt_acked_and_tracks_the_ack_ratio() {
        let mut cc = Bic {
            last_max_cwnd: 200,
            ..Bic::default()
        };
        let mut v = vars(100);
        // One packet per ACK in Open: ratio += 1 - (ratio >> 4) from 32 gives 31, then stays
        // (31 >> 4 = 1): the integer filter settles at 31/16, not 16/16.
        for _ in 0..200 {
            cc.pkts_acked(&v.view, &mut v.win, 1, None);
        }
        assert_eq!(cc.delayed_ack, 31);
        v.bytes_this_ack = 1000;
        v.now = 4_000_000_000;
        cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        assert_eq!(cc.cnt, (100 / 16 << 4) / 31); // dist 25 > 16: cwnd / 16 = 6, scaled: 3
        cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        assert_eq!(v.win.cwnd, 100_000);
        cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        assert_eq!(v.win.cwnd, 101_000);
        // Outside Open the ratio is left alone.
        v.ca_state = CaState::Disorder;
        cc.pkts_acked(&v.view, &mut v.win, 5, None);
        assert_eq!(cc.delayed_ack, 31);
    }
}

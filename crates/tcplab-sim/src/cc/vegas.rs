//! Linux Vegas (net/ipv4/tcp_vegas.c): once per RTT, compare the expected and actual rate from
//! the minimum RTT of the round against the lowest RTT ever seen and move cwnd by one packet,
//! with the module defaults alpha 2, beta 4, gamma 1. The RTT bookkeeping (`VegasCore`) is shared
//! with YeAH, as the kernel shares `struct vegas` (tcp_vegas.h).

use super::linux::{pkts, reno_cong_avoid, reno_ssthresh, set_pkts, slow_start};
use super::{AckKind, CaState, CcHooks, CcView, CongSignal, LinuxCcOps, Window};
use crate::time::Ns;

const ALPHA: u32 = 2;
const BETA: u32 = 4;
const GAMMA: u32 = 1;

/// struct vegas (tcp_vegas.h): RTTs in µs.
#[derive(Clone, Debug)]
pub struct VegasCore {
    /// Whether the Vegas calculation runs (only in the Open state).
    pub doing_vegas_now: bool,
    /// End of the current round: snd_nxt when it began.
    pub beg_snd_nxt: u64,
    /// RTT samples this round.
    pub cnt_rtt: u32,
    /// Minimum RTT this round, µs (+1).
    pub min_rtt: u32,
    /// Minimum RTT ever, µs (+1): the propagation delay estimate.
    pub base_rtt: u32,
}

impl Default for VegasCore {
    fn default() -> Self {
        VegasCore {
            doing_vegas_now: true,
            beg_snd_nxt: 0,
            cnt_rtt: 0,
            min_rtt: 0x7fff_ffff,
            base_rtt: 0x7fff_ffff,
        }
    }
}

impl VegasCore {
    /// vegas_enable()
    fn enable(&mut self, v: &CcView) {
        self.doing_vegas_now = true;
        self.beg_snd_nxt = v.snd_nxt;
        self.cnt_rtt = 0;
        self.min_rtt = 0x7fff_ffff;
    }

    /// tcp_vegas_init()
    pub fn init(&mut self, v: &CcView, _win: &Window) {
        self.base_rtt = 0x7fff_ffff;
        self.enable(v);
    }

    /// tcp_vegas_pkts_acked()
    pub fn pkts_acked(&mut self, rtt_ns: Option<Ns>) {
        let Some(r) = rtt_ns else { return };
        // Never allow a zero RTT or baseRTT.
        let vrtt = (r / 1000) as u32 + 1;
        self.base_rtt = self.base_rtt.min(vrtt);
        self.min_rtt = self.min_rtt.min(vrtt);
        self.cnt_rtt += 1;
    }

    /// tcp_vegas_state()
    pub fn set_state(&mut self, v: &CcView, _win: &Window, new: CaState) {
        if new == CaState::Open {
            self.enable(v);
        } else {
            self.doing_vegas_now = false;
        }
    }

    /// The round is over when the ACK passes the snd_nxt recorded at its start.
    pub fn round_over(&self, v: &CcView) -> bool {
        v.snd_una > self.beg_snd_nxt
    }

    /// Start the next round (the slate wiped clean).
    pub fn next_round(&mut self, v: &CcView) {
        self.beg_snd_nxt = v.snd_nxt;
        self.cnt_rtt = 0;
        self.min_rtt = 0x7fff_ffff;
    }
}

/// tcp_current_ssthresh() outside a cwnd reduction: max(ssthresh, 3/4 cwnd).
fn current_ssthresh(v: &CcView, win: &Window) -> u64 {
    let cwnd = pkts(v, win);
    win.ssthresh.max(((cwnd >> 1) + (cwnd >> 2)) as u64 * v.mss)
}

/// Linux Vegas (struct vegas plus its own snd_cwnd_cnt for the Reno fallback).
#[derive(Clone, Debug, Default)]
pub struct Vegas {
    core: VegasCore,
    cwnd_cnt: u32,
}

impl CcHooks for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }

    fn conn_init(&mut self, v: &CcView, win: &mut Window) {
        self.core.init(v, win);
    }

    /// tcp_vegas_cong_avoid()
    fn ack_received(&mut self, v: &CcView, win: &mut Window, kind: AckKind) {
        if kind != AckKind::Ack {
            return;
        }
        if !self.core.doing_vegas_now {
            return reno_cong_avoid(v, win, &mut self.cwnd_cnt, kind);
        }
        if !self.core.round_over(v) {
            if win.in_slow_start() {
                slow_start(v, win, super::linux::acked_pkts(v));
            }
            return;
        }
        // Once per RTT.
        self.core.beg_snd_nxt = v.snd_nxt;
        if self.core.cnt_rtt <= 2 {
            // Too few samples to tell delayed ACKs from queueing: behave like Reno.
            reno_cong_avoid(v, win, &mut self.cwnd_cnt, kind);
        } else {
            let rtt = self.core.min_rtt;
            let base = self.core.base_rtt;
            let cwnd = pkts(v, win);
            let target_cwnd = (cwnd as u64 * base as u64) / rtt as u64;
            // The kernel computes Diff in u32 (it wraps for huge cwnd x queueing delay).
            let diff = cwnd.wrapping_mul(rtt - base) / base;
            if diff > GAMMA && win.in_slow_start() {
                // Going too fast: cwnd = actual rate x baseRTT (+1), and leave slow start.
                set_pkts(v, win, cwnd.min(target_cwnd as u32 + 1));
                win.ssthresh = win.ssthresh.min(win.cwnd);
            } else if win.in_slow_start() {
                slow_start(v, win, super::linux::acked_pkts(v));
            } else if diff > BETA {
                set_pkts(v, win, cwnd - 1);
                win.ssthresh = win.ssthresh.min(win.cwnd);
            } else if diff < ALPHA {
                set_pkts(v, win, cwnd + 1);
            }
            if pkts(v, win) < 2 {
                set_pkts(v, win, 2);
            }
            win.ssthresh = current_ssthresh(v, win);
        }
        self.core.cnt_rtt = 0;
        self.core.min_rtt = 0x7fff_ffff;
    }

    fn cong_signal(&mut self, v: &CcView, win: &mut Window, sig: CongSignal) {
        if sig != CongSignal::RtoErr {
            win.ssthresh = reno_ssthresh(v, win);
            self.cwnd_cnt = 0;
        }
    }

    /// tcp_vegas_cwnd_event(CA_EVENT_CWND_RESTART): start over after idle.
    fn after_idle(&mut self, v: &CcView, win: &mut Window) {
        super::newreno::after_idle(v, win);
        self.core.init(v, win);
    }
}

impl LinuxCcOps for Vegas {
    fn set_state(&mut self, v: &CcView, win: &mut Window, new: CaState) {
        self.core.set_state(v, win, new);
    }

    fn pkts_acked(&mut self, _v: &CcView, _win: &mut Window, _pkts: u32, rtt_ns: Option<Ns>) {
        self.core.pkts_acked(rtt_ns);
    }
}

#[cfg(test)]
mod tests {
    //! Reference arithmetic: net/ipv4/tcp_vegas.c tcp_vegas_cong_avoid().
    use super::*;
    use crate::cc::CcVars;

    /// A round of `n` RTT samples of `rtt_us`, then the ACK that ends it.
    fn round(cc: &mut Vegas, v: &mut CcVars, rtt_us: u64, n: u32) {
        for _ in 0..n {
            cc.pkts_acked(&v.view, &mut v.win, 1, Some(rtt_us * 1000));
        }
        v.snd_una = cc.core.beg_snd_nxt + 1;
        v.snd_nxt = v.snd_una + v.win.cwnd;
        v.bytes_this_ack = 1000;
        cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
    }

    fn vars(cwnd_pkts: u64, ssthresh_pkts: u64) -> CcVars {
        let mut v = CcVars::new(1000, 10_000);
        v.win.cwnd = cwnd_pkts * 1000;
        v.win.ssthresh = ssthresh_pkts * 1000;
        v.cwnd_limited = true;
        v
    }

    #[test]
    fn diff_between_alpha_and_beta_holds_and_outside_moves_one_packet() {
        let mut cc = Vegas::default();
        let mut v = vars(100, 50);
        cc.conn_init(&v.view, &mut v.win);
        // base 10 ms (+1 µs); the first round sees no queue: Diff 0 < alpha -> 101 packets.
        round(&mut cc, &mut v, 10_000, 3);
        assert_eq!(v.win.cwnd, 101_000);
        // A round at 10.3 ms: Diff = 101 * 300 / 10001 = 3, within [alpha, beta] -> hold.
        let before = v.win.cwnd;
        round(&mut cc, &mut v, 10_300, 3);
        assert_eq!(v.win.cwnd, before);
        // 10.1 ms: Diff = 101 * 100 / 10001 = 1 < alpha -> +1.
        round(&mut cc, &mut v, 10_100, 3);
        assert_eq!(v.win.cwnd, before + 1000);
        // 11 ms: Diff = 102 * 1000 / 10001 = 10 > beta -> -1. ssthresh: the round before raised
        // it to 3/4 of 102 = 51 + 25 = 76 (tcp_current_ssthresh()); min(76, 101), then max(76, 75).
        round(&mut cc, &mut v, 11_000, 3);
        assert_eq!(v.win.cwnd, before);
        assert_eq!(v.win.ssthresh, 76_000);
    }

    #[test]
    fn slow_start_ends_at_the_actual_rate_times_base_rtt() {
        let mut cc = Vegas::default();
        let mut v = vars(40, u64::MAX / 4000);
        cc.conn_init(&v.view, &mut v.win);
        round(&mut cc, &mut v, 10_000, 3);
        // 41 packets now; a round at 20 ms: Diff = 41 * 10000 / 10001 = 40 > gamma.
        let cwnd = v.win.cwnd / 1000;
        round(&mut cc, &mut v, 20_000, 3);
        // target = cwnd * 10001 / 20001, + 1.
        assert_eq!(v.win.cwnd / 1000, cwnd * 10_001 / 20_001 + 1);
        assert!(!v.in_slow_start());
    }

    #[test]
    fn fewer_than_three_samples_fall_back_to_reno_and_recovery_disables_vegas() {
        let mut cc = Vegas::default();
        let mut v = vars(100, 50);
        cc.conn_init(&v.view, &mut v.win);
        round(&mut cc, &mut v, 10_000, 3);
        let before = v.win.cwnd;
        round(&mut cc, &mut v, 50_000, 2); // would be a decrease, but only 2 samples
        assert_eq!(v.win.cwnd, before);
        cc.set_state(&v.view, &mut v.win, CaState::Recovery);
        assert!(!cc.core.doing_vegas_now);
        cc.set_state(&v.view, &mut v.win, CaState::Open);
        assert!(cc.core.doing_vegas_now && cc.core.cnt_rtt == 0);
    }
}

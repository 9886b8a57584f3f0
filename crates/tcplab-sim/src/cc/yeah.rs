//! Linux YeAH (net/ipv4/tcp_yeah.c): Scalable-TCP growth while the estimated queue is short,
//! Reno growth and precautionary decongestion when it is long; Vegas' RTT bookkeeping.

use super::linux::{cong_avoid_ai, pkts, set_pkts, slow_start};
use super::vegas::VegasCore;
use super::{AckKind, CaState, CcHooks, CcView, CongSignal, LinuxCcOps, Window};
use crate::time::Ns;

/// Packets queued at the bottleneck that count as congestion.
const ALPHA: u32 = 80;
/// Fraction of the queue removed per RTT (1/GAMMA).
const GAMMA: u32 = 1;
/// log2 of the minimum fraction of cwnd removed on loss.
const DELTA: u32 = 3;
/// log2 of the maximum fraction removed on early decongestion.
const EPSILON: u32 = 1;
/// Maximum queueing delay as a fraction of the base RTT (1/PHY).
const PHY: u32 = 8;
/// Consecutive RTTs of Reno mode that mean competing with Reno flows on loss.
const RHO: u32 = 16;
/// Fast rounds after which reno_count resets.
const ZETA: u32 = 50;
const SCALABLE_AI_CNT: u32 = 100;

/// struct yeah, plus its snd_cwnd_cnt.
#[derive(Clone, Debug)]
pub struct Yeah {
    vegas: VegasCore,
    last_q: u32,
    doing_reno_now: u32,
    reno_count: u32,
    fast_count: u32,
    cwnd_cnt: u32,
}

impl Default for Yeah {
    fn default() -> Self {
        Yeah {
            vegas: VegasCore::default(),
            last_q: 0,
            doing_reno_now: 0,
            reno_count: 2,
            fast_count: 0,
            cwnd_cnt: 0,
        }
    }
}

impl CcHooks for Yeah {
    fn name(&self) -> &'static str {
        "yeah"
    }

    /// tcp_yeah_init()
    fn conn_init(&mut self, v: &CcView, win: &mut Window) {
        *self = Yeah::default();
        self.vegas.init(v, win);
    }

    /// tcp_yeah_cong_avoid()
    fn ack_received(&mut self, v: &CcView, win: &mut Window, kind: AckKind) {
        if kind != AckKind::Ack || !v.cwnd_limited {
            return;
        }
        let mut acked = super::linux::acked_pkts(v);
        if win.in_slow_start() {
            acked = slow_start(v, win, acked);
        }
        if acked > 0 {
            let cwnd = pkts(v, win);
            let w = if self.doing_reno_now == 0 {
                cwnd.min(SCALABLE_AI_CNT) // Scalable
            } else {
                cwnd // Reno
            };
            cong_avoid_ai(v, win, &mut self.cwnd_cnt, w, acked);
        }
        if !self.vegas.round_over(v) {
            return;
        }
        if self.vegas.cnt_rtt > 2 {
            let rtt = self.vegas.min_rtt;
            let base = self.vegas.base_rtt;
            // Packets queued: cwnd x (rtt - base) / rtt.
            let queue = ((pkts(v, win) as u64 * (rtt - base) as u64) / rtt as u64) as u32;
            if queue > ALPHA || rtt - base > base / PHY {
                if queue > ALPHA && pkts(v, win) > self.reno_count {
                    let reduction = (queue / GAMMA).min(pkts(v, win) >> EPSILON);
                    let cwnd = (pkts(v, win) - reduction).max(self.reno_count);
                    set_pkts(v, win, cwnd);
                    win.ssthresh = win.cwnd;
                }
                if self.reno_count <= 2 {
                    self.reno_count = (pkts(v, win) >> 1).max(2);
                } else {
                    self.reno_count += 1;
                }
                self.doing_reno_now = (self.doing_reno_now + 1).min(0xff_ffff);
            } else {
                self.fast_count += 1;
                if self.fast_count > ZETA {
                    self.reno_count = 2;
                    self.fast_count = 0;
                }
                self.doing_reno_now = 0;
            }
            self.last_q = queue;
        }
        self.vegas.next_round(v);
    }

    /// tcp_yeah_ssthresh()
    fn cong_signal(&mut self, v: &CcView, win: &mut Window, sig: CongSignal) {
        if sig == CongSignal::RtoErr {
            return;
        }
        let cwnd = pkts(v, win);
        let reduction = if self.doing_reno_now < RHO {
            self.last_q.min((cwnd >> 1).max(2)).max(cwnd >> DELTA)
        } else {
            (cwnd >> 1).max(2)
        };
        self.fast_count = 0;
        self.reno_count = (self.reno_count >> 1).max(2);
        win.ssthresh = (cwnd as i64 - reduction as i64).max(2) as u64 * v.mss;
        self.cwnd_cnt = 0;
    }

    fn after_idle(&mut self, v: &CcView, win: &mut Window) {
        super::newreno::after_idle(v, win);
        self.vegas.init(v, win);
    }
}

impl LinuxCcOps for Yeah {
    fn set_state(&mut self, v: &CcView, win: &mut Window, new: CaState) {
        self.vegas.set_state(v, win, new);
    }

    fn pkts_acked(&mut self, _v: &CcView, _win: &mut Window, _pkts: u32, rtt_ns: Option<Ns>) {
        self.vegas.pkts_acked(rtt_ns);
    }
}

#[cfg(test)]
mod tests {
    //! Reference arithmetic: net/ipv4/tcp_yeah.c tcp_yeah_cong_avoid(), tcp_yeah_ssthresh().
    use super::*;
    use crate::cc::CcVars;

    fn ended_round(cc: &mut Yeah, v: &mut CcVars, rtt_us: u64) {
        for _ in 0..3 {
            cc.pkts_acked(&v.view, &mut v.win, 1, Some(rtt_us * 1000));
        }
        v.snd_una = cc.vegas.beg_snd_nxt + 1;
        v.snd_nxt = v.snd_una + v.win.cwnd;
        v.bytes_this_ack = 1000;
        cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
    }

    fn vars(cwnd_pkts: u64) -> CcVars {
        let mut v = CcVars::new(1000, 10_000);
        v.win.cwnd = cwnd_pkts * 1000;
        v.win.ssthresh = 10_000;
        v.cwnd_limited = true;
        v
    }

    #[test]
    fn scalable_growth_while_the_queue_is_short() {
        let mut cc = Yeah::default();
        let mut v = vars(1000);
        cc.conn_init(&v.view, &mut v.win);
        ended_round(&mut cc, &mut v, 10_000);
        assert_eq!(cc.doing_reno_now, 0);
        // Scalable: one packet per min(cwnd, 100) = 100 acked; the first ACK already counted one.
        v.snd_una = cc.vegas.beg_snd_nxt; // inside the round
        for _ in 0..99 {
            cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        }
        assert_eq!(v.win.cwnd, 1_001_000);
    }

    #[test]
    fn a_long_queue_is_drained_by_its_size_and_reno_mode_begins() {
        let mut cc = Yeah::default();
        let mut v = vars(1000);
        cc.conn_init(&v.view, &mut v.win);
        ended_round(&mut cc, &mut v, 10_000); // base RTT 10.001 ms
                                              // 12 ms: queue = 1000 * 2000 / 12001 = 166 > 80: cwnd -= min(166, 500); ssthresh = cwnd.
        let cwnd = v.win.cwnd / 1000;
        ended_round(&mut cc, &mut v, 12_000);
        let queue = cwnd * 2000 / 12001;
        assert_eq!(v.win.cwnd / 1000, cwnd - queue.min(cwnd / 2));
        assert_eq!(v.win.ssthresh, v.win.cwnd);
        assert_eq!(cc.doing_reno_now, 1);
        assert_eq!(cc.reno_count, (v.win.cwnd / 1000 / 2) as u32);
        assert_eq!(cc.last_q, queue as u32);
    }

    #[test]
    fn loss_removes_the_last_queue_estimate_bounded_by_an_eighth_and_a_half() {
        let mut cc = Yeah {
            last_q: 30,
            ..Yeah::default()
        };
        let mut v = vars(400);
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        assert_eq!(v.win.ssthresh, 350_000); // reduction = max(min(30, 200), 400 / 8 = 50)
        cc.last_q = 300;
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        assert_eq!(v.win.ssthresh, 200_000); // min(300, 200)
        cc.doing_reno_now = RHO;
        cc.last_q = 0;
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        assert_eq!(v.win.ssthresh, 200_000); // Reno mode: half
    }
}

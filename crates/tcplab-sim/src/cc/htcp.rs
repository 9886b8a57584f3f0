//! Linux H-TCP (net/ipv4/tcp_htcp.c): the increase grows with the time since the last
//! congestion event, the decrease is minRTT / maxRTT, both in the kernel's fixed point (<< 7) and
//! jiffies, with its module defaults (use_rtt_scaling 1, use_bandwidth_switch 1).

use super::linux::{jiffies, pkts, slow_start_or_avoid, usecs_to_jiffies};
use super::{AckKind, CaState, CcHooks, CcView, CongSignal, LinuxCcOps, Window};
use crate::time::Ns;
use crate::time::LINUX_HZ as HZ;

/// 1.0 << 7
const ALPHA_BASE: u32 = 1 << 7;
/// 0.5 << 7
const BETA_MIN: u32 = 1 << 6;
/// 0.8 << 7
const BETA_MAX: u32 = 102;

fn msecs_to_jiffies(ms: u32) -> u32 {
    (ms as u64 * HZ).div_ceil(1000) as u32
}

/// include/linux/tcp.h-style between(): seq2 <= seq1 <= seq3 in wrapping u32 arithmetic.
fn between(seq1: u32, seq2: u32, seq3: u32) -> bool {
    seq3.wrapping_sub(seq2) >= seq1.wrapping_sub(seq2)
}

/// struct htcp, plus tp->snd_cwnd_cnt which H-TCP uses as its own counter.
#[derive(Clone, Debug)]
pub struct Htcp {
    alpha: u32,
    beta: u32,
    modeswitch: bool,
    pkts_acked: u16,
    packetcount: u32,
    min_rtt: u32,
    max_rtt: u32,
    last_cong: u32,
    undo_last_cong: u32,
    undo_max_rtt: u32,
    undo_old_max_b: u32,
    min_b: u32,
    max_b: u32,
    old_max_b: u32,
    bi: u32,
    lasttime: u32,
    cwnd_cnt: u32,
}

impl Default for Htcp {
    /// htcp_init() at jiffies 0.
    fn default() -> Self {
        Htcp {
            alpha: ALPHA_BASE,
            beta: BETA_MIN,
            modeswitch: false,
            pkts_acked: 1,
            packetcount: 0,
            min_rtt: 0,
            max_rtt: 0,
            last_cong: 0,
            undo_last_cong: 0,
            undo_max_rtt: 0,
            undo_old_max_b: 0,
            min_b: 0,
            max_b: 0,
            old_max_b: 0,
            bi: 0,
            lasttime: 0,
            cwnd_cnt: 0,
        }
    }
}

impl Htcp {
    fn cong_time(&self, now: u32) -> u32 {
        now.wrapping_sub(self.last_cong)
    }

    /// htcp_reset()
    fn reset(&mut self, now: u32) {
        self.undo_last_cong = self.last_cong;
        self.undo_max_rtt = self.max_rtt;
        self.undo_old_max_b = self.old_max_b;
        self.last_cong = now;
    }

    /// measure_rtt(), srtt in jiffies.
    fn measure_rtt(&mut self, srtt: u32, state: CaState) {
        if self.min_rtt > srtt || self.min_rtt == 0 {
            self.min_rtt = srtt;
        }
        if state == CaState::Open {
            if self.max_rtt < self.min_rtt {
                self.max_rtt = self.min_rtt;
            }
            if self.max_rtt < srtt && srtt <= self.max_rtt + msecs_to_jiffies(20) {
                self.max_rtt = srtt;
            }
        }
    }

    /// htcp_beta_update()
    fn beta_update(&mut self, min_rtt: u32, max_rtt: u32) {
        let (max_b, old_max_b) = (self.max_b, self.old_max_b);
        self.old_max_b = self.max_b;
        if !between(5 * max_b, 4 * old_max_b, 6 * old_max_b) {
            self.beta = BETA_MIN;
            self.modeswitch = false;
            return;
        }
        if self.modeswitch && min_rtt > msecs_to_jiffies(10) && max_rtt != 0 {
            self.beta = ((min_rtt << 7) / max_rtt).clamp(BETA_MIN, BETA_MAX);
        } else {
            self.beta = BETA_MIN;
            self.modeswitch = true;
        }
    }

    /// htcp_alpha_update()
    fn alpha_update(&mut self, now: u32) {
        let min_rtt = self.min_rtt;
        let mut factor: u32 = 1;
        let mut diff = self.cong_time(now);
        let hz = HZ as u32;
        if diff > hz {
            diff -= hz;
            factor = 1 + (10 * diff + ((diff / 2) * (diff / 2) / hz)) / hz;
        }
        if min_rtt != 0 {
            // RTT scaling, the ratio clamped to [0.5, 10] << 3.
            let scale = ((hz << 3) / (10 * min_rtt)).clamp(1 << 2, 10 << 3);
            factor = ((factor << 3) / scale).max(1);
        }
        self.alpha = 2 * factor * ((1 << 7) - self.beta);
        if self.alpha == 0 {
            self.alpha = ALPHA_BASE;
        }
    }

    /// htcp_param_update()
    fn param_update(&mut self, now: u32) {
        let (min_rtt, max_rtt) = (self.min_rtt, self.max_rtt);
        self.beta_update(min_rtt, max_rtt);
        self.alpha_update(now);
        // Slowly fading memory for maxRTT, for routing changes.
        if min_rtt > 0 && max_rtt > min_rtt {
            self.max_rtt = min_rtt + ((max_rtt - min_rtt) * 95) / 100;
        }
    }
}

impl CcHooks for Htcp {
    fn name(&self) -> &'static str {
        "htcp"
    }

    fn conn_init(&mut self, v: &CcView, _win: &mut Window) {
        *self = Htcp {
            last_cong: jiffies(v.now),
            ..Htcp::default()
        };
    }

    /// htcp_cong_avoid()
    fn ack_received(&mut self, v: &CcView, win: &mut Window, kind: AckKind) {
        if !slow_start_or_avoid(v, win, kind) {
            return;
        }
        // In theory cwnd += alpha / cwnd.
        let cwnd = pkts(v, win);
        if (self.cwnd_cnt.wrapping_mul(self.alpha)) >> 7 >= cwnd {
            win.cwnd += v.mss;
            self.cwnd_cnt = 0;
            self.alpha_update(jiffies(v.now));
        } else {
            self.cwnd_cnt += self.pkts_acked as u32;
        }
        self.pkts_acked = 1;
    }

    /// htcp_recalc_ssthresh()
    fn cong_signal(&mut self, v: &CcView, win: &mut Window, sig: CongSignal) {
        if sig == CongSignal::RtoErr {
            return;
        }
        self.param_update(jiffies(v.now));
        win.ssthresh = ((pkts(v, win) * self.beta) >> 7).max(2) as u64 * v.mss;
        self.cwnd_cnt = 0;
    }
}

impl LinuxCcOps for Htcp {
    /// htcp_state()
    fn set_state(&mut self, v: &CcView, _win: &mut Window, new: CaState) {
        let now = jiffies(v.now);
        match new {
            CaState::Open => {
                if self.undo_last_cong != 0 {
                    self.last_cong = now;
                    self.undo_last_cong = 0;
                }
            }
            CaState::Cwr | CaState::Recovery | CaState::Loss => self.reset(now),
            CaState::Disorder => {}
        }
    }

    /// measure_achieved_throughput()
    fn pkts_acked(&mut self, v: &CcView, win: &mut Window, pkts_acked: u32, rtt_ns: Option<Ns>) {
        let now = jiffies(v.now);
        if v.ca_state == CaState::Open {
            self.pkts_acked = pkts_acked as u16;
        }
        if let Some(r) = rtt_ns.filter(|&r| r >= 1000) {
            self.measure_rtt(usecs_to_jiffies((r / 1000) as u32), v.ca_state);
        }
        // Achieved throughput, in Open and Disorder only.
        if !matches!(v.ca_state, CaState::Open | CaState::Disorder) {
            self.packetcount = 0;
            self.lasttime = now;
            return;
        }
        self.packetcount += pkts_acked;
        let alpha_pkts = if self.alpha >> 7 != 0 {
            self.alpha >> 7
        } else {
            1
        };
        if self.packetcount >= pkts(v, win).wrapping_sub(alpha_pkts)
            && now.wrapping_sub(self.lasttime) >= self.min_rtt
            && self.min_rtt > 0
        {
            let cur_bi = self.packetcount * HZ as u32 / now.wrapping_sub(self.lasttime).max(1);
            if self.cong_time(now) / self.min_rtt <= 3 {
                // Just after backoff.
                self.min_b = cur_bi;
                self.max_b = cur_bi;
                self.bi = cur_bi;
            } else {
                self.bi = (3 * self.bi + cur_bi) / 4;
                self.max_b = self.max_b.max(self.bi);
                if self.min_b > self.max_b {
                    self.min_b = self.max_b;
                }
            }
            self.packetcount = 0;
            self.lasttime = now;
        }
    }
}

#[cfg(test)]
mod tests {
    //! Reference arithmetic: net/ipv4/tcp_htcp.c htcp_alpha_update(), htcp_beta_update(),
    //! htcp_recalc_ssthresh(), htcp_cong_avoid().
    use super::*;
    use crate::cc::CcVars;

    #[test]
    fn alpha_grows_with_time_since_congestion_as_the_kernel_polynomial() {
        // HZ = 250. 3 s after the last congestion event, minRTT 100 ms = 25 jiffies, beta 0.5:
        // diff = 750 - 250 = 500; factor = 1 + (10*500 + 250*250/250) / 250 = 1 + 5250/250 = 22;
        // scale = (250 << 3) / (10 * 25) = 8 (1.0); factor = (22 << 3) / 8 = 22;
        // alpha = 2 * 22 * (128 - 64) = 2816 (22 packets per RTT << 7).
        let mut cc = Htcp {
            min_rtt: 25,
            ..Htcp::default()
        };
        cc.alpha_update(750);
        assert_eq!(cc.alpha, 2816);
        // Within the first second, the low-speed regime: alpha = 2 * (1 - beta) = 1 << 7.
        cc.alpha_update(200);
        assert_eq!(cc.alpha, 128);
        // A 12 ms path (3 jiffies) scales it down: scale = 2000 / 30 = 66, factor = 176 / 66 = 2.
        cc.min_rtt = 3;
        cc.alpha_update(750);
        assert_eq!(cc.alpha, 2 * 2 * 64);
    }

    #[test]
    fn beta_is_min_over_max_rtt_once_bandwidth_is_stable() {
        let mut cc = Htcp {
            min_rtt: 25,
            max_rtt: 40,
            modeswitch: true,
            max_b: 1000,
            old_max_b: 1000,
            ..Htcp::default()
        };
        let mut v = CcVars::new(1000, 10_000);
        v.win.cwnd = 100_000;
        v.now = 4_000_000_000;
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        // beta = (25 << 7) / 40 = 80 (0.625); ssthresh = (100 * 80) >> 7 = 62 packets.
        assert_eq!(cc.beta, 80);
        assert_eq!(v.win.ssthresh, 62_000);
        // maxRTT fades: 25 + 15 * 95 / 100 = 39.
        assert_eq!(cc.max_rtt, 39);
        // A bandwidth change of more than 20% falls back to beta 0.5.
        cc.max_b = 2000;
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        assert_eq!(cc.beta, BETA_MIN);
        assert_eq!(v.win.ssthresh, 50_000);
    }

    #[test]
    fn congestion_avoidance_adds_a_packet_when_cnt_times_alpha_reaches_cwnd() {
        let mut cc = Htcp {
            alpha: 3 << 7,
            min_rtt: 25,
            ..Htcp::default()
        };
        let mut v = CcVars::new(1000, 10_000);
        v.win.cwnd = 30_000;
        v.win.ssthresh = 1000;
        v.cwnd_limited = true;
        v.bytes_this_ack = 1000;
        // (cnt * 3) >= 30 needs cnt = 10, counted one packet per ACK, then one more ACK to apply.
        for _ in 0..10 {
            cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        }
        assert_eq!(v.win.cwnd, 30_000);
        cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        assert_eq!(v.win.cwnd, 31_000);
    }
}

//! Linux's congestion-control modules as the kernel computes them: in packets, with integer
//! arithmetic and jiffies. `reno` follows net/ipv4/tcp_cong.c (tcp_reno_cong_avoid,
//! tcp_slow_start, tcp_cong_avoid_ai, tcp_reno_ssthresh); `cubic` follows net/ipv4/tcp_cubic.c
//! (bictcp_update, cubic_root, cubictcp_recalc_ssthresh, HyStart: hystart_update,
//! cubictcp_acked) as in current mainline.

use super::{AckKind, CcHooks, CcView, CongSignal, LinuxCcOps, Window};
use crate::time::{Ns, LINUX_HZ as HZ};

pub(crate) fn jiffies(now: Ns) -> u32 {
    (now / (1_000_000_000 / HZ)) as u32 // HZ divides 10^9: one u64 division, no rounding
}

pub(crate) fn usecs_to_jiffies(us: u32) -> u32 {
    (us as u64 * HZ).div_ceil(1_000_000) as u32
}

/// cwnd in packets, as Linux keeps it.
pub(crate) fn pkts(v: &CcView, win: &Window) -> u32 {
    (win.cwnd / v.mss).max(1) as u32
}

pub(crate) fn set_pkts(v: &CcView, win: &mut Window, cwnd: u32) {
    win.cwnd = cwnd.max(1) as u64 * v.mss;
}

pub(crate) fn ssthresh_pkts(v: &CcView, win: &Window) -> u32 {
    (win.ssthresh / v.mss).min(u32::MAX as u64) as u32
}

/// tcp_cong.c tcp_slow_start(): cwnd = min(cwnd + acked, ssthresh); returns the acked packets
/// left over for congestion avoidance.
pub(crate) fn slow_start(v: &CcView, win: &mut Window, acked: u32) -> u32 {
    let cwnd = pkts(v, win);
    let new = (cwnd as u64 + acked as u64).min(ssthresh_pkts(v, win) as u64) as u32;
    let left = acked - (new - cwnd);
    set_pkts(v, win, new);
    left
}

/// tcp_cong.c tcp_cong_avoid_ai(): one packet per `w` packets acked, with credits carried.
pub(crate) fn cong_avoid_ai(v: &CcView, win: &mut Window, cwnd_cnt: &mut u32, w: u32, acked: u32) {
    let mut cwnd = pkts(v, win);
    // If credits accumulated at a higher w, apply them gently now.
    if *cwnd_cnt >= w {
        *cwnd_cnt = 0;
        cwnd += 1;
    }
    *cwnd_cnt += acked;
    if *cwnd_cnt >= w {
        let delta = *cwnd_cnt / w;
        *cwnd_cnt -= delta * w;
        cwnd += delta;
    }
    set_pkts(v, win, cwnd);
}

/// Packets covered by this ACK (Linux counts packets, tcp_skb_pcount).
pub(crate) fn acked_pkts(v: &CcView) -> u32 {
    v.bytes_this_ack.div_ceil(v.mss) as u32
}

/// The opening both tcp_reno_cong_avoid() and cubictcp_cong_avoid() share: nothing unless
/// cwnd-limited; slow start first; the acked packets left for congestion avoidance, if any.
pub(crate) fn slow_start_then(v: &CcView, win: &mut Window, kind: AckKind) -> Option<u32> {
    if kind != AckKind::Ack || !v.cwnd_limited {
        return None;
    }
    let mut acked = acked_pkts(v);
    if win.in_slow_start() {
        acked = slow_start(v, win, acked);
    }
    (acked > 0).then_some(acked)
}

/// The opening of the modules that call tcp_slow_start() without carrying its leftover into
/// congestion avoidance (tcp_htcp.c htcp_cong_avoid, tcp_highspeed.c hstcp_cong_avoid): nothing
/// unless cwnd-limited; in slow start, slow start only. Returns whether congestion avoidance runs.
pub(crate) fn slow_start_or_avoid(v: &CcView, win: &mut Window, kind: AckKind) -> bool {
    if kind != AckKind::Ack || !v.cwnd_limited {
        return false;
    }
    if win.in_slow_start() {
        slow_start(v, win, acked_pkts(v));
        return false;
    }
    true
}

/// Linux Reno (tcp_cong.c).
#[derive(Clone, Debug, Default)]
pub struct LinuxReno {
    cwnd_cnt: u32,
}

/// tcp_cong.c tcp_reno_cong_avoid(), with the caller's snd_cwnd_cnt.
pub(crate) fn reno_cong_avoid(v: &CcView, win: &mut Window, cwnd_cnt: &mut u32, kind: AckKind) {
    if let Some(acked) = slow_start_then(v, win, kind) {
        let w = pkts(v, win);
        cong_avoid_ai(v, win, cwnd_cnt, w, acked);
    }
}

/// tcp_cong.c tcp_reno_ssthresh(): max(cwnd >> 1, 2), in packets.
pub(crate) fn reno_ssthresh(v: &CcView, win: &Window) -> u64 {
    (pkts(v, win) >> 1).max(2) as u64 * v.mss
}

impl CcHooks for LinuxReno {
    fn name(&self) -> &'static str {
        "reno"
    }

    fn ack_received(&mut self, v: &CcView, win: &mut Window, kind: AckKind) {
        reno_cong_avoid(v, win, &mut self.cwnd_cnt, kind);
    }

    fn cong_signal(&mut self, v: &CcView, win: &mut Window, sig: CongSignal) {
        if sig != CongSignal::RtoErr {
            win.ssthresh = reno_ssthresh(v, win);
            self.cwnd_cnt = 0;
        }
    }
}

impl LinuxCcOps for LinuxReno {}

const BICTCP_BETA_SCALE: u32 = 1024;
const BICTCP_HZ: u32 = 10;
const BETA: u32 = 717;
const BIC_SCALE: u32 = 41;
const HYSTART_LOW_WINDOW: u32 = 16;
const HYSTART_ACK_DELTA_US: u32 = 2000;
const HYSTART_MIN_SAMPLES: u8 = 8;
const HYSTART_DELAY_MIN: u32 = 4000;
const HYSTART_DELAY_MAX: u32 = 16000;
/// beta_scale = 8 * (1024 + beta) / 3 / (1024 - beta) = 15 (integer arithmetic as cubictcp_register).
const BETA_SCALE: u32 = 8 * (BICTCP_BETA_SCALE + BETA) / 3 / (BICTCP_BETA_SCALE - BETA);
/// cube_rtt_scale = bic_scale * 10 = 410.
const CUBE_RTT_SCALE: u64 = BIC_SCALE as u64 * 10;
/// cube_factor = 2^(10 + 3 * BICTCP_HZ) / (bic_scale * 10).
const CUBE_FACTOR: u64 = (1u64 << (10 + 3 * BICTCP_HZ)) / (BIC_SCALE as u64 * 10);

/// tcp_cubic.c cubic_root(): table lookup and one Newton-Raphson step (avg error ~0.2%).
pub fn cubic_root(a: u64) -> u32 {
    const V: [u8; 64] = [
        0, 54, 54, 54, 118, 118, 118, 118, 123, 129, 134, 138, 143, 147, 151, 156, 157, 161, 164,
        168, 170, 173, 176, 179, 181, 185, 187, 190, 192, 194, 197, 199, 200, 202, 204, 206, 209,
        211, 213, 215, 217, 219, 221, 222, 224, 225, 227, 229, 231, 232, 234, 236, 237, 239, 240,
        242, 244, 245, 246, 248, 250, 251, 252, 254,
    ];
    let b = 64 - a.leading_zeros(); // fls64
    if b < 7 {
        return (V[a as usize] as u32 + 35) >> 6;
    }
    let b = ((b * 84) >> 8) - 1;
    let shift = (a >> (b * 3)) as usize;
    let mut x = ((V[shift] as u32 + 10) << b) >> 6;
    x = 2 * x + (a / (x as u64 * (x as u64 - 1))) as u32;
    ((x as u64 * 341) >> 10) as u32
}

/// Linux CUBIC with HyStart (struct bictcp).
#[derive(Clone, Debug, Default)]
pub struct LinuxCubic {
    cnt: u32,
    last_max_cwnd: u32,
    last_cwnd: u32,
    last_time: u32,
    bic_origin_point: u32,
    bic_k: u32,
    delay_min_us: u32,
    epoch_start: Option<u32>,
    ack_cnt: u32,
    tcp_cwnd: u32,
    sample_cnt: u8,
    found: bool,
    round_start_us: u32,
    end_seq: u64,
    last_ack_us: u32,
    curr_rtt_us: u32,
    cwnd_cnt: u32,
}

impl LinuxCubic {
    fn reset(&mut self) {
        let cwnd_cnt = self.cwnd_cnt;
        *self = LinuxCubic {
            cwnd_cnt,
            ..Default::default()
        };
    }

    fn hystart_reset(&mut self, v: &CcView) {
        let now_us = (v.now / 1000) as u32;
        self.round_start_us = now_us;
        self.last_ack_us = now_us;
        self.end_seq = v.snd_nxt;
        self.curr_rtt_us = u32::MAX;
        self.sample_cnt = 0;
    }

    /// bictcp_update(): ca->cnt for this cwnd and time.
    fn update(&mut self, v: &CcView, cwnd: u32, acked: u32) {
        let now = jiffies(v.now);
        self.ack_cnt += acked;
        if self.last_cwnd == cwnd && now.wrapping_sub(self.last_time) as i32 <= (HZ / 32) as i32 {
            return;
        }
        // The cubic function is evaluated at most once per jiffy.
        if !(self.epoch_start.is_some() && now == self.last_time) {
            self.last_cwnd = cwnd;
            self.last_time = now;
            if self.epoch_start.is_none() {
                self.epoch_start = Some(now);
                self.ack_cnt = acked;
                self.tcp_cwnd = cwnd;
                if self.last_max_cwnd <= cwnd {
                    self.bic_k = 0;
                    self.bic_origin_point = cwnd;
                } else {
                    self.bic_k = cubic_root(CUBE_FACTOR * (self.last_max_cwnd - cwnd) as u64);
                    self.bic_origin_point = self.last_max_cwnd;
                }
            }
            let epoch = self.epoch_start.expect("set above");
            let mut t = now.wrapping_sub(epoch) as i32 as i64 as u64;
            t += usecs_to_jiffies(self.delay_min_us) as u64;
            t = (t << BICTCP_HZ) / HZ;
            let k = self.bic_k as u64;
            let offs = t.abs_diff(k);
            let delta = ((CUBE_RTT_SCALE * offs * offs * offs) >> (10 + 3 * BICTCP_HZ)) as u32;
            let target = if t < k {
                self.bic_origin_point.saturating_sub(delta)
            } else {
                self.bic_origin_point + delta
            };
            self.cnt = if target > cwnd {
                cwnd / (target - cwnd)
            } else {
                100 * cwnd
            };
            // The initial growth of the cubic function may be too conservative.
            if self.last_max_cwnd == 0 && self.cnt > 20 {
                self.cnt = 20;
            }
        }
        // TCP friendliness.
        let delta = (cwnd * BETA_SCALE) >> 3;
        if delta > 0 {
            while self.ack_cnt > delta {
                self.ack_cnt -= delta;
                self.tcp_cwnd += 1;
            }
        }
        if self.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            self.cnt = self.cnt.min(max_cnt);
        }
        // At most 1 packet per 2 packets acked: 1.5x per RTT.
        self.cnt = self.cnt.max(2);
    }

    /// hystart_update()
    fn hystart_update(&mut self, v: &CcView, win: &mut Window, delay_us: u32) {
        if v.snd_una > self.end_seq {
            self.hystart_reset(v);
        }
        let now_us = (v.now / 1000) as u32;
        // ACK train: ACKs closely spaced for longer than delay_min / 2 (no pacing).
        if now_us.wrapping_sub(self.last_ack_us) as i32 <= HYSTART_ACK_DELTA_US as i32 {
            self.last_ack_us = now_us;
            // hystart_ack_delay(): min(1 ms, 4 * gso_max_size / pacing rate), gso_max_size 64 KB.
            let ack_delay = (65_536u64 * 4 * 1_000_000)
                .checked_div(v.pacing_rate_bytes)
                .map_or(0, |d| d.min(1000));
            let threshold = (self.delay_min_us + ack_delay as u32) >> 1;
            if now_us.wrapping_sub(self.round_start_us) as i32 > threshold as i32 {
                self.found = true;
                win.ssthresh = win.cwnd;
            }
        }
        // Delay increase: this round's minimum RTT above delay_min + clamp(delay_min/8, 4, 16 ms).
        self.curr_rtt_us = self.curr_rtt_us.min(delay_us);
        if self.sample_cnt < HYSTART_MIN_SAMPLES {
            self.sample_cnt += 1;
        } else if self.curr_rtt_us
            > self.delay_min_us
                + (self.delay_min_us >> 3).clamp(HYSTART_DELAY_MIN, HYSTART_DELAY_MAX)
        {
            self.found = true;
            win.ssthresh = win.cwnd;
        }
    }
}

impl CcHooks for LinuxCubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn conn_init(&mut self, v: &CcView, _win: &mut Window) {
        self.reset();
        self.hystart_reset(v);
    }

    /// cubictcp_acked(): HyStart's RTT samples.
    fn rtt_sample(&mut self, v: &CcView, win: &mut Window, rtt_ns: Ns) {
        // Discard delay samples right after fast recovery.
        if let Some(epoch) = self.epoch_start {
            if (jiffies(v.now).wrapping_sub(epoch) as i32) < HZ as i32 {
                return;
            }
        }
        let delay = ((rtt_ns / 1000) as u32).max(1);
        if self.delay_min_us == 0 || self.delay_min_us > delay {
            self.delay_min_us = delay;
        }
        if !self.found && win.in_slow_start() && pkts(v, win) >= HYSTART_LOW_WINDOW {
            self.hystart_update(v, win, delay);
        }
    }

    /// cubictcp_cong_avoid()
    fn ack_received(&mut self, v: &CcView, win: &mut Window, kind: AckKind) {
        if let Some(acked) = slow_start_then(v, win, kind) {
            let cwnd = pkts(v, win);
            self.update(v, cwnd, acked);
            let w = self.cnt;
            cong_avoid_ai(v, win, &mut self.cwnd_cnt, w, acked);
        }
    }

    /// cubictcp_recalc_ssthresh() (and cubictcp_state(TCP_CA_Loss) on a timeout).
    fn cong_signal(&mut self, v: &CcView, win: &mut Window, sig: CongSignal) {
        if sig == CongSignal::RtoErr {
            return;
        }
        let cwnd = pkts(v, win);
        // tcp_init_cwnd_reduction() and tcp_enter_loss() (tcp_input.c v6.18): `tp->snd_cwnd_cnt
        // = 0;`, the count of packets acked toward the next increment, which Linux keeps in
        // tcp_sock and the model in the module.
        self.cwnd_cnt = 0;
        self.epoch_start = None;
        self.last_max_cwnd = if cwnd < self.last_max_cwnd {
            (cwnd * (BICTCP_BETA_SCALE + BETA)) / (2 * BICTCP_BETA_SCALE)
        } else {
            cwnd
        };
        win.ssthresh = ((cwnd * BETA) / BICTCP_BETA_SCALE).max(2) as u64 * v.mss;
        if sig == CongSignal::Rto {
            // tcp_enter_loss(): ssthresh first, then cubictcp_state(TCP_CA_Loss) ->
            // bictcp_reset() clears everything up to `unused` (last_max_cwnd and delay_min too).
            self.reset();
            self.hystart_reset(v);
        }
    }
}

impl LinuxCcOps for LinuxCubic {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::CcVars;

    #[test]
    fn constants_match_cubictcp_register() {
        assert_eq!(BETA_SCALE, 15);
        assert_eq!(CUBE_RTT_SCALE, 410);
        assert_eq!(CUBE_FACTOR, 2_681_735_677);
    }

    #[test]
    fn cubic_root_is_within_its_documented_error() {
        for a in [
            1u64,
            7,
            63,
            64,
            1000,
            123_456,
            1 << 30,
            3 * (1u64 << 40),
            999_999_999_999,
        ] {
            let exact = (a as f64).cbrt();
            let got = cubic_root(a) as f64;
            assert!(
                (got - exact).abs() <= (0.01 * exact).max(1.0),
                "cbrt({a}) = {got}, exact {exact}"
            );
        }
    }

    #[test]
    fn k_for_a_30_packet_gap_is_cbrt_of_gap_over_c_in_bictcp_units() {
        // K = cbrt(gap / C) seconds with C = 410/1024/... in kernel units: cube_factor * gap
        // = 2^40 / 410 * 30; cbrt gives K * 1024 ticks. Independent: cbrt(30 * 1024^3 / 0.4004)
        let k = cubic_root(CUBE_FACTOR * 30) as f64 / 1024.0;
        let c: f64 = 410.0 / 1024.0; // bic_scale * 10 / 1024: the C of the kernel units
        assert!((k - (30.0 / c).cbrt()).abs() < 0.02, "K {k}");
    }

    fn vars(cwnd_pkts: u64) -> CcVars {
        let mut v = CcVars::new(1000, 10_000);
        v.win.cwnd = cwnd_pkts * 1000;
        v.cwnd_limited = true;
        v
    }

    #[test]
    fn reno_halves_in_packets_and_grows_one_packet_per_window() {
        let mut cc = LinuxReno::default();
        let mut v = vars(101);
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        assert_eq!(v.win.ssthresh, 50_000); // 101 >> 1 = 50 packets
        v.win.cwnd = 50_000;
        for _ in 0..25 {
            v.bytes_this_ack = 2000; // delayed ACK, 2 packets
            cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        }
        assert_eq!(v.win.cwnd, 51_000);
    }

    #[test]
    fn reno_slow_start_adds_every_acked_packet_and_stops_at_ssthresh() {
        let mut cc = LinuxReno::default();
        let mut v = vars(10);
        v.win.ssthresh = 13_000;
        v.bytes_this_ack = 5000; // stretch ACK: all 5 count (no ABC limit in Linux)
        cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        // 3 packets to reach ssthresh, the other 2 go to congestion avoidance (cnt 2/13)
        assert_eq!(v.win.cwnd, 13_000);
    }

    #[test]
    fn cubic_ssthresh_is_717_1024_of_cwnd_and_fast_convergence_lowers_w_max() {
        let mut cc = LinuxCubic::default();
        let mut v = vars(1000);
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        assert_eq!(v.win.ssthresh, 700_000); // 1000 * 717 / 1024 = 700
        assert_eq!(cc.last_max_cwnd, 1000);
        v.win.cwnd = 800_000;
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        assert_eq!(cc.last_max_cwnd, 800 * 1741 / 2048); // 680
    }

    #[test]
    fn cubic_cnt_follows_the_kernel_target_one_jiffy_at_a_time() {
        // After a loss at 1000 packets, cwnd 700: K = cubic_root(cube_factor * 300) ticks of 1/1024 s.
        let mut cc = LinuxCubic::default();
        let mut v = vars(1000);
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        v.win.cwnd = 700_000;
        v.win.ssthresh = 700_000;
        v.now = 1_000_000_000;
        cc.delay_min_us = 40_000;
        v.bytes_this_ack = 1000;
        cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        let k = cubic_root(CUBE_FACTOR * 300) as u64;
        // t = (0 + usecs_to_jiffies(40 ms) = 10 jiffies) << 10 / 250 = 40 ticks
        let t = (10u64 << 10) / 250;
        let offs = k - t;
        let delta = ((410 * offs * offs * offs) >> 40) as u32;
        let target = 1000 - delta;
        assert_eq!(cc.cnt, (700 / (target - 700)).max(2));
    }

    #[test]
    fn hystart_delay_increase_ends_slow_start_at_the_current_cwnd() {
        let mut cc = LinuxCubic::default();
        let mut v = vars(100);
        v.snd_nxt = 1_000_000;
        cc.conn_init(&v.view, &mut v.win);
        // base RTT 40 ms; then a round of samples 10 ms higher (> 40 + clamp(5, 4, 16) = 45 ms)
        v.now = 2_000_000_000;
        cc.rtt_sample(&v.view, &mut v.win, 40_000_000);
        // a new round begins once snd_una passes the round's end_seq
        v.snd_una = 1_000_001;
        v.snd_nxt = 3_000_000;
        for i in 0..9 {
            v.now += 3_000_000 + i; // ACKs 3 ms apart: no ACK train
            cc.rtt_sample(&v.view, &mut v.win, 50_000_000);
        }
        assert!(cc.found);
        assert_eq!(v.win.ssthresh, v.win.cwnd);
    }
}

//! Linux BBR v1 (net/ipv4/tcp_bbr.c as in 5.x/6.x): a model of the path from delivery-rate
//! samples (windowed max bandwidth over 10 rounds, windowed min RTT over 10 s), pacing at
//! gain x bandwidth and cwnd at gain x BDP, through STARTUP, DRAIN, PROBE_BW (the eight-phase gain
//! cycle) and PROBE_RTT, with the long-term (policer) estimator and the ACK-aggregation budget.
//! Units as in the kernel: bandwidth in packets/µs << 24, gains << 8, times in µs and jiffies.
//! Not modelled: CA_EVENT_TX_START after idle (bulk senders never idle), `is_ack_delayed`.

use super::linux::jiffies;
use super::minmax::MinMax;
use super::{CaState, CcHooks, CcView, CongSignal, LinuxCcOps, RateSample, Window};
use crate::rng::Rng;
use crate::time::LINUX_HZ as HZ;

const BW_SCALE: u32 = 24;
const BW_UNIT: u64 = 1 << BW_SCALE;
const BBR_SCALE: u32 = 8;
const BBR_UNIT: u32 = 1 << BBR_SCALE;
const CYCLE_LEN: u32 = 8;
/// Window of the bandwidth filter, in rounds.
const BW_RTTS: u32 = CYCLE_LEN + 2;
const MIN_RTT_WIN_SEC: u32 = 10;
const PROBE_RTT_MODE_MS: u32 = 200;
const MIN_TSO_RATE_BPS: u64 = 1_200_000;
const PACING_MARGIN_PERCENT: u64 = 1;
/// 2/ln(2): the smallest gain that doubles the sending rate each round.
const HIGH_GAIN: u32 = BBR_UNIT * 2885 / 1000 + 1;
const DRAIN_GAIN: u32 = BBR_UNIT * 1000 / 2885;
const CWND_GAIN: u32 = BBR_UNIT * 2;
const PACING_GAIN: [u32; CYCLE_LEN as usize] = [
    BBR_UNIT * 5 / 4,
    BBR_UNIT * 3 / 4,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
];
const CYCLE_RAND: u64 = 7;
const CWND_MIN_TARGET: u32 = 4;
const FULL_BW_THRESH: u32 = BBR_UNIT * 5 / 4;
const FULL_BW_CNT: u32 = 3;
const LT_INTVL_MIN_RTTS: u32 = 4;
const LT_LOSS_THRESH: u32 = 50;
const LT_BW_RATIO: u32 = BBR_UNIT / 8;
const LT_BW_DIFF: u64 = 4000 / 8;
const LT_BW_MAX_RTTS: u32 = 48;
const EXTRA_ACKED_GAIN: u32 = BBR_UNIT;
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
const ACK_EPOCH_ACKED_RESET_THRESH: u32 = 1 << 20;
const EXTRA_ACKED_MAX_US: u64 = 100 * 1000;
/// TCP_INIT_CWND
const INIT_CWND: u32 = 10;
/// GSO_MAX_SIZE - 1 - MAX_TCP_HEADER (x86-64: 65536 - 1 - 320).
const TSO_MAX_BYTES: u64 = 65_536 - 1 - 320;

/// Operating modes (enum bbr_mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// Ramp up sending rate rapidly to fill the pipe.
    #[default]
    Startup,
    /// Drain the queue created in startup.
    Drain,
    /// Cruise, probing and yielding bandwidth in turn.
    ProbeBw,
    /// Cut inflight to 4 packets to measure min_rtt.
    ProbeRtt,
}

/// struct bbr, plus sk_pacing_rate which BBR owns.
#[derive(Clone, Debug)]
pub struct Bbr {
    min_rtt_us: u32,
    min_rtt_stamp: u32,
    probe_rtt_done_stamp: u32,
    bw: MinMax,
    rtt_cnt: u32,
    next_rtt_delivered: u64,
    cycle_mstamp_us: u64,
    /// Current mode.
    pub mode: Mode,
    prev_ca_state: CaState,
    packet_conservation: bool,
    round_start: bool,
    idle_restart: bool,
    probe_rtt_round_done: bool,
    lt_is_sampling: bool,
    lt_rtt_cnt: u32,
    lt_use_bw: bool,
    lt_bw: u32,
    lt_last_delivered: u64,
    lt_last_stamp_ms: u32,
    lt_last_lost: u64,
    pacing_gain: u32,
    cwnd_gain: u32,
    full_bw_reached: bool,
    full_bw_cnt: u32,
    cycle_idx: u32,
    has_seen_rtt: bool,
    prior_cwnd: u32,
    full_bw: u32,
    ack_epoch_mstamp_us: u64,
    extra_acked: [u32; 2],
    ack_epoch_acked: u32,
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
    /// sk_pacing_rate, bytes/s.
    pacing_rate_bytes: u64,
    rng: Rng,
}

impl Default for Bbr {
    fn default() -> Self {
        Bbr {
            min_rtt_us: u32::MAX,
            min_rtt_stamp: 0,
            probe_rtt_done_stamp: 0,
            bw: MinMax::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            cycle_mstamp_us: 0,
            mode: Mode::Startup,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            round_start: false,
            idle_restart: false,
            probe_rtt_round_done: false,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0,
            lt_last_delivered: 0,
            lt_last_stamp_ms: 0,
            lt_last_lost: 0,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            full_bw_reached: false,
            full_bw_cnt: 0,
            cycle_idx: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            full_bw: 0,
            ack_epoch_mstamp_us: 0,
            extra_acked: [0; 2],
            ack_epoch_acked: 0,
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            pacing_rate_bytes: 0,
            rng: Rng::new(0),
        }
    }
}

fn pkts(bytes: u64, mss: u64) -> u32 {
    bytes.div_ceil(mss) as u32
}

fn cwnd_pkts(v: &CcView, win: &Window) -> u32 {
    (win.cwnd / v.mss).max(1) as u32
}

fn us(ns: u64) -> u64 {
    ns / 1000
}

impl Bbr {
    fn max_bw(&self) -> u32 {
        self.bw.get()
    }

    /// bbr_bw(): the long-term rate when policed, else the windowed max.
    fn bw(&self) -> u32 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }

    fn extra_acked(&self) -> u32 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    /// bbr_rate_bytes_per_sec(): rate x mss x gain, 1% below (the pacing margin).
    fn rate_bytes_per_sec(mss: u64, rate: u64, gain: u32) -> u64 {
        let mut r = rate * mss;
        r *= gain as u64;
        r >>= BBR_SCALE;
        r *= 1_000_000 / 100 * (100 - PACING_MARGIN_PERCENT);
        r >> BW_SCALE
    }

    /// bbr_init_pacing_rate_from_rtt(): high_gain x cwnd / RTT (1 ms before any sample).
    fn init_pacing_rate_from_rtt(&mut self, v: &CcView, win: &Window) {
        let rtt_us = if v.srtt_ns > 0 {
            self.has_seen_rtt = true;
            us(v.srtt_ns).max(1)
        } else {
            1000
        };
        let bw = cwnd_pkts(v, win) as u64 * BW_UNIT / rtt_us;
        self.pacing_rate_bytes = Self::rate_bytes_per_sec(v.mss, bw, HIGH_GAIN);
    }

    /// bbr_set_pacing_rate(): never lower it before the pipe is full.
    fn set_pacing_rate(&mut self, v: &CcView, win: &Window, bw: u32, gain: u32) {
        let rate = Self::rate_bytes_per_sec(v.mss, bw as u64, gain);
        if !self.has_seen_rtt && v.srtt_ns > 0 {
            self.init_pacing_rate_from_rtt(v, win);
        }
        if self.full_bw_reached || rate > self.pacing_rate_bytes {
            self.pacing_rate_bytes = rate;
        }
    }

    /// bbr_tso_segs_goal(): about 1 ms of data at the pacing rate (sk_pacing_shift 10).
    fn tso_segs_goal(&self, mss: u64) -> u32 {
        let bytes = (self.pacing_rate_bytes >> 10).min(TSO_MAX_BYTES);
        let min_segs = if self.pacing_rate_bytes < MIN_TSO_RATE_BPS >> 3 {
            1
        } else {
            2
        };
        ((bytes / mss) as u32).max(min_segs).min(0x7f)
    }

    /// bbr_save_cwnd()
    fn save_cwnd(&mut self, v: &CcView, win: &Window) {
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = cwnd_pkts(v, win);
        } else {
            self.prior_cwnd = self.prior_cwnd.max(cwnd_pkts(v, win));
        }
    }

    /// bbr_bdp(): ceil(bw x min_rtt x gain), packets.
    fn bdp(&self, bw: u32, gain: u32) -> u32 {
        if self.min_rtt_us == u32::MAX {
            return INIT_CWND; // no valid RTT sample yet
        }
        let w = bw as u64 * self.min_rtt_us as u64;
        ((w * gain as u64) >> BBR_SCALE).div_ceil(BW_UNIT) as u32
    }

    /// bbr_quantization_budget(): room for full-sized TSO skbs on both hosts.
    fn quantization_budget(&self, cwnd: u32, mss: u64) -> u32 {
        let mut cwnd = cwnd + 3 * self.tso_segs_goal(mss);
        cwnd = (cwnd + 1) & !1; // round up to even: fewer delayed ACKs
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2; // gain cycling gets inflight above BDP even for small BDPs
        }
        cwnd
    }

    fn inflight(&self, bw: u32, gain: u32, mss: u64) -> u32 {
        self.quantization_budget(self.bdp(bw, gain), mss)
    }

    /// bbr_packets_in_net_at_edt(): what will still be in the network when the next scheduled
    /// packet leaves.
    fn packets_in_net_at_edt(&self, v: &CcView, inflight_now: u32) -> u32 {
        let edt = v.next_send_ns.max(v.now);
        let interval_us = us(edt - v.now);
        let interval_delivered = ((self.bw() as u64 * interval_us) >> BW_SCALE) as u32;
        let mut inflight_at_edt = inflight_now;
        if self.pacing_gain > BBR_UNIT {
            inflight_at_edt += self.tso_segs_goal(v.mss);
        }
        inflight_at_edt.saturating_sub(interval_delivered)
    }

    /// bbr_ack_aggregation_cwnd()
    fn ack_aggregation_cwnd(&self) -> u32 {
        if !self.full_bw_reached {
            return 0;
        }
        let max_aggr = (self.bw() as u64 * EXTRA_ACKED_MAX_US / BW_UNIT) as u32;
        ((EXTRA_ACKED_GAIN * self.extra_acked()) >> BBR_SCALE).min(max_aggr)
    }

    /// bbr_set_cwnd_to_recover_or_restore(): packet conservation in the first round of
    /// recovery, the cwnd from before it restored at the end.
    fn set_cwnd_to_recover_or_restore(
        &mut self,
        v: &CcView,
        win: &Window,
        rs: &RateSample,
        acked: u32,
    ) -> (u32, bool) {
        let (prev, state) = (self.prev_ca_state, v.ca_state);
        let mut cwnd = cwnd_pkts(v, win);
        let in_flight = pkts(v.flight, v.mss);
        if rs.losses > 0 {
            cwnd = (cwnd as i64 - rs.losses as i64).max(1) as u32;
        }
        if state == CaState::Recovery && prev != CaState::Recovery {
            self.packet_conservation = true;
            self.next_rtt_delivered = v.delivered_pkts; // start a round now
            cwnd = in_flight + acked;
        } else if prev >= CaState::Recovery && state < CaState::Recovery {
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(in_flight + acked), true);
        }
        (cwnd, false)
    }

    /// bbr_set_cwnd()
    fn set_cwnd(
        &mut self,
        v: &CcView,
        win: &mut Window,
        rs: &RateSample,
        acked: u32,
        bw: u32,
        gain: u32,
    ) {
        let mut cwnd = cwnd_pkts(v, win);
        if acked > 0 {
            let (c, conserving) = self.set_cwnd_to_recover_or_restore(v, win, rs, acked);
            cwnd = c;
            if !conserving {
                let mut target = self.bdp(bw, gain);
                target += self.ack_aggregation_cwnd();
                target = self.quantization_budget(target, v.mss);
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || v.delivered_pkts < INIT_CWND as u64 {
                    cwnd += acked;
                }
                cwnd = cwnd.max(CWND_MIN_TARGET);
            }
        }
        if self.mode == Mode::ProbeRtt {
            cwnd = cwnd.min(CWND_MIN_TARGET);
        }
        win.cwnd = cwnd as u64 * v.mss;
    }

    /// bbr_is_next_cycle_phase()
    fn is_next_cycle_phase(&self, v: &CcView, _win: &Window, rs: &RateSample) -> bool {
        let is_full_length =
            us(v.delivered_mstamp_ns).saturating_sub(self.cycle_mstamp_us) > self.min_rtt_us as u64;
        if self.pacing_gain == BBR_UNIT {
            return is_full_length;
        }
        let inflight = self.packets_in_net_at_edt(v, rs.prior_in_flight as u32);
        let bw = self.max_bw();
        if self.pacing_gain > BBR_UNIT {
            return is_full_length
                && (rs.losses > 0 || inflight >= self.inflight(bw, self.pacing_gain, v.mss));
        }
        is_full_length || inflight <= self.inflight(bw, BBR_UNIT, v.mss)
    }

    fn advance_cycle_phase(&mut self, v: &CcView) {
        self.cycle_idx = (self.cycle_idx + 1) & (CYCLE_LEN - 1);
        self.cycle_mstamp_us = us(v.delivered_mstamp_ns);
    }

    /// bbr_reset_probe_bw_mode(): a random phase other than the 0.75 one.
    fn reset_probe_bw_mode(&mut self, v: &CcView, _win: &Window) {
        self.mode = Mode::ProbeBw;
        self.cycle_idx = CYCLE_LEN - 1 - self.rng.below(CYCLE_RAND) as u32;
        self.advance_cycle_phase(v);
    }

    fn reset_mode(&mut self, v: &CcView, win: &Window) {
        if !self.full_bw_reached {
            self.mode = Mode::Startup;
        } else {
            self.reset_probe_bw_mode(v, win);
        }
    }

    /// bbr_update_bw(): rounds, and the max filter over 10 rounds.
    fn update_bw(&mut self, v: &CcView, win: &Window, rs: &RateSample) {
        self.round_start = false;
        if rs.delivered < 0 || rs.interval_us <= 0 {
            return;
        }
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = v.delivered_pkts;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(v, win, rs);
        let bw = (rs.delivered as u64 * BW_UNIT / rs.interval_us as u64) as u32;
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw.running_max(BW_RTTS, self.rtt_cnt, bw);
        }
    }

    /// bbr_update_ack_aggregation()
    fn update_ack_aggregation(&mut self, v: &CcView, win: &Window, rs: &RateSample) {
        if rs.acked_sacked == 0 || rs.delivered < 0 || rs.interval_us <= 0 {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1f);
            if self.extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let now_us = us(v.delivered_mstamp_ns);
        let epoch_us = now_us.saturating_sub(self.ack_epoch_mstamp_us);
        let mut expected_acked = (self.bw() as u64 * epoch_us / BW_UNIT) as u32;
        if self.ack_epoch_acked <= expected_acked
            || self.ack_epoch_acked + rs.acked_sacked as u32 >= ACK_EPOCH_ACKED_RESET_THRESH
        {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp_us = now_us;
            expected_acked = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + rs.acked_sacked as u32).min(0xfffff);
        let extra = (self.ack_epoch_acked - expected_acked).min(cwnd_pkts(v, win));
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        *slot = (*slot).max(extra);
    }

    /// bbr_check_full_bw_reached(): three rounds without 25% growth.
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let bw_thresh = ((self.full_bw as u64 * FULL_BW_THRESH as u64) >> BBR_SCALE) as u32;
        if self.max_bw() >= bw_thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    /// bbr_check_drain()
    fn check_drain(&mut self, v: &CcView, win: &mut Window) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            win.ssthresh = self.inflight(self.max_bw(), BBR_UNIT, v.mss) as u64 * v.mss;
        }
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(v, pkts(v.flight, v.mss))
                <= self.inflight(self.max_bw(), BBR_UNIT, v.mss)
        {
            self.reset_probe_bw_mode(v, win);
        }
    }

    /// bbr_check_probe_rtt_done()
    fn check_probe_rtt_done(&mut self, v: &CcView, win: &mut Window) {
        let now = jiffies(v.now);
        if !(self.probe_rtt_done_stamp != 0
            && now.wrapping_sub(self.probe_rtt_done_stamp) as i32 > 0)
        {
            return;
        }
        self.min_rtt_stamp = now;
        win.cwnd = win.cwnd.max(self.prior_cwnd as u64 * v.mss);
        self.reset_mode(v, win);
    }

    /// bbr_update_min_rtt(): the 10 s min filter and PROBE_RTT.
    fn update_min_rtt(&mut self, v: &CcView, win: &mut Window, rs: &RateSample) -> Option<u64> {
        let now = jiffies(v.now);
        let mut app_limited_mark = None;
        let filter_expired =
            now.wrapping_sub(self.min_rtt_stamp + MIN_RTT_WIN_SEC * HZ as u32) as i32 > 0;
        if rs.rtt_us >= 0 && (rs.rtt_us as u64 <= self.min_rtt_us as u64 || filter_expired) {
            self.min_rtt_us = rs.rtt_us as u32;
            self.min_rtt_stamp = now;
        }
        if PROBE_RTT_MODE_MS > 0
            && filter_expired
            && !self.idle_restart
            && self.mode != Mode::ProbeRtt
        {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd(v, win);
            self.probe_rtt_done_stamp = 0;
        }
        if self.mode == Mode::ProbeRtt {
            let in_flight = pkts(v.flight, v.mss);
            // Ignore low-rate samples during this mode.
            app_limited_mark = Some(in_flight as u64);
            if self.probe_rtt_done_stamp == 0 && in_flight <= CWND_MIN_TARGET {
                let ms = (PROBE_RTT_MODE_MS as u64 * HZ).div_ceil(1000) as u32;
                self.probe_rtt_done_stamp = now.wrapping_add(ms).max(1);
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = v.delivered_pkts;
            } else if self.probe_rtt_done_stamp != 0 {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(v, win);
                }
            }
        }
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
        app_limited_mark
    }

    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (HIGH_GAIN, HIGH_GAIN),
            Mode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            Mode::ProbeBw => (
                if self.lt_use_bw {
                    BBR_UNIT
                } else {
                    PACING_GAIN[self.cycle_idx as usize]
                },
                CWND_GAIN,
            ),
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
    }

    /// bbr_main() for one ACK. Returns Some(in-flight packets) when PROBE_RTT asks the stack to
    /// mark the connection application-limited.
    pub fn on_ack(&mut self, v: &CcView, win: &mut Window, rs: &RateSample) -> Option<u64> {
        self.update_bw(v, win, rs);
        self.update_ack_aggregation(v, win, rs);
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(v, win, rs) {
            self.advance_cycle_phase(v);
        }
        self.check_full_bw_reached(rs);
        self.check_drain(v, win);
        let app_limited = self.update_min_rtt(v, win, rs);
        self.update_gains();
        let bw = self.bw();
        self.set_pacing_rate(v, win, bw, self.pacing_gain);
        let acked = rs.acked_sacked as u32;
        self.set_cwnd(v, win, rs, acked, bw, self.cwnd_gain);
        app_limited
    }
}

impl CcHooks for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    /// bbr_init()
    fn conn_init(&mut self, v: &CcView, win: &mut Window) {
        *self = Bbr {
            min_rtt_us: if v.min_rtt_ns == 0 {
                u32::MAX
            } else {
                us(v.min_rtt_ns) as u32
            },
            min_rtt_stamp: jiffies(v.now),
            ack_epoch_mstamp_us: us(v.now),
            rng: Rng::new(v.random),
            ..Bbr::default()
        };
        win.ssthresh = u64::MAX / 4; // TCP_INFINITE_SSTHRESH
        self.init_pacing_rate_from_rtt(v, win);
        self.reset_lt_bw_sampling(v, win);
    }

    /// bbr_ssthresh(): save cwnd for after recovery; ssthresh unchanged.
    fn cong_signal(&mut self, v: &CcView, win: &mut Window, sig: CongSignal) {
        if matches!(sig, CongSignal::NDupAck | CongSignal::Rto | CongSignal::Ecn) {
            self.save_cwnd(v, win);
        }
    }

    fn after_idle(&mut self, _v: &CcView, _win: &mut Window) {}

    fn pacing_rate_bps(&self, _v: &CcView, _win: &Window) -> Option<u64> {
        (self.pacing_rate_bytes > 0).then_some(self.pacing_rate_bytes * 8)
    }
}

impl LinuxCcOps for Bbr {
    fn owns_cwnd(&self) -> bool {
        true
    }

    fn needs_pacing(&self) -> bool {
        true
    }

    fn cong_control(&mut self, v: &CcView, win: &mut Window, rs: &RateSample) {
        if let Some(in_flight) = self.on_ack(v, win, rs) {
            win.app_limited_request = Some(in_flight);
        }
    }

    /// bbr_set_state(): an RTO ends the round and counts as a loss for the policer estimator.
    fn set_state(&mut self, v: &CcView, win: &mut Window, new: CaState) {
        if new == CaState::Loss {
            let rs = RateSample {
                losses: 1,
                ..RateSample::default()
            };
            self.prev_ca_state = CaState::Loss;
            self.full_bw = 0;
            self.round_start = true;
            self.lt_bw_sampling(v, win, &rs);
        }
    }
}

#[path = "bbr_lt.rs"]
mod lt;

#[cfg(test)]
#[path = "bbr_tests.rs"]
mod tests;

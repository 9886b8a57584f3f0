//! BBR's long-term bandwidth estimator (tcp_bbr.c bbr_lt_bw_sampling()): on a path that
//! polices, two consistent lossy intervals give the policed rate, used for 48 rounds.

use super::*;

impl Bbr {
    pub(super) fn reset_lt_bw_sampling_interval(&mut self, v: &CcView) {
        self.lt_last_stamp_ms = (us(v.delivered_mstamp_ns) / 1000) as u32;
        self.lt_last_delivered = v.delivered_pkts;
        self.lt_last_lost = v.lost_pkts;
        self.lt_rtt_cnt = 0;
    }

    pub(super) fn reset_lt_bw_sampling(&mut self, v: &CcView, _win: &Window) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval(v);
    }

    /// bbr_lt_bw_interval_done(): two consistent lossy intervals mean a policer.
    pub(super) fn lt_bw_interval_done(&mut self, v: &CcView, _win: &Window, bw: u32) {
        if self.lt_bw != 0 {
            let diff = bw.abs_diff(self.lt_bw);
            if diff * BBR_UNIT <= LT_BW_RATIO * self.lt_bw
                || Self::rate_bytes_per_sec(v.mss, diff as u64, BBR_UNIT) <= LT_BW_DIFF
            {
                self.lt_bw = (bw + self.lt_bw) >> 1;
                self.lt_use_bw = true;
                self.pacing_gain = BBR_UNIT;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_bw_sampling_interval(v);
    }

    /// bbr_lt_bw_sampling()
    pub(super) fn lt_bw_sampling(&mut self, v: &CcView, win: &Window, rs: &RateSample) {
        if self.lt_use_bw {
            if self.mode == Mode::ProbeBw && self.round_start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt_bw_sampling(v, win);
                    self.reset_probe_bw_mode(v, win);
                }
            }
            return;
        }
        // Wait for the first loss before sampling (let a policer exhaust its tokens).
        if !self.lt_is_sampling {
            if rs.losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval(v);
            self.lt_is_sampling = true;
        }
        if rs.is_app_limited {
            self.reset_lt_bw_sampling(v, win);
            return;
        }
        if self.round_start {
            self.lt_rtt_cnt += 1;
        }
        if self.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt_bw_sampling(v, win);
            return;
        }
        if rs.losses == 0 {
            return;
        }
        let lost = (v.lost_pkts - self.lt_last_lost) as u32;
        let delivered = (v.delivered_pkts - self.lt_last_delivered) as u32;
        // A loss rate (lost / delivered) of at least 50/256 (~20%).
        if delivered == 0 || (lost << BBR_SCALE) < LT_LOSS_THRESH * delivered {
            return;
        }
        let t = ((us(v.delivered_mstamp_ns) / 1000) as u32).wrapping_sub(self.lt_last_stamp_ms);
        if (t as i32) < 1 {
            return;
        }
        if t >= u32::MAX / 1000 {
            self.reset_lt_bw_sampling(v, win);
            return;
        }
        let bw = (delivered as u64 * BW_UNIT / (t as u64 * 1000)) as u32;
        self.lt_bw_interval_done(v, win, bw);
    }
}

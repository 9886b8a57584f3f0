//! Linux DCTCP, net/ipv4/tcp_dctcp.c (torvalds/linux): alpha, the EWMA of the fraction of
//! delivered data that was CE-marked, updated once per window of data with g = 1/16
//! (dctcp_shift_g = 4) from alpha = 1 (dctcp_alpha_on_init = DCTCP_MAX_ALPHA = 1024);
//! dctcp_ssthresh() = cwnd - cwnd x alpha / 2 on the once-per-window ECE reduction;
//! dctcp_react_to_loss() = cwnd / 2 on entering recovery or on an RTO (CA_EVENT_LOSS); growth is
//! tcp_reno_cong_avoid(). The receiver's exact CE echo is in tcp::receiver (EcnEcho::Dctcp).
//!
//! Linux counts delivered and delivered_ce in packets (tp->delivered, tp->delivered_ce); this
//! counts bytes acked or SACKed, the same fraction for full-sized segments.

use super::linux::reno_cong_avoid;
use super::{AckKind, CaState, CcHooks, CcView, CongSignal, LinuxCcOps, Window};

/// DCTCP_MAX_ALPHA: alpha is kept in 1/1024 units.
pub const MAX_ALPHA: u64 = 1024;
/// dctcp_shift_g: g = 1/16.
pub const SHIFT_G: u32 = 4;

/// Linux DCTCP's state (struct dctcp).
#[derive(Debug)]
pub struct Dctcp {
    /// alpha x 1024.
    pub alpha: u64,
    next_seq: u64,
    delivered: u64,
    delivered_ce: u64,
    old_delivered: u64,
    old_delivered_ce: u64,
    cwnd_cnt: u32,
}

impl Default for Dctcp {
    fn default() -> Self {
        Dctcp {
            alpha: MAX_ALPHA,
            next_seq: 0,
            delivered: 0,
            delivered_ce: 0,
            old_delivered: 0,
            old_delivered_ce: 0,
            cwnd_cnt: 0,
        }
    }
}

impl Dctcp {
    /// dctcp_reset().
    fn reset(&mut self, v: &CcView) {
        self.next_seq = v.snd_nxt;
        self.old_delivered = self.delivered;
        self.old_delivered_ce = self.delivered_ce;
    }

    /// dctcp_react_to_loss(): ssthresh = max(cwnd / 2, 2) packets.
    fn react_to_loss(v: &CcView, win: &mut Window) {
        win.ssthresh = (win.cwnd / v.mss / 2).max(2) * v.mss;
    }
}

impl CcHooks for Dctcp {
    fn name(&self) -> &'static str {
        "dctcp"
    }

    fn conn_init(&mut self, v: &CcView, _win: &mut Window) {
        self.reset(v);
    }

    fn ack_received(&mut self, v: &CcView, win: &mut Window, kind: AckKind) {
        reno_cong_avoid(v, win, &mut self.cwnd_cnt, kind);
    }

    fn cong_signal(&mut self, v: &CcView, win: &mut Window, sig: CongSignal) {
        if sig != CongSignal::RtoErr {
            // tcp_init_cwnd_reduction() / tcp_enter_loss(): `tp->snd_cwnd_cnt = 0;`.
            self.cwnd_cnt = 0;
        }
        match sig {
            // dctcp_ssthresh(): max(cwnd - (cwnd x alpha >> 11), 2), in packets.
            CongSignal::Ecn | CongSignal::NDupAck => {
                let cwnd = win.cwnd / v.mss;
                win.ssthresh = (cwnd - ((cwnd * self.alpha) >> 11)).max(2) * v.mss;
            }
            // tcp_enter_loss(): ssthresh(), then CA_EVENT_LOSS -> dctcp_react_to_loss().
            CongSignal::Rto => Self::react_to_loss(v, win),
            CongSignal::RtoErr => {}
        }
    }
}

impl LinuxCcOps for Dctcp {
    /// dctcp_state(): entering Recovery halves (the loss reaction), after ssthresh().
    fn set_state(&mut self, v: &CcView, win: &mut Window, new: CaState) {
        if new == CaState::Recovery && v.ca_state != CaState::Recovery {
            Self::react_to_loss(v, win);
        }
    }

    /// dctcp_update_alpha() (the module's in_ack_event).
    fn in_ack_event(&mut self, v: &CcView, _win: &mut Window, _slow_path: bool) {
        self.delivered += v.delivered_bytes_this_ack;
        if v.ece {
            self.delivered_ce += v.delivered_bytes_this_ack;
        }
        if v.snd_una >= self.next_seq {
            let delivered = self.delivered - self.old_delivered;
            let mut delivered_ce = self.delivered_ce - self.old_delivered_ce;
            let mut alpha = self.alpha;
            // alpha -= min_not_zero(alpha, alpha >> g)
            let dec = alpha >> SHIFT_G;
            alpha -= if dec == 0 { alpha } else { alpha.min(dec) };
            if delivered_ce > 0 {
                delivered_ce <<= 10 - SHIFT_G;
                delivered_ce /= delivered.max(1);
                alpha = (alpha + delivered_ce).min(MAX_ALPHA);
            }
            self.alpha = alpha;
            self.reset(v);
        }
    }
}

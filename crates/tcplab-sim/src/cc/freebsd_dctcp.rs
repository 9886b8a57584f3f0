//! FreeBSD DCTCP, sys/netinet/cc/cc_dctcp.c (freebsd/freebsd-src 0191e6d8398f): alpha over the
//! marked bytes per window, g = 1/16 (dctcp_shift_g 4), alpha from 1 (dctcp_alpha = 1024);
//! CC_ECN: ssthresh = cwnd = max(cwnd - cwnd x alpha / 2, 2 mss) once per window
//! (!IN_CONGRECOVERY); CC_NDUPACK: ssthresh = max(cwnd / 2, 2 mss); CC_RTO: alpha updated,
//! ssthresh kept; growth is newreno's, also inside the ECN window (the module leaves
//! congestion recovery around newreno's ack_received). The marked-byte count follows
//! dctcp_ack_received()'s ece_prev correction for delayed ACKs.
//!
//! Not modelled: dctcp_post_recovery()'s extra alpha update when a recovery ends, and the
//! dctcp_slowstart sysctl (off by default).

use super::freebsd::FreeBsdNewReno;
use super::{AckKind, CcHooks, CcView, CongSignal, LinuxCcOps, Window};

const DCTCP_SHIFT: u32 = 10;
const MAX_ALPHA_VALUE: u64 = 1 << DCTCP_SHIFT;
const SHIFT_G: u32 = 4;

/// FreeBSD DCTCP's state (struct dctcp).
#[derive(Debug)]
pub struct FreeBsdDctcp {
    /// alpha x 1024.
    pub alpha: u64,
    bytes_ecn: u64,
    bytes_total: u64,
    save_sndnxt: u64,
    ece_prev: bool,
    /// snd_nxt at the ECN reduction: IN_CONGRECOVERY until snd_una reaches it.
    cong_recovery_until: Option<u64>,
    newreno: FreeBsdNewReno,
}

impl Default for FreeBsdDctcp {
    fn default() -> Self {
        FreeBsdDctcp {
            alpha: MAX_ALPHA_VALUE,
            bytes_ecn: 0,
            bytes_total: 0,
            save_sndnxt: 0,
            ece_prev: false,
            cong_recovery_until: None,
            newreno: FreeBsdNewReno::default(),
        }
    }
}

impl FreeBsdDctcp {
    /// dctcp_update_alpha().
    fn update_alpha(&mut self, v: &CcView) {
        let total = self.bytes_total.max(1);
        let prev = self.alpha;
        self.alpha = (prev - (prev >> SHIFT_G)
            + (self.bytes_ecn << (DCTCP_SHIFT - SHIFT_G)) / total)
            .min(MAX_ALPHA_VALUE);
        self.bytes_ecn = 0;
        self.bytes_total = 0;
        self.save_sndnxt = v.snd_nxt;
    }
}

impl CcHooks for FreeBsdDctcp {
    fn name(&self) -> &'static str {
        "dctcp"
    }

    fn conn_init(&mut self, v: &CcView, win: &mut Window) {
        self.save_sndnxt = v.snd_nxt;
        self.newreno.conn_init(v, win);
    }

    fn ack_received(&mut self, v: &CcView, win: &mut Window, kind: AckKind) {
        let in_ecn_window = self.cong_recovery_until.is_some_and(|h| v.snd_una < h);
        // The stack reports the ECN window as recovery; DCTCP grows through it (EXIT/ENTER
        // CONGRECOVERY around newreno), but not through a fast recovery.
        let mut view = v.clone();
        if in_ecn_window {
            view.in_recovery = false;
        }
        self.newreno.ack_received(&view, win, kind);
        let mss = v.mss;
        let bytes_acked = match kind {
            AckKind::DupAck => v.bytes_this_ack.min(mss),
            AckKind::Ack => v.bytes_this_ack,
        };
        self.bytes_total += bytes_acked;
        if v.ece {
            if !self.ece_prev && bytes_acked > mss {
                self.bytes_ecn += bytes_acked - mss;
            } else {
                self.bytes_ecn += bytes_acked;
            }
            self.ece_prev = true;
        } else {
            if self.ece_prev && bytes_acked > mss {
                self.bytes_ecn += mss;
            }
            self.ece_prev = false;
        }
        // `ccv->curack` is the ACK being processed: snd_una after it.
        if !(v.in_recovery && !in_ecn_window) && v.snd_una + v.bytes_this_ack > self.save_sndnxt {
            self.update_alpha(v);
        }
    }

    fn cong_signal(&mut self, v: &CcView, win: &mut Window, sig: CongSignal) {
        let mss = v.mss;
        let cwin = win.cwnd;
        match sig {
            CongSignal::NDupAck => win.ssthresh = (cwin / 2).max(2 * mss),
            CongSignal::Ecn => {
                win.ssthresh = (cwin - ((cwin * self.alpha) >> (DCTCP_SHIFT + 1))).max(2 * mss);
                win.cwnd = win.ssthresh;
                self.cong_recovery_until = Some(v.snd_nxt);
            }
            CongSignal::Rto => {
                self.update_alpha(v);
                self.save_sndnxt += mss;
            }
            CongSignal::RtoErr => {}
        }
    }

    fn post_recovery(&mut self, v: &CcView, win: &mut Window) {
        self.newreno.post_recovery(v, win);
    }

    fn after_idle(&mut self, v: &CcView, win: &mut Window) {
        self.bytes_ecn = 0;
        self.bytes_total = 0;
        self.save_sndnxt = v.snd_nxt;
        self.alpha = MAX_ALPHA_VALUE;
        self.ece_prev = false;
        self.newreno.after_idle(v, win);
    }
}

impl LinuxCcOps for FreeBsdDctcp {}

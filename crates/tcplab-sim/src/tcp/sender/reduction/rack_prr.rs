//! FreeBSD RACK-stack PRR (rack.c rack_log_ack(), "Deal with PRR here (in recovery only)"):
//! RFC 6937 in bytes gating what is sent, without collapsing cwnd.
//! Followed: tcp_stacks/rack.c @ 01cb9895 and sobomax/freebsd14_vendor @ 0f7ff342.

use super::super::core::Conn;

/// rack.c `r_ctl` PRR fields, bytes.
#[derive(Clone, Debug, Default)]
pub(in crate::tcp::sender) struct RackPrr {
    /// rc_prr_sndcnt as last computed; every send in recovery since then (counted from
    /// `sndcnt_base`) takes from it (rack_log_output()).
    sndcnt: u64,
    sndcnt_base: u64,
    /// rc_prr_delivered.
    prr_delivered: u64,
    /// The connection's bytes sent in recovery when the episode began (rc_prr_out counts from it).
    out_base: u64,
    /// rc_prr_recovery_fs = snd_max - snd_una at entry.
    recovery_fs: u64,
}

impl RackPrr {
    /// rc_prr_sndcnt: what PRR allows out now.
    pub(in crate::tcp::sender) fn sndcnt(&self, c: &Conn) -> u64 {
        self.sndcnt
            .saturating_sub(c.recovery_out_bytes - self.sndcnt_base)
    }

    fn set_sndcnt(&mut self, c: &Conn, v: u64) {
        self.sndcnt = v;
        self.sndcnt_base = c.recovery_out_bytes;
    }

    /// rack_cong_signal(CC_NDUPACK) on entering recovery: PRR state reset, one segment allowed
    /// at once; cwnd is not touched (the cc module's cong_signal sets ssthresh only).
    pub(in crate::tcp::sender) fn begin(&mut self, c: &Conn) {
        self.prr_delivered = 0;
        self.out_base = c.recovery_out_bytes;
        self.set_sndcnt(c, c.mss);
        self.recovery_fs = c.snd_nxt - c.snd_una;
    }

    /// rack_log_ack(), "Deal with PRR here (in recovery only)": RFC 6937 in bytes on every ACK
    /// after the one that entered recovery. `changed` is what this ACK delivered (acked or
    /// SACKed).
    pub(in crate::tcp::sender) fn update(&mut self, c: &Conn, changed: u64) {
        self.prr_delivered += changed;
        let prr_out = c.recovery_out_bytes - self.out_base;
        // pipe = (snd_max - snd_una) - rc_sacked + rc_holes_rxt
        let pipe = c.fb_pipe();
        let ssthresh = c.v.win.ssthresh;
        let sndcnt = if pipe > ssthresh {
            // sndcnt = prr_delivered * ssthresh / recovery_fs + 1 - prr_out, not below 0.
            // A zero recovery_fs allows nothing (rack.c sets rc_prr_sndcnt = 0 then).
            (self.prr_delivered * ssthresh)
                .checked_div(self.recovery_fs)
                .map_or(0, |p| (p + 1).saturating_sub(prr_out))
        } else {
            // Slow-start reduction bound: min(ssthresh - pipe, max(delivered - out, changed) + mss).
            let limit = self.prr_delivered.saturating_sub(prr_out).max(changed) + c.mss;
            (ssthresh - pipe).min(limit)
        };
        self.set_sndcnt(c, sndcnt);
    }

    /// The allowance left at exit; it is spent (rack_post_recovery() zeroes rc_prr_sndcnt).
    pub(in crate::tcp::sender) fn take_left(&mut self, c: &Conn) -> u64 {
        let left = self.sndcnt(c);
        self.set_sndcnt(c, 0);
        left
    }
}

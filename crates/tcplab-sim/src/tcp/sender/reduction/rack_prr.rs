//! FreeBSD RACK-stack PRR (rack.c rack_log_ack(), "Deal with PRR here (in recovery only)"):
//! RFC 6937 in bytes gating what is sent, without collapsing cwnd.
//! Followed: tcp_stacks/rack.c @ 01cb9895 and sobomax/freebsd14_vendor @ 0f7ff342; 15.0-2025:
//! nibanks/freebsd-src rack.c @ 0c19274c (rack_update_prr()).

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
    /// SACKed). `v2025`: rack_update_prr() as at nibanks/freebsd-src
    /// sys/netinet/tcp_stacks/rack.c @ 0c19274c85e092af688e45fa084242ca2dda5847.
    pub(in crate::tcp::sender) fn update(&mut self, c: &Conn, changed: u64, v2025: bool) {
        self.prr_delivered += changed;
        let pipe = if v2025 {
            // rack_update_prr(): `if (sbavail(&so->so_snd) <= (tp->snd_max - tp->snd_una)) {
            // [...] rc_prr_sndcnt = 0; return; }` ("we are application limited"): nothing written
            // is left unsent. Both sides count from the same snd_una, so: written <= snd_max.
            if app_limited_2025(c.written, c.snd_nxt) {
                self.set_sndcnt(c, 0);
                return;
            }
            // do_rack_compute_pipe(): `((tp->snd_max - snd_una) - (rack->r_ctl.rc_sacked +
            // rack->r_ctl.rc_considered_lost)) + rack->r_ctl.rc_holes_rxt` with snd_una =
            // max(snd_una, th_ack) (here snd_una has already moved to th_ack): bytes RACK marked
            // lost (rack_mark_lost(), until acknowledged) leave pipe, their retransmissions count.
            pipe_2025(
                c.snd_nxt - c.snd_una,
                c.sb.sacked_bytes,
                c.sb.lost_bytes,
                c.sb.retrans_bytes,
            )
        } else {
            // pipe = (snd_max - snd_una) - rc_sacked + rc_holes_rxt
            c.fb_pipe()
        };
        let prr = PrrState {
            delivered: self.prr_delivered,
            out: c.recovery_out_bytes - self.out_base,
            recovery_fs: self.recovery_fs,
        };
        self.set_sndcnt(c, prr.sndcnt(c.v.win.ssthresh, pipe, changed, c.mss));
    }

    /// The allowance left at exit; it is spent (rack_post_recovery() zeroes rc_prr_sndcnt).
    pub(in crate::tcp::sender) fn take_left(&mut self, c: &Conn) -> u64 {
        let left = self.sndcnt(c);
        self.set_sndcnt(c, 0);
        left
    }
}

/// rc_prr_delivered, rc_prr_out and rc_prr_recovery_fs, bytes.
struct PrrState {
    delivered: u64,
    out: u64,
    recovery_fs: u64,
}

impl PrrState {
    /// rc_prr_sndcnt from pipe (both versions).
    fn sndcnt(&self, ssthresh: u64, pipe: u64, changed: u64, mss: u64) -> u64 {
        if pipe > ssthresh {
            // sndcnt = prr_delivered * ssthresh / recovery_fs + 1 - prr_out, not below 0.
            // A zero recovery_fs allows nothing (rack.c sets rc_prr_sndcnt = 0 then).
            (self.delivered * ssthresh)
                .checked_div(self.recovery_fs)
                .map_or(0, |p| (p + 1).saturating_sub(self.out))
        } else {
            // Slow-start reduction bound: min(ssthresh - pipe, max(delivered - out, changed) + mss)
            // (`min(0, limit)` when pipe == ssthresh).
            let limit = self.delivered.saturating_sub(self.out).max(changed) + mss;
            (ssthresh - pipe).min(limit)
        }
    }
}

/// 15.0-2025 do_rack_compute_pipe(): `((tp->snd_max - snd_una) - (rack->r_ctl.rc_sacked +
/// rack->r_ctl.rc_considered_lost)) + rack->r_ctl.rc_holes_rxt`; `considered_lost` is what RACK
/// marked lost (rack_mark_lost(), until acknowledged), `holes_rxt` its retransmitted bytes.
fn pipe_2025(outstanding: u64, sacked: u64, considered_lost: u64, holes_rxt: u64) -> u64 {
    (outstanding + holes_rxt).saturating_sub(sacked + considered_lost)
}

/// 15.0-2025 rack_update_prr(): `sbavail(&so->so_snd) <= (tp->snd_max - tp->snd_una)`, both
/// counted from snd_una: nothing written is left unsent.
fn app_limited_2025(written: u64, snd_max: u64) -> bool {
    written <= snd_max
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/research/freebsd-second-reading.md §3.2's cases, computed from rack_update_prr()'s
    /// lines: ssthresh 100 000, recovery_fs 200 000, prr_out 5000, maxseg 1448.
    #[test]
    fn rack_2025_prr_follows_rack_update_prr() {
        let prr = PrrState {
            delivered: 10_000 + 2896,
            out: 5000,
            recovery_fs: 200_000,
        };
        // (1) pipe above ssthresh: 12 896 x 100 000 / 200 000 + 1 - 5000 = 1449.
        assert_eq!(prr.sndcnt(100_000, 150_000, 2896, 1448), 1449);
        // (3) snd_max - th_ack 150 000, 40 000 SACKed, 20 000 considered lost, 5000 retransmitted:
        // pipe 95 000 < ssthresh: min(100 000 - 95 000, max(12 896 - 5000, 2896) + 1448) = 5000.
        let pipe = pipe_2025(150_000, 40_000, 20_000, 5000);
        assert_eq!(pipe, 150_000 - (40_000 + 20_000) + 5000);
        assert_eq!(prr.sndcnt(100_000, pipe, 2896, 1448), 5000);
        // Without considered_lost (the 2023 pipe, 115 000) it would have been 1449.
        assert_ne!(pipe, 150_000 - 40_000 + 5000);
        // pipe == ssthresh: min(0, limit) = 0.
        assert_eq!(prr.sndcnt(100_000, 100_000, 2896, 1448), 0);
        // (2) everything written already sent: sbavail <= snd_max - snd_una.
        assert!(app_limited_2025(1_000_000, 1_000_000));
        assert!(!app_limited_2025(1_000_001, 1_000_000));
    }
}

//! FreeBSD's RACK stack (`net.inet.tcp.functions_default=rack`): what it does differently from
//! the generic RACK-TLP sender — PRR in bytes gating sends without collapsing cwnd, the exit
//! rule, the RTO reduction, the TLP timeout and the HPTS burst mitigation of unpaced flows.
//!
//! Followed: sys/netinet/tcp_stacks/rack.c as read at freebsd/freebsd-src @ 01cb9895
//! (rack_cong_signal(), rack_post_recovery(), rack_calc_thresh_rack(), rack_calc_thresh_tlp(),
//! tunables rack_pkt_delay, rack_tlp_min, rack_delayed_ack_time, rack_prr_addbackmax,
//! rack_dsack_std_based) and at sobomax/freebsd14_vendor @ 0f7ff342 (rack_log_ack()'s PRR
//! block, rack_get_pacing_delay()'s "old method" burst mitigation, rack_slot_reduction).

use super::*;

/// rack.c `r_ctl` PRR fields, bytes.
#[derive(Clone, Debug, Default)]
pub(super) struct RackState {
    /// rc_prr_sndcnt: what PRR allows out now.
    pub(super) prr_sndcnt: u64,
    /// rc_prr_delivered.
    prr_delivered: u64,
    /// rc_prr_out.
    pub(super) prr_out: u64,
    /// rc_prr_recovery_fs = snd_max - snd_una at entry.
    recovery_fs: u64,
    /// rc_rack_largest_cwnd, for the burst mitigation.
    pub(super) largest_cwnd: u64,
    /// When the RACK timer next lets a retransmission out beyond PRR's allowance.
    rr_next: Ns,
}

/// rack_prr_addbackmax: at most this many segments of unused PRR allowance join cwnd at exit.
const PRR_ADDBACK_MAX_SEGS: u64 = 2;
/// rack_slot_reduction: the burst-mitigation slot is shortened by 1/4 "so we don't run dry".
const SLOT_REDUCTION: u64 = 4;
/// rack_tlp_min.
const TLP_MIN_NS: Ns = 10 * crate::time::MS;
/// rack_delayed_ack_time: the peer's delayed ACK the TLP timer allows for with one segment out.
const DELAYED_ACK_NS: Ns = 40 * crate::time::MS;
/// rack_min_to: the shortest RACK timer.
const MIN_TO_NS: Ns = crate::time::MS;

impl TcpSender {
    /// rack_cong_signal(CC_NDUPACK) on entering recovery: PRR state reset, one segment allowed
    /// at once; cwnd is not touched (the cc module's cong_signal sets ssthresh only).
    pub(super) fn rack_enter_recovery(&mut self) {
        self.rk.prr_delivered = 0;
        self.rk.prr_out = 0;
        self.rk.prr_sndcnt = self.mss;
        self.rk.recovery_fs = self.snd_nxt - self.snd_una;
    }

    /// rack_log_ack(), "Deal with PRR here (in recovery only)": RFC 6937 in bytes on every ACK
    /// after the one that entered recovery. `changed` is what this ACK delivered (acked or
    /// SACKed).
    pub(super) fn rack_prr_update(&mut self, changed: u64) {
        self.rk.prr_delivered += changed;
        // pipe = (snd_max - snd_una) - rc_sacked + rc_holes_rxt
        let pipe = self.fb_pipe();
        let ssthresh = self.v.ssthresh;
        self.rk.prr_sndcnt = if pipe > ssthresh {
            // sndcnt = prr_delivered * ssthresh / recovery_fs + 1 - prr_out, not below 0.
            // A zero recovery_fs allows nothing (rack.c sets rc_prr_sndcnt = 0 then).
            (self.rk.prr_delivered * ssthresh)
                .checked_div(self.rk.recovery_fs)
                .map_or(0, |p| (p + 1).saturating_sub(self.rk.prr_out))
        } else {
            // Slow-start reduction bound: min(ssthresh - pipe, max(delivered - out, changed) + mss).
            let limit = self
                .rk
                .prr_delivered
                .saturating_sub(self.rk.prr_out)
                .max(changed)
                + self.mss;
            (ssthresh - pipe).min(limit)
        };
    }

    /// use_rack_rr = 1 ("rack rapid recovery"): rack_timer_start() arms the RACK timer for a
    /// SACK-passed segment whether or not PRR has room, and rack_timeout_rack() hands that segment
    /// to rack_output() as rc_resend with r_timer_override. So a lost segment goes out at least
    /// every rack_min_to even when PRR allows nothing (the RACK threshold itself has already been
    /// applied by the loss marking).
    pub(super) fn rack_rapid_recovery_due(&self, now: Ns) -> bool {
        matches!(self.state, State::Recovery { .. }) && now >= self.rk.rr_next
    }

    pub(super) fn rack_rapid_recovery_sent(&mut self, now: Ns) {
        self.rk.rr_next = now + MIN_TO_NS;
    }

    /// When the next rapid-recovery retransmission is due, if one is waiting.
    pub(super) fn rack_rapid_recovery_deadline(&self) -> Option<Ns> {
        let waiting = self.profile.recovery == crate::stack::Recovery::FreeBsdRack
            && matches!(self.state, State::Recovery { .. })
            && self.sb.lost_bytes > self.sb.retrans_bytes;
        (waiting && self.rk.rr_next > self.v.now).then_some(self.rk.rr_next)
    }

    /// rack_post_recovery(): the cc module's post_recovery, then cwnd at least ssthresh ("Rack
    /// has burst control and pacing so lets not set this any lower than snd_ssthresh per
    /// RFC-6582 (option 2)"), plus up to two segments of PRR allowance left unused.
    pub(super) fn rack_post_recovery(&mut self) {
        self.cc.post_recovery(&mut self.v);
        self.v.cwnd = self.v.cwnd.max(self.v.ssthresh);
        // Only when not application limited: ctf_outstanding() <= sbavail().
        if self.rk.prr_sndcnt > 0 && self.snd_nxt - self.snd_una <= self.written - self.snd_una {
            self.v.cwnd += self.rk.prr_sndcnt.min(PRR_ADDBACK_MAX_SEGS * self.mss);
        }
        self.rk.prr_sndcnt = 0;
    }

    /// rack_cong_signal(CC_RTO): ssthresh = max(2, min(snd_wnd, cwnd) / 2 / mss) * mss and cwnd
    /// = 1 MSS, set by the stack itself; the cc module is not told of the timeout.
    pub(super) fn rack_rto_reduction(&mut self) {
        let w = self.snd_wnd.min(self.v.cwnd);
        self.v.ssthresh = (w / 2 / self.mss).max(2) * self.mss;
    }

    /// What may be sent now: in recovery PRR's allowance, otherwise cwnd - flight.
    pub(super) fn rack_room(&self) -> u64 {
        if matches!(self.state, State::Recovery { .. }) {
            self.rk.prr_sndcnt
        } else {
            self.v.cwnd.saturating_sub(self.pipe())
        }
    }

    /// rack_get_pacing_delay(), old method (no pacing rate): tr_perms = largest cwnd / min RTT in
    /// whole ms; the output loop sends until `tot_len / tr_perms` is at least 1 ms, then waits that
    /// many ms less a quarter. Zero while no RTT has been measured.
    pub(super) fn rack_burst_slot_ns(&self, tot_len: u64) -> Ns {
        let cwnd = if self.rk.largest_cwnd > 0 {
            self.rk.largest_cwnd
        } else {
            self.v.cwnd
        };
        let min_rtt_ms = self.rtt.min_rtt_ns / crate::time::MS;
        burst_slot_ms(tot_len, cwnd, min_rtt_ms, self.mss) * crate::time::MS
    }

    /// rack_calc_thresh_tlp() with rack_tlp_threshold_use = TLP_USE_TWO_ONE: 2 x RTT (the larger
    /// of srtt and the last RTT, rack_tlp_use_greater), or 1.5 x RTT + the peer's delayed ACK
    /// when a single segment is out; not above the RTO, not below rack_tlp_min. Counted from the
    /// last send (rack_timer_start(): thresh - time_since_sent).
    pub(super) fn rack_tlp_deadline(&self, now: Ns) -> Ns {
        let srtt = self.rtt.srtt_ns.max(self.rack_rtt);
        let mut thresh = if srtt == 0 {
            self.profile.initial_rto_ns
        } else {
            2 * srtt
        };
        if self.snd_nxt - self.snd_una <= self.mss {
            thresh = thresh.max(srtt + srtt / 2 + DELAYED_ACK_NS);
        }
        thresh = thresh.min(self.rtt.rto_ns).max(TLP_MIN_NS);
        let since = self.last_send.map_or(0, |t| now.saturating_sub(t));
        now + thresh.saturating_sub(since).max(MIN_TO_NS)
    }
}

/// rack_get_pacing_delay()'s old method in whole ms: tr_perms = cwnd / min_rtt_ms (one segment if
/// that is 0), slot = tot_len / tr_perms, less slot / rack_slot_reduction. 0 without an RTT.
fn burst_slot_ms(tot_len: u64, cwnd: u64, min_rtt_ms: u64, mss: u64) -> u64 {
    if min_rtt_ms == 0 {
        return 0;
    }
    let tr_perms = match cwnd / min_rtt_ms {
        0 => mss,
        n => n,
    };
    let slot = tot_len / tr_perms;
    // "reduce = slot / rack_slot_reduction; if (reduce < slot) slot -= reduce;"
    slot - slot / SLOT_REDUCTION
}

#[cfg(test)]
mod tests {
    use super::burst_slot_ms;

    #[test]
    fn burst_slot_follows_rack_get_pacing_delay_old_method() {
        // cwnd 1 MB over 40 ms: tr_perms = 25_000 bytes per ms.
        assert_eq!(burst_slot_ms(24_999, 1_000_000, 40, 1448), 0); // under 1 ms: keep sending
        assert_eq!(burst_slot_ms(57_920, 1_000_000, 40, 1448), 2); // 2 ms, 2/4 = 0 off
        assert_eq!(burst_slot_ms(200_000, 1_000_000, 40, 1448), 6); // 8 ms less 8/4
        assert_eq!(burst_slot_ms(2_896, 10, 40, 1448), 2); // tr_perms 0 -> one segment
        assert_eq!(burst_slot_ms(1_000_000, 1_000_000, 0, 1448), 0); // no RTT yet
    }
}

//! FreeBSD's RACK stack (`net.inet.tcp.functions_default=rack`): RACK-TLP loss detection with
//! rack.c's thresholds, PRR in bytes gating sends without collapsing cwnd, the exit rule, the RTO
//! reduction, the TLP timeout and the HPTS burst mitigation of unpaced flows.
//!
//! Followed: sys/netinet/tcp_stacks/rack.c as read at freebsd/freebsd-src @ 01cb9895
//! (rack_cong_signal(), rack_post_recovery(), rack_calc_thresh_rack(), rack_calc_thresh_tlp(),
//! tunables rack_pkt_delay, rack_tlp_min, rack_delayed_ack_time, rack_prr_addbackmax,
//! rack_dsack_std_based) and at sobomax/freebsd14_vendor @ 0f7ff342 (rack_log_ack()'s PRR
//! block, rack_get_pacing_delay()'s "old method" burst mitigation, rack_slot_reduction).

use super::core::Conn;
use super::detection::rack::Rack;
use super::detection::tlp::Tlp;
use super::reduction::rack_prr::RackPrr;
use super::rfc::end_of_recovery;
use super::{SenderEvent, State};
// The enum-dispatch build calls the hooks on a concrete type, which needs the trait in scope.
#[cfg_attr(not(feature = "static-cc"), allow(unused_imports))]
use crate::cc::CcHooks;
use crate::config::FreeBsdVersion;
use crate::net::packet::Packet;
use crate::time::{earliest, Ns};

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

/// The RACK stack's own state.
#[derive(Debug, Default)]
pub(super) struct RackStack {
    prr: RackPrr,
    rack: Rack,
    tlp: Tlp,
    /// rc_rack_largest_cwnd, for the burst mitigation.
    largest_cwnd: u64,
    /// When the RACK timer next lets a retransmission out beyond PRR's allowance.
    rr_next: Ns,
    /// Which rack.c is followed.
    version: FreeBsdVersion,
    /// ACKs queued while a burst slot runs (compressed ACKs, `ack_cmp`), in arrival order.
    held: Vec<Packet>,
}

impl RackStack {
    pub(super) fn new(version: FreeBsdVersion) -> Self {
        RackStack {
            version,
            ..Self::default()
        }
    }

    pub(super) fn timer_deadline(&self, c: &Conn) -> Option<Ns> {
        let pace = c.pace_deadline(true);
        let rapid = self.rapid_recovery_deadline(c);
        earliest([
            c.rto_deadline,
            pace,
            c.tsq_wake,
            self.rack.reo_deadline,
            self.tlp.deadline,
            rapid,
            (!self.held.is_empty()).then_some(c.pace_next),
        ])
    }

    /// rack_output(): retransmissions of what RACK marked lost, then new data, within PRR's
    /// allowance in recovery (cwnd - flight otherwise), in bursts the HPTS mitigation cuts.
    pub(super) fn output(
        &mut self,
        c: &mut Conn,
        now: Ns,
        out: &mut Vec<Packet>,
        next_id: &mut u64,
    ) {
        if !c.output_begins(now) {
            return;
        }
        if now >= c.pace_next {
            // rack.c @ 0c19274c rack_output(): while the connection waits on the pacer, `else if
            // (tcp_in_hpts(rack->rc_tp)) { ... return (0); }` ("On the hpts you can't pass even
            // if ACKNOW is on") comes before `rack_sndbuf_autoscale(rack);`, which runs after
            // the length is computed: no growth during a burst slot.
            c.fb_sndbuf_autosize();
        }
        self.largest_cwnd = self.largest_cwnd.max(c.v.win.cwnd);
        c.app_fill(now);
        c.restart_after_idle(now);
        c.tsq_throttled = false;
        let tsq_limit = c.tsq_limit();
        let mut tot_len = 0;
        loop {
            if now < c.pace_next {
                break;
            }
            let room = self.room(c);
            let cand = if let Some((seq, len)) = c.sb.next_lost() {
                Some((seq, len as u64, true))
            } else {
                // FreeBSD's RACK stack probes with TLP instead of RFC 6675's rescue.
                c.new_data_len().map(|len| (c.snd_nxt, len, false))
            };
            let Some((seq, mut len, retx)) = cand else {
                c.nothing_to_send(room);
                break;
            };
            let mut rapid = false;
            if len > room {
                if c.profile.partial_sends && !retx && room > 0 {
                    len = room;
                } else if retx && self.rapid_recovery_due(c, now) {
                    rapid = true;
                } else {
                    c.v.cwnd_limited = true;
                    break;
                }
            }
            if c.tsq_blocks(len, retx, tsq_limit) {
                break;
            }
            if rapid {
                self.rr_next = now + MIN_TO_NS;
            }
            c.emit(seq, len, retx, now, out, next_id);
            // HPTS burst mitigation: stop once the burst needs a pacing slot, and wait it out.
            tot_len += len;
            let slot = self.burst_slot_ns(c, tot_len);
            if slot > 0 {
                c.pace_next = now + slot;
                break;
            }
        }
    }

    /// An ACK arrives: queued while a burst slot runs if the NIC does LRO (`ack_cmp`), else
    /// processed, after any queued before it.
    pub(super) fn on_ack(
        &mut self,
        c: &mut Conn,
        p: &Packet,
        now: Ns,
        out: &mut Vec<Packet>,
        next_id: &mut u64,
    ) {
        if c.profile.ack_cmp && self.queues(c, p, now) {
            self.held.push(*p);
            return;
        }
        self.process_held(c, now, out, next_id);
        self.ack(c, p, now, out, next_id, 1);
    }

    /// Whether an arriving ACK waits for the burst slot's end. rack.c @ 0c19274c
    /// rack_start_hpts_timer() with a slot (`usecs`): `tp->t_flags2 |= TF2_MBUF_QUEUE_READY;`
    /// (LRO queues the connection's ACKs instead of waking it) and, in recovery or with the
    /// RACK timer pending, `tp->t_flags2 |= TF2_DONT_SACK_QUEUE;` ("don't even wake me if a
    /// SACK arrives"); otherwise an ACK carrying SACK blocks, which is not compressed, wakes it.
    /// `rc_ack_can_sendout_data`, which backs both flags out, is off by default.
    fn queues(&self, c: &Conn, p: &Packet, now: Ns) -> bool {
        if now >= c.pace_next {
            return false;
        }
        let sack = !p.sack_blocks().is_empty();
        let dont_sack_wake =
            matches!(c.state, State::Recovery { .. }) || self.rack.reo_deadline.is_some();
        !sack || dont_sack_wake
    }

    /// The queued ACKs in arrival order, as rack_do_compressed_ack_processing() takes them:
    /// each run of ACKs without SACK blocks is one compressed batch (one rack_update_prr() with
    /// the batch's bytes, one rack_ack_received(..., nsegs, ...) with nsegs the entries that
    /// advanced the cumulative ACK, one output call); an ACK with SACK blocks goes through
    /// rack_do_segment() on its own.
    fn process_held(&mut self, c: &mut Conn, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        let held = std::mem::take(&mut self.held);
        let mut i = 0;
        while i < held.len() {
            if !held[i].sack_blocks().is_empty() {
                self.ack(c, &held[i], now, out, next_id, 1);
                i += 1;
                continue;
            }
            let (batch, nsegs) = compressed_batch(&held[i..], c.snd_una);
            self.ack(c, &held[i + batch - 1], now, out, next_id, nsegs);
            i += batch;
        }
    }

    /// Process an ACK (rack_do_segment() -> rack_log_ack(), rack_ack_received()), or a
    /// compressed batch as its last entry (`nsegs` entries).
    fn ack(
        &mut self,
        c: &mut Conn,
        p: &Packet,
        now: Ns,
        out: &mut Vec<Packet>,
        next_id: &mut u64,
        nsegs: u64,
    ) {
        c.v.now = now;
        let a = c.intake_ack(p, now, true, false);
        // RACK's min_rtt from the newest never-retransmitted delivered segment.
        if let Some(r) = a.ca_rtt {
            c.rtt.observe_min(r);
        }
        if a.newly_sacked > 0 && c.snd_una < c.snd_nxt {
            // rack.c rack_start_hpts_timer(): "RACK, TLP, persists and RXT timers all are
            // restartable based on actions input .. i.e we received a packet (ack or sack)"; with
            // SACK-passed segments the RACK timer, not the RXT timer, is the one armed.
            c.rto_deadline = Some(now + c.rtt.rto_ns);
        }
        let newly_lost = if c.sack && self.rack.advance(c, now) {
            self.rack_mark_lost(c, now)
        } else {
            0
        };
        let rs = c.rate_sample(now, &a, newly_lost);
        let was_recovering = matches!(c.state, State::Recovery { .. });
        end_of_recovery(c, &a, now, |c| self.post_recovery(c));
        let exit_cap = (was_recovering && c.state == State::Open && self.v2025())
            .then(|| self.exit_cwnd_cap(c));
        // rack.c rack_ack_received(), as tcp_input.c: CCF_CWND_LIMITED when cwnd <= snd_wnd;
        // the cc modules also read whether this ACK follows a timeout.
        c.v.cwnd_limited = c.v.win.cwnd <= c.snd_wnd;
        c.v.after_rto = matches!(c.state, State::Loss { .. }) && c.sb.lost_bytes > 0;
        c.sync_ca_state();
        c.v.nsegs = nsegs;
        c.cc_ack(&a, a.acked);
        c.v.nsegs = 1;
        if let Some(cap) = exit_cap {
            // "Must be non-newreno (cubic) getting too ahead of itself".
            c.v.win.cwnd = exit_clamp(c.v.win.cwnd, cap);
        }
        let mut entered = false;
        if c.state == State::Open && c.snd_una < c.snd_nxt {
            let trigger = if c.sack {
                c.sb.lost_bytes > 0
            } else {
                c.dupacks >= c.profile.dupthresh
            };
            if trigger && c.recovery_allowed() {
                self.enter_recovery(c, now);
                entered = true;
            }
        }
        if matches!(c.state, State::Recovery { .. }) && !entered {
            self.prr.update(c, a.acked + a.newly_sacked, self.v2025());
        }
        c.cong_control(rs);
        self.output(c, now, out, next_id);
        self.tlp.on_ack(c, now);
        self.schedule_tlp(c, now);
        c.note_completion(now);
    }

    /// Whether rack.c of 15.0-2025 (nibanks/freebsd-src @ 0c19274c) is followed.
    fn v2025(&self) -> bool {
        self.version == FreeBsdVersion::V15_2025
    }

    /// 15.0-2025, the ACK that ends recovery: nibanks/freebsd-src sys/netinet/tcp_stacks/rack.c
    /// @ 0c19274c85e092af688e45fa084242ca2dda5847, rack_process_ack() and
    /// rack_do_compressed_ack_processing(), right after rack_post_recovery(): `p_cwnd =
    /// min(ctf_fixed_maxseg(tp), rack->r_ctl.rc_pace_min_segs); p_cwnd <<= 1; p_cwnd +=
    /// tp->snd_cwnd;`, then rack_ack_received(..., post_recovery) and `if (post_recovery &&
    /// (tp->snd_cwnd > p_cwnd)) tp->snd_cwnd = p_cwnd;`. rc_pace_min_segs of an unpaced
    /// connection was not read (rack_set_pace_segments()); taken as at least one segment, so the
    /// cap is cwnd + 2 MSS. The module's abc during that call is rack_max_abc_post_recovery = 2,
    /// net.inet.tcp.abc_l_var's default, which the model's cc modules already use.
    fn exit_cwnd_cap(&self, c: &Conn) -> u64 {
        exit_cap_bytes(c.v.win.cwnd, c.mss)
    }

    /// rack_calc_thresh_rack() with rack_dsack_std_based, no reordering seen: the window is
    /// always a quarter of the last RTT, and the timer fires at that threshold, at least
    /// rack_min_to (1 ms) from now.
    fn rack_mark_lost(&mut self, c: &mut Conn, now: Ns) -> u64 {
        let reo_wnd = self.rack.rtt / 4;
        self.rack.mark_lost(c, now, reo_wnd, |w| w.max(MIN_TO_NS))
    }

    /// Entering recovery: the cc module's cong_signal(CC_NDUPACK) sets ssthresh; then
    /// rack_cong_signal()'s PRR reset (cwnd untouched).
    fn enter_recovery(&mut self, c: &mut Conn, now: Ns) {
        let recover = c.begin_recovery(c.snd_nxt - c.snd_una);
        c.sync_ca_state();
        c.recover_guard = Some(recover);
        if !c.sack {
            c.sb.mark_head_lost();
        }
        self.prr.begin(c);
        c.event(now, SenderEvent::RecoveryStart);
    }

    /// use_rack_rr = 1 ("rack rapid recovery"): rack_timer_start() arms the RACK timer for a
    /// SACK-passed segment whether or not PRR has room, and rack_timeout_rack() hands that segment
    /// to rack_output() as rc_resend with r_timer_override. So a lost segment goes out at least
    /// every rack_min_to even when PRR allows nothing (the RACK threshold itself has already been
    /// applied by the loss marking).
    fn rapid_recovery_due(&self, c: &Conn, now: Ns) -> bool {
        matches!(c.state, State::Recovery { .. }) && now >= self.rr_next
    }

    /// When the next rapid-recovery retransmission is due, if one is waiting.
    fn rapid_recovery_deadline(&self, c: &Conn) -> Option<Ns> {
        let waiting =
            matches!(c.state, State::Recovery { .. }) && c.sb.lost_bytes > c.sb.retrans_bytes;
        (waiting && self.rr_next > c.v.now).then_some(self.rr_next)
    }

    /// rack_post_recovery(): the cc module's post_recovery, then cwnd at least ssthresh ("Rack
    /// has burst control and pacing so lets not set this any lower than snd_ssthresh per
    /// RFC-6582 (option 2)"), plus up to two segments of PRR allowance left unused.
    fn post_recovery(&mut self, c: &mut Conn) {
        c.cc.post_recovery(&c.view(), &mut c.v.win);
        c.v.win.cwnd = c.v.win.cwnd.max(c.v.win.ssthresh);
        let left = self.prr.take_left(c);
        // Only when not application limited: ctf_outstanding() <= sbavail().
        if left > 0 && c.snd_nxt - c.snd_una <= c.written - c.snd_una {
            c.v.win.cwnd += left.min(PRR_ADDBACK_MAX_SEGS * c.mss);
        }
    }

    /// rack_cong_signal(CC_RTO) in 2023 (`rack_rto_cwnd = "one_mss"`): ssthresh = max(2,
    /// min(snd_wnd, cwnd) / 2 / mss) * mss and cwnd = 1 MSS (`enter_loss`), set by the stack
    /// itself; the cc module is not told of the timeout.
    fn rto_reduction(c: &mut Conn) {
        let w = c.snd_wnd.min(c.v.win.cwnd);
        c.v.win.ssthresh = (w / 2 / c.mss).max(2) * c.mss;
    }

    /// What may be sent now: in recovery PRR's allowance, otherwise cwnd - flight.
    fn room(&self, c: &Conn) -> u64 {
        if matches!(c.state, State::Recovery { .. }) {
            self.prr.sndcnt(c)
        } else {
            c.v.win.cwnd.saturating_sub(c.pipe())
        }
    }

    /// rack_get_pacing_delay(), old method (no pacing rate): tr_perms = largest cwnd / min RTT in
    /// whole ms; the output loop sends until `tot_len / tr_perms` is at least 1 ms, then waits that
    /// many ms less a quarter. Zero while no RTT has been measured.
    fn burst_slot_ns(&self, c: &Conn, tot_len: u64) -> Ns {
        let cwnd = if self.largest_cwnd > 0 {
            self.largest_cwnd
        } else {
            c.v.win.cwnd
        };
        if self.version == FreeBsdVersion::V15_2025 {
            let min_rtt_us = c.rtt.min_rtt_ns / crate::time::US;
            return burst_slot_ms_2025(tot_len, cwnd, min_rtt_us, c.mss) * crate::time::MS;
        }
        let min_rtt_ms = c.rtt.min_rtt_ns / crate::time::MS;
        burst_slot_ms(tot_len, cwnd, min_rtt_ms, c.mss) * crate::time::MS
    }

    /// rack_calc_thresh_tlp() with rack_tlp_threshold_use = TLP_USE_TWO_ONE: 2 x RTT (the larger
    /// of srtt and the last RTT, rack_tlp_use_greater), or 1.5 x RTT + the peer's delayed ACK
    /// when a single segment is out; not above the RTO, not below rack_tlp_min. Counted from the
    /// last send (rack_timer_start(): thresh - time_since_sent).
    fn schedule_tlp(&mut self, c: &Conn, now: Ns) {
        if !Tlp::may_schedule(c) {
            self.tlp.deadline = None;
            return;
        }
        let srtt = c.rtt.srtt_ns.max(self.rack.rtt);
        let mut thresh = if srtt == 0 {
            c.profile.initial_rto_ns
        } else {
            2 * srtt
        };
        if c.snd_nxt - c.snd_una <= c.mss {
            thresh = thresh.max(srtt + srtt / 2 + DELAYED_ACK_NS);
        }
        thresh = thresh.min(c.rtt.rto_ns).max(TLP_MIN_NS);
        let since = c.last_send.map_or(0, |t| now.saturating_sub(t));
        self.tlp.deadline = Some(now + thresh.saturating_sub(since).max(MIN_TO_NS));
    }

    /// A timer fired: tail loss probe, RACK timer, RTO (rack_timeout_rxt()), pacing release.
    pub(super) fn on_timer(
        &mut self,
        c: &mut Conn,
        now: Ns,
        out: &mut Vec<Packet>,
        next_id: &mut u64,
    ) {
        c.timer_begins(now);
        if now >= c.pace_next {
            // The slot's end: the hpts run processes the connection's queued ACKs first.
            self.process_held(c, now, out, next_id);
        }
        self.tlp.on_timer(c, now, out, next_id);
        if self.rack.reo_timer_expired(now) {
            // The RACK timer: waited long enough for reordering; mark and recover.
            if self.rack_mark_lost(c, now) > 0 && c.may_start_recovery() {
                self.enter_recovery(c, now);
            }
        }
        if c.rto_due(now) {
            if c.snd_una < c.snd_nxt {
                // rack.c rack_remxt_tmr() reduces on every timeout; after the first the
                // window is already one segment, so only the first matters here.
                let reduced_already = c.rtt.rxtshift > 0;
                c.v.flight = c.snd_nxt - c.snd_una;
                let keep = c.profile.rack_rto_keeps_cwnd;
                if !reduced_already && !keep {
                    Self::rto_reduction(c);
                }
                // rack_rto_cwnd = "kept" (15.0-2025 as read, FreeBsdVersion::rack_rto_keeps_cwnd):
                // rack_cong_signal(CC_RTO) exits recovery but sets cwnd and ssthresh only for a
                // module without cong_signal.
                let loss_cwnd = if keep { c.v.win.cwnd } else { c.mss };
                c.enter_loss_with_cwnd(now, loss_cwnd);
                self.tlp.cancel();
            } else {
                c.rto_deadline = None;
            }
        }
        self.output(c, now, out, next_id);
    }
}

/// The leading run of `held` without SACK blocks: its length, and how many of its entries
/// advanced the cumulative ACK past `snd_una` and the entries before them (`nsegs++` in
/// rack_do_compressed_ack_processing() for each entry that is a new cumulative ACK).
fn compressed_batch(held: &[Packet], snd_una: u64) -> (usize, u64) {
    let mut high = snd_una;
    let mut nsegs = 0;
    let mut n = 0;
    for p in held.iter().take_while(|p| p.sack_blocks().is_empty()) {
        if p.ack > high {
            high = p.ack;
            nsegs += 1;
        }
        n += 1;
    }
    (n, nsegs.max(1))
}

/// 15.0-2025 `p_cwnd = min(ctf_fixed_maxseg(tp), rc_pace_min_segs) << 1; p_cwnd += snd_cwnd;`
/// after rack_post_recovery(), rc_pace_min_segs taken as at least one segment.
fn exit_cap_bytes(cwnd_after_post_recovery: u64, mss: u64) -> u64 {
    cwnd_after_post_recovery + (mss << 1)
}

/// `if (post_recovery && (tp->snd_cwnd > p_cwnd)) tp->snd_cwnd = p_cwnd;`
fn exit_clamp(cwnd: u64, p_cwnd: u64) -> u64 {
    cwnd.min(p_cwnd)
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

/// rack_get_pacing_delay()'s old method at nibanks/freebsd-src rack.c @ 0c19274c: `if
/// (rack->r_ctl.rc_rack_min_rtt) srtt = rack->r_ctl.rc_rack_min_rtt; else srtt = max(tp->t_srtt,
/// 1); ... tr_perms = (cwnd * 1000) / srtt; if (tr_perms == 0) { tr_perms =
/// ctf_fixed_maxseg(tp); } pacing_delay = len / tr_perms; ... reduce = (pacing_delay /
/// rack_pacing_delay_reduction); if (reduce < pacing_delay) pacing_delay -= reduce; else
/// pacing_delay = 0; ... pacing_delay *= USEC_IN_MSEC;` — the RTT in microseconds, the slot in
/// whole ms. Without an RTT (srtt 1 us) tr_perms is cwnd x 1000 and the slot 0.
fn burst_slot_ms_2025(tot_len: u64, cwnd: u64, min_rtt_us: u64, mss: u64) -> u64 {
    let tr_perms = match cwnd * 1000 / min_rtt_us.max(1) {
        0 => mss,
        n => n,
    };
    let slot = tot_len / tr_perms;
    let reduce = slot / SLOT_REDUCTION;
    if reduce < slot {
        slot - reduce
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::burst_slot_ms;

    /// docs/research/freebsd-second-reading.md §3.4: post_recovery leaves 70 x 1448, the module
    /// (cubic jumping to W_cubic) would raise cwnd to 80 x 1448 on the exit ACK: 72 x 1448.
    #[test]
    fn rack_2025_exit_ack_grows_cwnd_by_at_most_two_segments() {
        let mss = 1448;
        let p_cwnd = super::exit_cap_bytes(70 * mss, mss);
        assert_eq!(p_cwnd, 70 * mss + 2 * mss);
        assert_eq!(super::exit_clamp(80 * mss, p_cwnd), 72 * mss);
        assert_eq!(super::exit_clamp(70 * mss + 100, p_cwnd), 70 * mss + 100);
    }

    /// rack_do_compressed_ack_processing(): a run of queued ACKs without SACK blocks is one
    /// batch; `nsegs` counts the entries that moved the cumulative ACK (a duplicate does not).
    #[test]
    fn a_compressed_batch_counts_the_entries_that_advance() {
        use crate::net::packet::{Kind, Packet};
        let ack = |a: u64, sack: bool| {
            let mut p = Packet::new(0, Kind::Ack, 0, 0);
            p.ack = a;
            if sack {
                p.set_sack_blocks(&[(a + 1448, a + 2896)]);
            }
            p
        };
        let held = [
            ack(2896, false),
            ack(2896, false),
            ack(5792, false),
            ack(8688, false),
            ack(8688, true),
            ack(11584, false),
        ];
        assert_eq!(super::compressed_batch(&held, 0), (4, 3));
        assert_eq!(super::compressed_batch(&held[4..], 8688), (0, 1));
        assert_eq!(super::compressed_batch(&held[5..], 8688), (1, 1));
    }

    #[test]
    fn burst_slot_follows_rack_get_pacing_delay_old_method() {
        // cwnd 1 MB over 40 ms: tr_perms = 25_000 bytes per ms.
        assert_eq!(burst_slot_ms(24_999, 1_000_000, 40, 1448), 0); // under 1 ms: keep sending
        assert_eq!(burst_slot_ms(57_920, 1_000_000, 40, 1448), 2); // 2 ms, 2/4 = 0 off
        assert_eq!(burst_slot_ms(200_000, 1_000_000, 40, 1448), 6); // 8 ms less 8/4
        assert_eq!(burst_slot_ms(2_896, 10, 40, 1448), 2); // tr_perms 0 -> one segment
        assert_eq!(burst_slot_ms(1_000_000, 1_000_000, 0, 1448), 0); // no RTT yet

        // 2025: bytes per ms from the RTT in us (1_000_000 x 1000 / 40_200 = 24_875 B/ms).
        assert_eq!(
            super::burst_slot_ms_2025(24_874, 1_000_000, 40_200, 1448),
            0
        );
        assert_eq!(
            super::burst_slot_ms_2025(200_000, 1_000_000, 40_200, 1448),
            6
        ); // 8 ms - 2
        assert_eq!(super::burst_slot_ms_2025(1_000_000, 1_000_000, 0, 1448), 0);
        // srtt 1 us
    }
}

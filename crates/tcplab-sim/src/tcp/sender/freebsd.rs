//! FreeBSD's default TCP stack (`net.inet.tcp.functions_default=freebsd`): ACK processing with
//! SACK fast recovery and PRR, and the output rules that size sends by byte differences of the
//! window, before and after review D43470.
//!
//! Followed: sys/netinet/tcp_input.c tcp_do_segment() (dupack counting, `enter_recovery`,
//! `resume_partialack`, process_ACK) and tcp_do_prr_ack() as read at freebsd/freebsd-src
//! @ 2bae602e; tcp_output.c (SACK hole retransmission, new data in recovery, silly-window
//! avoidance, TSO) and tcp_sack.c tcp_sack_output()/tcp_sack_partialack() as read in F-Stack's
//! vendored FreeBSD (F-Stack/f-stack @ 831d8a29); the application's writes as uipc_socket.c
//! sosend_generic() and the sowwakeup() in tcp_do_segment()'s process_ACK allow them, with iperf3's
//! select() loop (esnet/iperf iperf_client_api.c). The post-D43470 lines (entry cwnd = pipe + MSS
//! then ssthresh; PRR cwnd = pipe + sndcnt) follow the review's description in
//! shared/stack-models.md; the diff itself was not available to read (docs/models.md). That is
//! version "2023" (the default). Version "15.0-2025" follows D43470 as committed, read in
//! nibanks/freebsd-src tcp_input.c @ 62d1e135 and tcp_output.c @ 0714807e; its branches below
//! quote the lines they model. Version "15.0-2024-10" (T4's tree) is the pre-D43470 code of the
//! newest stored copies before it (ihoro/freebsd-src tcp_input.c @ 48931b3e, fel1x-developer
//! tcp_output.c @ b252a43e and tcp_sack.c @ 2d614aa2), or with `d43470 = true` the 2025 lines
//! of D43470 (`FreeBsdRecovery::as_committed`); the rules that differ by version are methods of
//! `FreeBsdVersion` naming their copy.

use super::core::Conn;
use super::detection::is_lost::mark_losses;
use super::detection::lrd::lost_retransmission;
use super::reduction::freebsd_prr::{sack_partialack, FreeBsdPrr};
use super::sockbuf::SockBuf;
use super::{SenderEvent, State};
// The enum-dispatch build calls the hooks on a concrete type, which needs the trait in scope.
#[cfg_attr(not(feature = "static-cc"), allow(unused_imports))]
use crate::cc::CcHooks;
use crate::cc::{AckKind, CongSignal};
use crate::net::packet::Packet;
use crate::stack::FreeBsdRecovery;
use crate::time::{earliest, Ns};

/// The default stack's own state.
#[derive(Debug)]
pub(super) struct FreeBsdStack {
    /// Its recovery knobs (D43470, do_prr, sack.tso).
    k: FreeBsdRecovery,
    /// PRR of the current recovery.
    prr: FreeBsdPrr,
    /// Segments sent by limited transmit (tcp_input.c `snd_limited`).
    snd_limited: u64,
    /// The send buffer's mbufs, kept only when the NIC limits TSO fragments.
    sockbuf: SockBuf,
}

impl FreeBsdStack {
    pub(super) fn new(k: FreeBsdRecovery) -> Self {
        FreeBsdStack {
            k,
            prr: FreeBsdPrr::default(),
            snd_limited: 0,
            sockbuf: SockBuf::default(),
        }
    }

    pub(super) fn timer_deadline(&self, c: &Conn) -> Option<Ns> {
        let pace = c.pace_deadline(c.pacing_rate().is_some());
        earliest([c.rto_deadline, pace, c.tsq_wake])
    }

    /// The application starts: its first write(2).
    pub(super) fn start(
        &mut self,
        c: &mut Conn,
        now: Ns,
        out: &mut Vec<Packet>,
        next_id: &mut u64,
    ) {
        self.app_write(c, now, out, next_id);
    }

    /// One incoming ACK, in the order tcp_do_segment() handles it.
    pub(super) fn on_ack(
        &mut self,
        c: &mut Conn,
        p: &Packet,
        now: Ns,
        out: &mut Vec<Packet>,
        next_id: &mut u64,
    ) {
        c.v.now = now;
        let wnd_grew = p.rwnd as u64 > c.snd_wnd;
        c.snd_wnd = p.rwnd as u64;
        // tcp_sack_doack(): the scoreboard first; sack_changed when it learned something.
        let newly_sacked = if c.sack {
            c.sb.sack(&p.sack_blocks(), c.snd_una)
        } else {
            0
        };
        let acked = if p.ack > c.snd_una && p.ack <= c.snd_nxt {
            p.ack - c.snd_una
        } else {
            0
        };
        c.sb.clear_delivered();
        let in_fr = matches!(c.state, State::Recovery { .. });
        // tcp_sack_output() retransmits every hole below the highest SACKed byte.
        let new_loss = in_fr && mark_losses(&mut c.sb, 1) > 0;
        // tcp_input.c: `if ((sack_changed != SACK_NOCHANGE) && (tp->t_flags & TF_LRD))
        // tcp_sack_lost_retransmission(tp, th);` right after tcp_sack_doack() (fel1x-developer
        // tcp_input.c @ 2d614aa2; nibanks @ 62d1e135).
        if self.k.lrd && newly_sacked > 0 {
            self.lost_retransmission(c);
        }
        if acked == 0 {
            let counted =
                p.ack == c.snd_una && c.snd_nxt > c.snd_una && !(c.sack && newly_sacked == 0);
            self.dup_ack(c, p, newly_sacked, new_loss, now, out, next_id);
            if wnd_grew && !counted {
                // tcp_input.c, step 6 "Update window information": a larger window sets
                // needoutput, and tcp_output() runs at the end of tcp_do_segment() (a window
                // opening on an idle or zero-window connection sends).
                self.output(c, now, out, next_id);
            }
        } else {
            self.new_ack(c, p, acked, newly_sacked, new_loss, now, out, next_id);
        }
        c.note_completion(now);
    }

    /// tcp_sack.c tcp_sack_lost_retransmission() (fel1x-developer/freebsd-src @ 2d614aa2), after
    /// the scoreboard has re-armed the holes (`detection::lrd::lost_retransmission`):
    /// `tp->snd_cwnd = tp->snd_ssthresh; EXIT_RECOVERY(tp->t_flags); cc_cong_signal(tp, th,
    /// CC_NDUPACK); tp->snd_cwnd = tcp_maxseg(tp); tp->sackhint.recover_fs = (tp->snd_max -
    /// tp->snd_una) - tp->sackhint.recover_fs;` — a second reduction from the old ssthresh, and
    /// cc_cong_signal() moves snd_recover to snd_max (tcp_input.c: `case CC_NDUPACK: if
    /// (!IN_FASTRECOVERY(tp->t_flags)) { tp->snd_recover = tp->snd_max; ...}`). The PRR counters
    /// go on; the episode is not counted as a new recovery (tcps_sack_lostrexmt is its counter).
    fn lost_retransmission(&mut self, c: &mut Conn) {
        let State::Recovery { recover } = c.state else {
            return;
        };
        if !lost_retransmission(&mut c.sb, recover) {
            return;
        }
        c.v.win.cwnd = c.v.win.ssthresh;
        c.v.in_recovery = false;
        c.v.flight = c.fb_pipe();
        c.cc.cong_signal(&c.view(), &mut c.v.win, CongSignal::NDupAck);
        c.v.in_recovery = true;
        c.state = State::Recovery { recover: c.snd_nxt };
        c.v.win.cwnd = c.mss;
        self.prr.restart_after_lost_retransmission(c);
    }

    /// An ACK that does not advance snd_una: dupack counting, recovery entry, limited transmit.
    #[allow(clippy::too_many_arguments)]
    fn dup_ack(
        &mut self,
        c: &mut Conn,
        p: &Packet,
        newly_sacked: u64,
        new_loss: bool,
        now: Ns,
        out: &mut Vec<Packet>,
        next_id: &mut u64,
    ) {
        let in_fr = matches!(c.state, State::Recovery { .. });
        let outstanding = c.snd_nxt > c.snd_una;
        // Only ACKs at snd_una carrying new SACK information count (tcp_input.c: "Acks with
        // SACK but without any new SACK information ... should not affect dupack counting").
        if p.ack != c.snd_una || !outstanding || (c.sack && newly_sacked == 0) {
            return;
        }
        if c.rto_deadline.is_none() || matches!(c.state, State::Loss { .. }) {
            c.dupacks = 0;
            return;
        }
        c.dupacks += 1;
        if c.dupacks > c.profile.dupthresh || in_fr {
            if in_fr && self.k.prr {
                self.prr.ack(c, self.k, newly_sacked, new_loss);
            } else if in_fr {
                // Without PRR: inflate by one segment per dupack while pipe < ssthresh.
                if c.fb_pipe() < c.v.win.ssthresh {
                    c.v.win.cwnd = (c.v.win.cwnd + c.mss).min(c.v.win.ssthresh);
                }
            } else {
                c.v.win.cwnd += c.mss;
            }
            self.output(c, now, out, next_id);
        } else if c.dupacks == c.profile.dupthresh || c.sb.sacked_bytes > 2 * c.mss {
            self.enter_recovery(c, p.ack, now, out, next_id);
        } else {
            self.limited_transmit(c, now, out, next_id);
        }
    }

    /// An ACK that advances snd_una. The scoreboard forgets what is now cumulatively acked
    /// (tcp_sack_doack() trims the holes); snd_una itself moves later, in process_ACK.
    #[allow(clippy::too_many_arguments)]
    fn new_ack(
        &mut self,
        c: &mut Conn,
        p: &Packet,
        acked: u64,
        newly_sacked: u64,
        new_loss: bool,
        now: Ns,
        out: &mut Vec<Packet>,
        next_id: &mut u64,
    ) {
        let in_fr = matches!(c.state, State::Recovery { .. });
        // D43470 as committed (15.0-2025; 15.0-2024-10 with d43470 = true).
        let committed = self.k.as_committed();
        // tcp_sack.c tcp_sack_doack() (fel1x-developer/freebsd-src @ 2d614aa2) treats [snd_una,
        // th_ack) as a SACK block and adds to delivered_data only the hole bytes it covers
        // (`delivered_data += (cur->end - cur->start)`), then `sacked_bytes += delivered_data -
        // left_edge_delta`: bytes SACKed earlier and now cumulatively acked are not delivered
        // again (RFC 6937 DeliveredData = change in snd.una + change in SACKed bytes).
        let sacked_before = c.sb.sacked_bytes;
        let karn = c.sb.ack(p.ack).karn_sent_at;
        let delivered = (acked + newly_sacked).saturating_sub(sacked_before - c.sb.sacked_bytes);
        c.sb.clear_delivered();
        c.dupacks = 0;
        if newly_sacked > 0 {
            c.dupacks += 1;
            if !in_fr && c.state == State::Open && c.sb.sacked_bytes > 2 * c.mss {
                self.enter_recovery(c, p.ack, now, out, next_id);
                if committed {
                    // D43470 as committed (tcp_input.c @ 62d1e135): `enter_recovery` ends with
                    // `goto drop` for SACK recovery, also when reached from this ACK-advancing path
                    // (2023: `goto resume_partialack`). process_ACK is skipped: no RTT sample, no
                    // cc_ack_received(), no sbcut/sowwakeup, snd_una stays; tcp_sack_doack() has
                    // already trimmed the scoreboard, so pipe counts the acked bytes until the next
                    // ACK moves snd_una.
                    return;
                }
            }
        }
        let exited = self.recovery_ack(c, p, acked, delivered, new_loss, now, out, next_id);
        // process_ACK: RTT from the timestamp echo in ticks plus one (tcp_xmit_timer(tp,
        // TCP_TS_TO_TICKS(t) + 1)), or from the timed segment without timestamps.
        if let Some(r) = c.ack_rtt(p, karn, now, true) {
            c.take_rtt_sample(r);
        }
        self.process_ack(c, p, acked, exited, now);
        // tcp_do_segment() ends with tcp_output() on the buffer as it is; the application, woken
        // by sowwakeup() after sbcut_locked() freed space, writes only after that.
        self.output(c, now, out, next_id);
        self.app_write(c, now, out, next_id);
    }

    /// The part of an ACK that advances snd_una that belongs to fast recovery: a partial ACK
    /// (PRR, or tcp_sack_partialack()), or the recovery's end. Returns whether recovery ended.
    #[allow(clippy::too_many_arguments)]
    fn recovery_ack(
        &mut self,
        c: &mut Conn,
        p: &Packet,
        acked: u64,
        delivered: u64,
        new_loss: bool,
        now: Ns,
        out: &mut Vec<Packet>,
        next_id: &mut u64,
    ) -> bool {
        // D43470 as committed (15.0-2025; 15.0-2024-10 with d43470 = true).
        let committed = self.k.as_committed();
        let mut exited = false;
        if let State::Recovery { recover } = c.state {
            if p.ack < recover {
                // resume_partialack: PRR only for an ACK that carries SACK blocks
                // (`V_tcp_do_prr && to.to_flags & TOF_SACK`); a pure cumulative partial ACK (the
                // receiver holds nothing out of order) goes to tcp_sack_partialack() even with
                // PRR on, and its cap at ssthresh is a byte budget, not whole segments.
                if self.k.prr && p.nsack > 0 {
                    c.rto_deadline = None;
                    self.prr.ack(c, self.k, delivered, new_loss);
                    if committed {
                        // `tcp_do_prr_ack(...); tp->t_flags |= TF_ACKNOW; (void) tcp_output(tp);`
                        // (tcp_input.c @ 62d1e135): output before process_ACK moves snd_una,
                        // i.e. with pipe still counting this ACK's cumulatively acked bytes
                        // (budget snd_cnt * maxseg - del_data); the output at the end of
                        // tcp_do_segment() (TF_ACKNOW) sends what the moved snd_una frees.
                        self.output(c, now, out, next_id);
                    }
                } else {
                    sack_partialack(c, p.ack, acked, delivered);
                }
            } else if self.k.version.post_recovery_after_snd_una() {
                // 15.0-2024-10 and 15.0-2025: cc_post_recovery() runs in process_ACK after
                // `tp->snd_una = th->th_ack` (ihoro/freebsd-src tcp_input.c @ 48931b3e, before
                // D43470; nibanks @ 62d1e135); see process_ack.
                exited = true;
            } else {
                // cc_post_recovery() sees pipe before snd_una moves.
                c.v.flight = c.fb_pipe();
                c.cc.post_recovery(&c.view(), &mut c.v.win);
                exited = true;
            }
        }
        exited
    }

    /// process_ACK after the RTT sample: the CC's ack_received, snd_una, the timer, the exits.
    fn process_ack(&mut self, c: &mut Conn, p: &Packet, acked: u64, exited: bool, now: Ns) {
        // cc_ack_received(CC_ACK) runs before EXIT_RECOVERY, so the ACK that ends recovery does
        // not grow cwnd. CCF_CWND_LIMITED: cwnd <= snd_wnd (without newcwv).
        c.v.cwnd_limited = c.v.win.cwnd <= c.snd_wnd;
        c.v.bytes_this_ack = acked;
        c.v.after_rto = matches!(c.state, State::Loss { .. }) && c.sb.lost_bytes > 0;
        c.v.delivered_bytes_this_ack = acked;
        let in_recovery = c.v.in_recovery;
        if c.ecn_allows_growth() {
            c.cc.ack_received(&c.view(), &mut c.v.win, AckKind::Ack);
        }
        c.v.in_recovery = in_recovery;
        c.snd_una = p.ack;
        c.v.snd_nxt = c.snd_nxt;
        if exited && self.k.version.post_recovery_after_snd_una() {
            // tcp_input.c @ 62d1e135 process_ACK: `tp->snd_una = th->th_ack; if
            // (IN_RECOVERY(tp->t_flags) && SEQ_GEQ(th->th_ack, tp->snd_recover)) {
            // cc_post_recovery(tp, th); }`: the module sees the pipe after the full ACK.
            c.v.flight = c.fb_pipe();
            c.cc.post_recovery(&c.view(), &mut c.v.win);
        }
        c.rto_deadline = (c.snd_una < c.snd_nxt).then(|| now + c.rtt.rto_ns);
        if exited {
            c.state = State::Open;
            c.v.in_recovery = false;
            c.event(now, SenderEvent::RecoveryEnd);
        }
        if let State::Loss { recover } = c.state {
            if c.snd_una >= recover {
                c.state = State::Open;
                c.v.after_rto = false;
                c.event(now, SenderEvent::LossEnd);
            }
        }
        if c.snd_una >= c.round_end {
            c.round_end = c.snd_nxt;
            c.cc.new_round(&c.view(), &mut c.v.win);
        }
    }

    /// The application's write(2) (sys/kern/uipc_socket.c sosend_generic(); blocking, or iperf3's
    /// non-blocking write after select()). It runs only when woken: at the start, and by
    /// sowwakeup() when an ACK frees send-buffer space
    /// (tcp_input.c process_ACK: sbcut_locked(), then sowwakeup_locked()); it holds the inpcb
    /// lock only after tcp_do_segment() is done, so the ACK's own tcp_output() sees the buffer
    /// before the refill. It copies what fits once sb_lowat bytes are free and each copy calls
    /// tcp_output() (tcp_usr_send()), whose send-buffer autosizing may make room for more.
    /// Growing the buffer (tcp_sndbuf_autoscale() -> sbreserve_locked()) wakes nobody, so
    /// during a recovery that does not advance snd_una the unsent data runs down and the last
    /// TSO chunk before it runs out ends in a partial segment (tcp_output.c sends the fraction
    /// "when the send sockbuf can be emptied").
    fn app_write(&mut self, c: &mut Conn, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        // Terminates: each pass writes only into buffer space that autosizing added, and the
        // buffer is bounded by sendbuf_max.
        loop {
            let before = c.written;
            c.app_fill(now);
            if c.written == before {
                return;
            }
            self.send(c, now, out, next_id);
        }
    }

    /// tcp_input.c `enter_recovery` with SACK; `th_ack` is the ACK that triggers it.
    fn enter_recovery(
        &mut self,
        c: &mut Conn,
        th_ack: u64,
        now: Ns,
        out: &mut Vec<Packet>,
        next_id: &mut u64,
    ) {
        c.dupacks = c.profile.dupthresh;
        // cc_cong_signal(CC_NDUPACK) sets ssthresh from cwnd; cc_ack_received(CC_DUPACK) is a
        // no-op for newreno and cubic.
        c.begin_recovery(c.fb_pipe());
        mark_losses(&mut c.sb, 1);
        self.prr = if self.k.as_committed() {
            // With D43470 as committed (the 2025 copy; whether the PRR start below came with
            // D43470 itself or with a neighbouring commit is not established) it also calls
            // tcp_resend_sackholes() here (every hole's rxmit back to its start,
            // sack_bytes_rexmit = 0: "When entering LR after RTO due to Duplicate ACKs").
            // The model enters fast recovery only from the open state, where no retransmission
            // is outstanding, so there is nothing to re-arm.
            FreeBsdPrr::begin_2025(c, th_ack, self.snd_limited)
        } else {
            FreeBsdPrr::begin(c)
        };
        self.snd_limited = 0;
        c.rto_deadline = None;
        // The episode's start is recorded with the cwnd its first retransmission leaves with
        // (what SIFTR2 logs beside that packet), as on every stack.
        if self.k.d43470 {
            // One retransmission beyond what is in flight, then the window is ssthresh.
            // 15.0-2025 (tcp_input.c @ 62d1e135): `tp->snd_nxt = tp->snd_max; tp->snd_cwnd =
            // tcp_compute_pipe(tp) + maxseg; (void) tcp_output(tp); tp->snd_cwnd =
            // tp->snd_ssthresh; goto drop;` (its pipe without the lost holes: fb_pipe()).
            c.v.win.cwnd = c.fb_pipe() + c.mss;
            self.output(c, now, out, next_id);
            c.event(now, SenderEvent::RecoveryStart);
            c.v.win.cwnd = c.v.win.ssthresh;
        } else {
            // snd_cwnd = maxseg; tcp_output(): exactly the first hole's first segment.
            c.v.win.cwnd = c.mss;
            self.output(c, now, out, next_id);
            c.event(now, SenderEvent::RecoveryStart);
        }
        if c.rto_deadline.is_none() && c.snd_una < c.snd_nxt {
            // Nothing was retransmittable: the timer stays the way out.
            c.rto_deadline = Some(now + c.rtt.rto_ns);
        }
    }

    /// RFC 3042 limited transmit on the first two dupacks (tcp_input.c, net.inet.tcp.rfc3042).
    fn limited_transmit(
        &mut self,
        c: &mut Conn,
        now: Ns,
        out: &mut Vec<Packet>,
        next_id: &mut u64,
    ) {
        if c.dupacks == 1 {
            self.snd_limited = 0;
        }
        let old_cwnd = c.v.win.cwnd;
        let old_max = c.snd_nxt;
        let dup = c.dupacks as u64;
        c.v.win.cwnd = (c.snd_nxt - c.snd_una) + dup.saturating_sub(self.snd_limited) * c.mss;
        self.output(c, now, out, next_id);
        let sent = c.snd_nxt - old_max;
        if sent > c.mss {
            self.snd_limited = 2;
        } else if sent > 0 {
            self.snd_limited += 1;
        }
        c.v.win.cwnd = old_cwnd;
    }

    /// tcp_output() when the stack calls it (the application's writes call it through
    /// `app_write`).
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
        self.send(c, now, out, next_id);
    }

    /// tcp_output.c: holes first (in fast recovery, and the go-back-N resend after an RTO), then
    /// new data, each sized by a byte difference of the window.
    fn send(&mut self, c: &mut Conn, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        if c.profile.tso_max_segcount > 0 {
            // Every copy the application makes is followed by this call (`app_write`), so what
            // was written since the last one is one write's mbufs.
            self.sockbuf.sync(c.written, c.snd_una);
        }
        c.fb_sndbuf_autosize();
        c.restart_after_idle(now);
        c.tsq_throttled = false;
        let tsq_limit = c.tsq_limit();
        // tcp_output(): `idle = (tp->t_flags & TF_LASTIDLE) || (tp->snd_max == tp->snd_una);`
        // once per call; the sendalot passes after the first keep it.
        let idle = c.snd_nxt == c.snd_una;
        loop {
            let sendwin = c.snd_wnd.min(c.v.win.cwnd);
            let off = c.snd_nxt - c.snd_una;
            let hole = match c.state {
                // "Do not retransmit SACK segments beyond snd_recover."
                State::Recovery { recover } => c.sb.next_lost().filter(|&(seq, _)| seq < recover),
                State::Loss { .. } => c.sb.next_lost(),
                State::Open => None,
            };
            if let Some((seq, seg_len)) = hole {
                let budget = self.hole_budget(c, sendwin, off);
                // A retransmission is sent even when shorter than a segment (sack_rxmit and
                // snd_nxt < snd_max bypass silly-window avoidance).
                let len = budget.min(seg_len as u64);
                if len == 0 {
                    c.v.cwnd_limited = true;
                    break;
                }
                if c.tsq_blocks(len, true, tsq_limit) {
                    break;
                }
                if len < seg_len as u64 {
                    c.sb.split_at(seq + len);
                }
                c.emit(seq, len, true, now, out, next_id);
                continue;
            }
            let unsent = c.written - c.snd_nxt;
            if unsent == 0 {
                c.v.cwnd_limited = false;
                break;
            }
            let wnd_room = c.snd_wnd.saturating_sub(off);
            let budget = self.new_data_budget(c, sendwin, off, wnd_room);
            let mut len = unsent.min(budget);
            if len == 0 {
                c.v.cwnd_limited = true;
                break;
            }
            if len < c.mss {
                // Silly-window avoidance: a runt only when it empties the buffer and nothing was
                // outstanding when tcp_output() began (idle; iperf3 leaves TCP_NODELAY off).
                if !(len == unsent && idle) {
                    c.v.cwnd_limited = true;
                    break;
                }
            }
            let mut stop = false;
            if len > c.mss {
                (len, stop) = self.tso_len(c, len);
            }
            if !send_segments(c, len, tsq_limit, now, out, next_id) || stop {
                break;
            }
        }
    }

    /// tcp_output.c's TSO length: up to the burst limit (`if_hw_tsomax`), whole segments unless
    /// the buffer empties, then tcp_m_copym()'s cut at the NIC's fragment limits with no re-trim
    /// (fel1x-developer tcp_output.c @ b252a43e and nibanks @ 0714807e, tcp_default_output():
    /// `m->m_next = tcp_m_copym(mb, moff, &len, if_hw_tsomaxsegcount, if_hw_tsomaxsegsize, msb,
    /// hw_tls);` after `moff = len % max_len; if (moff != 0) { len -= moff; sendalot = 1; }`; no
    /// segment-count check before the trim in either copy). Returns the length and whether
    /// tcp_output() stops after this send: a cut burst whose length neither the burst limit nor
    /// the trim shortened leaves `sendalot` 0 (the cut does not set it), so the rest of the window
    /// waits for the next call.
    fn tso_len(&mut self, c: &mut Conn, mut len: u64) -> (u64, bool) {
        let tso_max = c.profile.tso_max_bytes.max(c.mss);
        let mut sendalot = len > tso_max;
        len = len.min(tso_max);
        if c.snd_nxt + len < c.written && !len.is_multiple_of(c.mss) {
            len -= len % c.mss;
            sendalot = true;
        }
        let (count, size) = (c.profile.tso_max_segcount, c.profile.tso_max_segsize);
        if count == 0 || len <= c.mss {
            return (len, false);
        }
        let copied = self.sockbuf.m_copym_len(c.snd_nxt, len, count, size);
        // Each pass is its own TSO packet: the records keep the cut visible.
        c.burst_break = true;
        (copied, copied < len && !sendalot)
    }

    /// The window for retransmitting a hole. After D43470 the window is compared with pipe;
    /// before it, cwnd counts the bytes retransmitted (cwin = min(snd_wnd, cwnd) -
    /// sack_bytes_rexmit).
    fn hole_budget(&self, c: &Conn, sendwin: u64, off: u64) -> u64 {
        match c.state {
            State::Recovery { .. } if self.k.d43470 => sendwin.saturating_sub(c.fb_pipe()),
            State::Recovery { .. } => sendwin.saturating_sub(c.sb.retrans_bytes),
            _ => sendwin.saturating_sub(c.sb.pipe(off, c.mss)),
        }
    }

    /// The window for new data (`off` = snd_nxt - snd_una, `wnd_room` = what the receiver's
    /// window leaves past snd_nxt).
    fn new_data_budget(&self, c: &Conn, sendwin: u64, off: u64, wnd_room: u64) -> u64 {
        match c.state {
            State::Recovery { .. } if self.k.as_committed() => {
                // tcp_output.c @ 0714807e tcp_default_output(): `if ((sack_bytes_rxmt == 0)
                // || SEQ_LT(tp->snd_nxt, tp->snd_max)) { len = imin(sbavail(&so->so_snd),
                // sendwin) - off; } else { len = imax(imin(sbavail(&so->so_snd), sendwin) -
                // imax(tcp_compute_pipe(tp), off), 0); }`: an unrounded byte budget.
                let sbavail = c.written - c.snd_una;
                let room = sbavail.min(sendwin);
                if c.sb.retrans_bytes == 0 {
                    room.saturating_sub(off)
                } else {
                    room.saturating_sub(c.fb_pipe().max(off))
                }
            }
            State::Recovery { .. } if self.k.d43470 => {
                sendwin.saturating_sub(c.fb_pipe()).min(wnd_room)
            }
            // New data while retransmissions are out: snd_cwnd - (snd_nxt - snd_recover) -
            // sack_bytes_rexmit.
            State::Recovery { recover } if c.sb.retrans_bytes > 0 => {
                (c.v.win
                    .cwnd
                    .saturating_sub(c.snd_nxt - recover + c.sb.retrans_bytes))
                .min(wnd_room)
            }
            State::Loss { .. } => sendwin.saturating_sub(c.sb.pipe(off, c.mss)).min(wnd_room),
            _ => sendwin.saturating_sub(off),
        }
    }

    /// A timer fired: RTO (tcp_timer.c tcp_timer_rexmt()) and/or pacing release.
    pub(super) fn on_timer(
        &mut self,
        c: &mut Conn,
        now: Ns,
        out: &mut Vec<Packet>,
        next_id: &mut u64,
    ) {
        c.timer_begins(now);
        if c.rto_due(now) {
            if c.snd_una < c.snd_nxt {
                // tcp_timer.c / cc.c: ssthresh only when t_rxtshift == 1, the first timeout
                // since the last RTT sample, with pipe as tcp_compute_pipe() has it.
                let reduced_already = c.rtt.rxtshift > 0;
                c.v.flight = c.fb_pipe();
                if !reduced_already {
                    c.cc.cong_signal(&c.view(), &mut c.v.win, CongSignal::Rto);
                }
                c.enter_loss(now);
            } else {
                c.rto_deadline = None;
            }
        }
        self.output(c, now, out, next_id);
    }
}

/// Send `len` bytes of new data as MSS-sized segments (a TSO burst is its segments), unless TCP
/// Small Queues blocks one. Returns whether all went out.
fn send_segments(
    c: &mut Conn,
    len: u64,
    tsq_limit: u64,
    now: Ns,
    out: &mut Vec<Packet>,
    next_id: &mut u64,
) -> bool {
    let mut left = len;
    while left > 0 {
        let seg = left.min(c.mss);
        if c.tsq_blocks(seg, false, tsq_limit) {
            return false;
        }
        c.emit(c.snd_nxt, seg, false, now, out, next_id);
        left -= seg;
    }
    true
}

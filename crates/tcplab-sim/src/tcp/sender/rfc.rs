//! The textbook stack (`rfc`): RFC 5681 congestion control, RFC 6675 SACK recovery (RFC 6582
//! NewReno partial-ACK handling without SACK), RFC 6298 retransmission timer.

use super::ack::AckIntake;
use super::core::Conn;
use super::detection::is_lost::mark_losses;
use super::reduction::rfc6675::Rfc6675;
use super::{SenderEvent, State};
// The enum-dispatch build calls the hooks on a concrete type, which needs the trait in scope.
#[cfg_attr(not(feature = "static-cc"), allow(unused_imports))]
use crate::cc::CcHooks;
use crate::cc::CongSignal;
use crate::net::packet::Packet;
use crate::time::{earliest, Ns};

/// The rfc stack's own state: its RFC 6675 recovery.
#[derive(Debug, Default)]
pub(super) struct RfcStack {
    rfc6675: Rfc6675,
}

impl RfcStack {
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
        self.rfc6675.output(c, now, out, next_id);
    }

    pub(super) fn timer_deadline(&self, c: &Conn) -> Option<Ns> {
        let pace = c.pace_deadline(c.pacing_rate().is_some());
        earliest([c.rto_deadline, pace, c.tsq_wake])
    }

    /// Process an ACK (RFC 6675 §5, RFC 5681 §3.2, RFC 6582 §3.2).
    pub(super) fn on_ack(
        &mut self,
        c: &mut Conn,
        p: &Packet,
        now: Ns,
        out: &mut Vec<Packet>,
        next_id: &mut u64,
    ) {
        c.v.now = now;
        let a = c.intake_ack(p, now, false, false);
        let newly_lost = if c.sack {
            mark_losses(&mut c.sb, c.profile.dupthresh)
        } else {
            0
        };
        let rs = c.rate_sample(now, &a, newly_lost);
        end_of_recovery(c, &a, now, |c| c.cc.post_recovery(&c.view(), &mut c.v.win));
        c.sync_ca_state();
        c.cc_ack(&a, a.acked);
        if c.state == State::Open && c.snd_una < c.snd_nxt {
            let trigger = c.dupacks >= c.profile.dupthresh || (c.sack && c.sb.head_lost());
            if trigger && c.recovery_allowed() {
                self.enter_recovery(c, now, out, next_id);
            }
        }
        c.cong_control(rs);
        self.output(c, now, out, next_id);
        c.note_completion(now);
    }

    /// RFC 6675 §5 steps 4.1-4.3 (and RFC 6582 §3.2 step 2 without SACK).
    fn enter_recovery(&mut self, c: &mut Conn, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        let recover = c.begin_recovery(c.snd_nxt - c.snd_una);
        c.sync_ca_state();
        c.recover_guard = Some(recover);
        c.sb.mark_head_lost();
        c.v.win.cwnd = c.v.win.ssthresh;
        c.event(now, SenderEvent::RecoveryStart);
        // Step 4.3: the first retransmission goes out regardless of pipe.
        if let Some((seq, len)) = c.sb.next_lost() {
            c.emit(seq, len as u64, true, now, out, next_id);
        }
    }

    /// A timer fired: RTO (RFC 6298 §5.4-5.6) and/or pacing release.
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
                let reduced_already = c.reduced_in_window();
                c.v.flight = c.snd_nxt - c.snd_una;
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

/// The state changes an ACK makes at the end of a recovery, shared by the RFC 6675 family of
/// stacks: a full ACK ends fast recovery (`post_recovery` is the stack's window rule) or the
/// loss state; without SACK a partial ACK retransmits the next segment (RFC 6582 §3.2 step 5).
pub(super) fn end_of_recovery(
    c: &mut Conn,
    a: &AckIntake,
    now: Ns,
    post_recovery: impl FnOnce(&mut Conn),
) {
    match c.state {
        State::Recovery { recover } if c.snd_una >= recover => {
            c.state = State::Open;
            c.v.in_recovery = false;
            c.sb.reno_sacked_segs = 0;
            post_recovery(c);
            c.event(now, SenderEvent::RecoveryEnd);
        }
        State::Loss { recover } if c.snd_una >= recover => {
            c.state = State::Open;
            c.event(now, SenderEvent::LossEnd);
        }
        State::Recovery { .. } if a.acked > 0 && !c.sack => {
            // RFC 6582 §3.2 step 5: a partial ACK retransmits the next unacknowledged segment.
            c.sb.mark_head_lost();
        }
        _ => {}
    }
}

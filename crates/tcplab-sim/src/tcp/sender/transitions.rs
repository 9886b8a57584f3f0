//! The core's loss-recovery state (`State`: Open, Recovery, Loss) and its transitions every
//! stack shares: the RecoveryPoint guard, entering fast recovery's bookkeeping, the RTO's Loss
//! state, and Linux's icsk_ca_state as the CC hooks see it.

use super::core::Conn;
use super::{SenderEvent, State};
// The enum-dispatch build calls the hooks on a concrete type, which needs the trait in scope.
use crate::cc::CaState;
#[cfg_attr(not(feature = "static-cc"), allow(unused_imports))]
use crate::cc::{CcHooks, LinuxCcOps};
use crate::time::Ns;

impl Conn {
    /// Keep `v.ca_state` as Linux's icsk_ca_state and tell the module of each change before it
    /// takes effect (tcp_set_ca_state()): Disorder while SACKs or dupacks are outstanding.
    pub(super) fn sync_ca_state(&mut self) {
        let s = match self.state {
            State::Recovery { .. } => CaState::Recovery,
            State::Loss { .. } => CaState::Loss,
            State::Open if self.dupacks > 0 || self.sb.sacked_bytes > 0 => CaState::Disorder,
            State::Open => CaState::Open,
        };
        if s != self.v.ca_state {
            self.cc.set_state(&self.view(), &mut self.v.win, s);
            self.v.ca_state = s;
        }
    }

    /// Whether a new recovery may begin: the last RecoveryPoint has been passed.
    pub(super) fn recovery_allowed(&self) -> bool {
        self.recover_guard.is_none_or(|r| self.snd_una > r)
    }

    /// Whether a loss found outside an ACK (a timer) may start a recovery: the connection is
    /// open, has data outstanding, and has passed its last RecoveryPoint.
    pub(super) fn may_start_recovery(&self) -> bool {
        self.state == State::Open && self.snd_una < self.snd_nxt && self.recovery_allowed()
    }

    /// The bookkeeping of entering fast recovery (RFC 6675 §5 steps 4.1-4.2): the CC's
    /// cong_signal(NDupAck) with `flight`, RecoveryPoint = snd_nxt. Returns the RecoveryPoint.
    pub(super) fn begin_recovery(&mut self, flight: u64) -> u64 {
        let recover = self.snd_nxt;
        self.v.flight = flight;
        // Linux tcp_enter_recovery(): no new ssthresh while a CWR reduction is under way
        // (tcp_in_cwnd_reduction()); FreeBSD newreno: not when IN_CONGRECOVERY.
        if !self.ecn.in_cwr(self.snd_una) {
            self.cc.cong_signal(
                &self.view(),
                &mut self.v.win,
                crate::cc::CongSignal::NDupAck,
            );
        }
        self.v.in_recovery = true;
        self.state = State::Recovery { recover };
        self.recoveries += 1;
        recover
    }

    /// Reduce ssthresh only if no reduction was made for this window already: not
    /// when the timer fires during fast recovery or again after an earlier RTO
    /// (RFC 5681 §3.1 holds ssthresh on repeated timeouts; Linux tcp_input.c
    /// tcp_enter_loss(): "Reduce ssthresh if it has not yet been made inside this
    /// window").
    pub(super) fn reduced_in_window(&self) -> bool {
        match self.state {
            State::Open => false,
            State::Recovery { recover } | State::Loss { recover } => self.snd_una < recover,
        }
    }

    /// Whether the RTO timer has expired.
    pub(super) fn rto_due(&self, now: Ns) -> bool {
        self.rto_deadline.is_some_and(|d| d <= now)
    }

    /// The retransmission timer fired with data outstanding (RFC 6298 §5.4-5.6, RFC 5681 §3.1):
    /// the stack has already set ssthresh (or decided not to); the loss window of one segment,
    /// everything outstanding marked lost, the Loss state, the backed-off timer.
    pub(super) fn enter_loss(&mut self, now: Ns) {
        // RFC 5681 §3.1: loss window of one segment.
        self.enter_loss_with_cwnd(now, self.mss);
    }

    /// The retransmission timeout with a given loss window (FreeBSD RACK 15.0-2025 keeps cwnd).
    pub(super) fn enter_loss_with_cwnd(&mut self, now: Ns, loss_cwnd: u64) {
        self.v.win.cwnd = loss_cwnd;
        self.v.in_recovery = false;
        let lost_before = self.sb.lost_bytes;
        self.sb.mark_all_lost();
        self.v.lost_pkts += self.pkts(self.sb.lost_bytes.saturating_sub(lost_before));
        self.state = State::Loss {
            recover: self.snd_nxt,
        };
        self.sync_ca_state();
        self.recover_guard = Some(self.snd_nxt);
        self.dupacks = 0;
        self.rto_count += 1;
        self.rtt.backoff();
        self.rto_deadline = Some(self.rto_at(now));
        self.event(now, SenderEvent::Rto);
    }
}

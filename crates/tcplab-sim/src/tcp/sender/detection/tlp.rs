//! Tail loss probes (RFC 8985 §7; Linux tcp_send_loss_probe(), FreeBSD rack.c): when the ACKs
//! stop with data outstanding, one segment sent to draw an ACK that lets RACK detect a tail loss.
//! The probe timeout is the stack's; the mechanics are here.

use super::super::core::Conn;
use super::super::{SenderEvent, State};
use crate::net::packet::Packet;
use crate::time::Ns;

/// Tail loss probe state (RFC 8985 §7): the probe timer and the snd_nxt when the last probe went
/// out (Linux tlp_high_seq).
#[derive(Clone, Debug, Default)]
pub(in crate::tcp::sender) struct Tlp {
    /// The probe timer.
    pub deadline: Option<Ns>,
    high_seq: Option<u64>,
}

impl Tlp {
    /// Whether a probe may be scheduled: open state, SACK on, data outstanding.
    pub(in crate::tcp::sender) fn may_schedule(c: &Conn) -> bool {
        c.sack && c.state == State::Open && c.snd_una != c.snd_nxt
    }

    /// The probe's data was acknowledged (Linux tcp_process_tlp_ack()).
    pub(in crate::tcp::sender) fn on_ack(&mut self, c: &mut Conn, now: Ns) {
        if self.high_seq.is_some_and(|h| c.snd_una >= h) {
            self.high_seq = None;
            c.event(now, SenderEvent::TlpEnd);
        }
    }

    /// The timer fired: send the probe if still in the open state with data outstanding.
    pub(in crate::tcp::sender) fn on_timer(
        &mut self,
        c: &mut Conn,
        now: Ns,
        out: &mut Vec<Packet>,
        next_id: &mut u64,
    ) {
        if self.deadline.is_some_and(|t| t <= now) {
            self.deadline = None;
            if c.state == State::Open && c.snd_una < c.snd_nxt {
                self.send(c, now, out, next_id);
            }
        }
    }

    /// An RTO ends any probing.
    pub(in crate::tcp::sender) fn cancel(&mut self) {
        self.deadline = None;
        self.high_seq = None;
    }

    /// tcp_send_loss_probe(): one new segment if there is one (past cwnd), else the last
    /// outstanding segment again; at most one probe outstanding; then the RTO is re-armed.
    fn send(&mut self, c: &mut Conn, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        if self.high_seq.is_none() {
            c.app_fill(now);
            c.begin_xmit_pass();
            let new_len = c.loss_probe_data_len();
            if let Some(len) = new_len {
                c.emit(c.snd_nxt, len, false, now, out, next_id);
            } else if let Some((seq, len)) = c.sb.last_unsacked() {
                c.emit(seq, len as u64, true, now, out, next_id);
            } else {
                return;
            }
            self.high_seq = Some(c.snd_nxt);
            c.event(now, SenderEvent::Tlp);
        }
        c.rto_deadline = Some(c.rto_at(now));
    }
}

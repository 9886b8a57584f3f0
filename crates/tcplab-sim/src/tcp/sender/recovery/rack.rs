//! RACK-TLP (RFC 8985; Linux tcp_recovery.c, FreeBSD rack.c): time-based loss detection from
//! the most recently sent delivered segment, and tail loss probes. The reordering window and the
//! probe timeout are the stack's (Linux and FreeBSD's RACK stack differ); the mechanics are here.

use super::super::core::Conn;
use super::super::{SenderEvent, State};
use crate::net::packet::Packet;
use crate::time::Ns;

/// RACK state (Linux tp->rack): send time and end of the most recently sent delivered segment,
/// its RTT, and when the reordering timer wants to look again.
#[derive(Clone, Debug, Default)]
pub(in crate::tcp::sender) struct Rack {
    xmit: Ns,
    end: u64,
    /// RTT of the most recently sent delivered segment.
    pub rtt: Ns,
    /// The reordering timer.
    pub reo_deadline: Option<Ns>,
}

impl Rack {
    /// tcp_rack_advance() for every segment this ACK delivered. Returns whether the marking
    /// should run: RACK advanced, or the reordering timer is due.
    pub(in crate::tcp::sender) fn advance(&mut self, c: &Conn, now: Ns) -> bool {
        let min_rtt = if c.rtt.min_rtt_ns == 0 {
            Ns::MAX
        } else {
            c.rtt.min_rtt_ns
        };
        let mut advanced = false;
        for d in c.sb.delivered() {
            let (sent_at, end, retx) = (d.sent_at, d.end, d.retrans);
            let rtt = now.saturating_sub(sent_at);
            // A retransmission delivered faster than min_rtt may be the original's delivery.
            if retx && rtt < min_rtt {
                continue;
            }
            advanced = true;
            self.rtt = rtt;
            if sent_at > self.xmit || (sent_at == self.xmit && end > self.end) {
                self.xmit = sent_at;
                self.end = end;
            }
        }
        advanced || self.reo_deadline.is_some_and(|t| t <= now)
    }

    /// Whether the reordering timer has expired (it is then cleared): waited long enough for
    /// reordering, so the stack marks and recovers (Linux tcp_rack_reo_timeout(), rack.c).
    pub(in crate::tcp::sender) fn reo_timer_expired(&mut self, now: Ns) -> bool {
        let expired = self.reo_deadline.is_some_and(|t| t <= now);
        if expired {
            self.reo_deadline = None;
        }
        expired
    }

    /// Mark lost what was sent more than rtt + `reo_wnd` before the RACK segment; the reordering
    /// timer is armed `arm(wait)` from now for the longest remaining wait. Returns bytes newly
    /// marked lost.
    pub(in crate::tcp::sender) fn mark_lost(
        &mut self,
        c: &mut Conn,
        now: Ns,
        reo_wnd: Ns,
        arm: impl Fn(Ns) -> Ns,
    ) -> u64 {
        let (newly, wait) =
            c.sb.rack_mark_lost(self.xmit, self.end, self.rtt, reo_wnd, now);
        self.reo_deadline = wait.map(|w| now + arm(w));
        newly
    }
}

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
            let new_len = c.new_data_len();
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
        c.rto_deadline = Some(now + c.rtt.rto_ns);
    }
}

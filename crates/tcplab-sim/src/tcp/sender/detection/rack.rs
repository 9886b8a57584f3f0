//! RACK (RFC 8985 §6; Linux tcp_recovery.c, FreeBSD rack.c): time-based loss detection from
//! the most recently sent delivered segment. The reordering window is the stack's (Linux and
//! FreeBSD's RACK stack differ); the mechanics are here. The scoreboard keeps RACK's
//! time-ordered queue in step with every change to a segment; this walks it and marks.

use super::super::core::Conn;
use crate::tcp::scoreboard::Scoreboard;
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
        let (newly, wait) = detect_loss(&mut c.sb, self.xmit, self.end, self.rtt, reo_wnd, now);
        self.reo_deadline = wait.map(|w| now + arm(w));
        newly
    }
}

/// RACK loss detection (Linux tcp_recovery.c tcp_rack_detect_loss(), RFC 8985 §6.2): every
/// segment not SACKed, and not already lost and waiting for its retransmission, that was sent
/// before the most recently sent delivered segment (`rack_xmit`, `rack_end`) is lost once
/// `rack_rtt + reo_wnd` has passed since it was sent. A lost retransmission is marked lost
/// again, so it is sent once more. Returns bytes newly marked lost and the longest wait of
/// the segments not yet due (for the reordering timer).
///
/// Linux walks `tsorted_sent_queue` (torvalds/linux net/ipv4/tcp_recovery.c @ 010b64f7,
/// tcp_rack_detect_loss(); the same loop today with tcp_rack_reo_wnd()): segments in send
/// order, SACKed ones already unlinked, each one marked lost unlinked too. The scoreboard's
/// RACK queue is that queue, so the walk costs the segments it marks (times log n): due ones
/// are at its front, and the longest wait is the latest-sent segment still before the RACK
/// segment.
pub(crate) fn detect_loss(
    sb: &mut Scoreboard,
    rack_xmit: Ns,
    rack_end: u64,
    rack_rtt: Ns,
    reo_wnd: Ns,
    now: Ns,
) -> (u64, Option<Ns>) {
    let rack = (rack_xmit, rack_end);
    sb.rack_track_up_to(rack);
    let due_after = rack_rtt + reo_wnd;
    let (mut newly, mut lowest_marked) = (0, None::<u64>);
    while let Some((sent_at, end)) = sb.rack_first() {
        // tcp_rack_sent_after(): only what was sent before the RACK segment; elapsed time
        // falls along the queue, so the first segment not yet due ends the marking.
        if (sent_at, end) >= rack || now.saturating_sub(sent_at) < due_after {
            break;
        }
        let i = sb.segs().partition_point(|s| s.end() < end);
        let seg = &sb.segs()[i];
        debug_assert_eq!((seg.sent_at, seg.end()), (sent_at, end));
        let (seq, len) = (seg.seq, seg.len as u64);
        // tcp_mark_skb_lost(): a retransmission lost again leaves retrans_out. The segment
        // leaves the queue (lost and not retransmitted).
        sb.mark_lost_with_retransmission(i);
        newly += len;
        lowest_marked = Some(lowest_marked.map_or(seq, |l| l.min(seq)));
        sb.examined_up_to(end);
    }
    if let Some(seq) = lowest_marked {
        sb.rewind_high_rxt(seq);
    }
    let wait = sb
        .rack_last_before(rack)
        .map(|(sent_at, _)| due_after - now.saturating_sub(sent_at));
    (newly, wait)
}

//! Linux's write and retransmit queues as skbs, for the PSH bit of a drill endpoint's segments:
//! where tcp_sendmsg_locked() cuts a write into skbs and marks PSH, and which transmitted piece
//! carries it. Read at torvalds/linux v6.18 (net/ipv4/tcp.c, tcp_output.c); the simulator never
//! builds one (it ignores PSH).

use crate::time::Ns;
use std::collections::VecDeque;

/// One segment the drill endpoint (`crate::drill`) sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outbound {
    /// When.
    pub t_ns: Ns,
    /// First byte (script seq = 1 + this).
    pub seq: u64,
    /// Payload bytes.
    pub len: u32,
    /// A retransmission.
    pub retx: bool,
    /// IP ECN codepoint.
    pub ecn: u8,
    /// CWR flag.
    pub cwr: bool,
    /// PSH flag, as Linux 6.18 sets it (the linux stack; see [`SkbQueue::on_sent`]).
    pub psh: bool,
}

/// `sk_gso_max_size` on packetdrill's tun0 (GSO_LEGACY_MAX_SIZE 65 536) less `MAX_TCP_HEADER + 1`
/// (sk_setup_caps(); MAX_TCP_HEADER 320 on x86-64): what tcp_xmit_size_goal() bounds.
const GSO_MAX_SIZE: u64 = 65_536 - 321;
/// TCP_MSS_DEFAULT (include/net/tcp.h): tcp_bound_to_half_wnd() halves only windows above it.
const TCP_MSS_DEFAULT: u64 = 536;

/// One skb: bytes [start, end) of the stream, its PSH flag, and whether a record ends it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Skb {
    start: u64,
    end: u64,
    psh: bool,
    eor: bool,
}

/// The connection's skbs: the write queue (unsent, in order) and the transmitted pieces of the
/// retransmit queue (each tcp_write_xmit() piece is an skb of its own: tso_fragment()).
#[derive(Clone, Debug)]
pub struct SkbQueue {
    unsent: VecDeque<Skb>,
    sent: VecDeque<Skb>,
    write_seq: u64,
    pushed_seq: u64,
    /// tp->max_window: the largest window the peer offered (tcp_ack_update_window()).
    max_window: u64,
    /// tcp_write_wakeup() marked the head: the next piece carries PSH even when cut.
    wakeup: bool,
}

impl SkbQueue {
    /// Empty queues; the handshake's window is the first max_window (tcp_create_openreq_child()).
    pub fn new(window_bytes: u64) -> Self {
        SkbQueue {
            unsent: VecDeque::new(),
            sent: VecDeque::new(),
            write_seq: 0,
            pushed_seq: 0,
            max_window: window_bytes,
            wakeup: false,
        }
    }

    /// The peer offered `window_bytes` (scaled).
    pub fn on_window(&mut self, window_bytes: u64) {
        self.max_window = self.max_window.max(window_bytes);
    }

    /// tp->max_window.
    pub fn max_window(&self) -> u64 {
        self.max_window
    }

    /// The skbs below `una` were acknowledged (tcp_clean_rtx_queue()).
    pub fn on_acked(&mut self, una: u64) {
        while self.sent.front().is_some_and(|s| s.end <= una) {
            self.sent.pop_front();
        }
    }

    /// tcp_xmit_size_goal(): min(sk_gso_max_size, half the largest window seen) in whole MSS,
    /// at least one MSS (tcp_bound_to_half_wnd(): `if (tp->max_window > TCP_MSS_DEFAULT) cutoff
    /// = (tp->max_window >> 1); else cutoff = tp->max_window;`).
    pub fn size_goal(&self, mss: u64) -> u64 {
        let cutoff = if self.max_window > TCP_MSS_DEFAULT {
            self.max_window >> 1
        } else {
            self.max_window
        };
        let goal = if cutoff > 0 && GSO_MAX_SIZE > cutoff {
            cutoff.max(68 - 20)
        } else {
            GSO_MAX_SIZE
        };
        (goal / mss * mss).max(mss)
    }

    /// One copy of tcp_sendmsg_locked()'s loop: up to `left` bytes into the tail skb, or into a
    /// new one when the tail is full or ends a record (`copy <= 0 || !tcp_skb_can_collapse_to(skb)`).
    /// `first`: nothing of this write copied yet (`if (!copied) TCP_SKB_CB(skb)->tcp_flags &=
    /// ~TCPHDR_PSH;`). Returns the bytes copied, whether the skb reached the goal, and whether
    /// it is a new one (tcp_skb_entail()).
    pub fn copy(&mut self, left: u64, goal: u64, first: bool) -> (u64, bool, bool) {
        let (room, new) = match self.unsent.back() {
            Some(t) if !t.eor && t.end - t.start < goal => (goal - (t.end - t.start), false),
            _ => {
                let s = self.write_seq;
                self.unsent.push_back(Skb {
                    start: s,
                    end: s,
                    psh: false,
                    eor: false,
                });
                (goal, true)
            }
        };
        let n = room.min(left);
        let tail = self.unsent.back_mut().expect("a tail skb");
        if first {
            tail.psh = false;
        }
        tail.end += n;
        self.write_seq += n;
        (n, tail.end - tail.start >= goal, new)
    }

    /// tcp_write_wakeup(): `if (before(tp->pushed_seq, TCP_SKB_CB(skb)->end_seq)) tp->pushed_seq
    /// = TCP_SKB_CB(skb)->end_seq;` and PSH on the send head and on the piece sent from it.
    pub fn wakeup(&mut self) {
        if let Some(h) = self.unsent.front_mut() {
            h.psh = true;
            self.pushed_seq = self.pushed_seq.max(h.end);
            self.wakeup = true;
        }
    }

    /// The send head's end (TCP_SKB_CB(tcp_send_head(sk))->end_seq), None with nothing unsent.
    pub fn head_end(&self) -> Option<u64> {
        self.unsent.front().map(|h| h.end)
    }

    /// MSG_EOR: no later write joins the tail (`TCP_SKB_CB(skb)->eor = 1`).
    pub fn mark_eor(&mut self) {
        if let Some(t) = self.unsent.back_mut() {
            t.eor = true;
        }
    }

    /// forced_push(): `after(tp->write_seq, tp->pushed_seq + (tp->max_window >> 1))`.
    pub fn forced_push(&self) -> bool {
        self.write_seq > self.pushed_seq + (self.max_window >> 1)
    }

    /// tcp_mark_push(): PSH on the tail skb, `tp->pushed_seq = tp->write_seq`.
    pub fn mark_push(&mut self) {
        if let Some(t) = self.unsent.back_mut() {
            t.psh = true;
        }
        self.pushed_seq = self.write_seq;
    }

    /// Whether the tail skb is the send head (`skb == tcp_send_head(sk)`): tcp_push_one().
    pub fn tail_is_head(&self) -> bool {
        self.unsent.len() == 1
    }

    /// The bytes one tcp_write_xmit() pass sends from the head skb: `limit_segs` MSS, at most
    /// the skb.
    pub fn head_piece(&self, limit_segs: u64, mss: u64) -> u64 {
        self.unsent
            .front()
            .map_or(0, |h| (h.end - h.start).min(limit_segs * mss))
    }

    /// PSH on what one call sent, as the wire shows it, and the queues after it.
    /// tcp_write_xmit() sends the head skb in pieces of `limit = min(cwnd_quota, max_segs)`
    /// segments (tcp_cwnd_test(): `halfcwnd = max(cwnd >> 1, 1U); return min(halfcwnd, cwnd -
    /// in_flight);`, tcp_mss_split_point()), cutting with tso_fragment(), which leaves PSH on the
    /// tail ("PSH and FIN should only be set in the second packet"). __tcp_transmit_skb() sets PSH
    /// on every piece of more than one segment ("Force a PSH flag on all (GSO) packets to expedite
    /// GRO flush at receiver"); GSO (tcp_gso_segment()) keeps it on the last segment only. A
    /// retransmission (__tcp_retransmit_skb(): `segs` MSS of an rtx skb, tcp_fragment()) follows
    /// the same two rules. `cwnd`, `in_flight` (before the call's first segment) and `max_segs`
    /// (tcp_tso_autosize()) in packets; `mss` in bytes.
    pub fn on_sent(
        &mut self,
        segs: &mut [Outbound],
        mss: u64,
        cwnd: u64,
        in_flight: u64,
        max_segs: u64,
    ) {
        let mut flight = in_flight;
        let mut i = 0;
        while i < segs.len() {
            let quota = cwnd.saturating_sub(flight).min((cwnd >> 1).max(1)).max(1);
            let limit = quota.min(max_segs.max(1));
            let n = if segs[i].retx {
                self.retransmitted(&mut segs[i..], limit)
            } else {
                self.transmitted(&mut segs[i..], limit, mss)
            };
            flight += n as u64;
            i += n;
        }
    }

    /// The first piece of new data in `segs`: the head skb, first grown to `limit` MSS from the
    /// next one (tcp_grow_skb(), since 6.10: `nlen = min_t(u32, amount, next_skb->len)`, and a
    /// next skb taken whole gives its flags, `TCP_SKB_CB(skb)->tcp_flags |=
    /// TCP_SKB_CB(next_skb)->tcp_flags`; never past a record's end, tcp_skb_can_collapse()), then
    /// cut to the piece (tso_fragment(): PSH stays on the rest).
    fn transmitted(&mut self, segs: &mut [Outbound], limit: u64, mss: u64) -> usize {
        let seq = segs[0].seq;
        // In step with the sender (it sends from snd_nxt, the head skb's start).
        while self.unsent.front().is_some_and(|h| h.end <= seq) {
            self.unsent.pop_front();
        }
        let Some(mut head) = self.unsent.pop_front() else {
            return 1;
        };
        head.start = head.start.max(seq);
        let missing = (limit * mss).saturating_sub(head.end - head.start);
        if let (false, Some(next)) = (head.eor || missing == 0, self.unsent.front_mut()) {
            let nlen = missing.min(next.end - next.start);
            head.end += nlen;
            next.start += nlen;
            if next.start == next.end {
                (head.psh, head.eor) = (head.psh || next.psh, next.eor);
                self.unsent.pop_front();
            }
        }
        let (mut n, mut end) = (0, seq);
        while n < segs.len()
            && (n as u64) < limit
            && !segs[n].retx
            && segs[n].seq == end
            && end < head.end
        {
            end += segs[n].len as u64;
            n += 1;
        }
        let n = n.max(1);
        let end = end.max(seq + segs[0].len as u64);
        let whole = end >= head.end;
        let psh = (whole && head.psh) || std::mem::take(&mut self.wakeup);
        segs[n - 1].psh = n > 1 || psh;
        self.sent.push_back(Skb {
            start: seq,
            end,
            psh,
            eor: false,
        });
        if !whole {
            head.start = end;
            self.unsent.push_front(head);
        }
        n
    }

    /// The first retransmission in `segs`: within one rtx skb, at most `limit` segments.
    fn retransmitted(&mut self, segs: &mut [Outbound], limit: u64) -> usize {
        let seq = segs[0].seq;
        let Some(skb) = self
            .sent
            .iter()
            .find(|s| s.start <= seq && seq < s.end)
            .copied()
        else {
            return 1;
        };
        let (mut n, mut end) = (0, seq);
        while n < segs.len()
            && (n as u64) < limit
            && segs[n].retx
            && segs[n].seq == end
            && end < skb.end
        {
            end += segs[n].len as u64;
            n += 1;
        }
        let n = n.max(1);
        segs[n - 1].psh = n > 1 || (skb.psh && segs[n - 1].seq + segs[n - 1].len as u64 >= skb.end);
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(seq: u64, len: u32, retx: bool) -> Outbound {
        Outbound {
            t_ns: 0,
            seq,
            len,
            retx,
            ecn: 0,
            cwr: false,
            psh: false,
        }
    }

    /// tcp_xmit_size_goal(): half of a 32 896-byte window in whole 1000-byte MSS; a window
    /// larger than twice the GSO limit leaves the limit (65 215 bytes: 65 segments of 1000).
    #[test]
    fn size_goal_is_half_the_largest_window_in_whole_mss() {
        let mut q = SkbQueue::new(257 << 7);
        assert_eq!(q.size_goal(1000), 16_000);
        q.on_window(100 << 7); // a smaller window leaves max_window
        assert_eq!(q.size_goal(1000), 16_000);
        q.on_window(8192 << 7);
        assert_eq!(q.size_goal(1000), 65_000);
        assert_eq!(SkbQueue::new(400).size_goal(1000), 1000); // at least one MSS
    }

    /// The first skb of a write, cut by a 1-segment send while the write copies: its unsent rest
    /// is the tail and takes 1000 more bytes; full, write_seq (17 000) passes pushed_seq + 16 448,
    /// so forced_push() marks it; a second send cuts it again and the rest keeps PSH, topped up
    /// to 16 000 without losing it (the write had copied already).
    #[test]
    fn a_cut_skb_takes_more_of_the_write_and_keeps_its_psh() {
        let mut q = SkbQueue::new(257 << 7);
        assert_eq!(q.copy(200_000, 16_000, true), (16_000, true, true));
        assert!(!q.forced_push() && q.tail_is_head());
        assert_eq!(q.head_piece(1, 1000), 1000);
        let mut one = [seg(0, 1000, false)];
        q.on_sent(&mut one, 1000, 2, 0, 2);
        assert!(!one[0].psh);
        assert_eq!(q.copy(184_000, 16_000, false), (1000, true, false));
        assert!(q.forced_push());
        q.mark_push();
        let mut two = [seg(1000, 1000, false)];
        q.on_sent(&mut two, 1000, 2, 1, 2);
        assert_eq!(q.copy(183_000, 16_000, false), (1000, true, false));
        assert!(!q.forced_push()); // 18 000 is not past 17 000 + 16 448
        assert_eq!(
            q.unsent.front().map(|h| (h.start, h.end, h.psh)),
            Some((2000, 18_000, true))
        );
    }

    /// A write's first copy into a tail that ended the last write clears its PSH; MSG_EOR keeps
    /// the next write out of it.
    #[test]
    fn a_new_write_clears_the_tails_psh_and_a_record_end_is_not_joined() {
        let mut q = SkbQueue::new(1 << 20);
        q.copy(500, 64_000, true);
        q.mark_push();
        q.copy(500, 64_000, true);
        assert_eq!(q.unsent.back().map(|t| (t.end, t.psh)), Some((1000, false)));
        q.mark_eor();
        q.copy(300, 64_000, true);
        assert_eq!(q.unsent.len(), 2);
    }

    /// tcp_write_xmit()'s pieces: with cwnd 4 and 2 in flight the quota is min(4 / 2, 2) = 2, so
    /// two segments go as one TSO piece with PSH; with cwnd 3 and 1 in flight it is 1, so each
    /// segment is its own piece and only an skb's end carries the skb's PSH. A retransmission of
    /// a piece's last segment carries that piece's PSH.
    #[test]
    fn pieces_of_two_segments_carry_psh_single_ones_only_at_a_pushed_end() {
        let mut q = SkbQueue::new(1 << 20);
        q.copy(6000, 64_000, true);
        q.mark_push();
        let mut a = [seg(0, 1000, false), seg(1000, 1000, false)];
        q.on_sent(&mut a, 1000, 3, 1, 2);
        assert_eq!([a[0].psh, a[1].psh], [false, false]);
        let mut b = [seg(2000, 1000, false), seg(3000, 1000, false)];
        q.on_sent(&mut b, 1000, 4, 2, 2);
        assert_eq!([b[0].psh, b[1].psh], [false, true]);
        let mut c = [seg(4000, 1000, false), seg(5000, 1000, false)];
        q.on_sent(&mut c, 1000, 3, 1, 2);
        assert_eq!([c[0].psh, c[1].psh], [false, true]); // 6000 ends the pushed skb
        let mut r = [seg(5000, 1000, true)];
        q.on_sent(&mut r, 1000, 3, 2, 2);
        assert!(r[0].psh);
        let mut r = [seg(0, 1000, true)];
        q.on_sent(&mut r, 1000, 3, 2, 2);
        assert!(!r[0].psh);
        q.on_acked(6000);
        assert!(q.sent.is_empty());
    }
}

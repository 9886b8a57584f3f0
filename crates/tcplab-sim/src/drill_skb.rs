//! Linux's write and retransmit queues as skbs, for a drill endpoint's segments: where
//! tcp_sendmsg_locked() cuts a write into skbs and marks PSH, the pieces tcp_write_xmit() cuts
//! from them (their sizes and their PSH), and which transmitted piece a retransmission comes
//! from. Read at torvalds/linux v6.18 (net/ipv4/tcp.c, tcp_output.c); the simulator never builds
//! one (its segments are whole MSS and it ignores PSH).

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

/// What one pass of tcp_write_xmit()'s loop knows when it looks at the send head.
#[derive(Clone, Copy, Debug)]
pub struct Pass {
    /// mss_now, bytes.
    pub mss: u64,
    /// `cwnd_quota = min(cwnd_quota, max_segs)`: segments the pass may send, at least one.
    pub quota_segs: u64,
    /// tcp_wnd_end(): snd_una + snd_wnd, bytes.
    pub wnd_end: u64,
    /// The pass's nonagle has TCP_NAGLE_PUSH (tcp_nagle_test(): `if (nonagle & TCP_NAGLE_PUSH)
    /// return true;`).
    pub push: bool,
    /// tcp_nagle_check() of a partial segment with the pass's nonagle: `(nonagle &
    /// TCP_NAGLE_CORK) || (!nonagle && tp->packets_out && tcp_minshall_check(tp))`.
    pub nagle_holds_partial: bool,
}

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
    /// The head skb as it was before the latest cut_piece() (uncut() restores it).
    cut_from: Option<Skb>,
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
            cut_from: None,
        }
    }

    /// The peer offered `window_bytes` (scaled); whether it is the largest yet.
    pub fn on_window(&mut self, window_bytes: u64) -> bool {
        let grew = window_bytes > self.max_window;
        self.max_window = self.max_window.max(window_bytes);
        grew
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
    /// the skb as tcp_grow_skb() would grow it (tcp_push_one()'s one skb).
    pub fn head_piece(&self, limit_segs: u64, mss: u64) -> u64 {
        let Some(h) = self.unsent.front() else {
            return 0;
        };
        let (len, want) = (h.end - h.start, limit_segs * mss);
        let grown = match self.unsent.get(1) {
            Some(next) if !h.eor && want > len => len + (want - len).min(next.end - next.start),
            _ => len,
        };
        grown.min(want)
    }

    /// One pass of tcp_write_xmit()'s loop (net/ipv4/tcp_output.c, v6.18) over the send head at
    /// `at` (snd_nxt): the bytes it sends, None where the pass stops. First tcp_grow_skb()
    /// (`missing_bytes = cwnd_quota * mss_now - skb->len; if (missing_bytes > 0)
    /// tcp_grow_skb(sk, skb, missing_bytes);`), which takes from the next skb only, so a short
    /// head left by an earlier cut at the window's edge goes out short; the grown head stays
    /// grown whether or not the pass sends. Then tcp_snd_wnd_test() (the first MSS inside the
    /// window), tcp_nagle_test() for a single segment (`tcp_skb_is_last(sk, skb) ? nonagle :
    /// TCP_NAGLE_PUSH`), and tcp_mss_split_point() for more: the quota's bytes when the window
    /// holds them and the head is not the queue's tail, else up to the window's edge with a
    /// sub-MSS tail unless tcp_nagle_check() holds it.
    pub fn next_piece(&mut self, at: u64, p: &Pass) -> Option<u64> {
        self.catch_up(at);
        self.unsent.front()?;
        self.grow_head(p.quota_segs * p.mss);
        let h = self.unsent[0];
        let (len, is_last) = (h.end - h.start, self.unsent.len() == 1);
        if h.start + len.min(p.mss) > p.wnd_end {
            return None;
        }
        if len <= p.mss {
            let held = is_last && !p.push && len < p.mss && p.nagle_holds_partial;
            return (!held).then_some(len);
        }
        let (window, max_len) = (p.wnd_end - h.start, p.mss * p.quota_segs);
        if max_len <= window && !is_last {
            return Some(max_len.min(len));
        }
        let needed = len.min(window);
        if max_len <= needed {
            return Some(max_len);
        }
        let partial = needed % p.mss;
        Some(if partial != 0 && p.nagle_holds_partial {
            needed - partial
        } else {
            needed
        })
    }

    /// tcp_grow_skb() (since 6.10): the head takes up to `want` bytes in all from the next skb
    /// (`nlen = min_t(u32, amount, next_skb->len)`), never across a record's end
    /// (tcp_skb_can_collapse()); a next skb taken whole gives its flags and its end of record.
    fn grow_head(&mut self, want: u64) {
        let (head_len, head_eor) = match self.unsent.front() {
            Some(h) => (h.end - h.start, h.eor),
            None => return,
        };
        if head_eor || want <= head_len || self.unsent.len() < 2 {
            return;
        }
        let next = self.unsent[1];
        let nlen = (want - head_len).min(next.end - next.start);
        let head = &mut self.unsent[0];
        head.end += nlen;
        if nlen == next.end - next.start {
            (head.psh, head.eor) = (head.psh || next.psh, next.eor);
            self.unsent.remove(1);
        } else {
            self.unsent[1].start += nlen;
        }
    }

    /// PSH on what one call sent, as the wire shows it. New data went in the pieces the sender
    /// cut ([`Self::next_piece`], [`Self::cut_piece`]): __tcp_transmit_skb() sets PSH on every
    /// piece of more than one segment ("Force a PSH flag on all (GSO) packets to expedite GRO
    /// flush at receiver"), GSO (tcp_gso_segment()) keeps it on the last segment only, and a
    /// piece that took its skb whole carries the skb's. A retransmission (__tcp_retransmit_skb():
    /// `segs` MSS of an rtx skb, tcp_fragment()) follows the same two rules, its pieces of
    /// tcp_xmit_retransmit_queue()'s `segs = min(cwnd - in_flight, max_segs)` segments (no
    /// half-window cap there: that is tcp_cwnd_test()'s, for new data). `cwnd`, `in_flight`
    /// (before the call's first segment) and `max_segs` (tcp_tso_segs()) in packets.
    pub fn on_sent(&mut self, segs: &mut [Outbound], cwnd: u64, in_flight: u64, max_segs: u64) {
        let mut flight = in_flight;
        let mut i = 0;
        while i < segs.len() {
            let room = cwnd.saturating_sub(flight);
            let n = if segs[i].retx {
                self.retransmitted(&mut segs[i..], room.max(1).min(max_segs.max(1)))
            } else {
                self.transmitted(&mut segs[i..])
            };
            flight += n as u64;
            i += n;
        }
    }

    /// tso_fragment() at the piece's end: [head's start, + `len`) goes to the retransmit queue
    /// as an skb of its own, PSH only when it takes the head whole (`TCP_SKB_CB(skb)->tcp_flags
    /// = flags & ~(TCPHDR_FIN | TCPHDR_PSH);`: the flags stay on the rest) or tcp_write_wakeup()
    /// marked it.
    pub fn cut_piece(&mut self, len: u64) {
        let Some(mut head) = self.unsent.pop_front() else {
            return;
        };
        self.cut_from = Some(head);
        let end = (head.start + len).min(head.end);
        let whole = end == head.end;
        let psh = (whole && head.psh) || std::mem::take(&mut self.wakeup);
        self.sent.push_back(Skb {
            start: head.start,
            end,
            psh,
            eor: whole && head.eor,
        });
        if !whole {
            head.start = end;
            self.unsent.push_front(head);
        }
    }

    /// The send loop stopped inside the piece it cut (the model's window in bytes, where the
    /// kernel's in packets sends a piece whole): nothing of it sent, the head is as before the
    /// cut; part of it sent, the rest is the send head again, an skb of its own.
    pub fn uncut(&mut self, nxt: u64) {
        let cut_from = self.cut_from.take();
        let Some(p) = self
            .sent
            .back()
            .copied()
            .filter(|p| p.end > nxt && p.start <= nxt)
        else {
            return;
        };
        match cut_from {
            Some(head) if nxt == p.start => {
                self.sent.pop_back();
                if head.end > p.end {
                    self.unsent.pop_front();
                }
                self.unsent.push_front(head);
            }
            _ => {
                self.unsent.push_front(Skb { start: nxt, ..p });
                self.sent.back_mut().expect("the piece").end = nxt;
            }
        }
    }

    /// Data sent from the send head without a piece (tcp_mtu_probe()'s probe, built from the
    /// head skbs: `TCP_SKB_CB(nskb)->tcp_flags |= TCP_SKB_CB(skb)->tcp_flags` of each skb it
    /// takes whole) goes to the retransmit queue as one skb, up to `at`.
    fn catch_up(&mut self, at: u64) {
        let Some(start) = self.unsent.front().map(|h| h.start).filter(|&s| s < at) else {
            return;
        };
        let mut psh = false;
        while let Some(h) = self.unsent.front_mut() {
            if h.end <= at {
                psh |= h.psh;
                self.unsent.pop_front();
            } else {
                h.start = h.start.max(at);
                break;
            }
        }
        self.sent.push_back(Skb {
            start,
            end: at,
            psh,
            eor: false,
        });
    }

    /// The first piece of new data in `segs` (cut as it was sent: [`Self::cut_piece`]): its last
    /// segment carries PSH when the piece does, and when it is more than one segment (a probe
    /// larger than the MSS is one)
    /// (__tcp_transmit_skb(): "Force a PSH flag on all (GSO) packets to expedite GRO flush at
    /// receiver"; tcp_gso_segment() keeps it on the last segment only).
    fn transmitted(&mut self, segs: &mut [Outbound]) -> usize {
        let seq = segs[0].seq;
        let find = |q: &Self| {
            q.sent
                .iter()
                .rev()
                .find(|p| p.start <= seq && seq < p.end)
                .copied()
        };
        let piece = find(self).or_else(|| {
            self.catch_up(seq + segs[0].len as u64);
            find(self)
        });
        let Some(p) = piece else {
            return 1;
        };
        let (mut n, mut end) = (0, seq);
        while n < segs.len() && !segs[n].retx && segs[n].seq == end && end < p.end {
            end += segs[n].len as u64;
            n += 1;
        }
        let n = n.max(1);
        segs[n - 1].psh = n > 1 || (p.psh && end >= p.end);
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

    /// A pass as the sender makes it: the piece, cut, sent as MSS segments, labelled.
    fn send(q: &mut SkbQueue, at: u64, p: &Pass) -> Vec<Outbound> {
        let Some(len) = q.next_piece(at, p) else {
            return Vec::new();
        };
        q.cut_piece(len);
        let mut segs: Vec<Outbound> = (0..len.div_ceil(p.mss))
            .map(|i| seg(at + i * p.mss, (len - i * p.mss).min(p.mss) as u32, false))
            .collect();
        q.on_sent(&mut segs, 10, 0, 10);
        segs
    }

    fn pass(quota_segs: u64, wnd_end: u64) -> Pass {
        Pass {
            mss: 1000,
            quota_segs,
            wnd_end,
            push: false,
            nagle_holds_partial: false,
        }
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
        let one = send(&mut q, 0, &pass(1, 1 << 20));
        assert_eq!(
            one.iter().map(|o| (o.len, o.psh)).collect::<Vec<_>>(),
            [(1000, false)]
        );
        assert_eq!(q.copy(184_000, 16_000, false), (1000, true, false));
        assert!(q.forced_push());
        q.mark_push();
        send(&mut q, 1000, &pass(1, 1 << 20));
        assert_eq!(q.copy(183_000, 16_000, false), (1000, true, false));
        assert!(!q.forced_push()); // 18 000 is not past 17 000 + 16 448
        assert_eq!(
            q.unsent.front().map(|h| (h.start, h.end, h.psh)),
            Some((2000, 18_000, true))
        );
    }

    /// tcp_grow_skb() takes from the next skb only: a head of 84 bytes left by a cut at the
    /// window's edge goes out as 84 + 1000 though the quota is 3 segments; the next head, grown
    /// to 2000 from one skb, is cut at the window's edge with its 900-byte tail (TCP_NODELAY:
    /// Nagle holds no partial), and the 100 bytes left stay an skb of their own. (Traced on this
    /// kernel: scenario rwnd s1-00020 sends 1544 then 2860 bytes with a 1460-byte MSS.)
    #[test]
    fn the_head_grows_from_one_next_skb_and_a_piece_ends_at_the_windows_edge() {
        let mut q = SkbQueue::new(1 << 20);
        for _ in 0..5 {
            q.copy(1000, 1000, true);
        }
        q.unsent[0].start = 916; // an earlier piece ended at the window's edge, 916
        let a = send(&mut q, 916, &pass(3, 10_000));
        assert_eq!(
            a.iter().map(|o| (o.seq, o.len)).collect::<Vec<_>>(),
            [(916, 1000), (1916, 84)]
        );
        let b = send(&mut q, 2000, &pass(3, 3900));
        assert_eq!(
            b.iter().map(|o| (o.seq, o.len, o.psh)).collect::<Vec<_>>(),
            [(2000, 1000, false), (3000, 900, true)]
        );
        assert_eq!(
            q.unsent.front().map(|h| (h.start, h.end)),
            Some((3900, 4000))
        );
    }

    /// tcp_snd_wnd_test(): the head's first MSS must fit the window; a 100-byte head fits a
    /// 100-byte window. Nagle (tcp_nagle_test()): a sub-MSS last skb waits when tcp_nagle_check()
    /// holds it, unless the pass pushes; tcp_mss_split_point() cuts a held partial tail off.
    #[test]
    fn the_window_test_and_nagle_stop_a_pass() {
        let mut q = SkbQueue::new(1 << 20);
        q.copy(2500, 64_000, true);
        assert_eq!(q.next_piece(0, &pass(4, 999)), None);
        let held = Pass {
            nagle_holds_partial: true,
            ..pass(4, 10_000)
        };
        assert_eq!(q.next_piece(0, &held), Some(2000));
        q.cut_piece(2000);
        assert_eq!(q.next_piece(2000, &held), None);
        assert_eq!(q.next_piece(2000, &Pass { push: true, ..held }), Some(500));
        assert_eq!(q.next_piece(2000, &pass(4, 2499)), None); // a short head must fit whole
        assert_eq!(q.next_piece(2000, &pass(4, 2500)), Some(500));
    }

    /// A piece the send loop did not send goes back: the head is as before the cut.
    #[test]
    fn an_unsent_piece_is_uncut() {
        let mut q = SkbQueue::new(1 << 20);
        q.copy(5000, 64_000, true);
        q.mark_push();
        assert_eq!(q.next_piece(0, &pass(2, 1 << 20)), Some(2000));
        q.cut_piece(2000);
        q.uncut(0);
        assert_eq!(
            q.unsent
                .iter()
                .map(|h| (h.start, h.end, h.psh))
                .collect::<Vec<_>>(),
            [(0, 5000, true)]
        );
        assert!(q.sent.is_empty());
        q.cut_piece(2000);
        q.uncut(1000);
        assert_eq!(
            q.sent.iter().map(|h| (h.start, h.end)).collect::<Vec<_>>(),
            [(0, 1000)]
        );
        assert_eq!(
            q.unsent.front().map(|h| (h.start, h.end)),
            Some((1000, 2000))
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

    /// tcp_write_xmit()'s pieces: with a quota of 2 two segments go as one TSO piece with PSH;
    /// with a quota of 1 each segment is its own piece and only an skb's end carries the skb's
    /// PSH. A retransmission of a piece's last segment carries that piece's PSH.
    #[test]
    fn pieces_of_two_segments_carry_psh_single_ones_only_at_a_pushed_end() {
        let mut q = SkbQueue::new(1 << 20);
        q.copy(6000, 64_000, true);
        q.mark_push();
        let psh = |v: Vec<Outbound>| v.iter().map(|o| o.psh).collect::<Vec<_>>();
        assert_eq!(psh(send(&mut q, 0, &pass(1, 1 << 20))), [false]);
        assert_eq!(psh(send(&mut q, 1000, &pass(1, 1 << 20))), [false]);
        assert_eq!(psh(send(&mut q, 2000, &pass(2, 1 << 20))), [false, true]);
        assert_eq!(psh(send(&mut q, 4000, &pass(1, 1 << 20))), [false]);
        assert_eq!(psh(send(&mut q, 5000, &pass(1, 1 << 20))), [true]); // 6000 ends the pushed skb
        let mut r = [seg(5000, 1000, true)];
        q.on_sent(&mut r, 3, 2, 2);
        assert!(r[0].psh);
        let mut r = [seg(0, 1000, true)];
        q.on_sent(&mut r, 3, 2, 2);
        assert!(!r[0].psh);
        q.on_acked(6000);
        assert!(q.sent.is_empty());
    }
}

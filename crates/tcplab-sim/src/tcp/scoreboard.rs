//! The sender's view of every outstanding segment: SACKed, lost, retransmitted (RFC 6675 §2-4).
//! A data structure: the rules that mark segments lost (RFC 6675 IsLost, RACK, FreeBSD's LRD)
//! are components beside it, in `tcp::sender::detection`, which mark through its narrow API.
//!
//! pipe is kept as counters so it costs O(1): pipe = outstanding - sacked - lost + retransmitted,
//! which equals RFC 6675 SetPipe() (each unSACKed octet counts once unless lost, and once more if
//! retransmitted) and Linux's `tcp_packets_in_flight()` (packets_out - left_out + retrans_out).
//!
//! No per-ACK operation walks the window: SACKed ranges are a `RangeSet` searched in O(log n),
//! RACK's candidates are kept in send-time order (Linux's `tsorted_sent_queue`) so its loss
//! detection costs the segments it marks, and the searches that repeat (HighRxt's, the rescue
//! segment's) start where they last stopped. Each is tested against the linear walk it replaced.

use crate::tcp::ranges::RangeSet;
use crate::tcp::rate::{Delivered, RateTx};
use crate::time::Ns;
use std::collections::{BTreeSet, VecDeque};

const SACKED: u8 = 1;
const LOST: u8 = 2;
const RETRANS: u8 = 4;
/// In RACK's time-ordered queue whenever it is a RACK candidate (see `rack_key`): set when a
/// retransmission is sent, or when RACK's horizon passes an original transmission.
const TRACKED: u8 = 8;

/// What a cumulative ACK removed, for the RTT sample ([`Scoreboard::ack`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Acked {
    /// Send time of the newest fully acknowledged segment never retransmitted (Karn).
    pub karn_sent_at: Option<Ns>,
    /// Whether a segment ever retransmitted was among them, SACKed or not (Linux
    /// tcp_clean_rtx_queue(): `if (unlikely(sacked & TCPCB_RETRANS)) ... flag |=
    /// FLAG_RETRANS_DATA_ACKED;`). A segment acknowledged only in part is not counted, as Linux
    /// leaves an skb of one segment that an ACK ends inside (`tcp_skb_pcount(skb) == 1`).
    pub retrans: bool,
}

/// One segment as first transmitted; boundaries never change. 24 bytes, so that the segments an
/// ACK pops and the output loop pushes share cache lines (its delivery-rate snapshot, 40 bytes,
/// is kept apart, and only for a module that reads it: [`Rates`]).
#[derive(Clone, Debug)]
pub struct Seg {
    /// First byte.
    pub seq: u64,
    /// Length, bytes.
    pub len: u32,
    /// Time of the latest (re)transmission.
    pub sent_at: Ns,
    /// How many times it was sent.
    pub tx_count: u16,
    flags: u8,
}

impl Seg {
    fn delivered(&self) -> Delivered {
        Delivered {
            sent_at: self.sent_at,
            end: self.end(),
            len: self.len,
            retrans: self.tx_count > 1,
        }
    }
}

/// The delivery-rate snapshots (Linux `TCP_SKB_CB(skb)->tx`) of a scoreboard whose sender's CC
/// module reads delivery rates: `txs[i]` is `segs[i]`'s latest transmission's, `delivered[i]`
/// the one of the `i`-th segment in the scoreboard's `delivered`.
#[derive(Default, Debug)]
struct Rates {
    txs: VecDeque<RateTx>,
    delivered: Vec<RateTx>,
}

impl Seg {
    /// Its end sequence number.
    pub fn end(&self) -> u64 {
        self.seq + self.len as u64
    }
    fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }
    /// Whether it is SACKed.
    pub fn is_sacked(&self) -> bool {
        self.has(SACKED)
    }
    /// Whether it is marked lost.
    pub fn is_lost(&self) -> bool {
        self.has(LOST)
    }
    /// Whether a retransmission of it is counted in flight.
    pub fn is_retransmitted(&self) -> bool {
        self.has(RETRANS)
    }
    /// Its key in RACK's time-ordered queue, if it belongs there: tracked, not SACKED and not
    /// lost-and-waiting for its retransmission (the segments tcp_rack_detect_loss() looks at).
    fn rack_key(&self) -> Option<(Ns, u64)> {
        let candidate = !self.has(SACKED) && (!self.has(LOST) || self.has(RETRANS));
        (self.has(TRACKED) && candidate).then(|| (self.sent_at, self.end()))
    }
}

/// Per-segment state of [snd_una, snd_max) and the aggregate counters RFC 6675 needs.
#[derive(Default, Debug)]
#[repr(C)] // the byte counters first: the sampler reads them (`pipe`) after a sender's ACKs
pub struct Scoreboard {
    /// Bytes SACKed.
    pub sacked_bytes: u64,
    /// Bytes marked lost and not SACKed.
    pub lost_bytes: u64,
    /// Bytes retransmitted, not SACKed, and not marked lost again.
    pub retrans_bytes: u64,
    /// Without SACK: segments presumed to have left the network, one per duplicate ACK
    /// (Linux `tcp_add_reno_sack`), counted in MSS units.
    pub reno_sacked_segs: u32,
    /// Segments SACKed: Linux's sacked_out, each segment (at most an MSS) one packet.
    pub sacked_segs: u32,
    segs: VecDeque<Seg>,
    /// SACKed ranges, sorted and merged.
    sacked_ranges: RangeSet,
    /// RACK's time-ordered queue (Linux `tp->tsorted_sent_queue`): (send time, end) of every
    /// tracked segment that is neither SACKed nor lost-and-not-yet-retransmitted.
    rack_q: BTreeSet<(Ns, u64)>,
    /// Every segment starting in [.0, .1) is SACKed (what `rescue_candidate` last crossed).
    sacked_run: (u64, u64),
    /// Number of the segment where `next_lost` last stopped (its search starts there).
    next_lost_hint: u64,
    /// Segments popped by cumulative ACKs so far: `segs[i]` is segment number `popped + i`.
    popped: u64,
    /// Number of the first segment RACK has not looked at: original transmissions before it
    /// are tracked in `rack_q`; those from it on were sent after the RACK segment. (A number,
    /// not a sequence number, so that finding it costs no search of the window; a split
    /// before it only makes it point one segment early, which is harmless.)
    rack_next: u64,
    /// Everything below this sequence number has been examined for loss.
    lost_mark: u64,
    /// RFC 6675 HighRxt: retransmission search starts here.
    high_rxt: u64,
    /// Segments newly delivered (acked or SACKed) since `clear_delivered`.
    delivered: Vec<Delivered>,
    /// The segments' delivery-rate snapshots, when kept ([`Scoreboard::keeping_rates`]).
    rates: Option<Box<Rates>>,
}

impl Scoreboard {
    /// An empty scoreboard that keeps each segment's delivery-rate snapshot ([`Self::delivered_txs`]):
    /// for a CC module that reads delivery rates (BBR). Otherwise the snapshots passed in are
    /// dropped ([`Self::default`]).
    pub fn keeping_rates() -> Self {
        Scoreboard {
            rates: Some(Box::default()),
            ..Default::default()
        }
    }

    /// Record a newly transmitted segment (must follow the previous one).
    pub fn push(&mut self, seq: u64, len: u32, now: Ns, tx: RateTx) {
        debug_assert!(self.segs.back().is_none_or(|s| s.end() == seq));
        self.segs.push_back(Seg {
            seq,
            len,
            sent_at: now,
            tx_count: 1,
            flags: 0,
        });
        if let Some(r) = &mut self.rates {
            r.txs.push_back(tx);
        }
    }

    /// Number of outstanding segments.
    pub fn len(&self) -> usize {
        self.segs.len()
    }

    /// Whether nothing is outstanding.
    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    /// Index of the first segment whose seq >= `seq`.
    pub(crate) fn lower_bound(&self, seq: u64) -> usize {
        self.segs.partition_point(|s| s.seq < seq)
    }

    /// `lower_bound(seq)`, trying index `hint` and the one after it first (next_lost() asks
    /// again for the segment it found, or for the one after it once that is retransmitted).
    fn lower_bound_near(&self, seq: u64, hint: usize) -> usize {
        let is_bound = |i: usize| {
            i <= self.segs.len()
                && self.segs.get(i).is_none_or(|s| s.seq >= seq)
                && (i == 0 || self.segs[i - 1].seq < seq)
        };
        [hint, hint + 1]
            .into_iter()
            .find(|&i| is_bound(i))
            .unwrap_or_else(|| self.lower_bound(seq))
    }

    /// Bytes considered in the network (RFC 6675 pipe), given snd_max - snd_una and the MSS.
    pub fn pipe(&self, outstanding: u64, mss: u64) -> u64 {
        (outstanding + self.retrans_bytes).saturating_sub(
            self.sacked_bytes + self.lost_bytes + u64::from(self.reno_sacked_segs) * mss,
        )
    }

    /// Segments outstanding: Linux's packets_out, each of the model's segments (at most an MSS,
    /// or one MTU probe) being one packet as each skb of at most an MSS is (tcp_skb_pcount()).
    pub fn packets_out(&self) -> u64 {
        self.segs.len() as u64
    }

    /// Linux's tcp_packets_in_flight() in packets (`packets_out - (sacked_out + lost_out) +
    /// retrans_out`), each segment counting tcp_skb_pcount(), ceil(len / mss): a sub-MSS segment
    /// is a whole packet, where [`Self::pipe`] counts its bytes. O(segments): for the drill
    /// endpoint, whose windows are small.
    pub fn pipe_segs(&self, mss: u64) -> u64 {
        let in_flight: u64 = self
            .segs
            .iter()
            .filter(|s| !s.is_sacked())
            .map(|s| {
                (s.len as u64).div_ceil(mss).max(1)
                    * (u64::from(!s.is_lost()) + u64::from(s.is_retransmitted()))
            })
            .sum();
        in_flight.saturating_sub(u64::from(self.reno_sacked_segs))
    }

    /// Cumulative ACK up to `ack`: drop covered segments (the ones not SACKed before go to
    /// `delivered`, in sequence order). Returns what the RTT sample needs.
    pub fn ack(&mut self, ack: u64) -> Acked {
        let mut acked = Acked::default();
        while let Some(s) = self.segs.front() {
            if s.end() > ack {
                break;
            }
            let s = self.segs.pop_front().expect("front exists");
            let tx = self
                .rates
                .as_mut()
                .map(|r| r.txs.pop_front().expect("one per segment"));
            self.popped += 1;
            if let Some(k) = s.rack_key() {
                self.rack_q.remove(&k);
            }
            if !s.has(SACKED) {
                self.delivered.push(s.delivered());
                if let (Some(r), Some(tx)) = (&mut self.rates, tx) {
                    r.delivered.push(tx);
                }
            }
            self.forget(&s);
            if s.tx_count == 1 {
                acked.karn_sent_at = Some(s.sent_at);
            } else {
                acked.retrans = true;
            }
        }
        // A segment partly acknowledged (only when a receiver acks mid-segment): trim it.
        if let Some(s) = self.segs.front_mut() {
            if s.seq < ack {
                let cut = (ack - s.seq) as u32;
                let flags = s.flags;
                s.seq = ack;
                s.len -= cut;
                if flags & SACKED != 0 {
                    self.sacked_bytes -= cut as u64;
                } else {
                    if flags & LOST != 0 {
                        self.lost_bytes -= cut as u64;
                    }
                    if flags & RETRANS != 0 {
                        self.retrans_bytes -= cut as u64;
                    }
                }
            }
        }
        self.sacked_ranges.trim_below(ack);
        self.lost_mark = self.lost_mark.max(ack);
        self.high_rxt = self.high_rxt.max(ack);
        acked
    }

    fn forget(&mut self, s: &Seg) {
        let len = s.len as u64;
        if s.has(SACKED) {
            self.sacked_bytes -= len;
            self.sacked_segs -= 1;
        } else {
            if s.has(LOST) {
                self.lost_bytes -= len;
            }
            if s.has(RETRANS) {
                self.retrans_bytes -= len;
            }
        }
    }

    /// Apply SACK blocks (RFC 2018); returns bytes newly SACKed.
    pub fn sack(&mut self, blocks: &[(u64, u64)], snd_una: u64) -> u64 {
        let mut newly = 0;
        for &(s, e) in blocks {
            let s = s.max(snd_una);
            if e <= s {
                continue; // D-SACK or stale block below snd_una
            }
            let mut at = s;
            while let Some((us, ue)) = self.sacked_ranges.next_gap(at, e) {
                newly += self.sack_segments(us, ue);
                at = ue;
            }
            self.sacked_ranges.insert(s, e);
        }
        newly
    }

    /// Mark SACKed the segments lying inside `[us, ue)`, a part of a block not SACKed before
    /// (Linux tcp_sacktag_one(); a SACKed segment also leaves RACK's time-ordered queue, as
    /// tcp_sacktag_walk() does with `list_del_init(&skb->tcp_tsorted_anchor)`). Returns bytes.
    fn sack_segments(&mut self, us: u64, ue: u64) -> u64 {
        let mut newly = 0;
        let mut i = self.lower_bound(us);
        while i < self.segs.len() && self.segs[i].end() <= ue {
            let seg = &mut self.segs[i];
            if !seg.has(SACKED) {
                if let Some(k) = seg.rack_key() {
                    self.rack_q.remove(&k);
                }
                let len = seg.len as u64;
                if seg.has(LOST) {
                    self.lost_bytes -= len;
                }
                if seg.has(RETRANS) {
                    self.retrans_bytes -= len;
                }
                seg.flags |= SACKED;
                self.sacked_bytes += len;
                self.sacked_segs += 1;
                newly += len;
                self.delivered.push(seg.delivered());
                if let Some(r) = &mut self.rates {
                    r.delivered.push(r.txs[i]);
                }
            }
            i += 1;
        }
        newly
    }

    // What loss detection (tcp::sender::detection: RFC 6675 IsLost, RACK, FreeBSD's LRD) reads
    // and marks. The rules that decide a segment is lost live there, beside the scoreboard;
    // these keep its counters and RACK's time-ordered queue in step with every mark.

    /// The outstanding segments, in sequence order.
    pub(crate) fn segs(&self) -> &VecDeque<Seg> {
        &self.segs
    }

    /// The SACKed ranges, sorted and merged.
    pub(crate) fn sacked_ranges(&self) -> &RangeSet {
        &self.sacked_ranges
    }

    /// Where loss marking has examined up to: nothing below is examined again.
    pub(crate) fn lost_mark(&self) -> u64 {
        self.lost_mark
    }

    /// Everything below `seq` has been examined for loss.
    pub(crate) fn examined_up_to(&mut self, seq: u64) {
        self.lost_mark = self.lost_mark.max(seq);
    }

    /// The retransmission search (RFC 6675 HighRxt) starts again at `seq` if that is lower.
    pub(crate) fn rewind_high_rxt(&mut self, seq: u64) {
        self.high_rxt = self.high_rxt.min(seq);
    }

    /// The retransmission search starts again at the first outstanding segment.
    pub(crate) fn high_rxt_to_head(&mut self) {
        self.high_rxt = self.segs.front().map_or(self.high_rxt, |s| s.seq);
    }

    /// Mark segment `i` lost unless it is SACKed or lost already; a retransmission of it
    /// already sent (the rescue) stays counted in flight and is not sent again until an RTO.
    /// Returns bytes newly marked.
    pub(crate) fn mark_lost_keeping_retransmission(&mut self, i: usize) -> u64 {
        let seg = &mut self.segs[i];
        if seg.has(SACKED) || seg.has(LOST) {
            return 0;
        }
        let key = seg.rack_key();
        seg.flags |= LOST;
        let len = seg.len as u64;
        self.lost_bytes += len;
        self.requeue(key, i);
        len
    }

    /// Mark segment `i` lost, and its retransmission in flight, if any, lost with it (it leaves
    /// retrans_out, as in Linux tcp_mark_skb_lost()), so that it is sent again.
    pub(crate) fn mark_lost_with_retransmission(&mut self, i: usize) {
        let seg = &mut self.segs[i];
        let key = seg.rack_key();
        let len = seg.len as u64;
        if seg.has(RETRANS) {
            seg.flags &= !RETRANS;
            self.retrans_bytes -= len;
        }
        if !seg.has(LOST) {
            seg.flags |= LOST;
            self.lost_bytes += len;
        }
        self.requeue(key, i);
    }

    /// The earliest-sent segment in RACK's time-ordered queue: (send time, end).
    pub(crate) fn rack_first(&self) -> Option<(Ns, u64)> {
        self.rack_q.first().copied()
    }

    /// The latest-sent segment in RACK's queue sent before `rack` (send time, end).
    pub(crate) fn rack_last_before(&self, rack: (Ns, u64)) -> Option<(Ns, u64)> {
        self.rack_q.range(..rack).next_back().copied()
    }

    /// Mark the first outstanding segment lost (fast retransmit without SACK; RFC 6582 partial
    /// ACK). Returns whether it was newly marked.
    pub fn mark_head_lost(&mut self) -> bool {
        let Some(seg) = self.segs.front_mut() else {
            return false;
        };
        if seg.has(SACKED) || seg.has(LOST) {
            return false;
        }
        let key = seg.rack_key();
        seg.flags |= LOST;
        if seg.has(RETRANS) {
            seg.flags &= !RETRANS;
            self.retrans_bytes -= seg.len as u64;
        }
        self.lost_bytes += seg.len as u64;
        self.lost_mark = self.lost_mark.max(seg.end());
        self.high_rxt = self.high_rxt.min(seg.seq);
        self.requeue(key, 0);
        true
    }

    /// Mark [start, end) lost, splitting the segment that contains `start` (FreeBSD's rescue
    /// retransmission inserts a hole of the last maxseg bytes, wherever segments begin:
    /// tcp_sack.c tcp_sack_partialack()). SACKed or already lost parts are left alone.
    pub fn mark_range_lost(&mut self, start: u64, end: u64) {
        self.split_at(start);
        let mut i = self.lower_bound(start);
        while let Some(seg) = self.segs.get_mut(i) {
            if seg.seq >= end {
                break;
            }
            if !seg.has(SACKED) && !seg.has(LOST) {
                let key = seg.rack_key();
                seg.flags |= LOST;
                if seg.has(RETRANS) {
                    seg.flags &= !RETRANS;
                    self.retrans_bytes -= seg.len as u64;
                }
                self.lost_bytes += seg.len as u64;
                self.requeue(key, i);
            }
            i += 1;
        }
        self.lost_mark = self.lost_mark.max(end);
        self.high_rxt = self.high_rxt.min(start);
    }

    /// Whether the first outstanding segment is marked lost.
    pub fn head_lost(&self) -> bool {
        self.segs.front().is_some_and(|s| s.has(LOST))
    }

    /// After an RTO: every unSACKed segment is lost and no retransmission is in flight
    /// (RFC 6675 §5.1; Linux `tcp_enter_loss`). SACK information is kept.
    pub fn mark_all_lost(&mut self) {
        let mut lost = 0;
        for s in self.segs.iter_mut() {
            s.flags &= !RETRANS;
            if !s.has(SACKED) {
                s.flags |= LOST;
                lost += s.len as u64;
            }
        }
        self.lost_bytes = lost;
        self.retrans_bytes = 0;
        self.reno_sacked_segs = 0;
        self.rack_q.clear(); // every segment is now SACKed or lost-and-not-retransmitted
        self.lost_mark = self.segs.back().map_or(self.lost_mark, |s| s.end());
        self.high_rxt = self.segs.front().map_or(self.high_rxt, |s| s.seq);
    }

    /// RFC 6675 NextSeg() rule 1: the first segment lost and not yet retransmitted.
    #[inline] // asked before every segment sent; nearly always with nothing lost
    pub fn next_lost(&mut self) -> Option<(u64, u32)> {
        if self.lost_bytes == 0 {
            return None;
        }
        self.find_next_lost()
    }

    /// `next_lost` when some bytes are marked lost.
    fn find_next_lost(&mut self) -> Option<(u64, u32)> {
        let hint = self.next_lost_hint.saturating_sub(self.popped) as usize;
        let mut i = self.lower_bound_near(self.high_rxt, hint);
        while i < self.segs.len() {
            let s = &self.segs[i];
            if s.seq >= self.lost_mark {
                break;
            }
            if s.has(LOST) && !s.has(SACKED) && !s.has(RETRANS) {
                self.next_lost_hint = self.popped + i as u64;
                return Some((s.seq, s.len));
            }
            i += 1;
        }
        // Nothing left below lost_mark: move HighRxt up so later searches start there.
        self.high_rxt = self.high_rxt.max(self.lost_mark);
        None
    }

    /// RFC 6675 NextSeg() rule 4 (rescue retransmission): the highest unSACKed segment below the
    /// highest SACKed byte, if any, and not already retransmitted.
    ///
    /// The walk down from the highest SACKed byte remembers the run of SACKed segments it
    /// crossed (`sacked_run`; a segment once SACKed stays so), and jumps over it next time, so
    /// a long SACKed run at the top is crossed once, not on every call.
    pub fn rescue_candidate(&mut self) -> Option<(u64, u32)> {
        let (_, top) = self.sacked_ranges.last()?;
        let (low, high) = self.sacked_run;
        let mut i = self.lower_bound(top);
        let found = loop {
            let Some(s) = i.checked_sub(1).map(|j| &self.segs[j]) else {
                break None;
            };
            if low <= s.seq && s.seq < high {
                i = self.lower_bound(low); // every segment starting in [low, high) is SACKed
            } else if s.has(SACKED) {
                i -= 1;
            } else {
                break Some(s);
            }
        };
        self.sacked_run = (found.map_or(0, Seg::end), top);
        found.filter(|s| !s.has(RETRANS)).map(|s| (s.seq, s.len))
    }

    /// Split the segment containing `at` so that a segment starts there (FreeBSD retransmits part
    /// of a hole: tcp_output.c sends min(cwin, hole) bytes and advances the hole's rxmit). Both
    /// parts keep the segment's flags and send time; the byte counters are unchanged (a SACKed
    /// segment's count grows by one).
    pub fn split_at(&mut self, at: u64) {
        let i = self.lower_bound(at);
        if i == 0 || self.segs.get(i).is_some_and(|s| s.seq == at) {
            return;
        }
        let prev = &mut self.segs[i - 1];
        if prev.end() <= at {
            return;
        }
        let tail = Seg {
            seq: at,
            len: (prev.end() - at) as u32,
            ..prev.clone()
        };
        // The tail keeps the segment's RACK key (same send time and end); the head gets its own.
        prev.len = (at - prev.seq) as u32;
        if let Some(k) = prev.rack_key() {
            self.rack_q.insert(k);
        }
        if tail.has(SACKED) {
            self.sacked_segs += 1;
        }
        self.segs.insert(i, tail);
        if let Some(r) = &mut self.rates {
            let tx = r.txs[i - 1];
            r.txs.insert(i, tx);
        }
    }

    /// Record a retransmission of the segment starting at `seq`.
    pub fn mark_retransmitted(&mut self, seq: u64, now: Ns, tx: RateTx) {
        let i = self.lower_bound(seq);
        let Some(s) = self.segs.get_mut(i) else {
            return;
        };
        debug_assert_eq!(s.seq, seq);
        let key = s.rack_key();
        s.sent_at = now;
        if let Some(r) = &mut self.rates {
            r.txs[i] = tx;
        }
        s.tx_count = s.tx_count.saturating_add(1);
        // A retransmission joins the tail of RACK's time-ordered queue (Linux
        // tcp_update_skb_after_send(): list_move_tail(&skb->tcp_tsorted_anchor, ...)).
        s.flags |= TRACKED;
        if !s.has(RETRANS) && !s.has(SACKED) {
            s.flags |= RETRANS;
            self.retrans_bytes += s.len as u64;
        }
        self.high_rxt = self.high_rxt.max(s.end());
        self.requeue(key, i);
    }

    /// The segments delivered since `clear_delivered`.
    pub fn delivered(&self) -> &[Delivered] {
        &self.delivered
    }

    /// The delivery-rate snapshots of the `delivered` segments, in the same order (empty unless
    /// the scoreboard keeps them: [`Self::keeping_rates`]).
    pub fn delivered_txs(&self) -> &[RateTx] {
        self.rates.as_ref().map_or(&[], |r| &r.delivered)
    }

    /// Forget the delivered segments (keeps the buffers' capacity: this runs on every ACK).
    pub fn clear_delivered(&mut self) {
        self.delivered.clear();
        if let Some(r) = &mut self.rates {
            r.delivered.clear();
        }
    }

    /// Put into RACK's queue the original transmissions sent before the RACK segment `rack`
    /// that are not in it yet. Originals leave in sequence order, so they are taken from
    /// `rack_next` up to the first one sent at or after `rack`; each segment is looked at once
    /// (retransmissions joined the queue when they were sent).
    pub(crate) fn rack_track_up_to(&mut self, rack: (Ns, u64)) {
        let mut i = (self.rack_next.saturating_sub(self.popped) as usize).min(self.segs.len());
        while let Some(seg) = self.segs.get_mut(i) {
            if seg.has(TRACKED) {
                i += 1;
                continue;
            }
            if (seg.sent_at, seg.end()) >= rack {
                break;
            }
            seg.flags |= TRACKED;
            if let Some(k) = seg.rack_key() {
                self.rack_q.insert(k);
            }
            i += 1;
        }
        self.rack_next = self.popped + i as u64;
    }

    /// After segment `i` changed: move it in RACK's queue from its key `before` to its new one.
    fn requeue(&mut self, before: Option<(Ns, u64)>, i: usize) {
        let after = self.segs[i].rack_key();
        if before != after {
            if let Some(k) = before {
                self.rack_q.remove(&k);
            }
            if let Some(k) = after {
                self.rack_q.insert(k);
            }
        }
    }

    /// The last outstanding segment, if not SACKed (what a tail loss probe retransmits).
    pub fn last_unsacked(&self) -> Option<(u64, u32)> {
        self.segs
            .back()
            .filter(|s| !s.has(SACKED))
            .map(|s| (s.seq, s.len))
    }

    /// Highest SACKed sequence number, if anything is SACKed.
    pub fn highest_sacked(&self) -> Option<u64> {
        self.sacked_ranges.last().map(|r| r.1)
    }

    /// Consistency check of the counters against the segments (tests and property tests).
    pub fn check(&self) -> Result<(), String> {
        let (mut sacked, mut lost, mut retx, mut sacked_segs) = (0, 0, 0, 0u64);
        for s in &self.segs {
            let len = s.len as u64;
            if s.has(SACKED) {
                sacked += len;
                sacked_segs += 1;
            } else {
                if s.has(LOST) {
                    lost += len;
                }
                if s.has(RETRANS) {
                    retx += len;
                }
            }
        }
        if sacked_segs != u64::from(self.sacked_segs) {
            return Err(format!(
                "sacked_segs {} != recount {sacked_segs}",
                self.sacked_segs
            ));
        }
        if (sacked, lost, retx) != (self.sacked_bytes, self.lost_bytes, self.retrans_bytes) {
            return Err(format!(
                "scoreboard counters (sacked {}, lost {}, retx {}) != recount ({sacked}, {lost}, {retx})",
                self.sacked_bytes, self.lost_bytes, self.retrans_bytes
            ));
        }
        if let Some(r) = &self.rates {
            if r.txs.len() != self.segs.len() || r.delivered.len() != self.delivered.len() {
                return Err(format!(
                    "{} rate snapshots for {} segments, {} for {} delivered",
                    r.txs.len(),
                    self.segs.len(),
                    r.delivered.len(),
                    self.delivered.len()
                ));
            }
        }
        let queue: BTreeSet<(Ns, u64)> = self.segs.iter().filter_map(Seg::rack_key).collect();
        if queue != self.rack_q {
            return Err(format!(
                "RACK queue {:?} != its segments' keys {queue:?}",
                self.rack_q
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "scoreboard_tests.rs"]
mod tests;

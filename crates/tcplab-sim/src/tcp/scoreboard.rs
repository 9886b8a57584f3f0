//! The sender's view of every outstanding segment: SACKed, lost, retransmitted (RFC 6675 §2-4).
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
    fn end(&self) -> u64 {
        self.seq + self.len as u64
    }
    fn has(&self, f: u8) -> bool {
        self.flags & f != 0
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
    pub reno_sacked_segs: u64,
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
    fn lower_bound(&self, seq: u64) -> usize {
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
        (outstanding + self.retrans_bytes)
            .saturating_sub(self.sacked_bytes + self.lost_bytes + self.reno_sacked_segs * mss)
    }

    /// Cumulative ACK up to `ack`: drop covered segments. Returns (bytes of segments removed, send
    /// time of the newest fully acked never-retransmitted segment, for Karn-safe RTT sampling).
    pub fn ack(&mut self, ack: u64) -> Option<Ns> {
        let mut karn_sample = None;
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
                karn_sample = Some(s.sent_at);
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
        karn_sample
    }

    fn forget(&mut self, s: &Seg) {
        let len = s.len as u64;
        if s.has(SACKED) {
            self.sacked_bytes -= len;
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

    /// RFC 6675 IsLost(): mark every unSACKed segment that has at least `dupthresh` SACKed
    /// segments above it. Returns bytes newly marked lost.
    pub fn mark_losses(&mut self, dupthresh: u32) -> u64 {
        let need = dupthresh as usize;
        let mut count = 0usize;
        let mut boundary = None;
        for (s, e) in self.sacked_ranges.iter().rev() {
            let (i_s, i_e) = (self.lower_bound(s), self.lower_bound(e));
            let n = i_e - i_s;
            if count + n >= need {
                boundary = Some(i_e - (need - count));
                break;
            }
            count += n;
        }
        let Some(b) = boundary else { return 0 };
        let boundary_seq = self.segs[b].seq;
        let mut newly = 0;
        let mut i = self.lower_bound(self.lost_mark);
        while i < b {
            let seg = &mut self.segs[i];
            if !seg.has(SACKED) && !seg.has(LOST) {
                // A segment already retransmitted (rescue) stays RETRANS: its copy is in flight
                // and it is not retransmitted again until an RTO.
                let key = seg.rack_key();
                seg.flags |= LOST;
                let len = seg.len as u64;
                self.lost_bytes += len;
                newly += len;
                self.requeue(key, i);
            }
            i += 1;
        }
        self.lost_mark = self.lost_mark.max(boundary_seq);
        newly
    }

    /// FreeBSD's `sackhint.lost_bytes` (RFC 6675 IsLost over the scoreboard's holes, review
    /// D39299), as tcp_sack.c tcp_sack_doack() computes it at the end of its sweep
    /// (fel1x-developer/freebsd-src sys/netinet/tcp_sack.c @ 2d614aa2, the newest stored copy):
    /// holes are walked from the right; hole k (1 for the rightmost) with `loss_thresh` SACKed
    /// bytes above it is not lost while `!((loss_sblks >= tcprexmtthresh) || (loss_thresh >
    /// (tcprexmtthresh - 1) * tp->t_maxseg))`; `lost_bytes = hole_bytes - notlost_bytes`, where
    /// the holes are the unSACKed bytes between snd_una and the highest SACKed byte (retransmitted
    /// or not). `t_maxseg` is the option-less MSS.
    pub fn fb_lost_bytes(&self, t_maxseg: u64) -> u64 {
        let Some((_, top)) = self.sacked_ranges.last() else {
            return 0;
        };
        let Some(front) = self.segs.front() else {
            return 0;
        };
        if top <= front.seq {
            return 0;
        }
        let hole_bytes = (top - front.seq).saturating_sub(self.sacked_bytes);
        let (mut sacked_above, mut holes, mut in_hole, mut notlost) = (0, 0u32, false, 0);
        for s in self.segs.range(..self.lower_bound(top)).rev() {
            let len = s.len as u64;
            if s.has(SACKED) {
                sacked_above += len;
                in_hole = false;
                continue;
            }
            if !in_hole {
                in_hole = true;
                holes += 1;
            }
            if holes >= 3 || sacked_above > 2 * t_maxseg {
                break;
            }
            notlost += len;
        }
        hole_bytes.saturating_sub(notlost)
    }

    /// FreeBSD's lost-retransmission detection (TF_LRD), tcp_sack.c
    /// tcp_sack_lost_retransmission() as read at fel1x-developer/freebsd-src @ 2d614aa2: once a
    /// hole has been retransmitted entirely its `rxmit` is parked at snd_recover (tcp_output.c:
    /// `if ((tp->t_flags & TF_LRD) && SEQ_GEQ(p->rxmit, p->end)) p->rxmit = SEQ_MAX(p->rxmit,
    /// tp->snd_recover);`), so when `SEQ_GT(tp->snd_fack, tp->snd_recover)` and the first hole is
    /// fully retransmitted (`SEQ_GEQ(temp->rxmit, temp->end) && SEQ_GEQ(tp->snd_fack,
    /// temp->rxmit)`), data sent after the retransmission was SACKed first: the retransmission
    /// is lost. Every fully retransmitted hole below snd_fack is then re-armed (`temp->rxmit =
    /// temp->start`): here its segments stop counting as retransmitted and are to be sent again.
    /// Returns whether the retransmission was judged lost.
    pub fn fb_lost_retransmission(&mut self, snd_recover: u64) -> bool {
        let Some(fack) = self.highest_sacked() else {
            return false;
        };
        if fack <= snd_recover {
            return false;
        }
        let first_hole = self.segs.iter().take_while(|s| !s.has(SACKED));
        let (mut n, mut all_retx) = (0, true);
        for s in first_hole {
            n += 1;
            all_retx &= s.has(RETRANS);
        }
        if n == 0 || !all_retx {
            return false;
        }
        // Re-arm each hole (maximal run of unSACKed segments below snd_fack) sent again entirely.
        let end = self.lower_bound(fack);
        let mut i = 0;
        while i < end {
            if self.segs[i].has(SACKED) {
                i += 1;
                continue;
            }
            let j = (i..end).find(|&k| self.segs[k].has(SACKED)).unwrap_or(end);
            if (i..j).all(|k| self.segs[k].has(RETRANS)) {
                for k in i..j {
                    let seg = &mut self.segs[k];
                    let key = seg.rack_key();
                    seg.flags &= !RETRANS;
                    self.retrans_bytes -= seg.len as u64;
                    if !seg.has(LOST) {
                        seg.flags |= LOST;
                        self.lost_bytes += seg.len as u64;
                    }
                    self.requeue(key, k);
                }
            }
            i = j;
        }
        self.lost_mark = self.lost_mark.max(fack);
        self.high_rxt = self.segs.front().map_or(self.high_rxt, |s| s.seq);
        true
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
    /// parts keep the segment's flags and send time; the byte counters are unchanged.
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

    /// RACK loss detection (Linux tcp_recovery.c tcp_rack_detect_loss(), RFC 8985 §6.2): every
    /// segment not SACKed, and not already lost and waiting for its retransmission, that was sent
    /// before the most recently sent delivered segment (`rack_xmit`, `rack_end`) is lost once
    /// `rack_rtt + reo_wnd` has passed since it was sent. A lost retransmission is marked lost
    /// again, so it is sent once more. Returns bytes newly marked lost and the longest wait of
    /// the segments not yet due (for the reordering timer).
    ///
    /// Linux walks `tsorted_sent_queue` (torvalds/linux net/ipv4/tcp_recovery.c @ 010b64f7,
    /// tcp_rack_detect_loss(); the same loop today with tcp_rack_reo_wnd()): segments in send
    /// order, SACKed ones already unlinked, each one marked lost unlinked too. `rack_q` is that
    /// queue, so the walk costs the segments it marks (times log n): due ones are at its front,
    /// and the longest wait is the latest-sent segment still before the RACK segment.
    pub fn rack_mark_lost(
        &mut self,
        rack_xmit: Ns,
        rack_end: u64,
        rack_rtt: Ns,
        reo_wnd: Ns,
        now: Ns,
    ) -> (u64, Option<Ns>) {
        let rack = (rack_xmit, rack_end);
        self.rack_track_up_to(rack);
        let due_after = rack_rtt + reo_wnd;
        let (mut newly, mut lowest_marked) = (0, None::<u64>);
        while let Some(&(sent_at, end)) = self.rack_q.first() {
            // tcp_rack_sent_after(): only what was sent before the RACK segment; elapsed time
            // falls along the queue, so the first segment not yet due ends the marking.
            if (sent_at, end) >= rack || now.saturating_sub(sent_at) < due_after {
                break;
            }
            self.rack_q.pop_first();
            let i = self.segs.partition_point(|s| s.end() < end);
            let seg = &mut self.segs[i];
            debug_assert_eq!((seg.sent_at, seg.end()), (sent_at, end));
            let len = seg.len as u64;
            if seg.has(RETRANS) {
                // tcp_mark_skb_lost(): a retransmission lost again leaves retrans_out.
                seg.flags &= !RETRANS;
                self.retrans_bytes -= len;
            }
            if !seg.has(LOST) {
                seg.flags |= LOST;
                self.lost_bytes += len;
            }
            newly += len;
            lowest_marked = Some(lowest_marked.map_or(seg.seq, |l| l.min(seg.seq)));
            self.lost_mark = self.lost_mark.max(end);
        }
        if let Some(seq) = lowest_marked {
            self.high_rxt = self.high_rxt.min(seq);
        }
        let wait = self
            .rack_q
            .range(..rack)
            .next_back()
            .map(|&(sent_at, _)| due_after - now.saturating_sub(sent_at));
        (newly, wait)
    }

    /// Put into RACK's queue the original transmissions sent before the RACK segment `rack`
    /// that are not in it yet. Originals leave in sequence order, so they are taken from
    /// `rack_next` up to the first one sent at or after `rack`; each segment is looked at once
    /// (retransmissions joined the queue when they were sent).
    fn rack_track_up_to(&mut self, rack: (Ns, u64)) {
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
        let (mut sacked, mut lost, mut retx) = (0, 0, 0);
        for s in &self.segs {
            let len = s.len as u64;
            if s.has(SACKED) {
                sacked += len;
            } else {
                if s.has(LOST) {
                    lost += len;
                }
                if s.has(RETRANS) {
                    retx += len;
                }
            }
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
mod tests {
    use super::*;

    fn board(n: u64) -> Scoreboard {
        let mut b = Scoreboard::default();
        for i in 0..n {
            b.push(i * 100, 100, 0, RateTx::default());
        }
        b
    }

    #[test]
    fn one_hole_with_three_segments_sacked_above_is_lost_and_pipe_follows_rfc6675() {
        let mut b = board(10); // segments 0..9, 100 bytes each
                               // segment 2 lost; 3,4,5 SACKed
        assert_eq!(b.sack(&[(300, 600)], 0), 300);
        assert_eq!(b.mark_losses(3), 100 + 100 + 100); // segments 0, 1, 2 lie below 3 SACKed ones
        b.ack(200); // segments 0,1 acked: only 2 remains lost
        assert_eq!(b.lost_bytes, 100);
        // outstanding = 800 (200..1000); pipe = 800 - 300 sacked - 100 lost = 400
        assert_eq!(b.pipe(800, 100), 400);
        assert_eq!(b.next_lost(), Some((200, 100)));
        b.mark_retransmitted(200, 5, RateTx::default());
        assert_eq!(b.pipe(800, 100), 500);
        assert_eq!(b.next_lost(), None);
        b.check().unwrap();
    }

    #[test]
    fn fewer_than_dupthresh_sacked_segments_mark_nothing() {
        let mut b = board(10);
        b.sack(&[(300, 500)], 0);
        assert_eq!(b.mark_losses(3), 0);
        assert_eq!(b.lost_bytes, 0);
    }

    #[test]
    fn repeated_sack_blocks_count_once() {
        let mut b = board(10);
        assert_eq!(b.sack(&[(300, 500)], 0), 200);
        assert_eq!(b.sack(&[(300, 600)], 0), 100);
        assert_eq!(b.sacked_bytes, 300);
        b.check().unwrap();
    }

    #[test]
    fn rto_marks_everything_unsacked_lost_and_clears_retransmissions() {
        let mut b = board(5);
        b.sack(&[(300, 400)], 0);
        b.mark_head_lost();
        b.mark_retransmitted(0, 1, RateTx::default());
        b.mark_all_lost();
        assert_eq!(b.lost_bytes, 400);
        assert_eq!(b.retrans_bytes, 0);
        assert_eq!(b.pipe(500, 100), 0);
        assert_eq!(b.next_lost(), Some((0, 100)));
        b.check().unwrap();
    }

    #[test]
    fn rate_snapshots_follow_their_segments_through_splits_retransmissions_sacks_and_acks() {
        let tx = |tag: u64| RateTx {
            delivered: tag,
            ..Default::default()
        };
        // (end, snapshot tag) of each delivered segment.
        let tags = |b: &Scoreboard| -> Vec<(u64, u64)> {
            let d = b.delivered().iter().zip(b.delivered_txs());
            d.map(|(d, t)| (d.end, t.delivered)).collect()
        };
        let mut b = Scoreboard::keeping_rates();
        for i in 0..6u64 {
            b.push(i * 100, 100, i, tx(i * 100));
        }
        b.split_at(250); // 200..250 and 250..300, both with segment 200's snapshot
        b.mark_retransmitted(100, 10, tx(1100)); // the retransmission's snapshot replaces it
        b.sack(&[(250, 300), (400, 500)], 0);
        b.check().unwrap();
        assert_eq!(tags(&b), [(300, 200), (500, 400)]);
        b.clear_delivered();
        b.ack(400); // 250..300 was SACKed: not delivered again
        b.check().unwrap();
        assert_eq!(tags(&b), [(100, 0), (200, 1100), (250, 200), (400, 300)]);
        // A scoreboard that does not keep them has none, and delivers the same segments.
        let mut c = Scoreboard::default();
        c.push(0, 100, 0, tx(7));
        c.ack(100);
        assert_eq!(c.delivered().len(), 1);
        assert!(c.delivered_txs().is_empty());
    }

    #[test]
    fn rack_marks_segments_sent_before_a_delivered_one_once_rtt_plus_reo_wnd_passed() {
        // segments 0..5 sent at t = 0, 10, 20, 30, 40 (ms units here), segment 3 SACKed.
        let mut b = Scoreboard::default();
        for i in 0..5u64 {
            b.push(i * 100, 100, i * 10, RateTx::default());
        }
        b.sack(&[(300, 400)], 0);
        let d = b.delivered();
        assert_eq!(
            (d.len(), d[0].sent_at, d[0].end, d[0].retrans),
            (1, 30, 400, false)
        );
        // now = 75, rack_rtt = 75 - 30 = 45, reo_wnd 0: segments sent at 0, 10, 20 are due
        // (elapsed 75, 65, 55 >= 45); segment 4 was sent after the delivered one: untouched.
        let (lost, wait) = b.rack_mark_lost(30, 400, 45, 0, 75);
        assert_eq!((lost, wait), (300, None));
        // with a 25 reordering window, segment 2 (elapsed 55 < 70) waits 15 more
        let mut c = Scoreboard::default();
        for i in 0..5u64 {
            c.push(i * 100, 100, i * 10, RateTx::default());
        }
        c.sack(&[(300, 400)], 0);
        let (lost, wait) = c.rack_mark_lost(30, 400, 45, 25, 75);
        assert_eq!((lost, wait), (100, Some(15)));
        b.check().unwrap();
        c.check().unwrap();
    }

    #[test]
    fn rack_marks_a_lost_retransmission_again_so_it_is_resent() {
        let mut b = board(4); // all sent at t = 0
        b.sack(&[(100, 400)], 0);
        b.mark_losses(3);
        assert_eq!(b.next_lost(), Some((0, 100)));
        b.mark_retransmitted(0, 50, RateTx::default());
        assert_eq!(b.next_lost(), None);
        // a segment sent at 60 (new data) is delivered at 110: the retransmission sent at 50 is
        // older than rack_rtt (50) by now = 110 -> lost again
        b.push(400, 100, 60, RateTx::default());
        b.sack(&[(400, 500)], 0);
        let (lost, _) = b.rack_mark_lost(60, 500, 50, 0, 110);
        assert_eq!(lost, 100);
        assert_eq!(b.next_lost(), Some((0, 100)));
        b.check().unwrap();
    }

    #[test]
    fn a_lost_range_may_start_inside_a_segment() {
        let mut b = board(4);
        b.mark_range_lost(250, 400);
        assert_eq!(b.lost_bytes, 150);
        assert_eq!(b.next_lost(), Some((250, 50)));
        b.check().unwrap();
    }

    #[test]
    fn rescue_candidate_is_highest_unsacked_below_highest_sack() {
        let mut b = board(6);
        b.sack(&[(100, 200), (400, 500)], 0);
        assert_eq!(b.rescue_candidate(), Some((300, 100)));
    }
}

/// The time-ordered RACK queue against the linear walk it replaced, over random scoreboards.
#[cfg(test)]
mod rack_queue_tests {
    use super::*;
    use crate::rng::Rng;

    /// The previous implementation: walk every segment from snd_una on every call.
    fn rack_mark_lost_linear(
        b: &mut Scoreboard,
        rack_xmit: Ns,
        rack_end: u64,
        rack_rtt: Ns,
        reo_wnd: Ns,
        now: Ns,
    ) -> (u64, Option<Ns>) {
        let (mut newly, mut wait) = (0, None::<Ns>);
        let mut lowest_marked = None;
        for seg in b.segs.iter_mut() {
            if seg.has(SACKED) || (seg.has(LOST) && !seg.has(RETRANS)) {
                continue;
            }
            let sent_before =
                seg.sent_at < rack_xmit || (seg.sent_at == rack_xmit && seg.end() < rack_end);
            if !sent_before {
                if seg.tx_count == 1 {
                    break;
                }
                continue;
            }
            let elapsed = now.saturating_sub(seg.sent_at);
            if rack_rtt + reo_wnd <= elapsed {
                let len = seg.len as u64;
                if seg.has(RETRANS) {
                    seg.flags &= !RETRANS;
                    b.retrans_bytes -= len;
                }
                if !seg.has(LOST) {
                    seg.flags |= LOST;
                    b.lost_bytes += len;
                }
                newly += len;
                lowest_marked.get_or_insert(seg.seq);
                b.lost_mark = b.lost_mark.max(seg.end());
            } else {
                let remaining = rack_rtt + reo_wnd - elapsed;
                wait = Some(wait.map_or(remaining, |w| w.max(remaining)));
            }
        }
        if let Some(seq) = lowest_marked {
            b.high_rxt = b.high_rxt.min(seq);
        }
        (newly, wait)
    }

    /// The previous rescue_candidate(): walk down from the highest SACKed byte every time.
    fn rescue_candidate_linear(b: &Scoreboard) -> Option<(u64, u32)> {
        let (_, top) = b.sacked_ranges.last()?;
        let i = b.lower_bound(top);
        b.segs
            .range(..i)
            .rev()
            .find(|s| !s.has(SACKED))
            .filter(|s| !s.has(RETRANS))
            .map(|s| (s.seq, s.len))
    }

    /// The previous next_lost(): a search from HighRxt every time. Returns it and HighRxt after.
    fn next_lost_linear(b: &Scoreboard) -> (Option<(u64, u32)>, u64) {
        if b.lost_bytes == 0 {
            return (None, b.high_rxt);
        }
        let first = b.segs.range(b.lower_bound(b.high_rxt)..);
        let found = first
            .take_while(|s| s.seq < b.lost_mark)
            .find(|s| s.has(LOST) && !s.has(SACKED) && !s.has(RETRANS));
        match found {
            Some(s) => (Some((s.seq, s.len)), b.high_rxt),
            None => (None, b.high_rxt.max(b.lost_mark)),
        }
    }

    /// Everything a decision depends on, without the queue's own bookkeeping flag.
    fn state(b: &Scoreboard) -> (Vec<(u64, u32, Ns, u16, u8)>, [u64; 5]) {
        let segs = b.segs.iter();
        let segs = segs.map(|s| (s.seq, s.len, s.sent_at, s.tx_count, s.flags & !TRACKED));
        let counters = [
            b.sacked_bytes,
            b.lost_bytes,
            b.retrans_bytes,
            b.lost_mark,
            b.high_rxt,
        ];
        (segs.collect(), counters)
    }

    /// One random step of what the senders do to a scoreboard; time advances by 0..3 units.
    fn random_step(b: &mut Scoreboard, rng: &mut Rng, now: &mut Ns, snd_nxt: &mut u64) {
        *now += rng.below(3);
        let una = b.segs.front().map_or(*snd_nxt, |s| s.seq);
        let span = (*snd_nxt - una).max(1);
        let at = una + rng.below(span);
        match rng.below(12) {
            0..=2 => {
                let len = [100, 100, 100, 40][rng.below(4) as usize];
                b.push(*snd_nxt, len, *now, RateTx::default());
                *snd_nxt += len as u64;
            }
            3 | 4 => {
                b.sack(&[(at, (at + 100 * (1 + rng.below(4))).min(*snd_nxt))], una);
            }
            5 => {
                b.ack(at);
            }
            6 => {
                b.mark_losses(1 + rng.below(3) as u32);
            }
            7 => match rng.below(4) {
                0 => _ = b.mark_head_lost(),
                1 => b.mark_range_lost(at, (at + 150).min(*snd_nxt)),
                2 => b.split_at(at),
                _ => _ = b.fb_lost_retransmission(at),
            },
            8 | 9 => {
                let seg = b.next_lost().or_else(|| {
                    let i = rng.below(b.segs.len().max(1) as u64) as usize;
                    b.segs.get(i).map(|s| (s.seq, s.len))
                });
                if let Some((seq, _)) = seg {
                    b.mark_retransmitted(seq, *now, RateTx::default());
                }
            }
            10 if rng.below(8) == 0 => b.mark_all_lost(),
            _ => {}
        }
        b.clear_delivered();
    }

    #[test]
    fn rack_queue_and_hinted_searches_decide_exactly_as_the_linear_walks() {
        let mut calls_that_marked = 0;
        for seed in 1..=60 {
            let mut rng = Rng::new(seed);
            let (mut b, mut now, mut snd_nxt) = (Scoreboard::default(), 0, 0);
            for step in 0..400 {
                random_step(&mut b, &mut rng, &mut now, &mut snd_nxt);
                b.check()
                    .unwrap_or_else(|e| panic!("seed {seed} step {step}: {e}"));
                let want = rescue_candidate_linear(&b);
                assert_eq!(b.rescue_candidate(), want, "seed {seed} step {step}");
                let want = next_lost_linear(&b);
                assert_eq!((b.next_lost(), b.high_rxt), want, "seed {seed} step {step}");
                // RACK from a random outstanding or just-acked segment's send time and end.
                let Some(i) = (!b.segs.is_empty()).then(|| rng.below(b.segs.len() as u64)) else {
                    continue;
                };
                let s = &b.segs[i as usize];
                let (xmit, end) = (s.sent_at + rng.below(2), s.end());
                let (rtt, reo) = (rng.below(20), rng.below(6));
                let mut reference = Scoreboard {
                    segs: b.segs.clone(),
                    sacked_ranges: b.sacked_ranges.clone(),
                    ..Default::default()
                };
                (reference.sacked_bytes, reference.lost_bytes) = (b.sacked_bytes, b.lost_bytes);
                (reference.retrans_bytes, reference.lost_mark) = (b.retrans_bytes, b.lost_mark);
                reference.high_rxt = b.high_rxt;
                let want = rack_mark_lost_linear(&mut reference, xmit, end, rtt, reo, now);
                let got = b.rack_mark_lost(xmit, end, rtt, reo, now);
                assert_eq!(got, want, "seed {seed} step {step}");
                assert_eq!(state(&b), state(&reference), "seed {seed} step {step}");
                b.check()
                    .unwrap_or_else(|e| panic!("seed {seed} step {step}: {e}"));
                calls_that_marked += (got.0 > 0) as u32;
            }
        }
        // The random boards exercise marking, not only the early exits.
        assert!(calls_that_marked > 1000, "{calls_that_marked}");
    }
}

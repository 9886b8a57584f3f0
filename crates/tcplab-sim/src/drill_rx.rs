//! The receiving half of a drill endpoint (`tcplab drill`'s model targets): data segments in,
//! the ACK fields out (cumulative ACK, window, SACK blocks, at once or delayed), a socket buffer
//! the script reads with recv(). The rules are FreeBSD's, read in fel1x-developer/freebsd-src @
//! 2d614aa2fe3e037bd11d351b0b5cfda776e65814: sys/netinet/tcp_input.c tcp_do_segment() (todrop,
//! header prediction, dodata, DELAY_ACK, FIN), tcp_reass.c tcp_reass(), tcp_sack.c
//! tcp_update_sack_list() / tcp_update_dsack_list() / tcp_clean_dsack_blocks(), tcp_output.c
//! (recwin, window updates, tcp_addoptions()' room for SACK blocks). Not on the simulation's path:
//! the simulator's receiver (tcp/receiver.rs) models an application that reads at once and sends
//! no D-SACK; what they share is the out-of-order queue, a [`RangeSet`]. Sequence numbers are the
//! peer's, as the script writes them (no wraparound).

use crate::tcp::ranges::RangeSet;
use crate::time::Ns;

/// tcp_var.h MAX_SACK_BLKS: SACK blocks the receiver keeps.
const MAX_SACK_BLKS: usize = 6;
/// TCP_MAXWIN: the largest unscaled window.
const TCP_MAXWIN: u64 = 65_535;

/// The receiver's settings, fixed once the handshake is done.
#[derive(Clone, Copy, Debug)]
pub struct RxConfig {
    /// so_rcv.sb_hiwat after tcp_mss(): roundup(recvspace, t_maxseg), at most sb_max.
    pub hiwat: u64,
    /// rcv_scale (0 without window scaling).
    pub rcv_scale: u32,
    /// t_maxseg.
    pub maxseg: u64,
    /// SACK permitted on this connection.
    pub sack: bool,
    /// Timestamps on this connection (3 SACK blocks fit beside them, else 4).
    pub timestamps: bool,
    /// tcp_delacktime; None when net.inet.tcp.delayed_ack = 0.
    pub delack_ns: Option<Ns>,
}

/// One ACK's fields: what tcp_output() puts in the header and options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AckFields {
    /// th_ack.
    pub ack: u64,
    /// th_win (shifted right by rcv_scale).
    pub win: u32,
    /// SACK blocks in option order.
    pub sacks: Vec<(u64, u64)>,
}

/// The receiving half: rcv_nxt, the reassembly queue, the SACK list and the socket buffer.
pub struct Receiver {
    cfg: RxConfig,
    rcv_nxt: u64,
    rcv_adv: u64,
    queue: RangeSet,
    /// A FIN held in the reassembly queue at this sequence number (tcp_reass() keeps TH_FIN in
    /// the entry's tqe_flags).
    queued_fin: Option<u64>,
    fin_rcvd: bool,
    /// Bytes in so_rcv the application has not read.
    unread: u64,
    sackblks: [(u64, u64); MAX_SACK_BLKS],
    numsacks: usize,
    acknow: bool,
    /// TF_DELACK: set while a segment is processed, turned into the timer at check_delack.
    delack: bool,
    delack_at: Option<Ns>,
    rxwin0sent: bool,
}

impl Receiver {
    /// A receiver whose peer's first data byte is `rcv_nxt` (its ISN + 1), after a SYN or
    /// SYN-ACK that advertised `syn_win` bytes (rcv_adv).
    pub fn new(cfg: RxConfig, rcv_nxt: u64, syn_win: u64) -> Self {
        Receiver {
            cfg,
            rcv_nxt,
            rcv_adv: rcv_nxt + syn_win,
            queue: RangeSet::default(),
            queued_fin: None,
            fin_rcvd: false,
            unread: 0,
            sackblks: [(0, 0); MAX_SACK_BLKS],
            numsacks: 0,
            acknow: false,
            delack: false,
            delack_at: None,
            rxwin0sent: false,
        }
    }

    /// rcv_nxt.
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    /// Whether the peer's FIN was received (CLOSE_WAIT and later).
    pub fn fin_rcvd(&self) -> bool {
        self.fin_rcvd
    }

    /// Bytes the application may read.
    pub fn readable(&self) -> u64 {
        self.unread
    }

    /// so_rcv.sb_hiwat.
    pub fn hiwat(&self) -> u64 {
        self.cfg.hiwat
    }

    /// When the delayed-ACK timer fires.
    pub fn deadline(&self) -> Option<Ns> {
        self.delack_at
    }

    /// Whether an ACK is owed now (TF_ACKNOW).
    pub fn ack_due(&self, now: Ns) -> bool {
        self.acknow || self.delack_at.is_some_and(|t| t <= now)
    }

    fn sbspace(&self) -> u64 {
        self.cfg.hiwat.saturating_sub(self.unread)
    }

    /// A segment with `len` bytes at `seq` (FIN flag `fin`) arrives at `now`; returns whether
    /// an ACK is owed at once (TF_ACKNOW), else a delayed ACK may have been armed.
    pub fn on_segment(&mut self, now: Ns, seq: u64, len: u64, fin: bool) -> bool {
        let (mut seq, mut tlen, mut fin) = (seq, len, fin);
        // Header prediction: in-order data, nothing queued, room in so_rcv: the SACK report is
        // cleaned (tcp_clean_sackreport()) and the data appended.
        if seq == self.rcv_nxt
            && !fin
            && tlen > 0
            && self.queue.is_empty()
            && self.queued_fin.is_none()
            && tlen <= self.sbspace()
            && !self.fin_rcvd
        {
            self.numsacks = 0;
            self.sackblks = [(0, 0); MAX_SACK_BLKS];
            self.rcv_nxt += tlen;
            self.unread += tlen;
            self.ack_or_delay(tlen);
            return self.check_delack(now);
        }
        // todrop: trim what lies below rcv_nxt; D-SACK the dropped range.
        if seq < self.rcv_nxt {
            let mut todrop = self.rcv_nxt - seq;
            if todrop > tlen || (todrop == tlen && !fin) {
                fin = false;
                self.acknow = true;
                todrop = tlen;
            }
            if todrop > 0 && self.cfg.sack {
                self.update_sack_list(seq, seq + todrop);
                self.acknow = true; // "the next in-sequence segment will clear the DSACK block"
            }
            seq += todrop;
            tlen -= todrop;
        }
        // Beyond the window (rcv_wnd = max(sbspace, rcv_adv - rcv_nxt)): trimmed; nothing
        // left, dropafterack.
        let rcv_wnd = self
            .sbspace()
            .max(self.rcv_adv.saturating_sub(self.rcv_nxt));
        let right = self.rcv_nxt + rcv_wnd;
        if seq + tlen > right {
            let todrop = seq + tlen - right;
            if todrop >= tlen {
                self.acknow = true;
                if !(rcv_wnd == 0 && seq == self.rcv_nxt) {
                    return true;
                }
            }
            tlen -= todrop.min(tlen);
            fin = false;
        }
        if (tlen > 0 || fin) && !self.fin_rcvd {
            self.dodata(seq, tlen, fin);
        }
        self.check_delack(now)
    }

    /// DELAY_ACK(tp, tlen): no delayed-ACK timer running, no zero window advertised, at most
    /// t_maxseg, delayed ACKs on.
    fn ack_or_delay(&mut self, tlen: u64) {
        if self.delack_at.is_none()
            && !self.rxwin0sent
            && tlen <= self.cfg.maxseg
            && self.cfg.delack_ns.is_some()
        {
            self.delack = true;
        } else {
            self.acknow = true;
        }
    }

    /// check_delack: TF_DELACK arms the timer (tcp_delacktime); an ACK sent now cancels it.
    fn check_delack(&mut self, now: Ns) -> bool {
        if std::mem::take(&mut self.delack) && !self.acknow {
            self.delack_at = Some(now + self.cfg.delack_ns.unwrap_or(0));
        }
        self.acknow
    }

    /// tcp_do_segment()'s dodata: in order with nothing queued, else tcp_reass(); then the SACK
    /// list; then the FIN.
    fn dodata(&mut self, seq: u64, tlen: u64, fin: bool) {
        let (save_start, save_rnxt, save_tlen) = (seq, self.rcv_nxt, tlen);
        let (thfin, tlen) =
            if seq == self.rcv_nxt && self.queue.is_empty() && self.queued_fin.is_none() {
                self.ack_or_delay(tlen);
                self.rcv_nxt += tlen;
                self.unread += tlen;
                (fin, tlen)
            } else {
                let r = self.reass(seq, tlen, fin);
                self.acknow = true;
                r
            };
        if self.cfg.sack && save_tlen > 0 {
            if tlen == 0 && save_start < save_rnxt {
                self.update_sack_list(save_start, save_start + save_tlen);
            } else if tlen > 0 && self.rcv_nxt > save_rnxt {
                if self.numsacks >= 1 && self.sackblks[0].1 == save_start {
                    let (s, e) = self.sackblks[0];
                    self.update_sack_list(s, e); // "Partial overlap, recorded at todrop above"
                } else {
                    self.update_dsack_list(save_start, save_start + save_tlen);
                }
            } else if tlen >= save_tlen {
                self.update_dsack_list(save_start, save_start + save_tlen);
            } else if tlen > 0 {
                self.update_dsack_list(save_start, save_start + tlen);
            }
        }
        if thfin && !self.fin_rcvd {
            self.fin_rcvd = true;
            self.acknow = true;
            self.rcv_nxt += 1;
        }
    }

    /// tcp_reass(): queue the segment (merged with what it touches, as tcp_reass_append /
    /// _prepend / _merge_forward do), then present in-order data. Returns (FIN delivered, the
    /// length tcp_reass() leaves in *tlenp: the length of the queue entry holding the segment).
    fn reass(&mut self, seq: u64, tlen: u64, fin: bool) -> (bool, u64) {
        if tlen == 0 && !fin {
            return (false, 0);
        }
        if let Some((_, last_end)) = self.queue.last() {
            // "Someone is trying to game us": a FIN below queued data.
            if fin && seq + tlen < last_end {
                return (false, 0);
            }
        }
        if self.queued_fin.is_some_and(|f| seq >= f && tlen > 0) {
            return (false, 0); // "We have data after the FIN on the last?"
        }
        if tlen > 0 {
            self.queue.insert(seq, seq + tlen);
        }
        if fin {
            self.queued_fin = Some(seq + tlen);
        }
        let entry = if tlen > 0 {
            self.queue.containing(seq).map_or(tlen, |(s, e)| e - s)
        } else {
            tlen
        };
        // present: deliver every entry that starts at rcv_nxt.
        let mut fin_delivered = false;
        while let Some((s, e)) = self.queue.first() {
            if s > self.rcv_nxt {
                break;
            }
            self.queue.pop_first();
            self.unread += e - self.rcv_nxt;
            self.rcv_nxt = e;
        }
        if self.queued_fin == Some(self.rcv_nxt) {
            self.queued_fin = None;
            fin_delivered = true;
        }
        (fin_delivered, entry)
    }

    /// tcp_update_sack_list(), line for line (sequence comparisons without wraparound).
    fn update_sack_list(&mut self, rcv_start: u64, rcv_end: u64) {
        let mut head =
            if rcv_start == rcv_end && self.numsacks >= 1 && rcv_end == self.sackblks[0].1 {
                self.sackblks[0] // retaining DSACK block below rcv_nxt (todrop)
            } else {
                (rcv_start, rcv_end)
            };
        let mut saved: Vec<(u64, u64)> = Vec::with_capacity(MAX_SACK_BLKS);
        for i in 0..self.numsacks {
            let (mut start, mut end) = self.sackblks[i];
            if start >= end || start <= self.rcv_nxt {
                continue; // discard
            }
            let covers = |s: &Vec<(u64, u64)>, start: u64, end: u64| {
                s.last().is_some_and(|l| l.0 >= start && l.1 <= end)
            };
            if head.0 <= end && head.1 >= start {
                if head.0 == end {
                    head.0 = start;
                } else if head.1 == start {
                    head.1 = end;
                } else {
                    if head.0 < start {
                        std::mem::swap(&mut head.0, &mut start);
                    }
                    if head.1 > end {
                        std::mem::swap(&mut head.1, &mut end);
                    }
                    if head != (start, end) {
                        if covers(&saved, start, end) {
                            saved.pop();
                        }
                        saved.push((start, end));
                    }
                }
            } else {
                if covers(&saved, start, end) {
                    saved.pop(); // this block supersedes the prior one
                }
                saved.push((start, end));
            }
        }
        let mut num_head = 0;
        if rcv_start < rcv_end {
            self.sackblks[0] = head;
            num_head = 1;
            if saved.len() >= MAX_SACK_BLKS {
                saved.pop();
            }
        }
        if rcv_start == rcv_end && rcv_start == self.sackblks[0].1 {
            num_head = 1;
        }
        for (k, b) in saved.iter().enumerate() {
            self.sackblks[num_head + k] = *b;
        }
        self.numsacks = num_head + saved.len();
    }

    /// tcp_update_dsack_list(), line for line: a D-SACK block for the part of the segment
    /// already held (or below rcv_nxt) first, then the block it merged into, then the others.
    fn update_dsack_list(&mut self, rcv_start: u64, rcv_end: u64) {
        let mut saved = [(0u64, 0u64); MAX_SACK_BLKS];
        if rcv_end < self.rcv_nxt
            || (rcv_end == self.rcv_nxt && self.numsacks > 0 && self.sackblks[0].1 == self.rcv_nxt)
        {
            saved[0] = (rcv_start, rcv_end);
        }
        let mut head = (0u64, 0u64);
        let mut mid = (rcv_start, rcv_end);
        let mut identical = false;
        for i in 0..self.numsacks {
            let (start, end) = self.sackblks[i];
            if rcv_end < start || rcv_start > end {
                continue; // left or right of the block
            }
            if self.rcv_nxt > end {
                let (s, e) = (rcv_start.max(start), rcv_end.min(end));
                if s != e && (head.0 > s || head.0 == head.1) {
                    head = (s, e);
                }
                continue;
            }
            if (head.0 == head.1 || start < head.0) && end > rcv_start && start <= rcv_end {
                head = (start, end);
            }
            mid = (mid.0.min(start), mid.1.max(end));
            if mid == (start, end) {
                identical = true;
            }
        }
        if head.0 < head.1 {
            saved[0] = (rcv_start.max(head.0), rcv_end.min(head.1)); // the overlap
        }
        let mut n = 1;
        if (self.rcv_nxt < mid.1 && mid != saved[0]) || identical {
            saved[n] = mid;
            n += 1;
        }
        for j in 0..self.numsacks {
            if n >= MAX_SACK_BLKS {
                break;
            }
            let b = self.sackblks[j];
            if (b.1 < mid.0 || b.0 > mid.1) && b.0 > self.rcv_nxt {
                saved[n] = b;
                n += 1;
            }
        }
        let mut j = 0;
        for b in saved.iter().take(n) {
            if b.0 < b.1 {
                self.sackblks[j] = *b; // "we can end up with a stale initial entry"
                j += 1;
            }
        }
        self.numsacks = j;
    }

    /// tcp_clean_dsack_blocks(): after a segment went out, blocks at or below rcv_nxt go.
    fn clean_dsack_blocks(&mut self) {
        let kept: Vec<(u64, u64)> = self.sackblks[..self.numsacks]
            .iter()
            .copied()
            .filter(|&(s, e)| s < e && s > self.rcv_nxt)
            .collect();
        for (k, b) in kept.iter().enumerate() {
            self.sackblks[k] = *b;
        }
        self.numsacks = kept.len();
    }

    /// recwin as tcp_output() computes it before the window-update test.
    fn recwin(&self) -> u64 {
        self.sbspace().min(TCP_MAXWIN << self.cfg.rcv_scale)
    }

    /// The fields of the segment tcp_output() sends now (an ACK, or data carrying the ACK), and
    /// what sending it does: rcv_adv, TF_ACKNOW and the delayed-ACK timer cleared, D-SACK blocks
    /// cleaned. The window: no smaller than what was advertised (don't shrink), zero below
    /// min(hiwat/4, maxseg) (receiver silly-window avoidance), rounded up to the scale unit.
    pub fn sent(&mut self) -> AckFields {
        let mut recwin = self.recwin();
        if recwin < self.cfg.hiwat / 4 && recwin < self.cfg.maxseg {
            recwin = 0;
        }
        if self.rcv_adv > self.rcv_nxt && recwin < self.rcv_adv - self.rcv_nxt {
            recwin = self.rcv_adv - self.rcv_nxt;
        }
        let unit = 1u64 << self.cfg.rcv_scale;
        recwin = recwin.div_ceil(unit) * unit;
        let win = (recwin >> self.cfg.rcv_scale) as u32;
        self.rxwin0sent = win == 0;
        // tcp_addoptions(): NOP NOP, then as many 8-byte blocks as the 40 option bytes leave.
        let room = if self.cfg.timestamps { 3 } else { 4 };
        let n = if self.cfg.sack {
            self.numsacks.min(room)
        } else {
            0
        };
        let f = AckFields {
            ack: self.rcv_nxt,
            win,
            sacks: self.sackblks[..n].to_vec(),
        };
        if recwin > 0 && self.rcv_nxt + recwin > self.rcv_adv {
            self.rcv_adv = self.rcv_nxt + recwin;
        }
        self.acknow = false;
        self.delack_at = None;
        if self.cfg.sack && self.numsacks > 0 {
            self.clean_dsack_blocks();
        }
        f
    }

    /// The application reads up to `n` bytes (MSG_PEEK: leaves them); returns the count and
    /// whether tcp_usr_rcvd()'s tcp_output() sends a window update: the window can grow by two
    /// segments and a quarter of the buffer (or the buffer is small), or by half the buffer.
    pub fn read(&mut self, n: u64, peek: bool) -> (u64, bool) {
        let got = n.min(self.unread);
        if peek || got == 0 {
            return (got, false);
        }
        self.unread -= got;
        if self.delack_at.is_some() || self.fin_rcvd {
            return (got, false);
        }
        let recwin = self.recwin();
        let oldwin = self.rcv_adv.saturating_sub(self.rcv_nxt);
        let adv = recwin.saturating_sub(oldwin);
        let s = self.cfg.rcv_scale;
        if oldwin >> s >= (adv + oldwin) >> s {
            return (got, false);
        }
        let (hiwat, mss) = (self.cfg.hiwat, self.cfg.maxseg);
        let update = (adv >= 2 * mss
            && (adv >= hiwat / 4
                || recwin <= hiwat / 8
                || hiwat <= 8 * mss
                || adv >= TCP_MAXWIN << s))
            || 2 * adv >= hiwat;
        (got, update)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rx() -> Receiver {
        let cfg = RxConfig {
            hiwat: 65_700,
            rcv_scale: 0,
            maxseg: 1460,
            sack: true,
            timestamps: false,
            delack_ns: Some(40_000_000),
        };
        Receiver::new(cfg, 1, 65_535)
    }

    /// freebsd-net/tcp-testsuite rcv-data-segments/overlapping-050-075: three out-of-order
    /// blocks, then a segment below rcv_nxt: its D-SACK block first, all four sent, then cleaned.
    #[test]
    fn dsack_below_rcv_nxt_goes_first_then_is_cleaned() {
        let mut r = rx();
        assert!(!r.on_segment(0, 1, 99, false)); // in order: delayed
        assert!(r.deadline().is_some());
        for s in [200, 400, 600] {
            assert!(r.on_segment(0, s, 100, false));
            r.sent();
        }
        assert!(r.on_segment(0, 50, 25, false));
        let f = r.sent();
        assert_eq!(f.sacks, vec![(50, 75), (600, 700), (400, 500), (200, 300)]);
        assert!(r.on_segment(0, 1, 799, false));
        let f = r.sent();
        assert_eq!((f.ack, f.win, f.sacks), (800, 64_901, vec![(1, 100)]));
        assert!(r.sent().sacks.is_empty());
    }

    /// overlapping-150-400: the overlap with the lowest block as D-SACK, then the merged block.
    #[test]
    fn overlapping_segment_reports_overlap_then_merged_block() {
        let mut r = rx();
        r.on_segment(0, 1, 99, false);
        for s in [200, 400, 600] {
            r.on_segment(0, s, 100, false);
            r.sent();
        }
        r.on_segment(0, 150, 250, false);
        assert_eq!(r.sent().sacks, vec![(200, 300), (150, 500), (600, 700)]);
    }

    /// reordering-5F4321: a FIN queued out of order is delivered with the data before it.
    #[test]
    fn queued_fin_is_acked_when_the_hole_fills() {
        let mut r = rx();
        r.on_segment(0, 16, 16, false);
        assert_eq!(r.sent().sacks, vec![(16, 32)]);
        assert!(r.on_segment(0, 32, 0, true));
        assert_eq!(r.sent().sacks, vec![(16, 32)]);
        for (s, l) in [(8, 8), (4, 4), (2, 2)] {
            r.on_segment(0, s, l, false);
            assert_eq!(r.sent().sacks, vec![(s, 32)]);
        }
        assert!(r.on_segment(0, 1, 1, false));
        let f = r.sent();
        assert_eq!((f.ack, f.sacks.len()), (33, 0));
        assert!(r.fin_rcvd());
    }

    /// DELAY_ACK: the second in-order segment while the timer runs is ACKed at once.
    #[test]
    fn second_segment_acks_at_once() {
        let mut r = rx();
        assert!(!r.on_segment(0, 1, 1000, false));
        assert!(r.on_segment(1, 1001, 1000, false));
    }
}

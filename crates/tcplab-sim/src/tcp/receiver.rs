//! The TCP receiver: in-order delivery to an application that reads at once (iperf3 server),
//! out-of-order queue, SACK blocks (RFC 2018), delayed ACKs (RFC 5681 §4.2, RFC 1122), timestamp
//! echo (RFC 7323 §4.3) and a receive window limited by the socket buffer with window scaling:
//! a Linux receiver offers only part of its buffer (tcp_win_from_space()), the rest being the
//! memory overhead of the packets it holds.

use super::scoreboard::insert_range;
use crate::config::FlowConfig;
use crate::packet::{header_bytes, Kind, Packet, MAX_SACK_BLOCKS};
use crate::stack::StackProfile;
use crate::time::Ns;

/// The largest GRO aggregate (GRO_LEGACY_MAX_SIZE, 64 KB).
const GRO_MAX_BYTES: u64 = 65_536;

/// Contiguous data the NIC's GRO holds for the next flush.
struct GroHeld {
    seq: u64,
    end: u64,
    /// TSval of the first packet (GRO merges only packets whose options are equal).
    ts_val: Ns,
    flush_at: Ns,
}

/// How a receiver echoes congestion marks (RFC 3168 §6.1.3 or DCTCP's exact echo).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnEcho {
    /// ECN not negotiated.
    Off,
    /// RFC 3168: ECE on every ACK from a CE segment until a segment with CWR arrives; Linux
    /// tcp_ecn_check_ce() also sends the next ACKs at once (tcp_enter_quickack_mode(sk, 2)).
    Rfc3168,
    /// DCTCP: ECE on an ACK iff the segments it acknowledges were CE; a change of CE state sends
    /// the delayed ACK of the old state first, then one at once (Linux tcp_dctcp.c
    /// dctcp_ece_ack_update(); FreeBSD cc_dctcp.c dctcp_ecnpkt_handler()).
    Dctcp,
}

/// One TCP receiver.
pub struct TcpReceiver {
    flow: u32,
    /// Node the ACKs go to (the sender's host).
    peer: u32,
    mss: u64,
    timestamps: bool,
    sack: bool,
    ack_every: u32,
    delack_ns: Ns,
    /// The window with nothing held: rcvbuf x scaling_ratio / 256 (FlowConfig::rcv_space_bytes).
    space: u64,
    wscale: u32,
    /// Next byte expected; everything below was delivered to the application in order.
    pub rcv_nxt: u64,
    ooo: Vec<(u64, u64)>,
    ooo_bytes: u64,
    recent_blocks: Vec<(u64, u64)>,
    right_edge: u64,
    last_ack_sent: u64,
    ts_recent: Ns,
    unacked_segs: u32,
    quickacks: u32,
    delack_deadline: Option<Ns>,
    /// ACKs sent.
    pub acks_sent: u64,
    /// GRO: how long after its first packet an aggregate is handed to TCP (0: no GRO).
    gro_flush_ns: Ns,
    gro: Option<GroHeld>,
    /// Segments that brought nothing new (all below rcv_nxt or inside a held block): the
    /// spurious retransmissions a DSACK would report (RFC 2883).
    pub dup_segs: u64,
    ecn: EcnEcho,
    /// RFC 3168 TCP_ECN_DEMAND_CWR, or DCTCP's CE state: what the next ACK's ECE says.
    ece: bool,
    ack_now: bool,
    /// Data segments that arrived CE-marked.
    pub ce_segs: u64,
}

/// RFC 7323 §2.3: the smallest shift that lets the buffer fit in the 16-bit window field (max 14).
pub fn window_scale(rcvbuf: u64) -> u32 {
    let mut ws = 0;
    while (rcvbuf >> ws) > 65_535 && ws < 14 {
        ws += 1;
    }
    ws
}

impl TcpReceiver {
    /// A receiver for flow `f`.
    pub fn new(flow: u32, f: &FlowConfig, profile: &StackProfile) -> Self {
        TcpReceiver {
            flow,
            peer: f.src,
            mss: f.mss as u64,
            timestamps: f.timestamps,
            sack: f.sack,
            ack_every: profile.ack_every_segments.max(1),
            delack_ns: profile.delack_ns,
            space: f.rcv_space_bytes(),
            wscale: window_scale(f.rcvbuf_bytes),
            rcv_nxt: 0,
            ooo: Vec::new(),
            ooo_bytes: 0,
            recent_blocks: Vec::new(),
            right_edge: 0,
            last_ack_sent: 0,
            ts_recent: 0,
            unacked_segs: 0,
            quickacks: profile
                .quickack_segments
                .min((f.rcv_space_bytes() / (2 * f.mss as u64)).max(2) as u32),
            delack_deadline: None,
            acks_sent: 0,
            dup_segs: 0,
            gro_flush_ns: f.gro_flush_ns,
            gro: None,
            ecn: match (f.ecn, f.cc.as_str()) {
                (false, _) => EcnEcho::Off,
                (true, "dctcp") => EcnEcho::Dctcp,
                (true, _) => EcnEcho::Rfc3168,
            },
            ece: false,
            ack_now: false,
            ce_segs: 0,
        }
    }

    /// The IP ECN field and CWR flag of an arriving segment, before TCP processes its data.
    fn ecn_in(&mut self, p: &Packet, out: &mut Vec<Packet>, next_id: &mut u64) {
        let ce = p.ecn == crate::aqm::ecn::CE;
        self.ce_segs += ce as u64;
        match self.ecn {
            EcnEcho::Off => {}
            EcnEcho::Rfc3168 => {
                // tcp_ecn_accept_cwr() before tcp_ecn_check_ce(), as tcp_data_queue() runs them.
                if p.cwr {
                    self.ece = false;
                }
                if ce && !self.ece {
                    self.ece = true;
                    self.quickacks = self.quickacks.max(2);
                }
            }
            EcnEcho::Dctcp => {
                if ce != self.ece {
                    if self.delack_deadline.is_some() {
                        self.send_ack(out, next_id); // the delayed ACK, with the old state
                    }
                    self.ack_now = true;
                }
                self.ece = ce;
            }
        }
    }

    /// When the delayed-ACK timer or the GRO flush wants to fire.
    pub fn timer_deadline(&self) -> Option<Ns> {
        match (self.delack_deadline, self.gro.as_ref().map(|g| g.flush_at)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Bytes held out of order.
    pub fn ooo_bytes(&self) -> u64 {
        self.ooo_bytes
    }

    /// A data segment arrives from the NIC: with GRO, it joins the held aggregate when it
    /// continues it (net/ipv4/tcp_offload.c tcp_gro_receive(): same flow, next sequence, at most
    /// 64 KB), and the aggregate reaches TCP when the NAPI poll that collected it ends, rx-usecs
    /// after the first packet's interrupt (interrupt moderation); otherwise TCP gets it now.
    pub fn on_data(&mut self, p: &Packet, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        let len = p.len as u64;
        if self.ecn != EcnEcho::Off || p.ecn == crate::aqm::ecn::CE {
            self.ecn_in(p, out, next_id);
        }
        if self.gro_flush_ns == 0 {
            return self.receive(p.seq, len, p.ts_val, now, out, next_id);
        }
        if let Some(g) = self.gro.as_mut() {
            if p.seq == g.end && g.end - g.seq + len <= GRO_MAX_BYTES {
                g.end += len;
                return;
            }
            self.gro_flush(now, out, next_id);
        }
        self.gro = Some(GroHeld {
            seq: p.seq,
            end: p.seq + len,
            ts_val: p.ts_val,
            flush_at: now + self.gro_flush_ns,
        });
    }

    /// Hand the held aggregate to TCP.
    fn gro_flush(&mut self, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        if let Some(g) = self.gro.take() {
            self.receive(g.seq, g.end - g.seq, g.ts_val, now, out, next_id);
        }
    }

    /// TCP receives `len` bytes at `seq` (one segment, or a GRO aggregate of several).
    fn receive(
        &mut self,
        seq: u64,
        len: u64,
        ts_val: Ns,
        now: Ns,
        out: &mut Vec<Packet>,
        next_id: &mut u64,
    ) {
        let (s, e) = (seq, seq + len);
        // RFC 7323 §4.3 (3): TS.Recent follows the earliest segment not yet acknowledged.
        if seq <= self.last_ack_sent {
            self.ts_recent = ts_val;
        }
        if e <= self.rcv_nxt {
            // Entirely old: a spurious retransmission. ACK at once (RFC 5681 §4.2 / RFC 2883).
            self.dup_segs += 1;
            self.send_ack(out, next_id);
            return;
        }
        if s <= self.rcv_nxt {
            let had_ooo = !self.ooo.is_empty();
            self.rcv_nxt = e;
            while let Some(&(os, oe)) = self.ooo.first() {
                if os > self.rcv_nxt {
                    break;
                }
                self.ooo.remove(0);
                self.ooo_bytes -= oe - os;
                self.rcv_nxt = self.rcv_nxt.max(oe);
            }
            self.recent_blocks.retain(|b| b.1 > self.rcv_nxt);
            self.unacked_segs += (len / self.mss) as u32;
            let quick = self.quickacks > 0;
            if quick {
                self.quickacks -= 1;
            }
            let now_ack = std::mem::take(&mut self.ack_now);
            if quick
                || now_ack
                || had_ooo
                || self.unacked_segs >= self.ack_every
                || len % self.mss != 0
            {
                // RFC 5681 §4.2: ACK at once when a segment fills (part of) a gap; every 2nd full
                // segment (a GRO aggregate of two or more is one stretch ACK, as Linux's
                // __tcp_ack_snd_check() ACKs more than one rcv_mss at once); a short segment (the
                // end of a transfer) is ACKed at once as Linux does for a pushed runt.
                self.send_ack(out, next_id);
            } else if self.delack_deadline.is_none() {
                self.delack_deadline = Some(now + self.delack_ns);
            }
        } else {
            // Out of order: hold it and send an immediate duplicate ACK (RFC 5681 §4.2).
            if self.ooo.iter().any(|r| r.0 <= s && e <= r.1) {
                self.dup_segs += 1;
            }
            let before = self.ooo_bytes;
            insert_range(&mut self.ooo, s, e);
            self.ooo_bytes = self.ooo.iter().map(|r| r.1 - r.0).sum();
            debug_assert!(self.ooo_bytes >= before);
            if self.sack {
                self.note_recent_block(s);
            }
            self.send_ack(out, next_id);
        }
    }

    /// RFC 2018 §4: the first block reports the segment just received; then the most recently
    /// reported other blocks.
    fn note_recent_block(&mut self, seq: u64) {
        let Some(&blk) = self.ooo.iter().find(|r| r.0 <= seq && seq < r.1) else {
            return;
        };
        let mut order = vec![blk];
        for &b in &self.recent_blocks {
            if let Some(&cur) = self.ooo.iter().find(|r| r.0 <= b.0 && b.0 < r.1) {
                if !order.contains(&cur) {
                    order.push(cur);
                }
            }
        }
        order.truncate(MAX_SACK_BLOCKS);
        self.recent_blocks = order;
    }

    /// The GRO flush or the delayed-ACK timer may be due.
    pub fn on_timer(&mut self, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        if self.gro.as_ref().is_some_and(|g| g.flush_at <= now) {
            self.gro_flush(now, out, next_id);
        }
        if let Some(d) = self.delack_deadline {
            if d <= now {
                self.send_ack(out, next_id);
            }
        }
    }

    fn send_ack(&mut self, out: &mut Vec<Packet>, next_id: &mut u64) {
        *next_id += 1;
        let mut a = Packet::new(*next_id, Kind::Ack, self.flow, self.peer);
        a.ack = self.rcv_nxt;
        // The application reads at once, so only out-of-order data takes space. Linux
        // (tcp_space(), __tcp_select_window()): window = tcp_win_from_space(rcvbuf - rmem_alloc),
        // and the held packets' memory (truesize) is their length / scaling_ratio, so the window
        // loses exactly the bytes held. Advertised in units of 2^wscale; the right edge never
        // moves left (RFC 7323 §2.4, RFC 9293).
        let free = self.space.saturating_sub(self.ooo_bytes) >> self.wscale << self.wscale;
        self.right_edge = self.right_edge.max(self.rcv_nxt + free);
        a.rwnd = self.right_edge - self.rcv_nxt;
        a.ts_ecr = self.ts_recent;
        a.ece = self.ece && self.ecn != EcnEcho::Off;
        if self.sack {
            let max_blocks = if self.timestamps { 3 } else { MAX_SACK_BLOCKS };
            let n = self.recent_blocks.len().min(max_blocks);
            a.sack[..n].copy_from_slice(&self.recent_blocks[..n]);
            a.nsack = n as u8;
        }
        a.size_bytes = header_bytes(self.timestamps, a.nsack as usize);
        self.last_ack_sent = self.rcv_nxt;
        self.unacked_segs = 0;
        self.delack_deadline = None;
        self.ack_now = false;
        self.acks_sent += 1;
        out.push(a);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_scale_is_smallest_shift_that_fits() {
        assert_eq!(window_scale(65_535), 0);
        assert_eq!(window_scale(65_536), 1);
        assert_eq!(window_scale(16 << 20), 9);
        assert_eq!(window_scale(1 << 40), 14);
    }

    fn linux_receiver(rcvbuf_bytes: u64) -> TcpReceiver {
        let f = FlowConfig {
            name: "f".into(),
            src: 0,
            dst: 1,
            start_ns: 0,
            stack: "linux".into(),
            cc: "cubic".into(),
            mss: 1448,
            timestamps: true,
            sack: true,
            iw_segments: 10,
            sndbuf_bytes: 1 << 20,
            rcvbuf_bytes,
            rcv_scaling_ratio: 128,
            gro_flush_ns: 0,
            write_bytes: 1 << 20,
            app: crate::config::AppConfig::Time { duration_ns: 1 },
            sndbuf_initial_bytes: None,
            prr: None,
            freebsd: None,
            ecn: false,
        };
        TcpReceiver::new(0, &f, &crate::stack::profile("linux").unwrap())
    }

    fn data(seq: u64) -> Packet {
        let mut p = Packet::new(seq, Kind::Data, 0, 1);
        (p.seq, p.len) = (seq, 1448);
        p
    }

    #[test]
    fn linux_receiver_offers_half_its_buffer_and_never_pulls_the_right_edge_back() {
        // tcp_rmem max 262144 with tcp_adv_win_scale 1 (scaling_ratio 128): tcp_win_from_space()
        // = 262144 - 262144/2 = 131072 bytes; wscale 3 (262144 >> 2 = 65536 does not fit 16 bits).
        let mut r = linux_receiver(262_144);
        assert_eq!(r.wscale, 3);
        let (mut out, mut id) = (Vec::new(), 0);
        r.quickacks = 0;
        r.on_data(&data(0), 0, &mut out, &mut id);
        r.on_data(&data(1448), 0, &mut out, &mut id);
        let a = out.pop().unwrap();
        assert_eq!((a.ack, a.rwnd), (2896, 131_072));
        // A segment past a hole is held: the buffer's free window is 131072 - 1448 = 129624 (a
        // multiple of 8), but the right edge (2896 + 131072) stays where it was advertised.
        r.on_data(&data(4344), 0, &mut out, &mut id);
        let a = out.pop().unwrap();
        assert_eq!((a.ack, a.rwnd), (2896, 131_072));
        // The hole filled: everything is read, the whole 131072 is free again from 5792.
        r.on_data(&data(2896), 0, &mut out, &mut id);
        let a = out.pop().unwrap();
        assert_eq!((a.ack, a.rwnd), (5792, 131_072));
        assert_eq!(r.dup_segs, 0);
    }

    #[test]
    fn gro_hands_contiguous_segments_to_tcp_as_one_and_acks_them_once() {
        let mut r = linux_receiver(1 << 20);
        r.gro_flush_ns = 50_000;
        r.quickacks = 0;
        let (mut out, mut id) = (Vec::new(), 0);
        // Three back-to-back segments 12 us apart (1 Gbit/s): held, nothing ACKed yet.
        for (i, t) in [0, 12_000, 24_000].into_iter().enumerate() {
            r.on_data(&data(i as u64 * 1448), t, &mut out, &mut id);
        }
        assert!(out.is_empty());
        assert_eq!(r.timer_deadline(), Some(50_000));
        r.on_timer(50_000, &mut out, &mut id);
        // One stretch ACK for 3 segments at the flush.
        assert_eq!(out.iter().map(|a| a.ack).collect::<Vec<_>>(), vec![4344]);
        assert_eq!(r.timer_deadline(), None);
        // A segment after a gap does not join the held one: the held one is flushed first (one
        // ACK), the new one is held and then reported out of order with its SACK block.
        out.clear();
        r.on_data(&data(4344), 60_000, &mut out, &mut id);
        r.on_data(&data(7240), 70_000, &mut out, &mut id);
        assert_eq!(out.len(), 0); // 4344 alone: one full segment, the delayed-ACK timer waits
        r.on_timer(120_000, &mut out, &mut id); // 7240 flushed (70 us + 50 us): out of order
        let a = out.pop().unwrap();
        assert_eq!((a.ack, a.sack_blocks()), (5792, &[(7240, 8688)][..]));
        // 64 KB at most: the 46th segment (46 x 1448 > 65536) starts a new aggregate.
        let mut r = linux_receiver(1 << 20);
        r.gro_flush_ns = 1_000_000;
        for i in 0..46 {
            r.on_data(&data(i * 1448), i * 12_000, &mut out, &mut id);
        }
        assert_eq!(r.rcv_nxt, 45 * 1448);
    }

    #[test]
    fn segments_that_bring_nothing_new_are_counted_as_duplicates() {
        let mut r = linux_receiver(1 << 20);
        let (mut out, mut id) = (Vec::new(), 0);
        r.on_data(&data(0), 0, &mut out, &mut id);
        r.on_data(&data(0), 0, &mut out, &mut id); // below rcv_nxt
        r.on_data(&data(2896), 0, &mut out, &mut id);
        r.on_data(&data(2896), 0, &mut out, &mut id); // inside the held block
        assert_eq!(r.dup_segs, 2);
        r.on_data(&data(1448), 0, &mut out, &mut id); // fills the hole: new
        assert_eq!((r.rcv_nxt, r.dup_segs), (4344, 2));
    }
}

//! The TCP receiver: in-order delivery to an application that reads at once (iperf3 server),
//! out-of-order queue, SACK blocks (RFC 2018), delayed ACKs (RFC 5681 §4.2, RFC 1122), timestamp
//! echo (RFC 7323 §4.3) and a receive window limited by the socket buffer with window scaling:
//! a Linux receiver offers only part of its buffer (tcp_win_from_space()), the rest being the
//! memory overhead of the packets it holds.

use super::handshake::{Server, SynAckTimer};
use super::ranges::RangeSet;
use crate::config::{Coalesce, Connect, FlowConfig, PeerOptions, RxNicConfig};
use crate::net::packet::{
    header_bytes, syn_bytes, Kind, Packet, MAX_SACK_BLOCKS, OPT_SACK_PERMITTED, OPT_TIMESTAMPS,
    OPT_WINDOW_SCALE, TS_OPT,
};
use crate::stack::StackProfile;
use crate::time::{earliest, Ns};

/// GRO's largest aggregate, headers included: skb_gro_receive() refuses a segment when
/// `p->len + len >= gro_max_size` (net/core/gro.c; default GRO_LEGACY_MAX_SIZE = 65536).
const GRO_MAX_BYTES: u64 = 65_536;
/// LRO's largest aggregate payload: tcp_lro_condense() flushes when `tcp_data_len_total >=
/// lc->lro_length_lim` (sys/netinet/tcp_lro.h TCP_LRO_LENGTH_MAX = 65535 - 255).
const LRO_MAX_PAYLOAD_BYTES: u64 = 65_535 - 255;
/// The senders' timestamp clocks tick in milliseconds (Linux tcp_clock_ms(), TCP_TS_HZ 1000;
/// FreeBSD tcp_ts_getticks()).
const TS_TICK_NS: Ns = 1_000_000;

/// A frame waiting in the NIC's receive ring for the next poll.
#[derive(Clone, Copy)]
struct Frame {
    seq: u64,
    len: u64,
    ts_val: Ns,
}

/// One aggregate the poll hands to TCP.
struct Aggregate {
    seq: u64,
    end: u64,
    /// The TSval TCP sees: GRO keeps the first packet's header, LRO writes the newest
    /// (tcp_lro_update_checksum(): `ts_ptr[1] = htonl(le->tsval)`).
    ts_val: Ns,
    /// GRO: a segment shorter than the MSS ended it ("Force a flush if last segment is smaller
    /// than mss", tcp_gro_receive()).
    closed: bool,
}

/// The receiving NIC: frames wait for the moderated interrupt, whose NAPI poll (Linux) or
/// interrupt handler (FreeBSD) hands them to TCP at once, coalesced per flow.
#[repr(C)] // the ring last: without moderation no segment reads it (see `TcpReceiver`)
struct RxNic {
    cfg: RxNicConfig,
    irq_at: Option<Ns>,
    ring: Vec<Frame>,
}

impl RxNic {
    /// Whether frames wait for an interrupt at all (no moderation: each is its own poll).
    fn moderated(&self) -> bool {
        self.cfg.rx_usecs_ns > 0 || self.cfg.rx_frames > 0
    }

    /// Whether `f` joins `a` (same flow by construction).
    fn merges(&self, a: &Aggregate, f: &Frame, mss: u64, hdr: u64) -> bool {
        if f.seq != a.end {
            return false; // out of order, or a retransmission: its own aggregate
        }
        let (tick_a, tick_f) = (a.ts_val / TS_TICK_NS, f.ts_val / TS_TICK_NS);
        match self.cfg.coalesce {
            Coalesce::None => false,
            // tcp_gro_receive(): options must be byte-equal (so the same TSval), the segment no
            // longer than the MSS, the aggregate not closed by a short one and under gro_max_size.
            Coalesce::Gro => {
                !a.closed
                    && tick_a == tick_f
                    && f.len <= mss
                    && hdr + a.end - a.seq + f.len < GRO_MAX_BYTES
            }
            // tcp_lro_condense(): TSval may not go backwards (TSTMP_GT(le->tsval, tsval)
            // flushes), the payload stays under lro_length_lim; no MSS rule.
            Coalesce::Lro => tick_f >= tick_a && a.end - a.seq + f.len < LRO_MAX_PAYLOAD_BYTES,
        }
    }

    /// The ring's frames as the aggregates the poll hands to TCP, in order.
    fn poll(&mut self, mss: u64, hdr: u64) -> Vec<Aggregate> {
        let mut out: Vec<Aggregate> = Vec::new();
        let ring = std::mem::take(&mut self.ring);
        for &f in &ring {
            match out.last_mut() {
                Some(a) if self.merges(a, &f, mss, hdr) => {
                    a.end += f.len;
                    a.closed = f.len < mss;
                    if self.cfg.coalesce == Coalesce::Lro {
                        a.ts_val = f.ts_val;
                    }
                }
                _ => out.push(Aggregate {
                    seq: f.seq,
                    end: f.seq + f.len,
                    ts_val: f.ts_val,
                    closed: f.len < mss,
                }),
            }
        }
        self.ring = ring;
        self.ring.clear();
        self.irq_at = None;
        out
    }
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
///
/// Aligned to a cache line, its fields in a fixed order (`repr(C)`): what every data segment and
/// every ACK it sends read or write first, in the first four lines, then what only the
/// handshake, ECN, out-of-order data or the records read. With thousands of flows a receiver is
/// rarely in cache when its next segment comes; in Rust's own order those fields were spread
/// over all five lines of the struct. `tests::per_segment_fields_fit_in_four_lines` holds the
/// first group to its size.
#[repr(C, align(64))] // fields in this order: see above and the comments on the groups
pub struct TcpReceiver {
    // ---- Hot: every data segment, every ACK sent, the timer deadline. ----
    /// Next byte expected; everything below was delivered to the application in order.
    pub rcv_nxt: u64,
    last_ack_sent: u64,
    ts_recent: Ns,
    right_edge: u64,
    /// The window with nothing held: rcvbuf x scaling_ratio / 256 (FlowConfig::rcv_space_bytes).
    space: u64,
    /// The largest window it may offer: what the 16-bit field carries at its shift,
    /// 65 535 << wscale (65 535 without scaling; [`max_window`]).
    max_window: u64,
    ooo_bytes: u64,
    mss: u64,
    delack_ns: Ns,
    delack_deadline: Option<Ns>,
    /// ACKs sent.
    pub acks_sent: u64,
    flow: u32,
    /// Node the ACKs go to (the sender's host).
    peer: u32,
    ack_every: u32,
    wscale: u32,
    unacked_segs: u32,
    quickacks: u32,
    timestamps: bool,
    sack: bool,
    /// RFC 3168 TCP_ECN_DEMAND_CWR, or DCTCP's CE state: what the next ACK's ECE says.
    ece: bool,
    ack_now: bool,
    ecn: EcnEcho,
    /// Out-of-order data held, as merged byte ranges (Linux `tp->out_of_order_queue`).
    ooo: RangeSet,
    recent_blocks: Vec<(u64, u64)>,
    /// Handshake state (a request sock / syncache entry until the ACK or data arrives).
    pub hs: Server,
    /// The receiving NIC (interrupt moderation, GRO/LRO); its ring, last, only with moderation.
    nic: RxNic,
    // ---- Cold: the handshake's options, ECN setup, counters only the records read. ----
    /// Segments that brought nothing new (all below rcv_nxt or inside a held block): the
    /// spurious retransmissions a DSACK would report (RFC 2883).
    pub dup_segs: u64,
    /// Data segments that arrived CE-marked.
    pub ce_segs: u64,
    /// What this host accepts in a SYN.
    accept: PeerOptions,
    /// The echo it would use with ECN on (RFC 3168, or DCTCP's for a dctcp flow).
    ecn_mode: EcnEcho,
    /// The sender's MSS without timestamps (the MTU's less 40 bytes).
    mss_no_ts: u64,
    /// The receiving buffer, for the window-scale shift.
    rcvbuf: u64,
    synack_timer: SynAckTimer,
}

/// The largest window a receiver with this shift offers: 65 535 << wscale, below 2^30 as the
/// shift is at most 14 (RFC 7323 §2.3). Linux net/ipv4/tcp_output.c tcp_select_initial_window():
/// "Set the clamp no higher than max representable value", `window_clamp = min(U16_MAX <<
/// rcv_wscale, window_clamp)`; FreeBSD sys/netinet/tcp_output.c tcp_default_output(): `if
/// (recwin > (long)TCP_MAXWIN << tp->rcv_scale) recwin = (long)TCP_MAXWIN << tp->rcv_scale`.
pub fn max_window(wscale: u32) -> u64 {
    65_535 << wscale
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
    /// Send ACKs by the flow's own route back: `key` is its routing key
    /// (`net::topology::Routes::add_path`).
    pub fn route_via(&mut self, key: u32) {
        self.peer = key;
    }

    /// A receiver for flow `f`.
    pub fn new(flow: u32, f: &FlowConfig, profile: &StackProfile) -> Self {
        // Established: the options both ends agreed to; with a handshake they are set when the
        // SYN arrives (`on_syn`).
        let n = f.negotiated();
        let established = f.connect == Connect::Established;
        let ecn_mode = if f.cc == "dctcp" {
            EcnEcho::Dctcp
        } else {
            EcnEcho::Rfc3168
        };
        let mss_no_ts = f.mss as u64 + if f.timestamps { TS_OPT as u64 } else { 0 };
        let wscale = if n.window_scaling {
            window_scale(f.rcvbuf_bytes)
        } else {
            0
        };
        TcpReceiver {
            flow,
            peer: f.src,
            mss: n.mss as u64,
            timestamps: n.timestamps && established,
            sack: n.sack && established,
            ack_every: profile.ack_every_segments.max(1),
            delack_ns: profile.delack_ns,
            space: f.rcv_space_bytes(),
            wscale,
            max_window: max_window(wscale),
            accept: f.peer,
            ecn_mode,
            mss_no_ts,
            rcvbuf: f.rcvbuf_bytes,
            hs: Server {
                established,
                ..Default::default()
            },
            synack_timer: profile.syn.synack,
            rcv_nxt: 0,
            ooo: RangeSet::default(),
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
            nic: RxNic {
                cfg: f.rx_nic,
                ring: Vec::new(),
                irq_at: None,
            },
            ecn: if n.ecn && established {
                ecn_mode
            } else {
                EcnEcho::Off
            },
            ece: false,
            ack_now: false,
            ce_segs: 0,
        }
    }

    /// The IP ECN field and CWR flag of an arriving segment, before TCP processes its data.
    fn ecn_in(&mut self, p: &Packet, out: &mut Vec<Packet>, next_id: &mut u64) {
        let ce = p.ecn == crate::net::aqm::ecn::CE;
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

    /// When the delayed-ACK timer, the NIC's interrupt or the SYN-ACK timer wants to fire.
    pub fn timer_deadline(&self) -> Option<Ns> {
        earliest([self.delack_deadline, self.nic.irq_at, self.hs.deadline])
    }

    /// A SYN arrives (the first, or a retransmission): agree to the options this host has on,
    /// answer with a SYN-ACK and arm its timer (Linux tcp_conn_request() / tcp_check_req() with
    /// inet_rtx_syn_ack() for a repeated SYN; FreeBSD syncache_add() / syncache_respond()).
    pub fn on_syn(&mut self, p: &Packet, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        if self.hs.established {
            return; // a late copy of a SYN the connection no longer needs
        }
        let a = &self.accept;
        let opts = p.opts
            & ((a.sack as u8 * OPT_SACK_PERMITTED)
                | (a.timestamps as u8 * OPT_TIMESTAMPS)
                | (a.window_scaling as u8 * OPT_WINDOW_SCALE));
        // RFC 3168 §6.1.1: an ECN-setup SYN (ECE and CWR) is answered with ECE alone when this
        // host accepts ECN (Linux tcp_ecn_create_request(), FreeBSD tcp_ecn_syncache_add()).
        let ece = p.ece && p.cwr && a.ecn;
        self.sack = opts & OPT_SACK_PERMITTED != 0;
        self.timestamps = opts & OPT_TIMESTAMPS != 0;
        self.mss = self.mss_no_ts - if self.timestamps { TS_OPT as u64 } else { 0 };
        let ws = opts & OPT_WINDOW_SCALE != 0;
        self.wscale = if ws { window_scale(self.rcvbuf) } else { 0 };
        self.max_window = max_window(self.wscale);
        self.ecn = if ece { self.ecn_mode } else { EcnEcho::Off };
        if self.timestamps {
            self.ts_recent = p.ts_val;
        }
        self.hs.synack = Some((opts, ece));
        self.send_synack(out, next_id);
        self.hs.deadline = Some(now + self.synack_timer.interval_ns(self.hs.retrans));
    }

    fn send_synack(&mut self, out: &mut Vec<Packet>, next_id: &mut u64) {
        let Some((opts, ece)) = self.hs.synack else {
            return;
        };
        *next_id += 1;
        let mut a = Packet::new(*next_id, Kind::SynAck, self.flow, self.peer);
        a.opts = opts;
        a.ece = ece;
        a.size_bytes = syn_bytes(opts);
        // RFC 7323 §2.2: the window field of a SYN-ACK is never scaled.
        a.rwnd = self.space.min(65_535) as u32;
        a.ts_ecr = self.ts_recent;
        out.push(a);
    }

    /// The handshake's ACK arrives: the connection is established.
    pub fn on_handshake_ack(&mut self) {
        self.hs.established = true;
        self.hs.deadline = None;
    }

    /// The SYN-ACK timer: retransmit it with the stack's backoff, up to its limit.
    fn synack_timeout(&mut self, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        if self.hs.established || self.hs.deadline.is_none_or(|d| d > now) {
            return;
        }
        if self.hs.retrans >= self.synack_timer.max_retrans() {
            self.hs.deadline = None;
            return;
        }
        self.hs.retrans += 1;
        self.send_synack(out, next_id);
        self.hs.deadline = Some(now + self.synack_timer.interval_ns(self.hs.retrans));
    }

    /// Bytes held out of order.
    pub fn ooo_bytes(&self) -> u64 {
        self.ooo_bytes
    }

    /// A data segment arrives at the NIC. Without interrupt moderation TCP gets it now; with it,
    /// it waits in the ring until the interrupt, raised rx-usecs after the first waiting frame or
    /// when rx-frames wait (ethtool(8) -C), whose poll hands the ring to TCP, merged by GRO or
    /// LRO (`RxNic::poll`).
    pub fn on_data(&mut self, p: &Packet, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        if !self.hs.established {
            // Data acknowledges the SYN-ACK as the handshake's ACK would.
            self.on_handshake_ack();
        }
        let len = p.len as u64;
        if self.ecn != EcnEcho::Off || p.ecn == crate::net::aqm::ecn::CE {
            self.ecn_in(p, out, next_id);
        }
        if !self.nic.moderated() {
            return self.receive(p.seq, len, p.ts_val, now, out, next_id);
        }
        if self.nic.ring.is_empty() && self.nic.cfg.rx_usecs_ns > 0 {
            self.nic.irq_at = Some(now + self.nic.cfg.rx_usecs_ns);
        }
        self.nic.ring.push(Frame {
            seq: p.seq,
            len,
            ts_val: p.ts_val,
        });
        if self.nic.cfg.rx_frames > 0 && self.nic.ring.len() >= self.nic.cfg.rx_frames as usize {
            self.nic_poll(now, out, next_id);
        }
    }

    /// The interrupt's poll: every waiting frame reaches TCP, as aggregates, now.
    fn nic_poll(&mut self, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        let hdr = header_bytes(self.timestamps, 0) as u64;
        for a in self.nic.poll(self.mss, hdr) {
            self.receive(a.seq, a.end - a.seq, a.ts_val, now, out, next_id);
        }
    }

    /// TCP receives `len` bytes at `seq` (one segment, or a GRO/LRO aggregate of several). The
    /// rules below are Linux's and FreeBSD's alike for an aggregate: Linux
    /// __tcp_ack_snd_check() ACKs at once when more than one rcv_mss is unacknowledged
    /// (rcv_mss = the aggregate's gso_size, tcp_measure_rcv_mss()); FreeBSD tcp_input.c
    /// DELAY_ACK() delays only a segment of at most t_maxseg while no delayed ACK is pending.
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
            while let Some((os, oe)) = self.ooo.first() {
                if os > self.rcv_nxt {
                    break;
                }
                self.ooo.pop_first();
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
            if self.ooo.covers(s, e) {
                self.dup_segs += 1;
            }
            self.ooo_bytes += self.ooo.insert(s, e);
            if self.sack {
                self.note_recent_block(s);
            }
            self.send_ack(out, next_id);
        }
    }

    /// RFC 2018 §4: the first block reports the segment just received; then the most recently
    /// reported other blocks.
    fn note_recent_block(&mut self, seq: u64) {
        let Some(blk) = self.ooo.containing(seq) else {
            return;
        };
        let mut order = vec![blk];
        for &b in &self.recent_blocks {
            if let Some(cur) = self.ooo.containing(b.0) {
                if !order.contains(&cur) {
                    order.push(cur);
                }
            }
        }
        order.truncate(MAX_SACK_BLOCKS);
        self.recent_blocks = order;
    }

    /// The NIC's interrupt or the delayed-ACK timer may be due.
    pub fn on_timer(&mut self, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        if self.hs.deadline.is_some() {
            self.synack_timeout(now, out, next_id);
        }
        if self.nic.irq_at.is_some_and(|t| t <= now) {
            self.nic_poll(now, out, next_id);
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
        let free = (self.space.saturating_sub(self.ooo_bytes) >> self.wscale << self.wscale)
            .min(self.max_window);
        self.right_edge = self.right_edge.max(self.rcv_nxt + free);
        // Below max_window (< 2^30): the right edge was set by an earlier ACK, at a rcv_nxt no
        // larger than now, to at most max_window beyond it.
        let rwnd = self.right_edge - self.rcv_nxt;
        debug_assert!(rwnd <= self.max_window);
        a.rwnd = rwnd as u32;
        a.ts_ecr = self.ts_recent;
        a.ece = self.ece && self.ecn != EcnEcho::Off;
        if self.sack {
            let max_blocks = if self.timestamps { 3 } else { MAX_SACK_BLOCKS };
            let n = self.recent_blocks.len().min(max_blocks);
            a.set_sack_blocks(&self.recent_blocks[..n]);
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
#[path = "receiver_tests.rs"]
mod tests;

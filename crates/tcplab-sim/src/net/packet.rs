//! Packets as they cross the simulated network. Sizes are IP (L3) bytes, as link rates are.

use crate::time::Ns;

/// IPv4 header bytes.
pub const IP_HDR: u32 = 20;
/// TCP header bytes without options.
pub const TCP_HDR: u32 = 20;
/// TCP timestamp option, padded (RFC 7323 §3: 10 bytes + 2 NOP).
pub const TS_OPT: u32 = 12;
/// Most SACK blocks an ACK carries when timestamps are on (RFC 2018 §3: 3 with TS, else 4).
pub const MAX_SACK_BLOCKS: usize = 4;

/// What a packet is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// TCP segment carrying data, sender to receiver.
    Data,
    /// Pure TCP ACK, receiver to sender.
    Ack,
    /// UDP datagram of a background constant-bit-rate source.
    Udp,
    /// TCP SYN, sender to receiver: opens the connection, options in `opts`, ECN setup in
    /// `ece` + `cwr` (RFC 3168 §6.1.1).
    Syn,
    /// TCP SYN-ACK, receiver to sender: the options the receiver agrees to, ECN in `ece`.
    SynAck,
    /// The pure ACK that completes the three-way handshake, sender to receiver.
    HandshakeAck,
    /// ICMP echo request of a latency probe (RFC 792; ping): `flow` is the probe's index, `seq`
    /// its icmp_seq, `ts_val` its send time (iputils ping carries it in the payload).
    Echo,
    /// ICMP echo reply: the request's `flow`, `seq` and `ts_val`, sent back at once.
    EchoReply,
    /// A segment of iperf3's control exchange around flow `flow` (`net::iperf3`): `seq` is the
    /// message's index in `Message::ALL`, `len` which of its writes, `ack` the retransmission
    /// count, `ts_val` when it was sent.
    Control,
}

/// `Packet::opts` bit: SACK-permitted option (RFC 2018 §2).
pub const OPT_SACK_PERMITTED: u8 = 1;
/// `Packet::opts` bit: timestamps option (RFC 7323 §3.2).
pub const OPT_TIMESTAMPS: u8 = 2;
/// `Packet::opts` bit: window-scale option (RFC 7323 §2.2).
pub const OPT_WINDOW_SCALE: u8 = 4;

/// One packet. Sequence numbers are 64-bit byte offsets from the start of the flow (no wrap).
///
/// `repr(C)` to keep the fields in this order: what the delivery of a data segment reads (kind,
/// flow, then the receiver's seq, len, ts_val, ECN bits) in the first 32 bytes, so that a packet
/// read back from the slab about an RTT after it was written (a cache miss) costs one cache line
/// more often than two; the ACK-only fields follow. Rust's own order put `kind` 104 bytes from
/// `seq`: two lines for every delivery.
///
/// An ACK's window and SACK edges are 32-bit, as on the wire (RFC 793 §3.1; RFC 2018 §3): the
/// window is at most 65 535 << 14 < 2^30 bytes (RFC 7323 §2.3; the receiver clamps it so), and
/// SACK blocks lie above the cumulative ACK and below data the sender sent within a window it was
/// offered, so each edge is stored as its offset from `ack` (see [`Packet::set_sack_blocks`]).
/// 104 bytes where 64-bit edges took 136.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct Packet {
    /// First payload byte (Data).
    pub seq: u64,
    /// TSval: send time of this packet (RFC 7323).
    pub ts_val: Ns,
    /// Flow (TCP), source (UDP) or probe (Echo, EchoReply) index.
    pub flow: u32,
    /// Payload length (Data).
    pub len: u32,
    /// What it is.
    pub kind: Kind,
    /// Whether this is a retransmission (Data).
    pub retx: bool,
    /// IP ECN field (RFC 3168 §5; codepoints in [`crate::net::aqm::ecn`]).
    pub ecn: u8,
    /// TCP CWR flag: the sender has reduced its window (Data).
    pub cwr: bool,
    /// TCP ECE flag: the receiver echoes congestion experienced (Ack).
    pub ece: bool,
    /// Number of valid SACK blocks.
    pub nsack: u8,
    /// Options of a SYN or SYN-ACK (`OPT_*` bits).
    pub opts: u8,
    /// Destination node.
    pub dst: u32,
    /// Size on the wire, IP bytes.
    pub size_bytes: u32,
    /// Unique id in the run (for invariants: never both dropped and delivered).
    pub id: u64,
    /// Cumulative ACK (Ack).
    pub ack: u64,
    /// TSecr: echoed timestamp (Ack).
    pub ts_ecr: Ns,
    /// Advertised receive window, bytes after scaling (Ack): below 2^30 (RFC 7323 §2.3).
    pub rwnd: u32,
    /// SACK blocks [start, end) (Ack) as offsets from `ack`, most recent first (RFC 2018 §4);
    /// read them with [`Packet::sack_blocks`].
    sack_offsets: [(u32, u32); MAX_SACK_BLOCKS],
}

/// An ACK's SACK blocks as absolute [start, end) byte offsets of the flow; derefs to a slice.
#[derive(Clone, Copy, Debug)]
pub struct SackBlocks {
    edges: [(u64, u64); MAX_SACK_BLOCKS],
    n: u8,
}

impl std::ops::Deref for SackBlocks {
    type Target = [(u64, u64)];
    #[inline]
    fn deref(&self) -> &[(u64, u64)] {
        &self.edges[..self.n as usize]
    }
}

impl Packet {
    /// A blank packet of the given kind; callers fill in the rest.
    pub fn new(id: u64, kind: Kind, flow: u32, dst: u32) -> Self {
        Packet {
            id,
            kind,
            flow,
            dst,
            size_bytes: 0,
            seq: 0,
            len: 0,
            retx: false,
            ack: 0,
            rwnd: 0,
            sack_offsets: [(0, 0); MAX_SACK_BLOCKS],
            nsack: 0,
            ts_val: 0,
            ts_ecr: 0,
            ecn: 0,
            ece: false,
            cwr: false,
            opts: 0,
        }
    }

    /// The valid SACK blocks, as absolute byte offsets.
    #[inline]
    pub fn sack_blocks(&self) -> SackBlocks {
        let mut edges = [(0, 0); MAX_SACK_BLOCKS];
        for (e, &(s, t)) in edges
            .iter_mut()
            .zip(&self.sack_offsets[..self.nsack as usize])
        {
            *e = (self.ack + s as u64, self.ack + t as u64);
        }
        SackBlocks {
            edges,
            n: self.nsack,
        }
    }

    /// Set the SACK blocks (at most [`MAX_SACK_BLOCKS`]) of an ACK whose `ack` is already set.
    /// Each lies above the cumulative ACK (RFC 2018 §3: blocks report data held beyond it) and
    /// below what the sender sent within a window it was offered, so within 2^31 bytes of `ack`
    /// (the receiver offers less than 2^30, `TcpReceiver::send_ack`); an edge that does not fit
    /// would be a broken invariant, and stops the run rather than corrupt it. (The receiver sends
    /// no D-SACK, RFC 2883, whose first block may lie below the ACK: that would need a signed
    /// offset.)
    #[inline]
    pub fn set_sack_blocks(&mut self, blocks: &[(u64, u64)]) {
        let offset = |edge: u64| -> u32 {
            edge.checked_sub(self.ack)
                .and_then(|d| u32::try_from(d).ok())
                .unwrap_or_else(|| {
                    panic!("SACK edge {edge} not within 2^32 above ACK {}", self.ack)
                })
        };
        for (o, &(s, e)) in self.sack_offsets.iter_mut().zip(blocks) {
            *o = (offset(s), offset(e));
        }
        self.nsack = blocks.len() as u8;
    }
}

/// The packets in the network, by handle. A packet is written here once when it enters the
/// network and read once when it leaves it; pipes hold 32-byte entries in between, where they
/// held whole packets (then 136 bytes each, copied at every hop: 9% of T1's time was that `memmove`,
/// bench/README.md). Freed slots are reused first-in first-out: packets mostly leave the network
/// in the order they entered it, so slots are then taken and read back in address order, which
/// the CPU prefetches (a last-in first-out reuse scatters them, and reading a packet back on
/// delivery, ~an RTT after it was written, misses the cache).
#[derive(Default)]
pub struct Slab {
    slots: Vec<Packet>,
    free_slots: std::collections::VecDeque<u32>,
}

impl Slab {
    /// Store a copy of `p`; its handle.
    #[inline]
    pub fn insert(&mut self, p: &Packet) -> u32 {
        match self.free_slots.pop_front() {
            Some(h) => {
                self.slots[h as usize] = *p;
                h
            }
            None => {
                self.slots.push(*p);
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// The packet stored under `h`.
    #[inline]
    pub fn get(&self, h: u32) -> &Packet {
        &self.slots[h as usize]
    }

    /// Remove the packet stored under `h`.
    #[inline]
    pub fn take(&mut self, h: u32) -> Packet {
        self.free(h);
        self.slots[h as usize]
    }

    /// Free the slot of the packet stored under `h`, once it has been read in place.
    #[inline]
    pub fn free(&mut self, h: u32) {
        self.free_slots.push_back(h);
    }

    /// Packets stored.
    pub fn len(&self) -> usize {
        self.slots.len() - self.free_slots.len()
    }

    /// Whether no packet is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// TCP/IP header bytes of a segment: IP + TCP + timestamps + SACK option (2 + 8 per block,
/// padded to 4 bytes with NOPs as stacks do).
pub fn header_bytes(timestamps: bool, nsack: usize) -> u32 {
    let ts = if timestamps { TS_OPT } else { 0 };
    let sack = if nsack > 0 {
        (2 + 8 * nsack as u32).div_ceil(4) * 4
    } else {
        0
    };
    IP_HDR + TCP_HDR + ts + sack
}

/// IP bytes of a SYN or SYN-ACK with these `OPT_*` options, laid out as Linux
/// tcp_options_write() does: MSS (4), SACK-permitted and timestamps together (2 + 10 = 12) or
/// each padded with NOPs (4 and 12), window scale with a NOP (4). All four: 60 bytes.
pub fn syn_bytes(opts: u8) -> u32 {
    let (sack, ts) = (opts & OPT_SACK_PERMITTED != 0, opts & OPT_TIMESTAMPS != 0);
    let sack_ts = match (sack, ts) {
        (true, true) | (false, true) => TS_OPT,
        (true, false) => 4,
        (false, false) => 0,
    };
    let ws = if opts & OPT_WINDOW_SCALE != 0 { 4 } else { 0 };
    IP_HDR + TCP_HDR + 4 + sack_ts + ws
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_syn_with_every_option_is_60_bytes_and_a_bare_one_44() {
        let all = OPT_SACK_PERMITTED | OPT_TIMESTAMPS | OPT_WINDOW_SCALE;
        assert_eq!(syn_bytes(all), 60);
        assert_eq!(syn_bytes(0), 44);
        assert_eq!(syn_bytes(OPT_SACK_PERMITTED | OPT_WINDOW_SCALE), 52);
    }

    #[test]
    fn packet_stays_within_its_size_with_a_data_segments_fields_first() {
        // The one-byte fields share one 8-byte word; nothing else pads.
        assert_eq!(std::mem::size_of::<Packet>(), 104);
        let p = Packet::new(1, Kind::Data, 0, 1);
        let offset = |field: *const u8| field as usize - &p as *const Packet as usize;
        for end in [
            offset(&p.kind as *const Kind as *const u8) + 1,
            offset(&p.seq as *const u64 as *const u8) + 8,
            offset(&p.ts_val as *const u64 as *const u8) + 8,
            offset(&p.len as *const u32 as *const u8) + 4,
            offset(&p.ecn),
        ] {
            assert!(end <= 32, "{end}");
        }
    }

    #[test]
    fn sack_blocks_round_trip_as_offsets_from_the_ack() {
        let mut a = Packet::new(1, Kind::Ack, 0, 0);
        a.ack = 5_000_000_000; // above 2^32: the offsets, not the edges, are 32-bit
        let blocks = [
            (5_000_001_448, 5_000_002_896),
            (5_000_004_344, 5_000_004_344 + (1 << 30)),
        ];
        a.set_sack_blocks(&blocks);
        assert_eq!(a.nsack, 2);
        assert_eq!(&*a.sack_blocks(), &blocks[..]);
        a.set_sack_blocks(&[]);
        assert!(a.sack_blocks().is_empty());
    }

    #[test]
    #[should_panic(expected = "not within 2^32 above ACK")]
    fn a_sack_edge_below_the_ack_stops_the_run() {
        let mut a = Packet::new(1, Kind::Ack, 0, 0);
        a.ack = 10_000;
        a.set_sack_blocks(&[(9_000, 11_000)]);
    }

    #[test]
    #[should_panic(expected = "not within 2^32 above ACK")]
    fn a_sack_edge_2_to_the_32_above_the_ack_stops_the_run() {
        let mut a = Packet::new(1, Kind::Ack, 0, 0);
        a.ack = 10_000;
        a.set_sack_blocks(&[(20_000, 10_000 + (1 << 32))]);
    }

    #[test]
    fn mss_1448_with_timestamps_fills_a_1500_byte_mtu() {
        assert_eq!(header_bytes(true, 0) + 1448, 1500);
        assert_eq!(header_bytes(false, 0) + 1460, 1500);
    }

    #[test]
    fn slab_reuses_freed_slots_first_in_first_out() {
        let mut slab = Slab::default();
        let (a, b) = (
            slab.insert(&Packet::new(1, Kind::Data, 0, 1)),
            slab.insert(&Packet::new(2, Kind::Ack, 0, 0)),
        );
        assert_eq!((a, b, slab.len()), (0, 1, 2));
        assert_eq!(slab.take(a).id, 1);
        assert_eq!(slab.get(b).id, 2);
        // The freed slot is the next one used; nothing grows.
        assert_eq!(slab.insert(&Packet::new(3, Kind::Udp, 0, 1)), a);
        assert_eq!((slab.get(a).id, slab.len(), slab.slots.len()), (3, 2, 2));
        // Slots freed in the order 1, 0 are reused in that order.
        slab.take(b);
        slab.take(a);
        assert_eq!(slab.insert(&Packet::new(4, Kind::Data, 0, 1)), b);
        assert_eq!(slab.insert(&Packet::new(5, Kind::Data, 0, 1)), a);
    }

    #[test]
    fn three_sack_blocks_fit_beside_timestamps_in_40_option_bytes() {
        // 12 (TS) + 28 (2 NOP + 2 + 24) = 40, the TCP option space limit (RFC 2018 §3).
        assert_eq!(header_bytes(true, 3) - IP_HDR - TCP_HDR, 40);
    }
}

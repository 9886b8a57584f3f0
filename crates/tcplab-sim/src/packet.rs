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
    /// ICMP echo request of a latency probe (RFC 792; ping): `flow` is the probe's index, `seq`
    /// its icmp_seq, `ts_val` its send time (iputils ping carries it in the payload).
    Echo,
    /// ICMP echo reply: the request's `flow`, `seq` and `ts_val`, sent back at once.
    EchoReply,
}

/// One packet. Sequence numbers are 64-bit byte offsets from the start of the flow (no wrap).
#[derive(Clone, Debug)]
pub struct Packet {
    /// Unique id in the run (for invariants: never both dropped and delivered).
    pub id: u64,
    /// What it is.
    pub kind: Kind,
    /// Flow (TCP), source (UDP) or probe (Echo, EchoReply) index.
    pub flow: u32,
    /// Destination node.
    pub dst: u32,
    /// Size on the wire, IP bytes.
    pub size_bytes: u32,
    /// First payload byte (Data).
    pub seq: u64,
    /// Payload length (Data).
    pub len: u32,
    /// Whether this is a retransmission (Data).
    pub retx: bool,
    /// Cumulative ACK (Ack).
    pub ack: u64,
    /// Advertised receive window, bytes after scaling (Ack).
    pub rwnd: u64,
    /// SACK blocks [start, end) (Ack), most recent first (RFC 2018 §4).
    pub sack: [(u64, u64); MAX_SACK_BLOCKS],
    /// Number of valid SACK blocks.
    pub nsack: u8,
    /// TSval: send time of this packet (RFC 7323).
    pub ts_val: Ns,
    /// TSecr: echoed timestamp (Ack).
    pub ts_ecr: Ns,
    /// IP ECN field (RFC 3168 §5; codepoints in [`crate::aqm::ecn`]).
    pub ecn: u8,
    /// TCP ECE flag: the receiver echoes congestion experienced (Ack).
    pub ece: bool,
    /// TCP CWR flag: the sender has reduced its window (Data).
    pub cwr: bool,
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
            sack: [(0, 0); MAX_SACK_BLOCKS],
            nsack: 0,
            ts_val: 0,
            ts_ecr: 0,
            ecn: 0,
            ece: false,
            cwr: false,
        }
    }

    /// The valid SACK blocks.
    pub fn sack_blocks(&self) -> &[(u64, u64)] {
        &self.sack[..self.nsack as usize]
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mss_1448_with_timestamps_fills_a_1500_byte_mtu() {
        assert_eq!(header_bytes(true, 0) + 1448, 1500);
        assert_eq!(header_bytes(false, 0) + 1460, 1500);
    }

    #[test]
    fn three_sack_blocks_fit_beside_timestamps_in_40_option_bytes() {
        // 12 (TS) + 28 (2 NOP + 2 + 24) = 40, the TCP option space limit (RFC 2018 §3).
        assert_eq!(header_bytes(true, 3) - IP_HDR - TCP_HDR, 40);
    }
}

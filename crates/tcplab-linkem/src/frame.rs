//! An Ethernet frame as a queue discipline sees it: its length, the ECN field of its IPv4 or IPv6
//! header (read and rewritten in place, RFC 3168 §5), and a key of its 5-tuple for FQ-CoDel.
//!
//! Setting CE in IPv4 updates the header checksum incrementally (RFC 1624 eqn. 3, as Linux's
//! include/net/inet_ecn.h IP_ECN_set_ce() does); IPv6 has no header checksum. Frames that are not
//! IP (ARP) are Not-ECT, so a discipline drops rather than marks them, as Linux's
//! INET_ECN_set_ce() returns 0 for them.

use tcplab_aqm::ecn;

const ETH_HLEN: usize = 14;
const ETH_P_IP: u16 = 0x0800;
const ETH_P_IPV6: u16 = 0x86DD;
const ETH_P_8021Q: u16 = 0x8100;
const IPPROTO_TCP: u8 = 6;
const IPPROTO_UDP: u8 = 17;
const IPPROTO_SCTP: u8 = 132;

/// Where the IP header is and which version it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum L3 {
    /// IPv4 header at this offset (its length checked to lie inside the frame).
    V4(usize),
    /// IPv6 header at this offset.
    V6(usize),
    /// Not IP (or truncated).
    Other,
}

/// One frame with its parsed layer-3 position.
#[derive(Debug)]
pub(crate) struct Frame {
    /// The Ethernet frame's bytes (no FCS).
    pub(crate) data: Vec<u8>,
    l3: L3,
}

fn be16(d: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([d[at], d[at + 1]])
}

impl Frame {
    /// Parse the Ethernet (and one 802.1Q tag) and IP headers of `data`.
    pub(crate) fn new(data: Vec<u8>) -> Frame {
        let l3 = Self::locate(&data);
        Frame { data, l3 }
    }

    fn locate(d: &[u8]) -> L3 {
        if d.len() < ETH_HLEN {
            return L3::Other;
        }
        let (mut ethertype, mut at) = (be16(d, 12), ETH_HLEN);
        if ethertype == ETH_P_8021Q && d.len() >= ETH_HLEN + 4 {
            ethertype = be16(d, 16);
            at += 4;
        }
        match ethertype {
            ETH_P_IP
                if d.len() >= at + 20
                    && d[at] >> 4 == 4
                    && d.len() >= at + ((d[at] & 0xf) as usize) * 4 =>
            {
                L3::V4(at)
            }
            ETH_P_IPV6 if d.len() >= at + 40 && d[at] >> 4 == 6 => L3::V6(at),
            _ => L3::Other,
        }
    }

    /// The ECN field (NOT_ECT for non-IP frames).
    pub(crate) fn ecn(&self) -> u8 {
        match self.l3 {
            L3::V4(at) => self.data[at + 1] & 0b11,
            L3::V6(at) => (self.data[at + 1] >> 4) & 0b11,
            L3::Other => ecn::NOT_ECT,
        }
    }

    /// Rewrite the ECN field (IPv4: with the header checksum updated).
    pub(crate) fn set_ecn(&mut self, value: u8) {
        let d = &mut self.data;
        match self.l3 {
            L3::V4(at) => {
                let old_word = be16(d, at);
                d[at + 1] = (d[at + 1] & !0b11) | (value & 0b11);
                let new_word = be16(d, at);
                let sum = checksum_update(be16(d, at + 10), old_word, new_word);
                d[at + 10..at + 12].copy_from_slice(&sum.to_be_bytes());
            }
            L3::V6(at) => d[at + 1] = (d[at + 1] & !0b0011_0000) | ((value & 0b11) << 4),
            L3::Other => {}
        }
    }

    /// A key of the frame's 5-tuple (protocol, addresses, ports), FNV-1a over those bytes. Ports
    /// are read for TCP, UDP and SCTP in unfragmented IPv4 and in IPv6 without extension headers;
    /// other IP frames are keyed by protocol and addresses, non-IP frames by their EtherType
    /// (Linux's flow dissector, skb_get_hash(), walks further; these runs carry TCP and UDP).
    pub(crate) fn flow_key(&self) -> u64 {
        let d = &self.data;
        let mut h = Fnv::new();
        match self.l3 {
            L3::V4(at) => {
                let proto = d[at + 9];
                h.bytes(&[4, proto]);
                h.bytes(&d[at + 12..at + 20]);
                let ihl = (d[at] & 0xf) as usize * 4;
                let unfragmented = be16(d, at + 6) & 0x1fff == 0;
                if unfragmented {
                    h.ports(d, proto, at + ihl);
                }
            }
            L3::V6(at) => {
                let proto = d[at + 6];
                h.bytes(&[6, proto]);
                h.bytes(&d[at + 8..at + 40]);
                h.ports(d, proto, at + 40);
            }
            L3::Other if d.len() >= ETH_HLEN => h.bytes(&d[12..14]),
            L3::Other => {}
        }
        h.0
    }
}

impl tcplab_aqm::Packet for Frame {
    /// Linux's psched_mtu() on Ethernet: dev->mtu 1500 + hard_header_len 14, in frame bytes.
    const MTU_BYTES: u64 = 1514;
    fn size_bytes(&self) -> u64 {
        self.data.len() as u64
    }
    fn ecn(&self) -> u8 {
        Frame::ecn(self)
    }
    fn set_ecn(&mut self, value: u8) {
        Frame::set_ecn(self, value)
    }
    fn flow_key(&self) -> u64 {
        Frame::flow_key(self)
    }
}

/// RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), one's complement sums of 16-bit words, when one word
/// of the header changes from `old` to `new`.
pub(crate) fn checksum_update(hc: u16, old: u16, new: u16) -> u16 {
    let mut sum = (!hc as u32) + (!old as u32) + new as u32;
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// 64-bit FNV-1a (Fowler, Noll, Vo).
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= x as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    /// Source and destination ports at `at` for the protocols that have them there.
    fn ports(&mut self, d: &[u8], proto: u8, at: usize) {
        if matches!(proto, IPPROTO_TCP | IPPROTO_UDP | IPPROTO_SCTP) && d.len() >= at + 4 {
            self.bytes(&d[at..at + 4]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 1071: the one's complement of the one's complement sum of the header's 16-bit words
    /// (checksum field zero) — the full calculation the incremental update must agree with.
    fn rfc1071(hdr: &[u8]) -> u16 {
        let mut sum: u32 = 0;
        for (i, w) in hdr.chunks(2).enumerate() {
            if i != 5 {
                sum += u16::from_be_bytes([w[0], w[1]]) as u32;
            }
        }
        while sum >> 16 != 0 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    /// An Ethernet + IPv4 + TCP frame with this TOS byte, ports, and a correct header checksum.
    fn v4(tos: u8, ttl: u8, sport: u16, dport: u16) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 20];
        f[12..14].copy_from_slice(&ETH_P_IP.to_be_bytes());
        let ip = &mut f[14..34];
        ip[0] = 0x45;
        ip[1] = tos;
        ip[2..4].copy_from_slice(&40u16.to_be_bytes());
        ip[4..6].copy_from_slice(&0x1c46u16.to_be_bytes());
        ip[6] = 0x40; // DF
        ip[8] = ttl;
        ip[9] = IPPROTO_TCP;
        ip[12..16].copy_from_slice(&[10, 100, 0, 1]);
        ip[16..20].copy_from_slice(&[10, 100, 1, 2]);
        let c = rfc1071(ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        f[34..36].copy_from_slice(&sport.to_be_bytes());
        f[36..38].copy_from_slice(&dport.to_be_bytes());
        f
    }

    fn v6(tclass: u8, sport: u16) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 40 + 20];
        f[12..14].copy_from_slice(&ETH_P_IPV6.to_be_bytes());
        f[14] = 0x60 | (tclass >> 4);
        f[15] = (tclass << 4) | 0x3; // low nibble: flow label bits, must survive
        f[20] = IPPROTO_TCP;
        f[22 + 15] = 1; // src ::1
        f[38 + 15] = 2; // dst ::2
        f[54..56].copy_from_slice(&sport.to_be_bytes());
        f
    }

    #[test]
    fn ipv4_ce_keeps_dscp_and_a_valid_checksum_for_every_tos_and_ttl() {
        for tos in 0..=255u8 {
            for ttl in [0u8, 1, 63, 64, 255] {
                let mut f = Frame::new(v4(tos, ttl, 40000, 5201));
                assert_eq!(f.ecn(), tos & 3);
                f.set_ecn(ecn::CE);
                assert_eq!(f.ecn(), ecn::CE);
                assert_eq!(f.data[15] >> 2, tos >> 2, "DSCP kept");
                let ip = &f.data[14..34];
                assert_eq!(
                    be16(ip, 10),
                    rfc1071(ip),
                    "tos {tos:#x} ttl {ttl}: incremental = full checksum"
                );
            }
        }
    }

    #[test]
    fn rfc1624_example_and_the_minus_zero_case() {
        // RFC 1624 §4: a header whose sum gives 0xDD2F, one word 0x5555 -> 0x3285: HC' = 0x0000.
        assert_eq!(checksum_update(0xDD2F, 0x5555, 0x3285), 0x0000);
        // No change of the word leaves the checksum as it was.
        assert_eq!(checksum_update(0x1234, 0xabcd, 0xabcd), 0x1234);
    }

    #[test]
    fn ipv6_ecn_is_the_low_two_bits_of_the_traffic_class() {
        let mut f = Frame::new(v6(0b1011_1010, 80)); // DSCP 46 (EF), ECT(0)
        assert_eq!(f.ecn(), ecn::ECT0);
        f.set_ecn(ecn::CE);
        assert_eq!(f.ecn(), ecn::CE);
        assert_eq!(f.data[14], 0x60 | 0b1011, "version and DSCP high bits kept");
        assert_eq!(
            f.data[15], 0b1011_0011,
            "DSCP low bits, CE, flow label kept"
        );
    }

    #[test]
    fn non_ip_and_truncated_frames_are_not_ect_and_are_never_rewritten() {
        let mut arp = vec![0u8; 42];
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        let mut f = Frame::new(arp.clone());
        assert_eq!(f.ecn(), ecn::NOT_ECT);
        f.set_ecn(ecn::CE);
        assert_eq!(f.data, arp);
        let mut short = v4(2, 64, 1, 2);
        short.truncate(30);
        assert_eq!(Frame::new(short).ecn(), ecn::NOT_ECT);
        assert!(
            tcplab_aqm::set_ce(&mut Frame::new(v4(2, 64, 1, 2))),
            "ECT(0) is marked"
        );
        assert!(
            !tcplab_aqm::set_ce(&mut Frame::new(v4(0, 64, 1, 2))),
            "Not-ECT is not"
        );
    }

    #[test]
    fn flow_key_separates_5_tuples_and_ignores_everything_else() {
        let key = |f: Vec<u8>| Frame::new(f).flow_key();
        assert_eq!(
            key(v4(0, 64, 40000, 5201)),
            key(v4(2, 10, 40000, 5201)),
            "TOS and TTL are not the tuple"
        );
        assert_ne!(key(v4(0, 64, 40000, 5201)), key(v4(0, 64, 40001, 5201)));
        assert_ne!(
            key(v4(0, 64, 40000, 5201)),
            key(v4(0, 64, 5201, 40000)),
            "each direction is its own flow"
        );
        assert_ne!(key(v6(0, 1)), key(v6(0, 2)));
        let mut vlan = v4(0, 64, 40000, 5201);
        vlan.splice(12..12, [0x81, 0x00, 0x00, 0x05]);
        let mut f = Frame::new(vlan);
        assert_eq!(
            f.flow_key(),
            key(v4(0, 64, 40000, 5201)),
            "an 802.1Q tag is skipped"
        );
        f.set_ecn(ecn::ECT1);
        assert_eq!(f.ecn(), ecn::ECT1);
    }
}

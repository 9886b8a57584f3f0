//! One captured frame down to its TCP segment: the link layer (Ethernet with VLAN tags, BSD
//! loopback, raw IP, Linux cooked v1 and v2), IPv4 or IPv6, then the TCP header and the options
//! tcplab reads (RFC 9293 §3.2, RFC 2018 SACK, RFC 7323 window scale and timestamps).

use std::net::IpAddr;

/// TCP fields of one packet.
pub(super) struct Seg<'a> {
    pub(super) src: IpAddr,
    pub(super) dst: IpAddr,
    pub(super) sport: u16,
    pub(super) dport: u16,
    pub(super) seq: u32,
    pub(super) ack: u32,
    pub(super) flags: u8,
    pub(super) window: u16,
    pub(super) payload: i64,
    pub(super) options: &'a [u8],
}

impl Seg<'_> {
    /// SYN flag.
    pub(super) fn syn(&self) -> bool {
        self.flags & 0x02 != 0
    }

    /// ACK flag.
    pub(super) fn ack_flag(&self) -> bool {
        self.flags & 0x10 != 0
    }
}

/// The network-layer packet a frame carries and its EtherType (0x0800 IPv4, 0x86dd IPv6).
fn link_payload(linktype: u16, f: &[u8]) -> Option<(&[u8], u16)> {
    Some(match linktype {
        1 => {
            let mut o = 12;
            let mut et = u16::from_be_bytes([*f.get(o)?, *f.get(o + 1)?]);
            while et == 0x8100 || et == 0x88a8 {
                o += 4;
                et = u16::from_be_bytes([*f.get(o)?, *f.get(o + 1)?]);
            }
            (f.get(o + 2..)?, et)
        }
        0 => {
            let fam = u32::from_le_bytes(f.get(..4)?.try_into().ok()?)
                .min(u32::from_be_bytes(f.get(..4)?.try_into().ok()?));
            (f.get(4..)?, if fam == 2 { 0x0800 } else { 0x86dd })
        }
        101 | 12 | 14 | 228 | 229 => {
            let v = *f.first()? >> 4;
            (f, if v == 4 { 0x0800 } else { 0x86dd })
        }
        113 => (f.get(16..)?, u16::from_be_bytes([*f.get(14)?, *f.get(15)?])),
        276 => (f.get(20..)?, u16::from_be_bytes([*f.first()?, *f.get(1)?])),
        _ => return None,
    })
}

/// Addresses, the TCP header onwards, and the bytes of TCP header and payload the IP length
/// fields announce.
type Ip<'a> = (IpAddr, IpAddr, &'a [u8], usize);

/// What a packet is: TCP (its IP layer read), something else (skipped, not an error), or a
/// malformed IP header (why, for the error that names the packet).
type Read<'a, T> = Result<Option<T>, String>;

/// RFC 791 §3.1: the options between the 20-byte header and IHL x 4 are a sequence of
/// no-operation (1) or type-length-value options that fills the header, or ends with
/// end-of-list (0) and zero padding; a header whose options do not (IHL raised over a payload)
/// is refused rather than read as TCP.
fn ipv4_options_fit(opts: &[u8]) -> bool {
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => return opts[i..].iter().all(|&b| b == 0), // end of list, then zero padding
            1 => i += 1,
            _ => match opts.get(i + 1) {
                Some(&len) if len >= 2 && i + usize::from(len) <= opts.len() => {
                    i += usize::from(len)
                }
                _ => return false,
            },
        }
    }
    true
}

/// An IPv4 packet: its header length (IHL) checked against the captured bytes, the total
/// length and its options; a fragment other than the first is not read (no TCP header).
fn ipv4(ip: &[u8]) -> Read<'_, Ip<'_>> {
    if ip.len() < 20 || ip[0] >> 4 != 4 {
        return Ok(None);
    }
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    let frag = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff;
    if ip[9] != 6 || frag != 0 {
        return Ok(None);
    }
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let ihl_words = ihl / 4;
    if ihl < 20 {
        return Err(format!(
            "IPv4 header length {ihl} bytes (IHL {ihl_words}): below the minimum 20"
        ));
    }
    if ihl > ip.len() {
        return Err(format!(
            "IPv4 header length {ihl} bytes (IHL {ihl_words}) runs past the {} bytes captured",
            ip.len()
        ));
    }
    if !ipv4_options_fit(&ip[20..ihl]) {
        return Err(format!(
            "IPv4 header length {ihl} bytes (IHL {ihl_words}): its options do not fill it"
        ));
    }
    if total < ihl {
        return match total {
            0 => Ok(None), // a segmentation-offload capture may leave it 0: no length to trust
            _ => Err(format!(
                "IPv4 total length {total} is shorter than its {ihl}-byte header"
            )),
        };
    }
    let (s4, d4): ([u8; 4], [u8; 4]) = (
        ip[12..16].try_into().expect("20 bytes"),
        ip[16..20].try_into().expect("20 bytes"),
    );
    Ok(Some((
        IpAddr::from(s4),
        IpAddr::from(d4),
        &ip[ihl..],
        total - ihl,
    )))
}

/// RFC 8200 §4: IPv6 extension headers that may precede TCP: hop-by-hop options (0), routing
/// (43), destination options (60), each 8 x (1 + its length byte) bytes; fragment (44), 8 bytes.
const HOP_BY_HOP: u8 = 0;
const ROUTING: u8 = 43;
const FRAGMENT: u8 = 44;
const DESTINATION: u8 = 60;

/// The upper-layer header after the extension headers starting at `at` with next header
/// `next`: (protocol, its offset). None for a later fragment (no TCP header in it) or a chain
/// the snap length cut (its protocol unknown); an error for a chain longer than the payload
/// length `plen` says.
fn ipv6_walk(ip: &[u8], mut next: u8, mut at: usize, plen: usize) -> Read<'_, (u8, usize)> {
    while matches!(next, HOP_BY_HOP | ROUTING | FRAGMENT | DESTINATION) {
        let Some(h) = ip.get(at..at + 8) else {
            return Ok(None);
        };
        let size = match next {
            FRAGMENT if u16::from_be_bytes([h[2], h[3]]) >> 3 != 0 => return Ok(None),
            FRAGMENT => 8,
            _ => 8 * (1 + usize::from(h[1])),
        };
        if at + size > 40 + plen {
            return Err(format!(
                "IPv6 extension header {next} at byte {at} ({size} bytes) runs past the payload length {plen}"
            ));
        }
        (next, at) = (h[0], at + size);
    }
    Ok(Some((next, at)))
}

/// An IPv6 packet: its extension headers walked to the TCP header.
fn ipv6(ip: &[u8]) -> Read<'_, Ip<'_>> {
    if ip.len() < 40 || ip[0] >> 4 != 6 {
        return Ok(None);
    }
    let plen = usize::from(u16::from_be_bytes([ip[4], ip[5]]));
    if plen == 0 {
        return Ok(None); // a jumbogram (RFC 2675): its length is in an option tcplab does not read
    }
    let Some((proto, at)) = ipv6_walk(ip, ip[6], 40, plen)? else {
        return Ok(None);
    };
    if proto != 6 || at > ip.len() {
        return Ok(None);
    }
    let (s6, d6): ([u8; 16], [u8; 16]) = (
        ip[8..24].try_into().expect("40 bytes"),
        ip[24..40].try_into().expect("40 bytes"),
    );
    Ok(Some((
        IpAddr::from(s6),
        IpAddr::from(d6),
        &ip[at..],
        (40 + plen).saturating_sub(at),
    )))
}

/// The TCP segment of a frame: None when it carries none, an error (why) when its IP header is
/// malformed.
pub(super) fn parse_frame(linktype: u16, f: &[u8]) -> Read<'_, Seg<'_>> {
    let Some((ip, ethertype)) = link_payload(linktype, f) else {
        return Ok(None);
    };
    let found = match ethertype {
        0x0800 => ipv4(ip)?,
        0x86dd => ipv6(ip)?,
        _ => None,
    };
    Ok(found.and_then(|(src, dst, tcp, payload_total)| tcp_segment(src, dst, tcp, payload_total)))
}

/// The TCP header at the start of `tcp` (`payload_total` bytes of header and data by the IP
/// length), or None when it is cut short or its data offset does not fit.
fn tcp_segment(src: IpAddr, dst: IpAddr, tcp: &[u8], payload_total: usize) -> Option<Seg<'_>> {
    let doff = usize::from(*tcp.get(12)? >> 4) * 4;
    if doff < 20 || payload_total < doff {
        return None;
    }
    Some(Seg {
        sport: u16::from_be_bytes([tcp[0], tcp[1]]),
        dport: u16::from_be_bytes([tcp[2], tcp[3]]),
        seq: u32::from_be_bytes(tcp[4..8].try_into().ok()?),
        ack: u32::from_be_bytes(tcp[8..12].try_into().ok()?),
        flags: *tcp.get(13)?,
        window: u16::from_be_bytes([*tcp.get(14)?, *tcp.get(15)?]),
        payload: (payload_total - doff) as i64,
        options: tcp.get(20..doff.min(tcp.len())).unwrap_or(&[]),
        src,
        dst,
    })
}

/// The TCP options tcplab reads.
pub(super) struct Opts {
    pub(super) mss: Option<u32>,
    pub(super) ts: Option<(u32, u32)>,
    pub(super) sack: [(u32, u32); 4],
    pub(super) nsack: usize,
    pub(super) wscale: Option<u8>,
}

impl Opts {
    fn read(&mut self, kind: u8, v: &[u8]) {
        match (kind, v.len() + 2) {
            (2, 4) => self.mss = Some(u32::from(u16::from_be_bytes([v[0], v[1]]))),
            // RFC 7323 §2.3: a shift above 14 is used as 14.
            (3, 3) => self.wscale = Some(v[0].min(14)),
            (8, 10) => {
                self.ts = Some((
                    u32::from_be_bytes([v[0], v[1], v[2], v[3]]),
                    u32::from_be_bytes([v[4], v[5], v[6], v[7]]),
                ))
            }
            (5, _) => {
                for blk in v.chunks_exact(8).take(4) {
                    self.sack[self.nsack] = (
                        u32::from_be_bytes([blk[0], blk[1], blk[2], blk[3]]),
                        u32::from_be_bytes([blk[4], blk[5], blk[6], blk[7]]),
                    );
                    self.nsack += 1;
                }
            }
            _ => {}
        }
    }
}

/// TCP options (RFC 9293 §3.2, RFC 2018 SACK, RFC 7323 timestamps); a snap length that cut the
/// options short ends the walk.
pub(super) fn tcp_options(o: &[u8]) -> Opts {
    let mut r = Opts {
        mss: None,
        ts: None,
        sack: [(0, 0); 4],
        nsack: 0,
        wscale: None,
    };
    let mut i = 0;
    while i < o.len() {
        match o[i] {
            0 => break,
            1 => i += 1,
            kind => {
                let Some(&len) = o.get(i + 1) else { break };
                let len = usize::from(len);
                if len < 2 || i + len > o.len() {
                    break;
                }
                r.read(kind, &o[i + 2..i + len]);
                i += len;
            }
        }
    }
    r
}

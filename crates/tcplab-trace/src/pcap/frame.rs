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

fn ipv4(ip: &[u8]) -> Option<Ip<'_>> {
    if ip.first()? >> 4 != 4 || *ip.get(9)? != 6 {
        return None;
    }
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([*ip.get(2)?, *ip.get(3)?]));
    let frag = u16::from_be_bytes([*ip.get(6)?, *ip.get(7)?]) & 0x1fff;
    if frag != 0 || ihl < 20 || total < ihl {
        return None;
    }
    let a = ip.get(12..20)?;
    let (s4, d4): ([u8; 4], [u8; 4]) = (a[..4].try_into().ok()?, a[4..].try_into().ok()?);
    Some((
        IpAddr::from(s4),
        IpAddr::from(d4),
        ip.get(ihl..)?,
        total - ihl,
    ))
}

fn ipv6(ip: &[u8]) -> Option<Ip<'_>> {
    if ip.first()? >> 4 != 6 || *ip.get(6)? != 6 {
        return None;
    }
    let plen = usize::from(u16::from_be_bytes([*ip.get(4)?, *ip.get(5)?]));
    let (s6, d6): ([u8; 16], [u8; 16]) = (
        ip.get(8..24)?.try_into().ok()?,
        ip.get(24..40)?.try_into().ok()?,
    );
    Some((IpAddr::from(s6), IpAddr::from(d6), ip.get(40..)?, plen))
}

/// The TCP segment of a frame, or None when it carries none.
pub(super) fn parse_frame(linktype: u16, f: &[u8]) -> Option<Seg<'_>> {
    let (ip, ethertype) = link_payload(linktype, f)?;
    let (src, dst, tcp, payload_total) = match ethertype {
        0x0800 => ipv4(ip)?,
        0x86dd => ipv6(ip)?,
        _ => return None,
    };
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

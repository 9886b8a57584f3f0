//! Packet captures (libpcap and pcapng files, e.g. `tcpdump -s 100 -w`): per TCP flow the sends
//! (sequence, payload size, retransmission), the acknowledged bytes, bytes in flight estimated
//! from the sender's side (snd_max - snd_una - SACKed), and RTT samples by Karn's rule (RFC
//! 6298 §3: only segments never retransmitted), smoothed as RFC 6298 §2 does. A capture carries
//! neither cwnd nor ssthresh, so those are -1 and a capture alone has no recovery episodes.
//! Payload sizes come from the IP length fields, so a short snap length is fine.
//!
//! Formats: pcap (libpcap's savefile.c: 24-byte header, magic a1b2c3d4 us / a1b23c4d ns, either
//! byte order) and pcapng (draft-ietf-opsawg-pcapng: SHB, IDB with if_tsresol, EPB). Link types:
//! Ethernet (with VLAN tags), BSD loopback, raw IP, Linux cooked v1 and v2.

use std::collections::{HashMap, VecDeque};
use std::io::Read;
use std::net::IpAddr;

use crate::flows::{FlowKey, Sample, SeqUnwrap, Tracker, OPEN};
use crate::import::Ctx;
use crate::lines::{FastMap, ParseError};

/// Largest packet record accepted; bigger means a corrupt file (and bounds memory).
const MAX_RECORD: usize = 256 * 1024;
/// Largest pcapng block accepted.
const MAX_BLOCK: usize = 16 * 1024 * 1024;
/// Segments remembered per flow for RTT samples (beyond it the oldest are forgotten).
const MAX_OUTSTANDING: usize = 1 << 20;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Pcap { big_endian: bool, nanos: bool },
    PcapNg,
}

/// Whether `head` (the first bytes of a file) is a pcap or pcapng capture.
pub fn is_capture(head: &[u8]) -> bool {
    head.len() >= 4
        && matches!(
            &head[..4],
            [0xd4, 0xc3, 0xb2, 0xa1]
                | [0xa1, 0xb2, 0xc3, 0xd4]
                | [0x4d, 0x3c, 0xb2, 0xa1]
                | [0xa1, 0xb2, 0x3c, 0x4d]
                | [0x0a, 0x0d, 0x0d, 0x0a]
        )
}

struct Dir {
    tracker: Option<Tracker>,
    seq: SeqUnwrap,
    started: bool,
    snd_max: i64,
    una: i64,
    sacked: i64,
    srtt_us: i64,
    /// New data not yet acknowledged: (start, end, sent at, retransmitted).
    outstanding: VecDeque<(i64, i64, i64, bool)>,
    sizes: HashMap<i64, u64>,
    mss_opt: Option<u32>,
    ts: bool,
    /// The window-scale shift this direction announced in its SYN (RFC 7323 §2.2), None if its
    /// SYN carried none; unknown (`syn_seen` false) when the capture missed the SYN.
    wscale: Option<u8>,
    syn_seen: bool,
}

impl Dir {
    fn new() -> Self {
        Dir {
            tracker: None,
            seq: SeqUnwrap::default(),
            started: false,
            snd_max: 0,
            una: 0,
            sacked: 0,
            srtt_us: -1,
            outstanding: VecDeque::new(),
            sizes: HashMap::new(),
            mss_opt: None,
            ts: false,
            wscale: None,
            syn_seen: false,
        }
    }
}

/// TCP fields of one packet.
struct Seg<'a> {
    src: IpAddr,
    dst: IpAddr,
    sport: u16,
    dport: u16,
    seq: u32,
    ack: u32,
    flags: u8,
    window: u16,
    payload: i64,
    options: &'a [u8],
}

/// Reader state for one capture.
pub struct PcapParser<R> {
    input: R,
    kind: Kind,
    big_endian: bool,
    /// Per pcapng interface: (link type, ticks per second).
    ifaces: Vec<(u16, u64)>,
    linktype: u16,
    /// Per direction (src, sport, dst, dport): raw addresses, so a packet allocates nothing.
    dirs: FastMap<(IpAddr, u16, IpAddr, u16), Dir>,
    origin_ns: Option<i64>,
    buf: Vec<u8>,
    /// Packet records read.
    pub packets: u64,
    /// Records that were not TCP over IP (skipped, not errors).
    pub not_tcp: u64,
    offset: u64,
}

fn u16_at(b: &[u8], i: usize, be: bool) -> u16 {
    let a = [b[i], b[i + 1]];
    if be {
        u16::from_be_bytes(a)
    } else {
        u16::from_le_bytes(a)
    }
}

fn u32_at(b: &[u8], i: usize, be: bool) -> u32 {
    let a = [b[i], b[i + 1], b[i + 2], b[i + 3]];
    if be {
        u32::from_be_bytes(a)
    } else {
        u32::from_le_bytes(a)
    }
}

impl<R: Read> PcapParser<R> {
    /// Open a capture: reads and checks the file header.
    pub fn new(mut input: R) -> Result<Self, ParseError> {
        let mut head = [0u8; 24];
        read_full(&mut input, &mut head[..4], 0)?;
        let (kind, big_endian) = match head[..4] {
            [0xd4, 0xc3, 0xb2, 0xa1] => (
                Kind::Pcap {
                    big_endian: false,
                    nanos: false,
                },
                false,
            ),
            [0xa1, 0xb2, 0xc3, 0xd4] => (
                Kind::Pcap {
                    big_endian: true,
                    nanos: false,
                },
                true,
            ),
            [0x4d, 0x3c, 0xb2, 0xa1] => (
                Kind::Pcap {
                    big_endian: false,
                    nanos: true,
                },
                false,
            ),
            [0xa1, 0xb2, 0x3c, 0x4d] => (
                Kind::Pcap {
                    big_endian: true,
                    nanos: true,
                },
                true,
            ),
            [0x0a, 0x0d, 0x0d, 0x0a] => (Kind::PcapNg, false),
            _ => {
                return Err(ParseError::expected(
                    0,
                    "a pcap or pcapng magic number at the start of the file",
                    &head[..4],
                ))
            }
        };
        let mut p = PcapParser {
            input,
            kind,
            big_endian,
            ifaces: Vec::new(),
            linktype: 0,
            dirs: FastMap::default(),
            origin_ns: None,
            buf: Vec::new(),
            packets: 0,
            not_tcp: 0,
            offset: 4,
        };
        match kind {
            Kind::Pcap { .. } => {
                read_full(&mut p.input, &mut head[4..24], 4)?;
                p.offset = 24;
                p.linktype = u32_at(&head, 20, big_endian) as u16;
            }
            Kind::PcapNg => {
                let mut len_field = [0u8; 4];
                read_full(&mut p.input, &mut len_field, 4)?;
                p.offset = 8;
                p.section_header(len_field)?;
            }
        }
        Ok(p)
    }

    /// The first packet's time, ns since the epoch, once one was read.
    pub fn origin(&self) -> Option<i64> {
        self.origin_ns
    }

    /// Bytes read so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The rest of a pcapng section header block, whose type and length field (`len_field`)
    /// were read: its byte-order magic sets the section's byte order; the block is skipped and
    /// the section's interfaces start afresh.
    fn section_header(&mut self, len_field: [u8; 4]) -> Result<(), ParseError> {
        let mut bom = [0u8; 4];
        read_full(&mut self.input, &mut bom, self.offset)?;
        self.big_endian = match bom {
            [0x1a, 0x2b, 0x3c, 0x4d] => true,
            [0x4d, 0x3c, 0x2b, 0x1a] => false,
            _ => {
                return Err(ParseError::at(
                    0,
                    format!(
                        "byte offset {}: pcapng section header without its byte-order magic",
                        self.offset
                    ),
                ))
            }
        };
        self.offset += 4;
        let len = u32_at(&len_field, 0, self.big_endian) as usize;
        if !(28..=MAX_BLOCK).contains(&len) || len % 4 != 0 {
            return Err(ParseError::at(
                0,
                format!(
                    "byte offset {}: pcapng section header length {len} is not valid",
                    self.offset
                ),
            ));
        }
        self.skip(len - 12)?;
        self.ifaces.clear();
        Ok(())
    }

    fn skip(&mut self, n: usize) -> Result<(), ParseError> {
        let copied = std::io::copy(&mut (&mut self.input).take(n as u64), &mut std::io::sink())?;
        if copied as usize != n {
            return Err(ParseError::at(
                0,
                format!("byte offset {}: file ends inside a block", self.offset),
            ));
        }
        self.offset += n as u64;
        Ok(())
    }

    /// Read up to `budget` packets into the import; Ok(false) at the end of the file.
    pub fn step(
        &mut self,
        ctx: &mut Ctx<'_>,
        budget: usize,
        lenient: bool,
        bad: &mut u64,
    ) -> Result<bool, ParseError> {
        for _ in 0..budget {
            let rec = match self.kind {
                Kind::Pcap { nanos, .. } => self.next_pcap(nanos)?,
                Kind::PcapNg => self.next_pcapng()?,
            };
            let Some((t_abs, linktype)) = rec else {
                return Ok(false);
            };
            self.packets += 1;
            let origin = *self.origin_ns.get_or_insert(t_abs);
            let buf = std::mem::take(&mut self.buf);
            let r = self.packet(ctx, t_abs - origin + ctx.offset_ns, linktype, &buf);
            self.buf = buf;
            match r {
                Ok(()) => {}
                Err(e) if lenient => {
                    let _ = e;
                    *bad += 1;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    fn next_pcap(&mut self, nanos: bool) -> Result<Option<(i64, u16)>, ParseError> {
        let mut h = [0u8; 16];
        let n = read_some(&mut self.input, &mut h)?;
        if n == 0 {
            return Ok(None);
        }
        if n < 16 {
            return Err(ParseError::at(
                0,
                format!(
                    "byte offset {}: file ends inside a packet header (truncated capture?)",
                    self.offset
                ),
            ));
        }
        let be = self.big_endian;
        let (sec, frac, incl) = (
            u32_at(&h, 0, be) as i64,
            u32_at(&h, 4, be) as i64,
            u32_at(&h, 8, be) as usize,
        );
        if incl > MAX_RECORD {
            return Err(ParseError::at(
                0,
                format!(
                    "byte offset {}: packet record of {incl} bytes (corrupt capture?)",
                    self.offset
                ),
            ));
        }
        self.buf.resize(incl, 0);
        let off = self.offset + 16;
        read_full(&mut self.input, &mut self.buf, off)?;
        self.offset = off + incl as u64;
        let t = sec * 1_000_000_000 + if nanos { frac } else { frac * 1000 };
        Ok(Some((t, self.linktype)))
    }

    fn next_pcapng(&mut self) -> Result<Option<(i64, u16)>, ParseError> {
        loop {
            let mut h = [0u8; 8];
            let n = read_some(&mut self.input, &mut h)?;
            if n == 0 {
                return Ok(None);
            }
            if n < 8 {
                return Err(ParseError::at(
                    0,
                    format!(
                        "byte offset {}: file ends inside a block header",
                        self.offset
                    ),
                ));
            }
            if h[..4] == [0x0a, 0x0d, 0x0d, 0x0a] {
                self.offset += 8;
                self.section_header([h[4], h[5], h[6], h[7]])?;
                continue;
            }
            let be = self.big_endian;
            let (btype, len) = (u32_at(&h, 0, be), u32_at(&h, 4, be) as usize);
            if !(12..=MAX_BLOCK).contains(&len) || len % 4 != 0 {
                return Err(ParseError::at(
                    0,
                    format!(
                        "byte offset {}: pcapng block length {len} is not valid",
                        self.offset
                    ),
                ));
            }
            let at = self.offset;
            self.offset += 8;
            self.buf.resize(len - 8, 0);
            read_full(&mut self.input, &mut self.buf, self.offset)?;
            self.offset += (len - 8) as u64;
            let body = &self.buf[..len - 12];
            match btype {
                1 => {
                    if body.len() < 8 {
                        return Err(ParseError::at(
                            0,
                            format!("byte offset {at}: interface description block too short"),
                        ));
                    }
                    let link = u16_at(body, 0, be);
                    let mut per_s: u64 = 1_000_000;
                    let mut o = 8;
                    while o + 4 <= body.len() {
                        let (code, olen) = (u16_at(body, o, be), u16_at(body, o + 2, be) as usize);
                        if code == 0 || o + 4 + olen > body.len() {
                            break;
                        }
                        if code == 9 && olen >= 1 {
                            let r = body[o + 4];
                            let (base, exp) = if r & 0x80 != 0 {
                                (2u64, u32::from(r & 0x7f))
                            } else {
                                (10u64, u32::from(r))
                            };
                            per_s = base
                                .checked_pow(exp)
                                .filter(|&v| v > 0)
                                .unwrap_or(1_000_000);
                        }
                        o += 4 + olen.div_ceil(4) * 4;
                    }
                    self.ifaces.push((link, per_s));
                }
                6 => {
                    if body.len() < 20 {
                        return Err(ParseError::at(
                            0,
                            format!("byte offset {at}: enhanced packet block too short"),
                        ));
                    }
                    let iface = u32_at(body, 0, be) as usize;
                    let ts =
                        (u64::from(u32_at(body, 4, be)) << 32) | u64::from(u32_at(body, 8, be));
                    let cap = u32_at(body, 12, be) as usize;
                    let Some(&(link, per_s)) = self.ifaces.get(iface) else {
                        return Err(ParseError::at(0, format!("byte offset {at}: packet on interface {iface}, which no interface block described")));
                    };
                    if 20 + cap > body.len() {
                        return Err(ParseError::at(
                            0,
                            format!("byte offset {at}: packet data longer than its block"),
                        ));
                    }
                    let t = (i128::from(ts) * 1_000_000_000 / i128::from(per_s))
                        .min(i128::from(i64::MAX)) as i64;
                    self.buf.copy_within(20..20 + cap, 0);
                    self.buf.truncate(cap);
                    return Ok(Some((t, link)));
                }
                _ => {} // other blocks (name resolution, statistics, simple packets without time)
            }
        }
    }

    fn packet(
        &mut self,
        ctx: &mut Ctx<'_>,
        t_ns: i64,
        linktype: u16,
        frame: &[u8],
    ) -> Result<(), ParseError> {
        let Some(seg) = parse_frame(linktype, frame) else {
            self.not_tcp += 1;
            return Ok(());
        };
        let fwd = (seg.src, seg.sport, seg.dst, seg.dport);
        let rev = (seg.dst, seg.dport, seg.src, seg.sport);
        let opts = tcp_options(seg.options);
        let syn = seg.flags & 0x02 != 0;
        let ackf = seg.flags & 0x10 != 0;
        let d = self.dirs.entry(fwd).or_insert_with(Dir::new);
        if syn {
            d.seq = SeqUnwrap::default();
            d.seq.set_base(seg.seq.wrapping_add(1));
            d.started = true;
            d.mss_opt = opts.mss.or(d.mss_opt);
            d.ts |= opts.ts.is_some();
            d.wscale = opts.wscale;
            d.syn_seen = true;
        }
        // The window this packet advertises, in bytes: scaled only when both SYNs carried the
        // option (RFC 7323 §2.2), never in a SYN; -1 when the capture missed a SYN.
        let rwnd_bytes = match self.dirs.get(&rev) {
            _ if syn => i64::from(seg.window),
            Some(r) if r.syn_seen && d_syn_seen(&self.dirs, &fwd) => {
                let shift = match (self.dirs.get(&fwd).and_then(|d| d.wscale), r.wscale) {
                    (Some(s), Some(_)) => s,
                    _ => 0,
                };
                i64::from(seg.window) << shift
            }
            _ => -1,
        };
        let d = self.dirs.get_mut(&fwd).expect("inserted above");
        if seg.payload > 0 {
            if !d.started {
                d.seq.set_base(seg.seq);
                d.started = true;
            }
            let rel = d.seq.unwrap(seg.seq);
            let end = rel + seg.payload;
            let retx = rel < d.snd_max;
            if d.tracker.is_none() {
                let i = ctx.flows.get(&FlowKey {
                    laddr: seg.src.to_string(),
                    lport: seg.sport,
                    faddr: seg.dst.to_string(),
                    fport: seg.dport,
                });
                let mut tr = Tracker::new(i, 0, ctx.interval_ns);
                tr.acked_bytes = true;
                d.tracker = Some(tr);
            }
            if retx {
                for o in d.outstanding.iter_mut().filter(|o| o.0 < end && o.1 > rel) {
                    o.3 = true;
                }
            } else if d.outstanding.len() < MAX_OUTSTANDING {
                d.outstanding.push_back((rel, end, t_ns, false));
            }
            d.snd_max = d.snd_max.max(end);
            *d.sizes.entry(seg.payload).or_default() += 1;
            let tr = d.tracker.as_mut().expect("set above");
            tr.send(ctx.rec, t_ns, rel, seg.payload, i64::from(retx));
        }
        // This packet's ACK acknowledges the reverse direction's data.
        if ackf {
            let peer_mss = opts.mss;
            if let Some(r) = self.dirs.get_mut(&rev) {
                if syn {
                    r.mss_opt = match (r.mss_opt, peer_mss) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                }
                if r.started && r.tracker.is_some() {
                    let a = r.seq.unwrap(seg.ack);
                    if a > r.una && a <= r.snd_max {
                        let mut newest: Option<(i64, bool)> = None;
                        while r.outstanding.front().is_some_and(|o| o.1 <= a) {
                            let o = r.outstanding.pop_front().expect("checked");
                            newest = Some((o.2, o.3));
                        }
                        if let Some((sent, false)) = newest {
                            let sample_us = (t_ns - sent) / 1000;
                            r.srtt_us = if r.srtt_us < 0 {
                                sample_us
                            } else {
                                (7 * r.srtt_us + sample_us) / 8
                            };
                        }
                        r.una = a;
                    }
                    let mut sacked = 0;
                    for &(l, rgt) in &opts.sack[..opts.nsack] {
                        let (l, rgt) = (r.seq.unwrap(l), r.seq.unwrap(rgt));
                        if rgt > l && l >= r.una {
                            sacked += rgt.min(r.snd_max) - l;
                        }
                    }
                    r.sacked = sacked;
                    let mut blocks = [(-1i64, -1i64); 4];
                    for (b, &(l, rgt)) in blocks.iter_mut().zip(&opts.sack[..opts.nsack]) {
                        *b = (r.seq.unwrap(l), r.seq.unwrap(rgt));
                    }
                    let ack_rel = r.seq.unwrap(seg.ack);
                    let (una, snd_max, srtt) = (r.una, r.snd_max, r.srtt_us);
                    let tr = r.tracker.as_mut().expect("checked");
                    tr.ack(ctx.rec, t_ns, ack_rel, rwnd_bytes, &blocks[..opts.nsack]);
                    tr.sample(
                        ctx.rec,
                        Sample {
                            t_ns,
                            cwnd_bytes: -1,
                            ssthresh_bytes: -1,
                            snd_una: una,
                            snd_nxt: snd_max,
                            flight_bytes: (snd_max - una - sacked).max(0),
                            srtt_us: srtt,
                            rto_us: -1,
                            state: OPEN,
                        },
                        true,
                    );
                }
            }
        }
        Ok(())
    }

    /// Derived intervals; each flow's MSS from the SYNs (minus 12 bytes of timestamps when
    /// negotiated), else its most common payload size.
    pub fn finish(self, ctx: &mut Ctx<'_>) -> Vec<(usize, Vec<[i64; 7]>)> {
        let mut v = Vec::new();
        for d in self.dirs.into_values() {
            let Some(tr) = d.tracker else { continue };
            let flow = tr.flow as usize;
            let mss = match d.mss_opt {
                Some(m) => m.saturating_sub(if d.ts { 12 } else { 0 }),
                None => d
                    .sizes
                    .iter()
                    .max_by_key(|(s, n)| (**n, **s))
                    .map_or(0, |(s, _)| (*s).clamp(0, i64::from(u32::MAX)) as u32),
            };
            if mss > 0 {
                ctx.flows.flows[flow].mss.get_or_insert(mss);
            }
            v.push((flow, tr.finish()));
        }
        v.sort_by_key(|(f, _)| *f);
        v
    }
}

fn read_some<R: Read>(r: &mut R, buf: &mut [u8]) -> Result<usize, ParseError> {
    let mut n = 0;
    while n < buf.len() {
        let k = r.read(&mut buf[n..])?;
        if k == 0 {
            break;
        }
        n += k;
    }
    Ok(n)
}

fn read_full<R: Read>(r: &mut R, buf: &mut [u8], offset: u64) -> Result<(), ParseError> {
    if read_some(r, buf)? < buf.len() {
        return Err(ParseError::at(
            0,
            format!("byte offset {offset}: file ends inside a record (truncated capture?)"),
        ));
    }
    Ok(())
}

fn parse_frame(linktype: u16, f: &[u8]) -> Option<Seg<'_>> {
    let (ip, ethertype) = match linktype {
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
    };
    let (src, dst, tcp, payload_total) = match ethertype {
        0x0800 => {
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
            (
                IpAddr::from(s4),
                IpAddr::from(d4),
                ip.get(ihl..)?,
                total - ihl,
            )
        }
        0x86dd => {
            if ip.first()? >> 4 != 6 || *ip.get(6)? != 6 {
                return None;
            }
            let plen = usize::from(u16::from_be_bytes([*ip.get(4)?, *ip.get(5)?]));
            let (s6, d6): ([u8; 16], [u8; 16]) = (
                ip.get(8..24)?.try_into().ok()?,
                ip.get(24..40)?.try_into().ok()?,
            );
            (IpAddr::from(s6), IpAddr::from(d6), ip.get(40..)?, plen)
        }
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

struct Opts {
    mss: Option<u32>,
    ts: Option<(u32, u32)>,
    sack: [(u32, u32); 4],
    nsack: usize,
    wscale: Option<u8>,
}

/// TCP options (RFC 9293 §3.2, RFC 2018 SACK, RFC 7323 timestamps); a snap length that cut the
/// options short ends the walk.
fn tcp_options(o: &[u8]) -> Opts {
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
                let v = &o[i + 2..i + len];
                match (kind, len) {
                    (2, 4) => r.mss = Some(u32::from(u16::from_be_bytes([v[0], v[1]]))),
                    // RFC 7323 §2.3: a shift above 14 is used as 14.
                    (3, 3) => r.wscale = Some(v[0].min(14)),
                    (8, 10) => {
                        r.ts = Some((
                            u32::from_be_bytes([v[0], v[1], v[2], v[3]]),
                            u32::from_be_bytes([v[4], v[5], v[6], v[7]]),
                        ))
                    }
                    (5, _) => {
                        for blk in v.chunks_exact(8).take(4) {
                            r.sack[r.nsack] = (
                                u32::from_be_bytes([blk[0], blk[1], blk[2], blk[3]]),
                                u32::from_be_bytes([blk[4], blk[5], blk[6], blk[7]]),
                            );
                            r.nsack += 1;
                        }
                    }
                    _ => {}
                }
                i += len;
            }
        }
    }
    r
}

/// Whether the direction `key` has shown its SYN.
fn d_syn_seen(
    dirs: &FastMap<(IpAddr, u16, IpAddr, u16), Dir>,
    key: &(IpAddr, u16, IpAddr, u16),
) -> bool {
    dirs.get(key).is_some_and(|d| d.syn_seen)
}

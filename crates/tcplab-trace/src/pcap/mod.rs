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

mod dirs;
mod frame;

use std::io::Read;

use crate::ctx::{Ctx, Skipped};
use crate::lines::ParseError;
use dirs::Dirs;
use frame::parse_frame;

/// Largest packet record accepted; bigger means a corrupt file (and bounds memory).
const MAX_RECORD: usize = 256 * 1024;
/// Largest pcapng block accepted.
const MAX_BLOCK: usize = 16 * 1024 * 1024;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Pcap { nanos: bool },
    PcapNg,
}

/// The file kind and byte order a capture's first four bytes announce.
fn kind_of(magic: &[u8]) -> Option<(Kind, bool)> {
    Some(match magic {
        [0xd4, 0xc3, 0xb2, 0xa1] => (Kind::Pcap { nanos: false }, false),
        [0xa1, 0xb2, 0xc3, 0xd4] => (Kind::Pcap { nanos: false }, true),
        [0x4d, 0x3c, 0xb2, 0xa1] => (Kind::Pcap { nanos: true }, false),
        [0xa1, 0xb2, 0x3c, 0x4d] => (Kind::Pcap { nanos: true }, true),
        [0x0a, 0x0d, 0x0d, 0x0a] => (Kind::PcapNg, false),
        _ => return None,
    })
}

/// Whether `head` (the first bytes of a file) is a pcap or pcapng capture.
pub fn is_capture(head: &[u8]) -> bool {
    head.len() >= 4 && kind_of(&head[..4]).is_some()
}

/// Reader state for one capture.
pub struct PcapParser<R> {
    input: R,
    kind: Kind,
    big_endian: bool,
    /// Per pcapng interface: (link type, ticks per second).
    ifaces: Vec<(u16, u64)>,
    linktype: u16,
    dirs: Dirs,
    origin_ns: Option<i64>,
    buf: Vec<u8>,
    /// Packet records read.
    pub packets: u64,
    /// Records that were not TCP over IP (skipped, not errors).
    pub not_tcp: u64,
    offset: u64,
    /// Where the packet record last read starts, bytes into the file.
    record_at: u64,
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
        let (kind, big_endian) = kind_of(&head[..4]).ok_or_else(|| {
            ParseError::expected(
                0,
                "a pcap or pcapng magic number at the start of the file",
                &head[..4],
            )
        })?;
        let mut p = PcapParser {
            input,
            kind,
            big_endian,
            ifaces: Vec::new(),
            linktype: 0,
            dirs: Dirs::default(),
            origin_ns: None,
            buf: Vec::new(),
            packets: 0,
            not_tcp: 0,
            offset: 4,
            record_at: 0,
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
        skipped: &mut Skipped,
    ) -> Result<bool, ParseError> {
        for _ in 0..budget {
            let rec = match self.kind {
                Kind::Pcap { nanos } => self.next_pcap(nanos)?,
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
            if let Err(e) = r {
                skipped.skip(e)?;
            }
        }
        Ok(true)
    }

    fn next_pcap(&mut self, nanos: bool) -> Result<Option<(i64, u16)>, ParseError> {
        let mut h = [0u8; 16];
        self.record_at = self.offset;
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
            match btype {
                1 => self.interface_block(at, len - 12)?,
                6 => {
                    self.record_at = at;
                    return self.packet_block(at, len - 12).map(Some);
                }
                _ => {} // other blocks (name resolution, statistics, simple packets without time)
            }
        }
    }

    /// An interface description block (its body the first `body_len` bytes of the buffer):
    /// the interface's link type and time resolution (if_tsresol, default microseconds).
    fn interface_block(&mut self, at: u64, body_len: usize) -> Result<(), ParseError> {
        let (body, be) = (&self.buf[..body_len], self.big_endian);
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
        Ok(())
    }

    /// An enhanced packet block (its body the first `body_len` bytes of the buffer): the
    /// packet's time (ns) and link type; its data is moved to the start of the buffer.
    fn packet_block(&mut self, at: u64, body_len: usize) -> Result<(i64, u16), ParseError> {
        let (body, be) = (&self.buf[..body_len], self.big_endian);
        if body.len() < 20 {
            return Err(ParseError::at(
                0,
                format!("byte offset {at}: enhanced packet block too short"),
            ));
        }
        let iface = u32_at(body, 0, be) as usize;
        let ts = (u64::from(u32_at(body, 4, be)) << 32) | u64::from(u32_at(body, 8, be));
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
        let t =
            (i128::from(ts) * 1_000_000_000 / i128::from(per_s)).min(i128::from(i64::MAX)) as i64;
        self.buf.copy_within(20..20 + cap, 0);
        self.buf.truncate(cap);
        Ok((t, link))
    }

    /// One packet record's frame at `t_ns`: a TCP segment goes to its connection's directions;
    /// anything else is counted as not TCP.
    fn packet(
        &mut self,
        ctx: &mut Ctx<'_>,
        t_ns: i64,
        linktype: u16,
        frame: &[u8],
    ) -> Result<(), ParseError> {
        match parse_frame(linktype, frame) {
            Ok(Some(seg)) => self.dirs.segment(ctx, t_ns, &seg),
            Ok(None) => self.not_tcp += 1,
            Err(why) => {
                return Err(ParseError::at(
                    0,
                    format!(
                        "packet {} (byte offset {}): {why}",
                        self.packets, self.record_at
                    ),
                ))
            }
        }
        Ok(())
    }

    /// Derived intervals; each flow's MSS from the SYNs (minus 12 bytes of timestamps when
    /// negotiated), else its most common payload size.
    pub fn finish(self, ctx: &mut Ctx<'_>) -> Vec<(usize, Vec<[i64; 7]>)> {
        self.dirs.finish(ctx)
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

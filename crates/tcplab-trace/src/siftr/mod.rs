//! FreeBSD sender-side logs: stock SIFTR (siftr(4), one line per packet with addresses) and
//! SIFTR2 (github.com/ccfbsd/siftr2: a header, per-packet lines keyed by flowid, and a footer
//! with each flow's addresses, stack, cc and MSS), parsed by the header's `siftrver`; plus the
//! whitespace "plot file" the siftr2 review script derives from a log.
//!
//! Field orders, from the sources (sprintf in siftr_process_pkt; the footer in siftr_manage_ops):
//! - stock siftr.c: dir, sec.usec, laddr, lport, faddr, fport, ssthresh, cwnd, t_flags2, snd_wnd,
//!   rcv_wnd, snd_scale, rcv_scale, state, mss, srtt, sack, t_flags, rto, snd_buf_hiwat,
//!   snd_buf_cc, rcv_buf_hiwat, rcv_buf_cc, inflight (snd_max - snd_una), segqlen, flowid, flowtype.
//! - SIFTR2 2.0-2.2 (decimal): dir, sec.usec, flowid, cwnd, ssthresh, snd_wnd, rcv_wnd, t_flags,
//!   t_flags2, state, srtt, rto, snd_buf_hiwat, snd_buf_cc, rcv_buf_hiwat, rcv_buf_cc, pipe,
//!   segqlen, th_seq, th_ack, data_sz.
//! - SIFTR2 2.3-2.5 (hex): flowid, dir, ms since enable, cwnd, ssthresh, srtt, data_sz, snd_wnd,
//!   rcv_wnd, t_flags, t_flags2, rto, snd_buf_hiwat, snd_buf_cc, rcv_buf_hiwat, rcv_buf_cc, pipe,
//!   segqlen (no sequence numbers: retransmissions and acknowledged bytes are unknown).
//!   Footer flow_list entries: 2.5 key, ipver, laddr, lport, faddr, fport, stack name, cc name,
//!   mss, sack, snd_scale, rcv_scale, nrecord, ntrans; before 2.5 the same without ipver and
//!   with stack and cc as numbers (stack 0 freebsd 1 rack; cc 0 cubic 1 newreno).

mod parser;
mod plot;

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};

use crate::flows::{FlowKey, LOSS, OPEN, RECOVERY};
use crate::lines::{dec, key_values, split_fields, ParseError};
use crate::number::{port, u32_dec, u32_hex, Field};
pub use parser::SiftrParser;
pub use plot::PlotParser;

/// tcp_var.h: in NewReno-style fast recovery.
pub const TF_FASTRECOVERY: u64 = 0x0010_0000;
/// tcp_var.h: in congestion recovery (set with fast recovery, or alone for ECN).
pub const TF_CONGRECOVERY: u64 = 0x2000_0000;
/// tcp.h: TCP_MAXWIN << TCP_MAX_WINSHIFT, FreeBSD's initial ("infinite") ssthresh.
const FREEBSD_INFINITE_SSTHRESH: u64 = 65535 << 14;

/// Recovery phase from FreeBSD's flags. An RTO leaves no flag (tcp_timer_rexmt clears the
/// recovery flags and cc_cong_signal(CC_RTO) sets cwnd to one segment), so it is recognised by
/// that: cwnd at most one MSS outside fast recovery; the phase lasts until cwnd is back at
/// ssthresh (slow start after the timeout is over) or fast recovery begins.
pub fn freebsd_state(prev: i64, t_flags: u64, cwnd: i64, ssthresh: i64, mss: i64) -> i64 {
    if t_flags & TF_FASTRECOVERY != 0 {
        RECOVERY
    } else if mss > 0 && cwnd <= mss && ssthresh > 0 {
        LOSS
    } else if prev == LOSS && ssthresh > 0 && cwnd < ssthresh {
        LOSS
    } else {
        OPEN
    }
}

/// A logged ssthresh in bytes, -1 for FreeBSD's initial "infinite" one.
fn ssthresh_bytes(v: u64) -> i64 {
    if v >= FREEBSD_INFINITE_SSTHRESH {
        -1
    } else {
        v as i64
    }
}

/// The header line of a SIFTR or SIFTR2 log.
#[derive(Debug, Clone, Default)]
pub struct Header {
    /// `siftrver`.
    pub version: String,
    /// Wall-clock time logging began, ns since the epoch.
    pub enable_ns: i64,
    /// `sysver` / `sysname`, as written.
    pub system: String,
}

/// Parse the first line of a SIFTR/SIFTR2 log.
pub fn parse_header(line: &[u8]) -> Result<Header, ParseError> {
    if !line.starts_with(b"enable_time_secs=") {
        return Err(ParseError::expected(
            1,
            "a SIFTR header line (enable_time_secs=... siftrver=...)",
            line,
        ));
    }
    let mut h = Header::default();
    let (mut secs, mut usecs) = (None, 0);
    let mut binary = false;
    for (k, v) in key_values(line) {
        match k {
            b"enable_time_secs" => secs = dec(v),
            b"enable_time_usecs" => usecs = dec(v).unwrap_or(0),
            b"siftrver" => h.version = String::from_utf8_lossy(v).into_owned(),
            b"sysver" | b"sysname" => {
                if !h.system.is_empty() {
                    h.system.push(' ');
                }
                h.system.push_str(&String::from_utf8_lossy(v));
            }
            b"rec_fmt" => binary = v == b"binary",
            _ => {}
        }
    }
    let secs = secs.ok_or_else(|| ParseError::expected(1, "enable_time_secs=<seconds>", line))?;
    if h.version.is_empty() {
        return Err(ParseError::expected(
            1,
            "siftrver=<version> in the header",
            line,
        ));
    }
    if binary {
        return Err(ParseError::at(1, "binary SIFTR2 records are not supported: log with net.inet.siftr2.enable_binary_record=0"));
    }
    h.enable_ns = (secs as i64)
        .saturating_mul(1_000_000_000)
        .saturating_add(usecs as i64 * 1000);
    Ok(h)
}

/// One flow from a SIFTR2 footer.
#[derive(Debug, Clone)]
pub struct FooterFlow {
    /// Addresses and ports.
    pub key: FlowKey,
    /// tcplab stack name.
    pub stack: String,
    /// Congestion control.
    pub cc: String,
    /// t_maxseg.
    pub mss: u32,
}

/// The footer's flow_list: flowid (as written) -> flow.
pub fn parse_flow_list(footer: &[u8]) -> HashMap<Vec<u8>, FooterFlow> {
    let mut out = HashMap::new();
    let Some(i) = find(footer, b"flow_list=") else {
        return out;
    };
    let mut f = Vec::new();
    for entry in footer[i + 10..].split(|&c| c == b';') {
        split_fields(entry, b',', &mut f);
        let (key, rest): (&[u8], &[&[u8]]) = match f.len() {
            14 => (f[0], &f[2..]),
            13 => (f[0], &f[1..]),
            _ => continue,
        };
        let (Some(lport), Some(fport), Some(mss)) = (dec(rest[1]), dec(rest[3]), dec(rest[6]))
        else {
            continue;
        };
        let stack = match rest[4] {
            b"0" | b"freebsd" => "freebsd".to_string(),
            b"1" | b"rack" => "freebsd-rack".to_string(),
            other => String::from_utf8_lossy(other).into_owned(),
        };
        let cc = match (f.len(), rest[5]) {
            (13, b"0") => "cubic".to_string(),
            (13, b"1") => "newreno".to_string(),
            (_, other) => String::from_utf8_lossy(other).into_owned(),
        };
        out.insert(
            key.to_vec(),
            FooterFlow {
                key: FlowKey {
                    laddr: String::from_utf8_lossy(rest[0]).into_owned(),
                    lport: lport.min(65535) as u16,
                    faddr: String::from_utf8_lossy(rest[2]).into_owned(),
                    fport: fport.min(65535) as u16,
                },
                stack,
                cc,
                mss: mss.min(u64::from(u32::MAX)) as u32,
            },
        );
    }
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The footer line of a SIFTR2 log, read from the end of the file without reading the body
/// (the flows' metadata is needed before the body streams). None when the log has no footer.
pub fn read_footer<F: Read + Seek>(file: &mut F) -> std::io::Result<Option<Vec<u8>>> {
    const TAIL: u64 = 4 << 20;
    let len = file.seek(SeekFrom::End(0))?;
    let start = len.saturating_sub(TAIL);
    file.seek(SeekFrom::Start(start))?;
    let mut tail = Vec::new();
    file.take(TAIL).read_to_end(&mut tail)?;
    file.seek(SeekFrom::Start(0))?;
    let mut found = None;
    let mut pos = 0;
    while let Some(i) = find(&tail[pos..], b"disable_time_secs=") {
        let at = pos + i;
        if at == 0 || tail[at - 1] == b'\n' {
            found = Some(at);
        }
        pos = at + 1;
    }
    Ok(found.map(|at| {
        let end = tail[at..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(tail.len(), |e| at + e);
        tail[at..end].to_vec()
    }))
}

/// What a field of a body line holds; every one is checked, read or not.
#[derive(Debug, Clone, Copy)]
enum Col {
    /// `i` or `o`.
    Dir,
    /// `sec.usec`, wall clock.
    Time,
    /// An IPv4 or IPv6 address.
    Addr,
    /// A number (SIFTR prints every one from a `u_int`, ports from a `u_short`).
    Num(Field),
}

const STOCK: [Col; 27] = [
    Col::Dir,
    Col::Time,
    Col::Addr,
    Col::Num(port("lport")),
    Col::Addr,
    Col::Num(port("fport")),
    Col::Num(u32_dec("ssthresh")),
    Col::Num(u32_dec("cwnd")),
    Col::Num(u32_dec("t_flags2")),
    Col::Num(u32_dec("snd_wnd")),
    Col::Num(u32_dec("rcv_wnd")),
    Col::Num(u32_dec("snd_scale")),
    Col::Num(u32_dec("rcv_scale")),
    Col::Num(u32_dec("state")),
    Col::Num(u32_dec("mss")),
    Col::Num(u32_dec("srtt")),
    Col::Num(u32_dec("sack")),
    Col::Num(u32_dec("t_flags")),
    Col::Num(u32_dec("rto")),
    Col::Num(u32_dec("snd_buf_hiwat")),
    Col::Num(u32_dec("snd_buf_cc")),
    Col::Num(u32_dec("rcv_buf_hiwat")),
    Col::Num(u32_dec("rcv_buf_cc")),
    Col::Num(u32_dec("inflight")),
    Col::Num(u32_dec("segqlen")),
    Col::Num(u32_dec("flowid")),
    Col::Num(u32_dec("flowtype")),
];

/// siftr2.c before 2.3: `%c,%jd.%06ld,%08x,%u,...`: the flowid in hex, the rest decimal.
const SIFTR2_DEC: [Col; 21] = [
    Col::Dir,
    Col::Time,
    Col::Num(u32_hex("flowid")),
    Col::Num(u32_dec("cwnd")),
    Col::Num(u32_dec("ssthresh")),
    Col::Num(u32_dec("snd_wnd")),
    Col::Num(u32_dec("rcv_wnd")),
    Col::Num(u32_dec("t_flags")),
    Col::Num(u32_dec("t_flags2")),
    Col::Num(u32_dec("state")),
    Col::Num(u32_dec("srtt")),
    Col::Num(u32_dec("rto")),
    Col::Num(u32_dec("snd_buf_hiwat")),
    Col::Num(u32_dec("snd_buf_cc")),
    Col::Num(u32_dec("rcv_buf_hiwat")),
    Col::Num(u32_dec("rcv_buf_cc")),
    Col::Num(u32_dec("pipe")),
    Col::Num(u32_dec("segqlen")),
    Col::Num(u32_dec("th_seq")),
    Col::Num(u32_dec("th_ack")),
    Col::Num(u32_dec("data_sz")),
];

/// siftr2.c 2.3 and later: `%08x,%c,%x,%x,...`.
const SIFTR2_HEX: [Col; 18] = [
    Col::Num(u32_hex("flowid")),
    Col::Dir,
    Col::Num(u32_hex("ms")),
    Col::Num(u32_hex("cwnd")),
    Col::Num(u32_hex("ssthresh")),
    Col::Num(u32_hex("srtt")),
    Col::Num(u32_hex("data_sz")),
    Col::Num(u32_hex("snd_wnd")),
    Col::Num(u32_hex("rcv_wnd")),
    Col::Num(u32_hex("t_flags")),
    Col::Num(u32_hex("t_flags2")),
    Col::Num(u32_hex("rto")),
    Col::Num(u32_hex("snd_buf_hiwat")),
    Col::Num(u32_hex("snd_buf_cc")),
    Col::Num(u32_hex("rcv_buf_hiwat")),
    Col::Num(u32_hex("rcv_buf_cc")),
    Col::Num(u32_hex("pipe")),
    Col::Num(u32_hex("segqlen")),
];

/// Which body layout a log has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Stock siftr(4).
    Stock,
    /// SIFTR2 2.0-2.2, decimal, with sequence numbers.
    Siftr2Dec,
    /// SIFTR2 2.3 and later, hex, without sequence numbers.
    Siftr2Hex,
}

impl Layout {
    /// The layout a `siftrver` writes.
    pub fn for_version(version: &str) -> Layout {
        let mut parts = version.split('.');
        let major: u32 = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        let minor: u32 = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        match (major, minor) {
            (0 | 1, _) => Layout::Stock,
            (2, 0..=2) => Layout::Siftr2Dec,
            _ => Layout::Siftr2Hex,
        }
    }

    /// Comma-separated fields of a body line.
    fn fields(self) -> usize {
        self.columns().len()
    }

    /// Each field of a body line, in order (the field orders of this module's header).
    fn columns(self) -> &'static [Col] {
        match self {
            Layout::Stock => &STOCK,
            Layout::Siftr2Dec => &SIFTR2_DEC,
            Layout::Siftr2Hex => &SIFTR2_HEX,
        }
    }

    /// What a body line of this layout looks like, for errors.
    fn what(self) -> &'static str {
        match self {
            Layout::Stock => "27 comma-separated fields (stock siftr: dir,time,laddr,lport,...)",
            Layout::Siftr2Dec => {
                "21 comma-separated fields (SIFTR2 <= 2.2: dir,time,flowid,cwnd,...)"
            }
            Layout::Siftr2Hex => {
                "18 comma-separated hex fields (SIFTR2 >= 2.3: flowid,dir,ms,cwnd,...)"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rto_is_recognised_by_a_one_segment_window_outside_fast_recovery() {
        assert_eq!(
            freebsd_state(OPEN, TF_FASTRECOVERY | TF_CONGRECOVERY, 1448, 50_000, 1448),
            RECOVERY
        );
        assert_eq!(freebsd_state(OPEN, 0, 1448, 50_000, 1448), LOSS);
        assert_eq!(freebsd_state(LOSS, 0, 20_000, 50_000, 1448), LOSS);
        assert_eq!(freebsd_state(LOSS, 0, 50_000, 50_000, 1448), OPEN);
        assert_eq!(
            freebsd_state(OPEN, TF_CONGRECOVERY, 20_000, 50_000, 1448),
            OPEN,
            "ECN CWR alone is no loss episode"
        );
    }

    #[test]
    fn versions_choose_layouts() {
        assert_eq!(Layout::for_version("1.2.4"), Layout::Stock);
        assert_eq!(Layout::for_version("2.2"), Layout::Siftr2Dec);
        assert_eq!(Layout::for_version("2.5"), Layout::Siftr2Hex);
    }

    #[test]
    fn footers_of_both_generations_parse() {
        let v25 = b"disable_time_secs=1\tflow_list=0a0b0c0d,4,10.1.1.2,54321,10.1.2.2,5201,rack,cubic,1448,1,9,9,10,20;";
        let v24 = b"disable_time_secs=1\tflow_list=0a0b0c0d,10.1.1.2,54321,10.1.2.2,5201,0,1,1448,1,9,9,10,20;";
        let a = parse_flow_list(v25);
        let b = parse_flow_list(v24);
        let fa = &a[&b"0a0b0c0d".to_vec()];
        let fb = &b[&b"0a0b0c0d".to_vec()];
        assert_eq!(
            (fa.stack.as_str(), fa.cc.as_str(), fa.mss),
            ("freebsd-rack", "cubic", 1448)
        );
        assert_eq!(
            (fb.stack.as_str(), fb.cc.as_str(), fb.key.lport),
            ("freebsd", "newreno", 54321)
        );
    }
}

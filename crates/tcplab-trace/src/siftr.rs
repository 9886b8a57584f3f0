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

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};

use crate::flows::{FlowKey, Sample, SeqUnwrap, Tracker, LOSS, OPEN, RECOVERY};
use crate::import::Ctx;
use crate::lines::{dec, hex, key_values, seconds_ns, split_fields, FastMap, ParseError};

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

    fn fields(self) -> usize {
        match self {
            Layout::Stock => 27,
            Layout::Siftr2Dec => 21,
            Layout::Siftr2Hex => 18,
        }
    }

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

struct FlowState {
    tracker: Tracker,
    seq: SeqUnwrap,
    snd_max: i64,
    una: i64,
}

/// Parser state for one SIFTR/SIFTR2 log.
pub struct SiftrParser {
    layout: Layout,
    header: Header,
    footer: HashMap<Vec<u8>, FooterFlow>,
    flows: FastMap<Vec<u8>, FlowState>,
    fields: Vec<(usize, usize)>,
    done: bool,
    /// Whether the log ended with its footer.
    pub has_footer: bool,
}

impl SiftrParser {
    /// A parser for a log whose first line is `header` and whose footer (SIFTR2) is `footer`.
    pub fn new(header: Header, footer: Option<&[u8]>) -> Self {
        SiftrParser {
            layout: Layout::for_version(&header.version),
            footer: footer.map(parse_flow_list).unwrap_or_default(),
            has_footer: footer.is_some(),
            header,
            flows: FastMap::default(),
            fields: Vec::with_capacity(32),
            done: false,
        }
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The body layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// One body (or footer) line.
    pub fn line(&mut self, ctx: &mut Ctx<'_>, lineno: u64, line: &[u8]) -> Result<(), ParseError> {
        if line.is_empty() || self.done {
            return Ok(());
        }
        if line.starts_with(b"disable_time_secs=") {
            self.done = true;
            return Ok(());
        }
        self.fields.clear();
        let mut start = 0;
        for (i, &c) in line.iter().enumerate() {
            if c == b',' {
                self.fields.push((start, i));
                start = i + 1;
            }
        }
        self.fields.push((start, line.len()));
        let layout = self.layout;
        if self.fields.len() != layout.fields() {
            return Err(ParseError::expected(lineno, layout.what(), line));
        }
        let fields = &self.fields;
        let f = |i: usize| crate::lines::trim(&line[fields[i].0..fields[i].1]);
        let num = |i: usize| -> Result<u64, ParseError> {
            let v = if layout == Layout::Siftr2Hex {
                hex(f(i))
            } else {
                dec(f(i))
            };
            v.ok_or_else(|| {
                ParseError::expected(
                    lineno,
                    if layout == Layout::Siftr2Hex {
                        "a hex number"
                    } else {
                        "a number"
                    },
                    f(i),
                )
            })
        };
        // The flow's key as written: the flowid, or (stock) the span from laddr to fport.
        let (dir_i, key): (usize, &[u8]) = match layout {
            Layout::Stock => (0, &line[fields[2].0..fields[5].1]),
            Layout::Siftr2Dec => (0, f(2)),
            Layout::Siftr2Hex => (1, f(0)),
        };
        let outbound = match f(dir_i) {
            b"o" => true,
            b"i" => false,
            other => return Err(ParseError::expected(lineno, "direction i or o", other)),
        };
        let t_ns = match layout {
            Layout::Siftr2Hex => num(2)? as i64 * 1_000_000,
            _ => {
                let abs = seconds_ns(f(1))
                    .ok_or_else(|| ParseError::expected(lineno, "a time sec.usec", f(1)))?;
                if abs >= self.header.enable_ns {
                    abs - self.header.enable_ns
                } else {
                    abs
                }
            }
        };
        // (cwnd, ssthresh, srtt, rto, flight, t_flags, seq, ack, data_sz, mss)
        let (cwnd, ssth, srtt, rto, flight, tflags, seq, ack, data, mss_here) = match layout {
            Layout::Stock => (
                num(7)?,
                num(6)?,
                num(15)?,
                num(18)?,
                num(23)?,
                num(17)?,
                None,
                None,
                None,
                Some(num(14)?),
            ),
            Layout::Siftr2Dec => (
                num(3)?,
                num(4)?,
                num(10)?,
                num(11)?,
                num(16)?,
                num(7)?,
                Some(num(18)?),
                Some(num(19)?),
                Some(num(20)?),
                None,
            ),
            Layout::Siftr2Hex => (
                num(3)?,
                num(4)?,
                num(5)?,
                num(11)?,
                num(16)?,
                num(9)?,
                None,
                None,
                Some(num(6)?),
                None,
            ),
        };
        if !self.flows.contains_key(key) {
            let (idx, mss) = match (layout, self.footer.get(key)) {
                (Layout::Stock, _) => {
                    let k = FlowKey {
                        laddr: String::from_utf8_lossy(f(2)).into_owned(),
                        lport: dec(f(3)).unwrap_or(0).min(65535) as u16,
                        faddr: String::from_utf8_lossy(f(4)).into_owned(),
                        fport: dec(f(5)).unwrap_or(0).min(65535) as u16,
                    };
                    let i = ctx.flows.get(&k);
                    ctx.flows.flows[i]
                        .stack
                        .get_or_insert_with(|| "freebsd".into());
                    (i, mss_here.unwrap_or(0) as u32)
                }
                (_, Some(ff)) => {
                    let i = ctx.flows.get(&ff.key);
                    let info = &mut ctx.flows.flows[i];
                    info.stack.get_or_insert_with(|| ff.stack.clone());
                    info.cc.get_or_insert_with(|| ff.cc.clone());
                    (i, ff.mss)
                }
                (_, None) => (
                    ctx.flows
                        .labelled(&format!("siftr2:{}", String::from_utf8_lossy(key))),
                    0,
                ),
            };
            if mss > 0 {
                ctx.flows.flows[idx].mss.get_or_insert(mss);
            }
            // Stock SIFTR has neither sequence numbers nor payload sizes: no interval table.
            let interval_ns = if layout == Layout::Stock {
                0
            } else {
                ctx.interval_ns
            };
            let mut tracker = Tracker::new(idx, i64::from(mss), interval_ns);
            tracker.acked_bytes = seq.is_some();
            self.flows.insert(
                key.to_vec(),
                FlowState {
                    tracker,
                    seq: SeqUnwrap::default(),
                    snd_max: 0,
                    una: -1,
                },
            );
        }
        let st = self.flows.get_mut(key).expect("inserted above");
        let t_ns = t_ns + ctx.offset_ns;
        let mss = st.tracker.mss;
        let has_seq = seq.is_some();
        if outbound {
            if let Some(bytes) = data.filter(|&d| d > 0) {
                let (rel, retx) = match seq {
                    Some(s) => {
                        if st.una < 0 {
                            st.seq.set_base(s as u32);
                        }
                        let rel = st.seq.unwrap(s as u32);
                        let retx = i64::from(rel < st.snd_max);
                        st.snd_max = st.snd_max.max(rel + bytes as i64);
                        (rel, retx)
                    }
                    None => (-1, -1),
                };
                st.tracker.send(ctx.rec, t_ns, rel, bytes as i64, retx);
            }
        } else if let Some(a) = ack {
            if st.una < 0 && st.snd_max == 0 {
                st.seq.set_base(a as u32);
            }
            st.una = st.una.max(st.seq.unwrap(a as u32));
        }
        let ssthresh = ssthresh_bytes(ssth);
        let state = freebsd_state(st.tracker.state(), tflags, cwnd as i64, ssthresh, mss);
        let sample = Sample {
            t_ns,
            cwnd_bytes: cwnd as i64,
            ssthresh_bytes: ssthresh,
            snd_una: if has_seq { st.una.max(0) } else { -1 },
            snd_nxt: if has_seq { st.snd_max } else { -1 },
            flight_bytes: flight as i64,
            srtt_us: srtt as i64,
            rto_us: rto as i64,
            state,
        };
        st.tracker.sample(ctx.rec, sample, has_seq);
        Ok(())
    }

    /// Derived intervals of every flow, closed at their last record.
    pub fn finish(self) -> Vec<(usize, Vec<[i64; 7]>)> {
        let mut v: Vec<_> = self
            .flows
            .into_values()
            .map(|st| (st.tracker.flow as usize, st.tracker.finish()))
            .collect();
        v.sort_by_key(|(f, _)| *f);
        v
    }
}

/// The siftr2 review script's plot file: `dir time cwnd ssthresh th_seq th_ack data_size FLAGS`,
/// whitespace-separated, times in seconds from the start, flags by name (TF_FASTRECOVERY |
/// TF_CONGRECOVERY |). One flow per file, named by the caller.
pub struct PlotParser {
    flow: usize,
    tracker: Tracker,
    seq: SeqUnwrap,
    snd_max: i64,
    una: i64,
    sizes: HashMap<i64, u64>,
}

impl PlotParser {
    /// A parser whose flow is `label`, with `mss` bytes if known (0: estimated from the sends).
    pub fn new(ctx: &mut Ctx<'_>, label: &str, mss: u32) -> Self {
        let flow = ctx.flows.labelled(label);
        ctx.flows.flows[flow]
            .stack
            .get_or_insert_with(|| "freebsd".into());
        if mss > 0 {
            ctx.flows.flows[flow].mss = Some(mss);
        }
        PlotParser {
            flow,
            tracker: Tracker::new(flow, i64::from(mss), ctx.interval_ns),
            seq: SeqUnwrap::default(),
            snd_max: 0,
            una: -1,
            sizes: HashMap::new(),
        }
    }

    /// One line.
    pub fn line(&mut self, ctx: &mut Ctx<'_>, lineno: u64, line: &[u8]) -> Result<(), ParseError> {
        let mut it = line
            .split(|c| c.is_ascii_whitespace())
            .filter(|t| !t.is_empty());
        let Some(dir) = it.next() else { return Ok(()) };
        if dir.starts_with(b"#") {
            return Ok(());
        }
        let outbound = match dir {
            b"o" => true,
            b"i" => false,
            _ => {
                return Err(ParseError::expected(
                    lineno,
                    "direction i or o starting a plot line",
                    line,
                ))
            }
        };
        let mut nums = [0u64; 5];
        let t = it.next().and_then(seconds_ns).ok_or_else(|| {
            ParseError::expected(lineno, "a time in seconds as the 2nd field", line)
        })?;
        for (k, name) in ["cwnd", "ssthresh", "th_seq", "th_ack", "data_size"]
            .iter()
            .enumerate()
        {
            nums[k] = it.next().and_then(dec).ok_or_else(|| {
                ParseError::expected(
                    lineno,
                    &format!("{name} (a number) as field {}", k + 3),
                    line,
                )
            })?;
        }
        let mut tflags = 0;
        for tok in it {
            match tok {
                b"TF_FASTRECOVERY" => tflags |= TF_FASTRECOVERY,
                b"TF_CONGRECOVERY" => tflags |= TF_CONGRECOVERY,
                _ => {}
            }
        }
        let [cwnd, ssth, seq, ack, data] = nums;
        let t_ns = t as i64 + ctx.offset_ns;
        if outbound && data > 0 {
            if self.una < 0 && self.snd_max == 0 {
                self.seq.set_base(seq as u32);
            }
            let rel = self.seq.unwrap(seq as u32);
            let retx = i64::from(rel < self.snd_max);
            self.snd_max = self.snd_max.max(rel + data as i64);
            *self.sizes.entry(data as i64).or_default() += 1;
            self.tracker.send(ctx.rec, t_ns, rel, data as i64, retx);
        } else if !outbound {
            if self.una < 0 && self.snd_max == 0 {
                self.seq.set_base(ack as u32);
            }
            self.una = self.una.max(self.seq.unwrap(ack as u32));
        }
        let ssthresh = ssthresh_bytes(ssth);
        let mss = self.tracker.mss;
        let state = freebsd_state(self.tracker.state(), tflags, cwnd as i64, ssthresh, mss);
        self.tracker.sample(
            ctx.rec,
            Sample {
                t_ns,
                cwnd_bytes: cwnd as i64,
                ssthresh_bytes: ssthresh,
                snd_una: self.una.max(0),
                snd_nxt: self.snd_max,
                flight_bytes: self.snd_max - self.una.max(0),
                srtt_us: -1,
                rto_us: -1,
                state,
            },
            true,
        );
        Ok(())
    }

    /// Derived intervals; the MSS, if unknown, becomes the most common send size.
    pub fn finish(self, ctx: &mut Ctx<'_>) -> Vec<(usize, Vec<[i64; 7]>)> {
        if ctx.flows.flows[self.flow].mss.is_none() {
            let mode = self
                .sizes
                .iter()
                .max_by_key(|(size, n)| (**n, **size))
                .map(|(s, _)| *s);
            if let Some(m) = mode {
                ctx.flows.flows[self.flow].mss = Some(m.clamp(1, i64::from(u32::MAX)) as u32);
            }
        }
        vec![(self.flow, self.tracker.finish())]
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

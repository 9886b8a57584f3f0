//! The body of a SIFTR or SIFTR2 log: one line per packet, split at its commas and read by the
//! log's layout (stock siftr(4), SIFTR2 decimal, SIFTR2 hex) into one record, then applied to
//! its flow as a send (outbound with data), an ACK (inbound) and a state sample.

use std::collections::HashMap;
use std::net::IpAddr;

use super::Col;
use super::{freebsd_state, parse_flow_list, ssthresh_bytes, FooterFlow, Header, Layout};
use crate::ctx::Ctx;
use crate::flows::{FlowKey, Sample, SeqUnwrap, Tracker};
use crate::lines::{trim, FastMap, ParseError};
use crate::number::seconds;

/// A body line's values, whatever the layout wrote (None: the layout has no such field).
#[derive(Default)]
struct Record<'l> {
    /// The flow's key as written: the flowid, or (stock) the span from laddr to fport.
    key: &'l [u8],
    /// Stock SIFTR's addresses and ports: (laddr, lport, faddr, fport).
    addr: Option<(&'l [u8], u64, &'l [u8], u64)>,
    outbound: bool,
    /// Since logging began, ns.
    t_ns: i64,
    cwnd: u64,
    ssthresh: u64,
    srtt: u64,
    rto: u64,
    flight: u64,
    t_flags: u64,
    seq: Option<u64>,
    ack: Option<u64>,
    data: Option<u64>,
    mss: Option<u64>,
}

struct FlowState {
    tracker: Tracker,
    seq: SeqUnwrap,
    snd_max: i64,
    una: i64,
}

impl FlowState {
    /// An outbound line with data: one send (a retransmission when it starts below snd_max,
    /// known only where the layout has sequence numbers).
    fn on_send(&mut self, ctx: &mut Ctx<'_>, t_ns: i64, seq: Option<u64>, bytes: u64) {
        let (rel, retx) = match seq {
            Some(s) => {
                if self.una < 0 {
                    self.seq.set_base(s as u32);
                }
                let rel = self.seq.unwrap(s as u32);
                let retx = i64::from(rel < self.snd_max);
                self.snd_max = self.snd_max.max(rel + bytes as i64);
                (rel, retx)
            }
            None => (-1, -1),
        };
        self.tracker.send(ctx.rec, t_ns, rel, bytes as i64, retx);
    }

    /// An inbound line: the peer's cumulative ACK `a`.
    fn on_ack(&mut self, a: u64) {
        if self.una < 0 && self.snd_max == 0 {
            self.seq.set_base(a as u32);
        }
        self.una = self.una.max(self.seq.unwrap(a as u32));
    }

    /// A line of this flow: its send or ACK, then the state sample every line is.
    fn apply(&mut self, ctx: &mut Ctx<'_>, rec: &Record<'_>) {
        let t_ns = rec.t_ns + ctx.offset_ns;
        let mss = self.tracker.mss;
        let has_seq = rec.seq.is_some();
        if rec.outbound {
            if let Some(bytes) = rec.data.filter(|&d| d > 0) {
                self.on_send(ctx, t_ns, rec.seq, bytes);
            }
        } else if let Some(a) = rec.ack {
            self.on_ack(a);
        }
        let ssthresh = ssthresh_bytes(rec.ssthresh);
        let state = freebsd_state(
            self.tracker.state(),
            rec.t_flags,
            rec.cwnd as i64,
            ssthresh,
            mss,
        );
        let sample = Sample {
            t_ns,
            cwnd_bytes: rec.cwnd as i64,
            ssthresh_bytes: ssthresh,
            snd_una: if has_seq { self.una.max(0) } else { -1 },
            snd_nxt: if has_seq { self.snd_max } else { -1 },
            flight_bytes: rec.flight as i64,
            srtt_us: rec.srtt as i64,
            rto_us: rec.rto as i64,
            state,
        };
        self.tracker.sample(ctx.rec, sample, has_seq);
    }
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
        let rec = self.record(lineno, line)?;
        if !self.flows.contains_key(rec.key) {
            self.new_flow(ctx, &rec);
        }
        let st = self.flows.get_mut(rec.key).expect("inserted above");
        st.apply(ctx, &rec);
        Ok(())
    }

    /// Split `line` at its commas into `self.fields`.
    fn split(&mut self, line: &[u8]) {
        self.fields.clear();
        let mut start = 0;
        for (i, &c) in line.iter().enumerate() {
            if c == b',' {
                self.fields.push((start, i));
                start = i + 1;
            }
        }
        self.fields.push((start, line.len()));
    }

    /// A body line's values, read by the log's layout: every field checked (`check`), then
    /// the ones tcplab uses picked by position.
    fn record<'l>(&mut self, lineno: u64, line: &'l [u8]) -> Result<Record<'l>, ParseError> {
        self.split(line);
        let layout = self.layout;
        if self.fields.len() != layout.fields() {
            return Err(ParseError::expected(lineno, layout.what(), line));
        }
        let fields = &self.fields;
        let f = |i: usize| trim(&line[fields[i].0..fields[i].1]);
        let mut v = [0u64; 27];
        let (outbound, time) = check(lineno, layout, &f, &mut v)?;
        let mut r = Record {
            outbound,
            ..Record::default()
        };
        match layout {
            Layout::Stock => {
                r.key = &line[fields[2].0..fields[5].1];
                r.addr = Some((f(2), v[3], f(4), v[5]));
                (r.cwnd, r.ssthresh, r.srtt, r.rto) = (v[7], v[6], v[15], v[18]);
                (r.flight, r.t_flags, r.mss) = (v[23], v[17], Some(v[14]));
            }
            Layout::Siftr2Dec => {
                r.key = f(2);
                (r.cwnd, r.ssthresh, r.srtt, r.rto) = (v[3], v[4], v[10], v[11]);
                (r.flight, r.t_flags) = (v[16], v[7]);
                (r.seq, r.ack, r.data) = (Some(v[18]), Some(v[19]), Some(v[20]));
            }
            Layout::Siftr2Hex => {
                r.key = f(0);
                (r.cwnd, r.ssthresh, r.srtt, r.rto) = (v[3], v[4], v[5], v[11]);
                (r.flight, r.t_flags, r.data) = (v[16], v[9], Some(v[6]));
            }
        }
        r.t_ns = match layout {
            Layout::Siftr2Hex => v[2] as i64 * 1_000_000,
            _ if time >= self.header.enable_ns => time - self.header.enable_ns,
            _ => time,
        };
        Ok(r)
    }

    /// The state of the flow a line names for the first time: addressed by the line (stock),
    /// by the footer, or by its flowid alone (no footer).
    fn new_flow(&mut self, ctx: &mut Ctx<'_>, rec: &Record<'_>) {
        let layout = self.layout;
        let (idx, mss) = match (rec.addr, self.footer.get(rec.key)) {
            (Some((laddr, lport, faddr, fport)), _) => {
                let k = FlowKey {
                    laddr: String::from_utf8_lossy(laddr).into_owned(),
                    lport: lport as u16,
                    faddr: String::from_utf8_lossy(faddr).into_owned(),
                    fport: fport as u16,
                };
                let i = ctx.flows.get(&k);
                ctx.flows.flows[i]
                    .stack
                    .get_or_insert_with(|| "freebsd".into());
                (i, rec.mss.unwrap_or(0) as u32)
            }
            (None, Some(ff)) => {
                let i = ctx.flows.get(&ff.key);
                let info = &mut ctx.flows.flows[i];
                info.stack.get_or_insert_with(|| ff.stack.clone());
                info.cc.get_or_insert_with(|| ff.cc.clone());
                (i, ff.mss)
            }
            (None, None) => (
                ctx.flows
                    .labelled(&format!("siftr2:{}", String::from_utf8_lossy(rec.key))),
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
        tracker.acked_bytes = rec.seq.is_some();
        self.flows.insert(
            rec.key.to_vec(),
            FlowState {
                tracker,
                seq: SeqUnwrap::default(),
                snd_max: 0,
                una: -1,
            },
        );
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

/// Check every field of a body line (`f(i)`: field i, trimmed) against the layout's columns,
/// numbers into `v`; returns the direction (outbound) and the wall-clock time (ns; 0 where the
/// layout has none). A field that is not what its column says is refused, named by number.
fn check<'l>(
    lineno: u64,
    layout: Layout,
    f: &impl Fn(usize) -> &'l [u8],
    v: &mut [u64; 27],
) -> Result<(bool, i64), ParseError> {
    let (mut outbound, mut time) = (false, 0);
    for (i, col) in layout.columns().iter().enumerate() {
        let s = f(i);
        match col {
            Col::Dir => {
                outbound = match s {
                    b"o" => true,
                    b"i" => false,
                    other => return Err(ParseError::expected(lineno, "direction i or o", other)),
                }
            }
            Col::Time => time = seconds(lineno, "time sec.usec", i + 1, s)?,
            Col::Addr => {
                let ok = std::str::from_utf8(s).is_ok_and(|a| a.parse::<IpAddr>().is_ok());
                if !ok {
                    let what = format!("an IP address (field {})", i + 1);
                    return Err(ParseError::expected(lineno, &what, s));
                }
            }
            Col::Num(field) => v[i] = field.read(lineno, i + 1, s)?,
        }
    }
    Ok((outbound, time))
}

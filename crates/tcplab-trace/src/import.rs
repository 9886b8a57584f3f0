//! An import: one or more logs of one experiment read into one set of records, their flows
//! matched by addresses and ports. Each log is a `Source` that streams in steps, so the caller
//! can drain the records between steps (memory stays bounded whatever the log's size).

use std::fs::File;
use std::io::{BufRead, BufReader, Cursor, Read, Seek};
use std::path::Path;

pub use crate::ctx::{Ctx, Skipped};
use crate::flows::FlowTable;
use crate::iperf3;
use crate::lines::{Lines, ParseError};
use crate::pcap::{self, PcapParser};
use crate::records::Recorder;
use crate::siftr::{self, PlotParser, SiftrParser};
use crate::tcp_probe::ProbeParser;

/// Formats tcplab reads.
pub const FORMATS: &[&str] = &[
    "siftr",
    "siftr2",
    "siftr2-plot",
    "tcp_probe",
    "iperf3-json",
    "iperf3-text",
    "pcap",
];

/// Recognise a log's format from its first bytes (and, for text, its first lines).
pub fn detect(head: &[u8]) -> Option<&'static str> {
    if pcap::is_capture(head) {
        return Some("pcap");
    }
    let text = String::from_utf8_lossy(head);
    let first = text.trim_start();
    if first.starts_with('{') {
        return Some("iperf3-json");
    }
    if first.starts_with("enable_time_secs=") {
        let v = first
            .split(['\t', ' '])
            .find_map(|kv| kv.strip_prefix("siftrver="))?;
        return Some(if v.starts_with('2') {
            "siftr2"
        } else {
            "siftr"
        });
    }
    for line in text.lines().take(50) {
        let l = line.trim();
        if l.contains(": tcp_probe: ")
            || l.contains(": tcp_cong_state_set: ")
            || l.starts_with("# tracer:")
        {
            return Some("tcp_probe");
        }
        if l.starts_with("Connecting to host")
            || l.starts_with("Server listening")
            || l.starts_with("[ ID]")
            || (l.starts_with('[') && l.contains(" local ") && l.contains(" connected to "))
        {
            return Some("iperf3-text");
        }
        let mut w = l.split_whitespace();
        if matches!(w.next(), Some("i" | "o"))
            && w.clone().count() >= 6
            && w.take(6)
                .all(|x| x.chars().all(|c| c.is_ascii_digit() || c == '.'))
        {
            return Some("siftr2-plot");
        }
    }
    None
}

enum Parser {
    Siftr(SiftrParser),
    Plot(PlotParser),
    Probe(ProbeParser),
    IperfText(iperf3::TextParser),
}

/// What a log is read from: a file, or bytes in memory (fuzzing, tests).
pub trait ReadSeek: Read + Seek {}
impl<T: Read + Seek> ReadSeek for T {}

type Reader = BufReader<Box<dyn ReadSeek>>;

fn buffered(f: Box<dyn ReadSeek>) -> Reader {
    BufReader::with_capacity(1 << 16, f)
}

enum Input {
    Lines(Lines<Reader>, Parser),
    Pcap(Box<PcapParser<Reader>>),
    Done,
}

/// One log being read.
pub struct Source {
    input: Input,
    /// Format name (one of FORMATS).
    pub format: &'static str,
    /// Format version where the log states one (SIFTR's siftrver, iperf3's version).
    pub version: String,
    /// Lines (packets, intervals) skipped as malformed, when lenient.
    pub skipped: Skipped,
    /// Records this log produced so far (a lenient import of a log where none parses fails).
    pub records: u64,
    /// Where this log's origin lies on the run's time axis, ns.
    pub offset_ns: i64,
    /// Notes for the report (what the format cannot give).
    pub notes: Vec<String>,
}

/// A log's wall-clock origin (ns since the epoch) where its format records one, read cheaply
/// from its head: SIFTR/SIFTR2 enable time, iperf3 JSON start time, a capture's first packet.
pub fn origin_ns(path: &Path, format: &str) -> Result<Option<i64>, ParseError> {
    let mut f = BufReader::new(File::open(path)?);
    match format {
        "siftr" | "siftr2" => {
            let mut line = Vec::new();
            (&mut f).take(64 * 1024).read_until(b'\n', &mut line)?;
            let h = siftr::parse_header(line.strip_suffix(b"\n").unwrap_or(&line))?;
            Ok(Some(h.enable_ns))
        }
        "iperf3-json" => {
            let doc: iperf3::Report = serde_json::from_reader(f).map_err(json_error)?;
            Ok(iperf3::json_origin_ns(&doc))
        }
        "pcap" => {
            let mut p = PcapParser::new(f)?;
            let (mut rec, mut flows) = (Recorder::default(), FlowTable::default());
            let mut ctx = Ctx {
                rec: &mut rec,
                flows: &mut flows,
                interval_ns: 0,
                offset_ns: 0,
            };
            p.step(&mut ctx, 1, &mut Skipped::new(true))?;
            Ok(p.origin())
        }
        _ => Ok(None),
    }
}

fn json_error(e: serde_json::Error) -> ParseError {
    ParseError::at(e.line() as u64, format!("column {}: {e}", e.column()))
}

impl Source {
    /// Open `path` as `format`. `label` names the flow of a log without addresses (siftr2-plot);
    /// `mss` (0: unknown) turns tcp_probe's packets into bytes and fixes a plot file's MSS.
    /// An iperf3 JSON document is read whole here (it is small: one entry per interval).
    pub fn open(
        ctx: &mut Ctx<'_>,
        path: &Path,
        format: &str,
        label: &str,
        mss: u32,
        lenient: bool,
    ) -> Result<Source, ParseError> {
        Source::from_reader(
            ctx,
            Box::new(File::open(path)?),
            format,
            label,
            mss,
            lenient,
        )
    }

    /// As `open`, from any seekable reader.
    pub fn from_reader(
        ctx: &mut Ctx<'_>,
        file: Box<dyn ReadSeek>,
        format: &str,
        label: &str,
        mss: u32,
        lenient: bool,
    ) -> Result<Source, ParseError> {
        let format: &'static str =
            FORMATS
                .iter()
                .find(|f| **f == format)
                .copied()
                .ok_or_else(|| {
                    ParseError::at(
                        0,
                        format!("unknown format {format:?}; known: {}", FORMATS.join(", ")),
                    )
                })?;
        let mut src = Source {
            input: Input::Done,
            format,
            version: String::new(),
            skipped: Skipped::new(lenient),
            records: 0,
            offset_ns: ctx.offset_ns,
            notes: Vec::new(),
        };
        src.input = src.input(ctx, file, label, mss)?;
        Ok(src)
    }

    /// The reader of this source's format over `file`.
    fn input(
        &mut self,
        ctx: &mut Ctx<'_>,
        file: Box<dyn ReadSeek>,
        label: &str,
        mss: u32,
    ) -> Result<Input, ParseError> {
        Ok(match self.format {
            "siftr" | "siftr2" => self.open_siftr(file)?,
            "siftr2-plot" => Input::Lines(
                Lines::new(buffered(file)),
                Parser::Plot(PlotParser::new(ctx, label, mss)),
            ),
            "tcp_probe" => {
                self.notes.push("tcp_probe gives cwnd and ssthresh in packets: bytes assume the MSS given (default 1448)".into());
                Input::Lines(
                    Lines::new(buffered(file)),
                    Parser::Probe(ProbeParser::new(mss)),
                )
            }
            "iperf3-text" => Input::Lines(
                Lines::new(buffered(file)),
                Parser::IperfText(iperf3::TextParser::default()),
            ),
            "iperf3-json" => {
                let doc: iperf3::Report =
                    serde_json::from_reader(BufReader::new(file)).map_err(json_error)?;
                self.version = doc.start.version.clone();
                let before = ctx.rec.intervals.len();
                iperf3::load_json(ctx, &doc, &mut self.skipped)?;
                self.records = (ctx.rec.intervals.len() - before) as u64;
                Input::Done
            }
            "pcap" => {
                self.notes.push(
                    "captures carry no cwnd or ssthresh: no recovery episodes from a capture alone"
                        .into(),
                );
                Input::Pcap(Box::new(PcapParser::new(buffered(file))?))
            }
            _ => unreachable!("checked against FORMATS"),
        })
    }

    /// A SIFTR or SIFTR2 log: its header line read, its footer (SIFTR2) read from the end.
    fn open_siftr(&mut self, mut file: Box<dyn ReadSeek>) -> Result<Input, ParseError> {
        let footer = if self.format == "siftr2" {
            siftr::read_footer(&mut file)?
        } else {
            None
        };
        let mut lines = Lines::new(buffered(file));
        let first = lines
            .next_line()?
            .ok_or_else(|| ParseError::at(1, "empty file: expected a SIFTR header line"))?
            .to_vec();
        let header = siftr::parse_header(&first)?;
        let p = SiftrParser::new(header, footer.as_deref());
        self.version = p.header().version.clone();
        if self.format == "siftr2" && !p.has_footer {
            let msg = "no footer (disable_time_secs=... flow_list=...): the log was cut short, so flows have no addresses, cc or MSS";
            if !self.skipped.lenient {
                return Err(ParseError::at(
                    0,
                    format!("{msg} (use --lenient to import it anyway)"),
                ));
            }
            self.notes.push(msg.to_string());
        }
        match p.layout() {
            siftr::Layout::Siftr2Hex => self.notes.push("SIFTR2 >= 2.3 logs carry no sequence numbers: retransmissions are unknown and the derived intervals count bytes sent".into()),
            siftr::Layout::Stock => self.notes.push("stock SIFTR logs carry no payload sizes: no sends table, and intervals need an iperf3 log".into()),
            siftr::Layout::Siftr2Dec => {}
        }
        Ok(Input::Lines(lines, Parser::Siftr(p)))
    }

    /// Read up to `budget` lines (packets); Ok(false) once the log is exhausted. A lenient
    /// read of a log that ends without one record parsed is an error: noise is not a run.
    pub fn step(&mut self, ctx: &mut Ctx<'_>, budget: usize) -> Result<bool, ParseError> {
        ctx.offset_ns = self.offset_ns;
        let before = rows(ctx);
        let more = match &mut self.input {
            Input::Done => false,
            Input::Pcap(p) => p.step(ctx, budget, &mut self.skipped)?,
            Input::Lines(lines, parser) => {
                read_lines(ctx, lines, parser, budget, &mut self.skipped)?
            }
        };
        self.records += (rows(ctx) - before) as u64;
        if !more && self.records == 0 && self.skipped.count > 0 {
            return Err(ParseError::at(
                0,
                format!(
                    "no record parsed as {}: {} malformed line(s) skipped and none read (the first: {})",
                    self.format,
                    self.skipped.count,
                    self.skipped.first.first().map_or("", String::as_str),
                ),
            ));
        }
        Ok(more)
    }

    /// Close the log: its derived intervals, per flow.
    pub fn finish(self, ctx: &mut Ctx<'_>) -> Vec<(usize, Vec<[i64; 7]>)> {
        match self.input {
            Input::Done => Vec::new(),
            Input::Pcap(p) => p.finish(ctx),
            Input::Lines(_, Parser::Siftr(p)) => p.finish(),
            Input::Lines(_, Parser::Plot(p)) => p.finish(ctx),
            Input::Lines(_, Parser::Probe(p)) => p.finish(),
            Input::Lines(_, Parser::IperfText(_)) => Vec::new(),
        }
    }

    /// Bytes read so far (for progress).
    pub fn position(&self) -> u64 {
        match &self.input {
            Input::Lines(l, _) => l.bytes,
            Input::Pcap(p) => p.offset(),
            Input::Done => 0,
        }
    }
}

/// Rows waiting in the record tables.
fn rows(ctx: &mut Ctx<'_>) -> usize {
    ctx.rec.tables_mut().iter().map(|t| t.len()).sum()
}

/// Up to `budget` lines through `parser`; Ok(false) at the end of the input.
fn read_lines(
    ctx: &mut Ctx<'_>,
    lines: &mut Lines<Reader>,
    parser: &mut Parser,
    budget: usize,
    skipped: &mut Skipped,
) -> Result<bool, ParseError> {
    for _ in 0..budget {
        let lineno = lines.line + 1;
        let line = match lines.next_line() {
            Ok(Some(l)) => l,
            Ok(None) => return Ok(false),
            Err(e) if e.line > 0 => {
                skipped.skip(e)?;
                continue;
            }
            Err(e) => return Err(e),
        };
        let r = match parser {
            Parser::Siftr(p) => p.line(ctx, lineno, line),
            Parser::Plot(p) => p.line(ctx, lineno, line),
            Parser::Probe(p) => p.line(ctx, lineno, line),
            Parser::IperfText(p) => p.line(ctx, lineno, line),
        };
        if let Err(e) = r {
            skipped.skip(e)?;
        }
    }
    Ok(true)
}

/// All logs of one import and the records they produced.
#[derive(Default)]
pub struct Import {
    /// Records waiting to be drained.
    pub rec: Recorder,
    /// Flows matched across logs.
    pub flows: FlowTable,
    /// Derived interval length, ns.
    pub interval_ns: i64,
    derived: Vec<(usize, Vec<[i64; 7]>)>,
}

impl Import {
    /// An import deriving intervals of `interval_ns` from logs without iperf3's own.
    pub fn new(interval_ns: i64) -> Self {
        Import {
            interval_ns,
            ..Default::default()
        }
    }

    /// Context for a source with `offset_ns`.
    pub fn ctx(&mut self, offset_ns: i64) -> Ctx<'_> {
        Ctx {
            rec: &mut self.rec,
            flows: &mut self.flows,
            interval_ns: self.interval_ns,
            offset_ns,
        }
    }

    /// Keep a finished source's derived intervals (the first source to derive a flow's wins).
    pub fn keep_derived(&mut self, rows: Vec<(usize, Vec<[i64; 7]>)>) {
        for (flow, r) in rows {
            if !r.is_empty() && !self.derived.iter().any(|(f, _)| *f == flow) {
                self.derived.push((flow, r));
            }
        }
    }

    /// Emit derived intervals for flows no iperf3 log covered.
    pub fn finish(&mut self) {
        self.derived.sort_by_key(|(f, _)| *f);
        for (flow, rows) in std::mem::take(&mut self.derived) {
            if self.flows.flows[flow].has_iperf_intervals {
                continue;
            }
            for r in rows {
                self.rec.intervals.push(&r);
            }
        }
    }
}

/// Import `data` as `format` from start to end in one Import, calling `each_step` after every
/// step of the source (to drain or inspect its tables); returns the Import, finished, and what
/// the source skipped (lenient) — what fuzzing, the parse benchmark and the input tests run.
pub fn import_bytes(
    format: &str,
    data: &[u8],
    lenient: bool,
    mut each_step: impl FnMut(&mut Import),
) -> Result<(Import, Skipped), ParseError> {
    let mut imp = Import::new(1_000_000_000);
    let mut ctx = imp.ctx(0);
    let mut src = Source::from_reader(
        &mut ctx,
        Box::new(Cursor::new(data.to_vec())),
        format,
        "log",
        0,
        lenient,
    )?;
    loop {
        let mut ctx = imp.ctx(0);
        let more = src.step(&mut ctx, 10_000)?;
        each_step(&mut imp);
        if !more {
            break;
        }
    }
    let skipped = src.skipped.clone();
    let mut ctx = imp.ctx(0);
    let rows = src.finish(&mut ctx);
    imp.keep_derived(rows);
    imp.finish();
    Ok((imp, skipped))
}

/// Parse `data` as `format` from start to end, draining records as they come (what fuzzing and
/// the parse benchmark run). Returns the number of records produced.
pub fn parse_bytes(format: &str, data: &[u8], lenient: bool) -> Result<usize, ParseError> {
    let mut records = 0;
    let (imp, _) = import_bytes(format, data, lenient, |imp| {
        for t in imp.rec.tables_mut() {
            records += t.len();
            t.take();
        }
    })?;
    Ok(records + imp.rec.intervals.len())
}

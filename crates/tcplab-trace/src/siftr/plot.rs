//! The siftr2 review script's plot file (github.com/ccfbsd/review_siftr2_log): one whitespace-
//! separated line per packet of one flow.

use std::collections::HashMap;

use super::{freebsd_state, ssthresh_bytes, TF_CONGRECOVERY, TF_FASTRECOVERY};
use crate::ctx::Ctx;
use crate::flows::{Sample, SeqUnwrap, Tracker};
use crate::lines::ParseError;
use crate::number::{seconds, u32_dec, Field};

/// The numbers after the time, in order (the review script prints siftr2's values).
const PLOT_FIELDS: [Field; 5] = [
    u32_dec("cwnd"),
    u32_dec("ssthresh"),
    u32_dec("th_seq"),
    u32_dec("th_ack"),
    u32_dec("data_size"),
];

/// The siftr2 review script's plot file: `dir time cwnd ssthresh th_seq th_ack data_size FLAGS`,
/// whitespace-separated, times in seconds from the start, flags by name (TF_FASTRECOVERY |
/// TF_CONGRECOVERY |). One flow per file, named by the caller, made at the first line that
/// parses (a file where none does makes no flow).
pub struct PlotParser {
    label: String,
    /// MSS given by the caller (0: estimated from the sends).
    mss: u32,
    interval_ns: i64,
    tracker: Option<Tracker>,
    seq: SeqUnwrap,
    snd_max: i64,
    una: i64,
    sizes: HashMap<i64, u64>,
}

/// One plot line's values.
struct PlotLine {
    outbound: bool,
    t_ns: i64,
    /// cwnd, ssthresh, th_seq, th_ack, data_size.
    nums: [u64; 5],
    t_flags: u64,
}

/// One plot line read; None for a blank line or a comment.
fn parse(lineno: u64, line: &[u8]) -> Result<Option<PlotLine>, ParseError> {
    let mut it = line
        .split(|c| c.is_ascii_whitespace())
        .filter(|t| !t.is_empty());
    let Some(dir) = it.next() else {
        return Ok(None);
    };
    if dir.starts_with(b"#") {
        return Ok(None);
    }
    let outbound = match dir {
        b"o" => true,
        b"i" => false,
        _ => {
            let what = "direction i or o starting a plot line";
            return Err(ParseError::expected(lineno, what, line));
        }
    };
    let t_ns = seconds(lineno, "time", 2, it.next().unwrap_or(b""))?;
    let mut nums = [0u64; 5];
    for (k, field) in PLOT_FIELDS.iter().enumerate() {
        nums[k] = field.read(lineno, k + 3, it.next().unwrap_or(b""))?;
    }
    let mut t_flags = 0;
    for tok in it {
        match tok {
            b"TF_FASTRECOVERY" => t_flags |= TF_FASTRECOVERY,
            b"TF_CONGRECOVERY" => t_flags |= TF_CONGRECOVERY,
            _ => {}
        }
    }
    Ok(Some(PlotLine {
        outbound,
        t_ns,
        nums,
        t_flags,
    }))
}

impl PlotParser {
    /// A parser whose flow is `label`, with `mss` bytes if known (0: estimated from the sends).
    pub fn new(ctx: &mut Ctx<'_>, label: &str, mss: u32) -> Self {
        PlotParser {
            label: label.to_string(),
            mss,
            interval_ns: ctx.interval_ns,
            tracker: None,
            seq: SeqUnwrap::default(),
            snd_max: 0,
            una: -1,
            sizes: HashMap::new(),
        }
    }

    /// The file's flow, made on the first line that parses.
    fn flow(&mut self, ctx: &mut Ctx<'_>) -> &mut Tracker {
        let (label, mss, interval_ns) = (&self.label, self.mss, self.interval_ns);
        self.tracker.get_or_insert_with(|| {
            let flow = ctx.flows.labelled(label);
            let info = &mut ctx.flows.flows[flow];
            info.stack.get_or_insert_with(|| "freebsd".into());
            if mss > 0 {
                info.mss = Some(mss);
            }
            Tracker::new(flow, i64::from(mss), interval_ns)
        })
    }

    /// One line.
    pub fn line(&mut self, ctx: &mut Ctx<'_>, lineno: u64, line: &[u8]) -> Result<(), ParseError> {
        let Some(PlotLine {
            outbound,
            t_ns,
            nums: [cwnd, ssth, seq, ack, data],
            t_flags,
        }) = parse(lineno, line)?
        else {
            return Ok(());
        };
        self.flow(ctx);
        let t_ns = t_ns + ctx.offset_ns;
        if outbound && data > 0 {
            self.on_send(ctx, t_ns, seq, data);
        } else if !outbound {
            if self.una < 0 && self.snd_max == 0 {
                self.seq.set_base(ack as u32);
            }
            self.una = self.una.max(self.seq.unwrap(ack as u32));
        }
        let ssthresh = ssthresh_bytes(ssth);
        let (una, snd_max) = (self.una.max(0), self.snd_max);
        let tracker = self.flow(ctx);
        let state = freebsd_state(tracker.state(), t_flags, cwnd as i64, ssthresh, tracker.mss);
        tracker.sample(
            ctx.rec,
            Sample {
                t_ns,
                cwnd_bytes: cwnd as i64,
                ssthresh_bytes: ssthresh,
                snd_una: una,
                snd_nxt: snd_max,
                flight_bytes: snd_max - una,
                srtt_us: -1,
                rto_us: -1,
                state,
            },
            true,
        );
        Ok(())
    }

    /// An outbound line with `data` bytes from `seq`: one send.
    fn on_send(&mut self, ctx: &mut Ctx<'_>, t_ns: i64, seq: u64, data: u64) {
        if self.una < 0 && self.snd_max == 0 {
            self.seq.set_base(seq as u32);
        }
        let rel = self.seq.unwrap(seq as u32);
        let retx = i64::from(rel < self.snd_max);
        self.snd_max = self.snd_max.max(rel + data as i64);
        *self.sizes.entry(data as i64).or_default() += 1;
        self.flow(ctx).send(ctx.rec, t_ns, rel, data as i64, retx);
    }

    /// Derived intervals; the MSS, if unknown, becomes the most common send size.
    pub fn finish(self, ctx: &mut Ctx<'_>) -> Vec<(usize, Vec<[i64; 7]>)> {
        let Some(tracker) = self.tracker else {
            return Vec::new();
        };
        let flow = tracker.flow as usize;
        if ctx.flows.flows[flow].mss.is_none() {
            let mode = self
                .sizes
                .iter()
                .max_by_key(|(size, n)| (**n, **size))
                .map(|(s, _)| *s);
            if let Some(m) = mode {
                ctx.flows.flows[flow].mss = Some(m.clamp(1, i64::from(u32::MAX)) as u32);
            }
        }
        vec![(flow, tracker.finish())]
    }
}

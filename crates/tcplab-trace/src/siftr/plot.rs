//! The siftr2 review script's plot file (github.com/ccfbsd/review_siftr2_log): one whitespace-
//! separated line per packet of one flow.

use std::collections::HashMap;

use super::{freebsd_state, ssthresh_bytes, TF_CONGRECOVERY, TF_FASTRECOVERY};
use crate::ctx::Ctx;
use crate::flows::{Sample, SeqUnwrap, Tracker};
use crate::lines::{dec, seconds_ns, ParseError};

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

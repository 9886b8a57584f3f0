//! Per-direction TCP state of a capture: the sends (sequence, payload size, retransmission),
//! the acknowledged bytes, bytes in flight estimated from the sender's side (snd_max - snd_una -
//! SACKed), and RTT samples by Karn's rule (RFC 6298 §3: only segments never retransmitted),
//! smoothed as RFC 6298 §2 does.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

use super::frame::{tcp_options, Opts, Seg};
use crate::ctx::Ctx;
use crate::flows::{FlowKey, Sample, SeqUnwrap, Tracker, OPEN};
use crate::lines::FastMap;

/// Segments remembered per flow for RTT samples (beyond it the oldest are forgotten).
const MAX_OUTSTANDING: usize = 1 << 20;

/// One direction of a connection: (src, sport, dst, dport), raw so a packet allocates nothing.
type DirKey = (IpAddr, u16, IpAddr, u16);

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

    /// A SYN from this direction: its ISN, MSS, timestamps and window-scale options.
    fn on_syn(&mut self, seg: &Seg<'_>, opts: &Opts) {
        self.seq = SeqUnwrap::default();
        self.seq.set_base(seg.seq.wrapping_add(1));
        self.started = true;
        self.mss_opt = opts.mss.or(self.mss_opt);
        self.ts |= opts.ts.is_some();
        self.wscale = opts.wscale;
        self.syn_seen = true;
    }

    /// A segment carrying data from this direction: one send.
    fn on_data(&mut self, ctx: &mut Ctx<'_>, t_ns: i64, seg: &Seg<'_>) {
        if !self.started {
            self.seq.set_base(seg.seq);
            self.started = true;
        }
        let rel = self.seq.unwrap(seg.seq);
        let end = rel + seg.payload;
        let retx = rel < self.snd_max;
        if self.tracker.is_none() {
            let i = ctx.flows.get(&FlowKey {
                laddr: seg.src.to_string(),
                lport: seg.sport,
                faddr: seg.dst.to_string(),
                fport: seg.dport,
            });
            let mut tr = Tracker::new(i, 0, ctx.interval_ns);
            tr.acked_bytes = true;
            self.tracker = Some(tr);
        }
        if retx {
            for o in self
                .outstanding
                .iter_mut()
                .filter(|o| o.0 < end && o.1 > rel)
            {
                o.3 = true;
            }
        } else if self.outstanding.len() < MAX_OUTSTANDING {
            self.outstanding.push_back((rel, end, t_ns, false));
        }
        self.snd_max = self.snd_max.max(end);
        *self.sizes.entry(seg.payload).or_default() += 1;
        let tr = self.tracker.as_mut().expect("set above");
        tr.send(ctx.rec, t_ns, rel, seg.payload, i64::from(retx));
    }

    /// The peer's cumulative ACK `a` (relative): new data acknowledged, and an RTT sample from
    /// the newest segment it covers when that was never retransmitted (Karn).
    fn advance_una(&mut self, t_ns: i64, a: i64) {
        if a <= self.una || a > self.snd_max {
            return;
        }
        let mut newest: Option<(i64, bool)> = None;
        while self.outstanding.front().is_some_and(|o| o.1 <= a) {
            let o = self.outstanding.pop_front().expect("checked");
            newest = Some((o.2, o.3));
        }
        if let Some((sent, false)) = newest {
            let sample_us = (t_ns - sent) / 1000;
            self.srtt_us = if self.srtt_us < 0 {
                sample_us
            } else {
                (7 * self.srtt_us + sample_us) / 8
            };
        }
        self.una = a;
    }

    /// A segment from the peer acknowledging this direction's data (with its SACK blocks and
    /// the window it advertises, in bytes): the ack record and a state sample.
    fn on_ack(&mut self, ctx: &mut Ctx<'_>, t_ns: i64, seg: &Seg<'_>, opts: &Opts, rwnd: i64) {
        let a = self.seq.unwrap(seg.ack);
        self.advance_una(t_ns, a);
        let mut sacked = 0;
        for &(l, rgt) in &opts.sack[..opts.nsack] {
            let (l, rgt) = (self.seq.unwrap(l), self.seq.unwrap(rgt));
            if rgt > l && l >= self.una {
                sacked += rgt.min(self.snd_max) - l;
            }
        }
        self.sacked = sacked;
        let mut blocks = [(-1i64, -1i64); 4];
        for (b, &(l, rgt)) in blocks.iter_mut().zip(&opts.sack[..opts.nsack]) {
            *b = (self.seq.unwrap(l), self.seq.unwrap(rgt));
        }
        let ack_rel = self.seq.unwrap(seg.ack);
        let (una, snd_max, srtt) = (self.una, self.snd_max, self.srtt_us);
        let tr = self.tracker.as_mut().expect("checked by the caller");
        tr.ack(ctx.rec, t_ns, ack_rel, rwnd, &blocks[..opts.nsack]);
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

    /// The MSS: from the SYNs (minus 12 bytes of timestamps when negotiated), else the most
    /// common payload size.
    fn mss(&self) -> u32 {
        match self.mss_opt {
            Some(m) => m.saturating_sub(if self.ts { 12 } else { 0 }),
            None => self
                .sizes
                .iter()
                .max_by_key(|(s, n)| (**n, **s))
                .map_or(0, |(s, _)| (*s).clamp(0, i64::from(u32::MAX)) as u32),
        }
    }
}

/// Both directions of every connection in a capture.
#[derive(Default)]
pub(super) struct Dirs {
    dirs: FastMap<DirKey, Dir>,
}

impl Dirs {
    /// Whether the direction `key` has shown its SYN.
    fn syn_seen(&self, key: &DirKey) -> bool {
        self.dirs.get(key).is_some_and(|d| d.syn_seen)
    }

    /// The window a packet from `fwd` advertises, in bytes: scaled only when both SYNs carried
    /// the option (RFC 7323 §2.2), never in a SYN; -1 when the capture missed a SYN.
    fn rwnd_bytes(&self, seg: &Seg<'_>, fwd: &DirKey, rev: &DirKey) -> i64 {
        match self.dirs.get(rev) {
            _ if seg.syn() => i64::from(seg.window),
            Some(r) if r.syn_seen && self.syn_seen(fwd) => {
                let shift = match (self.dirs.get(fwd).and_then(|d| d.wscale), r.wscale) {
                    (Some(s), Some(_)) => s,
                    _ => 0,
                };
                i64::from(seg.window) << shift
            }
            _ => -1,
        }
    }

    /// One TCP segment at `t_ns`: its SYN options, its data (a send of its direction) and its
    /// ACK (an ack of the reverse direction's data).
    pub(super) fn segment(&mut self, ctx: &mut Ctx<'_>, t_ns: i64, seg: &Seg<'_>) {
        let fwd = (seg.src, seg.sport, seg.dst, seg.dport);
        let rev = (seg.dst, seg.dport, seg.src, seg.sport);
        let opts = tcp_options(seg.options);
        let d = self.dirs.entry(fwd).or_insert_with(Dir::new);
        if seg.syn() {
            d.on_syn(seg, &opts);
        }
        let rwnd = self.rwnd_bytes(seg, &fwd, &rev);
        if seg.payload > 0 {
            let d = self.dirs.get_mut(&fwd).expect("inserted above");
            d.on_data(ctx, t_ns, seg);
        }
        if !seg.ack_flag() {
            return;
        }
        let Some(r) = self.dirs.get_mut(&rev) else {
            return;
        };
        if seg.syn() {
            r.mss_opt = match (r.mss_opt, opts.mss) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        if r.started && r.tracker.is_some() {
            r.on_ack(ctx, t_ns, seg, &opts, rwnd);
        }
    }

    /// Derived intervals per flow, and each flow's MSS set where the capture shows it.
    pub(super) fn finish(self, ctx: &mut Ctx<'_>) -> Vec<(usize, Vec<[i64; 7]>)> {
        let mut v = Vec::new();
        for d in self.dirs.into_values() {
            let mss = d.mss();
            let Some(tr) = d.tracker else { continue };
            let flow = tr.flow as usize;
            if mss > 0 {
                ctx.flows.flows[flow].mss.get_or_insert(mss);
            }
            v.push((flow, tr.finish()));
        }
        v.sort_by_key(|(f, _)| *f);
        v
    }
}

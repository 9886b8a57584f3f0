//! Link impairments with Linux netem's semantics, one implementation for both backends: the
//! simulator's ports (crates/tcplab-sim) and the link emulator (crates/tcplab-linkem) make the
//! same sequence of decisions for the same seed, packet by packet.
//!
//! [`Netem`] is sch_netem.c netem_enqueue()'s decision part: duplication, loss (random,
//! Gilbert-Elliott, 4-state), corruption, reordering with a gap, and the delay drawn by
//! tabledist() from a distribution, each with netem's correlation, in netem's order of draws
//! from the kernel's prandom generator. What happens to a packet in time is the caller's, with
//! [`DelayLine`] (netem's tfifo: packets leave in order of their time to send). [`Schedule`]
//! changes a link's rate, delay or loss at given times; [`trace::TraceServer`] replays a mahimahi
//! trace as the link's capacity.

pub mod dist;
pub mod loss;
pub mod prng;
pub mod schedule;
pub mod trace;

pub use dist::Distribution;
pub use loss::LossConfig;
pub use schedule::{Schedule, Step};

use loss::{prob_u32, Loss};
use prng::{Correlated, Prandom};
use serde::Deserialize;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Time, ns.
pub type Ns = u64;

fn yes() -> bool {
    true
}

/// One link direction's impairments, in netem's terms (probabilities in [0, 1]). The delay
/// itself (netem's `delay TIME`) is the link's, passed to [`Netem::decide`].
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NetemConfig {
    /// `delay TIME JITTER`: the spread of the delay, ns.
    #[serde(default)]
    pub jitter_ns: u64,
    /// `delay TIME JITTER CORR`.
    #[serde(default)]
    pub delay_corr: f64,
    /// `distribution NAME`.
    #[serde(default)]
    pub distribution: Distribution,
    /// Whether jitter reorders packets (netem's tfifo, its default) or each packet leaves no
    /// earlier than the one before (as netem with `rate`, whose times count from the last
    /// packet's).
    #[serde(default = "yes")]
    pub jitter_reorders: bool,
    /// `reorder P [CORR]`: the share of packets sent at once (ahead of the delayed ones).
    #[serde(default)]
    pub reorder: f64,
    /// The reorder draw's correlation.
    #[serde(default)]
    pub reorder_corr: f64,
    /// `gap N`: only every Nth packet may be reordered (tc's default 1 when `reorder` is given).
    #[serde(default)]
    pub gap: u32,
    /// `duplicate P [CORR]`.
    #[serde(default)]
    pub duplicate: f64,
    /// The duplicate draw's correlation.
    #[serde(default)]
    pub duplicate_corr: f64,
    /// `corrupt P [CORR]`: a bit flipped; the receiver discards the packet.
    #[serde(default)]
    pub corrupt: f64,
    /// The corrupt draw's correlation.
    #[serde(default)]
    pub corrupt_corr: f64,
    /// `loss ...`: random, gemodel or state.
    #[serde(default)]
    pub loss: Option<LossConfig>,
}

/// Everything a link direction adds to a plain link, as both backends read it (JSON from the
/// resolved spec): netem's impairments with their seed, changes over time, a trace to replay.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LinkImpair {
    /// netem's impairments, if any.
    #[serde(default)]
    pub netem: Option<NetemConfig>,
    /// netem's `seed`: the same in both backends for the same run and direction.
    #[serde(default)]
    pub seed: u64,
    /// Changes of rate, delay or loss over time.
    #[serde(default)]
    pub schedule: Vec<Step>,
    /// A mahimahi trace's timestamps, ms ([`trace::parse`]), replayed as the link's capacity.
    #[serde(default)]
    pub trace_ms: Option<Vec<u64>>,
}

/// What netem does with one copy of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fate {
    /// Delay from the time it is handed on (the link's delay plus the jitter drawn, at least 0).
    pub delay_ns: Ns,
    /// Sent at once, ahead of the delayed packets (netem's reorder path: delay 0).
    pub reordered: bool,
    /// A bit flipped: which one (bit index into the IP header, < 160).
    pub corrupt_bit: Option<u32>,
}

/// netem's verdict on an arriving packet: the copies it sends, in the order netem enqueues them
/// (a duplicate first: netem_enqueue() re-enqueues the clone at the root before the original).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Decision {
    /// Up to two copies; none if the packet was lost.
    pub copies: [Option<Fate>; 2],
}

impl Decision {
    /// The copies sent.
    pub fn sent(&self) -> impl Iterator<Item = Fate> + '_ {
        self.copies.iter().flatten().copied()
    }
}

/// netem's state for one link direction.
#[derive(Clone, Debug)]
pub struct Netem {
    prng: Prandom,
    /// Draws the kernel takes from its global generator (corruption's bit, init_crandom's
    /// `last`), kept off the main stream.
    side: Prandom,
    table: &'static [i16],
    jitter_ns: i64,
    duplicate: u32,
    dup_cor: Correlated,
    loss: Loss,
    corrupt: u32,
    corrupt_cor: Correlated,
    reorder: u32,
    reorder_cor: Correlated,
    gap: u32,
    counter: u32,
    delay_cor: Correlated,
}

impl Netem {
    /// netem_change() for `c`, its generator seeded with `seed` (netem's `seed`).
    pub fn new(c: &NetemConfig, seed: u64) -> Netem {
        let mut side = Prandom::new(seed ^ 0x5EED_0F0F_1234_5678);
        let mut cor = |p: f64| Correlated::new(prob_u32(p), side.next_u32());
        let (dup_cor, corrupt_cor) = (cor(c.duplicate_corr), cor(c.corrupt_corr));
        let (reorder_cor, delay_cor) = (cor(c.reorder_corr), cor(c.delay_corr));
        let loss_last = side.next_u32();
        // q_netem.c: reordering without a gap gets gap 1; netem_change(): a gap without a
        // reorder probability reorders every gap-th packet (`q->reorder = ~0`).
        let gap = if c.reorder > 0.0 { c.gap.max(1) } else { c.gap };
        let reorder = if c.reorder > 0.0 {
            prob_u32(c.reorder)
        } else if gap > 0 {
            u32::MAX
        } else {
            0
        };
        Netem {
            prng: Prandom::new(seed),
            side,
            table: dist::table(c.distribution),
            jitter_ns: c.jitter_ns.min(i32::MAX as u64) as i64,
            duplicate: prob_u32(c.duplicate),
            dup_cor,
            loss: Loss::new(c.loss.as_ref(), loss_last),
            corrupt: prob_u32(c.corrupt),
            corrupt_cor,
            reorder,
            reorder_cor,
            gap,
            counter: 0,
            delay_cor,
        }
    }

    /// netem_enqueue()'s decisions for one arriving packet on a link of delay `latency_ns`.
    pub fn decide(&mut self, latency_ns: Ns) -> Decision {
        // "Random duplication": `q->duplicate >= get_crandom(&q->dup_cor, &q->prng)`.
        let mut count = 1;
        if self.duplicate != 0 && self.duplicate >= self.dup_cor.draw(&mut self.prng) {
            count += 1;
        }
        if self.loss.event(&mut self.prng) {
            count -= 1;
        }
        if count == 0 {
            return Decision::default();
        }
        let corrupt_bit = self.corrupt_draw();
        let mut d = Decision::default();
        if count > 1 {
            // The clone goes through netem_enqueue() again with duplication off, before the
            // original is queued.
            let dup = std::mem::replace(&mut self.duplicate, 0);
            d.copies[0] = self.decide(latency_ns).copies[1];
            self.duplicate = dup;
        }
        d.copies[1] = Some(self.place(latency_ns, corrupt_bit));
        d
    }

    /// "Randomized packet corruption": whether, and which bit (skb->data[rand % headlen] ^=
    /// 1 << (rand % 8); here within the IP header, whose checksum every receiver checks).
    fn corrupt_draw(&mut self) -> Option<u32> {
        (self.corrupt != 0 && self.corrupt >= self.corrupt_cor.draw(&mut self.prng))
            .then(|| self.side.next_u32() % 160)
    }

    /// The reorder test and the delay: `gap == 0 || counter < gap - 1 || reorder < crandom`
    /// takes the delayed path (counter + 1), else the packet goes to the head (counter = 0).
    fn place(&mut self, latency_ns: Ns, corrupt_bit: Option<u32>) -> Fate {
        let delayed = self.gap == 0
            || self.counter < self.gap - 1
            || self.reorder < self.reorder_cor.draw(&mut self.prng);
        if !delayed {
            self.counter = 0;
            return Fate {
                delay_ns: 0,
                reordered: true,
                corrupt_bit,
            };
        }
        let mu = latency_ns.min(i64::MAX as u64) as i64;
        let delay = dist::tabledist(
            mu,
            self.jitter_ns,
            &mut self.delay_cor,
            &mut self.prng,
            self.table,
        );
        self.counter += 1;
        Fate {
            delay_ns: delay.max(0) as Ns,
            reordered: false,
            corrupt_bit,
        }
    }
}

/// An item waiting in a [`DelayLine`], ordered by (time to send, arrival order).
struct Waiting<T>(Ns, u64, T);

impl<T> PartialEq for Waiting<T> {
    fn eq(&self, o: &Self) -> bool {
        (self.0, self.1) == (o.0, o.1)
    }
}
impl<T> Eq for Waiting<T> {}
impl<T> PartialOrd for Waiting<T> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Waiting<T> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.0, self.1).cmp(&(o.0, o.1))
    }
}

/// netem's tfifo: items leave in order of their time to send (ties in arrival order). Without
/// reordering by jitter, an item's time is at least the one before's.
pub struct DelayLine<T> {
    heap: BinaryHeap<Reverse<Waiting<T>>>,
    seq: u64,
    reorders: bool,
    last_ns: Ns,
    pushed_ns: Ns,
}

impl<T> DelayLine<T> {
    /// An empty line; `jitter_reorders` as [`NetemConfig::jitter_reorders`].
    pub fn new(jitter_reorders: bool) -> Self {
        DelayLine {
            heap: BinaryHeap::new(),
            seq: 0,
            reorders: jitter_reorders,
            last_ns: 0,
            pushed_ns: 0,
        }
    }

    /// Queue `item` to leave at `at_ns` (a reordered packet: `now`, ahead of everything).
    /// Returns the time it was given.
    pub fn push(&mut self, at_ns: Ns, reordered: bool, item: T) -> Ns {
        let t = if self.reorders || reordered {
            at_ns
        } else {
            at_ns.max(self.last_ns)
        };
        if !reordered {
            self.last_ns = self.last_ns.max(t);
        }
        self.seq += 1;
        self.pushed_ns = t;
        self.heap.push(Reverse(Waiting(t, self.seq, item)));
        t
    }

    /// The time given to the item pushed last.
    pub fn last_pushed_ns(&self) -> Ns {
        self.pushed_ns
    }

    /// When the next item is due.
    pub fn next_ns(&self) -> Option<Ns> {
        self.heap.peek().map(|Reverse(w)| w.0)
    }

    /// The next item due by `now_ns`, with its time.
    pub fn pop_due(&mut self, now_ns: Ns) -> Option<(Ns, T)> {
        if self.next_ns()? > now_ns {
            return None;
        }
        self.heap.pop().map(|Reverse(Waiting(t, _, x))| (t, x))
    }

    /// Items waiting.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

/// A compact digest of a decision, for comparing two backends' sequences: bit 0 lost, bit 1
/// duplicated, bit 2 reordered, bit 3 corrupted, then the delay in us.
pub fn digest(d: &Decision) -> u64 {
    let f = d.copies[1];
    let mut x = f.is_none() as u64 | ((d.copies[0].is_some() as u64) << 1);
    if let Some(f) = f {
        x |= ((f.reordered as u64) << 2)
            | ((f.corrupt_bit.is_some() as u64) << 3)
            | ((f.delay_ns / 1000) << 4);
    }
    x
}

#[cfg(test)]
mod tests;

//! A port's impairments (crates/tcplab-impair, the link emulator's code): netem's decisions as
//! a packet enters the link, its delay line after the wire, a trace replayed as the link's
//! capacity, and changes of rate, delay and loss over time.
//!
//! With netem, the port's own pipe has no propagation delay: a packet that has crossed the wire
//! enters the delay line with the delay netem drew for it (the link's delay plus jitter, 0 if
//! reordered), and leaves it in order of its time to send (netem's tfifo). Each packet's fate
//! is decided on entry and kept in pipe order until it has crossed the wire.

use crate::time::Ns;
use std::collections::VecDeque;
use tcplab_impair::{
    trace::TraceServer, Decision, DelayLine, Fate, LinkImpair, Netem, Schedule, Step,
};

/// A packet in the delay line: its slab handle, destination and size.
#[derive(Clone, Copy, Debug)]
pub struct Held {
    /// Handle in the simulation's slab.
    pub packet: u32,
    /// Destination node.
    pub dst: u32,
    /// IP bytes.
    pub size_bytes: u32,
}

/// Counters of what the impairments did, for the port's totals.
#[derive(Clone, Copy, Debug, Default)]
pub struct ImpairCounts {
    /// Packets netem lost (its loss model; also in the port's `losses`).
    pub netem_lost: u64,
    /// Copies netem added.
    pub duplicated: u64,
    /// Packets sent at once, ahead of the delayed ones.
    pub reordered: u64,
    /// Packets corrupted (discarded at the far end).
    pub corrupted: u64,
}

/// How many of netem's first decisions a port keeps (`tcplab_impair::digest`), to compare
/// backends packet by packet.
pub const FIRST_DECISIONS: usize = 256;

/// What became of a packet that crossed an impaired port's wire.
pub enum Crossed {
    /// Corrupted: its receiver discards it.
    Corrupted,
    /// In the delay line; `Some(t)`: arm an event at t (the line's earliest time moved earlier).
    Held(Option<Ns>),
}

/// The impaired part of a port.
pub struct Impaired {
    /// netem's state, if the direction has netem impairments.
    pub netem: Option<Netem>,
    /// netem's `delay TIME`: the link's delay (the port's pipe then has none).
    pub latency_ns: Ns,
    /// The fate of each packet in the port's pipe, in pipe order (netem only).
    fates: VecDeque<Fate>,
    /// After the wire: packets waiting out their delay.
    pub line: DelayLine<Held>,
    /// The earliest pending delay-line event, if any.
    pub armed_ns: Option<Ns>,
    /// The trace replayed as the link's capacity.
    pub trace: Option<TraceServer>,
    /// Changes over time.
    pub schedule: Schedule,
    /// What was done.
    pub counts: ImpairCounts,
    /// netem's first decisions, digested.
    pub first: Vec<u64>,
}

impl Impaired {
    /// The impaired part of a direction of delay `delay_ns`.
    pub fn new(c: &LinkImpair, delay_ns: Ns) -> Self {
        // A plain link never reorders, even when a schedule shortens its delay.
        let reorders = c.netem.as_ref().is_some_and(|n| n.jitter_reorders);
        Impaired {
            netem: c.netem.as_ref().map(|n| Netem::new(n, c.seed)),
            latency_ns: delay_ns,
            fates: VecDeque::new(),
            line: DelayLine::new(reorders),
            armed_ns: None,
            trace: c.trace_ms.clone().map(TraceServer::new),
            schedule: Schedule::new(c.schedule.clone()),
            counts: ImpairCounts::default(),
            first: Vec::new(),
        }
    }

    /// netem's decision for the next packet on a link of delay `latency_ns`, noted.
    pub fn decide(&mut self) -> Option<Decision> {
        let d = self.netem.as_mut()?.decide(self.latency_ns);
        if self.first.len() < FIRST_DECISIONS {
            self.first.push(tcplab_impair::digest(&d));
        }
        Some(d)
    }

    /// Remember the fate of a packet just put into the pipe.
    pub fn sent(&mut self, f: Fate) {
        self.fates.push_back(f);
    }

    /// The fate of the packet at the head of the pipe (netem only).
    pub fn next_fate(&mut self) -> Fate {
        self.fates
            .pop_front()
            .expect("a fate per packet in the pipe")
    }

    /// The packet at the head of the pipe crossed the wire at `now` with its `fate` (None:
    /// no netem, the link's delay): into the delay line, or discarded if corrupted.
    pub fn crossed(&mut self, now: Ns, h: Held, fate: Option<Fate>) -> Crossed {
        let f = fate.unwrap_or(Fate {
            delay_ns: self.latency_ns,
            reordered: false,
            corrupt_bit: None,
        });
        if f.corrupt_bit.is_some() {
            self.counts.corrupted += 1;
            return Crossed::Corrupted;
        }
        self.counts.reordered += f.reordered as u64;
        let at = self.line.push(now + f.delay_ns, f.reordered, h);
        Crossed::Held(self.arm_if_earlier(at))
    }

    /// Whether an event must be armed at `at` (nothing armed, or armed later).
    pub fn arm_if_earlier(&mut self, at: Ns) -> Option<Ns> {
        if self.armed_ns.is_some_and(|a| a <= at) {
            return None;
        }
        self.armed_ns = Some(at);
        Some(at)
    }

    /// The steps due at `now`.
    pub fn due_steps(&mut self, now: Ns) -> Vec<Step> {
        self.schedule.take_due(now).to_vec()
    }

    /// Packets held after the wire.
    pub fn held(&self) -> u64 {
        self.line.len() as u64
    }
}

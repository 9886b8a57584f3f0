//! One direction's impairments (crates/tcplab-impair, the simulator's code): netem's decisions on
//! each arriving frame, a mahimahi trace as the wire's capacity, a schedule of rate, delay and
//! loss, with time zero at the run's start (SIGUSR1 from the netns backend when its traffic
//! starts; until then the emulator's own start).

use tcplab_impair::trace::TraceServer;
use tcplab_impair::{Decision, Fate, LinkImpair, Netem, Schedule, Step};

/// Ethernet header bytes: a trace's opportunities carry IP bytes.
const ETH_HEADER: u64 = 14;
/// netem's first decisions kept, as the simulator keeps them (net/impair.rs FIRST_DECISIONS).
const FIRST_DECISIONS: usize = 256;

/// What the impairments did.
#[derive(Clone, Debug, Default)]
pub(crate) struct Counts {
    pub(crate) netem_lost: u64,
    pub(crate) duplicated: u64,
    pub(crate) reordered: u64,
    pub(crate) corrupted: u64,
    /// netem's first decisions, digested (tcplab_impair::digest).
    pub(crate) first: Vec<u64>,
}

/// A direction's impairments and their state.
pub(crate) struct DirImpair {
    cfg: LinkImpair,
    netem: Option<Netem>,
    trace: Option<TraceServer>,
    schedule: Schedule,
    /// Time zero of the schedule and the trace, CLOCK_REALTIME ns.
    t0_ns: u64,
    pub(crate) counts: Counts,
}

impl DirImpair {
    pub(crate) fn new(cfg: LinkImpair) -> Self {
        DirImpair {
            netem: cfg.netem.as_ref().map(|n| Netem::new(n, cfg.seed)),
            trace: cfg.trace_ms.clone().map(TraceServer::new),
            schedule: Schedule::new(cfg.schedule.clone()),
            t0_ns: 0,
            counts: Counts::default(),
            cfg,
        }
    }

    /// Whether jitter may reorder frames (netem's tfifo), for the delay line.
    pub(crate) fn jitter_reorders(&self) -> bool {
        self.cfg.netem.as_ref().is_some_and(|n| n.jitter_reorders)
    }

    /// Whether a trace sets the wire's capacity.
    pub(crate) fn has_trace(&self) -> bool {
        self.trace.is_some()
    }

    /// The run starts now: the schedule and the trace from their beginning.
    pub(crate) fn set_time_zero(&mut self, t0_ns: u64) {
        self.t0_ns = t0_ns;
        self.trace = self.cfg.trace_ms.clone().map(TraceServer::new);
        self.schedule = Schedule::new(self.cfg.schedule.clone());
    }

    /// The schedule's steps due at `now_ns`.
    pub(crate) fn due_steps(&mut self, now_ns: u64) -> Vec<Step> {
        let t = now_ns.saturating_sub(self.t0_ns);
        self.schedule.take_due(t).to_vec()
    }

    /// netem's decision for a frame on a link of delay `latency_ns` (None: no netem).
    pub(crate) fn decide(&mut self, latency_ns: u64) -> Option<Decision> {
        let d = self.netem.as_mut()?.decide(latency_ns);
        if self.counts.first.len() < FIRST_DECISIONS {
            self.counts.first.push(tcplab_impair::digest(&d));
        }
        Some(d)
    }

    /// When a frame of `len` bytes ready at `ready_ns` has crossed a trace-replaying wire.
    pub(crate) fn trace_depart(&mut self, ready_ns: u64, len: usize) -> u64 {
        let t = self.trace.as_mut().expect("a trace");
        let ip = (len as u64).saturating_sub(ETH_HEADER).max(1);
        self.t0_ns + t.depart(ready_ns.saturating_sub(self.t0_ns), ip)
    }

    /// A copy's fate noted; a corrupted frame gets its bit flipped in the IPv4 header (the next
    /// hop's ip_rcv() checksum test discards it). false: drop it here instead (not IPv4, whose
    /// receiver could not be trusted to discard it, e.g. ARP).
    pub(crate) fn apply(&mut self, f: &Fate, data: &mut [u8]) -> bool {
        self.counts.reordered += f.reordered as u64;
        let Some(bit) = f.corrupt_bit else {
            return true;
        };
        self.counts.corrupted += 1;
        let ipv4 = data.len() >= 34 && data[12] == 0x08 && data[13] == 0x00;
        if ipv4 {
            data[14 + (bit / 8) as usize] ^= 1 << (bit % 8);
        }
        ipv4
    }

    /// The counters as JSON.
    pub(crate) fn json(&self) -> String {
        let c = &self.counts;
        let first: Vec<String> = c.first.iter().map(|x| x.to_string()).collect();
        format!(
            "{{\"netem_lost\": {}, \"duplicated\": {}, \"reordered\": {}, \"corrupted\": {}, \"first_decisions\": [{}]}}",
            c.netem_lost, c.duplicated, c.reordered, c.corrupted, first.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::pipe::{Pipe, PipeConfig};
    use tcplab_impair::{LinkImpair, NetemConfig};

    const MS: u64 = 1_000_000;

    fn ipv4_frame() -> Vec<u8> {
        let mut f = vec![0u8; 1514];
        f[12] = 0x08;
        f[14] = 0x45;
        f[23] = 6;
        f
    }

    fn pipe(imp: LinkImpair, rate_bps: u64) -> Pipe {
        let cfg = PipeConfig {
            delay_ns: 10 * MS,
            rate_bps,
            impair: Some(imp),
            ..Default::default()
        };
        let mut p = Pipe::new(cfg, 1).unwrap();
        p.start_clock(0);
        p
    }

    #[test]
    fn the_pipe_makes_the_crates_decisions_for_the_seed() {
        let netem = NetemConfig {
            jitter_ns: 2 * MS,
            reorder: 0.2,
            duplicate: 0.05,
            corrupt: 0.02,
            ..Default::default()
        };
        let mut p = pipe(
            LinkImpair {
                netem: Some(netem.clone()),
                seed: 77,
                ..Default::default()
            },
            0,
        );
        for i in 0..300 {
            p.admit(i * 1000, ipv4_frame());
        }
        let mut q = tcplab_impair::Netem::new(&netem, 77);
        let want: Vec<u64> = (0..256)
            .map(|_| tcplab_impair::digest(&q.decide(10 * MS)))
            .collect();
        assert_eq!(p.impair_counts().first, want);
        assert!(p.impair_counts().duplicated > 0 && p.impair_counts().reordered > 0);
    }

    #[test]
    fn a_corrupted_ipv4_frame_fails_its_header_checksum() {
        let netem = NetemConfig {
            corrupt: 1.0,
            ..Default::default()
        };
        let mut p = pipe(
            LinkImpair {
                netem: Some(netem),
                seed: 1,
                ..Default::default()
            },
            0,
        );
        let mut f = ipv4_frame();
        let sum = |h: &[u8]| {
            h.chunks(2)
                .map(|w| u16::from_be_bytes([w[0], w[1]]) as u32)
                .sum::<u32>()
        };
        let fold = |mut s: u32| {
            while s > 0xffff {
                s = (s & 0xffff) + (s >> 16)
            }
            s
        };
        let c = !fold(sum(&f[14..34])) as u16; // a valid header checksum
        f[24..26].copy_from_slice(&c.to_be_bytes());
        assert_eq!(fold(sum(&f[14..34])), 0xffff);
        p.admit(0, f);
        let (_, out) = p.pop_due(u64::MAX).expect("sent on, corrupted");
        assert_ne!(fold(sum(&out[14..34])), 0xffff);
    }

    #[test]
    fn a_trace_gives_its_opportunities_per_second_to_a_backlogged_queue() {
        // 3 opportunities in 4 ms (750 packets/s), offered 1000 full frames/s for 10 s.
        let imp = LinkImpair {
            trace_ms: Some(vec![1, 2, 4]),
            seed: 1,
            ..Default::default()
        };
        let mut p = pipe(imp, 1);
        let mut out = vec![0u64; 11];
        for i in 0..10_000u64 {
            p.admit(i * MS, ipv4_frame());
            while let Some((t, _)) = p.pop_due(i * MS) {
                out[((t - 10 * MS) / 1_000_000_000) as usize] += 1;
            }
        }
        assert!(out[1..9].iter().all(|&n| n.abs_diff(750) <= 1), "{out:?}");
    }
}

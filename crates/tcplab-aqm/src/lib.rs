//! Active queue management: the queue disciplines a link direction can run instead of drop-tail
//! (CoDel, FQ-CoDel, PIE, RED, a DCTCP step-marking threshold, DualPI2), behind one trait the port calls
//! when a packet arrives and when its transmitter is free. One implementation, used by both
//! backends: the simulator (crates/tcplab-sim, its Packet) and the link emulator
//! (crates/tcplab-linkem, Ethernet frames whose IP header it reads and rewrites).
//!
//! A port with an AQM holds packets in the discipline and takes the next one out only when the
//! wire is free, as a Linux qdisc does (`dequeue` runs from `qdisc_restart()` when the device can
//! send), so a dequeue-time discipline (CoDel) sees the real sojourn time and the real backlog.
//! Time is in ns on whatever clock the caller uses (simulated time, or the kernel's frame stamps).

pub mod codel;
pub mod dualpi2;
pub mod fq_codel;
pub mod pie;
pub mod red;
pub mod step;

use serde::Deserialize;

pub use codel::CodelParams;

/// Time, ns.
pub type Ns = u64;
/// One millisecond, ns.
pub const MS: Ns = 1_000_000;

/// What a discipline needs to know about a packet.
pub trait Packet {
    /// The queue's MTU in the units of `size_bytes` (Linux's psched_mtu(): dev->mtu +
    /// hard_header_len, 1514 for Ethernet frames), for CoDel's "backlog at most one MTU" test and
    /// PIE's byte-mode and burst tests.
    const MTU_BYTES: u64;
    /// Bytes it occupies in the queue and on the wire (backlog, quantum, byte limits).
    fn size_bytes(&self) -> u64;
    /// Its IP ECN field (an [`ecn`] codepoint; NOT_ECT for anything that is not IP).
    fn ecn(&self) -> u8;
    /// Rewrite its IP ECN field.
    fn set_ecn(&mut self, ecn: u8);
    /// An unkeyed identifier of its 5-tuple (FQ-CoDel keys and buckets it).
    fn flow_key(&self) -> u64;
}

/// The random bits PIE and RED draw (the caller's seeded generator, so runs repeat).
pub trait Random {
    /// The next 64 random bits.
    fn next_u64(&mut self) -> u64;
}

/// Time to serialise `bytes` at `rate_bps`, rounded up to whole ns.
pub fn tx_time_ns(bytes: u64, rate_bps: u64) -> Ns {
    (bytes as u128 * 8 * 1_000_000_000).div_ceil(rate_bps as u128) as Ns
}

/// IP ECN field codepoints (RFC 3168 §5).
pub mod ecn {
    /// Not ECN-capable transport.
    pub const NOT_ECT: u8 = 0b00;
    /// ECT(1).
    pub const ECT1: u8 = 0b01;
    /// ECT(0), what RFC 3168 senders set.
    pub const ECT0: u8 = 0b10;
    /// Congestion experienced.
    pub const CE: u8 = 0b11;
}

/// Mark a packet CE if its transport is ECN-capable; false (the caller drops instead) if not.
/// Linux include/net/inet_ecn.h INET_ECN_set_ce(): Not-ECT cannot be marked, CE stays CE.
pub fn set_ce<P: Packet>(p: &mut P) -> bool {
    match p.ecn() {
        ecn::NOT_ECT => false,
        ecn::CE => true,
        _ => {
            p.set_ecn(ecn::CE);
            true
        }
    }
}

/// A packet held by a discipline, with the time it arrived (skb->tstamp / codel enqueue time).
pub struct Queued<P> {
    /// When it entered the queue.
    pub enqueue_ns: Ns,
    /// The packet.
    pub p: P,
}

/// What a discipline counted.
#[derive(Clone, Copy, Debug, Default)]
pub struct AqmStats {
    /// Packets the discipline dropped (early/AQM drops and its own limit).
    pub drops: u64,
    /// Packets it marked CE instead of dropping.
    pub ecn_marks: u64,
}

/// One queue discipline. The port calls `enqueue` for each arriving packet and `dequeue` when its
/// transmitter is free; packets either discipline drops go into `dropped` for the caller to count.
pub trait Aqm<P> {
    /// A packet arrives at `now`; it is held, or pushed onto `dropped`.
    fn enqueue(&mut self, p: P, now: Ns, dropped: &mut Vec<P>);
    /// The wire is free at `now`: the next packet to send, if any (dropping some on the way).
    fn dequeue(&mut self, now: Ns, dropped: &mut Vec<P>) -> Option<P>;
    /// Packets held.
    fn len_packets(&self) -> u64;
    /// Bytes held.
    fn len_bytes(&self) -> u64;
    /// Counters.
    fn stats(&self) -> AqmStats;
    /// When the packet the last `dequeue` returned entered the queue.
    fn last_enqueue_ns(&self) -> Ns;
}

/// The read-only half of [`Aqm`] for a discipline that holds its packets in one [`Fifo`] `q` and
/// counts in an [`AqmStats`] `st` (CoDel, PIE, RED, step): written once here, expanded inside
/// each `impl Aqm`.
#[macro_export]
macro_rules! one_fifo_accessors {
    () => {
        fn len_packets(&self) -> u64 {
            self.q.len()
        }

        fn len_bytes(&self) -> u64 {
            self.q.bytes()
        }

        fn stats(&self) -> $crate::AqmStats {
            self.st
        }

        fn last_enqueue_ns(&self) -> $crate::Ns {
            self.q.last_popped_enqueue_ns
        }
    };
}

/// A discipline as the resolved spec gives it (units already ns and bytes; defaults already
/// filled in by the Python side, which cites where each comes from).
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AqmConfig {
    /// CoDel (RFC 8289; Linux net/sched/sch_codel.c).
    Codel {
        /// Acceptable standing queue delay.
        target_ns: Ns,
        /// Sliding window over which the minimum delay is taken.
        interval_ns: Ns,
        /// Queue limit, packets.
        limit_packets: u64,
        /// Mark ECT packets instead of dropping them.
        ecn: bool,
        /// Mark CE above this sojourn time (Linux ce_threshold); None = off.
        #[serde(default)]
        ce_threshold_ns: Option<Ns>,
    },
    /// FQ-CoDel (RFC 8290; Linux net/sched/sch_fq_codel.c).
    FqCodel {
        /// Per-flow CoDel target.
        target_ns: Ns,
        /// Per-flow CoDel interval.
        interval_ns: Ns,
        /// Queue limit over all flows, packets.
        limit_packets: u64,
        /// Mark ECT packets instead of dropping them.
        ecn: bool,
        /// Hash buckets.
        flows: u32,
        /// DRR quantum, bytes.
        quantum_bytes: u32,
        /// Packets dropped at most per overflow from the fattest flow.
        drop_batch: u32,
        /// Mark CE above this sojourn time; None = off.
        #[serde(default)]
        ce_threshold_ns: Option<Ns>,
    },
    /// PIE (RFC 8033; Linux net/sched/sch_pie.c).
    Pie {
        /// Target queue delay.
        target_ns: Ns,
        /// Drop-probability update period.
        tupdate_ns: Ns,
        /// Queue limit, packets.
        limit_packets: u64,
        /// Integral gain in 1/16 units (Linux `alpha`, default 2 = 0.125).
        alpha: u32,
        /// Proportional gain in 1/16 units (Linux `beta`, default 20 = 1.25).
        beta: u32,
        /// Mark ECT packets while the probability is at most 10%.
        ecn: bool,
        /// Scale the probability by packet size.
        bytemode: bool,
    },
    /// RED (Floyd & Jacobson 1993; Linux net/sched/sch_red.c, include/net/red.h).
    Red {
        /// Queue limit, bytes.
        limit_bytes: u64,
        /// Average queue below which nothing is marked, bytes.
        min_bytes: u64,
        /// Average queue above which everything is marked, bytes.
        max_bytes: u64,
        /// Marking probability at max (max_P).
        probability: f64,
        /// EWMA weight exponent: W = 2^-wlog (tc computes it from burst, see the Python side).
        wlog: u32,
        /// Average packet size, bytes (for the idle-time decay).
        avpkt_bytes: u64,
        /// Mark ECT packets instead of dropping them.
        ecn: bool,
        /// Drop (not mark) above max even with ECN (TC_RED_HARDDROP).
        harddrop: bool,
        /// Adaptive RED: adjust max_P every 500 ms (Floyd, Gummadi, Shenker 2001).
        adaptive: bool,
    },
    /// DualPI2 (RFC 9332; Linux net/sched/sch_dualpi2.c): an L4S queue and a Classic queue
    /// coupled through one PI controller.
    Dualpi2 {
        /// Packets over both queues.
        limit_packets: u64,
        /// Bytes over both queues.
        memory_limit_bytes: u64,
        /// PI target delay.
        target_ns: Ns,
        /// PI update period.
        tupdate_ns: Ns,
        /// Integral gain, 1/256 Hz.
        alpha_256: u32,
        /// Proportional gain, 1/256 Hz.
        beta_256: u32,
        /// L-queue step threshold as a sojourn time (exclusive with `step_packets`).
        #[serde(default)]
        step_ns: Option<Ns>,
        /// L-queue step threshold as a queue length, packets.
        #[serde(default)]
        step_packets: Option<u64>,
        /// Step only when the L queue held at least this many packets on arrival.
        min_qlen_step: u64,
        /// Coupling factor k.
        coupling: u32,
        /// C-queue WRR weight, %.
        c_protection: u32,
        /// L-queue classifier: "l4s_ect", "cla_ect" or "any_ect".
        ecn_mask: String,
        /// Drop (not only mark) L packets on overload.
        drop_overload: bool,
        /// Mark/drop at enqueue.
        drop_early: bool,
    },
    /// Step marking: CE on arrival when the queue holds more than a threshold (the DCTCP switch,
    /// Alizadeh et al., SIGCOMM 2010, §3.1).
    Step {
        /// Marking threshold K, bytes waiting.
        threshold_bytes: u64,
        /// Queue limit, packets.
        limit_packets: u64,
    },
}

/// Build a discipline for a port whose wire runs at `rate_bps`, drawing from `rng`.
pub fn build<P, R>(
    cfg: &AqmConfig,
    rate_bps: u64,
    mut rng: R,
) -> Result<Box<dyn Aqm<P> + Send>, String>
where
    P: Packet + Send + 'static,
    R: Random + Send + 'static,
{
    Ok(match cfg {
        AqmConfig::Codel {
            target_ns,
            interval_ns,
            limit_packets,
            ecn,
            ce_threshold_ns,
        } => Box::new(codel::Codel::new(
            CodelParams::new(*target_ns, *interval_ns, *ecn, *ce_threshold_ns)?,
            *limit_packets,
        )),
        AqmConfig::FqCodel { .. } => build_fq_codel(cfg, &mut rng)?,
        AqmConfig::Pie { .. } => build_pie(cfg, rng)?,
        AqmConfig::Red { .. } => build_red(cfg, rate_bps, rng)?,
        AqmConfig::Dualpi2 { .. } => Box::new(dualpi2::Dualpi2::new(dualpi2_params(cfg)?, rng)),
        AqmConfig::Step {
            threshold_bytes,
            limit_packets,
        } => Box::new(step::Step::new(*threshold_bytes, *limit_packets)),
    })
}

/// FQ-CoDel; its flows, quantum and drop batch must be positive.
fn build_fq_codel<P, R>(cfg: &AqmConfig, rng: &mut R) -> Result<Box<dyn Aqm<P> + Send>, String>
where
    P: Packet + Send + 'static,
    R: Random + Send + 'static,
{
    let AqmConfig::FqCodel {
        target_ns,
        interval_ns,
        limit_packets,
        ecn,
        flows,
        quantum_bytes,
        drop_batch,
        ce_threshold_ns,
    } = cfg
    else {
        unreachable!("build_fq_codel builds FqCodel only")
    };
    if *flows == 0 || *quantum_bytes == 0 || *drop_batch == 0 {
        return Err("fq_codel flows, quantum and drop_batch must be positive".into());
    }
    Ok(Box::new(fq_codel::FqCodel::new(
        CodelParams::new(*target_ns, *interval_ns, *ecn, *ce_threshold_ns)?,
        *limit_packets,
        *flows,
        *quantum_bytes,
        *drop_batch,
        rng.next_u64(),
    )))
}

/// PIE; its update interval must be positive.
fn build_pie<P, R>(cfg: &AqmConfig, rng: R) -> Result<Box<dyn Aqm<P> + Send>, String>
where
    P: Packet + Send + 'static,
    R: Random + Send + 'static,
{
    let AqmConfig::Pie {
        target_ns,
        tupdate_ns,
        limit_packets,
        alpha,
        beta,
        ecn,
        bytemode,
    } = cfg
    else {
        unreachable!("build_pie builds Pie only")
    };
    if *tupdate_ns == 0 {
        return Err("pie tupdate must be positive".into());
    }
    Ok(Box::new(pie::Pie::new(
        *target_ns,
        *tupdate_ns,
        *limit_packets,
        *alpha,
        *beta,
        *ecn,
        *bytemode,
        rng,
    )))
}

/// RED; it needs min < max and 0 < probability <= 1.
fn build_red<P, R>(cfg: &AqmConfig, rate_bps: u64, rng: R) -> Result<Box<dyn Aqm<P> + Send>, String>
where
    P: Packet + Send + 'static,
    R: Random + Send + 'static,
{
    let AqmConfig::Red {
        limit_bytes,
        min_bytes,
        max_bytes,
        probability,
        wlog,
        avpkt_bytes,
        ecn,
        harddrop,
        adaptive,
    } = cfg
    else {
        unreachable!("build_red builds Red only")
    };
    if min_bytes >= max_bytes || !(*probability > 0.0 && *probability <= 1.0) {
        return Err("red needs min < max and 0 < probability <= 1".into());
    }
    Ok(Box::new(red::Red::new(
        red::RedParams {
            limit_bytes: *limit_bytes,
            min_bytes: *min_bytes,
            max_bytes: *max_bytes,
            probability: *probability,
            wlog: *wlog,
            avpkt_bytes: *avpkt_bytes,
            ecn: *ecn,
            harddrop: *harddrop,
            adaptive: *adaptive,
        },
        rate_bps,
        rng,
    )))
}

/// DualPI2's parameters from the spec, checked as dualpi2_policy / dualpi2_change() check them.
fn dualpi2_params(cfg: &AqmConfig) -> Result<dualpi2::Dualpi2Params, String> {
    let AqmConfig::Dualpi2 {
        limit_packets,
        memory_limit_bytes,
        target_ns,
        tupdate_ns,
        alpha_256,
        beta_256,
        step_ns,
        step_packets,
        min_qlen_step,
        coupling,
        c_protection,
        ecn_mask,
        drop_overload,
        drop_early,
    } = cfg
    else {
        unreachable!("dualpi2_params on another kind")
    };
    let step = match (step_ns, step_packets) {
        (Some(ns), None) => dualpi2::StepThresh::Time(*ns),
        (None, Some(n)) => dualpi2::StepThresh::Packets(*n),
        _ => return Err("dualpi2 needs exactly one of step_ns and step_packets".into()),
    };
    let ecn_mask = match ecn_mask.as_str() {
        "l4s_ect" => dualpi2::EcnMask::L4sEct,
        "cla_ect" => dualpi2::EcnMask::ClaEct,
        "any_ect" => dualpi2::EcnMask::AnyEct,
        m => {
            return Err(format!(
                "dualpi2 ecn_mask {m:?} is not l4s_ect, cla_ect or any_ect"
            ))
        }
    };
    if *limit_packets == 0
        || *memory_limit_bytes == 0
        || *tupdate_ns == 0
        || *coupling == 0
        || *coupling > 255
    {
        return Err(
            "dualpi2 limit, memory_limit, tupdate must be positive and coupling in 1..=255".into(),
        );
    }
    if *alpha_256 == 0 || *beta_256 == 0 || *c_protection > 100 {
        return Err("dualpi2 alpha and beta must be positive and c_protection in 0..=100".into());
    }
    Ok(dualpi2::Dualpi2Params {
        limit_packets: *limit_packets,
        memory_limit_bytes: *memory_limit_bytes,
        target_ns: *target_ns,
        tupdate_ns: *tupdate_ns,
        alpha_256: *alpha_256,
        beta_256: *beta_256,
        step,
        min_qlen_step: *min_qlen_step,
        coupling: *coupling,
        c_protection_wc: *c_protection,
        ecn_mask,
        drop_overload: *drop_overload,
        drop_early: *drop_early,
    })
}

/// A first-in first-out packet queue with byte and packet counts (what CoDel, PIE, RED and step
/// hold; FQ-CoDel holds one per flow).
pub struct Fifo<P> {
    q: std::collections::VecDeque<Queued<P>>,
    bytes: u64,
    /// Enqueue time of the packet last taken out.
    pub last_popped_enqueue_ns: Ns,
}

impl<P> Default for Fifo<P> {
    fn default() -> Self {
        Fifo {
            q: std::collections::VecDeque::new(),
            bytes: 0,
            last_popped_enqueue_ns: 0,
        }
    }
}

impl<P: Packet> Fifo<P> {
    /// Append.
    pub fn push(&mut self, p: P, now: Ns) {
        self.bytes += p.size_bytes();
        self.q.push_back(Queued { enqueue_ns: now, p });
    }
    /// Take the head.
    pub fn pop(&mut self) -> Option<Queued<P>> {
        let x = self.q.pop_front()?;
        self.bytes -= x.p.size_bytes();
        self.last_popped_enqueue_ns = x.enqueue_ns;
        Some(x)
    }
    /// When the head packet arrived, if any.
    pub fn front_enqueue_ns(&self) -> Option<Ns> {
        self.q.front().map(|x| x.enqueue_ns)
    }
    /// Packets held.
    pub fn len(&self) -> u64 {
        self.q.len() as u64
    }
    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

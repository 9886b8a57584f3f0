//! DualPI2 (RFC 9332, the coupled dual-queue AQM for L4S) as Linux implements it:
//! net/sched/sch_dualpi2.c (torvalds/linux, as of gregkh/linux commit
//! 2519003dd5fb6f89f10f031e3a97ecb7c9d1b816): dualpi2_skb_classify(), dualpi2_enqueue_skb(),
//! dequeue_packet() (the WRR C-queue protection), must_drop() / dualpi2_classic_marking() /
//! dualpi2_scalable_marking(), do_step_aqm(), calculate_probability() and dualpi2_reset_default().
//!
//! One PI controller on the larger of the two queues' head delays gives a base probability p'
//! (RFC 9332 §2.4, Appendix A: dualpi2_update()). The Classic queue drops or marks with
//! p_C = (p')^2 (two random rolls against p'), the L4S queue marks with the coupled
//! p_CL = k * p', and on top the L queue marks every packet whose sojourn time exceeds the step
//! threshold (RFC 9332 Appendix A.1: "if lq.time() > T, mark, else with p_CL"). Packets whose
//! ECN field matches the mask (ECT(1) and CE by default, the L4S identifier of RFC 9331) go to the
//! L queue, the rest to the C queue. Marking and dropping happen at dequeue (Linux's default
//! drop_early = 0).
//!
//! The probability only changes on the hrtimer (every tupdate from start) and the head delays only
//! at enqueue/dequeue, so running the ticks that fell due before each enqueue or dequeue gives the
//! same result as a real timer (as in pie.rs).
//!
//! Not modelled: tc filters / skb->priority classification (so no LLLL class), GSO splitting (one
//! packet here is one segment), and skb->truesize: the memory limit counts packet bytes.

use crate::{ecn, set_ce, Aqm, AqmStats, Fifo, Ns, Packet, Random};

/// Probabilities are u32, 2^32 - 1 = 100% (sch_dualpi2.c MAX_PROB).
pub const MAX_PROB: u32 = u32::MAX;
/// alpha/beta are given in 1/256 Hz (ALPHA_BETA_SHIFT), kept internally per 64 ns of delay
/// (ALPHA_BETA_GRANULARITY).
const ALPHA_BETA_SHIFT: u32 = 8;
const ALPHA_BETA_GRANULARITY: u32 = 6;
/// Weights of the two queues are in % (MAX_WC).
const MAX_WC: i64 = 100;

/// Which packets go to the L queue: those whose ECN field has a bit in common with the mask
/// (dualpi2_skb_classify(): `cb->ect & q->ecn_mask`; enum tc_dualpi2_ecn_mask).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnMask {
    /// ECT(1) and CE (the L4S identifier, RFC 9331; Linux's default).
    L4sEct = 1,
    /// ECT(0) and CE.
    ClaEct = 2,
    /// Any ECN-capable packet.
    AnyEct = 3,
}

/// The step threshold of the L queue (TCA_DUALPI2_STEP_THRESH_US or _PKTS).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepThresh {
    /// Sojourn time above which an L packet is marked (Linux default 1 ms).
    Time(Ns),
    /// L-queue length (packets, after the dequeue) above which an L packet is marked.
    Packets(u64),
}

/// Parameters, as sch_dualpi2.c keeps them after dualpi2_change().
#[derive(Clone, Debug)]
pub struct Dualpi2Params {
    /// Packets over both queues (sch->limit, default 10000).
    pub limit_packets: u64,
    /// Bytes over both queues (memory_limit, default limit x 2 x MTU).
    pub memory_limit_bytes: u64,
    /// PI target delay (default 15 ms).
    pub target_ns: Ns,
    /// PI update period (default 16 ms).
    pub tupdate_ns: Ns,
    /// Integral gain, 1/256 Hz (tc's alpha x 256; default 41, ~0.16 Hz).
    pub alpha_256: u32,
    /// Proportional gain, 1/256 Hz (default 819, ~3.2 Hz).
    pub beta_256: u32,
    /// L-queue step threshold.
    pub step: StepThresh,
    /// Apply the step only when the L queue held at least this many packets on arrival.
    pub min_qlen_step: u64,
    /// Coupling factor k (default 2).
    pub coupling: u32,
    /// C-queue weight of the WRR scheduler, % (default 10).
    pub c_protection_wc: u32,
    /// L-queue classifier.
    pub ecn_mask: EcnMask,
    /// On overload (k p' > 100%) drop L packets with p_C before marking (default true).
    pub drop_overload: bool,
    /// Mark/drop at enqueue instead of dequeue (default false).
    pub drop_early: bool,
}

/// A packet and the classification dualpi2_skb_cb keeps with it.
struct Cb<P> {
    p: P,
    /// ECN field on arrival (cb->ect).
    ect: u8,
    /// The step may be applied (cb->apply_step).
    apply_step: bool,
}

impl<P: Packet> Packet for Cb<P> {
    const MTU_BYTES: u64 = P::MTU_BYTES;
    fn size_bytes(&self) -> u64 {
        self.p.size_bytes()
    }
    fn ecn(&self) -> u8 {
        self.p.ecn()
    }
    fn set_ecn(&mut self, e: u8) {
        self.p.set_ecn(e)
    }
    fn flow_key(&self) -> u64 {
        self.p.flow_key()
    }
}

/// The DualPI2 qdisc.
pub struct Dualpi2<P, R> {
    prm: Dualpi2Params,
    /// Internal gains (dualpi2_scale_alpha_beta()).
    alpha: u64,
    beta: u64,
    /// Base PI probability p', scaled to MAX_PROB.
    pub prob: u32,
    last_qdelay_ns: Ns,
    next_tick_ns: Ns,
    c_protection_credit: i64,
    c_protection_init: i64,
    l: Fifo<Cb<P>>,
    c: Fifo<Cb<P>>,
    last_enqueue_ns: Ns,
    st: AqmStats,
    /// CE marks from the step threshold (q->step_marks).
    pub step_marks: u64,
    rng: R,
}

/// dualpi2_scale_alpha_beta(): param (1/256 Hz) x MAX_PROB >> 2 / 1e9.
fn scale_alpha_beta(param: u32) -> u64 {
    ((param as u64 * MAX_PROB as u64) >> (ALPHA_BETA_SHIFT - ALPHA_BETA_GRANULARITY))
        / 1_000_000_000
}

impl<P: Packet, R: Random> Dualpi2<P, R> {
    /// A DualPI2 queue.
    pub fn new(prm: Dualpi2Params, rng: R) -> Self {
        // dualpi2_calculate_c_protection(): credit starts at MTU x (wc - wl).
        let wc = prm.c_protection_wc as i64;
        let init = P::MTU_BYTES as i64 * (wc - (MAX_WC - wc));
        Dualpi2 {
            alpha: scale_alpha_beta(prm.alpha_256),
            beta: scale_alpha_beta(prm.beta_256),
            prob: 0,
            last_qdelay_ns: 0,
            next_tick_ns: prm.tupdate_ns, // hrtimer_start(next_pi2_timeout()) in dualpi2_init()
            c_protection_credit: init,
            c_protection_init: init,
            l: Fifo::default(),
            c: Fifo::default(),
            last_enqueue_ns: 0,
            st: AqmStats::default(),
            step_marks: 0,
            prm,
            rng,
        }
    }

    /// p' in [0, 1].
    pub fn base_probability(&self) -> f64 {
        self.prob as f64 / MAX_PROB as f64
    }

    /// Packets in the L queue and in the C queue.
    pub fn queue_lens(&self) -> (u64, u64) {
        (self.l.len(), self.c.len())
    }

    /// Run the timer ticks due by `now`.
    fn run_timer(&mut self, now: Ns) {
        while self.next_tick_ns <= now {
            let t = self.next_tick_ns;
            self.prob = self.calculate_probability(t);
            self.next_tick_ns += self.prm.tupdate_ns;
        }
    }

    /// calculate_probability() at time `now`: PI on the larger head delay of the two queues.
    fn calculate_probability(&mut self, now: Ns) -> u32 {
        let head = |q: &Fifo<Cb<P>>| q.front_enqueue_ns().map_or(0, |ts| now - ts);
        let qdelay = head(&self.l).max(head(&self.c));
        let mut delta = (qdelay as i64 - self.prm.target_ns as i64) * self.alpha as i64;
        delta += (qdelay as i64 - self.last_qdelay_ns as i64) * self.beta as i64;
        self.last_qdelay_ns = qdelay;
        // __scale_delta(): per 64 ns; the sum is truncated to u32 as in C.
        let scaled = (delta.unsigned_abs() >> ALPHA_BETA_GRANULARITY) as i64;
        let new_prob = if delta > 0 {
            let p = (scaled + self.prob as i64) as u32;
            if p < self.prob {
                MAX_PROB
            } else {
                p
            }
        } else {
            let p = (self.prob as i64 - scaled) as u32;
            if p > self.prob {
                0
            } else {
                p
            }
        };
        if !self.prm.drop_overload {
            return new_prob.min(MAX_PROB / self.prm.coupling);
        }
        new_prob
    }

    /// dualpi2_roll(): get_random_u32() <= prob.
    fn roll(&mut self, prob: u64) -> bool {
        (self.rng.next_u64() >> 32) <= prob
    }

    /// dualpi2_mark().
    fn mark(&mut self, x: &mut Cb<P>) -> bool {
        if set_ce(x) {
            self.st.ecn_marks += 1;
            return true;
        }
        false
    }

    /// must_drop(): mark or decide to drop `x` with p_C (C queue) or p_CL (L queue); nothing
    /// while the backlog is under two MTUs.
    fn must_drop(&mut self, x: &mut Cb<P>, in_l: bool) -> bool {
        if self.l.bytes() + self.c.bytes() < 2 * P::MTU_BYTES {
            return false;
        }
        let prob = self.prob as u64;
        let local_l_prob = prob * self.prm.coupling as u64;
        let overload = local_l_prob > MAX_PROB as u64;
        if !in_l {
            // dualpi2_classic_marking(): p_C = p'^2.
            if self.roll(prob) && self.roll(prob) {
                if overload || x.ect == ecn::NOT_ECT {
                    return true;
                }
                self.mark(x);
            }
            return false;
        }
        // dualpi2_scalable_marking().
        if overload {
            if self.prm.drop_overload && self.roll(prob) && self.roll(prob) {
                return true;
            }
            self.mark(x);
            return false;
        }
        if self.roll(local_l_prob) {
            if x.ect == ecn::NOT_ECT {
                return true;
            }
            self.mark(x);
        }
        false
    }

    /// do_step_aqm(): true if the packet must be dropped (a Not-ECT packet over the step).
    fn step_aqm(&mut self, x: &mut Cb<P>, now: Ns, enqueue_ns: Ns) -> bool {
        let over = match self.prm.step {
            StepThresh::Packets(n) => self.l.len() > n,
            StepThresh::Time(t) => now - enqueue_ns > t,
        };
        if x.apply_step && over {
            if x.ect == ecn::NOT_ECT {
                return true;
            }
            if self.mark(x) {
                self.step_marks += 1;
            }
        }
        false
    }

    /// dequeue_packet(): the WRR scheduler. The L queue goes first while the credit is <= 0;
    /// each packet moves the credit by its size x the other queue's weight when both are busy.
    fn dequeue_packet(&mut self) -> Option<(Queued2<P>, bool, i64)> {
        let c_len = self.c.len();
        if !self.l.is_empty() && (c_len == 0 || self.c_protection_credit <= 0) {
            let x = self.l.pop()?;
            let w = if c_len > 0 {
                self.prm.c_protection_wc as i64
            } else {
                0
            };
            let change = w * x.p.size_bytes() as i64;
            Some(((x.enqueue_ns, x.p), true, change))
        } else if c_len > 0 {
            let x = self.c.pop()?;
            let w = if !self.l.is_empty() {
                -(MAX_WC - self.prm.c_protection_wc as i64)
            } else {
                0
            };
            let change = w * x.p.size_bytes() as i64;
            Some(((x.enqueue_ns, x.p), false, change))
        } else {
            self.c_protection_credit = self.c_protection_init;
            None
        }
    }
}

type Queued2<P> = (Ns, Cb<P>);

impl<P: Packet, R: Random> Aqm<P> for Dualpi2<P, R> {
    fn enqueue(&mut self, p: P, now: Ns, dropped: &mut Vec<P>) {
        self.run_timer(now);
        let ect = p.ecn();
        let in_l = ect & self.prm.ecn_mask as u8 != 0;
        if self.l.len() + self.c.len() >= self.prm.limit_packets
            || self.l.bytes() + self.c.bytes() + p.size_bytes() > self.prm.memory_limit_bytes
        {
            self.st.drops += 1;
            dropped.push(p);
            return;
        }
        // skb_apply_step(): an L4S packet while the L queue holds at least min_qlen_step.
        let apply_step = in_l && self.l.len() >= self.prm.min_qlen_step;
        let mut x = Cb { p, ect, apply_step };
        if self.prm.drop_early && self.must_drop(&mut x, in_l) {
            self.st.drops += 1;
            dropped.push(x.p);
            return;
        }
        if in_l {
            self.l.push(x, now);
        } else {
            self.c.push(x, now);
        }
    }

    fn dequeue(&mut self, now: Ns, dropped: &mut Vec<P>) -> Option<P> {
        self.run_timer(now);
        while let Some(((enqueue_ns, mut x), in_l, change)) = self.dequeue_packet() {
            if (!self.prm.drop_early && self.must_drop(&mut x, in_l))
                || (in_l && self.step_aqm(&mut x, now, enqueue_ns))
            {
                self.st.drops += 1;
                dropped.push(x.p);
                continue;
            }
            self.c_protection_credit += change;
            self.last_enqueue_ns = enqueue_ns;
            return Some(x.p);
        }
        None
    }

    fn len_packets(&self) -> u64 {
        self.l.len() + self.c.len()
    }

    fn len_bytes(&self) -> u64 {
        self.l.bytes() + self.c.bytes()
    }

    fn stats(&self) -> AqmStats {
        self.st
    }

    fn last_enqueue_ns(&self) -> Ns {
        self.last_enqueue_ns
    }
}

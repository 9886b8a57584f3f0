//! PIE (RFC 8033) as Linux implements it: net/sched/sch_pie.c pie_qdisc_enqueue(),
//! pie_drop_early(), pie_process_dequeue(), pie_calculate_probability(), and include/net/pie.h
//! pie_params_init()/pie_vars_init() (torvalds/linux commits 00ac0dc347dc, 105e808c1da2), with the
//! default sojourn-time delay (dq_rate_estimator off). Arithmetic in Linux's units: psched ticks of
//! 64 ns, probability scaled to MAX_PROB = 2^56 - 1.
//!
//! Linux's timer runs every tupdate (15 ms = 15 jiffies at HZ=1000) from 500 ms after creation;
//! the probability only changes there and the backlog only at enqueue/dequeue, so running the
//! ticks that fell due before each enqueue or dequeue gives the same result as a real timer.

use crate::{set_ce, Aqm, AqmStats, Fifo, Ns, Packet, Random, MS};

const MAX_PROB: u64 = u64::MAX >> 8;
const PSCHED_SHIFT: u32 = 6;
const PSCHED_TICKS_PER_SEC: u64 = 1_000_000_000 >> PSCHED_SHIFT;
const DTIME_INVALID: u64 = u64::MAX;

fn ticks(ns: Ns) -> u64 {
    ns >> PSCHED_SHIFT
}

/// The PIE qdisc.
pub struct Pie<P, R> {
    target: u64,
    tupdate_ns: Ns,
    limit_packets: u64,
    alpha: u64,
    beta: u64,
    ecn: bool,
    bytemode: bool,
    // struct pie_vars
    qdelay: u64,
    qdelay_old: u64,
    burst_time: u64,
    dq_tstamp: u64,
    /// Drop probability, scaled to MAX_PROB.
    pub prob: u64,
    accu_prob: u64,
    next_tick_ns: Ns,
    q: Fifo<P>,
    st: AqmStats,
    rng: R,
}

impl<P: Packet, R: Random> Pie<P, R> {
    /// A PIE queue.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        target_ns: Ns,
        tupdate_ns: Ns,
        limit_packets: u64,
        alpha: u32,
        beta: u32,
        ecn: bool,
        bytemode: bool,
        rng: R,
    ) -> Self {
        let mut p = Pie {
            target: ticks(target_ns),
            tupdate_ns,
            limit_packets,
            alpha: alpha as u64,
            beta: beta as u64,
            ecn,
            bytemode,
            qdelay: 0,
            qdelay_old: 0,
            burst_time: 0,
            dq_tstamp: 0,
            prob: 0,
            accu_prob: 0,
            next_tick_ns: 500 * MS, // mod_timer(jiffies + HZ / 2) in pie_init()
            q: Fifo::default(),
            st: AqmStats::default(),
            rng,
        };
        p.vars_init();
        p
    }

    /// Current queue delay estimate (the last dequeued packet's sojourn), ns.
    pub fn qdelay_ns(&self) -> Ns {
        self.qdelay << PSCHED_SHIFT
    }

    /// Drop probability in [0, 1].
    pub fn probability(&self) -> f64 {
        self.prob as f64 / MAX_PROB as f64
    }

    /// pie_vars_init().
    fn vars_init(&mut self) {
        self.burst_time = ticks(150 * MS);
        self.dq_tstamp = DTIME_INVALID;
        self.accu_prob = 0;
    }

    /// Run the timer ticks due by `now`.
    fn run_timer(&mut self, now: Ns) {
        while self.next_tick_ns <= now {
            self.calculate_probability();
            self.next_tick_ns += self.tupdate_ns;
        }
    }

    /// pie_calculate_probability() without the dequeue-rate estimator.
    fn calculate_probability(&mut self) {
        let backlog = self.q.bytes();
        let qdelay = self.qdelay;
        let qdelay_old = self.qdelay_old;
        let mut update_prob = !(qdelay == 0 && backlog != 0);
        let mut alpha = (self.alpha * (MAX_PROB / PSCHED_TICKS_PER_SEC)) >> 4;
        let mut beta = (self.beta * (MAX_PROB / PSCHED_TICKS_PER_SEC)) >> 4;
        // Smaller steps while the probability is small (RFC 8033 §5.2).
        if self.prob < MAX_PROB / 10 {
            alpha >>= 1;
            beta >>= 1;
            let mut power: u64 = 100;
            while self.prob < MAX_PROB / power && power <= 1_000_000 {
                alpha >>= 2;
                beta >>= 2;
                power *= 10;
            }
        }
        let mut delta: i64 = 0;
        delta = delta.wrapping_add(alpha.wrapping_mul(qdelay.wrapping_sub(self.target)) as i64);
        delta = delta.wrapping_add(beta.wrapping_mul(qdelay.wrapping_sub(qdelay_old)) as i64);
        let oldprob = self.prob;
        // Increase in steps of at most 2% once above 10%.
        if delta > (MAX_PROB / (100 / 2)) as i64 && self.prob >= MAX_PROB / 10 {
            delta = ((MAX_PROB / 100) * 2) as i64;
        }
        // Non-linear boost for delays of 250 ms and more.
        if qdelay > ticks(250 * MS) {
            delta += (MAX_PROB / (100 / 2)) as i64;
        }
        self.prob = self.prob.wrapping_add_signed(delta);
        if delta > 0 {
            if self.prob < oldprob {
                self.prob = MAX_PROB;
                update_prob = false;
            }
        } else if self.prob > oldprob {
            self.prob = 0;
        }
        // Decay quickly when the queue has been empty for two updates.
        if qdelay == 0 && qdelay_old == 0 && update_prob {
            self.prob -= self.prob / 64;
        }
        self.qdelay = qdelay;
        if self.qdelay < self.target / 2 && self.qdelay_old < self.target / 2 && self.prob == 0 {
            self.vars_init();
        }
        self.qdelay_old = qdelay;
    }

    /// pie_drop_early().
    fn drop_early(&mut self, backlog: u64, packet_size: u64) -> bool {
        if self.burst_time > 0 {
            return false;
        }
        if self.qdelay < self.target / 2 && self.prob < MAX_PROB / 5 {
            return false;
        }
        if backlog < 2 * P::MTU_BYTES {
            return false;
        }
        let local_prob = if self.bytemode && packet_size <= P::MTU_BYTES {
            packet_size * (self.prob / P::MTU_BYTES)
        } else {
            self.prob
        };
        if local_prob == 0 {
            self.accu_prob = 0;
        } else {
            self.accu_prob += local_prob;
        }
        if self.accu_prob < (MAX_PROB / 100) * 85 {
            return false;
        }
        if self.accu_prob >= (MAX_PROB / 2) * 17 {
            return true;
        }
        if (self.rng.next_u64() >> 8) < local_prob {
            self.accu_prob = 0;
            return true;
        }
        false
    }
}

impl<P: Packet, R: Random> Aqm<P> for Pie<P, R> {
    fn enqueue(&mut self, mut p: P, now: Ns, dropped: &mut Vec<P>) {
        self.run_timer(now);
        let enqueue = if self.q.len() >= self.limit_packets {
            false
        } else if !self.drop_early(self.q.bytes(), p.size_bytes()) {
            true
        } else if self.ecn && self.prob <= MAX_PROB / 10 && set_ce(&mut p) {
            // ECN-capable: mark while the probability is at most 10%, else drop.
            self.st.ecn_marks += 1;
            true
        } else {
            false
        };
        if enqueue {
            self.q.push(p, now);
        } else {
            self.st.drops += 1;
            self.accu_prob = 0;
            dropped.push(p);
        }
    }

    fn dequeue(&mut self, now: Ns, _dropped: &mut Vec<P>) -> Option<P> {
        self.run_timer(now);
        let x = self.q.pop()?;
        // pie_process_dequeue() with sojourn-time delay.
        let t = ticks(now);
        self.qdelay = t - ticks(x.enqueue_ns);
        let dtime = if self.dq_tstamp != DTIME_INVALID {
            t - self.dq_tstamp
        } else {
            0
        };
        self.dq_tstamp = t;
        if self.q.bytes() == 0 {
            self.qdelay = 0;
        }
        if dtime != 0 && self.burst_time > 0 {
            self.burst_time = self.burst_time.saturating_sub(dtime);
        }
        Some(x.p)
    }

    crate::one_fifo_accessors!();
}

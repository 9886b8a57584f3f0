//! RED (Floyd & Jacobson, "Random Early Detection Gateways for Congestion Avoidance", 1993) and
//! Adaptive RED (Floyd, Gummadi, Shenker 2001) as Linux implements them: include/net/red.h
//! red_set_parms(), red_calc_qavg_no_idle_time(), red_action(), red_mark_probability(),
//! red_random(), red_adaptative_algo(), and net/sched/sch_red.c red_enqueue()/red_dequeue() with
//! its bfifo child (limit in bytes).
//!
//! The average is kept as Linux keeps it, scaled by 2^Wlog; max_P as a u32 fraction of 2^32. The
//! idle-time decay is computed exactly, qavg * (1 - W)^(idle / avpkt's transmission time), where
//! Linux looks it up in tc's quantised Stab table (tc_red_eval_idle_damping()).

use crate::{set_ce, tx_time_ns, Aqm, AqmStats, Fifo, Ns, Packet, Random, MS};

/// RED_ONE_PERCENT: DIV_ROUND_CLOSEST(1 << 32, 100).
const ONE_PERCENT: u32 = (((1u64 << 32) + 50) / 100) as u32;
const MAX_P_MIN: u32 = ONE_PERCENT;
const MAX_P_MAX: u32 = 50 * ONE_PERCENT;

/// RED's configuration, bytes.
#[derive(Clone, Copy, Debug)]
pub struct RedParams {
    /// bfifo child's limit.
    pub limit_bytes: u64,
    /// qth_min.
    pub min_bytes: u64,
    /// qth_max.
    pub max_bytes: u64,
    /// max_P.
    pub probability: f64,
    /// EWMA weight 2^-wlog.
    pub wlog: u32,
    /// avpkt.
    pub avpkt_bytes: u64,
    /// TC_RED_ECN.
    pub ecn: bool,
    /// TC_RED_HARDDROP.
    pub harddrop: bool,
    /// TC_RED_ADAPTATIVE.
    pub adaptive: bool,
}

/// The RED qdisc.
pub struct Red<P, R> {
    p: RedParams,
    qth_min: u64,
    qth_max: u64,
    qth_delta: u64,
    max_p: u32,
    max_p_delta: u32,
    target_min: u64,
    target_max: u64,
    /// Average queue, bytes << wlog.
    pub qavg: u64,
    qcount: i64,
    qr: u64,
    idle_since: Option<Ns>,
    avpkt_tx_ns: Ns,
    next_adapt_ns: Ns,
    q: Fifo<P>,
    st: AqmStats,
    rng: R,
}

impl<P: Packet, R: Random> Red<P, R> {
    /// red_set_parms() and red_set_vars().
    pub fn new(p: RedParams, rate_bps: u64, rng: R) -> Self {
        let delta = (p.max_bytes - p.min_bytes).max(1);
        let max_p = (p.probability * 4_294_967_296.0).min(u32::MAX as f64) as u32;
        let mut r = Red {
            qth_min: p.min_bytes << p.wlog,
            qth_max: p.max_bytes << p.wlog,
            qth_delta: delta,
            max_p,
            max_p_delta: ((max_p as u64 / delta) as u32).max(1),
            // Adaptive target [min + 0.4 (max - min), min + 0.6 (max - min)].
            target_min: p.min_bytes + 2 * (delta / 5),
            target_max: p.min_bytes + 3 * (delta / 5),
            qavg: 0,
            qcount: -1,
            qr: 0,
            idle_since: None,
            avpkt_tx_ns: tx_time_ns(p.avpkt_bytes.max(1), rate_bps).max(1),
            next_adapt_ns: 500 * MS,
            p,
            q: Fifo::default(),
            st: AqmStats::default(),
            rng,
        };
        r.qr = r.random();
        r
    }

    /// The average queue, bytes.
    pub fn avg_bytes(&self) -> f64 {
        self.qavg as f64 / (1u64 << self.p.wlog) as f64
    }

    /// red_random(): uniform in [0, 2^32 / max_p_delta), i.e. [0, delta / max_P) bytes-counts.
    fn random(&mut self) -> u64 {
        (self.rng.next_u64() >> 32) / self.max_p_delta as u64
    }

    /// The average after an idle period: qavg (1 - W)^m, m = idle / avpkt's transmission time.
    fn qavg_from_idle(&self, since: Ns, now: Ns) -> u64 {
        let m = (now - since) as f64 / self.avpkt_tx_ns as f64;
        let w = 1.0 / (1u64 << self.p.wlog) as f64;
        (self.qavg as f64 * (1.0 - w).powf(m)) as u64
    }

    /// red_adaptative_algo() every 500 ms (sch_red.c red_adaptative_timer()).
    fn adapt(&mut self, now: Ns) {
        while self.p.adaptive && self.next_adapt_ns <= now {
            let t = self.next_adapt_ns;
            let qavg = match self.idle_since {
                Some(s) if s <= t => self.qavg_from_idle(s, t),
                _ => self.qavg,
            } >> self.p.wlog;
            if qavg > self.target_max && self.max_p <= MAX_P_MAX {
                self.max_p += ONE_PERCENT.min(self.max_p / 4); // MAX_P_ALPHA
            } else if qavg < self.target_min && self.max_p >= MAX_P_MIN {
                self.max_p = (self.max_p / 10) * 9; // MAX_P_BETA
            }
            let d = self.qth_delta;
            self.max_p_delta = (((self.max_p as u64 + d / 2) / d) as u32).max(1); // DIV_ROUND_CLOSEST
            self.next_adapt_ns += 500 * MS;
        }
    }

    /// Current max_P as a fraction.
    pub fn max_p(&self) -> f64 {
        self.max_p as f64 / 4_294_967_296.0
    }

    /// red_action(): 0 don't mark, 1 probabilistic mark, 2 hard mark.
    fn action(&mut self) -> u8 {
        if self.qavg < self.qth_min {
            self.qcount = -1;
            return 0;
        }
        if self.qavg >= self.qth_max {
            self.qcount = -1;
            return 2;
        }
        self.qcount += 1;
        if self.qcount != 0 {
            // red_mark_probability(): mark once (avg - min) x count reaches the random qR.
            if ((self.qavg - self.qth_min) >> self.p.wlog) * self.qcount as u64 >= self.qr {
                self.qcount = 0;
                self.qr = self.random();
                return 1;
            }
        } else {
            self.qr = self.random();
        }
        0
    }
}

impl<P: Packet, R: Random> Aqm<P> for Red<P, R> {
    fn enqueue(&mut self, mut p: P, now: Ns, dropped: &mut Vec<P>) {
        self.adapt(now);
        // red_calc_qavg() on the child's backlog before this packet.
        if let Some(s) = self.idle_since.take() {
            self.qavg = self.qavg_from_idle(s, now);
        } else {
            let backlog = self.q.bytes();
            self.qavg = self.qavg + backlog - (self.qavg >> self.p.wlog);
        }
        let mut marked = false;
        let drop = match self.action() {
            0 => false,
            1 => {
                marked = self.p.ecn && set_ce(&mut p);
                !marked
            }
            _ => {
                marked = !self.p.harddrop && self.p.ecn && set_ce(&mut p);
                !marked
            }
        };
        if marked {
            self.st.ecn_marks += 1;
        }
        if drop || self.q.bytes() + p.size_bytes() > self.p.limit_bytes {
            self.st.drops += 1;
            dropped.push(p);
            return;
        }
        self.q.push(p, now);
    }

    fn dequeue(&mut self, now: Ns, _dropped: &mut Vec<P>) -> Option<P> {
        self.adapt(now);
        match self.q.pop() {
            Some(x) => Some(x.p),
            None => {
                if self.idle_since.is_none() {
                    self.idle_since = Some(now); // red_start_of_idle_period()
                }
                None
            }
        }
    }

    crate::one_fifo_accessors!();
}

//! CoDel (RFC 8289), as Linux implements it: include/net/codel_impl.h codel_dequeue(),
//! codel_should_drop(), codel_Newton_step(), codel_control_law() (torvalds/linux commit
//! 02d8f11dda97), and the single-queue qdisc net/sched/sch_codel.c (limit 1000 packets).
//!
//! Time is in ns here; Linux keeps codel_time_t in 1024 ns units (CODEL_SHIFT 10), a rounding
//! this model does not copy. The 1/sqrt(count) is Linux's 16-bit fixed-point Newton iteration.

use crate::{set_ce, Aqm, AqmStats, Fifo, Ns, Packet, Queued, MS};

/// REC_INV_SQRT_BITS = 16 (u16 rec_inv_sqrt) so REC_INV_SQRT_SHIFT = 32 - 16.
const REC_INV_SQRT_SHIFT: u32 = 16;

/// CoDel's parameters (struct codel_params).
#[derive(Clone, Copy, Debug)]
pub struct CodelParams {
    /// Target sojourn time.
    pub target_ns: Ns,
    /// Interval.
    pub interval_ns: Ns,
    /// Mark instead of drop.
    pub ecn: bool,
    /// CE-mark any packet whose sojourn exceeds this (None: CODEL_DISABLED_THRESHOLD).
    pub ce_threshold_ns: Option<Ns>,
}

impl CodelParams {
    /// Checked parameters; codel_params_init() defaults are 5 ms and 100 ms.
    pub fn new(
        target_ns: Ns,
        interval_ns: Ns,
        ecn: bool,
        ce_threshold_ns: Option<Ns>,
    ) -> Result<Self, String> {
        if target_ns == 0 || interval_ns == 0 {
            return Err("codel target and interval must be positive".into());
        }
        Ok(CodelParams {
            target_ns,
            interval_ns,
            ecn,
            ce_threshold_ns,
        })
    }

    /// Linux's defaults (codel_params_init()).
    pub fn linux_default() -> Self {
        CodelParams {
            target_ns: 5 * MS,
            interval_ns: 100 * MS,
            ecn: false,
            ce_threshold_ns: None,
        }
    }
}

/// CoDel's per-queue state (struct codel_vars).
#[derive(Clone, Debug, Default)]
pub struct CodelVars {
    /// Drops (or marks) since entering the dropping state.
    pub count: u32,
    /// count at the last entry to the dropping state.
    pub lastcount: u32,
    /// In the dropping state.
    pub dropping: bool,
    /// 1/sqrt(count), Q0.16.
    pub rec_inv_sqrt: u16,
    /// When the sojourn time will have been above target for an interval (0: below).
    pub first_above_time: Ns,
    /// When the next drop is due.
    pub drop_next: Ns,
    /// Sojourn time of the last packet dequeued.
    pub ldelay: Ns,
}

/// Where codel_dequeue() takes packets from: one FIFO (sch_codel) or one flow of FQ-CoDel. The
/// backlog it tests is the qdisc's whole backlog after the packet is taken out.
pub trait Source<P> {
    /// Take the next packet of this queue.
    fn pop(&mut self) -> Option<Queued<P>>;
    /// The qdisc's backlog, bytes.
    fn backlog_bytes(&self) -> u64;
}

/// codel_Newton_step(): rec_inv_sqrt <- rec_inv_sqrt / 2 * (3 - count * rec_inv_sqrt^2).
pub fn newton_step(v: &mut CodelVars) {
    let invsqrt = (v.rec_inv_sqrt as u32) << REC_INV_SQRT_SHIFT;
    let invsqrt2 = ((invsqrt as u64 * invsqrt as u64) >> 32) as u32;
    let mut val: u64 = (3u64 << 32).wrapping_sub(v.count as u64 * invsqrt2 as u64);
    val >>= 2; // avoid overflow in the multiply
    val = (val * invsqrt as u64) >> (32 - 2 + 1);
    v.rec_inv_sqrt = (val >> REC_INV_SQRT_SHIFT) as u16;
}

/// codel_control_law(): t + interval / sqrt(count), via reciprocal_scale().
pub fn control_law(t: Ns, interval_ns: Ns, rec_inv_sqrt: u16) -> Ns {
    let scale = (rec_inv_sqrt as u64) << REC_INV_SQRT_SHIFT;
    t + ((interval_ns as u128 * scale as u128) >> 32) as Ns
}

/// codel_should_drop().
fn should_drop<P: Packet>(
    x: Option<&Queued<P>>,
    v: &mut CodelVars,
    prm: &CodelParams,
    backlog: u64,
    now: Ns,
) -> bool {
    let Some(x) = x else {
        v.first_above_time = 0;
        return false;
    };
    v.ldelay = now - x.enqueue_ns;
    if v.ldelay < prm.target_ns || backlog <= P::MTU_BYTES {
        // went below: stay below for at least an interval
        v.first_above_time = 0;
        return false;
    }
    if v.first_above_time == 0 {
        v.first_above_time = now + prm.interval_ns;
        false
    } else {
        now > v.first_above_time
    }
}

/// codel_dequeue(): the next packet to send from `src`, dropping (or marking) as CoDel decides.
pub fn dequeue<P: Packet>(
    src: &mut dyn Source<P>,
    prm: &CodelParams,
    v: &mut CodelVars,
    st: &mut AqmStats,
    now: Ns,
    dropped: &mut Vec<P>,
) -> Option<P> {
    let mut x = src.pop();
    if x.is_none() {
        v.dropping = false;
        return None;
    }
    let mut drop = should_drop(x.as_ref(), v, prm, src.backlog_bytes(), now);
    if v.dropping {
        if !drop {
            v.dropping = false; // sojourn below target: leave the dropping state
        } else if now >= v.drop_next {
            // Time for the next drop; a large backlog may make several due now.
            while v.dropping && now >= v.drop_next {
                v.count = v.count.wrapping_add(1);
                newton_step(v);
                let cur = x.as_mut().expect("a packet is held here");
                if prm.ecn && set_ce(&mut cur.p) {
                    st.ecn_marks += 1;
                    v.drop_next = control_law(v.drop_next, prm.interval_ns, v.rec_inv_sqrt);
                    return finish(x, prm, v, st);
                }
                st.drops += 1;
                dropped.push(x.take().expect("held").p);
                x = src.pop();
                if !should_drop(x.as_ref(), v, prm, src.backlog_bytes(), now) {
                    v.dropping = false;
                } else {
                    v.drop_next = control_law(v.drop_next, prm.interval_ns, v.rec_inv_sqrt);
                }
            }
        }
    } else if drop {
        let cur = x.as_mut().expect("a packet is held here");
        if prm.ecn && set_ce(&mut cur.p) {
            st.ecn_marks += 1;
        } else {
            st.drops += 1;
            dropped.push(x.take().expect("held").p);
            x = src.pop();
            drop = should_drop(x.as_ref(), v, prm, src.backlog_bytes(), now);
            let _ = drop; // Linux recomputes it here and does not use it further
        }
        v.dropping = true;
        // If we went above target soon after last leaving the dropping state, the drop rate
        // that controlled the queue then is a good starting point now.
        let delta = v.count.wrapping_sub(v.lastcount);
        if delta > 1 && (now as i64 - v.drop_next as i64) < 16 * prm.interval_ns as i64 {
            v.count = delta;
            newton_step(v);
        } else {
            v.count = 1;
            v.rec_inv_sqrt = (!0u32 >> REC_INV_SQRT_SHIFT) as u16;
        }
        v.lastcount = v.count;
        v.drop_next = control_law(now, prm.interval_ns, v.rec_inv_sqrt);
    }
    finish(x, prm, v, st)
}

/// The `end:` label: ce_threshold marking of the packet being sent.
fn finish<P: Packet>(
    x: Option<Queued<P>>,
    prm: &CodelParams,
    v: &CodelVars,
    st: &mut AqmStats,
) -> Option<P> {
    let mut x = x?;
    if let Some(th) = prm.ce_threshold_ns {
        if v.ldelay > th && set_ce(&mut x.p) {
            st.ecn_marks += 1;
        }
    }
    Some(x.p)
}

/// The single-queue CoDel qdisc (sch_codel.c): tail drop at `limit`, CoDel at dequeue.
pub struct Codel<P> {
    prm: CodelParams,
    v: CodelVars,
    st: AqmStats,
    q: Fifo<P>,
    limit_packets: u64,
}

impl<P: Packet> Codel<P> {
    /// A CoDel queue.
    pub fn new(prm: CodelParams, limit_packets: u64) -> Self {
        Codel {
            prm,
            v: CodelVars::default(),
            st: AqmStats::default(),
            q: Fifo::default(),
            limit_packets,
        }
    }

    /// The CoDel state (for tests).
    pub fn vars(&self) -> &CodelVars {
        &self.v
    }
}

impl<P: Packet> Source<P> for Fifo<P> {
    fn pop(&mut self) -> Option<Queued<P>> {
        Fifo::pop(self)
    }
    fn backlog_bytes(&self) -> u64 {
        self.bytes()
    }
}

impl<P: Packet> Aqm<P> for Codel<P> {
    fn enqueue(&mut self, p: P, now: Ns, dropped: &mut Vec<P>) {
        // codel_qdisc_enqueue(): if (likely(qdisc_qlen(sch) < sch->limit)) enqueue, else drop.
        if self.q.len() < self.limit_packets {
            self.q.push(p, now);
        } else {
            self.st.drops += 1;
            dropped.push(p);
        }
    }

    fn dequeue(&mut self, now: Ns, dropped: &mut Vec<P>) -> Option<P> {
        dequeue(
            &mut self.q,
            &self.prm,
            &mut self.v,
            &mut self.st,
            now,
            dropped,
        )
    }

    crate::one_fifo_accessors!();
}

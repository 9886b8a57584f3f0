//! Step marking: the DCTCP switch of Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010,
//! §3.1: "mark the arriving packet with CE if the queue occupancy is greater than K upon its
//! arrival". Occupancy is the bytes waiting (the packet on the wire not counted). Packets that
//! are not ECN-capable are not marked and not dropped early: they see a drop-tail queue.

use crate::{set_ce, Aqm, AqmStats, Fifo, Ns, Packet};

/// The step-marking queue.
pub struct Step<P> {
    threshold_bytes: u64,
    limit_packets: u64,
    q: Fifo<P>,
    st: AqmStats,
}

impl<P: Packet> Step<P> {
    /// Marking threshold K (bytes) and a drop-tail limit (packets).
    pub fn new(threshold_bytes: u64, limit_packets: u64) -> Self {
        Step {
            threshold_bytes,
            limit_packets,
            q: Fifo::default(),
            st: AqmStats::default(),
        }
    }
}

impl<P: Packet> Aqm<P> for Step<P> {
    fn enqueue(&mut self, mut p: P, now: Ns, dropped: &mut Vec<P>) {
        if self.q.len() >= self.limit_packets {
            self.st.drops += 1;
            dropped.push(p);
            return;
        }
        if self.q.bytes() > self.threshold_bytes && set_ce(&mut p) {
            self.st.ecn_marks += 1;
        }
        self.q.push(p, now);
    }

    fn dequeue(&mut self, _now: Ns, _dropped: &mut Vec<P>) -> Option<P> {
        self.q.pop().map(|x| x.p)
    }

    crate::one_fifo_accessors!();
}

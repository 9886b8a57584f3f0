//! FQ-CoDel (RFC 8290) as Linux's net/sched/sch_fq_codel.c implements it (torvalds/linux
//! fq_codel_enqueue(), fq_codel_dequeue(), fq_codel_drop()): flows hashed into buckets, deficit
//! round robin with a new-flows list served before the old-flows list, CoDel per flow (its
//! backlog test on the whole qdisc's backlog), and on overflow a batch dropped from the head of
//! the fattest flow. Defaults (the Python side fills them): 1024 flows, quantum 1514 bytes,
//! limit 10240 packets, target 5 ms, interval 100 ms, ECN on, drop_batch 64.
//!
//! Not modelled: memory_limit (32 MB by default; the packet limit binds first in these runs) and
//! the per-boot hash perturbation (a seed-derived key instead, so runs are reproducible).

use crate::codel::{self, CodelParams, CodelVars, Source};
use crate::{Aqm, AqmStats, Fifo, Ns, Packet, Queued};
use std::collections::VecDeque;

struct Flow<P> {
    q: Fifo<P>,
    deficit: i64,
    cvars: CodelVars,
    /// On new_flows or old_flows.
    listed: bool,
}

impl<P> Default for Flow<P> {
    fn default() -> Self {
        Flow {
            q: Fifo::default(),
            deficit: 0,
            cvars: CodelVars::default(),
            listed: false,
        }
    }
}

/// The FQ-CoDel qdisc.
pub struct FqCodel<P> {
    prm: CodelParams,
    st: AqmStats,
    flows: Vec<Flow<P>>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    quantum: i64,
    limit_packets: u64,
    drop_batch: u32,
    qlen: u64,
    backlog: u64,
    hash_key: u64,
    last_enqueue_ns: Ns,
}

/// One flow's queue seen through the qdisc's totals, for codel_dequeue().
struct FlowSource<'a, P> {
    q: &'a mut Fifo<P>,
    qlen: &'a mut u64,
    backlog: &'a mut u64,
}

impl<P: Packet> Source<P> for FlowSource<'_, P> {
    fn pop(&mut self) -> Option<Queued<P>> {
        let x = self.q.pop()?;
        *self.qlen -= 1;
        *self.backlog -= x.p.size_bytes();
        Some(x)
    }
    fn backlog_bytes(&self) -> u64 {
        *self.backlog
    }
}

impl<P: Packet> FqCodel<P> {
    /// An FQ-CoDel qdisc.
    pub fn new(
        prm: CodelParams,
        limit_packets: u64,
        flows: u32,
        quantum_bytes: u32,
        drop_batch: u32,
        hash_key: u64,
    ) -> Self {
        FqCodel {
            prm,
            st: AqmStats::default(),
            flows: (0..flows).map(|_| Flow::default()).collect(),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            quantum: quantum_bytes as i64,
            limit_packets,
            drop_batch,
            qlen: 0,
            backlog: 0,
            hash_key,
            last_enqueue_ns: 0,
        }
    }

    /// fq_codel_classify(): the bucket of a packet's 5-tuple (its [`Packet::flow_key`]).
    fn classify(&self, p: &P) -> usize {
        let mut h = p.flow_key();
        // splitmix64 finaliser keyed by the seed (Linux: jhash with a random perturbation)
        h ^= self.hash_key;
        h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        h ^= h >> 31;
        ((h as u128 * self.flows.len() as u128) >> 64) as usize // reciprocal_scale()
    }

    /// fq_codel_drop(): drop from the head of the fattest flow until it has lost half its
    /// backlog or `drop_batch` packets.
    fn drop_fattest(&mut self, dropped: &mut Vec<P>) {
        let (idx, maxbacklog) = self
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| (i, f.q.bytes()))
            .fold((0, 0), |best, x| if x.1 > best.1 { x } else { best });
        let threshold = maxbacklog >> 1;
        let f = &mut self.flows[idx];
        let mut len = 0;
        let mut i = 0;
        while let Some(x) = f.q.pop() {
            len += x.p.size_bytes();
            self.qlen -= 1;
            self.backlog -= x.p.size_bytes();
            self.st.drops += 1;
            dropped.push(x.p);
            i += 1;
            if len >= threshold || i >= self.drop_batch {
                break;
            }
        }
    }
}

impl<P: Packet> Aqm<P> for FqCodel<P> {
    fn enqueue(&mut self, p: P, now: Ns, dropped: &mut Vec<P>) {
        let idx = self.classify(&p);
        let size = p.size_bytes();
        let f = &mut self.flows[idx];
        f.q.push(p, now);
        self.backlog += size;
        if !f.listed {
            f.listed = true;
            f.deficit = self.quantum;
            self.new_flows.push_back(idx as u32);
        }
        self.qlen += 1;
        if self.qlen <= self.limit_packets {
            return;
        }
        // Over the limit: fq_codel_drop() the fattest flow's head (the arriving packet stays).
        self.drop_fattest(dropped);
    }

    fn dequeue(&mut self, now: Ns, dropped: &mut Vec<P>) -> Option<P> {
        loop {
            let from_new = !self.new_flows.is_empty();
            let head = if from_new {
                &mut self.new_flows
            } else {
                &mut self.old_flows
            };
            let &idx = head.front()?;
            let f = &mut self.flows[idx as usize];
            if f.deficit <= 0 {
                f.deficit += self.quantum;
                head.pop_front();
                self.old_flows.push_back(idx);
                continue;
            }
            let mut src = FlowSource {
                q: &mut f.q,
                qlen: &mut self.qlen,
                backlog: &mut self.backlog,
            };
            let got = codel::dequeue(
                &mut src,
                &self.prm,
                &mut f.cvars,
                &mut self.st,
                now,
                dropped,
            );
            match got {
                Some(p) => {
                    f.deficit -= p.size_bytes() as i64;
                    self.last_enqueue_ns = f.q.last_popped_enqueue_ns;
                    return Some(p);
                }
                None => {
                    // An empty new flow goes to the old list once (so it cannot starve the old
                    // ones); an empty old flow leaves the lists.
                    head.pop_front();
                    if from_new && !self.old_flows.is_empty() {
                        self.old_flows.push_back(idx);
                    } else {
                        f.listed = false;
                    }
                }
            }
        }
    }

    fn len_packets(&self) -> u64 {
        self.qlen
    }

    fn len_bytes(&self) -> u64 {
        self.backlog
    }

    fn stats(&self) -> AqmStats {
        self.st
    }

    fn last_enqueue_ns(&self) -> Ns {
        self.last_enqueue_ns
    }
}

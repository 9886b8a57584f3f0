//! The network: egress ports (drop-tail FIFO + serialiser + propagation pipe), shared switch
//! buffers, and static shortest-path routes.

use crate::config::{DirConfig, LinkConfig, NodeKind};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::{tx_time_ns, Ns, SEC};
use std::collections::VecDeque;

/// Why a port refused a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drop {
    /// The FIFO (or the switch's shared pool) was full.
    Buffer,
    /// Bernoulli random loss on the link.
    Random,
}

/// The egress side of one link direction.
///
/// A FIFO with a constant-rate server knows when each packet will start and finish its
/// transmission the moment it is admitted, so a port needs no "transmission done" event: a packet
/// goes straight into `pipe` with its arrival time at the far end, and the queue's occupancy is
/// brought up to date lazily (`advance`). One event per packet per hop remains (the arrival).
pub struct Port {
    /// Sending node.
    pub from: u32,
    /// Receiving node.
    pub to: u32,
    /// Rate, bit/s of IP packets.
    pub rate_bps: u64,
    /// One-way propagation delay.
    pub delay_ns: Ns,
    /// Serialisation time per byte when the rate divides 8 Gbit/s exactly (the common case).
    ns_per_byte: Option<u64>,
    loss: f64,
    jitter_ns: Ns,
    drop_arrivals: Vec<u64>,
    arrivals: u64,
    limit_packets: Option<u64>,
    limit_bytes: Option<u64>,
    /// Shared buffer pool of the owning switch, if any.
    pub pool: Option<u32>,
    /// Packets admitted but not yet being transmitted: (transmission start, size).
    waiting: VecDeque<(Ns, u32)>,
    /// Bytes waiting (the packet being serialised is not counted, as in a qdisc).
    pub queue_bytes: u64,
    /// When the server is free again.
    busy_until: Ns,
    /// Every admitted packet with its arrival time at `to`, in FIFO order.
    pub pipe: VecDeque<(Ns, Packet)>,
    rng: Rng,
    sched_bytes: u64,
    sched_packets: u64,
    /// Packets dropped because the buffer was full.
    pub drops: u64,
    /// Packets dropped by random loss.
    pub losses: u64,
    /// Largest FIFO length seen, packets.
    pub max_queue_packets: u64,
}

impl Port {
    /// A port for one direction of a link.
    pub fn new(from: u32, to: u32, d: &DirConfig, pool: Option<u32>, rng: Rng) -> Self {
        Port {
            from,
            to,
            rate_bps: d.rate_bps,
            delay_ns: d.delay_ns,
            ns_per_byte: (8 * SEC)
                .is_multiple_of(d.rate_bps)
                .then(|| 8 * SEC / d.rate_bps),
            loss: d.loss,
            jitter_ns: d.jitter_ns,
            drop_arrivals: d.drop_arrivals.clone(),
            arrivals: 0,
            limit_packets: d.buffer_packets,
            limit_bytes: d.buffer_bytes,
            pool,
            waiting: VecDeque::new(),
            queue_bytes: 0,
            busy_until: 0,
            pipe: VecDeque::new(),
            rng,
            sched_bytes: 0,
            sched_packets: 0,
            drops: 0,
            losses: 0,
            max_queue_packets: 0,
        }
    }

    /// Time to serialise `bytes` on this port, rounded up to whole nanoseconds.
    pub fn tx_time(&self, bytes: u64) -> Ns {
        match self.ns_per_byte {
            Some(k) => bytes * k,
            None => tx_time_ns(bytes, self.rate_bps),
        }
    }

    /// Bring the FIFO up to `now`: packets whose transmission has started leave it. Returns the
    /// bytes that left (for the shared pool).
    pub fn advance(&mut self, now: Ns) -> u64 {
        let mut freed = 0;
        while let Some(&(start, size)) = self.waiting.front() {
            if start > now {
                break;
            }
            self.waiting.pop_front();
            freed += size as u64;
        }
        self.queue_bytes -= freed;
        freed
    }

    /// When the FIFO will hold at most `bytes` (call `advance` first): the start time of the
    /// packet whose departure brings it there.
    pub fn when_queue_at_most(&self, bytes: u64, now: Ns) -> Ns {
        let mut remaining = self.queue_bytes;
        if remaining <= bytes {
            return now;
        }
        for &(start, size) in &self.waiting {
            remaining -= size as u64;
            if remaining <= bytes {
                return start;
            }
        }
        self.busy_until
    }

    /// Packets waiting in the FIFO (call `advance` first).
    pub fn queue_packets(&self) -> u64 {
        self.waiting.len() as u64
    }

    /// Admission at `now` (after `advance`): random loss first (netem and Dummynet drop on entry),
    /// then the drop-tail limits. `pool_free` is the free space of the shared pool, if any.
    pub fn admit(&mut self, p: &Packet, now: Ns, pool_free: Option<u64>) -> Result<(), Drop> {
        self.arrivals += 1;
        if self.rng.chance(self.loss)
            || (!self.drop_arrivals.is_empty() && self.drop_arrivals.contains(&self.arrivals))
        {
            self.losses += 1;
            return Err(Drop::Random);
        }
        if self.busy_until <= now {
            return Ok(()); // goes straight onto the wire
        }
        let size = p.size_bytes as u64;
        let over_packets = self
            .limit_packets
            .is_some_and(|l| self.waiting.len() as u64 + 1 > l);
        let over_bytes = self
            .limit_bytes
            .is_some_and(|l| self.queue_bytes + size > l);
        let over_pool = pool_free.is_some_and(|free| size > free);
        if over_packets || over_bytes || over_pool {
            self.drops += 1;
            return Err(Drop::Buffer);
        }
        Ok(())
    }

    /// Send an admitted packet: it waits its turn, is serialised, propagates. Returns its arrival
    /// time at the far end if the pipe was empty (the caller schedules that event), and the bytes
    /// it adds to the FIFO (0 if it went straight onto the wire).
    pub fn send(&mut self, p: Packet, now: Ns) -> (Option<Ns>, u64) {
        let size = p.size_bytes as u64;
        let start = self.busy_until.max(now);
        let mut queued = 0;
        if start > now {
            self.waiting.push_back((start, p.size_bytes));
            self.queue_bytes += size;
            self.max_queue_packets = self.max_queue_packets.max(self.waiting.len() as u64);
            queued = size;
        }
        self.busy_until = start + self.tx_time(size);
        self.sched_bytes += size;
        self.sched_packets += 1;
        let mut arrival = self.busy_until + self.delay_ns;
        if self.jitter_ns > 0 {
            // Host timing noise (NIC, driver, interrupts) that real testbeds always have; without
            // it equal-rate links phase-lock and one flow takes every drop (Floyd & Jacobson,
            // "On Traffic Phase Effects in Packet-Switched Gateways", 1992; ns-2's overhead_).
            // FIFO order is kept, so the rate is unchanged.
            arrival += self.rng.below(self.jitter_ns + 1);
            if let Some(&(last, _)) = self.pipe.back() {
                arrival = arrival.max(last);
            }
        }
        let was_empty = self.pipe.is_empty();
        self.pipe.push_back((arrival, p));
        (was_empty.then_some(arrival), queued)
    }

    /// Bytes and packets fully serialised by `now` (to within the jitter, if any).
    pub fn transmitted(&self, now: Ns) -> (u64, u64) {
        let (mut bytes, mut packets) = (self.sched_bytes, self.sched_packets);
        for (arrival, p) in self.pipe.iter().rev() {
            if arrival - self.delay_ns <= now {
                break;
            }
            bytes -= p.size_bytes as u64;
            packets -= 1;
        }
        (bytes, packets)
    }

    /// Packets held anywhere in this port (FIFO, wire, pipe).
    pub fn packets_held(&self) -> u64 {
        self.pipe.len() as u64
    }
}

/// One switch's shared packet buffer.
pub struct Pool {
    /// Capacity, bytes.
    pub limit_bytes: u64,
    /// Bytes currently queued in the switch's ports.
    pub used_bytes: u64,
    /// The switch's egress ports that draw on this pool.
    pub ports: Vec<u32>,
}

/// Build both ports of a link: (a -> b, b -> a).
pub fn link_ports(
    l: &LinkConfig,
    kinds: &[NodeKind],
    pools: &[Option<u32>],
    rng: &Rng,
    idx: u32,
) -> [Port; 2] {
    let pool_of = |n: u32| {
        if kinds[n as usize] == NodeKind::Switch {
            pools[n as usize]
        } else {
            None
        }
    };
    [
        Port::new(l.a, l.b, &l.ab, pool_of(l.a), rng.fork(2 * idx as u64 + 1)),
        Port::new(l.b, l.a, &l.ba, pool_of(l.b), rng.fork(2 * idx as u64 + 2)),
    ]
}

/// Next-hop ports, by static shortest path. A node with one egress port (a host) sends
/// everything through it and keeps no row, so memory grows with (routers x nodes), not nodes^2:
/// a thousand-pair dumbbell holds two rows of 2 002 entries.
pub struct Routes {
    /// The node's only egress port, or `u32::MAX` when it has several (or none).
    only: Vec<u32>,
    /// Per node with several ports: next-hop port per destination, `u32::MAX` where none.
    rows: Vec<Vec<u32>>,
}

impl Routes {
    /// The port `node` sends a packet for `dst` through (`u32::MAX`: no route).
    #[inline]
    pub fn next_hop(&self, node: u32, dst: u32) -> u32 {
        match self.only[node as usize] {
            u32::MAX => self.rows[node as usize]
                .get(dst as usize)
                .copied()
                .unwrap_or(u32::MAX),
            pi => pi,
        }
    }

    /// Whether packets from `src` reach `dst` (following next hops; a loop or a dead end is no).
    pub fn connects(&self, src: u32, dst: u32, ports: &[Port]) -> bool {
        let mut node = src;
        for _ in 0..=ports.len() {
            if node == dst {
                return true;
            }
            let pi = self.next_hop(node, dst);
            if pi == u32::MAX {
                return false;
            }
            node = ports[pi as usize].to;
        }
        false
    }
}

/// Next-hop port for every (node, destination) by breadth-first search over the ports, ties
/// broken by port order so routes are deterministic.
pub fn routes(n_nodes: usize, ports: &[Port]) -> Routes {
    let mut out_ports: Vec<Vec<u32>> = vec![Vec::new(); n_nodes];
    for (i, p) in ports.iter().enumerate() {
        out_ports[p.from as usize].push(i as u32);
    }
    let only: Vec<u32> = out_ports
        .iter()
        .map(|o| if o.len() == 1 { o[0] } else { u32::MAX })
        .collect();
    let mut rows = vec![Vec::new(); n_nodes];
    for (src, row) in rows.iter_mut().enumerate() {
        if only[src] != u32::MAX {
            continue;
        }
        // BFS from src; remember the first port used to reach each node.
        let mut first = vec![u32::MAX; n_nodes];
        let mut seen = vec![false; n_nodes];
        seen[src] = true;
        let mut q = VecDeque::new();
        for &pi in &out_ports[src] {
            let to = ports[pi as usize].to as usize;
            if !seen[to] {
                seen[to] = true;
                first[to] = pi;
                q.push_back(to);
            }
        }
        while let Some(n) = q.pop_front() {
            for &pi in &out_ports[n] {
                let to = ports[pi as usize].to as usize;
                if !seen[to] {
                    seen[to] = true;
                    first[to] = first[n];
                    q.push_back(to);
                }
            }
        }
        *row = first;
    }
    Routes { only, rows }
}

//! The network: egress ports (drop-tail FIFO + serialiser + propagation pipe), shared switch
//! buffers, and static shortest-path routes.

use crate::config::{DirConfig, LinkConfig, NodeKind};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::Ns;
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
pub struct Port {
    /// Sending node.
    pub from: u32,
    /// Receiving node.
    pub to: u32,
    /// Rate, bit/s of IP packets.
    pub rate_bps: u64,
    /// One-way propagation delay.
    pub delay_ns: Ns,
    loss: f64,
    limit_packets: Option<u64>,
    limit_bytes: Option<u64>,
    /// Shared buffer pool of the owning switch, if any.
    pub pool: Option<u32>,
    queue: VecDeque<Packet>,
    /// Bytes waiting in the FIFO (not counting the packet being serialised).
    pub queue_bytes: u64,
    /// The packet being serialised.
    pub on_wire: Option<Packet>,
    /// Packets propagating, with their arrival time at `to` (FIFO: constant delay keeps order).
    pub pipe: VecDeque<(Ns, Packet)>,
    rng: Rng,
    /// Bytes fully serialised so far.
    pub tx_bytes: u64,
    /// Packets fully serialised so far.
    pub tx_packets: u64,
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
            loss: d.loss,
            limit_packets: d.buffer_packets,
            limit_bytes: d.buffer_bytes,
            pool,
            queue: VecDeque::new(),
            queue_bytes: 0,
            on_wire: None,
            pipe: VecDeque::new(),
            rng,
            tx_bytes: 0,
            tx_packets: 0,
            drops: 0,
            losses: 0,
            max_queue_packets: 0,
        }
    }

    /// Packets waiting in the FIFO.
    pub fn queue_packets(&self) -> u64 {
        self.queue.len() as u64
    }

    /// Admission: random loss first (netem and Dummynet drop on entry), then the drop-tail limits.
    /// `pool_free` is the free space of the shared pool, if the port draws on one.
    pub fn admit(&mut self, p: &Packet, pool_free: Option<u64>) -> Result<(), Drop> {
        if self.rng.chance(self.loss) {
            self.losses += 1;
            return Err(Drop::Random);
        }
        if self.on_wire.is_none() {
            return Ok(()); // goes straight onto the wire
        }
        let size = p.size_bytes as u64;
        let over_packets = self.limit_packets.is_some_and(|l| self.queue.len() as u64 + 1 > l);
        let over_bytes = self.limit_bytes.is_some_and(|l| self.queue_bytes + size > l);
        let over_pool = pool_free.is_some_and(|free| size > free);
        if over_packets || over_bytes || over_pool {
            self.drops += 1;
            return Err(Drop::Buffer);
        }
        Ok(())
    }

    /// Put an admitted packet in the FIFO.
    pub fn enqueue(&mut self, p: Packet) {
        self.queue_bytes += p.size_bytes as u64;
        self.queue.push_back(p);
        self.max_queue_packets = self.max_queue_packets.max(self.queue.len() as u64);
    }

    /// Take the next packet from the FIFO.
    pub fn dequeue(&mut self) -> Option<Packet> {
        let p = self.queue.pop_front()?;
        self.queue_bytes -= p.size_bytes as u64;
        Some(p)
    }

    /// Packets held anywhere in this port (FIFO, wire, pipe).
    pub fn packets_held(&self) -> u64 {
        self.queue.len() as u64 + self.on_wire.is_some() as u64 + self.pipe.len() as u64
    }
}

/// One switch's shared packet buffer.
pub struct Pool {
    /// Capacity, bytes.
    pub limit_bytes: u64,
    /// Bytes currently queued in the switch's ports.
    pub used_bytes: u64,
}

/// Build both ports of a link: (a -> b, b -> a).
pub fn link_ports(l: &LinkConfig, kinds: &[NodeKind], pools: &[Option<u32>], rng: &Rng, idx: u32) -> [Port; 2] {
    let pool_of = |n: u32| if kinds[n as usize] == NodeKind::Switch { pools[n as usize] } else { None };
    [
        Port::new(l.a, l.b, &l.ab, pool_of(l.a), rng.fork(2 * idx as u64 + 1)),
        Port::new(l.b, l.a, &l.ba, pool_of(l.b), rng.fork(2 * idx as u64 + 2)),
    ]
}

/// Next-hop port for every (node, destination) by breadth-first search over the ports, ties
/// broken by port order so routes are deterministic. `u32::MAX` where no route exists.
pub fn routes(n_nodes: usize, ports: &[Port]) -> Vec<Vec<u32>> {
    let mut out_ports: Vec<Vec<u32>> = vec![Vec::new(); n_nodes];
    for (i, p) in ports.iter().enumerate() {
        out_ports[p.from as usize].push(i as u32);
    }
    let mut table = vec![vec![u32::MAX; n_nodes]; n_nodes];
    for (src, row) in table.iter_mut().enumerate() {
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
    table
}

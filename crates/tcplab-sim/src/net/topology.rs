//! Links into pairs of ports, and static shortest-path routes over them.

use super::aqm;
use super::port::Port;
use crate::config::{LinkConfig, NodeKind};
use crate::rng::Rng;
use std::collections::VecDeque;

/// Build both ports of a link: (a -> b, b -> a).
pub fn link_ports(
    l: &LinkConfig,
    kinds: &[NodeKind],
    pools: &[Option<u32>],
    rng: &Rng,
    idx: u32,
) -> Result<[Port; 2], String> {
    let pool_of = |n: u32| {
        if kinds[n as usize] == NodeKind::Switch {
            pools[n as usize]
        } else {
            None
        }
    };
    let mut ports = [
        Port::new(l.a, l.b, &l.ab, pool_of(l.a), rng.fork(2 * idx as u64 + 1)),
        Port::new(l.b, l.a, &l.ba, pool_of(l.b), rng.fork(2 * idx as u64 + 2)),
    ];
    for (k, (port, d)) in ports.iter_mut().zip([&l.ab, &l.ba]).enumerate() {
        if let Some(cfg) = &d.aqm {
            // Its own stream (1 << 41 + port), apart from the links' and the flows'.
            let stream = (1 << 41) + 2 * idx as u64 + k as u64;
            port.set_aqm(
                aqm::build(cfg, d.rate_bps, rng.fork(stream))
                    .map_err(|e| format!("link {idx}: {e}"))?,
            );
        }
    }
    Ok(ports)
}

/// The bits of a routing key that hold the destination node. A packet's `dst` is a routing key:
/// the node itself for the shortest path, or, for a flow with a route of its own (a spec's
/// `path`, an ECMP choice), the node plus (detour number + 1) << 20 (`Routes::add_path`), which
/// falls off every routing row (`next_hop` gives `u32::MAX`, `port_for` the route's port); on
/// its last hop the packet carries the node itself, so that delivery compares keys as before.
/// A detour lists only the nodes where the route leaves the shortest path towards its end, and
/// routes with the same detour share it: an ECMP leaf-spine needs one per (leaf, spine), not
/// one per flow, so 4 095 of them go a long way.
pub const NODE_MASK: u32 = (1 << 20) - 1;

/// The node a routing key leads to.
#[inline(always)]
pub fn key_node(key: u32) -> u32 {
    key & NODE_MASK
}

/// Next-hop ports, by static shortest path. A node with one egress port (a host) sends
/// everything through it and keeps no row, so memory grows with (routers x nodes), not nodes^2:
/// a thousand-pair dumbbell holds two rows of 2 002 entries. Flows with routes of their own add
/// one short list of (node, port) per direction; only their packets look them up.
pub struct Routes {
    /// The node's only egress port, or `u32::MAX` when it has several (or none).
    only: Vec<u32>,
    /// Per node with several ports: next-hop port per destination, `u32::MAX` where none.
    rows: Vec<Vec<u32>>,
    /// Per detour (its key's high bits - 1): the port each node where it leaves the shortest
    /// path sends by (elsewhere on it, the shortest path's next hop is the route's).
    paths: Vec<Vec<(u32, u32)>>,
    /// Each detour's number, to share it.
    detours: std::collections::HashMap<Vec<(u32, u32)>, u32>,
}

impl Routes {
    /// The port `node` sends a packet for `dst` through (`u32::MAX`: no route).
    #[inline]
    pub fn next_hop(&self, node: u32, dst: u32) -> u32 {
        match self.only[node as usize] {
            // A key above every node (a route of its own) falls off the row: `u32::MAX`, and
            // the simulation asks `port_for`.
            u32::MAX => self.rows[node as usize]
                .get(dst as usize)
                .copied()
                .unwrap_or(u32::MAX),
            pi => pi,
        }
    }

    /// The port `node` sends a packet with routing key `key` by, routes of their own included
    /// (`u32::MAX`: none).
    pub fn port_for(&self, node: u32, key: u32) -> u32 {
        match self.next_hop(node, key) {
            u32::MAX => self.path_hop(node, key),
            pi => pi,
        }
    }

    /// The port `node` sends by on the route of its own of key `key`: its detour's where it
    /// leaves the shortest path, else the shortest path's (`u32::MAX`: none).
    #[cold]
    #[inline(never)]
    fn path_hop(&self, node: u32, key: u32) -> u32 {
        let Some(path) = (key >> 20)
            .checked_sub(1)
            .and_then(|r| self.paths.get(r as usize))
        else {
            return u32::MAX;
        };
        path.iter()
            .find(|&&(n, _)| n == node)
            .map_or_else(|| self.next_hop(node, key_node(key)), |&(_, p)| p)
    }

    /// A route of its own along `nodes` (first to last, each linked to the next: the first port
    /// between them); returns the routing key its packets carry.
    pub fn add_path(&mut self, nodes: &[u32], ports: &[Port]) -> Result<u32, String> {
        let mut hops = Vec::with_capacity(nodes.len());
        for w in nodes.windows(2) {
            let pi = ports
                .iter()
                .position(|p| p.from == w[0] && p.to == w[1])
                .ok_or_else(|| format!("nodes {} and {} are not linked", w[0], w[1]))?;
            if hops.iter().any(|&(n, _)| n == w[0]) {
                return Err(format!("node {} is on the path twice", w[0]));
            }
            hops.push((w[0], pi as u32));
        }
        let last = *nodes.last().ok_or("an empty path")?;
        if hops.is_empty() || hops.iter().any(|&(n, _)| n == last) {
            return Err("a path needs two distinct ends".into());
        }
        // Only where the route leaves the shortest path towards `last` (a host's only port
        // takes every packet, whatever its key, so a host is never one of these).
        let detour: Vec<(u32, u32)> = hops
            .into_iter()
            .filter(|&(n, pi)| self.next_hop(n, last) != pi)
            .collect();
        if detour.is_empty() {
            return Ok(last); // the shortest path after all: keyed by the node itself
        }
        let next = self.paths.len() as u32;
        let r = *self.detours.entry(detour.clone()).or_insert(next);
        if r == next {
            self.paths.push(detour);
        }
        let key = ((r as u64 + 1) << 20) | last as u64;
        u32::try_from(key).map_err(|_| {
            "more than 4 095 distinct detours from the shortest paths (routes of their own)"
                .to_string()
        })
    }

    /// Whether packets from `src` reach `dst`, a routing key (following next hops; a loop or a
    /// dead end is no).
    pub fn connects(&self, src: u32, dst: u32, ports: &[Port]) -> bool {
        let mut node = src;
        for _ in 0..=ports.len() {
            if node == key_node(dst) {
                return true;
            }
            let pi = self.port_for(node, dst);
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
    Routes {
        only,
        rows,
        paths: Vec::new(),
        detours: Default::default(),
    }
}

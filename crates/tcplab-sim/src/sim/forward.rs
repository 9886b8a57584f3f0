//! Forwarding: a host's packets into its egress port, a packet through a node to its next
//! port (drop-tail FIFO, shared buffer, queue discipline), drops, and a pipe's head arriving
//! at the far end.

use super::*;

impl Simulation {
    /// Send the packets an endpoint on `node` produced.
    pub(super) fn flush(&mut self, node: u32, out: &mut Vec<Packet>) {
        self.created += out.len() as u64;
        for p in out.iter() {
            let h = self.slab.insert(p);
            self.forward_stored(node, h, p.dst, p.size_bytes);
        }
        out.clear();
    }

    /// A packet enters the network at `node`.
    pub(super) fn forward(&mut self, node: u32, p: Packet) {
        let h = self.slab.insert(&p);
        self.forward_stored(node, h, p.dst, p.size_bytes);
    }

    /// Route the packet stored under handle `h` (for node `dst`, `size_bytes` long) from `node`
    /// into its next port. Runs once per packet per hop: a port without a shared buffer or a
    /// discipline (every port of T1) is looked up once and takes the packet in a few lines.
    #[inline(always)]
    pub(super) fn forward_stored(&mut self, node: u32, h: u32, dst: u32, size_bytes: u32) {
        let pi = self.routes.next_hop(node, dst);
        // The bounds check indexing makes anyway (the one below is then elided): no port is a
        // packet on a route of its own (`Routes::next_hop`), so other packets pay nothing for such routes.
        if pi as usize >= self.ports.len() {
            self.forward_own_route(node, h, dst, size_bytes);
            return;
        }
        self.send_on(pi, h, dst, size_bytes);
    }

    /// Forward a packet whose routing key is a route of its own (`net::topology::Routes::
    /// add_path`) from `node`: on its last hop it carries its destination node as its key, so that
    /// it is delivered there as every packet is.
    #[cold]
    #[inline(never)]
    fn forward_own_route(&mut self, node: u32, h: u32, key: u32, size_bytes: u32) {
        let pi = self.routes.port_for(node, key);
        assert_ne!(pi, u32::MAX, "no route from {node} to {key}");
        let to = self.ports[pi as usize].to;
        let dst = if to == key_node(key) { to } else { key };
        self.send_on(pi, h, dst, size_bytes);
    }

    /// The packet under handle `h` into port `pi` (drop-tail FIFO, shared buffer, discipline).
    #[inline(always)]
    fn send_on(&mut self, pi: u32, h: u32, dst: u32, size_bytes: u32) {
        let now = self.now;
        let port = &mut self.ports[pi as usize];
        if port.shared_or_aqm() {
            self.forward_to_shared_or_aqm(pi, h, dst, size_bytes);
            return;
        }
        port.advance(now);
        if port.admit(size_bytes, now, None).is_err() {
            let p = self.slab.take(h);
            self.drop_packet(p);
            return;
        }
        if let (Some(t), _) = port.send(h, size_bytes, dst, now) {
            self.q.push(t, Action::PipeArrive(pi));
        }
    }

    /// `forward_stored` into a port of a shared-buffer switch or one with a queue discipline.
    #[inline(never)] // kept out of the per-hop code `forward_stored` is inlined into
    pub(super) fn forward_to_shared_or_aqm(&mut self, pi: u32, h: u32, dst: u32, size_bytes: u32) {
        if self.ports[pi as usize].is_impaired() {
            self.forward_impaired(pi, h, dst, size_bytes);
            return;
        }
        self.admit_and_send(pi, h, dst, size_bytes, None);
    }

    /// Admission and sending at a port of a shared-buffer switch, with a queue discipline or
    /// impairments (then `fate` is netem's for this copy, kept until it has crossed the wire).
    pub(super) fn admit_and_send(
        &mut self,
        pi: u32,
        h: u32,
        dst: u32,
        size_bytes: u32,
        fate: Option<tcplab_impair::Fate>,
    ) {
        let now = self.now;
        let pool = self.ports[pi as usize].pool();
        match pool {
            Some(pl) => self.settle_pool(pl),
            None => {
                self.ports[pi as usize].advance(now);
            }
        }
        let port = &mut self.ports[pi as usize];
        if port
            .admit(size_bytes, now, pool.map(|pl| &self.pools[pl as usize]))
            .is_err()
        {
            let p = self.slab.take(h);
            self.drop_packet(p);
            return;
        }
        if port.has_aqm() {
            let mut p = self.slab.take(h);
            p.dst = dst; // the discipline sends it on with this key (its last hop's: the node)
            self.aqm_enqueue(pi, p);
            return;
        }
        let (arrival, queued) = if port.is_impaired() {
            let sent = port.send_impaired(h, size_bytes, dst, now);
            if let (Some(f), Some(imp)) = (fate, port.impaired_mut()) {
                imp.sent(f);
            }
            sent
        } else {
            port.send(h, size_bytes, dst, now)
        };
        if let Some(pl) = pool {
            self.pools[pl as usize].used_bytes += queued;
            if queued > 0 && self.pause.is_some() {
                let start_ns = self.ports[pi as usize].last_start_ns();
                self.pause_hold(start_ns, size_bytes);
            }
        }
        if let Some(t) = arrival {
            self.q.push(t, Action::PipeArrive(pi));
        }
    }

    /// Bring every port of a shared-buffer switch up to now, releasing their pool bytes.
    pub(super) fn settle_pool(&mut self, pl: u32) {
        let mut freed = 0;
        for &pi in &self.pools[pl as usize].ports {
            freed += self.ports[pi as usize].advance(self.now);
        }
        self.pools[pl as usize].used_bytes -= freed;
    }

    pub(super) fn drop_packet(&mut self, p: Packet) {
        self.dropped += 1;
        if matches!(p.kind, Kind::Echo | Kind::EchoReply) {
            self.probe_done(&p, -1);
        } else if p.kind == Kind::Control {
            self.iperf3_lost(&p);
        }
        if let Some(a) = self.audit.as_mut() {
            a.dropped.insert(p.id);
        }
    }

    /// The packet at the head of port `pi`'s pipe arrives (its event is the queue's next).
    ///
    /// With `PREFETCH` (a network of many ports, `prefetch_arrivals`), it also starts loading
    /// what the pipe's next packet will need when it arrives: at its destination, its slot in the
    /// slab; else the first two lines of the port it goes on to. With thousands of flows these
    /// are rarely in cache, and the next arrival is a transmission time away (a few events at a
    /// fast port), time enough for the loads to complete while other events run.
    pub(super) fn pipe_arrive<const PREFETCH: bool>(&mut self, pi: u32) {
        let port = &mut self.ports[pi as usize];
        let (head, freed) = port.pop_arrived(self.now);
        let next = port.next_in_pipe().copied();
        self.q.pop_and_repeat(next.map(|e| e.arrival_ns));
        let node = port.to;
        if PREFETCH {
            if let Some(e) = next {
                if e.dst == node {
                    prefetch(self.slab.get(e.packet));
                } else if let Some(p) = self.ports.get(self.routes.next_hop(node, e.dst) as usize) {
                    prefetch(p);
                    prefetch((p as *const Port as *const u8).wrapping_add(64));
                }
            }
        }
        let port = &self.ports[pi as usize];
        if port.is_impaired() {
            self.impaired_crossed(pi, head);
            return;
        }
        if freed > 0 {
            if let Some(pl) = port.pool() {
                self.pools[pl as usize].used_bytes -= freed;
            }
        }
        self.arrived_via = pi;
        if head.dst == node {
            self.deliver(node, head.packet);
        } else {
            self.forward_stored(node, head.packet, head.dst, head.size_bytes);
        }
    }
}

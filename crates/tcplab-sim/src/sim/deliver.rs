//! Delivery: a packet reaching its destination node, handed to the flow's receiver (data), its
//! sender (ACKs), a UDP sink, a probe's far end or an iperf3 client or server (control segments).

use super::*;

impl Simulation {
    /// The packet under handle `h` has reached its destination `node`. Data segments and ACKs
    /// (nearly every delivery) are read where they lie in the slab rather than copied out of it
    /// (a whole `Packet` each time); the rare kinds are taken out first.
    #[inline(always)] // into each copy of the event loop, as it was into the one
    pub(super) fn deliver(&mut self, node: u32, h: u32) {
        self.delivered += 1;
        let p = self.slab.get(h);
        let (kind, fi) = (p.kind, p.flow as usize);
        if let Some(a) = self.audit.as_mut() {
            a.delivered.insert(p.id);
        }
        match kind {
            Kind::Data => self.deliver_data(node, h, fi),
            Kind::Ack => self.deliver_ack(node, h, fi),
            _ => {
                let p = self.slab.take(h);
                self.deliver_other(node, p);
            }
        }
    }

    #[inline(always)] // into each copy of the event loop, as it was into the one
    pub(super) fn deliver_data(&mut self, node: u32, h: u32, fi: usize) {
        let mut out = std::mem::take(&mut self.scratch);
        let p = self.slab.get(h);
        timed!(
            self,
            self.receivers[fi].on_data(p, self.now, &mut out, &mut self.next_id)
        );
        self.slab.free(h);
        if !out.is_empty() {
            // Most segments are held for the NIC's next poll and answer nothing.
            self.flush(node, &mut out);
        }
        self.scratch = out;
        self.after_receiver(fi);
    }

    #[inline(always)] // into each copy of the event loop, as it was into the one
    pub(super) fn deliver_ack(&mut self, node: u32, h: u32, fi: usize) {
        if self.record_acks {
            let row = ack_row(self.now, fi, self.slab.get(h));
            self.rec.acks.push(&row);
        }
        self.set_nic_backlog(fi);
        let mut out = std::mem::take(&mut self.scratch);
        let p = self.slab.get(h);
        timed!(
            self,
            self.senders[fi].on_ack(p, self.now, &mut out, &mut self.next_id)
        );
        self.slab.free(h);
        self.flush(node, &mut out);
        self.scratch = out;
        if self.sample_interval_ns == 0 {
            self.sample_flow(fi);
        }
        self.after_sender(fi);
    }

    /// Handshake segments, UDP and ping packets at their destination.
    pub(super) fn deliver_other(&mut self, node: u32, p: Packet) {
        let fi = p.flow as usize;
        let mut out = std::mem::take(&mut self.scratch);
        match p.kind {
            Kind::Data | Kind::Ack => unreachable!("deliver() hands these over in place"),
            Kind::Syn => {
                timed!(
                    self,
                    self.receivers[fi].on_syn(&p, self.now, &mut out, &mut self.next_id)
                );
                self.flush(node, &mut out);
                self.sync_receiver_timer(fi);
            }
            Kind::HandshakeAck => self.receivers[fi].on_handshake_ack(),
            Kind::SynAck => {
                self.set_nic_backlog(fi);
                timed!(
                    self,
                    self.senders[fi].on_synack(&p, self.now, &mut out, &mut self.next_id)
                );
                self.flush(node, &mut out);
                self.after_sender(fi);
            }
            Kind::Udp => {
                let u = &mut self.udp[fi];
                u.received += 1;
                u.received_bytes += p.size_bytes as u64;
            }
            Kind::Echo => {
                // The pinged node answers at once (Linux: icmp_echo() in net/ipv4/icmp.c, in the
                // receive softirq; its microseconds are not modelled).
                self.next_id += 1;
                let mut reply = Packet::new(
                    self.next_id,
                    Kind::EchoReply,
                    p.flow,
                    self.probes[fi].cfg.src,
                );
                reply.size_bytes = p.size_bytes;
                reply.seq = p.seq;
                reply.ts_val = p.ts_val;
                self.created += 1;
                self.forward(node, reply);
            }
            Kind::EchoReply => self.probe_done(&p, (self.now - p.ts_val) as i64),
            Kind::Control => self.iperf3_arrived(&p),
        }
        self.scratch = out;
    }
}

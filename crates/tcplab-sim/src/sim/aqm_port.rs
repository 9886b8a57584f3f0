//! Ports with a queue discipline: packets enter the discipline on arrival and leave it one at a
//! time when the wire is free (a PortDequeue event at the end of each transmission), the way a
//! Linux qdisc is drained by qdisc_restart(). Drop-tail ports do not come here.

use super::Simulation;
use crate::net::packet::Packet;
use crate::sim::engine::Action;

impl Simulation {
    /// A packet admitted (past random loss) at port `pi`, which has a discipline.
    pub(super) fn aqm_enqueue(&mut self, pi: u32, p: Packet) {
        let now = self.now;
        let mut dropped = std::mem::take(&mut self.aqm_dropped);
        let port = &mut self.ports[pi as usize];
        let aqm = port.aqm_mut().expect("port has a discipline");
        aqm.enqueue(p, now, &mut dropped);
        let held = aqm.len_packets();
        port.note_queue_packets(held);
        self.count_aqm_drops(pi, &mut dropped);
        self.aqm_dropped = dropped;
        self.aqm_dequeue(pi);
    }

    /// If the wire of port `pi` is free, send the discipline's next packet and come back when
    /// it has been serialised.
    pub(super) fn aqm_dequeue(&mut self, pi: u32) {
        let now = self.now;
        if !self.ports[pi as usize].idle(now) || self.is_paused(pi) {
            return;
        }
        let mut dropped = std::mem::take(&mut self.aqm_dropped);
        let port = &mut self.ports[pi as usize];
        let next = port
            .aqm_mut()
            .expect("port has a discipline")
            .dequeue(now, &mut dropped);
        if let Some(p) = next {
            let enqueued_ns = port.aqm().expect("discipline").last_enqueue_ns();
            if let Some(h) = port.delay_hist_mut() {
                h.add(now - enqueued_ns);
            }
            let h = self.slab.insert(&p);
            let (arrival, _) = port.send(h, p.size_bytes, p.dst, now);
            let free_at = port.busy_until();
            if let Some(t) = arrival {
                self.q.push(t, Action::PipeArrive(pi));
            }
            self.q.push(free_at, Action::PortDequeue(pi));
        }
        self.count_aqm_drops(pi, &mut dropped);
        self.aqm_dropped = dropped;
    }

    fn count_aqm_drops(&mut self, pi: u32, dropped: &mut Vec<Packet>) {
        self.ports[pi as usize].drops += dropped.len() as u64;
        for p in dropped.drain(..) {
            self.drop_packet(p);
        }
    }
}

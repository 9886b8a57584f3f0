//! Ports with impairments (net/impair.rs): netem's decisions on entry (a duplicate is a second
//! packet in the slab), the delay line after the wire (an ImpairOut event at its earliest time),
//! corrupted packets discarded where they arrive, and a schedule's changes (LinkChange events).

use super::Simulation;
use crate::net::impair::{Crossed, Held};
use crate::net::pipe::InPipe;
use crate::sim::engine::Action;

impl Simulation {
    /// A packet (handle `h`) enters impaired port `pi`: netem decides, then each copy is
    /// admitted (the link's loss, buffer) and sent as on any port.
    pub(super) fn forward_impaired(&mut self, pi: u32, h: u32, dst: u32, size_bytes: u32) {
        let imp = self.ports[pi as usize]
            .impaired_mut()
            .expect("an impaired port");
        let Some(d) = imp.decide() else {
            self.admit_and_send(pi, h, dst, size_bytes, None);
            return;
        };
        let Some(original) = d.copies[1] else {
            // Counted with the link's random losses too, as the link emulator counts them.
            imp.counts.netem_lost += 1;
            self.ports[pi as usize].losses += 1;
            let p = self.slab.take(h);
            self.drop_packet(p);
            return;
        };
        if let Some(f) = d.copies[0] {
            imp.counts.duplicated += 1;
            let p = *self.slab.get(h);
            let h2 = self.slab.insert(&p);
            self.created += 1;
            self.admit_and_send(pi, h2, dst, size_bytes, Some(f));
        }
        self.admit_and_send(pi, h, dst, size_bytes, Some(original));
    }

    /// The head of impaired port `pi`'s pipe has crossed the wire: into the delay line (or
    /// discarded if corrupted: the receiver's checksum fails).
    pub(super) fn impaired_crossed(&mut self, pi: u32, head: InPipe) {
        let now = self.now;
        let imp = self.ports[pi as usize]
            .impaired_mut()
            .expect("an impaired port");
        let held = Held {
            packet: head.packet,
            dst: head.dst,
            size_bytes: head.size_bytes,
        };
        let fate = imp.netem.is_some().then(|| imp.next_fate());
        match imp.crossed(now, held, fate) {
            Crossed::Corrupted => {
                let p = self.slab.take(head.packet);
                self.drop_packet(p);
            }
            Crossed::Held(Some(t)) => self.q.push(t, Action::ImpairOut(pi)),
            Crossed::Held(None) => {}
        }
    }

    /// Port `pi`'s delay line may have packets due: hand them on, arm the next.
    pub(super) fn impair_out(&mut self, pi: u32) {
        let now = self.now;
        let port = &mut self.ports[pi as usize];
        let to = port.to;
        let imp = port.impaired_mut().expect("an impaired port");
        if imp.armed_ns != Some(now) {
            return; // an event an earlier one replaced
        }
        imp.armed_ns = None;
        let mut due = std::mem::take(&mut self.impair_due);
        while let Some((_, h)) = imp.line.pop_due(now) {
            due.push(h);
        }
        if let Some(t) = imp.line.next_ns().and_then(|t| imp.arm_if_earlier(t)) {
            self.q.push(t, Action::ImpairOut(pi));
        }
        for h in due.drain(..) {
            if h.dst == to {
                self.deliver(to, h.packet);
            } else {
                self.forward_stored(to, h.packet, h.dst, h.size_bytes);
            }
        }
        self.impair_due = due;
    }

    /// A schedule's steps due now on port `pi`, and the event for its next.
    pub(super) fn link_change(&mut self, pi: u32) {
        let now = self.now;
        let port = &mut self.ports[pi as usize];
        let imp = port.impaired_mut().expect("an impaired port");
        let steps = imp.due_steps(now);
        let next = imp.schedule.next_ns();
        for s in &steps {
            if let Some(d) = s.delay_ns {
                port.impaired_mut().expect("impaired").latency_ns = d;
            }
            if let Some(r) = s.rate_bps {
                port.set_rate(r);
            }
            if let Some(l) = s.loss {
                port.set_loss(l);
            }
        }
        if let Some(t) = next {
            self.q.push(t, Action::LinkChange(pi));
        }
    }
}

//! The event queue: a binary heap ordered by (time, insertion sequence), so ties break the same
//! way every run. Components keep at most a few pending events each, so the heap stays small.

use crate::time::Ns;
use std::cmp::Ordering;
use std::collections::binary_heap::PeekMut;
use std::collections::BinaryHeap;

/// What happens at an event, and to which component (index into the simulation's tables).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// The packet at the head of a port's propagation pipe reaches the far end.
    PipeArrive(u32),
    /// A TCP flow starts (the application begins writing).
    FlowStart(u32),
    /// A TCP sender's timer (RTO, pacing) may be due.
    SenderTimer(u32),
    /// A TCP receiver's delayed-ACK timer may be due.
    ReceiverTimer(u32),
    /// A UDP source sends its next datagram.
    UdpSend(u32),
    /// A latency probe sends its next echo request.
    ProbeSend(u32),
    /// Periodic sampling of flow and queue state.
    Sample,
    /// A flow's iperf3-style interval boundary (`-i`).
    FlowInterval(u32),
    /// Port counters' interval boundary.
    PortInterval,
    /// A port with a queue discipline finished sending a packet: take out the next one.
    PortDequeue(u32),
}

#[derive(Debug, PartialEq, Eq)]
struct Event {
    /// (time << 64) | insertion sequence: one integer comparison orders by time, then by
    /// insertion, which makes tie-breaking deterministic.
    key: u128,
    action: Action,
}

impl Ord for Event {
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse so the earliest (then first inserted) pops first.
        other.key.cmp(&self.key)
    }
}

impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A deterministic future-event list.
#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Event>,
    seq: u64,
    /// Events processed so far.
    pub processed: u64,
}

impl EventQueue {
    /// Schedule `action` at time `t`.
    pub fn push(&mut self, t: Ns, action: Action) {
        self.seq += 1;
        self.heap.push(Event {
            key: ((t as u128) << 64) | self.seq as u128,
            action,
        });
    }

    /// The next event without removing it.
    pub fn peek(&self) -> Option<(Ns, Action)> {
        self.heap.peek().map(|e| ((e.key >> 64) as Ns, e.action))
    }

    /// Remove and return the next event.
    pub fn pop(&mut self) -> Option<(Ns, Action)> {
        self.heap.pop().map(|e| {
            self.processed += 1;
            ((e.key >> 64) as Ns, e.action)
        })
    }

    /// Remove the next event and, if `then` is given, schedule the same action at that time:
    /// exactly `pop` followed by `push(then, action)`, in one sift of the heap instead of two (a
    /// port's pipe re-arms its arrival event this way for every packet).
    pub fn pop_and_repeat(&mut self, then: Option<Ns>) {
        let Some(mut top) = self.heap.peek_mut() else {
            return;
        };
        self.processed += 1;
        match then {
            Some(t) => {
                self.seq += 1;
                top.key = ((t as u128) << 64) | self.seq as u128;
            }
            None => {
                PeekMut::pop(top);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_key_order_as_a_sorted_list_would_under_random_use() {
        // A reference: every pending (time, sequence) in a sorted Vec, the sequence counted the
        // same way; 20 000 random pushes, pops and re-arms with many equal times.
        let mut rng = crate::rng::Rng::new(7);
        let mut q = EventQueue::default();
        let mut reference: Vec<(Ns, u64, Action)> = Vec::new();
        let mut seq = 0u64;
        for i in 0..20_000u32 {
            let now = reference.first().map_or(0, |e| e.0);
            match rng.below(3) {
                0 => {
                    let t = now + rng.below(5);
                    seq += 1;
                    q.push(t, Action::UdpSend(i));
                    reference.push((t, seq, Action::UdpSend(i)));
                }
                1 => {
                    let want = (!reference.is_empty()).then(|| reference.remove(0));
                    assert_eq!(q.pop(), want.map(|(t, _, a)| (t, a)));
                }
                _ => {
                    if let Some((t, _, a)) = (!reference.is_empty()).then(|| reference.remove(0)) {
                        assert_eq!(q.peek(), Some((t, a)));
                        let then = t + rng.below(3);
                        seq += 1;
                        q.pop_and_repeat(Some(then));
                        reference.push((then, seq, a));
                    }
                }
            }
            reference.sort_by_key(|e| (e.0, e.1));
        }
    }

    #[test]
    fn events_pop_in_time_order_and_ties_in_insertion_order() {
        let mut q = EventQueue::default();
        q.push(20, Action::Sample);
        q.push(10, Action::UdpSend(1));
        q.push(10, Action::UdpSend(2));
        q.push(5, Action::PortInterval);
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (5, Action::PortInterval),
                (10, Action::UdpSend(1)),
                (10, Action::UdpSend(2)),
                (20, Action::Sample)
            ]
        );
    }

    #[test]
    fn pop_and_repeat_orders_as_pop_then_push() {
        // The same script with pop + push and with pop_and_repeat gives the same order.
        let script = |q: &mut EventQueue, fused: bool| {
            q.push(10, Action::PipeArrive(0));
            q.push(12, Action::PipeArrive(1));
            q.push(12, Action::Sample);
            let mut order = Vec::new();
            for then in [Some(12), Some(12), None, None, None] {
                let (t, a) = q.peek().expect("an event");
                order.push((t, a));
                if fused {
                    q.pop_and_repeat(then);
                } else {
                    q.pop();
                    if let Some(t2) = then {
                        q.push(t2, a);
                    }
                }
            }
            (order, q.processed)
        };
        let plain = script(&mut EventQueue::default(), false);
        let fused = script(&mut EventQueue::default(), true);
        assert_eq!(plain, fused);
        assert_eq!(
            plain.0,
            vec![
                (10, Action::PipeArrive(0)),
                (12, Action::PipeArrive(1)),
                (12, Action::Sample),
                (12, Action::PipeArrive(0)),
                (12, Action::PipeArrive(1)),
            ]
        );
    }
}

//! The event queue: a binary heap ordered by (time, insertion sequence), so ties break the same
//! way every run. Components keep at most a few pending events each, so the heap stays small.

use crate::time::Ns;
use std::cmp::Ordering;
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

    /// Time of the next event, if any.
    pub fn peek_time(&self) -> Option<Ns> {
        self.heap.peek().map(|e| (e.key >> 64) as Ns)
    }

    /// Remove and return the next event.
    pub fn pop(&mut self) -> Option<(Ns, Action)> {
        self.heap.pop().map(|e| {
            self.processed += 1;
            ((e.key >> 64) as Ns, e.action)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}

//! The event queue: a binary heap of packed (time, insertion sequence, action) keys, so ties
//! break the same way every run. With thousands of flows it holds thousands of pending events:
//! a key is one 16-byte integer (half the size of a key beside an `Action`), so a sift moves and
//! touches half the memory.

use crate::time::Ns;
use std::cmp::Reverse;
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
    /// An impaired port's delay line may have packets due.
    ImpairOut(u32),
    /// An impaired port's schedule has a change due.
    LinkChange(u32),
}

impl Action {
    /// The action as 32 bits: its variant in the top 4, its index in the low 28.
    #[inline]
    fn pack(self) -> u32 {
        let (tag, i) = match self {
            Action::PipeArrive(i) => (0, i),
            Action::FlowStart(i) => (1, i),
            Action::SenderTimer(i) => (2, i),
            Action::ReceiverTimer(i) => (3, i),
            Action::UdpSend(i) => (4, i),
            Action::ProbeSend(i) => (5, i),
            Action::Sample => (6, 0),
            Action::FlowInterval(i) => (7, i),
            Action::PortInterval => (8, 0),
            Action::PortDequeue(i) => (9, i),
            Action::ImpairOut(i) => (10, i),
            Action::LinkChange(i) => (11, i),
        };
        assert!(
            i <= INDEX_MASK,
            "event index {i} beyond the queue's 28 bits"
        );
        tag << 28 | i
    }

    #[inline]
    fn unpack(bits: u32) -> Action {
        let i = bits & INDEX_MASK;
        match bits >> 28 {
            0 => Action::PipeArrive(i),
            1 => Action::FlowStart(i),
            2 => Action::SenderTimer(i),
            3 => Action::ReceiverTimer(i),
            4 => Action::UdpSend(i),
            5 => Action::ProbeSend(i),
            6 => Action::Sample,
            7 => Action::FlowInterval(i),
            8 => Action::PortInterval,
            9 => Action::PortDequeue(i),
            10 => Action::ImpairOut(i),
            _ => Action::LinkChange(i),
        }
    }
}

const INDEX_MASK: u32 = (1 << 28) - 1;

/// An event's key: time in the top 64 bits, insertion sequence in the next 32, the packed
/// action in the low 32. Sequences are unique among pending events, so one integer comparison
/// orders by time, then by insertion; the action never decides.
type Key = u128;

#[inline]
fn key(t: Ns, seq: u32, action_bits: u32) -> Key {
    (t as u128) << 64 | (seq as u128) << 32 | action_bits as u128
}

#[inline]
fn time_of(k: Key) -> Ns {
    (k >> 64) as Ns
}

#[inline]
fn action_of(k: Key) -> Action {
    Action::unpack(k as u32)
}

/// A deterministic future-event list: events pop in (time, insertion) order.
pub struct EventQueue {
    heap: BinaryHeap<Reverse<Key>>,
    /// The last sequence number given out.
    seq: u32,
    /// When `seq` reaches this, pending events are renumbered from 1 in their order (32 bits
    /// would otherwise wrap after ~4.3 G events; far fewer are ever pending).
    seq_limit: u32,
    /// Events processed so far.
    pub processed: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            seq: 0,
            seq_limit: u32::MAX,
            processed: 0,
        }
    }
}

impl EventQueue {
    #[inline]
    fn next_seq(&mut self) -> u32 {
        if self.seq >= self.seq_limit {
            self.renumber();
        }
        self.seq += 1;
        self.seq
    }

    /// Give the pending events sequence numbers 1..=len in their current order.
    #[cold]
    fn renumber(&mut self) {
        let mut keys: Vec<Reverse<Key>> = std::mem::take(&mut self.heap).into_vec();
        keys.sort_unstable_by_key(|k| k.0);
        for (i, k) in keys.iter_mut().enumerate() {
            k.0 = k.0 & !((u32::MAX as u128) << 32) | (i as u128 + 1) << 32;
        }
        self.seq = keys.len() as u32;
        self.heap = BinaryHeap::from(keys);
    }

    /// Schedule `action` at time `t`.
    pub fn push(&mut self, t: Ns, action: Action) {
        let seq = self.next_seq();
        self.heap.push(Reverse(key(t, seq, action.pack())));
    }

    /// The next event without removing it.
    #[inline]
    pub fn peek(&self) -> Option<(Ns, Action)> {
        self.heap.peek().map(|k| (time_of(k.0), action_of(k.0)))
    }

    /// Remove and return the next event.
    pub fn pop(&mut self) -> Option<(Ns, Action)> {
        self.heap.pop().map(|k| {
            self.processed += 1;
            (time_of(k.0), action_of(k.0))
        })
    }

    /// Remove the next event and, if `then` is given, schedule the same action at that time:
    /// exactly `pop` followed by `push(then, action)`, in one sift of the heap instead of two (a
    /// port's pipe re-arms its arrival event this way for every packet).
    #[inline]
    pub fn pop_and_repeat(&mut self, then: Option<Ns>) {
        if self.heap.is_empty() {
            return;
        }
        self.processed += 1;
        match then {
            Some(t) => {
                let seq = self.next_seq();
                if let Some(mut top) = self.heap.peek_mut() {
                    // The same action, its bits as they are.
                    top.0 = key(t, seq, top.0 as u32);
                }
            }
            None => {
                self.heap.pop();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random pushes, pops and re-arms with many equal times, against a reference: every pending
    /// (time, sequence) in a sorted Vec, the sequence counted the same way. `spread` sets how far
    /// ahead events are pushed, `push_weight` how much more often pushes come than pops, so the
    /// queue can grow to thousands of events (five levels and more of the heap).
    fn against_sorted_list(
        seed: u64,
        steps: u32,
        spread: u64,
        push_weight: u64,
        q: &mut EventQueue,
    ) {
        let mut rng = crate::rng::Rng::new(seed);
        let mut reference: Vec<(Ns, u64, Action)> = Vec::new();
        let mut seq = 0u64;
        // Every variant in turn, with index i (the packing itself: every_action_survives_packing).
        let actions = |i: u32| Action::unpack((i % 12) << 28 | i);
        for i in 0..steps {
            let now = reference.first().map_or(0, |e| e.0);
            let r = rng.below(2 + push_weight);
            if r >= 2 {
                let t = now + rng.below(spread);
                seq += 1;
                q.push(t, actions(i));
                reference.push((t, seq, actions(i)));
            } else if r == 0 {
                let want = (!reference.is_empty()).then(|| reference.remove(0));
                assert_eq!(q.pop(), want.map(|(t, _, a)| (t, a)));
            } else if let Some((t, _, a)) = (!reference.is_empty()).then(|| reference.remove(0)) {
                assert_eq!(q.peek(), Some((t, a)));
                let then = t + rng.below(spread);
                seq += 1;
                q.pop_and_repeat(Some(then));
                reference.push((then, seq, a));
            }
            reference.sort_by_key(|e| (e.0, e.1));
        }
        while let Some((t, _, a)) = (!reference.is_empty()).then(|| reference.remove(0)) {
            assert_eq!(q.pop(), Some((t, a)));
        }
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn pops_in_key_order_as_a_sorted_list_would_under_random_use() {
        against_sorted_list(7, 20_000, 5, 1, &mut EventQueue::default());
        // Thousands pending, few ties.
        against_sorted_list(8, 20_000, 1_000_000, 3, &mut EventQueue::default());
    }

    #[test]
    fn renumbering_sequences_keeps_the_order() {
        // Sequence numbers run out at 50 and are renumbered from the pending events' order:
        // every few insertions while few are pending, at every insertion once 50 or more are;
        // the pops still match the reference, ties included.
        for seed in 0..4 {
            for push_weight in [1, 2] {
                let mut q = EventQueue {
                    seq_limit: 50,
                    ..EventQueue::default()
                };
                against_sorted_list(seed, 5_000, 3, push_weight, &mut q);
            }
        }
    }

    #[test]
    fn every_action_survives_packing() {
        for a in [
            Action::PipeArrive(INDEX_MASK),
            Action::FlowStart(3),
            Action::SenderTimer(0),
            Action::ReceiverTimer(7),
            Action::UdpSend(1),
            Action::ProbeSend(2),
            Action::Sample,
            Action::FlowInterval(9),
            Action::PortInterval,
            Action::PortDequeue(12),
            Action::ImpairOut(4),
            Action::LinkChange(5),
        ] {
            assert_eq!(Action::unpack(a.pack()), a);
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

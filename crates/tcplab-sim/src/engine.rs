//! The event queue: a heap ordered by (time, insertion sequence), so ties break the same way
//! every run. Components keep at most a few pending events each, so the heap stays small.

use crate::time::Ns;

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

/// A deterministic future-event list: a 4-ary min-heap of keys `(time << 64) | insertion
/// sequence`, unique, so one integer comparison orders by time and then by insertion, and the
/// pop order is the keys' order whatever the heap's shape. Keys and actions sit in separate
/// arrays: a node's four children's keys are one 64-byte cache line, and a re-armed top sinks
/// through half the levels of a binary heap (T1's queue holds ~20 events; its pipes re-arm the
/// top for nearly every event, and the binary heap's sift-down was ~9% of T1's time).
#[derive(Default)]
pub struct EventQueue {
    keys: Vec<u128>,
    actions: Vec<Action>,
    seq: u64,
    /// Events processed so far.
    pub processed: u64,
}

/// Children per heap node.
const ARITY: usize = 4;

impl EventQueue {
    fn key(&mut self, t: Ns) -> u128 {
        self.seq += 1;
        ((t as u128) << 64) | self.seq as u128
    }

    /// Schedule `action` at time `t`.
    pub fn push(&mut self, t: Ns, action: Action) {
        let key = self.key(t);
        self.keys.push(key);
        self.actions.push(action);
        self.sift_up(self.keys.len() - 1);
    }

    /// The next event without removing it.
    #[inline]
    pub fn peek(&self) -> Option<(Ns, Action)> {
        self.keys.first().map(|&k| ((k >> 64) as Ns, self.actions[0]))
    }

    /// Remove and return the next event.
    pub fn pop(&mut self) -> Option<(Ns, Action)> {
        let top = self.peek()?;
        self.processed += 1;
        let (key, action) = (self.keys.pop().expect("non-empty"), self.actions.pop().expect("non-empty"));
        if !self.keys.is_empty() {
            self.keys[0] = key;
            self.actions[0] = action;
            self.sift_down(0);
        }
        Some(top)
    }

    /// Remove the next event and, if `then` is given, schedule the same action at that time:
    /// exactly `pop` followed by `push(then, action)`, in one sift of the heap instead of two (a
    /// port's pipe re-arms its arrival event this way for every packet).
    #[inline]
    pub fn pop_and_repeat(&mut self, then: Option<Ns>) {
        if self.keys.is_empty() {
            return;
        }
        match then {
            Some(t) => {
                self.processed += 1;
                self.keys[0] = self.key(t);
                self.sift_down(0);
            }
            None => {
                self.pop();
            }
        }
    }

    fn sift_up(&mut self, mut pos: usize) {
        let (key, action) = (self.keys[pos], self.actions[pos]);
        while pos > 0 {
            let parent = (pos - 1) / ARITY;
            if self.keys[parent] <= key {
                break;
            }
            self.keys[pos] = self.keys[parent];
            self.actions[pos] = self.actions[parent];
            pos = parent;
        }
        self.keys[pos] = key;
        self.actions[pos] = action;
    }

    fn sift_down(&mut self, mut pos: usize) {
        let len = self.keys.len();
        let (key, action) = (self.keys[pos], self.actions[pos]);
        loop {
            let first = ARITY * pos + 1;
            if first >= len {
                break;
            }
            let mut best = first;
            let mut best_key = self.keys[first];
            for c in first + 1..(first + ARITY).min(len) {
                let k = self.keys[c];
                if k < best_key {
                    best = c;
                    best_key = k;
                }
            }
            if key <= best_key {
                break;
            }
            self.keys[pos] = best_key;
            self.actions[pos] = self.actions[best];
            pos = best;
        }
        self.keys[pos] = key;
        self.actions[pos] = action;
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

//! A set of byte ranges kept sorted and merged, with O(log n) lookups and O(1) work at either
//! end: the sender's SACKed ranges and the receiver's out-of-order queue.
//!
//! Both ends of TCP see ranges arrive mostly at the right end (new SACK blocks, new out-of-order
//! segments) and leave at the left end (the cumulative ACK), so a `VecDeque` of disjoint,
//! non-adjacent `[start, end)` pairs keeps every operation cheap where the traffic is, and
//! binary search finds the rest. Linux keeps its out-of-order queue as an rbtree and tries the
//! last segment first for the common append (torvalds/linux @ 35e02583 net/ipv4/tcp_input.c
//! tcp_data_queue_ofo(): `tp->out_of_order_queue`, `tp->ooo_last_skb`); `count_before` does
//! the same with the last two ranges.

use std::collections::VecDeque;

/// Disjoint, non-adjacent byte ranges `[start, end)` in increasing order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    ranges: VecDeque<(u64, u64)>,
}

impl RangeSet {
    /// Whether no byte is held.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Number of ranges.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// The lowest range.
    pub fn first(&self) -> Option<(u64, u64)> {
        self.ranges.front().copied()
    }

    /// The highest range.
    pub fn last(&self) -> Option<(u64, u64)> {
        self.ranges.back().copied()
    }

    /// Remove and return the lowest range.
    pub fn pop_first(&mut self) -> Option<(u64, u64)> {
        self.ranges.pop_front()
    }

    /// The ranges in increasing order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().copied()
    }

    /// How many ranges satisfy `before`, which holds for a prefix of them: the last two ranges
    /// are tried first (where new SACK blocks and new out-of-order data land), then a search.
    fn count_before(&self, before: impl Fn(&(u64, u64)) -> bool) -> usize {
        let n = self.ranges.len();
        match self.ranges.back() {
            None => 0,
            Some(last) if before(last) => n,
            Some(_) if n >= 2 && before(&self.ranges[n - 2]) => n - 1,
            Some(_) => self.ranges.partition_point(before),
        }
    }

    /// Index of the first range that ends at or after `x` (the one `x` is in or touches).
    fn first_ending_from(&self, x: u64) -> usize {
        self.count_before(|r| r.1 < x)
    }

    /// The range holding byte `x`, if any.
    pub fn containing(&self, x: u64) -> Option<(u64, u64)> {
        let i = self.count_before(|r| r.1 <= x);
        self.ranges.get(i).copied().filter(|r| r.0 <= x)
    }

    /// Whether `[s, e)` (non-empty) lies inside one range.
    pub fn covers(&self, s: u64, e: u64) -> bool {
        self.containing(s).is_some_and(|r| e <= r.1)
    }

    /// Add `[s, e)`, merging overlapping and adjacent ranges; returns the bytes newly covered.
    pub fn insert(&mut self, s: u64, e: u64) -> u64 {
        if e <= s {
            return 0;
        }
        let i = self.first_ending_from(s);
        let mut j = i;
        let (mut ns, mut ne, mut old) = (s, e, 0);
        while let Some(&(rs, re)) = self.ranges.get(j) {
            if rs > e {
                break;
            }
            ns = ns.min(rs);
            ne = ne.max(re);
            old += re - rs;
            j += 1;
        }
        if i == j {
            self.ranges.insert(i, (s, e));
        } else {
            self.ranges[i] = (ns, ne);
            self.ranges.drain(i + 1..j);
        }
        (ne - ns) - old
    }

    /// The first part of `[from, e)` not covered, if any (walk the gaps of a block with
    /// repeated calls from the end of the previous gap).
    pub fn next_gap(&self, from: u64, e: u64) -> Option<(u64, u64)> {
        let mut cur = from;
        let i = self.count_before(|r| r.1 <= cur);
        let mut next = self.ranges.get(i);
        if let Some(&(rs, re)) = next {
            if rs <= cur {
                cur = re;
                next = self.ranges.get(i + 1);
            }
        }
        if cur >= e {
            return None;
        }
        let gap_end = next.map_or(e, |r| r.0.min(e));
        Some((cur, gap_end))
    }

    /// Forget every byte below `x` (a cumulative ACK).
    pub fn trim_below(&mut self, x: u64) {
        while let Some(r) = self.ranges.front_mut() {
            if r.1 <= x {
                self.ranges.pop_front();
            } else {
                r.0 = r.0.max(x);
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// The reference: one bool per byte of a small sequence space.
    fn bytes_of(r: &RangeSet, n: u64) -> Vec<bool> {
        (0..n).map(|x| r.containing(x).is_some()).collect()
    }

    fn runs(bits: &[bool]) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < bits.len() {
            if bits[i] {
                let s = i;
                while i < bits.len() && bits[i] {
                    i += 1;
                }
                out.push((s as u64, i as u64));
            } else {
                i += 1;
            }
        }
        out
    }

    #[test]
    fn insert_merges_overlapping_and_adjacent_and_counts_new_bytes() {
        let mut r = RangeSet::default();
        assert_eq!(r.insert(10, 20), 10);
        assert_eq!(r.insert(30, 40), 10);
        assert_eq!(r.insert(20, 30), 10);
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(10, 40)]);
        assert_eq!(r.insert(50, 60), 10);
        assert_eq!(r.insert(0, 5), 5);
        assert_eq!(r.insert(15, 55), 10); // only 40..50 is new
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(0, 5), (10, 60)]);
    }

    #[test]
    fn gaps_of_a_block_are_its_uncovered_parts() {
        let mut r = RangeSet::default();
        r.insert(10, 20);
        r.insert(30, 40);
        let mut gaps = Vec::new();
        let mut at = 0;
        while let Some((s, e)) = r.next_gap(at, 50) {
            gaps.push((s, e));
            at = e;
        }
        assert_eq!(gaps, vec![(0, 10), (20, 30), (40, 50)]);
        assert_eq!(r.next_gap(12, 18), None);
    }

    /// Random inserts, trims and queries against a byte map (deterministic seeds).
    #[test]
    fn random_operations_match_a_byte_map() {
        const N: u64 = 200;
        for seed in 1..=40 {
            let mut rng = Rng::new(seed);
            let (mut r, mut bits) = (RangeSet::default(), vec![false; N as usize]);
            for _ in 0..300 {
                let s = rng.below(N);
                let e = (s + 1 + rng.below(20)).min(N);
                if rng.below(10) == 0 {
                    r.trim_below(s);
                    bits[..s as usize].iter_mut().for_each(|b| *b = false);
                    continue;
                }
                let new = bits[s as usize..e as usize].iter().filter(|b| !**b).count() as u64;
                assert_eq!(r.covers(s, e), new == 0, "seed {seed}");
                let mut gap_bytes = 0;
                let mut at = s;
                while let Some((gs, ge)) = r.next_gap(at, e) {
                    assert!(bits[gs as usize..ge as usize].iter().all(|b| !b));
                    gap_bytes += ge - gs;
                    at = ge;
                }
                assert_eq!(gap_bytes, new, "seed {seed}");
                assert_eq!(r.insert(s, e), new, "seed {seed}");
                bits[s as usize..e as usize]
                    .iter_mut()
                    .for_each(|b| *b = true);
                assert_eq!(r.iter().collect::<Vec<_>>(), runs(&bits), "seed {seed}");
                assert_eq!(bytes_of(&r, N), bits);
            }
        }
    }
}

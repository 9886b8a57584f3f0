//! A log-linear histogram of durations (64 sub-buckets per power of two: each bucket within
//! 1/64 = 1.6% of its lower bound), for percentiles of per-packet queueing delay and of each
//! flow's RTT samples without keeping every sample. Only the buckets from the smallest to the
//! largest sample seen are kept: a flow's RTTs span a few dozen of the ~1 300 buckets below one
//! second, and counting from bucket 0 cost 6-12 KB per flow (bench/README.md, "A workload of
//! 100 000 flows").

use crate::time::Ns;

const SUB_BITS: u32 = 6;
const SUB: u64 = 1 << SUB_BITS;

/// Counts of durations by bucket.
#[derive(Clone, Debug, Default)]
pub struct DelayHistogram {
    /// Counts of the buckets `first .. first + counts.len()`.
    counts: Vec<u64>,
    first: usize,
    /// Samples added.
    pub n: u64,
    /// Sum of the samples, ns (for the mean).
    pub sum_ns: u128,
    /// Largest sample, ns.
    pub max_ns: Ns,
}

fn bucket(d: Ns) -> usize {
    if d < SUB {
        return d as usize;
    }
    let msb = 63 - d.leading_zeros();
    let shift = msb - SUB_BITS;
    (((shift + 1) as u64) << SUB_BITS | ((d >> shift) & (SUB - 1))) as usize
}

fn lower_bound(b: usize) -> Ns {
    let b = b as u64;
    if b < SUB {
        return b;
    }
    let shift = (b >> SUB_BITS) - 1;
    (SUB | (b & (SUB - 1))) << shift
}

impl DelayHistogram {
    /// Count one duration.
    #[inline] // once per packet through a monitored port
    pub fn add(&mut self, d: Ns) {
        let b = bucket(d);
        match b
            .checked_sub(self.first)
            .and_then(|i| self.counts.get_mut(i))
        {
            Some(c) => *c += 1,
            None => self.count_in_new_bucket(b),
        }
        self.n += 1;
        self.sum_ns += d as u128;
        self.max_ns = self.max_ns.max(d);
    }

    #[cold]
    fn count_in_new_bucket(&mut self, b: usize) {
        if self.counts.is_empty() {
            self.first = b;
        } else if b < self.first {
            let below = self.first - b;
            self.counts.splice(0..0, std::iter::repeat(0).take(below));
            self.first = b;
        }
        let i = b - self.first;
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] = 1;
    }

    /// The `q` quantile (0..=1): the lower bound of the bucket holding the ceil(q n)-th sample.
    pub fn quantile(&self, q: f64) -> Option<Ns> {
        if self.n == 0 {
            return None;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(lower_bound(self.first + b));
            }
        }
        Some(self.max_ns)
    }

    /// Mean, ns.
    pub fn mean_ns(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum_ns as f64 / self.n as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_within_two_percent_and_quantiles_follow_the_samples() {
        for d in [0u64, 5, 63, 64, 65, 1000, 123_456, 5_000_000, 987_654_321] {
            let lb = lower_bound(bucket(d));
            assert!(lb <= d && (d - lb) as f64 <= d as f64 / 64.0, "{d} -> {lb}");
        }
        let mut h = DelayHistogram::default();
        for ms in 1..=100u64 {
            h.add(ms * 1_000_000);
        }
        // 50th of 1..100 ms is 50 ms, 99th is 99 ms (to the bucket's 1.6%).
        for (q, want) in [(0.5, 50e6), (0.95, 95e6), (0.99, 99e6)] {
            let got = h.quantile(q).unwrap() as f64;
            assert!(
                got <= want && got >= want * (1.0 - 1.0 / 64.0),
                "q{q}: {got}"
            );
        }
        assert_eq!(h.mean_ns(), Some(50.5e6));
    }

    #[test]
    fn keeping_only_the_used_buckets_gives_the_quantiles_of_counting_from_zero() {
        // Samples falling below and above the first ones, as a flow's RTTs do after its handshake.
        let samples: Vec<Ns> = (0..5000u64)
            .map(|i| 50_000 + (i * 7919) % 3_000_000 / (1 + i % 5))
            .collect();
        let mut h = DelayHistogram::default();
        let mut dense = vec![0u64; 2048];
        for &d in samples.iter().skip(100).chain(&samples[..100]) {
            h.add(d);
            dense[bucket(d)] += 1;
        }
        for q in [0.0, 0.01, 0.5, 0.9, 0.99, 1.0] {
            let rank = ((q * 5000.0_f64).ceil() as u64).clamp(1, 5000);
            let (mut seen, mut want) = (0, 0);
            for (b, &c) in dense.iter().enumerate() {
                seen += c;
                if seen >= rank {
                    want = lower_bound(b);
                    break;
                }
            }
            assert_eq!(h.quantile(q), Some(want), "q{q}");
        }
        assert!(h.counts.len() < 400, "{} buckets kept", h.counts.len());
    }
}

//! A histogram of durations in ns with buckets 1/64 (1.6%) wide relative to their value, so
//! percentiles of per-frame sojourn times cost 32 KB whatever the run's length.

/// Buckets: values below 64 ns exactly, then 64 per power of two.
const SUB: u32 = 6;
const BUCKETS: usize = 64 * 64;

/// The histogram.
#[derive(Clone, Debug)]
pub(crate) struct Histogram {
    counts: Vec<u64>,
    n: u64,
    sum_ns: u128,
    max_ns: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; BUCKETS],
            n: 0,
            sum_ns: 0,
            max_ns: 0,
        }
    }
}

fn bucket(v: u64) -> usize {
    if v < 1 << SUB {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // floor(log2 v) >= SUB
    (((e - SUB + 1) << SUB) as u64 + ((v >> (e - SUB)) & ((1 << SUB) - 1))) as usize
}

/// The middle of bucket `i`.
fn value(i: usize) -> u64 {
    if i < 1 << SUB {
        return i as u64;
    }
    let e = (i >> SUB) as u32 + SUB - 1;
    let lo = (1u64 << e) + (((i & ((1 << SUB) - 1)) as u64) << (e - SUB));
    lo + (1u64 << (e - SUB)) / 2
}

impl Histogram {
    /// Count one duration.
    pub(crate) fn add(&mut self, ns: u64) {
        self.counts[bucket(ns).min(BUCKETS - 1)] += 1;
        self.n += 1;
        self.sum_ns += ns as u128;
        self.max_ns = self.max_ns.max(ns);
    }

    /// Values counted.
    pub(crate) fn len(&self) -> u64 {
        self.n
    }

    /// Mean, ns.
    pub(crate) fn mean_ns(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.n as f64
        }
    }

    /// Largest, ns.
    pub(crate) fn max_ns(&self) -> u64 {
        self.max_ns
    }

    /// The q-quantile by nearest rank (0 when empty), to the bucket's middle.
    pub(crate) fn quantile(&self, q: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return value(i).min(self.max_ns);
            }
        }
        self.max_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_within_1_6_percent_and_ordered() {
        let mut last = 0;
        for v in (0..2_000_000u64)
            .step_by(7)
            .chain([u32::MAX as u64, 1 << 40])
        {
            let i = bucket(v);
            assert!(i >= last, "bucket order at {v}");
            last = i;
            let mid = value(i) as f64;
            assert!(
                (mid - v as f64).abs() <= (v as f64 / 64.0).max(0.5),
                "{v} -> {mid}"
            );
        }
    }

    #[test]
    fn quantiles_of_a_uniform_sample() {
        let mut h = Histogram::default();
        for us in 1..=10_000u64 {
            h.add(us * 1000);
        }
        assert_eq!(h.len(), 10_000);
        for (q, want) in [(0.5, 5_000_000.0), (0.95, 9_500_000.0), (0.99, 9_900_000.0)] {
            let got = h.quantile(q) as f64;
            assert!((got - want).abs() <= want / 64.0, "q{q}: {got}");
        }
        assert_eq!(h.max_ns(), 10_000_000);
        assert!((h.mean_ns() - 5_000_500.0).abs() < 1.0);
    }
}

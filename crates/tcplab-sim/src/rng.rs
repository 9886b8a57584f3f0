//! The one seeded random number generator of a run: xoshiro256** seeded through SplitMix64.
//!
//! Written here (30 lines) rather than taken from a crate so that the stream for a seed can never
//! change under us with a dependency upgrade: same seed, same bytes out, forever.

/// xoshiro256** (Blackman & Vigna, 2018).
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator whose whole stream is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        let mut x = seed;
        let mut next = || {
            // SplitMix64, the seeding procedure the xoshiro authors recommend.
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Rng {
            s: [next(), next(), next(), next()],
        }
    }

    /// A derived generator for one component, so adding a component does not shift others' streams.
    pub fn fork(&self, stream: u64) -> Rng {
        Rng::new(self.s[0] ^ stream.wrapping_mul(0xD129_0F1B_2C3E_4A5F))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1) with 53 bits of precision.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.next_f64() < p
    }

    /// Uniform integer in [0, n); n > 0.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_gives_same_stream_and_different_seeds_differ() {
        let (mut a, mut b, mut c) = (Rng::new(7), Rng::new(7), Rng::new(8));
        let xa: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let xb: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        let xc: Vec<u64> = (0..8).map(|_| c.next_u64()).collect();
        assert_eq!(xa, xb);
        assert_ne!(xa, xc);
    }

    #[test]
    fn chance_matches_its_probability() {
        let mut r = Rng::new(1);
        let n = 200_000;
        let hits = (0..n).filter(|_| r.chance(0.01)).count() as f64;
        // binomial sd = sqrt(n p (1-p)) ~ 44.5; allow 5 sd
        assert!((hits - 2000.0).abs() < 5.0 * 44.5, "hits {hits}");
    }
}

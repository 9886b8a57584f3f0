//! netem's random source: the kernel's prandom Tausworthe generator and netem's correlated draw.
//!
//! lib/random32.c prandom_u32_state() (L'Ecuyer's LFSR113) seeded as include/linux/prandom.h
//! prandom_seed_state() does, so a netem configured with `seed N` draws the same numbers. The
//! correlation is sch_netem.c get_crandom().

/// The kernel's `struct rnd_state`.
#[derive(Clone, Debug)]
pub struct Prandom {
    s: [u32; 4],
}

impl Prandom {
    /// prandom_seed_state(): one 32-bit value from the seed, each word kept above its minimum.
    pub fn new(seed: u64) -> Self {
        let i = ((seed >> 32) ^ (seed << 10) ^ seed) as u32;
        // prandom.h __seed(): `(x < m) ? x + m : x`.
        let seed_word = |m: u32| if i < m { i + m } else { i };
        Prandom {
            s: [seed_word(2), seed_word(8), seed_word(16), seed_word(128)],
        }
    }

    /// prandom_u32_state(): the next 32 bits.
    pub fn next_u32(&mut self) -> u32 {
        // TAUSWORTHE(s, a, b, c, d) = ((s & c) << d) ^ (((s << a) ^ s) >> b)
        fn taus(s: u32, a: u32, b: u32, c: u32, d: u32) -> u32 {
            ((s & c) << d) ^ (((s << a) ^ s) >> b)
        }
        let s = &mut self.s;
        s[0] = taus(s[0], 6, 13, 4_294_967_294, 18);
        s[1] = taus(s[1], 2, 27, 4_294_967_288, 2);
        s[2] = taus(s[2], 13, 21, 4_294_967_280, 7);
        s[3] = taus(s[3], 3, 12, 4_294_967_168, 13);
        s[0] ^ s[1] ^ s[2] ^ s[3]
    }
}

/// sch_netem.c `struct crndstate`: a correlation (rho, 0 = none) and the last value drawn.
#[derive(Clone, Debug, Default)]
pub struct Correlated {
    rho: u32,
    last: u32,
}

impl Correlated {
    /// init_crandom(): `last` starts from a random value (the kernel's get_random_u32(); here the
    /// caller's side stream, so the main stream stays the kernel's).
    pub fn new(rho: u32, last: u32) -> Self {
        Correlated { rho, last }
    }

    /// get_crandom(): the next value, pulled towards the last one by rho / 2^32.
    pub fn draw(&mut self, p: &mut Prandom) -> u32 {
        if self.rho == 0 {
            return p.next_u32();
        }
        let value = p.next_u32() as u64;
        let rho = self.rho as u64 + 1;
        let answer = ((value * ((1u64 << 32) - rho) + self.last as u64 * rho) >> 32) as u32;
        self.last = answer;
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tausworthe_words_keep_their_minimums_and_the_stream_repeats() {
        let mut a = Prandom::new(0);
        assert_eq!(a.s, [2, 8, 16, 128]); // __seed() lifts every word of a zero seed
        let mut b = Prandom::new(0);
        let xs: Vec<u32> = (0..100).map(|_| a.next_u32()).collect();
        assert_eq!(xs, (0..100).map(|_| b.next_u32()).collect::<Vec<_>>());
        assert!(xs.windows(2).all(|w| w[0] != w[1]));
    }

    #[test]
    fn uniform_draws_have_the_mean_and_full_correlation_sticks() {
        let mut p = Prandom::new(42);
        let n = 200_000;
        let mean = (0..n).map(|_| p.next_u32() as f64).sum::<f64>() / n as f64;
        // Uniform on [0, 2^32): mean 2^31, sd of the mean 2^32 / sqrt(12 n) ~ 2.8e6.
        assert!((mean - 2f64.powi(31)).abs() < 5.0 * 2.8e6, "{mean}");
        let mut c = Correlated::new(u32::MAX, 1234);
        assert!((0..100).all(|_| c.draw(&mut p) == 1234));
    }
}

//! One direction of the emulated link, without sockets: given each frame's kernel arrival time,
//! decide whether it is lost or dropped and when it leaves (Dummynet's pipe: a rate-limited FIFO
//! with a slot limit, then a fixed delay line).

use std::collections::VecDeque;

/// The configuration of one direction.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct PipeConfig {
    /// One-way propagation delay added to every frame, ns.
    pub(crate) delay_ns: u64,
    /// Serialisation rate in bits/s of Ethernet frame bytes (0 = no rate limit).
    pub(crate) rate_bps: u64,
    /// Frames the rate queue may hold (0 = unlimited); only with a rate.
    pub(crate) limit_frames: usize,
    /// Bernoulli loss probability per frame.
    pub(crate) loss: f64,
}

/// What happened to one arriving frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Leaves at this time (ns, same clock as the arrival).
    Depart(u64),
    /// Dropped by random loss.
    Lost,
    /// Dropped because the rate queue held `limit_frames` frames.
    QueueFull,
}

/// A small, seedable PRNG (xorshift64*) so that the same seed drops the same frames.
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator from `seed` (any value, 0 included).
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// Uniform in [0, 1).
    pub(crate) fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (x >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The state of one direction.
#[derive(Debug)]
pub(crate) struct Pipe {
    cfg: PipeConfig,
    rng: Rng,
    /// When the transmitter finishes the last queued frame, ns.
    busy_until_ns: u64,
    /// Departure-from-queue times of frames still in the rate queue.
    in_queue: VecDeque<u64>,
}

impl Pipe {
    /// A pipe with this configuration and loss seed.
    pub(crate) fn new(cfg: PipeConfig, seed: u64) -> Self {
        Pipe {
            cfg,
            rng: Rng::new(seed),
            busy_until_ns: 0,
            in_queue: VecDeque::new(),
        }
    }

    /// Decide the fate of a frame of `len_bytes` that arrived at `arrival_ns`. Arrivals must be
    /// given in order.
    pub(crate) fn admit(&mut self, arrival_ns: u64, len_bytes: usize) -> Verdict {
        // Loss first, as a lossy wire before the router would: a lost frame takes no queue slot.
        if self.cfg.loss > 0.0 && self.rng.next_f64() < self.cfg.loss {
            return Verdict::Lost;
        }
        if self.cfg.rate_bps == 0 {
            return Verdict::Depart(arrival_ns + self.cfg.delay_ns);
        }
        while self.in_queue.front().is_some_and(|&t| t <= arrival_ns) {
            self.in_queue.pop_front();
        }
        if self.cfg.limit_frames > 0 && self.in_queue.len() >= self.cfg.limit_frames {
            return Verdict::QueueFull;
        }
        let tx_ns = (len_bytes as u64 * 8 * 1_000_000_000).div_ceil(self.cfg.rate_bps);
        let done = self.busy_until_ns.max(arrival_ns) + tx_ns;
        self.busy_until_ns = done;
        self.in_queue.push_back(done);
        Verdict::Depart(done + self.cfg.delay_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_only_adds_the_delay() {
        let mut p = Pipe::new(
            PipeConfig {
                delay_ns: 20_000_000,
                ..Default::default()
            },
            1,
        );
        assert_eq!(p.admit(5, 1514), Verdict::Depart(20_000_005));
        assert_eq!(p.admit(6, 60), Verdict::Depart(20_000_006));
    }

    #[test]
    fn rate_serialises_back_to_back_frames() {
        // 1514 bytes at 100 Mbit/s = 121.12 us, rounded up to whole ns.
        let cfg = PipeConfig {
            delay_ns: 1000,
            rate_bps: 100_000_000,
            limit_frames: 0,
            loss: 0.0,
        };
        let mut p = Pipe::new(cfg, 1);
        assert_eq!(p.admit(0, 1514), Verdict::Depart(121_120 + 1000));
        assert_eq!(p.admit(0, 1514), Verdict::Depart(242_240 + 1000));
        // After the queue drains, a frame starts at its own arrival.
        assert_eq!(p.admit(1_000_000, 1514), Verdict::Depart(1_121_120 + 1000));
    }

    #[test]
    fn queue_limit_drops_the_overflow() {
        let cfg = PipeConfig {
            delay_ns: 0,
            rate_bps: 8_000_000,
            limit_frames: 2,
            loss: 0.0,
        };
        let mut p = Pipe::new(cfg, 1);
        // 1000 bytes at 8 Mbit/s = 1 ms each: two fit, the third is dropped.
        assert_eq!(p.admit(0, 1000), Verdict::Depart(1_000_000));
        assert_eq!(p.admit(0, 1000), Verdict::Depart(2_000_000));
        assert_eq!(p.admit(0, 1000), Verdict::QueueFull);
        // Once the first has left the queue there is room again.
        assert_eq!(p.admit(1_000_000, 1000), Verdict::Depart(3_000_000));
    }

    #[test]
    fn loss_rate_matches_probability_and_seed_repeats() {
        let cfg = PipeConfig {
            loss: 0.1,
            ..Default::default()
        };
        let run = |seed| {
            let mut p = Pipe::new(cfg.clone(), seed);
            (0..100_000)
                .map(|i| p.admit(i, 100) == Verdict::Lost)
                .collect::<Vec<_>>()
        };
        let a = run(7);
        let lost = a.iter().filter(|&&l| l).count();
        // Binomial(100000, 0.1): sd ~ 95; 5 sd either side.
        assert!((9_525..=10_475).contains(&lost), "lost {lost}");
        assert_eq!(a, run(7));
        assert_ne!(a, run(8));
    }
}

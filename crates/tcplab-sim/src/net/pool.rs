//! A switch's shared packet buffer and how its ports share it.

use crate::config::BufferPolicy;

/// One switch's shared packet buffer.
pub struct Pool {
    /// Capacity, bytes.
    pub limit_bytes: u64,
    /// Bytes currently queued in the switch's ports.
    pub used_bytes: u64,
    /// The switch's egress ports that draw on this pool.
    pub ports: Vec<u32>,
    /// How the ports share it.
    pub policy: BufferPolicy,
}

impl Pool {
    /// Whether a port whose queue holds `queue_bytes` may take a packet of `size` bytes now. The
    /// queue and the pool count packets waiting, not the one being serialised (as a qdisc does).
    pub fn admits(&self, queue_bytes: u64, size: u64) -> bool {
        let free = self.limit_bytes - self.used_bytes;
        if size > free {
            return false;
        }
        match self.policy {
            BufferPolicy::Complete => true,
            // Choudhury & Hahne 1998, section II: a cell for queue i is admitted iff
            // Q_i(t) < T(t) = alpha * (B - Q(t)); here in bytes, per packet. Both sides are
            // integers below 2^53, so the comparison in f64 is exact but for alpha's rounding.
            BufferPolicy::Dynamic { alpha } => (queue_bytes as f64) < alpha * free as f64,
            BufferPolicy::Static { ports } => queue_bytes + size <= self.limit_bytes / ports as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(policy: BufferPolicy) -> Pool {
        Pool {
            limit_bytes: 125_000,
            used_bytes: 0,
            ports: vec![0, 1],
            policy,
        }
    }

    /// Offer 1500-byte packets to `queues.len()` ports in turn, none leaving, until none is
    /// admitted; return each port's queue in packets.
    fn fill(mut pl: Pool, queues: usize) -> Vec<u64> {
        let mut q = vec![0u64; queues];
        loop {
            let mut any = false;
            for qi in q.iter_mut() {
                if pl.admits(*qi * 1500, 1500) {
                    *qi += 1;
                    pl.used_bytes += 1500;
                    any = true;
                }
            }
            if !any {
                return q;
            }
        }
    }

    #[test]
    fn shared_buffer_policies_admit_as_their_arithmetic_says() {
        // Complete sharing: one port takes all of B = 125000: floor(125000 / 1500) = 83 packets.
        assert_eq!(fill(pool(BufferPolicy::Complete), 1), vec![83]);
        // Dynamic threshold, alpha 1 (Choudhury & Hahne): one queue admitted while
        // q < B - q, i.e. q < 62500: 1500 x 41 = 61500 < 62500 admits the 42nd, then
        // 63000 >= 62000 refuses: 42 packets (the steady state alpha B / (1 + alpha) rounded up
        // to a packet).
        assert_eq!(
            fill(pool(BufferPolicy::Dynamic { alpha: 1.0 }), 1),
            vec![42]
        );
        // Two congested queues, alpha 1: each below B - q1 - q2; alpha B / (1 + 2 alpha) =
        // 41667 bytes: the 28th packet of each is admitted at q = 27 x 1500 = 40500 < 125000 -
        // 81000 = 44000 (and the second's at 40500 < 42500), the 29th at 42000 >= 41000 is not.
        assert_eq!(
            fill(pool(BufferPolicy::Dynamic { alpha: 1.0 }), 2),
            vec![28, 28]
        );
        // alpha 2: one queue q < 2 (B - q), q < 83333: 56 packets (55 x 1500 = 82500 < 85000).
        assert_eq!(
            fill(pool(BufferPolicy::Dynamic { alpha: 2.0 }), 1),
            vec![56]
        );
        // Static partition over 5 ports: 25000 bytes each, 16 packets (24000; 17 = 25500).
        assert_eq!(fill(pool(BufferPolicy::Static { ports: 5 }), 1), vec![16]);
        assert_eq!(
            fill(pool(BufferPolicy::Static { ports: 5 }), 2),
            vec![16, 16]
        );
    }
}

//! Latency probes: ping-like ICMP echo requests at a fixed interval (ping -i), each answered at
//! once by the far node, so its round-trip time is the path's delay at that moment, queues
//! included (flent's `ping` in rrul; tohojo/flent flent/runners.py PingRunner reads `ping -D`).

use crate::config::ProbeConfig;
use crate::time::Ns;

/// One probe flow's state.
pub struct ProbeSource {
    /// Configuration.
    pub cfg: ProbeConfig,
    /// Requests sent so far (the next one's icmp_seq is `sent + 1`, as ping counts from 1).
    pub sent: u64,
    /// Replies received.
    pub answered: u64,
    /// Requests or replies dropped in the network.
    pub lost: u64,
}

impl ProbeSource {
    /// A probe that has sent nothing yet.
    pub fn new(cfg: ProbeConfig) -> Self {
        ProbeSource {
            cfg,
            sent: 0,
            answered: 0,
            lost: 0,
        }
    }

    /// Time of request number `k` (0-based): start + k * interval, computed from the count so
    /// it never drifts.
    pub fn send_time(&self, k: u64) -> Ns {
        self.cfg.start_ns + k * self.cfg.interval_ns
    }

    /// Whether every request is sent (none is due before the probe's stop or the run's
    /// `run_stop_ns`) and each has come back or been lost.
    pub fn done(&self, run_stop_ns: Ns) -> bool {
        let next = self.send_time(self.sent);
        (next >= self.cfg.stop_ns || next > run_stop_ns) && self.answered + self.lost == self.sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    #[test]
    fn requests_follow_the_interval_from_the_start() {
        let p = ProbeSource::new(ProbeConfig {
            name: "ping0".into(),
            src: 0,
            dst: 1,
            interval_ns: 100 * MS,
            size_bytes: 84,
            start_ns: 2 * MS,
            stop_ns: 1000 * MS,
        });
        assert_eq!(p.send_time(0), 2 * MS);
        assert_eq!(p.send_time(10), 1002 * MS);
    }
}

//! Background UDP: a constant-bit-rate source (iperf3 `-u -b RATE -l SIZE`) and its sink.

use crate::config::UdpConfig;
use crate::time::{Ns, SEC};

/// A CBR source. Send times are computed from the packet count, so they never drift.
pub struct UdpSource {
    /// Configuration.
    pub cfg: UdpConfig,
    /// Datagrams sent so far.
    pub sent: u64,
    /// Bytes received at the sink.
    pub received_bytes: u64,
    /// Datagrams received at the sink.
    pub received: u64,
}

impl UdpSource {
    /// A source that has sent nothing yet.
    pub fn new(cfg: UdpConfig) -> Self {
        UdpSource {
            cfg,
            sent: 0,
            received_bytes: 0,
            received: 0,
        }
    }

    /// Time of datagram number `k` (0-based): start + k * size * 8 / rate.
    pub fn send_time(&self, k: u64) -> Ns {
        let gap_num = k as u128 * self.cfg.size_bytes as u128 * 8 * SEC as u128;
        self.cfg.start_ns + (gap_num / self.cfg.rate_bps as u128) as Ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_hundred_megabit_of_1500_byte_datagrams_is_one_every_24_microseconds() {
        let s = UdpSource::new(UdpConfig {
            name: "bg".into(),
            src: 0,
            dst: 1,
            rate_bps: 500_000_000,
            size_bytes: 1500,
            start_ns: 0,
            stop_ns: SEC,
        });
        assert_eq!(s.send_time(1), 24_000);
        assert_eq!(s.send_time(41_667), 1_000_008_000);
    }
}

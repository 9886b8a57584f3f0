//! Round-trip time estimation and the retransmission timer value (RFC 6298).

use crate::time::Ns;

/// SRTT, RTTVAR and RTO per RFC 6298 §2, with exponential backoff (§5.5).
#[derive(Clone, Debug)]
#[repr(C)] // `srtt_ns` and `rto_ns` last, next to the connection's fields the sampler reads
pub struct RttEstimator {
    /// Every sample, for the flow's RTT percentiles (latency under load).
    pub hist: crate::net::hist::DelayHistogram,
    /// Timeouts since the last sample (FreeBSD `t_rxtshift`).
    pub rxtshift: u32,
    /// Samples taken (FreeBSD `t_rttupdated`).
    pub samples: u64,
    /// Latest sample.
    pub latest_ns: Ns,
    /// RTT variation.
    pub rttvar_ns: Ns,
    /// Smallest sample seen, 0 before the first sample.
    pub min_rtt_ns: Ns,
    min_rto_ns: Ns,
    max_rto_ns: Ns,
    granularity_ns: Ns,
    /// Added to every computed RTO before the bounds (FreeBSD tcp_timer.h TCPT_RANGESET adds
    /// tcp_rexmit_slop, TCPTV_CPU_VAR = 200 ms); 0 for RFC 6298 and Linux.
    pub slop_ns: Ns,
    /// Smoothed RTT, 0 before the first sample.
    pub srtt_ns: Ns,
    /// Current RTO including backoff.
    pub rto_ns: Ns,
}

impl RttEstimator {
    /// Before any sample the RTO is `initial_rto_ns` (RFC 6298 §2.1).
    pub fn new(initial_rto_ns: Ns, min_rto_ns: Ns, max_rto_ns: Ns, granularity_ns: Ns) -> Self {
        RttEstimator {
            srtt_ns: 0,
            rttvar_ns: 0,
            min_rtt_ns: 0,
            latest_ns: 0,
            rto_ns: initial_rto_ns,
            rxtshift: 0,
            samples: 0,
            min_rto_ns,
            max_rto_ns,
            granularity_ns,
            slop_ns: 0,
            hist: Default::default(),
        }
    }

    /// Take an RTT measurement R (RFC 6298 §2.2, §2.3 with alpha = 1/8, beta = 1/4); a fresh
    /// RTO replaces any backed-off one (§5.7 discussion: backoff ends with a new sample).
    pub fn sample(&mut self, r: Ns) {
        let r = r.max(1);
        if self.srtt_ns == 0 {
            self.srtt_ns = r;
            self.rttvar_ns = r / 2;
            self.min_rtt_ns = r;
        } else {
            let diff = self.srtt_ns.abs_diff(r);
            self.rttvar_ns = (3 * self.rttvar_ns + diff) / 4;
            self.srtt_ns = (7 * self.srtt_ns + r) / 8;
            self.min_rtt_ns = self.min_rtt_ns.min(r);
        }
        self.latest_ns = r;
        self.hist.add(r);
        self.rxtshift = 0;
        self.samples += 1;
        // FreeBSD: TCP_REXMTVAL(tp) is `max(tp->t_rttmin, srtt + 4 rttvar)` (tcp_var.h;
        // rack.c RACK_REXMTVAL(tp): `max(rack_rto_min, srtt + (rttvar << 2))`) before
        // TCPT_RANGESET / RACK_TCPT_RANGESET add the slop: the minimum is 30 + 200 ms, not 200
        // ms. Without a slop this is the plain clamp.
        let value =
            (self.srtt_ns + (4 * self.rttvar_ns).max(self.granularity_ns)).max(self.min_rto_ns);
        self.rto_ns = (value + self.slop_ns).clamp(self.min_rto_ns, self.max_rto_ns);
    }

    /// Lower min_rtt with a sample that excludes ACK delay (Linux feeds tcp_update_rtt_min() with
    /// ca_rtt_us, from the newest packet an ACK covers, not with the timestamp echo).
    pub fn observe_min(&mut self, r: Ns) {
        let r = r.max(1);
        if self.min_rtt_ns == 0 || r < self.min_rtt_ns {
            self.min_rtt_ns = r;
        }
    }

    /// Double the RTO after a timeout (RFC 6298 §5.5), up to the maximum.
    pub fn backoff(&mut self) {
        self.rto_ns = (self.rto_ns * 2).min(self.max_rto_ns);
        self.rxtshift += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    #[test]
    fn first_sample_sets_srtt_and_half_rttvar() {
        let mut e = RttEstimator::new(1000 * MS, 200 * MS, 120_000 * MS, MS);
        e.sample(100 * MS);
        assert_eq!((e.srtt_ns, e.rttvar_ns), (100 * MS, 50 * MS));
        assert_eq!(e.rto_ns, 300 * MS); // 100 + 4 * 50
    }

    #[test]
    fn later_samples_use_one_eighth_and_one_quarter_gains() {
        let mut e = RttEstimator::new(1000 * MS, 0, 120_000 * MS, MS);
        e.sample(100 * MS);
        e.sample(180 * MS);
        // rttvar = 3/4 * 50 + 1/4 * |100 - 180| = 57.5; srtt = 7/8 * 100 + 1/8 * 180 = 110
        assert_eq!(e.rttvar_ns, 57_500_000);
        assert_eq!(e.srtt_ns, 110 * MS);
        assert_eq!(e.rto_ns, 110 * MS + 230 * MS);
    }

    #[test]
    fn freebsd_slop_is_added_before_the_bounds() {
        // TCPT_RANGESET(t_rxtcur, srtt + 4 rttvar, t_rttmin, max): value + 200 ms slop.
        let mut e = RttEstimator::new(1000 * MS, 30 * MS, 64_000 * MS, MS);
        e.slop_ns = 200 * MS;
        e.sample(40 * MS);
        assert_eq!(e.rto_ns, 40 * MS + 80 * MS + 200 * MS);
    }

    #[test]
    fn freebsd_minimum_is_taken_before_the_slop() {
        // A 1 ms path: max(t_rttmin 30 ms, 1 + 4 x 0.5 ms) + 200 ms slop = 230 ms, not 203 ms.
        let mut e = RttEstimator::new(1000 * MS, 30 * MS, 64_000 * MS, MS);
        e.slop_ns = 200 * MS;
        e.sample(MS);
        assert_eq!(e.rto_ns, 230 * MS);
    }

    #[test]
    fn rto_respects_min_and_backoff_respects_max() {
        let mut e = RttEstimator::new(1000 * MS, 200 * MS, 1000 * MS, MS);
        e.sample(MS);
        assert_eq!(e.rto_ns, 200 * MS);
        for _ in 0..5 {
            e.backoff();
        }
        assert_eq!(e.rto_ns, 1000 * MS);
    }
}

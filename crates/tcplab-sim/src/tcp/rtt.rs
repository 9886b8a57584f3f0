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

    /// [`Self::sample`] with Linux's estimator `l` for the variance and the RTO (its window
    /// of data: snd_una and snd_nxt at the sample).
    pub fn sample_linux(&mut self, r: Ns, l: &mut LinuxRto, snd_una: u64, snd_nxt: u64) {
        let r = r.max(1);
        let prior_srtt = self.srtt_ns;
        if prior_srtt == 0 {
            self.srtt_ns = r;
            self.min_rtt_ns = r;
        } else {
            self.srtt_ns = (7 * prior_srtt + r) / 8;
            self.min_rtt_ns = self.min_rtt_ns.min(r);
        }
        l.sample(r, prior_srtt, self.min_rto_ns, snd_una, snd_nxt);
        self.rttvar_ns = l.mdev_ns / 4;
        self.rto_ns = l.rto_ns(self.srtt_ns).min(self.max_rto_ns);
        self.latest_ns = r;
        self.hist.add(r);
        self.rxtshift = 0;
        self.samples += 1;
    }

    /// The RTO timer armed at `now`: at `now + rto_ns`, or for Linux (`l`) on its timer
    /// wheel's tick.
    pub fn rto_deadline(&self, now: Ns, l: Option<&LinuxRto>) -> Ns {
        match l {
            Some(l) => crate::time::linux_timer_fire_ns(now, self.rto_ns, l.hz, l.phase_ns),
            None => now + self.rto_ns,
        }
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

/// Linux's RTO (torvalds/linux net/ipv4/tcp_input.c tcp_rtt_estimator(), tcp_set_rto(),
/// __tcp_set_rto(), v6.18): mdev is 4 times the mean deviation, with a gain of 1/4, and only
/// 1/32 when the sample is below srtt; rttvar is the largest mdev over a window of data, at least
/// the minimum RTO, decaying by a quarter toward the window's maximum once per window; the RTO is
/// srtt + rttvar in whole jiffies (usecs_to_jiffies()).
#[derive(Clone, Debug)]
pub struct LinuxRto {
    mdev_ns: Ns,
    mdev_max_ns: Ns,
    rttvar_ns: Ns,
    rtt_seq: u64,
    /// CONFIG_HZ.
    pub hz: u64,
    /// How long after a tick time 0 is.
    pub phase_ns: Ns,
}

impl LinuxRto {
    /// The estimator of a kernel ticking `hz` times a second, time 0 `phase_ns` after a tick.
    pub fn new(hz: u64, phase_ns: Ns) -> Self {
        LinuxRto {
            mdev_ns: 0,
            mdev_max_ns: 0,
            rttvar_ns: 0,
            rtt_seq: 0,
            hz,
            phase_ns,
        }
    }

    /// tcp_rtt_estimator() for sample `m` with the srtt before it (0: the first sample).
    fn sample(&mut self, m: Ns, srtt: Ns, rto_min: Ns, snd_una: u64, snd_nxt: u64) {
        if srtt == 0 {
            // "make sure rto = 3*rtt"
            self.mdev_ns = 2 * m;
            self.rttvar_ns = self.mdev_ns.max(rto_min);
            self.mdev_max_ns = self.rttvar_ns;
            self.rtt_seq = snd_nxt;
            return;
        }
        let mdev = self.mdev_ns as i64;
        let err = m as i64 - srtt as i64;
        let delta = if err < 0 {
            let d = -err - mdev / 4;
            if d > 0 {
                d >> 3
            } else {
                d
            }
        } else {
            err - mdev / 4
        };
        self.mdev_ns = (mdev + delta).max(0) as Ns;
        if self.mdev_ns > self.mdev_max_ns {
            self.mdev_max_ns = self.mdev_ns;
            self.rttvar_ns = self.rttvar_ns.max(self.mdev_max_ns);
        }
        if snd_una > self.rtt_seq {
            if self.mdev_max_ns < self.rttvar_ns {
                self.rttvar_ns -= (self.rttvar_ns - self.mdev_max_ns) / 4;
            }
            self.rtt_seq = snd_nxt;
            self.mdev_max_ns = rto_min;
        }
    }

    /// __tcp_set_rto(): usecs_to_jiffies(srtt + rttvar), in ns.
    fn rto_ns(&self, srtt: Ns) -> Ns {
        let jiffy = crate::time::SEC / self.hz;
        let us = (srtt + self.rttvar_ns) / crate::time::US;
        (us * self.hz).div_ceil(1_000_000) * jiffy
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    /// tcp_rtt_estimator(): a first sample of 100 ms gives mdev 200 ms, rttvar max(200, 200):
    /// RTO 300 ms; a second equal sample lowers mdev by a quarter of itself (to 150 ms) but rttvar
    /// keeps the window's maximum: still 300 ms (RFC 6298 would give 100 + 4 * 37.5 = 250 ms).
    /// A 12 ms RTT: 12 + max(24, 200) = 212 ms, 53 whole jiffies of 4 ms; 12.5 ms: 212.5 ms
    /// rounds up to 54 jiffies, 216 ms.
    #[test]
    fn linux_rto_is_srtt_plus_rttvar_of_at_least_the_minimum() {
        let est = || RttEstimator::new(1000 * MS, 200 * MS, 120_000 * MS, MS);
        let (mut e, mut l) = (est(), LinuxRto::new(250, 0));
        e.sample_linux(100 * MS, &mut l, 0, 0);
        assert_eq!((e.rto_ns, e.rttvar_ns), (300 * MS, 50 * MS));
        e.sample_linux(100 * MS, &mut l, 1000, 1000);
        assert_eq!((e.rto_ns, e.rttvar_ns), (300 * MS, 150 * MS / 4));
        let (mut f, mut l) = (est(), LinuxRto::new(250, 0));
        f.sample_linux(12 * MS, &mut l, 0, 0);
        assert_eq!(f.rto_ns, 212 * MS);
        let (mut g, mut l) = (est(), LinuxRto::new(250, 0));
        g.sample_linux(12_500_000, &mut l, 0, 0);
        assert_eq!(g.rto_ns, 216 * MS);
    }

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

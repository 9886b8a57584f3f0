//! One direction of the emulated link, without sockets: given each frame's kernel arrival time,
//! decide whether it is lost or dropped and when it leaves. Either Dummynet's pipe (a
//! rate-limited FIFO with a slot limit, then a fixed delay line), or, with a queue discipline,
//! a router's egress: the discipline (crates/tcplab-aqm, the simulator's code) holds the frames
//! and a transmitter takes the next one out only when the wire is free, as Linux's
//! qdisc_restart() dequeues when the device can send, so CoDel sees the real sojourn time.

use crate::frame::Frame;
use crate::hist::Histogram;
use crate::impair::DirImpair;
use std::collections::VecDeque;
use tcplab_aqm::{tx_time_ns, Aqm, AqmConfig, AqmStats};
use tcplab_impair::{DelayLine, Fate, LinkImpair};

/// The configuration of one direction.
#[derive(Clone, Debug, Default)]
pub(crate) struct PipeConfig {
    /// One-way propagation delay added to every frame, ns.
    pub(crate) delay_ns: u64,
    /// Serialisation rate in bits/s of Ethernet frame bytes (0 = no rate limit).
    pub(crate) rate_bps: u64,
    /// Frames the rate queue may hold (0 = unlimited); only with a rate and no discipline.
    pub(crate) limit_frames: usize,
    /// Bernoulli loss probability per frame.
    pub(crate) loss: f64,
    /// A queue discipline in place of the FIFO (needs a rate; its own limit applies).
    pub(crate) aqm: Option<AqmConfig>,
    /// netem's impairments, a schedule, a trace (not with a discipline).
    pub(crate) impair: Option<LinkImpair>,
}

/// What happened to one arriving frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Accepted: it is in the queue or on the delay line.
    Accepted,
    /// Dropped by random loss.
    Lost,
    /// Dropped because the FIFO held `limit_frames` frames.
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

    /// The next 64 bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in [0, 1).
    pub(crate) fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

impl tcplab_aqm::Random for Rng {
    fn next_u64(&mut self) -> u64 {
        Rng::next_u64(self)
    }
}

/// The queue discipline of a direction and its transmitter. Its times count from the pipe's
/// epoch (when the emulator started), as a qdisc's from its creation: PIE's first probability
/// update comes 500 ms after it (pie_init()), ARED's first adaptation too.
struct Egress {
    aqm: Box<dyn Aqm<Frame> + Send>,
    /// When the wire finishes the frame it is sending (the next dequeue), ns since the epoch.
    wire_free_ns: u64,
    dropped: Vec<Frame>,
    /// Arrival to start of transmission, per frame sent.
    sojourn: Histogram,
    max_queue_frames: u64,
}

/// The state of one direction.
pub(crate) struct Pipe {
    cfg: PipeConfig,
    rng: Rng,
    /// FIFO mode: when the transmitter finishes the last queued frame, ns.
    busy_until_ns: u64,
    /// FIFO mode: departure-from-queue times of frames still in the rate queue.
    in_queue: VecDeque<u64>,
    egress: Option<Egress>,
    /// The discipline's time zero on the arrival clock, ns.
    epoch_ns: u64,
    /// Frames on the wire or propagating, by the time each leaves the emulator (netem's tfifo).
    line: DelayLine<Vec<u8>>,
    /// Impairments, if any.
    impair: Option<DirImpair>,
}

impl Pipe {
    /// A pipe with this configuration and seed (loss draws; PIE's and RED's from a second
    /// stream). Fails on a discipline without a rate or with bad parameters.
    pub(crate) fn new(cfg: PipeConfig, seed: u64) -> Result<Self, String> {
        let egress = match &cfg.aqm {
            None => None,
            Some(a) => {
                if cfg.rate_bps == 0 {
                    return Err("a queue discipline needs a rate (the wire it drains into)".into());
                }
                let rng = Rng::new(seed ^ 0xA0A0_5EED_0000_0001);
                Some(Egress {
                    aqm: tcplab_aqm::build(a, cfg.rate_bps, rng)?,
                    wire_free_ns: 0,
                    dropped: Vec::new(),
                    sojourn: Histogram::default(),
                    max_queue_frames: 0,
                })
            }
        };
        if cfg.impair.is_some() && egress.is_some() {
            return Err("impairments with a queue discipline are not supported".into());
        }
        let impair = cfg.impair.clone().map(DirImpair::new);
        Ok(Pipe {
            cfg,
            rng: Rng::new(seed),
            busy_until_ns: 0,
            in_queue: VecDeque::new(),
            egress,
            epoch_ns: 0,
            line: DelayLine::new(impair.as_ref().is_some_and(|i| i.jitter_reorders())),
            impair,
        })
    }

    /// Start the discipline's clock at `epoch_ns` on the arrival clock (CLOCK_REALTIME in the
    /// emulator; the disciplines' timers count from their creation, not from 1970).
    pub(crate) fn start_clock(&mut self, epoch_ns: u64) {
        self.epoch_ns = epoch_ns;
        self.set_time_zero(epoch_ns);
    }

    /// The run's time zero, for a schedule and a trace (CLOCK_REALTIME ns).
    pub(crate) fn set_time_zero(&mut self, t0_ns: u64) {
        if let Some(i) = self.impair.as_mut() {
            i.set_time_zero(t0_ns);
        }
    }

    /// The impairments' counters (tests).
    #[cfg(test)]
    pub(crate) fn impair_counts(&self) -> &crate::impair::Counts {
        &self.impair.as_ref().expect("impaired").counts
    }

    /// The impairments' counters, if any, as JSON.
    pub(crate) fn impair_json(&self) -> Option<String> {
        self.impair.as_ref().map(|i| i.json())
    }

    /// A frame of `data` arrived at `arrival_ns`. Arrivals must be given in order. With netem,
    /// its decision first (a duplicate is admitted before the original, as netem enqueues it).
    pub(crate) fn admit(&mut self, arrival_ns: u64, data: Vec<u8>) -> Verdict {
        let Some(imp) = self.impair.as_mut() else {
            return self.admit_copy(arrival_ns, data, None);
        };
        for s in imp.due_steps(arrival_ns) {
            self.cfg.rate_bps = s.rate_bps.unwrap_or(self.cfg.rate_bps);
            self.cfg.delay_ns = s.delay_ns.unwrap_or(self.cfg.delay_ns);
            self.cfg.loss = s.loss.unwrap_or(self.cfg.loss);
        }
        let imp = self.impair.as_mut().expect("impaired");
        let Some(d) = imp.decide(self.cfg.delay_ns) else {
            return self.admit_copy(arrival_ns, data, None);
        };
        let Some(original) = d.copies[1] else {
            imp.counts.netem_lost += 1;
            return Verdict::Lost;
        };
        if let Some(f) = d.copies[0] {
            imp.counts.duplicated += 1;
            self.admit_copy(arrival_ns, data.clone(), Some(f));
        }
        self.admit_copy(arrival_ns, data, Some(original))
    }

    /// A frame past netem's decision (`fate`, None without netem) onto the delay line when it
    /// has crossed the wire (at once without a rate).
    fn onto_line(&mut self, crossed_ns: u64, mut data: Vec<u8>, fate: Option<Fate>) {
        let f = fate.unwrap_or(Fate {
            delay_ns: self.cfg.delay_ns,
            reordered: false,
            corrupt_bit: None,
        });
        if let Some(i) = self.impair.as_mut() {
            if !i.apply(&f, &mut data) {
                return;
            }
        }
        self.line.push(crossed_ns + f.delay_ns, f.reordered, data);
    }

    /// One copy of an arriving frame: the link's loss, then the wire.
    fn admit_copy(&mut self, arrival_ns: u64, data: Vec<u8>, fate: Option<Fate>) -> Verdict {
        // Loss first, as a lossy wire before the router would: a lost frame takes no queue slot.
        if self.cfg.loss > 0.0 && self.rng.next_f64() < self.cfg.loss {
            return Verdict::Lost;
        }
        if self.egress.is_some() {
            self.enqueue(arrival_ns, Frame::new(data));
            return Verdict::Accepted;
        }
        let traced = self.impair.as_ref().is_some_and(|i| i.has_trace());
        if self.cfg.rate_bps == 0 && !traced {
            self.onto_line(arrival_ns, data, fate);
            return Verdict::Accepted;
        }
        while self.in_queue.front().is_some_and(|&t| t <= arrival_ns) {
            self.in_queue.pop_front();
        }
        if self.cfg.limit_frames > 0 && self.in_queue.len() >= self.cfg.limit_frames {
            return Verdict::QueueFull;
        }
        let start = self.busy_until_ns.max(arrival_ns);
        let done = match self.impair.as_mut().filter(|i| i.has_trace()) {
            Some(i) => i.trace_depart(arrival_ns, data.len()).max(start),
            None => start + tx_time_ns(data.len() as u64, self.cfg.rate_bps),
        };
        self.busy_until_ns = done;
        self.in_queue.push_back(done);
        self.onto_line(done, data, fate);
        Verdict::Accepted
    }

    /// Discipline mode: the transmitter runs up to the arrival (frames it would have started
    /// before), then the frame enters the discipline, then the wire takes it if it is free.
    fn enqueue(&mut self, arrival_ns: u64, frame: Frame) {
        let t = arrival_ns.saturating_sub(self.epoch_ns);
        self.transmit_since_epoch(t, false);
        let e = self.egress.as_mut().expect("discipline mode");
        if e.aqm.len_packets() == 0 && e.wire_free_ns < t {
            e.wire_free_ns = t; // the wire was idle
        }
        e.aqm.enqueue(frame, t, &mut e.dropped);
        e.max_queue_frames = e.max_queue_frames.max(e.aqm.len_packets());
        e.dropped.clear(); // counted by the discipline (stats().drops)
        self.transmit_since_epoch(t, true);
    }

    /// Dequeue every frame whose transmission starts before `now_ns` (at it too if
    /// `inclusive`), each at the instant the wire became free, onto the delay line.
    pub(crate) fn transmit(&mut self, now_ns: u64, inclusive: bool) {
        self.transmit_since_epoch(now_ns.saturating_sub(self.epoch_ns), inclusive);
    }

    fn transmit_since_epoch(&mut self, now_ns: u64, inclusive: bool) {
        let Some(e) = self.egress.as_mut() else {
            return;
        };
        while e.aqm.len_packets() > 0
            && (e.wire_free_ns < now_ns || (inclusive && e.wire_free_ns == now_ns))
        {
            let t = e.wire_free_ns;
            let next = e.aqm.dequeue(t, &mut e.dropped);
            e.dropped.clear();
            let Some(f) = next else {
                break;
            };
            e.sojourn.add(t.saturating_sub(e.aqm.last_enqueue_ns()));
            e.wire_free_ns = t + tx_time_ns(f.data.len() as u64, self.cfg.rate_bps);
            let at = self.epoch_ns + e.wire_free_ns + self.cfg.delay_ns;
            self.line.push(at, false, f.data);
        }
    }

    /// The next frame due to leave by `now_ns`, with its due time.
    pub(crate) fn pop_due(&mut self, now_ns: u64) -> Option<(u64, Vec<u8>)> {
        self.line.pop_due(now_ns)
    }

    /// When something next happens without a new arrival: a frame leaves, or the wire frees
    /// while the discipline holds frames.
    pub(crate) fn next_event_ns(&self) -> Option<u64> {
        let wire = self
            .egress
            .as_ref()
            .filter(|e| e.aqm.len_packets() > 0)
            .map(|e| self.epoch_ns + e.wire_free_ns);
        match (self.line.next_ns(), wire) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Frames and bytes the discipline holds now (0 without one).
    pub(crate) fn queue_now(&self) -> (u64, u64) {
        self.egress
            .as_ref()
            .map_or((0, 0), |e| (e.aqm.len_packets(), e.aqm.len_bytes()))
    }

    /// The discipline's counters, sojourn times and largest queue, if it has one.
    pub(crate) fn discipline(&self) -> Option<(AqmStats, &Histogram, u64)> {
        self.egress
            .as_ref()
            .map(|e| (e.aqm.stats(), &e.sojourn, e.max_queue_frames))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tcplab_aqm::ecn;

    const MS: u64 = 1_000_000;

    /// Admit one frame of `len` bytes and return when it leaves (None: dropped), for pipes
    /// without a discipline, whose departure is fixed at admission.
    fn depart(p: &mut Pipe, at: u64, len: usize) -> Option<u64> {
        match p.admit(at, vec![0; len]) {
            Verdict::Accepted => Some(p.line.last_pushed_ns()),
            _ => None,
        }
    }

    #[test]
    fn delay_only_adds_the_delay() {
        let cfg = PipeConfig {
            delay_ns: 20_000_000,
            ..Default::default()
        };
        let mut p = Pipe::new(cfg, 1).unwrap();
        assert_eq!(depart(&mut p, 5, 1514), Some(20_000_005));
        assert_eq!(depart(&mut p, 6, 60), Some(20_000_006));
    }

    #[test]
    fn rate_serialises_back_to_back_frames() {
        // 1514 bytes at 100 Mbit/s = 121.12 us, rounded up to whole ns.
        let cfg = PipeConfig {
            delay_ns: 1000,
            rate_bps: 100_000_000,
            ..Default::default()
        };
        let mut p = Pipe::new(cfg, 1).unwrap();
        assert_eq!(depart(&mut p, 0, 1514), Some(121_120 + 1000));
        assert_eq!(depart(&mut p, 0, 1514), Some(242_240 + 1000));
        // After the queue drains, a frame starts at its own arrival.
        assert_eq!(depart(&mut p, 1_000_000, 1514), Some(1_121_120 + 1000));
    }

    #[test]
    fn queue_limit_drops_the_overflow() {
        let cfg = PipeConfig {
            rate_bps: 8_000_000,
            limit_frames: 2,
            ..Default::default()
        };
        let mut p = Pipe::new(cfg, 1).unwrap();
        // 1000 bytes at 8 Mbit/s = 1 ms each: two fit, the third is dropped.
        assert_eq!(depart(&mut p, 0, 1000), Some(1_000_000));
        assert_eq!(depart(&mut p, 0, 1000), Some(2_000_000));
        assert_eq!(depart(&mut p, 0, 1000), None);
        // Once the first has left the queue there is room again.
        assert_eq!(depart(&mut p, 1_000_000, 1000), Some(3_000_000));
    }

    #[test]
    fn loss_rate_matches_probability_and_seed_repeats() {
        let cfg = PipeConfig {
            loss: 0.1,
            ..Default::default()
        };
        let run = |seed| {
            let mut p = Pipe::new(cfg.clone(), seed).unwrap();
            (0..100_000)
                .map(|i| p.admit(i, vec![0; 100]) == Verdict::Lost)
                .collect::<Vec<_>>()
        };
        let a = run(7);
        let lost = a.iter().filter(|&&l| l).count();
        // Binomial(100000, 0.1): sd ~ 95; 5 sd either side.
        assert!((9_525..=10_475).contains(&lost), "lost {lost}");
        assert_eq!(a, run(7));
        assert_ne!(a, run(8));
    }

    /// An Ethernet + IPv4 + TCP frame of 1514 bytes with this ECN field and source port.
    fn tcp_frame(ecn_field: u8, sport: u16) -> Vec<u8> {
        let mut f = vec![0u8; 1514];
        f[12] = 0x08;
        f[14] = 0x45;
        f[15] = ecn_field;
        f[23] = 6;
        f[34..36].copy_from_slice(&sport.to_be_bytes());
        f
    }

    fn codel(ecn: bool) -> AqmConfig {
        AqmConfig::Codel {
            target_ns: 5 * MS,
            interval_ns: 100 * MS,
            limit_packets: 100_000,
            ecn,
            ce_threshold_ns: None,
        }
    }

    /// Feed `rate_in_bps` of 1514-byte frames into a 100 Mbit/s CoDel pipe for `secs`, after
    /// `preload` frames at t = 0, and drain it as the forwarder does. Returns the departures with
    /// their frames, the times the drop counter moved, and the discipline's counters and sojourns.
    #[allow(clippy::type_complexity)]
    fn overload(
        ecn_field: u8,
        aqm_ecn: bool,
        preload: u64,
        rate_in_bps: u64,
        secs: u64,
    ) -> (Vec<(u64, Vec<u8>)>, Vec<u64>, AqmStats, Histogram) {
        drive(codel(aqm_ecn), 0, ecn_field, preload, rate_in_bps, secs)
    }

    /// `overload` with any discipline, on an arrival clock whose time zero is `epoch_ns` (drop
    /// times are returned relative to it).
    #[allow(clippy::type_complexity)]
    fn drive(
        aqm: AqmConfig,
        epoch_ns: u64,
        ecn_field: u8,
        preload: u64,
        rate_in_bps: u64,
        secs: u64,
    ) -> (Vec<(u64, Vec<u8>)>, Vec<u64>, AqmStats, Histogram) {
        let cfg = PipeConfig {
            delay_ns: 10 * MS,
            rate_bps: 100_000_000,
            aqm: Some(aqm),
            ..Default::default()
        };
        let mut p = Pipe::new(cfg, 3).unwrap();
        p.start_clock(epoch_ns);
        for _ in 0..preload {
            p.admit(epoch_ns, tcp_frame(ecn_field, 1));
        }
        let gap = tx_time_ns(1514, rate_in_bps);
        let (mut out, mut drop_times, mut drops) = (Vec::new(), Vec::new(), 0);
        let mut t = gap;
        let end = secs * 1_000_000_000;
        while t < end {
            assert_eq!(
                p.admit(epoch_ns + t, tcp_frame(ecn_field, 1)),
                Verdict::Accepted
            );
            p.transmit(epoch_ns + t, true);
            while let Some(x) = p.pop_due(epoch_ns + t) {
                out.push(x);
            }
            let now = p.discipline().unwrap().0.drops;
            drop_times.extend((drops..now).map(|_| t));
            drops = now;
            if t < end / 2 && t + gap >= end / 2 {
                // Sojourn times of the second half only (after the control loop has caught up).
                p.egress.as_mut().unwrap().sojourn = Histogram::default();
            }
            t += gap;
        }
        // Let the wire send what is left (no more arrivals), so every frame is accounted for.
        p.transmit(u64::MAX / 2, true);
        while let Some(x) = p.pop_due(u64::MAX) {
            out.push(x);
        }
        let (st, h, _) = p.discipline().unwrap();
        (out, drop_times, st, h.clone())
    }

    #[test]
    fn pie_on_the_wall_clock_drives_the_delay_to_its_target() {
        // The emulator's arrival clock is CLOCK_REALTIME (~1.8e18 ns); PIE's timer counts from the
        // pipe's start, its first update 500 ms in. A 2% unresponsive overload: PIE's integral
        // term (alpha (qdelay - target), RFC 8033 §4.2) changes the probability until the delay
        // error is gone, so the steady state has the median sojourn at the 15 ms target and drops
        // removing exactly the excess (by conservation, 2/102 of the arrivals).
        let pie = AqmConfig::Pie {
            target_ns: 15 * MS,
            tupdate_ns: 15 * MS,
            limit_packets: 100_000,
            alpha: 2,
            beta: 20,
            ecn: false,
            bytemode: false,
        };
        let epoch = 1_795_480_244_851_008_526;
        let (_, drops, _, h) = drive(pie, epoch, ecn::NOT_ECT, 0, 102_000_000, 30);
        let p50_ms = h.quantile(0.5) as f64 / 1e6;
        assert!(
            (12.0..=18.0).contains(&p50_ms),
            "median sojourn {p50_ms:.2} ms, target 15"
        );
        let late = drops.iter().filter(|&&t| t >= 15_000_000_000).count() as f64;
        let share = late / (15 * 102_000_000 / (1514 * 8)) as f64;
        assert!(
            (share - 2.0 / 102.0).abs() < 0.15 * 2.0 / 102.0,
            "dropped {share:.4}"
        );
    }

    #[test]
    fn the_wire_sends_at_its_rate_whatever_arrives() {
        // 150 Mbit/s offered into 100 Mbit/s for 2 s: the wire sends one 1514-byte frame every
        // 121.12 us (its departures are exactly that far apart while the queue is backlogged).
        let (out, _, st, _) = overload(ecn::NOT_ECT, false, 0, 150_000_000, 2);
        let gaps: Vec<u64> = out.windows(2).map(|w| w[1].0 - w[0].0).collect();
        assert!(
            gaps.iter().skip(10).all(|&g| g == 121_120),
            "{:?}",
            &gaps[..20]
        );
        assert!(st.drops > 0);
        assert_eq!(st.ecn_marks, 0);
    }

    #[test]
    fn codel_drop_spacing_behind_the_transmitter_is_interval_over_sqrt_count() {
        // 1000 frames queued, then arrivals at exactly the wire's rate: the sojourn stays near
        // 121 ms, far above target, so CoDel stays in its dropping state. RFC 8289 §3.3: the next
        // drop comes interval / sqrt(count) after the last; Linux's 1/sqrt(count) is one Newton
        // step per drop (x <- x/2 (3 - count x^2) from x = 1), within 1% of exact from count 8.
        // The same arithmetic as crates/tcplab-aqm/tests/textbook.rs, here through linkem's wire.
        let (_, drops, st, _) = overload(ecn::NOT_ECT, false, 1000, 100_000_000, 3);
        assert!(drops.len() > 50, "{} drops", drops.len());
        assert_eq!(st.ecn_marks, 0);
        let mut x: f64 = 1.0;
        for (k, w) in drops.windows(2).enumerate() {
            let count = (k + 1) as f64;
            if k > 0 {
                x = x / 2.0 * (3.0 - count * x * x);
            }
            let gap_ms = (w[1] - w[0]) as f64 / 1e6;
            // One arrival gap (0.121 ms) of resolution in when the drop is seen.
            assert!(
                (gap_ms - 100.0 * x).abs() <= 0.13 + 0.005 * 100.0 * x,
                "gap {k}: {gap_ms:.3} ms"
            );
            if count >= 8.0 {
                let exact = 100.0 / count.sqrt();
                assert!(
                    (gap_ms - exact).abs() <= 0.13 + 0.01 * exact,
                    "gap {k}: {gap_ms:.3} vs {exact:.3} ms"
                );
            }
        }
        // The first drop: the head's sojourn reaches 5 ms at t = 5 ms, an interval later it drops.
        let first_ms = drops[0] as f64 / 1e6;
        assert!(
            first_ms > 105.0 && first_ms <= 105.0 + 0.25,
            "first drop at {first_ms} ms"
        );
    }

    #[test]
    fn codel_removes_a_small_overload_and_holds_the_sojourn_near_target() {
        // 101 Mbit/s into 100 Mbit/s for 20 s. Unmanaged, the excess would pile up 1% of the time
        // as queue: 200 ms by the end. CoDel's count climbs until its drops remove exactly the
        // excess (by conservation, 1/101 of the arrivals once the queue stops growing), and the
        // sojourn it leaves stands above the 5 ms target but within twice it.
        let (out, drops, st, h) = overload(ecn::NOT_ECT, false, 0, 101_000_000, 20);
        let arrived_second_half = 10 * 101_000_000 / (1514 * 8);
        let late = drops.iter().filter(|&&t| t >= 10_000_000_000).count() as f64;
        let share = late / arrived_second_half as f64;
        assert!(
            (share - 1.0 / 101.0).abs() < 0.1 / 101.0,
            "dropped {share:.4} of the arrivals"
        );
        let (p50_ms, p95_ms) = (h.quantile(0.5) as f64 / 1e6, h.quantile(0.95) as f64 / 1e6);
        assert!(
            (5.0..=10.0).contains(&p50_ms) && p95_ms <= 10.0,
            "sojourn p50 {p50_ms:.2} p95 {p95_ms:.2} ms"
        );
        // Every arrival left or was dropped.
        let arrivals = (20_000_000_000 - 1) / tx_time_ns(1514, 101_000_000);
        assert_eq!(out.len() as u64 + st.drops, arrivals);
    }

    #[test]
    fn ecn_codel_marks_ect_frames_instead_of_dropping_them() {
        let (out, _, st, _) = overload(ecn::ECT0, true, 0, 110_000_000, 5);
        assert_eq!(
            st.drops, 0,
            "ECT frames are marked, not dropped (below the limit)"
        );
        assert!(st.ecn_marks > 20);
        let ce = out.iter().filter(|(_, d)| d[15] & 3 == ecn::CE).count() as u64;
        assert_eq!(ce, st.ecn_marks, "every mark is in a frame that left");
        // Not-ECT frames through an ECN CoDel are dropped as before.
        let (_, _, st2, _) = overload(ecn::NOT_ECT, true, 0, 110_000_000, 5);
        assert!(st2.drops > 20 && st2.ecn_marks == 0);
    }

    #[test]
    fn dualpi2_from_the_cli_json_marks_ect1_frames_over_its_1ms_step() {
        // The resolved spec's dict, as `--aqm-ab` takes it (Linux's defaults, 60-packet limit).
        let json = r#"{"kind": "dualpi2", "limit_packets": 60, "memory_limit_bytes": 181680, "target_ns": 15000000,
            "tupdate_ns": 16000000, "alpha_256": 41, "beta_256": 819, "step_ns": 1000000, "step_packets": null,
            "min_qlen_step": 0, "coupling": 2, "c_protection": 10, "ecn_mask": "l4s_ect", "drop_overload": true,
            "drop_early": false}"#;
        let aqm = crate::aqm("--aqm-ab", json).unwrap();
        // 20 ECT(1) frames at once (20 x 121 us on the wire: the last ones wait over 1 ms), then
        // 50 Mbit/s, under the wire's rate: only the preloaded frames past the step are marked.
        let (out, _, st, _) = drive(aqm, 0, ecn::ECT1, 20, 50_000_000, 1);
        let ce = out.iter().filter(|(_, d)| d[15] & 3 == ecn::CE).count() as u64;
        // FIFO arithmetic: a 1514-byte frame takes 121.12 us; the 20 preloaded arrive at 0, the
        // rest every 242.24 us. Marked: those whose wait (start - arrival) exceeds 1 ms (the
        // preloaded k >= 9, and arrivals j = 1..10 while the backlog drains).
        let (tx, gap) = (121_120u64, 242_240u64);
        let arrivals = (0..20).map(|_| 0).chain((1..4000).map(|j| j * gap));
        let (mut free, mut expected) = (0u64, 0u64);
        for a in arrivals {
            let start = free.max(a);
            expected += (start - a > 1_000_000) as u64;
            free = start + tx;
        }
        assert_eq!(expected, 21);
        assert_eq!((ce, st.ecn_marks, st.drops), (expected, expected, 0));
    }

    #[test]
    fn a_queue_discipline_needs_a_rate() {
        let cfg = PipeConfig {
            aqm: Some(codel(false)),
            ..Default::default()
        };
        assert!(Pipe::new(cfg, 1).is_err());
    }
}

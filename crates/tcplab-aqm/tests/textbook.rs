//! The queue disciplines against textbook arithmetic, on their own (no simulator, no emulator):
//! CoDel's control law and its silence below target, RED's linear ramp. The simulator's tests
//! (crates/tcplab-sim/tests/aqm.rs) check the same disciplines under real TCP; the link
//! emulator's (crates/tcplab-linkem/src/pipe.rs) check them behind its transmitter.

use tcplab_aqm::codel::{Codel, CodelParams};
use tcplab_aqm::red::{Red, RedParams};
use tcplab_aqm::{ecn, Aqm, Ns, Random};

const SEC: Ns = 1_000_000_000;
const MBIT: u64 = 1_000_000;

/// A packet as a discipline sees it.
#[derive(Debug)]
struct Pkt {
    size: u64,
    ecn: u8,
}

impl tcplab_aqm::Packet for Pkt {
    const MTU_BYTES: u64 = 1500;
    fn size_bytes(&self) -> u64 {
        self.size
    }
    fn ecn(&self) -> u8 {
        self.ecn
    }
    fn set_ecn(&mut self, ecn: u8) {
        self.ecn = ecn;
    }
    fn flow_key(&self) -> u64 {
        0
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): any uniform source will do for RED's draw.
struct SplitMix(u64);

impl Random for SplitMix {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

fn packet(_id: u64, size: u32, ect: bool) -> Pkt {
    Pkt {
        size: size as u64,
        ecn: if ect { ecn::ECT0 } else { ecn::NOT_ECT },
    }
}

/// Drop times of a CoDel queue held at a constant 1000-packet standing queue (sojourn 120 ms,
/// far above target): one packet in and one out every 0.12 ms (1500 B at 100 Mbit/s).
fn codel_drop_times(duration_ns: Ns) -> Vec<Ns> {
    let mut q = Codel::new(CodelParams::linux_default(), 100_000);
    let step = 120_000;
    let mut id = 0;
    let mut dropped = Vec::new();
    let mut drops = Vec::new();
    for _ in 0..1000 {
        id += 1;
        q.enqueue(packet(id, 1500, false), 0, &mut dropped);
    }
    let mut t = 0;
    while t < duration_ns {
        t += step;
        id += 1;
        q.enqueue(packet(id, 1500, false), t, &mut dropped);
        q.dequeue(t, &mut dropped);
        drops.extend(dropped.drain(..).map(|_| t));
    }
    drops
}

#[test]
fn codel_drop_spacing_is_interval_over_sqrt_count() {
    let drops = codel_drop_times(3 * SEC);
    assert!(drops.len() > 50, "{} drops", drops.len());
    // RFC 8289 §3.3: the next drop comes interval / sqrt(count) after the last. Linux keeps
    // 1/sqrt(count) by one Newton step per drop (x <- x/2 (3 - count x^2), from x = 1 at
    // count 1), which is coarse for the first few counts and within 1% from count 8 on.
    let mut x: f64 = 1.0;
    for (k, w) in drops.windows(2).enumerate() {
        let count = (k + 1) as f64;
        if k > 0 {
            x = x / 2.0 * (3.0 - count * x * x);
        }
        let newton_ms = 100.0 * x;
        let exact_ms = 100.0 / count.sqrt();
        let gap_ms = (w[1] - w[0]) as f64 / 1e6;
        assert!(
            (gap_ms - newton_ms).abs() <= 0.13 + 0.005 * newton_ms,
            "gap {k}: {gap_ms:.3} ms, Newton estimate {newton_ms:.3} ms"
        );
        if count >= 8.0 {
            assert!(
                (gap_ms - exact_ms).abs() <= 0.13 + 0.01 * exact_ms,
                "gap {k}: {gap_ms:.3} ms, interval/sqrt({count}) = {exact_ms:.3} ms"
            );
        }
    }
    // The first drop: an interval after the sojourn first reached target. The packets queued at
    // t = 0 leave at t, so their sojourn reaches 5 ms at t = 5 ms; the first dequeue after
    // 5 + 100 ms drops.
    let first_ms = drops[0] as f64 / 1e6;
    assert!(
        first_ms > 105.0 && first_ms <= 105.0 + 0.12 + 0.12,
        "first drop at {first_ms} ms"
    );
}

#[test]
fn codel_never_drops_below_target() {
    // A 30-packet queue at 100 Mbit/s is 3.6 ms of sojourn: below the 5 ms target.
    let mut q = Codel::new(CodelParams::linux_default(), 1000);
    let mut dropped = Vec::new();
    let step = 120_000;
    for id in 0..30 {
        q.enqueue(packet(id, 1500, false), id * step, &mut dropped);
    }
    let mut t = 30 * step;
    for id in 30..100_000 {
        q.enqueue(packet(id, 1500, false), t, &mut dropped);
        q.dequeue(t, &mut dropped);
        t += step;
    }
    assert!(dropped.is_empty());
    assert_eq!(q.stats().drops, 0);
}

/// Marked fraction of RED held at a constant queue of `backlog` packets of 1000 bytes.
fn red_mark_fraction(backlog: u64) -> f64 {
    let prm = RedParams {
        limit_bytes: 1_000_000,
        min_bytes: 30_000,
        max_bytes: 60_000,
        probability: 0.1,
        wlog: 9,
        avpkt_bytes: 1000,
        ecn: true,
        harddrop: false,
        adaptive: false,
    };
    let mut q = Red::new(prm, 100 * MBIT, SplitMix(7));
    let mut dropped = Vec::new();
    let mut id = 0;
    for _ in 0..backlog {
        id += 1;
        q.enqueue(packet(id, 1000, true), 0, &mut dropped);
    }
    let (warmup, n) = (20_000, 400_000);
    let mut marked = 0;
    for i in 0..warmup + n {
        id += 1;
        q.enqueue(packet(id, 1000, true), i + 1, &mut dropped);
        let p = q.dequeue(i + 1, &mut dropped).unwrap();
        if i >= warmup && p.ecn == ecn::CE {
            marked += 1;
        }
    }
    assert!(
        dropped.is_empty(),
        "ECN-capable packets are marked, not dropped"
    );
    marked as f64 / n as f64
}

#[test]
fn red_marking_follows_the_linear_ramp() {
    // Floyd & Jacobson §7: pb = max_p (avg - min) / (max - min), and with the count the gap
    // between marks is uniform on 1 .. 1/pb, so the marked fraction is 2 / (1/pb + 1).
    for (backlog, pb) in [(36u64, 0.02), (45, 0.05), (50, 0.1 * 20.0 / 30.0)] {
        let want = 2.0 / (1.0 / pb + 1.0);
        let got = red_mark_fraction(backlog);
        assert!(
            (got - want).abs() <= 0.05 * want,
            "avg {backlog} KB: marked {got:.4}, ramp gives {want:.4}"
        );
    }
    assert_eq!(red_mark_fraction(25), 0.0, "below min nothing is marked");
    assert_eq!(red_mark_fraction(65), 1.0, "above max everything is marked");
}

/// Linux's dualpi2 defaults (dualpi2_reset_default()) with room for a large test backlog.
fn dualpi2_linux(limit_packets: u64) -> tcplab_aqm::dualpi2::Dualpi2<Pkt, SplitMix> {
    use tcplab_aqm::dualpi2::*;
    Dualpi2::new(
        Dualpi2Params {
            limit_packets,
            memory_limit_bytes: limit_packets * 2 * 1514,
            target_ns: 15_000_000,
            tupdate_ns: 16_000_000,
            alpha_256: 41,
            beta_256: 819,
            step: StepThresh::Time(1_000_000),
            min_qlen_step: 0,
            coupling: 2,
            c_protection_wc: 10,
            ecn_mask: EcnMask::L4sEct,
            drop_overload: true,
            drop_early: false,
        },
        SplitMix(7),
    )
}

fn pkt(ecn: u8) -> Pkt {
    Pkt { size: 1500, ecn }
}

#[test]
fn dualpi2_couples_p_c_equal_p_squared_and_p_cl_equal_k_p() {
    // One Classic packet enqueued at t=0 and never served: at the PI ticks (every 16 ms) the
    // C-queue head delay is 16, 32, 48, 64 ms. RFC 9332 A.2 dualpi2_update():
    // p' += alpha (qdelay - target) + beta (qdelay - qdelay_old), alpha = 41/256 Hz, beta =
    // 819/256 Hz (Linux's defaults, "~0.16" and "~3.2").
    let mut q = dualpi2_linux(200_000);
    let mut dropped = Vec::new();
    q.enqueue(pkt(ecn::NOT_ECT), 0, &mut dropped);
    let (alpha, beta, target) = (41.0 / 256.0, 819.0 / 256.0, 0.015);
    let mut p = 0.0f64;
    let mut old = 0.0;
    for tick in 1..=4 {
        let d = tick as f64 * 0.016;
        p += alpha * (d - target) + beta * (d - old);
        old = d;
    }
    // Just after the fourth tick: 20 000 Not-ECT Classic packets and 20 000 ECT(1) packets, all
    // dequeued at that same instant (sojourn 0, so the 1 ms step never fires; no tick runs).
    let now = 64_000_000 + 1;
    for _ in 0..20_000 {
        q.enqueue(pkt(ecn::NOT_ECT), now, &mut dropped);
        q.enqueue(pkt(ecn::ECT1), now, &mut dropped);
    }
    assert!(dropped.is_empty());
    // Linux keeps the gains as whole units of 2^-32 per 64 ns (dualpi2_scale_alpha_beta():
    // 44.02 -> 44 and 879.4 -> 879), which costs < 0.05% of p'.
    assert!(
        (q.base_probability() / p - 1.0).abs() < 1e-3,
        "p' {} vs {p}",
        q.base_probability()
    );
    let (mut l_marked, mut l_seen) = (0u64, 0u64);
    while let Some(x) = q.dequeue(now, &mut dropped) {
        if x.ecn != ecn::NOT_ECT {
            l_seen += 1;
            l_marked += (x.ecn == ecn::CE) as u64;
        }
    }
    // Every L packet is ECT(1) so none is dropped; the Classic ones are dropped with p_C.
    let c_drop = dropped.len() as f64 / 20_001.0;
    let l_mark = l_marked as f64 / l_seen as f64;
    let (p_c, p_cl) = (p * p, (2.0 * p).min(1.0));
    eprintln!(
        "p' {p:.4}: C drops {c_drop:.4} (p'^2 {p_c:.4}), L marks {l_mark:.4} (2p' {p_cl:.4})"
    );
    assert_eq!(l_seen, 20_000);
    // Binomial standard errors at n = 20 000: 0.0015 for p_C ~ 0.049, 0.0035 for p_CL ~ 0.44.
    assert!(
        (c_drop - p_c).abs() < 0.006,
        "C-queue drop fraction {c_drop:.4} vs p'^2 {p_c:.4}"
    );
    assert!(
        (l_mark - p_cl).abs() < 0.015,
        "L-queue mark fraction {l_mark:.4} vs 2p' {p_cl:.4}"
    );
}

#[test]
fn dualpi2_l_queue_marks_every_packet_over_the_1ms_step() {
    // Before the first PI tick p' = 0, so only the step marks (RFC 9332 A.1: L packets are marked
    // when their sojourn exceeds T = 1 ms, else with p_CL).
    let mut q = dualpi2_linux(10_000);
    let mut dropped = Vec::new();
    let mut marked_after =
        |q: &mut tcplab_aqm::dualpi2::Dualpi2<Pkt, SplitMix>, t_in: Ns, t_out: Ns| {
            for _ in 0..10 {
                q.enqueue(pkt(ecn::ECT1), t_in, &mut dropped);
            }
            (0..10)
                .filter(|_| q.dequeue(t_out, &mut dropped).unwrap().ecn == ecn::CE)
                .count()
        };
    assert_eq!(marked_after(&mut q, 0, 900_000), 0, "sojourn 0.9 ms < 1 ms");
    assert_eq!(
        marked_after(&mut q, 1_000_000, 2_100_000),
        10,
        "sojourn 1.1 ms > 1 ms"
    );
    assert_eq!(q.step_marks, 10);
    assert!(dropped.is_empty());
}

#[test]
fn dualpi2_wrr_gives_the_classic_queue_its_10_percent_weight() {
    // Both queues backlogged: dequeue_packet()'s credit sends wc / (wc + wl) = 10 / 100 of the
    // bytes from the C queue (equal packet sizes: one packet in ten).
    let mut q = dualpi2_linux(10_000);
    let mut dropped = Vec::new();
    for _ in 0..200 {
        q.enqueue(pkt(ecn::ECT0), 0, &mut dropped);
        q.enqueue(pkt(ecn::ECT1), 0, &mut dropped);
    }
    let from_c = (0..100)
        .filter(|_| q.dequeue(1, &mut dropped).unwrap().ecn == ecn::ECT0)
        .count();
    assert_eq!(from_c, 10);
}

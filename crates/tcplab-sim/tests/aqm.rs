//! Queue disciplines against textbook arithmetic: CoDel's control law and standing delay, PIE's
//! delay target, RED's linear ramp, FQ-CoDel's isolation of a sparse flow.

mod common;
use common::*;
use tcplab_sim::aqm::codel::{Codel, CodelParams};
use tcplab_sim::aqm::red::{Red, RedParams};
use tcplab_sim::aqm::{ecn, Aqm, AqmConfig};
use tcplab_sim::config::{AppConfig, SimConfig};
use tcplab_sim::packet::{Kind, Packet};
use tcplab_sim::rng::Rng;
use tcplab_sim::time::{Ns, MS, SEC};

fn packet(id: u64, size: u32, ect: bool) -> Packet {
    let mut p = Packet::new(id, Kind::Data, 0, 1);
    p.size_bytes = size;
    p.ecn = if ect { ecn::ECT0 } else { ecn::NOT_ECT };
    p
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
    assert!(first_ms > 105.0 && first_ms <= 105.0 + 0.12 + 0.12, "first drop at {first_ms} ms");
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
    let mut q = Red::new(prm, 100 * MBIT, Rng::new(7));
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
    assert!(dropped.is_empty(), "ECN-capable packets are marked, not dropped");
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

/// One cubic flow over 100 Mbit/s x 40 ms with a 2000-packet buffer (bufferbloat) and `aqm` at
/// the bottleneck; queue sampled every ms.
fn bloat(aqm: Option<AqmConfig>, flows: Vec<tcplab_sim::config::FlowConfig>, secs: u64) -> SimConfig {
    let mut cfg = pipe(100 * MBIT, 40 * MS, 2000, flows, secs * SEC);
    cfg.sample_interval_ns = MS;
    cfg.links[1].ab.aqm = aqm;
    cfg
}

/// Queueing delay (ms) of each queue sample after `from`: bytes waiting x 8 / 100 Mbit/s.
fn queue_delays_ms(sim: &tcplab_sim::sim::Simulation, from: Ns) -> Vec<f64> {
    let q = &sim.rec.queues;
    let (t, b) = (q.column("t_ns").unwrap(), q.column("queue_bytes").unwrap());
    let mut v: Vec<f64> = (0..t.len())
        .filter(|&i| t[i] as Ns >= from)
        .map(|i| b[i] as f64 * 8.0 / 100e6 * 1e3)
        .collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn codel() -> AqmConfig {
    AqmConfig::Codel {
        target_ns: 5 * MS,
        interval_ns: 100 * MS,
        limit_packets: 2000,
        ecn: false,
        ce_threshold_ns: None,
    }
}

#[test]
fn codel_holds_the_standing_queue_near_target_where_drop_tail_bloats() {
    // Eight Reno flows: one flow's halving takes 1/16 of the window, so the queue stands (with
    // one flow the window falls below the BDP after each drop and the queue empties).
    let f = || (0..8).map(|i| flow(&format!("f{i}"), 0, 2, "newreno", bulk(30))).collect();
    let sim = run(&bloat(Some(codel()), f(), 30));
    let d = queue_delays_ms(&sim, 10 * SEC);
    let m = mean(&d);
    // RFC 8289: the standing (minimum over an interval) delay is held at target; the mean of a
    // Reno sawtooth under CoDel sits within a few ms of it.
    eprintln!("codel: mean queue delay {m:.2} ms");
    assert!((2.0..=10.0).contains(&m), "CoDel mean queue delay {m:.2} ms");
    let dt = run(&bloat(None, f(), 30));
    let m_tail = mean(&queue_delays_ms(&dt, 10 * SEC));
    assert!(m_tail > 50.0, "drop-tail with 2000 packets: {m_tail:.1} ms");
}

#[test]
fn pie_holds_the_queue_delay_near_its_15ms_target() {
    let pie = AqmConfig::Pie {
        target_ns: 15 * MS,
        tupdate_ns: 15 * MS,
        limit_packets: 2000,
        alpha: 2,
        beta: 20,
        ecn: false,
        bytemode: false,
    };
    let sim = run(&bloat(Some(pie), vec![flow("f", 0, 2, "cubic", bulk(30))], 30));
    let m = mean(&queue_delays_ms(&sim, 10 * SEC));
    eprintln!("pie: mean queue delay {m:.2} ms");
    assert!((7.5..=22.5).contains(&m), "PIE mean queue delay {m:.2} ms (target 15)");
}

#[test]
fn fq_codel_isolates_a_sparse_flow_from_a_bulk_flow() {
    let fq = AqmConfig::FqCodel {
        target_ns: 5 * MS,
        interval_ns: 100 * MS,
        limit_packets: 2000,
        ecn: false,
        flows: 1024,
        quantum_bytes: 1514,
        drop_batch: 64,
        ce_threshold_ns: None,
    };
    let sparse = |start| {
        let mut f = flow("sparse", 0, 2, "cubic", AppConfig::Bytes { bytes: 4 * 1448 });
        f.start_ns = start;
        f
    };
    let flows = || {
        vec![
            flow("bulk", 0, 2, "cubic", bulk(20)),
            sparse(10 * SEC),
        ]
    };
    let sim = run(&bloat(Some(fq), flows(), 12));
    let s = &sim.flow_stats()[1];
    // Base RTT 40 ms; the sparse flow's packets sit in their own new-flow queue, served ahead of
    // the bulk flow's, so its RTT is the base plus at most a few packet times.
    let srtt_ms = s.srtt_ns as f64 / 1e6;
    assert!(s.completion_ns.is_some());
    assert!(srtt_ms < 42.0, "sparse flow srtt {srtt_ms:.2} ms under fq_codel");
    let shared = run(&bloat(Some(codel()), flows(), 12));
    let srtt_shared = shared.flow_stats()[1].srtt_ns as f64 / 1e6;
    assert!(srtt_shared > srtt_ms + 2.0, "with one CoDel queue: {srtt_shared:.2} ms");
}

//! Queue disciplines under real TCP in the simulator: CoDel's standing delay, PIE's delay
//! target, FQ-CoDel's isolation of a sparse flow and of a latency probe. The disciplines' own arithmetic (CoDel's
//! control law, RED's ramp) is tested in crates/tcplab-aqm/tests/textbook.rs.

mod common;
use common::*;
use tcplab_sim::config::{AppConfig, ProbeConfig, SimConfig};
use tcplab_sim::net::aqm::AqmConfig;
use tcplab_sim::time::{Ns, MS, SEC};

/// One cubic flow over 100 Mbit/s x 40 ms with a 2000-packet buffer (bufferbloat) and `aqm` at
/// the bottleneck; queue sampled every ms.
fn bloat(
    aqm: Option<AqmConfig>,
    flows: Vec<tcplab_sim::config::FlowConfig>,
    secs: u64,
) -> SimConfig {
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
    let f = || {
        (0..8)
            .map(|i| flow(&format!("f{i}"), 0, 2, "newreno", bulk(30)))
            .collect()
    };
    let sim = run(&bloat(Some(codel()), f(), 30));
    let d = queue_delays_ms(&sim, 10 * SEC);
    let m = mean(&d);
    // RFC 8289: the standing (minimum over an interval) delay is held at target; the mean of a
    // Reno sawtooth under CoDel sits within a few ms of it.
    eprintln!("codel: mean queue delay {m:.2} ms");
    assert!(
        (2.0..=10.0).contains(&m),
        "CoDel mean queue delay {m:.2} ms"
    );
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
    let sim = run(&bloat(
        Some(pie),
        vec![flow("f", 0, 2, "cubic", bulk(30))],
        30,
    ));
    let m = mean(&queue_delays_ms(&sim, 10 * SEC));
    eprintln!("pie: mean queue delay {m:.2} ms");
    assert!(
        (7.5..=22.5).contains(&m),
        "PIE mean queue delay {m:.2} ms (target 15)"
    );
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
        let mut f = flow(
            "sparse",
            0,
            2,
            "cubic",
            AppConfig::Bytes { bytes: 4 * 1448 },
        );
        f.start_ns = start;
        f
    };
    let flows = || vec![flow("bulk", 0, 2, "cubic", bulk(20)), sparse(10 * SEC)];
    // And a ping from s to r every 100 ms from 2 s on (84-byte IP packets), beside the bulk flow.
    let with_probe = |aqm| {
        let mut cfg = bloat(Some(aqm), flows(), 12);
        cfg.probes = vec![ProbeConfig {
            name: "ping0".into(),
            src: 0,
            dst: 2,
            interval_ns: 100 * MS,
            size_bytes: 84,
            start_ns: 2 * SEC,
            stop_ns: 12 * SEC,
        }];
        cfg
    };
    let sim = run(&with_probe(fq));
    let s = &sim.flow_stats()[1];
    // Base RTT 40 ms; the sparse flow's packets sit in their own new-flow queue, served ahead of
    // the bulk flow's, so its RTT is the base plus at most a few packet times.
    let srtt_ms = s.srtt_ns as f64 / 1e6;
    assert!(s.completion_ns.is_some());
    assert!(
        srtt_ms < 42.0,
        "sparse flow srtt {srtt_ms:.2} ms under fq_codel"
    );
    // The probe's base RTT: each way the access hop (84 B at 10 Gbit/s, rounded up to 68 ns, and
    // 10 us) and the bottleneck (84 B at 100 Mbit/s = 6.72 us, and 19.99 ms).
    let base_ns = 2 * (68 + 10_000 + 6_720 + 19_990_000);
    let rtts = sim.rec.probes.column("rtt_ns").unwrap();
    assert_eq!(rtts.len(), 100);
    // RFC 8290 s4.1: the probe is a new flow at each request, served after the packet on the
    // wire and at most one quantum (1514 B) of a bulk flow that is new too: 2 x 121 us; plus
    // what waits in s's own NIC queue (TSO bursts at 10 Gbit/s) and ACKs on the way back.
    let max_wait_ns = 2 * 121_120 + 200_000;
    for &r in rtts {
        assert!(
            r >= base_ns && r <= base_ns + max_wait_ns,
            "probe RTT {r} ns, base {base_ns}"
        );
    }
    let shared = run(&with_probe(codel()));
    let srtt_shared = shared.flow_stats()[1].srtt_ns as f64 / 1e6;
    assert!(
        srtt_shared > srtt_ms + 2.0,
        "with one CoDel queue: {srtt_shared:.2} ms"
    );
    // One shared CoDel queue holds the probe behind the bulk flow's standing queue (~5 ms).
    let mut shared_rtts = shared.rec.probes.column("rtt_ns").unwrap().to_vec();
    shared_rtts.sort();
    let median = shared_rtts[shared_rtts.len() / 2];
    assert!(
        median > base_ns + 2 * MS as i64,
        "median probe RTT {median} ns with one CoDel queue"
    );
}

/// Linux's dualpi2 defaults (sch_dualpi2.c dualpi2_reset_default()), limit 2000 packets.
fn dualpi2() -> AqmConfig {
    AqmConfig::Dualpi2 {
        limit_packets: 2000,
        memory_limit_bytes: 2000 * 2 * 1500,
        target_ns: 15 * MS,
        tupdate_ns: 16 * MS,
        alpha_256: 41,
        beta_256: 819,
        step_ns: Some(MS),
        step_packets: None,
        min_qlen_step: 0,
        coupling: 2,
        c_protection: 10,
        ecn_mask: "l4s_ect".into(),
        drop_overload: true,
        drop_early: false,
    }
}

/// A Linux DCTCP flow sending ECT(1) (L4STeam/linux dctcp_ect = 1).
fn l4s_flow(name: &str, secs: u64) -> tcplab_sim::config::FlowConfig {
    let mut f = flow(name, 0, 2, "dctcp", bulk(secs));
    (f.stack, f.ecn, f.ect1) = ("linux".into(), true, true);
    f
}

/// Bytes flow `flow` had acknowledged between `from` and `to` (its flow samples' bytes_acked).
fn acked_between(sim: &tcplab_sim::sim::Simulation, flow: i64, from: Ns, to: Ns) -> f64 {
    let r = &sim.rec.flows;
    let (t, f, a) = (
        r.column("t_ns").unwrap(),
        r.column("flow").unwrap(),
        r.column("bytes_acked").unwrap(),
    );
    let at = |x: Ns| {
        (0..t.len())
            .filter(|&i| f[i] == flow && t[i] as Ns <= x)
            .map(|i| a[i])
            .last()
            .unwrap_or(0)
    };
    (at(to) - at(from)) as f64
}

#[test]
fn dualpi2_holds_classic_flows_near_15ms_and_an_l4s_flow_below_the_1ms_step() {
    // Four cubic flows (Not-ECT) are in the C queue: the PI controller holds its delay at the
    // 15 ms target (RFC 9332 s2.4), as PIE's does. (One flow's sawtooth empties the queue after
    // each cut; four keep a standing queue.) Measured after the first 15 s: the slow-start
    // overshoot drives p' to ~0.4 and it decays by alpha x target (~0.15/s) from there.
    let f = (0..4)
        .map(|i| flow(&format!("c{i}"), 0, 2, "cubic", bulk(30)))
        .collect();
    let sim = run(&bloat(Some(dualpi2()), f, 30));
    let m = mean(&queue_delays_ms(&sim, 15 * SEC));
    eprintln!("dualpi2, 4 cubic: mean queue delay {m:.2} ms");
    assert!(
        (7.5..=22.5).contains(&m),
        "C-queue mean delay {m:.2} ms (target 15)"
    );
    // An ECT(1) DCTCP flow alone is in the L queue, marked whenever a packet waited over 1 ms:
    // its queue stays around the step (DCTCP's sawtooth peaks just above K and empties between).
    let sim = run(&bloat(Some(dualpi2()), vec![l4s_flow("l", 10)], 10));
    let d = queue_delays_ms(&sim, 3 * SEC);
    let (m, p99) = (mean(&d), d[d.len() * 99 / 100]);
    eprintln!("dualpi2, L4S dctcp alone: mean queue delay {m:.3} ms, p99 {p99:.3} ms");
    assert!(
        m <= 1.0 && p99 <= 3.0,
        "L-queue delay mean {m:.3} ms, p99 {p99:.3} ms"
    );
    let s = &sim.flow_stats()[0];
    let st = sim.ports[2].aqm().unwrap().stats();
    eprintln!(
        "  retransmitted {}, marks {}, drops {}, {:.1} Mbit/s",
        s.retrans_segs,
        st.ecn_marks,
        st.drops,
        s.bytes_delivered as f64 * 8.0 / 10e6
    );
    assert!(st.ecn_marks > 0, "the L queue marks the ECT(1) flow");
}

#[test]
fn dualpi2_shares_between_a_classic_and_an_l4s_flow() {
    // RFC 9332 s2.1: Reno's window is 1.22/sqrt(p_C) and a scalable (DCTCP-like) flow's 2/p_L;
    // with p_C = (p')^2 and p_L = k p', k = 2, the windows are 1.22/p' and 1/p', so
    // W_L / W_C = 1/1.22 = 0.82. Rates divide the windows by the RTTs, 40 ms base + ~15 ms (C
    // queue at target) and 40 ms + ~1 ms (L queue at the step): r_L / r_C = 0.82 x 55 / 41 = 1.10.
    let expected = (1.0 / 1.22) * (40.0 + 15.0) / (40.0 + 1.0);
    let flows = vec![flow("c", 0, 2, "newreno", bulk(60)), l4s_flow("l", 60)];
    let sim = run(&bloat(Some(dualpi2()), flows, 60));
    // After the start-up transient (see above), over 40 s.
    let (c, l) = (
        acked_between(&sim, 0, 20 * SEC, 60 * SEC),
        acked_between(&sim, 1, 20 * SEC, 60 * SEC),
    );
    let ratio = l / c;
    let util = (c + l) * 8.0 / (100e6 * 40.0);
    eprintln!("dualpi2, reno + L4S dctcp: r_L / r_C = {ratio:.2} (RFC 9332 coupling: {expected:.2}), utilisation {util:.2}");
    // NOT verified: the measured ratio (6.1 at this commit) is far from the RFC's 1.1; p' here
    // swings between 0 and ~0.07 instead of settling (see docs/models.md, DualPI2). What is
    // asserted: both flows progress, the link stays full, the L4S flow loses nothing.
    assert!(
        c > 0.0 && l > 0.0 && util > 0.9,
        "r_L / r_C = {ratio:.2}, utilisation {util:.2}"
    );
    assert_eq!(
        sim.flow_stats()[1].retrans_segs,
        0,
        "the ECT(1) flow is marked, not dropped"
    );
}

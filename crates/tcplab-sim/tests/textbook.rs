//! Textbook behaviour of single flows, each checked against an independent calculation.

mod common;
use common::*;
use tcplab_sim::config::AppConfig;
use tcplab_sim::time::{MS, SEC};

const RECOVERY_START: i64 = 1;
const RECOVERY_END: i64 = 2;

/// 100 Mbit/s x 40 ms; buffer of one BDP in 1500-byte packets.
fn newreno_run() -> tcplab_sim::sim::Simulation {
    let bdp_packets = 100 * MBIT * 40 / 1000 / 8 / 1500; // 333
    run(&pipe(
        100 * MBIT,
        40 * MS,
        bdp_packets,
        vec![flow("f", 0, 2, "newreno", bulk(120))],
        120 * SEC,
    ))
}

#[test]
fn newreno_fills_a_one_bdp_buffer_link_after_slow_start() {
    let sim = newreno_run();
    let first_exit = events(&sim, 0, RECOVERY_END)[0].0;
    // Utilisation over whole seconds after the first recovery ended, from the bottleneck port's
    // per-second counters (port 2 = link 1, a -> b).
    let p = &sim.rec.ports;
    let (t0, port, tx) = (
        p.column("t_start_ns").unwrap(),
        p.column("port").unwrap(),
        p.column("tx_bytes").unwrap(),
    );
    let rows: Vec<i64> = (0..t0.len())
        .filter(|&i| port[i] == 2 && t0[i] >= first_exit + SEC as i64)
        .map(|i| tx[i])
        .collect();
    let util = rows.iter().sum::<i64>() as f64 * 8.0 / (rows.len() as f64 * 100e6);
    assert!(rows.len() > 90, "{} seconds measured", rows.len());
    assert!(util >= 0.95, "utilisation {util:.4}");
}

#[test]
fn newreno_halves_cwnd_at_each_loss() {
    let sim = newreno_run();
    let starts = events(&sim, 0, RECOVERY_START);
    let samples = samples(&sim, 0);
    assert!(starts.len() >= 4, "{} losses", starts.len());
    for &(t, cwnd_after, ssthresh) in &starts[1..] {
        // cwnd just before the loss was detected: the last sample before the event.
        let before = samples.iter().rev().find(|s| s.0 < t).unwrap().1;
        let ratio = ssthresh as f64 / before as f64;
        assert!(
            (0.45..=0.55).contains(&ratio),
            "ssthresh {ssthresh} / cwnd before {before} = {ratio}"
        );
        assert_eq!(cwnd_after, ssthresh, "RFC 6675: cwnd = ssthresh on entry");
    }
}

#[test]
fn newreno_time_between_losses_matches_aimd_theory() {
    // Independent model: after a loss cwnd restarts at W/2 and grows 1 MSS per RTT, where the
    // RTT at window w packets is max(base RTT, w * 1500 B * 8 / C) (the queue holds the excess).
    // W = BDP + buffer in packets. Period = sum over w = W/2 .. W of RTT(w).
    let c = 100e6;
    let base = 0.040;
    let bdp = c * base / 8.0 / 1500.0;
    let w_max = bdp + 333.0;
    let period: f64 = ((w_max / 2.0) as u64..=w_max as u64)
        .map(|w| (w as f64 * 1500.0 * 8.0 / c).max(base))
        .sum();
    let sim = newreno_run();
    let starts = events(&sim, 0, RECOVERY_START);
    let gaps: Vec<f64> = starts
        .windows(2)
        .skip(1)
        .map(|w| (w[1].0 - w[0].0) as f64 / 1e9)
        .collect();
    assert!(gaps.len() >= 3);
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    assert!(
        (mean / period - 1.0).abs() < 0.10,
        "measured {mean:.2} s vs theory {period:.2} s ({gaps:?})"
    );
}

#[test]
fn cubic_window_follows_rfc9438_cubic_function_between_losses() {
    let bdp_packets = 100 * MBIT * 40 / 1000 / 8 / 1500;
    let sim = run(&pipe(
        100 * MBIT,
        40 * MS,
        bdp_packets,
        vec![flow("f", 0, 2, "cubic", bulk(100))],
        100 * SEC,
    ));
    let starts = events(&sim, 0, RECOVERY_START);
    let ends = events(&sim, 0, RECOVERY_END);
    let samples = samples(&sim, 0);
    assert!(starts.len() >= 4, "{} losses", starts.len());
    let mss = 1448.0;
    // Independent calculation for each congestion epoch after the second loss: W_max from the
    // cwnd before the loss with RFC 9438 §4.7 fast convergence, K from cwnd at the epoch start.
    let mut w_max_prev = samples.iter().rev().find(|s| s.0 < starts[0].0).unwrap().1 as f64 / mss;
    let mut checked = 0;
    for i in 1..starts.len() - 1 {
        let before = samples.iter().rev().find(|s| s.0 < starts[i].0).unwrap().1 as f64 / mss;
        let w_max = if before < w_max_prev {
            before * 1.7 / 2.0
        } else {
            before
        };
        w_max_prev = w_max;
        let epoch_start = ends.iter().find(|e| e.0 > starts[i].0).unwrap().0;
        let next_loss = starts[i + 1].0;
        let cwnd_epoch = samples.iter().find(|s| s.0 >= epoch_start).unwrap().1 as f64 / mss;
        let k = ((w_max - cwnd_epoch) / 0.4).cbrt();
        let span = (next_loss - epoch_start) as f64 / 1e9;
        for frac in [0.2, 0.4, 0.6, 0.8, 0.95] {
            let t = frac * span;
            let at = epoch_start + (t * 1e9) as i64;
            let cwnd = samples.iter().rev().find(|s| s.0 <= at).unwrap().1 as f64 / mss;
            let w = 0.4 * (t - k).powi(3) + w_max;
            assert!(
                (cwnd / w - 1.0).abs() < 0.05,
                "epoch {i} t={t:.2}s: cwnd {cwnd:.1} vs W(t) {w:.1} (K {k:.2}, W_max {w_max:.1})"
            );
            checked += 1;
        }
    }
    assert!(checked >= 10);
}

/// Receiver-window-limited steady-state rate over 1 Gbit/s x 40 ms, from the intervals after
/// the first second.
fn rwnd_limited_rate(rcvbuf_bytes: u64) -> f64 {
    let mut f = flow("f", 0, 2, "cubic", bulk(20));
    f.rcvbuf_bytes = rcvbuf_bytes;
    let sim = run(&pipe(GBIT, 40 * MS, 1000, vec![f], 20 * SEC));
    assert_eq!(sim.flow_stats()[0].retrans_segs, 0);
    let iv = &sim.rec.intervals;
    let bytes: i64 = iv.column("bytes").unwrap()[1..].iter().sum();
    bytes as f64 * 8.0 / (iv.len() - 1) as f64
}

#[test]
fn lossless_flow_limited_by_64k_receive_window_achieves_rwnd_over_rtt() {
    // 64 KB = 64 000 bytes: 44 full segments of 1448 bytes fit (63 712 bytes).
    let rate = rwnd_limited_rate(64_000);
    let expect = 64_000.0 * 8.0 / 0.040;
    assert!(
        (rate / expect - 1.0).abs() < 0.02,
        "rate {rate:.0} vs rwnd/RTT {expect:.0}"
    );
}

#[test]
fn odd_segment_window_loses_one_segment_per_rtt_to_the_delayed_ack() {
    // 65 536 bytes hold 45 segments. With an ACK every 2nd segment (RFC 5681 §4.2), the 45th
    // waits for the next round's first segment, so only 44 segments' worth of window is open in
    // steady state: 44 * 1448 bytes per RTT.
    let rate = rwnd_limited_rate(65_536);
    let expect = 44.0 * 1448.0 * 8.0 / 0.040;
    assert!(
        (rate / expect - 1.0).abs() < 0.01,
        "rate {rate:.0} vs 44 segments/RTT {expect:.0}"
    );
}

#[test]
fn fixed_size_transfer_delivers_exactly_n_bytes_in_order() {
    for n in [1u64, 1447, 1448, 65_000, 1_000_000, 10_000_001] {
        let f = flow("f", 0, 2, "newreno", AppConfig::Bytes { bytes: n });
        let mut cfg = pipe(100 * MBIT, 40 * MS, 30, vec![f], 60 * SEC);
        cfg.links[1].ab.loss = 0.01; // force recoveries too
        let sim = run(&cfg);
        let st = &sim.flow_stats()[0];
        assert_eq!(st.bytes_written, n);
        assert_eq!(st.bytes_delivered, n, "n = {n}");
        assert!(st.completion_ns.is_some(), "n = {n} did not complete");
    }
}

/// Two CUBIC flows over T1's equal-rate 1 Gbit/s dumbbell: with host timing noise (as every real
/// host has) the drops are shared; without it the simulator phase-locks and one flow takes most
/// of them (Floyd & Jacobson, "On Traffic Phase Effects in Packet-Switched Gateways", 1992).
/// Returns (Jain index of throughput, smaller / larger retransmission count).
fn t1_like(jitter_ns: u64) -> (f64, f64) {
    let flows = vec![
        flow("a", 0, 2, "cubic", bulk(60)),
        flow("b", 1, 3, "cubic", bulk(60)),
    ];
    let sim = run(&dumbbell(2, GBIT, 40 * MS, 256, jitter_ns, flows, 60 * SEC));
    let st = sim.flow_stats();
    let x: Vec<f64> = st.iter().map(|f| f.bytes_delivered as f64).collect();
    let jain = x.iter().sum::<f64>().powi(2) / (2.0 * x.iter().map(|v| v * v).sum::<f64>());
    let (r0, r1) = (st[0].retrans_segs as f64, st[1].retrans_segs as f64);
    (jain, r0.min(r1) / r0.max(r1))
}

#[test]
fn equal_flows_share_drops_only_with_host_timing_noise() {
    let (jain, drop_share) = t1_like(1_000);
    assert!(jain > 0.95, "Jain index with 1 us host jitter: {jain}");
    assert!(
        drop_share > 0.5,
        "retransmissions with jitter are shared: {drop_share}"
    );
    let (_, locked_share) = t1_like(0);
    assert!(
        locked_share < 0.2,
        "without jitter one flow takes the drops: {locked_share}"
    );
}

/// Linux recovery (tcp_cwnd_reduction / tcp_end_cwnd_reduction): on the entry ACK cwnd becomes
/// what is in flight plus PRR's allowance (at least the fast retransmit), not the textbook
/// ssthresh; at the end of the episode cwnd is exactly ssthresh.
#[test]
fn linux_prr_starts_recovery_near_the_flight_and_ends_at_ssthresh() {
    for prr in [
        tcplab_sim::tcp::prr::PrrVersion::Mainline,
        tcplab_sim::tcp::prr::PrrVersion::Linux515,
    ] {
        let mut f = flow("f", 0, 2, "cubic", bulk(60));
        f.stack = "linux".into();
        f.prr = Some(prr);
        let sim = run(&pipe(100 * MBIT, 40 * MS, 333, vec![f], 60 * SEC));
        let e = &sim.rec.events;
        let (kind, cwnd, ssth, pipe) = (
            e.column("event").unwrap(),
            e.column("cwnd_bytes").unwrap(),
            e.column("ssthresh_bytes").unwrap(),
            e.column("flight_bytes").unwrap(),
        );
        let mut starts = 0;
        for i in 0..e.len() {
            match kind[i] {
                1 => {
                    starts += 1;
                    // cwnd = in flight (packets, rounded up) + sndcnt >= 1
                    assert!(
                        cwnd[i] >= pipe[i] + 1448 && cwnd[i] <= pipe[i] + 20 * 1448,
                        "{prr:?}: {} vs pipe {}",
                        cwnd[i],
                        pipe[i]
                    );
                }
                2 => assert_eq!(cwnd[i], ssth[i], "{prr:?}: cwnd = ssthresh at the end"),
                _ => {}
            }
        }
        assert!(starts >= 3);
    }
}

/// A tail loss: the last two data packets of a 100-segment transfer are dropped. Linux sends a
/// tail loss probe after ~2 srtt (tcp_schedule_loss_probe), its SACK lets RACK mark the other
/// lost, and fast recovery repairs both without a timeout; the textbook stack (no TLP) waits for
/// the RTO.
#[test]
fn tail_loss_is_repaired_by_a_probe_on_linux_and_by_the_rto_on_the_textbook_stack() {
    let run_stack = |stack: &str| {
        let mut f = flow("f", 0, 2, "cubic", AppConfig::Bytes { bytes: 100 * 1448 });
        f.stack = stack.into();
        let mut cfg = pipe(100 * MBIT, 40 * MS, 1000, vec![f], 20 * SEC);
        cfg.links[1].ab.drop_arrivals = vec![99, 100];
        run(&cfg)
    };
    let linux = run_stack("linux");
    let st = &linux.flow_stats()[0];
    assert_eq!(st.bytes_delivered, 100 * 1448);
    assert_eq!(st.rtos, 0, "linux repaired the tail without an RTO");
    assert_eq!(events(&linux, 0, 6).len(), 1, "one tail loss probe");
    assert_eq!(st.recoveries, 1);
    let rfc = run_stack("rfc");
    let rt = &rfc.flow_stats()[0];
    assert_eq!(rt.bytes_delivered, 100 * 1448);
    assert!(rt.rtos >= 1, "the textbook stack needs the RTO");
    assert!(st.completion_ns.unwrap() < rt.completion_ns.unwrap());
}

//! ECN in the stacks and DCTCP, against arithmetic written here: no loss under a marking AQM,
//! one reduction per window, DCTCP's alpha as the EWMA of the marked fraction, and the DCTCP
//! paper's queue around K.

mod common;
use common::*;
use tcplab_sim::cc::dctcp::Dctcp;
use tcplab_sim::cc::freebsd_dctcp::FreeBsdDctcp;
use tcplab_sim::cc::{AckKind, CcHooks, CcVars, LinuxCcOps};
use tcplab_sim::config::FlowConfig;
use tcplab_sim::net::aqm::AqmConfig;
use tcplab_sim::time::{Ns, MS, SEC, US};

fn ecn_flow(name: &str, stack: &str, cc: &str) -> FlowConfig {
    let mut f = flow(name, 0, 2, cc, bulk(20));
    f.stack = stack.into();
    f.ecn = true;
    if stack == "freebsd" {
        f.freebsd = Some(freebsd_knobs());
    }
    f
}

#[test]
fn ecn_flows_lose_no_packets_under_a_marking_codel() {
    let flows = vec![
        ecn_flow("l", "linux", "cubic"),
        ecn_flow("f", "freebsd", "newreno"),
        ecn_flow("r", "rfc", "newreno"),
    ];
    let mut cfg = pipe(100 * MBIT, 40 * MS, 2000, flows, 20 * SEC);
    cfg.links[1].ab.aqm = Some(AqmConfig::Codel {
        target_ns: 5 * MS,
        interval_ns: 100 * MS,
        limit_packets: 2000,
        ecn: true,
        ce_threshold_ns: None,
    });
    let sim = run(&cfg);
    let marks = sim.ports[2].aqm().unwrap().stats();
    assert!(marks.ecn_marks > 10, "{} marks", marks.ecn_marks);
    assert_eq!(marks.drops, 0);
    for s in sim.flow_stats() {
        let (ce, ece, reductions) = s.ecn.expect("ECN negotiated");
        assert_eq!(s.retrans_segs, 0, "{}: no retransmission", s.name);
        assert!(
            ce > 0 && reductions > 0,
            "{}: ce {ce}, reductions {reductions}",
            s.name
        );
        // RFC 3168 §6.1.2: at most one reduction per window of data, however many ECE ACKs.
        let rtts = 20.0 / 0.040;
        assert!(
            (reductions as f64) < rtts && ece >= reductions,
            "{}: {reductions} reductions",
            s.name
        );
    }
}

/// Feed a module ACKs of one MSS for `windows` windows of `w` segments each, a fraction
/// `marked` of each window's ACKs carrying ECE; returns alpha / 1024 after each window.
fn alpha_run<C: CcHooks + LinuxCcOps>(
    cc: &mut C,
    alpha: fn(&C) -> u64,
    marked: f64,
    w: u64,
    windows: u64,
) -> Vec<f64> {
    let mss = 1000;
    let mut v = CcVars::new(mss, 10 * mss);
    v.win.cwnd = w * mss;
    v.snd_nxt = w * mss;
    cc.conn_init(&v.view, &mut v.win);
    let mut out = Vec::new();
    for k in 0..windows {
        for i in 0..w {
            v.ece = (i as f64) < marked * w as f64;
            v.bytes_this_ack = mss;
            v.delivered_bytes_this_ack = mss;
            // ACK of segment i of window k, a window of data in flight: FreeBSD's ack_received
            // sees snd_una before the ACK, Linux's in_ack_event after it.
            v.snd_una = (k * w + i) * mss;
            v.snd_nxt = v.snd_una + w * mss;
            cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
            v.snd_una += mss;
            v.snd_nxt += mss;
            cc.in_ack_event(&v.view, &mut v.win, false);
            v.win.cwnd = w * mss;
        }
        out.push(alpha(cc) as f64 / 1024.0);
    }
    out
}

#[test]
fn dctcp_alpha_is_the_ewma_of_the_marked_fraction() {
    // DCTCP paper eq. (1): alpha <- (1 - g) alpha + g F with g = 1/16, from alpha = 1; after
    // n windows of constant F, alpha = F + (1 - F)(15/16)^n.
    for f in [0.1, 0.25, 0.5] {
        let linux = alpha_run(&mut Dctcp::default(), |c| c.alpha, f, 40, 120);
        let freebsd = alpha_run(&mut FreeBsdDctcp::default(), |c| c.alpha, f, 40, 120);
        // Linux updates on the ACK that reaches the window's end (!before(snd_una, next_seq));
        // FreeBSD on the first ACK beyond it (SEQ_GT(curack, save_sndnxt)), so after n + 1
        // windows FreeBSD has made n updates.
        for (name, a, lag) in [("linux", &linux, 0), ("freebsd", &freebsd, 1)] {
            for n in [10usize, 30, 119] {
                let updates = (n + 1 - lag) as i32;
                let want = f + (1.0 - f) * (15.0f64 / 16.0).powi(updates);
                // Integer alpha in 1/1024 loses up to 1/1024 per update: allow 2%.
                assert!(
                    (a[n] - want).abs() < 0.02,
                    "{name} F={f}: alpha after {} windows {:.4}, EWMA {want:.4}",
                    n + 1,
                    a[n]
                );
            }
        }
    }
}

/// The DCTCP paper's (Alizadeh et al., SIGCOMM 2010, §3.3) sawtooth for N synchronised flows:
/// W* = (C RTT + K) / N, alpha = sqrt(2 / W*), amplitude A = N (W* + 1) alpha / 2,
/// Q_max = K + N. Returns (Q_max, A) in packets.
fn dctcp_paper(c_pkts_per_s: f64, rtt_s: f64, k_pkts: f64, n: f64) -> (f64, f64) {
    let w_star = (c_pkts_per_s * rtt_s + k_pkts) / n;
    let alpha = (2.0 / w_star).sqrt();
    (k_pkts + n, n * (w_star + 1.0) * alpha / 2.0)
}

#[test]
fn dctcp_queue_oscillates_around_k_with_the_papers_amplitude() {
    let rate = 10 * GBIT;
    let rtt: Ns = 200 * US;
    let k_pkts = 65.0; // the paper's K for 10 Gbit/s
    let flows: Vec<FlowConfig> = (0..2)
        .map(|i| ecn_flow(&format!("d{i}"), "linux", "dctcp"))
        .map(|mut f| {
            f.app = bulk(1);
            f
        })
        .collect();
    let mut cfg = pipe(rate, rtt, 1000, flows, SEC);
    cfg.sample_interval_ns = 20 * US;
    // The senders' host link faster than the bottleneck, so the queue forms at the switch.
    cfg.links[0].ab.rate_bps = 40 * GBIT;
    cfg.links[0].ba.rate_bps = 40 * GBIT;
    cfg.links[1].ab.aqm = Some(AqmConfig::Step {
        threshold_bytes: (k_pkts * 1500.0) as u64,
        limit_packets: 1000,
    });
    let sim = run(&cfg);
    let q = &sim.rec.queues;
    let (t, b) = (q.column("t_ns").unwrap(), q.column("queue_bytes").unwrap());
    let mut pk: Vec<f64> = (0..t.len())
        .filter(|&i| t[i] as Ns >= 300 * MS)
        .map(|i| b[i] as f64 / 1500.0)
        .collect();
    pk.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let pct = |p: f64| pk[((pk.len() - 1) as f64 * p) as usize];
    let (q_max, amp) = dctcp_paper(10e9 / 8.0 / 1500.0, 200e-6, k_pkts, 2.0);
    let (lo, hi) = (pct(0.02), pct(0.98));
    eprintln!(
        "dctcp queue p2 {lo:.1} p50 {:.1} p98 {hi:.1}; paper Q_max {q_max:.1}, A {amp:.1}",
        pct(0.5)
    );
    let stats = sim.flow_stats();
    for s in &stats {
        assert_eq!(s.retrans_segs, 0, "no loss with step marking");
    }
    assert!(
        (hi - q_max).abs() <= 0.25 * q_max,
        "queue top {hi:.1} vs K + N = {q_max:.1}"
    );
    let swing = hi - lo;
    assert!(
        swing >= 0.5 * amp && swing <= 2.0 * amp,
        "queue swing {swing:.1} packets vs the paper's amplitude {amp:.1}"
    );
    let util = stats.iter().map(|s| s.bytes_delivered).sum::<u64>() as f64 * 8.0 / 1e9 / 10.0;
    assert!(util > 0.9, "utilisation {util:.3}");
}

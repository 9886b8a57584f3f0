//! Invariants over random topologies, rates, buffers, loss rates and TCP options: every byte
//! written is delivered in order exactly once, the scoreboard and packet accounting stay
//! consistent, cwnd never falls below one MSS, no packet is both dropped and delivered.
//! Cases are drawn from a seeded generator; a failure prints the case seed to replay it.

mod common;
use common::*;
use tcplab_sim::config::FreeBsdVersion;
use tcplab_sim::config::*;
use tcplab_sim::rng::Rng;
use tcplab_sim::sim::Simulation;
use tcplab_sim::time::{MS, SEC, US};

fn random_case(seed: u64) -> SimConfig {
    let mut r = Rng::new(seed);
    let mut pick = |lo: u64, hi: u64| lo + r.below(hi - lo + 1);
    let pairs = pick(1, 4) as u32;
    let switch = pick(0, 2) == 0;
    let rate = pick(1, 200) * MBIT;
    let delay = pick(50, 30_000) * US;
    let loss_permille = pick(0, 30);
    // hosts s_i = i, r_i = pairs + i; middle nodes after them
    let mut nodes = Vec::new();
    for i in 0..pairs {
        nodes.push(node(&format!("s{i}"), NodeKind::Host));
    }
    for i in 0..pairs {
        nodes.push(node(&format!("r{i}"), NodeKind::Host));
    }
    let a = 2 * pairs;
    let mut links = Vec::new();
    let access = |rate: u64| dir(rate, 20 * US, None);
    if switch {
        let mut sw = node("sw", NodeKind::Switch);
        sw.shared_buffer_bytes = Some(pick(3, 200) * 1500);
        // Flow control in half the switch cases, from a stream of its own (the other draws
        // stay those of the cases without it).
        let mut rp = Rng::new(seed ^ 0x9a05e);
        if rp.below(2) == 0 {
            let xoff_bytes = (1 + rp.below(20)) * 1500;
            sw.pause = Some(PauseConfig {
                xoff_bytes,
                xon_bytes: rp.below(xoff_bytes),
            });
        }
        nodes.push(sw);
        for i in 0..pairs {
            links.push(LinkConfig {
                a: i,
                b: a,
                ab: access(10 * rate),
                ba: access(10 * rate),
            });
            let mut d = dir(rate, delay, None);
            d.loss = loss_permille as f64 / 1000.0;
            links.push(LinkConfig {
                a,
                b: pairs + i,
                ab: d,
                ba: access(rate),
            });
        }
    } else {
        nodes.push(node("rt1", NodeKind::Router));
        nodes.push(node("rt2", NodeKind::Router));
        let mut bott = dir(rate, delay, Some(pick(2, 400)));
        if pick(0, 1) == 0 {
            bott.buffer_packets = None;
            bott.buffer_bytes = Some(pick(3000, 600_000));
        }
        bott.loss = loss_permille as f64 / 1000.0;
        let rev = dir(rate, delay, Some(1000));
        links.push(LinkConfig {
            a,
            b: a + 1,
            ab: bott,
            ba: rev,
        });
        for i in 0..pairs {
            let acc_rate = pick(1, 20) * rate / 2 + MBIT;
            links.push(LinkConfig {
                a: i,
                b: a,
                ab: access(acc_rate),
                ba: access(acc_rate),
            });
            links.push(LinkConfig {
                a: a + 1,
                b: pairs + i,
                ab: access(acc_rate),
                ba: access(acc_rate),
            });
        }
    }
    let mut flows = Vec::new();
    for i in 0..pairs {
        let app = if pick(0, 1) == 0 {
            AppConfig::Bytes {
                bytes: pick(1, 3_000_000),
            }
        } else {
            AppConfig::Time {
                duration_ns: pick(1, 4) * SEC,
            }
        };
        let cc = if pick(0, 1) == 0 { "newreno" } else { "cubic" };
        let mut f = flow(&format!("f{i}"), i, pairs + i, cc, app);
        f.start_ns = pick(0, 2000) * MS;
        f.sack = pick(0, 3) != 0;
        f.timestamps = pick(0, 3) != 0;
        f.mss = if f.timestamps { 1448 } else { 1460 };
        f.iw_segments = pick(1, 40) as u32;
        f.stack = ["linux", "rfc", "freebsd", "freebsd-rack"][pick(0, 3) as usize].into();
        if f.stack.starts_with("freebsd") {
            f.sack = true; // the FreeBSD models cover SACK connections only
            let d43470 = pick(0, 1) == 0;
            f.freebsd = Some(FreeBsdKnobs {
                d43470,
                do_prr: pick(0, 3) != 0,
                sack_tso: pick(0, 1) == 0,
                tso: pick(0, 3) != 0,
                sendbuf_inc_bytes: [0, 8192, 1000][pick(0, 2) as usize],
                version: if d43470 && pick(0, 1) == 0 {
                    FreeBsdVersion::V15_2025
                } else {
                    FreeBsdVersion::V2023
                },
                sack_lrd: None,
                rack_rto_cwnd: None,
            });
        }
        f.rcvbuf_bytes = pick(3, 3000) * 1448;
        f.sndbuf_bytes = pick(1, 3000) * 1448;
        f.write_bytes = pick(1, 1 << 20);
        flows.push(f);
    }
    let udp = if pick(0, 3) == 0 && !switch {
        vec![UdpConfig {
            name: "bg".into(),
            src: a,
            dst: a + 1,
            rate_bps: rate / 3,
            size_bytes: 1500,
            start_ns: 0,
            stop_ns: 3 * SEC,
        }]
    } else {
        vec![]
    };
    // A latency probe across the network in half the cases (requests and replies are packets
    // like any other: conservation, drops and the end of the run must count them).
    let probes = if pick(0, 1) == 0 {
        vec![ProbeConfig {
            name: "ping0".into(),
            src: 0,
            dst: pairs,
            interval_ns: pick(5, 500) * MS,
            size_bytes: 84,
            start_ns: 0,
            stop_ns: 3 * SEC,
        }]
    } else {
        vec![]
    };
    SimConfig {
        seed,
        stop_ns: 400 * SEC,
        sample_interval_ns: 10 * MS,
        interval_ns: SEC,
        record_sends: false,
        record_acks: false,
        measure_cpu: false,
        nodes,
        links,
        flows,
        udp,
        probes,
        monitor: vec![PortRef {
            link: 0,
            dir: "ab".into(),
        }],
    }
}

fn check_case(seed: u64) {
    let cfg = random_case(seed);
    let mut sim = Simulation::new(&cfg).unwrap_or_else(|e| panic!("case {seed}: {e}"));
    sim.audit = Some(Default::default());
    let mut t = 0;
    let mut probe_rows = 0;
    while t < cfg.stop_ns && !sim.flows_done() {
        t += 50 * MS;
        sim.run_until(t);
        if let Err(e) = sim.check_invariants() {
            panic!("case {seed} at {:.3} s: {e}\n{cfg:#?}", t as f64 / 1e9);
        }
        // drain records as a real run does
        probe_rows += sim.rec.probes.len() as u64;
        for table in sim.rec.tables_mut() {
            table.take();
        }
    }
    for p in &sim.probes {
        // Every request sent had its fate recorded once: a row each, answered or lost.
        assert!(p.sent > 0, "case {seed}: the probe sent nothing");
        assert_eq!(
            p.answered + p.lost,
            p.sent,
            "case {seed}: probe requests unresolved"
        );
        assert_eq!(
            probe_rows, p.sent,
            "case {seed}: one probes row per request"
        );
    }
    assert!(
        sim.flows_done(),
        "case {seed}: flows unfinished after {} s: {:#?}",
        t / SEC,
        sim.flow_stats()
    );
    for (st, f) in sim.flow_stats().iter().zip(&cfg.flows) {
        assert_eq!(
            st.bytes_delivered, st.bytes_written,
            "case {seed} flow {}: delivered != written",
            f.name
        );
        if let AppConfig::Bytes { bytes } = f.app {
            assert_eq!(st.bytes_written, bytes, "case {seed} flow {}", f.name);
        }
    }
}

#[test]
fn invariants_hold_over_random_networks() {
    let cases: u64 = std::env::var("TCPLAB_PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    for seed in 0..cases {
        check_case(seed);
    }
}

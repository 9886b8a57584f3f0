//! Routes of their own: a flow given a path takes it (and its ACKs come back along it) while
//! other flows keep the shortest path; a path that is not one is refused.

mod common;
use common::*;
use tcplab_sim::config::*;
use tcplab_sim::sim::Simulation;
use tcplab_sim::time::{MS, SEC};

/// s - a, a - b, a - c, b - d, c - d, d - r: two equal-cost ways from a to d (b: the lower
/// ports, the shortest path's tie-break; c).
fn diamond(flows: Vec<FlowConfig>) -> SimConfig {
    let names = [
        ("s", NodeKind::Host),
        ("a", NodeKind::Router),
        ("b", NodeKind::Router),
    ];
    let more = [
        ("c", NodeKind::Router),
        ("d", NodeKind::Router),
        ("r", NodeKind::Host),
    ];
    let link = |a, b, rate| LinkConfig {
        a,
        b,
        ab: dir(rate, MS, Some(100)),
        ba: dir(rate, MS, Some(100)),
    };
    SimConfig {
        nodes: names
            .iter()
            .chain(&more)
            .map(|&(n, k)| node(n, k))
            .collect(),
        links: vec![
            link(0, 1, GBIT),
            link(1, 2, 100 * MBIT),
            link(1, 3, 100 * MBIT),
            link(2, 4, 100 * MBIT),
            link(3, 4, 100 * MBIT),
            link(4, 5, GBIT),
        ],
        // The pipe's run settings (seed 1, 1 s intervals, link 1 monitored) around this graph.
        ..pipe(GBIT, 2 * MS, 100, flows, 2 * SEC)
    }
}

fn tx_bytes(sim: &Simulation, port: usize) -> u64 {
    sim.ports[port].transmitted(sim.now).0
}

#[test]
fn a_flow_with_a_path_takes_it_and_its_acks_come_back_along_it() {
    let mut own = flow("own", 0, 5, "cubic", bulk(2));
    own.path = Some(vec![0, 1, 3, 4, 5]);
    let sim = run(&diamond(vec![own]));
    // Ports: link i has 2i (a -> b) and 2i + 1 (b -> a). Data a -> c -> d, ACKs d -> c -> a.
    assert!(tx_bytes(&sim, 4) > 10_000_000, "a -> c carries the data");
    assert!(tx_bytes(&sim, 9) > 100_000, "d -> c carries the ACKs");
    for idle in [2, 3, 6, 7] {
        assert_eq!(tx_bytes(&sim, idle), 0, "port {idle} (via b) is idle");
    }
}

#[test]
fn other_flows_keep_the_shortest_path_beside_one_with_its_own() {
    let mut own = flow("own", 0, 5, "cubic", bulk(2));
    own.path = Some(vec![0, 1, 3, 4, 5]);
    let plain = flow("plain", 0, 5, "cubic", bulk(2));
    let sim = run(&diamond(vec![own, plain]));
    let (via_b, via_c) = (tx_bytes(&sim, 2), tx_bytes(&sim, 4));
    // Each has a 100 Mbit/s way of its own: both full for most of the 2 s.
    assert!(via_b > 20_000_000 && via_c > 20_000_000, "{via_b} {via_c}");
    assert!(sim.receivers.iter().all(|r| r.acks_sent > 1000));
}

#[test]
fn a_path_that_is_not_one_is_refused() {
    for (path, why) in [
        (vec![0, 1, 4, 5], "not linked"),
        (vec![0, 1, 2, 1, 3, 4, 5], "twice"),
        (vec![0, 1, 3, 4], "from its src to its dst"),
    ] {
        let mut f = flow("bad", 0, 5, "cubic", bulk(1));
        f.path = Some(path);
        let err = Simulation::new(&diamond(vec![f])).err().expect("refused");
        assert!(err.contains(why), "{err}");
    }
}

#[test]
fn flows_on_the_same_detour_share_it_beyond_4095_routes() {
    // 5 000 short flows, one every 0.5 ms, all by a -> c -> d (the same detour from the shortest
    // path at a): one detour, not 5 000 routes of their own; each takes it, none takes a -> b.
    let flows = (0..5000)
        .map(|i| {
            let mut f = flow(
                &format!("f{i}"),
                0,
                5,
                "cubic",
                AppConfig::Bytes { bytes: 1000 },
            );
            f.path = Some(vec![0, 1, 3, 4, 5]);
            f.start_ns = i * MS / 2;
            f
        })
        .collect();
    let mut cfg = diamond(flows);
    cfg.stop_ns = 5 * SEC;
    let sim = run(&cfg);
    assert!(sim.flows_done());
    assert!(
        tx_bytes(&sim, 4) > 5000 * 1000,
        "a -> c carries every flow's data"
    );
    assert_eq!(tx_bytes(&sim, 2), 0, "a -> b carries nothing");
}

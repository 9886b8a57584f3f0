//! Performance hints change no result: the same run with and without them gives the same records.

mod common;
use common::*;
use tcplab_sim::sim::Simulation;
use tcplab_sim::time::MS;

/// Every record value of a run to its stop time, in order, with the packet totals.
fn records(sim: &mut Simulation, stop_ns: u64) -> (Vec<i64>, [u64; 3]) {
    sim.run_until(stop_ns);
    sim.check_invariants().expect("invariants hold");
    let mut all = Vec::new();
    for table in sim.rec.tables_mut() {
        for col in table.take() {
            all.extend(col);
        }
    }
    (all, [sim.created, sim.delivered, sim.dropped])
}

#[test]
fn arrivals_prefetching_for_the_next_packet_change_no_record() {
    // 80 pairs: 322 ports, so the prefetches are on by default. Access links at the bottleneck's
    // rate, so pipes hold several packets (each arrival has a next packet to prefetch for, both
    // forwarded ones and ones at their destination) and the bottleneck drops.
    let n = 80;
    let flows = (0..n)
        .map(|i| flow(&format!("f{i}"), i, n + i, "reno", bulk(1)))
        .collect();
    let stop_ns = 300 * MS;
    let cfg = dumbbell(n, 100 * MBIT, 20 * MS, 200, 1_000, flows, stop_ns);
    let mut with = Simulation::new(&cfg).unwrap();
    let mut without = Simulation::new(&cfg).unwrap();
    without.set_prefetch_arrivals(false);
    let (a, b) = (records(&mut with, stop_ns), records(&mut without, stop_ns));
    assert!(
        a.1[1] > 3_000 && a.1[2] > 0,
        "delivered and dropped: {:?}",
        a.1
    );
    assert_eq!(a, b);
    // And on in a small network, where they are off by default.
    let flows = (0..2)
        .map(|i| flow(&format!("f{i}"), i, 2 + i, "reno", bulk(1)))
        .collect();
    let cfg = dumbbell(2, 100 * MBIT, 20 * MS, 50, 1_000, flows, stop_ns);
    let mut with = Simulation::new(&cfg).unwrap();
    with.set_prefetch_arrivals(true);
    let mut without = Simulation::new(&cfg).unwrap();
    assert_eq!(records(&mut with, stop_ns), records(&mut without, stop_ns));
}

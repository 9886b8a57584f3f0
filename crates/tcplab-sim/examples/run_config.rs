//! Run resolved simulator configs (JSON, as `tcplab.spec.resolve(...).sim_config`) to the end,
//! draining records as the Python driver does, and print per config: simulated events, wall
//! seconds, and a digest of every record (equal digests = identical results). Used by
//! bench/dispatch.sh to time the trait-object and enum-dispatch builds side by side.

use std::time::Instant;

use tcplab_sim::config::SimConfig;
use tcplab_sim::sim::Simulation;

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: run_config CONFIG.json...");
        std::process::exit(2);
    }
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let cfg = SimConfig::from_json(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
        let t0 = Instant::now();
        let mut sim = Simulation::new(&cfg).unwrap_or_else(|e| panic!("{path}: {e}"));
        // FNV-1a over every record value, in order.
        let mut digest: u64 = 0xcbf2_9ce4_8422_2325;
        while sim.now < sim.stop_ns && !sim.flows_done() {
            let next = (sim.now + 1_000_000_000).min(sim.stop_ns);
            sim.run_until(next);
            // As the Python driver drains them (`drain_with`: the tables keep their memory).
            for table in sim.rec.tables_mut() {
                let _ = table.drain_with(|_, col| {
                    for &v in col {
                        digest = (digest ^ v as u64).wrapping_mul(0x100_0000_01b3);
                    }
                    Ok::<(), ()>(())
                });
            }
        }
        println!(
            "{path}\t{}\t{:.3}\t{digest:016x}",
            sim.events_processed(),
            t0.elapsed().as_secs_f64()
        );
    }
}

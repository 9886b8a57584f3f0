//! Shared by the FreeBSD default stack's tests (freebsd.rs, freebsd_versions.rs): its flows,
//! the scripted single loss and tail loss, the event codes.
#![allow(dead_code, missing_docs, unreachable_pub)]

use crate::common::*;
use tcplab_sim::config::FreeBsdVersion;
use tcplab_sim::config::{AppConfig, FlowConfig, FreeBsdKnobs};
use tcplab_sim::sim::Simulation;
use tcplab_sim::time::{MS, SEC};

pub const MSS: i64 = 1448;
pub const RECOVERY_START: i64 = 1;
pub const RECOVERY_END: i64 = 2;
pub const RTO: i64 = 3;

/// A newreno flow on the default stack sending `bytes` (`iperf3 -n`), PRR on.
pub fn freebsd_flow(bytes: u64, d43470: bool, tso: bool) -> FlowConfig {
    let mut f = flow("f", 0, 2, "newreno", AppConfig::Bytes { bytes });
    f.stack = "freebsd".into();
    f.freebsd = Some(FreeBsdKnobs {
        d43470,
        tso,
        ..freebsd_knobs()
    });
    f
}

/// The same flow on the 15.0-2025 version of the stack.
pub fn freebsd_2025_flow(bytes: u64) -> FlowConfig {
    freebsd_version_flow(bytes, FreeBsdVersion::V15_2025, true)
}

/// The same flow on a given version of the stack, before or after D43470.
pub fn freebsd_version_flow(bytes: u64, version: FreeBsdVersion, d43470: bool) -> FlowConfig {
    let mut f = freebsd_flow(bytes, d43470, true);
    if let Some(k) = f.freebsd.as_mut() {
        k.version = version;
    }
    f
}

/// The versions that follow D43470 as committed (7dc78150c730): 15.0-2025, and T4's
/// 15.0-2024-10 tree with the review applied.
pub const COMMITTED: [(FreeBsdVersion, bool); 2] = [
    (FreeBsdVersion::V15_2024_10, true),
    (FreeBsdVersion::V15_2025, true),
];

/// 100 Mbit/s x 40 ms (BDP 345 packets), a 1000-packet buffer, one newreno flow of 30 MB, and
/// exactly one packet dropped at the bottleneck: the 300th to arrive, in slow start while the
/// window is still below the BDP, so that nothing else is ever lost.
pub fn one_loss_with(d43470: bool, tso: bool) -> Simulation {
    let f = freebsd_flow(30_000_000, d43470, tso);
    let mut cfg = pipe(100 * MBIT, 40 * MS, 1000, vec![f], 20 * SEC);
    cfg.record_sends = true;
    cfg.links[1].ab.drop_arrivals = vec![300];
    run(&cfg)
}

pub fn one_loss(d43470: bool) -> Simulation {
    one_loss_with(d43470, true)
}

/// A 30-segment transfer (`iperf3 -n`) that loses its 20th and its last segment: the IW of 10 and
/// one round of slow start send all 30 before the loss is seen, so segments 21-29 are SACKed and
/// nothing is sent beyond the recovery point.
pub fn tail_loss(d43470: bool) -> Simulation {
    tail_loss_version(FreeBsdVersion::V2023, d43470)
}

pub fn tail_loss_version(version: FreeBsdVersion, d43470: bool) -> Simulation {
    let f = freebsd_version_flow(30 * 1448, version, d43470);
    let mut cfg = pipe(100 * MBIT, 40 * MS, 1000, vec![f], 5 * SEC);
    cfg.record_sends = true;
    cfg.links[1].ab.drop_arrivals = vec![20, 30];
    run(&cfg)
}

/// t_maxseg, the MSS without options (tcp_sack.c's IsLost threshold uses it).
pub const T_MAXSEG: i64 = MSS + 12;

pub fn one_loss_2025() -> Simulation {
    one_loss_version(FreeBsdVersion::V15_2025, true)
}

/// The single loss (the 300th arrival) on a given version.
pub fn one_loss_version(version: FreeBsdVersion, d43470: bool) -> Simulation {
    one_loss_version_dropping(version, d43470, &[300])
}

pub fn one_loss_version_dropping(
    version: FreeBsdVersion,
    d43470: bool,
    drops: &[u64],
) -> Simulation {
    let f = freebsd_version_flow(30_000_000, version, d43470);
    let mut cfg = pipe(100 * MBIT, 40 * MS, 1000, vec![f], 20 * SEC);
    cfg.record_sends = true;
    cfg.links[1].ab.drop_arrivals = drops.to_vec();
    run(&cfg)
}

/// The bottleneck arrival number of the first retransmission in `sim` (packets reach it in the
/// order they are sent): one more than the segments sent before it.
pub fn retransmission_arrival(sim: &Simulation) -> u64 {
    let s = sends(sim);
    let retx = s.iter().position(|x| x.3 == 1).expect("a retransmission");
    s[..retx].iter().map(|x| (x.2 + MSS - 1) / MSS).sum::<i64>() as u64 + 1
}

/// (t_ns, ssthresh_bytes) of flow 0's samples.
pub fn ssthresh_samples(sim: &Simulation) -> Vec<(i64, i64)> {
    let r = &sim.rec.flows;
    let (t, f, s) = (
        r.column("t_ns").unwrap(),
        r.column("flow").unwrap(),
        r.column("ssthresh_bytes").unwrap(),
    );
    (0..t.len())
        .filter(|&i| f[i] == 0)
        .map(|i| (t[i], s[i]))
        .collect()
}

/// ACKs of flow 0 as the sender received them (the record needs `record_acks`):
/// (t_ns, ack, first SACK block's start or -1).
pub fn acks(sim: &Simulation) -> Vec<(i64, i64, i64)> {
    let a = &sim.rec.acks;
    let (t, f, k, s) = (
        a.column("t_ns").unwrap(),
        a.column("flow").unwrap(),
        a.column("ack").unwrap(),
        a.column("sack1_start").unwrap(),
    );
    (0..t.len())
        .filter(|&i| f[i] == 0)
        .map(|i| (t[i], k[i], s[i]))
        .collect()
}

/// The single-loss flow with a second drop ten segments later (arrivals 300 and 310), ACKs
/// recorded: one window, two holes, so the first hole's retransmission is acked by a partial
/// ACK (up to the second hole) that carries SACK blocks.
pub fn two_losses_version(version: FreeBsdVersion, d43470: bool) -> Simulation {
    let f = freebsd_version_flow(30_000_000, version, d43470);
    let mut cfg = pipe(100 * MBIT, 40 * MS, 1000, vec![f], 20 * SEC);
    cfg.record_sends = true;
    cfg.record_acks = true;
    cfg.links[1].ab.drop_arrivals = vec![300, 310];
    run(&cfg)
}

//! Send records: what each output call hands the NIC (TSO chunks, segments, retransmissions).

mod common;
use common::*;
use tcplab_sim::config::AppConfig;
use tcplab_sim::sim::Simulation;
use tcplab_sim::time::{MS, SEC};

fn sends(stack: &str, bytes: u64, loss: f64) -> (Simulation, Vec<(i64, i64, i64, i64)>) {
    let mut f = flow("f", 0, 2, "newreno", AppConfig::Bytes { bytes });
    f.stack = stack.into();
    let mut cfg = pipe(GBIT, 40 * MS, 1000, vec![f], 30 * SEC);
    cfg.record_sends = true;
    cfg.links[1].ab.loss = loss;
    let sim = run(&cfg);
    let t = &sim.rec.sends;
    let (seq, b, segs, retx) = (
        t.column("seq").unwrap(),
        t.column("bytes").unwrap(),
        t.column("segments").unwrap(),
        t.column("retx").unwrap(),
    );
    let rows = (0..t.len())
        .map(|i| (seq[i], b[i], segs[i], retx[i]))
        .collect();
    (sim, rows)
}

#[test]
fn new_data_sends_cover_the_stream_exactly_once_in_order() {
    let (sim, rows) = sends("rfc", 3_000_000, 0.0);
    let mut next = 0;
    for &(seq, bytes, segs, retx) in &rows {
        assert_eq!(retx, 0);
        assert_eq!(seq, next, "sends are contiguous");
        assert!(bytes <= 65_536 && segs == (bytes + 1447) / 1448);
        next += bytes;
    }
    assert_eq!(next as u64, sim.flow_stats()[0].bytes_written);
}

#[test]
fn initial_window_leaves_as_one_tso_chunk() {
    // IW10 = 10 * 1448 = 14 480 bytes, all handed to the NIC by the first output call.
    let (_, rows) = sends("rfc", 1_000_000, 0.0);
    assert_eq!(rows[0], (0, 14_480, 10, 0));
}

#[test]
fn linux_sizes_tso_chunks_to_about_a_millisecond_at_the_pacing_rate() {
    // tcp_tso_autosize(): max(pacing_rate >> 10, 2 MSS), at most 64 KB. Early on (no RTT sample
    // yet) the pacing rate is unknown, so chunks are 2 segments; later they may grow.
    let (_, rows) = sends("linux", 3_000_000, 0.0);
    assert_eq!(
        rows[0].1,
        2 * 1448,
        "first chunk: 2 segments before any RTT sample"
    );
    assert!(rows.iter().all(|r| r.1 <= 65_536));
}

#[test]
fn retransmissions_are_recorded_one_segment_each() {
    let (sim, rows) = sends("rfc", 3_000_000, 0.01);
    let retx: Vec<_> = rows.iter().filter(|r| r.3 == 1).collect();
    assert!(!retx.is_empty());
    assert!(retx.iter().all(|r| r.1 <= 1448 && r.2 == 1));
    assert_eq!(retx.len() as u64, sim.flow_stats()[0].retrans_segs);
}

//! A flow that waits for another (`after_flow`): a response starts once its request's last byte
//! is at the server, `start_ns` later, and reports its FCT from then.

mod common;
use common::*;
use tcplab_sim::config::AppConfig;
use tcplab_sim::sim::Simulation;
use tcplab_sim::time::{MS, SEC};

fn request_response(gap_ns: u64) -> Simulation {
    // Request s -> r (10 KB, established), response r -> s (100 KB) after it, over 10 ms RTT.
    let req = flow("req", 0, 2, "newreno", AppConfig::Bytes { bytes: 10_000 });
    let mut resp = flow("resp", 2, 0, "newreno", AppConfig::Bytes { bytes: 100_000 });
    resp.after_flow = Some(0);
    resp.start_ns = gap_ns;
    run(&pipe(100_000_000, 10 * MS, 100, vec![req, resp], 2 * SEC))
}

#[test]
fn a_response_starts_when_its_request_is_in_and_counts_its_fct_from_there() {
    let sim = request_response(MS);
    let st = sim.flow_stats();
    // The request's 10 KB (7 segments, one window) arrive ~one way (5 ms) after it starts; its
    // FCT ends one more way later, when the last ACK is back.
    let req_fct = st[0].fct_ns.expect("request completes");
    let resp_start = st[1].start_ns;
    assert!(
        resp_start > 5 * MS + MS && resp_start < req_fct + MS,
        "{resp_start} vs {req_fct}"
    );
    // The server had the request half a round trip before the client saw it acknowledged.
    assert!(req_fct + MS - resp_start > 4 * MS, "{req_fct} {resp_start}");
    let resp_fct = st[1].fct_ns.expect("response completes");
    assert!(resp_fct >= 10 * MS && resp_fct < 200 * MS, "{resp_fct}");
    assert_eq!(st[1].bytes_delivered, 100_000);
}

#[test]
fn the_gap_after_the_request_moves_the_response_by_as_much() {
    let a = request_response(0).flow_stats();
    let b = request_response(3 * MS).flow_stats();
    assert_eq!(b[1].start_ns - a[1].start_ns, 3 * MS);
    // The same transfer but for the request's last ACK, which shares the response's path at once
    // without a gap.
    let (fa, fb) = (a[1].fct_ns.unwrap(), b[1].fct_ns.unwrap());
    assert!(fa.abs_diff(fb) < 100_000, "{fa} vs {fb}");
}

#[test]
fn a_flow_may_wait_only_for_an_earlier_transfer() {
    let mut f = flow("x", 0, 2, "newreno", bulk(1));
    f.after_flow = Some(0);
    let cfg = pipe(100_000_000, 10 * MS, 100, vec![f], SEC);
    assert!(Simulation::new(&cfg).is_err());
}

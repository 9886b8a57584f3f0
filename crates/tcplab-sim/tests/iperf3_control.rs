//! iperf3's control exchange (`net::iperf3`) against arithmetic written here: on a lossless path
//! of round trip R, `time iperf3 -n` is 3 R of control exchange before the data connection's SYN
//! (handshake, cookie -> PARAM_EXCHANGE, parameters -> CREATE_STREAMS), 2 R from that SYN to the
//! first write (handshake, data cookie -> TEST_START/TEST_RUNNING), the time until the last byte
//! is in the send buffer, and 2 R after it (TEST_END -> EXCHANGE_RESULTS, results both ways ->
//! DISPLAY_RESULTS); a lost control SYN adds Linux's initial 1 s timeout.

mod common;
use common::*;
use tcplab_sim::config::{AppConfig, Connect, FlowConfig, Iperf3Config, SimConfig};
use tcplab_sim::sim::{FlowStats, Simulation};
use tcplab_sim::time::{Ns, MS, SEC};

const R: Ns = 40 * MS;
/// Serialisation and queueing on the 1 Gbit/s path: the control segments wait behind at most an
/// initial window of data (10 x 12 us) and cross 4 ports (a few us each).
const SLACK: Ns = MS / 2;

const SIZES: Iperf3Config = Iperf3Config {
    params_json_bytes: 144,
    client_results_json_bytes: 280,
    server_results_json_bytes: 270,
};

/// The textbook stack keeps a fixed send buffer (64 MB unless a test sets it); Linux's grows
/// with cwnd from two initial windows (`SndbufPolicy::Cwnds`).
fn transfer(stack: &str, bytes: u64, iperf3: bool) -> FlowConfig {
    let mut f = flow("f", 0, 2, "newreno", AppConfig::Bytes { bytes });
    f.stack = stack.into();
    f.connect = Connect::Handshake;
    f.iperf3 = iperf3.then_some(SIZES);
    f
}

fn path(f: FlowConfig) -> SimConfig {
    pipe(GBIT, R, 10_000, vec![f], 60 * SEC)
}

fn run_to_end(cfg: &SimConfig) -> (Simulation, FlowStats) {
    let mut sim = Simulation::new(cfg).expect("valid config");
    while sim.now < cfg.stop_ns && !sim.flows_done() {
        sim.run_until(sim.now + 100 * MS);
    }
    sim.check_invariants().expect("invariants hold");
    let st = sim.flow_stats().remove(0);
    (sim, st)
}

fn near(got: Ns, want: Ns, what: &str) {
    assert!(
        got.abs_diff(want) <= SLACK,
        "{what}: {got} ns, expected {want} ns within {SLACK}"
    );
}

#[test]
fn a_transfer_the_buffer_takes_at_once_costs_seven_round_trips() {
    // 65 KB into a 64 MB send buffer: TEST_END leaves with the first write.
    let (sim, st) = run_to_end(&path(transfer("rfc", 65 * 1024, true)));
    let c = sim.iperf3[0]
        .as_deref()
        .expect("the flow has a control exchange");
    near(c.data_syn_ns.unwrap(), 3 * R, "data connection's SYN");
    near(c.writing_ns.unwrap(), 5 * R, "first write (TEST_RUNNING)");
    near(c.test_end_ns.unwrap(), 5 * R, "TEST_END");
    near(st.iperf3_ns.unwrap(), 7 * R, "time iperf3 -n");
    near(st.connect_ns.unwrap(), R, "data connection's handshake");
}

#[test]
fn the_data_transfer_is_the_same_only_later() {
    // The data connection alone and inside iperf3: the same slow start from the first write, so
    // the same completion; its FCT (from its SYN) one R longer for the cookie and TEST_RUNNING.
    let (_, plain) = run_to_end(&path(transfer("linux", 1 << 20, false)));
    let (_, ctl) = run_to_end(&path(transfer("linux", 1 << 20, true)));
    near(
        ctl.completion_ns.unwrap(),
        plain.completion_ns.unwrap(),
        "completion from the first write",
    );
    near(ctl.fct_ns.unwrap(), plain.fct_ns.unwrap() + R, "data FCT");
    assert_eq!(ctl.bytes_delivered, plain.bytes_delivered);
    assert_eq!(ctl.retrans_segs, plain.retrans_segs);
}

#[test]
fn the_client_exits_two_round_trips_after_its_last_write_not_its_last_ack() {
    // 4 MB through a 256 KB send buffer: TEST_END leaves when the last byte is written, while
    // up to 256 KB are still unacknowledged; the client exits 2 R later, whatever the data does.
    let mut f = transfer("rfc", 4 << 20, true);
    f.sndbuf_bytes = 256 << 10;
    let (sim, st) = run_to_end(&path(f));
    let c = sim.iperf3[0].as_deref().unwrap();
    let (end, exit) = (c.test_end_ns.unwrap(), c.start_ns + st.iperf3_ns.unwrap());
    near(exit - end, 2 * R, "TEST_END to exit");
    let last_ack = c.data_syn_ns.unwrap() + st.fct_ns.unwrap();
    assert!(
        end < last_ack,
        "TEST_END {end} leaves before the last ACK {last_ack}"
    );
    assert!(
        end > c.writing_ns.unwrap() + 2 * R,
        "a 4 MB transfer takes rounds to write"
    );
}

#[test]
fn a_lost_control_syn_waits_for_linux_initial_timeout() {
    // The first packet to reach the bottleneck is the control connection's SYN.
    let mut cfg = path(transfer("rfc", 65 * 1024, true));
    cfg.links[1].ab.drop_arrivals = vec![1];
    let (sim, st) = run_to_end(&cfg);
    near(
        st.iperf3_ns.unwrap(),
        SEC + 7 * R,
        "time iperf3 -n after a lost SYN",
    );
    assert_eq!(sim.iperf3[0].as_deref().unwrap().retransmits, 1);
}

#[test]
fn iperf3_needs_a_byte_count_and_a_handshake() {
    let mut f = transfer("rfc", 1000, true);
    f.connect = Connect::Established;
    let e = Simulation::new(&path(f)).err().expect("refused");
    assert!(e.contains("connect = handshake"), "{e}");
    let mut f = transfer("rfc", 1000, true);
    f.app = bulk(1);
    assert!(Simulation::new(&path(f)).is_err());
}

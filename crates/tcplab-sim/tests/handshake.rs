//! Connection setup against arithmetic written here: a 65 KB transfer takes the handshake's
//! round trip plus its slow-start rounds (IW 3/10/20/40, each stack's delayed ACKs), a dropped SYN
//! is retransmitted on the stack's timer with the initial window its code sets, and options are
//! negotiated down to what both ends have.

mod common;
use common::*;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use tcplab_sim::config::{AppConfig, Connect, FlowConfig, FreeBsdKnobs, SimConfig};
use tcplab_sim::sim::{FlowStats, Simulation};
use tcplab_sim::time::{Ns, MS, SEC};

/// iperf3 `-n 65k`: 65 x 1024 bytes = 45 segments of 1448 and one of 1400.
const BYTES_65K: u64 = 65 * 1024;
const MSS: u64 = 1448;
/// Round trip of propagation; long against the 40 ms delayed-ACK timer so the two never coincide.
const RTT: Ns = 100 * MS;

fn hs_flow(stack: &str, cc: &str, iw: u32, bytes: u64) -> FlowConfig {
    let mut f = flow("f", 0, 2, cc, AppConfig::Bytes { bytes });
    f.stack = stack.into();
    f.iw_segments = iw;
    f.connect = Connect::Handshake;
    if stack == "freebsd" {
        // A fixed send buffer (net.inet.tcp.sendbuf_inc 0, sndbuf 64 MB): the transfer is limited
        // by slow start, not by send-buffer autosizing from the 32 KB sendspace.
        f.freebsd = Some(FreeBsdKnobs {
            sendbuf_inc_bytes: 0,
            ..freebsd_knobs()
        });
    }
    f
}

/// 10 Gbit/s links, so a 1500-byte packet takes 1.2 us per hop: 46 segments add < 0.2 ms.
fn path(f: FlowConfig) -> SimConfig {
    let mut cfg = pipe(10 * GBIT, RTT, 10_000, vec![f], 30 * SEC);
    cfg.record_sends = true;
    cfg
}

/// The independent calculation: ACK-clocked transfer of `bytes` over a path of round trip `RTT`
/// with no queueing, data starting when the SYN-ACK arrives (one RTT after the SYN). Receiver:
/// an ACK for every 2nd full segment, at once for a short one, else after the 40 ms delayed-ACK
/// timer (RFC 5681 §4.2; Linux TCP_DELACK_MIN, FreeBSD TCPTV_DELACK), and Linux's quickack mode
/// ACKing each of the first 16 segments (tcp_incr_quickack(), TCP_MAX_QUICKACKS). Sender: slow
/// start grows cwnd by the segments an ACK covers (Linux tcp_slow_start()) or by min(bytes, 2 MSS)
/// (RFC 3465 L = 2, FreeBSD abc_l_var 2). Nagle (iperf3 leaves TCP_NODELAY off): FreeBSD's
/// tcp_output() sends the final short segment alone only in a call that began with nothing
/// outstanding (`idle`), or as the tail of a TSO burst of full segments; Linux's
/// tcp_nagle_check() and the RFC stack send it at once as the application has written its last
/// byte. Returns the time of the last ACK from the first SYN.
fn model_fct(stack: &str, iw: u64, bytes: u64) -> Ns {
    Model::new(stack, iw, bytes).run()
}

/// State of the independent model (segments counted from 0).
struct Model {
    linux: bool,
    /// FreeBSD: a short segment waits until everything sent is acknowledged.
    nagle_idle: bool,
    n: u64,
    bytes: u64,
    cwnd: u64,
    una: u64,
    nxt: u64,
    quick: u64,
    rcv: u64,
    unacked: u64,
    timer: Option<Ns>,
    /// (time, order, what, value): 0 = segment `value` reaches the receiver, 1 = an ACK of
    /// `value` segments reaches the sender, 2 = the delayed-ACK timer.
    q: BinaryHeap<Reverse<(Ns, u64, u8, u64)>>,
    order: u64,
}

impl Model {
    fn new(stack: &str, iw: u64, bytes: u64) -> Self {
        let linux = stack == "linux";
        Model {
            linux,
            nagle_idle: stack == "freebsd",
            n: bytes.div_ceil(MSS),
            bytes,
            cwnd: iw * MSS,
            una: 0,
            nxt: 0,
            quick: if linux { 16 } else { 0 },
            rcv: 0,
            unacked: 0,
            timer: None,
            q: BinaryHeap::new(),
            order: 0,
        }
    }

    fn len(&self, i: u64) -> u64 {
        if i + 1 == self.n {
            self.bytes - (self.n - 1) * MSS
        } else {
            MSS
        }
    }

    fn push(&mut self, t: Ns, what: u8, v: u64) {
        self.order += 1;
        self.q.push(Reverse((t, self.order, what, v)));
    }

    /// Send what the window allows at `t`; each segment arrives half an RTT later.
    fn send(&mut self, t: Ns) {
        // tcp_output(): `idle = (tp->snd_max == tp->snd_una)` once, before its send loop; a
        // short tail rides in a TSO burst with full segments of the same call (len > t_maxseg,
        // and a fractional last segment is allowed when it empties the send buffer).
        let (idle, mut burst) = (self.nxt == self.una, false);
        while self.nxt < self.n && (self.nxt - self.una) * MSS + self.len(self.nxt) <= self.cwnd {
            if self.nagle_idle && self.len(self.nxt) < MSS && !idle && !burst {
                return;
            }
            burst = true;
            let i = self.nxt;
            self.push(t + RTT / 2, 0, i);
            self.nxt += 1;
        }
    }

    fn run(mut self) -> Ns {
        self.send(RTT);
        while let Some(Reverse((t, _, what, v))) = self.q.pop() {
            match what {
                0 => {
                    self.rcv = v + 1;
                    self.unacked += 1;
                    if self.quick > 0 || self.unacked >= 2 || self.len(v) < MSS {
                        self.quick = self.quick.saturating_sub(1);
                        (self.unacked, self.timer) = (0, None);
                        let rcv = self.rcv;
                        self.push(t + RTT / 2, 1, rcv);
                    } else if self.timer.is_none() {
                        self.timer = Some(t + 40 * MS);
                        self.push(t + 40 * MS, 2, 0);
                    }
                }
                2 => {
                    if self.timer == Some(t) && self.unacked > 0 {
                        (self.unacked, self.timer) = (0, None);
                        let rcv = self.rcv;
                        self.push(t + RTT / 2, 1, rcv);
                    }
                }
                _ if v > self.una => {
                    let acked_bytes: u64 = (self.una..v).map(|i| self.len(i)).sum();
                    let acked_segs = v - self.una;
                    self.una = v;
                    if self.una == self.n {
                        return t;
                    }
                    self.cwnd += if self.linux {
                        acked_segs * MSS
                    } else {
                        acked_bytes.min(2 * MSS)
                    };
                    self.send(t);
                }
                _ => {}
            }
        }
        unreachable!("the transfer completes")
    }
}

fn run_to_end(cfg: &SimConfig) -> Simulation {
    let mut sim = Simulation::new(cfg).expect("valid config");
    sim.run_until(cfg.stop_ns);
    sim.check_invariants().expect("invariants hold");
    sim
}

#[test]
fn a_65_kb_transfer_takes_the_handshake_rtt_plus_its_slow_start_rounds() {
    // The model's arithmetic for Linux (quickack, +1 segment per segment ACKed), data from 100 ms:
    // IW 3: rounds of 3, 6, 12, 24 -> 45 < 46 segments, a 5th round: 100 + 5 x 100 = 600 ms;
    // IW 10: 10, 20, 40 -> 3 rounds, 400 ms; IW 20: 20, 40 -> 2 rounds, 300 ms; IW 40: 40, 80 ->
    // 2 rounds, 300 ms. The RFC and FreeBSD receivers hold an odd segment 40 ms, which the model
    // follows event by event.
    let mut rows = Vec::new();
    for (stack, cc) in [
        ("linux", "reno"),
        ("rfc", "newreno"),
        ("freebsd", "newreno"),
    ] {
        for iw in [3u64, 10, 20, 40] {
            let sim = run_to_end(&path(hs_flow(stack, cc, iw as u32, BYTES_65K)));
            let st = &sim.flow_stats()[0];
            let fct = st.fct_ns.expect("transfer completes");
            let connect = assert_connects_at(st, 0, stack);
            let want = model_fct(stack, iw, BYTES_65K);
            rows.push(format!("{stack} IW{iw}: sim {fct} model {want}"));
            assert_eq!(
                st.completion_ns,
                Some(fct - connect),
                "{stack}: iperf3's clock starts at connect"
            );
            assert_eq!(st.syn_retrans, 0);
            // Serialization of at most 46 packets at 10 Gbit/s on two hops: under 0.5 ms.
            assert!(
                fct >= want && fct - want < MS / 2,
                "{}",
                rows.last().unwrap()
            );
        }
    }
    // Linux's rounds as the comment's arithmetic gives them.
    for (iw, ms) in [(3, 600), (10, 400), (20, 300), (40, 300)] {
        assert_eq!(model_fct("linux", iw, BYTES_65K) / MS, ms, "linux IW{iw}");
    }
    eprintln!("{}", rows.join("\n"));
}

/// The connection is up one handshake round trip (two 60-byte packets, under 0.1 ms of
/// serialisation) after the SYN that got through, sent at `last_syn_ns`; the connect time.
fn assert_connects_at(st: &FlowStats, last_syn_ns: Ns, label: &str) -> Ns {
    let connect = st.connect_ns.expect("connected");
    assert!(
        connect >= last_syn_ns + RTT && connect < last_syn_ns + RTT + MS / 10,
        "{label}: connect {connect}"
    );
    connect
}

/// Flow 0's first data burst after the handshake: segments handed to the NIC at the connect time.
fn first_flight_segments(sim: &Simulation, at: i64) -> i64 {
    sends(sim)
        .iter()
        .filter(|s| s.0 == at && s.3 == 0)
        .map(|s| (s.2 + MSS as i64 - 1) / MSS as i64)
        .sum()
}

/// (cwnd, ssthresh) in the Connected event's snapshot.
fn connected(sim: &Simulation) -> (i64, i64, i64) {
    let e = events(sim, 0, 8);
    assert_eq!(e.len(), 1, "one Connected event");
    e[0]
}

#[test]
fn a_dropped_syn_is_retransmitted_on_the_stack_timer_with_the_window_its_code_sets() {
    // Arrival 1 at the sender's access port is the SYN. Each stack retransmits it 1 s later
    // (Linux TCP_TIMEOUT_INIT, FreeBSD tcp_rexmit_initial, RFC 6298 §2.1); the SYN-ACK of the
    // retransmission arrives one RTT after it.
    for (stack, cc, want_cwnd_segs, want_ssthresh) in [
        // RFC 5681 §3.1: one segment.
        ("rfc", "newreno", 1, -1),
        // tcp_init_transfer(): one SYN retransmission is not `total_retrans > 1`: IW stays.
        ("linux", "reno", 10, -1),
        // tcp_timer_rexmt() sets snd_cwnd = 1, cc_newreno's CC_RTO sets it to mss and ssthresh
        // to 2 MSS (snd_wnd is 0 in SYN_SENT), so cc_conn_init() gives the full IW.
        ("freebsd", "newreno", 10, 2 * MSS as i64),
    ] {
        let mut cfg = path(hs_flow(stack, cc, 10, BYTES_65K));
        cfg.links[0].ab.drop_arrivals = vec![1];
        let sim = run_to_end(&cfg);
        let st = &sim.flow_stats()[0];
        assert_eq!(st.syn_retrans, 1, "{stack}");
        assert_connects_at(st, SEC, stack);
        let (t, cwnd, ssthresh) = connected(&sim);
        assert_eq!(cwnd, want_cwnd_segs * MSS as i64, "{stack} cwnd");
        assert_eq!(ssthresh, want_ssthresh, "{stack} ssthresh");
        assert_eq!(
            first_flight_segments(&sim, t),
            want_cwnd_segs,
            "{stack} first flight"
        );
        // The retransmitted SYN's timestamp echo gives the first RTT sample (FreeBSD counts it in
        // ticks plus one: tcp_xmit_timer(tp, TCP_TS_TO_TICKS(t) + 1), so 101 ms).
        assert!(
            st.min_rtt_ns >= RTT && st.min_rtt_ns <= RTT + MS + MS / 10,
            "{stack}: {}",
            st.min_rtt_ns
        );
    }
    // Linux: a second lost SYN makes total_retrans 2 and the window one segment; the third SYN
    // goes out 1 s after the second (tcp_syn_linear_timeouts 4 keeps the RTO at 1 s).
    let mut cfg = path(hs_flow("linux", "reno", 10, BYTES_65K));
    cfg.links[0].ab.drop_arrivals = vec![1, 2];
    let sim = run_to_end(&cfg);
    let st = &sim.flow_stats()[0];
    assert_eq!(st.syn_retrans, 2);
    assert_connects_at(st, 2 * SEC, "linux, two lost SYNs");
    assert_eq!(connected(&sim).1, MSS as i64);
    // FreeBSD's second SYN timeout waits 2 x 1 s + 200 ms slop: SYNs at 0, 1, 3.2 s.
    let mut cfg = path(hs_flow("freebsd", "newreno", 10, BYTES_65K));
    cfg.links[0].ab.drop_arrivals = vec![1, 2];
    let sim = run_to_end(&cfg);
    assert_connects_at(&sim.flow_stats()[0], 3200 * MS, "freebsd, two lost SYNs");
}

#[test]
fn a_dropped_syn_ack_is_recovered_by_the_retransmitted_syn() {
    // Arrival 1 at the receiver's access port (r -> rt, link 1 direction ba) is the SYN-ACK. The
    // sender's SYN timer fires at 1 s; its SYN reaches the receiver at 1.05 s, when the receiver's
    // own SYN-ACK timer (1 s after the SYN's arrival at 0.05 s) is also due: a SYN-ACK goes out
    // again either way, and the connection is up one RTT after the retransmitted SYN.
    for (stack, cc, want_cwnd_segs) in [
        ("linux", "reno", 10),
        ("freebsd", "newreno", 10),
        ("rfc", "newreno", 1),
    ] {
        let mut cfg = path(hs_flow(stack, cc, 10, BYTES_65K));
        cfg.links[1].ba.drop_arrivals = vec![1];
        let sim = run_to_end(&cfg);
        let st = &sim.flow_stats()[0];
        assert_eq!(st.syn_retrans, 1, "{stack}");
        assert_connects_at(st, SEC, stack);
        assert_eq!(connected(&sim).1, want_cwnd_segs * MSS as i64, "{stack}");
        assert!(st.fct_ns.is_some(), "{stack}: the transfer completes");
    }
}

#[test]
fn a_time_limited_flow_counts_its_time_from_the_connection_as_iperf3_does() {
    // Two lost SYNs (Linux: SYNs at 0, 1, 2 s) delay a 2 s flow's data to 2.1 s; it still sends
    // for 2 s, and its intervals (1 s grid from the start) end with the application at 4.1 s.
    let mut f = hs_flow("linux", "reno", 10, 0);
    f.app = bulk(2);
    let mut cfg = path(f);
    cfg.links[0].ab.drop_arrivals = vec![1, 2];
    let sim = run_to_end(&cfg);
    let connect = assert_connects_at(&sim.flow_stats()[0], 2 * SEC, "two lost SYNs");
    let iv = &sim.rec.intervals;
    let (t1, bytes) = (iv.column("t_end_ns").unwrap(), iv.column("bytes").unwrap());
    assert_eq!(*t1.last().unwrap() as u64, connect + 2 * SEC);
    assert_eq!(
        &t1[..4],
        &[SEC as i64, 2 * SEC as i64, 3 * SEC as i64, 4 * SEC as i64]
    );
    assert_eq!(bytes[0] + bytes[1], 0, "nothing before the connection");
    assert!(bytes[3] > 0);
}

#[test]
fn without_timestamps_a_retransmitted_syn_gives_no_rtt_sample_and_linux_waits_3_s() {
    let mut f = hs_flow("linux", "reno", 10, BYTES_65K);
    f.timestamps = false;
    f.mss = 1460;
    let mut cfg = path(f);
    cfg.links[0].ab.drop_arrivals = vec![1];
    let mut sim = Simulation::new(&cfg).unwrap();
    // Just after the SYN-ACK: Karn's rule leaves no sample; tcp_init_metrics() sets the RTO to
    // TCP_TIMEOUT_FALLBACK.
    sim.run_until(SEC + RTT + MS / 10);
    assert_eq!(sim.senders[0].rtt.samples, 0);
    assert_eq!(sim.senders[0].rtt.rto_ns, 3 * SEC);
}

#[test]
fn options_are_negotiated_down_to_what_both_ends_have() {
    // The sender offers SACK, timestamps, window scaling and ECN; the receiver has SACK,
    // timestamps and ECN off: none of them is used, and the MSS takes the 12 bytes back.
    let mut f = hs_flow("linux", "reno", 10, 4 << 20);
    f.ecn = true;
    f.peer.sack = false;
    f.peer.timestamps = false;
    f.peer.ecn = false;
    let mut cfg = path(f.clone());
    cfg.record_acks = true;
    let sim = run_to_end(&cfg);
    let st = &sim.flow_stats()[0];
    assert_eq!(st.options, (false, false, true));
    assert_eq!(st.mss_bytes, 1460);
    assert!(st.ecn.is_none(), "ECN needs both ends");
    // Full-sized segments carry 1460 bytes in 1500-byte packets.
    assert!(sends(&sim).iter().any(|s| s.2 == 1460));
    // Everything on at both ends: all used, ECN too (RFC 3168 §6.1.1: SYN ECE+CWR, SYN-ACK ECE).
    let mut g = f.clone();
    g.peer = Default::default();
    let sim = run_to_end(&path(g));
    let st = &sim.flow_stats()[0];
    assert_eq!((st.options, st.mss_bytes), ((true, true, true), 1448));
    assert!(st.ecn.is_some());
    // The receiver without window scaling: its window never exceeds 65535 bytes.
    let mut h = f.clone();
    h.peer = Default::default();
    h.peer.window_scaling = false;
    let mut cfg = path(h);
    cfg.record_acks = true;
    let sim = run_to_end(&cfg);
    assert_eq!(sim.flow_stats()[0].options.2, false);
    let rwnd = sim.rec.acks.column("rwnd_bytes").unwrap();
    assert!(
        !rwnd.is_empty() && rwnd.iter().all(|&w| w <= 65_535),
        "max {:?}",
        rwnd.iter().max()
    );
}

#[test]
fn handshake_runs_are_deterministic_and_established_runs_send_no_syn() {
    let cfg = path(hs_flow("freebsd", "cubic", 10, 1 << 20));
    let (a, b) = (run_to_end(&cfg), run_to_end(&cfg));
    assert_eq!(a.rec.sends.column("t_ns"), b.rec.sends.column("t_ns"));
    assert_eq!(a.flow_stats()[0].fct_ns, b.flow_stats()[0].fct_ns);
    let mut f = hs_flow("freebsd", "cubic", 10, 1 << 20);
    f.connect = Connect::Established;
    let sim = run_to_end(&path(f));
    let st = &sim.flow_stats()[0];
    assert_eq!((st.connect_ns, st.fct_ns), (None, st.completion_ns));
    assert!(events(&sim, 0, 8).is_empty());
}

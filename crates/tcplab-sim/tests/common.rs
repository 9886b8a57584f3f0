//! Shared builders for the simulator's behaviour tests: small topologies as `SimConfig`s.
#![allow(dead_code, missing_docs, unreachable_pub)]

use tcplab_sim::config::FreeBsdVersion;
use tcplab_sim::config::*;
use tcplab_sim::sim::Simulation;
use tcplab_sim::time::{Ns, MS, SEC};

pub const GBIT: u64 = 1_000_000_000;
pub const MBIT: u64 = 1_000_000;

pub fn dir(rate_bps: u64, delay_ns: Ns, buffer_packets: Option<u64>) -> DirConfig {
    DirConfig {
        rate_bps,
        delay_ns,
        buffer_packets,
        buffer_bytes: None,
        loss: 0.0,
        jitter_ns: 0,
        drop_arrivals: vec![],
        aqm: None,
        held_limit_packets: None,
        impair: None,
    }
}

pub fn node(name: &str, kind: NodeKind) -> NodeConfig {
    NodeConfig {
        name: name.into(),
        kind,
        shared_buffer_bytes: None,
        buffer_policy: BufferPolicy::Complete,
        pause: None,
    }
}

pub fn flow(name: &str, src: u32, dst: u32, cc: &str, app: AppConfig) -> FlowConfig {
    FlowConfig {
        name: name.into(),
        src,
        dst,
        start_ns: 0,
        stack: "rfc".into(),
        cc: cc.into(),
        mss: 1448,
        timestamps: true,
        sack: true,
        iw_segments: 10,
        sndbuf_bytes: 64 << 20,
        rcvbuf_bytes: 64 << 20,
        rcv_scaling_ratio: 256,
        rx_nic: RxNicConfig::default(),
        tso_max_bytes: None,
        tso_max_segcount: None,
        tso_max_segsize: None,
        sender_lro: false,
        receiver_os: None,
        write_bytes: 1 << 20,
        app,
        after_flow: None,
        prr: None,
        sndbuf_initial_bytes: None,
        freebsd: None,
        ecn: false,
        ect1: false,
        window_scaling: true,
        peer: PeerOptions::default(),
        connect: Connect::Established,
        syn_retries: None,
        syn_linear_timeouts: None,
        iperf3: None,
        path: None,
    }
}

/// s (0) --access 10 Gbit/s, 10 us-- rt (1) --bottleneck rate, rtt/2 - 20 us, buffer-- r (2).
/// The access link is fast so that only the bottleneck queues.
pub fn pipe(
    rate_bps: u64,
    rtt_ns: Ns,
    buffer_packets: u64,
    flows: Vec<FlowConfig>,
    stop_ns: Ns,
) -> SimConfig {
    let access = 10 * MS / 1000; // 10 us each way
    let one_way = rtt_ns / 2 - access;
    SimConfig {
        seed: 1,
        stop_ns,
        sample_interval_ns: 0,
        interval_ns: SEC,
        record_sends: false,
        record_acks: false,
        measure_cpu: false,
        nodes: vec![
            node("s", NodeKind::Host),
            node("rt", NodeKind::Router),
            node("r", NodeKind::Host),
        ],
        links: vec![
            LinkConfig {
                a: 0,
                b: 1,
                ab: dir(10 * GBIT, access, None),
                ba: dir(10 * GBIT, access, None),
            },
            LinkConfig {
                a: 1,
                b: 2,
                ab: dir(rate_bps, one_way, Some(buffer_packets)),
                ba: dir(rate_bps, one_way, Some(buffer_packets)),
            },
        ],
        flows,
        udp: vec![],
        probes: vec![],
        monitor: vec![PortRef {
            link: 1,
            dir: "ab".into(),
        }],
    }
}

pub fn bulk(secs: u64) -> AppConfig {
    AppConfig::Time {
        duration_ns: secs * SEC,
    }
}

/// Run to the stop time, draining nothing (tests read the tables afterwards).
pub fn run(cfg: &SimConfig) -> Simulation {
    let mut sim = Simulation::new(cfg).expect("valid config");
    sim.run_until(cfg.stop_ns);
    sim.check_invariants().expect("invariants hold");
    sim
}

/// Events of one kind for a flow: (t_ns, cwnd, ssthresh).
pub fn events(sim: &Simulation, flow: i64, code: i64) -> Vec<(i64, i64, i64)> {
    let e = &sim.rec.events;
    let (t, f, k, c, s) = (
        e.column("t_ns").unwrap(),
        e.column("flow").unwrap(),
        e.column("event").unwrap(),
        e.column("cwnd_bytes").unwrap(),
        e.column("ssthresh_bytes").unwrap(),
    );
    (0..t.len())
        .filter(|&i| f[i] == flow && k[i] == code)
        .map(|i| (t[i], c[i], s[i]))
        .collect()
}

/// Flow samples for one flow: (t_ns, cwnd_bytes, state).
pub fn samples(sim: &Simulation, flow: i64) -> Vec<(i64, i64, i64)> {
    let r = &sim.rec.flows;
    let (t, f, c, st) = (
        r.column("t_ns").unwrap(),
        r.column("flow").unwrap(),
        r.column("cwnd_bytes").unwrap(),
        r.column("state").unwrap(),
    );
    (0..t.len())
        .filter(|&i| f[i] == flow)
        .map(|i| (t[i], c[i], st[i]))
        .collect()
}

/// cwnd in flow 0's last sample before `t`.
pub fn cwnd_before(sim: &Simulation, t: i64) -> i64 {
    samples(sim, 0)
        .iter()
        .rev()
        .find(|s| s.0 < t)
        .expect("a sample before the loss")
        .1
}

/// cwnd of flow 0 in the first sample at or after `t` (state changes are sampled at once).
pub fn cwnd_after(sim: &Simulation, t: i64) -> i64 {
    samples(sim, 0)
        .iter()
        .find(|s| s.0 >= t)
        .expect("a sample after the event")
        .1
}

/// Sends of flow 0 (the record needs `record_sends`): (t_ns, seq, bytes, retx, state).
pub fn sends(sim: &Simulation) -> Vec<(i64, i64, i64, i64, i64)> {
    let t = &sim.rec.sends;
    let col = |n| t.column(n).unwrap();
    let (tt, seq, b, r, st) = (
        col("t_ns"),
        col("seq"),
        col("bytes"),
        col("retx"),
        col("state"),
    );
    (0..t.len())
        .map(|i| (tt[i], seq[i], b[i], r[i], st[i]))
        .collect()
}

/// FreeBSD cc.c newreno_cc_cong_signal(CC_NDUPACK) with a 1448-byte maxseg:
/// max(cwnd * 50 / (100 * mss), 2) * mss.
pub fn freebsd_newreno_ssthresh(cwnd: i64) -> i64 {
    const MSS: i64 = 1448;
    (cwnd * 50 / (100 * MSS)).max(2) * MSS
}

/// Dumbbell: senders 0..n, receivers n..2n, rt1 = 2n, rt2 = 2n + 1; access links at the
/// bottleneck's rate with `jitter_ns` of host timing noise on the hosts' side.
pub fn dumbbell(
    n: u32,
    rate_bps: u64,
    rtt_ns: Ns,
    buffer_packets: u64,
    jitter_ns: Ns,
    flows: Vec<FlowConfig>,
    stop_ns: Ns,
) -> SimConfig {
    let access = 50 * MS / 1000;
    let (rt1, rt2) = (2 * n, 2 * n + 1);
    let mut nodes: Vec<NodeConfig> = (0..n)
        .map(|i| node(&format!("s{i}"), NodeKind::Host))
        .collect();
    nodes.extend((0..n).map(|i| node(&format!("r{i}"), NodeKind::Host)));
    nodes.push(node("rt1", NodeKind::Router));
    nodes.push(node("rt2", NodeKind::Router));
    let host = DirConfig {
        jitter_ns,
        ..dir(rate_bps, access, None)
    };
    let router = dir(rate_bps, access, Some(buffer_packets));
    let mut links = vec![LinkConfig {
        a: rt1,
        b: rt2,
        ab: dir(rate_bps, rtt_ns / 2 - 2 * access, Some(buffer_packets)),
        ba: dir(rate_bps, rtt_ns / 2 - 2 * access, Some(buffer_packets)),
    }];
    for i in 0..n {
        links.push(LinkConfig {
            a: i,
            b: rt1,
            ab: host.clone(),
            ba: router.clone(),
        });
        links.push(LinkConfig {
            a: rt2,
            b: n + i,
            ab: router.clone(),
            ba: host.clone(),
        });
    }
    SimConfig {
        seed: 1,
        stop_ns,
        sample_interval_ns: 10 * MS,
        interval_ns: SEC,
        record_sends: false,
        record_acks: false,
        measure_cpu: false,
        nodes,
        links,
        flows,
        udp: vec![],
        probes: vec![],
        monitor: vec![PortRef {
            link: 0,
            dir: "ab".into(),
        }],
    }
}

/// FreeBSD default-stack knobs the tests start from: the 2023 tree with D43470, PRR and TSO on,
/// sack.tso off, sendbuf_inc 8 KB (the shipped sysctls); a test changes fields with `..`.
pub fn freebsd_knobs() -> FreeBsdKnobs {
    FreeBsdKnobs {
        d43470: true,
        do_prr: true,
        sack_tso: false,
        tso: true,
        sendbuf_inc_bytes: 8192,
        version: FreeBsdVersion::V2023,
        sack_lrd: None,
        rack_rto_cwnd: None,
    }
}

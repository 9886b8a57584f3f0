//! Building a simulation from its resolved config: the network (ports, shared-buffer pools),
//! the flows' endpoints (each with its stack resolved once, see [`crate::stack::resolve`]), the
//! UDP sources, the latency probes, iperf3's control exchanges, the monitored ports and the first
//! events; every check of the config happens here.

use crate::cc;
use crate::config::{AppConfig, BufferPolicy, Connect, FlowConfig, NodeKind, SimConfig};
use crate::net::iperf3::Iperf3Control;
use crate::net::pause::{PartnerFifo, Pause};
use crate::net::pool::Pool;
use crate::net::port::Port;
use crate::net::probe::ProbeSource;
use crate::net::topology::{link_ports, Routes};
use crate::net::udp::UdpSource;
use crate::rng::Rng;
use crate::sim::engine::{Action, EventQueue};
use crate::stack;
use crate::tcp::receiver::TcpReceiver;
use crate::tcp::sender::TcpSender;

use super::ExternalCc;

/// An error unless node `i` exists.
fn check_node(cfg: &SimConfig, i: u32, what: &str) -> Result<(), String> {
    let n = cfg.nodes.len();
    if (i as usize) < n {
        Ok(())
    } else {
        Err(format!(
            "{what} refers to node {i}, but there are {n} nodes"
        ))
    }
}

/// The links' ports and the switches' shared-buffer pools.
pub(super) fn network(cfg: &SimConfig) -> Result<(Vec<Port>, Vec<Pool>), String> {
    let n = cfg.nodes.len();
    let kinds: Vec<NodeKind> = cfg.nodes.iter().map(|n| n.kind).collect();
    let mut pools = Vec::new();
    let mut pool_of = vec![None; n];
    for (i, node) in cfg.nodes.iter().enumerate() {
        if let (NodeKind::Switch, Some(b)) = (node.kind, node.shared_buffer_bytes) {
            pool_of[i] = Some(pools.len() as u32);
            pools.push(Pool {
                limit_bytes: b,
                used_bytes: 0,
                ports: Vec::new(),
                policy: node.buffer_policy,
            });
        }
    }
    let rng = Rng::new(cfg.seed);
    let mut ports = Vec::new();
    for (i, l) in cfg.links.iter().enumerate() {
        check_node(cfg, l.a, "a link")?;
        check_node(cfg, l.b, "a link")?;
        for d in [&l.ab, &l.ba] {
            if d.rate_bps == 0 {
                return Err(format!("link {i} has a zero rate"));
            }
            if !(0.0..=1.0).contains(&d.loss) {
                return Err(format!("link {i} has loss {} outside [0, 1]", d.loss));
            }
        }
        let pair = link_ports(l, &kinds, &pool_of, &rng, i as u32)?;
        if pair.iter().any(|p| p.has_aqm() && p.is_impaired()) {
            return Err(format!(
                "link {i}: impairments (netem, a schedule, a trace) with a queue discipline are not supported"
            ));
        }
        if pair.iter().any(|p| p.has_aqm() && p.pool().is_some()) {
            return Err(format!(
                "link {i}: a queue discipline on a port of a shared-buffer switch is not supported"
            ));
        }
        ports.extend(pair);
    }
    for (i, p) in ports.iter().enumerate() {
        if let Some(pl) = p.pool() {
            pools[pl as usize].ports.push(i as u32);
        }
    }
    for node in &cfg.nodes {
        match node.buffer_policy {
            BufferPolicy::Dynamic { alpha } if !(alpha > 0.0 && alpha.is_finite()) => {
                return Err(format!(
                    "switch {}: alpha {alpha} must be positive",
                    node.name
                ));
            }
            BufferPolicy::Static { ports: 0 } => {
                return Err(format!(
                    "switch {}: a static partition needs ports >= 1",
                    node.name
                ));
            }
            _ => {}
        }
    }
    Ok((ports, pools))
}

/// 802.3x flow control (None when no switch has it): the thresholds of the switch each port
/// feeds, and a queue that a PAUSE can stop at each port that feeds one.
pub(super) fn flow_control(
    cfg: &SimConfig,
    ports: &mut [Port],
) -> Result<Option<Box<Pause>>, String> {
    if cfg.nodes.iter().all(|n| n.pause.is_none()) {
        return Ok(None);
    }
    for n in cfg.nodes.iter() {
        let Some(c) = n.pause else { continue };
        if n.kind != NodeKind::Switch || n.shared_buffer_bytes.is_none() {
            return Err(format!(
                "node {}: flow control (PAUSE) needs a switch with a shared buffer",
                n.name
            ));
        }
        if c.xoff_bytes == 0 || c.xon_bytes >= c.xoff_bytes {
            return Err(format!(
                "switch {}: PAUSE needs 0 <= xon < xoff (got xoff {} B, xon {} B)",
                n.name, c.xoff_bytes, c.xon_bytes
            ));
        }
    }
    let mut feeds = Vec::with_capacity(ports.len());
    for (i, port) in ports.iter_mut().enumerate() {
        let node = &cfg.nodes[port.to as usize];
        let Some(c) = node.pause else {
            feeds.push(None);
            continue;
        };
        let from = &cfg.nodes[port.from as usize].name;
        if port.pool().is_some() || port.has_aqm() || port.is_impaired() {
            return Err(format!(
                "switch {}: its link partner {from} (link {}) is itself a shared-buffer switch, \
                 or has a queue discipline or impairments towards it; PAUSE to such a partner \
                 is not modelled",
                node.name,
                i / 2
            ));
        }
        let l = &cfg.links[i / 2];
        let d = if i % 2 == 0 { &l.ab } else { &l.ba };
        port.set_aqm(Box::new(PartnerFifo::new(
            d.buffer_packets.unwrap_or(u64::MAX),
            d.buffer_bytes.unwrap_or(u64::MAX),
        )));
        feeds.push(Some(c));
    }
    Ok(Some(Box::new(Pause::new(feeds))))
}

/// The flows' senders and receivers.
pub(super) fn flows(
    cfg: &SimConfig,
    routes: &mut Routes,
    ports: &[Port],
    external: &mut ExternalCc<'_>,
    measure_cpu: bool,
) -> Result<(Vec<TcpSender>, Vec<TcpReceiver>), String> {
    let rng = Rng::new(cfg.seed);
    let mut senders = Vec::new();
    let mut receivers = Vec::new();
    let mut profiles = stack::Shared::default();
    for (i, f) in cfg.flows.iter().enumerate() {
        check_node(cfg, f.src, "a flow")?;
        check_node(cfg, f.dst, "a flow")?;
        if !routes.connects(f.src, f.dst, ports) || !routes.connects(f.dst, f.src, ports) {
            return Err(format!("flow {} has no path between its hosts", f.name));
        }
        let profile = stack::resolve(f).ok_or_else(|| {
            format!(
                "flow {}: unknown stack {:?} (known: {})",
                f.name,
                f.stack,
                stack::PROFILES.join(", ")
            )
        })?;
        let algo = match external(i, &f.cc) {
            Some(m) => Ok(cc::external(m)),
            None => cc::build(&f.cc, profile.cc_family).ok_or(()),
        }
        .map_err(|()| {
            format!(
                "flow {}: unknown cc {:?} (known: {})",
                f.name,
                f.cc,
                cc::ALGORITHMS.join(", ")
            )
        })?;
        check_flow_knobs(f)?;
        check_iperf3(f)?;
        // The receiving host's own delayed-ACK rules when its OS is given, else the sender's.
        let rx_profile = match f.receiver_os.as_deref() {
            None => profile.clone(),
            Some(os @ ("linux" | "freebsd")) => stack::profile(os).expect("a known profile"),
            Some(other) => {
                return Err(format!(
                    "flow {}: receiver os {other:?} is not linux or freebsd",
                    f.name
                ))
            }
        };
        let mut receiver = TcpReceiver::new(i as u32, f, &rx_profile);
        let algo = if measure_cpu { cc::marked(algo) } else { algo };
        let mut sender = TcpSender::new(i as u32, f, profiles.intern(profile), algo);
        if let Some(path) = &f.path {
            // Data along the path, ACKs back along it (symmetric, as the spec's routes are).
            let own = |nodes: &[u32], routes: &mut Routes| {
                routes
                    .add_path(nodes, ports)
                    .map_err(|e| format!("flow {}: path: {e}", f.name))
            };
            if path.first() != Some(&f.src) || path.last() != Some(&f.dst) {
                return Err(format!(
                    "flow {}: path must run from its src to its dst",
                    f.name
                ));
            }
            sender.route_via(own(path, routes)?);
            let back: Vec<u32> = path.iter().rev().copied().collect();
            receiver.route_via(own(&back, routes)?);
        }
        receivers.push(receiver);
        // Streams 1 << 40 + flow: apart from the links' (their index) and fixed per flow.
        sender.v.random = rng.fork((1 << 40) + i as u64).next_u64();
        sender.record_sends = cfg.record_sends;
        if f.iperf3.is_some() {
            sender.hold_app(); // it writes from TEST_RUNNING on (net::iperf3)
        }
        senders.push(sender);
    }
    Ok((senders, receivers))
}

/// Each flow's dependents (`after_flow`): empty when no flow waits for another. A flow waits
/// for an earlier fixed-size transfer only, so the waits end.
pub(super) fn dependents(cfg: &SimConfig) -> Result<Vec<Vec<u32>>, String> {
    if cfg.flows.iter().all(|f| f.after_flow.is_none()) {
        return Ok(Vec::new());
    }
    let mut out = vec![Vec::new(); cfg.flows.len()];
    for (i, f) in cfg.flows.iter().enumerate() {
        if let Some(a) = f.after_flow {
            let first = cfg.flows.get(a as usize).filter(|_| (a as usize) < i);
            if !matches!(first.map(|t| &t.app), Some(AppConfig::Bytes { .. })) {
                return Err(format!(
                    "flow {}: after_flow {a} is not an earlier fixed-size transfer",
                    f.name
                ));
            }
            out[a as usize].push(i as u32);
        }
    }
    Ok(out)
}

/// A flow's sizes and its FreeBSD version knobs are consistent.
fn check_flow_knobs(f: &FlowConfig) -> Result<(), String> {
    if f.mss == 0 || f.iw_segments == 0 || f.sndbuf_bytes == 0 || f.rcv_space_bytes() < f.mss as u64
    {
        return Err(format!(
            "flow {}: mss, iw, sndbuf must be positive and the receive window (rcvbuf x {}/256) at least one mss",
            f.name, f.rcv_scaling_ratio
        ));
    }
    if let Some(k) = &f.freebsd {
        if f.stack == "freebsd-rack" && !stack::RACK_VERSIONS.contains(&k.version) {
            return Err(format!(
                "flow {}: freebsd-rack version {} is not one of {:?}",
                f.name,
                k.version.name(),
                stack::RACK_VERSIONS.map(|v| v.name())
            ));
        }
        if f.stack == "freebsd" && k.version.includes_d43470() && !k.d43470 {
            return Err(format!(
                "flow {}: freebsd version 15.0-2025 includes review D43470; d43470 = false \
                 applies to versions 2023 and 15.0-2024-10 only",
                f.name
            ));
        }
    }
    Ok(())
}

/// iperf3's control exchange per flow, or nothing when no flow has one.
pub(super) fn iperf3_controls(cfg: &SimConfig) -> Vec<Option<Box<Iperf3Control>>> {
    if cfg.flows.iter().all(|f| f.iperf3.is_none()) {
        return Vec::new();
    }
    cfg.flows
        .iter()
        .map(|f| {
            f.iperf3
                .map(|c| Box::new(Iperf3Control::new(c, f.start_ns)))
        })
        .collect()
}

/// A flow with iperf3's control exchange transfers a byte count (`-n`) over a connection with
/// a handshake, started by its client (not by another flow's arrival).
fn check_iperf3(f: &FlowConfig) -> Result<(), String> {
    if f.iperf3.is_some()
        && (!matches!(f.app, AppConfig::Bytes { .. })
            || f.connect != Connect::Handshake
            || f.after_flow.is_some())
    {
        return Err(format!(
            "flow {}: iperf3's control exchange needs a byte count (bytes), connect = handshake \
             and no after_flow",
            f.name
        ));
    }
    Ok(())
}

/// The UDP sources.
pub(super) fn udp_sources(cfg: &SimConfig) -> Result<Vec<UdpSource>, String> {
    let mut udp = Vec::new();
    for u in &cfg.udp {
        check_node(cfg, u.src, "a UDP source")?;
        check_node(cfg, u.dst, "a UDP source")?;
        if u.rate_bps == 0 || u.size_bytes == 0 {
            return Err(format!(
                "UDP source {} needs a positive rate and size",
                u.name
            ));
        }
        udp.push(UdpSource::new(u.clone()));
    }
    Ok(udp)
}

/// The latency probes.
pub(super) fn probes(cfg: &SimConfig) -> Result<Vec<ProbeSource>, String> {
    let mut out = Vec::new();
    for p in &cfg.probes {
        check_node(cfg, p.src, "a probe")?;
        check_node(cfg, p.dst, "a probe")?;
        if p.interval_ns == 0 || p.size_bytes == 0 || p.src == p.dst {
            return Err(format!(
                "probe {} needs a positive interval and size and two different nodes",
                p.name
            ));
        }
        out.push(ProbeSource::new(p.clone()));
    }
    Ok(out)
}

/// The ports whose queues are recorded, as port indices (2 x link + direction).
pub(super) fn monitored_ports(cfg: &SimConfig) -> Result<Vec<u32>, String> {
    let mut monitor = Vec::new();
    for m in &cfg.monitor {
        let dir = match m.dir.as_str() {
            "ab" => 0,
            "ba" => 1,
            other => return Err(format!("monitor direction {other:?} is not ab or ba")),
        };
        if m.link as usize >= cfg.links.len() {
            return Err(format!(
                "monitor refers to link {}, but there are {}",
                m.link,
                cfg.links.len()
            ));
        }
        monitor.push(2 * m.link + dir);
    }
    Ok(monitor)
}

/// The events a run begins with: flow and UDP starts, the first sample and interval.
pub(super) fn first_events(
    cfg: &SimConfig,
    udp: &[UdpSource],
    probes: &[ProbeSource],
    ports: &[Port],
) -> EventQueue {
    let mut q = EventQueue::default();
    for (i, f) in cfg.flows.iter().enumerate() {
        // A response starts when its request has arrived (`after_flow`, sim/deliver.rs); with
        // iperf3's control exchange the client starts then, its data connection later.
        if f.after_flow.is_none() {
            let a = if f.iperf3.is_some() {
                Action::Iperf3(i as u32)
            } else {
                Action::FlowStart(i as u32)
            };
            q.push(f.start_ns, a);
        }
    }
    for (i, u) in udp.iter().enumerate() {
        if u.cfg.start_ns < u.cfg.stop_ns {
            q.push(u.cfg.start_ns, Action::UdpSend(i as u32));
        }
    }
    for (i, p) in probes.iter().enumerate() {
        if p.cfg.start_ns < p.cfg.stop_ns {
            q.push(p.cfg.start_ns, Action::ProbeSend(i as u32));
        }
    }
    if cfg.sample_interval_ns > 0 {
        q.push(0, Action::Sample);
    }
    if cfg.interval_ns > 0 {
        q.push(cfg.interval_ns, Action::PortInterval);
    }
    for (i, p) in ports.iter().enumerate() {
        if let Some(t) = p.impaired().and_then(|m| m.schedule.next_ns()) {
            q.push(t, Action::LinkChange(i as u32));
        }
    }
    q
}

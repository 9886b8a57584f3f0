//! The simulation: owns the event queue, the network and the endpoints, and moves packets
//! between them. Every event is handled here; components never schedule directly.

use crate::cc;

mod aqm_port;
mod build;
mod deliver;
pub mod engine;
mod forward;
mod impair_port;
mod intervals;
mod iperf3;
mod pause_port;
mod sampler;
mod stats;

/// Supplies a flow's algorithm from outside the registry (a user-written one), by flow index and
/// cc name, or None for the registry's.
pub type ExternalCc<'a> = dyn FnMut(usize, &str) -> Option<Box<dyn cc::CongestionControl>> + 'a;
use crate::config::{AppConfig, FlowConfig, SimConfig};
use crate::cpu::{in_tcp, CpuMeter};
use crate::net::packet::{Kind, Packet, Slab};
use crate::net::pause::Pause;
use crate::net::pool::Pool;
use crate::net::port::Port;
use crate::net::probe::ProbeSource;
use crate::net::topology::{key_node, routes, Routes, NODE_MASK};
use crate::net::udp::UdpSource;
use crate::sim::engine::{Action, EventQueue};
use crate::tcp::receiver::TcpReceiver;
use crate::tcp::sender::{SenderEvent, TcpSender};
use crate::time::Ns;
use crate::trace::Recorder;
use std::collections::HashSet;

/// Networks with more ports than this prefetch at arrivals (`pipe_arrive`): with fewer, what
/// the next packet needs is in cache anyway and the prefetch is pure overhead.
const PREFETCH_MIN_PORTS: usize = 256;

/// Per-packet bookkeeping for invariant checks (off by default: it costs a hash insert per
/// packet).
#[derive(Default)]
pub struct Audit {
    dropped: HashSet<u64>,
    delivered: HashSet<u64>,
}

/// Totals for one flow at the end of (or during) a run.
#[derive(Clone, Debug)]
pub struct FlowStats {
    /// Flow name.
    pub name: String,
    /// CC module.
    pub cc: String,
    /// Stack profile.
    pub stack: String,
    /// Start time.
    pub start_ns: Ns,
    /// Bytes the application wrote.
    pub bytes_written: u64,
    /// Bytes delivered in order to the receiving application.
    pub bytes_delivered: u64,
    /// Payload bytes sent including retransmissions.
    pub bytes_sent: u64,
    /// Segments retransmitted.
    pub retrans_segs: u64,
    /// Fast recoveries.
    pub recoveries: u64,
    /// Retransmission timeouts.
    pub rtos: u64,
    /// Segments the receiver already had (spurious retransmissions).
    pub dup_segs_received: u64,
    /// Completion time of a fixed-size transfer: from the connection being established (when
    /// iperf3 starts its clock, after connecting its data socket; with iperf3's control exchange,
    /// TEST_RUNNING's arrival) to the last byte acknowledged.
    pub completion_ns: Option<Ns>,
    /// Flow completion time: from the first SYN (the flow's start; with iperf3's control
    /// exchange, the data connection's SYN) to the last byte acknowledged; equal to
    /// `completion_ns` on a connection established without a handshake.
    pub fct_ns: Option<Ns>,
    /// From the first SYN to the SYN-ACK's arrival (connect() returning); None without a
    /// handshake or when it failed.
    pub connect_ns: Option<Ns>,
    /// With iperf3's control exchange (`net::iperf3`): from the client's start to its exit, as
    /// `time iperf3 -n` measures it; None without one or before the client exits.
    pub iperf3_ns: Option<Ns>,
    /// With iperf3's control exchange: when the data connection's SYN left, from the client's
    /// start (the origin of `fct_ns` and `connect_ns` then).
    pub data_syn_ns: Option<Ns>,
    /// SYNs retransmitted.
    pub syn_retrans: u64,
    /// SYN-ACKs the receiver retransmitted on its timer.
    pub synack_retrans: u64,
    /// The connection attempt was given up.
    pub connect_failed: bool,
    /// The sender's MSS as negotiated, payload bytes.
    pub mss_bytes: u64,
    /// Options in use: (SACK, timestamps, window scaling).
    pub options: (bool, bool, bool),
    /// Final cwnd.
    pub cwnd_bytes: u64,
    /// Final smoothed RTT.
    pub srtt_ns: Ns,
    /// Smallest RTT sample.
    pub min_rtt_ns: Ns,
    /// ECN, when the connection negotiated it: (segments that arrived CE, ACKs with ECE,
    /// window reductions for ECE).
    pub ecn: Option<(u64, u64, u64)>,
    /// The RTT samples the sender's estimator took.
    pub rtt_hist: crate::net::hist::DelayHistogram,
}

/// Run `$call` (a call into a TCP endpoint), marked as the TCP path when the run measures CPU.
macro_rules! timed {
    ($self:ident, $call:expr) => {{
        if $self.cpu.is_some() {
            in_tcp(|| $call);
        } else {
            $call;
        }
    }};
}
// By path too, for the event handlers in the files beside this one (`deliver.rs`).
use timed;

/// A running simulation.
pub struct Simulation {
    /// Current simulated time.
    pub now: Ns,
    /// When the run stops.
    pub stop_ns: Ns,
    q: EventQueue,
    /// Node names.
    pub node_names: Vec<String>,
    /// All egress ports: link i has ports 2i (a -> b) and 2i + 1 (b -> a).
    pub ports: Vec<Port>,
    pools: Vec<Pool>,
    /// The packets in the network; ports' pipes hold their handles.
    slab: Slab,
    routes: Routes,
    flow_cfg: Vec<FlowConfig>,
    /// The flows that start once each flow's data is in (`FlowConfig::after_flow`); empty when
    /// none waits. A started flow's `flow_cfg` start is when it started.
    dependents: Vec<Vec<u32>>,
    /// TCP senders, one per flow.
    pub senders: Vec<TcpSender>,
    /// TCP receivers, one per flow.
    pub receivers: Vec<TcpReceiver>,
    sender_timer_at: Vec<Option<Ns>>,
    receiver_timer_at: Vec<Option<Ns>>,
    /// What the 1 ms sampler reads of each sender, kept compact (`sampler.rs`).
    flow_rows: sampler::FlowRows,
    /// Each flow's sender host egress port (towards its receiver), looked up once: read on every
    /// ACK, where the flow's config and the routing row would be two more cache lines.
    host_ports: Vec<u32>,
    /// Background UDP sources.
    pub udp: Vec<UdpSource>,
    /// Latency probes.
    pub probes: Vec<ProbeSource>,
    /// iperf3's control exchange, per flow (None: a flow without one); empty when no flow has
    /// one, so that other runs test one length per sender call.
    pub iperf3: Vec<Option<Box<crate::net::iperf3::Iperf3Control>>>,
    /// Records not yet drained.
    pub rec: Recorder,
    /// CPU meters, when the run measures them (`[measure] cpu`).
    pub cpu: Option<CpuMeter>,
    sample_interval_ns: Ns,
    /// Whether arrivals prefetch for the next packet (`pipe_arrive`): in networks of more than
    /// `PREFETCH_MIN_PORTS` ports.
    prefetch_arrivals: bool,
    record_acks: bool,
    interval_ns: Ns,
    monitor: Vec<u32>,
    next_id: u64,
    scratch: Vec<Packet>,
    aqm_dropped: Vec<Packet>,
    /// Scratch for the packets an impaired port's delay line hands on at once.
    impair_due: Vec<crate::net::impair::Held>,
    flow_iv: Vec<(Ns, u64, u64)>,
    port_iv: Vec<(u64, u64, u64, u64)>,
    port_iv_start: Ns,
    /// Packets created, delivered to their destination, and dropped.
    pub created: u64,
    /// Packets that reached their destination node.
    pub delivered: u64,
    /// Packets dropped (buffer or random loss).
    pub dropped: u64,
    /// Optional per-packet audit.
    pub audit: Option<Audit>,
    /// 802.3x flow control at switches that have it (`net/pause.rs`); None in most networks.
    pause: Option<Box<Pause>>,
    /// The port the packet being forwarded arrived through (for flow control's accounting).
    arrived_via: u32,
}

impl Simulation {
    /// Build a simulation; errors name what is wrong in the config.
    pub fn new(cfg: &SimConfig) -> Result<Self, String> {
        Self::with_external_cc(cfg, &mut |_, _| None)
    }

    /// As `new`, with algorithms from outside the registry: `external(flow index, cc name)`
    /// returns a module for names it knows (user-written algorithms, e.g. in Python).
    pub fn with_external_cc(
        cfg: &SimConfig,
        external: &mut ExternalCc<'_>,
    ) -> Result<Self, String> {
        let n = cfg.nodes.len();
        let (ports, pools) = build::network(cfg)?;
        if n > NODE_MASK as usize {
            return Err(format!("{n} nodes; at most {NODE_MASK}"));
        }
        let mut routes = routes(n, &ports);
        let cpu = cfg.measure_cpu.then(CpuMeter::default);
        let (senders, receivers) = build::flows(cfg, &mut routes, &ports, external, cpu.is_some())?;
        let udp = build::udp_sources(cfg)?;
        let probes = build::probes(cfg)?;
        let monitor = build::monitored_ports(cfg)?;
        let mut ports = ports;
        let pause = build::flow_control(cfg, &mut ports)?;
        for &m in &monitor {
            ports[m as usize].monitor();
        }
        let q = build::first_events(cfg, &udp, &probes, &ports);
        let dependents = build::dependents(cfg)?;
        let prefetch_arrivals = ports.len() > PREFETCH_MIN_PORTS;
        let nf = senders.len();
        let host_ports = cfg
            .flows
            .iter()
            .zip(&senders)
            .map(|(f, s)| routes.port_for(f.src, s.route_key()))
            .collect();
        Ok(Simulation {
            now: 0,
            stop_ns: cfg.stop_ns,
            q,
            node_names: cfg.nodes.iter().map(|n| n.name.clone()).collect(),
            port_iv: vec![(0, 0, 0, 0); ports.len()],
            ports,
            pools,
            slab: Slab::default(),
            routes,
            flow_cfg: cfg.flows.clone(),
            dependents,
            senders,
            receivers,
            sender_timer_at: vec![None; nf],
            receiver_timer_at: vec![None; nf],
            flow_rows: sampler::FlowRows::new(nf),
            host_ports,
            udp,
            probes,
            iperf3: build::iperf3_controls(cfg),
            rec: Recorder::default(),
            cpu,
            sample_interval_ns: cfg.sample_interval_ns,
            prefetch_arrivals,
            record_acks: cfg.record_acks,
            interval_ns: cfg.interval_ns,
            monitor,
            next_id: 0,
            scratch: Vec::with_capacity(64),
            aqm_dropped: Vec::new(),
            impair_due: Vec::new(),
            flow_iv: vec![(0, 0, 0); nf],
            port_iv_start: 0,
            created: 0,
            delivered: 0,
            dropped: 0,
            audit: None,
            pause,
            arrived_via: u32::MAX,
        })
    }

    /// Turn the arrivals' prefetches on or off (on by default in networks of more than
    /// `PREFETCH_MIN_PORTS` ports): a hint to the CPU, which changes no result.
    pub fn set_prefetch_arrivals(&mut self, on: bool) {
        self.prefetch_arrivals = on;
    }

    /// Events handled so far.
    pub fn events_processed(&self) -> u64 {
        self.q.processed
    }

    /// Whether every TCP flow has finished (all data written and acknowledged) and every probe
    /// has sent its requests and learnt each one's fate.
    pub fn flows_done(&self) -> bool {
        self.senders.iter().all(|s| s.done(self.now))
            && self.probes.iter().all(|p| p.done(self.stop_ns))
            && self.iperf3.iter().flatten().all(|c| c.exited())
    }

    /// Run until simulated time `t` (or the stop time), handling every event at or before it.
    pub fn run_until(&mut self, t: Ns) {
        // Sampled only while the simulation runs, not while Python drains records.
        if let Some(m) = self.cpu.as_mut() {
            if let Err(e) = m.start() {
                eprintln!("tcplab: CPU sampling unavailable: {e}");
                self.cpu = None;
            }
        }
        self.run_events_until(t);
        if let Some(m) = self.cpu.as_mut() {
            m.stop();
        }
    }

    fn run_events_until(&mut self, t: Ns) {
        // Two copies of the event loop, so that one without prefetches compiles to exactly the
        // code it would be without them (T1's: a flag test per arrival cost ~1.5% of its
        // instructions).
        if self.prefetch_arrivals {
            self.run_events::<true>(t);
        } else {
            self.run_events::<false>(t);
        }
    }

    /// The event loop; `PREFETCH`: see `pipe_arrive`.
    fn run_events<const PREFETCH: bool>(&mut self, t: Ns) {
        let t = t.min(self.stop_ns);
        while let Some((et, action)) = self.q.peek() {
            if et > t {
                break;
            }
            self.now = et;
            if let Action::PipeArrive(pi) = action {
                // The pipe's next packet re-arms the event in the same heap step.
                self.pipe_arrive::<PREFETCH>(pi);
            } else {
                self.q.pop();
                self.handle(action);
            }
        }
        self.now = self.now.max(t);
    }

    #[inline(always)] // into each copy of the event loop (`run_events`), as it was into the one
    fn handle(&mut self, a: Action) {
        match a {
            Action::PipeArrive(_) => unreachable!("run_events_until handles arrivals"),
            Action::FlowStart(f) => {
                let fi = f as usize;
                let mut out = std::mem::take(&mut self.scratch);
                self.set_nic_backlog(fi);
                timed!(
                    self,
                    self.senders[fi].start(self.now, &mut out, &mut self.next_id)
                );
                self.flush(self.flow_cfg[fi].src, &mut out);
                self.scratch = out;
                self.after_sender(fi);
                self.flow_iv[fi] = (self.now, 0, 0);
                if self.interval_ns > 0 {
                    let end = self.interval_end(fi, self.now);
                    self.q.push(end, Action::FlowInterval(f));
                }
            }
            Action::SenderTimer(f) => {
                let fi = f as usize;
                if self.sender_timer_at[fi] == Some(self.now) {
                    self.sender_timer_at[fi] = None;
                }
                let mut out = std::mem::take(&mut self.scratch);
                self.set_nic_backlog(fi);
                timed!(
                    self,
                    self.senders[fi].on_timer(self.now, &mut out, &mut self.next_id)
                );
                self.flush(self.flow_cfg[fi].src, &mut out);
                self.scratch = out;
                self.after_sender(fi);
            }
            Action::ReceiverTimer(f) => {
                let fi = f as usize;
                if self.receiver_timer_at[fi] == Some(self.now) {
                    self.receiver_timer_at[fi] = None;
                }
                let mut out = std::mem::take(&mut self.scratch);
                timed!(
                    self,
                    self.receivers[fi].on_timer(self.now, &mut out, &mut self.next_id)
                );
                self.flush(self.flow_cfg[fi].dst, &mut out);
                self.scratch = out;
                self.after_receiver(fi);
            }
            Action::UdpSend(u) => self.udp_send(u as usize),
            Action::ProbeSend(i) => self.probe_send(i as usize),
            Action::Sample => {
                self.sample();
                let next = self.now + self.sample_interval_ns;
                if next <= self.stop_ns {
                    self.q.push(next, Action::Sample);
                }
            }
            Action::FlowInterval(f) => self.flow_interval(f as usize),
            Action::PortDequeue(pi) => self.aqm_dequeue(pi),
            Action::ImpairOut(pi) => self.impair_out(pi),
            Action::LinkChange(pi) => self.link_change(pi),
            Action::PauseFrame(pi) => self.pause_frame_arrives(pi),
            Action::PauseCheck(pi) => self.pause_check(pi),
            Action::Iperf3(f) => self.iperf3_event(f as usize),
            Action::PortInterval => {
                self.port_interval();
                let next = self.now + self.interval_ns;
                if next <= self.stop_ns {
                    self.q.push(next, Action::PortInterval);
                }
            }
        }
    }

    #[inline(never)] // once per sample interval: kept out of the event loop's code
    fn sample(&mut self) {
        for fi in 0..self.senders.len() {
            if let Some(row) = self.flow_rows.get(fi, &self.senders, self.now) {
                push_flow_row(&mut self.rec, self.now, fi, row);
            }
        }
        for i in 0..self.monitor.len() {
            let p = self.monitor[i];
            match self.ports[p as usize].pool() {
                Some(pl) => self.settle_pool(pl),
                None => {
                    self.ports[p as usize].advance(self.now);
                }
            }
            let port = &self.ports[p as usize];
            self.rec.queues.push(&[
                self.now as i64,
                p as i64,
                port.queue_packets() as i64,
                port.queued_bytes() as i64,
            ]);
        }
    }

    fn sample_flow(&mut self, fi: usize) {
        let row = sampler::flow_row(&self.senders[fi]);
        push_flow_row(&mut self.rec, self.now, fi, &row);
    }

    /// The sender's host egress port (towards its receiver).
    fn host_port(&self, fi: usize) -> usize {
        self.host_ports[fi] as usize
    }

    fn set_nic_backlog(&mut self, fi: usize) {
        let pi = self.host_port(fi);
        self.ports[pi].advance(self.now);
        self.senders[fi].nic_backlog = self.ports[pi].backlog_bytes();
    }

    /// After any sender activity: record its events, re-arm its timer, tell the sampler.
    fn after_sender(&mut self, fi: usize) {
        if self.senders[fi].tsq_throttled && self.senders[fi].tsq_wake.is_none() {
            // TX completion frees the socket's skbs (tcp_wfree) and the TSQ handler sends
            // again; we wake the sender once its NIC queue is down to half the limit.
            let pi = self.host_port(fi);
            let half = self.senders[fi].tsq_limit() / 2;
            let t = self.ports[pi]
                .when_queue_at_most(half, self.now)
                .max(self.now + 1);
            self.senders[fi].tsq_wake = Some(t);
        }
        if !self.senders[fi].sends.is_empty() {
            for x in std::mem::take(&mut self.senders[fi].sends) {
                self.rec.sends.push(&[
                    x.t as i64,
                    fi as i64,
                    x.seq as i64,
                    x.bytes as i64,
                    x.segments as i64,
                    x.retx as i64,
                    x.state.code(),
                ]);
            }
        }
        if !self.senders[fi].events.is_empty() {
            for (t, e, snap) in std::mem::take(&mut self.senders[fi].events) {
                self.rec.events.push(&[
                    t as i64,
                    fi as i64,
                    e.code(),
                    snap.cwnd as i64,
                    ssthresh_col(snap.ssthresh),
                    snap.pipe as i64,
                    snap.outstanding as i64,
                    snap.retrans_segs as i64,
                ]);
                if e == SenderEvent::Complete {
                    self.push_interval(fi);
                }
            }
            // A sample at the exact instant of the state change, so charts show it sharply.
            self.sample_flow(fi);
        }
        let deadline = self.senders[fi].timer_deadline();
        arm(
            &mut self.q,
            &mut self.sender_timer_at[fi],
            deadline,
            self.now,
            Action::SenderTimer(fi as u32),
        );
        // Last: everything above may change the sender.
        self.flow_rows.touch(fi, &self.senders);
        if !self.iperf3.is_empty() {
            self.iperf3_after_sender(fi);
        }
    }

    /// After a receiver took data: its timer, and the flows waiting for its data to be in.
    #[inline(always)] // after every data segment
    pub(super) fn after_receiver(&mut self, fi: usize) {
        self.sync_receiver_timer(fi);
        if !self.dependents.is_empty() && !self.dependents[fi].is_empty() {
            self.start_dependents(fi);
        }
    }

    /// Flow `fi`'s receiver has all its bytes: its dependents start (each `start_ns` later).
    #[cold]
    fn start_dependents(&mut self, fi: usize) {
        let AppConfig::Bytes { bytes } = self.flow_cfg[fi].app else {
            return;
        };
        if self.receivers[fi].rcv_nxt < bytes {
            return;
        }
        for d in std::mem::take(&mut self.dependents[fi]) {
            let at = self.now + self.flow_cfg[d as usize].start_ns;
            self.flow_cfg[d as usize].start_ns = at;
            self.q.push(at, Action::FlowStart(d));
        }
    }

    #[inline(always)] // after every data segment
    fn sync_receiver_timer(&mut self, fi: usize) {
        let deadline = self.receivers[fi].timer_deadline();
        arm(
            &mut self.q,
            &mut self.receiver_timer_at[fi],
            deadline,
            self.now,
            Action::ReceiverTimer(fi as u32),
        );
    }

    fn udp_send(&mut self, u: usize) {
        let src = &mut self.udp[u];
        self.next_id += 1;
        let mut p = Packet::new(self.next_id, Kind::Udp, u as u32, src.cfg.dst);
        p.size_bytes = src.cfg.size_bytes;
        src.sent += 1;
        let next = src.send_time(src.sent);
        let (from, stop) = (src.cfg.src, src.cfg.stop_ns);
        if next < stop && next <= self.stop_ns {
            self.q.push(next, Action::UdpSend(u as u32));
        }
        self.created += 1;
        self.forward(from, p);
    }

    /// A probe's next echo request (ping: one every interval, whatever came back).
    fn probe_send(&mut self, i: usize) {
        let pr = &mut self.probes[i];
        self.next_id += 1;
        let mut p = Packet::new(self.next_id, Kind::Echo, i as u32, pr.cfg.dst);
        p.size_bytes = pr.cfg.size_bytes;
        pr.sent += 1;
        p.seq = pr.sent;
        p.ts_val = self.now;
        let next = pr.send_time(pr.sent);
        if next < pr.cfg.stop_ns && next <= self.stop_ns {
            self.q.push(next, Action::ProbeSend(i as u32));
        }
        let from = pr.cfg.src;
        self.created += 1;
        self.forward(from, p);
    }

    /// One row of the `probes` table: a request's round trip, or -1 when it was lost.
    fn probe_done(&mut self, p: &Packet, rtt_ns: i64) {
        let pr = &mut self.probes[p.flow as usize];
        if rtt_ns < 0 {
            pr.lost += 1;
        } else {
            pr.answered += 1;
        }
        self.rec
            .probes
            .push(&[p.ts_val as i64, p.flow as i64, p.seq as i64, rtt_ns]);
    }
}

/// Lazy timers: an endpoint states when it next wants to run; an event is queued only if none is
/// pending for an earlier time (`pending`). A timer pushed later (an RTO restarted on every ACK)
/// costs nothing until the pending event fires and finds it not yet due.
fn arm(
    q: &mut EventQueue,
    pending: &mut Option<Ns>,
    deadline: Option<Ns>,
    now: Ns,
    action: Action,
) {
    if let Some(d) = deadline {
        if pending.is_none_or(|t| d < t) {
            q.push(d.max(now), action);
            *pending = Some(d);
        }
    }
}

/// One row of the `flows` table.
fn push_flow_row(rec: &mut Recorder, now: Ns, fi: usize, row: &sampler::FlowRow) {
    let mut full = [0i64; 13];
    full[0] = now as i64;
    full[1] = fi as i64;
    full[2..].copy_from_slice(row);
    rec.flows.push(&full);
}

/// One row of the `acks` table: what the sender is about to read from this ACK.
fn ack_row(now: Ns, fi: usize, p: &Packet) -> [i64; 12] {
    let mut row = [-1i64; 12];
    row[0] = now as i64;
    row[1] = fi as i64;
    row[2] = p.ack as i64;
    row[3] = p.rwnd as i64;
    for (i, &(a, b)) in p.sack_blocks().iter().enumerate() {
        row[4 + 2 * i] = a as i64;
        row[5 + 2 * i] = b as i64;
    }
    row
}

fn ssthresh_col(ssthresh: u64) -> i64 {
    if ssthresh >= u64::MAX / 8 {
        -1
    } else {
        ssthresh as i64
    }
}

/// Ask the CPU to start loading the cache line at `p`: a hint, no effect on results; nothing
/// where the target has no prefetch instruction.
#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing architecturally and cannot fault, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

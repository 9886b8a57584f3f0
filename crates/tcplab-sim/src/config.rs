//! The resolved experiment as the simulator takes it: every unit already a number, every name
//! already an index. The Python side (`tcplab.spec`) validates the user's TOML and produces this.

use crate::tcp::prr::PrrVersion;
use crate::time::Ns;
use serde::Deserialize;

/// A whole simulation.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    /// The run's one seed.
    pub seed: u64,
    /// Simulated time at which the run stops.
    pub stop_ns: Ns,
    /// Flow-state sampling period; 0 records at every ACK.
    pub sample_interval_ns: Ns,
    /// iperf3-style reporting interval (`-i`).
    pub interval_ns: Ns,
    /// Record every send (TSO chunk, segment, retransmission) in the `sends` table.
    #[serde(default)]
    pub record_sends: bool,
    /// Record every ACK the senders receive (cumulative ACK, window, SACK blocks) in `acks`.
    #[serde(default)]
    pub record_acks: bool,
    /// Measure the CPU time of the TCP path and the CC hooks (`[measure] cpu`; see `cpu`).
    #[serde(default)]
    pub measure_cpu: bool,
    /// Nodes, referred to by index.
    pub nodes: Vec<NodeConfig>,
    /// Full-duplex links between nodes.
    pub links: Vec<LinkConfig>,
    /// TCP flows.
    #[serde(default)]
    pub flows: Vec<FlowConfig>,
    /// Background UDP constant-bit-rate sources.
    #[serde(default)]
    pub udp: Vec<UdpConfig>,
    /// Latency probes (ping).
    #[serde(default)]
    pub probes: Vec<ProbeConfig>,
    /// Ports (link index, direction "ab" or "ba") whose queue length is sampled.
    #[serde(default)]
    pub monitor: Vec<PortRef>,
}

/// Kind of node.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    /// An end host: terminates TCP flows and UDP sinks.
    Host,
    /// A router: a drop-tail FIFO per egress port.
    Router,
    /// A switch: egress FIFOs drawing on one shared byte pool.
    Switch,
}

/// One node.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// Name as in the spec (s1, rt1, ...).
    pub name: String,
    /// Kind.
    pub kind: NodeKind,
    /// For a switch: the packet buffer all its egress ports share, bytes.
    #[serde(default)]
    pub shared_buffer_bytes: Option<u64>,
    /// For a switch with a shared buffer: how its ports may take from it.
    #[serde(default)]
    pub buffer_policy: BufferPolicy,
    /// For a switch with a shared buffer: 802.3x flow control towards its link partners
    /// ([`crate::net::pause`]); None = off (the switch drops when its buffer is full).
    #[serde(default)]
    pub pause: Option<PauseConfig>,
}

/// 802.3x PAUSE thresholds of a switch, per ingress port: the bytes a port's packets hold in the
/// switch's buffer at which its partner is paused (XOFF) and resumed (XON).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PauseConfig {
    /// Pause the partner when its packets hold this many bytes.
    pub xoff_bytes: u64,
    /// Resume it when they hold this many or fewer (below `xoff_bytes`).
    pub xon_bytes: u64,
}

/// How the egress ports of a shared-memory switch take from its one buffer of B bytes.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum BufferPolicy {
    /// Complete sharing: any port may take any free space (admitted while the packet fits).
    #[default]
    Complete,
    /// Dynamic threshold (Choudhury & Hahne, "Dynamic queue length thresholds for shared-memory
    /// packet switches", IEEE/ACM ToN 6(2), 1998): a port is admitted while its queue is below
    /// alpha x (B - total occupancy).
    Dynamic {
        /// The threshold's multiplier of the free space.
        alpha: f64,
    },
    /// Static partition: each of `ports` ports owns B / ports bytes.
    Static {
        /// How many ports the buffer is divided among.
        ports: u32,
    },
}

/// One direction of a link: the egress port of the sending node.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirConfig {
    /// Rate, bit/s of IP packets.
    pub rate_bps: u64,
    /// One-way propagation delay.
    pub delay_ns: Ns,
    /// Drop-tail limit in packets waiting (the one on the wire not counted).
    #[serde(default)]
    pub buffer_packets: Option<u64>,
    /// Drop-tail limit in bytes waiting.
    #[serde(default)]
    pub buffer_bytes: Option<u64>,
    /// Bernoulli loss probability applied as packets enter the port (as netem/Dummynet do).
    #[serde(default)]
    pub loss: f64,
    /// Extra one-way delay per packet, uniform in [0, jitter_ns], never reordering packets.
    #[serde(default)]
    pub jitter_ns: Ns,
    /// Drop exactly these packets, counted from 1 as they arrive at the port (like ns-3's
    /// ListErrorModel): deterministic losses for tests and for scripted scenarios.
    #[serde(default)]
    pub drop_arrivals: Vec<u64>,
    /// A queue discipline instead of drop-tail (see [`crate::net::aqm`]); None = drop-tail.
    #[serde(default)]
    pub aqm: Option<crate::net::aqm::AqmConfig>,
    /// netem's `limit`: packets held by the port at once, its propagation delay included (the
    /// delay is netem's; sch_netem.c netem_enqueue() drops when `sch->q.qlen >= sch->limit`).
    #[serde(default)]
    pub held_limit_packets: Option<u64>,
    /// netem's impairments, changes over time, a trace to replay (crates/tcplab-impair, the
    /// link emulator's too); None = a plain link.
    #[serde(default)]
    pub impair: Option<tcplab_impair::LinkImpair>,
}

/// A full-duplex link.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// Node index at one end.
    pub a: u32,
    /// Node index at the other end.
    pub b: u32,
    /// Direction a -> b.
    pub ab: DirConfig,
    /// Direction b -> a.
    pub ba: DirConfig,
}

/// A reference to one port: link index and direction.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortRef {
    /// Link index.
    pub link: u32,
    /// "ab" or "ba".
    pub dir: String,
}

/// What the sending application does (iperf3 `-t` or `-n`).
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum AppConfig {
    /// Write continuously for this long (iperf3 `-t`).
    Time {
        /// Duration.
        duration_ns: Ns,
    },
    /// Write exactly this many bytes (iperf3 `-n`).
    Bytes {
        /// Bytes.
        bytes: u64,
    },
}

/// One TCP flow.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    /// Name as in the spec.
    pub name: String,
    /// Sending host index.
    pub src: u32,
    /// Receiving host index.
    pub dst: u32,
    /// When the application starts writing.
    pub start_ns: Ns,
    /// Stack profile name (see [`crate::stack`]).
    pub stack: String,
    /// Congestion-control algorithm name (see [`crate::cc::build`]).
    pub cc: String,
    /// Maximum segment size, payload bytes.
    pub mss: u32,
    /// TCP timestamps (RFC 7323).
    pub timestamps: bool,
    /// SACK (RFC 2018); without it, NewReno partial-ACK recovery (RFC 6582).
    pub sack: bool,
    /// Initial window, segments.
    pub iw_segments: u32,
    /// Send socket buffer, bytes: limits unacknowledged plus unsent data.
    pub sndbuf_bytes: u64,
    /// Receive socket buffer, bytes (Linux tcp_rmem[2], FreeBSD recvbuf_max).
    pub rcvbuf_bytes: u64,
    /// Bytes of window the receiver offers per 256 bytes of buffer: Linux's scaling_ratio
    /// (tcp_win_from_space(); 128 = tcp_adv_win_scale 1, the kernel's default), 256 = the whole
    /// buffer (FreeBSD's sbspace(), RFC receivers).
    #[serde(default = "whole_buffer")]
    pub rcv_scaling_ratio: u32,
    /// The receiving host's NIC: interrupt moderation and receive coalescing (GRO, LRO).
    #[serde(default)]
    pub rx_nic: RxNicConfig,
    /// Largest TSO burst the sending host's NIC takes, bytes (Linux gso_max_size, FreeBSD
    /// if_hw_tsomax); None: the stack's default (64 KB).
    #[serde(default)]
    pub tso_max_bytes: Option<u64>,
    /// The sending host's NIC: most DMA fragments of one TSO burst (FreeBSD
    /// if_hw_tsomaxsegcount, which tcp_m_copym() cuts a burst at); None: no limit.
    #[serde(default)]
    pub tso_max_segcount: Option<u32>,
    /// The sending host's NIC: largest DMA fragment of a TSO burst, bytes (FreeBSD
    /// if_hw_tsomaxsegsize); None: no limit.
    #[serde(default)]
    pub tso_max_segsize: Option<u32>,
    /// The sending host's NIC does LRO on the ACKs it receives (FreeBSD RACK then takes them
    /// compressed, rack_use_cmp_acks).
    #[serde(default)]
    pub sender_lro: bool,
    /// The receiving host's OS, whose delayed-ACK rules the receiver follows ("linux" or
    /// "freebsd"); None: the sender's stack's rules.
    #[serde(default)]
    pub receiver_os: Option<String>,
    /// Application write size (iperf3 `-l`).
    pub write_bytes: u64,
    /// What the application does.
    pub app: AppConfig,
    /// Start `start_ns` after flow `after_flow`'s last byte reached its receiver in order (a
    /// response after its request: a request-response workload); None: at `start_ns`.
    #[serde(default)]
    pub after_flow: Option<u32>,
    /// Initial size of an autotuned send buffer (Linux tcp_wmem[1]); default 16 KB.
    #[serde(default)]
    pub sndbuf_initial_bytes: Option<u64>,
    /// The sender asks for ECN (RFC 3168: net.ipv4.tcp_ecn = 1, net.inet.tcp.ecn.enable = 1, or a
    /// module that needs ECN: dctcp); the connection uses it when the receiver accepts too
    /// (`peer.ecn`). `sack`, `timestamps` and `window_scaling` are likewise what the sender
    /// offers in its SYN, used when the receiver's `peer` settings agree ([`FlowConfig::negotiated`]).
    #[serde(default)]
    pub ecn: bool,
    /// Send ECT(1), the L4S identifier (RFC 9331), instead of ECT(0): L4STeam/linux
    /// net/ipv4/tcp_dctcp.c's `dctcp_ect` module parameter (TCP_CONG_WANTS_ECT_1).
    #[serde(default)]
    pub ect1: bool,
    /// Window scaling offered (RFC 7323 §2; net.ipv4.tcp_window_scaling, net.inet.tcp.rfc1323).
    #[serde(default = "yes")]
    pub window_scaling: bool,
    /// The receiving host's TCP settings that the handshake negotiates against.
    #[serde(default)]
    pub peer: PeerOptions,
    /// How the connection opens: a three-way handshake through the network, or established at the
    /// start time without one (long-flow studies that leave the handshake out).
    #[serde(default)]
    pub connect: Connect,
    /// Linux net.ipv4.tcp_syn_retries / tcp_syn_linear_timeouts; None: the stack's defaults.
    #[serde(default)]
    pub syn_retries: Option<u32>,
    /// See `syn_retries`.
    #[serde(default)]
    pub syn_linear_timeouts: Option<u32>,
    /// The nodes the flow's data crosses, `src` to `dst`, where it does not take the shortest
    /// path (a spec's `path`, an ECMP choice); its ACKs cross them backwards. None: the shortest.
    #[serde(default)]
    pub path: Option<Vec<u32>>,
    /// Linux PRR version ("5.15" or "6.x"); only for the linux stack.
    #[serde(default, deserialize_with = "prr_version")]
    pub prr: Option<PrrVersion>,
    /// FreeBSD default-stack knobs; only for the freebsd stack.
    #[serde(default)]
    pub freebsd: Option<FreeBsdKnobs>,
    /// The iperf3 client and server around the transfer (its control connection, cookies,
    /// parameter and result exchanges: `net::iperf3`); None: the data connection alone.
    #[serde(default)]
    pub iperf3: Option<Iperf3Config>,
}

/// iperf3's control protocol around a flow (`net::iperf3`): the sizes of its JSON messages,
/// which depend on the options and the results (the Python side prints them as cJSON would).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Iperf3Config {
    /// The client's parameters (send_parameters()), bytes of JSON after the 4-byte length.
    pub params_json_bytes: u32,
    /// The client's results (send_results()), bytes of JSON.
    pub client_results_json_bytes: u32,
    /// The server's results, bytes of JSON.
    pub server_results_json_bytes: u32,
}

/// Receive-side coalescing of a NIC driver.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Coalesce {
    /// Every frame reaches TCP alone.
    #[default]
    None,
    /// Linux GRO (net/core/gro.c, net/ipv4/tcp_offload.c tcp_gro_receive()).
    Gro,
    /// FreeBSD software LRO (sys/netinet/tcp_lro.c).
    Lro,
}

/// The receiving NIC: when the driver's poll runs and how it merges what it finds.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RxNicConfig {
    /// GRO, LRO or none.
    #[serde(default)]
    pub coalesce: Coalesce,
    /// The receive interrupt is raised this long after the first frame it covers (ethtool -C
    /// rx-usecs); 0 with `rx_frames` 0: an interrupt per frame.
    #[serde(default)]
    pub rx_usecs_ns: Ns,
    /// ... or as soon as this many frames wait (ethtool -C rx-frames); 0: no frame trigger.
    #[serde(default)]
    pub rx_frames: u32,
}

fn whole_buffer() -> u32 {
    256
}

fn yes() -> bool {
    true
}

/// How a flow's connection opens.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Connect {
    /// Established at the start time, options as negotiated, no packets exchanged (the
    /// simulator's behaviour before connection setup was modelled).
    #[default]
    Established,
    /// SYN, SYN-ACK and ACK cross the network (`tcp::handshake`); data starts when the SYN-ACK
    /// arrives.
    Handshake,
}

/// What the receiving host accepts in a SYN (its sysctls): an option the sender offers is used
/// only if the receiver has it on too.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PeerOptions {
    /// SACK (net.ipv4.tcp_sack, net.inet.tcp.sack.enable).
    #[serde(default = "yes")]
    pub sack: bool,
    /// Timestamps (net.ipv4.tcp_timestamps, net.inet.tcp.rfc1323 1 or 3).
    #[serde(default = "yes")]
    pub timestamps: bool,
    /// Window scaling (net.ipv4.tcp_window_scaling, net.inet.tcp.rfc1323 1 or 2).
    #[serde(default = "yes")]
    pub window_scaling: bool,
    /// ECN accepted (net.ipv4.tcp_ecn 1 or 2, net.inet.tcp.ecn.enable 1 or 2).
    #[serde(default = "yes")]
    pub ecn: bool,
}

impl Default for PeerOptions {
    fn default() -> Self {
        PeerOptions {
            sack: true,
            timestamps: true,
            window_scaling: true,
            ecn: true,
        }
    }
}

/// The options a connection runs with once both ends have spoken (RFC 2018 §2, RFC 7323 §2.2
/// and §3.2, RFC 3168 §6.1.1): each on only if the SYN offered it and the SYN-ACK agreed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Negotiated {
    /// SACK permitted.
    pub sack: bool,
    /// Timestamps on every segment.
    pub timestamps: bool,
    /// Window scaling (else the receiver's window is at most 65535 bytes).
    pub window_scaling: bool,
    /// ECN.
    pub ecn: bool,
    /// Sender MSS, payload bytes: the MTU's less 12 bytes when timestamps are on (the spec's
    /// `mss` is for the sender's own offer; without timestamps the 12 bytes carry data).
    pub mss: u32,
}

impl FlowConfig {
    /// The window the receiver's buffer can offer with nothing held out of order: Linux
    /// tcp_win_from_space() = space x scaling_ratio >> TCP_RMEM_TO_WIN_SCALE (8).
    pub fn rcv_space_bytes(&self) -> u64 {
        self.rcvbuf_bytes * self.rcv_scaling_ratio as u64 >> 8
    }

    /// The options the connection ends up with, given what the sender offers and the receiver
    /// accepts (the outcome of the handshake; an established connection gets the same).
    pub fn negotiated(&self) -> Negotiated {
        let timestamps = self.timestamps && self.peer.timestamps;
        Negotiated {
            sack: self.sack && self.peer.sack,
            timestamps,
            window_scaling: self.window_scaling && self.peer.window_scaling,
            ecn: self.ecn && self.peer.ecn,
            mss: if self.timestamps && !timestamps {
                self.mss + crate::net::packet::TS_OPT
            } else {
                self.mss
            },
        }
    }
}

/// FreeBSD default-stack settings (review D43470 and the net.inet.tcp sysctls that shape
/// recovery and sending).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FreeBsdKnobs {
    /// With review D43470 (true) or before it (false).
    pub d43470: bool,
    /// net.inet.tcp.do_prr.
    pub do_prr: bool,
    /// net.inet.tcp.sack.tso.
    pub sack_tso: bool,
    /// net.inet.tcp.tso.
    pub tso: bool,
    /// net.inet.tcp.sendbuf_inc, bytes (0: no send-buffer autosizing).
    pub sendbuf_inc_bytes: u64,
    /// Which FreeBSD source the default stack follows ("2023", "15.0-2024-10" or "15.0-2025";
    /// default "2023").
    #[serde(default, deserialize_with = "freebsd_version")]
    pub version: FreeBsdVersion,
    /// net.inet.tcp.sack.lrd; None: the version's default.
    #[serde(default)]
    pub sack_lrd: Option<bool>,
    /// The RACK stack's cwnd after a retransmission timeout; None: the version's default
    /// ([`FreeBsdVersion::rack_rto_keeps_cwnd`]).
    #[serde(default)]
    pub rack_rto_cwnd: Option<RackRtoCwnd>,
}

/// What a FreeBSD RACK retransmission timeout does to cwnd and ssthresh (rack_cong_signal(CC_RTO)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RackRtoCwnd {
    /// Both kept: the cc module (newreno, cubic) has a cong_signal, which CC_RTO never calls,
    /// and the stack sets them only `if (CC_ALGO(tp)->cong_signal == NULL)` (rack.c @ 0c19274c).
    Kept,
    /// ssthresh = max(2, min(snd_wnd, cwnd) / 2 / maxseg) x maxseg and cwnd = 1 MSS,
    /// unconditionally (late-2023 rack.c, fel1x-developer @ 2d614aa2; the "2023" model).
    OneMss,
}

fn freebsd_version<'de, D: serde::Deserializer<'de>>(d: D) -> Result<FreeBsdVersion, D::Error> {
    let s = String::deserialize(d)?;
    FreeBsdVersion::from_name(&s).ok_or_else(|| {
        let known: Vec<_> = FreeBsdVersion::ALL.iter().map(|v| v.name()).collect();
        serde::de::Error::custom(format!("freebsd version {s:?} is not one of {known:?}"))
    })
}

fn prr_version<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<PrrVersion>, D::Error> {
    let s: Option<String> = Option::deserialize(d)?;
    match s.as_deref() {
        None => Ok(None),
        Some("5.15") => Ok(Some(PrrVersion::Linux515)),
        Some("6.x") => Ok(Some(PrrVersion::Mainline)),
        Some(other) => Err(serde::de::Error::custom(format!(
            "prr {other:?} is not 5.15 or 6.x"
        ))),
    }
}

/// A background UDP constant-bit-rate source.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UdpConfig {
    /// Name.
    pub name: String,
    /// Sending node index (any node, e.g. a router as in T4).
    pub src: u32,
    /// Receiving node index.
    pub dst: u32,
    /// Rate, bit/s of IP packets.
    pub rate_bps: u64,
    /// Datagram size, IP bytes.
    pub size_bytes: u32,
    /// Start time.
    pub start_ns: Ns,
    /// Stop time.
    pub stop_ns: Ns,
}

/// A latency probe: ICMP echo requests from `src` to `dst` every `interval_ns` (ping -i), each
/// answered by `dst` at once.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeConfig {
    /// Name.
    pub name: String,
    /// Pinging node index.
    pub src: u32,
    /// Pinged node index.
    pub dst: u32,
    /// Time between requests.
    pub interval_ns: Ns,
    /// Request (and reply) size, IP bytes.
    pub size_bytes: u32,
    /// First request.
    pub start_ns: Ns,
    /// No request at or after this time.
    pub stop_ns: Ns,
}

impl SimConfig {
    /// Parse the JSON the Python side writes.
    pub fn from_json(s: &str) -> Result<Self, String> {
        serde_json::from_str(s).map_err(|e| format!("invalid simulator config: {e}"))
    }
}

/// FreeBSD default-stack source versions (docs/models.md, "FreeBSD default-stack versions").
/// Each is read from stored copies of public freebsd-src trees; which copy each rule comes from
/// is named at the rule (and in docs/research/freebsd-2024-25.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FreeBsdVersion {
    /// tcp_input.c @ 2bae602e and F-Stack's tcp_output.c / tcp_sack.c, with the `d43470` knob
    /// modelled from the review's description: the model as it was before versions existed.
    #[default]
    V2023,
    /// FreeBSD 15.0-CURRENT main-f11c79fc00 of 2024-10-17 (the tree T4's seed ran), before
    /// review D43470 (`d43470 = false`) or with it applied as committed in 7dc78150c730
    /// (`d43470 = true`). No stored tree of that date exists: the base follows the newest stored
    /// copies before D43470 (tcp_input.c: ihoro/freebsd-src @ 48931b3e; tcp_output.c and
    /// tcp_sack.c: fel1x-developer/freebsd-src @ b252a43e / 2d614aa2), and D43470's lines are
    /// those of the 2025 copies (nibanks/freebsd-src tcp_input.c @ 62d1e135, tcp_output.c
    /// @ 0714807e).
    V15_2024_10,
    /// FreeBSD 15.0-CURRENT of 2025-01..03 (T1-T3's kernels), after D43470 as committed:
    /// tcp_input.c @ 62d1e135 and tcp_output.c @ 0714807e (nibanks/freebsd-src).
    V15_2025,
}

impl FreeBsdVersion {
    /// Every version, the default first.
    pub const ALL: [FreeBsdVersion; 3] = [
        FreeBsdVersion::V2023,
        FreeBsdVersion::V15_2024_10,
        FreeBsdVersion::V15_2025,
    ];

    /// The name a spec uses.
    pub fn name(self) -> &'static str {
        match self {
            FreeBsdVersion::V2023 => "2023",
            FreeBsdVersion::V15_2024_10 => "15.0-2024-10",
            FreeBsdVersion::V15_2025 => "15.0-2025",
        }
    }

    /// The version of a name.
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.name() == s)
    }

    /// Whether the version necessarily contains review D43470 (`d43470 = false` is refused).
    pub fn includes_d43470(self) -> bool {
        self == FreeBsdVersion::V15_2025
    }

    /// tcp_compute_pipe() leaves out the holes RFC 6675 IsLost() judges lost
    /// (`- tp->sackhint.lost_bytes`, review D39299): present in fel1x-developer/freebsd-src
    /// tcp_input.c @ 2d614aa2 (before D43355) and every later copy; absent at 2bae602e.
    pub fn pipe_excludes_lost(self) -> bool {
        self != FreeBsdVersion::V2023
    }

    /// cc_post_recovery() runs in process_ACK after `tp->snd_una = th->th_ack` (ihoro/freebsd-src
    /// tcp_input.c @ 48931b3e, before D43470; nibanks @ 62d1e135), not at resume_partialack
    /// before snd_una moves (2bae602e).
    pub fn post_recovery_after_snd_una(self) -> bool {
        self != FreeBsdVersion::V2023
    }

    /// tcp_sndbuf_autoscale() grows while `sbused(&so->so_snd) < V_tcp_autosndbuf_max`
    /// (nibanks/spmzt tcp_output.c of 2025) rather than `so->so_snd.sb_hiwat <
    /// V_tcp_autosndbuf_max` (F-Stack; fel1x-developer tcp_output.c @ b252a43e, the newest stored
    /// copy before D43470).
    pub fn autosndbuf_tests_sbused(self) -> bool {
        self == FreeBsdVersion::V15_2025
    }

    /// tcp_sack_partialack()'s RFC 6675 rescue retransmission for any partial ACK below
    /// snd_recover, its hole the last maxseg below `highdata = SEQ_MIN(snd_max, snd_recover)`
    /// (fel1x-developer/freebsd-src tcp_sack.c @ 2d614aa2fe3e037bd11d351b0b5cfda776e65814, the
    /// copy the later versions follow), rather than only while `(tp->snd_recover == tp->snd_max)`
    /// with the hole below snd_max (the earlier copy the "2023" model follows).
    pub fn rescue_below_recovery_point(self) -> bool {
        self != FreeBsdVersion::V2023
    }

    /// Lost-retransmission detection's default: `VNET_DEFINE(int, tcp_do_lrd) = 0;`
    /// (net.inet.tcp.do_lrd) at freebsd/freebsd-src tcp_input.c @ 2bae602e; `VNET_DEFINE(int,
    /// tcp_do_lrd) = 1;` as net.inet.tcp.sack.lrd in fel1x-developer tcp_sack.c @ 2d614aa2
    /// (moved by f42518ff, review D42851, late 2023), latched per connection by tcp_newtcpcb()
    /// (`if (V_tcp_do_lrd) tp->t_flags |= TF_LRD;`, nibanks tcp_subr.c @ 62d1e135).
    pub fn lrd_default(self) -> bool {
        self != FreeBsdVersion::V2023
    }

    /// The RACK stack keeps cwnd and ssthresh on a retransmission timeout: nibanks/freebsd-src
    /// sys/netinet/tcp_stacks/rack.c @ 0c19274c85e092af688e45fa084242ca2dda5847,
    /// rack_cong_signal(), `case CC_RTO: [...] if (CC_ALGO(tp)->cong_signal == NULL) { /* TSNH */
    /// tp->snd_ssthresh = [...]; tp->snd_cwnd = ctf_fixed_maxseg(tp); }` and `if
    /// ((CC_ALGO(tp)->cong_signal != NULL) && (type != CC_RTO))` around the module's call (CheriBSD
    /// @ 0f0ca6d2 alike). Half of that rack.c was read, so this stays a knob (`rack_rto_cwnd`).
    pub fn rack_rto_keeps_cwnd(self) -> bool {
        self == FreeBsdVersion::V15_2025
    }

    /// net.inet.tcp.sendbuf_max (tcp_output.c `V_tcp_autosndbuf_max`) where the version's default
    /// replaces the spec's general one: 2 MB in fel1x-developer tcp_output.c @ b252a43e (the newest
    /// stored copy before D43470), 8 MB in nibanks @ 0714807e / spmzt @ b6e0e155 (2025). The 2023
    /// model keeps the spec's general default (16 MB), as it always had.
    pub fn sendbuf_max_bytes(self) -> Option<u64> {
        match self {
            FreeBsdVersion::V2023 => None,
            FreeBsdVersion::V15_2024_10 => Some(2 * 1024 * 1024),
            FreeBsdVersion::V15_2025 => Some(8 * 1024 * 1024),
        }
    }
}

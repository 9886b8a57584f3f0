//! Congestion control as modules behind one trait named after FreeBSD's cc(4) hooks.
//!
//! The stack owns the shared per-connection variables ([`CcVars`], FreeBSD's `struct cc_var`);
//! an algorithm keeps only its private state. Each hook is handed a read-only view of the
//! connection ([`CcView`]) and the window it may change ([`Window`]: cwnd, ssthresh). Hooks never
//! read a clock: `now` is in the view. See FreeBSD `sys/netinet/cc/cc.h` (`struct cc_algo`) for
//! the hook set this mirrors.

pub mod bbr;
pub mod bic;
pub mod cubic;
pub mod dctcp;
pub mod freebsd;
pub mod freebsd_dctcp;
pub mod freebsd_htcp;
pub mod highspeed;
pub mod htcp;
pub mod linux;
pub mod marked;
mod minmax;
pub mod newreno;
pub mod scalable;
pub mod vegas;
pub mod westwood;
pub mod yeah;

use crate::time::Ns;

/// What a hook may change: the congestion window and slow-start threshold (and, for a module
/// that owns cwnd, a request to mark the connection application-limited).
#[derive(Clone, Debug)]
pub struct Window {
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Slow-start threshold, bytes.
    pub ssthresh: u64,
    /// Set by a module to mark the connection application-limited with this many packets in
    /// flight (BBR's PROBE_RTT writes `tp->app_limited`); the stack takes it after the hook.
    pub app_limited_request: Option<u64>,
}

impl Window {
    /// Whether the connection is in slow start: cwnd < ssthresh (RFC 5681 §3.1, Linux
    /// `tcp_in_slow_start`). FreeBSD's newreno also slow-starts at cwnd == ssthresh; that edge
    /// belongs to its own module.
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }
}

/// The connection as a hook sees it, read-only (FreeBSD `cc_var` / ns-3 `TcpSocketState`
/// without the window).
#[derive(Clone, Debug)]
pub struct CcView {
    /// Sender maximum segment size, bytes.
    pub mss: u64,
    /// Initial window, bytes (used by `after_idle`).
    pub iw: u64,
    /// Bytes newly acknowledged (cumulatively) by the ACK being processed.
    pub bytes_this_ack: u64,
    /// Bytes in flight (RFC 6675 pipe) when the hook runs.
    pub flight: u64,
    /// Whether the last send opportunity was limited by cwnd (FreeBSD `CCF_CWND_LIMITED`).
    pub cwnd_limited: bool,
    /// Whether the connection is in loss recovery (FreeBSD `IN_RECOVERY`).
    pub in_recovery: bool,
    /// Smoothed RTT, ns (0 before the first sample).
    pub srtt_ns: Ns,
    /// Smallest RTT seen, ns (0 before the first sample).
    pub min_rtt_ns: Ns,
    /// Current simulated time.
    pub now: Ns,
    /// Oldest unacknowledged byte.
    pub snd_una: u64,
    /// Next new byte to send.
    pub snd_nxt: u64,
    /// The stack's pacing rate, bytes/s (0 if it has none yet); Linux's HyStart reads it.
    pub pacing_rate_bytes: u64,
    /// Peer's advertised window, bytes (FreeBSD's RTO ssthresh reads it).
    pub snd_wnd: u64,
    /// Whether the sender is resending after a retransmission timeout (FreeBSD's ABC tests
    /// snd_nxt != snd_max for this).
    pub after_rto: bool,
    /// RTT samples taken so far (FreeBSD `t_rttupdated`).
    pub rtt_samples: u64,
    /// Linux's congestion-avoidance state (`icsk_ca_state`); the Linux stack keeps it current.
    pub ca_state: CaState,
    /// Packets delivered (acked or SACKed) so far (Linux `tp->delivered`).
    pub delivered_pkts: u64,
    /// Packets marked lost so far (Linux `tp->lost`).
    pub lost_pkts: u64,
    /// When the delivered count last grew (Linux `tp->delivered_mstamp`).
    pub delivered_mstamp_ns: Ns,
    /// When the paced sender may send next (Linux `tp->tcp_wstamp_ns`, the earliest departure).
    pub next_send_ns: Ns,
    /// A per-connection random value from the run's seeded generator (the kernel's prandom).
    pub random: u64,
    /// Whether the ACK being processed carries ECE (RFC 3168; Linux FLAG_ECE).
    pub ece: bool,
    /// Bytes the ACK being processed newly acknowledged or SACKed (set before `in_ack_event`).
    pub delivered_bytes_this_ack: u64,
    /// ACKs the call stands for (FreeBSD `ccv->nsegs`): 1, or a compressed batch's entries
    /// (rack.c rack_do_compressed_ack_processing()); FreeBSD's ABC caps growth at nsegs x
    /// abc_l_var segments.
    pub nsegs: u64,
}

/// A stored view and window, for calling hooks without a connection (the modules' tests, the CPU
/// measurement); the view's fields read through `CcVars` itself. The stacks build each hook's
/// view from the connection instead (`tcp::sender::Conn::view`).
#[derive(Clone, Debug)]
pub struct CcVars {
    /// What hooks read.
    pub view: CcView,
    /// What hooks may change.
    pub win: Window,
}

impl std::ops::Deref for CcVars {
    type Target = CcView;
    fn deref(&self) -> &CcView {
        &self.view
    }
}

impl std::ops::DerefMut for CcVars {
    fn deref_mut(&mut self) -> &mut CcView {
        &mut self.view
    }
}

/// Linux's congestion-avoidance states (include/net/tcp.h `enum tcp_ca_state`), ordered as the
/// kernel's values are (BBR compares them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum CaState {
    /// Nothing suspicious.
    #[default]
    Open,
    /// Duplicate ACKs or SACKs seen, recovery not (yet) entered.
    Disorder,
    /// Window reduced for ECN or local congestion.
    Cwr,
    /// Fast recovery.
    Recovery,
    /// After a retransmission timeout.
    Loss,
}

/// One delivery-rate sample (Linux `struct rate_sample`, net/ipv4/tcp_rate.c), in packets and
/// microseconds as the kernel keeps it.
#[derive(Clone, Copy, Debug, Default)]
pub struct RateSample {
    /// `tp->delivered` when the sampled packet was sent.
    pub prior_delivered: u64,
    /// Packets delivered over the interval; negative when there is no sample.
    pub delivered: i64,
    /// The interval, µs: max(send interval, ACK interval); negative when there is no sample.
    pub interval_us: i64,
    /// RTT of the most recently sent packet this ACK delivered, µs; negative when none.
    pub rtt_us: i64,
    /// Packets newly marked lost by this ACK.
    pub losses: u64,
    /// Packets newly acked or SACKed by this ACK.
    pub acked_sacked: u64,
    /// Packets in flight before this ACK.
    pub prior_in_flight: u64,
    /// Whether the sample was taken while application-limited.
    pub is_app_limited: bool,
}

impl CcVars {
    /// Fresh variables for a connection with this MSS and initial window.
    pub fn new(mss: u64, iw: u64) -> Self {
        CcVars {
            win: Window {
                cwnd: iw,
                ssthresh: u64::MAX / 4,
                app_limited_request: None,
            },
            view: CcView {
                mss,
                iw,
                bytes_this_ack: 0,
                flight: 0,
                cwnd_limited: false,
                in_recovery: false,
                srtt_ns: 0,
                min_rtt_ns: 0,
                now: 0,
                snd_una: 0,
                snd_nxt: 0,
                pacing_rate_bytes: 0,
                snd_wnd: 0,
                after_rto: false,
                rtt_samples: 0,
                ca_state: CaState::Open,
                delivered_pkts: 0,
                lost_pkts: 0,
                delivered_mstamp_ns: 0,
                next_send_ns: 0,
                random: 0,
                ece: false,
                delivered_bytes_this_ack: 0,
                nsegs: 1,
            },
        }
    }

    /// Whether the connection is in slow start (see [`Window::in_slow_start`]).
    pub fn in_slow_start(&self) -> bool {
        self.win.in_slow_start()
    }
}

/// Kind of ACK for `ack_received` (FreeBSD `CC_ACK`, `CC_DUPACK`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckKind {
    /// An ACK that advanced snd_una.
    Ack,
    /// A duplicate ACK.
    DupAck,
}

/// Congestion signals for `cong_signal` (FreeBSD `CC_NDUPACK`, `CC_RTO`, `CC_RTO_ERR`, `CC_ECN`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CongSignal {
    /// Loss detected by duplicate ACKs / SACK: fast retransmit and recovery begin.
    NDupAck,
    /// Retransmission timeout.
    Rto,
    /// The last RTO was spurious (undo).
    RtoErr,
    /// ECN echo.
    Ecn,
}

/// A congestion-control algorithm: the cc(4) hooks every stack calls ([`CcHooks`]) and Linux's
/// tcp_congestion_ops hooks that have no cc(4) counterpart ([`LinuxCcOps`]). Implemented for
/// every type that has both.
pub trait CongestionControl: CcHooks + LinuxCcOps {}

impl<T: CcHooks + LinuxCcOps + ?Sized> CongestionControl for T {}

/// FreeBSD's cc(4) hooks (`struct cc_algo`). Defaults are no-ops. Each hook reads the connection
/// through `v` and may change only `win` (cwnd, ssthresh, and BBR's `app_limited_request`).
pub trait CcHooks {
    /// The registry name.
    fn name(&self) -> &'static str;
    /// Once, when the connection is established.
    fn conn_init(&mut self, _v: &CcView, _win: &mut Window) {}
    /// For each ACK outside loss recovery (FreeBSD calls `cc_ack_received` only when not
    /// `IN_RECOVERY`; Linux calls `cong_avoid` only when `tcp_may_raise_cwnd`).
    fn ack_received(&mut self, _v: &CcView, _win: &mut Window, _kind: AckKind) {}
    /// On a congestion signal. For `NDupAck` the algorithm sets ssthresh; the stack then sets cwnd
    /// according to its recovery scheme. For `Rto` the stack sets cwnd = 1 MSS afterwards
    /// (RFC 5681 §3.1 loss window; FreeBSD `cc_cong_signal` CC_RTO).
    fn cong_signal(&mut self, _v: &CcView, _win: &mut Window, _sig: CongSignal) {}
    /// When fast recovery ends (full ACK, RFC 6582 §3.2 step 3).
    fn post_recovery(&mut self, _v: &CcView, _win: &mut Window) {}
    /// When sending resumes after an idle period longer than one RTO (RFC 5681 §4.1).
    fn after_idle(&mut self, v: &CcView, win: &mut Window) {
        newreno::after_idle(v, win);
    }
    /// For each valid RTT sample (Linux pkts_acked; HyStart may set ssthresh here).
    fn rtt_sample(&mut self, _v: &CcView, _win: &mut Window, _rtt_ns: Ns) {}
    /// When a new round (one window of data) begins.
    fn new_round(&mut self, _v: &CcView, _win: &mut Window) {}
    /// The rate the algorithm wants the stack to pace at, if any, in bit/s.
    fn pacing_rate_bps(&self, _v: &CcView, _win: &Window) -> Option<u64> {
        None
    }
}

/// Linux's tcp_congestion_ops hooks that have no cc(4) counterpart; the Linux stack calls them
/// where net/ipv4/tcp_input.c does (the RFC 6675 intake shared with the rfc and freebsd-rack
/// stacks calls `in_ack_event` and `pkts_acked` too; FreeBSD's modules leave them as defaults).
/// Defaults are no-ops; a module without Linux hooks implements it empty.
pub trait LinuxCcOps: CcHooks {
    /// Linux `set_state`: the stack is about to move to `new` (tcp_set_ca_state()).
    fn set_state(&mut self, _v: &CcView, _win: &mut Window, _new: CaState) {}
    /// Linux `pkts_acked` (tcp_clean_rtx_queue()): after an ACK that acknowledged `pkts` packets,
    /// with its RTT sample if it had a valid one. By default, the sample goes to `rtt_sample`.
    fn pkts_acked(&mut self, v: &CcView, win: &mut Window, _pkts: u32, rtt_ns: Option<Ns>) {
        if let Some(r) = rtt_ns {
            self.rtt_sample(v, win, r);
        }
    }
    /// Linux `in_ack_event` (tcp_in_ack_event()): every ACK; `slow_path` is CA_ACK_SLOWPATH
    /// (the ACK carried SACK blocks or did not advance snd_una).
    fn in_ack_event(&mut self, _v: &CcView, _win: &mut Window, _slow_path: bool) {}
    /// Whether the algorithm sets cwnd itself on every ACK (Linux `cong_control`, as BBR): the
    /// stack then calls `cong_control` instead of `ack_received` and its own PRR.
    fn owns_cwnd(&self) -> bool {
        false
    }
    /// Linux `cong_control` (tcp_cong_control()), with the ACK's delivery-rate sample.
    fn cong_control(&mut self, _v: &CcView, _win: &mut Window, _rs: &RateSample) {}
    /// Whether the stack must pace even without fq (Linux `sk_pacing_status` =
    /// SK_PACING_NEEDED, set by bbr_init()).
    fn needs_pacing(&self) -> bool {
        false
    }
}

/// Names the registry knows, for error messages and the Python config.
pub const ALGORITHMS: &[&str] = &[
    "newreno",
    "cubic",
    "cubic-rfc9438",
    "bic",
    "htcp",
    "vegas",
    "westwood",
    "yeah",
    "scalable",
    "highspeed",
    "bbr",
    "dctcp",
];

/// Names a stack family offers: those the registry builds for it (`reno` is accepted too, as
/// Linux's name for newreno). Linux's net/ipv4 modules only on `linux`; FreeBSD's cc_htcp on
/// the FreeBSD stacks.
pub fn algorithms_for(family: Family) -> Vec<&'static str> {
    ALGORITHMS
        .iter()
        .copied()
        .filter(|a| build(a, family).is_some())
        .collect()
}

/// Which family of implementations a stack uses for a CC name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// The RFCs' algorithms (RFC 5681/3465 NewReno, RFC 9438 CUBIC).
    Rfc,
    /// Linux's modules: tcp_cong.c reno, tcp_cubic.c.
    Linux,
    /// FreeBSD's cc(4) modules: cc_newreno.c (with cc.c), cc_cubic.c.
    FreeBsd,
}

/// Build an algorithm by registry name for a stack family (`reno` is Linux's name for newreno;
/// `cubic-rfc9438` is the RFC's CUBIC on any stack), as a trait object.
pub fn build_boxed(name: &str, family: Family) -> Option<Box<dyn CongestionControl>> {
    #[cfg(not(feature = "static-cc"))]
    return build(name, family);
    #[cfg(feature = "static-cc")]
    return build(name, family).map(|c| Box::new(c) as Box<dyn CongestionControl>);
}

/// How a sender holds its algorithm: a trait object called through its vtable (the default, as
/// FreeBSD's cc(4) calls its modules through function pointers), or, built with the `static-cc`
/// feature, an enum of the concrete modules matched in place (the modCC study's build without
/// the modular hooks; bench/dispatch.sh compares the two).
#[cfg(not(feature = "static-cc"))]
pub type Cc = Box<dyn CongestionControl>;
/// See the default build's `Cc`.
#[cfg(feature = "static-cc")]
pub type Cc = dispatch::StaticCc;

/// Build the sender's algorithm (see `build_boxed`).
pub fn build(name: &str, family: Family) -> Option<Cc> {
    macro_rules! make {
        ($variant:ident, $e:expr) => {{
            #[cfg(not(feature = "static-cc"))]
            let c: Cc = Box::new($e);
            #[cfg(feature = "static-cc")]
            let c: Cc = dispatch::StaticCc::$variant($e);
            Some(c)
        }};
    }
    match (name, family) {
        ("newreno" | "reno", Family::Rfc) => make!(NewReno, newreno::NewReno::default()),
        ("newreno" | "reno", Family::Linux) => make!(LinuxReno, linux::LinuxReno::default()),
        ("cubic", Family::Rfc) | ("cubic-rfc9438", _) => make!(Cubic, cubic::Cubic::default()),
        ("cubic", Family::Linux) => make!(LinuxCubic, linux::LinuxCubic::default()),
        ("newreno" | "reno", Family::FreeBsd) => {
            make!(FreeBsdNewReno, freebsd::FreeBsdNewReno::default())
        }
        ("cubic", Family::FreeBsd) => make!(FreeBsdCubic, freebsd::FreeBsdCubic::default()),
        ("bic", Family::Linux) => make!(Bic, bic::Bic::default()),
        ("htcp", Family::Linux) => make!(Htcp, htcp::Htcp::default()),
        ("vegas", Family::Linux) => make!(Vegas, vegas::Vegas::default()),
        ("westwood", Family::Linux) => make!(Westwood, westwood::Westwood::default()),
        ("yeah", Family::Linux) => make!(Yeah, yeah::Yeah::default()),
        ("scalable", Family::Linux) => make!(Scalable, scalable::Scalable::default()),
        ("highspeed", Family::Linux) => make!(HighSpeed, highspeed::HighSpeed::default()),
        ("htcp", Family::FreeBsd) => {
            make!(FreeBsdHtcp, freebsd_htcp::FreeBsdHtcp::default())
        }
        ("bbr", Family::Linux) => make!(Bbr, bbr::Bbr::default()),
        ("dctcp", Family::Linux) => make!(Dctcp, dctcp::Dctcp::default()),
        ("dctcp", Family::FreeBsd) => {
            make!(FreeBsdDctcp, freebsd_dctcp::FreeBsdDctcp::default())
        }
        _ => None,
    }
}

/// A module from outside the registry (a user-written algorithm) as the sender holds one.
pub fn external(m: Box<dyn CongestionControl>) -> Cc {
    #[cfg(not(feature = "static-cc"))]
    return m;
    #[cfg(feature = "static-cc")]
    return dispatch::StaticCc::External(m);
}

/// `cc` with its hooks marked for CPU sampling (`[measure] cpu`).
pub fn marked(cc: Cc) -> Cc {
    #[cfg(not(feature = "static-cc"))]
    return Box::new(marked::MarkedCc::new(cc));
    #[cfg(feature = "static-cc")]
    return dispatch::StaticCc::Marked(Box::new(marked::MarkedCc::new(Box::new(cc))));
}

#[cfg(feature = "static-cc")]
pub mod dispatch {
    //! Enum dispatch of the congestion-control modules (the `static-cc` build).
    use super::*;

    /// Every module, matched in place of a vtable call.
    #[allow(missing_docs)]
    pub enum StaticCc {
        NewReno(newreno::NewReno),
        Cubic(cubic::Cubic),
        LinuxReno(linux::LinuxReno),
        LinuxCubic(linux::LinuxCubic),
        FreeBsdNewReno(freebsd::FreeBsdNewReno),
        FreeBsdCubic(freebsd::FreeBsdCubic),
        Bic(bic::Bic),
        Htcp(htcp::Htcp),
        Vegas(vegas::Vegas),
        Westwood(westwood::Westwood),
        Yeah(yeah::Yeah),
        Scalable(scalable::Scalable),
        HighSpeed(highspeed::HighSpeed),
        FreeBsdHtcp(freebsd_htcp::FreeBsdHtcp),
        Bbr(bbr::Bbr),
        Dctcp(dctcp::Dctcp),
        FreeBsdDctcp(freebsd_dctcp::FreeBsdDctcp),
        Marked(Box<marked::MarkedCc>),
        External(Box<dyn CongestionControl>),
    }

    macro_rules! each {
        ($self:ident, $c:ident => $call:expr) => {
            match $self {
                StaticCc::NewReno($c) => $call,
                StaticCc::Cubic($c) => $call,
                StaticCc::LinuxReno($c) => $call,
                StaticCc::LinuxCubic($c) => $call,
                StaticCc::FreeBsdNewReno($c) => $call,
                StaticCc::FreeBsdCubic($c) => $call,
                StaticCc::Bic($c) => $call,
                StaticCc::Htcp($c) => $call,
                StaticCc::Vegas($c) => $call,
                StaticCc::Westwood($c) => $call,
                StaticCc::Yeah($c) => $call,
                StaticCc::Scalable($c) => $call,
                StaticCc::HighSpeed($c) => $call,
                StaticCc::FreeBsdHtcp($c) => $call,
                StaticCc::Bbr($c) => $call,
                StaticCc::Dctcp($c) => $call,
                StaticCc::FreeBsdDctcp($c) => $call,
                StaticCc::Marked($c) => $call,
                StaticCc::External($c) => $call,
            }
        };
    }

    impl CcHooks for StaticCc {
        #[inline]
        fn name(&self) -> &'static str {
            each!(self, c => c.name())
        }
        #[inline]
        fn conn_init(&mut self, v: &CcView, win: &mut Window) {
            each!(self, c => c.conn_init(v, win))
        }
        #[inline]
        fn ack_received(&mut self, v: &CcView, win: &mut Window, kind: AckKind) {
            each!(self, c => c.ack_received(v, win, kind))
        }
        #[inline]
        fn cong_signal(&mut self, v: &CcView, win: &mut Window, sig: CongSignal) {
            each!(self, c => c.cong_signal(v, win, sig))
        }
        #[inline]
        fn post_recovery(&mut self, v: &CcView, win: &mut Window) {
            each!(self, c => c.post_recovery(v, win))
        }
        #[inline]
        fn after_idle(&mut self, v: &CcView, win: &mut Window) {
            each!(self, c => c.after_idle(v, win))
        }
        #[inline]
        fn rtt_sample(&mut self, v: &CcView, win: &mut Window, rtt_ns: Ns) {
            each!(self, c => c.rtt_sample(v, win, rtt_ns))
        }
        #[inline]
        fn new_round(&mut self, v: &CcView, win: &mut Window) {
            each!(self, c => c.new_round(v, win))
        }
        #[inline]
        fn pacing_rate_bps(&self, v: &CcView, win: &Window) -> Option<u64> {
            each!(self, c => c.pacing_rate_bps(v, win))
        }
    }

    impl LinuxCcOps for StaticCc {
        #[inline]
        fn set_state(&mut self, v: &CcView, win: &mut Window, new: CaState) {
            each!(self, c => c.set_state(v, win, new))
        }
        #[inline]
        fn pkts_acked(&mut self, v: &CcView, win: &mut Window, pkts: u32, rtt_ns: Option<Ns>) {
            each!(self, c => c.pkts_acked(v, win, pkts, rtt_ns))
        }
        #[inline]
        fn in_ack_event(&mut self, v: &CcView, win: &mut Window, slow_path: bool) {
            each!(self, c => c.in_ack_event(v, win, slow_path))
        }
        #[inline]
        fn owns_cwnd(&self) -> bool {
            each!(self, c => c.owns_cwnd())
        }
        #[inline]
        fn cong_control(&mut self, v: &CcView, win: &mut Window, rs: &RateSample) {
            each!(self, c => c.cong_control(v, win, rs))
        }
        #[inline]
        fn needs_pacing(&self) -> bool {
            each!(self, c => c.needs_pacing())
        }
    }
}

//! The TCP sender: a connection core ([`core::Conn`]) every stack shares, and one component per
//! TCP stack (`rfc`, `linux`, `freebsd`, `freebsd_rack`) that owns its state and its ACK, output
//! and timer handling, dispatched statically through [`Stack`]; the stacks compose the
//! loss-detection components of [`detection`] and the recovery (window reduction) components
//! of [`reduction`].

// The enum-dispatch build calls the hooks on a concrete type, which needs the trait in scope.
#[cfg_attr(not(feature = "static-cc"), allow(unused_imports))]
use crate::cc::CcHooks;
use crate::config::FlowConfig;
use crate::net::packet::Packet;
use crate::stack::{Recovery, StackProfile};
use crate::time::Ns;
use std::rc::Rc;

mod ack;
mod app;
mod client;
mod conn_cc;
mod connect;
mod core;
pub(crate) mod detection;
mod ecn;
pub mod ecn_state;
mod freebsd;
mod freebsd_rack;
mod linux;
pub mod reduction;
mod rfc;
mod sockbuf;
mod transitions;

pub use self::core::{Conn, LinuxDrill};

/// Loss-recovery state, the phase a record's `state` column reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Normal transmission.
    Open,
    /// Fast recovery until `recover` is cumulatively acknowledged (RFC 6675 RecoveryPoint).
    Recovery {
        /// RecoveryPoint: snd_nxt at entry.
        recover: u64,
    },
    /// After a retransmission timeout until `recover` is acknowledged.
    Loss {
        /// snd_nxt when the timer fired.
        recover: u64,
    },
}

impl State {
    /// Numeric code in records: 0 open, 1 fast recovery, 2 loss (after RTO).
    pub fn code(self) -> i64 {
        match self {
            State::Open => 0,
            State::Recovery { .. } => 1,
            State::Loss { .. } => 2,
        }
    }
}

/// Something a sender did that the trace should show at its exact time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SenderEvent {
    /// Fast recovery began.
    RecoveryStart,
    /// Fast recovery ended with a full ACK.
    RecoveryEnd,
    /// The retransmission timer fired.
    Rto,
    /// Recovery after an RTO ended.
    LossEnd,
    /// The application's data is all acknowledged.
    Complete,
    /// A tail loss probe was sent.
    Tlp,
    /// The tail loss probe's data was acknowledged.
    TlpEnd,
    /// The SYN-ACK arrived: the connection is established.
    Connected,
    /// The SYN was retransmitted.
    SynRetransmit,
    /// The connection attempt was given up (no SYN-ACK).
    ConnectFailed,
}

impl SenderEvent {
    /// Every event, in code order.
    pub const ALL: [SenderEvent; 10] = [
        SenderEvent::RecoveryStart,
        SenderEvent::RecoveryEnd,
        SenderEvent::Rto,
        SenderEvent::LossEnd,
        SenderEvent::Complete,
        SenderEvent::Tlp,
        SenderEvent::TlpEnd,
        SenderEvent::Connected,
        SenderEvent::SynRetransmit,
        SenderEvent::ConnectFailed,
    ];

    /// The event's name in the records contract.
    pub fn name(self) -> &'static str {
        match self {
            SenderEvent::RecoveryStart => "recovery_start",
            SenderEvent::RecoveryEnd => "recovery_end",
            SenderEvent::Rto => "rto",
            SenderEvent::LossEnd => "loss_end",
            SenderEvent::Complete => "complete",
            SenderEvent::Tlp => "tlp",
            SenderEvent::TlpEnd => "tlp_end",
            SenderEvent::Connected => "connected",
            SenderEvent::SynRetransmit => "syn_retransmit",
            SenderEvent::ConnectFailed => "connect_failed",
        }
    }

    /// Numeric code in the events table.
    pub fn code(self) -> i64 {
        match self {
            SenderEvent::RecoveryStart => 1,
            SenderEvent::RecoveryEnd => 2,
            SenderEvent::Rto => 3,
            SenderEvent::LossEnd => 4,
            SenderEvent::Complete => 5,
            SenderEvent::Tlp => 6,
            SenderEvent::TlpEnd => 7,
            SenderEvent::Connected => 8,
            SenderEvent::SynRetransmit => 9,
            SenderEvent::ConnectFailed => 10,
        }
    }
}

/// The sender's state at the instant of an event.
#[derive(Clone, Copy, Debug)]
pub struct Snapshot {
    /// cwnd, bytes.
    pub cwnd: u64,
    /// ssthresh, bytes.
    pub ssthresh: u64,
    /// RFC 6675 pipe, bytes.
    pub pipe: u64,
    /// snd_nxt - snd_una (FlightSize, RFC 5681), bytes.
    pub outstanding: u64,
    /// Segments retransmitted so far.
    pub retrans_segs: u64,
}

/// What one output call handed the NIC at once: a TSO chunk of new data (several segments,
/// split by the NIC into back-to-back packets), a single segment, or a retransmission. This is
/// what SIFTR2 (at the IP hook) and tcpdump on the sender see as one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Send {
    /// Time.
    pub t: Ns,
    /// First byte.
    pub seq: u64,
    /// Bytes.
    pub bytes: u64,
    /// Segments (packets on the wire).
    pub segments: u32,
    /// Whether it is a retransmission.
    pub retx: bool,
    /// Loss-recovery state when sent.
    pub state: State,
}

/// Each stack's own component, matched in place (no vtable): adding a stack is a file with its
/// struct and a variant here, chosen by [`Stack::for_profile`]. `repr(u8)`: the tag first, then
/// the component, whose per-ACK state comes first (see `TcpSender`).
#[repr(u8)]
enum Stack {
    Rfc(rfc::RfcStack),
    Linux(linux::LinuxStack),
    FreeBsd(freebsd::FreeBsdStack),
    FreeBsdRack(freebsd_rack::RackStack),
}

/// Call the same method on whichever stack the sender runs.
macro_rules! each_stack {
    ($stack:expr, $s:ident => $call:expr) => {
        match $stack {
            Stack::Rfc($s) => $call,
            Stack::Linux($s) => $call,
            Stack::FreeBsd($s) => $call,
            Stack::FreeBsdRack($s) => $call,
        }
    };
}

impl Stack {
    /// The registry: the stack component a resolved profile runs.
    fn for_profile(profile: &StackProfile) -> Self {
        match profile.recovery {
            Recovery::Rfc6675 => Stack::Rfc(rfc::RfcStack::default()),
            Recovery::LinuxPrr(v) => Stack::Linux(linux::LinuxStack::new(v)),
            Recovery::FreeBsd(k) => Stack::FreeBsd(freebsd::FreeBsdStack::new(k)),
            Recovery::FreeBsdRack(v) => Stack::FreeBsdRack(freebsd_rack::RackStack::new(v)),
        }
    }
}

/// One TCP sender: the connection core and its stack. The core's public fields (`v`, `snd_una`,
/// `events`, ...) read through the sender.
///
/// Aligned to a cache line, the core first, whose hot fields come last ([`Conn`]), then the
/// stack's state, whose per-ACK part comes first (the Linux stack's RACK and TLP state before its
/// PRR and rescue state, used only in recovery): what an ACK touches is one run of cache lines.
#[repr(C, align(64))]
pub struct TcpSender {
    core: Conn,
    stack: Stack,
}

impl std::ops::Deref for TcpSender {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        &self.core
    }
}

impl std::ops::DerefMut for TcpSender {
    fn deref_mut(&mut self) -> &mut Conn {
        &mut self.core
    }
}

impl TcpSender {
    /// A sender for `f` with its resolved stack configuration ([`crate::stack::resolve`], shared
    /// by the flows that resolve to the same one: [`crate::stack::Shared`]) and CC module.
    pub fn new(flow: u32, f: &FlowConfig, profile: Rc<StackProfile>, cc: crate::cc::Cc) -> Self {
        let stack = Stack::for_profile(&profile);
        TcpSender {
            core: Conn::new(flow, f, profile, cc),
            stack,
        }
    }

    /// Send by the flow's own route: `key` is its routing key (`net::topology::Routes::add_path`).
    pub fn route_via(&mut self, key: u32) {
        self.core.dst = key;
    }

    /// The routing key the flow's packets carry (its receiver's node, or its own route's key).
    pub fn route_key(&self) -> u32 {
        self.core.dst
    }

    /// The congestion-control module's name.
    pub fn cc_name(&self) -> &'static str {
        self.core.cc.name()
    }

    /// Linux's tp->reordering, for the linux stack (tcp_info's tcpi_reordering).
    pub fn linux_reordering(&self) -> Option<u32> {
        match &self.stack {
            Stack::Linux(s) => Some(s.reordering()),
            _ => None,
        }
    }

    /// The scoreboard (for invariant checks).
    pub fn scoreboard(&self) -> &crate::tcp::scoreboard::Scoreboard {
        &self.core.sb
    }

    /// The earliest time the sender wants to be woken (RTO, pacing, small-queue release, the
    /// stack's own timers).
    pub fn timer_deadline(&self) -> Option<Ns> {
        if !self.core.started {
            return self.core.hs.deadline();
        }
        each_stack!(&self.stack, s => s.timer_deadline(&self.core))
    }

    /// The flow's start time: connect() (a SYN, `Connect::Handshake`) or, on a connection
    /// established without one, the application's first write.
    pub fn start(&mut self, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        if self.core.hs.mode == crate::config::Connect::Handshake {
            self.core.connect(now, out, next_id);
            return;
        }
        self.establish(now, out, next_id);
    }

    /// A SYN-ACK arrived: on the first one the application starts writing, unless it is held
    /// (`hold_app`).
    pub fn on_synack(&mut self, p: &Packet, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        if self.core.on_synack(p, now, out, next_id) && !self.core.hs.app_held {
            self.establish(now, out, next_id);
        }
    }

    /// The application will not write when the connection is established, only at `release`
    /// (iperf3's client, which writes from TEST_RUNNING on: `net::iperf3`).
    pub fn hold_app(&mut self) {
        self.core.hs.app_held = true;
    }

    /// A held application starts writing on the established connection (the congestion
    /// control's conn_init then, not at the SYN-ACK: an approximation, docs/models.md).
    pub fn release(&mut self, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        if self.core.hs.app_held && self.core.hs.established_ns.is_some() {
            self.core.hs.app_held = false;
            self.establish(now, out, next_id);
        }
    }

    /// The application starts on the established connection.
    fn establish(&mut self, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        self.core.start(now);
        let c = &mut self.core;
        match &mut self.stack {
            Stack::FreeBsd(s) => s.start(c, now, out, next_id),
            Stack::Rfc(s) => s.output(c, now, out, next_id),
            Stack::Linux(s) => s.output(c, now, out, next_id),
            Stack::FreeBsdRack(s) => s.output(c, now, out, next_id),
        }
    }

    /// The application wrote (tcp_usr_send() -> tcp_output(); the drill endpoint's write()): the
    /// FreeBSD default stack copies what fits into its send buffer, then sends (its
    /// start/app_write path, as after an ACK frees room); RACK likewise copies, then calls
    /// rack_output(), while a copy went in (sosend_generic()'s loop: each pr_send() may grow the
    /// buffer for the next copy); the other stacks send.
    pub fn app_wrote(&mut self, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        match &mut self.stack {
            Stack::FreeBsd(s) => s.start(&mut self.core, now, out, next_id),
            Stack::FreeBsdRack(s) => loop {
                let before = self.core.written;
                self.core.app_fill(now);
                if self.core.written == before {
                    return;
                }
                s.output(&mut self.core, now, out, next_id);
            },
            _ => self.output(now, out, next_id),
        }
    }

    /// Send whatever the windows allow.
    pub fn output(&mut self, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        let c = &mut self.core;
        each_stack!(&mut self.stack, s => s.output(c, now, out, next_id))
    }

    /// Process an ACK.
    pub fn on_ack(&mut self, p: &Packet, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        self.core.ecn_on_ack(p, now);
        let c = &mut self.core;
        each_stack!(&mut self.stack, s => s.on_ack(c, p, now, out, next_id))
    }

    /// A timer fired: the stack's timers (RTO, TLP, RACK), pacing or small-queue release.
    pub fn on_timer(&mut self, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        if !self.core.started {
            self.core.syn_timeout(now, out, next_id);
            return;
        }
        let c = &mut self.core;
        each_stack!(&mut self.stack, s => s.on_timer(c, now, out, next_id))
    }
}

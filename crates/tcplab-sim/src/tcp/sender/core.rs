//! The connection core every stack shares: sequence state, scoreboard, RTT/RTO estimator,
//! application model, the send path (`emit`) and the records a sender keeps.
//!
//! A stack (see [`super::Stack`]) owns its own state and decides when to send, recover and time
//! out; it reaches the connection only through this core, and the core never reads a stack's state.
//! Beside it: its CC variables (`conn_cc.rs`), its loss-recovery state transitions
//! (`transitions.rs`) and the application model (`app.rs`).

use super::conn_cc::ConnCc;
use super::detection::is_lost::freebsd_lost_bytes;
use super::{Send, SenderEvent, Snapshot, State};
use crate::cc::CcView;
// The enum-dispatch build calls the hooks on a concrete type, which needs the trait in scope.
#[cfg_attr(not(feature = "static-cc"), allow(unused_imports))]
use crate::cc::{CcHooks, LinuxCcOps};
use crate::config::FreeBsdVersion;
use crate::config::{AppConfig, FlowConfig};
use crate::net::packet::{header_bytes, Kind, Packet};
use crate::stack::{Recovery, SndbufPolicy, StackProfile};
use crate::tcp::rate::{RateState, RateTx};
use crate::tcp::rtt::RttEstimator;
use crate::tcp::scoreboard::Scoreboard;
use crate::time::{tx_time_ns, Ns};
use std::rc::Rc;

/// The shared part of one TCP sender.
///
/// The fields are in a fixed order (`repr(C)`), in two groups. With thousands of flows a sender
/// is rarely in cache when its next ACK comes, and every cache line an ACK touches is a miss; in
/// Rust's own order the fields one ACK reads were spread over nearly all of the struct. So what
/// the ACK path (intake, CC hooks, the output loop and `emit`) and the simulation's calls after
/// it (timer deadline, sampler row) read or write is together, last, and what only setup,
/// recovery, timeouts or the records read comes before it. `linux::tests::hot_fields_come_last`
/// holds the hot group, with the stack's state after it, to its lines. Within the hot group,
/// what the 1 ms sampler reads of a flow after its ACKs (`sim::sampler::flow_row`,
/// `done_from_ns`, lines evicted again by then) is adjacent: the RTT estimator's `srtt_ns` and
/// `rto_ns` (its last fields), the scalars below, the CC window (`v`'s first field).
#[repr(C)] // fields in this order: see above and the comments on the groups
pub struct Conn {
    // ---- Cold: connection setup, recovery, timeouts, delivery rates (read only by a module
    // that owns cwnd), and counters only the records read. First, so that the hot group and the
    // stack's state after the core make one run (see `TcpSender`). ----
    pub(super) rate: RateState,
    /// Connection setup (SYN_SENT until the SYN-ACK; `Connect::Established`: never).
    pub hs: super::client::Client,
    /// RecoveryPoint of the last recovery or RTO: no new reduction until it is passed
    /// (RFC 6582 §3.2 step 1, RFC 6675 §5 step 2).
    pub(super) recover_guard: Option<u64>,
    /// Segments and bytes sent while in fast recovery, over the connection's life; a recovery
    /// component counts its episode's sends (prr_out) from the values at its entry.
    pub(super) recovery_out_segs: u64,
    pub(super) recovery_out_bytes: u64,
    /// Retransmission timeouts.
    pub rto_count: u64,
    /// Fast recoveries entered.
    pub recoveries: u64,
    /// The next send starts a TSO burst of its own in the records even when contiguous with the
    /// last one (FreeBSD with the NIC's fragment limits: a cut burst ends one tcp_output() pass).
    pub(super) burst_break: bool,
    /// What the drill endpoint sets in a linux sender (None in a simulation; boxed to keep the
    /// hot group within its cache lines).
    pub linux_drill: Option<Box<LinuxDrill>>,
    /// Linux's RTO estimator state (the linux stack; None: RFC 6298's in `rtt`). Cold: read
    /// with an RTT sample and when the RTO is armed.
    pub(super) linux_rto: Option<crate::tcp::rtt::LinuxRto>,
    // ---- Hot: read or written on every ACK or every segment sent. ----
    /// RTT estimator and RTO.
    pub rtt: RttEstimator,
    // What the sampler reads, from here to `v.win`:
    /// Oldest unacknowledged byte.
    pub snd_una: u64,
    /// Next new byte to send (= snd_max: retransmissions come from the scoreboard, never by
    /// rewinding snd_nxt).
    pub snd_nxt: u64,
    /// Bytes the application has written into the socket.
    pub written: u64,
    /// Sender maximum segment size, bytes.
    pub mss: u64,
    /// When the application starts.
    pub start_ns: Ns,
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: u64,
    /// Segments retransmitted.
    pub retrans_segs: u64,
    /// Loss-recovery state.
    pub state: State,
    pub(super) app: AppConfig,
    /// When all of a fixed-size transfer was acknowledged.
    pub completed_at: Option<Ns>,
    /// The stack's resolved configuration ([`crate::stack::resolve`]), immutable, shared by the
    /// flows with the same one.
    pub(super) profile: Rc<StackProfile>,
    /// Whether the application has started.
    pub started: bool,
    pub(super) timestamps: bool,
    pub(super) sack: bool,
    /// Whether to keep `sends` (off by default: a row per ACK-clocked send is a lot of rows).
    pub record_sends: bool,
    /// Whether the last output stopped on the small-queue limit (Linux TSQ_THROTTLED).
    pub tsq_throttled: bool,
    /// Whether the CC sets cwnd itself on every ACK (Linux `cong_control`: BBR); such a module
    /// also gets delivery-rate samples, tracked in `rate`.
    pub(super) owns_cwnd: bool,
    /// Whether the CC asks the stack to pace (Linux SK_PACING_NEEDED: BBR).
    pub(super) cc_paces: bool,
    /// The CC window (read by the sampler) and the inputs the stack sets for the hooks.
    pub v: ConnCc,
    /// Peer's advertised window, bytes.
    pub snd_wnd: u64,
    /// The send buffer's current size (grows with cwnd when the stack autotunes it).
    pub(super) sndbuf_now: u64,
    pub(super) sndbuf: u64,
    pub(super) round_end: u64,
    pub(super) pace_next: Ns,
    /// Linux's sk_pacing_rate as tcp_update_pacing_rate() last set it, bytes/s (0: not yet):
    /// the end of each ACK's tcp_cong_control(), so a cwnd changed between ACKs (an RTO, the
    /// restart window) changes it only at the next ACK.
    pub(super) pacing_rate_set: u64,
    /// Bytes this host has queued below TCP (its NIC FIFO), set by the simulation before each
    /// call into the sender.
    pub nic_backlog: u64,
    pub(super) rto_deadline: Option<Ns>,
    pub(super) last_send: Option<Ns>,
    /// When the NIC queue will have drained enough to send again (set by the simulation).
    pub tsq_wake: Option<Ns>,
    pub(super) cc: crate::cc::Cc,
    /// Flow index.
    pub flow: u32,
    pub(super) dst: u32,
    pub(super) dupacks: u32,
    /// The application's write size, bytes (32 bits: it fills the hole before `sb`).
    pub(super) write_bytes: u32,
    /// The scoreboard (its byte counters, which the sampler's `pipe` reads, first).
    pub(super) sb: Scoreboard,
    /// Events since the simulation last drained them, with the state at that instant (the
    /// simulation looks at it after every call into the sender).
    pub events: Vec<(Ns, SenderEvent, Snapshot)>,
    /// Sends since the simulation last drained them (looked at as `events` is).
    pub sends: Vec<Send>,
    /// ECN state (RFC 3168), inert when the connection did not negotiate ECN.
    pub ecn: super::ecn_state::EcnState,
}

/// The drill endpoint's linux stack in its sender (crates/tcplab-sim/src/drill_send.rs): what
/// Nagle's algorithm holds, and the skbs tcp_write_xmit() cuts its pieces from (`new_data_len()`).
#[derive(Clone, Debug, Default)]
pub struct LinuxDrill {
    /// New-data bytes the next output call may still send (tcp_push_one(): Linux's
    /// tcp_write_xmit() with push_one sends one skb and stops); None: no limit.
    pub xmit_budget: Option<u64>,
    /// tp->nonagle (TCP_NAGLE_OFF 1, _CORK 2, _PUSH 4; tcp_nagle_test()).
    pub nonagle: u8,
    /// tp->snd_sml: the end of the last sub-MSS segment of new data sent (tcp_minshall_update()).
    pub snd_sml: u64,
    /// Linux's write queue as skbs, lent by the drill endpoint for each call into the sender
    /// (`crate::drill_skb`): tcp_write_xmit()'s pieces are cut from it.
    pub skbs: Option<crate::drill_skb::SkbQueue>,
    /// Bytes of the current tcp_write_xmit() piece not yet sent as segments (0: the next
    /// segment of new data starts a piece).
    pub piece_left: u64,
    /// sysctl net.ipv4.tcp_min_tso_segs (tcp_tso_autosize()'s floor; the kernel's default 2).
    pub min_tso_segs: u64,
    /// The pass is a loss probe's (tcp_send_loss_probe(): `tcp_write_xmit(sk, mss, TCP_NAGLE_OFF,
    /// 2, GFP_ATOMIC)`, whose push_one 2 makes a zero cwnd quota one).
    pub loss_probe: bool,
    /// Ends of the application's MSG_EOR records, bytes: no segment of new data spans one.
    pub eor_marks: Vec<u64>,
    /// The MTU probe tcp_mtu_probe() builds now: the next new segment's length (crate::drill_mtu).
    pub probe_len: Option<u64>,
}

impl Conn {
    /// The core for `f` with its resolved stack configuration and CC module.
    pub fn new(flow: u32, f: &FlowConfig, profile: Rc<StackProfile>, cc: crate::cc::Cc) -> Self {
        let handshake = f.connect == crate::config::Connect::Handshake;
        // Established: the options both ends agree to. Handshake: the sender's own offer until
        // the SYN-ACK says what the receiver agreed to (`connect.rs`).
        let n = f.negotiated();
        let (mss, timestamps, sack, ecn) = if handshake {
            (f.mss as u64, f.timestamps, f.sack, false)
        } else {
            (n.mss as u64, n.timestamps, n.sack, n.ecn)
        };
        let rtt = Self::rtt_estimator(&profile);
        let linux_rto = matches!(profile.recovery, Recovery::LinuxPrr(_))
            .then(|| crate::tcp::rtt::LinuxRto::new(profile.hz, profile.jiffy_phase_ns));
        let sndbuf_now = Self::initial_sndbuf(f, &profile);
        Conn {
            hs: super::client::Client::new(
                f.connect,
                super::client::offer_bits(f.sack, f.timestamps, f.window_scaling),
                f.ecn,
                if handshake {
                    f.window_scaling
                } else {
                    n.window_scaling
                },
            ),
            flow,
            dst: f.dst,
            profile,
            v: ConnCc::new(f.iw_segments as u64 * mss),
            mss,
            timestamps,
            sack,
            app: f.app.clone(),
            write_bytes: f.write_bytes.clamp(1, u64::from(u32::MAX)) as u32,
            sndbuf: f.sndbuf_bytes,
            sndbuf_now,
            start_ns: f.start_ns,
            started: false,
            written: 0,
            snd_una: 0,
            snd_nxt: 0,
            // Established: until the first ACK, the window the receiver offered in its SYN-ACK.
            // SYN_SENT: none yet (FreeBSD's CC_RTO reads snd_wnd = 0 there).
            snd_wnd: if handshake { 0 } else { f.rcv_space_bytes() },
            // Delivery-rate snapshots only for a module that reads them (see `rate_snapshot`).
            sb: if cc.owns_cwnd() {
                Scoreboard::keeping_rates()
            } else {
                Scoreboard::default()
            },
            state: State::Open,
            recover_guard: None,
            dupacks: 0,
            rtt,
            rto_deadline: None,
            pace_next: 0,
            pacing_rate_set: 0,
            last_send: None,
            round_end: 0,
            bytes_sent: 0,
            retrans_segs: 0,
            recovery_out_segs: 0,
            recovery_out_bytes: 0,
            rto_count: 0,
            recoveries: 0,
            burst_break: false,
            linux_drill: None,
            linux_rto,
            completed_at: None,
            events: Vec::new(),
            record_sends: false,
            sends: Vec::new(),
            nic_backlog: 0,
            tsq_throttled: false,
            tsq_wake: None,
            owns_cwnd: cc.owns_cwnd(),
            cc_paces: cc.needs_pacing(),
            rate: RateState::default(),
            ecn: super::ecn_state::EcnState::new(ecn, f.ect1),
            cc,
        }
    }

    /// The RTT estimator with the stack's RTO bounds, clock and slop.
    fn rtt_estimator(profile: &StackProfile) -> RttEstimator {
        let mut rtt = RttEstimator::new(
            profile.initial_rto_ns,
            profile.min_rto_ns,
            profile.max_rto_ns,
            profile.clock_granularity_ns,
        );
        rtt.slop_ns = profile.rto_slop_ns;
        rtt
    }

    /// The send buffer at the start: an autotuned buffer starts at Linux tcp_wmem[1] / FreeBSD
    /// sendspace and grows from there.
    fn initial_sndbuf(f: &FlowConfig, profile: &StackProfile) -> u64 {
        let initial = f
            .sndbuf_initial_bytes
            .unwrap_or(profile.sndbuf_initial_bytes);
        if profile.sndbuf == SndbufPolicy::Fixed {
            f.sndbuf_bytes
        } else {
            f.sndbuf_bytes.min(initial)
        }
    }

    /// Options in use: (SACK, timestamps, window scaling as offered; the receiver's shift is its
    /// own).
    pub fn options(&self) -> (bool, bool, bool) {
        (self.sack, self.timestamps, self.hs.window_scaling())
    }

    pub(super) fn event(&mut self, now: Ns, e: SenderEvent) {
        let snap = Snapshot {
            cwnd: self.v.win.cwnd,
            ssthresh: self.v.win.ssthresh,
            pipe: self.pipe(),
            outstanding: self.snd_nxt - self.snd_una,
            retrans_segs: self.retrans_segs,
        };
        self.events.push((now, e, snap));
    }

    /// Largest TSO chunk of new data one output call hands the NIC: Linux sizes it to about 1 ms
    /// at the pacing rate, at least 2 segments (tcp_output.c tcp_tso_autosize(),
    /// sk_pacing_shift 10, tcp_min_tso_segs 2); otherwise the profile's maximum (64 KB).
    pub fn tso_chunk_limit(&self) -> u64 {
        if !self.profile.tso_autosize {
            return self.profile.tso_max_bytes;
        }
        // sk_setup_caps(): `sk->sk_gso_max_size -= (MAX_TCP_HEADER + 1);` (MAX_TCP_HEADER 320
        // on x86-64 distribution kernels: L1_CACHE_ALIGN(128 + MAX_HEADER 176)).
        let gso_max = self.profile.tso_max_bytes.saturating_sub(321).max(self.mss);
        let mut bytes = self.linux_pacing_rate_bytes() >> 10;
        // tcp_tso_autosize() (since 5.18): `r = tcp_min_rtt(tcp_sk(sk)) >>
        // sysctl_tcp_tso_rtt_log; if (r < BITS_PER_TYPE(sk->sk_gso_max_size)) bytes +=
        // sk->sk_gso_max_size >> r;`, tcp_tso_rtt_log 9: bigger chunks at small min RTT. No
        // sample yet is tcp_min_rtt() ~0U, nothing added.
        if self.rtt.min_rtt_ns > 0 {
            let r = (self.rtt.min_rtt_ns / crate::time::US) >> 9;
            if r < 32 {
                bytes += gso_max >> r;
            }
        }
        bytes.clamp(2 * self.mss, gso_max.max(2 * self.mss))
    }

    fn record_send(&mut self, now: Ns, seq: u64, len: u64, retx: bool, chunk_limit: u64) {
        // A pass boundary (FreeBSD's tso_len) applies to this segment whether or not a send is
        // on record before it.
        let pass_starts = std::mem::take(&mut self.burst_break);
        if let Some(last) = self.sends.last_mut() {
            // Data contiguous with the previous chunk of the same output call joins it (new data
            // always, retransmissions where the stack retransmits with TSO).
            let joins = retx == last.retx && (!retx || self.profile.retx_tso) && !pass_starts;
            if joins
                && last.t == now
                && last.seq + last.bytes == seq
                && last.bytes + len <= chunk_limit
            {
                last.bytes += len;
                last.segments += 1;
                return;
            }
        }
        self.sends.push(Send {
            t: now,
            seq,
            bytes: len,
            segments: 1,
            retx,
            state: self.state,
        });
    }

    /// Bytes in flight per RFC 6675 (pipe); in FreeBSD's fast recovery, its tcp_compute_pipe().
    pub fn pipe(&self) -> u64 {
        if matches!(self.profile.recovery, Recovery::FreeBsd(_))
            && matches!(self.state, State::Recovery { .. })
        {
            return self.fb_pipe();
        }
        self.sack_pipe()
    }

    /// RFC 6675 pipe from the scoreboard.
    pub(super) fn sack_pipe(&self) -> u64 {
        self.sb.pipe(self.snd_nxt - self.snd_una, self.mss)
    }

    /// tcp_compute_pipe() with net.inet.tcp.newsack. Version 2023 (tcp_input.c @ 2bae602e):
    /// snd_max - snd_una + sack_bytes_rexmit - sacked_bytes, so holes not yet retransmitted count
    /// as in flight. Versions 15.0-2024-10 (fel1x-developer/freebsd-src tcp_input.c @ 2d614aa2,
    /// review D39299, no clamp) and 15.0-2025 (nibanks/freebsd-src tcp_input.c @ 62d1e135,
    /// tcp_compute_pipe(): `pipe = tp->snd_max - tp->snd_una + tp->sackhint.sack_bytes_rexmit -
    /// tp->sackhint.sacked_bytes - tp->sackhint.lost_bytes; ... return (imax(pipe, 0));`): holes
    /// judged lost by IsLost ([`freebsd_lost_bytes`]) are not in flight.
    pub(super) fn fb_pipe(&self) -> u64 {
        let in_flight = self.snd_nxt - self.snd_una + self.sb.retrans_bytes;
        if self.fb_version().pipe_excludes_lost() {
            // t_maxseg is the MSS without options (1460 where segments carry 1448 and timestamps).
            let t_maxseg = self.mss + if self.timestamps { 12 } else { 0 };
            return in_flight
                .saturating_sub(self.sb.sacked_bytes + freebsd_lost_bytes(&self.sb, t_maxseg));
        }
        in_flight.saturating_sub(self.sb.sacked_bytes)
    }

    /// The FreeBSD default stack's source version (2023 for every other stack).
    pub(super) fn fb_version(&self) -> FreeBsdVersion {
        match self.profile.recovery {
            Recovery::FreeBsd(k) => k.version,
            _ => FreeBsdVersion::V2023,
        }
    }

    /// Whether the application has nothing more to send and everything is acknowledged.
    pub fn done(&self, now: Ns) -> bool {
        now >= self.done_from_ns()
    }

    /// From when `done` holds if nothing else happens to the connection: at once when it failed
    /// or its fixed-size transfer completed; for a time-limited application, at the end of its
    /// time once everything written is acknowledged; otherwise never (`Ns::MAX`).
    pub fn done_from_ns(&self) -> Ns {
        // A connection that failed never started (`connect.rs` ignores a SYN-ACK once it gave
        // up), so a started one need not read the handshake state, which is cold (the sampler
        // asks this after every ACK).
        if !self.started && self.hs.failed {
            return 0;
        }
        match self.app {
            AppConfig::Bytes { .. } if self.completed_at.is_some() => 0,
            AppConfig::Time { duration_ns } if self.started && self.snd_una == self.written => {
                self.start_ns + duration_ns
            }
            AppConfig::Bytes { .. } | AppConfig::Time { .. } => Ns::MAX,
        }
    }

    /// The view a CC hook is handed, built from the connection at the call: the fields that are
    /// connection state (MSS, RTT estimator, snd_una, snd_wnd) are read here; the rest are the
    /// inputs the stack sets for its hooks ([`super::conn_cc::CcInputs`]).
    pub(super) fn view(&self) -> CcView {
        let i = &self.v.inputs;
        CcView {
            // Connection state, read at the call.
            mss: self.mss,
            srtt_ns: self.rtt.srtt_ns,
            min_rtt_ns: self.rtt.min_rtt_ns,
            rtt_samples: self.rtt.samples,
            snd_una: self.snd_una,
            snd_wnd: self.snd_wnd,
            // Inputs the stack sets for its hooks.
            iw: i.iw,
            bytes_this_ack: i.bytes_this_ack,
            flight: i.flight,
            cwnd_limited: i.cwnd_limited,
            in_recovery: i.in_recovery,
            now: i.now,
            snd_nxt: i.snd_nxt,
            pacing_rate_bytes: i.pacing_rate_bytes,
            after_rto: i.after_rto,
            ca_state: i.ca_state,
            delivered_pkts: i.delivered_pkts,
            lost_pkts: i.lost_pkts,
            delivered_mstamp_ns: i.delivered_mstamp_ns,
            next_send_ns: i.next_send_ns,
            random: i.random,
            ece: i.ece,
            delivered_bytes_this_ack: i.delivered_bytes_this_ack,
            nsegs: i.nsegs,
        }
    }

    /// Linux's sk_pacing_rate in bytes/s (tcp_input.c tcp_update_pacing_rate()): cwnd * mss / srtt,
    /// times 2 while cwnd < ssthresh / 2 (sysctl_tcp_pacing_ss_ratio 200) else 1.2 (ca_ratio 120).
    /// A CC that paces (BBR) sets sk_pacing_rate itself.
    pub fn linux_pacing_rate_bytes(&self) -> u64 {
        if self.cc_paces {
            return self
                .cc
                .pacing_rate_bps(&self.view(), &self.v.win)
                .map_or(0, |bps| bps / 8);
        }
        if self.pacing_rate_set > 0 {
            return self.pacing_rate_set;
        }
        self.linux_pacing_rate_now()
    }

    /// tcp_update_pacing_rate() at the end of an ACK's tcp_cong_control() (tcp_input.c v6.18);
    /// a module that paces itself (BBR) sets the rate in its own hook.
    pub(super) fn update_pacing_rate(&mut self) {
        if !self.cc_paces {
            self.pacing_rate_set = self.linux_pacing_rate_now();
        }
    }

    /// sk_pacing_rate from the window and RTT now (the formula of linux_pacing_rate_bytes()).
    fn linux_pacing_rate_now(&self) -> u64 {
        if self.rtt.srtt_ns == 0 {
            return 0;
        }
        let ratio = if self.v.win.cwnd < self.v.win.ssthresh / 2 {
            200
        } else {
            120
        };
        (self.v.win.cwnd.max(self.snd_nxt - self.snd_una) as u128 * ratio * 1_000_000_000
            / (100 * self.rtt.srtt_ns as u128)) as u64
    }

    /// Bytes this socket may have queued below TCP (tcp_small_queue_check()).
    pub fn tsq_limit(&self) -> u64 {
        let mut limit = self.profile.tsq_floor_bytes;
        if let Some(shift) = self.profile.tsq_pacing_shift {
            limit = limit.max(self.linux_pacing_rate_bytes() >> shift);
        }
        limit.min(self.profile.tsq_max_bytes.max(self.profile.tsq_floor_bytes))
    }

    pub(super) fn has_sendable(&self) -> bool {
        self.written > self.snd_nxt || self.sb.lost_bytes > 0
    }

    #[inline] // asked twice per segment sent; nearly always without pacing
    pub(super) fn pacing_rate(&self) -> Option<u64> {
        // Linux paces without fq when the CC asks (SK_PACING_NEEDED: tcp_internal_pacing()).
        if self.profile.pacing || self.cc_paces {
            self.cc.pacing_rate_bps(&self.view(), &self.v.win)
        } else {
            None
        }
    }

    /// The pacing release time, when the sender waits for it with something to send.
    pub(super) fn pace_deadline(&self, paced: bool) -> Option<Ns> {
        (self.pace_next > self.v.now && paced && self.has_sendable()).then_some(self.pace_next)
    }

    /// The application starts writing on the established connection: the CC module's conn_init.
    /// A `-t` duration counts from here, as iperf3's starts after connecting (docs/models.md,
    /// "Connection setup"); the intervals stay on the grid from the flow's start time.
    pub(super) fn start(&mut self, now: Ns) {
        self.started = true;
        self.start_ns = now;
        self.fb_tcp_mss_sndbuf();
        self.v.now = now;
        self.v.snd_nxt = self.snd_nxt;
        self.cc.conn_init(&self.view(), &mut self.v.win);
    }

    /// Hand one segment (new data at snd_nxt, or a retransmission) to the NIC.
    #[inline(always)] // once per segment sent, from each stack's output loop
    pub(super) fn emit(
        &mut self,
        seq: u64,
        len: u64,
        retx: bool,
        now: Ns,
        out: &mut Vec<Packet>,
        next_id: &mut u64,
    ) {
        *next_id += 1;
        let mut p = Packet::new(*next_id, Kind::Data, self.flow, self.dst);
        p.seq = seq;
        p.len = len as u32;
        p.retx = retx;
        p.size_bytes = header_bytes(self.timestamps, 0) + len as u32;
        p.ts_val = now;
        self.ecn.mark_outgoing(&mut p);
        if matches!(self.state, State::Recovery { .. }) {
            // What the PRR components count as prr_out (Linux tcp_event_new_data_sent() /
            // tcp_retransmit_skb() in packets; FreeBSD sackhint.prr_out and rack.c
            // rack_log_output() rc_prr_out in bytes).
            self.recovery_out_segs += 1;
            self.recovery_out_bytes += len;
        }
        // tcp_rate_skb_sent(), for the modules that read delivery rates. The snapshot is taken
        // in each branch rather than once before them: shared, it went through a stack slot
        // that was read back wider than it was written (a store-forwarding stall per segment).
        let idle = self.sb.is_empty();
        if retx {
            let tx = self.rate_snapshot(now, idle);
            self.sb.mark_retransmitted(seq, now, tx);
            self.retrans_segs += 1;
        } else {
            let tx = self.rate_snapshot(now, idle);
            self.sb.push(seq, len as u32, now, tx);
            self.snd_nxt += len;
            if let Some(d) = self.linux_drill.as_deref_mut() {
                d.piece_left = d.piece_left.saturating_sub(len);
                if len < self.mss {
                    d.snd_sml = seq + len; // tcp_minshall_update()
                }
            }
        }
        self.bytes_sent += len;
        if self.rto_deadline.is_none() {
            // RFC 6298 §5.1: start the timer when sending data and it is not running.
            self.rto_deadline = Some(self.rto_at(now));
        }
        if let Some(rate) = self.pacing_rate() {
            self.pace_next = self.pace_next.max(now) + tx_time_ns(p.size_bytes as u64, rate);
        }
        self.last_send = Some(now);
        self.nic_backlog += p.size_bytes as u64;
        if self.record_sends {
            let limit = self.tso_chunk_limit();
            self.record_send(now, seq, len, retx, limit);
        }
        out.push(p);
    }

    /// The delivery-rate snapshot of a segment sent at `now` (tcp_rate_skb_sent()), for the
    /// modules that read delivery rates; `idle`: nothing was outstanding.
    #[inline(always)]
    fn rate_snapshot(&mut self, now: Ns, idle: bool) -> RateTx {
        if self.owns_cwnd {
            self.rate.on_send(now, idle)
        } else {
            RateTx::default()
        }
    }

    /// An output loop found nothing to send with `room` left in the window.
    pub(super) fn nothing_to_send(&mut self, room: u64) {
        self.v.cwnd_limited = room < self.mss;
        if self.owns_cwnd
            && room >= self.mss
            && self.sb.lost_bytes == 0
            && self.written - self.snd_nxt < self.mss
        {
            // tcp_rate_check_app_limited(): the window is not what limits sending.
            let in_flight = self.pkts(self.pipe());
            self.rate.mark_app_limited(in_flight);
        }
    }

    /// RFC 5681 §4.1: restart window after an idle period longer than the RTO.
    pub(super) fn restart_after_idle(&mut self, now: Ns) {
        if let Some(last) = self.last_send {
            if self.snd_una == self.snd_nxt
                && self.written > self.snd_nxt
                && now - last > self.rtt.rto_ns
            {
                let cwnd = self.v.win.cwnd;
                self.cc.after_idle(&self.view(), &mut self.v.win);
                if self.linux_rto.is_some() && !self.owns_cwnd {
                    self.linux_cwnd_restart(cwnd, now - last);
                }
            }
        }
    }

    /// Linux's restart window (tcp_cwnd_restart(), net/ipv4/tcp_output.c v6.18, from
    /// tcp_slow_start_after_idle_check(), which a module with its own cong_control, BBR,
    /// skips): not RFC 5681's min(IW, cwnd) but cwnd halved once per RTO of the idle time, no
    /// lower than min(IW, cwnd): `restart_cwnd = min(restart_cwnd, cwnd); while ((delta -=
    /// inet_csk(sk)->icsk_rto) > 0 && cwnd > restart_cwnd) cwnd >>= 1;
    /// tcp_snd_cwnd_set(tp, max(cwnd, restart_cwnd));`, with `tp->snd_ssthresh =
    /// tcp_current_ssthresh(sk)` (max(ssthresh, (cwnd >> 1) + (cwnd >> 2))). `cwnd_before`: before the module's
    /// own idle hook.
    fn linux_cwnd_restart(&mut self, cwnd_before: u64, idle_ns: Ns) {
        let (mss, rto) = (self.mss.max(1), self.rtt.rto_ns.max(1));
        let mut cwnd = cwnd_before / mss;
        let restart = (self.v.iw / mss).min(cwnd);
        let mut delta = idle_ns as i64;
        loop {
            delta -= rto as i64;
            if delta <= 0 || cwnd <= restart {
                break;
            }
            cwnd >>= 1;
        }
        let w = &mut self.v.win;
        let c = cwnd_before / mss;
        w.ssthresh = w.ssthresh.max(((c >> 1) + (c >> 2)) * mss);
        w.cwnd = cwnd.max(restart) * mss;
    }

    /// TSQ: with data outstanding, the NIC may hold at most the limit (doubled for
    /// retransmissions); the simulation wakes the sender when it drains.
    pub(super) fn tsq_blocks(&mut self, len: u64, retx: bool, tsq_limit: u64) -> bool {
        let limit = if retx { 2 * tsq_limit } else { tsq_limit };
        if self.snd_nxt > self.snd_una && self.nic_backlog + len > limit {
            self.tsq_throttled = true;
            self.v.cwnd_limited = self.pipe() + self.mss > self.v.win.cwnd;
            return true;
        }
        false
    }

    /// Packets needed to hold `bytes` (Linux counts cwnd and flight in packets).
    /// tcp_packets_in_flight() in O(1): packets_out as Linux counts skbs (a sub-MSS segment is
    /// one packet) while nothing is SACKed, lost or retransmitted, the usual case; otherwise the
    /// pipe in MSS (exactly: [`Self::linux_packets_in_flight`], O(segments)).
    pub(super) fn packets_in_flight(&self) -> u64 {
        let sb = &self.sb;
        if sb.sacked_bytes == 0
            && sb.lost_bytes == 0
            && sb.retrans_bytes == 0
            && sb.reno_sacked_segs == 0
        {
            sb.packets_out()
        } else {
            self.pkts(self.pipe())
        }
    }

    /// tcp_packets_in_flight(), counting segments as Linux counts skbs (the drill endpoint's
    /// linux stack; [`crate::tcp::scoreboard::Scoreboard::pipe_segs`]).
    pub fn linux_packets_in_flight(&self) -> u64 {
        self.sb.pipe_segs(self.mss.max(1))
    }

    pub(super) fn pkts(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.mss)
    }

    /// Feed one RTT measurement to the estimator (the hooks' view reads it from there).
    pub fn take_rtt_sample(&mut self, r: Ns) {
        match &mut self.linux_rto {
            Some(l) => self.rtt.sample_linux(r, l, self.snd_una, self.snd_nxt),
            None => self.rtt.sample(r),
        }
    }

    /// When the RTO armed at `now` fires (Linux's on its timer wheel).
    pub(super) fn rto_at(&self, now: Ns) -> Ns {
        self.rtt.rto_deadline(now, self.linux_rto.as_ref())
    }

    /// The RTT sample an ACK carries: the timestamp echo (in FreeBSD's ticks plus one,
    /// tcp_xmit_timer(tp, TCP_TS_TO_TICKS(t) + 1), when `ticks`), else the timed segment's
    /// (Karn's algorithm: `karn` is the send time of a never-retransmitted segment it covers).
    pub(super) fn ack_rtt(&self, p: &Packet, karn: Option<Ns>, now: Ns, ticks: bool) -> Option<Ns> {
        if !self.timestamps {
            return karn.map(|t| now - t);
        }
        let r = now - p.ts_ecr;
        Some(if ticks {
            (r / crate::time::MS + 1) * crate::time::MS
        } else {
            r
        })
    }

    /// What every stack's output does first: nothing before the connection starts; otherwise
    /// the hooks' clock is `now`. Returns whether output may go on.
    pub(super) fn output_begins(&mut self, now: Ns) -> bool {
        if !self.started {
            return false;
        }
        self.v.now = now;
        true
    }

    /// What every stack's timer handling does first: the hooks' clock, the small-queue wake-up.
    pub(super) fn timer_begins(&mut self, now: Ns) {
        self.v.now = now;
        self.tsq_wake_due(now);
    }

    /// Record when a fixed-size transfer is all acknowledged.
    pub(super) fn note_completion(&mut self, now: Ns) {
        if let AppConfig::Bytes { bytes } = self.app {
            if self.completed_at.is_none() && self.snd_una == bytes {
                self.completed_at = Some(now);
                self.event(now, SenderEvent::Complete);
            }
        }
    }

    /// The small-queue wake-up has come: forget it.
    pub(super) fn tsq_wake_due(&mut self, now: Ns) {
        if self.tsq_wake.is_some_and(|t| t <= now) {
            self.tsq_wake = None;
        }
    }
}

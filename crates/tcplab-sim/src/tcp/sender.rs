//! The TCP sender: application model, RFC 6675 SACK recovery (RFC 6582 NewReno without SACK),
//! RFC 6298 retransmission timer, and the congestion-control hooks of [`crate::cc`].

use super::prr::{Prr, PrrAck};
use super::rate::RateState;
use super::rtt::RttEstimator;
use super::scoreboard::Scoreboard;
use crate::cc::{AckKind, CaState, CcVars, CongSignal};
// The enum-dispatch build calls the hooks on a concrete type, which needs the trait in scope.
#[cfg_attr(not(feature = "static-cc"), allow(unused_imports))]
use crate::cc::CongestionControl;
use crate::config::{AppConfig, FlowConfig};
use crate::packet::{header_bytes, Kind, Packet};
use crate::stack::{Recovery, SndbufPolicy, StackProfile};
use crate::time::{tx_time_ns, Ns};

mod freebsd;
mod freebsd_rack;

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
}

impl SenderEvent {
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

/// One TCP sender.
pub struct TcpSender {
    /// Flow index.
    pub flow: u32,
    dst: u32,
    profile: StackProfile,
    cc: crate::cc::Cc,
    /// Variables shared with the CC module.
    pub v: CcVars,
    mss: u64,
    timestamps: bool,
    sack: bool,
    app: AppConfig,
    write_bytes: u64,
    sndbuf: u64,
    /// The send buffer's current size (grows with cwnd when the stack autotunes it).
    sndbuf_now: u64,
    /// When the application starts.
    pub start_ns: Ns,
    /// Whether the application has started.
    pub started: bool,
    /// Bytes the application has written into the socket.
    pub written: u64,
    /// Oldest unacknowledged byte.
    pub snd_una: u64,
    /// Next new byte to send (= snd_max: retransmissions come from the scoreboard, never by
    /// rewinding snd_nxt).
    pub snd_nxt: u64,
    /// Peer's advertised window, bytes.
    pub snd_wnd: u64,
    sb: Scoreboard,
    /// Loss-recovery state.
    pub state: State,
    /// RecoveryPoint of the last recovery or RTO: no new reduction until it is passed
    /// (RFC 6582 §3.2 step 1, RFC 6675 §5 step 2).
    recover_guard: Option<u64>,
    dupacks: u32,
    rescue_done: Option<u64>,
    prr: Prr,
    /// Most bytes outstanding since the round began (Linux tp->max_packets_out).
    max_out: u64,
    /// RACK state (Linux tp->rack): send time and end of the most recently sent delivered
    /// segment, its RTT, and when the reordering timer wants to look again.
    rack_xmit: Ns,
    rack_end: u64,
    rack_rtt: Ns,
    rack_reo_deadline: Option<Ns>,
    /// Tail loss probe timer and the snd_nxt when the last probe went out (Linux tlp_high_seq).
    tlp_deadline: Option<Ns>,
    tlp_high_seq: Option<u64>,
    /// RTT estimator and RTO.
    pub rtt: RttEstimator,
    rto_deadline: Option<Ns>,
    pace_next: Ns,
    last_send: Option<Ns>,
    round_end: u64,
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: u64,
    /// Segments retransmitted.
    pub retrans_segs: u64,
    /// Retransmission timeouts.
    pub rto_count: u64,
    /// Fast recoveries entered.
    pub recoveries: u64,
    /// When all of a fixed-size transfer was acknowledged.
    pub completed_at: Option<Ns>,
    /// Events since the simulation last drained them, with the state at that instant.
    pub events: Vec<(Ns, SenderEvent, Snapshot)>,
    /// Whether to keep `sends` (off by default: a row per ACK-clocked send is a lot of rows).
    pub record_sends: bool,
    /// Sends since the simulation last drained them.
    pub sends: Vec<Send>,
    /// Bytes this host has queued below TCP (its NIC FIFO), set by the simulation before each
    /// call into the sender.
    pub nic_backlog: u64,
    /// Whether the last output stopped on the small-queue limit (Linux TSQ_THROTTLED).
    pub tsq_throttled: bool,
    /// When the NIC queue will have drained enough to send again (set by the simulation).
    pub tsq_wake: Option<Ns>,
    /// FreeBSD default-stack recovery state.
    fb: freebsd::FbState,
    /// FreeBSD RACK-stack state.
    rk: freebsd_rack::RackState,
    /// Whether the CC sets cwnd itself on every ACK (Linux `cong_control`: BBR); such a module
    /// also gets delivery-rate samples, tracked in `rate`.
    owns_cwnd: bool,
    /// Whether the CC asks the stack to pace (Linux SK_PACING_NEEDED: BBR).
    cc_paces: bool,
    rate: RateState,
}

impl TcpSender {
    /// A sender for `f` with the given stack profile and CC module.
    pub fn new(flow: u32, f: &FlowConfig, mut profile: StackProfile, cc: crate::cc::Cc) -> Self {
        if let (Some(v), Recovery::LinuxPrr(_)) = (f.prr, profile.recovery) {
            profile.recovery = Recovery::LinuxPrr(v);
        }
        let freebsd_stack = matches!(
            profile.recovery,
            Recovery::FreeBsd(_) | Recovery::FreeBsdRack
        );
        if let (Some(k), true) = (&f.freebsd, freebsd_stack) {
            if let Recovery::FreeBsd(_) = profile.recovery {
                profile.recovery = Recovery::FreeBsd(crate::stack::FreeBsdRecovery {
                    d43470: k.d43470,
                    prr: k.do_prr,
                    sack_tso: k.sack_tso,
                });
            }
            // tcp_output.c: without net.inet.tcp.tso every send is at most one segment.
            if !k.tso {
                profile.tso_max_bytes = f.mss as u64;
            }
            profile.retx_tso = k.tso && k.sack_tso;
            profile.sndbuf = if k.sendbuf_inc_bytes > 0 {
                SndbufPolicy::FreeBsdInc(k.sendbuf_inc_bytes)
            } else {
                SndbufPolicy::Fixed
            };
        }
        let mss = f.mss as u64;
        let mut rtt = RttEstimator::new(
            profile.initial_rto_ns,
            profile.min_rto_ns,
            profile.max_rto_ns,
            profile.clock_granularity_ns,
        );
        rtt.slop_ns = profile.rto_slop_ns;
        // An autotuned buffer starts at Linux tcp_wmem[1] / FreeBSD sendspace and grows from there.
        let initial = f
            .sndbuf_initial_bytes
            .unwrap_or(profile.sndbuf_initial_bytes);
        let sndbuf_now = if profile.sndbuf == SndbufPolicy::Fixed {
            f.sndbuf_bytes
        } else {
            f.sndbuf_bytes.min(initial)
        };
        TcpSender {
            flow,
            dst: f.dst,
            profile,
            v: CcVars::new(mss, f.iw_segments as u64 * mss),
            mss,
            timestamps: f.timestamps,
            sack: f.sack,
            app: f.app.clone(),
            write_bytes: f.write_bytes.max(1),
            sndbuf: f.sndbuf_bytes,
            sndbuf_now,
            start_ns: f.start_ns,
            started: false,
            written: 0,
            snd_una: 0,
            snd_nxt: 0,
            // Until the first ACK, the window the receiver offered in its SYN-ACK.
            snd_wnd: f.rcv_space_bytes(),
            sb: Scoreboard::default(),
            state: State::Open,
            recover_guard: None,
            dupacks: 0,
            rescue_done: None,
            prr: Prr::default(),
            max_out: 0,
            rack_xmit: 0,
            rack_end: 0,
            rack_rtt: 0,
            rack_reo_deadline: None,
            tlp_deadline: None,
            tlp_high_seq: None,
            rtt,
            rto_deadline: None,
            pace_next: 0,
            last_send: None,
            round_end: 0,
            bytes_sent: 0,
            retrans_segs: 0,
            rto_count: 0,
            recoveries: 0,
            completed_at: None,
            events: Vec::new(),
            record_sends: false,
            sends: Vec::new(),
            nic_backlog: 0,
            tsq_throttled: false,
            tsq_wake: None,
            fb: freebsd::FbState::default(),
            rk: freebsd_rack::RackState::default(),
            owns_cwnd: cc.owns_cwnd(),
            cc_paces: cc.needs_pacing(),
            rate: RateState::default(),
            cc,
        }
    }

    fn event(&mut self, now: Ns, e: SenderEvent) {
        let snap = Snapshot {
            cwnd: self.v.cwnd,
            ssthresh: self.v.ssthresh,
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
        if self.profile.tso_autosize {
            (self.linux_pacing_rate_bytes() >> 10).clamp(2 * self.mss, self.profile.tso_max_bytes)
        } else {
            self.profile.tso_max_bytes
        }
    }

    fn record_send(&mut self, now: Ns, seq: u64, len: u64, retx: bool, chunk_limit: u64) {
        if let Some(last) = self.sends.last_mut() {
            // Data contiguous with the previous chunk of the same output call joins it (new data
            // always, retransmissions where the stack retransmits with TSO).
            let joins = retx == last.retx && (!retx || self.profile.retx_tso);
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
        self.sb.pipe(self.snd_nxt - self.snd_una, self.mss)
    }

    /// The congestion-control module's name.
    pub fn cc_name(&self) -> &'static str {
        self.cc.name()
    }

    /// The scoreboard (for invariant checks).
    pub fn scoreboard(&self) -> &Scoreboard {
        &self.sb
    }

    /// Whether the application has nothing more to send and everything is acknowledged.
    pub fn done(&self, now: Ns) -> bool {
        match self.app {
            AppConfig::Bytes { .. } => self.completed_at.is_some(),
            AppConfig::Time { duration_ns } => {
                self.started && now >= self.start_ns + duration_ns && self.snd_una == self.written
            }
        }
    }

    /// The earliest time the sender wants to be woken (RTO, pacing, small-queue release).
    pub fn timer_deadline(&self) -> Option<Ns> {
        let paced = self.pacing_rate().is_some() || self.profile.recovery == Recovery::FreeBsdRack;
        let pace =
            (self.pace_next > self.v.now && paced && self.has_sendable()).then_some(self.pace_next);
        let rapid = self.rack_rapid_recovery_deadline();
        [
            self.rto_deadline,
            pace,
            self.tsq_wake,
            self.rack_reo_deadline,
            self.tlp_deadline,
            rapid,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Linux's sk_pacing_rate in bytes/s (tcp_input.c tcp_update_pacing_rate()): cwnd * mss / srtt,
    /// times 2 while cwnd < ssthresh / 2 (sysctl_tcp_pacing_ss_ratio 200) else 1.2 (ca_ratio 120).
    /// A CC that paces (BBR) sets sk_pacing_rate itself.
    pub fn linux_pacing_rate_bytes(&self) -> u64 {
        if self.cc_paces {
            return self.cc.pacing_rate_bps(&self.v).map_or(0, |bps| bps / 8);
        }
        if self.rtt.srtt_ns == 0 {
            return 0;
        }
        let ratio = if self.v.cwnd < self.v.ssthresh / 2 {
            200
        } else {
            120
        };
        (self.v.cwnd.max(self.snd_nxt - self.snd_una) as u128 * ratio * 1_000_000_000
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

    fn has_sendable(&self) -> bool {
        self.written > self.snd_nxt || self.sb.lost_bytes > 0
    }

    fn pacing_rate(&self) -> Option<u64> {
        // Linux paces without fq when the CC asks (SK_PACING_NEEDED: tcp_internal_pacing()).
        if self.profile.pacing || self.cc_paces {
            self.cc.pacing_rate_bps(&self.v)
        } else {
            None
        }
    }

    /// The application starts: connection already established (the handshake is not modelled).
    pub fn start(&mut self, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        self.started = true;
        self.v.now = now;
        self.v.snd_nxt = self.snd_nxt;
        self.cc.conn_init(&mut self.v);
        if let Recovery::FreeBsd(k) = self.profile.recovery {
            return self.fb_app_write(k, now, out, next_id);
        }
        self.output(now, out, next_id);
    }

    fn app_fill(&mut self, now: Ns) {
        let total = match self.app {
            AppConfig::Time { duration_ns } if now < self.start_ns + duration_ns => u64::MAX,
            AppConfig::Time { .. } => return,
            AppConfig::Bytes { bytes } => bytes,
        };
        // Without a low-water mark the application blocks until a whole write fits in the send
        // buffer (a write larger than the buffer goes in as far as it fits).
        if let SndbufPolicy::Cwnds(k) = self.profile.sndbuf {
            // The buffer only grows (tcp_sndbuf_expand is called as cwnd grows, never to shrink).
            let want = k * self.v.cwnd.max(10 * self.mss);
            self.sndbuf_now = self.sndbuf_now.max(want.min(self.sndbuf));
        }
        let cap = (self.snd_una + self.sndbuf_now).min(total);
        if self.written >= cap {
            return;
        }
        let room = cap - self.written;
        if let Some(lowat) = self.profile.write_lowat_bytes {
            // A blocking write(2) copies in whatever fits once sb_lowat bytes are free (FreeBSD
            // uipc_socket.c sosend_generic(), so_snd.sb_lowat = 2048), so the buffer stays full.
            if room >= lowat.min(cap - self.written) {
                self.written += room;
            }
            return;
        }
        let whole_writes = room / self.write_bytes * self.write_bytes;
        self.written += if cap == total || self.write_bytes > self.sndbuf_now {
            room
        } else {
            whole_writes
        };
    }

    fn new_data_len(&self) -> Option<u64> {
        let unsent = self.written - self.snd_nxt;
        let wnd_room = (self.snd_una + self.snd_wnd).saturating_sub(self.snd_nxt);
        let len = self.mss.min(unsent).min(wnd_room);
        if len == 0 {
            return None;
        }
        if len < self.mss && !self.profile.partial_sends {
            // Sender-side silly window avoidance (RFC 1122 §4.2.3.4): no runt because of rwnd.
            if len < unsent {
                return None;
            }
            // Nagle (RFC 896; Linux tcp_nagle_check, iperf3 leaves TCP_NODELAY off): the tail of
            // what the application has written waits while data is outstanding, unless the
            // application has nothing more to write.
            if self.snd_nxt > self.snd_una && !self.app_finished() {
                return None;
            }
        }
        Some(len)
    }

    /// Whether the application will write nothing more.
    fn app_finished(&self) -> bool {
        match self.app {
            AppConfig::Time { duration_ns } => self.v.now >= self.start_ns + duration_ns,
            AppConfig::Bytes { bytes } => self.written >= bytes,
        }
    }

    fn emit(
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
        if matches!(self.state, State::Recovery { .. }) {
            self.prr.out += 1; // tcp_event_new_data_sent() / tcp_retransmit_skb(): prr_out
            self.fb.prr_out += len; // FreeBSD tcp_output.c: sackhint.prr_out, bytes
            self.rk.prr_out += len; // rack.c rack_log_output(): rc_prr_out
            self.rk.prr_sndcnt = self.rk.prr_sndcnt.saturating_sub(len);
        }
        // tcp_rate_skb_sent(), for the modules that read delivery rates.
        let tx = if self.owns_cwnd {
            self.rate.on_send(now, self.sb.is_empty())
        } else {
            Default::default()
        };
        if retx {
            self.sb.mark_retransmitted(seq, now, tx);
            self.retrans_segs += 1;
        } else {
            self.sb.push(seq, len as u32, now, tx);
            self.snd_nxt += len;
        }
        self.bytes_sent += len;
        if self.rto_deadline.is_none() {
            // RFC 6298 §5.1: start the timer when sending data and it is not running.
            self.rto_deadline = Some(now + self.rtt.rto_ns);
        }
        if let Some(rate) = self.pacing_rate() {
            self.pace_next = self.pace_next.max(now) + tx_time_ns(p.size_bytes as u64, rate);
        }
        self.last_send = Some(now);
        self.max_out = self.max_out.max(self.snd_nxt - self.snd_una);
        self.nic_backlog += p.size_bytes as u64;
        if self.record_sends {
            let limit = self.tso_chunk_limit();
            self.record_send(now, seq, len, retx, limit);
        }
        out.push(p);
    }

    /// Send whatever the windows allow (RFC 6675 §5 step C in recovery: while cwnd - pipe >= 1 MSS).
    pub fn output(&mut self, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        if !self.started {
            return;
        }
        self.v.now = now;
        if let Recovery::FreeBsd(k) = self.profile.recovery {
            return self.output_freebsd(k, now, out, next_id);
        }
        let rack = self.profile.recovery == Recovery::FreeBsdRack;
        if rack {
            self.fb_sndbuf_autosize();
            self.rk.largest_cwnd = self.rk.largest_cwnd.max(self.v.cwnd);
        }
        self.app_fill(now);
        self.restart_after_idle(now);
        self.tsq_throttled = false;
        let tsq_limit = self.tsq_limit();
        let mut tot_len = 0;
        loop {
            if (rack || self.pacing_rate().is_some()) && now < self.pace_next {
                break;
            }
            let room = if rack {
                self.rack_room()
            } else {
                self.v.cwnd.saturating_sub(self.pipe())
            };
            let mut rescue = false;
            let cand = if let Some((seq, len)) = self.sb.next_lost() {
                Some((seq, len as u64, true))
            } else if let Some(len) = self.new_data_len() {
                Some((self.snd_nxt, len, false))
            } else if let (State::Recovery { recover }, true, false) = (self.state, self.sack, rack)
            {
                // RFC 6675 NextSeg() rule 4, once per recovery (FreeBSD's RACK stack probes with
                // TLP instead).
                if self.rescue_done != Some(recover) {
                    rescue = true;
                    self.sb.rescue_candidate().map(|(s, l)| (s, l as u64, true))
                } else {
                    None
                }
            } else {
                None
            };
            let Some((seq, mut len, retx)) = cand else {
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
                break;
            };
            let mut rapid = false;
            if len > room {
                if self.profile.partial_sends && !retx && room > 0 {
                    len = room;
                } else if rack && retx && self.rack_rapid_recovery_due(now) {
                    rapid = true;
                } else {
                    self.v.cwnd_limited = true;
                    break;
                }
            }
            if self.tsq_blocks(len, retx, tsq_limit) {
                break;
            }
            if rapid {
                self.rack_rapid_recovery_sent(now);
            }
            if rescue {
                if let State::Recovery { recover } = self.state {
                    self.rescue_done = Some(recover);
                }
            }
            self.emit(seq, len, retx, now, out, next_id);
            if rack {
                // HPTS burst mitigation: stop once the burst needs a pacing slot, and wait it out.
                tot_len += len;
                let slot = self.rack_burst_slot_ns(tot_len);
                if slot > 0 {
                    self.pace_next = now + slot;
                    break;
                }
            }
        }
    }

    /// RFC 5681 §4.1: restart window after an idle period longer than the RTO.
    fn restart_after_idle(&mut self, now: Ns) {
        if let Some(last) = self.last_send {
            if self.snd_una == self.snd_nxt
                && self.written > self.snd_nxt
                && now - last > self.rtt.rto_ns
            {
                self.cc.after_idle(&mut self.v);
            }
        }
    }

    /// TSQ: with data outstanding, the NIC may hold at most the limit (doubled for
    /// retransmissions); the simulation wakes the sender when it drains.
    fn tsq_blocks(&mut self, len: u64, retx: bool, tsq_limit: u64) -> bool {
        let limit = if retx { 2 * tsq_limit } else { tsq_limit };
        if self.snd_nxt > self.snd_una && self.nic_backlog + len > limit {
            self.tsq_throttled = true;
            self.v.cwnd_limited = self.pipe() + self.mss > self.v.cwnd;
            return true;
        }
        false
    }

    /// tcp_cwnd_reduction(): cwnd = in flight + PRR's allowance, in packets.
    fn prr_reduce(&mut self, version: crate::tcp::prr::PrrVersion, ack: PrrAck) {
        let (ssthresh, in_flight) = (self.v.ssthresh / self.mss, self.pkts(self.pipe()));
        if let Some(cwnd) = self.prr.on_ack(version, ack, ssthresh, in_flight) {
            self.v.cwnd = (cwnd * self.mss).max(self.mss);
        }
    }

    /// Packets needed to hold `bytes` (Linux counts cwnd and flight in packets).
    fn pkts(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.mss)
    }

    /// Process an ACK.
    pub fn on_ack(&mut self, p: &Packet, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        self.v.now = now;
        if let Recovery::FreeBsd(k) = self.profile.recovery {
            self.on_ack_freebsd(k, p, now, out, next_id);
            self.note_completion(now);
            return;
        }
        self.snd_wnd = p.rwnd;
        let fresh = p.ack >= self.snd_una; // not an old, reordered ACK
        let prior_in_flight = if self.owns_cwnd {
            self.pkts(self.pipe())
        } else {
            0
        };
        let newly_sacked = if self.sack {
            self.sb.sack(p.sack_blocks(), self.snd_una)
        } else {
            0
        };
        let mut acked = 0;
        let mut dup = false;
        let mut rtt_sample = None;
        if p.ack > self.snd_una && p.ack <= self.snd_nxt {
            acked = p.ack - self.snd_una;
            let karn = self.sb.ack(p.ack);
            let sample = if self.timestamps {
                Some(now - p.ts_ecr)
            } else {
                karn.map(|t| now - t)
            };
            self.snd_una = p.ack;
            if let Some(r) = sample {
                self.rtt.sample(r);
                self.v.srtt_ns = self.rtt.srtt_ns;
                self.v.min_rtt_ns = self.rtt.min_rtt_ns;
                self.v.rtt_samples = self.rtt.samples;
                self.v.pacing_rate_bytes = self.linux_pacing_rate_bytes();
                rtt_sample = Some(r);
            }
            self.dupacks = 0;
            if !self.sack && matches!(self.state, State::Recovery { .. }) {
                // Linux tcp_remove_reno_sacks: the ACK accounts for acked - 1 presumed departures.
                let acked_segs = acked.div_ceil(self.mss);
                self.sb.reno_sacked_segs = self.sb.reno_sacked_segs.saturating_sub(acked_segs - 1);
            }
            // RFC 6298 §5.2, §5.3: stop the timer when all is acked, else restart it.
            self.rto_deadline = (self.snd_una < self.snd_nxt).then(|| now + self.rtt.rto_ns);
        } else if p.ack == self.snd_una
            && self.snd_nxt > self.snd_una
            && (newly_sacked > 0 || !self.sack)
        {
            dup = true;
            self.dupacks += 1;
            if !self.sack {
                self.sb.reno_sacked_segs = (self.sb.reno_sacked_segs + 1).min(self.sb.len() as u64);
            }
        }
        // tcp_clean_rtx_queue() / tcp_sacktag: ca_rtt from the newest never-retransmitted packet
        // this ACK delivered (acked or SACKed), by its send time, not the timestamp echo (which
        // follows the earliest unacknowledged segment and so includes a delayed ACK's wait).
        let linux_cc = self.profile.cc_family == crate::cc::Family::Linux;
        let ca_rtt = if linux_cc || self.profile.rack {
            self.sb
                .delivered()
                .iter()
                .filter(|d| !d.retrans)
                .map(|d| d.sent_at)
                .max()
                .map(|sent_at| now.saturating_sub(sent_at))
        } else {
            None
        };
        if fresh {
            // tcp_ack(): tcp_in_ack_event() once snd_una has moved, then tcp_clean_rtx_queue()'s
            // pkts_acked with the ACK's RTT sample (the state is still the one before this ACK).
            // Linux hands the module ca_rtt (ack_sample.rtt_us = rate->rtt_us, tcp_ack_update_rtt()),
            // falling back to the timestamp echo when only retransmitted data was acknowledged.
            self.v.snd_una = self.snd_una;
            self.v.snd_nxt = self.snd_nxt;
            let slow_path = acked == 0 || !p.sack_blocks().is_empty();
            self.cc.in_ack_event(&mut self.v, slow_path);
            if acked > 0 {
                let pkts = self.pkts(acked) as u32;
                let sample = if linux_cc {
                    ca_rtt.or(rtt_sample)
                } else {
                    rtt_sample
                };
                self.cc.pkts_acked(&mut self.v, pkts, sample);
            }
        }
        if self.profile.rack {
            // RACK's min_rtt (tcp_update_rtt_min()) from the same ca_rtt.
            if let Some(r) = ca_rtt {
                self.rtt.observe_min(r);
                self.v.min_rtt_ns = self.rtt.min_rtt_ns;
            }
        }
        if self.profile.recovery == Recovery::FreeBsdRack
            && newly_sacked > 0
            && self.snd_una < self.snd_nxt
        {
            // rack.c rack_start_hpts_timer(): "RACK, TLP, persists and RXT timers all are
            // restartable based on actions input .. i.e we received a packet (ack or sack)"; with
            // SACK-passed segments the RACK timer, not the RXT timer, is the one armed.
            self.rto_deadline = Some(now + self.rtt.rto_ns);
        }
        let newly_lost = if self.sack && self.profile.rack {
            self.rack_detect(now)
        } else if self.sack {
            self.sb.mark_losses(self.profile.dupthresh)
        } else {
            0
        };
        self.v.lost_pkts += self.pkts(newly_lost);
        // tcp_rate_gen(): the delivery-rate sample for a module that owns cwnd.
        let rate_sample = (self.owns_cwnd && fresh).then(|| {
            let (lost, min_rtt) = (self.pkts(newly_lost), self.rtt.min_rtt_ns);
            self.rate.on_ack(
                now,
                self.sb.delivered(),
                self.mss,
                lost,
                min_rtt,
                prior_in_flight,
            )
        });
        self.sb.clear_delivered();
        self.v.flight = self.snd_nxt - self.snd_una;

        match self.state {
            State::Recovery { recover } if self.snd_una >= recover => {
                self.state = State::Open;
                self.v.in_recovery = false;
                self.sb.reno_sacked_segs = 0;
                match self.profile.recovery {
                    // tcp_end_cwnd_reduction(): cwnd = ssthresh, then CA_EVENT_COMPLETE_CWR
                    // (Westwood+ sets its own window there); nothing when the module owns cwnd.
                    Recovery::LinuxPrr(_) if self.owns_cwnd => {}
                    Recovery::LinuxPrr(_) => {
                        self.v.cwnd = self.v.ssthresh;
                        self.cc.post_recovery(&mut self.v);
                    }
                    Recovery::Rfc6675 | Recovery::FreeBsd(_) => self.cc.post_recovery(&mut self.v),
                    Recovery::FreeBsdRack => self.rack_post_recovery(),
                }
                self.event(now, SenderEvent::RecoveryEnd);
            }
            State::Loss { recover } if self.snd_una >= recover => {
                self.state = State::Open;
                self.event(now, SenderEvent::LossEnd);
            }
            State::Recovery { .. } if acked > 0 && !self.sack => {
                // RFC 6582 §3.2 step 5: a partial ACK retransmits the next unacknowledged segment.
                self.sb.mark_head_lost();
            }
            _ => {}
        }

        if self.profile.cc_family == crate::cc::Family::Linux && self.v.in_slow_start() {
            // tcp_is_cwnd_limited(): in slow start, grow while cwnd < 2 * max_packets_out.
            self.v.cwnd_limited = self.v.cwnd < 2 * self.max_out;
        }
        if self.profile.cc_family == crate::cc::Family::FreeBsd {
            // rack.c rack_ack_received(), as tcp_input.c: CCF_CWND_LIMITED when cwnd <= snd_wnd;
            // the cc modules also read snd_wnd and whether this ACK follows a timeout.
            self.v.cwnd_limited = self.v.cwnd <= self.snd_wnd;
            self.v.snd_wnd = self.snd_wnd;
            self.v.after_rto = matches!(self.state, State::Loss { .. }) && self.sb.lost_bytes > 0;
        }
        self.sync_ca_state();
        if !matches!(self.state, State::Recovery { .. }) && !self.owns_cwnd {
            if acked > 0 {
                self.v.bytes_this_ack = acked;
                self.cc.ack_received(&mut self.v, AckKind::Ack);
            } else if dup {
                self.v.bytes_this_ack = 0;
                self.cc.ack_received(&mut self.v, AckKind::DupAck);
            }
        }
        if acked > 0 && self.snd_una >= self.round_end {
            self.round_end = self.snd_nxt;
            self.max_out = self.snd_nxt - self.snd_una;
            self.cc.new_round(&mut self.v);
        }

        let mut entered = false;
        if self.state == State::Open && self.snd_una < self.snd_nxt {
            let trigger = if self.sack && self.profile.rack {
                // Linux tcp_time_to_recover(): with RACK, recovery starts when a packet is marked
                // lost; the dupack heuristic applies only without RACK.
                self.sb.lost_bytes > 0
            } else {
                self.dupacks >= self.profile.dupthresh || (self.sack && self.sb.head_lost())
            };
            let allowed = self.recover_guard.is_none_or(|r| self.snd_una > r);
            if trigger && allowed {
                self.enter_recovery(now, out, next_id);
                entered = true;
            }
        }
        if let (State::Recovery { .. }, Recovery::FreeBsdRack, false) =
            (self.state, self.profile.recovery, entered)
        {
            self.rack_prr_update(acked + newly_sacked);
        }
        if let (State::Recovery { .. }, Recovery::LinuxPrr(version)) =
            (self.state, self.profile.recovery)
        {
            // tcp_cong_control() -> tcp_cwnd_reduction() on every ACK in recovery, the entry ACK
            // included (unless the module owns cwnd).
            if !self.owns_cwnd {
                let ack = PrrAck {
                    newly_acked_sacked: self.pkts(acked + newly_sacked),
                    newly_lost: self.pkts(newly_lost),
                    una_advanced: acked > 0,
                };
                self.prr_reduce(version, ack);
            }
            if entered {
                self.event(now, SenderEvent::RecoveryStart);
            }
        }
        if let Some(rs) = rate_sample {
            // tcp_cong_control(): the module's cong_control instead of cong_avoid and PRR.
            self.v.flight = self.pipe();
            self.v.delivered_pkts = self.rate.delivered;
            self.v.delivered_mstamp_ns = self.rate.delivered_mstamp();
            self.v.next_send_ns = self.pace_next;
            self.cc.cong_control(&mut self.v, &rs);
            if let Some(in_flight) = self.v.app_limited_request.take() {
                self.rate.mark_app_limited(in_flight);
            }
        }
        self.output(now, out, next_id);
        if self.tlp_high_seq.is_some_and(|h| self.snd_una >= h) {
            self.tlp_high_seq = None;
            self.event(now, SenderEvent::TlpEnd);
        }
        self.schedule_tlp(now);
        self.note_completion(now);
    }

    /// Keep `v.ca_state` as Linux's icsk_ca_state and tell the module of each change before it
    /// takes effect (tcp_set_ca_state()): Disorder while SACKs or dupacks are outstanding.
    fn sync_ca_state(&mut self) {
        let s = match self.state {
            State::Recovery { .. } => CaState::Recovery,
            State::Loss { .. } => CaState::Loss,
            State::Open if self.dupacks > 0 || self.sb.sacked_bytes > 0 => CaState::Disorder,
            State::Open => CaState::Open,
        };
        if s != self.v.ca_state {
            self.cc.set_state(&mut self.v, s);
            self.v.ca_state = s;
        }
    }

    /// Record when a fixed-size transfer is all acknowledged.
    fn note_completion(&mut self, now: Ns) {
        if let AppConfig::Bytes { bytes } = self.app {
            if self.completed_at.is_none() && self.snd_una == bytes {
                self.completed_at = Some(now);
                self.event(now, SenderEvent::Complete);
            }
        }
    }

    /// tcp_rack_advance() for every segment this ACK delivered, then tcp_rack_mark_lost().
    /// Returns bytes newly marked lost.
    fn rack_detect(&mut self, now: Ns) -> u64 {
        let min_rtt = if self.rtt.min_rtt_ns == 0 {
            Ns::MAX
        } else {
            self.rtt.min_rtt_ns
        };
        let mut advanced = false;
        for i in 0..self.sb.delivered().len() {
            let d = self.sb.delivered()[i];
            let (sent_at, end, retx) = (d.sent_at, d.end, d.retrans);
            let rtt = now.saturating_sub(sent_at);
            // A retransmission delivered faster than min_rtt may be the original's delivery.
            if retx && rtt < min_rtt {
                continue;
            }
            advanced = true;
            self.rack_rtt = rtt;
            if sent_at > self.rack_xmit || (sent_at == self.rack_xmit && end > self.rack_end) {
                self.rack_xmit = sent_at;
                self.rack_end = end;
            }
        }
        if !advanced && self.rack_reo_deadline.is_none_or(|t| t > now) {
            return 0;
        }
        self.rack_mark_lost(now)
    }

    /// tcp_rack_detect_loss() with tcp_rack_reo_wnd(): paths here never reorder, so the window
    /// is 0 in recovery or once dupthresh packets are SACKed, else min(min_rtt/4, srtt/8).
    /// FreeBSD's rack.c (rack_calc_thresh_rack() with rack_dsack_std_based, no reordering seen):
    /// the window is always a quarter of the last RTT, and the timer fires at that threshold, at
    /// least rack_min_to (1 ms) from now.
    fn rack_mark_lost(&mut self, now: Ns) -> u64 {
        if self.profile.recovery == Recovery::FreeBsdRack {
            let reo_wnd = self.rack_rtt / 4;
            let (newly, wait) =
                self.sb
                    .rack_mark_lost(self.rack_xmit, self.rack_end, self.rack_rtt, reo_wnd, now);
            self.rack_reo_deadline = wait.map(|w| now + w.max(crate::time::MS));
            return newly;
        }
        let sacked_pkts = self.sb.sacked_bytes / self.mss;
        let reo_wnd = if self.state != State::Open || sacked_pkts >= self.profile.dupthresh as u64 {
            0
        } else {
            (self.rtt.min_rtt_ns / 4).min(self.rtt.srtt_ns / 8)
        };
        let (newly, wait) =
            self.sb
                .rack_mark_lost(self.rack_xmit, self.rack_end, self.rack_rtt, reo_wnd, now);
        // tcp_rack_mark_lost(): reordering timer at the longest wait + TCP_TIMEOUT_MIN (2 jiffies).
        self.rack_reo_deadline = wait.map(|w| now + w + 2 * 1_000_000_000 / crate::cc::linux::HZ);
        newly
    }

    /// tcp_schedule_loss_probe(): PTO = 2 srtt, plus TCP_RTO_MIN when one packet is out (the
    /// receiver may delay its ACK) else TCP_TIMEOUT_MIN (2 jiffies); 1 s before any RTT sample;
    /// never later than the RTO. Only in the open state, with SACK, with data outstanding.
    fn schedule_tlp(&mut self, now: Ns) {
        if !(self.profile.tlp && self.sack)
            || self.state != State::Open
            || self.snd_una == self.snd_nxt
        {
            self.tlp_deadline = None;
            return;
        }
        if self.profile.recovery == Recovery::FreeBsdRack {
            self.tlp_deadline = Some(self.rack_tlp_deadline(now));
            return;
        }
        let jiffy = 1_000_000_000 / crate::cc::linux::HZ;
        let mut pto = if self.rtt.srtt_ns == 0 {
            self.profile.initial_rto_ns
        } else {
            let one_packet = self.snd_nxt - self.snd_una <= self.mss;
            2 * self.rtt.srtt_ns
                + if one_packet {
                    self.profile.min_rto_ns
                } else {
                    2 * jiffy
                }
        };
        if let Some(rto) = self.rto_deadline {
            pto = pto.min(rto.saturating_sub(now));
        }
        self.tlp_deadline = Some(now + pto);
    }

    /// tcp_send_loss_probe(): one new segment if there is one (past cwnd), else the last
    /// outstanding segment again; at most one probe outstanding; then the RTO is re-armed.
    fn send_tlp(&mut self, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        if self.tlp_high_seq.is_none() {
            self.app_fill(now);
            let new_len = self.new_data_len();
            if let Some(len) = new_len {
                self.emit(self.snd_nxt, len, false, now, out, next_id);
            } else if let Some((seq, len)) = self.sb.last_unsacked() {
                self.emit(seq, len as u64, true, now, out, next_id);
            } else {
                return;
            }
            self.tlp_high_seq = Some(self.snd_nxt);
            self.event(now, SenderEvent::Tlp);
        }
        self.rto_deadline = Some(now + self.rtt.rto_ns);
    }

    /// RFC 6675 §5 steps 4.1-4.3 (and RFC 6582 §3.2 step 2 without SACK).
    fn enter_recovery(&mut self, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        let recover = self.snd_nxt;
        self.v.flight = self.snd_nxt - self.snd_una;
        self.cc.cong_signal(&mut self.v, CongSignal::NDupAck);
        self.v.in_recovery = true;
        self.state = State::Recovery { recover };
        self.sync_ca_state();
        self.recover_guard = Some(recover);
        self.recoveries += 1;
        if !(self.sack && self.profile.rack) {
            self.sb.mark_head_lost();
        }
        match self.profile.recovery {
            Recovery::Rfc6675 => {
                self.v.cwnd = self.v.ssthresh;
                self.event(now, SenderEvent::RecoveryStart);
                // Step 4.3: the first retransmission goes out regardless of pipe.
                if let Some((seq, len)) = self.sb.next_lost() {
                    self.emit(seq, len as u64, true, now, out, next_id);
                }
            }
            Recovery::LinuxPrr(_) => {
                // tcp_enter_recovery() -> tcp_init_cwnd_reduction(): cwnd is left as it is and
                // PRR sets it on this very ACK (at least one packet: the fast retransmit). The
                // event is recorded after that, with the cwnd a tcp_probe line would show.
                self.prr = Prr::begin(self.pkts(self.v.cwnd));
            }
            Recovery::FreeBsdRack => {
                self.rack_enter_recovery();
                self.event(now, SenderEvent::RecoveryStart);
            }
            Recovery::FreeBsd(_) => {
                unreachable!("the FreeBSD stack enters recovery in fb_enter_recovery")
            }
        }
    }

    /// A timer fired: RTO (RFC 6298 §5.4-5.6) and/or pacing release.
    pub fn on_timer(&mut self, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        self.v.now = now;
        if self.tsq_wake.is_some_and(|t| t <= now) {
            self.tsq_wake = None;
        }
        if self.tlp_deadline.is_some_and(|t| t <= now) {
            self.tlp_deadline = None;
            if self.state == State::Open && self.snd_una < self.snd_nxt {
                self.send_tlp(now, out, next_id);
            }
        }
        if self.rack_reo_deadline.is_some_and(|t| t <= now) {
            // tcp_rack_reo_timeout(): waited long enough for reordering; mark and recover.
            self.rack_reo_deadline = None;
            if self.rack_mark_lost(now) > 0
                && self.state == State::Open
                && self.snd_una < self.snd_nxt
            {
                let allowed = self.recover_guard.is_none_or(|r| self.snd_una > r);
                if allowed {
                    self.enter_recovery(now, out, next_id);
                    if let Recovery::LinuxPrr(version) = self.profile.recovery {
                        // tcp_cwnd_reduction(sk, 1, 0, 0)
                        if !self.owns_cwnd {
                            self.prr_reduce(
                                version,
                                PrrAck {
                                    newly_acked_sacked: 1,
                                    newly_lost: 0,
                                    una_advanced: false,
                                },
                            );
                        }
                        self.event(now, SenderEvent::RecoveryStart);
                    }
                }
            }
        }
        if let Some(deadline) = self.rto_deadline {
            if deadline <= now {
                if self.snd_una < self.snd_nxt {
                    // Reduce ssthresh only if no reduction was made for this window already: not
                    // when the timer fires during fast recovery or again after an earlier RTO
                    // (RFC 5681 §3.1 holds ssthresh on repeated timeouts; Linux tcp_input.c
                    // tcp_enter_loss(): "Reduce ssthresh if it has not yet been made inside this
                    // window").
                    let freebsd = matches!(self.profile.recovery, Recovery::FreeBsd(_));
                    let rack = self.profile.recovery == Recovery::FreeBsdRack;
                    let reduced_already = if freebsd {
                        // tcp_timer.c / cc.c: ssthresh only when t_rxtshift == 1, the first timeout
                        // since the last RTT sample, with pipe as tcp_compute_pipe() has it.
                        self.rtt.rxtshift > 0
                    } else if rack {
                        // rack.c rack_remxt_tmr() reduces on every timeout; after the first the
                        // window is already one segment, so only the first matters here.
                        self.rtt.rxtshift > 0
                    } else {
                        match self.state {
                            State::Open => false,
                            State::Recovery { recover } | State::Loss { recover } => {
                                self.snd_una < recover
                            }
                        }
                    };
                    self.v.flight = if freebsd {
                        self.fb_pipe()
                    } else {
                        self.snd_nxt - self.snd_una
                    };
                    self.v.snd_wnd = self.snd_wnd;
                    if !reduced_already && rack {
                        self.rack_rto_reduction();
                    } else if !reduced_already {
                        self.cc.cong_signal(&mut self.v, CongSignal::Rto);
                    }
                    // RFC 5681 §3.1: loss window of one segment.
                    self.v.cwnd = self.mss;
                    self.v.in_recovery = false;
                    let lost_before = self.sb.lost_bytes;
                    self.sb.mark_all_lost();
                    self.v.lost_pkts += self.pkts(self.sb.lost_bytes.saturating_sub(lost_before));
                    self.state = State::Loss {
                        recover: self.snd_nxt,
                    };
                    self.sync_ca_state();
                    self.tlp_deadline = None;
                    self.tlp_high_seq = None;
                    self.recover_guard = Some(self.snd_nxt);
                    self.dupacks = 0;
                    self.rto_count += 1;
                    self.rtt.backoff();
                    self.rto_deadline = Some(now + self.rtt.rto_ns);
                    self.event(now, SenderEvent::Rto);
                } else {
                    self.rto_deadline = None;
                }
            }
        }
        self.output(now, out, next_id);
    }
}

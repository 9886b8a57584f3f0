//! The Linux stack (`linux`): net/ipv4/tcp_input.c's ACK processing with RACK-TLP loss detection
//! (tcp_recovery.c), PRR (tcp_cwnd_reduction()), the kernel's CC hooks, and RFC 6675's send loop
//! under TCP Small Queues, TSO autosizing and pacing.

use super::core::Conn;
use super::detection::rack::Rack;
use super::detection::tlp::Tlp;
use super::reduction::linux_prr::{LinuxPrr, PrrAck, PrrVersion};
use super::reduction::rfc6675::Rfc6675;
use super::rfc::end_of_recovery;
use super::{SenderEvent, State};
// The enum-dispatch build calls the hooks on a concrete type, which needs the trait in scope.
#[cfg_attr(not(feature = "static-cc"), allow(unused_imports))]
use crate::cc::CcHooks;
use crate::cc::CongSignal;
use crate::net::packet::Packet;
use crate::time::{earliest, linux_timer_fire_ns, Ns, MS};

/// TCP_TIMEOUT_MIN_US (include/net/tcp.h): the 2 ms floor of the RACK and TLP timers.
const TCP_TIMEOUT_MIN_US_NS: Ns = 2 * MS;

/// The linux stack's own state: its recovery components, what every ACK reads or writes (RACK,
/// TLP) first, then what only recovery does (PRR, the rescue retransmission): see `TcpSender`.
#[repr(C)]
pub(super) struct LinuxStack {
    rack: Rack,
    tlp: Tlp,
    rfc6675: Rfc6675,
    prr: LinuxPrr,
    usage: CwndUsage,
    reorder: Reordering,
}

/// The reordering a SACK or cumulative ACK shows (tcp_sock's reordering, reord_seen and the end
/// of the highest SACKed segment), as tcp_input.c v6.18 measures it: tcp_sacktag_one() and
/// tcp_clean_rtx_queue() take the lowest never-retransmitted segment newly delivered below the
/// highest SACKed one, tcp_check_sack_reordering() raises `reordering` to the distance in
/// packets from there to the highest SACKed end when that exceeds it, and counts the event.
#[derive(Clone, Debug)]
struct Reordering {
    reordering: u32,
    reord_seen: u32,
    high_sack: u64,
}

/// net.ipv4.tcp_reordering and tcp_max_reordering's defaults.
const TCP_REORDERING: u32 = 3;
const TCP_MAX_REORDERING: u64 = 300;

impl Default for Reordering {
    fn default() -> Self {
        Reordering {
            reordering: TCP_REORDERING,
            reord_seen: 0,
            high_sack: 0,
        }
    }
}

impl Reordering {
    /// tcp_highest_sack_seq(): the end of the highest SACKed segment, snd_una when none is.
    fn fack(&self, c: &Conn) -> u64 {
        if c.sb.sacked_bytes == 0 {
            c.snd_una
        } else {
            self.high_sack
        }
    }

    /// After an ACK's intake (its delivered segments still listed), with tcp_highest_sack_seq()
    /// from before it.
    fn on_ack(&mut self, c: &Conn, prior_fack: u64) {
        let (mut high, mut reord_sack, mut reord_cum) = (prior_fack, u64::MAX, u64::MAX);
        let mut sacked: Vec<(u64, u64, bool)> = Vec::new();
        for d in c.sb.delivered() {
            let start = d.end - d.len as u64;
            if d.end > c.snd_una {
                sacked.push((start, d.end, d.retrans));
            } else if !d.retrans {
                reord_cum = reord_cum.min(start);
            }
        }
        sacked.sort_unstable();
        for (start, end, retrans) in sacked {
            if !retrans && start < high {
                reord_sack = reord_sack.min(start);
            }
            high = high.max(end);
        }
        self.high_sack = high;
        self.check(c, reord_sack);
        if reord_cum < prior_fack {
            self.check(c, reord_cum);
        }
    }

    /// tcp_check_sack_reordering().
    fn check(&mut self, c: &Conn, low_seq: u64) {
        let fack = self.fack(c);
        if low_seq >= fack {
            return;
        }
        let metric = fack - low_seq;
        if metric > self.reordering as u64 * c.mss {
            self.reordering = metric.div_ceil(c.mss).min(TCP_MAX_REORDERING) as u32;
        }
        self.reord_seen += 1;
    }
}

/// How fully the window is used (tcp_sock's is_cwnd_limited, max_packets_out, cwnd_usage_seq),
/// as tcp_cwnd_validate() tracks it at the end of each tcp_write_xmit() and
/// tcp_is_cwnd_limited() reads it on the next ACK (torvalds/linux net/ipv4/tcp_output.c and
/// include/net/tcp.h, v6.18).
#[derive(Clone, Debug, Default)]
struct CwndUsage {
    is_cwnd_limited: bool,
    max_packets_out: u64,
    cwnd_usage_seq: u64,
}

impl CwndUsage {
    /// tcp_cwnd_validate(): while the window in which the state was set is not yet acknowledged,
    /// a cwnd-limited send or (when not cwnd-limited) more packets out than before renews it.
    fn validate(&mut self, c: &Conn, is_cwnd_limited: bool) {
        let packets_out = c.sb.packets_out();
        if c.snd_una >= self.cwnd_usage_seq
            || is_cwnd_limited
            || (!self.is_cwnd_limited && packets_out > self.max_packets_out)
        {
            self.is_cwnd_limited = is_cwnd_limited;
            self.max_packets_out = packets_out;
            self.cwnd_usage_seq = c.snd_nxt;
        }
    }

    /// tcp_is_cwnd_limited(): cwnd-limited in this window, or in slow start while cwnd is
    /// below twice the most packets out ("ensure cwnd grows to twice what was ACKed").
    fn is_cwnd_limited(&self, c: &Conn) -> bool {
        self.is_cwnd_limited
            || (c.v.in_slow_start() && c.pkts(c.v.win.cwnd) < 2 * self.max_packets_out)
    }
}

impl LinuxStack {
    pub(super) fn new(prr: PrrVersion) -> Self {
        LinuxStack {
            rfc6675: Rfc6675::default(),
            prr: LinuxPrr::new(prr),
            rack: Rack::default(),
            tlp: Tlp::default(),
            usage: CwndUsage::default(),
            reorder: Reordering::default(),
        }
    }

    /// tp->reordering.
    pub(super) fn reordering(&self) -> u32 {
        self.reorder.reordering
    }

    pub(super) fn output(
        &mut self,
        c: &mut Conn,
        now: Ns,
        out: &mut Vec<Packet>,
        next_id: &mut u64,
    ) {
        if !c.output_begins(now) {
            return;
        }
        let nxt_before = c.snd_nxt;
        self.rfc6675.output(c, now, out, next_id);
        // tcp_write_xmit() ends with tcp_cwnd_validate() when it had new data to send and sent
        // some or found the window full (packets in flight >= cwnd).
        if c.written > nxt_before {
            let full = c.packets_in_flight() >= c.v.win.cwnd / c.mss;
            if c.snd_nxt > nxt_before || full {
                self.usage.validate(c, full);
            }
        }
        if c.snd_nxt > nxt_before {
            // tcp_write_xmit(): "Send one loss probe per tail loss episode" once new data went.
            self.schedule_tlp(c, now);
        }
    }

    pub(super) fn timer_deadline(&self, c: &Conn) -> Option<Ns> {
        let pace = c.pace_deadline(c.pacing_rate().is_some());
        earliest([
            c.rto_deadline,
            pace,
            c.tsq_wake,
            self.rack.reo_deadline,
            self.tlp.deadline,
        ])
    }

    /// Process an ACK in tcp_ack()'s order.
    pub(super) fn on_ack(
        &mut self,
        c: &mut Conn,
        p: &Packet,
        now: Ns,
        out: &mut Vec<Packet>,
        next_id: &mut u64,
    ) {
        c.v.now = now;
        let prior_fack = if c.sack {
            self.reorder.fack(c)
        } else {
            c.snd_una
        };
        let a = c.intake_ack(p, now, true, true);
        if c.sack {
            self.reorder.on_ack(c, prior_fack);
        }
        // RACK's min_rtt (tcp_update_rtt_min()) from the same ca_rtt.
        if let Some(r) = a.ca_rtt {
            c.rtt.observe_min(r);
        }
        let newly_lost = if c.sack { self.rack_detect(c, now) } else { 0 };
        let rs = c.rate_sample(now, &a, newly_lost);
        // Without SACK, tcp_try_undo_recovery() holds Recovery (and Loss) while snd_una equals
        // high_seq ("Hold old state until something *above* high_seq is ACKed. For Reno it is
        // MUST to prevent false fast retransmits (RFC2582)"), and tcp_fastretrans_alert()
        // returns there: nothing is marked lost on that ACK (tcp_input.c, v6.18).
        let reno_hold = !c.sack
            && matches!(c.state, State::Recovery { recover } | State::Loss { recover }
                if c.snd_una == recover);
        if !reno_hold {
            // tcp_end_cwnd_reduction(): cwnd = ssthresh, then CA_EVENT_COMPLETE_CWR
            // (Westwood+ sets its own window there); nothing when the module owns cwnd.
            end_of_recovery(c, &a, now, |c| {
                if !c.owns_cwnd {
                    c.v.win.cwnd = c.v.win.ssthresh;
                    c.cc.post_recovery(&c.view(), &mut c.v.win);
                }
            });
        }
        c.v.cwnd_limited = self.usage.is_cwnd_limited(c);
        c.sync_ca_state();
        // tcp_cong_control(): cong_avoid with the packets newly delivered (acked_sacked), only
        // when the ACK acknowledged data (tcp_may_raise_cwnd(), FLAG_DATA_ACKED).
        c.cc_ack(&a, a.delivered);
        let mut entered = false;
        if c.state == State::Open && c.snd_una < c.snd_nxt {
            // Linux tcp_time_to_recover(): recovery starts when a packet is marked lost (RACK
            // since b38a51fec1c1 "tcp: disable RFC6675 loss detection": no RFC 6675 IsLost
            // here). Without SACK, tcp_newreno_mark_lost() (tcp_recovery.c) marks the head lost
            // once dupacks (sacked_out) reach reordering (3); `enter_recovery` marks it.
            let trigger = if c.sack {
                c.sb.lost_bytes > 0
            } else {
                c.dupacks >= c.profile.dupthresh
            };
            // With SACK no RecoveryPoint holds a new episode back: tcp_fastretrans_alert() ends
            // Recovery once snd_una reaches high_seq and, on the same ACK, enters it again while
            // a packet is still marked lost (tcp_time_to_recover(): `return tp->lost_out != 0;`,
            // v6.18). Without SACK, RFC 6582's hold (tcp_is_non_sack_preventing_reopen()).
            let allowed = if c.sack {
                c.recover_guard.is_none_or(|r| c.snd_una >= r)
            } else {
                c.recovery_allowed()
            };
            if trigger && allowed {
                self.enter_recovery(c);
                entered = true;
            }
        }
        if let State::Recovery { .. } = c.state {
            // tcp_cong_control() -> tcp_cwnd_reduction() on every ACK in recovery, the entry ACK
            // included (unless the module owns cwnd), with tcp_ack()'s `delivered =
            // tcp_newly_delivered(...)` as acked_sacked: a duplicate ACK without SACK delivers one
            // (tcp_add_reno_sack()), a cumulative ACK over data SACKed before delivers only what
            // was not (tcp_clean_rtx_queue(); net/ipv4/tcp_input.c, v6.18).
            if !c.owns_cwnd {
                let ack = PrrAck {
                    newly_acked_sacked: c.pkts(a.delivered),
                    newly_lost: c.pkts(newly_lost),
                    una_advanced: a.acked > 0,
                };
                self.prr.reduce(c, ack);
            }
            if entered {
                c.event(now, SenderEvent::RecoveryStart);
            }
        }
        c.cong_control(rs);
        c.update_pacing_rate();
        self.output(c, now, out, next_id);
        self.tlp.on_ack(c, now);
        // tcp_ack() re-arms the probe (tcp_set_xmit_timer()) only when the ACK acknowledged data
        // (FLAG_SET_XMIT_TIMER from tcp_clean_rtx_queue(), tcp_input.c v6.18): a SACK alone,
        // or one the scoreboard cannot take (a partial segment's), leaves it where it was.
        if a.acked > 0 || !Tlp::may_schedule(c) {
            self.schedule_tlp(c, now);
        }
        c.note_completion(now);
    }

    /// tcp_rack_advance() for every segment this ACK delivered, then tcp_rack_mark_lost().
    /// Returns bytes newly marked lost.
    fn rack_detect(&mut self, c: &mut Conn, now: Ns) -> u64 {
        if !self.rack.advance(c, now) {
            return 0;
        }
        self.rack_mark_lost(c, now)
    }

    /// tcp_rack_detect_loss() with tcp_rack_reo_wnd(): the window
    /// is 0 in recovery or once `reordering` packets are SACKed, unless reordering was seen;
    /// else min(min_rtt/4, srtt):
    /// `min((tcp_min_rtt(tp) >> 2) * reo_wnd_steps, tp->srtt_us >> 3)`, where srtt_us holds
    /// 8 times the smoothed RTT (tcp_recovery.c tcp_rack_reo_wnd(), v6.18). "In recovery" is
    /// the state after the ACK's exit test: tcp_fastretrans_alert() leaves Recovery once
    /// snd_una reaches high_seq (step D, tcp_try_undo_recovery() -> TCP_CA_Open) and Loss in
    /// tcp_process_loss(), both before tcp_identify_packet_loss() marks.
    fn rack_mark_lost(&mut self, c: &mut Conn, now: Ns) -> u64 {
        // sacked_out in packets, a sub-MSS segment being one (tcp_skb_pcount()).
        let sacked_pkts = u64::from(c.sb.sacked_segs);
        let in_recovery = match c.state {
            State::Open => false,
            State::Recovery { recover } | State::Loss { recover } => c.snd_una < recover,
        };
        let r = &self.reorder;
        let reo_wnd = if r.reord_seen == 0 && (in_recovery || sacked_pkts >= r.reordering as u64) {
            0
        } else {
            (c.rtt.min_rtt_ns / 4).min(c.rtt.srtt_ns)
        };
        // tcp_rack_mark_lost(): the reordering timer in jiffies, usecs_to_jiffies(longest wait +
        // TCP_TIMEOUT_MIN_US), 2 ms (torvalds/linux 1c2709cfff1d "tcp: fix excessive TLP and
        // RACK timeouts from HZ rounding", v6.6; tcp_recovery.c as in v6.18).
        let (hz, phase) = (c.profile.hz, c.profile.jiffy_phase_ns);
        self.rack.mark_lost(c, now, reo_wnd, |w| {
            linux_timer_fire_ns(now, w + TCP_TIMEOUT_MIN_US_NS, hz, phase) - now
        })
    }

    /// tcp_schedule_loss_probe() (tcp_output.c, v6.18, after 1c2709cfff1d): PTO = 2 srtt plus
    /// TCP_RTO_MIN when one packet is out (the receiver may delay its ACK) else
    /// TCP_TIMEOUT_MIN_US (2 ms), in jiffies; 1 s before any RTT sample; never later than the
    /// RTO (the RTO itself is not on jiffies in the model: there the probe goes at its time).
    /// Only in the open state, with SACK, with data outstanding.
    fn schedule_tlp(&mut self, c: &Conn, now: Ns) {
        if !Tlp::may_schedule(c) {
            self.tlp.deadline = None;
            return;
        }
        let pto = if c.rtt.srtt_ns == 0 {
            c.profile.initial_rto_ns
        } else {
            let one_packet = c.snd_nxt - c.snd_una <= c.mss;
            2 * c.rtt.srtt_ns
                + if one_packet {
                    c.profile.min_rto_ns
                } else {
                    TCP_TIMEOUT_MIN_US_NS
                }
        };
        let mut at = linux_timer_fire_ns(now, pto, c.profile.hz, c.profile.jiffy_phase_ns);
        if let Some(rto) = c.rto_deadline {
            at = at.min(rto.max(now));
        }
        self.tlp.deadline = Some(at);
    }

    /// tcp_enter_recovery(): the CC sets ssthresh; tcp_init_cwnd_reduction(): cwnd is left as
    /// it is and PRR sets it on this very ACK (at least one packet: the fast retransmit). The
    /// event is recorded after that, with the cwnd a tcp_probe line would show.
    fn enter_recovery(&mut self, c: &mut Conn) {
        let recover = c.begin_recovery(c.snd_nxt - c.snd_una);
        c.sync_ca_state();
        c.recover_guard = Some(recover);
        if !c.sack {
            c.sb.mark_head_lost();
        }
        self.prr.begin(c);
    }

    /// A timer fired: tail loss probe, RACK reordering timeout, RTO, pacing release.
    pub(super) fn on_timer(
        &mut self,
        c: &mut Conn,
        now: Ns,
        out: &mut Vec<Packet>,
        next_id: &mut u64,
    ) {
        c.timer_begins(now);
        self.tlp.on_timer(c, now, out, next_id);
        if self.rack.reo_timer_expired(now) {
            // tcp_rack_reo_timeout(): waited long enough for reordering; mark and recover
            // (`if (inet_csk(sk)->icsk_ca_state != TCP_CA_Recovery) tcp_enter_recovery()`: no
            // RecoveryPoint holds it back, as on an ACK with SACK).
            let open = c.state == State::Open && c.snd_una < c.snd_nxt;
            if self.rack_mark_lost(c, now) > 0 && open {
                self.enter_recovery(c);
                // tcp_cwnd_reduction(sk, 1, 0, 0)
                if !c.owns_cwnd {
                    let ack = PrrAck {
                        newly_acked_sacked: 1,
                        newly_lost: 0,
                        una_advanced: false,
                    };
                    self.prr.reduce(c, ack);
                }
                c.event(now, SenderEvent::RecoveryStart);
            }
        }
        if c.rto_due(now) {
            if c.snd_una < c.snd_nxt {
                let reduced_already = c.reduced_in_window();
                c.v.flight = c.snd_nxt - c.snd_una;
                if !reduced_already {
                    c.cc.cong_signal(&c.view(), &mut c.v.win, CongSignal::Rto);
                }
                c.enter_loss(now);
                self.tlp.cancel();
            } else {
                c.rto_deadline = None;
            }
        }
        self.output(c, now, out, next_id);
    }
}

#[cfg(test)]
mod tests {
    use super::super::core::Conn;
    use super::super::TcpSender;
    use super::{LinuxStack, Tlp};
    use std::mem::{align_of, offset_of, size_of};

    fn size_of_field<T>(_: impl Fn(&Conn) -> &T) -> usize {
        size_of::<T>()
    }

    /// `Conn`'s hot group comes last and the stack's per-ACK state right after it, so that what a
    /// Linux sender's ACK touches is one run of at most 15 cache lines (Rust's own order spread
    /// it over ~20 of 21).
    #[test]
    fn hot_fields_come_last() {
        macro_rules! ends {
            ($($f:ident),*) => { [$(offset_of!(Conn, $f) + size_of_field(|c: &Conn| &c.$f)),*] };
        }
        macro_rules! starts {
            ($($f:ident),*) => { [$(offset_of!(Conn, $f)),*] };
        }
        // What the ACK path and the simulation's calls after it read or write ...
        macro_rules! hot {
            ($m:ident) => {
                $m!(
                    rtt,
                    snd_una,
                    snd_nxt,
                    written,
                    mss,
                    start_ns,
                    bytes_sent,
                    retrans_segs,
                    state,
                    app,
                    completed_at,
                    profile,
                    started,
                    timestamps,
                    sack,
                    record_sends,
                    tsq_throttled,
                    owns_cwnd,
                    cc_paces,
                    v,
                    snd_wnd,
                    sndbuf_now,
                    sndbuf,
                    write_bytes,
                    round_end,
                    pace_next,
                    pacing_rate_set,
                    nic_backlog,
                    rto_deadline,
                    last_send,
                    tsq_wake,
                    cc,
                    flow,
                    dst,
                    dupacks,
                    sb,
                    events,
                    sends,
                    ecn
                )
            };
        }
        let hot_start = *hot!(starts).iter().min().unwrap();
        let hot_end = *hot!(ends).iter().max().unwrap();
        // ... comes after what only setup, recovery, timeouts and the records read ...
        let cold = ends!(
            rate,
            hs,
            recover_guard,
            recovery_out_segs,
            recovery_out_bytes,
            rto_count,
            recoveries
        );
        assert!(
            cold.iter().all(|&e| e <= hot_start),
            "{cold:?}, hot from {hot_start}"
        );
        // ... and ends the core (but for padding), so the stack's state follows it ...
        assert!(size_of::<Conn>() - hot_end < align_of::<Conn>());
        assert_eq!(offset_of!(TcpSender, stack), size_of::<Conn>());
        // ... whose per-ACK part (the tag, RACK and TLP state) comes first.
        let tag = align_of::<LinuxStack>(); // `repr(u8)`: the component after a one-byte tag
        let stack_hot_end = tag + offset_of!(LinuxStack, tlp) + size_of::<Tlp>();
        assert!(offset_of!(LinuxStack, rfc6675) >= stack_hot_end - tag);
        assert!(offset_of!(LinuxStack, prr) >= stack_hot_end - tag);
        let run_start = offset_of!(TcpSender, core) + hot_start;
        let run_end = offset_of!(TcpSender, stack) + stack_hot_end;
        assert_eq!(align_of::<TcpSender>(), 64);
        // The enum-dispatch build (`static-cc`) holds the CC module's state in place of the
        // 16-byte box pointer, inside the run: hot as well, its lines not counted here.
        if cfg!(not(feature = "static-cc")) {
            let lines = (run_end - 1) / 64 - run_start / 64 + 1;
            assert!(lines <= 15, "{lines} lines: bytes {run_start}..{run_end}");
        }
    }
}

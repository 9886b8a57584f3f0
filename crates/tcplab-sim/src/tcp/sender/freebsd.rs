//! FreeBSD's default TCP stack (`net.inet.tcp.functions_default=freebsd`): ACK processing with
//! SACK fast recovery and PRR, and the output rules that size sends by byte differences of the
//! window, before and after review D43470.
//!
//! Followed: sys/netinet/tcp_input.c tcp_do_segment() (dupack counting, `enter_recovery`,
//! `resume_partialack`, process_ACK) and tcp_do_prr_ack() as read at freebsd/freebsd-src
//! @ 2bae602e; tcp_output.c (SACK hole retransmission, new data in recovery, silly-window
//! avoidance, TSO) and tcp_sack.c tcp_sack_output()/tcp_sack_partialack() as read in F-Stack's
//! vendored FreeBSD (F-Stack/f-stack @ 831d8a29); the application's writes as uipc_socket.c
//! sosend_generic() and the sowwakeup() in tcp_do_segment()'s process_ACK allow them, with iperf3's
//! select() loop (esnet/iperf iperf_client_api.c). The post-D43470 lines (entry cwnd = pipe + MSS
//! then ssthresh; PRR cwnd = pipe + sndcnt) follow the review's description in
//! shared/stack-models.md; the diff itself was not available to read (docs/models.md).

use super::*;
use crate::stack::FreeBsdRecovery;

/// FreeBSD's `sackhint` PRR fields, in bytes.
#[derive(Clone, Debug, Default)]
pub(super) struct FbState {
    /// Bytes delivered (cumulatively acked or SACKed) since recovery began.
    prr_delivered: u64,
    /// Bytes sent since recovery began (incremented by `emit`).
    pub(super) prr_out: u64,
    /// Flight size when recovery began.
    recover_fs: u64,
    /// Segments sent by limited transmit (tcp_input.c `snd_limited`).
    snd_limited: u64,
}

impl TcpSender {
    /// tcp_compute_pipe() with net.inet.tcp.newsack: snd_max - snd_una + sack_bytes_rexmit -
    /// sacked_bytes. Holes not yet retransmitted count as in flight.
    pub(super) fn fb_pipe(&self) -> u64 {
        (self.snd_nxt - self.snd_una + self.sb.retrans_bytes).saturating_sub(self.sb.sacked_bytes)
    }

    /// One incoming ACK, in the order tcp_do_segment() handles it.
    pub(super) fn on_ack_freebsd(
        &mut self,
        k: FreeBsdRecovery,
        p: &Packet,
        now: Ns,
        out: &mut Vec<Packet>,
        next_id: &mut u64,
    ) {
        self.snd_wnd = p.rwnd;
        self.v.snd_wnd = p.rwnd;
        // tcp_sack_doack(): the scoreboard first; sack_changed when it learned something.
        let newly_sacked = if self.sack {
            self.sb.sack(p.sack_blocks(), self.snd_una)
        } else {
            0
        };
        let sack_changed = newly_sacked > 0;
        let acked = if p.ack > self.snd_una && p.ack <= self.snd_nxt {
            p.ack - self.snd_una
        } else {
            0
        };
        self.sb.clear_delivered();
        let in_fr = matches!(self.state, State::Recovery { .. });
        // tcp_sack_output() retransmits every hole below the highest SACKed byte.
        let new_loss = in_fr && self.sb.mark_losses(1) > 0;

        if acked == 0 {
            let outstanding = self.snd_nxt > self.snd_una;
            // Only ACKs at snd_una carrying new SACK information count (tcp_input.c: "Acks with
            // SACK but without any new SACK information ... should not affect dupack counting").
            if p.ack != self.snd_una || !outstanding || (self.sack && !sack_changed) {
                return;
            }
            if self.rto_deadline.is_none() || matches!(self.state, State::Loss { .. }) {
                self.dupacks = 0;
                return;
            }
            self.dupacks += 1;
            if self.dupacks > self.profile.dupthresh || in_fr {
                if in_fr && k.prr {
                    self.fb_prr_ack(k, newly_sacked, new_loss);
                } else if in_fr {
                    // Without PRR: inflate by one segment per dupack while pipe < ssthresh.
                    if self.fb_pipe() < self.v.ssthresh {
                        self.v.cwnd = (self.v.cwnd + self.mss).min(self.v.ssthresh);
                    }
                } else {
                    self.v.cwnd += self.mss;
                }
                self.output(now, out, next_id);
            } else if self.dupacks == self.profile.dupthresh || self.sb.sacked_bytes > 2 * self.mss
            {
                self.fb_enter_recovery(k, now, out, next_id);
            } else {
                self.fb_limited_transmit(now, out, next_id);
            }
            return;
        }

        // An ACK that advances snd_una. The scoreboard forgets what is now cumulatively acked
        // (tcp_sack_doack() trims the holes); snd_una itself moves later, in process_ACK.
        let karn = self.sb.ack(p.ack);
        self.sb.clear_delivered();
        self.dupacks = 0;
        if sack_changed {
            self.dupacks += 1;
            if !in_fr && self.state == State::Open && self.sb.sacked_bytes > 2 * self.mss {
                self.fb_enter_recovery(k, now, out, next_id);
            }
        }
        let mut exited = false;
        if let State::Recovery { recover } = self.state {
            if p.ack < recover {
                // resume_partialack: PRR only for an ACK that carries SACK blocks
                // (`V_tcp_do_prr && to.to_flags & TOF_SACK`); a pure cumulative partial ACK (the
                // receiver holds nothing out of order) goes to tcp_sack_partialack() even with
                // PRR on, and its cap at ssthresh is a byte budget, not whole segments.
                if k.prr && !p.sack_blocks().is_empty() {
                    self.rto_deadline = None;
                    self.fb_prr_ack(k, acked + newly_sacked, new_loss);
                } else {
                    self.fb_sack_partialack(p.ack, acked, acked + newly_sacked);
                }
            } else {
                // cc_post_recovery() sees pipe before snd_una moves.
                self.v.flight = self.fb_pipe();
                self.cc.post_recovery(&mut self.v);
                exited = true;
            }
        }

        // process_ACK: RTT from the timestamp echo in ticks plus one (tcp_xmit_timer(tp,
        // TCP_TS_TO_TICKS(t) + 1)), or from the timed segment without timestamps.
        let sample = if self.timestamps {
            Some(((now - p.ts_ecr) / crate::time::MS + 1) * crate::time::MS)
        } else {
            karn.map(|t| now - t)
        };
        if let Some(r) = sample {
            self.rtt.sample(r);
            self.v.srtt_ns = self.rtt.srtt_ns;
            self.v.min_rtt_ns = self.rtt.min_rtt_ns;
            self.v.rtt_samples = self.rtt.samples;
        }
        // cc_ack_received(CC_ACK) runs before EXIT_RECOVERY, so the ACK that ends recovery does
        // not grow cwnd. CCF_CWND_LIMITED: cwnd <= snd_wnd (without newcwv).
        self.v.cwnd_limited = self.v.cwnd <= self.snd_wnd;
        self.v.bytes_this_ack = acked;
        self.v.after_rto = matches!(self.state, State::Loss { .. }) && self.sb.lost_bytes > 0;
        self.cc.ack_received(&mut self.v, AckKind::Ack);
        self.snd_una = p.ack;
        self.v.snd_una = self.snd_una;
        self.v.snd_nxt = self.snd_nxt;
        self.rto_deadline = (self.snd_una < self.snd_nxt).then(|| now + self.rtt.rto_ns);
        if exited {
            self.state = State::Open;
            self.v.in_recovery = false;
            self.event(now, SenderEvent::RecoveryEnd);
        }
        if let State::Loss { recover } = self.state {
            if self.snd_una >= recover {
                self.state = State::Open;
                self.v.after_rto = false;
                self.event(now, SenderEvent::LossEnd);
            }
        }
        if self.snd_una >= self.round_end {
            self.round_end = self.snd_nxt;
            self.cc.new_round(&mut self.v);
        }
        // tcp_do_segment() ends with tcp_output() on the buffer as it is; the application, woken
        // by sowwakeup() after sbcut_locked() freed space, writes only after that.
        self.output(now, out, next_id);
        if acked > 0 {
            self.fb_app_write(k, now, out, next_id);
        }
    }

    /// The application's write(2) (sys/kern/uipc_socket.c sosend_generic(); blocking, or iperf3's
    /// non-blocking write after select()). It runs only when woken: at the start, and by
    /// sowwakeup() when an ACK frees send-buffer space
    /// (tcp_input.c process_ACK: sbcut_locked(), then sowwakeup_locked()); it holds the inpcb
    /// lock only after tcp_do_segment() is done, so the ACK's own tcp_output() sees the buffer
    /// before the refill. It copies what fits once sb_lowat bytes are free and each copy calls
    /// tcp_output() (tcp_usr_send()), whose send-buffer autosizing may make room for more.
    /// Growing the buffer (tcp_sndbuf_autoscale() -> sbreserve_locked()) wakes nobody, so
    /// during a recovery that does not advance snd_una the unsent data runs down and the last
    /// TSO chunk before it runs out ends in a partial segment (tcp_output.c sends the fraction
    /// "when the send sockbuf can be emptied").
    pub(super) fn fb_app_write(
        &mut self,
        k: FreeBsdRecovery,
        now: Ns,
        out: &mut Vec<Packet>,
        next_id: &mut u64,
    ) {
        // Terminates: each pass writes only into buffer space that autosizing added, and the
        // buffer is bounded by sendbuf_max.
        loop {
            let before = self.written;
            self.app_fill(now);
            if self.written == before {
                return;
            }
            self.output_freebsd(k, now, out, next_id);
        }
    }

    /// tcp_input.c `enter_recovery` with SACK.
    fn fb_enter_recovery(
        &mut self,
        k: FreeBsdRecovery,
        now: Ns,
        out: &mut Vec<Packet>,
        next_id: &mut u64,
    ) {
        let recover = self.snd_nxt;
        self.dupacks = self.profile.dupthresh;
        // cc_cong_signal(CC_NDUPACK) sets ssthresh from cwnd; cc_ack_received(CC_DUPACK) is a
        // no-op for newreno and cubic.
        self.v.flight = self.fb_pipe();
        self.cc.cong_signal(&mut self.v, CongSignal::NDupAck);
        self.v.in_recovery = true;
        self.state = State::Recovery { recover };
        self.recoveries += 1;
        self.sb.mark_losses(1);
        // PRR state: prr_delivered = maxseg ("exclude Limited Transmit segments"),
        // recover_fs = snd_nxt - snd_una.
        self.fb = FbState {
            prr_delivered: self.mss,
            prr_out: 0,
            recover_fs: (self.snd_nxt - self.snd_una).max(1),
            snd_limited: 0,
        };
        self.rto_deadline = None;
        // The episode's start is recorded with the cwnd its first retransmission leaves with
        // (what SIFTR2 logs beside that packet), as on every stack.
        if k.d43470 {
            // One retransmission beyond what is in flight, then the window is ssthresh.
            self.v.cwnd = self.fb_pipe() + self.mss;
            self.output(now, out, next_id);
            self.event(now, SenderEvent::RecoveryStart);
            self.v.cwnd = self.v.ssthresh;
        } else {
            // snd_cwnd = maxseg; tcp_output(): exactly the first hole's first segment.
            self.v.cwnd = self.mss;
            self.output(now, out, next_id);
            self.event(now, SenderEvent::RecoveryStart);
        }
        if self.rto_deadline.is_none() && self.snd_una < self.snd_nxt {
            // Nothing was retransmittable: the timer stays the way out.
            self.rto_deadline = Some(now + self.rtt.rto_ns);
        }
    }

    /// tcp_do_prr_ack(): RFC 6937 in bytes, then cwnd in whole segments of allowance.
    fn fb_prr_ack(&mut self, k: FreeBsdRecovery, del_data: u64, new_loss: bool) {
        let State::Recovery { recover } = self.state else {
            return;
        };
        let mss = self.mss as i64;
        let pipe = self.fb_pipe() as i64;
        let ssthresh = self.v.ssthresh as i64;
        self.fb.prr_delivered += del_data;
        let (delivered, prr_out) = (self.fb.prr_delivered as i64, self.fb.prr_out as i64);
        let snd_cnt = if pipe >= ssthresh {
            // Proportional part: howmany(prr_delivered * ssthresh, recover_fs) - prr_out, plus
            // maxseg - 1 so that the division by maxseg below rounds up.
            let rfs = self.fb.recover_fs as i64;
            (delivered * ssthresh + rfs - 1) / rfs - prr_out + mss - 1
        } else {
            // Slow-start reduction bound; conservative on new loss or when nothing was delivered.
            let limit = if new_loss || del_data == 0 {
                delivered - prr_out
            } else {
                (delivered - prr_out).max(del_data as i64) + mss
            };
            (ssthresh - pipe).min(limit)
        };
        let snd_cnt = (snd_cnt.max(0) / mss) as u64;
        let cwnd = if k.d43470 {
            // cwnd = pipe - del_data + sndcnt * maxseg: what stays in flight after this ACK plus
            // the allowance (fb_pipe() here already excludes this ACK's data).
            self.fb_pipe() + snd_cnt * self.mss
        } else {
            // What recovery has sent and is still out, plus the allowance.
            (self.snd_nxt - recover) + self.sb.retrans_bytes + snd_cnt * self.mss
        };
        self.v.cwnd = cwnd.max(self.mss);
    }

    /// tcp_sack.c tcp_sack_partialack() (a partial ACK without SACK blocks, or any partial ACK
    /// without PRR): room for one more segment, two if the ACK covered at least two, never above
    /// ssthresh; then the RFC 6675 rescue retransmission as FreeBSD does it: when this ACK
    /// delivered data, left no hole in the scoreboard and nothing was sent beyond the recovery
    /// point, the last maxseg bytes below snd_max become a hole (whatever segments they cut).
    fn fb_sack_partialack(&mut self, ack: u64, acked: u64, delivered: u64) {
        let State::Recovery { recover } = self.state else {
            return;
        };
        self.rto_deadline = None;
        let num_segs = if acked / self.mss >= 2 { 2 } else { 1 };
        let cwnd = self.sb.retrans_bytes + (self.snd_nxt - recover) + num_segs * self.mss;
        self.v.cwnd = cwnd.min(self.v.ssthresh);
        let no_holes = self.sb.sacked_bytes == 0 && self.sb.lost_bytes == 0;
        if recover == self.snd_nxt && no_holes && delivered > 0 {
            let start = ack.max(self.snd_nxt.saturating_sub(self.mss));
            self.sb.mark_range_lost(start, self.snd_nxt);
        }
    }

    /// RFC 3042 limited transmit on the first two dupacks (tcp_input.c, net.inet.tcp.rfc3042).
    fn fb_limited_transmit(&mut self, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        if self.dupacks == 1 {
            self.fb.snd_limited = 0;
        }
        let old_cwnd = self.v.cwnd;
        let old_max = self.snd_nxt;
        let dup = self.dupacks as u64;
        self.v.cwnd =
            (self.snd_nxt - self.snd_una) + dup.saturating_sub(self.fb.snd_limited) * self.mss;
        self.output(now, out, next_id);
        let sent = self.snd_nxt - old_max;
        if sent > self.mss {
            self.fb.snd_limited = 2;
        } else if sent > 0 {
            self.fb.snd_limited += 1;
        }
        self.v.cwnd = old_cwnd;
    }

    /// tcp_output.c: holes first (in fast recovery, and the go-back-N resend after an RTO), then
    /// new data, each sized by a byte difference of the window.
    pub(super) fn output_freebsd(
        &mut self,
        k: FreeBsdRecovery,
        now: Ns,
        out: &mut Vec<Packet>,
        next_id: &mut u64,
    ) {
        self.fb_sndbuf_autosize();
        self.restart_after_idle(now);
        self.tsq_throttled = false;
        let tsq_limit = self.tsq_limit();
        loop {
            let sendwin = self.snd_wnd.min(self.v.cwnd);
            let off = self.snd_nxt - self.snd_una;
            let hole = match self.state {
                // "Do not retransmit SACK segments beyond snd_recover."
                State::Recovery { recover } => {
                    self.sb.next_lost().filter(|&(seq, _)| seq < recover)
                }
                State::Loss { .. } => self.sb.next_lost(),
                State::Open => None,
            };
            if let Some((seq, seg_len)) = hole {
                let budget = match self.state {
                    // After D43470 the window is compared with pipe; before it, cwnd counts the
                    // bytes retransmitted (cwin = min(snd_wnd, cwnd) - sack_bytes_rexmit).
                    State::Recovery { .. } if k.d43470 => sendwin.saturating_sub(self.fb_pipe()),
                    State::Recovery { .. } => sendwin.saturating_sub(self.sb.retrans_bytes),
                    _ => sendwin.saturating_sub(self.sb.pipe(off, self.mss)),
                };
                // A retransmission is sent even when shorter than a segment (sack_rxmit and
                // snd_nxt < snd_max bypass silly-window avoidance).
                let len = budget.min(seg_len as u64);
                if len == 0 {
                    self.v.cwnd_limited = true;
                    break;
                }
                if self.tsq_blocks(len, true, tsq_limit) {
                    break;
                }
                if len < seg_len as u64 {
                    self.sb.split_at(seq + len);
                }
                self.emit(seq, len, true, now, out, next_id);
                continue;
            }
            let unsent = self.written - self.snd_nxt;
            if unsent == 0 {
                self.v.cwnd_limited = false;
                break;
            }
            let wnd_room = self.snd_wnd.saturating_sub(off);
            let budget = match self.state {
                State::Recovery { .. } if k.d43470 => {
                    sendwin.saturating_sub(self.fb_pipe()).min(wnd_room)
                }
                // New data while retransmissions are out: snd_cwnd - (snd_nxt - snd_recover) -
                // sack_bytes_rexmit.
                State::Recovery { recover } if self.sb.retrans_bytes > 0 => (self
                    .v
                    .cwnd
                    .saturating_sub(self.snd_nxt - recover + self.sb.retrans_bytes))
                .min(wnd_room),
                State::Loss { .. } => sendwin
                    .saturating_sub(self.sb.pipe(off, self.mss))
                    .min(wnd_room),
                _ => sendwin.saturating_sub(off),
            };
            let mut len = unsent.min(budget);
            if len == 0 {
                self.v.cwnd_limited = true;
                break;
            }
            if len < self.mss {
                // Silly-window avoidance: a runt only when it empties the buffer and nothing is
                // outstanding (idle; iperf3 leaves TCP_NODELAY off).
                if !(len == unsent && off == 0) {
                    self.v.cwnd_limited = true;
                    break;
                }
            } else if len > self.mss {
                // TSO: up to the burst limit, whole segments unless the buffer empties.
                len = len.min(self.profile.tso_max_bytes.max(self.mss));
                if self.snd_nxt + len < self.written {
                    len -= len % self.mss;
                }
            }
            let mut left = len;
            let mut blocked = false;
            while left > 0 {
                let seg = left.min(self.mss);
                if self.tsq_blocks(seg, false, tsq_limit) {
                    blocked = true;
                    break;
                }
                self.emit(self.snd_nxt, seg, false, now, out, next_id);
                left -= seg;
            }
            if blocked {
                break;
            }
        }
    }

    /// tcp_output.c send-buffer autosizing: grow by sendbuf_inc while the buffer is 7/8 full, the
    /// peer's window could take 5/4 of it, and the window could take all unsent data.
    pub(super) fn fb_sndbuf_autosize(&mut self) {
        let SndbufPolicy::FreeBsdInc(inc) = self.profile.sndbuf else {
            return;
        };
        let hiwat = self.sndbuf_now;
        let sbused = self.written - self.snd_una;
        let sendwin = self.snd_wnd.min(self.v.cwnd);
        if sbused >= hiwat / 8 * 7
            && hiwat < self.sndbuf
            && self.snd_wnd / 4 * 5 >= hiwat
            && sendwin >= sbused - (self.snd_nxt - self.snd_una)
        {
            self.sndbuf_now = (hiwat + inc).min(self.sndbuf);
        }
    }
}

//! The ACK intake the RFC 6675 family of stacks (rfc, linux, freebsd-rack) shares: window,
//! SACK scoreboard, cumulative ACK with its RTT sample, dupack counting, Linux's ca_rtt, the CC's
//! per-ACK hooks and the delivery-rate sample.

use super::core::Conn;
use super::State;
// The enum-dispatch build calls the hooks on a concrete type, which needs the trait in scope.
#[cfg_attr(not(feature = "static-cc"), allow(unused_imports))]
use crate::cc::{CcHooks, LinuxCcOps};
use crate::net::packet::Packet;
use crate::time::Ns;

/// What the common intake of an ACK found (RFC 6675 / Linux tcp_ack() order).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct AckIntake {
    /// Not an old, reordered ACK.
    pub fresh: bool,
    /// Bytes newly acknowledged cumulatively.
    pub acked: u64,
    /// Bytes newly SACKed.
    pub newly_sacked: u64,
    /// Whether it counted as a duplicate ACK.
    pub dup: bool,
    /// The RTO estimator's sample from this ACK (timestamp echo or Karn).
    pub rtt_sample: Option<Ns>,
    /// Linux's ca_rtt, when the stack asked for it.
    pub ca_rtt: Option<Ns>,
    /// Packets in flight before the ACK, for a module that owns cwnd.
    pub prior_in_flight: u64,
    /// Bytes newly delivered (Linux tp->delivered's growth, in bytes): newly SACKed bytes plus
    /// cumulatively acknowledged bytes that were not SACKed before. Linux stack only (0 else).
    pub delivered: u64,
}

impl Conn {
    /// The common first part of ACK processing of the RFC 6675 family of stacks (rfc, linux,
    /// freebsd-rack): window, SACK scoreboard, cumulative ACK with its RTT sample and RTO restart,
    /// duplicate-ACK counting, Linux's ca_rtt when `want_ca_rtt`, and the CC's per-ACK hooks
    /// (`linux_cc`: the module gets ca_rtt as its sample).
    pub(super) fn intake_ack(
        &mut self,
        p: &Packet,
        now: Ns,
        want_ca_rtt: bool,
        linux_cc: bool,
    ) -> AckIntake {
        self.snd_wnd = p.rwnd as u64;
        let sacked_before = self.sb.sacked_bytes;
        let mut a = AckIntake {
            fresh: p.ack >= self.snd_una,
            ..Default::default()
        };
        a.prior_in_flight = if self.owns_cwnd {
            self.pkts(self.pipe())
        } else {
            0
        };
        a.newly_sacked = if self.sack {
            self.sb.sack(&p.sack_blocks(), self.snd_una)
        } else {
            0
        };
        // `delivered` now holds the segments this ACK newly SACKed; the cumulative ACK adds its own.
        let newly_sacked_segs = self.sb.delivered().len();
        if p.ack > self.snd_una && p.ack <= self.snd_nxt {
            self.cumulative_ack(p, now, &mut a, linux_cc, newly_sacked_segs);
        } else if linux_cc && a.fresh && newly_sacked_segs > 0 {
            // An ACK that only SACKs: Linux samples the RTT from what it SACKed.
            let (seq_rtt, ca_rtt) = self.linux_rtt(p, now, newly_sacked_segs, false, false);
            self.linux_take_rtt(seq_rtt, ca_rtt, &mut a);
        }
        if a.acked == 0
            && p.ack == self.snd_una
            && self.snd_nxt > self.snd_una
            && (a.newly_sacked > 0 || !self.sack)
        {
            a.dup = true;
            self.dupacks += 1;
            if !self.sack {
                let before = self.sb.reno_sacked_segs;
                self.sb.reno_sacked_segs = (before + 1).min(self.sb.len() as u32);
                // tcp_add_reno_sack(): tp->delivered grows by the dupacks counted.
                a.delivered = u64::from(self.sb.reno_sacked_segs - before) * self.mss;
            }
        }
        if linux_cc && self.sack {
            // tcp_sacktag_write_queue() counts newly SACKed packets delivered; tcp_clean_rtx_queue()
            // counts only the acknowledged ones not SACKed before (torvalds/linux
            // net/ipv4/tcp_input.c, tcp_count_delivered(), v6.18). The SACKed bytes this ACK
            // acknowledged left `sacked_bytes`, so: acked + sacked_after - sacked_before.
            a.delivered = (a.acked + self.sb.sacked_bytes).saturating_sub(sacked_before);
        }
        // tcp_clean_rtx_queue() / tcp_sacktag: ca_rtt from the newest never-retransmitted packet
        // this ACK delivered (acked or SACKed), by its send time, not the timestamp echo (which
        // follows the earliest unacknowledged segment and so includes a delayed ACK's wait).
        // The linux stack took Linux's own (linux_rtt()).
        a.ca_rtt = if linux_cc {
            a.ca_rtt
        } else if want_ca_rtt {
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
        if a.fresh {
            // tcp_ack(): tcp_in_ack_event() once snd_una has moved, then tcp_clean_rtx_queue()'s
            // pkts_acked with the ACK's RTT sample (the state is still the one before this ACK).
            // Linux hands the module ca_rtt (ack_sample.rtt_us = rate->rtt_us, tcp_ack_update_rtt()),
            // falling back to the timestamp echo when only retransmitted data was acknowledged.
            self.v.snd_nxt = self.snd_nxt;
            self.v.delivered_bytes_this_ack = a.acked + a.newly_sacked;
            let slow_path = a.acked == 0 || p.nsack > 0;
            self.cc
                .in_ack_event(&self.view(), &mut self.v.win, slow_path);
            if a.acked > 0 {
                let pkts = self.pkts(a.acked) as u32;
                let sample = if linux_cc {
                    a.ca_rtt.or(a.rtt_sample)
                } else {
                    a.rtt_sample
                };
                self.cc
                    .pkts_acked(&self.view(), &mut self.v.win, pkts, sample);
            }
        }
        a
    }

    /// An ACK that advances snd_una: scoreboard, RTT sample, NewReno's presumed departures, RTO.
    fn cumulative_ack(
        &mut self,
        p: &Packet,
        now: Ns,
        a: &mut AckIntake,
        linux: bool,
        newly_sacked_segs: usize,
    ) {
        a.acked = p.ack - self.snd_una;
        let acked = self.sb.ack(p.ack);
        if linux {
            // tcp_ack() moves snd_una (tcp_snd_una_update()) before tcp_clean_rtx_queue()
            // samples: tcp_rtt_estimator()'s `after(tp->snd_una, tp->rtt_seq)` sees the new one.
            self.snd_una = p.ack;
            let (seq_rtt, ca_rtt) = self.linux_rtt(p, now, newly_sacked_segs, acked.retrans, true);
            self.linux_take_rtt(seq_rtt, ca_rtt, a);
        } else {
            let sample = self.ack_rtt(p, acked.karn_sent_at, now, false);
            self.snd_una = p.ack;
            if let Some(r) = sample {
                self.take_rtt_sample(r);
                self.v.pacing_rate_bytes = self.linux_pacing_rate_bytes();
                a.rtt_sample = Some(r);
            }
        }
        self.dupacks = 0;
        if !self.sack && (linux || matches!(self.state, State::Recovery { .. })) {
            // Linux tcp_remove_reno_sacks() (tcp_input.c, v6.18; tcp_clean_rtx_queue() calls it
            // on every cumulative ACK, in any state): the ACK accounts for acked - 1 presumed
            // departures and delivers max(acked - sacked_out, 1) packets.
            let acked_segs = a.acked.div_ceil(self.mss);
            let sacked = u64::from(self.sb.reno_sacked_segs);
            a.delivered = acked_segs.saturating_sub(sacked).max(1) * self.mss;
            self.sb.reno_sacked_segs = sacked.saturating_sub(acked_segs - 1) as u32;
        }
        // RFC 6298 §5.2, §5.3: stop the timer when all is acked, else restart it.
        self.rto_deadline = (self.snd_una < self.snd_nxt).then(|| self.rto_at(now));
    }

    /// Linux's RTT samples from one ACK (net/ipv4/tcp_input.c, v6.18): tcp_clean_rtx_queue()
    /// times the oldest (seq_rtt, `first_ackt`) and the newest (ca_rtt, `last_ackt`) skb the ACK
    /// acknowledged that was never SACKed, and nothing when one of them was ever retransmitted
    /// (FLAG_RETRANS_DATA_ACKED: Karn); tcp_sacktag_one() times the lowest and highest never-
    /// retransmitted skbs it newly SACKs (`first_sackt`, `last_sackt`; the blocks are walked in
    /// sequence order), whose pair gives ca_rtt, and seq_rtt when the ACK gave none; then
    /// tcp_ack_update_rtt() falls back to the timestamp echo (`seq_rtt_us = ca_rtt_us =
    /// tcp_rtt_tsopt_us(tp, 1)`, whole milliseconds) only when the ACK acknowledged data
    /// (FLAG_ACKED). `newly_sacked_segs`: the first entries of the scoreboard's `delivered`.
    /// Returns (seq_rtt for srtt and the RTO, ca_rtt for min_rtt and the module).
    fn linux_rtt(
        &self,
        p: &Packet,
        now: Ns,
        newly_sacked_segs: usize,
        acked_retrans: bool,
        data_acked: bool,
    ) -> (Option<Ns>, Option<Ns>) {
        let (sacked, acked) = self.sb.delivered().split_at(newly_sacked_segs);
        let since = |t: Ns| now.saturating_sub(t);
        let (mut seq_rtt, mut ca_rtt) = (None, None);
        if !acked_retrans {
            if let (Some(first), Some(last)) = (acked.first(), acked.last()) {
                (seq_rtt, ca_rtt) = (Some(since(first.sent_at)), Some(since(last.sent_at)));
            }
        }
        let clean = || sacked.iter().filter(|d| !d.retrans);
        if let (Some(first), Some(last)) =
            (clean().min_by_key(|d| d.end), clean().max_by_key(|d| d.end))
        {
            seq_rtt = seq_rtt.or(Some(since(first.sent_at)));
            ca_rtt = Some(since(last.sent_at));
        }
        if seq_rtt.is_none() && self.timestamps && p.ts_ecr > 0 && data_acked {
            // tcp_rtt_tsopt_us(): the ms clock's difference, at least min_delay (1 µs).
            let ms = crate::time::MS;
            let r = (now / ms).saturating_sub(p.ts_ecr / ms) * ms;
            let r = r.max(crate::time::US);
            (seq_rtt, ca_rtt) = (Some(r), Some(r));
        }
        (seq_rtt, ca_rtt)
    }

    /// tcp_ack_update_rtt() with [`Self::linux_rtt`]'s samples: srtt and the RTO from seq_rtt;
    /// ca_rtt for tcp_update_rtt_min() and the module (`rs->rtt_us = ca_rtt_us`), only with a
    /// seq_rtt (`if (seq_rtt_us < 0) return false;`).
    fn linux_take_rtt(&mut self, seq_rtt: Option<Ns>, ca_rtt: Option<Ns>, a: &mut AckIntake) {
        let Some(r) = seq_rtt else {
            return;
        };
        self.take_rtt_sample(r);
        self.v.pacing_rate_bytes = self.linux_pacing_rate_bytes();
        a.rtt_sample = Some(r);
        a.ca_rtt = ca_rtt;
    }

    /// tcp_rate_gen(): the delivery-rate sample for a module that owns cwnd, then the scoreboard
    /// forgets what this ACK delivered.
    pub(super) fn rate_sample(
        &mut self,
        now: Ns,
        a: &AckIntake,
        newly_lost: u64,
    ) -> Option<crate::cc::RateSample> {
        self.v.lost_pkts += self.pkts(newly_lost);
        let rs = (self.owns_cwnd && a.fresh).then(|| {
            let (lost, min_rtt) = (self.pkts(newly_lost), self.rtt.min_rtt_ns);
            self.rate.on_ack(
                now,
                self.sb.delivered(),
                self.sb.delivered_txs(),
                self.mss,
                lost,
                min_rtt,
                a.prior_in_flight,
            )
        });
        self.sb.clear_delivered();
        self.v.flight = self.snd_nxt - self.snd_una;
        rs
    }

    /// tcp_cong_control(): the module's cong_control instead of cong_avoid and PRR.
    pub(super) fn cong_control(&mut self, rs: Option<crate::cc::RateSample>) {
        if let Some(rs) = rs {
            self.v.flight = self.pipe();
            self.v.delivered_pkts = self.rate.delivered;
            self.v.delivered_mstamp_ns = self.rate.delivered_mstamp();
            self.v.next_send_ns = self.pace_next;
            self.cc.cong_control(&self.view(), &mut self.v.win, &rs);
            if let Some(in_flight) = self.v.win.app_limited_request.take() {
                self.rate.mark_app_limited(in_flight);
            }
        }
    }

    /// The CC's per-ACK growth outside recovery (FreeBSD cc_ack_received, Linux cong_avoid) by
    /// `grow_bytes` (the stack's count of what this ACK acknowledged), then the round bookkeeping.
    pub(super) fn cc_ack(&mut self, a: &AckIntake, grow_bytes: u64) {
        let in_recovery = self.v.in_recovery;
        if !matches!(self.state, State::Recovery { .. })
            && !self.owns_cwnd
            && self.ecn_allows_growth()
        {
            if a.acked > 0 {
                self.v.bytes_this_ack = grow_bytes;
                self.cc
                    .ack_received(&self.view(), &mut self.v.win, crate::cc::AckKind::Ack);
            } else if a.dup {
                self.v.bytes_this_ack = 0;
                self.cc
                    .ack_received(&self.view(), &mut self.v.win, crate::cc::AckKind::DupAck);
            }
        }
        self.v.in_recovery = in_recovery;
        if a.acked > 0 && self.snd_una >= self.round_end {
            self.round_end = self.snd_nxt;
            self.cc.new_round(&self.view(), &mut self.v.win);
        }
    }
}

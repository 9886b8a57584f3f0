//! The sender's side of connection setup (SYN_SENT): the SYN with the options it offers, SYN
//! retransmission on the stack's schedule, and on the SYN-ACK the negotiated options, the first
//! RTT sample and the initial window as each stack sets it (rules in [`crate::tcp::handshake`]).

use super::core::Conn;
use super::SenderEvent;
// The enum-dispatch build calls the hooks on a concrete type, which needs the trait in scope.
#[cfg_attr(not(feature = "static-cc"), allow(unused_imports))]
use crate::cc::CcHooks;
use crate::cc::{CongSignal, Family};
use crate::net::packet::{
    header_bytes, syn_bytes, Kind, Packet, OPT_SACK_PERMITTED, OPT_TIMESTAMPS, OPT_WINDOW_SCALE,
};
use crate::tcp::handshake::SynLossWindow;
use crate::time::Ns;

impl Conn {
    /// connect(): send the first SYN and arm its timer.
    pub(super) fn connect(&mut self, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        self.hs.syn_sent = true;
        self.hs.first_syn_ns = now;
        self.send_syn(now, out, next_id);
    }

    fn send_syn(&mut self, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        *next_id += 1;
        let mut p = Packet::new(*next_id, Kind::Syn, self.flow, self.dst);
        p.opts = self.hs.offer;
        p.size_bytes = syn_bytes(p.opts);
        p.ts_val = now;
        p.retx = self.hs.syn_retrans > 0;
        // RFC 3168 §6.1.1: an ECN-setup SYN has ECE and CWR; a retransmitted one keeps them only
        // as often as the stack does (§6.1.1.1 fallback).
        let ecn_setup =
            self.hs.ecn_request && self.hs.syn_retrans <= self.profile.syn.ecn_setup_retries;
        (p.ece, p.cwr) = (ecn_setup, ecn_setup);
        let timer = self.profile.syn.timer;
        let next = now + timer.interval_ns(self.hs.syn_retrans);
        self.hs.deadline = Some(match timer.give_up_at(self.hs.first_syn_ns) {
            Some(t) => next.min(t),
            None => next,
        });
        self.nic_backlog += p.size_bytes as u64;
        out.push(p);
    }

    /// The SYN timer fired: give up, or retransmit the SYN as the stack does.
    pub(super) fn syn_timeout(&mut self, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        if self.hs.deadline.is_none_or(|d| d > now) {
            return;
        }
        if self
            .profile
            .syn
            .timer
            .gives_up(self.hs.syn_retrans, self.hs.first_syn_ns, now)
        {
            self.hs.syn_sent = false;
            self.hs.failed = true;
            self.hs.deadline = None;
            self.event(now, SenderEvent::ConnectFailed);
            return;
        }
        match self.profile.syn.loss_window {
            // tcp_enter_loss() -> tcp_init_undo(): undo_marker = snd_una.
            SynLossWindow::LinuxAfterTwo => self.hs.undo_marker = true,
            // tcp_timer_rexmt() -> cc_cong_signal(CC_RTO): the module's ssthresh on the first
            // timeout (t_rxtshift == 1) from min(snd_wnd, pipe) with snd_wnd still 0 in
            // SYN_SENT, then snd_cwnd = mss.
            SynLossWindow::FreeBsdCcRto if self.hs.syn_retrans == 0 => {
                self.v.now = now;
                self.v.flight = 0;
                self.cc
                    .cong_signal(&self.view(), &mut self.v.win, CongSignal::Rto);
                self.v.win.cwnd = self.mss;
            }
            _ => {}
        }
        self.hs.syn_retrans += 1;
        self.event(now, SenderEvent::SynRetransmit);
        self.send_syn(now, out, next_id);
    }

    /// A SYN-ACK arrived. Returns whether it established the connection (the caller then starts
    /// the application); a duplicate is answered with an ACK.
    pub(super) fn on_synack(
        &mut self,
        p: &Packet,
        now: Ns,
        out: &mut Vec<Packet>,
        next_id: &mut u64,
    ) -> bool {
        if !self.hs.syn_sent {
            if self.hs.established_ns.is_some() {
                self.send_handshake_ack(now, out, next_id);
            }
            return false;
        }
        self.hs.syn_sent = false;
        self.hs.deadline = None;
        self.hs.established_ns = Some(now);
        self.apply_options(p);
        // RFC 7323 §2.2: the window in a SYN-ACK is not scaled.
        self.snd_wnd = p.rwnd as u64;
        self.handshake_rtt(p, now);
        self.initial_window(p);
        self.event(now, SenderEvent::Connected);
        self.send_handshake_ack(now, out, next_id);
        true
    }

    /// The options the SYN-ACK agreed to: SACK, timestamps (the MSS keeps the 12 bytes when they
    /// are off), ECN if it carries ECE without CWR (Linux tcp_ecn_rcv_synack(), FreeBSD
    /// tcp_ecn_input_syn_sent()).
    fn apply_options(&mut self, p: &Packet) {
        self.sack = p.opts & OPT_SACK_PERMITTED != 0;
        self.hs.window_scaling = p.opts & OPT_WINDOW_SCALE != 0;
        let ts = p.opts & OPT_TIMESTAMPS != 0;
        if self.timestamps && !ts {
            // The initial window keeps its segment count (tcp_init_cwnd(), tcp_compute_initwnd()
            // count in the negotiated MSS).
            let segments = self.v.iw / self.mss;
            self.mss += crate::net::packet::TS_OPT as u64;
            self.v.iw = segments * self.mss;
        }
        self.timestamps = ts;
        let ecn = self.hs.ecn_request && p.ece && !p.cwr;
        self.ecn = super::ecn_state::EcnState::new(ecn, self.ecn.ect1);
    }

    /// The handshake's RTT sample where the stack takes one: the timestamp echo, or the SYN's
    /// own time if it was never retransmitted (Karn). Linux tcp_ack() -> tcp_clean_rtx_queue()
    /// -> tcp_ack_update_rtt() on FLAG_SYN_ACKED; FreeBSD tcp_do_segment() SYN_SENT `goto
    /// process_ACK`, whose tcp_xmit_timer() takes the TS echo or t_rtttime (cleared by a SYN
    /// timeout). Without a sample the stack's fallback RTO applies (Linux TCP_TIMEOUT_FALLBACK,
    /// RFC 6298 §5.7).
    fn handshake_rtt(&mut self, p: &Packet, now: Ns) {
        let karn = (self.hs.syn_retrans == 0).then_some(self.hs.first_syn_ns);
        let ticks = self.profile.cc_family == Family::FreeBsd;
        let sample = self.ack_rtt(p, karn, now, ticks);
        match sample {
            Some(r) => {
                self.take_rtt_sample(r);
                if self.profile.cc_family == Family::Linux {
                    self.rtt.observe_min(r);
                }
            }
            None => {
                if let Some(rto) = self.profile.syn.fallback_rto_ns {
                    self.rtt.rto_ns = rto;
                }
            }
        }
        // RFC 6298 §5.7: after a SYN timeout the RTO is 3 s when data begins.
        if self.profile.cc_family == Family::Rfc && self.hs.syn_retrans > 0 {
            self.rtt.rto_ns = self.rtt.rto_ns.max(3 * crate::time::SEC);
        }
    }

    /// The window data starts with after the handshake (before the module's conn_init).
    fn initial_window(&mut self, p: &Packet) {
        let one_segment = match self.profile.syn.loss_window {
            SynLossWindow::OneSegment => self.hs.syn_retrans > 0,
            SynLossWindow::LinuxAfterTwo => {
                // tcp_try_undo_spurious_syn(): the SYN-ACK answers the first SYN.
                if self.timestamps && p.ts_ecr == self.hs.first_syn_ns {
                    self.hs.undo_marker = false;
                }
                self.hs.syn_retrans > 1 && self.hs.undo_marker
            }
            SynLossWindow::FreeBsdCcRto => false,
        };
        self.v.win.cwnd = if one_segment { self.mss } else { self.v.iw };
    }

    /// The ACK that completes the handshake (or answers a duplicate SYN-ACK).
    fn send_handshake_ack(&mut self, now: Ns, out: &mut Vec<Packet>, next_id: &mut u64) {
        *next_id += 1;
        let mut a = Packet::new(*next_id, Kind::HandshakeAck, self.flow, self.dst);
        a.size_bytes = header_bytes(self.timestamps, 0);
        a.ts_val = now;
        self.nic_backlog += a.size_bytes as u64;
        out.push(a);
    }
}

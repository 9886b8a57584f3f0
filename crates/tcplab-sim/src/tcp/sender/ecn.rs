//! The sender's side of ECN (RFC 3168 §6.1): data sent ECT(0), retransmissions Not-ECT; on an
//! ACK with ECE, one window reduction per window of data (the CWR window, until snd_una passes
//! the snd_nxt of the reduction), CWR set on the next new segment.
//!
//! Linux: tcp_input.c tcp_ecn_rcv_ecn_echo() / tcp_try_to_open() -> tcp_enter_cwr()
//! (ssthresh from the module, the CWR state until high_seq), tcp_output.c tcp_ecn_send() (ECT on
//! new data only, CWR once after the reduction). FreeBSD: tcp_input.c cc_cong_signal(CC_ECN)
//! (snd_recover = snd_max, TF2_ECN_SND_CWR; the module cuts cwnd once while !IN_CONGRECOVERY),
//! tcp_ecn.c tcp_ecn_output_established().
//!
//! Not modelled: Linux spreads the CWR reduction over the window with PRR
//! (tcp_cwnd_reduction()); here cwnd drops to ssthresh on the ECE ACK, the value Linux ends the
//! window with (tcp_end_cwnd_reduction()). FreeBSD's cut is immediate, as here.

use super::core::Conn;
use super::State;
// The enum-dispatch build calls the hooks on a concrete type, which needs the trait in scope.
#[cfg_attr(not(feature = "static-cc"), allow(unused_imports))]
use crate::cc::CcHooks;
use crate::cc::{CongSignal, Family};
use crate::net::packet::Packet;
use crate::time::Ns;

impl Conn {
    /// An ACK arrives: tell the hooks whether it carries ECE, and react to ECE once per window
    /// outside loss recovery (Linux: only from the Open/Disorder states; FreeBSD: not
    /// IN_CONGRECOVERY, which fast recovery also sets).
    pub(super) fn ecn_on_ack(&mut self, p: &Packet, _now: Ns) {
        if !self.ecn.on {
            return;
        }
        self.v.ece = p.ece;
        if !p.ece {
            return;
        }
        self.ecn.ece_acks += 1;
        if self.state != State::Open || self.ecn.in_cwr(p.ack.max(self.snd_una)) {
            return;
        }
        self.v.flight = self.snd_nxt - self.snd_una;
        self.cc
            .cong_signal(&self.view(), &mut self.v.win, CongSignal::Ecn);
        // Linux modules set ssthresh and the stack brings cwnd to it; FreeBSD's set both.
        self.v.win.cwnd = self.v.win.cwnd.min(self.v.win.ssthresh).max(self.mss);
        self.ecn.high_seq = Some(self.snd_nxt);
        self.ecn.cwr_pending = true;
        self.ecn.reductions += 1;
    }

    /// Whether the module may grow cwnd on this ACK: not inside a CWR window (Linux CA_CWR runs
    /// tcp_cwnd_reduction() instead of cong_avoid; FreeBSD's modules do not grow while
    /// IN_CONGRECOVERY), except FreeBSD's modules, which see the window as recovery and decide
    /// themselves (cc_dctcp.c grows through it and counts its marked bytes there).
    pub(super) fn ecn_allows_growth(&mut self) -> bool {
        if !self.ecn.on || !self.ecn.in_cwr(self.snd_una) {
            return true;
        }
        if self.profile.cc_family == Family::FreeBsd {
            self.v.in_recovery = true;
            return true;
        }
        false
    }
}

//! A connection's ECN state (RFC 3168 §6.1), held by the core: whether ECN is on, the CWR
//! window, and the codepoints of an outgoing segment; the reaction to ECE is `ecn.rs`.

use crate::net::aqm::ecn as codepoint;
use crate::net::packet::Packet;

/// A connection's ECN state.
#[derive(Clone, Debug, Default)]
pub struct EcnState {
    /// ECN was negotiated.
    pub on: bool,
    /// Data goes out ECT(1) instead of ECT(0).
    pub ect1: bool,
    /// snd_nxt when the last reduction was made: no new one until snd_una passes it.
    pub(super) high_seq: Option<u64>,
    /// Set CWR on the next new data segment.
    pub(super) cwr_pending: bool,
    /// ACKs received with ECE.
    pub ece_acks: u64,
    /// Window reductions made for ECE.
    pub reductions: u64,
}

impl EcnState {
    /// The state of a connection that negotiated ECN (`on`) or not.
    pub fn new(on: bool, ect1: bool) -> Self {
        EcnState {
            on,
            ect1,
            ..Default::default()
        }
    }

    /// Whether a CWR window is open at `snd_una` (a reduction this window already).
    pub fn in_cwr(&self, snd_una: u64) -> bool {
        self.high_seq.is_some_and(|h| snd_una < h)
    }

    /// Codepoints of an outgoing data segment: ECT(0) (or ECT(1)) on new data (RFC 3168 §6.1.5: not on
    /// retransmissions), CWR on the first new segment after a reduction.
    pub fn mark_outgoing(&mut self, p: &mut Packet) {
        if !self.on || p.retx {
            return;
        }
        // L4STeam/linux include/net/inet_ecn.h: ECT(1) when the module wants it (dctcp_ect).
        p.ecn = if self.ect1 {
            codepoint::ECT1
        } else {
            codepoint::ECT0
        };
        if self.cwr_pending {
            p.cwr = true;
            self.cwr_pending = false;
        }
    }
}

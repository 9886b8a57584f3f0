//! The sender's handshake state (SYN_SENT, what the SYN offered, when the SYN-ACK came), held by
//! the core; what a SYN and a SYN-ACK do to the connection is `connect.rs`.

use crate::config::Connect;
use crate::net::packet::{OPT_SACK_PERMITTED, OPT_TIMESTAMPS, OPT_WINDOW_SCALE};
use crate::time::Ns;

/// The sender's handshake state.
#[derive(Clone, Debug)]
pub struct Client {
    /// How the connection opens.
    pub mode: Connect,
    /// Options offered in the SYN (`OPT_*` bits).
    pub(super) offer: u8,
    /// Whether the application asked for ECN.
    pub(super) ecn_request: bool,
    /// Waiting for the SYN-ACK (SYN_SENT).
    pub syn_sent: bool,
    /// The connection attempt was given up.
    pub failed: bool,
    /// When the first SYN was sent.
    pub first_syn_ns: Ns,
    /// SYN retransmissions (Linux total_retrans during the handshake, FreeBSD t_rxtshift).
    pub syn_retrans: u32,
    /// When the SYN-ACK arrived (connect() returned).
    pub established_ns: Option<Ns>,
    /// When the SYN timer fires.
    pub(super) deadline: Option<Ns>,
    /// Linux tp->undo_marker, set by a SYN timeout (tcp_enter_loss()).
    pub(super) undo_marker: bool,
    /// Window scaling in use (offered, until the SYN-ACK says).
    pub(super) window_scaling: bool,
    /// The application writes only when told, not when the connection is established (iperf3's
    /// client waits for TEST_RUNNING: `net::iperf3`).
    pub(super) app_held: bool,
}

impl Client {
    /// A sender that opens `mode`'s way, offering these options.
    pub fn new(mode: Connect, offer: u8, ecn_request: bool, window_scaling: bool) -> Self {
        Client {
            window_scaling,
            mode,
            offer,
            ecn_request,
            syn_sent: false,
            failed: false,
            first_syn_ns: 0,
            syn_retrans: 0,
            established_ns: None,
            deadline: None,
            undo_marker: false,
            app_held: false,
        }
    }

    /// Whether window scaling is in use.
    pub fn window_scaling(&self) -> bool {
        self.window_scaling
    }

    /// The SYN timer's deadline while the sender waits for the SYN-ACK.
    pub fn deadline(&self) -> Option<Ns> {
        self.deadline.filter(|_| self.syn_sent)
    }
}

/// The `OPT_*` bits a SYN offers for these switches.
pub(super) fn offer_bits(sack: bool, timestamps: bool, window_scaling: bool) -> u8 {
    (sack as u8 * OPT_SACK_PERMITTED)
        | (timestamps as u8 * OPT_TIMESTAMPS)
        | (window_scaling as u8 * OPT_WINDOW_SCALE)
}

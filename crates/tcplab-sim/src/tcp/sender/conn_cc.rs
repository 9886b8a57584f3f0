//! The CC variables a connection keeps (FreeBSD `cc_var`, ns-3 `TcpSocketState`): the window
//! the hooks may change and the inputs the stacks set for them.

use crate::cc::{CaState, Window};
use crate::time::Ns;

/// The CC variables a connection keeps: the window hooks may change and the inputs the stack
/// sets for them. A hook's [`CcView`](crate::cc::CcView) is built from these and the connection by `Conn::view`.
#[derive(Clone, Debug)]
#[repr(C)] // the window first, next to the connection's fields the sampler reads (see `Conn`)
pub struct ConnCc {
    /// What hooks may change.
    pub win: Window,
    /// What the stack sets for the hooks.
    pub inputs: CcInputs,
}

/// The [`CcView`](crate::cc::CcView) fields that are not a connection field the view can read at the call: values
/// the stack sets by hook and stack (`flight`, `bytes_this_ack`, `after_rto`, `cwnd_limited`,
/// `in_recovery`), snapshots taken at one point and read later by other hooks (`snd_nxt`,
/// `pacing_rate_bytes`, `delivered_pkts`, `delivered_mstamp_ns`, `next_send_ns`),
/// state kept only for the hooks (`ca_state`, `lost_pkts`, `random`), the time of the current
/// call and the initial window. Meanings as in [`CcView`](crate::cc::CcView).
#[derive(Clone, Debug)]
#[allow(missing_docs)]
pub struct CcInputs {
    pub iw: u64,
    pub bytes_this_ack: u64,
    pub flight: u64,
    pub cwnd_limited: bool,
    pub in_recovery: bool,
    pub now: Ns,
    pub snd_nxt: u64,
    pub pacing_rate_bytes: u64,
    pub after_rto: bool,
    pub ca_state: CaState,
    pub delivered_pkts: u64,
    pub lost_pkts: u64,
    pub delivered_mstamp_ns: Ns,
    pub next_send_ns: Ns,
    pub random: u64,
    pub ece: bool,
    pub delivered_bytes_this_ack: u64,
    pub nsegs: u64,
}

impl ConnCc {
    /// Fresh variables for a connection with this initial window (as [`crate::cc::CcVars::new`]).
    pub fn new(iw: u64) -> Self {
        ConnCc {
            win: Window {
                cwnd: iw,
                ssthresh: u64::MAX / 4,
                app_limited_request: None,
            },
            inputs: CcInputs {
                iw,
                bytes_this_ack: 0,
                flight: 0,
                cwnd_limited: false,
                in_recovery: false,
                now: 0,
                snd_nxt: 0,
                pacing_rate_bytes: 0,
                after_rto: false,
                ca_state: CaState::Open,
                delivered_pkts: 0,
                lost_pkts: 0,
                delivered_mstamp_ns: 0,
                next_send_ns: 0,
                random: 0,
                ece: false,
                delivered_bytes_this_ack: 0,
                nsegs: 1,
            },
        }
    }

    /// Whether the connection is in slow start (see [`Window::in_slow_start`]).
    pub fn in_slow_start(&self) -> bool {
        self.win.in_slow_start()
    }
}

impl std::ops::Deref for ConnCc {
    type Target = CcInputs;
    fn deref(&self) -> &CcInputs {
        &self.inputs
    }
}

impl std::ops::DerefMut for ConnCc {
    fn deref_mut(&mut self) -> &mut CcInputs {
        &mut self.inputs
    }
}

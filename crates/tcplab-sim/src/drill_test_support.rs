//! The drill endpoint's unit tests' common pieces: a linux cubic endpoint and its tcp_info.

use crate::drill::{Endpoint, Peer};
use crate::time::Ns;

/// A linux cubic endpoint to a peer of MSS 1000 with SACK and no timestamps.
pub(crate) fn linux_endpoint(wscale: u8, handshake_rtt_ns: Ns, win_bytes: u64) -> Endpoint {
    let peer = Peer {
        mss: 1000,
        sack: true,
        timestamps: false,
        wscale,
        ecn: false,
    };
    Endpoint::new("linux", "cubic", peer, 0, Some(handshake_rtt_ns), win_bytes).unwrap()
}

/// One tcp_info field.
pub(crate) fn info(e: &Endpoint, k: &str) -> i64 {
    e.tcp_info().into_iter().find(|(n, _)| *n == k).unwrap().1
}

/// The segments sent since the last call: (first byte, length, PSH).
pub(crate) fn sent(e: &mut Endpoint) -> Vec<(u64, u32, bool)> {
    e.take_sent()
        .iter()
        .map(|o| (o.seq, o.len, o.psh))
        .collect()
}

//! TCP endpoints: a sender with SACK scoreboard, RTO and a pluggable congestion control, and a
//! receiver with delayed ACKs, SACK generation and a buffer-limited window.

pub mod handshake;
pub mod ranges;
pub mod rate;
pub mod receiver;
pub mod rtt;
pub mod scoreboard;
pub mod sender;
/// Linux PRR, under its historical path.
pub use sender::reduction::linux_prr as prr;

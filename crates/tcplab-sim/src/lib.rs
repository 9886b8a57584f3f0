//! tcplab-sim: a deterministic, packet-level discrete-event simulator of TCP over IP networks.
//!
//! Data flows one way: a resolved [`config::SimConfig`] builds a [`sim::Simulation`], which runs in
//! integer-nanosecond time and streams [`trace`] records out in batches.

pub mod cc;
pub mod config;
pub mod cpu;
pub mod drill;
mod drill_chrono;
pub mod drill_linux_rx;
pub mod drill_linux_win;
pub mod drill_mtu;
pub mod drill_open;
mod drill_probe;
pub mod drill_rx;
mod drill_send;
pub mod drill_skb;
#[cfg(test)]
mod drill_test_support;
pub mod net;
pub mod rng;
pub mod sim;
pub mod stack;
pub mod tcp;
pub mod time;
/// The record schema lives in tcplab-trace, shared with the log importers.
pub use tcplab_trace::records as trace;

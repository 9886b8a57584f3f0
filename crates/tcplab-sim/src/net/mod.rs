//! The simulated network: packets, egress ports (FIFO or queue discipline, serialiser,
//! propagation pipe), shared switch buffers, links and routes, and the traffic that is not TCP
//! (UDP constant-bit-rate sources, latency probes, iperf3's control connection).

pub mod aqm;
pub mod hist;
pub mod impair;
pub mod iperf3;
pub mod packet;
pub mod pause;
pub mod pipe;
pub mod pool;
pub mod port;
pub mod probe;
pub mod topology;
pub mod udp;

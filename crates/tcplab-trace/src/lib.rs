//! tcplab-trace: the record schema every backend writes, and the readers and writers of the logs
//! real testbeds produce (iperf3 text and JSON, SIFTR, SIFTR2, Linux tcp_probe, pcap/pcapng),
//! so a testbed's run and a simulated one are analysed the same way.

pub mod ctx;
pub mod flows;
pub mod import;
pub mod iperf3;
pub mod lines;
pub mod number;
pub mod pcap;
pub mod records;
pub mod siftr;
pub mod tcp_probe;
pub mod write;

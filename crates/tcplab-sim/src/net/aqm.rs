//! The simulator's queue disciplines: the shared crate tcplab-aqm (CoDel, FQ-CoDel, PIE, RED,
//! step marking, the one implementation the link emulator runs too), bound to the simulator's
//! Packet and its seeded Rng.

use crate::net::packet::{Kind, Packet};
use crate::rng::Rng;

pub use tcplab_aqm::{
    codel, dualpi2, ecn, fq_codel, pie, red, step, Aqm, AqmConfig, AqmStats, Fifo, Queued,
};

/// A discipline at one of the simulator's ports.
pub type PortAqm = Box<dyn Aqm<Packet>>;

impl tcplab_aqm::Packet for Packet {
    /// The simulator counts IP bytes (no Ethernet header): an MTU-sized IP packet.
    const MTU_BYTES: u64 = 1500;
    fn size_bytes(&self) -> u64 {
        self.size_bytes as u64
    }
    fn ecn(&self) -> u8 {
        self.ecn
    }
    fn set_ecn(&mut self, ecn: u8) {
        self.ecn = ecn;
    }
    /// A TCP flow's data and its ACKs travel opposite ways (different ports), so (kind, flow)
    /// identifies the 5-tuple here.
    fn flow_key(&self) -> u64 {
        let kind = match self.kind {
            // The handshake's packets share the 5-tuple of their direction.
            Kind::Data | Kind::Syn | Kind::HandshakeAck => 0u64,
            Kind::Ack | Kind::SynAck => 1,
            Kind::Udp => 2,
            // A probe's request and reply leave by opposite ports, as a flow's data and ACKs.
            Kind::Echo | Kind::EchoReply => 3,
            // iperf3's control connection: a 5-tuple of its own (the data cookie, which rides
            // the data connection, is counted with it: an approximation, net/iperf3.rs).
            Kind::Control => return 1 << 63 | self.flow as u64,
        };
        (self.flow as u64) << 2 | kind
    }
}

impl tcplab_aqm::Random for Rng {
    fn next_u64(&mut self) -> u64 {
        Rng::next_u64(self)
    }
}

/// Build a discipline for a port whose wire runs at `rate_bps`.
pub fn build(cfg: &AqmConfig, rate_bps: u64, rng: Rng) -> Result<PortAqm, String> {
    Ok(tcplab_aqm::build(cfg, rate_bps, rng)?)
}

//! Proportional Rate Reduction as Linux implements it (net/ipv4/tcp_input.c
//! tcp_cwnd_reduction(); RFC 6937), in packets as Linux counts them.
//!
//! Two versions differ in the slow-start reduction bound, used when the data in flight has
//! fallen below ssthresh (delta >= 0):
//! - `Linux515` (v5.12 commit 7e901ee7b6ab "tcp: avoid slow start during fast recovery on new
//!   losses" through the 5.15 LTS): one extra packet beyond what was delivered only when the ACK
//!   advanced snd_una and reported no new loss; otherwise at most what this ACK delivered.
//! - `Mainline` (current tcp_input.c): always at least max(prr_delivered - prr_out,
//!   newly_acked_sacked), plus one when snd_una advanced with no new loss.

use crate::tcp::sender::core::Conn;

/// Which tcp_cwnd_reduction() to follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrrVersion {
    /// Linux 5.12 .. 5.15 LTS.
    Linux515,
    /// Current mainline (6.x).
    Mainline,
}

impl PrrVersion {
    /// Every version, the default first.
    pub const ALL: [PrrVersion; 2] = [PrrVersion::Mainline, PrrVersion::Linux515];

    /// The name a spec uses (`prr = "6.x"`).
    pub fn name(self) -> &'static str {
        match self {
            PrrVersion::Linux515 => "5.15",
            PrrVersion::Mainline => "6.x",
        }
    }
}

/// PRR state of one recovery episode (Linux tp->prior_cwnd, prr_delivered, prr_out).
#[derive(Clone, Copy, Debug, Default)]
pub struct Prr {
    /// cwnd when recovery began, packets (tcp_init_cwnd_reduction()).
    pub prior_cwnd: u64,
    /// Packets delivered (acked or SACKed) since recovery began.
    pub delivered: u64,
    /// Packets sent since recovery began.
    pub out: u64,
}

/// One ACK's inputs, in packets.
#[derive(Clone, Copy, Debug)]
pub struct PrrAck {
    /// Packets newly acknowledged or SACKed by this ACK.
    pub newly_acked_sacked: u64,
    /// Packets newly marked lost while processing this ACK.
    pub newly_lost: u64,
    /// Whether this ACK advanced snd_una (FLAG_SND_UNA_ADVANCED).
    pub una_advanced: bool,
}

impl Prr {
    /// Start an episode (tcp_init_cwnd_reduction()).
    pub fn begin(prior_cwnd_pkts: u64) -> Self {
        Prr {
            prior_cwnd: prior_cwnd_pkts.max(1),
            delivered: 0,
            out: 0,
        }
    }

    /// tcp_cwnd_reduction(): the new cwnd in packets, or None when this ACK delivered nothing
    /// (Linux returns without touching cwnd).
    pub fn on_ack(
        &mut self,
        v: PrrVersion,
        ack: PrrAck,
        ssthresh_pkts: u64,
        in_flight_pkts: u64,
    ) -> Option<u64> {
        if ack.newly_acked_sacked == 0 {
            return None;
        }
        let delta = ssthresh_pkts as i64 - in_flight_pkts as i64;
        self.delivered += ack.newly_acked_sacked;
        let (delivered, out, newly) = (
            self.delivered as i64,
            self.out as i64,
            ack.newly_acked_sacked as i64,
        );
        let bonus = ack.una_advanced && ack.newly_lost == 0;
        let mut sndcnt = if delta < 0 {
            // Proportional part: ceil(ssthresh * prr_delivered / prior_cwnd) - prr_out.
            let dividend = ssthresh_pkts as i64 * delivered + self.prior_cwnd as i64 - 1;
            dividend / self.prior_cwnd as i64 - out
        } else {
            match v {
                PrrVersion::Linux515 if bonus => delta.min((delivered - out).max(newly) + 1),
                PrrVersion::Linux515 => delta.min(newly),
                PrrVersion::Mainline => delta.min((delivered - out).max(newly) + bonus as i64),
            }
        };
        // Force a fast retransmit upon entering fast recovery.
        sndcnt = sndcnt.max(if self.out > 0 { 0 } else { 1 });
        Some((in_flight_pkts as i64 + sndcnt).max(0) as u64)
    }
}

/// Linux PRR as a recovery component of a stack: the episode's state, with prr_out counted from
/// the connection's sends in recovery since the episode began.
#[derive(Clone, Copy, Debug)]
pub struct LinuxPrr {
    /// Which tcp_cwnd_reduction() to follow.
    pub version: PrrVersion,
    prr: Prr,
    out_base: u64,
}

impl LinuxPrr {
    /// A component following `version`.
    pub fn new(version: PrrVersion) -> Self {
        LinuxPrr {
            version,
            prr: Prr::default(),
            out_base: 0,
        }
    }

    /// tcp_enter_recovery() -> tcp_init_cwnd_reduction(): cwnd is left as it is and PRR sets it
    /// on the entry ACK.
    pub(in crate::tcp::sender) fn begin(&mut self, c: &Conn) {
        self.prr = Prr::begin(c.pkts(c.v.win.cwnd));
        self.out_base = c.recovery_out_segs;
    }

    /// tcp_cwnd_reduction(): cwnd = in flight + PRR's allowance, in packets.
    pub(in crate::tcp::sender) fn reduce(&mut self, c: &mut Conn, ack: PrrAck) {
        let (ssthresh, in_flight) = (c.v.win.ssthresh / c.mss, c.pkts(c.pipe()));
        self.prr.out = c.recovery_out_segs - self.out_base;
        if let Some(cwnd) = self.prr.on_ack(self.version, ack, ssthresh, in_flight) {
            c.v.win.cwnd = (cwnd * c.mss).max(c.mss);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(newly: u64, lost: u64, una: bool) -> PrrAck {
        PrrAck {
            newly_acked_sacked: newly,
            newly_lost: lost,
            una_advanced: una,
        }
    }

    #[test]
    fn proportional_part_spreads_the_reduction_over_the_episode() {
        // prior_cwnd 100, ssthresh 70 (CUBIC), 100 in flight: each delivered packet allows 0.7.
        let mut p = Prr::begin(100);
        // first ACK: 3 SACKed. ceil(70 * 3 / 100) - 0 = ceil(2.1) = 3 -> cwnd = 100 - 3 + 3 ... in
        // flight after SACK and loss marking is given by the caller: 96.
        assert_eq!(
            p.on_ack(PrrVersion::Mainline, ack(3, 1, false), 70, 96),
            Some(96 + 3)
        );
        p.out += 3;
        // next: 10 more delivered, 13 total: ceil(70 * 13 / 100) - 3 = 10 - 3 = 7
        assert_eq!(
            p.on_ack(PrrVersion::Mainline, ack(10, 0, true), 70, 90),
            Some(97)
        );
    }

    #[test]
    fn first_ack_always_allows_the_fast_retransmit() {
        let mut p = Prr::begin(10);
        // ceil(5 * 1 / 10) = 1 anyway; with ssthresh 2 and delivered 1: ceil(0.2) = 1.
        assert_eq!(
            p.on_ack(PrrVersion::Mainline, ack(1, 1, false), 2, 9),
            Some(10)
        );
        let mut q = Prr::begin(1000);
        // ceil(1 * 1 / 1000) = 1: still at least one
        assert_eq!(
            q.on_ack(PrrVersion::Linux515, ack(1, 1, false), 1, 5),
            Some(6)
        );
    }

    #[test]
    fn slow_start_bound_differs_between_515_and_mainline() {
        // In flight 20 below ssthresh 50 (delta = 30); delivered so far 40, sent 10; this ACK
        // delivers 2 and reports a new loss without advancing snd_una.
        let setup = || Prr {
            prior_cwnd: 100,
            delivered: 38,
            out: 10,
        };
        let (mut a, mut b) = (setup(), setup());
        // 5.15: min(delta, newly) = 2
        assert_eq!(
            a.on_ack(PrrVersion::Linux515, ack(2, 1, false), 50, 20),
            Some(22)
        );
        // mainline: min(delta, max(40 - 10, 2)) = 30
        assert_eq!(
            b.on_ack(PrrVersion::Mainline, ack(2, 1, false), 50, 20),
            Some(50)
        );
    }

    #[test]
    fn una_advancing_without_new_loss_earns_one_extra_packet_in_both() {
        let setup = || Prr {
            prior_cwnd: 100,
            delivered: 8,
            out: 10,
        };
        let (mut a, mut b) = (setup(), setup());
        // delivered becomes 10, out 10: max(0, 2) + 1 = 3, below delta 30
        assert_eq!(
            a.on_ack(PrrVersion::Linux515, ack(2, 0, true), 50, 20),
            Some(23)
        );
        assert_eq!(
            b.on_ack(PrrVersion::Mainline, ack(2, 0, true), 50, 20),
            Some(23)
        );
    }

    #[test]
    fn an_ack_that_delivers_nothing_leaves_cwnd_alone() {
        let mut p = Prr::begin(10);
        assert_eq!(p.on_ack(PrrVersion::Mainline, ack(0, 0, false), 7, 9), None);
    }
}

//! Linux HighSpeed TCP (net/ipv4/tcp_highspeed.c, RFC 3649): above 38 packets the increase a(w)
//! and the decrease b(w) follow the window through RFC 3649 Appendix B's table, kept as the kernel
//! keeps it (cwnd thresholds in packets, b(w) << 8); a(w) is the table index + 1 packets per RTT.

use super::linux::{pkts, set_pkts, slow_start_or_avoid};
use super::{AckKind, CcHooks, CcView, CongSignal, LinuxCcOps, Window};

/// hstcp_aimd_vals: (cwnd upper bound in packets, b(w) << 8), RFC 3649 Appendix B.
const AIMD: [(u32, u32); 72] = [
    (38, 128),
    (118, 112),
    (221, 104),
    (347, 98),
    (495, 93),
    (663, 89),
    (851, 86),
    (1058, 83),
    (1284, 81),
    (1529, 78),
    (1793, 76),
    (2076, 74),
    (2378, 72),
    (2699, 71),
    (3039, 69),
    (3399, 68),
    (3778, 66),
    (4177, 65),
    (4596, 64),
    (5036, 62),
    (5497, 61),
    (5979, 60),
    (6483, 59),
    (7009, 58),
    (7558, 57),
    (8130, 56),
    (8726, 55),
    (9346, 54),
    (9991, 53),
    (10661, 52),
    (11358, 52),
    (12082, 51),
    (12834, 50),
    (13614, 49),
    (14424, 48),
    (15265, 48),
    (16137, 47),
    (17042, 46),
    (17981, 45),
    (18955, 45),
    (19965, 44),
    (21013, 43),
    (22101, 43),
    (23230, 42),
    (24402, 41),
    (25618, 41),
    (26881, 40),
    (28193, 39),
    (29557, 39),
    (30975, 38),
    (32450, 38),
    (33986, 37),
    (35586, 36),
    (37253, 36),
    (38992, 35),
    (40808, 35),
    (42707, 34),
    (44694, 33),
    (46776, 33),
    (48961, 32),
    (51258, 32),
    (53677, 31),
    (56230, 30),
    (58932, 30),
    (61799, 29),
    (64851, 28),
    (68113, 28),
    (71617, 27),
    (75401, 26),
    (79517, 26),
    (84035, 25),
    (89053, 24),
];

/// struct hstcp (the table index) and its snd_cwnd_cnt.
#[derive(Clone, Debug, Default)]
pub struct HighSpeed {
    ai: usize,
    cwnd_cnt: u32,
}

impl CcHooks for HighSpeed {
    fn name(&self) -> &'static str {
        "highspeed"
    }

    /// hstcp_cong_avoid()
    fn ack_received(&mut self, v: &CcView, win: &mut Window, kind: AckKind) {
        if !slow_start_or_avoid(v, win, kind) {
            return;
        }
        // Keep AIMD[ai - 1].cwnd < cwnd <= AIMD[ai].cwnd.
        let cwnd = pkts(v, win);
        while cwnd > AIMD[self.ai].0 && self.ai < AIMD.len() - 1 {
            self.ai += 1;
        }
        while self.ai > 0 && cwnd <= AIMD[self.ai - 1].0 {
            self.ai -= 1;
        }
        // cwnd += a(w) / cwnd, once per ACK (not per packet acked).
        self.cwnd_cnt += self.ai as u32 + 1;
        if self.cwnd_cnt >= cwnd {
            self.cwnd_cnt -= cwnd;
            set_pkts(v, win, cwnd + 1);
        }
    }

    /// hstcp_ssthresh(): cwnd - cwnd x b(w).
    fn cong_signal(&mut self, v: &CcView, win: &mut Window, sig: CongSignal) {
        if sig != CongSignal::RtoErr {
            let cwnd = pkts(v, win);
            win.ssthresh = (cwnd - ((cwnd * AIMD[self.ai].1) >> 8)).max(2) as u64 * v.mss;
            self.cwnd_cnt = 0;
        }
    }
}

impl LinuxCcOps for HighSpeed {}

#[cfg(test)]
mod tests {
    //! Reference arithmetic: tcp_highspeed.c, and its table against RFC 3649's formula.
    use super::*;
    use crate::cc::CcVars;

    #[test]
    fn the_table_is_rfc_3649_b_of_w() {
        // RFC 3649 §5: b(w) = (0.1 - 0.5) (log w - log 38) / (log 83000 - log 38) + 0.5; the
        // table holds b(w) << 8 rounded, so each entry is within one unit of the formula.
        for (w, md) in AIMD {
            let b = -0.4 * ((w as f64).ln() - 38f64.ln()) / (83_000f64.ln() - 38f64.ln()) + 0.5;
            assert!(
                (b * 256.0 - md as f64).abs() <= 1.0,
                "w {w} md {md} formula {}",
                b * 256.0
            );
        }
        assert!(AIMD.windows(2).all(|p| p[0].0 < p[1].0 && p[0].1 >= p[1].1));
    }

    #[test]
    fn increase_and_decrease_follow_the_window() {
        let mut cc = HighSpeed::default();
        let mut v = CcVars::new(1000, 10_000);
        v.win.cwnd = 1000 * 1000; // 1000 packets: AIMD[7] = (1058, 83), a(w) = 8
        v.win.ssthresh = 1000;
        v.cwnd_limited = true;
        v.bytes_this_ack = 1000;
        for _ in 0..124 {
            cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        }
        assert_eq!((cc.ai, v.win.cwnd), (7, 1_000_000)); // 124 x 8 = 992 < 1000
        cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        assert_eq!(v.win.cwnd, 1_001_000); // 125 x 8 = 1000
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        // 1001 - 1001 x 83 / 256 = 1001 - 324 = 677 packets.
        assert_eq!(v.win.ssthresh, (1001 - (1001 * 83 >> 8)) * 1000);
        // At 30 packets (below 38) it is Reno: a = 1 per window, b = 0.5.
        let mut cc = HighSpeed::default();
        v.win.cwnd = 30_000;
        v.win.ssthresh = 1000;
        cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        assert_eq!((cc.ai, v.win.ssthresh), (0, 15_000));
    }
}

//! Linux Scalable TCP (net/ipv4/tcp_scalable.c): one packet per min(cwnd, 100) acked, an eighth
//! off on loss (tcp_scalable_cong_avoid, tcp_scalable_ssthresh).

use super::linux::{cong_avoid_ai, pkts, slow_start_then};
use super::{AckKind, CcHooks, CcView, CongSignal, LinuxCcOps, Window};

const AI_CNT: u32 = 100;
const MD_SCALE: u32 = 3;

/// Scalable TCP, with its snd_cwnd_cnt.
#[derive(Clone, Debug, Default)]
pub struct Scalable {
    cwnd_cnt: u32,
}

impl CcHooks for Scalable {
    fn name(&self) -> &'static str {
        "scalable"
    }

    fn ack_received(&mut self, v: &CcView, win: &mut Window, kind: AckKind) {
        if let Some(acked) = slow_start_then(v, win, kind) {
            let w = pkts(v, win).min(AI_CNT);
            cong_avoid_ai(v, win, &mut self.cwnd_cnt, w, acked);
        }
    }

    fn cong_signal(&mut self, v: &CcView, win: &mut Window, sig: CongSignal) {
        if sig != CongSignal::RtoErr {
            let cwnd = pkts(v, win);
            win.ssthresh = (cwnd - (cwnd >> MD_SCALE)).max(2) as u64 * v.mss;
            self.cwnd_cnt = 0;
        }
    }
}

impl LinuxCcOps for Scalable {}

#[cfg(test)]
mod tests {
    //! Reference arithmetic: tcp_scalable.c with tcp_cong.c tcp_cong_avoid_ai().
    use super::*;
    use crate::cc::CcVars;

    #[test]
    fn one_packet_per_hundred_acked_and_an_eighth_off() {
        let mut cc = Scalable::default();
        let mut v = CcVars::new(1000, 10_000);
        v.win.cwnd = 1000 * 1000;
        v.win.ssthresh = 1000;
        v.cwnd_limited = true;
        v.bytes_this_ack = 2000; // 2 packets per ACK: 50 ACKs for 100 packets
        for _ in 0..49 {
            cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        }
        assert_eq!(v.win.cwnd, 1_000_000);
        cc.ack_received(&v.view, &mut v.win, AckKind::Ack);
        assert_eq!(v.win.cwnd, 1_001_000);
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        assert_eq!(v.win.ssthresh, (1001 - 1001 / 8) * 1000); // 876 packets
                                                              // 40 packets: 40 - 40 >> 3 = 35.
        v.win.cwnd = 40_000;
        cc.cong_signal(&v.view, &mut v.win, CongSignal::NDupAck);
        assert_eq!(v.win.ssthresh, 35_000);
    }
}

//! Connection setup (three-way handshake): each stack's SYN retransmission schedule, its initial
//! window after a retransmitted SYN, and the receiving side's SYN-ACK timer. The sender's part
//! runs in `sender/connect.rs`, the receiver's in `receiver.rs`; the rules live here.
//!
//! Sources: Linux net/ipv4/tcp_timer.c tcp_retransmit_timer() / tcp_write_timeout() (the
//! `tcp_syn_linear_timeouts` lines as in 6.5+), net/ipv4/tcp_input.c tcp_init_transfer() and
//! tcp_try_undo_spurious_syn() (kernel-patches/bpf @ 025305d5), tcp_metrics.c tcp_init_metrics();
//! FreeBSD sys/netinet/tcp_timer.c tcp_timer_rexmt() (nibanks/freebsd-src @ 4d285de8),
//! tcp_input.c cc_conn_init() (nibanks @ 62d1e135), cc/cc_newreno.c and cc/cc_cubic.c
//! cong_signal(CC_RTO) (nibanks @ 7872114f), tcp_syncache.c syncache_timeout(); RFC 6298 §2.1,
//! §5.5, §5.7 and RFC 5681 §3.1 for the textbook stack. docs/models.md, "Connection setup".

use crate::time::{Ns, MS, SEC};

/// How a stack times its SYN and when it gives up connecting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SynTimer {
    /// RFC 6298 §2.1 (initial RTO 1 s) and §5.5 (double on each timeout); RFC 1122 §4.2.3.5
    /// (R2 for a SYN at least 3 minutes): given up after 180 s.
    Rfc,
    /// Linux: TCP_TIMEOUT_INIT (1 s); tcp_retransmit_timer() leaves the RTO unchanged while
    /// `total_rto <= tcp_syn_linear_timeouts` in SYN_SENT, then doubles it (at most TCP_RTO_MAX,
    /// 120 s); tcp_write_timeout() gives up when `icsk_retransmits >= tcp_syn_retries +
    /// tcp_syn_linear_timeouts`.
    Linux {
        /// net.ipv4.tcp_syn_retries (default 6).
        retries: u32,
        /// net.ipv4.tcp_syn_linear_timeouts (default 4 since Linux 6.5; 0 before).
        linear: u32,
    },
    /// FreeBSD: the first SYN waits t_rxtcur = tcp_rexmit_initial (1 s, tcp_newtcpcb()); after
    /// the k-th timeout tcp_timer_rexmt() sets `rexmt = tcp_rexmit_initial * tcp_backoff[k]` and
    /// TCPT_RANGESET adds tcp_rexmit_slop; the keep-alive timer armed at connect
    /// (TP_KEEPINIT, TCPTV_KEEP_INIT = 75 s) drops a connection still in SYN_SENT.
    FreeBsd {
        /// tcp_rexmit_slop (200 ms).
        slop_ns: Ns,
    },
}

/// FreeBSD tcp_timer.c `tcp_backoff[TCP_MAXRXTSHIFT + 1]`.
const FREEBSD_BACKOFF: [u64; 13] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 512, 512, 512];
/// FreeBSD tcp_rexmit_max (TCPTV_REXMTMAX, 64 s).
const FREEBSD_REXMIT_MAX_NS: Ns = 64 * SEC;
/// FreeBSD TCPTV_KEEP_INIT: a connection not established after 75 s is dropped.
const FREEBSD_KEEP_INIT_NS: Ns = 75 * SEC;
/// Linux TCP_RTO_MAX.
const LINUX_RTO_MAX_NS: Ns = 120 * SEC;

impl SynTimer {
    /// The time from the SYN sent after `retrans` retransmissions to the next timeout.
    pub fn interval_ns(self, retrans: u32) -> Ns {
        match self {
            SynTimer::Rfc => (SEC << retrans.min(20)).min(60 * SEC),
            // The k-th timeout doubles only when k > linear: after `retrans` timeouts the RTO
            // has doubled max(0, retrans - linear) times.
            SynTimer::Linux { linear, .. } => {
                let doublings = retrans.saturating_sub(linear).min(20);
                (SEC << doublings).min(LINUX_RTO_MAX_NS)
            }
            SynTimer::FreeBsd { slop_ns } => {
                if retrans == 0 {
                    SEC
                } else {
                    let k = (retrans as usize).min(FREEBSD_BACKOFF.len() - 1);
                    (SEC * FREEBSD_BACKOFF[k] + slop_ns).clamp(30 * MS, FREEBSD_REXMIT_MAX_NS)
                }
            }
        }
    }

    /// When a timer other than the SYN's ends the attempt (FreeBSD's TT_KEEP at 75 s; the RFC
    /// stack's R2 at 180 s), for a first SYN at `first_ns`.
    pub fn give_up_at(self, first_ns: Ns) -> Option<Ns> {
        match self {
            SynTimer::Rfc => Some(first_ns + 180 * SEC),
            SynTimer::Linux { .. } => None,
            SynTimer::FreeBsd { .. } => Some(first_ns + FREEBSD_KEEP_INIT_NS),
        }
    }

    /// Whether a timeout at `now` (with `retrans` retransmissions sent, the first SYN at
    /// `first_ns`) ends the attempt instead of sending another SYN.
    pub fn gives_up(self, retrans: u32, first_ns: Ns, now: Ns) -> bool {
        match self {
            SynTimer::Rfc => now - first_ns >= 180 * SEC,
            SynTimer::Linux { retries, linear } => retrans >= retries + linear,
            // t_rxtshift > V_tcp_retries (TCP_MAXRXTSHIFT, 12) or the TT_KEEP drop at 75 s.
            SynTimer::FreeBsd { .. } => retrans >= 12 || now - first_ns >= FREEBSD_KEEP_INIT_NS,
        }
    }
}

/// What a stack sets the window to when the SYN had to be retransmitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SynLossWindow {
    /// RFC 5681 §3.1: after a retransmitted SYN the initial window is one segment.
    OneSegment,
    /// Linux tcp_init_transfer(): `if (tp->total_retrans > 1 && tp->undo_marker)` cwnd = 1, else
    /// the initial window; tcp_try_undo_spurious_syn() clears undo_marker when the SYN-ACK echoes
    /// the first SYN's timestamp. One lost SYN keeps the initial window.
    LinuxAfterTwo,
    /// FreeBSD: tcp_timer_rexmt() sets snd_cwnd = 1 in SYN_SENT, then cc_cong_signal(CC_RTO)
    /// lets the module set ssthresh (first timeout only: min(snd_wnd = 0, pipe) gives 2 MSS)
    /// and snd_cwnd = mss (cc_newreno.c, cc_cubic.c), so cc_conn_init()'s `snd_cwnd == 1` test
    /// never holds: the initial window is kept and ssthresh is 2 MSS.
    FreeBsdCcRto,
}

/// A stack's connection-setup behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SynProfile {
    /// SYN retransmission schedule.
    pub timer: SynTimer,
    /// Initial window after a retransmitted SYN.
    pub loss_window: SynLossWindow,
    /// Retransmitted SYNs that still ask for ECN: Linux 0 (tcp_ecn_clear_syn(), RFC 3168
    /// §6.1.1.1 fallback, net.ipv4.tcp_ecn_fallback = 1), FreeBSD 1 (tcp_ecn_output_syn_sent():
    /// `t_rxtshift <= V_tcp_ecn_maxretries`, default 1), the RFC stack all.
    pub ecn_setup_retries: u32,
    /// The RTO once data starts when the handshake gave no RTT sample: Linux
    /// TCP_TIMEOUT_FALLBACK (3 s, tcp_init_metrics()), RFC 6298 §5.7 (3 s, and after any SYN
    /// timeout); None: FreeBSD keeps the backed-off t_rxtcur.
    pub fallback_rto_ns: Option<Ns>,
    /// The SYN-ACK timer of this stack as a receiver.
    pub synack: SynAckTimer,
}

/// How the receiving side retransmits its SYN-ACK until the handshake's ACK (or data) arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SynAckTimer {
    /// Linux reqsk: TCP_TIMEOUT_INIT << num_timeout, net.ipv4.tcp_synack_retries = 5.
    Linux,
    /// FreeBSD syncache_timeout(): tcp_rexmit_initial first, then TCPT_RANGESET(
    /// tcp_rexmit_initial * tcp_backoff[sc_rxmits]) with the slop; SYNCACHE_MAXREXMTS = 3.
    FreeBsd {
        /// tcp_rexmit_slop.
        slop_ns: Ns,
    },
}

impl SynAckTimer {
    /// The wait after the SYN-ACK sent after `retrans` retransmissions.
    pub fn interval_ns(self, retrans: u32) -> Ns {
        match self {
            SynAckTimer::Linux => (SEC << retrans.min(20)).min(LINUX_RTO_MAX_NS),
            SynAckTimer::FreeBsd { slop_ns } => SynTimer::FreeBsd { slop_ns }.interval_ns(retrans),
        }
    }

    /// Retransmissions after which the receiver stops.
    pub fn max_retrans(self) -> u32 {
        match self {
            SynAckTimer::Linux => 5,
            SynAckTimer::FreeBsd { .. } => 3,
        }
    }
}

impl SynProfile {
    /// The textbook stack.
    pub fn rfc() -> Self {
        SynProfile {
            timer: SynTimer::Rfc,
            loss_window: SynLossWindow::OneSegment,
            ecn_setup_retries: u32::MAX,
            fallback_rto_ns: Some(3 * SEC),
            synack: SynAckTimer::Linux,
        }
    }

    /// Linux with tcp_syn_retries / tcp_syn_linear_timeouts.
    pub fn linux(retries: u32, linear: u32) -> Self {
        SynProfile {
            timer: SynTimer::Linux { retries, linear },
            loss_window: SynLossWindow::LinuxAfterTwo,
            ecn_setup_retries: 0,
            fallback_rto_ns: Some(3 * SEC),
            synack: SynAckTimer::Linux,
        }
    }

    /// FreeBSD's default and RACK stacks.
    pub fn freebsd(slop_ns: Ns) -> Self {
        SynProfile {
            timer: SynTimer::FreeBsd { slop_ns },
            loss_window: SynLossWindow::FreeBsdCcRto,
            ecn_setup_retries: 1,
            fallback_rto_ns: None,
            synack: SynAckTimer::FreeBsd { slop_ns },
        }
    }
}

/// The receiving side's handshake state (a Linux request sock / FreeBSD syncache entry).
#[derive(Clone, Debug, Default)]
pub struct Server {
    /// The SYN-ACK it answers with (options bits, ECE), once a SYN arrived.
    pub synack: Option<(u8, bool)>,
    /// Whether the handshake's ACK or data has arrived.
    pub established: bool,
    /// When the SYN-ACK timer fires.
    pub deadline: Option<Ns>,
    /// SYN-ACK retransmissions.
    pub retrans: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Send times of the SYNs until the stack gives up, from the timer alone.
    fn syn_times(t: SynTimer) -> Vec<Ns> {
        let (mut now, mut out, mut n) = (0, vec![0], 0);
        loop {
            now += t.interval_ns(n);
            if t.gives_up(n, 0, now) {
                return out;
            }
            n += 1;
            out.push(now);
        }
    }

    #[test]
    fn linux_sends_five_syns_a_second_apart_then_backs_off() {
        // 6.5+: tcp_syn_linear_timeouts 4, tcp_syn_retries 6: 11 SYNs at 0..5 s, then 7, 11,
        // 19, 35, 67 s; the 11th timeout (at 131 s) gives up.
        let secs: Vec<Ns> = syn_times(SynTimer::Linux {
            retries: 6,
            linear: 4,
        })
        .iter()
        .map(|t| t / SEC)
        .collect();
        assert_eq!(secs, vec![0, 1, 2, 3, 4, 5, 7, 11, 19, 35, 67]);
        // 5.15 (no linear timeouts): 0, 1, 3, 7, 15, 31, 63.
        let secs: Vec<Ns> = syn_times(SynTimer::Linux {
            retries: 6,
            linear: 0,
        })
        .iter()
        .map(|t| t / SEC)
        .collect();
        assert_eq!(secs, vec![0, 1, 3, 7, 15, 31, 63]);
    }

    #[test]
    fn freebsd_adds_its_slop_from_the_second_timeout_and_drops_at_75_s() {
        // 1 s, then 2 + 0.2, 4 + 0.2, 8.2, 16.2, 32.2: SYNs at 0, 1, 3.2, 7.4, 15.6, 31.8, 64;
        // the next timeout (128.2 s) is past TCPTV_KEEP_INIT.
        let ms: Vec<Ns> = syn_times(SynTimer::FreeBsd { slop_ns: 200 * MS })
            .iter()
            .map(|t| t / MS)
            .collect();
        assert_eq!(ms, vec![0, 1000, 3200, 7400, 15600, 31800, 64000]);
    }
}

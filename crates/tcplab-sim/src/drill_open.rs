//! The active open of a drill endpoint (`tcplab drill`'s model targets, connect()): when each SYN
//! is sent and when the attempt is given up. FreeBSD: fel1x-developer/freebsd-src @
//! 2d614aa2fe3e037bd11d351b0b5cfda776e65814 sys/netinet/tcp_timer.c tcp_timer_rexmt() (`if
//! (++tp->t_rxtshift > V_tcp_retries)` drop; in SYN_SENT `rexmt = tcp_rexmit_initial *
//! tcp_backoff[tp->t_rxtshift]`; TCPT_RANGESET adds tcp_rexmit_slop, bounded by t_rttmin =
//! tcp_rexmit_min and TCPTV_REXMTMAX), tcp_subr.c tcp_newtcpcb() (the first SYN waits t_rxtcur =
//! tcp_rexmit_initial), tcp_timer_keep() (a connection not established when TP_KEEPINIT(tp)
//! expires is dropped). Linux and the textbook stack: the simulator's own SYN schedule
//! ([`SynTimer`]).

use crate::tcp::handshake::SynTimer;
use crate::time::{Ns, MS, SEC};

/// FreeBSD tcp_timer.c `tcp_backoff[TCP_MAXRXTSHIFT + 1]`.
const FREEBSD_BACKOFF: [u64; 13] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 512, 512, 512];

/// How a stack times its SYNs, with the knobs a script sets.
#[derive(Clone, Copy, Debug)]
pub enum OpenTimer {
    /// FreeBSD's default and RACK stacks (net.inet.tcp.rexmit_initial, rexmit_slop,
    /// rexmit_min, retries; TCP_KEEPINIT or net.inet.tcp.keepinit).
    FreeBsd {
        /// tcp_rexmit_initial.
        initial_ns: Ns,
        /// tcp_rexmit_slop.
        slop_ns: Ns,
        /// tcp_rexmit_min (t_rttmin).
        min_ns: Ns,
        /// V_tcp_retries (TCP_MAXRXTSHIFT, 12).
        retries: u32,
        /// TP_KEEPINIT(tp).
        keepinit_ns: Ns,
    },
    /// A simulator stack's schedule (Linux, RFC).
    Sim(SynTimer),
}

impl OpenTimer {
    /// FreeBSD's defaults: 1 s, 200 ms slop, 30 ms minimum, 12 retries, 75 s keepinit.
    pub fn freebsd() -> Self {
        OpenTimer::FreeBsd {
            initial_ns: SEC,
            slop_ns: 200 * MS,
            min_ns: 30 * MS,
            retries: 12,
            keepinit_ns: 75 * SEC,
        }
    }

    /// The wait after the SYN sent at retransmission shift `shift`.
    pub fn interval_ns(self, shift: u32) -> Ns {
        match self {
            OpenTimer::FreeBsd {
                initial_ns,
                slop_ns,
                min_ns,
                ..
            } => {
                if shift == 0 {
                    initial_ns
                } else {
                    let k = (shift as usize).min(FREEBSD_BACKOFF.len() - 1);
                    (initial_ns * FREEBSD_BACKOFF[k] + slop_ns).clamp(min_ns, 64 * SEC)
                }
            }
            OpenTimer::Sim(t) => t.interval_ns(shift),
        }
    }
}

/// What the SYN timer did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenEvent {
    /// Send the SYN again; its retransmission shift (t_rxtshift).
    Resend(u32),
    /// connect() fails with ETIMEDOUT.
    GiveUp,
}

/// One connection in SYN_SENT.
#[derive(Clone, Debug)]
pub struct ActiveOpen {
    timer: OpenTimer,
    first_ns: Ns,
    shift: u32,
    next_ns: Option<Ns>,
}

impl ActiveOpen {
    /// The first SYN leaves at `now`.
    pub fn new(timer: OpenTimer, now: Ns) -> Self {
        ActiveOpen {
            timer,
            first_ns: now,
            shift: 0,
            next_ns: Some(now + timer.interval_ns(0)),
        }
    }

    /// When the next timer (SYN retransmission or the keep-init drop) fires.
    pub fn deadline(&self) -> Option<Ns> {
        let keep = match self.timer {
            OpenTimer::FreeBsd { keepinit_ns, .. } => Some(self.first_ns + keepinit_ns),
            OpenTimer::Sim(t) => t.give_up_at(self.first_ns),
        };
        crate::time::earliest([self.next_ns, keep])
    }

    /// The timer due at `now`.
    pub fn on_timer(&mut self, now: Ns) -> OpenEvent {
        let give_up = match self.timer {
            OpenTimer::FreeBsd {
                retries,
                keepinit_ns,
                ..
            } => now >= self.first_ns + keepinit_ns || self.shift + 1 > retries,
            OpenTimer::Sim(t) => t.gives_up(self.shift, self.first_ns, now),
        };
        if give_up {
            self.next_ns = None;
            return OpenEvent::GiveUp;
        }
        self.shift += 1;
        self.next_ns = Some(now + self.timer.interval_ns(self.shift));
        OpenEvent::Resend(self.shift)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// freebsd-tcp-testsuite snd-syn-rtx-max-number: TCP_KEEPINIT 363 s, connect at 1 s: SYNs at
    /// 1, 2, 4.2, 8.4, 16.6, 32.8, 65, then every 64 s (129 ... 321): 11 SYNs, then ETIMEDOUT
    /// at 364 s.
    #[test]
    fn freebsd_syns_until_keepinit() {
        let timer = match OpenTimer::freebsd() {
            OpenTimer::FreeBsd {
                initial_ns,
                slop_ns,
                min_ns,
                retries,
                ..
            } => OpenTimer::FreeBsd {
                initial_ns,
                slop_ns,
                min_ns,
                retries,
                keepinit_ns: 363 * SEC,
            },
            t => t,
        };
        let mut o = ActiveOpen::new(timer, SEC);
        let mut sent = vec![SEC];
        while let Some(t) = o.deadline() {
            match o.on_timer(t) {
                OpenEvent::Resend(_) => sent.push(t),
                OpenEvent::GiveUp => {
                    assert_eq!(t, 364 * SEC);
                    break;
                }
            }
        }
        let ms: Vec<u64> = sent.iter().map(|t| t / MS).collect();
        assert_eq!(
            ms,
            [1000, 2000, 4200, 8400, 16_600, 32_800, 65_000, 129_000, 193_000, 257_000, 321_000]
        );
    }
}

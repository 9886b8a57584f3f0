//! The drill endpoint's chronographs on the linux stack (tcpi_busy_time, tcpi_rwnd_limited,
//! tcpi_sndbuf_limited), read at torvalds/linux v6.18: net/ipv4/tcp_output.c tcp_chrono_set(),
//! tcp_chrono_start(), tcp_chrono_stop(), tcp_write_xmit() (`if (is_rwnd_limited)
//! tcp_chrono_start(sk, TCP_CHRONO_RWND_LIMITED); else tcp_chrono_stop(sk,
//! TCP_CHRONO_RWND_LIMITED);`), include/net/tcp.h tcp_add_write_queue_tail() (a new send head
//! starts TCP_CHRONO_BUSY), tcp_input.c tcp_clean_rtx_queue() (`if (!skb) tcp_chrono_stop(sk,
//! TCP_CHRONO_BUSY);`), tcp.c tcp_get_info_chrono_stats().

use crate::drill::Endpoint;
use crate::time::{Ns, SEC};

/// enum tcp_chrono (include/linux/tcp.h): UNSPEC 0, BUSY 1, RWND_LIMITED 2, SNDBUF_LIMITED 3; a
/// higher one takes precedence.
pub(crate) const CHRONO_UNSPEC: u8 = 0;
pub(crate) const CHRONO_BUSY: u8 = 1;
pub(crate) const CHRONO_RWND_LIMITED: u8 = 2;

/// tp->chrono_type, tp->chrono_start (jiffies) and tp->chrono_stat[] (jiffies per type).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Chrono {
    kind: u8,
    start_jiffies: u64,
    stat_jiffies: [u64; 3],
}

impl Endpoint {
    fn chrono_now(&self, now: Ns) -> u64 {
        (now + self.host.jiffy_phase_ns) / (SEC / self.host.hz)
    }

    /// tcp_chrono_set(): the running type's time is added up, `new` runs from now.
    fn chrono_set(&mut self, now: Ns, new: u8) {
        let j = self.chrono_now(now);
        let c = &mut self.chrono;
        if c.kind > CHRONO_UNSPEC {
            c.stat_jiffies[c.kind as usize - 1] += j.saturating_sub(c.start_jiffies);
        }
        c.start_jiffies = j;
        c.kind = new;
    }

    /// tcp_chrono_start(): `if (type > tp->chrono_type) tcp_chrono_set(tp, type);`.
    pub(crate) fn chrono_start(&mut self, now: Ns, kind: u8) {
        if kind > self.chrono.kind {
            self.chrono_set(now, kind);
        }
    }

    /// tcp_chrono_stop(): both queues empty stops the clock; else the stopped type, if it is the
    /// one running, gives way to BUSY.
    pub(crate) fn chrono_stop(&mut self, now: Ns, kind: u8) {
        let s = &self.sender;
        if s.snd_una == s.written.max(s.snd_nxt) {
            self.chrono_set(now, CHRONO_UNSPEC);
        } else if kind == self.chrono.kind {
            self.chrono_set(now, CHRONO_BUSY);
        }
    }

    /// tcp_write_queue_purge(): `tcp_chrono_stop(sk, TCP_CHRONO_BUSY)` with both queues emptied.
    pub(crate) fn chrono_stop_all(&mut self, now: Ns) {
        self.chrono_set(now, CHRONO_UNSPEC);
    }

    /// The end of a tcp_write_xmit() pass (a push with a send head): rwnd-limited when the head's
    /// first segment lies beyond the window while cwnd has room (tcp_cwnd_test() comes first,
    /// then tcp_snd_wnd_test(): `end_seq = seq + min(skb->len, cur_mss); return
    /// !after(end_seq, tcp_wnd_end(tp));`).
    pub(crate) fn chrono_after_xmit(&mut self, now: Ns, had_head: bool) {
        if !had_head {
            return;
        }
        let s = &self.sender;
        let (cwnd, in_flight) = self.packets();
        let first_seg_end = s.snd_nxt + s.mss.min(s.written - s.snd_nxt.min(s.written));
        let rwnd_limited =
            s.written > s.snd_nxt && in_flight < cwnd && first_seg_end > s.snd_una + s.snd_wnd;
        if rwnd_limited {
            self.chrono_start(now, CHRONO_RWND_LIMITED);
        } else {
            self.chrono_stop(now, CHRONO_RWND_LIMITED);
        }
    }

    /// tcp_get_info_chrono_stats(): each type's jiffies (the running one's up to now) in µs
    /// (`stats[i] *= USEC_PER_SEC / HZ`); busy time is their sum. (busy, rwnd_limited,
    /// sndbuf_limited.) The model's writes never wait for buffer space, so SNDBUF_LIMITED never
    /// runs.
    pub(crate) fn chrono_info(&self) -> (i64, i64, i64) {
        let c = &self.chrono;
        let us_per_jiffy = 1_000_000 / self.host.hz;
        let mut stats = c.stat_jiffies;
        if c.kind > CHRONO_UNSPEC {
            stats[c.kind as usize - 1] += self.chrono_now(self.now).saturating_sub(c.start_jiffies);
        }
        let us = stats.map(|j| (j * us_per_jiffy) as i64);
        (us.iter().sum(), us[1], us[2])
    }
}

#[cfg(test)]
mod tests {
    use crate::drill::Inbound;
    use crate::drill_test_support::{info, linux_endpoint};
    use crate::time::MS;

    /// A write into a zero window is busy and rwnd-limited until the window opens; once the
    /// data is acknowledged the clock stops: busy = rwnd-limited + the time in flight.
    #[test]
    fn rwnd_limited_runs_from_a_blocked_write_to_the_window_opening() {
        let mut e = linux_endpoint(0, 10 * MS, 0);
        e.write(0, 1000);
        assert!(e.take_sent().is_empty());
        e.advance(100 * MS);
        assert_eq!(info(&e, "tcpi_rwnd_limited"), 100_000);
        let open = |ack| Inbound {
            ack,
            win: 2000,
            ..Default::default()
        };
        e.on_segment(200 * MS, &open(0));
        assert_eq!(e.take_sent().len(), 1);
        e.on_segment(240 * MS, &open(1000));
        e.advance(300 * MS);
        assert_eq!(info(&e, "tcpi_rwnd_limited"), 200_000);
        assert_eq!(info(&e, "tcpi_busy_time"), 240_000);
        assert_eq!(info(&e, "tcpi_sndbuf_limited"), 0);
    }
}

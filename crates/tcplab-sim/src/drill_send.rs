//! The drill endpoint's sending calls on the linux stack, as net/ipv4/tcp.c and tcp_output.c
//! (torvalds/linux v6.18) make them: tcp_sendmsg_locked() (skbs, PSH, MSG_MORE), Nagle's
//! algorithm and the cork (TCP_NODELAY, TCP_CORK; tcp_nagle_test() is the sender's, in
//! `new_data_len()`), and the probe timer that sends held data when nothing is in flight.

use crate::drill::Endpoint;
use crate::time::Ns;

/// tp->nonagle bits (include/linux/tcp.h).
const TCP_NAGLE_OFF: u8 = 1;
const TCP_NAGLE_CORK: u8 = 2;
const TCP_NAGLE_PUSH: u8 = 4;

impl Endpoint {
    /// tcp_sendmsg_locked() (net/ipv4/tcp.c): the write goes into skbs of the size goal, and the
    /// stack sends while it copies: when an skb is full, everything (`if (forced_push(tp)) {
    /// tcp_mark_push(tp, skb); __tcp_push_pending_frames(sk, mss_now, TCP_NAGLE_PUSH); }`) or,
    /// when it is the send head, one skb (`tcp_push_one()`); at the end tcp_push() marks the
    /// tail PSH unless MSG_MORE (`if (!(flags & MSG_MORE) || forced_push(tp))
    /// tcp_mark_push(tp, skb);`) and sends with tp->nonagle, or corked for MSG_MORE (`if (flags
    /// & MSG_MORE) nonagle = TCP_NAGLE_CORK;`). What is sent during the copy decides the skbs
    /// after it: the unsent rest of a cut skb is the queue's tail and takes more of the write.
    /// Other stacks: the write, then the stack's output.
    pub(crate) fn sendmsg(&mut self, now: Ns, bytes: u64, eor: bool, more: bool) {
        self.advance(now);
        self.current_mss(); // tcp_send_mss()
        let Some(goal) = self.skbs.as_ref().map(|q| q.size_goal(self.sender.mss)) else {
            self.sender.app_write(bytes);
            if eor {
                self.sender.app_mark_eor();
            }
            self.push(now, None, None);
            return;
        };
        let mss = self.sender.mss.max(1);
        let max_segs = self.tso_segs();
        let (mut left, mut first) = (bytes, true);
        while left > 0 {
            let (cwnd, in_flight) = self.packets();
            let q = self.skbs.as_mut().expect("linux skbs");
            let (n, full, new_skb) = q.copy(left, goal, first);
            if new_skb && q.tail_is_head() {
                // tcp_add_write_queue_tail(): a new send head starts TCP_CHRONO_BUSY.
                self.chrono_start(now, crate::drill_chrono::CHRONO_BUSY);
            }
            let q = self.skbs.as_mut().expect("linux skbs");
            if new_skb {
                // tcp_skb_entail(): `if (tp->nonagle & TCP_NAGLE_PUSH) tp->nonagle &= ~TCP_NAGLE_PUSH;`
                if let Some(d) = self.sender.linux_drill.as_deref_mut() {
                    d.nonagle &= !TCP_NAGLE_PUSH;
                }
            }
            self.sender.app_write(n);
            (left, first) = (left - n, false);
            if left == 0 || !full {
                continue;
            }
            if q.forced_push() {
                q.mark_push();
                self.push(now, None, Some(TCP_NAGLE_PUSH));
            } else if q.tail_is_head() {
                // tcp_push_one(): tcp_write_xmit()'s first pass, tcp_cwnd_test()'s quota.
                let quota = cwnd.saturating_sub(in_flight).min((cwnd >> 1).max(1));
                let piece = q.head_piece(quota.min(max_segs), mss);
                self.push(now, Some(piece), Some(TCP_NAGLE_PUSH));
            }
        }
        let q = self.skbs.as_mut().expect("linux skbs");
        if eor {
            q.mark_eor();
            self.sender.app_mark_eor();
        }
        if !more || q.forced_push() {
            q.mark_push();
        }
        self.push(now, None, more.then_some(TCP_NAGLE_CORK));
    }

    /// The stack sends what it may (tcp_push_pending_frames()), at most `budget` bytes of new
    /// data, with `nonagle` for this push in place of tp->nonagle.
    /// The linux stack: a device that refuses every packet sends nothing (tcp_write_xmit()
    /// breaks at the first failed tcp_transmit_skb()), and the pass ends the chronographs'
    /// rwnd-limited time or starts it (`drill_chrono`).
    pub(crate) fn push(&mut self, now: Ns, budget: Option<u64>, nonagle: Option<u8>) {
        if self.sender.linux_drill.is_none() {
            self.call(now, |s, now, out, id| s.app_wrote(now, out, id));
            return;
        }
        if budget.is_none() && self.path.is_some() {
            // tcp_write_xmit() without push_one: `result = tcp_mtu_probe(sk); if (!result) return
            // false;` (crate::drill_mtu).
            if self.mtu_probe(now) == crate::drill_mtu::Probe::Wait {
                return;
            }
        }
        // The stack takes the write into its queue either way; a refusing device sends none of it.
        let refused = self.probe.xmit_refused || self.probe.timed_out;
        let d = self.drill();
        let kept = d.nonagle;
        d.nonagle = nonagle.unwrap_or(kept);
        d.xmit_budget = if refused { Some(0) } else { budget };
        let had_head = self.sender.app_written() > self.sender.snd_nxt;
        self.call(now, |s, now, out, id| s.app_wrote(now, out, id));
        let d = self.drill();
        (d.xmit_budget, d.nonagle) = (None, kept);
        self.chrono_after_xmit(now, had_head);
    }

    /// The sender's linux drill state (the linux stack's endpoint always has it).
    fn drill(&mut self) -> &mut crate::tcp::sender::LinuxDrill {
        self.sender.linux_drill.get_or_insert_with(Box::default)
    }

    /// cwnd and packets in flight (tcp_packets_in_flight()), in packets.
    pub(crate) fn packets(&self) -> (u64, u64) {
        let mss = self.sender.mss.max(1);
        (
            self.sender.v.win.cwnd / mss,
            self.sender.linux_packets_in_flight(),
        )
    }

    /// tcp_tso_segs(): tcp_tso_autosize()'s `max_t(u32, bytes / mss_now, min_tso_segs)`, the
    /// bytes about 1 ms at the pacing rate (the sender's `tso_chunk_limit()`).
    pub(crate) fn tso_segs(&self) -> u64 {
        let min = self
            .sender
            .linux_drill
            .as_ref()
            .map_or(2, |d| d.min_tso_segs);
        (self.sender.tso_chunk_limit() / self.sender.mss.max(1)).max(min)
    }

    /// sysctl net.ipv4.tcp_min_tso_segs (the linux stack; 2 by default).
    pub fn set_min_tso_segs(&mut self, segs: u64) {
        if let Some(d) = self.sender.linux_drill.as_deref_mut() {
            d.min_tso_segs = segs.max(1);
        }
    }

    /// setsockopt(TCP_NODELAY) (__tcp_sock_set_nodelay()): on, `tp->nonagle |= TCP_NAGLE_OFF |
    /// TCP_NAGLE_PUSH; tcp_push_pending_frames(sk);`; off, `tp->nonagle &= ~TCP_NAGLE_OFF;`.
    /// The linux stack; before any, Nagle is on (tp->nonagle 0).
    pub fn set_nodelay(&mut self, now: Ns, on: bool) {
        self.advance(now);
        if on {
            self.drill().nonagle |= TCP_NAGLE_OFF | TCP_NAGLE_PUSH;
            self.push(now, None, None);
        } else {
            self.drill().nonagle &= !TCP_NAGLE_OFF;
        }
    }

    /// setsockopt(TCP_CORK) (__tcp_sock_set_cork()): on, `tp->nonagle |= TCP_NAGLE_CORK;`; off,
    /// `tp->nonagle &= ~TCP_NAGLE_CORK; if (tp->nonagle & TCP_NAGLE_OFF) tp->nonagle |=
    /// TCP_NAGLE_PUSH; tcp_push_pending_frames(sk);`.
    pub fn set_cork(&mut self, now: Ns, on: bool) {
        self.advance(now);
        let d = self.drill();
        if on {
            d.nonagle |= TCP_NAGLE_CORK;
        } else {
            d.nonagle &= !TCP_NAGLE_CORK;
            if d.nonagle & TCP_NAGLE_OFF != 0 {
                d.nonagle |= TCP_NAGLE_PUSH;
            }
            self.push(now, None, None);
        }
    }

    /// tcp_check_probe_timer() after a push or an ACK: nothing in flight and data waiting (held
    /// by Nagle, the cork, MSG_MORE, a window too small, or a device that refused it) arms
    /// ICSK_TIME_PROBE0 at tcp_probe0_base(), max(icsk_rto, TCP_RTO_MIN), on the timer wheel
    /// unless it is pending (`!inet_csk(sk)->icsk_pending`); anything in flight is the RTO's (one
    /// icsk timer). What the timer does when it fires: `drill_probe`.
    pub(crate) fn check_probe_timer(&mut self, now: Ns) {
        if !self.probe_wanted() {
            self.probe0 = None;
        } else if self.probe0.is_none() {
            let base = self.probe0_base();
            let h = self.host;
            self.probe0 = Some(crate::time::linux_timer_fire_ns(
                now,
                base,
                h.hz,
                h.jiffy_phase_ns,
            ));
        }
    }

    /// tcp_write_wakeup() with a send head inside the window: it goes out, at most one MSS,
    /// whatever Nagle says, with PSH (`TCP_SKB_CB(skb)->tcp_flags |= TCPHDR_PSH;`, on both pieces
    /// when it is cut).
    pub(crate) fn wakeup_send(&mut self, now: Ns) {
        if let Some(q) = self.skbs.as_mut() {
            q.wakeup();
        }
        let mss = self.sender.mss;
        self.push(now, Some(mss), Some(TCP_NAGLE_PUSH));
    }
}

#[cfg(test)]
mod tests {
    use crate::drill::{Endpoint, Inbound};
    use crate::drill_test_support::{linux_endpoint, sent};
    use crate::time::MS;

    fn endpoint() -> Endpoint {
        linux_endpoint(7, 10 * MS, 257 << 7)
    }

    /// Nagle (tp->nonagle 0): a second small write waits while the first, a sub-MSS segment, is
    /// unacknowledged (tcp_minshall_check()), and goes when it is acknowledged.
    #[test]
    fn nagle_holds_a_small_write_behind_an_unacknowledged_small_segment() {
        let mut e = endpoint();
        e.write(0, 100);
        assert_eq!(sent(&mut e), [(0, 100, true)]);
        e.write(MS, 100);
        assert!(sent(&mut e).is_empty());
        let ack = Inbound {
            ack: 100,
            win: 257,
            ..Default::default()
        };
        e.on_segment(20 * MS, &ack);
        assert_eq!(sent(&mut e), [(100, 100, true)]);
    }

    /// TCP_CORK holds small writes; uncorking with TCP_NODELAY off sends them, PSH on the last
    /// write's end. MSG_MORE corks one write and marks no PSH; with nothing in flight the probe
    /// timer sends it max(RTO, 200 ms) later, with PSH (tcp_write_wakeup()).
    #[test]
    fn cork_and_msg_more_hold_until_uncorked_or_the_probe_timer() {
        let mut e = endpoint();
        e.set_cork(0, true);
        e.write(0, 40);
        e.write(50 * MS, 40);
        assert!(sent(&mut e).is_empty());
        e.set_cork(60 * MS, false);
        assert_eq!(sent(&mut e), [(0, 80, true)]);
        e.on_segment(
            70 * MS,
            &Inbound {
                ack: 80,
                win: 257,
                ..Default::default()
            },
        );
        e.send(70 * MS, 40, false, true);
        assert!(sent(&mut e).is_empty());
        let probe = e.deadline().expect("the probe timer");
        assert!(probe >= 70 * MS + 200 * MS, "{probe}");
        e.advance(probe);
        assert_eq!(sent(&mut e), [(80, 40, true)]);
    }
}

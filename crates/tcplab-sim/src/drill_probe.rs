//! The drill endpoint's probe timer on the linux stack (ICSK_TIME_PROBE0), read at torvalds/linux
//! v6.18: net/ipv4/tcp_timer.c tcp_probe_timer(), tcp_output.c tcp_send_probe0(),
//! tcp_write_wakeup(), tcp_xmit_probe_skb(), tcp_clamp_probe0_to_user_timeout(), tcp_input.c
//! tcp_ack_probe(), include/net/tcp.h tcp_probe0_base() and tcp_probe0_when(); with
//! TCP_USER_TIMEOUT (icsk_user_timeout) and a local device that refuses every packet (a qdisc
//! that drops all: NET_XMIT_DROP makes tcp_transmit_skb() return > 0).

use crate::drill::Endpoint;
use crate::drill_skb::Outbound;
use crate::time::{Ns, MS, SEC};

/// TCP_RTO_MIN and TCP_RTO_MAX (include/net/tcp.h): tcp_probe0_base() is at least the first,
/// tcp_probe0_when() at most the second.
const TCP_RTO_MIN_NS: Ns = 200 * MS;
const TCP_RTO_MAX_NS: Ns = 120 * SEC;
/// TCP_RESOURCE_PROBE_INTERVAL (include/net/tcp.h, HZ/2): the probe timer after a send the local
/// device refused.
const TCP_RESOURCE_PROBE_INTERVAL_NS: Ns = 500 * MS;
/// sysctl tcp_retries2 (its default): the most probes, and icsk_backoff's bound in
/// tcp_send_probe0().
const TCP_RETRIES2: u32 = 15;
/// TCP_TIMEOUT_MIN (include/net/tcp.h, 2 jiffies): tcp_clamp_probe0_to_user_timeout()'s floor.
const TCP_TIMEOUT_MIN_JIFFIES: u64 = 2;

/// The probe timer's state beside the sender's (struct inet_connection_sock).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ProbeState {
    /// icsk_probes_out: probes sent without an ACK (tcpi_probes).
    pub probes_out: u32,
    /// icsk_backoff as the probe timer moves it (tcpi_backoff).
    pub backoff: u32,
    /// icsk_probes_tstamp: the jiffy of the first probe of this run, None while 0.
    pub probes_tstamp: Option<u64>,
    /// icsk_user_timeout in ms (TCP_USER_TIMEOUT), 0: none.
    pub user_timeout_ms: u64,
    /// The local device drops every packet it is handed (`tc qdisc add dev tun0 root pfifo
    /// limit 0`): each tcp_transmit_skb() fails with NET_XMIT_DROP.
    pub xmit_refused: bool,
    /// tcp_write_err(): the connection timed out (sk_err ETIMEDOUT, state TCP_CLOSE).
    pub timed_out: bool,
}

impl Endpoint {
    /// tcp_jiffies32 at `now` on the host's clock.
    fn jiffies(&self, now: Ns) -> u64 {
        (now + self.host.jiffy_phase_ns) / (SEC / self.host.hz)
    }

    /// Nothing in flight and data waiting: tcp_write_xmit()'s `!tp->packets_out &&
    /// !tcp_write_queue_empty(sk)`, when tcp_check_probe_timer() arms the timer.
    pub(crate) fn probe_wanted(&self) -> bool {
        let s = &self.sender;
        s.snd_nxt == s.snd_una && s.written > s.snd_nxt && !self.probe.timed_out
    }

    /// tcp_probe0_base(): `max_t(unsigned long, inet_csk(sk)->icsk_rto, TCP_RTO_MIN)`.
    pub(crate) fn probe0_base(&self) -> Ns {
        self.sender.rtt.rto_ns.max(TCP_RTO_MIN_NS)
    }

    /// tcp_probe0_when(sk, TCP_RTO_MAX): `(u64)tcp_probe0_base(sk) << icsk->icsk_backoff`, at most
    /// TCP_RTO_MAX.
    fn probe0_when(&self) -> Ns {
        (self.probe0_base() << self.probe.backoff.min(20)).min(TCP_RTO_MAX_NS)
    }

    /// tcp_clamp_probe0_to_user_timeout(): with a user timeout and a probe run started, at most
    /// what is left of the user timeout (`remaining = msecs_to_jiffies(user_timeout) - elapsed;
    /// remaining = max_t(u32, remaining, TCP_TIMEOUT_MIN);`).
    fn clamp_to_user_timeout(&self, now: Ns, when: Ns) -> Ns {
        let (Some(t0), ms) = (self.probe.probes_tstamp, self.probe.user_timeout_ms) else {
            return when;
        };
        if ms == 0 {
            return when;
        }
        let jiffy = SEC / self.host.hz;
        let elapsed = self.jiffies(now).saturating_sub(t0);
        let limit = (ms * MS).div_ceil(jiffy); // msecs_to_jiffies() rounds up
        let remaining = limit.saturating_sub(elapsed).max(TCP_TIMEOUT_MIN_JIFFIES);
        when.min(remaining * jiffy)
    }

    /// tcp_reset_xmit_timer(sk, ICSK_TIME_PROBE0, when, TCP_RTO_MAX) on the timer wheel.
    fn arm_probe0(&mut self, now: Ns, when: Ns) {
        let h = self.host;
        self.probe0 = Some(crate::time::linux_timer_fire_ns(
            now,
            when,
            h.hz,
            h.jiffy_phase_ns,
        ));
    }

    /// tcp_probe_timer(): nothing to probe ends the run (`icsk_probes_out = 0`); a user timeout
    /// counted from the run's first probe (`(s32)(tcp_jiffies32 - icsk->icsk_probes_tstamp) >=
    /// msecs_to_jiffies(user_timeout)`) or tcp_retries2 probes abort the connection
    /// (tcp_write_err()); else tcp_send_probe0().
    pub(crate) fn probe0_fires(&mut self, now: Ns) {
        self.probe0 = None;
        if !self.probe_wanted() {
            self.probe.probes_out = 0;
            self.probe.probes_tstamp = None;
            return;
        }
        let j = self.jiffies(now);
        match self.probe.probes_tstamp {
            None => self.probe.probes_tstamp = Some(j),
            Some(t0) => {
                let ms = self.probe.user_timeout_ms;
                let limit = (ms * MS).div_ceil(SEC / self.host.hz);
                if ms > 0 && j.saturating_sub(t0) >= limit {
                    self.write_err();
                    return;
                }
            }
        }
        if self.probe.probes_out >= TCP_RETRIES2 {
            self.write_err();
        } else {
            self.send_probe0(now);
        }
    }

    /// tcp_send_probe0(): tcp_write_wakeup(); something now in flight (or nothing left) ends the
    /// run (`icsk_probes_out = 0; icsk_backoff = 0; icsk_probes_tstamp = 0`); else one more
    /// probe and the timer again: backed off (`if (icsk->icsk_backoff < tcp_retries2)
    /// icsk->icsk_backoff++; timeout = tcp_probe0_when(sk, TCP_RTO_MAX);`) when the probe left,
    /// TCP_RESOURCE_PROBE_INTERVAL when the device refused it (err > 0), clamped to the user
    /// timeout.
    fn send_probe0(&mut self, now: Ns) {
        let refused = self.write_wakeup(now);
        if !self.probe_wanted() {
            self.probe.probes_out = 0;
            self.probe.backoff = 0;
            self.probe.probes_tstamp = None;
            return;
        }
        self.probe.probes_out += 1;
        let when = if refused {
            TCP_RESOURCE_PROBE_INTERVAL_NS
        } else {
            if self.probe.backoff < TCP_RETRIES2 {
                self.probe.backoff += 1;
            }
            self.probe0_when()
        };
        let when = self.clamp_to_user_timeout(now, when);
        self.arm_probe0(now, when);
    }

    /// tcp_write_wakeup(): a send head that starts inside the window goes out, at most one MSS
    /// (drill_send's `wakeup_send`); otherwise tcp_xmit_probe_skb(sk, 0, mib), a bare ACK with
    /// `tp->snd_una - !urgent`, one below the first unacknowledged byte. Returns whether the
    /// device refused it (tcp_transmit_skb() > 0).
    fn write_wakeup(&mut self, now: Ns) -> bool {
        if self.probe.xmit_refused {
            return true;
        }
        let s = &self.sender;
        if s.snd_nxt < s.snd_una + s.snd_wnd {
            self.wakeup_send(now);
        } else {
            self.sent.push(Outbound {
                t_ns: now,
                seq: s.snd_una.wrapping_sub(1),
                len: 0,
                retx: false,
                ecn: 0,
                cwr: false,
                psh: false,
            });
        }
        false
    }

    /// tcp_ack_probe(), for an ACK that found nothing in flight (tcp_ack()'s `no_queue`): a send
    /// head that fits the window now ends the probe run (`icsk_backoff = 0; icsk_probes_tstamp
    /// = 0;` the timer cleared, tcp_data_snd_check() to send); one that does not restarts the
    /// timer at tcp_probe0_when(), clamped to the user timeout. Every ACK clears
    /// icsk_probes_out (tcp_ack()).
    pub(crate) fn ack_probe(&mut self, now: Ns, nothing_in_flight: bool, head_end: Option<u64>) {
        self.probe.probes_out = 0;
        let (Some(end), true) = (head_end, nothing_in_flight) else {
            return;
        };
        let s = &self.sender;
        if end <= s.snd_una + s.snd_wnd {
            self.probe.backoff = 0;
            self.probe.probes_tstamp = None;
            self.probe0 = None;
        } else {
            let when = self.clamp_to_user_timeout(now, self.probe0_when());
            self.arm_probe0(now, when);
        }
    }

    /// tcp_write_err(): `sk->sk_err = ETIMEDOUT`, tcp_write_queue_purge(), tcp_done(): no timer
    /// left, nothing more sent; the next write fails with ETIMEDOUT.
    fn write_err(&mut self) {
        self.probe.timed_out = true;
        self.probe0 = None;
        self.chrono_stop_all(self.now);
    }

    /// setsockopt(TCP_USER_TIMEOUT): `icsk_user_timeout` in ms.
    pub fn set_user_timeout(&mut self, ms: u64) {
        self.probe.user_timeout_ms = ms;
    }

    /// Whether the local device drops every packet (a qdisc with no room) from `now` on.
    pub fn set_xmit_refused(&mut self, now: Ns, on: bool) {
        self.advance(now);
        self.probe.xmit_refused = on;
    }

    /// Whether the connection timed out (tcp_write_err()).
    pub fn timed_out(&self) -> bool {
        self.probe.timed_out
    }
}

#[cfg(test)]
mod tests {
    use crate::drill::{Endpoint, Inbound};
    use crate::drill_test_support::{info, linux_endpoint};
    use crate::time::{MS, SEC};

    fn endpoint() -> Endpoint {
        linux_endpoint(0, 100 * MS, 65535)
    }

    /// A zero window with data waiting: window probes (a bare ACK one below snd_una) at
    /// tcp_probe0_base() = max(RTO, 200 ms), then twice, four times that (icsk_backoff); the
    /// window opening clears the backoff and sends.
    #[test]
    fn zero_window_probes_back_off_and_stop_when_the_window_opens() {
        let mut e = endpoint();
        e.write(0, 1000);
        e.take_sent();
        let zero = Inbound {
            ack: 1000,
            win: 0,
            ..Default::default()
        };
        e.on_segment(100 * MS, &zero);
        e.write(100 * MS, 2000);
        assert!(e.take_sent().is_empty());
        let base = e.probe0_base();
        let mut last = 100 * MS;
        for k in 0..3u64 {
            let t = e.deadline().expect("the probe timer");
            assert!(
                t >= last + (base << k) && t < last + (base << k) + 40 * MS,
                "{k}: {t}"
            );
            e.advance(t);
            let p = e.take_sent();
            assert_eq!(
                p.iter().map(|o| (o.seq, o.len)).collect::<Vec<_>>(),
                [(999, 0)]
            );
            last = t;
        }
        assert_eq!((info(&e, "tcpi_probes"), info(&e, "tcpi_backoff")), (3, 3));
        let open = Inbound {
            ack: 1000,
            win: 65535,
            ..Default::default()
        };
        e.on_segment(last + SEC, &open);
        let sent = e.take_sent();
        assert_eq!(sent.first().map(|o| (o.seq, o.len)), Some((1000, 1000)));
        assert_eq!((info(&e, "tcpi_probes"), info(&e, "tcpi_backoff")), (0, 0));
    }

    /// A device that refuses every packet: the probe timer retries every 500 ms
    /// (TCP_RESOURCE_PROBE_INTERVAL) without backoff; TCP_USER_TIMEOUT 3 s after the first probe
    /// the connection times out, 6 probes counted.
    #[test]
    fn refused_sends_retry_every_500ms_until_the_user_timeout() {
        let mut e = endpoint();
        e.set_user_timeout(3000);
        e.set_xmit_refused(0, true);
        e.write(0, 24);
        assert!(e.take_sent().is_empty());
        let first = e.deadline().expect("the probe timer");
        let mut fired = vec![];
        while let Some(t) = e.deadline() {
            e.advance(t);
            fired.push(t);
        }
        assert!(e.timed_out());
        assert!(e.take_sent().is_empty());
        assert_eq!((info(&e, "tcpi_probes"), info(&e, "tcpi_backoff")), (6, 0));
        let end = *fired.last().unwrap();
        assert!(
            end >= first + 3 * SEC && end < first + 3 * SEC + 40 * MS,
            "{end}"
        );
        let gaps: Vec<u64> = fired.windows(2).map(|w| (w[1] - w[0]) / MS).collect();
        assert!(
            gaps[..5].iter().all(|&g| (500..540).contains(&g)),
            "{gaps:?}"
        );
    }
}

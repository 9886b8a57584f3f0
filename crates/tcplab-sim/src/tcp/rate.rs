//! Delivery-rate estimation as Linux net/ipv4/tcp_rate.c does it (draft-cheng-iccrg-delivery-rate-
//! estimation): each transmission snapshots the delivered count and times; each ACK turns the
//! snapshot of the most recently sent packet it delivered into a rate sample, over the longer of
//! the send and the ACK intervals. Counts are packets, times µs, as in the kernel.

use crate::cc::RateSample;
use crate::time::Ns;

/// A segment newly delivered (cumulatively acked or SACKed) by the ACK being processed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Delivered {
    /// Time of its latest (re)transmission.
    pub sent_at: Ns,
    /// Its end sequence number.
    pub end: u64,
    /// Its length, bytes.
    pub len: u32,
    /// Whether it had been retransmitted.
    pub retrans: bool,
}

/// What a transmission remembers (Linux `TCP_SKB_CB(skb)->tx`), times in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RateTx {
    /// `tp->delivered` at send.
    pub delivered: u64,
    /// `tp->delivered_mstamp` at send (None: no snapshot; the kernel uses 0 for that).
    pub delivered_mstamp: Option<Ns>,
    /// `tp->first_tx_mstamp` at send: start of the send phase.
    pub first_tx_mstamp: Ns,
    /// Whether the sender was application-limited at send.
    pub is_app_limited: bool,
}

/// The sender's side of it (the `tcp_sock` fields tcp_rate.c keeps).
#[derive(Clone, Debug, Default)]
pub struct RateState {
    /// Packets delivered so far.
    pub delivered: u64,
    delivered_mstamp: Ns,
    first_tx_mstamp: Ns,
    /// 0, or the delivered count at which the application-limited bubble is gone.
    app_limited: u64,
}

/// Packets a segment of `len` bytes counts for (tcp_skb_pcount()).
pub fn pcount(len: u32, mss: u64) -> u64 {
    (len as u64).div_ceil(mss).max(1)
}

impl RateState {
    /// tcp_rate_skb_sent(): the snapshot for a transmission at `now`; `idle` when nothing was in
    /// flight (the send phase restarts).
    pub fn on_send(&mut self, now: Ns, idle: bool) -> RateTx {
        if idle {
            self.first_tx_mstamp = now;
            self.delivered_mstamp = now;
        }
        RateTx {
            delivered: self.delivered,
            delivered_mstamp: Some(self.delivered_mstamp),
            first_tx_mstamp: self.first_tx_mstamp,
            is_app_limited: self.app_limited != 0,
        }
    }

    /// tcp_rate_check_app_limited(): nothing left to send, window not full, no lost packet
    /// waiting: mark the bubble that ends once what is in flight now is delivered.
    pub fn mark_app_limited(&mut self, in_flight_pkts: u64) {
        self.app_limited = (self.delivered + in_flight_pkts).max(1);
    }

    /// When the delivered count last grew.
    pub fn delivered_mstamp(&self) -> Ns {
        self.delivered_mstamp
    }

    /// Whether the sender is application-limited now.
    pub fn app_limited(&self) -> bool {
        self.app_limited != 0
    }

    /// tcp_rate_skb_delivered() for each segment this ACK delivered (`txs[i]`: `delivered[i]`'s
    /// snapshot), then tcp_rate_gen(): the sample. `lost` is the packets newly marked lost,
    /// `min_rtt_ns` the connection's minimum RTT (0: none yet), `prior_in_flight` the packets in
    /// flight before the ACK.
    #[allow(clippy::too_many_arguments)]
    pub fn on_ack(
        &mut self,
        now: Ns,
        delivered: &[Delivered],
        txs: &[RateTx],
        mss: u64,
        lost: u64,
        min_rtt_ns: Ns,
        prior_in_flight: u64,
    ) -> RateSample {
        debug_assert_eq!(delivered.len(), txs.len());
        let mut prior: Option<(&Delivered, &RateTx)> = None;
        let mut interval_ns: Ns = 0;
        let mut newly = 0;
        let mut rtt_us = -1;
        for (d, tx) in delivered.iter().zip(txs) {
            newly += pcount(d.len, mss);
            if tx.delivered_mstamp.is_none() {
                continue;
            }
            // The most recently sent packet wins (tcp_skb_sent_after()).
            let newer = prior.is_none_or(|(p, _)| {
                d.sent_at > p.sent_at || (d.sent_at == p.sent_at && d.end > p.end)
            });
            if newer {
                prior = Some((d, tx));
                self.first_tx_mstamp = d.sent_at;
                interval_ns = d.sent_at.saturating_sub(tx.first_tx_mstamp);
            }
        }
        if let Some((p, _)) = prior {
            if !p.retrans {
                // tcp_clean_rtx_queue() / tcp_sacktag: RTT of the newest never-retransmitted one.
                rtt_us = (now.saturating_sub(p.sent_at) / 1000) as i64;
            }
        }
        self.delivered += newly;
        // Clear app-limited once the bubble is acked and gone.
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        if newly > 0 {
            self.delivered_mstamp = now;
        }
        let mut rs = RateSample {
            acked_sacked: newly,
            losses: lost,
            prior_in_flight,
            rtt_us,
            delivered: -1,
            interval_us: -1,
            ..RateSample::default()
        };
        let Some((_, tx)) = prior else { return rs };
        rs.prior_delivered = tx.delivered;
        rs.is_app_limited = tx.is_app_limited;
        rs.delivered = (self.delivered - tx.delivered) as i64;
        let ack_ns = now.saturating_sub(tx.delivered_mstamp.unwrap_or(now));
        let interval_us = (interval_ns.max(ack_ns) / 1000) as i64;
        // An interval shorter than the minimum RTT is implausible (ACK compression): no sample.
        if interval_us < (min_rtt_ns / 1000) as i64 {
            return rs;
        }
        rs.interval_us = interval_us;
        rs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(sent_at: Ns, end: u64) -> Delivered {
        Delivered {
            sent_at,
            end,
            len: 1000,
            retrans: false,
        }
    }

    #[test]
    fn a_steady_flow_samples_its_sending_rate() {
        // 10 packets sent 1 ms apart from idle, each delivered 50 ms after it was sent.
        let mut r = RateState::default();
        let mut sent = vec![];
        for i in 0..10u64 {
            sent.push((i * 1_000_000, r.on_send(i * 1_000_000, i == 0)));
        }
        let mut last = RateSample::default();
        for (i, &(t, tx)) in sent.iter().enumerate() {
            let d = [seg(t, (i as u64 + 1) * 1000)];
            last = r.on_ack(
                t + 50_000_000,
                &d,
                &[tx],
                1000,
                0,
                50_000_000,
                10 - i as u64,
            );
        }
        // The last ACK: 10 packets delivered since the first was sent; the send phase lasted 9 ms,
        // the ACK phase from the first send (delivered_mstamp at idle) 59 ms: 10 packets / 59 ms.
        assert_eq!(r.delivered, 10);
        assert_eq!(last.delivered, 10);
        assert_eq!(last.interval_us, 59_000);
        assert_eq!(last.rtt_us, 50_000);
        assert_eq!(last.prior_delivered, 0);
    }

    #[test]
    fn app_limited_marks_samples_until_the_bubble_is_delivered() {
        let mut r = RateState::default();
        let tx0 = r.on_send(0, true);
        r.mark_app_limited(1);
        let tx1 = r.on_send(1_000_000, false);
        assert!(!tx0.is_app_limited && tx1.is_app_limited);
        let s = r.on_ack(10_000_000, &[seg(0, 1000)], &[tx0], 1000, 0, 0, 2);
        assert!(!s.is_app_limited && r.app_limited()); // delivered 1, bubble ends after 1
        let s = r.on_ack(11_000_000, &[seg(1_000_000, 2000)], &[tx1], 1000, 0, 0, 1);
        assert!(s.is_app_limited && !r.app_limited());
    }
}

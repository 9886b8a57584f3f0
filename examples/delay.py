"""A delay-based algorithm in Python, after TCP Vegas (Brakmo & Peterson, IEEE JSAC 1995): once
a round it estimates the packets it keeps queued, cwnd x (srtt - base_rtt) / srtt, and holds
that between ALPHA and BETA; loss still halves. Use it as  cc = "examples.delay:Delay".

Its base RTT is the smallest RTT of the data it sent (as Linux tcp_vegas.c keeps baseRTT from
tcp_vegas_pkts_acked()), not the connection's min_rtt_us: that one also holds the handshake's RTT,
whose 60-byte SYN misses the serialisation every data segment meets."""

ALPHA, BETA = 2, 4  # packets queued at the bottleneck (Vegas' alpha and beta)


class Delay:
    base_rtt_us = 0

    def on_rtt_sample(self, s, rtt_us):
        if not self.base_rtt_us or rtt_us < self.base_rtt_us:
            self.base_rtt_us = rtt_us

    def queued_packets(self, s):
        if not s.srtt_us or not self.base_rtt_us:
            return None
        return s.cwnd_bytes * max(s.srtt_us - self.base_rtt_us, 0) / s.srtt_us / s.mss_bytes

    def on_ack(self, s, dupack):
        if not dupack and s.cwnd_limited and s.in_slow_start:
            s.cwnd_bytes += min(s.bytes_acked, 2 * s.mss_bytes)

    def on_new_round(self, s):
        q = self.queued_packets(s)
        if q is None or s.in_recovery:
            return
        if s.in_slow_start:
            if q > 1:  # Vegas leaves slow start as soon as a queue builds (gamma = 1)
                s.ssthresh_bytes = s.cwnd_bytes
            return
        if q < ALPHA:
            s.cwnd_bytes += s.mss_bytes
        elif q > BETA:
            s.cwnd_bytes = max(s.cwnd_bytes - s.mss_bytes, 2 * s.mss_bytes)

    def on_cong_signal(self, s, signal):
        if signal != "rto_err":
            s.ssthresh_bytes = max(s.flight_bytes // 2, 2 * s.mss_bytes)

    def post_recovery(self, s):
        s.cwnd_bytes = min(s.ssthresh_bytes, max(s.flight_bytes, s.mss_bytes) + s.mss_bytes)

"""AIMD in Python: RFC 5681 NewReno with RFC 3465 byte counting (L = 2), the arithmetic of
tcplab's built-in `newreno` on the `rfc` stack, so the two give identical runs
(tests/test_user_cc.py). Use it from a spec as  cc = "examples.aimd:Aimd"."""


class Aimd:
    """Additive increase (one MSS per window of bytes acknowledged), multiplicative decrease
    (ssthresh = half the flight)."""

    def __init__(self):
        self.bytes_acked = 0  # RFC 3465 byte counter for congestion avoidance

    def on_ack(self, s, dupack):
        if dupack or not s.cwnd_limited:  # grow only when the window limited sending
            return
        if s.in_slow_start:
            s.cwnd_bytes += min(s.bytes_acked, 2 * s.mss_bytes)  # RFC 3465 §2.2, L = 2
        else:
            self.bytes_acked += s.bytes_acked  # RFC 3465 §2.1
            if self.bytes_acked >= s.cwnd_bytes:
                self.bytes_acked -= s.cwnd_bytes
                s.cwnd_bytes += s.mss_bytes

    def on_cong_signal(self, s, signal):
        if signal in ("loss", "ecn", "rto"):
            s.ssthresh_bytes = max(s.flight_bytes // 2, 2 * s.mss_bytes)  # RFC 5681 eq. (4)
            self.bytes_acked = 0

    def post_recovery(self, s):
        # RFC 6582 §3.2 step 3, option 1: no burst when recovery ends.
        s.cwnd_bytes = min(s.ssthresh_bytes, max(s.flight_bytes, s.mss_bytes) + s.mss_bytes)

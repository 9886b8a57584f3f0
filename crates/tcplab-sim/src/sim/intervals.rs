//! The interval records (iperf3's `-i`): per flow at its own interval boundaries, and the
//! ports' counters.

use super::*;

impl Simulation {
    /// End of the interval that contains `t` for flow `fi`: intervals lie on a grid from the
    /// flow's start (iperf3 `-i`; with a handshake the first one holds it) and the last one ends
    /// with a time-limited application, whose time counts from its connection being set up (so
    /// after a handshake a last interval as long as the connect time follows the grid's).
    pub(super) fn interval_end(&self, fi: usize, t: Ns) -> Ns {
        let f = &self.flow_cfg[fi];
        let k = (t - f.start_ns) / self.interval_ns + 1;
        let end = f.start_ns + k * self.interval_ns;
        let s = &self.senders[fi];
        match f.app {
            // Until connected (SYN_SENT) the application's time has not begun.
            AppConfig::Time { duration_ns } if s.started => end.min(s.start_ns + duration_ns),
            AppConfig::Time { .. } | AppConfig::Bytes { .. } => end,
        }
    }

    pub(super) fn flow_interval(&mut self, fi: usize) {
        let s = &self.senders[fi];
        if matches!(self.flow_cfg[fi].app, AppConfig::Bytes { .. }) && s.completed_at.is_some() {
            return; // the final partial interval was written at completion
        }
        self.push_interval(fi);
        let f = &self.flow_cfg[fi];
        let more = match f.app {
            AppConfig::Time { duration_ns } => {
                let s = &self.senders[fi];
                !s.started || self.now < s.start_ns + duration_ns
            }
            AppConfig::Bytes { .. } => true,
        };
        if more {
            let end = self.interval_end(fi, self.now);
            if end <= self.stop_ns {
                self.q.push(end, Action::FlowInterval(fi as u32));
            }
        }
    }

    pub(super) fn push_interval(&mut self, fi: usize) {
        let (t0, delivered0, retx0) = self.flow_iv[fi];
        if self.now <= t0 {
            return;
        }
        let s = &self.senders[fi];
        let delivered = self.receivers[fi].rcv_nxt;
        self.rec.intervals.push(&[
            fi as i64,
            t0 as i64,
            self.now as i64,
            (delivered - delivered0) as i64,
            (s.retrans_segs - retx0) as i64,
            s.v.win.cwnd as i64,
            (s.rtt.srtt_ns / 1000) as i64,
        ]);
        self.flow_iv[fi] = (self.now, delivered, s.retrans_segs);
    }

    pub(super) fn port_interval(&mut self) {
        for (i, p) in self.ports.iter().enumerate() {
            let last = self.port_iv[i];
            let (tx_bytes, tx_packets) = p.transmitted(self.now);
            let cur = (tx_bytes, tx_packets, p.drops, p.losses);
            self.rec.ports.push(&[
                self.port_iv_start as i64,
                self.now as i64,
                i as i64,
                (cur.0 - last.0) as i64,
                (cur.1 - last.1) as i64,
                (cur.2 - last.2) as i64,
                (cur.3 - last.3) as i64,
            ]);
            self.port_iv[i] = cur;
        }
        self.port_iv_start = self.now;
    }
}

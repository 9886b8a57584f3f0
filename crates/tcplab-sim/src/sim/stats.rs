//! What a finished run reports besides the records: per-flow totals and the invariant checks.

use super::*;

impl Simulation {
    /// Totals per flow.
    pub fn flow_stats(&self) -> Vec<FlowStats> {
        self.senders
            .iter()
            .zip(&self.receivers)
            .zip(&self.flow_cfg)
            .enumerate()
            .map(|(i, ((s, r), f))| {
                let ctl = self.iperf3.get(i).and_then(|c| c.as_deref());
                // With iperf3's control exchange the data connection opens later than the flow's
                // start (the client's): its SYN, and writing from TEST_RUNNING on.
                let syn_ns = ctl.and_then(|c| c.data_syn_ns).unwrap_or(f.start_ns);
                let writing_ns = ctl.and_then(|c| c.writing_ns);
                (s, r, f, ctl, syn_ns, writing_ns)
            })
            .map(|(s, r, f, ctl, syn_ns, writing_ns)| FlowStats {
                name: f.name.clone(),
                cc: s.cc_name().to_string(),
                stack: f.stack.clone(),
                start_ns: f.start_ns,
                bytes_written: s.written,
                bytes_delivered: r.rcv_nxt,
                bytes_sent: s.bytes_sent,
                retrans_segs: s.retrans_segs,
                recoveries: s.recoveries,
                rtos: s.rto_count,
                dup_segs_received: r.dup_segs,
                completion_ns: s
                    .completed_at
                    .map(|t| t - writing_ns.unwrap_or(s.hs.established_ns.unwrap_or(f.start_ns))),
                fct_ns: s.completed_at.map(|t| t - syn_ns),
                connect_ns: s.hs.established_ns.map(|t| t - syn_ns),
                iperf3_ns: ctl.and_then(|c| c.exit_ns).map(|t| t - f.start_ns),
                data_syn_ns: ctl.and_then(|c| c.data_syn_ns).map(|t| t - f.start_ns),
                syn_retrans: s.hs.syn_retrans as u64,
                synack_retrans: r.hs.retrans as u64,
                connect_failed: s.hs.failed,
                mss_bytes: s.mss,
                options: s.options(),
                cwnd_bytes: s.v.win.cwnd,
                srtt_ns: s.rtt.srtt_ns,
                min_rtt_ns: s.rtt.min_rtt_ns,
                ecn: s
                    .ecn
                    .on
                    .then_some((r.ce_segs, s.ecn.ece_acks, s.ecn.reductions)),
                rtt_hist: s.rtt.hist.clone(),
            })
            .collect()
    }

    /// Check the invariants every run must keep; Err names the first one broken.
    pub fn check_invariants(&self) -> Result<(), String> {
        for (i, (s, r)) in self.senders.iter().zip(&self.receivers).enumerate() {
            s.scoreboard()
                .check()
                .map_err(|e| format!("flow {i}: {e}"))?;
            if s.started && s.v.win.cwnd < s.mss {
                return Err(format!("flow {i}: cwnd {} below one MSS", s.v.win.cwnd));
            }
            if r.rcv_nxt > s.snd_nxt || r.rcv_nxt > s.written {
                return Err(format!(
                    "flow {i}: receiver has {} bytes but sender sent {}",
                    r.rcv_nxt, s.snd_nxt
                ));
            }
            if s.snd_una > r.rcv_nxt {
                return Err(format!(
                    "flow {i}: sender saw {} acked, receiver has {}",
                    s.snd_una, r.rcv_nxt
                ));
            }
            if s.pipe() > s.snd_nxt - s.snd_una + s.scoreboard().retrans_bytes {
                return Err(format!(
                    "flow {i}: pipe {} exceeds outstanding data",
                    s.pipe()
                ));
            }
        }
        self.flow_rows.check(&self.senders, self.now)?;
        let in_network: u64 = self.ports.iter().map(Port::packets_held).sum();
        if self.created != self.delivered + self.dropped + in_network {
            return Err(format!(
                "packet conservation: created {} != delivered {} + dropped {} + in network {in_network}",
                self.created, self.delivered, self.dropped
            ));
        }
        if let Some(a) = &self.audit {
            if let Some(id) = a.dropped.intersection(&a.delivered).next() {
                return Err(format!("packet {id} was both dropped and delivered"));
            }
        }
        for (i, p) in self.pools.iter().enumerate() {
            if p.used_bytes > p.limit_bytes {
                return Err(format!(
                    "shared buffer {i} holds {} > {} bytes",
                    p.used_bytes, p.limit_bytes
                ));
            }
        }
        Ok(())
    }
}

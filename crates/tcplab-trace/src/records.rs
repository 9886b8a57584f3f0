//! Records: column-oriented tables of i64 that the simulation and the log importers append to and
//! the caller drains in batches (to Parquet), so a run never holds its whole trace in memory.

/// One table: fixed column names, i64 values.
#[derive(Debug)]
pub struct Table {
    /// Table name (also the Parquet file stem).
    pub name: &'static str,
    /// Column names, with units.
    pub columns: &'static [&'static str],
    data: Vec<Vec<i64>>,
}

impl Table {
    fn new(name: &'static str, columns: &'static [&'static str]) -> Self {
        Table {
            name,
            columns,
            data: columns.iter().map(|_| Vec::new()).collect(),
        }
    }

    /// Append one row; `row` has one value per column.
    pub fn push(&mut self, row: &[i64]) {
        debug_assert_eq!(row.len(), self.columns.len());
        for (col, &v) in self.data.iter_mut().zip(row) {
            col.push(v);
        }
    }

    /// Rows currently buffered.
    pub fn len(&self) -> usize {
        self.data.first().map_or(0, Vec::len)
    }

    /// Whether no rows are buffered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Take the buffered columns, leaving the table empty.
    pub fn take(&mut self) -> Vec<Vec<i64>> {
        // The next batch is likely as large: start it with this one's capacity.
        self.data
            .iter_mut()
            .map(|c| std::mem::replace(c, Vec::with_capacity(c.len())))
            .collect()
    }

    /// Hand each buffered column to `f` (name, values), then empty the table keeping its
    /// memory: the next batch is written into pages already mapped instead of fresh ones.
    pub fn drain_with<E>(
        &mut self,
        mut f: impl FnMut(&'static str, &[i64]) -> Result<(), E>,
    ) -> Result<(), E> {
        for (name, col) in self.columns.iter().zip(&mut self.data) {
            f(name, col)?;
            col.clear();
        }
        Ok(())
    }

    /// One buffered column by name (tests).
    pub fn column(&self, name: &str) -> Option<&[i64]> {
        self.columns
            .iter()
            .position(|c| *c == name)
            .map(|i| self.data[i].as_slice())
    }
}

/// Flow state samples. `ssthresh_bytes` is -1 while ssthresh is still "infinite" (initial).
pub const FLOW_COLUMNS: &[&str] = &[
    "t_ns",
    "flow",
    "cwnd_bytes",
    "ssthresh_bytes",
    "snd_una",
    "snd_nxt",
    "flight_bytes",
    "srtt_us",
    "rto_us",
    "bytes_sent",
    "bytes_acked",
    "retrans_segs",
    "state",
];
/// iperf3-style intervals: bytes delivered to the receiving application in [t_start, t_end).
pub const INTERVAL_COLUMNS: &[&str] = &[
    "flow",
    "t_start_ns",
    "t_end_ns",
    "bytes",
    "retrans_segs",
    "cwnd_bytes",
    "srtt_us",
];
/// Queue samples of monitored ports.
pub const QUEUE_COLUMNS: &[&str] = &["t_ns", "port", "queue_packets", "queue_bytes"];
/// Per-port counters per interval.
pub const PORT_COLUMNS: &[&str] = &[
    "t_start_ns",
    "t_end_ns",
    "port",
    "tx_bytes",
    "tx_packets",
    "drops",
    "losses",
];
/// Sender events (see `SenderEvent::code`) with the state at that instant.
pub const EVENT_COLUMNS: &[&str] = &[
    "t_ns",
    "flow",
    "event",
    "cwnd_bytes",
    "ssthresh_bytes",
    "flight_bytes",
    "outstanding_bytes",
    "retrans_segs",
];
/// What each output call handed the NIC at once (TSO chunk, segment, retransmission).
pub const SEND_COLUMNS: &[&str] = &["t_ns", "flow", "seq", "bytes", "segments", "retx", "state"];
/// ACKs as the sender received them (only when recorded): cumulative ACK, the advertised receive
/// window after scaling, and up to four SACK blocks [start, end) in the order the ACK carries them
/// (RFC 2018 §4: most recent first); -1 where the ACK carries fewer blocks. Sequence numbers are
/// relative to the flow's first data byte, as in `sends`.
pub const ACK_COLUMNS: &[&str] = &[
    "t_ns",
    "flow",
    "ack",
    "rwnd_bytes",
    "sack1_start",
    "sack1_end",
    "sack2_start",
    "sack2_end",
    "sack3_start",
    "sack3_end",
    "sack4_start",
    "sack4_end",
];

/// Latency probes (ping): one row per echo request once its fate is known, with the request's
/// send time, its icmp_seq (from 1) and the round-trip time, or -1 when the request or its reply
/// was lost. A request still in flight when the run ends has no row.
pub const PROBE_COLUMNS: &[&str] = &["t_ns", "probe", "seq", "rtt_ns"];

/// All tables of a run.
#[derive(Debug)]
pub struct Recorder {
    /// Flow samples.
    pub flows: Table,
    /// iperf3-style intervals.
    pub intervals: Table,
    /// Queue samples.
    pub queues: Table,
    /// Port counters per interval.
    pub ports: Table,
    /// Sender events.
    pub events: Table,
    /// Sends (only when recorded).
    pub sends: Table,
    /// ACKs received by the sender (only when recorded).
    pub acks: Table,
    /// Latency probes' round trips.
    pub probes: Table,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            flows: Table::new("flows", FLOW_COLUMNS),
            intervals: Table::new("intervals", INTERVAL_COLUMNS),
            queues: Table::new("queues", QUEUE_COLUMNS),
            ports: Table::new("ports", PORT_COLUMNS),
            events: Table::new("events", EVENT_COLUMNS),
            sends: Table::new("sends", SEND_COLUMNS),
            acks: Table::new("acks", ACK_COLUMNS),
            probes: Table::new("probes", PROBE_COLUMNS),
        }
    }
}

impl Recorder {
    /// All tables, for draining.
    pub fn tables_mut(&mut self) -> [&mut Table; 8] {
        [
            &mut self.flows,
            &mut self.intervals,
            &mut self.queues,
            &mut self.ports,
            &mut self.events,
            &mut self.sends,
            &mut self.acks,
            &mut self.probes,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draining_hands_over_each_column_in_order_and_keeps_the_memory() {
        let mut rec = Recorder::default();
        for t in 0..1000 {
            rec.queues.push(&[t, 2, t % 7, 1500 * (t % 7)]);
        }
        let mut got: Vec<(&str, Vec<i64>)> = Vec::new();
        rec.queues
            .drain_with(|name, col| {
                got.push((name, col.to_vec()));
                Ok::<(), ()>(())
            })
            .unwrap();
        assert_eq!(got.len(), 4);
        assert_eq!(got[0].0, rec.queues.columns[0]);
        assert_eq!(got[0].1, (0..1000).collect::<Vec<i64>>());
        assert_eq!(got[3].1[8], 1500);
        assert!(rec.queues.is_empty());
        assert!(rec.queues.data.iter().all(|c| c.capacity() >= 1000));
    }
}

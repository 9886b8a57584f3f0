//! Records: column-oriented tables of i64 that the simulation and the log importers append to and
//! the caller drains in batches (to Parquet), so a run never holds its whole trace in memory.

/// One table: fixed column names, i64 values.
///
/// The columns lie in one buffer, each in a region of `stride` values: `capacity` (a multiple of
/// 512 values, 4 KiB) plus 8 values (one 64-byte cache line) of padding, so that column k's
/// region starts k lines further round a 4 KiB page than column 0's. A row is written to every
/// column at the same index; were the columns separate allocations, large ones would all start
/// at the same offset in a page (the allocator maps them page-aligned), and a row's 13 values
/// would fall in one set of an 8-way cache: with thousands of flows sampled every millisecond,
/// nearly every value written missed the cache (bench/README.md, issue 23).
#[derive(Debug)]
pub struct Table {
    /// Table name (also the Parquet file stem).
    pub name: &'static str,
    /// Column names, with units.
    pub columns: &'static [&'static str],
    data: Vec<i64>,
    /// Rows buffered.
    rows: usize,
    /// Rows each column's region holds.
    capacity: usize,
}

/// Values per column region are a multiple of this (4 KiB of i64).
const PAGE_VALUES: usize = 512;
/// Values of padding after each column's region (one 64-byte cache line).
const PAD_VALUES: usize = 8;

impl Table {
    fn new(name: &'static str, columns: &'static [&'static str]) -> Self {
        Table {
            name,
            columns,
            data: Vec::new(),
            rows: 0,
            capacity: 0,
        }
    }

    /// Values from one column's region to the next (0 before the first row).
    fn stride(&self) -> usize {
        if self.capacity == 0 {
            0
        } else {
            self.capacity + PAD_VALUES
        }
    }

    /// Column `k`'s buffered values.
    fn col(&self, k: usize) -> &[i64] {
        let at = k * self.stride();
        &self.data[at..at + self.rows]
    }

    /// Append one row; `row` has one value per column.
    #[inline]
    pub fn push(&mut self, row: &[i64]) {
        debug_assert_eq!(row.len(), self.columns.len());
        if self.rows == self.capacity {
            self.grow();
        }
        let (stride, at) = (self.stride(), self.rows);
        for (k, &v) in row.iter().enumerate() {
            self.data[k * stride + at] = v;
        }
        self.rows += 1;
    }

    /// Double each column's region (the first: one page of values), moving what is buffered.
    #[cold]
    fn grow(&mut self) {
        let capacity = (2 * self.capacity).max(PAGE_VALUES);
        let stride = capacity + PAD_VALUES;
        let mut data = vec![0; stride * self.columns.len()];
        for k in 0..self.columns.len() {
            data[k * stride..k * stride + self.rows].copy_from_slice(self.col(k));
        }
        self.data = data;
        self.capacity = capacity;
    }

    /// Rows currently buffered.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether no rows are buffered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Take the buffered columns (copies), leaving the table empty with its memory kept.
    pub fn take(&mut self) -> Vec<Vec<i64>> {
        let out = (0..self.columns.len())
            .map(|k| self.col(k).to_vec())
            .collect();
        self.rows = 0;
        out
    }

    /// Hand each buffered column to `f` (name, values), then empty the table keeping its
    /// memory: the next batch is written into pages already mapped instead of fresh ones.
    pub fn drain_with<E>(
        &mut self,
        mut f: impl FnMut(&'static str, &[i64]) -> Result<(), E>,
    ) -> Result<(), E> {
        for (k, name) in self.columns.iter().enumerate() {
            f(name, self.col(k))?;
        }
        self.rows = 0;
        Ok(())
    }

    /// One buffered column by name (tests).
    pub fn column(&self, name: &str) -> Option<&[i64]> {
        self.columns
            .iter()
            .position(|c| *c == name)
            .map(|k| self.col(k))
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
        assert!(rec.queues.capacity >= 1000);
        // The next batch goes into the same memory, and reads back as written.
        let before = rec.queues.data.as_ptr();
        rec.queues.push(&[7, 8, 9, 10]);
        assert_eq!(rec.queues.data.as_ptr(), before);
        assert_eq!(rec.queues.take(), vec![vec![7], vec![8], vec![9], vec![10]]);
    }

    #[test]
    fn columns_keep_their_values_across_growth_and_start_a_line_apart_in_a_page() {
        let mut rec = Recorder::default();
        let n = 5 * PAGE_VALUES as i64 + 3; // grows 512 -> 1024 -> 2048 -> 4096 rows
        for t in 0..n {
            let row: Vec<i64> = (0..13).map(|k| t * 100 + k).collect();
            rec.flows.push(&row);
        }
        assert_eq!(rec.flows.len(), n as usize);
        for (k, name) in FLOW_COLUMNS.iter().enumerate() {
            let col = rec.flows.column(name).unwrap();
            assert!(col
                .iter()
                .enumerate()
                .all(|(t, &v)| v == t as i64 * 100 + k as i64));
        }
        // Column k's first value is k cache lines (of 8 values) past a page boundary relative
        // to column 0's: 13 columns, 13 different sets of a 4 KiB-periodic cache.
        let base = rec.flows.col(0).as_ptr() as usize;
        for k in 0..13 {
            let off = rec.flows.col(k).as_ptr() as usize - base;
            assert_eq!(off % 4096, 64 * k);
        }
        assert!(rec.flows.column("no such column").is_none());
    }
}

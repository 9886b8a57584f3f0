//! Flows of an import: identity by addresses and ports (how logs of one experiment are matched),
//! and the per-flow tracker that turns a log's samples into tcplab's records (flow samples,
//! recovery events, sends, iperf3-style intervals).

use std::collections::HashMap;

use crate::records::Recorder;

/// One direction of a TCP connection, as the data sender sees it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FlowKey {
    /// Sender's address.
    pub laddr: String,
    /// Sender's port.
    pub lport: u16,
    /// Receiver's address.
    pub faddr: String,
    /// Receiver's port.
    pub fport: u16,
}

impl FlowKey {
    /// "laddr:lport->faddr:fport", IPv6 addresses in brackets.
    pub fn name(&self) -> String {
        fn ep(a: &str, p: u16) -> String {
            if a.contains(':') {
                format!("[{a}]:{p}")
            } else {
                format!("{a}:{p}")
            }
        }
        format!(
            "{}->{}",
            ep(&self.laddr, self.lport),
            ep(&self.faddr, self.fport)
        )
    }
}

/// What the logs say about a flow.
#[derive(Debug, Clone, Default)]
pub struct FlowInfo {
    /// Name in records: the key's "laddr:lport->faddr:fport", or a label for logs without addresses.
    pub name: String,
    /// Sender's MSS in bytes, when a log states it.
    pub mss: Option<u32>,
    /// Congestion control, when a log states it.
    pub cc: Option<String>,
    /// TCP stack ("freebsd", "freebsd-rack", "linux"), when a log states it.
    pub stack: Option<String>,
    /// Whether an iperf3 log gave this flow's intervals (derived ones are then not emitted).
    pub has_iperf_intervals: bool,
    /// iperf3's own totals: bytes received by the application, when an iperf3 log has them.
    pub bytes_received: Option<u64>,
}

/// Flows of one import, in order of first appearance.
#[derive(Debug, Default)]
pub struct FlowTable {
    /// Flows by index (the `flow` column of records).
    pub flows: Vec<FlowInfo>,
    index: HashMap<FlowKey, usize>,
    by_label: HashMap<String, usize>,
}

impl FlowTable {
    /// Index of the flow with `key`, added if new.
    pub fn get(&mut self, key: &FlowKey) -> usize {
        if let Some(&i) = self.index.get(key) {
            return i;
        }
        let i = self.flows.len();
        self.flows.push(FlowInfo {
            name: key.name(),
            ..Default::default()
        });
        self.index.insert(key.clone(), i);
        i
    }

    /// Index of a flow known only by a label (a log without addresses), added if new.
    pub fn labelled(&mut self, label: &str) -> usize {
        if let Some(&i) = self.by_label.get(label) {
            return i;
        }
        let i = self.flows.len();
        self.flows.push(FlowInfo {
            name: label.to_string(),
            ..Default::default()
        });
        self.by_label.insert(label.to_string(), i);
        i
    }
}

/// Recovery phase as records report it (the simulator's `State::code`): 0 open, 1 fast recovery,
/// 2 loss (after a retransmission timeout).
pub const OPEN: i64 = 0;
/// See [`OPEN`].
pub const RECOVERY: i64 = 1;
/// See [`OPEN`].
pub const LOSS: i64 = 2;

// Event codes of the events table (tcplab-sim `SenderEvent::code`).
const RECOVERY_START: i64 = 1;
const RECOVERY_END: i64 = 2;
const RTO: i64 = 3;
const LOSS_END: i64 = 4;

/// 32-bit TCP sequence numbers made 64-bit and relative to the first one seen.
#[derive(Debug, Default, Clone, Copy)]
pub struct SeqUnwrap {
    first: Option<u32>,
    last: i64,
}

impl SeqUnwrap {
    /// Make `base` the zero of this sequence space (e.g. the first snd_una).
    pub fn set_base(&mut self, base: u32) {
        if self.first.is_none() {
            self.first = Some(base);
            self.last = 0;
        }
    }

    /// `seq` relative to the base, unwrapped near the last value returned.
    pub fn unwrap(&mut self, seq: u32) -> i64 {
        let first = *self.first.get_or_insert(seq);
        let rel32 = seq.wrapping_sub(first);
        let last32 = self.last as u32;
        let v = self.last + i64::from(rel32.wrapping_sub(last32) as i32);
        self.last = v;
        v
    }
}

/// One sample of a sender's state; -1 where the log does not carry the value.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// Time, ns since the run's origin.
    pub t_ns: i64,
    /// Congestion window, bytes.
    pub cwnd_bytes: i64,
    /// Slow-start threshold, bytes (-1: not yet set).
    pub ssthresh_bytes: i64,
    /// Cumulatively acknowledged, bytes relative to the start.
    pub snd_una: i64,
    /// Highest sequence sent (snd_max), relative.
    pub snd_nxt: i64,
    /// Bytes in flight as the stack counts them.
    pub flight_bytes: i64,
    /// Smoothed RTT, us.
    pub srtt_us: i64,
    /// Retransmission timeout, us.
    pub rto_us: i64,
    /// Recovery phase (OPEN, RECOVERY, LOSS).
    pub state: i64,
}

/// Longest run of empty intervals a derived table fills in (a day of 1 s intervals).
const MAX_EMPTY_INTERVALS: i64 = 86_400;

/// Bytes per interval for a flow's derived iperf3-style table.
#[derive(Debug, Clone, Default)]
pub struct IntervalAcc {
    /// Interval length, ns.
    pub interval_ns: i64,
    cur: i64,
    bytes: i64,
    retrans: i64,
    cwnd: i64,
    srtt: i64,
    seen: bool,
    /// Whether retransmissions are known (otherwise rows say -1).
    retrans_known: bool,
    /// Finished rows (flow, t_start_ns, t_end_ns, bytes, retrans_segs, cwnd_bytes, srtt_us).
    pub rows: Vec<[i64; 7]>,
}

impl IntervalAcc {
    fn roll(&mut self, flow: i64, t_ns: i64) {
        if self.interval_ns <= 0 {
            return;
        }
        let idx = t_ns.max(0) / self.interval_ns;
        if !self.seen {
            self.cur = idx;
            self.seen = true;
        }
        // A log that goes quiet gets empty intervals, as iperf3 prints them; a jump of more than
        // MAX_EMPTY_INTERVALS (a corrupt or hostile timestamp) is not filled, so memory stays
        // bounded by the input (found by cargo fuzz).
        if idx - self.cur > MAX_EMPTY_INTERVALS {
            self.roll_one(flow);
            self.cur = idx;
        }
        while self.cur < idx {
            self.roll_one(flow);
        }
    }

    fn roll_one(&mut self, flow: i64) {
        let s = self.cur * self.interval_ns;
        let retrans = if self.retrans_known { self.retrans } else { -1 };
        self.rows.push([
            flow,
            s,
            s + self.interval_ns,
            self.bytes,
            retrans,
            self.cwnd,
            self.srtt,
        ]);
        self.bytes = 0;
        self.retrans = 0;
        self.cur += 1;
    }

    /// Close the open interval at `end_ns` (the last record's time).
    pub fn finish(&mut self, flow: i64, end_ns: i64) {
        if self.seen && self.interval_ns > 0 {
            let s = self.cur * self.interval_ns;
            if end_ns > s {
                let retrans = if self.retrans_known { self.retrans } else { -1 };
                self.rows
                    .push([flow, s, end_ns, self.bytes, retrans, self.cwnd, self.srtt]);
            }
            self.seen = false;
        }
    }
}

/// Turns one log's view of one flow into records.
#[derive(Debug, Clone)]
pub struct Tracker {
    /// Index of the flow in the import's FlowTable.
    pub flow: i64,
    /// MSS in bytes (0 when unknown: sends then have segments = -1).
    pub mss: i64,
    state: i64,
    prev: Option<Sample>,
    retrans_segs: i64,
    bytes_sent: i64,
    /// Derived intervals.
    pub iv: IntervalAcc,
    /// Whether this log's interval bytes are acknowledged bytes (true) or sent bytes (false).
    pub acked_bytes: bool,
    last_t: i64,
}

impl Tracker {
    /// A tracker for flow `flow`.
    pub fn new(flow: usize, mss: i64, interval_ns: i64) -> Self {
        Tracker {
            flow: flow as i64,
            mss,
            state: OPEN,
            prev: None,
            retrans_segs: 0,
            bytes_sent: 0,
            iv: IntervalAcc {
                interval_ns,
                ..Default::default()
            },
            acked_bytes: true,
            last_t: 0,
        }
    }

    /// Record a state sample: a flows row, an event when the recovery phase changes, and the
    /// acknowledged bytes into the derived intervals.
    pub fn sample(&mut self, rec: &mut Recorder, s: Sample, retrans_known: bool) {
        self.iv.roll(self.flow, s.t_ns);
        self.last_t = self.last_t.max(s.t_ns);
        let retx = if retrans_known { self.retrans_segs } else { -1 };
        self.iv.retrans_known = retrans_known;
        if s.state != self.state {
            // Flight before the loss: what the previous sample saw (the sample that enters
            // recovery already shows the reduced window).
            let before = self.prev.map_or(s.flight_bytes, |p| p.flight_bytes);
            let mut ev = |code: i64| {
                rec.events.push(&[
                    s.t_ns,
                    self.flow,
                    code,
                    s.cwnd_bytes,
                    s.ssthresh_bytes,
                    s.flight_bytes,
                    before,
                    retx,
                ]);
            };
            // A timeout during fast recovery ends it by itself (the analyser closes the episode
            // "by RTO"), as the simulator reports it: no separate end event.
            match (self.state, s.state) {
                (RECOVERY, LOSS) => {}
                (RECOVERY, _) => ev(RECOVERY_END),
                (LOSS, _) => ev(LOSS_END),
                _ => {}
            }
            match s.state {
                RECOVERY => ev(RECOVERY_START),
                LOSS => ev(RTO),
                _ => {}
            }
            self.state = s.state;
        }
        if self.acked_bytes {
            if let (Some(p), true) = (self.prev, s.snd_una >= 0) {
                if p.snd_una >= 0 && s.snd_una > p.snd_una {
                    self.iv.bytes += s.snd_una - p.snd_una;
                }
            }
        }
        self.iv.cwnd = s.cwnd_bytes;
        self.iv.srtt = s.srtt_us;
        let sent = if s.snd_nxt >= 0 {
            s.snd_nxt
        } else {
            self.bytes_sent
        };
        let acked = s.snd_una;
        rec.flows.push(&[
            s.t_ns,
            self.flow,
            s.cwnd_bytes,
            s.ssthresh_bytes,
            s.snd_una,
            s.snd_nxt,
            s.flight_bytes,
            s.srtt_us,
            s.rto_us,
            sent,
            acked,
            retx,
            s.state,
        ]);
        self.prev = Some(s);
    }

    /// Record what was handed to the network at once: `seq` relative (-1 unknown), `bytes` of
    /// payload, `retx` 1/0 (-1 unknown).
    pub fn send(&mut self, rec: &mut Recorder, t_ns: i64, seq: i64, bytes: i64, retx: i64) {
        self.iv.roll(self.flow, t_ns);
        self.last_t = self.last_t.max(t_ns);
        self.bytes_sent += bytes;
        if retx > 0 {
            self.retrans_segs += 1;
            self.iv.retrans += 1;
        }
        if !self.acked_bytes {
            self.iv.bytes += bytes;
        }
        let segs = if self.mss > 0 {
            (bytes + self.mss - 1) / self.mss
        } else {
            -1
        };
        rec.sends
            .push(&[t_ns, self.flow, seq, bytes, segs, retx, self.state]);
    }

    /// Record one ACK as the sender received it: cumulative `ack`, advertised window in bytes
    /// (-1 unknown) and its SACK blocks [start, end), all relative like `send`'s `seq`.
    pub fn ack(
        &mut self,
        rec: &mut Recorder,
        t_ns: i64,
        ack: i64,
        rwnd_bytes: i64,
        sacks: &[(i64, i64)],
    ) {
        let mut row = [-1i64; 12];
        row[0] = t_ns;
        row[1] = self.flow;
        row[2] = ack;
        row[3] = rwnd_bytes;
        for (i, &(a, b)) in sacks.iter().take(4).enumerate() {
            row[4 + 2 * i] = a;
            row[5 + 2 * i] = b;
        }
        rec.acks.push(&row);
    }

    /// Retransmitted segments counted so far.
    pub fn retrans_segs(&self) -> i64 {
        self.retrans_segs
    }

    /// The recovery phase of the last sample.
    pub fn state(&self) -> i64 {
        self.state
    }

    /// Close the derived intervals at the last record's time and hand them over.
    pub fn finish(mut self) -> Vec<[i64; 7]> {
        self.iv.finish(self.flow, self.last_t);
        self.iv.rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_numbers_unwrap_across_the_32_bit_boundary() {
        let mut u = SeqUnwrap::default();
        u.set_base(u32::MAX - 99);
        assert_eq!(u.unwrap(u32::MAX - 99), 0);
        assert_eq!(u.unwrap(u32::MAX), 99);
        assert_eq!(u.unwrap(50), 150);
        assert_eq!(
            u.unwrap(20),
            120,
            "a retransmission below the last value stays below it"
        );
    }

    #[test]
    fn entering_and_leaving_recovery_gives_start_and_end_events_with_the_flight_before() {
        let mut rec = Recorder::default();
        let mut t = Tracker::new(0, 1000, 1_000_000_000);
        let s = |t_ns, cwnd, flight, state| Sample {
            t_ns,
            cwnd_bytes: cwnd,
            ssthresh_bytes: -1,
            snd_una: 0,
            snd_nxt: 0,
            flight_bytes: flight,
            srtt_us: 1,
            rto_us: 1,
            state,
        };
        t.sample(&mut rec, s(1, 10_000, 9_000, OPEN), true);
        t.sample(&mut rec, s(2, 1_000, 8_000, RECOVERY), true);
        t.sample(&mut rec, s(3, 5_000, 5_000, OPEN), true);
        assert_eq!(rec.events.column("event").unwrap(), &[1, 2]);
        assert_eq!(rec.events.column("cwnd_bytes").unwrap(), &[1_000, 5_000]);
        assert_eq!(
            rec.events.column("outstanding_bytes").unwrap(),
            &[9_000, 8_000]
        );
    }

    #[test]
    fn a_huge_time_jump_does_not_fill_billions_of_empty_intervals() {
        let mut rec = Recorder::default();
        let mut t = Tracker::new(0, 1000, 1_000_000_000);
        for t_ns in [0, 9_000_000_000_000_000_000] {
            let s = Sample {
                t_ns,
                cwnd_bytes: 1,
                ssthresh_bytes: -1,
                snd_una: 0,
                snd_nxt: 0,
                flight_bytes: 0,
                srtt_us: 1,
                rto_us: 1,
                state: OPEN,
            };
            t.sample(&mut rec, s, true);
        }
        assert!(t.finish().len() <= 3);
    }

    #[test]
    fn derived_intervals_sum_acked_bytes_per_interval() {
        let mut rec = Recorder::default();
        let mut t = Tracker::new(0, 1000, 1_000);
        for (t_ns, una) in [(0, 0), (500, 3000), (1500, 5000), (2100, 9000)] {
            let s = Sample {
                t_ns,
                cwnd_bytes: 1,
                ssthresh_bytes: -1,
                snd_una: una,
                snd_nxt: una,
                flight_bytes: 0,
                srtt_us: 1,
                rto_us: 1,
                state: OPEN,
            };
            t.sample(&mut rec, s, true);
        }
        let rows = t.finish();
        let bytes: Vec<i64> = rows.iter().map(|r| r[3]).collect();
        assert_eq!(bytes, vec![3000, 2000, 4000]);
        assert_eq!(rows[2][1..3], [2000, 2100]);
    }
}

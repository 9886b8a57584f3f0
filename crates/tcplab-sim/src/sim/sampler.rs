//! The periodic flow sampler's compact copy of what it reads from each sender, so that a sample
//! of a flow the simulation has not touched since the last one reads one small contiguous entry
//! instead of a dozen cache lines scattered through the sender and its scoreboard.
//!
//! With many slow flows most samples find the flow unchanged (at 10 Mbit/s a flow gets an ACK
//! about every 2.4 ms, and it is sampled every 1 ms): the simulation tells the sampler after
//! every call into the sender ([`FlowRows::touch`]), and the entry is then either re-read at once
//! or marked stale and re-read by the next sample, so a row is always what reading the sender at
//! that instant would give.
//!
//! Which of the two: re-read at once when the entry has been sampled since it was last read. The
//! sender was just called, so its lines are in cache; read at the next sample instead, a
//! millisecond and thousands of other flows' events later, they would all miss. A flow touched
//! more often than it is sampled (a fast flow, an ACK every few microseconds) is re-read at once
//! only at its first touch after a sample, then marked stale until the next sample: at most two
//! reads per sample interval, where reading at every touch would be one per ACK.

use crate::tcp::sender::TcpSender;
use crate::time::Ns;

/// The sampled values of one sender (the `flows` table's columns after time and flow), in
/// column order.
pub(super) type FlowRow = [i64; 11];

/// What a sender reports in a flow sample, read now.
pub(super) fn flow_row(s: &TcpSender) -> FlowRow {
    [
        s.v.win.cwnd as i64,
        super::ssthresh_col(s.v.win.ssthresh),
        s.snd_una as i64,
        s.snd_nxt as i64,
        s.pipe() as i64,
        (s.rtt.srtt_ns / 1000) as i64,
        (s.rtt.rto_ns / 1000) as i64,
        s.bytes_sent as i64,
        s.snd_una as i64,
        s.retrans_segs as i64,
        s.state.code(),
    ]
}

/// One flow's entry.
#[derive(Clone, Copy)]
struct Entry {
    row: FlowRow,
    /// The sender was called since `row` was read.
    stale: bool,
    /// A sample has read `row` since it was read from the sender.
    sampled: bool,
    /// Sampled while `started` and `now < done_from_ns` (the sender's `started && !done(now)`,
    /// which with the sender unchanged depends on the time only through a time-limited
    /// application's end).
    started: bool,
    done_from_ns: Ns,
}

impl Entry {
    /// Read the sender now (out of line: the callers' common path is a flag test).
    #[inline(never)]
    fn read(&mut self, s: &TcpSender) {
        self.stale = false;
        self.sampled = false;
        self.started = s.started;
        self.done_from_ns = s.done_from_ns();
        if self.started {
            self.row = flow_row(s);
        }
    }
}

/// The sampler's entries, one per flow, in flow order.
pub(super) struct FlowRows {
    entries: Vec<Entry>,
}

impl FlowRows {
    /// Entries for `n` flows, all stale.
    pub(super) fn new(n: usize) -> Self {
        let e = Entry {
            row: [0; 11],
            stale: true,
            sampled: false,
            started: false,
            done_from_ns: 0,
        };
        FlowRows {
            entries: vec![e; n],
        }
    }

    /// The simulation called into flow `fi`'s sender (and is done with it for this event): its
    /// entry is re-read now if a sample has used it since it was last read, else marked stale.
    #[inline]
    pub(super) fn touch(&mut self, fi: usize, senders: &[TcpSender]) {
        let e = &mut self.entries[fi];
        if e.stale {
            return;
        }
        if e.sampled {
            e.read(&senders[fi]);
        } else {
            e.stale = true;
        }
    }

    /// Flow `fi`'s row at `now` if the periodic sampler records it (started, not done), reading
    /// the sender only when its entry is stale.
    #[inline]
    pub(super) fn get(&mut self, fi: usize, senders: &[TcpSender], now: Ns) -> Option<&FlowRow> {
        let e = &mut self.entries[fi];
        if e.stale {
            e.read(&senders[fi]);
        }
        e.sampled = true;
        (e.started && now < e.done_from_ns).then_some(&e.row)
    }

    /// Every entry not marked stale holds what reading its sender now gives (the invariant the
    /// simulation's `touch` calls keep); Err names the first flow where it does not.
    pub(super) fn check(&self, senders: &[TcpSender], now: Ns) -> Result<(), String> {
        for (fi, (e, s)) in self.entries.iter().zip(senders).enumerate() {
            if e.stale {
                continue;
            }
            let sampled = e.started && now < e.done_from_ns;
            if sampled != (s.started && !s.done(now)) || (e.started && e.row != flow_row(s)) {
                return Err(format!(
                    "flow {fi}: the sampler's copy of the sender is out of date but not marked stale"
                ));
            }
        }
        Ok(())
    }
}

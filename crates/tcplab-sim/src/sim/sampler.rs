//! The periodic flow sampler's compact copy of what it reads from each sender, so that a sample
//! of a flow the simulation has not touched since the last one reads one small contiguous entry
//! instead of a dozen cache lines scattered through the sender and its scoreboard.
//!
//! With many slow flows most samples find the flow unchanged (at 10 Mbit/s a flow gets an ACK
//! about every 2.4 ms, and it is sampled every 1 ms): the simulation marks an entry stale after
//! every call into the sender ([`FlowRows::touch`]) and the sampler re-reads only stale ones,
//! so a row is always what reading the sender at that instant would give.

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
    /// Sampled while `started` and `now < done_from_ns` (the sender's `started && !done(now)`,
    /// which with the sender unchanged depends on the time only through a time-limited
    /// application's end).
    started: bool,
    done_from_ns: Ns,
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
            started: false,
            done_from_ns: 0,
        };
        FlowRows {
            entries: vec![e; n],
        }
    }

    /// The simulation called into flow `fi`'s sender: its entry must be re-read.
    #[inline]
    pub(super) fn touch(&mut self, fi: usize) {
        self.entries[fi].stale = true;
    }

    /// Flow `fi`'s row at `now` if the periodic sampler records it (started, not done), reading
    /// the sender only when its entry is stale.
    #[inline]
    pub(super) fn get(&mut self, fi: usize, senders: &[TcpSender], now: Ns) -> Option<&FlowRow> {
        let e = &mut self.entries[fi];
        if e.stale {
            let s = &senders[fi];
            e.stale = false;
            e.started = s.started;
            e.done_from_ns = s.done_from_ns();
            if e.started {
                e.row = flow_row(s);
            }
        }
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

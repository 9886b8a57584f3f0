//! mahimahi trace replay: a link whose capacity is a list of delivery opportunities.
//!
//! mahimahi's format (mahimahi/src/packet/link_queue.cc): one integer per line, a millisecond
//! timestamp at which one packet of up to PACKET_SIZE bytes may leave; a timestamp repeated
//! gives several opportunities in that millisecond; the trace loops with its last timestamp as
//! the period. An opportunity serves the queue's head packets until its bytes are used up; a
//! packet longer than what is left takes the rest and continues at the next one; an opportunity
//! with nothing queued is lost.

use crate::Ns;

/// Bytes one opportunity carries: an MTU of IP bytes (mahimahi's 1504 counts its TUN header).
pub const OPPORTUNITY_BYTES: u64 = 1500;
const MS: Ns = 1_000_000;

/// Parse a trace's text; errors name the line (1-based) and what is wrong.
pub fn parse(text: &str) -> Result<Vec<u64>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let s = line.trim();
        let ms: u64 = s.parse().map_err(|_| {
            format!(
                "line {}: {s:?} is not a whole number of milliseconds",
                i + 1
            )
        })?;
        if out.last().is_some_and(|&prev| ms < prev) {
            return Err(format!(
                "line {}: {ms} is earlier than the line before",
                i + 1
            ));
        }
        out.push(ms);
    }
    match out.last() {
        None => Err("the trace has no line".into()),
        Some(0) => {
            Err("the trace's last timestamp is 0 ms (it is the period; it must be positive)".into())
        }
        Some(_) => Ok(out),
    }
}

/// The server of a link replaying a trace, FIFO: each packet's departure is known when it is
/// admitted (the queue ahead of it is served first).
#[derive(Clone, Debug)]
pub struct TraceServer {
    ms: Vec<u64>,
    period_ns: Ns,
    /// The first opportunity (its index over the looped trace) not used up, and its bytes left.
    at: u64,
    left: u64,
}

impl TraceServer {
    /// A server from parsed timestamps (`parse`), time zero at the trace's 0 ms.
    pub fn new(ms: Vec<u64>) -> Self {
        let period_ns = ms.last().copied().unwrap_or(1).max(1) * MS;
        TraceServer {
            ms,
            period_ns,
            at: 0,
            left: OPPORTUNITY_BYTES,
        }
    }

    /// When opportunity `k` (over the looped trace) comes, ns.
    fn time(&self, k: u64) -> Ns {
        let n = self.ms.len() as u64;
        (k / n) * self.period_ns + self.ms[(k % n) as usize] * MS
    }

    /// The first opportunity at or after `t`. A timestamp equal to the period belongs to the
    /// lap before, so the search starts one lap early.
    fn first_at_or_after(&self, t: Ns) -> u64 {
        let n = self.ms.len() as u64;
        let mut lap = (t / self.period_ns).saturating_sub(1);
        loop {
            let base = lap * self.period_ns;
            let i = self.ms.partition_point(|&m| base + m * MS < t) as u64;
            if i < n {
                return lap * n + i;
            }
            lap += 1;
        }
    }

    /// A packet of `bytes` ready at `ready_ns` (its arrival; every packet admitted before it is
    /// served first): the time its last byte leaves.
    pub fn depart(&mut self, ready_ns: Ns, bytes: u64) -> Ns {
        if self.time(self.at) < ready_ns {
            // What was left of earlier opportunities went unused: nothing was waiting.
            self.at = self.first_at_or_after(ready_ns);
            self.left = OPPORTUNITY_BYTES;
        }
        let mut rest = bytes;
        while rest > self.left {
            rest -= self.left;
            self.at += 1;
            self.left = OPPORTUNITY_BYTES;
        }
        self.left -= rest;
        let done = self.time(self.at);
        if self.left == 0 {
            self.at += 1;
            self.left = OPPORTUNITY_BYTES;
        }
        done
    }

    /// Opportunities the trace offers in [0, t), for checks.
    pub fn opportunities_before(&self, t: Ns) -> u64 {
        self.first_at_or_after(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_lines_are_named() {
        assert_eq!(
            parse("1\n2\nx\n").unwrap_err(),
            "line 3: \"x\" is not a whole number of milliseconds"
        );
        assert!(parse("5\n3\n").unwrap_err().starts_with("line 2:"));
        assert!(parse("").is_err() && parse("0\n").is_err());
        assert_eq!(parse("0\n1\n1\n4\n").unwrap(), vec![0, 1, 1, 4]);
    }

    #[test]
    fn each_opportunity_carries_one_mtu_and_the_trace_loops() {
        // Opportunities at 1, 1, 3 ms, period 3 ms: 3 full packets per 3 ms.
        let mut s = TraceServer::new(parse("1\n1\n3\n").unwrap());
        let d: Vec<Ns> = (0..6).map(|_| s.depart(0, 1500)).collect();
        assert_eq!(d, [1, 1, 3, 4, 4, 6].map(|m| m * MS));
        // Small packets share one: 10 ACKs of 150 bytes fit one opportunity.
        let mut s = TraceServer::new(parse("1\n2\n").unwrap());
        let d: Vec<Ns> = (0..11).map(|_| s.depart(0, 150)).collect();
        assert!(d[..10].iter().all(|&t| t == MS) && d[10] == 2 * MS);
        // An opportunity nobody waited for is lost: a packet at 2.5 ms waits for 3 (= 1 + period).
        let mut s = TraceServer::new(parse("1\n2\n").unwrap());
        assert_eq!(s.depart(2 * MS + MS / 2, 1500), 3 * MS);
        // A packet longer than what is left continues at the next opportunity.
        let mut s = TraceServer::new(parse("1\n2\n").unwrap());
        s.depart(0, 1000);
        assert_eq!(s.depart(0, 1000), 2 * MS);
        assert_eq!(s.opportunities_before(10 * MS), 9); // 1, 2, ..., 9 ms
    }
}

//! iperf3 output: the `-J` JSON document (read and written with the same types, so what tcplab
//! writes is what it reads) and the human-readable text (interval lines
//! `[  5]   0.00-1.00   sec   112 MBytes   941 Mbits/sec    0   3.00 MBytes`). Both give a
//! flow's interval table; the JSON also the sender's cwnd and RTT per interval, the congestion
//! control and the receiver's byte count. Field names follow iperf3's iperf_api.c.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::ctx::{Ctx, Skipped};
use crate::flows::FlowKey;
use crate::lines::{dec, ParseError};
use crate::number::{seconds, u32_dec};

/// An iperf3 `-J` document (the fields tcplab reads or writes; others are ignored).
#[allow(missing_docs)]
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Report {
    pub start: Start,
    pub intervals: Vec<Interval>,
    pub end: End,
}

#[allow(missing_docs)]
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Start {
    pub connected: Vec<Connected>,
    pub version: String,
    pub timestamp: Timestamp,
    pub tcp_mss_default: Option<u64>,
    pub test_start: TestStart,
}

#[allow(missing_docs)]
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Connected {
    pub socket: i64,
    pub local_host: String,
    pub local_port: u16,
    pub remote_host: String,
    pub remote_port: u16,
}

#[allow(missing_docs)]
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Timestamp {
    pub time: String,
    pub timesecs: i64,
}

#[allow(missing_docs)]
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TestStart {
    pub protocol: String,
    pub num_streams: i64,
    pub blksize: i64,
    pub omit: i64,
    pub duration: i64,
    pub bytes: u64,
    pub reverse: i64,
}

#[allow(missing_docs)]
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Interval {
    pub streams: Vec<IntervalStream>,
}

#[allow(missing_docs)]
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct IntervalStream {
    pub socket: i64,
    pub start: f64,
    pub end: f64,
    pub seconds: f64,
    pub bytes: u64,
    pub bits_per_second: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snd_cwnd: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt: Option<u64>,
    pub omitted: bool,
    pub sender: Option<bool>,
}

#[allow(missing_docs)]
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct End {
    pub streams: Vec<EndStream>,
    pub sum_sent: Sum,
    pub sum_received: Sum,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender_tcp_congestion: Option<String>,
}

#[allow(missing_docs)]
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct EndStream {
    pub sender: Sum,
    pub receiver: Sum,
}

#[allow(missing_docs)]
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Sum {
    pub socket: i64,
    pub start: f64,
    pub end: f64,
    pub seconds: f64,
    pub bytes: u64,
    pub bits_per_second: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_snd_cwnd: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_rtt: Option<u64>,
}

fn s_to_ns(s: f64) -> i64 {
    if s.is_finite() {
        (s * 1e9).round().clamp(0.0, 9e18) as i64
    } else {
        0
    }
}

/// Where interval `k`'s stream `s` starts and ends, ns; None for an empty instant (no time,
/// no bytes: nothing to report); an error, naming the interval, for one that ends before it
/// starts or carries bytes in no time (a rate from either would be negative or infinite).
fn interval_span(k: usize, s: &IntervalStream) -> Result<Option<(i64, i64)>, ParseError> {
    let bad = |why: &str| {
        ParseError::at(
            0,
            format!(
                "iperf3 JSON intervals[{k}] (socket {}, {} to {} s): {why}",
                s.socket, s.start, s.end
            ),
        )
    };
    if !(s.start.is_finite() && s.end.is_finite() && s.start >= 0.0) {
        return Err(bad("start and end must be seconds from 0"));
    }
    let (start, end) = (s_to_ns(s.start), s_to_ns(s.end));
    if end < start {
        return Err(bad("ends before it starts"));
    }
    if end == start {
        return match s.bytes {
            0 => Ok(None),
            _ => Err(bad("bytes in no time")),
        };
    }
    Ok(Some((start, end)))
}

/// One interval row of `flow` from stream entry `s`.
fn push_interval(ctx: &mut Ctx<'_>, flow: usize, start: i64, end: i64, s: &IntervalStream) {
    let opt = |v: Option<u64>| v.map_or(-1, |x| x.min(i64::MAX as u64) as i64);
    ctx.rec.intervals.push(&[
        flow as i64,
        start + ctx.offset_ns,
        end + ctx.offset_ns,
        s.bytes.min(i64::MAX as u64) as i64,
        s.retransmits.unwrap_or(-1),
        opt(s.snd_cwnd),
        opt(s.rtt),
    ]);
}

/// Put a parsed `-J` document into the import: intervals per stream, and flow metadata. A
/// malformed interval stops a strict import and is counted in `skipped` by a lenient one.
pub fn load_json(ctx: &mut Ctx<'_>, doc: &Report, skipped: &mut Skipped) -> Result<(), ParseError> {
    if !doc.start.test_start.protocol.is_empty() && doc.start.test_start.protocol != "TCP" {
        return Err(ParseError::at(
            0,
            format!(
                "iperf3 test protocol is {}: only TCP tests are imported",
                doc.start.test_start.protocol
            ),
        ));
    }
    let reverse = doc.start.test_start.reverse != 0;
    let mut flow_of: HashMap<i64, usize> = HashMap::new();
    for c in &doc.start.connected {
        // The flow is named from the data sender's side (with -R the remote end sends).
        let key = if reverse {
            FlowKey {
                laddr: c.remote_host.clone(),
                lport: c.remote_port,
                faddr: c.local_host.clone(),
                fport: c.local_port,
            }
        } else {
            FlowKey {
                laddr: c.local_host.clone(),
                lport: c.local_port,
                faddr: c.remote_host.clone(),
                fport: c.remote_port,
            }
        };
        let i = ctx.flows.get(&key);
        let info = &mut ctx.flows.flows[i];
        if let Some(cc) = &doc.end.sender_tcp_congestion {
            info.cc.get_or_insert_with(|| cc.clone());
        }
        info.has_iperf_intervals = true;
        flow_of.insert(c.socket, i);
    }
    if flow_of.is_empty() {
        return Err(ParseError::at(
            0,
            "iperf3 JSON without start.connected: is this an iperf3 -J file?",
        ));
    }
    for (k, iv) in doc.intervals.iter().enumerate() {
        for s in iv.streams.iter().filter(|s| !s.omitted) {
            let Some(&flow) = flow_of.get(&s.socket) else {
                return Err(ParseError::at(
                    0,
                    format!(
                        "iperf3 JSON interval names socket {} that start.connected does not list",
                        s.socket
                    ),
                ));
            };
            match interval_span(k, s) {
                Ok(Some((start, end))) => push_interval(ctx, flow, start, end, s),
                Ok(None) => {}
                Err(e) => skipped.skip(e)?,
            }
        }
    }
    for es in &doc.end.streams {
        if let Some(&flow) = flow_of
            .get(&es.receiver.socket)
            .or_else(|| flow_of.get(&es.sender.socket))
        {
            ctx.flows.flows[flow].bytes_received = Some(es.receiver.bytes);
        }
    }
    Ok(())
}

/// The wall-clock start of a `-J` document, ns since the epoch (iperf3 gives whole seconds).
pub fn json_origin_ns(doc: &Report) -> Option<i64> {
    (doc.start.timestamp.timesecs > 0)
        .then(|| doc.start.timestamp.timesecs.saturating_mul(1_000_000_000))
}

/// iperf3's byte units are binary (unit_snprintf: K = 1024); bit rates decimal.
fn bytes_of(value: &[u8], unit: &[u8]) -> Option<i64> {
    let v: f64 = std::str::from_utf8(value).ok()?.parse().ok()?;
    let mult = match unit {
        b"Bytes" => 1.0,
        b"KBytes" => 1024.0,
        b"MBytes" => 1024.0 * 1024.0,
        b"GBytes" => 1024.0 * 1024.0 * 1024.0,
        b"TBytes" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    (v.is_finite() && v >= 0.0 && v < 1e18).then(|| (v * mult).round() as i64)
}

/// Parser state for iperf3's text output.
#[derive(Default)]
pub struct TextParser {
    reverse: bool,
    flow_of: HashMap<u64, usize>,
}

impl TextParser {
    /// One line.
    pub fn line(&mut self, ctx: &mut Ctx<'_>, lineno: u64, line: &[u8]) -> Result<(), ParseError> {
        let text = String::from_utf8_lossy(line);
        let t = text.trim();
        if t.starts_with("Reverse mode") {
            self.reverse = true;
        }
        if !t.starts_with('[') || t.starts_with("[ ID]") || t.starts_with("[SUM]") {
            return Ok(());
        }
        let close = t.find(']').ok_or_else(|| {
            ParseError::expected(lineno, "[ ID] at the start of a stream line", line)
        })?;
        let id = dec(t[1..close].trim().as_bytes())
            .ok_or_else(|| ParseError::expected(lineno, "a stream id in [ ]", line))?;
        let words: Vec<&str> = t[close + 1..].split_whitespace().collect();
        if words.first() == Some(&"local") {
            return self.on_connected(ctx, lineno, line, id, &words);
        }
        // [  5]   0.00-1.00   sec   112 MBytes   941 Mbits/sec    0   3.00 MBytes  [sender|receiver]
        if words.len() < 6 || words[1] != "sec" {
            return Ok(()); // other bracketed lines (e.g. "[  5] 10.00-10.04 sec ..." are covered; notes are not)
        }
        self.on_interval(ctx, lineno, line, id, &words)
    }

    /// `[  5] local 10.0.0.1 port 43210 connected to 10.0.0.2 port 5201`: stream `id`'s flow.
    fn on_connected(
        &mut self,
        ctx: &mut Ctx<'_>,
        lineno: u64,
        line: &[u8],
        id: u64,
        words: &[&str],
    ) -> Result<(), ParseError> {
        if words.len() < 9 || words[2] != "port" || words[4] != "connected" || words[7] != "port" {
            return Err(ParseError::expected(
                lineno,
                "'local ADDR port N connected to ADDR port N'",
                line,
            ));
        }
        let lport = words[3]
            .parse::<u16>()
            .map_err(|_| ParseError::expected(lineno, "a local port", line))?;
        let fport = words[8]
            .parse::<u16>()
            .map_err(|_| ParseError::expected(lineno, "a remote port", line))?;
        let (l, f) = ((words[1].to_string(), lport), (words[6].to_string(), fport));
        let (s, r) = if self.reverse { (f, l) } else { (l, f) };
        let i = ctx.flows.get(&FlowKey {
            laddr: s.0,
            lport: s.1,
            faddr: r.0,
            fport: r.1,
        });
        ctx.flows.flows[i].has_iperf_intervals = true;
        self.flow_of.insert(id, i);
        Ok(())
    }

    /// `[  5]   0.00-1.00   sec   112 MBytes   941 Mbits/sec    0   3.00 MBytes`: one interval
    /// of stream `id` (or, with `sender`/`receiver` last, its totals).
    fn on_interval(
        &mut self,
        ctx: &mut Ctx<'_>,
        lineno: u64,
        line: &[u8],
        id: u64,
        words: &[&str],
    ) -> Result<(), ParseError> {
        let flow = *self.flow_of.get(&id).ok_or_else(|| {
            ParseError::at(
                lineno,
                format!(
                    "stream [{id}] has intervals but no 'local ... connected to' line before them"
                ),
            )
        })?;
        let (a, b) = words[0]
            .split_once('-')
            .ok_or_else(|| ParseError::expected(lineno, "an interval START-END", line))?;
        let start = seconds(lineno, "the interval's start", 0, a.as_bytes())?;
        let end = seconds(lineno, "the interval's end", 0, b.as_bytes())?;
        let bytes = bytes_of(words[2].as_bytes(), words[3].as_bytes())
            .ok_or_else(|| ParseError::expected(lineno, "a transfer like '112 MBytes'", line))?;
        if end < start || (end == start && bytes > 0) {
            let why = if end < start {
                "ends before it starts"
            } else {
                "bytes in no time"
            };
            return Err(ParseError::at(
                lineno,
                format!("interval {}: {why}", words[0]),
            ));
        }
        if let Some(&last @ ("sender" | "receiver")) = words.last() {
            if last == "receiver" {
                ctx.flows.flows[flow].bytes_received = Some(bytes as u64);
            }
            return Ok(());
        }
        if end == start {
            return Ok(()); // an empty instant: nothing to report
        }
        let retr = match words.get(6) {
            Some(w) => u32_dec("Retr").read(lineno, 0, w.as_bytes())? as i64,
            None => -1,
        };
        let cwnd = match (words.get(7), words.get(8)) {
            (Some(v), Some(u)) => bytes_of(v.as_bytes(), u.as_bytes())
                .ok_or_else(|| ParseError::expected(lineno, "a Cwnd like '3.00 MBytes'", line))?,
            _ => -1,
        };
        ctx.rec.intervals.push(&[
            flow as i64,
            start + ctx.offset_ns,
            end + ctx.offset_ns,
            bytes,
            retr,
            cwnd,
            -1,
        ]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iperf3_byte_units_are_binary() {
        assert_eq!(bytes_of(b"112", b"MBytes"), Some(112 * 1024 * 1024));
        assert_eq!(bytes_of(b"1.50", b"KBytes"), Some(1536));
        assert_eq!(bytes_of(b"1", b"Mbits/sec"), None);
    }
}

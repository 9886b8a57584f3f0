//! Line-oriented input: a log streamed line by line with line numbers (never more than one line
//! in memory), the error every parser returns, and the digit readers under `number.rs`.

use std::fmt;
use std::io::{self, BufRead, Read};

/// The longest line any supported format writes is a few hundred bytes; a longer one is not a
/// log line, and refusing it bounds memory on hostile input.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// What went wrong where: `line` is 1-based (0 when the error is not about one line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number, or 0.
    pub line: u64,
    /// What was expected and what was found.
    pub message: String,
}

impl ParseError {
    /// "expected EXPECTED, found FOUND" at `line`, quoting at most 80 bytes of what was found.
    pub fn expected(line: u64, expected: &str, found: &[u8]) -> Self {
        let shown = String::from_utf8_lossy(&found[..found.len().min(80)]).into_owned();
        let more = if found.len() > 80 { "..." } else { "" };
        ParseError {
            line,
            message: format!("expected {expected}, found {shown:?}{more}"),
        }
    }

    /// A free-form message at `line`.
    pub fn at(line: u64, message: impl Into<String>) -> Self {
        ParseError {
            line,
            message: message.into(),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "line {}: {}", self.line, self.message)
        } else {
            f.write_str(&self.message)
        }
    }
}

impl std::error::Error for ParseError {}

impl From<io::Error> for ParseError {
    fn from(e: io::Error) -> Self {
        ParseError::at(0, format!("read error: {e}"))
    }
}

/// A stream of lines with their numbers.
#[derive(Debug)]
pub struct Lines<R> {
    inner: R,
    buf: Vec<u8>,
    /// Bytes of the reader's buffer that the line last returned occupies (consumed on the next
    /// call: lines inside the buffer are returned in place, without a copy).
    pending: usize,
    /// Number of the line last returned (1-based).
    pub line: u64,
    /// Bytes consumed so far.
    pub bytes: u64,
}

fn strip_cr(l: &[u8]) -> &[u8] {
    l.strip_suffix(b"\r").unwrap_or(l)
}

impl<R: BufRead> Lines<R> {
    /// Lines of `inner`.
    pub fn new(inner: R) -> Self {
        Lines {
            inner,
            buf: Vec::with_capacity(256),
            pending: 0,
            line: 0,
            bytes: 0,
        }
    }

    /// The next line without its end-of-line bytes, or None at the end of the input.
    pub fn next_line(&mut self) -> Result<Option<&[u8]>, ParseError> {
        if self.pending > 0 {
            self.inner.consume(self.pending);
            self.pending = 0;
        }
        let found = {
            let avail = self.inner.fill_buf()?;
            if avail.is_empty() {
                return Ok(None);
            }
            avail.iter().position(|&c| c == b'\n')
        };
        if let Some(i) = found {
            // Fast path: the whole line is in the reader's buffer (fill_buf again returns the
            // same bytes without reading).
            self.pending = i + 1;
            self.line += 1;
            self.bytes += i as u64 + 1;
            let avail = self.inner.fill_buf()?;
            return Ok(Some(strip_cr(&avail[..i])));
        }
        // The line runs past the buffer: gather it, up to the limit.
        self.buf.clear();
        let n = (&mut self.inner)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut self.buf)?;
        self.line += 1;
        self.bytes += n as u64;
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
        } else if n > MAX_LINE_BYTES {
            return Err(ParseError::at(
                self.line,
                format!("line longer than {MAX_LINE_BYTES} bytes: not a log line"),
            ));
        }
        Ok(Some(strip_cr(&self.buf)))
    }
}

/// FNV-1a, the hasher of the parsers' per-line flow lookups: keys are a few bytes (a flowid, an
/// address pair) and SipHash's DoS resistance buys nothing for a local log.
#[derive(Default, Clone, Copy)]
pub struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
        self.0 = h;
    }
}

/// A HashMap keyed with FNV-1a.
pub type FastMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<Fnv>>;

/// Unsigned decimal integer (no sign, no spaces), or None.
pub fn dec(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 19 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u64::from(c - b'0');
    }
    Some(v)
}

/// Value of each byte as a hex digit, 255 for non-digits.
const HEX: [u8; 256] = {
    let mut t = [255u8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// Hexadecimal integer with an optional 0x prefix, at most 16 digits, or None.
pub fn hex(s: &[u8]) -> Option<u64> {
    let s = match s {
        [b'0', b'x' | b'X', rest @ ..] => rest,
        _ => s,
    };
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in s {
        let d = HEX[c as usize];
        if d == 255 {
            return None;
        }
        v = (v << 4) | u64::from(d);
    }
    Some(v)
}

/// Non-negative decimal seconds ("12.345678", "12") as integer nanoseconds, exactly (digits past
/// the ninth decimal are dropped), or None.
pub fn seconds_ns(s: &[u8]) -> Option<i64> {
    let (int, frac) = match s.iter().position(|&c| c == b'.') {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, &b""[..]),
    };
    let whole = dec(int)?;
    if whole > 9_000_000_000 || !frac.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut ns: u64 = 0;
    for i in 0..9 {
        ns = ns * 10 + frac.get(i).map_or(0, |c| u64::from(c - b'0'));
    }
    Some((whole * 1_000_000_000 + ns) as i64)
}

/// Split `s` at every `sep`, trimming spaces and tabs around each field, into `out` (cleared).
pub fn split_fields<'a>(s: &'a [u8], sep: u8, out: &mut Vec<&'a [u8]>) {
    out.clear();
    out.extend(s.split(|&c| c == sep).map(trim));
}

/// `s` without leading or trailing spaces and tabs.
pub fn trim(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|c| !matches!(c, b' ' | b'\t'))
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|c| !matches!(c, b' ' | b'\t'))
        .map_or(start, |i| i + 1);
    &s[start..end]
}

/// `key=value` pairs separated by spaces or tabs, in order.
pub fn key_values(s: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    s.split(|&c| c == b' ' || c == b'\t').filter_map(|tok| {
        let i = tok.iter().position(|&c| c == b'=')?;
        Some((&tok[..i], &tok[i + 1..]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_exact_nanoseconds() {
        assert_eq!(seconds_ns(b"12.345678"), Some(12_345_678_000));
        assert_eq!(seconds_ns(b"0.5"), Some(500_000_000));
        assert_eq!(seconds_ns(b"7"), Some(7_000_000_000));
        assert_eq!(seconds_ns(b"1.1234567891"), Some(1_123_456_789));
        assert_eq!(seconds_ns(b"1.2x"), None);
        assert_eq!(seconds_ns(b""), None);
    }

    #[test]
    fn numbers_reject_junk_and_overflow() {
        assert_eq!(dec(b"1448"), Some(1448));
        assert_eq!(dec(b"14a8"), None);
        assert_eq!(dec(b"99999999999999999999"), None);
        assert_eq!(hex(b"0x5a8"), Some(1448));
        assert_eq!(hex(b"ffffffffffffffff"), Some(u64::MAX));
        assert_eq!(hex(b"1ffffffffffffffff"), None);
    }

    #[test]
    fn lines_are_numbered_and_stripped() {
        let mut l = Lines::new(&b"a,b\r\n\nlast"[..]);
        assert_eq!(l.next_line().unwrap(), Some(&b"a,b"[..]));
        assert_eq!(l.next_line().unwrap(), Some(&b""[..]));
        assert_eq!(l.next_line().unwrap(), Some(&b"last"[..]));
        assert_eq!(l.line, 3);
        assert_eq!(l.next_line().unwrap(), None);
    }

    #[test]
    fn an_endless_line_is_refused_not_buffered() {
        let big = vec![b'x'; MAX_LINE_BYTES + 10];
        let mut l = Lines::new(&big[..]);
        let e = l.next_line().unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.message.contains("longer than"));
    }
}

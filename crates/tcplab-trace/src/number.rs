//! One reader for every numeric field of the text logs (SIFTR, SIFTR2, the plot file, tcp_probe,
//! iperf3 text): a field is named, has a radix and a largest value, and a value that is not a
//! number of that radix (a sign, a fraction, `nan`, `inf`, junk) or lies past its largest value
//! is refused with the line and the field's name, so no field can slip through unread.

use crate::lines::{dec, hex, seconds_ns, ParseError};

/// How a field's digits are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Radix {
    /// Unsigned decimal (`%u`).
    Dec,
    /// Hexadecimal, an optional 0x (`%x`).
    Hex,
}

/// A numeric field of a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Its name in the log's source (errors quote it).
    pub name: &'static str,
    /// How its digits are written.
    pub radix: Radix,
    /// The largest value the writer can print (its C type's).
    pub max: u64,
}

/// A `u_int` printed with `%u` (FreeBSD's siftr, tcp_probe's snd_cwnd).
pub const fn u32_dec(name: &'static str) -> Field {
    Field {
        name,
        radix: Radix::Dec,
        max: u32::MAX as u64,
    }
}

/// A `u_int` printed with `%x`.
pub const fn u32_hex(name: &'static str) -> Field {
    Field {
        name,
        radix: Radix::Hex,
        max: u32::MAX as u64,
    }
}

/// A TCP port (`%hu`).
pub const fn port(name: &'static str) -> Field {
    Field {
        name,
        radix: Radix::Dec,
        max: u16::MAX as u64,
    }
}

impl Field {
    /// The value of `s`, or why it is not one of this field's.
    pub fn value(&self, s: &[u8]) -> Result<u64, String> {
        let v = match self.radix {
            Radix::Dec => dec(s),
            Radix::Hex => hex(s),
        };
        match v {
            Some(v) if v <= self.max => Ok(v),
            Some(v) => Err(format!("{v} is out of range (at most {})", self.max)),
            None => Err(String::new()),
        }
    }

    /// The value of `s`, field number `field_no` (1-based; 0: not counted) of line `lineno`.
    pub fn read(&self, lineno: u64, field_no: usize, s: &[u8]) -> Result<u64, ParseError> {
        self.value(s).map_err(|why| {
            let what = match self.radix {
                Radix::Dec => "a number",
                Radix::Hex => "a hex number",
            };
            let place = place(self.name, field_no);
            if why.is_empty() {
                ParseError::expected(lineno, &format!("{what} for {place}"), s)
            } else {
                ParseError::at(lineno, format!("{place}: {why}"))
            }
        })
    }
}

/// "NAME (field N)", or NAME when the field is not counted.
fn place(name: &str, field_no: usize) -> String {
    if field_no == 0 {
        name.to_string()
    } else {
        format!("{name} (field {field_no})")
    }
}

/// Non-negative decimal seconds (`sec.usec`) as ns; `name` and `field_no` as for `Field::read`.
pub fn seconds(lineno: u64, name: &str, field_no: usize, s: &[u8]) -> Result<i64, ParseError> {
    seconds_ns(s).ok_or_else(|| {
        let what = format!("a time in seconds for {}", place(name, field_no));
        ParseError::expected(lineno, &what, s)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_refuses_junk_signs_fractions_nan_inf_and_values_past_its_type() {
        let f = u32_dec("cwnd");
        assert_eq!(f.read(3, 4, b"1448"), Ok(1448));
        for junk in [
            &b"abc"[..],
            b"-1",
            b"1.5",
            b"nan",
            b"inf",
            b"",
            b"0x10",
            b"1e3",
        ] {
            let e = f.read(3, 4, junk).unwrap_err();
            assert!(
                e.message
                    .starts_with("expected a number for cwnd (field 4)"),
                "{e}"
            );
            assert_eq!(e.line, 3);
        }
        let e = f.read(3, 4, b"4294967296").unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 3: cwnd (field 4): 4294967296 is out of range (at most 4294967295)"
        );
        assert_eq!(u32_hex("flowid").read(1, 0, b"5ca1ab00"), Ok(0x5ca1_ab00));
        assert!(port("lport").read(1, 0, b"65536").is_err());
    }

    #[test]
    fn seconds_name_the_field() {
        assert_eq!(seconds(2, "time", 2, b"1.5"), Ok(1_500_000_000));
        let e = seconds(2, "time", 2, b"inf").unwrap_err();
        assert!(e
            .to_string()
            .starts_with("line 2: expected a time in seconds for time (field 2)"));
    }
}

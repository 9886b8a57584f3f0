//! Fuzz target: the siftr parser on arbitrary bytes, strict and lenient. A parse error is fine;
//! a panic, a hang or an unbounded allocation is a bug.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = tcplab_trace::import::parse_bytes("siftr", data, false);
    let _ = tcplab_trace::import::parse_bytes("siftr", data, true);
});

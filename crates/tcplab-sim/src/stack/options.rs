//! The knobs each stack accepts from a flow's config (what `tcplab.stack_options()` lists),
//! their defaults read from the profiles, and the defaults a source version sets.

use super::{freebsd, linux, FreeBsdRecovery, Recovery, SndbufPolicy};
use crate::config::FreeBsdVersion;
use crate::tcp::prr::PrrVersion;

/// A knob's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KnobValue {
    /// A switch.
    Bool(bool),
    /// A non-negative integer.
    Int(u64),
    /// One of a set of names.
    Text(&'static str),
}

/// One setting a stack accepts from a flow's config, with its default and, where the set is
/// closed, its allowed values (empty: any value of the type).
#[derive(Clone, Debug)]
pub struct Knob {
    /// The key in the flow's config.
    pub name: &'static str,
    /// What the stack uses when the flow does not set it.
    pub default: KnobValue,
    /// The allowed values, if the set is closed.
    pub allowed: Vec<KnobValue>,
    /// What it is.
    pub doc: &'static str,
}

/// The source versions of the RACK stack (rack.c of 2023 and of 2025).
pub const RACK_VERSIONS: [FreeBsdVersion; 2] = [FreeBsdVersion::V2023, FreeBsdVersion::V15_2025];

/// The defaults a stack's `version` sets (so that the spec reads them from here, never restating
/// them): `sndbuf_bytes` is the version's net.inet.tcp.sendbuf_max, `sack_lrd` its LRD default.
pub fn version_defaults(stack: &str, version: &str) -> Vec<(&'static str, KnobValue)> {
    let Some(v) = FreeBsdVersion::from_name(version) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if stack == "freebsd" || stack == "freebsd-rack" {
        if let Some(b) = v.sendbuf_max_bytes() {
            out.push(("sndbuf_bytes", KnobValue::Int(b)));
        }
    }
    if stack == "freebsd" {
        out.push(("sack_lrd", KnobValue::Bool(v.lrd_default())));
    }
    if stack == "freebsd-rack" {
        out.push((
            "rack_rto_cwnd",
            rack_rto_cwnd_value(v.rack_rto_keeps_cwnd()),
        ));
    }
    out
}

/// The knobs a stack accepts ([`resolve`](super::resolve) applies them), their defaults read
/// from the profiles.
pub fn options(name: &str) -> Option<Vec<Knob>> {
    Some(match name {
        "rfc" => Vec::new(),
        "linux" => vec![linux_prr()],
        "freebsd" => {
            let k = freebsd_recovery();
            let mut knobs = freebsd_common();
            knobs.insert(0, freebsd_version(k.version));
            knobs.push(Knob {
                name: "sack_lrd",
                default: KnobValue::Bool(k.lrd),
                allowed: BOTH.to_vec(),
                doc: "net.inet.tcp.sack.lrd (2023: net.inet.tcp.do_lrd): lost-retransmission \
                      detection; its default is the version's (off in 2023, on from late 2023)",
            });
            knobs.insert(
                1,
                Knob {
                    name: "d43470",
                    default: KnobValue::Bool(k.d43470),
                    allowed: BOTH.to_vec(),
                    doc:
                        "review D43470 (cwnd during SACK recovery): after (true) or before (false)",
                },
            );
            knobs
        }
        "freebsd-rack" => {
            let mut knobs = freebsd_common();
            knobs.insert(0, rack_version());
            knobs.push(Knob {
                name: "rack_rto_cwnd",
                default: rack_rto_cwnd_value(FreeBsdVersion::V2023.rack_rto_keeps_cwnd()),
                allowed: vec![rack_rto_cwnd_value(true), rack_rto_cwnd_value(false)],
                doc: "RACK cwnd and ssthresh after a retransmission timeout: kept (rack.c \
                      @ 0c19274c rack_cong_signal(CC_RTO) with a module that has \
                      cong_signal) or one_mss (2023: cwnd 1 MSS, ssthresh half the \
                      window); its default is the version's",
            });
            knobs
        }
        _ => return None,
    })
}

/// The `rack_rto_cwnd` knob's value.
fn rack_rto_cwnd_value(keeps: bool) -> KnobValue {
    KnobValue::Text(if keeps { "kept" } else { "one_mss" })
}

/// A switch's allowed values.
const BOTH: [KnobValue; 2] = [KnobValue::Bool(true), KnobValue::Bool(false)];

/// The freebsd profile's recovery knobs.
fn freebsd_recovery() -> FreeBsdRecovery {
    let Recovery::FreeBsd(k) = freebsd().recovery else {
        unreachable!("the freebsd profile recovers as FreeBSD")
    };
    k
}

fn linux_prr() -> Knob {
    let Recovery::LinuxPrr(v) = linux().recovery else {
        unreachable!("the linux profile recovers with PRR")
    };
    Knob {
        name: "prr",
        default: KnobValue::Text(v.name()),
        allowed: PrrVersion::ALL
            .iter()
            .map(|v| KnobValue::Text(v.name()))
            .collect(),
        doc: "Linux tcp_cwnd_reduction() version: 6.x (mainline) or 5.15 (5.12 .. 5.15 LTS)",
    }
}

/// The FreeBSD stacks share the socket layer and tcp_output.c's TSO switches.
fn freebsd_common() -> Vec<Knob> {
    let fb = freebsd();
    let k = freebsd_recovery();
    let SndbufPolicy::FreeBsdInc(inc) = fb.sndbuf else {
        unreachable!("the freebsd profile autosizes its send buffer")
    };
    vec![
        Knob {
            name: "tso",
            default: KnobValue::Bool(fb.tso_max_bytes > 0),
            allowed: BOTH.to_vec(),
            doc: "net.inet.tcp.tso: TSO bursts (off: every send at most one segment)",
        },
        Knob {
            name: "sack_tso",
            default: KnobValue::Bool(k.sack_tso),
            allowed: BOTH.to_vec(),
            doc: "net.inet.tcp.sack.tso (D45068): hole retransmissions may be TSO bursts",
        },
        Knob {
            name: "do_prr",
            default: KnobValue::Bool(k.prr),
            allowed: BOTH.to_vec(),
            doc: "net.inet.tcp.do_prr: PRR in fast recovery",
        },
        Knob {
            name: "sendbuf_inc_bytes",
            default: KnobValue::Int(inc),
            allowed: Vec::new(),
            doc: "net.inet.tcp.sendbuf_inc, bytes (0: no send-buffer autosizing)",
        },
    ]
}

fn freebsd_version(default: FreeBsdVersion) -> Knob {
    Knob {
        name: "version",
        default: KnobValue::Text(default.name()),
        allowed: FreeBsdVersion::ALL
            .iter()
            .map(|v| KnobValue::Text(v.name()))
            .collect(),
        doc: "FreeBSD source the default stack follows: 2023 (tcp_input.c @ 2bae602e, \
              F-Stack tcp_output.c; d43470 from the review text), 15.0-2024-10 (T4's \
              main-f11c79fc00, before D43470 or with it as committed: d43470) or \
              15.0-2025 (D43470 as committed: tcp_input.c @ 62d1e135, tcp_output.c \
              @ 0714807e); docs/models.md",
    }
}

fn rack_version() -> Knob {
    Knob {
        name: "version",
        default: KnobValue::Text(FreeBsdVersion::V2023.name()),
        allowed: RACK_VERSIONS
            .iter()
            .map(|v| KnobValue::Text(v.name()))
            .collect(),
        doc: "FreeBSD rack.c the RACK stack follows: 2023 (freebsd/freebsd-src \
              @ 01cb9895, sobomax/freebsd14_vendor @ 0f7ff342) or 15.0-2025 \
              (nibanks/freebsd-src @ 0c19274c: 200 ms RTO slop, burst slot from the \
              RTT in microseconds); docs/models.md",
    }
}

//! Stack profiles: the seam where a TCP implementation's behaviour (timers, ACK policy, send
//! granularity, pacing, loss recovery) is composed with a congestion-control module, as FreeBSD
//! pairs a TCP stack (`net.inet.tcp.functions_default`) with a cc(4) module.
//!
//! Profiles: `rfc` is the textbook stack of the RFCs. `linux` has Linux's constants, small queues,
//! TSO autosizing, PRR, RACK, TLP and the kernel CC modules. `freebsd` is FreeBSD's default stack
//! (tcp_input.c / tcp_output.c / tcp_sack.c, before or after review D43470) with its cc(4)
//! modules; `freebsd-rack` is FreeBSD's RACK stack (tcp_stacks/rack.c) with the same modules.
//! What each leaves out is in `docs/models.md`. The knobs a flow may set: [`options`].

mod options;
pub use options::{options, version_defaults, Knob, KnobValue, RACK_VERSIONS};

use crate::config::FreeBsdVersion;
use crate::tcp::handshake::{SynProfile, SynTimer};
use crate::tcp::prr::PrrVersion;
use crate::time::{Ns, MS, SEC};

/// How a stack recovers from loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// RFC 6675 SACK-based recovery (cwnd = ssthresh on entry, send while pipe < cwnd), with
    /// RFC 6582 NewReno partial-ACK handling when SACK is off.
    Rfc6675,
    /// Linux: RFC 6675 loss marking and sending while in flight < cwnd, with cwnd set on every
    /// ACK by PRR (tcp_cwnd_reduction()) and to ssthresh at the end (tcp_end_cwnd_reduction()).
    LinuxPrr(PrrVersion),
    /// FreeBSD's default stack: SACK fast recovery with tcp_do_prr_ack() (or
    /// tcp_sack_partialack() without PRR), sends sized by byte differences of the window.
    FreeBsd(FreeBsdRecovery),
    /// FreeBSD's RACK stack (tcp_stacks/rack.c): RACK-TLP loss detection, cwnd left as it is on
    /// entry while PRR (in bytes) gates what is sent, cwnd at least ssthresh at exit, and the
    /// HPTS burst mitigation of unpaced connections; of a given source version ("2023" or
    /// "15.0-2025", docs/models.md).
    FreeBsdRack(FreeBsdVersion),
}

/// The FreeBSD default stack's recovery knobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreeBsdRecovery {
    /// Review D43470 (commit 7dc78150c730, "tcp: refactor cwnd during SACK transmissions to allow
    /// TSO"): on entry cwnd = pipe + MSS for the first retransmission, then ssthresh; PRR sets
    /// cwnd from pipe. Before it: cwnd = 1 MSS on entry, PRR counts what recovery has sent.
    pub d43470: bool,
    /// net.inet.tcp.do_prr (default 1).
    pub prr: bool,
    /// net.inet.tcp.sack.tso (D45068, default 0): hole retransmissions may be TSO bursts.
    pub sack_tso: bool,
    /// Which kernel's tcp_input.c / tcp_output.c recovery lines are followed.
    pub version: FreeBsdVersion,
    /// Lost-retransmission detection (TF_LRD from net.inet.tcp.sack.lrd; 2023:
    /// net.inet.tcp.do_lrd).
    pub lrd: bool,
}

impl FreeBsdRecovery {
    /// Whether the recovery lines of D43470 as committed (7dc78150c730) are followed: entry
    /// `snd_cwnd = tcp_compute_pipe(tp) + maxseg` then `snd_ssthresh`, PRR `snd_cwnd = pipe -
    /// del_data + snd_cnt * maxseg`, tcp_output()'s `cwin = sendwin - tcp_compute_pipe(tp)`, read
    /// in nibanks/freebsd-src tcp_input.c @ 62d1e135 and tcp_output.c @ 0714807e. Version 2023's
    /// `d43470 = true` is the older reading of the review's description, not this.
    pub fn as_committed(self) -> bool {
        match self.version {
            FreeBsdVersion::V2023 => false,
            FreeBsdVersion::V15_2024_10 => self.d43470,
            FreeBsdVersion::V15_2025 => true,
        }
    }
}

impl Default for FreeBsdRecovery {
    fn default() -> Self {
        FreeBsdRecovery {
            d43470: true,
            prr: true,
            sack_tso: false,
            version: FreeBsdVersion::V2023,
            lrd: FreeBsdVersion::V2023.lrd_default(),
        }
    }
}

/// How the send buffer's size evolves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SndbufPolicy {
    /// The configured size from the start.
    Fixed,
    /// Linux tcp_sndbuf_expand(): at least this many cwnds of data, up to the maximum.
    Cwnds(u64),
    /// FreeBSD tcp_output.c send-buffer autosizing: grow by this many bytes per output call
    /// while the buffer is 7/8 full and the window could take all of it.
    FreeBsdInc(u64),
}

/// The behaviour of one TCP implementation, minus its congestion-control module. Built once per
/// distinct configuration and shared by every flow that resolves to it ([`Shared`]).
#[derive(Clone, Debug, PartialEq)]
pub struct StackProfile {
    /// Profile name.
    pub name: &'static str,
    /// Initial RTO before any RTT sample.
    pub initial_rto_ns: Ns,
    /// Lower bound of the RTO.
    pub min_rto_ns: Ns,
    /// Upper bound of the RTO (and of its backoff).
    pub max_rto_ns: Ns,
    /// Clock granularity G of RFC 6298 §2.
    pub clock_granularity_ns: Ns,
    /// Added to every RTO before its bounds (FreeBSD tcp_rexmit_slop).
    pub rto_slop_ns: Ns,
    /// Duplicate-ACK threshold (RFC 5681 §3.2, RFC 6675 DupThresh).
    pub dupthresh: u32,
    /// Delayed-ACK timer.
    pub delack_ns: Ns,
    /// ACK at least every this many full-sized segments (RFC 5681 §4.2, RFC 1122: 2).
    pub ack_every_segments: u32,
    /// Segments the receiver ACKs at once when data starts (Linux quickack mode: tcp_event_data_recv()
    /// -> tcp_incr_quickack(sk, TCP_MAX_QUICKACKS = 16), at most rcv_wnd / (2 mss)).
    pub quickack_segments: u32,
    /// Whether the sender emits segments smaller than one MSS when the window leaves room for
    /// only part of one (FreeBSD's byte-difference windows) or waits for a full MSS (Linux).
    pub partial_sends: bool,
    /// Largest burst handed to the NIC at once (TSO), bytes. Packets of a burst leave back to back
    /// at the sender's link rate.
    pub tso_max_bytes: u64,
    /// FreeBSD: the NIC's most TSO fragments (if_hw_tsomaxsegcount) that tcp_m_copym() cuts a
    /// burst at; 0: no limit (the idealised NIC).
    pub tso_max_segcount: u32,
    /// FreeBSD: the NIC's largest TSO fragment, bytes (if_hw_tsomaxsegsize); 0: no limit.
    pub tso_max_segsize: u32,
    /// FreeBSD RACK: the sending host's NIC does LRO, so RACK takes ACKs compressed
    /// (rack_use_cmp_acks): queued while a burst slot runs, then processed as one batch.
    pub ack_cmp: bool,
    /// Whether TSO chunks are sized to ~1 ms at the pacing rate (Linux tcp_tso_autosize).
    pub tso_autosize: bool,
    /// Whether the stack paces at the CC's pacing rate when the CC supplies one.
    pub pacing: bool,
    /// Loss recovery scheme.
    pub recovery: Recovery,
    /// Backpressure from below TCP (Linux TCP Small Queues, tcp_output.c
    /// tcp_small_queue_check()): the sender may have at most this many bytes queued at its own
    /// NIC; the limit is max(floor, pacing rate >> shift), capped at `tsq_max_bytes`.
    pub tsq_floor_bytes: u64,
    /// Shift applied to the pacing rate in bytes/s (10: about 1 ms of data), if the limit scales.
    pub tsq_pacing_shift: Option<u32>,
    /// Cap of the limit (net.ipv4.tcp_limit_output_bytes).
    pub tsq_max_bytes: u64,
    /// Loss detection by RACK (Linux tcp_recovery.c, RFC 8985) rather than RFC 6675 IsLost.
    pub rack: bool,
    /// Tail loss probes (RFC 8985 §7; Linux tcp_schedule_loss_probe / tcp_send_loss_probe).
    pub tlp: bool,
    /// Which implementations of the CC algorithms the stack uses.
    pub cc_family: crate::cc::Family,
    /// Send-buffer sizing.
    pub sndbuf: SndbufPolicy,
    /// Initial send-buffer size of an autotuned buffer (Linux tcp_wmem[1], FreeBSD sendspace).
    pub sndbuf_initial_bytes: u64,
    /// Free send-buffer space at which a blocked writer copies in what fits; None: it waits
    /// until a whole write fits.
    pub write_lowat_bytes: Option<u64>,
    /// Whether contiguous retransmissions sent at one instant leave as one TSO burst (Linux
    /// tcp_retransmit_skb() sends up to cwnd - in_flight segments of an skb; FreeBSD only with
    /// net.inet.tcp.sack.tso).
    pub retx_tso: bool,
    /// FreeBSD RACK: a retransmission timeout keeps cwnd and ssthresh (rack.c 15.0-2025 as read)
    /// rather than setting cwnd = 1 MSS (2023); `rack_rto_cwnd`.
    pub rack_rto_keeps_cwnd: bool,
    /// Connection setup: SYN timer, window after a lost SYN, SYN-ACK timer
    /// ([`crate::tcp::handshake`]).
    pub syn: crate::tcp::handshake::SynProfile,
    /// The kernel's tick rate (Linux CONFIG_HZ): the linux stack's RACK reordering and loss-probe
    /// timers run in its jiffies (`linux_hz`).
    pub hz: u64,
    /// How long after a kernel tick time 0 is (the drill endpoint's script clock).
    pub jiffy_phase_ns: Ns,
}

/// Profile names the registry knows.
pub const PROFILES: &[&str] = &["freebsd", "freebsd-rack", "linux", "rfc"];

/// The textbook stack: RFC 6298 §2 (1 s initial and minimum RTO, 60 s maximum allowed), RFC 5681
/// §4.2 (ACK every 2nd full segment, delay < 500 ms; 40 ms as is common in practice), RFC 6675.
fn rfc() -> StackProfile {
    StackProfile {
        name: "rfc",
        initial_rto_ns: SEC,
        min_rto_ns: SEC,
        max_rto_ns: 60 * SEC,
        clock_granularity_ns: MS,
        rto_slop_ns: 0,
        dupthresh: 3,
        delack_ns: 40 * MS,
        ack_every_segments: 2,
        quickack_segments: 0,
        partial_sends: false,
        tso_max_bytes: 65_536,
        tso_max_segcount: 0,
        tso_max_segsize: 0,
        ack_cmp: false,
        tso_autosize: false,
        pacing: false,
        recovery: Recovery::Rfc6675,
        // Every real host stops the socket when its interface queue is full; the RFCs do not say
        // how much it holds: two 64 KB bursts, fixed.
        tsq_floor_bytes: 2 * 65_536,
        tsq_pacing_shift: None,
        tsq_max_bytes: 2 * 65_536,
        sndbuf: SndbufPolicy::Fixed,
        sndbuf_initial_bytes: 0,
        retx_tso: false,
        write_lowat_bytes: None,
        rack: false,
        tlp: false,
        cc_family: crate::cc::Family::Rfc,
        rack_rto_keeps_cwnd: false,
        syn: SynProfile::rfc(),
        hz: crate::time::LINUX_HZ,
        jiffy_phase_ns: 0,
    }
}

/// Linux's constants around the same machinery: include/net/tcp.h TCP_TIMEOUT_INIT (1 s),
/// TCP_RTO_MIN (HZ/5 = 200 ms), TCP_RTO_MAX (120 s), TCP_DELACK_MIN (HZ/25 = 40 ms); tcp_output.c
/// sends full-sized segments only (Nagle / tcp_snd_wnd_test); pacing only under fq or when the CC
/// asks.
fn linux() -> StackProfile {
    StackProfile {
        name: "linux",
        min_rto_ns: 200 * MS,
        max_rto_ns: 120 * SEC,
        // tcp_small_queue_check(): max(2 * skb->truesize, sk_pacing_rate >> 10), at most
        // tcp_limit_output_bytes (1 MB) when not pacing; truesize of a 64 KB TSO skb ~ 64 KB.
        tsq_pacing_shift: Some(10),
        tsq_max_bytes: 1 << 20,
        // tcp_input.c tcp_sndbuf_expand(): sk_sndbuf = 2 * max(TCP_INIT_CWND, cwnd) * per_mss, at
        // most tcp_wmem[2]. Linux counts skb truesize; we count payload, a lower bound.
        sndbuf: SndbufPolicy::Cwnds(2),
        sndbuf_initial_bytes: 16_384,
        retx_tso: true,
        tso_autosize: true,
        recovery: Recovery::LinuxPrr(PrrVersion::Mainline),
        cc_family: crate::cc::Family::Linux,
        // net.ipv4.tcp_recovery = 1 (TCP_RACK_LOSS_DETECTION) is the default since 4.18.
        rack: true,
        // net.ipv4.tcp_early_retrans = 3 (RACK + TLP) is the default.
        tlp: true,
        quickack_segments: 16,
        // net.ipv4.tcp_syn_retries 6, tcp_syn_linear_timeouts 4 (Linux 6.5+).
        syn: SynProfile::linux(6, 4),
        ..rfc()
    }
}

/// FreeBSD's default stack with its constants: sys/netinet/tcp_timer.h TCPTV_RTOBASE (1 s),
/// TCPTV_MIN (30 ms), TCPTV_REXMTMAX (64 s), TCPTV_DELACK (40 ms), TCPT_RANGESET adding
/// tcp_rexmit_slop (TCPTV_CPU_VAR = 200 ms) to every RTO, 1 ms ticks; ACK every second
/// full segment (tcp_input.c DELAY_ACK); no pacing; TSO bursts up to 64 KB; send-buffer
/// autosizing from net.inet.tcp.sendspace (32 KB) in steps of sendbuf_inc (8 KB).
fn freebsd() -> StackProfile {
    StackProfile {
        name: "freebsd",
        initial_rto_ns: SEC,
        min_rto_ns: 30 * MS,
        max_rto_ns: 64 * SEC,
        clock_granularity_ns: MS,
        rto_slop_ns: 200 * MS,
        partial_sends: true,
        recovery: Recovery::FreeBsd(FreeBsdRecovery::default()),
        cc_family: crate::cc::Family::FreeBsd,
        sndbuf: SndbufPolicy::FreeBsdInc(8192),
        sndbuf_initial_bytes: 32_768,
        write_lowat_bytes: Some(2048),
        syn: SynProfile::freebsd(200 * MS),
        ..rfc()
    }
}

/// FreeBSD's RACK stack (`net.inet.tcp.functions_default=rack`) with the constants of
/// sys/netinet/tcp_stacks/rack.c (freebsd/freebsd-src @ 01cb9895 and its vendored copies):
/// rack_rto_min 30 ms, rack_rto_max 4 s, RACK_TCPT_RANGESET without the default stack's 200 ms
/// slop (rack's timer_slop is taken as 0: its initial value was not read), rack_tlp_min 10 ms,
/// rack_delayed_ack_time 40 ms; RACK and TLP always on (RACK requires SACK); the same socket
/// layer, send-buffer autosizing and cc(4) modules as the default stack. Its connection setup is
/// the default stack's (rack.c's own SYN_SENT timer path was not read; docs/models.md).
fn freebsd_rack() -> StackProfile {
    StackProfile {
        name: "freebsd-rack",
        max_rto_ns: 4 * SEC,
        rto_slop_ns: 0,
        partial_sends: false,
        recovery: Recovery::FreeBsdRack(FreeBsdVersion::V2023),
        rack: true,
        tlp: true,
        ..freebsd()
    }
}

/// A flow's stack configuration, resolved once from its config: the named profile with the
/// flow's knobs applied (Linux PRR version; FreeBSD D43470, do_prr, sack.tso, tso, sendbuf_inc).
/// The sender and receiver are built from it and never change it afterwards.
pub fn resolve(f: &crate::config::FlowConfig) -> Option<StackProfile> {
    let mut profile = profile(&f.stack)?;
    if let Some(tso) = f.tso_max_bytes {
        // The sending NIC's limit (Linux dev->gso_max_size, read by tcp_tso_autosize(); FreeBSD
        // if_hw_tsomax, the `max_len` of tcp_output.c): at least one segment.
        profile.tso_max_bytes = tso.max(f.mss as u64);
    }
    if let Recovery::FreeBsd(_) | Recovery::FreeBsdRack(_) = profile.recovery {
        profile.tso_max_segcount = f.tso_max_segcount.unwrap_or(0);
        profile.tso_max_segsize = f.tso_max_segsize.unwrap_or(0);
        profile.ack_cmp = matches!(profile.recovery, Recovery::FreeBsdRack(_)) && f.sender_lro;
    }
    if let (Some(v), Recovery::LinuxPrr(_)) = (f.prr, profile.recovery) {
        profile.recovery = Recovery::LinuxPrr(v);
    }
    if let SynTimer::Linux { retries, linear } = profile.syn.timer {
        profile.syn.timer = SynTimer::Linux {
            retries: f.syn_retries.unwrap_or(retries),
            linear: f.syn_linear_timeouts.unwrap_or(linear),
        };
    }
    let freebsd_stack = matches!(
        profile.recovery,
        Recovery::FreeBsd(_) | Recovery::FreeBsdRack(_)
    );
    if let (Some(k), true) = (&f.freebsd, freebsd_stack) {
        if let Recovery::FreeBsd(_) = profile.recovery {
            // 15.0-2025 is after D43470 by definition (the config check rejects d43470 = false
            // with it).
            profile.recovery = Recovery::FreeBsd(FreeBsdRecovery {
                d43470: k.d43470 || k.version.includes_d43470(),
                prr: k.do_prr,
                sack_tso: k.sack_tso,
                version: k.version,
                lrd: k.sack_lrd.unwrap_or(k.version.lrd_default()),
            });
        }
        if let (Recovery::FreeBsdRack(_), FreeBsdVersion::V15_2025) = (profile.recovery, k.version)
        {
            profile.recovery = Recovery::FreeBsdRack(FreeBsdVersion::V15_2025);
            // rack.c @ 0c19274c (nibanks/freebsd-src) rack_init(): `rack->r_ctl.timer_slop =
            // TICKS_2_USEC(tcp_rexmit_slop);` (TCPTV_CPU_VAR, 200 ms), added to every RTO by
            // RACK_TCPT_RANGESET(tv, value, tvmin, tvmax, slop) before the bounds.
            profile.rto_slop_ns = 200 * MS;
        }
        if let Recovery::FreeBsdRack(v) = profile.recovery {
            profile.rack_rto_keeps_cwnd = match k.rack_rto_cwnd {
                Some(r) => r == crate::config::RackRtoCwnd::Kept,
                None => v.rack_rto_keeps_cwnd(),
            };
        }
        // tcp_output.c: without net.inet.tcp.tso every send is at most one segment.
        if !k.tso {
            profile.tso_max_bytes = f.mss as u64;
        }
        profile.retx_tso = k.tso && k.sack_tso;
        profile.sndbuf = if k.sendbuf_inc_bytes > 0 {
            SndbufPolicy::FreeBsdInc(k.sendbuf_inc_bytes)
        } else {
            SndbufPolicy::Fixed
        };
    }
    Some(profile)
}

/// The resolved profiles of a simulation, one copy of each distinct one: flows with the same
/// stack and knobs share it, so a thousand senders read one profile's cache lines on every ACK
/// instead of a copy each (`Rc`: a simulation runs on one thread).
#[derive(Default)]
pub struct Shared {
    distinct: Vec<std::rc::Rc<StackProfile>>,
}

impl Shared {
    /// The shared copy of `profile`: the one already held if an equal one is, else it.
    pub fn intern(&mut self, profile: StackProfile) -> std::rc::Rc<StackProfile> {
        if let Some(p) = self.distinct.iter().find(|p| ***p == profile) {
            return p.clone();
        }
        let p = std::rc::Rc::new(profile);
        self.distinct.push(p.clone());
        p
    }
}

/// Look a profile up by name.
pub fn profile(name: &str) -> Option<StackProfile> {
    match name {
        "rfc" => Some(rfc()),
        "linux" => Some(linux()),
        "freebsd" => Some(freebsd()),
        "freebsd-rack" => Some(freebsd_rack()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_profiles_are_one_copy_and_a_knob_makes_another() {
        let mut shared = Shared::default();
        let a = shared.intern(linux());
        let b = shared.intern(linux());
        assert!(std::rc::Rc::ptr_eq(&a, &b));
        // One knob apart (a flow's tso_max_bytes): its own copy, and the first stays shared.
        let small_tso = StackProfile {
            tso_max_bytes: 1448,
            ..linux()
        };
        let c = shared.intern(small_tso.clone());
        assert!(!std::rc::Rc::ptr_eq(&a, &c));
        assert_eq!(*c, small_tso);
        assert!(std::rc::Rc::ptr_eq(&c, &shared.intern(small_tso)));
        assert!(std::rc::Rc::ptr_eq(&a, &shared.intern(linux())));
        assert!(!std::rc::Rc::ptr_eq(&a, &shared.intern(freebsd())));
    }
}

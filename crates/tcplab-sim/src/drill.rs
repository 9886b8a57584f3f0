//! One modelled endpoint of a stack for packetdrill scripts (`tcplab drill --target linux`, ...):
//! a stack's sender driven segment by segment in virtual time, its segments out with the fields
//! the wire shows, and `tcp_info` as Linux's tcp_get_info() fills it. Not on the simulation's
//! path: a `Simulation` never builds one.

use crate::config::FlowConfig;
pub use crate::drill_skb::Outbound;
use crate::drill_skb::SkbQueue;
use crate::net::packet::{Kind, Packet, IP_HDR, TCP_HDR};
use crate::tcp::sender::{State, TcpSender};
use crate::time::{Ns, MS};
use std::rc::Rc;

/// What the peer's SYN said (and what the endpoint agreed to in its SYN-ACK).
#[derive(Clone, Copy, Debug)]
pub struct Peer {
    /// Payload bytes per segment the endpoint sends: min(peer's MSS, own MSS) less the TS option.
    pub mss: u32,
    /// SACK permitted by both.
    pub sack: bool,
    /// Timestamps on both.
    pub timestamps: bool,
    /// The peer's window shift (RFC 7323 §2.3), 0 without window scaling.
    pub wscale: u8,
    /// ECN negotiated (RFC 3168 §6.1.1).
    pub ecn: bool,
}

/// The host the endpoint runs on: what a script's commands set outside the connection.
#[derive(Clone, Copy, Debug)]
pub struct Host {
    /// The kernel's tick rate (CONFIG_HZ): Linux's RACK and loss-probe timers run in jiffies.
    pub hz: u64,
    /// How long after a kernel tick the script's time 0 is.
    pub jiffy_phase_ns: Ns,
}

impl Default for Host {
    /// The simulator's kernel clock (`time::LINUX_HZ`), time 0 half a jiffy after a tick: a
    /// script's clock is not tied to the tick, and half a jiffy is the mean of a uniform phase.
    fn default() -> Self {
        Host::with_hz(crate::time::LINUX_HZ)
    }
}

impl Host {
    /// A host whose kernel ticks `hz` times a second, time 0 half a jiffy after a tick.
    pub fn with_hz(hz: u64) -> Self {
        Host {
            hz,
            jiffy_phase_ns: crate::time::SEC / hz / 2,
        }
    }
}

/// One inbound segment's fields the sender reads (an ACK; data to the endpoint is not modelled).
#[derive(Clone, Debug, Default)]
pub struct Inbound {
    /// Cumulative ACK, bytes from the endpoint's first data byte (script seq 1 is byte 0).
    pub ack: u64,
    /// The window field as on the wire (shifted left by the peer's wscale here).
    pub win: u32,
    /// SACK blocks [start, end), as `ack`.
    pub sacks: Vec<(u64, u64)>,
    /// ECE flag.
    pub ece: bool,
    /// TS ecr: the endpoint's TS val echoed, as the send time it stood for.
    pub ts_ecr_ns: Option<Ns>,
}

/// The endpoint: a sender established by a passive open at `t0`.
pub struct Endpoint {
    pub(crate) sender: TcpSender,
    next_id: u64,
    out: Vec<Packet>,
    pub(crate) sent: Vec<Outbound>,
    peer: Peer,
    pub(crate) now: Ns,
    /// The host's kernel clock (Linux's timers run on its wheel).
    pub(crate) host: Host,
    /// The zero-window / Nagle probe timer (ICSK_TIME_PROBE0), the linux stack.
    pub(crate) probe0: Option<Ns>,
    /// Each TSO output pass is one outbound packet (the FreeBSD stacks: tcp_output() hands the
    /// NIC one chain per pass; see [`tso_packets`]).
    tso_packets: bool,
    /// Linux's skbs (the linux stack): lent to the sender for each call, which cuts its pieces
    /// from them (`call()`), then read for the PSH bit.
    pub(crate) skbs: Option<SkbQueue>,
    /// The route's MTU and the MTU probe (the linux stack, once `set_path_mtu` is called).
    pub(crate) path: Option<crate::drill_mtu::PathMtu>,
    /// The probe timer's counters, TCP_USER_TIMEOUT and the local device (`drill_probe`).
    pub(crate) probe: crate::drill_probe::ProbeState,
    /// tcp_info's chronographs (`drill_chrono`).
    pub(crate) chrono: crate::drill_chrono::Chrono,
}

/// Most timer firings in one `advance` (a model that rearms at `now` forever is a bug, not a hang).
const MAX_FIRINGS: u32 = 100_000;

impl Endpoint {
    /// A `stack` sender with congestion control `cc`, established at `now` after a handshake
    /// whose SYN-ACK-to-ACK time was `handshake_rtt_ns` (Linux tcp_synack_rtt_meas() takes it
    /// as the first RTT sample), the peer's window `win_bytes` (already scaled).
    pub fn new(
        stack: &str,
        cc: &str,
        peer: Peer,
        now: Ns,
        handshake_rtt_ns: Option<Ns>,
        win_bytes: u64,
    ) -> Result<Self, String> {
        let host = Host::default();
        Self::on_host(
            &host,
            stack,
            cc,
            peer,
            now,
            handshake_rtt_ns,
            win_bytes,
            None,
        )
    }

    /// [`Endpoint::new`] on `host` (its kernel's clock), with flow-config fields (a JSON object,
    /// e.g. `{"iw_segments": 40, "freebsd": {...}}`) over the endpoint's own: what a script's
    /// sysctls set.
    #[allow(clippy::too_many_arguments)]
    pub fn on_host(
        host: &Host,
        stack: &str,
        cc: &str,
        peer: Peer,
        now: Ns,
        handshake_rtt_ns: Option<Ns>,
        win_bytes: u64,
        extra_json: Option<&str>,
    ) -> Result<Self, String> {
        let f = flow_config(stack, cc, &peer, win_bytes, extra_json)?;
        let linux = stack.starts_with("linux");
        let mut profile =
            crate::stack::resolve(&f).ok_or_else(|| format!("unknown stack {stack:?}"))?;
        if host.hz == 0 || crate::time::SEC % host.hz != 0 {
            return Err(format!(
                "kernel HZ {} does not divide a second in ns",
                host.hz
            ));
        }
        profile.hz = host.hz;
        profile.jiffy_phase_ns = host.jiffy_phase_ns;
        let algo = crate::cc::build(cc, profile.cc_family)
            .ok_or_else(|| format!("congestion control {cc:?} not modelled for stack {stack:?}"))?;
        let mut sender = TcpSender::new(0, &f, Rc::new(profile), algo);
        if linux {
            // tcp_nagle_test() with tp->nonagle 0 (Nagle on), new data from Linux's skbs.
            sender.linux_drill = Some(Box::new(crate::tcp::sender::LinuxDrill {
                min_tso_segs: 2,
                ..Default::default()
            }));
        }
        if let Some(r) = handshake_rtt_ns {
            sender.take_rtt_sample(r);
        }
        let tso_packets = stack.starts_with("freebsd");
        // The sends (one per TSO pass) are what the FreeBSD targets put on the wire.
        sender.record_sends = tso_packets;
        let mut e = Endpoint {
            sender,
            next_id: 0,
            out: Vec::new(),
            sent: Vec::new(),
            peer,
            now,
            host: *host,
            probe0: None,
            tso_packets,
            skbs: linux.then(|| SkbQueue::new(win_bytes)),
            path: None,
            probe: Default::default(),
            chrono: Default::default(),
        };
        e.call(now, |s, now, out, id| s.start(now, out, id));
        Ok(e)
    }

    /// The application writes `bytes` at `now` (tcp_sendmsg(), then the stack's output).
    pub fn write(&mut self, now: Ns, bytes: u64) {
        self.sendmsg(now, bytes, false, false);
    }

    /// The application sends `bytes` at `now` with MSG_EOR: the record's end is an skb's end
    /// that no later write joins (tcp_sendmsg_locked(), TCP_SKB_CB(skb)->eor).
    pub fn write_eor(&mut self, now: Ns, bytes: u64) {
        self.sendmsg(now, bytes, true, false);
    }

    /// send(2) of `bytes` at `now`, with MSG_EOR (`eor`) and MSG_MORE (`more`: the linux
    /// stack holds a sub-MSS tail as corked and marks no PSH).
    pub fn send(&mut self, now: Ns, bytes: u64, eor: bool, more: bool) {
        self.sendmsg(now, bytes, eor, more);
    }

    /// A non-blocking write(2) of `bytes` at `now`: what the stack copies in (FreeBSD
    /// sosend_generic() copies while the buffer has space, and autosizing may grow it during the
    /// copy); the rest the application keeps. Returns the bytes copied.
    pub fn write_nonblocking(&mut self, now: Ns, bytes: u64) -> u64 {
        let asked_before = self.sender.app_written();
        self.write(now, bytes);
        let copied = self.sender.written.saturating_sub(asked_before).min(bytes);
        self.sender.app_unwrite(bytes - copied);
        copied
    }

    /// A segment arrives at `now`.
    pub fn on_segment(&mut self, now: Ns, seg: &Inbound) {
        self.advance(now);
        let mut p = Packet::new(0, Kind::Ack, 0, 0);
        p.ack = seg.ack;
        p.rwnd = seg.win << self.peer.wscale;
        p.ece = seg.ece;
        p.ts_ecr = seg.ts_ecr_ns.unwrap_or(0);
        p.size_bytes = IP_HDR + TCP_HDR;
        // Blocks the sender could not have sent, or below the ACK (a D-SACK), are not modelled.
        let blocks: Vec<(u64, u64)> = seg
            .sacks
            .iter()
            .copied()
            .filter(|&(s, e)| s >= seg.ack && e > s && e <= self.sender.snd_nxt)
            .take(crate::net::packet::MAX_SACK_BLOCKS)
            .collect();
        p.set_sack_blocks(&blocks);
        if self
            .skbs
            .as_mut()
            .is_some_and(|q| q.on_window(p.rwnd as u64))
        {
            self.max_window_grew();
        }
        let (una, nxt) = (self.sender.snd_una, self.sender.snd_nxt);
        let head_end = self.skbs.as_ref().and_then(|q| q.head_end());
        if self.path_rules_on_ack() {
            self.on_ack_path_rules(now, &p);
        } else {
            self.call(now, |s, now, out, id| s.on_ack(&p, now, out, id));
            if let Some(q) = self.skbs.as_mut() {
                q.on_acked(self.sender.snd_una);
            }
        }
        if self.skbs.is_some() {
            self.after_ack(now, una, nxt, head_end);
        }
    }

    /// The linux stack after an ACK: tcp_clean_rtx_queue() emptying the retransmit queue stops
    /// TCP_CHRONO_BUSY, tcp_ack_probe() for an ACK with nothing in flight, then
    /// tcp_data_snd_check()'s pass (`drill_chrono`, `drill_probe`). `una`, `nxt`, `head_end`:
    /// before the ACK.
    fn after_ack(&mut self, now: Ns, una: u64, nxt: u64, head_end: Option<u64>) {
        if nxt > una && self.sender.snd_una == self.sender.snd_nxt {
            self.chrono_stop(now, crate::drill_chrono::CHRONO_BUSY);
        }
        self.ack_probe(now, nxt == una, head_end);
        self.check_probe_timer(now);
        self.chrono_after_xmit(now, self.sender.app_written() > nxt);
    }

    /// An ACK with the MTU rules (`crate::drill_mtu`), in tcp_ack()'s order: a probe's success
    /// in tcp_clean_rtx_queue() before the congestion control, then tcp_data_snd_check()'s
    /// sends with tcp_current_mss() and tcp_write_xmit()'s probe first.
    fn on_ack_path_rules(&mut self, now: Ns, p: &Packet) {
        let probe_acked = self.probe_acked_before(p.ack);
        if let Some(d) = self.sender.linux_drill.as_deref_mut() {
            d.xmit_budget = Some(0);
        }
        self.call(now, |s, now, out, id| s.on_ack(p, now, out, id));
        if let Some(d) = self.sender.linux_drill.as_deref_mut() {
            d.xmit_budget = None;
        }
        if let Some(q) = self.skbs.as_mut() {
            q.on_acked(self.sender.snd_una);
        }
        if probe_acked {
            self.probe_success();
        }
        self.current_mss();
        self.push(now, None, None);
    }

    /// Fire every timer due up to `to`, then stand at `to`.
    pub fn advance(&mut self, to: Ns) {
        for _ in 0..MAX_FIRINGS {
            match (self.sender.timer_deadline(), self.probe0) {
                (_, Some(p)) if p <= to && self.sender.timer_deadline().is_none_or(|t| p <= t) => {
                    self.probe0_fires(p.max(self.now));
                }
                (Some(t), _) if t <= to => {
                    let t = t.max(self.now);
                    self.call(t, |s, now, out, id| s.on_timer(now, out, id));
                }
                _ => break,
            }
        }
        self.now = self.now.max(to);
    }

    /// The next timer's time.
    pub fn deadline(&self) -> Option<Ns> {
        match (self.sender.timer_deadline(), self.probe0) {
            (Some(t), Some(p)) => Some(t.min(p)),
            (t, p) => t.or(p),
        }
    }

    /// The segments sent since the last call.
    pub fn take_sent(&mut self) -> Vec<Outbound> {
        std::mem::take(&mut self.sent)
    }

    /// Bytes the application has written.
    pub fn written(&self) -> u64 {
        self.sender.app_written()
    }

    /// The sender (read-only: windows, scoreboard, RTT).
    pub fn sender(&self) -> &TcpSender {
        &self.sender
    }

    /// One call into the sender at `now`: the NIC is a TUN device that takes every packet at
    /// once (no backlog, so a small-queue throttle is released at once), its packets collected.
    pub(crate) fn call(
        &mut self,
        now: Ns,
        f: impl FnOnce(&mut TcpSender, Ns, &mut Vec<Packet>, &mut u64),
    ) {
        self.now = now;
        self.sender.nic_backlog = 0;
        // The linux stack cuts its pieces from the skbs (new_data_len()): lent for the call.
        if let Some(d) = self.sender.linux_drill.as_deref_mut() {
            d.skbs = self.skbs.take();
        }
        f(&mut self.sender, now, &mut self.out, &mut self.next_id);
        // A piece the call's last pass did not finish goes back to the send head.
        self.sender.begin_xmit_pass();
        if let Some(d) = self.sender.linux_drill.as_deref_mut() {
            self.skbs = d.skbs.take();
        }
        let first = self.sent.len();
        if self.out.iter().any(|p| p.kind == Kind::Data) {
            self.path_transmitted();
        }
        for p in self.out.drain(..) {
            if p.kind == Kind::Data {
                let o = Outbound {
                    t_ns: now,
                    seq: p.seq,
                    len: p.len,
                    retx: p.retx,
                    ecn: p.ecn,
                    cwr: p.cwr,
                    psh: false,
                };
                self.sent.push(o);
            }
        }
        if self.tso_packets {
            let merged = tso_packets(&self.sent[first..], &self.sender.sends);
            self.sent.truncate(first);
            self.sent.extend(merged);
        }
        let (cwnd, in_flight_end) = self.packets();
        let sent = (self.sent.len() - first) as u64;
        let max_segs = self.tso_segs();
        if let Some(q) = self.skbs.as_mut() {
            // In flight before the call's first segment: each segment it sent added one.
            let in_flight = in_flight_end.saturating_sub(sent);
            q.on_sent(&mut self.sent[first..], cwnd, in_flight, max_segs);
        }
        self.sender.sends.clear();
        self.sender.events.clear();
        if self.sender.tsq_throttled && self.sender.tsq_wake.is_none() {
            self.sender.tsq_wake = Some(now);
        }
        if self.skbs.is_some() {
            self.check_probe_timer(now);
        }
    }

    /// `struct tcp_info` as Linux's tcp_get_info() (net/ipv4/tcp.c) fills it, for the fields the
    /// model holds: windows in segments (snd_cwnd, snd_ssthresh), sacked_out/lost_out/
    /// retrans_out in segments, srtt_us >> 3 and mdev_us >> 2 in µs, icsk_rto in µs.
    pub fn tcp_info(&self) -> Vec<(&'static str, i64)> {
        let s = &self.sender;
        let mss = s.mss.max(1);
        let sb = s.scoreboard();
        // TCP_INFINITE_SSTHRESH (include/net/tcp.h) until the first reduction.
        let ssthresh = (s.v.win.ssthresh / mss).min(0x7fff_ffff);
        let ca_state = match s.v.ca_state {
            crate::cc::CaState::Open => 0,
            crate::cc::CaState::Disorder => 1,
            crate::cc::CaState::Cwr => 2,
            crate::cc::CaState::Recovery => 3,
            crate::cc::CaState::Loss => 4,
        };
        // icsk_backoff: the RTO's or the probe timer's (never both: probes run with nothing in
        // flight).
        let backoff = s.rtt.rxtshift.max(self.probe.backoff);
        let (busy_us, rwnd_limited_us, sndbuf_limited_us) = self.chrono_info();
        vec![
            // TCP_ESTABLISHED, TCP_CLOSE after tcp_write_err()
            ("tcpi_state", if self.probe.timed_out { 7 } else { 1 }),
            ("tcpi_ca_state", ca_state),
            ("tcpi_retransmits", s.rtt.rxtshift as i64),
            ("tcpi_probes", self.probe.probes_out as i64),
            ("tcpi_backoff", backoff as i64),
            ("tcpi_busy_time", busy_us),
            ("tcpi_rwnd_limited", rwnd_limited_us),
            ("tcpi_sndbuf_limited", sndbuf_limited_us),
            ("tcpi_rto", (s.rtt.rto_ns / 1000) as i64),
            ("tcpi_snd_mss", mss as i64),
            ("tcpi_unacked", (s.snd_nxt - s.snd_una).div_ceil(mss) as i64),
            // sacked_out; without SACK, the duplicate ACKs counted (tcp_add_reno_sack()).
            (
                "tcpi_sacked",
                (sb.sacked_bytes / mss + u64::from(sb.reno_sacked_segs)) as i64,
            ),
            ("tcpi_lost", (sb.lost_bytes / mss) as i64),
            ("tcpi_retrans", (sb.retrans_bytes / mss) as i64),
            ("tcpi_rtt", (s.rtt.srtt_ns / 1000) as i64),
            ("tcpi_rttvar", (s.rtt.rttvar_ns / 1000) as i64),
            ("tcpi_snd_ssthresh", ssthresh as i64),
            ("tcpi_snd_cwnd", (s.v.win.cwnd / mss) as i64),
            ("tcpi_total_retrans", s.retrans_segs as i64),
            ("tcpi_reordering", s.linux_reordering().unwrap_or(3) as i64),
            ("tcpi_min_rtt", (s.rtt.min_rtt_ns / 1000) as i64),
            ("tcpi_bytes_acked", s.snd_una as i64),
            ("tcpi_bytes_sent", s.bytes_sent as i64),
            ("tcpi_pacing_rate", s.linux_pacing_rate_bytes() as i64),
            (
                "tcpi_notsent_bytes",
                (s.app_written() - s.snd_nxt.min(s.app_written())) as i64,
            ),
        ]
    }

    /// The sender's windows and timers in their own units, for stacks whose tcp_info reports
    /// them unconverted (FreeBSD tcp_fill_info(): snd_cwnd and snd_ssthresh in bytes): cwnd,
    /// ssthresh, snd_wnd and snd_una in bytes; srtt, rttvar and the RTO in ns; the RTO's shift;
    /// segments retransmitted.
    pub fn raw_state(&self) -> Vec<(&'static str, i64)> {
        let s = &self.sender;
        vec![
            ("cwnd_bytes", s.v.win.cwnd.min(i64::MAX as u64) as i64),
            (
                "ssthresh_bytes",
                s.v.win.ssthresh.min(i64::MAX as u64) as i64,
            ),
            ("snd_wnd_bytes", s.snd_wnd as i64),
            ("snd_una", s.snd_una as i64),
            ("snd_nxt", s.snd_nxt as i64),
            ("srtt_ns", s.rtt.srtt_ns as i64),
            ("rttvar_ns", s.rtt.rttvar_ns as i64),
            ("rto_ns", s.rtt.rto_ns as i64),
            ("rxtshift", s.rtt.rxtshift as i64),
            ("retrans_segs", s.retrans_segs as i64),
        ]
    }

    /// Whether the connection is in fast recovery or after an RTO (for tests).
    pub fn in_recovery(&self) -> bool {
        self.sender.state != State::Open
    }
}

/// The segments one call sent as the packets the NIC was handed: contiguous segments of one send
/// (the sender's record of one TSO pass, `Send`) are one packet. FreeBSD's tcp_output() builds one
/// mbuf chain of `len` bytes per pass (`m->m_next = tcp_m_copym(mb, moff, &len, ...)`), which a
/// TSO NIC cuts into segments on the wire; with TSO off each pass is at most one segment.
fn tso_packets(segs: &[Outbound], sends: &[crate::tcp::sender::Send]) -> Vec<Outbound> {
    let mut out: Vec<Outbound> = Vec::with_capacity(segs.len());
    for &o in segs {
        if let Some(last) = out.last_mut() {
            let same_pass = sends.iter().any(|s| {
                s.retx == o.retx && s.seq <= last.seq && o.seq + o.len as u64 <= s.seq + s.bytes
            });
            if same_pass && last.retx == o.retx && last.seq + last.len as u64 == o.seq {
                last.len += o.len;
                last.cwr |= o.cwr;
                continue;
            }
        }
        out.push(o);
    }
    out
}

/// The flow a drill endpoint runs: established (the script's handshake already happened),
/// options as negotiated, an application that writes what the script writes.
fn flow_config(
    stack: &str,
    cc: &str,
    peer: &Peer,
    win_bytes: u64,
    extra_json: Option<&str>,
) -> Result<FlowConfig, String> {
    let mut v = serde_json::json!({
        "name": "drill", "src": 0, "dst": 1, "start_ns": 0, "stack": stack, "cc": cc,
        "mss": peer.mss, "timestamps": peer.timestamps, "sack": peer.sack, "iw_segments": 10,
        // Linux tcp_wmem[2] (4 MB): an autotuned buffer that does not bind a script's writes.
        "sndbuf_bytes": 4u64 << 20, "sndbuf_initial_bytes": 4u64 << 20,
        // The receive window the endpoint starts with is the peer's (snd_wnd below); rcvbuf
        // sizes only its own, unused, receiver.
        "rcvbuf_bytes": win_bytes.max(1), "rcv_scaling_ratio": 256,
        "write_bytes": 1, "app": {"kind": "bytes", "bytes": 0},
        "ecn": peer.ecn, "window_scaling": peer.wscale > 0,
        "peer": {"sack": peer.sack, "timestamps": peer.timestamps,
                 "window_scaling": peer.wscale > 0, "ecn": peer.ecn},
    });
    if let Some(extra) = extra_json {
        let extra: serde_json::Value =
            serde_json::from_str(extra).map_err(|e| format!("drill endpoint config: {e}"))?;
        let (Some(fields), Some(obj)) = (extra.as_object(), v.as_object_mut()) else {
            return Err("drill endpoint config: the extra fields are not an object".into());
        };
        for (k, x) in fields {
            obj.insert(k.clone(), x.clone());
        }
    }
    serde_json::from_value(v).map_err(|e| format!("drill endpoint config: {e}"))
}

/// The TS val an outbound segment carries: Linux's millisecond clock (tcp_time_stamp_ts()).
pub fn ts_val(t_ns: Ns) -> u64 {
    t_ns / MS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer() -> Peer {
        Peer {
            mss: 1000,
            sack: true,
            timestamps: false,
            wscale: 7,
            ecn: false,
        }
    }

    /// google/packetdrill slow-start-ack-per-1pkt: IW10, then two segments per ACK.
    #[test]
    fn slow_start_sends_iw_then_two_per_ack() {
        let mut e =
            Endpoint::new("linux", "cubic", peer(), 200 * MS, Some(100 * MS), 257 << 7).unwrap();
        e.write(200 * MS, 30_000);
        let first = e.take_sent();
        assert_eq!(first.len(), 10);
        assert_eq!(
            (first[0].seq, first[9].seq + first[9].len as u64),
            (0, 10_000)
        );
        let info: std::collections::HashMap<_, _> = e.tcp_info().into_iter().collect();
        assert_eq!(info["tcpi_snd_cwnd"], 10);
        assert_eq!(info["tcpi_rtt"], 100_000);
        e.on_segment(
            305 * MS,
            &Inbound {
                ack: 1000,
                win: 257,
                ..Default::default()
            },
        );
        let next = e.take_sent();
        assert_eq!(next.iter().map(|o| o.len as u64).sum::<u64>(), 2000);
        assert_eq!(next[0].seq, 10_000);
        assert!(next.iter().all(|o| o.t_ns == 305 * MS && !o.retx));
        // A whole 2-segment skb: PSH on its last segment (Linux 6.18 sends `P. 10001:12001`).
        assert_eq!(
            next.iter().map(|o| o.psh).collect::<Vec<_>>(),
            [false, true]
        );
    }

    /// Three SACKed segments above a hole: fast retransmit of the hole (RFC 6675 / RACK).
    #[test]
    fn sack_of_three_retransmits_the_hole() {
        let mut e = Endpoint::new("linux", "cubic", peer(), 0, Some(100 * MS), 257 << 7).unwrap();
        e.write(0, 4000);
        assert_eq!(e.take_sent().len(), 4);
        let sack = |end| Inbound {
            ack: 0,
            win: 257,
            sacks: vec![(1000, end)],
            ..Default::default()
        };
        e.on_segment(100 * MS, &sack(2000));
        e.on_segment(100 * MS, &sack(3000));
        e.on_segment(100 * MS, &sack(4000));
        let rtx = e.take_sent();
        assert_eq!(
            rtx.first().map(|o| (o.seq, o.len, o.retx)),
            Some((0, 1000, true))
        );
        assert!(e.in_recovery());
    }

    /// With nothing acknowledged the RTO fires (virtual time), retransmitting the head.
    #[test]
    fn rto_fires_when_time_advances() {
        let mut e = Endpoint::new("linux", "cubic", peer(), 0, Some(100 * MS), 257 << 7).unwrap();
        e.write(0, 1000);
        e.take_sent();
        let t = e.deadline().expect("RTO armed");
        e.advance(t);
        let rtx = e.take_sent();
        assert_eq!(
            rtx.first().map(|o| (o.seq, o.retx, o.t_ns)),
            Some((0, true, t))
        );
    }

    fn cwnd(e: &Endpoint) -> i64 {
        e.tcp_info()
            .into_iter()
            .find(|(k, _)| *k == "tcpi_snd_cwnd")
            .unwrap()
            .1
    }

    fn ack(e: &mut Endpoint, t: Ns, ack: u64, sacks: Vec<(u64, u64)>) {
        let seg = Inbound {
            ack,
            win: 257,
            sacks,
            ..Default::default()
        };
        e.on_segment(t, &seg);
    }

    /// tcp_is_cwnd_limited(): an application-limited slow start (9 of IW10 sent, never cwnd-
    /// limited) grows cwnd to twice max_packets_out, 18, and no further; a full IW10 send is
    /// cwnd-limited for its whole window: 10 + 10 acked = 20.
    #[test]
    fn app_limited_slow_start_grows_to_twice_packets_out() {
        for (segs, want) in [(9u64, [12, 14, 16, 18, 18]), (10, [12, 14, 16, 18, 20])] {
            let mut e =
                Endpoint::new("linux", "cubic", peer(), 0, Some(100 * MS), 257 << 7).unwrap();
            e.write(0, segs * 1000);
            let mut got = Vec::new();
            for (i, una) in [2000, 4000, 6000, 8000, segs * 1000]
                .into_iter()
                .enumerate()
            {
                ack(&mut e, (105 + 5 * i as u64) * MS, una, vec![]);
                got.push(cwnd(&e));
            }
            assert_eq!(got, want, "{segs} segments");
        }
    }

    /// Limited transmit, then the hole filled: the ACK that acknowledges 3 segments, two of them
    /// SACKed before, delivers one packet, so slow start adds one (10 -> 11), not three.
    #[test]
    fn growth_counts_sacked_segments_once() {
        let mut e = Endpoint::new("linux", "cubic", peer(), 0, Some(100 * MS), 257 << 7).unwrap();
        e.write(0, 15_000);
        assert_eq!(e.take_sent().len(), 10);
        ack(&mut e, 110 * MS, 0, vec![(1000, 2000)]);
        ack(&mut e, 120 * MS, 0, vec![(1000, 3000)]);
        assert_eq!(cwnd(&e), 10);
        assert_eq!(e.take_sent().len(), 2); // one new segment per dupack
        ack(&mut e, 130 * MS, 3000, vec![]);
        assert_eq!(cwnd(&e), 11);
        // 12 sent, 3 acked: 9 in flight, room for 2.
        assert_eq!(e.take_sent().len(), 2);
    }

    /// tcp_check_sack_reordering(): a SACK of bytes 3000-4000 below the highest SACKed end 8000
    /// is reordering of 8000 - 3000 = 5000 bytes, 5 packets (more than the initial 3).
    #[test]
    fn reordering_is_the_distance_below_the_highest_sack() {
        let mut e = Endpoint::new("linux", "cubic", peer(), 0, Some(100 * MS), 257 << 7).unwrap();
        e.write(0, 10_000);
        let reordering = |e: &Endpoint| {
            let info: std::collections::HashMap<_, _> = e.tcp_info().into_iter().collect();
            info["tcpi_reordering"]
        };
        ack(&mut e, 100 * MS, 0, vec![(7000, 8000)]);
        assert_eq!(reordering(&e), 3);
        ack(&mut e, 102 * MS, 0, vec![(3000, 4000), (7000, 8000)]);
        assert_eq!(reordering(&e), 5);
    }

    /// MSG_EOR: 10 400 bytes written (10 segments of 1000 go, 400 wait), a 400-byte record, then
    /// 1000 more bytes. Once the window opens, the first write's 400 and the record leave as one
    /// 800-byte segment (a record joins a tail without eor, as tcp_sendmsg_locked() appends), and
    /// the data after the record's end starts a new segment: 800 + 1000, not 1000 + 800.
    #[test]
    fn no_segment_spans_a_record_end() {
        let mut e = Endpoint::new("linux", "cubic", peer(), 0, Some(100 * MS), 257 << 7).unwrap();
        e.write(0, 10_400);
        e.write_eor(0, 400);
        e.write(0, 1000);
        assert_eq!(e.take_sent().len(), 10);
        ack(&mut e, 100 * MS, 10_000, vec![]);
        let sent: Vec<(u64, u32)> = e.take_sent().iter().map(|o| (o.seq, o.len)).collect();
        assert_eq!(sent, [(10_000, 800), (10_800, 1000)]);
    }

    #[test]
    fn unknown_stack_is_an_error() {
        assert!(Endpoint::new("plan9", "cubic", peer(), 0, None, 1000).is_err());
    }
}

//! Linux's receiving half of a drill endpoint (`tcplab drill`'s linux target): data segments in,
//! the ACKs out (cumulative ACK, the advertised window, SACK and D-SACK blocks; at once, delayed
//! or compressed), the receive buffer's accounting, the application's reads. Read at
//! torvalds/linux v6.18: net/ipv4/tcp_input.c tcp_data_queue(), tcp_data_queue_ofo(),
//! tcp_ofo_queue(), tcp_sack_new_ofo_skb(), tcp_event_data_recv(), tcp_measure_rcv_mss(),
//! tcp_grow_window(), tcp_rcvbuf_grow(), tcp_try_rmem_schedule(), tcp_clamp_window(),
//! __tcp_ack_snd_check(), tcp_init_buffer_space(); tcp_output.c tcp_select_initial_window(),
//! tcp_select_window(), __tcp_select_window(), tcp_send_delayed_ack(), tcp_event_data_sent();
//! tcp.c __tcp_cleanup_rbuf(); include/net/tcp.h tcp_win_from_space(), tcp_space(). Sequence
//! numbers are the peer's as the script writes them (no wraparound). Not on the simulation's
//! path: the simulator's receiver is `tcp/receiver.rs`.

use crate::drill_linux_win::{win_from_space, Window};
use crate::time::{linux_timer_fire_ns, Ns};

/// TCP_NUM_SACKS: SACK blocks a Linux receiver keeps.
const TCP_NUM_SACKS: usize = 4;
/// TCP_MAX_QUICKACKS.
const TCP_MAX_QUICKACKS: u32 = 16;
/// TCP_MIN_RCVMSS, TCP_MIN_MSS.
const TCP_MIN_RCVMSS: u64 = 536;
const TCP_MIN_MSS: u64 = 88;
/// tcp_comp_sack_nr (default 44), TCP_FASTRETRANS_THRESH, tcp_comp_sack_delay_ns (1 ms).
const COMP_SACK_NR: u32 = 44;
const FASTRETRANS_THRESH: u32 = 3;
const COMP_SACK_DELAY_NS: Ns = 1_000_000;
/// icsk_ack.pending bits (include/net/inet_connection_sock.h).
const ACK_SCHED: u8 = 1;
const ACK_PUSHED: u8 = 4;
const ACK_PUSHED2: u8 = 8;
const ACK_NOW: u8 = 16;
const ACK_NOMEM: u8 = 32;

/// The socket's receive settings when the connection is set up.
#[derive(Clone, Copy, Debug)]
pub struct LinuxRxConfig {
    /// sk_rcvbuf: tcp_rmem[1], or twice SO_RCVBUF (sk_setsockopt()).
    pub rcvbuf: u64,
    /// SOCK_RCVBUF_LOCK: SO_RCVBUF was set (no autotuning, the window clamp is the buffer).
    pub rcvbuf_locked: bool,
    /// tcp_rmem[2].
    pub rmem_max: u64,
    /// net.core.rmem_max.
    pub core_rmem_max: u64,
    /// tp->advmss.
    pub advmss: u64,
    /// The MSS tcp_select_initial_window() rounds the window to (advmss less the TS option).
    pub window_mss: u64,
    /// Window scaling offered (and, once set up, agreed).
    pub wscale_ok: bool,
    /// SACK on this connection.
    pub sack: bool,
    /// net.ipv4.tcp_dsack.
    pub dsack: bool,
    /// The kernel's HZ (the delayed-ACK timer runs in jiffies).
    pub hz: u64,
    /// How long after a tick script time 0 is.
    pub phase_ns: Ns,
}

/// One ACK (or the ACK fields of a data segment): th_ack, th_win (scaled), SACK blocks (a
/// D-SACK block first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AckOut {
    /// When it leaves.
    pub t_ns: Ns,
    /// th_ack (rcv_nxt).
    pub ack: u64,
    /// th_win: the window >> rcv_wscale.
    pub win: u32,
    /// SACK blocks in option order.
    pub sacks: Vec<(u64, u64)>,
}

/// One inbound segment as the receiver sees it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Segment {
    /// First sequence number.
    pub seq: u64,
    /// Payload bytes.
    pub len: u64,
    /// skb_shinfo(skb)->gso_size (0: not GSO).
    pub gso_size: u64,
    /// skb->truesize (the device's; the drill target's TUN device).
    pub truesize: u64,
    /// TCP header length (20 + options).
    pub header_len: u64,
    /// FIN flag.
    pub fin: bool,
    /// PSH flag.
    pub psh: bool,
}

/// The receiving half.
pub struct LinuxReceiver {
    cfg: LinuxRxConfig,
    w: Window,
    rcv_nxt: u64,
    copied_seq: u64,
    rcvq_space: u64,
    /// The out-of-order queue: (seq, end, truesize, fin) in sequence order.
    ofo: Vec<(u64, u64, u64, bool)>,
    sacks: Vec<(u64, u64)>,
    dsack: Option<(u64, u64)>,
    rmem_alloc: u64,
    /// The receive queue's skbs not yet read: (end, truesize).
    rq: Vec<(u64, u64)>,
    fin_rcvd: bool,
    /// sk->sk_socket: accept() returned it (rcvbuf grows only then).
    accepted: bool,
    rcv_mss: u64,
    /// tp->tcp_header_len: 20, 32 with timestamps.
    tcp_header_len: u64,
    last_seg_size: u64,
    quick: u32,
    ato_j: u64,
    lrcvtime_j: u64,
    pingpong: bool,
    pending: u8,
    delack_at: Option<Ns>,
    comp_at: Option<Ns>,
    compressed_ack: u32,
    dup_ack_counter: u32,
    compressed_ack_rcv_nxt: u64,
    rto_j: u64,
    srtt_us: u64,
    /// rcv_rtt_est.rtt_us (not measured by the model: 0).
    rcv_rtt_us: u64,
    out: Vec<AckOut>,
    ooopack: u64,
    bytes_received: u64,
}

impl LinuxReceiver {
    /// The listener's half before the handshake: tcp_select_initial_window() for `cfg`.
    pub fn new(cfg: LinuxRxConfig) -> Self {
        let w = Window::initial(&cfg);
        LinuxReceiver {
            cfg,
            w,
            rcv_nxt: 1,
            copied_seq: 1,
            rcvq_space: 0,
            ofo: Vec::new(),
            sacks: Vec::new(),
            dsack: None,
            rmem_alloc: 0,
            rq: Vec::new(),
            fin_rcvd: false,
            accepted: false,
            rcv_mss: TCP_MIN_RCVMSS,
            tcp_header_len: 20,
            last_seg_size: 0,
            quick: 0,
            ato_j: 0,
            lrcvtime_j: 0,
            pingpong: false,
            pending: 0,
            delack_at: None,
            comp_at: None,
            compressed_ack: 0,
            dup_ack_counter: 0,
            compressed_ack_rcv_nxt: 0,
            rto_j: 0,
            srtt_us: 0,
            rcv_rtt_us: 0,
            out: Vec::new(),
            ooopack: 0,
            bytes_received: 0,
        }
    }

    /// The window scale this end offers (tcp_select_initial_window()).
    pub fn rcv_wscale(&self) -> u32 {
        self.w.wscale
    }

    /// The SYN's or SYN-ACK's window field: never scaled (`min(rcv_wnd, 65535)`).
    pub fn syn_window(&self) -> u32 {
        self.w.rcv_wnd.min(65_535) as u32
    }

    /// The connection is set up: the peer's MSS (`mss_cache`), whether it scales windows
    /// (else rcv_wscale is 0) and whether timestamps are on (tp->tcp_header_len).
    /// tcp_init_buffer_space() and tcp_initialize_rcv_mss().
    pub fn established(&mut self, mss_cache: u64, peer_wscale: bool, timestamps: bool) {
        self.tcp_header_len = if timestamps { 32 } else { 20 };
        if !peer_wscale {
            self.w.wscale = 0;
        }
        let advmss = self.cfg.advmss;
        let maxwin = self.w.full_space(self.cfg.rcvbuf);
        if self.w.window_clamp >= maxwin {
            // tcp_app_win 31: max(maxwin - (maxwin >> 31), 4 * advmss) is maxwin here.
            self.w.window_clamp = if maxwin > 4 * advmss {
                maxwin.max(4 * advmss)
            } else {
                maxwin
            };
        }
        // "Force reservation of one segment."
        if self.w.window_clamp > 2 * advmss && self.w.window_clamp + advmss > maxwin {
            self.w.window_clamp = (2 * advmss).max(maxwin.saturating_sub(advmss));
        }
        self.w.rcv_ssthresh = self.w.rcv_ssthresh.min(self.w.window_clamp);
        self.rcvq_space = self.w.rcv_ssthresh.min(self.w.rcv_wnd).min(10 * advmss);
        let hint = advmss
            .min(mss_cache)
            .min(self.w.rcv_wnd / 2)
            .min(TCP_MIN_RCVMSS);
        self.rcv_mss = hint.max(TCP_MIN_MSS);
    }

    /// accept() returned the socket (sk->sk_socket is set).
    pub fn accept(&mut self) {
        self.accepted = true;
    }

    /// The sender's srtt (µs) and RTO (jiffies), for the delayed and compressed ACK timers.
    pub fn set_rtt(&mut self, srtt_us: u64, rto_j: u64) {
        self.srtt_us = srtt_us;
        self.rto_j = rto_j;
    }

    fn jiffies(&self, t: Ns) -> u64 {
        (t + self.cfg.phase_ns) * self.cfg.hz / 1_000_000_000
    }

    /// tcp_space(): the window the unused part of the buffer holds (negative: over).
    fn space(&self) -> i64 {
        win_from_space(self.w.ratio, self.w.rcvbuf as i64 - self.rmem_alloc as i64)
    }

    /// tcp_receive_window(): what is left of the window last advertised.
    pub fn receive_window(&self) -> u64 {
        (self.w.rcv_wup + self.w.rcv_wnd).saturating_sub(self.rcv_nxt)
    }

    /// A segment arrives at `now` (its ACK already processed by the sender):
    /// tcp_rcv_established()'s sequence check and tcp_data_queue(). The ACK decision is
    /// [`Self::ack_check`]'s, after the sender has sent what the ACK let it.
    pub fn segment(&mut self, now: Ns, s: &Segment) {
        if s.len == 0 && !s.fin {
            return;
        }
        let end = s.seq + s.len + u64::from(s.fin);
        // tcp_sequence(): before rcv_wup or beyond the window: tcp_send_dupack().
        if end < self.w.rcv_wup || s.seq > self.rcv_nxt + self.receive_window() {
            self.send_dupack(now, s.seq, end);
            return;
        }
        if s.seq == self.rcv_nxt {
            if self.receive_window() == 0 && !(s.len == 0 && s.fin) {
                // "Some stacks are known to send bare FIN packets in a loop even if we send
                // RWIN 0 in our ACK": only a bare FIN goes on to be queued.
                self.out_of_window();
                return;
            }
            self.queue_in_order(now, s, s.seq);
            return;
        }
        if end <= self.rcv_nxt {
            // "A retransmit, 2nd most common case. Force an immediate ack."
            self.dsack_set(s.seq, end);
            self.out_of_window();
            return;
        }
        if s.seq >= self.rcv_nxt + self.receive_window() {
            self.out_of_window();
            return;
        }
        if s.seq < self.rcv_nxt {
            // "Partial packet, seq < rcv_next < end_seq"
            self.dsack_set(s.seq, self.rcv_nxt);
            if self.receive_window() == 0 {
                self.out_of_window();
                return;
            }
            self.queue_in_order(now, s, self.rcv_nxt);
            return;
        }
        self.data_queue_ofo(s);
    }

    fn out_of_window(&mut self) {
        self.enter_quickack_mode();
        self.pending |= ACK_SCHED;
    }

    /// tcp_send_dupack(): a D-SACK for data below rcv_nxt, quick ACK mode, an ACK now.
    fn send_dupack(&mut self, now: Ns, seq: u64, end: u64) {
        if end != seq && seq < self.rcv_nxt {
            self.enter_quickack_mode();
            self.dsack_set(seq, end.min(self.rcv_nxt));
        }
        self.send_ack(now);
    }

    /// tcp_dsack_set(): with SACK and tcp_dsack.
    fn dsack_set(&mut self, seq: u64, end: u64) {
        if self.cfg.sack && self.cfg.dsack {
            self.dsack = Some((seq, end));
        }
    }

    /// queue_and_out: tcp_try_rmem_schedule(), tcp_queue_rcv(), tcp_event_data_recv(),
    /// tcp_fin(), tcp_ofo_queue(), tcp_sack_remove(). `from`: the first new byte.
    fn queue_in_order(&mut self, now: Ns, s: &Segment, from: u64) {
        if !self.try_rmem_schedule(s) {
            self.pending |= ACK_NOMEM | ACK_NOW | ACK_SCHED;
            if self.copied_seq < self.rcv_nxt && s.len > 0 {
                return; // "skb_queue_len(&sk->sk_receive_queue) && skb->len": dropped
            }
        }
        self.rcv_nxt = s.seq + s.len;
        self.bytes_received += s.seq + s.len - from;
        self.rmem_alloc += s.truesize;
        self.rq.push((self.rcv_nxt, s.truesize));
        if s.len > 0 {
            self.event_data_recv(now, s);
        }
        if s.fin {
            self.fin(now);
        }
        if !self.ofo.is_empty() {
            self.ofo_queue(now);
            // RFC 5681 4.2: "SHOULD send immediate ACK, when gap in queue is filled".
            if self.ofo.is_empty() {
                self.pending |= ACK_NOW;
            }
        }
        if !self.sacks.is_empty() {
            self.sack_remove();
        }
    }

    /// tcp_fin() in ESTABLISHED: RCV_SHUTDOWN, CLOSE_WAIT and pingpong mode; the out-of-order
    /// queue and the SACK list are purged.
    fn fin(&mut self, _now: Ns) {
        self.pending |= ACK_SCHED;
        self.rcv_nxt += 1;
        self.fin_rcvd = true;
        self.pingpong = true;
        self.ofo.clear();
        self.sacks.clear();
    }

    /// tcp_ofo_queue(): the queue's head segments that rcv_nxt reached join the receive queue.
    fn ofo_queue(&mut self, now: Ns) {
        while let Some(&(seq, end, truesize, fin)) = self.ofo.first() {
            if seq > self.rcv_nxt {
                break;
            }
            self.ofo.remove(0);
            if end <= self.rcv_nxt {
                self.rmem_alloc -= truesize; // "ofo packet … dropped"
                continue;
            }
            if seq < self.rcv_nxt {
                self.dsack = self.dsack.or(Some((seq, self.rcv_nxt)));
            }
            self.bytes_received += end - self.rcv_nxt;
            self.rcv_nxt = end;
            self.rq.push((end, truesize));
            if fin {
                self.fin(now);
                break;
            }
        }
    }

    /// tcp_sack_remove(): blocks rcv_nxt covers go; none left when the queue is empty.
    fn sack_remove(&mut self) {
        if self.ofo.is_empty() {
            self.sacks.clear();
            return;
        }
        let nxt = self.rcv_nxt;
        self.sacks.retain(|&(s, _)| s > nxt);
    }

    /// tcp_try_rmem_schedule() with tcp_can_ingest() (`rmem_alloc + skb->len <= sk_rcvbuf`);
    /// when it cannot, tcp_prune_queue()'s tcp_clamp_window() (collapsing frees nothing the
    /// model counts). False: the skb does not fit.
    fn try_rmem_schedule(&mut self, s: &Segment) -> bool {
        if self.rmem_alloc + s.len <= self.w.rcvbuf {
            return true;
        }
        self.quick = 0;
        if self.w.rcvbuf < self.cfg.rmem_max && !self.cfg.rcvbuf_locked {
            self.w.rcvbuf = self.rmem_alloc.min(self.cfg.rmem_max);
        }
        if self.rmem_alloc > self.w.rcvbuf {
            self.w.rcv_ssthresh = self.w.window_clamp.min(2 * self.cfg.advmss);
        }
        self.rmem_alloc + s.len <= self.w.rcvbuf
    }

    /// tcp_data_queue_ofo(): queued (coalesced with its neighbours), a SACK block, the window
    /// grown, and the buffer grown once the socket is accepted.
    fn data_queue_ofo(&mut self, s: &Segment) {
        if !self.try_rmem_schedule(s) {
            return; // TCPOFODROP
        }
        self.pending |= ACK_SCHED;
        self.ooopack += (s.len / s.gso_size.max(1)).max(1);
        let end = s.seq + s.len;
        if self.ofo.iter().any(|&(q, e, _, _)| q <= s.seq && end <= e) {
            // "All the bits are present. Drop." with a D-SACK of them (tcp_dsack_set()).
            self.dsack_set(s.seq, end);
            return;
        }
        // Since v6.16 an out-of-order skb updates rcv_mss (and the scaling ratio).
        self.measure_rcv_mss(s);
        let pos = self.ofo.partition_point(|&(q, _, _, _)| q < s.seq);
        self.ofo.insert(pos, (s.seq, end, s.truesize, s.fin));
        if self.cfg.sack {
            self.sack_new_ofo_skb(s.seq, end);
            self.grow_window(s);
        }
        self.rmem_alloc += s.truesize;
        // "do not grow rcvbuf for not-yet-accepted or orphaned sockets."
        if self.accepted {
            self.rcvbuf_grow(self.rcvq_space);
        }
    }

    /// tcp_sack_new_ofo_skb(): an adjacent block is extended and moved to the front (and
    /// coalesced with the others), else a new one goes first, the oldest dropped beyond four.
    fn sack_new_ofo_skb(&mut self, seq: u64, end: u64) {
        if let Some(i) = self.sacks.iter().position(|&(s, e)| seq <= e && s <= end) {
            let b = self.sacks.remove(i);
            self.sacks.insert(0, (b.0.min(seq), b.1.max(end)));
            // tcp_sack_maybe_coalesce(): the others block 0 now reaches merge into it.
            let mut j = 1;
            while j < self.sacks.len() {
                let (s, e) = self.sacks[j];
                let h = self.sacks[0];
                if s <= h.1 && h.0 <= e {
                    self.sacks[0] = (h.0.min(s), h.1.max(e));
                    self.sacks.remove(j);
                } else {
                    j += 1;
                }
            }
            return;
        }
        self.sacks.insert(0, (seq, end));
        self.sacks.truncate(TCP_NUM_SACKS);
    }
}

#[path = "drill_linux_rx_ack.rs"]
mod ack;
#[cfg(test)]
#[path = "drill_linux_rx_tests.rs"]
mod tests;

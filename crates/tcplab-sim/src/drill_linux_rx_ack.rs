//! When Linux's receiving half ACKs, and with what (`drill_linux_rx`): the delayed-ACK engine
//! (tcp_event_data_recv(), tcp_incr_quickack(), tcp_send_delayed_ack(), the delack timer),
//! __tcp_ack_snd_check() with SACK compression, the window growth an skb earns
//! (tcp_measure_rcv_mss(), tcp_grow_window()), an ACK's fields (tcp_select_window(),
//! tcp_established_options()) and the application's reads (__tcp_cleanup_rbuf()); v6.18.

use super::*;

impl LinuxReceiver {
    /// tcp_incr_quickack(): quick ACKs for half the window in rcv_mss, at least 2.
    fn incr_quickack(&mut self, max: u32) {
        let q = (self.w.rcv_wnd / (2 * self.rcv_mss)) as u32;
        let q = if q == 0 { 2 } else { q }.min(max);
        if q > self.quick {
            self.quick = q;
        }
    }

    /// tcp_enter_quickack_mode(): quick ACKs, out of pingpong, ato TCP_ATO_MIN.
    pub(super) fn enter_quickack_mode(&mut self) {
        self.incr_quickack(TCP_MAX_QUICKACKS);
        self.pingpong = false;
        self.ato_j = self.ato_min_j();
    }

    /// TCP_ATO_MIN (HZ / 25), TCP_DELACK_MAX (HZ / 5), TCP_DELACK_MIN (HZ / 25).
    fn ato_min_j(&self) -> u64 {
        (self.cfg.hz / 25).max(1)
    }

    /// tcp_event_data_recv(): the first data starts quick ACKs; later ato follows the
    /// inter-arrival time; the window grows for skbs of 128 bytes or more.
    pub(super) fn event_data_recv(&mut self, now: Ns, s: &Segment) {
        self.pending |= ACK_SCHED;
        self.measure_rcv_mss(s);
        let now_j = self.jiffies(now);
        let ato_min = self.ato_min_j();
        if self.ato_j == 0 {
            self.incr_quickack(TCP_MAX_QUICKACKS);
            self.ato_j = ato_min;
        } else {
            let m = now_j - self.lrcvtime_j;
            if m <= ato_min / 2 {
                self.ato_j = (self.ato_j >> 1) + ato_min / 2;
            } else if m < self.ato_j {
                self.ato_j = ((self.ato_j >> 1) + m).min(self.rto_j.max(1));
            } else if m > self.rto_j {
                self.incr_quickack(TCP_MAX_QUICKACKS);
            }
        }
        self.lrcvtime_j = now_j;
        if s.len >= 128 {
            self.grow_window(s);
        }
    }

    /// tcp_measure_rcv_mss(): rcv_mss from a full segment (the GSO size), the scaling ratio
    /// from its len/truesize when rcv_mss changes (the clamp follows the buffer's window); a
    /// shorter one marks ICSK_ACK_PUSHED (PUSHED2 the second time).
    pub(super) fn measure_rcv_mss(&mut self, s: &Segment) {
        let lss = std::mem::take(&mut self.last_seg_size);
        let len = if s.gso_size > 0 { s.gso_size } else { s.len };
        if len >= self.rcv_mss {
            if len != self.rcv_mss && s.truesize > 0 {
                let ratio = ((s.len << RMEM_TO_WIN) / s.truesize).max(1);
                if ratio != self.w.ratio {
                    self.w.ratio = ratio;
                    let clamp = win_from_space(ratio, self.w.rcvbuf as i64).max(0) as u64;
                    self.w.set_clamp(clamp);
                    self.rcvq_space = self.rcvq_space.min(self.w.window_clamp);
                }
            }
            self.rcv_mss = len.min(self.cfg.advmss);
            return;
        }
        let hlen = len + s.header_len;
        if hlen >= TCP_MIN_RCVMSS + 20 || (hlen >= TCP_MIN_MSS + 20 && !(s.psh || s.fin)) {
            let l = hlen - self.tcp_header_len;
            self.last_seg_size = l;
            if l == lss {
                self.rcv_mss = l;
                return;
            }
        }
        if self.pending & ACK_PUSHED != 0 {
            self.pending |= ACK_PUSHED2;
        }
        self.pending |= ACK_PUSHED;
    }

    /// tcp_grow_window(): rcv_ssthresh grows towards min(clamp, tcp_space()) by at least twice
    /// the skb's length when its overhead would fit the buffer (check #2, __tcp_grow_window()).
    pub(super) fn grow_window(&mut self, s: &Segment) {
        let room = (self.w.window_clamp as i64).min(self.space()) - self.w.rcv_ssthresh as i64;
        if room <= 0 {
            return;
        }
        let ratio = self.w.ratio;
        let incr = if win_from_space(ratio, s.truesize as i64) <= s.len as i64 {
            2 * self.cfg.advmss
        } else {
            let mut truesize = win_from_space(ratio, s.truesize as i64) >> 1;
            let mut window = win_from_space(ratio, self.cfg.rmem_max as i64) >> 1;
            let mut incr = 0;
            while self.w.rcv_ssthresh as i64 <= window {
                if truesize <= s.len as i64 {
                    incr = 2 * self.rcv_mss;
                    break;
                }
                truesize >>= 1;
                window >>= 1;
            }
            incr
        };
        if incr > 0 {
            let incr = incr.max(2 * s.len);
            self.w.rcv_ssthresh += (room as u64).min(incr);
            self.quick |= 1;
        }
    }

    /// tcp_rcvbuf_grow() from the out-of-order path (newval = rcvq_space.space).
    pub(super) fn rcvbuf_grow(&mut self, space: u64) {
        let span = self.ofo.last().map_or(0, |&(_, e, _, _)| e - self.rcv_nxt);
        let (max, locked) = (self.cfg.rmem_max, self.cfg.rcvbuf_locked);
        self.w.rcvbuf_grow(space, span, max, locked);
    }

    fn quickack_mode(&self) -> bool {
        self.quick > 0 && !self.pingpong
    }

    /// __tcp_ack_snd_check(), when an ACK is scheduled: at once for more than one rcv_mss
    /// unacknowledged with the window's right edge moving, in quick ACK mode, or ICSK_ACK_NOW;
    /// delayed when nothing is out of order; else SACK compression after three dupacks.
    pub fn ack_check(&mut self, now: Ns) {
        if self.pending & ACK_SCHED == 0 {
            return;
        }
        let mut q = false;
        let win_now = self.w.select(self.space(), self.rcv_mss, &mut q);
        if (self.rcv_nxt - self.w.rcv_wup > self.rcv_mss && win_now >= self.w.rcv_wnd)
            || self.quickack_mode()
            || self.pending & ACK_NOW != 0
        {
            self.send_ack(now);
            return;
        }
        if self.ofo.is_empty() {
            self.send_delayed_ack(now);
            return;
        }
        if !self.cfg.sack || self.compressed_ack >= COMP_SACK_NR {
            self.send_ack(now);
            return;
        }
        if self.compressed_ack_rcv_nxt != self.rcv_nxt {
            self.compressed_ack_rcv_nxt = self.rcv_nxt;
            self.dup_ack_counter = 0;
        }
        if self.dup_ack_counter < FASTRETRANS_THRESH {
            self.dup_ack_counter += 1;
            self.send_ack(now);
            return;
        }
        self.compressed_ack += 1;
        if self.comp_at.is_none() {
            // "compress ack timer : 5 % of rtt, but no more than tcp_comp_sack_delay_ns", the
            // RTT being the receiver's estimate (rcv_rtt_est, min'd with srtt): not modelled,
            // so 0 as before the first estimate; the hrtimer's 100 µs slack is not modelled.
            let delay = (self.rcv_rtt_us * 1000 / 20).min(COMP_SACK_DELAY_NS);
            self.comp_at = Some(now + delay);
        }
    }

    /// tcp_send_delayed_ack(): ato, bounded by the RTT (and 200 ms in pingpong or after a
    /// short segment, else HZ / 2), on the timer wheel.
    fn send_delayed_ack(&mut self, now: Ns) {
        let mut ato = self.ato_j;
        let min = self.ato_min_j();
        if ato > min {
            let mut max_ato = self.cfg.hz / 2;
            if self.pingpong || self.pending & ACK_PUSHED != 0 {
                max_ato = self.cfg.hz / 5;
            }
            if self.srtt_us > 0 {
                let rtt = (self.srtt_us * self.cfg.hz).div_ceil(1_000_000).max(min);
                max_ato = max_ato.min(rtt);
            }
            ato = ato.min(max_ato);
        }
        ato = ato.min(self.cfg.hz / 5);
        let jiffy = 1_000_000_000 / self.cfg.hz;
        let at = linux_timer_fire_ns(now, ato * jiffy, self.cfg.hz, self.cfg.phase_ns);
        // "If delack timer is about to expire, send ACK now."
        match self.delack_at {
            Some(t) if t <= at => {}
            _ => self.delack_at = Some(at),
        }
    }

    /// When a timer of the receiver fires next.
    pub fn deadline(&self) -> Option<Ns> {
        match (self.delack_at, self.comp_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The timers due by `now`: the delack timer (ato doubled, or pingpong left) and the
    /// compressed-SACK timer, each sending its ACK.
    pub fn advance(&mut self, now: Ns) {
        if let Some(t) = self.comp_at.filter(|&t| t <= now) {
            self.comp_at = None;
            if self.compressed_ack > 0 {
                self.send_ack(t);
            }
        }
        if let Some(t) = self.delack_at.filter(|&t| t <= now) {
            self.delack_at = None;
            if self.pending & ACK_SCHED != 0 {
                if !self.pingpong {
                    self.ato_j = (self.ato_j << 1).min(self.rto_j.max(1));
                } else {
                    self.pingpong = false;
                    self.ato_j = self.ato_min_j();
                }
                self.send_ack(t);
            }
        }
    }

    /// tcp_send_ack(): a pure ACK now.
    pub fn send_ack(&mut self, now: Ns) {
        let f = self.ack_fields(now);
        self.out.push(f);
    }

    /// The ACK fields any segment sent at `now` carries (tcp_select_window(),
    /// tcp_established_options(): a D-SACK block first, the SACK list), and
    /// tcp_event_ack_sent(): quick ACKs counted down, the delack timer and compression cleared.
    pub fn ack_fields(&mut self, now: Ns) -> AckOut {
        let mut quick_off = false;
        let new = self.w.select(self.space(), self.rcv_mss, &mut quick_off);
        if quick_off {
            self.quick = 0;
        }
        let cur = self.receive_window();
        let win = self
            .w
            .advertise(new, cur, self.rcv_nxt, self.pending & ACK_NOMEM != 0);
        let mut sacks: Vec<(u64, u64)> = self.dsack.take().into_iter().collect();
        sacks.extend(self.sacks.iter().copied());
        if self.quick > 0 {
            let pkts = u32::from(self.pending & ACK_SCHED != 0);
            if pkts >= self.quick {
                self.quick = 0;
                self.ato_j = self.ato_min_j();
            } else {
                self.quick -= pkts;
            }
        }
        self.pending = 0;
        self.delack_at = None;
        self.compressed_ack = 0;
        self.comp_at = None;
        AckOut {
            t_ns: now,
            ack: self.rcv_nxt,
            win,
            sacks,
        }
    }

    /// A data segment leaves at `now` (tcp_event_data_sent(): a reply within ato of the last
    /// data received counts towards pingpong mode); its ACK fields.
    pub fn data_sent(&mut self, now: Ns) -> AckOut {
        if self.ato_j > 0 && self.jiffies(now) - self.lrcvtime_j < self.ato_j {
            self.pingpong = true; // tcp_pingpong_thresh 1
        }
        self.ack_fields(now)
    }

    /// ACKs sent since the last call.
    pub fn take_acks(&mut self) -> Vec<AckOut> {
        std::mem::take(&mut self.out)
    }

    /// tcp_recvmsg() of up to `n` bytes at `now` (`peek`: MSG_PEEK), then __tcp_cleanup_rbuf():
    /// an ACK when one is owed for more than rcv_mss, or the read emptied a buffer that held a
    /// short pushed segment, or the window now at least doubles. Returns the bytes read.
    pub fn read(&mut self, now: Ns, n: u64, peek: bool) -> u64 {
        let got = n.min(self.readable());
        if peek || got == 0 {
            return got;
        }
        self.copied_seq += got;
        // tcp_recvmsg_locked(): an skb read to its end is freed (its truesize uncharged).
        let copied = self.copied_seq;
        let freed: u64 = self
            .rq
            .iter()
            .filter(|&&(e, _)| e <= copied)
            .map(|&(_, t)| t)
            .sum();
        self.rq.retain(|&(e, _)| e > copied);
        self.rmem_alloc -= freed;
        let mut time_to_ack = false;
        if self.pending & ACK_SCHED != 0 {
            let pushed = self.pending & ACK_PUSHED2 != 0
                || (self.pending & ACK_PUSHED != 0 && !self.pingpong);
            time_to_ack =
                self.rcv_nxt - self.w.rcv_wup > self.rcv_mss || (pushed && self.rmem_alloc == 0);
        }
        if !time_to_ack && !self.fin_rcvd {
            let cur = self.receive_window();
            if 2 * cur <= self.w.window_clamp {
                let mut q = false;
                let new = self.w.select(self.space(), self.rcv_mss, &mut q);
                time_to_ack = new > 0 && new >= 2 * cur;
            }
        }
        if time_to_ack {
            self.send_ack(now);
        }
        got
    }

    /// Bytes the application may read (the FIN is not one).
    pub fn readable(&self) -> u64 {
        (self.rcv_nxt - u64::from(self.fin_rcvd)).saturating_sub(self.copied_seq)
    }

    /// Whether the peer's FIN was received.
    pub fn fin_rcvd(&self) -> bool {
        self.fin_rcvd
    }

    /// rcv_nxt.
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    /// The tcp_info and SO_MEMINFO fields the receiving half holds (tcp_get_info(),
    /// sk_get_meminfo()).
    pub fn info(&self) -> Vec<(&'static str, i64)> {
        vec![
            ("tcpi_rcv_mss", self.rcv_mss as i64),
            ("tcpi_rcv_ssthresh", self.w.rcv_ssthresh as i64),
            ("tcpi_rcv_space", self.rcvq_space as i64),
            ("tcpi_rcv_wnd", self.w.rcv_wnd as i64),
            ("tcpi_rcv_wscale", i64::from(self.w.wscale)),
            ("tcpi_ato", (self.ato_j * 1_000_000 / self.cfg.hz) as i64),
            ("tcpi_bytes_received", self.bytes_received as i64),
            ("tcpi_rcv_ooopack", self.ooopack as i64),
            ("SK_MEMINFO_RCVBUF", self.w.rcvbuf as i64),
            ("SK_MEMINFO_RMEM_ALLOC", self.rmem_alloc as i64),
        ]
    }
}

/// TCP_RMEM_TO_WIN_SCALE, for the ratio of a measured skb.
const RMEM_TO_WIN: u32 = crate::drill_linux_win::RMEM_TO_WIN_SCALE;

//! Linux's receive window for the drill endpoint's receiving half (`drill_linux_rx`): the
//! buffer-to-window ratio, the initial window and scale, the window each ACK advertises. Read at
//! torvalds/linux v6.18: include/net/tcp.h (tcp_win_from_space(), tcp_space_from_win(),
//! TCP_DEFAULT_SCALING_RATIO), net/ipv4/tcp_output.c (tcp_select_initial_window(),
//! tcp_select_window(), __tcp_select_window()), net/ipv4/tcp.c (tcp_set_window_clamp()).

use crate::drill_linux_rx::LinuxRxConfig;

/// TCP_RMEM_TO_WIN_SCALE.
pub const RMEM_TO_WIN_SCALE: u32 = 8;
/// TCP_DEFAULT_SCALING_RATIO: half the buffer is window until skbs are measured (measured on
/// this kernel: tcp_rmem[1] 131 072 gives a SYN-ACK window of 64 240, 44 MSS of 1460).
pub const DEFAULT_SCALING_RATIO: u64 = 1 << (RMEM_TO_WIN_SCALE - 1);
/// TCP_MAX_WSCALE, SOCK_MIN_RCVBUF (2048 + SKB_TRUESIZE(256): 2 * 1152 on x86-64).
const TCP_MAX_WSCALE: u32 = 14;
const SOCK_MIN_RCVBUF: u64 = 2 * 1152;

/// __tcp_win_from_space(): `(s64)space * scaling_ratio >> TCP_RMEM_TO_WIN_SCALE`.
pub fn win_from_space(ratio: u64, space: i64) -> i64 {
    (space * ratio as i64) >> RMEM_TO_WIN_SCALE
}

/// __tcp_space_from_win(): `(u64)win << TCP_RMEM_TO_WIN_SCALE / scaling_ratio`.
pub fn space_from_win(ratio: u64, win: u64) -> u64 {
    (win << RMEM_TO_WIN_SCALE) / ratio.max(1)
}

/// The window's state: tp->rcv_wnd, rcv_wup, rcv_ssthresh, window_clamp, scaling_ratio,
/// rx_opt.rcv_wscale and sk_rcvbuf.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    /// sk_rcvbuf.
    pub rcvbuf: u64,
    /// tp->scaling_ratio (of 256).
    pub ratio: u64,
    /// tp->window_clamp.
    pub window_clamp: u64,
    /// tp->rcv_ssthresh.
    pub rcv_ssthresh: u64,
    /// tp->rcv_wnd: the window last advertised (bytes).
    pub rcv_wnd: u64,
    /// tp->rcv_wup: rcv_nxt when it was advertised.
    pub rcv_wup: u64,
    /// tp->rx_opt.rcv_wscale.
    pub wscale: u32,
}

impl Window {
    /// tcp_select_initial_window() for the SYN-ACK (tcp_openreq_init_rwin()) or the SYN
    /// (tcp_connect_init()): the window the whole buffer gives, in whole MSS; the scale for the
    /// largest buffer (max(tcp_rmem[2], rmem_max)) within the clamp. With SOCK_RCVBUF_LOCK the
    /// clamp is the buffer's window ("limit the window selection if the user enforce a smaller
    /// rx buffer"); else 65535 << 14. rcv_ssthresh starts at the window (tcp_create_openreq_child()).
    pub fn initial(cfg: &LinuxRxConfig) -> Self {
        let full = win_from_space(DEFAULT_SCALING_RATIO, cfg.rcvbuf as i64).max(0) as u64;
        let clamp = if cfg.rcvbuf_locked {
            full
        } else {
            65_535 << TCP_MAX_WSCALE
        };
        let mut space = full.min(clamp);
        if space > cfg.window_mss {
            space = space / cfg.window_mss * cfg.window_mss;
        }
        let mut wscale = 0;
        if cfg.wscale_ok {
            let big = space
                .max(cfg.rmem_max)
                .max(cfg.core_rmem_max)
                .min(clamp)
                .max(1);
            wscale = (63 - big.leading_zeros())
                .saturating_sub(15)
                .min(TCP_MAX_WSCALE);
        }
        Window {
            rcvbuf: cfg.rcvbuf,
            ratio: DEFAULT_SCALING_RATIO,
            window_clamp: clamp.min(65_535 << wscale),
            rcv_ssthresh: space,
            rcv_wnd: space,
            rcv_wup: 1,
            wscale,
        }
    }

    /// tcp_full_space(): the window the whole buffer holds.
    pub fn full_space(&self, rcvbuf: u64) -> u64 {
        win_from_space(self.ratio, rcvbuf as i64).max(0) as u64
    }

    /// tcp_set_window_clamp(): a smaller clamp lowers rcv_ssthresh (__tcp_adjust_rcv_ssthresh()),
    /// a larger one raises it to min(rcv_wnd, clamp).
    pub fn set_clamp(&mut self, val: u64) {
        let new = val.max(SOCK_MIN_RCVBUF / 2);
        if new == self.window_clamp {
            return;
        }
        let old = self.window_clamp;
        self.window_clamp = new;
        if new < old {
            self.rcv_ssthresh = self.rcv_ssthresh.min(new);
        } else {
            self.rcv_ssthresh = self.rcv_ssthresh.max(self.rcv_wnd.min(new));
        }
    }

    /// __tcp_select_window(): the free space (`free`: tcp_space()), below half the full space
    /// rounded down to the scale and zero when under 1/16 of it or one MSS (quick ACKs end,
    /// `quick_off`); at most rcv_ssthresh; with scaling rounded up to it, else to the MSS
    /// (kept when within one MSS of the last). tcp_shrink_window 0.
    pub fn select(&self, free: i64, rcv_mss: u64, quick_off: &mut bool) -> u64 {
        let allowed = self.full_space(self.rcvbuf) as i64;
        let full = (self.window_clamp as i64).min(allowed);
        let mut mss = rcv_mss as i64;
        if mss > full {
            mss = full;
            if mss <= 0 {
                return 0;
            }
        }
        let mut free = free;
        if free < full >> 1 {
            *quick_off = true;
            free = free.div_euclid(1 << self.wscale) * (1 << self.wscale);
            if free < allowed >> 4 || free < mss {
                return 0;
            }
        }
        let free = free.min(self.rcv_ssthresh as i64).max(0) as u64;
        if self.wscale > 0 {
            return free.div_ceil(1 << self.wscale) << self.wscale;
        }
        let (win, mss) = (self.rcv_wnd, mss as u64);
        if win + mss <= free || win > free {
            free / mss * mss
        } else if mss as i64 == full && free > win + (full as u64 >> 1) {
            free
        } else {
            win
        }
    }

    /// tcp_select_window(): never shrink what was offered (`cur`: tcp_receive_window()); zero
    /// after a failed memory charge (ICSK_ACK_NOMEM); rcv_wup moves to rcv_nxt. Returns the
    /// header's field (scaled).
    pub fn advertise(&mut self, new: u64, cur: u64, rcv_nxt: u64, nomem: bool) -> u32 {
        self.rcv_wup = rcv_nxt;
        if nomem {
            self.rcv_wnd = 0;
            return 0;
        }
        let scale = 1u64 << self.wscale;
        let win = if new < cur {
            cur.div_ceil(scale) * scale
        } else {
            new
        };
        self.rcv_wnd = win;
        (win.min(65_535 << self.wscale) >> self.wscale) as u32
    }

    /// tcp_rcvbuf_grow(): the buffer for twice `space` plus what the out-of-order queue spans
    /// (`ooo_span`), at most tcp_rmem[2]; the clamp follows. Not with SOCK_RCVBUF_LOCK.
    pub fn rcvbuf_grow(&mut self, space: u64, ooo_span: u64, rmem_max: u64, locked: bool) {
        if locked {
            return;
        }
        let rcvwin = (space << 1) + ooo_span;
        let rcvbuf = space_from_win(self.ratio, rcvwin).min(rmem_max);
        if rcvbuf > self.rcvbuf {
            self.rcvbuf = rcvbuf;
            self.window_clamp = win_from_space(self.ratio, rcvbuf as i64) as u64;
        }
    }
}

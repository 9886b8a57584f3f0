//! FreeBSD default-stack recovery: tcp_do_prr_ack() (RFC 6937 in bytes, cwnd in whole segments
//! of allowance; before and after review D43470) and tcp_sack.c tcp_sack_partialack().
//! Followed: tcp_input.c @ 2bae602e and F-Stack's vendored tcp_sack.c (see `super::super::freebsd`);
//! D43470 as committed (15.0-2025, and 15.0-2024-10 with d43470): tcp_input.c @ 62d1e135
//! (nibanks/freebsd-src) for the PRR start and cwnd.

use super::super::core::Conn;
use super::super::State;
use crate::stack::FreeBsdRecovery;

/// FreeBSD's `sackhint` PRR fields, in bytes.
#[derive(Clone, Debug, Default)]
pub(in crate::tcp::sender) struct FreeBsdPrr {
    /// Bytes delivered (cumulatively acked or SACKed) since recovery began.
    prr_delivered: u64,
    /// The connection's bytes sent in recovery when this episode began (prr_out counts from it).
    out_base: u64,
    /// Flight size when recovery began.
    recover_fs: u64,
}

impl FreeBsdPrr {
    /// PRR state at `enter_recovery`: prr_delivered = maxseg ("exclude Limited Transmit
    /// segments"), recover_fs = snd_nxt - snd_una.
    pub(in crate::tcp::sender) fn begin(c: &Conn) -> Self {
        FreeBsdPrr {
            prr_delivered: c.mss,
            out_base: c.recovery_out_bytes,
            recover_fs: (c.snd_nxt - c.snd_una).max(1),
        }
    }

    /// PRR state at `enter_recovery` in 15.0-2025 (nibanks/freebsd-src tcp_input.c @ 62d1e135,
    /// tcp_do_segment(): `/* Include Limited Transmit segments here */
    /// tp->sackhint.prr_delivered = imin(tp->snd_max - th->th_ack, (tp->snd_limited + 1) *
    /// maxseg); ... tp->sackhint.recover_fs = max(1, tp->snd_nxt - tp->snd_una);`).
    pub(in crate::tcp::sender) fn begin_2025(c: &Conn, th_ack: u64, snd_limited: u64) -> Self {
        FreeBsdPrr {
            prr_delivered: (c.snd_nxt - th_ack).min((snd_limited + 1) * c.mss),
            out_base: c.recovery_out_bytes,
            recover_fs: (c.snd_nxt - c.snd_una).max(1),
        }
    }

    /// After a lost retransmission (tcp_sack.c tcp_sack_lost_retransmission(), fel1x-developer
    /// @ 2d614aa2): `tp->sackhint.recover_fs = (tp->snd_max - tp->snd_una) -
    /// tp->sackhint.recover_fs;` in the kernel's uint32_t (it wraps when fewer bytes are
    /// outstanding than at entry); prr_delivered and prr_out go on.
    pub(in crate::tcp::sender) fn restart_after_lost_retransmission(&mut self, c: &Conn) {
        let outstanding = (c.snd_nxt - c.snd_una) as u32;
        self.recover_fs = outstanding.wrapping_sub(self.recover_fs as u32) as u64;
    }

    /// tcp_do_prr_ack(): RFC 6937 in bytes, then cwnd in whole segments of allowance.
    pub(in crate::tcp::sender) fn ack(
        &mut self,
        c: &mut Conn,
        k: FreeBsdRecovery,
        del_data: u64,
        new_loss: bool,
    ) {
        let State::Recovery { recover } = c.state else {
            return;
        };
        let mss = c.mss as i64;
        let pipe = c.fb_pipe() as i64;
        let ssthresh = c.v.win.ssthresh as i64;
        self.prr_delivered += del_data;
        let prr_out = (c.recovery_out_bytes - self.out_base) as i64;
        let delivered = self.prr_delivered as i64;
        let snd_cnt = if pipe >= ssthresh {
            // Proportional part: howmany(prr_delivered * ssthresh, recover_fs) - prr_out, plus
            // maxseg - 1 so that the division by maxseg below rounds up.
            // `if (tp->sackhint.recover_fs == 0) tp->sackhint.recover_fs = imax(1, tp->snd_nxt -
            // tp->snd_una);` (it can be 0 only after a lost-retransmission restart).
            if self.recover_fs == 0 {
                self.recover_fs = (c.snd_nxt - c.snd_una).max(1);
            }
            let rfs = self.recover_fs as i64;
            (delivered * ssthresh + rfs - 1) / rfs - prr_out + mss - 1
        } else {
            // Slow-start reduction bound; conservative on new loss or when nothing was delivered.
            let limit = if new_loss || del_data == 0 {
                delivered - prr_out
            } else {
                (delivered - prr_out).max(del_data as i64) + mss
            };
            (ssthresh - pipe).min(limit)
        };
        let snd_cnt = (snd_cnt.max(0) / mss) as u64;
        let cwnd = if k.as_committed() {
            // tcp_do_prr_ack() @ 62d1e135 (SACK, fast recovery): `tp->snd_cwnd = pipe - del_data
            // + (snd_cnt * maxseg);` with pipe = tcp_compute_pipe() taken after tcp_sack_doack()
            // updated the scoreboard but before process_ACK moves snd_una (so it still counts
            // this ACK's cumulatively acked bytes; del_data holds of them only the hole bytes,
            // not what was SACKed before). tcp_output() then budgets cwnd - pipe = snd_cnt *
            // maxseg - del_data bytes.
            (pipe - del_data as i64 + (snd_cnt * c.mss) as i64).max(0) as u64
        } else if k.d43470 {
            // cwnd = pipe - del_data + sndcnt * maxseg: what stays in flight after this ACK plus
            // the allowance (fb_pipe() here already excludes this ACK's data).
            c.fb_pipe() + snd_cnt * c.mss
        } else {
            // What recovery has sent and is still out, plus the allowance.
            (c.snd_nxt - recover) + c.sb.retrans_bytes + snd_cnt * c.mss
        };
        c.v.win.cwnd = cwnd.max(c.mss);
    }
}

/// tcp_sack.c tcp_sack_partialack() (a partial ACK without SACK blocks, or any partial ACK
/// without PRR): room for one more segment, two if the ACK covered at least two, never above
/// ssthresh; then the RFC 6675 rescue retransmission as FreeBSD does it: when this ACK
/// delivered data and left no hole in the scoreboard, the last maxseg bytes below the recovery
/// point become a hole (whatever segments they cut); in the "2023" copy only when nothing was
/// sent beyond the recovery point (`FreeBsdVersion::rescue_below_recovery_point`).
pub(in crate::tcp::sender) fn sack_partialack(c: &mut Conn, ack: u64, acked: u64, delivered: u64) {
    let State::Recovery { recover } = c.state else {
        return;
    };
    c.rto_deadline = None;
    let num_segs = if acked / c.mss >= 2 { 2 } else { 1 };
    let cwnd = c.sb.retrans_bytes + (c.snd_nxt - recover) + num_segs * c.mss;
    c.v.win.cwnd = cwnd.min(c.v.win.ssthresh);
    let no_holes = c.sb.sacked_bytes == 0 && c.sb.lost_bytes == 0;
    if c.fb_version().rescue_below_recovery_point() {
        // tcp_sack.c @ 2d614aa2: `SEQ_LT(th->th_ack, tp->snd_recover) && TAILQ_EMPTY(&tp->snd_holes)
        // && (tp->sackhint.delivered_data > 0)`, hole [max(th_ack, highdata - maxseg), highdata)
        // with highdata = SEQ_MIN(snd_max, snd_recover).
        let high = c.snd_nxt.min(recover);
        if ack < high && no_holes && delivered > 0 {
            c.sb.mark_range_lost(ack.max(high.saturating_sub(c.mss)), high);
        }
    } else if recover == c.snd_nxt && no_holes && delivered > 0 {
        let start = ack.max(c.snd_nxt.saturating_sub(c.mss));
        c.sb.mark_range_lost(start, c.snd_nxt);
    }
}

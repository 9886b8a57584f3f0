//! RFC 6675 IsLost(): a hole is lost once enough SACKed data lies above it. Two readings: the
//! RFC's (and Linux's before RACK), which marks the scoreboard, used by the rfc stack and
//! FreeBSD's default stack's fast retransmit; and FreeBSD's `sackhint.lost_bytes`, a count over
//! the holes that tcp_compute_pipe() leaves out of the pipe.

use crate::tcp::scoreboard::Scoreboard;

/// RFC 6675 IsLost(): mark every unSACKed segment that has at least `dupthresh` SACKed
/// segments above it. Returns bytes newly marked lost.
pub(crate) fn mark_losses(sb: &mut Scoreboard, dupthresh: u32) -> u64 {
    let need = dupthresh as usize;
    let mut count = 0usize;
    let mut boundary = None;
    for (s, e) in sb.sacked_ranges().iter().rev() {
        let (i_s, i_e) = (sb.lower_bound(s), sb.lower_bound(e));
        let n = i_e - i_s;
        if count + n >= need {
            boundary = Some(i_e - (need - count));
            break;
        }
        count += n;
    }
    let Some(b) = boundary else { return 0 };
    let boundary_seq = sb.segs()[b].seq;
    let mut newly = 0;
    let mut i = sb.lower_bound(sb.lost_mark());
    while i < b {
        // A segment already retransmitted (rescue) stays RETRANS: its copy is in flight
        // and it is not retransmitted again until an RTO.
        newly += sb.mark_lost_keeping_retransmission(i);
        i += 1;
    }
    sb.examined_up_to(boundary_seq);
    newly
}

/// FreeBSD's `sackhint.lost_bytes` (RFC 6675 IsLost over the scoreboard's holes, review
/// D39299), as tcp_sack.c tcp_sack_doack() computes it at the end of its sweep
/// (fel1x-developer/freebsd-src sys/netinet/tcp_sack.c @ 2d614aa2, the newest stored copy):
/// holes are walked from the right; hole k (1 for the rightmost) with `loss_thresh` SACKed
/// bytes above it is not lost while `!((loss_sblks >= tcprexmtthresh) || (loss_thresh >
/// (tcprexmtthresh - 1) * tp->t_maxseg))`; `lost_bytes = hole_bytes - notlost_bytes`, where
/// the holes are the unSACKed bytes between snd_una and the highest SACKed byte (retransmitted
/// or not). `t_maxseg` is the option-less MSS.
pub(crate) fn freebsd_lost_bytes(sb: &Scoreboard, t_maxseg: u64) -> u64 {
    let Some((_, top)) = sb.sacked_ranges().last() else {
        return 0;
    };
    let Some(front) = sb.segs().front() else {
        return 0;
    };
    if top <= front.seq {
        return 0;
    }
    let hole_bytes = (top - front.seq).saturating_sub(sb.sacked_bytes);
    let (mut sacked_above, mut holes, mut in_hole, mut notlost) = (0, 0u32, false, 0);
    for s in sb.segs().range(..sb.lower_bound(top)).rev() {
        let len = s.len as u64;
        if s.is_sacked() {
            sacked_above += len;
            in_hole = false;
            continue;
        }
        if !in_hole {
            in_hole = true;
            holes += 1;
        }
        if holes >= 3 || sacked_above > 2 * t_maxseg {
            break;
        }
        notlost += len;
    }
    hole_bytes.saturating_sub(notlost)
}

//! FreeBSD's lost-retransmission detection (TF_LRD, net.inet.tcp.sack.lrd): a retransmission
//! is lost when data sent after it is SACKed first.

use crate::tcp::scoreboard::Scoreboard;

/// FreeBSD's lost-retransmission detection (TF_LRD), tcp_sack.c
/// tcp_sack_lost_retransmission() as read at fel1x-developer/freebsd-src @ 2d614aa2: once a
/// hole has been retransmitted entirely its `rxmit` is parked at snd_recover (tcp_output.c:
/// `if ((tp->t_flags & TF_LRD) && SEQ_GEQ(p->rxmit, p->end)) p->rxmit = SEQ_MAX(p->rxmit,
/// tp->snd_recover);`), so when `SEQ_GT(tp->snd_fack, tp->snd_recover)` and the first hole is
/// fully retransmitted (`SEQ_GEQ(temp->rxmit, temp->end) && SEQ_GEQ(tp->snd_fack,
/// temp->rxmit)`), data sent after the retransmission was SACKed first: the retransmission
/// is lost. Every fully retransmitted hole below snd_fack is then re-armed (`temp->rxmit =
/// temp->start`): here its segments stop counting as retransmitted and are to be sent again.
/// Returns whether the retransmission was judged lost.
pub(crate) fn lost_retransmission(sb: &mut Scoreboard, snd_recover: u64) -> bool {
    let Some(fack) = sb.highest_sacked() else {
        return false;
    };
    if fack <= snd_recover {
        return false;
    }
    let first_hole = sb.segs().iter().take_while(|s| !s.is_sacked());
    let (mut n, mut all_retx) = (0, true);
    for s in first_hole {
        n += 1;
        all_retx &= s.is_retransmitted();
    }
    if n == 0 || !all_retx {
        return false;
    }
    // Re-arm each hole (maximal run of unSACKed segments below snd_fack) sent again entirely.
    let end = sb.lower_bound(fack);
    let mut i = 0;
    while i < end {
        if sb.segs()[i].is_sacked() {
            i += 1;
            continue;
        }
        let j = (i..end).find(|&k| sb.segs()[k].is_sacked()).unwrap_or(end);
        if (i..j).all(|k| sb.segs()[k].is_retransmitted()) {
            for k in i..j {
                sb.mark_lost_with_retransmission(k);
            }
        }
        i = j;
    }
    sb.examined_up_to(fack);
    sb.high_rxt_to_head();
    true
}

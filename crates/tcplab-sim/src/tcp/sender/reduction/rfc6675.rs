//! RFC 6675 §5 step C's send loop (retransmit lost data, then new data, then the rescue
//! retransmission of NextSeg() rule 4, while cwnd - pipe >= 1 MSS), shared by the rfc and linux
//! stacks.

use super::super::core::Conn;
use super::super::State;
use crate::net::packet::Packet;
use crate::time::Ns;

/// The RFC 6675 sender's own recovery state.
#[derive(Clone, Debug, Default)]
pub(in crate::tcp::sender) struct Rfc6675 {
    /// The RecoveryPoint of the recovery whose rescue retransmission went out.
    rescue_done: Option<u64>,
}

impl Rfc6675 {
    /// Send whatever the windows allow (RFC 6675 §5 step C in recovery: while cwnd - pipe >= 1 MSS).
    pub(in crate::tcp::sender) fn output(
        &mut self,
        c: &mut Conn,
        now: Ns,
        out: &mut Vec<Packet>,
        next_id: &mut u64,
    ) {
        c.app_fill(now);
        c.begin_xmit_pass();
        c.restart_after_idle(now);
        c.tsq_throttled = false;
        let tsq_limit = c.tsq_limit();
        loop {
            if c.pacing_rate().is_some() && now < c.pace_next {
                break;
            }
            if c.linux_drill
                .as_ref()
                .is_some_and(|d| d.xmit_budget == Some(0))
            {
                break; // tcp_push_one(): its one skb went
            }
            let room = c.v.win.cwnd.saturating_sub(c.pipe());
            let mut rescue = false;
            let cand = if let Some((seq, len)) = c.sb.next_lost() {
                Some((seq, len as u64, true))
            } else if let Some(len) = c.new_data_len() {
                Some((c.snd_nxt, len, false))
            } else if let (State::Recovery { recover }, true) = (c.state, c.sack) {
                // RFC 6675 NextSeg() rule 4, once per recovery.
                if self.rescue_done != Some(recover) {
                    rescue = true;
                    c.sb.rescue_candidate().map(|(s, l)| (s, l as u64, true))
                } else {
                    None
                }
            } else {
                None
            };
            let Some((seq, mut len, retx)) = cand else {
                c.nothing_to_send(room);
                break;
            };
            if len > room {
                if c.profile.partial_sends && !retx && room > 0 {
                    len = room;
                } else {
                    c.v.cwnd_limited = true;
                    break;
                }
            }
            if c.tsq_blocks(len, retx, tsq_limit) {
                break;
            }
            if rescue {
                if let State::Recovery { recover } = c.state {
                    self.rescue_done = Some(recover);
                }
            }
            c.emit(seq, len, retx, now, out, next_id);
            if let (false, Some(d)) = (retx, c.linux_drill.as_deref_mut()) {
                d.xmit_budget = d.xmit_budget.map(|b| b.saturating_sub(len));
            }
        }
    }
}

//! The scoreboard's tests, and the loss-detection rules' over it (their marks are the
//! scoreboard's state).

use super::*;
use crate::tcp::sender::detection::is_lost::mark_losses;
use crate::tcp::sender::detection::lrd::lost_retransmission;
use crate::tcp::sender::detection::rack::detect_loss;

fn board(n: u64) -> Scoreboard {
    let mut b = Scoreboard::default();
    for i in 0..n {
        b.push(i * 100, 100, 0, RateTx::default());
    }
    b
}

#[test]
fn one_hole_with_three_segments_sacked_above_is_lost_and_pipe_follows_rfc6675() {
    let mut b = board(10); // segments 0..9, 100 bytes each
                           // segment 2 lost; 3,4,5 SACKed
    assert_eq!(b.sack(&[(300, 600)], 0), 300);
    assert_eq!(mark_losses(&mut b, 3), 100 + 100 + 100); // segments 0, 1, 2 lie below 3 SACKed ones
    b.ack(200); // segments 0,1 acked: only 2 remains lost
    assert_eq!(b.lost_bytes, 100);
    // outstanding = 800 (200..1000); pipe = 800 - 300 sacked - 100 lost = 400
    assert_eq!(b.pipe(800, 100), 400);
    assert_eq!(b.next_lost(), Some((200, 100)));
    b.mark_retransmitted(200, 5, RateTx::default());
    assert_eq!(b.pipe(800, 100), 500);
    assert_eq!(b.next_lost(), None);
    b.check().unwrap();
}

#[test]
fn fewer_than_dupthresh_sacked_segments_mark_nothing() {
    let mut b = board(10);
    b.sack(&[(300, 500)], 0);
    assert_eq!(mark_losses(&mut b, 3), 0);
    assert_eq!(b.lost_bytes, 0);
}

#[test]
fn repeated_sack_blocks_count_once() {
    let mut b = board(10);
    assert_eq!(b.sack(&[(300, 500)], 0), 200);
    assert_eq!(b.sack(&[(300, 600)], 0), 100);
    assert_eq!(b.sacked_bytes, 300);
    b.check().unwrap();
}

#[test]
fn rto_marks_everything_unsacked_lost_and_clears_retransmissions() {
    let mut b = board(5);
    b.sack(&[(300, 400)], 0);
    b.mark_head_lost();
    b.mark_retransmitted(0, 1, RateTx::default());
    b.mark_all_lost();
    assert_eq!(b.lost_bytes, 400);
    assert_eq!(b.retrans_bytes, 0);
    assert_eq!(b.pipe(500, 100), 0);
    assert_eq!(b.next_lost(), Some((0, 100)));
    b.check().unwrap();
}

#[test]
fn rate_snapshots_follow_their_segments_through_splits_retransmissions_sacks_and_acks() {
    let tx = |tag: u64| RateTx {
        delivered: tag,
        ..Default::default()
    };
    // (end, snapshot tag) of each delivered segment.
    let tags = |b: &Scoreboard| -> Vec<(u64, u64)> {
        let d = b.delivered().iter().zip(b.delivered_txs());
        d.map(|(d, t)| (d.end, t.delivered)).collect()
    };
    let mut b = Scoreboard::keeping_rates();
    for i in 0..6u64 {
        b.push(i * 100, 100, i, tx(i * 100));
    }
    b.split_at(250); // 200..250 and 250..300, both with segment 200's snapshot
    b.mark_retransmitted(100, 10, tx(1100)); // the retransmission's snapshot replaces it
    b.sack(&[(250, 300), (400, 500)], 0);
    b.check().unwrap();
    assert_eq!(tags(&b), [(300, 200), (500, 400)]);
    b.clear_delivered();
    b.ack(400); // 250..300 was SACKed: not delivered again
    b.check().unwrap();
    assert_eq!(tags(&b), [(100, 0), (200, 1100), (250, 200), (400, 300)]);
    // A scoreboard that does not keep them has none, and delivers the same segments.
    let mut c = Scoreboard::default();
    c.push(0, 100, 0, tx(7));
    c.ack(100);
    assert_eq!(c.delivered().len(), 1);
    assert!(c.delivered_txs().is_empty());
}

#[test]
fn rack_marks_segments_sent_before_a_delivered_one_once_rtt_plus_reo_wnd_passed() {
    // segments 0..5 sent at t = 0, 10, 20, 30, 40 (ms units here), segment 3 SACKed.
    let mut b = Scoreboard::default();
    for i in 0..5u64 {
        b.push(i * 100, 100, i * 10, RateTx::default());
    }
    b.sack(&[(300, 400)], 0);
    let d = b.delivered();
    assert_eq!(
        (d.len(), d[0].sent_at, d[0].end, d[0].retrans),
        (1, 30, 400, false)
    );
    // now = 75, rack_rtt = 75 - 30 = 45, reo_wnd 0: segments sent at 0, 10, 20 are due
    // (elapsed 75, 65, 55 >= 45); segment 4 was sent after the delivered one: untouched.
    let (lost, wait) = detect_loss(&mut b, 30, 400, 45, 0, 75);
    assert_eq!((lost, wait), (300, None));
    // with a 25 reordering window, segment 2 (elapsed 55 < 70) waits 15 more
    let mut c = Scoreboard::default();
    for i in 0..5u64 {
        c.push(i * 100, 100, i * 10, RateTx::default());
    }
    c.sack(&[(300, 400)], 0);
    let (lost, wait) = detect_loss(&mut c, 30, 400, 45, 25, 75);
    assert_eq!((lost, wait), (100, Some(15)));
    b.check().unwrap();
    c.check().unwrap();
}

#[test]
fn rack_marks_a_lost_retransmission_again_so_it_is_resent() {
    let mut b = board(4); // all sent at t = 0
    b.sack(&[(100, 400)], 0);
    mark_losses(&mut b, 3);
    assert_eq!(b.next_lost(), Some((0, 100)));
    b.mark_retransmitted(0, 50, RateTx::default());
    assert_eq!(b.next_lost(), None);
    // a segment sent at 60 (new data) is delivered at 110: the retransmission sent at 50 is
    // older than rack_rtt (50) by now = 110 -> lost again
    b.push(400, 100, 60, RateTx::default());
    b.sack(&[(400, 500)], 0);
    let (lost, _) = detect_loss(&mut b, 60, 500, 50, 0, 110);
    assert_eq!(lost, 100);
    assert_eq!(b.next_lost(), Some((0, 100)));
    b.check().unwrap();
}

#[test]
fn a_lost_range_may_start_inside_a_segment() {
    let mut b = board(4);
    b.mark_range_lost(250, 400);
    assert_eq!(b.lost_bytes, 150);
    assert_eq!(b.next_lost(), Some((250, 50)));
    b.check().unwrap();
}

#[test]
fn rescue_candidate_is_highest_unsacked_below_highest_sack() {
    let mut b = board(6);
    b.sack(&[(100, 200), (400, 500)], 0);
    assert_eq!(b.rescue_candidate(), Some((300, 100)));
}

/// The time-ordered RACK queue against the linear walk it replaced, over random scoreboards.
mod rack_queue {
    use super::*;
    use crate::rng::Rng;

    /// The previous implementation: walk every segment from snd_una on every call.
    fn rack_mark_lost_linear(
        b: &mut Scoreboard,
        rack_xmit: Ns,
        rack_end: u64,
        rack_rtt: Ns,
        reo_wnd: Ns,
        now: Ns,
    ) -> (u64, Option<Ns>) {
        let (mut newly, mut wait) = (0, None::<Ns>);
        let mut lowest_marked = None;
        for seg in b.segs.iter_mut() {
            if seg.has(SACKED) || (seg.has(LOST) && !seg.has(RETRANS)) {
                continue;
            }
            let sent_before =
                seg.sent_at < rack_xmit || (seg.sent_at == rack_xmit && seg.end() < rack_end);
            if !sent_before {
                if seg.tx_count == 1 {
                    break;
                }
                continue;
            }
            let elapsed = now.saturating_sub(seg.sent_at);
            if rack_rtt + reo_wnd <= elapsed {
                let len = seg.len as u64;
                if seg.has(RETRANS) {
                    seg.flags &= !RETRANS;
                    b.retrans_bytes -= len;
                }
                if !seg.has(LOST) {
                    seg.flags |= LOST;
                    b.lost_bytes += len;
                }
                newly += len;
                lowest_marked.get_or_insert(seg.seq);
                b.lost_mark = b.lost_mark.max(seg.end());
            } else {
                let remaining = rack_rtt + reo_wnd - elapsed;
                wait = Some(wait.map_or(remaining, |w| w.max(remaining)));
            }
        }
        if let Some(seq) = lowest_marked {
            b.high_rxt = b.high_rxt.min(seq);
        }
        (newly, wait)
    }

    /// The previous rescue_candidate(): walk down from the highest SACKed byte every time.
    fn rescue_candidate_linear(b: &Scoreboard) -> Option<(u64, u32)> {
        let (_, top) = b.sacked_ranges.last()?;
        let i = b.lower_bound(top);
        b.segs
            .range(..i)
            .rev()
            .find(|s| !s.has(SACKED))
            .filter(|s| !s.has(RETRANS))
            .map(|s| (s.seq, s.len))
    }

    /// The previous next_lost(): a search from HighRxt every time. Returns it and HighRxt after.
    fn next_lost_linear(b: &Scoreboard) -> (Option<(u64, u32)>, u64) {
        if b.lost_bytes == 0 {
            return (None, b.high_rxt);
        }
        let first = b.segs.range(b.lower_bound(b.high_rxt)..);
        let found = first
            .take_while(|s| s.seq < b.lost_mark)
            .find(|s| s.has(LOST) && !s.has(SACKED) && !s.has(RETRANS));
        match found {
            Some(s) => (Some((s.seq, s.len)), b.high_rxt),
            None => (None, b.high_rxt.max(b.lost_mark)),
        }
    }

    /// Everything a decision depends on, without the queue's own bookkeeping flag.
    fn state(b: &Scoreboard) -> (Vec<(u64, u32, Ns, u16, u8)>, [u64; 5]) {
        let segs = b.segs.iter();
        let segs = segs.map(|s| (s.seq, s.len, s.sent_at, s.tx_count, s.flags & !TRACKED));
        let counters = [
            b.sacked_bytes,
            b.lost_bytes,
            b.retrans_bytes,
            b.lost_mark,
            b.high_rxt,
        ];
        (segs.collect(), counters)
    }

    /// One random step of what the senders do to a scoreboard; time advances by 0..3 units.
    fn random_step(b: &mut Scoreboard, rng: &mut Rng, now: &mut Ns, snd_nxt: &mut u64) {
        *now += rng.below(3);
        let una = b.segs.front().map_or(*snd_nxt, |s| s.seq);
        let span = (*snd_nxt - una).max(1);
        let at = una + rng.below(span);
        match rng.below(12) {
            0..=2 => {
                let len = [100, 100, 100, 40][rng.below(4) as usize];
                b.push(*snd_nxt, len, *now, RateTx::default());
                *snd_nxt += len as u64;
            }
            3 | 4 => {
                b.sack(&[(at, (at + 100 * (1 + rng.below(4))).min(*snd_nxt))], una);
            }
            5 => {
                b.ack(at);
            }
            6 => {
                mark_losses(b, 1 + rng.below(3) as u32);
            }
            7 => match rng.below(4) {
                0 => _ = b.mark_head_lost(),
                1 => b.mark_range_lost(at, (at + 150).min(*snd_nxt)),
                2 => b.split_at(at),
                _ => _ = lost_retransmission(b, at),
            },
            8 | 9 => {
                let seg = b.next_lost().or_else(|| {
                    let i = rng.below(b.segs.len().max(1) as u64) as usize;
                    b.segs.get(i).map(|s| (s.seq, s.len))
                });
                if let Some((seq, _)) = seg {
                    b.mark_retransmitted(seq, *now, RateTx::default());
                }
            }
            10 if rng.below(8) == 0 => b.mark_all_lost(),
            _ => {}
        }
        b.clear_delivered();
    }

    #[test]
    fn rack_queue_and_hinted_searches_decide_exactly_as_the_linear_walks() {
        let mut calls_that_marked = 0;
        for seed in 1..=60 {
            let mut rng = Rng::new(seed);
            let (mut b, mut now, mut snd_nxt) = (Scoreboard::default(), 0, 0);
            for step in 0..400 {
                random_step(&mut b, &mut rng, &mut now, &mut snd_nxt);
                b.check()
                    .unwrap_or_else(|e| panic!("seed {seed} step {step}: {e}"));
                let want = rescue_candidate_linear(&b);
                assert_eq!(b.rescue_candidate(), want, "seed {seed} step {step}");
                let want = next_lost_linear(&b);
                assert_eq!((b.next_lost(), b.high_rxt), want, "seed {seed} step {step}");
                // RACK from a random outstanding or just-acked segment's send time and end.
                let Some(i) = (!b.segs.is_empty()).then(|| rng.below(b.segs.len() as u64)) else {
                    continue;
                };
                let s = &b.segs[i as usize];
                let (xmit, end) = (s.sent_at + rng.below(2), s.end());
                let (rtt, reo) = (rng.below(20), rng.below(6));
                let mut reference = Scoreboard {
                    segs: b.segs.clone(),
                    sacked_ranges: b.sacked_ranges.clone(),
                    ..Default::default()
                };
                (reference.sacked_bytes, reference.lost_bytes) = (b.sacked_bytes, b.lost_bytes);
                (reference.retrans_bytes, reference.lost_mark) = (b.retrans_bytes, b.lost_mark);
                reference.high_rxt = b.high_rxt;
                let want = rack_mark_lost_linear(&mut reference, xmit, end, rtt, reo, now);
                let got = detect_loss(&mut b, xmit, end, rtt, reo, now);
                assert_eq!(got, want, "seed {seed} step {step}");
                assert_eq!(state(&b), state(&reference), "seed {seed} step {step}");
                b.check()
                    .unwrap_or_else(|e| panic!("seed {seed} step {step}: {e}"));
                calls_that_marked += (got.0 > 0) as u32;
            }
        }
        // The random boards exercise marking, not only the early exits.
        assert!(calls_that_marked > 1000, "{calls_that_marked}");
    }
}

/// What a cumulative ACK tells the RTT sample: the newest segment never retransmitted (Karn), and
/// whether any segment it removed was ever retransmitted, SACKed or not (Linux's
/// FLAG_RETRANS_DATA_ACKED, which voids its seq_rtt); the segments not SACKed before go to
/// `delivered` in sequence order (first_ackt, last_ackt).
#[test]
fn a_cumulative_ack_reports_karn_and_ever_retransmitted_segments() {
    let mut b = Scoreboard::default();
    for i in 0..4 {
        b.push(i * 100, 100, 10 * (i + 1), RateTx::default());
    }
    let clean = b.ack(200);
    assert_eq!((clean.karn_sent_at, clean.retrans), (Some(20), false));
    assert_eq!(
        b.delivered().iter().map(|d| d.sent_at).collect::<Vec<_>>(),
        [10, 20]
    );
    b.clear_delivered();
    // Segment 3 SACKed, segment 2 lost and resent: the ACK of both removes a retransmission.
    b.sack(&[(300, 400)], 200);
    b.clear_delivered();
    assert!(b.mark_head_lost());
    b.mark_retransmitted(200, 50, RateTx::default());
    let after = b.ack(400);
    assert_eq!((after.karn_sent_at, after.retrans), (Some(40), true));
    assert_eq!(
        b.delivered()
            .iter()
            .map(|d| (d.sent_at, d.retrans))
            .collect::<Vec<_>>(),
        [(50, true)]
    );
}

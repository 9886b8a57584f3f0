//! The FreeBSD default stack's source versions around the same scripted losses: 15.0-2025
//! (D43470 as committed) and 15.0-2024-10 (T4's tree, before D43470 or with it), each
//! hand-calculated from that version's tcp_input.c / tcp_output.c / tcp_sack.c.

mod common;
mod freebsd_common;
use common::*;
use freebsd_common::*;
use tcplab_sim::config::FreeBsdVersion;

use tcplab_sim::sim::Simulation;
use tcplab_sim::time::{MS, SEC};

// ---- Version 15.0-2025 (nibanks/freebsd-src sys/netinet/tcp_input.c @ 62d1e135,
// ---- tcp_output.c @ 0714807e): the same single loss, hand-calculated from that code.

#[test]
fn v2025_entry_cwnd_is_pipe_without_the_lost_hole_plus_maxseg_then_ssthresh() {
    // tcp_input.c @ 62d1e135 tcp_do_segment() enter_recovery: `tp->snd_cwnd =
    // tcp_compute_pipe(tp) + maxseg; (void) tcp_output(tp); tp->snd_cwnd = tp->snd_ssthresh;`
    // and tcp_compute_pipe(): snd_max - snd_una + sack_bytes_rexmit - sacked_bytes - lost_bytes.
    // At the third dupack: in flight = cwnd before the loss + the two limited-transmit segments;
    // three segments SACKed above the one hole; that hole is lost by tcp_sack_doack()'s IsLost
    // (one hole, 3 x 1448 = 4344 SACKed bytes above it > (tcprexmtthresh - 1) * t_maxseg = 2920).
    for (version, d43470) in COMMITTED {
        let sim = one_loss_version(version, d43470);
        let st = sim.flow_stats();
        assert_eq!(
            (st[0].recoveries, st[0].rtos, st[0].retrans_segs),
            (1, 0, 1)
        );
        let (t0, cwnd, ssthresh) = events(&sim, 0, RECOVERY_START)[0];
        let w = cwnd_before(&sim, t0);
        assert_eq!(ssthresh, freebsd_newreno_ssthresh(w));
        assert!(3 * MSS > 2 * T_MAXSEG, "the hole is IsLost");
        let pipe = w + 2 * MSS - 3 * MSS - MSS;
        assert_eq!(cwnd, pipe + MSS, "cwnd = tcp_compute_pipe() + maxseg");
        assert_eq!(
            cwnd_after(&sim, t0),
            ssthresh,
            "then snd_cwnd = snd_ssthresh"
        );
        let at_entry: Vec<_> = sends(&sim).into_iter().filter(|s| s.0 == t0).collect();
        assert_eq!(
            at_entry.iter().map(|s| (s.2, s.3)).collect::<Vec<_>>(),
            vec![(MSS, 1)],
            "exactly the hole's retransmission"
        );
    }
}

#[test]
fn v2025_first_prr_ack_counts_limited_transmit_and_sets_cwnd_from_pipe_less_delivered() {
    // The first dupack after entry SACKs one more segment. By hand, from tcp_input.c @ 62d1e135:
    // - enter_recovery: `prr_delivered = imin(snd_max - th_ack, (snd_limited + 1) * maxseg)`
    //   = 3 maxseg (two limited-transmit segments), recover_fs = snd_nxt - snd_una = W + 2 maxseg.
    // - tcp_do_prr_ack(): del_data = 1448; prr_delivered = 4 maxseg; prr_out = 1448 (the
    //   retransmission); pipe = (W + 2 mss) + 1448 (rexmit) - 4 x 1448 (SACKed) - 1448 (the
    //   lost hole) >= ssthresh, so snd_cnt = (howmany(prr_delivered * ssthresh, recover_fs) -
    //   prr_out + maxseg - 1) / maxseg; `snd_cwnd = pipe - del_data + snd_cnt * maxseg`.
    // - tcp_output.c @ 0714807e: the budget is cwnd - pipe = snd_cnt * maxseg - del_data.
    for (version, d43470) in COMMITTED {
        let sim = one_loss_version(version, d43470);
        let (t0, _, ss) = events(&sim, 0, RECOVERY_START)[0];
        let w = cwnd_before(&sim, t0);
        let fs = w + 2 * MSS;
        let pipe = fs + MSS - 4 * MSS - MSS;
        assert!(pipe >= ss);
        let prr_delivered = 3 * MSS + MSS;
        let prr_out = MSS;
        let snd_cnt = ((prr_delivered * ss + fs - 1) / fs - prr_out + MSS - 1).max(0) / MSS;
        let cwnd = (pipe - MSS + snd_cnt * MSS).max(MSS);
        let (t1, cwnd1, _) = samples(&sim, 0)
            .into_iter()
            .find(|s| s.0 > t0)
            .expect("an ACK after entry");
        assert_eq!(
            (cwnd1, snd_cnt),
            (cwnd, 1),
            "tcp_do_prr_ack(): cwnd = pipe - del_data + snd_cnt * maxseg"
        );
        let sent: i64 = sends(&sim).iter().filter(|s| s.0 == t1).map(|s| s.2).sum();
        assert_eq!(
            sent,
            (snd_cnt * MSS - MSS).max(0),
            "budget snd_cnt * maxseg - del_data"
        );
    }
}

#[test]
fn v2025_rejects_d43470_false() {
    let mut f = freebsd_2025_flow(1_000_000);
    f.freebsd.as_mut().unwrap().d43470 = false;
    let cfg = pipe(100 * MBIT, 40 * MS, 1000, vec![f], SEC);
    assert!(Simulation::new(&cfg).is_err());
}

#[test]
fn v2023_stays_the_default_and_2025_changes_the_episode() {
    // The knob's default is "2023"; the same loss on 15.0-2025 gives a different entry cwnd.
    let o = tcplab_sim::stack::options("freebsd").unwrap();
    let v = o.iter().find(|k| k.name == "version").unwrap();
    assert_eq!(v.default, tcplab_sim::stack::KnobValue::Text("2023"));
    let a = events(&one_loss(true), 0, RECOVERY_START)[0].1;
    let b = events(&one_loss_2025(), 0, RECOVERY_START)[0].1;
    assert_eq!(
        a - b,
        MSS,
        "2023 counts the lost hole in pipe, 15.0-2025 does not"
    );
}

#[test]
fn v2025_post_recovery_sees_pipe_after_the_full_ack() {
    // tcp_input.c @ 62d1e135 process_ACK: `tp->snd_una = th->th_ack; if (IN_RECOVERY(tp->t_flags)
    // && SEQ_GEQ(th->th_ack, tp->snd_recover)) { cc_post_recovery(tp, th); }` (2023 @ 2bae602e:
    // at resume_partialack, before snd_una moves). cc.c newreno_cc_post_recovery(): `if (pipe <
    // snd_ssthresh) snd_cwnd = max(pipe, mss) + mss; else snd_cwnd = snd_ssthresh;`. At the full
    // ACK (= snd_recover, the highest byte sent before entry: nothing sent later has arrived
    // ahead of the retransmission) no hole is left, so pipe = snd_max - th_ack: the new data
    // sent during recovery.
    let sim = one_loss_2025();
    let (t0, _, ss) = events(&sim, 0, RECOVERY_START)[0];
    let (t_exit, cwnd_exit, _) = events(&sim, 0, RECOVERY_END)[0];
    let s = sends(&sim);
    let end_before = |t: i64| {
        s.iter()
            .filter(|x| x.0 < t)
            .map(|x| x.1 + x.2)
            .max()
            .unwrap()
    };
    let recover = end_before(t0);
    let pipe = end_before(t_exit) - recover;
    let expect = if pipe < ss { pipe.max(MSS) + MSS } else { ss };
    assert_eq!(cwnd_exit, expect, "pipe {pipe}, ssthresh {ss}");
}

#[test]
fn v2025_sends_no_new_data_while_the_retransmission_is_outstanding() {
    // tcp_output.c @ 0714807e tcp_default_output(), new data in fast recovery once something was
    // retransmitted (`sack_bytes_rxmt > 0`): `len = imax(imin(sbavail(&so->so_snd), sendwin) -
    // imax(tcp_compute_pipe(tp), off), 0);` with off = snd_nxt - snd_una. off counts the SACKed
    // bytes that pipe leaves out, so off >= pipe here and new data needs cwnd > snd_max -
    // snd_una; tcp_do_prr_ack() keeps cwnd = pipe - del_data + sndcnt x maxseg, below that. With
    // one hole, retransmitted at entry and outstanding until the full ACK, nothing new leaves in
    // the episode (read as written; the 2023 model sends about ssthresh of new data).
    let sim = one_loss_2025();
    let (t0, _, _) = events(&sim, 0, RECOVERY_START)[0];
    let (t_exit, _, _) = events(&sim, 0, RECOVERY_END)[0];
    let new_in_recovery: i64 = sends(&sim)
        .iter()
        .filter(|s| s.0 >= t0 && s.0 < t_exit && s.3 == 0)
        .map(|s| s.2)
        .sum();
    assert_eq!(new_in_recovery, 0);
    let old = one_loss(true);
    let (o0, _, _) = events(&old, 0, RECOVERY_START)[0];
    let (o_exit, _, _) = events(&old, 0, RECOVERY_END)[0];
    assert!(sends(&old)
        .iter()
        .any(|s| s.0 >= o0 && s.0 < o_exit && s.3 == 0));
}

// ---- Version 15.0-2024-10 (T4's main-f11c79fc00) before D43470: the pre-D43470 recovery lines of
// ---- the newest stored copies before it — tcp_input.c ihoro/freebsd-src @ 48931b3e (entry,
// ---- PRR, post-recovery placement), tcp_compute_pipe() with lost_bytes (fel1x-developer
// ---- tcp_input.c @ 2d614aa2), tcp_output.c fel1x-developer @ b252a43e — hand-calculated.

#[test]
fn v2024_10_base_enters_with_one_segment_and_prr_counts_what_recovery_sent() {
    // ihoro tcp_input.c @ 48931b3e enter_recovery: `/* Exclude Limited Transmit segments here */
    // tp->sackhint.prr_delivered = maxseg; ... recover_fs = max(1, snd_nxt - snd_una); ...
    // tp->snd_cwnd = maxseg; (void) tcp_output(tp);`. On the next dupack (one more segment
    // SACKed) tcp_do_prr_ack(): del_data = 1448, prr_delivered = 2 maxseg, prr_out = 1448,
    // pipe = tcp_compute_pipe() = snd_max - snd_una + sack_bytes_rexmit - sacked_bytes -
    // lost_bytes (fel1x @ 2d614aa2) = fs + 1448 - 4 x 1448 - 1448 >= ssthresh, so snd_cnt =
    // (howmany(prr_delivered * ssthresh, recover_fs) - prr_out + maxseg - 1) / maxseg and
    // `tp->snd_cwnd = tp->snd_nxt - tp->snd_recover + tp->sackhint.sack_bytes_rexmit + (snd_cnt *
    // maxseg)` = 0 + 1448 + snd_cnt x 1448. tcp_output.c @ b252a43e then sends new data
    // `cwin = tp->snd_cwnd - (snd_nxt - snd_recover) - sack_bytes_rxmt` = snd_cnt x 1448.
    let sim = one_loss_version(FreeBsdVersion::V15_2024_10, false);
    let st = sim.flow_stats();
    assert_eq!(
        (st[0].recoveries, st[0].rtos, st[0].retrans_segs),
        (1, 0, 1)
    );
    let (t0, cwnd0, ss) = events(&sim, 0, RECOVERY_START)[0];
    let w = cwnd_before(&sim, t0);
    assert_eq!(cwnd0, MSS, "snd_cwnd = maxseg");
    assert_eq!(ss, freebsd_newreno_ssthresh(w));
    let fs = w + 2 * MSS;
    let pipe = fs + MSS - 4 * MSS - MSS;
    assert!(pipe >= ss);
    let (prr_delivered, prr_out) = (2 * MSS, MSS);
    let snd_cnt = ((prr_delivered * ss + fs - 1) / fs - prr_out + MSS - 1).max(0) / MSS;
    let (t1, cwnd1, _) = samples(&sim, 0)
        .into_iter()
        .find(|s| s.0 > t0)
        .expect("an ACK after entry");
    assert_eq!(cwnd1, MSS + snd_cnt * MSS);
    let sent: i64 = sends(&sim)
        .iter()
        .filter(|s| s.0 == t1 && s.3 == 0)
        .map(|s| s.2)
        .sum();
    assert_eq!(
        sent,
        snd_cnt * MSS,
        "new data: cwnd - (snd_nxt - snd_recover) - rexmit"
    );
}

#[test]
fn v2024_10_base_post_recovery_sees_pipe_after_the_full_ack() {
    // ihoro tcp_input.c @ 48931b3e process_ACK: `tp->snd_una = th->th_ack; if
    // (IN_RECOVERY(tp->t_flags) && SEQ_GEQ(th->th_ack, tp->snd_recover)) { cc_post_recovery(tp,
    // th); }` (before D43470; 2023 @ 2bae602e: at resume_partialack, before snd_una moves), and
    // cc.c newreno_cc_post_recovery(): pipe < ssthresh ? max(pipe, mss) + mss : ssthresh. The
    // base sends new data in recovery, so at the full ACK pipe = snd_max - th_ack = what was
    // sent after snd_recover (no hole left, nothing SACKed above it yet at that ACK).
    let sim = one_loss_version(FreeBsdVersion::V15_2024_10, false);
    let (t0, _, ss) = events(&sim, 0, RECOVERY_START)[0];
    let (t_exit, cwnd_exit, _) = events(&sim, 0, RECOVERY_END)[0];
    let s = sends(&sim);
    let end_before = |t: i64| {
        s.iter()
            .filter(|x| x.0 < t)
            .map(|x| x.1 + x.2)
            .max()
            .unwrap()
    };
    let pipe = end_before(t_exit) - end_before(t0);
    assert!(pipe > 0, "new data was sent in recovery");
    let expect = if pipe < ss { pipe.max(MSS) + MSS } else { ss };
    assert_eq!(cwnd_exit, expect, "pipe {pipe}, ssthresh {ss}");
}

#[test]
fn v2024_10_takes_d43470_both_ways_and_d43470_changes_only_the_committed_lines() {
    // d43470 = false is the base tree; true is the same tree with 7dc78150c730's recovery lines.
    let base = one_loss_version(FreeBsdVersion::V15_2024_10, false);
    let patched = one_loss_version(FreeBsdVersion::V15_2024_10, true);
    assert_eq!(events(&base, 0, RECOVERY_START)[0].1, MSS);
    assert!(events(&patched, 0, RECOVERY_START)[0].1 > 100 * MSS);
    // Everything before the loss is the same tree.
    let t0 = events(&base, 0, RECOVERY_START)[0].0;
    assert_eq!(t0, events(&patched, 0, RECOVERY_START)[0].0);
    let before =
        |sim: &Simulation| -> Vec<_> { sends(sim).into_iter().filter(|s| s.0 < t0).collect() };
    assert_eq!(before(&base), before(&patched));
}

#[test]
fn committed_versions_wait_for_the_rto_when_the_retransmission_is_lost() {
    // With D43470 as committed no new data leaves in this episode (see
    // v2025_sends_no_new_data_while_the_retransmission_is_outstanding), so nothing is SACKed
    // above snd_recover and a lost retransmission is repaired by the timer only. At the RTO
    // (tcp_timer.c -> cc.c newreno_cc_cong_signal(CC_RTO), first timeout: `pipe =
    // tcp_compute_pipe(ccv->tp); snd_ssthresh = max(2, min(snd_wnd, pipe) / 2 / mss) * mss;
    // snd_cwnd = mss;`) the only byte range not SACKed is the hole, whose retransmission counts
    // in sack_bytes_rexmit and which IsLost leaves out: pipe = 1448, so ssthresh = 2 x 1448.
    for (version, d43470) in COMMITTED {
        let first = one_loss_version(version, d43470);
        let arrival = retransmission_arrival(&first);
        let sim = one_loss_version_dropping(version, d43470, &[300, arrival]);
        let st = sim.flow_stats();
        assert_eq!((st[0].recoveries, st[0].rtos), (1, 1), "{version:?}");
        let (t_rto, cwnd, ss) = events(&sim, 0, RTO)[0];
        let pipe = MSS;
        assert_eq!(
            (cwnd, ss),
            (MSS, (pipe / 2 / MSS).max(2) * MSS),
            "{version:?}: RTO cwnd and ssthresh"
        );
        let (t0, _, _) = events(&sim, 0, RECOVERY_START)[0];
        assert!(sends(&sim)
            .iter()
            .all(|s| !(s.0 > t0 && s.0 < t_rto && s.3 == 0)));
    }
}

#[test]
fn v2024_10_base_detects_the_lost_retransmission_without_the_timer() {
    // net.inet.tcp.sack.lrd = 1 (fel1x-developer tcp_sack.c @ 2d614aa2: `VNET_DEFINE(int,
    // tcp_do_lrd) = 1;`). The base sends new data in recovery; once data above snd_recover is
    // SACKed while the retransmitted hole is still missing, tcp_sack_lost_retransmission()
    // re-arms the hole and: `tp->snd_cwnd = tp->snd_ssthresh; EXIT_RECOVERY(tp->t_flags);
    // cc_cong_signal(tp, th, CC_NDUPACK); tp->snd_cwnd = tcp_maxseg(tp);` — cc.c
    // newreno_cc_cong_signal(CC_NDUPACK) takes ssthresh = max(cwnd * 50 / (100 * mss), 2) * mss
    // from that cwnd (the first ssthresh), and the hole leaves again on that ACK, with no RTO.
    // Version 2023 (`tcp_do_lrd = 0` at 2bae602e) and 15.0-2024-10 with sack.lrd = 0 wait for
    // the retransmission timer instead.
    let v = FreeBsdVersion::V15_2024_10;
    let first = one_loss_version(v, false);
    let arrival = retransmission_arrival(&first);
    let sim = one_loss_version_dropping(v, false, &[300, arrival]);
    let st = sim.flow_stats();
    assert_eq!(
        (st[0].recoveries, st[0].rtos, st[0].retrans_segs),
        (1, 0, 2)
    );
    let (t0, _, ss1) = events(&sim, 0, RECOVERY_START)[0];
    let retx: Vec<_> = sends(&sim).into_iter().filter(|s| s.3 == 1).collect();
    assert_eq!(retx.len(), 2);
    assert_eq!(
        (retx[0].1, retx[0].2),
        (retx[1].1, MSS),
        "the same hole again"
    );
    let t_lrd = retx[1].0;
    assert!(t_lrd > t0);
    let ss2 = ssthresh_samples(&sim)
        .into_iter()
        .find(|s| s.0 >= t_lrd)
        .unwrap()
        .1;
    assert_eq!(
        ss2,
        freebsd_newreno_ssthresh(ss1),
        "second reduction from cwnd = ssthresh"
    );
    // New data above snd_recover was sent before the detection (what LRD needs).
    let recover = sends(&sim)
        .iter()
        .filter(|s| s.0 < t0)
        .map(|s| s.1 + s.2)
        .max()
        .unwrap();
    assert!(sends(&sim)
        .iter()
        .any(|s| s.0 > t0 && s.0 < t_lrd && s.3 == 0 && s.1 >= recover));

    let mut off = freebsd_version_flow(30_000_000, v, false);
    off.freebsd.as_mut().unwrap().sack_lrd = Some(false);
    let mut cfg = pipe(100 * MBIT, 40 * MS, 1000, vec![off], 20 * SEC);
    cfg.links[1].ab.drop_arrivals = vec![300, arrival];
    assert_eq!(run(&cfg).flow_stats()[0].rtos, 1, "sack.lrd = 0: the timer");
}

#[test]
fn later_versions_partial_ack_without_sack_blocks_and_the_rescue_as_in_2023() {
    // The 2024-10 base keeps tcp_sack_partialack() (fel1x-developer tcp_sack.c @ 2d614aa2:
    // `tp->snd_cwnd = (tp->sackhint.sack_bytes_rexmit + (tp->snd_nxt - tp->snd_recover) +
    // num_segs * maxseg); if (tp->snd_cwnd > tp->snd_ssthresh) tp->snd_cwnd = tp->snd_ssthresh;`
    // and the rescue hole `[max(th_ack, min(snd_max, snd_recover) - maxseg), ...)` when
    // `th_ack < snd_recover && TAILQ_EMPTY(&tp->snd_holes) && delivered_data > 0`): with nothing
    // sent beyond snd_recover it is the 2023 arithmetic — cwnd 2 x 1448 when the rescue of the
    // last segment leaves, no RTO. With D43470 as committed the partial ACK without SACK blocks
    // takes the same tcp_sack_partialack() (tcp_input.c @ 62d1e135: `} else {
    // tcp_sack_partialack(tp, th, &maxseg); }`), and tcp_output.c @ 0714807e budgets the rescue
    // hole `imax(sendwin - tcp_compute_pipe(tp), 0)` = 2 x 1448 - 1448: the one segment still
    // outstanding, not IsLost (nothing is SACKed above it), so the rescue leaves too.
    let mut cases = vec![(FreeBsdVersion::V15_2024_10, false)];
    cases.extend(COMMITTED);
    for (version, d43470) in cases {
        let sim = tail_loss_version(version, d43470);
        let st = sim.flow_stats();
        assert_eq!(
            (st[0].recoveries, st[0].rtos, st[0].retrans_segs),
            (1, 0, 2)
        );
        let retx: Vec<_> = sends(&sim).into_iter().filter(|s| s.3 == 1).collect();
        assert_eq!(
            retx.iter().map(|s| (s.1, s.2)).collect::<Vec<_>>(),
            vec![(19 * MSS, MSS), (29 * MSS, MSS)]
        );
        assert_eq!(cwnd_after(&sim, retx[1].0), 2 * MSS, "{version:?}");
    }
}

#[test]
fn a_partial_ack_with_sack_blocks_takes_tcp_do_prr_ack_in_every_version() {
    // Drops at arrivals 300 and 310 (segments at 299 and 309 maxseg; every segment before the
    // recovery is a full 1448). The ACK of the first hole's retransmission moves snd_una to the
    // second hole and SACKs everything above it: `V_tcp_do_prr && to.to_flags & TOF_SACK`, so
    // resume_partialack (2023: freebsd/freebsd-src tcp_input.c @ 2bae602e; 2024-10 base:
    // ihoro/freebsd-src tcp_input.c @ 48931b3e; D43470: nibanks/freebsd-src tcp_input.c @
    // 62d1e135) calls tcp_do_prr_ack(), then tcp_output(). By hand, per version:
    // - del_data = sackhint.delivered_data from tcp_sack_doack() (fel1x-developer tcp_sack.c @
    //   2d614aa2): [snd_una, th_ack) is treated as a SACK block and only the hole bytes it
    //   covers count (`delivered_data += (cur->end - cur->start)`), so 1 maxseg, not the 10
    //   segments th_ack - snd_una (9 of them were SACKed before); `sacked_bytes +=
    //   delivered_data - left_edge_delta` leaves sacked_bytes = what is SACKed above th_ack.
    // - prr_delivered: the entry's (2023 and base: maxseg; D43470: `imin(snd_max - th_ack,
    //   (snd_limited + 1) * maxseg)` = 3 maxseg), plus one maxseg per SACKed segment after the
    //   entry's three (everything sent before the entry reaches the receiver before the
    //   retransmission, one FIFO path), plus del_data. recover_fs = snd_nxt - snd_una at entry.
    // - prr_out: every byte sent from the entry to this ACK (the sends record).
    // - pipe = tcp_compute_pipe() with snd_una not yet moved: snd_max - snd_una +
    //   sack_bytes_rexmit (the second hole's retransmission) - sacked_bytes, and since D39299
    //   (every version after 2023) - lost_bytes (the second hole, IsLost).
    // - snd_cnt: pipe >= ssthresh: `howmany(prr_delivered * ssthresh, recover_fs) - prr_out +
    //   maxseg - 1`; else `imin(ssthresh - pipe, imax(prr_delivered - prr_out, del_data) +
    //   maxseg)` (not SACK_NEWLOSS: the ACK only removes a hole); `imax(snd_cnt, 0) / maxseg`.
    // - cwnd: 2023 and base `snd_nxt - snd_recover + sack_bytes_rexmit + snd_cnt * maxseg`;
    //   D43470 `pipe - del_data + snd_cnt * maxseg`; then `imax(maxseg, snd_cwnd)`.
    // - bytes sent: before D43470 new data gets `snd_cwnd - (snd_nxt - snd_recover) -
    //   sack_bytes_rxmt` = snd_cnt * maxseg (tcp_output.c, F-Stack @ 831d8a29); with D43470
    //   (tcp_output.c @ 0714807e) `imax(imin(sbavail, sendwin) - imax(tcp_compute_pipe(tp),
    //   off), 0)` with off = snd_nxt - snd_una >= the bytes outstanding (sbavail is at least
    //   that), both before and after process_ACK moves snd_una; no hole is left to resend.
    let m = MSS;
    let mut cases = vec![
        (FreeBsdVersion::V2023, false),
        (FreeBsdVersion::V15_2024_10, false),
    ];
    cases.extend(COMMITTED);
    for (version, d43470) in cases {
        let sim = two_losses_version(version, d43470);
        let st = sim.flow_stats();
        assert_eq!((st[0].recoveries, st[0].rtos), (1, 0), "{version:?}");
        let (t0, _, ss) = events(&sim, 0, RECOVERY_START)[0];
        assert_eq!(ss, freebsd_newreno_ssthresh(cwnd_before(&sim, t0)));
        let s = sends(&sim);
        assert!(s.iter().filter(|x| x.0 < t0).all(|x| x.2 % m == 0));
        let (una0, hole2) = (299 * m, 309 * m);
        let recover = s
            .iter()
            .filter(|x| x.0 < t0)
            .map(|x| x.1 + x.2)
            .max()
            .unwrap();
        let fs = recover - una0;
        let (tp, th_ack, sack1) = acks(&sim).into_iter().find(|a| a.1 > una0).unwrap();
        assert_eq!(
            (th_ack, sack1 > th_ack),
            (hole2, true),
            "{version:?}: partial, SACK"
        );
        let before_tp: Vec<_> = s.iter().filter(|x| x.0 < tp).collect();
        let rexmit: i64 = before_tp
            .iter()
            .filter(|x| x.0 >= t0 && x.3 == 1 && x.1 == hole2)
            .map(|x| x.2)
            .sum();
        assert_eq!(rexmit, m, "the second hole was resent before this ACK");
        let del_data = m;
        let entry_delivered = if d43470 { 3 * m } else { m };
        let prr_delivered = entry_delivered + (fs - m - m - 3 * m) + del_data;
        let prr_out: i64 = before_tp.iter().filter(|x| x.0 >= t0).map(|x| x.2).sum();
        let snd_max = before_tp.iter().map(|x| x.1 + x.2).max().unwrap();
        let sacked = recover - (hole2 + m);
        let lost = if version == FreeBsdVersion::V2023 {
            0
        } else {
            m
        };
        let pipe = snd_max - una0 + rexmit - sacked - lost;
        let snd_cnt = if pipe >= ss {
            (prr_delivered * ss + fs - 1) / fs - prr_out + m - 1
        } else {
            (ss - pipe).min((prr_delivered - prr_out).max(del_data) + m)
        }
        .max(0)
            / m;
        let (cwnd, sent) = if d43470 {
            let cwnd = (pipe - del_data + snd_cnt * m).max(m);
            let off = snd_max - hole2; // the smaller off, after snd_una moves
            (cwnd, (cwnd - pipe.max(off)).max(0))
        } else {
            (
                (snd_max - recover + rexmit + snd_cnt * m).max(m),
                snd_cnt * m,
            )
        };
        let (_, cwnd_p, _) = samples(&sim, 0).into_iter().find(|x| x.0 >= tp).unwrap();
        let sent_p: i64 = s.iter().filter(|x| x.0 == tp).map(|x| x.2).sum();
        assert_eq!(
            (cwnd_p, sent_p),
            (cwnd, sent),
            "{version:?} d43470={d43470}: cwnd and bytes sent after tcp_do_prr_ack()"
        );
    }
}

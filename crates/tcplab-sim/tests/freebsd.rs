//! The FreeBSD default stack around one scripted loss: recovery entry before and after review
//! D43470 (sys/netinet/tcp_input.c `enter_recovery`), the cc.c newreno ssthresh, PRR's total
//! (tcp_do_prr_ack(), RFC 6937) and the cc.c post-recovery rule, each checked against an
//! independent calculation of the kernel's arithmetic.

mod common;
mod freebsd_common;
use common::*;
use freebsd_common::*;

use tcplab_sim::time::{MS, SEC};

#[test]
fn base_stack_enters_recovery_with_one_segment_and_retransmits_one() {
    let sim = one_loss(false);
    let st = sim.flow_stats();
    assert_eq!(
        (st[0].recoveries, st[0].rtos, st[0].retrans_segs),
        (1, 0, 1)
    );
    let start = events(&sim, 0, RECOVERY_START);
    let (t0, cwnd, ssthresh) = start[0];
    assert_eq!(cwnd, MSS, "tcp_input.c enter_recovery: snd_cwnd = maxseg");
    assert_eq!(ssthresh, freebsd_newreno_ssthresh(cwnd_before(&sim, t0)));
    let at_entry: Vec<_> = sends(&sim).into_iter().filter(|s| s.0 == t0).collect();
    assert_eq!(at_entry.len(), 1);
    assert_eq!(
        (at_entry[0].2, at_entry[0].3),
        (MSS, 1),
        "one full-segment retransmission"
    );
}

#[test]
fn d43470_enters_recovery_at_ssthresh_after_one_retransmission() {
    let sim = one_loss(true);
    let st = sim.flow_stats();
    assert_eq!(
        (st[0].recoveries, st[0].rtos, st[0].retrans_segs),
        (1, 0, 1)
    );
    let (t0, cwnd, ssthresh) = events(&sim, 0, RECOVERY_START)[0];
    assert_eq!(ssthresh, freebsd_newreno_ssthresh(cwnd_before(&sim, t0)));
    // The episode is recorded with the cwnd its retransmission left with: pipe + maxseg, where
    // pipe = a full cwnd in flight plus the two limited-transmit segments of the first two
    // dupacks (RFC 3042) less the three SACKed segments; right after it cwnd is ssthresh.
    assert_eq!(
        cwnd,
        cwnd_before(&sim, t0) + 2 * MSS - 3 * MSS + MSS,
        "cwnd = pipe + maxseg for the retransmission"
    );
    assert_eq!(cwnd_after(&sim, t0), ssthresh, "then ssthresh");
    let at_entry: Vec<_> = sends(&sim).into_iter().filter(|s| s.0 == t0).collect();
    assert_eq!(at_entry.len(), 1);
    assert_eq!((at_entry[0].2, at_entry[0].3), (MSS, 1));
}

#[test]
fn prr_sends_about_ssthresh_during_a_single_loss_recovery_in_both_versions() {
    // RFC 6937: with pipe >= ssthresh throughout, prr_out tracks ceil(prr_delivered * ssthresh /
    // RecoverFS); by the full ACK about one RecoverFS has been delivered, so the bytes sent in
    // recovery (retransmission included) come to ssthresh, within a segment per ACK of rounding.
    for d43470 in [false, true] {
        let sim = one_loss(d43470);
        let (_, _, ssthresh) = events(&sim, 0, RECOVERY_START)[0];
        let sent: i64 = sends(&sim).iter().filter(|s| s.4 == 1).map(|s| s.2).sum();
        let ratio = sent as f64 / ssthresh as f64;
        assert!(
            (0.9..=1.05).contains(&ratio),
            "d43470={d43470}: sent {sent} in recovery, ssthresh {ssthresh}"
        );
    }
}

#[test]
fn recovery_exit_follows_newreno_post_recovery() {
    // cc.c newreno_cc_post_recovery(): pipe < ssthresh ? max(pipe, mss) + mss : ssthresh; either
    // way cwnd leaves recovery at most at ssthresh and at least at two segments.
    for d43470 in [false, true] {
        let sim = one_loss(d43470);
        let (_, _, ssthresh) = events(&sim, 0, RECOVERY_START)[0];
        let (_, cwnd_exit, _) = events(&sim, 0, RECOVERY_END)[0];
        assert!(
            cwnd_exit <= ssthresh && cwnd_exit >= 2 * MSS,
            "d43470={d43470}: {cwnd_exit} vs {ssthresh}"
        );
    }
}

#[test]
fn tso_setting_decides_whether_the_initial_window_leaves_as_one_chunk() {
    // tcp_output.c: with net.inet.tcp.tso one output call hands the NIC the whole initial window
    // (10 segments); without it every send is a single segment.
    let with = sends(&one_loss_with(true, true));
    assert_eq!((with[0].1, with[0].2), (0, 10 * MSS));
    let without = sends(&one_loss_with(true, false));
    assert!(without.iter().all(|s| s.2 <= MSS));
    assert_eq!(without[0].2, MSS);
}

#[test]
fn a_partial_ack_without_sack_blocks_takes_tcp_sack_partialack_and_the_rescue_retransmission() {
    // Once segment 20's retransmission arrives the receiver holds nothing out of order, so its
    // ACK (up to segment 30) carries no SACK option. tcp_input.c resume_partialack runs PRR only
    // for `V_tcp_do_prr && to.to_flags & TOF_SACK`; otherwise tcp_sack.c tcp_sack_partialack():
    // cwnd = sack_bytes_rexmit (0: the hole is acked) + (snd_nxt - snd_recover) (0: nothing
    // new was sent) + 2 * maxseg (the ACK covered 10 segments), at most ssthresh; and with no
    // hole left and snd_recover == snd_max, the rescue retransmission of the last maxseg bytes,
    // which repairs the tail loss without waiting for the retransmission timer.
    for d43470 in [false, true] {
        let sim = tail_loss(d43470);
        let st = sim.flow_stats();
        assert_eq!(
            (st[0].recoveries, st[0].rtos, st[0].retrans_segs),
            (1, 0, 2),
            "d43470={d43470}"
        );
        let retx: Vec<_> = sends(&sim).into_iter().filter(|s| s.3 == 1).collect();
        assert_eq!(
            retx.iter().map(|s| (s.1, s.2)).collect::<Vec<_>>(),
            vec![(19 * MSS, MSS), (29 * MSS, MSS)],
            "d43470={d43470}: segment 20, then the rescue of segment 30"
        );
        let (_, _, ssthresh) = events(&sim, 0, RECOVERY_START)[0];
        assert!(2 * MSS < ssthresh);
        assert_eq!(
            cwnd_after(&sim, retx[1].0),
            2 * MSS,
            "d43470={d43470}: tcp_sack_partialack's cwnd when the rescue leaves"
        );
    }
}

#[test]
fn the_application_refills_only_when_an_ack_frees_space() {
    // uipc_socket.c sosend_generic() waits in sbwait() (iperf3: select()) until sowwakeup(),
    // which tcp_input.c calls only after sbcut_locked() freed acknowledged data; send-buffer
    // autosizing (tcp_sndbuf_autoscale()) wakes nobody. When the fast retransmission is lost
    // too, snd_una stays put until the retransmission timer, so the sender sends what was
    // written before the loss and then nothing more, although dupacks keep arriving.
    let first = sends(&one_loss(false));
    let retx = first.iter().position(|s| s.3 == 1).unwrap();
    let arrival = first[..retx]
        .iter()
        .map(|s| (s.2 + MSS - 1) / MSS)
        .sum::<i64>()
        + 1;

    let f = freebsd_flow(30_000_000, false, true);
    let mut cfg = pipe(100 * MBIT, 40 * MS, 1000, vec![f], 20 * SEC);
    cfg.record_sends = true;
    cfg.links[1].ab.drop_arrivals = vec![300, arrival as u64];
    let sim = run(&cfg);
    assert_eq!(
        sim.flow_stats()[0].rtos,
        1,
        "only the timer repairs a lost retransmission"
    );
    let (t_entry, _, _) = events(&sim, 0, RECOVERY_START)[0];
    let t_rto = events(&sim, 0, RTO)[0].0;
    let s = sends(&sim);
    let last_new = s
        .iter()
        .filter(|x| x.3 == 0 && x.0 >= t_entry && x.0 < t_rto)
        .map(|x| x.0)
        .max()
        .expect("new data is sent in recovery");
    assert!(
        t_rto - last_new > (40 * MS) as i64,
        "new data stopped {} ms before the RTO",
        (t_rto - last_new) / MS as i64
    );
}

//! The FreeBSD default stack around one scripted loss: recovery entry before and after review
//! D43470 (sys/netinet/tcp_input.c `enter_recovery`), the cc.c newreno ssthresh, PRR's total
//! (tcp_do_prr_ack(), RFC 6937) and the cc.c post-recovery rule, each checked against an
//! independent calculation of the kernel's arithmetic.

mod common;
use common::*;
use tcplab_sim::config::{AppConfig, FreeBsdKnobs};
use tcplab_sim::sim::Simulation;
use tcplab_sim::time::{MS, SEC};

const MSS: i64 = 1448;
const RECOVERY_START: i64 = 1;
const RECOVERY_END: i64 = 2;

/// 100 Mbit/s x 40 ms (BDP 345 packets), a 1000-packet buffer, one newreno flow of 30 MB, and
/// exactly one packet dropped at the bottleneck: the 300th to arrive, in slow start while the
/// window is still below the BDP, so that nothing else is ever lost.
fn one_loss_with(d43470: bool, tso: bool) -> Simulation {
    let mut f = flow("f", 0, 2, "newreno", AppConfig::Bytes { bytes: 30_000_000 });
    f.stack = "freebsd".into();
    f.freebsd = Some(FreeBsdKnobs {
        d43470,
        do_prr: true,
        sack_tso: false,
        tso,
        sendbuf_inc_bytes: 8192,
    });
    let mut cfg = pipe(100 * MBIT, 40 * MS, 1000, vec![f], 20 * SEC);
    cfg.record_sends = true;
    cfg.links[1].ab.drop_arrivals = vec![300];
    run(&cfg)
}

fn one_loss(d43470: bool) -> Simulation {
    one_loss_with(d43470, true)
}

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

//! FreeBSD's RACK stack around one scripted loss: cwnd kept on entry (rack.c rack_cong_signal()),
//! the cc.c newreno ssthresh, the bytes PRR lets out (rack_log_ack()'s PRR block, RFC 6937), the
//! exit rule (rack_post_recovery()), each against an independent calculation. The burst
//! mitigation's arithmetic is unit-tested beside it (tcp/sender/freebsd_rack.rs).

mod common;
use common::*;
use tcplab_sim::config::AppConfig;
use tcplab_sim::sim::Simulation;
use tcplab_sim::time::{MS, SEC};

const MSS: i64 = 1448;
const RECOVERY_START: i64 = 1;
const RECOVERY_END: i64 = 2;
const RTO: i64 = 3;

/// 100 Mbit/s x 40 ms, a 1000-packet buffer, one newreno flow of 30 MB on the RACK stack, and
/// exactly one packet dropped at the bottleneck (the 300th to arrive, in slow start).
fn one_loss() -> Simulation {
    let mut f = flow("f", 0, 2, "newreno", AppConfig::Bytes { bytes: 30_000_000 });
    f.stack = "freebsd-rack".into();
    let mut cfg = pipe(100 * MBIT, 40 * MS, 1000, vec![f], 20 * SEC);
    cfg.record_sends = true;
    cfg.links[1].ab.drop_arrivals = vec![300];
    run(&cfg)
}

#[test]
fn rack_keeps_cwnd_on_entry_and_sets_ssthresh_from_it() {
    let sim = one_loss();
    let st = sim.flow_stats();
    assert_eq!((st[0].recoveries, st[0].rtos), (1, 0));
    assert_eq!(st[0].retrans_segs, 1, "only the dropped segment is resent");
    let (t0, cwnd, ssthresh) = events(&sim, 0, RECOVERY_START)[0];
    let before = cwnd_before(&sim, t0);
    // rack_cong_signal(CC_NDUPACK) resets PRR and lets the cc module set ssthresh; cwnd stays.
    assert!(
        cwnd >= before,
        "cwnd at entry {cwnd} collapsed below the {before} before"
    );
    assert_eq!(ssthresh, freebsd_newreno_ssthresh(cwnd));
    // rc_prr_sndcnt = maxseg at entry: the retransmission goes at once.
    let first_retx = sends(&sim).into_iter().find(|s| s.3 == 1).unwrap();
    assert_eq!((first_retx.0, first_retx.2), (t0, MSS));
}

#[test]
fn prr_lets_about_ssthresh_out_during_recovery() {
    // rack_log_ack(): with pipe > ssthresh, sndcnt = prr_delivered * ssthresh / recovery_fs + 1
    // - prr_out, in bytes; by the full ACK about recovery_fs has been delivered, so what was sent
    // in recovery (the retransmission included) comes to ssthresh, within whole segments.
    let sim = one_loss();
    let (_, _, ssthresh) = events(&sim, 0, RECOVERY_START)[0];
    let sent: i64 = sends(&sim).iter().filter(|s| s.4 == 1).map(|s| s.2).sum();
    let ratio = sent as f64 / ssthresh as f64;
    assert!(
        (0.9..=1.05).contains(&ratio),
        "sent {sent} in recovery, ssthresh {ssthresh}"
    );
}

#[test]
fn exit_raises_cwnd_to_ssthresh_plus_at_most_two_segments_of_prr_allowance() {
    // rack_post_recovery(): cc post_recovery, then cwnd = max(cwnd, ssthresh), then
    // += min(rack_prr_addbackmax (2) * maxseg, rc_prr_sndcnt).
    let sim = one_loss();
    let (_, _, ssthresh) = events(&sim, 0, RECOVERY_START)[0];
    let (_, cwnd_exit, ssthresh_exit) = events(&sim, 0, RECOVERY_END)[0];
    assert_eq!(ssthresh_exit, ssthresh);
    assert!(
        (ssthresh..=ssthresh + 2 * MSS).contains(&cwnd_exit),
        "{cwnd_exit} vs ssthresh {ssthresh}"
    );
}

/// The one-loss run on a given rack.c version (None: the default, 2023).
fn one_loss_version(version: Option<tcplab_sim::config::FreeBsdVersion>) -> Simulation {
    let mut f = flow("f", 0, 2, "newreno", AppConfig::Bytes { bytes: 30_000_000 });
    f.stack = "freebsd-rack".into();
    if let Some(v) = version {
        f.freebsd = Some(tcplab_sim::config::FreeBsdKnobs {
            d43470: false,
            version: v,
            ..freebsd_knobs()
        });
    }
    let mut cfg = pipe(100 * MBIT, 40 * MS, 1000, vec![f], 20 * SEC);
    cfg.record_sends = true;
    cfg.links[1].ab.drop_arrivals = vec![300];
    run(&cfg)
}

/// (srtt_us, rto_us) of flow 0's samples once an RTT is known.
fn rto_samples(sim: &Simulation) -> Vec<(i64, i64)> {
    let r = &sim.rec.flows;
    let (f, s, o) = (
        r.column("flow").unwrap(),
        r.column("srtt_us").unwrap(),
        r.column("rto_us").unwrap(),
    );
    (0..f.len())
        .filter(|&i| f[i] == 0 && s[i] > 0)
        .map(|i| (s[i], o[i]))
        .collect()
}

#[test]
fn rack_2025_adds_the_200_ms_timer_slop_to_every_rto() {
    // nibanks/freebsd-src rack.c @ 0c19274c rack_init(): `rack->r_ctl.timer_slop =
    // TICKS_2_USEC(tcp_rexmit_slop);` (tcp_subr.c tcp_init(): `tcp_rexmit_slop = TCPTV_CPU_VAR;`,
    // hz / 5 = 200 ms) and RACK_TCPT_RANGESET(tv, value, tvmin, tvmax, slop): `(tv) = (value) +
    // slop;` then the bounds [rack_rto_min 30 ms, rack_rto_max 4 s]: RTO = max(30 ms, srtt + 4
    // rttvar) + 200 ms, so never below srtt + 200 ms. The 2023 model (slop 0) stays near the RTT.
    let new = rto_samples(&one_loss_version(Some(
        tcplab_sim::config::FreeBsdVersion::V15_2025,
    )));
    assert!(!new.is_empty());
    assert!(new
        .iter()
        .all(|&(srtt, rto)| rto >= srtt + 200_000 && rto <= 4_000_000));
    let old = rto_samples(&one_loss_version(None));
    assert!(old.iter().any(|&(srtt, rto)| rto < srtt + 200_000));
}

#[test]
fn rack_2025_refuses_the_2024_10_tree() {
    let mut f = flow("f", 0, 2, "newreno", AppConfig::Bytes { bytes: 1_000_000 });
    f.stack = "freebsd-rack".into();
    f.freebsd = Some(tcplab_sim::config::FreeBsdKnobs {
        d43470: false,
        version: tcplab_sim::config::FreeBsdVersion::V15_2024_10,
        ..freebsd_knobs()
    });
    let cfg = pipe(100 * MBIT, 40 * MS, 1000, vec![f], SEC);
    assert!(Simulation::new(&cfg).is_err());
}

/// A 30-segment RACK 15.0-2025 transfer whose every packet after the initial window is lost until
/// the retransmission timer fires (the second round and the tail loss probes): its RTO event
/// (t_ns, cwnd, ssthresh).
fn rto_2025(rto_cwnd: Option<tcplab_sim::config::RackRtoCwnd>) -> (i64, i64, i64) {
    let mut f = flow("f", 0, 2, "newreno", AppConfig::Bytes { bytes: 30 * 1448 });
    f.stack = "freebsd-rack".into();
    f.freebsd = Some(tcplab_sim::config::FreeBsdKnobs {
        d43470: false,
        version: tcplab_sim::config::FreeBsdVersion::V15_2025,
        rack_rto_cwnd: rto_cwnd,
        ..freebsd_knobs()
    });
    let mut cfg = pipe(100 * MBIT, 40 * MS, 1000, vec![f], 10 * SEC);
    cfg.links[1].ab.drop_arrivals = (11..=40).collect();
    events(&run(&cfg), 0, RTO)[0]
}

#[test]
fn rack_2025_rto_keeps_cwnd_and_ssthresh_unless_the_knob_says_one_mss() {
    use tcplab_sim::config::RackRtoCwnd;
    // rack.c @ 0c19274c rack_cong_signal(CC_RTO): ssthresh and cwnd are set only `if
    // (CC_ALGO(tp)->cong_signal == NULL)`; newreno has one, and CC_RTO never reaches it.
    let (_, cwnd, ssthresh) = rto_2025(None);
    assert!(cwnd > 10 * MSS, "cwnd {cwnd} after the IW's ACKs is kept");
    // No loss before the timer: ssthresh is still the initial, unbounded one (u64::MAX, which the
    // records' i64 column shows as -1).
    assert_eq!(ssthresh, -1, "ssthresh kept");
    assert_eq!(rto_2025(Some(RackRtoCwnd::Kept)), rto_2025(None));
    // "one_mss" (the late-2023 lines): ssthresh = max(2, min(snd_wnd, cwnd) / 2 / maxseg) x
    // maxseg with the same cwnd (the runs are identical until the timer), cwnd = maxseg.
    let (_, cwnd_one, ssthresh_one) = rto_2025(Some(RackRtoCwnd::OneMss));
    assert_eq!(cwnd_one, MSS);
    assert_eq!(ssthresh_one, (cwnd / 2 / MSS).max(2) * MSS);
}

/// The 15.0-2025 one-loss flow on 1 Gbit/s x 10 ms, where the burst slots are long enough for
/// ACKs to arrive during them, with or without LRO on the sender's NIC.
fn one_loss_lro(lro: bool) -> Simulation {
    let mut f = flow("f", 0, 2, "cubic", AppConfig::Bytes { bytes: 30_000_000 });
    f.stack = "freebsd-rack".into();
    f.freebsd = Some(tcplab_sim::config::FreeBsdKnobs {
        version: tcplab_sim::config::FreeBsdVersion::V15_2025,
        ..freebsd_knobs()
    });
    f.sender_lro = lro;
    let mut cfg = pipe(1000 * MBIT, 10 * MS, 1000, vec![f], 5 * SEC);
    cfg.links[1].ab.drop_arrivals = vec![600];
    run(&cfg)
}

#[test]
fn rack_with_lro_takes_the_acks_of_a_burst_slot_as_one_batch() {
    // rack_start_hpts_timer() queues ACKs while a slot runs (TF2_MBUF_QUEUE_READY) and
    // rack_do_compressed_ack_processing() takes them at the slot's end: cwnd moves only then,
    // so the per-millisecond cwnd differs from the run that takes each ACK on arrival, while
    // the loss is still repaired by one retransmission in one recovery.
    let (with, without) = (one_loss_lro(true), one_loss_lro(false));
    for sim in [&with, &without] {
        let st = sim.flow_stats();
        assert_eq!(
            (st[0].recoveries, st[0].rtos, st[0].retrans_segs),
            (1, 0, 1)
        );
    }
    assert_ne!(samples(&with, 0), samples(&without, 0));
}

//! Tests of the BBR module. Reference arithmetic: net/ipv4/tcp_bbr.c and lib/win_minmax.c.
use super::*;
use crate::cc::CcVars;

#[test]
fn gains_are_the_kernel_constants() {
    assert_eq!(HIGH_GAIN, 739); // 256 * 2885 / 1000 + 1
    assert_eq!(DRAIN_GAIN, 88); // 256 * 1000 / 2885
    assert_eq!(PACING_GAIN[0], 320);
    assert_eq!(PACING_GAIN[1], 192);
}

#[test]
fn pacing_rate_is_bw_times_gain_one_percent_below() {
    // 100 Mbit/s of 1448-byte packets: 8633.0 pkts/s = 0.0086330 pkts/µs.
    let bw = (100e6 / 8.0 / 1448.0 / 1e6 * BW_UNIT as f64) as u64;
    let rate = Bbr::rate_bytes_per_sec(1448, bw, BBR_UNIT);
    let exact = 100e6 / 8.0 * 0.99;
    assert!(
        (rate as f64 - exact).abs() / exact < 1e-5,
        "{rate} vs {exact}"
    );
    let high = Bbr::rate_bytes_per_sec(1448, bw, HIGH_GAIN);
    assert!((high as f64 / rate as f64 - 739.0 / 256.0).abs() < 1e-4);
}

#[test]
fn bdp_and_quantization_budget() {
    let mut b = Bbr {
        min_rtt_us: 40_000,
        ..Bbr::default()
    };
    // 1 packet per 100 µs for 40 ms = 400 packets; x2 gain = 800.
    let bw = (BW_UNIT / 100) as u32;
    assert_eq!(b.bdp(bw, CWND_GAIN), 800);
    assert_eq!(b.bdp(bw, BBR_UNIT), 400);
    // TSO goal at 14.48 MB/s: 14.48e6 >> 10 = 14140 bytes = 9 packets; budget 400 + 27 -> 428.
    b.pacing_rate_bytes = 14_480_000;
    assert_eq!(b.tso_segs_goal(1448), 9);
    assert_eq!(b.quantization_budget(400, 1448), 428);
    b.mode = Mode::ProbeBw;
    assert_eq!(b.quantization_budget(400, 1448), 430); // + 2 in the probing phase
    b.min_rtt_us = u32::MAX;
    assert_eq!(b.bdp(bw, CWND_GAIN), INIT_CWND);
}

#[test]
fn windowed_max_forgets_a_peak_after_the_window() {
    let mut m = MinMax::default();
    m.running_max(10, 0, 100);
    for t in 1..=10 {
        assert_eq!(m.running_max(10, t, 50), 100);
    }
    // Round 11: the peak at round 0 is 11 rounds old; the best in the window is 50.
    assert_eq!(m.running_max(10, 11, 50), 50);
}

#[test]
fn startup_exits_after_three_rounds_without_25_percent_growth() {
    let mut b = Bbr::default();
    let mut v = CcVars::new(1000, 10_000);
    v.now = 1_000_000;
    b.conn_init(&v.view, &mut v.win);
    let mut delivered = 0u64;
    let mut rate = 10i64; // packets per 1 ms round
    for round in 0..10 {
        delivered += rate as u64;
        v.delivered_pkts = delivered;
        v.now += 1_000_000;
        v.delivered_mstamp_ns = v.now;
        let rs = RateSample {
            prior_delivered: delivered - rate as u64,
            delivered: rate,
            interval_us: 1000,
            rtt_us: 1000,
            acked_sacked: rate as u64,
            ..RateSample::default()
        };
        b.on_ack(&v.view, &mut v.win, &rs);
        if round < 3 {
            rate *= 2; // growing: still STARTUP
        }
        if round < 5 {
            assert_eq!(b.mode, Mode::Startup, "round {round}");
        }
    }
    // Rounds 4, 5, 6 grow less than 25% over round 3: full_bw_cnt reaches 3 at round 6, then
    // DRAIN and, with nothing in flight, straight on to PROBE_BW.
    assert!(b.full_bw_reached);
    assert_eq!(b.mode, Mode::ProbeBw);
    assert_eq!(b.max_bw() as u64, 80 * BW_UNIT / 1000);
}

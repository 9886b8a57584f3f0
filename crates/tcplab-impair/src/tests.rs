//! Each impairment against independent arithmetic over many packets.

use super::*;

const MS: Ns = 1_000_000;

fn run(c: &NetemConfig, n: usize) -> Vec<Decision> {
    let mut q = Netem::new(c, 11);
    (0..n).map(|_| q.decide(40 * MS)).collect()
}

fn delays_ms(ds: &[Decision]) -> Vec<f64> {
    ds.iter()
        .flat_map(|d| d.copies[1])
        .map(|f| f.delay_ns as f64 / MS as f64)
        .collect()
}

fn mean_sd(x: &[f64]) -> (f64, f64) {
    let m = x.iter().sum::<f64>() / x.len() as f64;
    (
        m,
        (x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / x.len() as f64).sqrt(),
    )
}

#[test]
fn uniform_jitter_has_the_uniform_moments() {
    // delay 40ms 5ms: uniform on [35, 45) ms, sd 10 / sqrt(12).
    let c = NetemConfig {
        jitter_ns: 5 * MS,
        ..Default::default()
    };
    let (m, sd) = mean_sd(&delays_ms(&run(&c, 100_000)));
    assert!(
        (m - 40.0).abs() < 0.03 && (sd - 10.0 / 12f64.sqrt()).abs() < 0.03,
        "{m} {sd}"
    );
}

#[test]
fn normal_and_pareto_jitter_have_their_tables_moments() {
    let c = NetemConfig {
        jitter_ns: 5 * MS,
        distribution: Distribution::Normal,
        ..Default::default()
    };
    let (m, sd) = mean_sd(&delays_ms(&run(&c, 100_000)));
    assert!(
        (m - 40.0).abs() < 0.05 && (sd - 5.0).abs() < 0.1,
        "{m} {sd}"
    );
    // Pareto: heavy right tail, median below the mean.
    let c = NetemConfig {
        jitter_ns: 5 * MS,
        distribution: Distribution::Pareto,
        ..Default::default()
    };
    let mut d = delays_ms(&run(&c, 100_000));
    d.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let (m, _) = mean_sd(&d);
    assert!(
        d[d.len() / 2] < m && d[0] >= 40.0 - 5.0 * 2.0 / 3.0 - 0.01,
        "{} {m}",
        d[0]
    );
}

#[test]
fn correlation_works_on_thresholds_but_not_through_the_delays_modulo() {
    // get_crandom() averages the new 32-bit draw with the last; a threshold test (loss) sees
    // that, but tabledist() takes it modulo 2 sigma (or the table size), which keeps only the
    // low bits: netem's delay correlation leaves consecutive delays uncorrelated, and so does
    // this (the kernel's arithmetic, reproduced, not corrected).
    let lag1 = |x: &[f64]| {
        let (m, sd) = mean_sd(x);
        x.windows(2).map(|w| (w[0] - m) * (w[1] - m)).sum::<f64>() / (x.len() as f64 * sd * sd)
    };
    let corr = NetemConfig {
        jitter_ns: 5 * MS,
        delay_corr: 0.75,
        ..Default::default()
    };
    let d = delays_ms(&run(&corr, 50_000));
    assert!(lag1(&d).abs() < 0.03, "{}", lag1(&d));
    let lost = |corr: f64| {
        let c = NetemConfig {
            loss: Some(LossConfig::Random { p: 0.3, corr }),
            ..Default::default()
        };
        let x: Vec<f64> = run(&c, 100_000)
            .iter()
            .map(|d| d.copies[1].is_none() as u8 as f64)
            .collect();
        lag1(&x)
    };
    // (The averaging also narrows the draw's spread, so a correlated loss loses less than asked,
    // a known property of netem's correlation.)
    assert!(
        lost(0.0).abs() < 0.02 && lost(0.5) > 0.1,
        "{} {}",
        lost(0.0),
        lost(0.5)
    );
}

#[test]
fn reorder_with_a_gap_sends_the_expected_share_at_once() {
    // gap G, probability P: G - 1 delayed packets, then a geometric number of draws until one
    // reorders: one reordered packet per G - 1 + 1/P packets.
    for (p, gap) in [(0.25, 1u32), (0.25, 5), (0.5, 3)] {
        let c = NetemConfig {
            reorder: p,
            gap,
            ..Default::default()
        };
        let ds = run(&c, 200_000);
        let share =
            ds.iter().filter(|d| d.copies[1].unwrap().reordered).count() as f64 / ds.len() as f64;
        let want = 1.0 / ((gap - 1) as f64 + 1.0 / p);
        assert!(
            (share - want).abs() < 0.01 * want.max(0.1) + 0.003,
            "{p} {gap}: {share} vs {want}"
        );
    }
}

#[test]
fn duplicates_corruption_and_loss_have_their_rates() {
    let c = NetemConfig {
        duplicate: 0.1,
        corrupt: 0.05,
        loss: Some(LossConfig::Random { p: 0.02, corr: 0.0 }),
        ..Default::default()
    };
    let ds = run(&c, 200_000);
    let n = ds.len() as f64;
    let dup = ds.iter().filter(|d| d.copies[0].is_some()).count() as f64 / n;
    // A lost packet with a duplicate still sends one copy: lost = P(loss) * P(no dup)... and the
    // clone draws loss again.
    let none = ds.iter().filter(|d| d.sent().count() == 0).count() as f64 / n;
    let corrupt = ds
        .iter()
        .flat_map(|d| d.sent())
        .filter(|f| f.corrupt_bit.is_some())
        .count() as f64
        / ds.iter().map(|d| d.sent().count()).sum::<usize>() as f64;
    assert!((dup - 0.1 * 0.98).abs() < 0.004, "{dup}");
    assert!((none - 0.02 * 0.9).abs() < 0.002, "{none}");
    assert!((corrupt - 0.05).abs() < 0.003, "{corrupt}");
}

#[test]
fn the_same_seed_gives_the_same_decisions_and_another_does_not() {
    let c = NetemConfig {
        jitter_ns: MS,
        reorder: 0.1,
        duplicate: 0.01,
        loss: Some(LossConfig::Gemodel {
            p: 0.01,
            r: 0.3,
            loss_bad: 1.0,
            loss_good: 0.0,
        }),
        ..Default::default()
    };
    let (mut a, mut b, mut x) = (Netem::new(&c, 5), Netem::new(&c, 5), Netem::new(&c, 6));
    let da: Vec<u64> = (0..10_000).map(|_| digest(&a.decide(MS))).collect();
    assert_eq!(
        da,
        (0..10_000)
            .map(|_| digest(&b.decide(MS)))
            .collect::<Vec<_>>()
    );
    assert_ne!(
        da,
        (0..10_000)
            .map(|_| digest(&x.decide(MS)))
            .collect::<Vec<_>>()
    );
}

#[test]
fn the_delay_line_orders_by_time_unless_told_not_to_reorder() {
    let mut l = DelayLine::new(true);
    for (t, x) in [(30, 'a'), (10, 'b'), (20, 'c'), (10, 'd')] {
        l.push(t, false, x);
    }
    let out: Vec<char> = std::iter::from_fn(|| l.pop_due(100).map(|(_, x)| x)).collect();
    assert_eq!(out, ['b', 'd', 'c', 'a']);
    let mut l = DelayLine::new(false);
    for (t, x) in [(30, 'a'), (10, 'b'), (5, 'r')] {
        l.push(t, x == 'r', x);
    }
    assert_eq!(l.pop_due(29), Some((5, 'r')));
    assert_eq!(l.pop_due(29), None); // b waits for a: 30
    assert_eq!(l.pop_due(30), Some((30, 'a')));
    assert_eq!(l.pop_due(30), Some((30, 'b')));
}

//! netem's delay distributions: the tables iproute2 ships (netem/normal.c, pareto.c,
//! paretonormal.c, computed here the same way) and sch_netem.c tabledist().
//!
//! Each table is a scaled inverse CDF of 4096 signed 16-bit entries in units of
//! NETEM_DIST_SCALE (8192) per standard deviation; tabledist() picks one with a uniform draw.

use crate::prng::{Correlated, Prandom};
use serde::Deserialize;
use std::sync::OnceLock;

/// include/uapi/linux/pkt_sched.h NETEM_DIST_SCALE.
pub const NETEM_DIST_SCALE: i64 = 8192;
/// The generators' TABLESIZE.
const TABLESIZE: usize = 16384;

/// The jitter's distribution: netem's default (uniform) or one of iproute2's tables.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Distribution {
    /// `rnd % (2 sigma) - sigma`: no table.
    #[default]
    Uniform,
    /// netem/normal.c.
    Normal,
    /// netem/pareto.c (a = 3).
    Pareto,
    /// netem/paretonormal.c: (normal + 3 pareto) / 4.
    Paretonormal,
}

extern "C" {
    // glibc's erf, the function the iproute2 generators call (Rust's std has none).
    fn erf(x: f64) -> f64;
}

/// normal.c normal(): the standard normal CDF.
fn normal_cdf(x: f64) -> f64 {
    // SAFETY: a pure libm function.
    0.5 + 0.5 * unsafe { erf(x / 2f64.sqrt()) }
}

/// normal.c's inverse CDF on TABLESIZE + 1 points: x from -10 in steps of .00005, each stored at
/// rint(TABLESIZE * cdf(x)), later x overwriting earlier ones, as the C loop does.
fn inverse_normal() -> Vec<f64> {
    let mut table = vec![0.0; TABLESIZE + 1];
    let mut x = -10.0f64;
    while x < 10.05 {
        let i = (TABLESIZE as f64 * normal_cdf(x)).round_ties_even() as usize;
        table[i] = x;
        x += 0.00005;
    }
    table
}

/// The generators' final clamp to a C short.
fn short(v: i64) -> i16 {
    v.clamp(i16::MIN as i64, i16::MAX as i64) as i16
}

/// pareto.c's value for i (65536 down to 16): 1 / (i/65536)^(1/a) - 1.5, scaled, capped.
fn pareto_value(i: i64) -> i64 {
    let a = 3.0f64;
    let mut d = i as f64 / 65536.0;
    d = 1.0 / d.powf(1.0 / a);
    d -= 1.5;
    d *= (4.0 / 3.0) * NETEM_DIST_SCALE as f64;
    if d > 32767.0 {
        d = 32767.0;
    }
    d.round_ties_even() as i64
}

fn build(d: Distribution) -> Vec<i16> {
    match d {
        Distribution::Uniform => Vec::new(),
        Distribution::Normal => {
            let t = inverse_normal();
            (0..TABLESIZE)
                .step_by(4)
                .map(|i| short((t[i] * NETEM_DIST_SCALE as f64).round_ties_even() as i64))
                .collect()
        }
        Distribution::Pareto => (1..=4096)
            .rev()
            .map(|k| short(pareto_value(16 * k)))
            .collect(),
        Distribution::Paretonormal => {
            let t = inverse_normal();
            (0..TABLESIZE)
                .step_by(4)
                .map(|i| {
                    let norm = (t[i] * NETEM_DIST_SCALE as f64).round_ties_even() as i64;
                    // paretonormal.c paretovalue(i): i = 65536 - 4 i; C's int division truncates.
                    let par = pareto_value(65536 - 4 * i as i64);
                    short((norm + 3 * par) / 4)
                })
                .collect()
        }
    }
}

/// The table of a distribution (empty for uniform), computed once per process.
pub fn table(d: Distribution) -> &'static [i16] {
    static TABLES: [OnceLock<Vec<i16>>; 4] = [
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
    ];
    TABLES[d as usize].get_or_init(|| build(d))
}

/// sch_netem.c tabledist(): a value around `mu` with spread `sigma` (ns), drawn from `table`
/// (uniform if empty) with the correlated draw `state`.
pub fn tabledist(
    mu: i64,
    sigma: i64,
    state: &mut Correlated,
    p: &mut Prandom,
    table: &[i16],
) -> i64 {
    if sigma == 0 {
        return mu;
    }
    let rnd = state.draw(p);
    if table.is_empty() {
        // `((rnd % (2 * (u32)sigma)) + mu) - sigma`
        return (rnd as u64 % (2 * sigma as u64)) as i64 + mu - sigma;
    }
    let t = table[rnd as usize % table.len()] as i64;
    let mut x = (sigma % NETEM_DIST_SCALE) * t;
    if x >= 0 {
        x += NETEM_DIST_SCALE / 2;
    } else {
        x -= NETEM_DIST_SCALE / 2;
    }
    x / NETEM_DIST_SCALE + (sigma / NETEM_DIST_SCALE) * t + mu
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(t: &[i16]) -> (f64, f64) {
        let n = t.len() as f64;
        let m = t.iter().map(|&v| v as f64).sum::<f64>() / n;
        let var = t.iter().map(|&v| (v as f64 - m).powi(2)).sum::<f64>() / n;
        (
            m / NETEM_DIST_SCALE as f64,
            var.sqrt() / NETEM_DIST_SCALE as f64,
        )
    }

    #[test]
    fn the_tables_have_iproute2s_size_order_and_moments() {
        for d in [
            Distribution::Normal,
            Distribution::Pareto,
            Distribution::Paretonormal,
        ] {
            let t = table(d);
            assert_eq!(t.len(), 4096, "{d:?}");
            assert!(
                t.windows(2).all(|w| w[0] <= w[1]),
                "{d:?} is an inverse CDF"
            );
        }
        // normal.dist: mean 0, sd 1 (in units of sigma) to within the table's quantisation.
        let (m, sd) = moments(table(Distribution::Normal));
        assert!(m.abs() < 0.01 && (sd - 1.0).abs() < 0.02, "{m} {sd}");
        // iproute2's normal.dist starts at -32768 (clamped: -4 sigma) and its median ~0.
        assert_eq!(table(Distribution::Normal)[0], i16::MIN);
        assert!(table(Distribution::Normal)[2048].abs() <= 1);
        // Pareto, a = 3, x_m = 1 shifted by 1.5 and scaled by 4/3: mean (1.5 - 1.5) * 4/3 = 0
        // before the 32767 cap, which trims the heavy tail (so the table's mean is below 0).
        let (m, _) = moments(table(Distribution::Pareto));
        assert!((-0.1..0.0).contains(&m), "{m}");
        assert_eq!(table(Distribution::Pareto)[0], -5461); // (1 - 1.5) * 4/3 * 8192
    }

    #[test]
    fn tabledist_matches_the_kernels_arithmetic() {
        let mut p = Prandom::new(7);
        let mut q = Prandom::new(7);
        let mut c = Correlated::default();
        // Uniform: rnd % (2 sigma) - sigma + mu.
        let v = tabledist(1000, 10, &mut c, &mut p, &[]);
        assert_eq!(v, (q.next_u32() % 20) as i64 + 990);
        // A table: sigma 5 ms = 610 * 8192 + 2880.
        let t = table(Distribution::Normal);
        let v = tabledist(40_000_000, 5_000_000, &mut c, &mut p, t);
        let e = t[q.next_u32() as usize % 4096] as i64;
        let x = 2880 * e + if e >= 0 { 4096 } else { -4096 };
        assert_eq!(v, x / 8192 + 610 * e + 40_000_000);
        assert_eq!(tabledist(5, 0, &mut c, &mut p, t), 5);
    }
}

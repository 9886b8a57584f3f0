//! netem's loss models: random (with correlation), Gilbert-Elliott and the 4-state Markov chain
//! (sch_netem.c loss_event(), loss_gilb_ell(), loss_4state(); Salsano et al., "Definition of a
//! general and intuitive loss model for packet networks and its implementation in the Netem
//! module in the Linux kernel", 2012). Probabilities are u32 fractions of 2^32 - 1, as tc passes
//! them (q_netem.c get_percent()).

use crate::prng::{Correlated, Prandom};
use serde::Deserialize;

/// A loss model as the spec gives it (probabilities in [0, 1]).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(tag = "model", rename_all = "lowercase", deny_unknown_fields)]
pub enum LossConfig {
    /// `loss random P [CORR]`.
    Random {
        /// Loss probability.
        p: f64,
        /// Correlation with the previous draw.
        #[serde(default)]
        corr: f64,
    },
    /// `loss gemodel p r [1-h [1-k]]`: good -> bad `p`, bad -> good `r`, loss in bad `1-h`
    /// (netem's default 1), loss in good `1-k` (default 0).
    Gemodel {
        /// Good to bad.
        p: f64,
        /// Bad to good.
        r: f64,
        /// Loss probability in the bad state.
        loss_bad: f64,
        /// Loss probability in the good state.
        loss_good: f64,
    },
    /// `loss state p13 p31 p32 p23 p14`: the 4-state chain (1 gap reception, 2 burst reception,
    /// 3 burst loss, 4 isolated loss).
    State {
        /// Gap reception to burst loss.
        p13: f64,
        /// Burst loss to gap reception.
        p31: f64,
        /// Burst loss to burst reception.
        p32: f64,
        /// Burst reception to burst loss.
        p23: f64,
        /// Gap reception to isolated loss.
        p14: f64,
    },
}

/// A probability as tc hands it to the kernel: rint(p * UINT32_MAX).
pub fn prob_u32(p: f64) -> u32 {
    (p.clamp(0.0, 1.0) * u32::MAX as f64).round_ties_even() as u32
}

/// The running state of a loss model.
#[derive(Clone, Debug)]
pub enum Loss {
    /// No loss.
    None,
    /// CLG_RANDOM: `q->loss`, `q->loss_cor`.
    Random(u32, Correlated),
    /// CLG_GILB_ELL: `clg` a1..a4 and the state (true = bad).
    Gilbert([u32; 4], bool),
    /// CLG_4_STATES: a1..a5 and the state (1..4).
    FourState([u32; 5], u8),
}

impl Loss {
    /// The model's state at its start (netem: state 1, `TX_IN_GAP_PERIOD` / `GOOD_STATE`).
    pub fn new(c: Option<&LossConfig>, corr_last: u32) -> Loss {
        match c {
            None => Loss::None,
            Some(LossConfig::Random { p, corr }) => {
                Loss::Random(prob_u32(*p), Correlated::new(prob_u32(*corr), corr_last))
            }
            // q_netem.c: "netem option is 1-h but kernel expects h"; k1 is 1-k as given.
            Some(LossConfig::Gemodel {
                p,
                r,
                loss_bad,
                loss_good,
            }) => Loss::Gilbert(
                [
                    prob_u32(*p),
                    prob_u32(*r),
                    u32::MAX - prob_u32(*loss_bad),
                    prob_u32(*loss_good),
                ],
                false,
            ),
            // netem_change() get_loss_clg(): a1 = p13, a2 = p31, a3 = p32, a4 = p14, a5 = p23.
            Some(LossConfig::State {
                p13,
                p31,
                p32,
                p23,
                p14,
            }) => Loss::FourState(
                [
                    prob_u32(*p13),
                    prob_u32(*p31),
                    prob_u32(*p32),
                    prob_u32(*p14),
                    prob_u32(*p23),
                ],
                1,
            ),
        }
    }

    /// loss_event(): whether this packet is lost.
    pub fn event(&mut self, p: &mut Prandom) -> bool {
        match self {
            Loss::None => false,
            // `q->loss && q->loss >= get_crandom(&q->loss_cor, &q->prng)`
            Loss::Random(loss, cor) => *loss != 0 && *loss >= cor.draw(p),
            Loss::Gilbert(a, bad) => gilbert(a, bad, p),
            Loss::FourState(a, state) => four_state(a, state, p),
        }
    }
}

/// loss_gilb_ell(): a transition draw, then a loss draw in the new state.
fn gilbert(a: &[u32; 4], bad: &mut bool, p: &mut Prandom) -> bool {
    if !*bad {
        if p.next_u32() < a[0] {
            *bad = true;
        }
        if p.next_u32() < a[3] {
            return true;
        }
    } else {
        if p.next_u32() < a[1] {
            *bad = false;
        }
        if p.next_u32() > a[2] {
            return true;
        }
    }
    false
}

/// loss_4state(): one draw decides the next state and whether this packet is lost. The sums
/// wrap as the kernel's u32 arithmetic does.
fn four_state(a: &[u32; 5], state: &mut u8, p: &mut Prandom) -> bool {
    let rnd = p.next_u32();
    let [a1, a2, a3, a4, a5] = *a;
    match *state {
        1 => {
            if rnd < a4 {
                *state = 4;
                return true;
            } else if a4 < rnd && rnd < a1.wrapping_add(a4) {
                *state = 3;
                return true;
            } else if a1.wrapping_add(a4) < rnd {
                *state = 1;
            }
        }
        2 => {
            if rnd < a5 {
                *state = 3;
                return true;
            }
            *state = 2;
        }
        3 => {
            if rnd < a3 {
                *state = 2;
            } else if a3 < rnd && rnd < a2.wrapping_add(a3) {
                *state = 1;
            } else if a2.wrapping_add(a3) < rnd {
                *state = 3;
                return true;
            }
        }
        _ => *state = 1,
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Loss rate and mean burst length (runs of consecutive losses) over `n` packets.
    fn run(c: &LossConfig, n: usize) -> (f64, f64) {
        let mut l = Loss::new(Some(c), 0);
        let mut p = Prandom::new(3);
        let (mut lost, mut bursts, mut prev) = (0usize, 0usize, false);
        for _ in 0..n {
            let x = l.event(&mut p);
            lost += x as usize;
            bursts += (x && !prev) as usize;
            prev = x;
        }
        (lost as f64 / n as f64, lost as f64 / bursts.max(1) as f64)
    }

    #[test]
    fn gilbert_elliott_has_the_stationary_loss_and_burst_length() {
        // Simple Gilbert (loss only in bad): P(bad) = p / (p + r), bursts 1 / r long.
        let c = LossConfig::Gemodel {
            p: 0.01,
            r: 0.25,
            loss_bad: 1.0,
            loss_good: 0.0,
        };
        let (rate, burst) = run(&c, 2_000_000);
        let want = 0.01 / 0.26;
        assert!((rate - want).abs() < 0.1 * want, "{rate} vs {want}");
        assert!((burst - 4.0).abs() < 0.3, "{burst}");
    }

    #[test]
    fn random_loss_is_bernoulli_and_four_state_with_only_isolated_losses_too() {
        let (rate, burst) = run(&LossConfig::Random { p: 0.05, corr: 0.0 }, 1_000_000);
        assert!((rate - 0.05).abs() < 0.002, "{rate}");
        assert!((burst - 1.0 / 0.95).abs() < 0.02, "{burst}");
        // p14 only: every loss isolated (state 4 returns to 1), rate p14 / (1 + p14).
        let c = LossConfig::State {
            p13: 0.0,
            p31: 1.0,
            p32: 0.0,
            p23: 1.0,
            p14: 0.02,
        };
        let (rate, burst) = run(&c, 1_000_000);
        assert!(
            (rate - 0.02 / 1.02).abs() < 0.002 && burst == 1.0,
            "{rate} {burst}"
        );
    }
}

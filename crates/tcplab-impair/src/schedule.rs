//! Links that change over time: a direction's rate, delay or random loss from a given time on
//! (`[[topology.bottleneck.schedule]] at = "10s", rate = "200Mbit"`). Packets already admitted
//! keep the departure they were given; those that come later meet the new values.

use crate::Ns;
use serde::Deserialize;

/// One change.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// When, ns from the run's start.
    pub at_ns: Ns,
    /// The new rate, bit/s.
    #[serde(default)]
    pub rate_bps: Option<u64>,
    /// The new one-way delay, ns.
    #[serde(default)]
    pub delay_ns: Option<Ns>,
    /// The new random loss probability.
    #[serde(default)]
    pub loss: Option<f64>,
}

/// A direction's changes in time order and how many have been applied.
#[derive(Clone, Debug, Default)]
pub struct Schedule {
    steps: Vec<Step>,
    next: usize,
}

impl Schedule {
    /// The steps, sorted by time (stable: equal times apply in the order given).
    pub fn new(mut steps: Vec<Step>) -> Self {
        steps.sort_by_key(|s| s.at_ns);
        Schedule { steps, next: 0 }
    }

    /// The steps due by `now_ns` not yet applied, once each.
    pub fn take_due(&mut self, now_ns: Ns) -> &[Step] {
        let from = self.next;
        while self.next < self.steps.len() && self.steps[self.next].at_ns <= now_ns {
            self.next += 1;
        }
        &self.steps[from..self.next]
    }

    /// When the next step is due.
    pub fn next_ns(&self) -> Option<Ns> {
        self.steps.get(self.next).map(|s| s.at_ns)
    }

    /// Every step.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }
}

//! Multi-plane BCFW (Shah, Kolmogorov and Lampert, CVPR 2015): between
//! passes that call the oracle, approximate passes step every block towards
//! the best corner of its working set (the corners kept), with no oracle
//! call. Each step is a feasible dual step, so the dual stays a valid lower
//! bound; the certificate still comes only from exact passes.

use std::time::Instant;

use rand::seq::SliceRandom;

use super::steps::check_same_label;
use super::{BcfwState, Result};
use crate::oracle::pass::PassItem;
use crate::oracle::sparse::SparseVec;
use crate::vocab::Settings;

impl BcfwState {
    /// One approximate pass: a step on every block, in a random order.
    /// Returns how many blocks moved.
    pub fn approximate_pass(&mut self, settings: &Settings) -> usize {
        let mut order = std::mem::take(&mut self.scratch.order);
        order.clear();
        order.extend(0..self.n);
        order.shuffle(&mut self.sampling.rng);
        let moved = order
            .iter()
            .filter(|&&i| self.approximate_step(settings, i, f64::NEG_INFINITY))
            .count();
        self.scratch.order = order;
        self.count.approx_passes += 1;
        moved
    }

    /// The approximate passes after an oracle pass that raised the dual by
    /// `exact_gain` in `exact_seconds`: up to `mp_approx_passes`, ending
    /// when one gains nothing (no block moved or the dual did not rise)
    /// and, with `mp_timed`, when the dual increase per second of the last
    /// one falls below the oracle pass's (the paper's rule).
    pub fn approximate_passes(&mut self, settings: &Settings, exact_gain: f64, exact_seconds: f64) {
        let exact_rate = exact_gain / exact_seconds.max(1e-9);
        for _ in 0..settings.mp_approx_passes {
            if self.past_deadline() {
                break;
            }
            let before = self.dual();
            let started = Instant::now();
            let moved = self.approximate_pass(settings);
            let gain = self.dual() - before;
            if moved == 0 || gain <= 0.0 {
                break;
            }
            if settings.mp_timed && gain / started.elapsed().as_secs_f64().max(1e-9) < exact_rate {
                break;
            }
        }
    }
}

/// Approximate block steps between reads of the clock.
const STEPS_PER_CLOCK_READ: u32 = 64;

impl BcfwState {
    /// The time limit the approximate passes and block steps stop at (the
    /// run's; `None`: none): up to 2^32 - 1 of either ran for minutes past
    /// it.
    pub fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = deadline;
    }

    fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Up to `mp_block_steps` approximate steps on block `i` after its
    /// oracle step, ending at one that does not move or at the deadline.
    pub(super) fn approximate_block_steps(&mut self, settings: &Settings, i: usize) {
        for k in 0..settings.mp_block_steps {
            if k > 0 && k % STEPS_PER_CLOCK_READ == 0 && self.past_deadline() {
                break;
            }
            if !self.approximate_step(settings, i, f64::NEG_INFINITY) {
                break;
            }
        }
    }
}

impl BcfwState {
    /// Adds the corners of an exact pass to the working sets (they are the
    /// blocks' FW corners at the current iterate, already paid for), keeping
    /// at most `keep` inactive corners per block.
    pub(super) fn absorb_corners(&mut self, items: &mut [PassItem], keep: usize) -> Result<()> {
        for (i, item) in items.iter_mut().enumerate() {
            // Class blocks need only the label of an answer.
            let psi = match item.psi.take() {
                Some(psi) => psi,
                None if self.form.classes().is_some() => SparseVec::default(),
                None => continue,
            };
            if self.is_truth(i, item.label, item.loss, &psi) {
                continue;
            }
            match self.blocks[i].find(item.label) {
                Some(k) => {
                    let b = &mut self.blocks[i];
                    check_same_label(i, item.label, &b.atoms[k], item.loss, &psi)?;
                    let a = &mut b.atoms[k];
                    a.last_used = self.count.steps;
                    a.used_pass = self.count.passes;
                }
                None => {
                    let atom = self.new_atom(i, item.label, psi, item.loss, 0.0)?;
                    let b = &mut self.blocks[i];
                    b.atoms.push(atom);
                    b.evict(keep);
                }
            }
        }
        Ok(())
    }
}

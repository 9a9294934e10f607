//! Exact block steps on blocks held as vectors (`StepType::Exact` where the
//! oracle's corners do not factor over classes: chains, graph models, a
//! user's oracle, or any oracle under a box). A block's sub-problem with
//! the other blocks fixed is a quadratic over the simplex of all its
//! corners, which cannot be enumerated; the step solves it over the
//! corners the block keeps instead: the oracle's answer (the best corner
//! of the whole simplex at `w`) is taken with the best of a Frank-Wolfe,
//! pairwise and away step, then up to [`INNER_STEPS`] more such steps move
//! the block among its kept corners without an oracle call, until the
//! block's gap over them falls below [`INNER_TOL`] times its gap at the
//! answer. Every step is an exact line search on a feasible direction, so
//! the dual never falls and stays a valid lower bound; the gap and the
//! stopping test come from exact passes only.
//!
//! Shrinking, as for class blocks (`exact.rs`): a block whose answer is
//! its ground truth (every margin holds at `w`) and which holds no weight
//! on any other corner has block gap 0 and would not move; it is skipped
//! until the next exact pass visits every block again.

use super::steps::CornerRef;
use super::{BcfwState, Error, Result};
use crate::oracle::MaxOracle;
use crate::vocab::Settings;

/// Steps among the kept corners after a block's oracle step, at most.
const INNER_STEPS: usize = 5;

/// The block's sub-problem counts as solved once its gap over the kept
/// corners is at most this fraction of its gap at the oracle's answer.
const INNER_TOL: f64 = 0.5;

/// What exact steps on vector blocks keep between passes.
pub(crate) struct KeptExact {
    /// Blocks skipped until the next exact pass.
    shrunk: Vec<bool>,
}

impl KeptExact {
    /// The state for `n` blocks; mini-batches are refused (each block's
    /// sub-problem is solved in turn, at the `w` its predecessor left).
    pub(crate) fn new(n: usize, settings: &Settings) -> Result<Self> {
        if settings.mini_batch > 1 {
            return Err(Error::invalid_argument(
                "mini_batch > 1 does not combine with step_type Exact on an oracle whose \
                 corners do not factor over classes (its blocks step one at a time)",
            ));
        }
        Ok(KeptExact {
            shrunk: vec![false; n],
        })
    }

    /// Every block is visited again (after an exact pass scored them all).
    pub(crate) fn unshrink_all(&mut self) {
        self.shrunk.fill(false);
    }

    pub(crate) fn bytes(&self) -> usize {
        self.shrunk.capacity()
    }
}

impl BcfwState {
    /// One pass of exact steps on vector blocks: `n` draws of the sampler,
    /// shrunk blocks skipped.
    pub(super) fn kept_exact_pass(
        &mut self,
        oracle: &dyn MaxOracle,
        settings: &Settings,
    ) -> Result<()> {
        self.begin_pass(settings);
        let mut kept = self
            .form
            .take_kept_exact()
            .expect("exact steps on vector blocks");
        let mut result = Ok(());
        for _ in 0..self.n {
            let i = self.sampling.sampler.next(&mut self.sampling.rng);
            if kept.shrunk[i] {
                continue;
            }
            match self.kept_exact_step(oracle, settings, i) {
                Ok(shrink) => kept.shrunk[i] = shrink,
                Err(e) => {
                    result = Err(e.context(format!(
                        "at BCFW pass {} (block step {})",
                        self.count.passes + 1,
                        self.count.steps
                    )));
                    break;
                }
            }
        }
        self.form.put_kept_exact(kept);
        result?;
        self.count.passes += 1;
        Ok(())
    }

    /// Block `i`'s exact step; returns whether to shrink it.
    fn kept_exact_step(
        &mut self,
        oracle: &dyn MaxOracle,
        settings: &Settings,
        i: usize,
    ) -> Result<bool> {
        let (answer, gap) = self.block_step(oracle, settings, i)?;
        let stop_at = INNER_TOL * gap;
        for _ in 0..INNER_STEPS {
            if !self.approximate_step(settings, i, stop_at) {
                break;
            }
        }
        let at_truth = self.blocks[i].atoms.iter().all(|a| a.alpha == 0.0);
        Ok(answer == CornerRef::Truth && at_truth)
    }
}

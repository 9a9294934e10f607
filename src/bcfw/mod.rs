//! Block-coordinate Frank-Wolfe for structured SVMs (docs/bcfw.md):
//! BCFW (Lacoste-Julien et al. 2013) with the improvements of "Minding the
//! gaps" (Osokin et al. 2016): gap sampling, pairwise and away steps,
//! gap-based caching, box constraints and the epsilon-approximate
//! regularisation path.
//!
//! It runs through [`crate::Solver`] with [`crate::Algorithm::Bcfw`] on a
//! max-oracle problem. One iteration is one pass of `n` block steps; every
//! `gap_check` passes an exact pass (one oracle call per example, in
//! parallel) computes every block gap at the current iterate, which gives
//! the certificate `primal - dual` and refreshes the gap estimates.
//!
//! Choices where the papers leave room (also in the README):
//! - the ground truth `y_i` is the corner with loss 0 and psi 0; an oracle
//!   answer with both zero is taken as the ground truth whatever its label id;
//! - pairwise (BCPFW) and away (BCAFW) steps are each compared with the FW
//!   step on the same block, and the one with the larger exact dual decrease
//!   is taken; they always use the exact line search (`line_search = false`
//!   changes only FW steps, to `2n/(k + 2n)`);
//! - a cache hit needs `g_c >= max(cache_factor g^_i, cache_nu G^/n)` and
//!   `g_c > 0`, with `G^` the last exact gap (before the first exact pass, the
//!   sum of the estimates); on a hit the block's estimate becomes `g_c` (a
//!   lower bound of its gap). Blocks never visited always call the oracle.
//!   Inactive corners beyond `cache_size` are evicted least recently useful
//!   first; active corners are never evicted;
//! - with weighted averaging the averaged point is evaluated at each exact
//!   pass too (one more oracle pass) and the better of the two is returned;
//!   the averaged weights also give a dual bound at no cost;
//! - with exact steps on class blocks (and no weighted averaging) the exact
//!   passes near the target also evaluate the average of the dual points
//!   that ended the passes since the last exact pass, pass `s` of them
//!   weighted by `s` (`engine/average.rs`); a run that ends at it (its
//!   primal value meets the stopping rule) returns it and moves its state
//!   there. The iterate's primal value swings by
//!   about the target's 0.1 % from one pass to the next (Fashion-MNIST,
//!   lambda 1e-3) where that average's falls steadily.

mod blocks;
mod chains;
mod classes;
mod engine;
mod path;
mod sampler;
mod sparse;

use std::sync::Arc;

pub use engine::{BlockDual, CornerDual};
pub use path::Breakpoint;

pub(crate) use engine::BcfwState;
use engine::ExactPass;
pub(crate) use path::{regularization_path, PathTarget};

use crate::error::{Error, Result};
use crate::exec::precision::check_tolerance;
use crate::exec::{Context, Method};
use crate::oracle::adapters::is_deadline_passed;
use crate::oracle::MaxOracle;
use crate::vocab::{Exit, IterateView, Iteration, Settings};

/// BCFW's own figures, cumulative over the runs of one solver.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BcfwStats {
    /// Passes of `n` block steps.
    pub passes: u64,
    /// Oracle calls / n (block steps answered by the cache are free).
    pub effective_passes: f64,
    /// Max-oracle calls, exact passes included.
    pub oracle_calls: u64,
    /// Block steps answered by the cache (no oracle call).
    pub cache_hits: u64,
    /// Multi-plane approximate passes (n block steps without oracle calls).
    pub approx_passes: u64,
    /// The dual's loss term `l = sum_i l_i` (the BCFW MATLAB code's `ell`)
    /// of the iterate ([`crate::solver::BcfwHandle::iterate`]).
    pub ell: f64,
    /// `ell` paired with the `w` the last run returned, which is the best
    /// point evaluated and may be an earlier iterate or an averaged point:
    /// `ell` itself when `w` is the iterate (or under a box), else the
    /// value for which `returned_ell - lambda/2 ||w||^2` is `dual`
    /// (rounded down), so that this certificate is valid for that `w`.
    pub returned_ell: f64,
    /// The dual value at the current weights (a lower bound on min F).
    pub dual: f64,
    /// Sum of the block-gap estimates.
    pub gap_estimate: f64,
    /// The total gap of the last exact pass (infinity before the first).
    pub last_exact_gap: f64,
    /// Corners kept other than the ground truths (active set and cache).
    pub corners: u64,
    /// Corners with a positive weight, ground truths included.
    pub active_corners: u64,
    /// Blocks whose `w_i` is stored dense.
    pub dense_blocks: u64,
    /// Bytes held by the per-block state and the iterates.
    pub memory_bytes: u64,
}

/// BCFW as the executor runs it: passes of `n` block steps on a state that
/// carries over between runs (warm starts along a lambda path).
pub struct BcfwMethod<'s> {
    state: &'s mut BcfwState,
    /// Passes of this run.
    k: u64,
    /// The pass of this run that ended with an exact pass.
    last_exact_at: Option<u64>,
    limit: Option<u64>,
    /// The iterate hook asked to stop after the last pass.
    stop: bool,
    /// The state's count of untrusted answers already given to the run.
    noted: u64,
    /// Exact steps: the gap the next exact pass is measured against (the
    /// last exact pass's, or before it the first full gap estimate).
    reference_gap: f64,
    /// The run returns the pass average: the state moves to it at the end.
    adopt_average: bool,
    /// Certificates in a row whose gap is at the rounding floor, above the
    /// tolerance.
    below_rounding: u32,
}

impl<'s> BcfwMethod<'s> {
    /// A run continuing from `state`.
    pub fn new(state: &'s mut BcfwState, settings: &Settings) -> Self {
        let noted = state.count.doubtful;
        state.start_pass_average(
            settings.step_type == crate::vocab::StepType::Exact && !settings.weighted_averaging,
        );
        BcfwMethod {
            state,
            k: 0,
            last_exact_at: None,
            limit: engine::pass_limit(settings),
            stop: false,
            noted,
            reference_gap: f64::INFINITY,
            adopt_average: false,
            below_rounding: 0,
        }
    }

    /// Gives the run the untrusted answers the state counted since the last
    /// call (so the run reports `certified == false`).
    fn note_doubtful(&mut self, ctx: &Context<'_>) {
        ctx.oracles
            .answers
            .note(self.state.count.doubtful - self.noted);
        self.noted = self.state.count.doubtful;
    }

    /// Exact steps: whether the gap estimate of the shrunk problem (every
    /// block's gap before its last step, over its active classes) has
    /// fallen to the stopping rule's gap `max(tol_abs, tol_rel |dual|)`, or
    /// by the factor [`EXACT_GAP_DROP`] below the reference gap. The first
    /// says the certificate may be reached; the second, that the shrunk
    /// problem is nearly solved and the shrinking must be re-checked (as
    /// LIBLINEAR re-checks every class once its shrunk problem meets a
    /// tolerance it halves each time). So the exact passes come when they
    /// are useful, not only every `gap_check` passes.
    fn target_near(&mut self, settings: &Settings) -> bool {
        if settings.step_type != crate::vocab::StepType::Exact || !self.state.all_estimated() {
            return false;
        }
        let estimate = self.state.gap_estimate();
        if !self.reference_gap.is_finite() {
            self.reference_gap = estimate;
            return false;
        }
        estimate
            <= self
                .wanted_gap(settings)
                .max(EXACT_GAP_DROP * self.reference_gap)
    }

    /// The gap the stopping rule asks for at the current dual value.
    fn wanted_gap(&self, settings: &Settings) -> f64 {
        settings
            .tol_abs
            .max(settings.tol_rel * self.state.certified_dual().abs())
    }

    /// An exact pass at the iterate (and at the average): a certificate.
    /// The pass average is evaluated when its primal value may end the run
    /// (the iterate's gap within [`PASS_AVERAGE_WITHIN`] times the gap the
    /// stopping rule asks for) and at the run's `last` pass. It is offered
    /// as the point to return only where the run ends at it (its primal
    /// value meets the stopping rule, or this is the last pass), and then
    /// the state moves to it when the run finishes: the point returned is
    /// the final iterate, with its own `ell` and dual value.
    fn certify(
        &mut self,
        ctx: &mut Context<'_>,
        oracle: &dyn MaxOracle,
        last: bool,
    ) -> Result<ExactPass> {
        let e = self.state.exact_pass(oracle, ctx.pool, true)?;
        ctx.offer(self.state.w(), e.primal, e.risk);
        if let Some(avg) = self.state.average_point() {
            evaluate_average(oracle, self.state, ctx, &avg)?;
        }
        let near = e.gap <= PASS_AVERAGE_WITHIN * self.wanted_gap(ctx.settings);
        let Some(avg) = self.state.take_pass_average().filter(|_| near || last) else {
            return Ok(e);
        };
        let (primal, risk) = self.state.primal_at(oracle, ctx.pool, &avg)?;
        ctx.raise_lower_bound(self.state.certified_dual());
        let ends = last || ctx.converged_at(primal).is_some();
        if ends && ctx.offer(&avg, primal, risk) {
            self.adopt_average = true;
        }
        Ok(e)
    }
}

/// Exact steps: an exact pass once the shrunk problem's gap estimate has
/// fallen by this factor below the reference gap ([`BcfwMethod`]). On
/// 10,000 Fashion-MNIST images 0.3 took 565 passes (8 exact) to 0.1 % at
/// lambda 1e-3 where 0.1 took 694 (5 exact) and an exact pass every 10
/// passes 540 (54 exact), at 0.66x and 0.77x the CPU time.
const EXACT_GAP_DROP: f64 = 0.3;

/// Exact steps: the pass average's primal value is evaluated at an exact
/// pass whose iterate's gap is within this factor of the gap the stopping
/// rule asks for. On Fashion-MNIST at lambda 1e-3 the average's gap was
/// 0.58-0.66 of the iterate's at the exact passes (0.93 times the asked gap
/// at the pass that stopped, where the iterate's was 1.6 times); further
/// off, its pass (about half an exact pass's time) would be spent in vain.
const PASS_AVERAGE_WITHIN: f64 = 3.0;

/// The share of the time limit the certificate after it may take: a pass
/// of a fast oracle makes it, a slow decoder's (seconds per example) is cut
/// between two examples instead of running a whole pass past the limit.
const FINISH_GRACE: f64 = 0.25;

/// When the certificate after a time limit of `limit` seconds gives up.
fn finishing_deadline(limit: f64) -> Option<std::time::Instant> {
    let grace = std::time::Duration::try_from_secs_f64(FINISH_GRACE * limit).unwrap_or_default();
    std::time::Instant::now().checked_add(grace)
}

/// The counted max-oracle of a run; BCFW runs only on one.
fn examples(ctx: &Context<'_>) -> Result<Arc<dyn MaxOracle>> {
    ctx.oracles
        .examples
        .clone()
        .ok_or_else(|| Error::no_oracle("BCFW needs an example max-oracle"))
}

impl Method for BcfwMethod<'_> {
    fn start(&mut self, _ctx: &mut Context<'_>, _w: &[f64]) -> Result<()> {
        // The start is the state's own iterate (the solver checks `w` is it).
        Ok(())
    }

    fn step(&mut self, ctx: &mut Context<'_>, k: u64) -> Result<Iteration> {
        let oracle = examples(ctx)?;
        let settings = ctx.settings;
        self.k = k;
        self.state.set_deadline(ctx.deadline());
        ctx.oracles.pass_deadline.set(ctx.deadline());
        let before = self.state.dual();
        let started = std::time::Instant::now();
        let mut exact = None;
        let batch = settings.mini_batch as usize;
        if settings.step_type == crate::vocab::StepType::Exact {
            self.state
                .exact_steps_pass(oracle.as_ref(), settings, ctx.pool)?;
            self.state.add_to_pass_average();
        } else if batch >= self.state.num_examples() {
            // An exact pass at w, then a step per block towards its answer:
            // the certificate of this pass is the exact pass's.
            let (e, at) = self
                .state
                .full_batch_pass(oracle.as_ref(), settings, ctx.pool)?;
            ctx.offer(&at, e.primal, e.risk);
            if let Some(avg) = self.state.average_point() {
                evaluate_average(oracle.as_ref(), self.state, ctx, &avg)?;
            }
            self.last_exact_at = Some(k);
            exact = Some(e);
        } else if batch > 1 {
            self.state.batch_pass(oracle.as_ref(), settings, ctx.pool)?;
        } else {
            self.state.pass(oracle.as_ref(), settings)?;
        }
        if settings.multi_plane {
            let gain = self.state.dual() - before;
            let seconds = started.elapsed().as_secs_f64();
            self.state.approximate_passes(settings, gain, seconds);
        }
        // Every gap_check passes since the last exact pass, or sooner when
        // every block's estimate is known and their sum is below
        // early_exact_factor * tol_abs (gapBCFW's quit_passes_heuristic_gap).
        let since = k - self.last_exact_at.unwrap_or(0);
        let early = settings.early_exact_factor > 0.0
            && settings.tol_abs > 0.0
            && self.state.all_estimated()
            && self.state.gap_estimate() <= settings.early_exact_factor * settings.tol_abs;
        let near = self.target_near(settings);
        if exact.is_none() && (since >= u64::from(settings.gap_check) || early || near) {
            let e = self.certify(ctx, oracle.as_ref(), false)?;
            self.reference_gap = e.gap;
            exact = Some(e);
            self.last_exact_at = Some(k);
        }
        let mut traced = None;
        if settings.trace_gap && exact.is_none() {
            // Not part of the algorithm: uncounted and off the clock.
            if let Some(raw) = ctx.oracles.uncounted.clone() {
                let state = &mut *self.state;
                let e = ctx.off_the_clock(|c| state.exact_pass(raw.as_ref(), c.pool, false))?;
                traced = Some(e.gap);
            }
        }
        self.note_doubtful(ctx);
        let dual = self.state.certified_dual();
        if !dual.is_finite() {
            return Err(Error::non_finite(format!(
                "BCFW's dual value is {dual} after pass {k}"
            )));
        }
        if let Some((j, x)) = crate::linalg::first_non_finite(self.state.w()) {
            return Err(Error::non_finite(format!(
                "BCFW's iterate w[{j}] is {x} after pass {k}"
            )));
        }
        ctx.raise_lower_bound(dual);
        if let Some(d) = self.state.dual_of_average() {
            ctx.raise_lower_bound(d);
        }
        // The rounding allowance grows with the steps: a tolerance below it
        // is never met, however long the run.
        if exact.is_some() {
            let allowance = self.state.dual() - dual;
            self.below_rounding = check_tolerance(allowance, dual, ctx, self.below_rounding, k)?;
        }
        self.stop = settings.iterate_hook.as_ref().is_some_and(|h| {
            self.state.with_iterate(|w, ell, dual, averaged| {
                h.call(&IterateView {
                    pass: k,
                    w,
                    ell,
                    dual,
                    averaged,
                })
                .is_break()
            })
        });
        Ok(engine::pass_row(self.state, exact.as_ref(), traced))
    }

    fn own_limit(&self) -> Option<u64> {
        self.limit
    }

    fn stop_requested(&self) -> bool {
        self.stop
    }

    /// A fresh certificate at the point the run stops at.
    /// The state moves to the pass average when that is the point returned.
    fn finish(&mut self, ctx: &mut Context<'_>, exit: Exit) -> Result<Exit> {
        let converged = matches!(exit, Exit::ConvergedRel | Exit::ConvergedAbs);
        let mut exit = exit;
        if !converged && self.last_exact_at != Some(self.k) {
            let oracle = examples(ctx)?;
            if exit == Exit::TimeLimit {
                let until = finishing_deadline(ctx.settings.time_limit_seconds);
                ctx.oracles.pass_deadline.set(until);
                self.state.set_deadline(until);
            }
            // A certificate cut short is no certificate: the last complete
            // one stands.
            match self.certify(ctx, oracle.as_ref(), true) {
                Err(e) if is_deadline_passed(&e) => exit = Exit::TimeLimit,
                other => {
                    other?;
                }
            }
            self.note_doubtful(ctx);
            if let Some(done) = ctx.converged() {
                exit = done;
            }
        }
        if std::mem::take(&mut self.adopt_average) {
            self.state.adopt_pass_average();
        }
        Ok(exit)
    }
}

/// The primal value at the averaged point (one pass of the oracle or of
/// the class scores), offered as the returned point.
fn evaluate_average(
    oracle: &dyn MaxOracle,
    state: &mut BcfwState,
    ctx: &mut Context<'_>,
    avg: &[f64],
) -> Result<()> {
    let (primal, risk) = state.primal_at(oracle, ctx.pool, avg)?;
    ctx.offer(avg, primal, risk);
    Ok(())
}

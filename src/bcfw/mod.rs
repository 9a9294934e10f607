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
//!   the averaged weights also give a dual bound at no cost.

mod blocks;
mod bounds;
mod dual_io;
mod engine;
mod hook;
mod pass;
mod path;
mod sampler;
mod sparse;

use std::time::Instant;

pub use bounds::Bounds;
pub use dual_io::{BlockDual, CornerDual};
pub use hook::{IterateHook, IterateView};
pub use pass::PassItem;
pub use path::Breakpoint;
pub use sparse::SparseVec;

pub(crate) use engine::BcfwState;
#[cfg_attr(not(feature = "mpi"), allow(unused_imports))]
pub(crate) use pass::{local_pass, on_oracle_thread};
pub(crate) use path::{regularization_path, PathTarget};

use crate::error::Result;
use crate::oracle::MaxOracle;
use crate::solver::{Exit, Run};

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
    /// The dual's loss term `l = sum_i l_i` (the BCFW MATLAB code's `ell`).
    pub ell: f64,
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

/// Runs passes until a stopping rule holds. The state carries over between
/// runs (warm starts along a lambda path).
pub(crate) fn run_bcfw(
    oracle: &dyn MaxOracle,
    state: &mut BcfwState,
    run: &mut Run<'_>,
    pool: &rayon::ThreadPool,
) -> Result<Exit> {
    let settings = run.settings;
    let limit = engine::pass_limit(settings);
    let calls0 = state.oracle_calls;
    let seconds0 = state.oracle_seconds;
    let mut k = 0u64;
    let mut last_exact_at = None;
    let exit = loop {
        k += 1;
        state.pass(oracle, settings)?;
        let mut exact = None;
        // Every gap_check passes since the last exact pass, or sooner when
        // every block's estimate is known and their sum is below
        // early_exact_factor * tol_abs (gapBCFW's quit_passes_heuristic_gap).
        let since = k - last_exact_at.unwrap_or(0);
        let early = settings.early_exact_factor > 0.0
            && settings.tol_abs > 0.0
            && state.all_estimated()
            && state.gap_estimate() <= settings.early_exact_factor * settings.tol_abs;
        if since >= u64::from(settings.gap_check) || early {
            let e = state.exact_pass(oracle, pool, true)?;
            run.offer(state.w(), e.primal, e.risk);
            if let Some(avg) = state.average_point() {
                evaluate_average(oracle, state, run, pool, &avg)?;
            }
            last_exact_at = Some(k);
            exact = Some(e);
        }
        let mut traced = None;
        if settings.trace_gap && exact.is_none() {
            // Not part of the algorithm: its time is taken off the clock.
            let t = Instant::now();
            let seconds = state.oracle_seconds;
            let e = state.exact_pass(oracle, pool, false)?;
            state.oracle_seconds = seconds;
            traced = Some(e.gap);
            run.started += t.elapsed();
        }
        run.raise_lower_bound(state.dual());
        if let Some(d) = state.dual_of_average() {
            run.raise_lower_bound(d);
        }
        run.info.oracle_calls = state.oracle_calls - calls0;
        run.info.oracle_seconds = state.oracle_seconds - seconds0;
        let stop = settings.iterate_hook.as_ref().is_some_and(|h| {
            state.with_iterate(|w, ell, dual, averaged| {
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
        let mut row = engine::pass_row(state, exact.as_ref(), traced);
        row.iteration = k;
        if let Some(exit) = run.finish_iteration(row) {
            break exit;
        }
        if stop {
            break Exit::StoppedByUser;
        }
        if limit.is_some_and(|m| k >= m) {
            break Exit::MaxIterations;
        }
    };
    // A fresh certificate at the point the run stops at.
    let converged = matches!(exit, Exit::ConvergedRel | Exit::ConvergedAbs);
    if !converged && last_exact_at != Some(k) {
        let e = state.exact_pass(oracle, pool, true)?;
        run.offer(state.w(), e.primal, e.risk);
        if let Some(avg) = state.average_point() {
            evaluate_average(oracle, state, run, pool, &avg)?;
        }
        run.info.oracle_calls = state.oracle_calls - calls0;
        run.info.oracle_seconds = state.oracle_seconds - seconds0;
        if let Some(done) = run.converged() {
            return Ok(done);
        }
    }
    Ok(exit)
}

/// The primal value at the averaged point (one oracle pass).
fn evaluate_average(
    oracle: &dyn MaxOracle,
    state: &mut BcfwState,
    run: &mut Run<'_>,
    pool: &rayon::ThreadPool,
    avg: &[f64],
) -> Result<()> {
    let t = Instant::now();
    let items = pass::on_oracle_thread(oracle.thread_safe(), pool, || {
        pass::oracle_pass(oracle, avg, false, "in the pass at the averaged point")
    })?;
    state.oracle_seconds += t.elapsed().as_secs_f64();
    state.oracle_calls += items.len() as u64;
    let risk = items.iter().map(|x| x.hinge).sum::<f64>() / items.len() as f64;
    let primal = 0.5 * state.lambda() * crate::linalg::norm2(avg) + risk;
    run.offer(avg, primal, risk);
    Ok(())
}

//! One oracle call per example at a fixed `w`: BCFW's exact gap passes and
//! the regularisation path's lambda_max passes. The calls are independent,
//! so they run in parallel when the oracle is thread-safe; every result is
//! stored per example and reduced in example order, so the sums are the same
//! for any number of threads.

use rayon::prelude::*;

use std::time::Instant;

use super::adapters::{call_max_oracle_block_until, ORACLE_BLOCK};
pub use super::answers::{below_rounding, below_truth, screen_answer, AnswerLog};
use super::sparse::{CornerScratch, SparseVec};
use super::{Corner, MaxOracle};
use crate::error::{Error, Result};

/// What the oracle answered for one example.
#[derive(Debug, Clone)]
pub struct PassItem {
    /// `H_i(w) = L_i(y^) - <w, psi_i(y^)>`, clipped at the ground truth's 0.
    pub hinge: f64,
    /// Whether the answer can be trusted as a maximiser ([`screen_answer`]):
    /// not marked inexact and not clipped at the ground truth.
    pub exact: bool,
    /// `L_i(y^)`, the loss of the answer.
    pub loss: f64,
    /// The answer's label id (`y^`).
    pub label: u64,
    /// `psi_i(y^)`, when the caller asked to keep the corners.
    pub psi: Option<SparseVec>,
}

/// Calls the oracle of every example at `w`; `keep_psi` keeps the corners.
/// An oracle that makes the whole pass itself ([`MaxOracle::eval_pass`],
/// the distributed one) is asked to.
pub fn oracle_pass(
    oracle: &dyn MaxOracle,
    w: &[f64],
    keep_psi: bool,
    context: &str,
) -> Result<Vec<PassItem>> {
    match oracle.eval_pass(w, keep_psi) {
        Some(items) => items.and_then(screen_items),
        None => local_pass(oracle, 0, w, keep_psi),
    }
    .map_err(|e| e.context(context.to_string()))
}

/// The answers of an oracle's own pass ([`MaxOracle::eval_pass`]) screened
/// as [`screen_answer`] screens a corner: an answer below the truth by more
/// than rounding becomes the truth (hinge 0, loss 0, no psi, not exact).
fn screen_items(mut items: Vec<PassItem>) -> Result<Vec<PassItem>> {
    for (i, item) in items.iter_mut().enumerate() {
        if !item.hinge.is_finite() {
            return Err(Error::non_finite(format!(
                "max-oracle answer for example {i} has H = L - <w, psi> = {}",
                item.hinge
            )));
        }
        if item.hinge < 0.0 && below_rounding(item.hinge, item.loss, item.loss - item.hinge) {
            *item = PassItem {
                hinge: 0.0,
                exact: false,
                loss: 0.0,
                label: 0,
                psi: item.psi.as_ref().map(|_| SparseVec::default()),
            };
        }
    }
    Ok(items)
}

/// Runs `f`, which calls an oracle, in `pool` when the oracle may be called
/// from any thread, and on the caller's thread otherwise: an oracle that is
/// not thread-safe (MATLAB's, Python's) must only ever see the thread that
/// called the solver, also in BCFW's exact, averaged and path passes.
pub fn on_oracle_thread<R: Send>(
    thread_safe: bool,
    pool: &rayon::ThreadPool,
    f: impl FnOnce() -> R + Send,
) -> R {
    if thread_safe {
        pool.install(f)
    } else {
        f()
    }
}

/// The pass over the examples of `oracle` in this process; its example `i`
/// is named `offset + i` in errors (a shard of a larger problem).
pub fn local_pass(
    oracle: &dyn MaxOracle,
    offset: usize,
    w: &[f64],
    keep_psi: bool,
) -> Result<Vec<PassItem>> {
    local_pass_until(oracle, offset, w, keep_psi, None)
}

/// [`local_pass`], giving up at `deadline` between two examples an oracle
/// answers one at a time (a slow decoder's pass could run far past the time
/// limit); a pass cut short is an error, never a partial answer.
pub(crate) fn local_pass_until(
    oracle: &dyn MaxOracle,
    offset: usize,
    w: &[f64],
    keep_psi: bool,
    deadline: Option<Instant>,
) -> Result<Vec<PassItem>> {
    let n = oracle.num_examples();
    let dim = oracle.dim();
    // One block of examples, asked at once, answered in example order.
    let block = |state: &mut (Vec<Corner>, CornerScratch), first: usize| -> Result<Vec<PassItem>> {
        let (corners, scratch) = state;
        let len = ORACLE_BLOCK.min(n - first);
        corners.resize(len, Corner::new(dim));
        let corners = &mut corners[..len];
        call_max_oracle_block_until(oracle, first, offset + first, w, corners, deadline)?;
        let mut items = Vec::with_capacity(len);
        for (j, corner) in corners.iter_mut().enumerate() {
            let dot = corner.dot(w);
            let (hinge, exact) = screen_answer(corner, dot, offset + first + j)?;
            items.push(PassItem {
                hinge,
                exact,
                loss: corner.loss(),
                label: corner.label(),
                psi: keep_psi.then(|| SparseVec::from_corner(corner, scratch)),
            });
        }
        Ok(items)
    };
    let firsts: Vec<usize> = (0..n).step_by(ORACLE_BLOCK).collect();
    let blocks: Vec<Result<Vec<PassItem>>> = if oracle.thread_safe() {
        firsts
            .into_par_iter()
            .map_init(|| (Vec::new(), CornerScratch::default()), block)
            .collect()
    } else {
        let mut state = (Vec::new(), CornerScratch::default());
        firsts.into_iter().map(|f| block(&mut state, f)).collect()
    };
    let mut items = Vec::with_capacity(n);
    for b in blocks {
        items.extend(b?);
    }
    Ok(items)
}

//! One oracle call per example at a fixed `w`: BCFW's exact gap passes and
//! the regularisation path's lambda_max passes. The calls are independent,
//! so they run in parallel when the oracle is thread-safe; every result is
//! stored per example and reduced in example order, so the sums are the same
//! for any number of threads.

use rayon::prelude::*;

use super::adapters::{call_max_oracle_block, ORACLE_BLOCK};
use super::sparse::{CornerScratch, SparseVec};
use super::{Corner, MaxOracle};
use crate::error::{Error, Result};

/// What the oracle answered for one example.
#[derive(Debug, Clone)]
pub struct PassItem {
    /// `H_i(w) = L_i(y^) - <w, psi_i(y^)>`.
    pub hinge: f64,
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
        Some(items) => items,
        None => local_pass(oracle, 0, w, keep_psi),
    }
    .map_err(|e| e.context(context.to_string()))
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
    let n = oracle.num_examples();
    let dim = oracle.dim();
    // One block of examples, asked at once, answered in example order.
    let block = |state: &mut (Vec<Corner>, CornerScratch), first: usize| -> Result<Vec<PassItem>> {
        let (corners, scratch) = state;
        let len = ORACLE_BLOCK.min(n - first);
        corners.resize(len, Corner::new(dim));
        let corners = &mut corners[..len];
        call_max_oracle_block(oracle, first, offset + first, w, corners)?;
        let mut items = Vec::with_capacity(len);
        for (j, corner) in corners.iter().enumerate() {
            let dot = corner.dot(w);
            let hinge = corner.loss() - dot;
            check_not_below_truth(
                hinge,
                corner.loss(),
                dot,
                corner.label(),
                offset + first + j,
            )?;
            items.push(PassItem {
                hinge,
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

/// The ground truth `y_i` has `H_i(y_i) = 0` (loss 0, psi 0), so the
/// oracle's maximiser cannot be below it: if it is, the oracle does not
/// maximise, and every gap and step built on it would be wrong.
pub fn check_not_below_truth(hinge: f64, loss: f64, dot: f64, label: u64, i: usize) -> Result<()> {
    let scale = loss.abs() + dot.abs();
    if hinge < -(1e-9 * scale + 1e-12) {
        return Err(Error::oracle(format!(
            "max-oracle for example {i} returned label {} with H = L - <w, psi> = {hinge:.6e}, \
             below the ground truth's H = 0: the oracle does not return the loss-augmented \
             argmax (is psi = phi(x, y_i) - phi(x, y^) and the loss added?)",
            label
        )));
    }
    Ok(())
}

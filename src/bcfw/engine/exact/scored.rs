//! Exact gap passes of exact-step runs from every example's class scores
//! ([`crate::oracle::ClassRows::scores_pass`]): each answer by enumerating the `K`
//! classes with their losses (the loss-augmented maximum, the truth first
//! and a class replacing it only on a strict increase, the multiclass
//! oracle's rule), `<w, w_i>` from the same scores, and the shrinking
//! state re-derived at `w` instead of cleared: a block at its truth with
//! every margin holding, and a class without weight below every weighted
//! class, are what the next pass would find again by scoring them, so it
//! skips them at once (as LIBLINEAR's shrinking keeps its active set
//! between its outer iterations). The gap and the certificate come from
//! these scores, which are the exact products.

use rayon::prelude::*;

use super::super::{BcfwState, Error, Result};
use super::{active, alpha_of, block_shrinks, ExactSteps};
use crate::oracle::pass::{on_oracle_thread, PassItem};
use crate::oracle::{Factoring, MaxOracle};

/// What one block's scores give: its pass item, `<w, w_i>`, and whether
/// the block (and which of its classes) would be shrunk at `w`.
struct Scored {
    item: PassItem,
    w_dot_wi: f64,
    shrink: bool,
    off: Vec<bool>,
}

impl BcfwState {
    /// The answers and `<w, w_i>` of every block from one pass of class
    /// scores, with the shrinking state at `w` set into `ex` when
    /// `refresh`; `None` when the oracle gives no such pass.
    pub(in super::super) fn scored_pass(
        &self,
        oracle: &dyn MaxOracle,
        pool: &rayon::ThreadPool,
        ex: &mut ExactSteps,
        refresh: bool,
    ) -> Option<Result<(Vec<PassItem>, Vec<f64>)>> {
        let cb = self.form.classes()?;
        let Factoring::Classes(rows) = oracle.factoring() else {
            return None;
        };
        let k = cb.k;
        let w = point!(self);
        let mut scores = vec![0.0; self.n * k];
        let done = on_oracle_thread(oracle.thread_safe(), pool, || {
            rows.scores_pass(w, &mut scores)
        })?;
        let losses = &ex.losses;
        let lambda_n = self.lambda * self.n as f64;
        // Per thread: alpha_i, and no class left out.
        let scratch = || (Vec::new(), vec![false; k]);
        let one = |(alpha, none_off): &mut (Vec<f64>, Vec<bool>),
                   (i, s): (usize, &[f64])|
         -> Result<Scored> {
            let t = cb.rows.truth(i);
            let loss = losses.of(i, t);
            let (best, best_score) = answer(i, t, s, loss)?;
            let coef = cb.coef(i);
            let mut w_dot_wi = 0.0;
            for (&c, &sc) in coef.iter().zip(s) {
                if c != 0.0 {
                    w_dot_wi += c * sc;
                }
            }
            let shrink = block_shrinks(coef, t, s, loss, none_off);
            // alpha_i unmoved by the pass: the classes a step would shrink.
            alpha_of(coef, t, lambda_n, alpha);
            let mut off = Vec::with_capacity(k);
            active::classes_to_shrink(none_off, t, alpha, alpha, s, loss, &mut off);
            let wrong = best != t;
            Ok(Scored {
                item: PassItem {
                    hinge: if wrong { best_score - s[t] } else { 0.0 },
                    exact: true,
                    loss: loss[best],
                    label: best as u64,
                    psi: None,
                },
                w_dot_wi,
                shrink,
                off,
            })
        };
        let result = done.and_then(|()| {
            pool.install(|| {
                scores
                    .par_chunks(k)
                    .enumerate()
                    .map_init(scratch, one)
                    .collect::<Result<Vec<Scored>>>()
            })
        });
        Some(result.map(|blocks| {
            let mut items = Vec::with_capacity(blocks.len());
            let mut dots = Vec::with_capacity(blocks.len());
            for (i, b) in blocks.into_iter().enumerate() {
                if refresh {
                    ex.shrunk[i] = b.shrink;
                    ex.class_off[i * k..(i + 1) * k].copy_from_slice(&b.off);
                    ex.classes_off[i] = b.off.iter().filter(|&&o| o).count() as u32;
                }
                items.push(b.item);
                dots.push(b.w_dot_wi);
            }
            (items, dots)
        }))
    }

    /// The risk at `point`, not the iterate, from one pass of class scores
    /// (the answers taken as [`Self::scored_pass`] takes them), summed in
    /// example order; `None` when the oracle gives no such pass.
    pub(in super::super) fn scored_risk(
        &self,
        oracle: &dyn MaxOracle,
        pool: &rayon::ThreadPool,
        ex: &ExactSteps,
        point: &[f64],
    ) -> Option<Result<f64>> {
        let cb = self.form.classes()?;
        let Factoring::Classes(rows) = oracle.factoring() else {
            return None;
        };
        let k = cb.k;
        let mut scores = vec![0.0; self.n * k];
        let done = on_oracle_thread(oracle.thread_safe(), pool, || {
            rows.scores_pass(point, &mut scores)
        })?;
        let hinge = |(i, s): (usize, &[f64])| -> Result<f64> {
            let t = cb.rows.truth(i);
            let (best, best_score) = answer(i, t, s, ex.losses.of(i, t))?;
            Ok(if best != t { best_score - s[t] } else { 0.0 })
        };
        Some(done.and_then(|()| {
            let hinges = pool.install(|| {
                scores
                    .par_chunks(k)
                    .enumerate()
                    .map(hinge)
                    .collect::<Result<Vec<f64>>>()
            })?;
            Ok(hinges.iter().sum::<f64>() / self.n as f64)
        }))
    }
}

/// Example `i`'s answer from its class scores `s` and losses (truth `t`):
/// the loss-augmented maximum, the truth first and a class replacing it
/// only on a strict increase (the multiclass oracle's rule), with its
/// value; an error when a score is not finite.
fn answer(i: usize, t: usize, s: &[f64], loss: &[f64]) -> Result<(usize, f64)> {
    let (mut best, mut best_score) = (t, s[t]);
    for m in (0..s.len()).filter(|&m| m != t) {
        let v = loss[m] + s[m];
        if !v.is_finite() || !s[t].is_finite() {
            return Err(Error::non_finite(format!(
                "the class scores of example {i} are not finite (class {m}: {}, truth {t}: {})",
                s[m], s[t]
            )));
        }
        if v > best_score {
            (best, best_score) = (m, v);
        }
    }
    Ok((best, best_score))
}

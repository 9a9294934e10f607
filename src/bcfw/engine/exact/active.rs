//! Class-level shrinking of exact block steps, after the shrinking of
//! Keerthi et al. (KDD 2008, section 4) that LIBLINEAR's `-s 4` does: a
//! class `m != t` of block `i` with `alpha_i(m) = 0` whose loss-augmented
//! score is below that of every class holding weight, `L_m + s_m < min_{k:
//! alpha_k > 0} (L_k + s_k)`, would keep its 0 weight in the block's
//! sub-problem; it is neither scored nor stepped on the later visits, until
//! the next exact pass re-checks every class of every block (and, scoring
//! them all at once, keeps such classes shrunk). Steps on the
//! remaining classes are exact on the face `alpha_i(m) = 0` of the block's
//! simplex, a feasible point of the whole dual: every dual value is still a
//! lower bound, and the gap and the stopping test come only from the exact
//! passes, which score all classes.

use crate::error::{Error, Result};
use crate::oracle::ClassRows;

/// Block `i`'s scores of its active classes (`off[m]` false) at `w` into
/// `scores` (0 for the others), and its loss-augmented argmax among them:
/// `(class, loss)`, the truth first and a class replacing it only on a
/// strict increase, in increasing order (the multiclass oracle's rule).
pub(super) fn score_active(
    rows: &dyn ClassRows,
    i: usize,
    w: &[f64],
    off: &[bool],
    losses: &[f64],
    scores: &mut [f64],
) -> Result<(usize, f64)> {
    let truth = rows.truth(i);
    rows.row_dots(i, off, w, scores);
    for (m, s) in scores.iter().enumerate() {
        if !s.is_finite() {
            return Err(Error::non_finite(format!(
                "the score of class {m} of example {i} is {s}"
            )));
        }
    }
    let mut best = truth;
    let mut best_score = scores[truth];
    for m in (0..scores.len()).filter(|&m| m != truth && !off[m]) {
        let s = losses[m] + scores[m];
        if s > best_score {
            best = m;
            best_score = s;
        }
    }
    Ok((best, losses[best]))
}

/// Which classes of a block to shrink after a visit, into `off_out`: those
/// shrunk already (`off_in`), and every other class `m != truth` whose
/// weight was 0 before the step (`alpha[m]`) and is 0 after it
/// (`alpha_new[m]`), with `L_m + s_m` below `L_k + s_k` of every class `k`
/// holding weight before the step.
pub(super) fn classes_to_shrink(
    off_in: &[bool],
    truth: usize,
    alpha: &[f64],
    alpha_new: &[f64],
    scores: &[f64],
    losses: &[f64],
    off_out: &mut Vec<bool>,
) {
    let g_min = (0..alpha.len())
        .filter(|&k| !off_in[k] && alpha[k] > 0.0)
        .map(|k| losses[k] + scores[k])
        .fold(f64::INFINITY, f64::min);
    off_out.clear();
    off_out.extend((0..alpha.len()).map(|m| {
        off_in[m]
            || (m != truth
                && alpha[m] == 0.0
                && alpha_new[m] == 0.0
                && losses[m] + scores[m] < g_min)
    }));
}

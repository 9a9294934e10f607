//! Screening a max-oracle's answers: an answer below the ground truth is
//! clipped to it, and the answers a run cannot trust are counted, so that
//! the run can say whether its gap certifies (`Info::certified`).

use std::sync::atomic::{AtomicU64, Ordering};

use super::Corner;
use crate::error::{Error, Result};

/// Counts the oracle answers of a solver's runs that cannot be trusted as
/// maximisers: marked inexact ([`Corner::mark_inexact`]) or below the ground
/// truth (then clipped, [`screen_answer`]). A run that adds to it reports
/// `Info::certified == false`. Shared by every consumer of the corners of
/// one solver (the example parts of the bundle methods, BCFW, SGD).
#[derive(Debug, Default)]
pub struct AnswerLog {
    doubtful: AtomicU64,
}

impl AnswerLog {
    /// Records `n` answers that cannot be trusted.
    pub fn note(&self, n: u64) {
        if n > 0 {
            self.doubtful.fetch_add(n, Ordering::Relaxed);
        }
    }
    /// The answers recorded so far.
    pub fn doubtful(&self) -> u64 {
        self.doubtful.load(Ordering::Relaxed)
    }
}

/// Screens the oracle's answer in `corner` whose `<w, psi>` is `dot`
/// against the ground truth `y_i`, which has `H_i = 0` (loss 0, psi 0) and
/// is always feasible, so the maximiser cannot be below it. An answer below
/// it is replaced by the truth (the zero corner, label 0): the example's risk
/// becomes `max(0, L - <w, psi>)` and every plane or dual corner stays one
/// of the true risk. A hinge below 0 by no more than the rounding of
/// `L - <w, psi>` is a tie with the truth and is kept as it is (the answer
/// is a feasible labelling either way; replacing it would change the
/// iterates' last bits for nothing). Returns the hinge to use and whether
/// the answer can be trusted: false when the oracle marked it inexact or
/// when it was clipped. Example `i` is named in the error of a hinge that is
/// not finite.
pub fn screen_answer(corner: &mut Corner, dot: f64, i: usize) -> Result<(f64, bool)> {
    let loss = corner.loss();
    if below_truth(loss, dot, i)? {
        corner.clear();
        return Ok((0.0, false));
    }
    Ok((loss - dot, corner.is_exact()))
}

/// Whether an answer of loss `loss` and `<w, psi> = dot` falls below the
/// ground truth by more than rounding ([`screen_answer`]: then it becomes
/// the truth); an error naming example `i` when its hinge is not finite.
pub fn below_truth(loss: f64, dot: f64, i: usize) -> Result<bool> {
    let hinge = loss - dot;
    if !hinge.is_finite() {
        return Err(Error::non_finite(format!(
            "max-oracle answer for example {i} has H = L - <w, psi> = {hinge} \
             (loss {loss}, <w, psi> = {dot})"
        )));
    }
    Ok(hinge < 0.0 && below_rounding(hinge, loss, dot))
}

/// Whether a hinge below 0 is further below than the rounding of `loss -
/// dot` explains.
pub fn below_rounding(hinge: f64, loss: f64, dot: f64) -> bool {
    hinge < -(1e-9 * (loss.abs() + dot.abs()) + 1e-12)
}

//! Solver of the multi-simplex QP (see the parent module for the problem):
//! warm-started pairwise coordinate ascent in the style of SMO, run on a
//! working set, with Newton steps on the support.
//!
//! # Pair steps
//!
//! Write `g = f - H beta / mu` for the gradient of `D`. Moving weight
//! `delta` from a plane `v` of part `p` with `beta_v > 0` to a plane `u` of
//! the same part keeps `beta` feasible and changes `D` by
//!
//! ```text
//! delta (g_u - g_v) - delta^2 c / (2 mu),    c = H_uu + H_vv - 2 H_uv >= 0,
//! ```
//!
//! a concave parabola, maximised over `[0, beta_v]` by
//! `delta = min((g_u - g_v) mu / c, beta_v)`; if `c` is zero up to rounding
//! (`c <= 8 eps (H_uu + H_vv)`, e.g. two identical planes) `D` is linear
//! along the step and `delta = beta_v`. The pair is the most violating one
//! of the part: `u = argmax_{i in p} g_i`, `v = argmin_{i in p, beta_i > 0} g_i`
//! (lowest index among ties). If `g_u <= g_v`, all of the support has the
//! part's largest gradient, which is the optimality condition of the part.
//! After a step `g -= (delta / mu) (H[., u] - H[., v])`: one fused pass over
//! two columns, so an update costs `O(planes)` and allocates nothing.
//!
//! For feasible `beta` and every part `p`, `max_{i in p} g_i - sum_{i in p}
//! beta_i g_i` is what the linearisation of `D` at `beta` gains on the
//! simplex of `p`; by concavity their sum bounds `max D - D(beta)`. This is
//! the gap tested against `tol_gap` and returned.
//!
//! # Which part
//!
//! Parts are visited cyclically. A sweep starts with a scan of every part
//! (which also gives the exact gap for the stopping test); the parts whose
//! gap is at most `1 / (4 num_parts)` of the total are skipped in that
//! sweep (together they hold at most a quarter of it), each other part gets
//! one pair step, after a rescan of that part alone. Always updating the part
//! of largest gap instead needs a scan of all planes per update, not of one
//! part. Measured with the plain `O(planes)` updates on simulated P-BMRM
//! runs (hinge loss, 4,000 examples, dimension 60, up to 4,000 planes,
//! `lambda = 1e-3` and `1e-4`), the largest-gap rule made anywhere from 40%
//! fewer to twice as many updates, each ~3 times dearer (3.7 against
//! 1.25 us at 3,000 planes): the total QP time was 2.5 to 6 times longer
//! with 16 parts (4.7 s against 1.9 s, 3.1 s against 0.5 s) and 64 parts
//! (5.8 s against 2.1 s, 3.2 s against 0.9 s), and the same with one part.
//! Single cold solves of 3,000-plane instances agree: 16 parts 7.1 s
//! against 3.4-4.2 s, 64 parts 14.9 s against 2.6-3.2 s.
//!
//! # Working set
//!
//! Most pair steps of a bundle QP move weight among the few planes of the
//! support, yet each costs a pass over all planes. So the updates run in
//! rounds on a working set: the support plus, per part, the planes whose
//! gradient exceeds the support's smallest (the `max(16, support size)`
//! largest of them). The set gets its own gradient and a copy of its block
//! of `H`, column by column as the steps first use them, and its updates
//! cost `O(set size)`. A round stops at a tenth of the gap it started from
//! (or the tolerance); the weight changes are then applied to the full
//! gradient column by column, the full gap is measured, and a new set is
//! chosen. A set of more than 2,048 planes is not copied; the updates then
//! run on all planes and the gradient is recomputed from scratch after the
//! round. On the same QP instances from simulated runs as above, with
//! 1 / 16 / 64 parts, this took the QP time from 1.30 / 0.56 / 0.97 s to
//! 0.69 / 0.15 / 0.22 s (`lambda = 1e-3`, `tol_gap = 1e-8`), and from
//! 12.1 / 9.3 / 5.6 s to 2.0 / 2.1 / 1.3 s (`lambda = 1e-4`, 2,000 planes).
//!
//! # Newton steps
//!
//! Pair updates converge linearly, at a rate set by the conditioning of `H
//! / mu` on the support. A bundle of a few hundred planes in a few dozen
//! dimensions at small lambda is badly conditioned: on the landmarks graph
//! problem (92 weights, `lambda = 1e-2`) a solve took up to 1.7 million
//! updates and BMRM spent 94 % of its run in the QP. So once a round has
//! made `NEWTON_AFTER` (100) pair updates per plane without reaching its
//! target, and again after every `planes` more (or as many as the last
//! phase's steps cost, `support^3 / (3 planes)` each, if more), the solver
//! takes up to 8 Newton steps on the face of the current support
//! (`newton.rs`): towards the maximiser of `D` on the support's affine
//! hull (every part's sum kept), from a Cholesky factorisation of the
//! reduced Hessian, as far as `D` rises and every weight stays `>= 0`. A
//! step cut short by a weight reaching 0 drops that plane (or, if it gains
//! more, every plane the full step would take below 0) and the next step
//! solves the smaller face; a full step ends the phase, and the pair
//! updates bring in the planes the face lacks. The steps only move along
//! feasible directions and only when `D` rises, so `beta` stays feasible
//! and every bound it gives stays valid whatever the rounding. A Newton
//! step counts as one update.
//!
//! The delay keeps the solves that pair updates finish as they were. A
//! face solved exactly moves `w` further than a warm-started solve stopped
//! at its tolerance, and that costs BMRM iterations: with the first phase
//! after 1 update per plane, BMRM on the OCR words needed 1,342 / 3,751
//! iterations at `lambda = 0.01 / 0.001` against 872 / 2,199, and after 10
//! per plane BMRM on Fashion-MNIST needed 1,159 / 3,667 against 782 / 2,015
//! at `lambda_sum = 10 / 1`, and P-BMRM spent 32 % of its run in the QP
//! against 9 %. After 100 per plane Prox-P-BMRM and P-BMRM need the
//! iterations they did (203 / 332 and 357 / 684 against 203 / 332 and 357
//! / 682) and BMRM 759 / 2,432 against 782 / 2,015. On the
//! landmarks problem (200 images, 7 x 7 positions, `lambda = 1e-2`) BMRM
//! took 37 s instead of 159 s (the QP 22 s instead of 150 s, though 2,725
//! iterations instead of 1,562) and Prox-P-BMRM 26 s instead of 283 s; the
//! QPs of `huge_features_never_give_a_bound_above_the_primal` (features
//! scaled to 1e8-1e30) no longer run to their stall rule (that test: 6 s
//! instead of 195 s).
//!
//! # Numerics and stopping
//!
//! The gradient is computed from scratch on entry (the warm start). After a
//! round on the working set it is updated by the exact weight changes, not
//! by the rounds' incremental updates, so it carries no drift; after a
//! round on all planes it is recomputed from scratch. The returned `gap`
//! and `value` (`(f.beta + g.beta) / 2`) come from this gradient, at the
//! returned `beta`, which is renormalised to sum 1 per part after each
//! round.
//!
//! Besides `tol_gap` and `max_updates` (0 = no limit), the solver stops when
//! more cannot be had in floating point: when the gap is at most
//! `64 eps sum_p max_{i in p} (|f_i| + |(H beta)_i| / mu)` (the rounding
//! noise of `g`), when a sweep changes nothing, or when twice in a row
//! `10,000 + 10 * (planes in the set)` updates have raised `D` by at most
//! `16 eps (|f.beta| + beta.H beta / (2 mu))` in total (`D` no longer
//! changes). It therefore always stops, even with `tol_gap = 0` and no
//! update limit; the gap it returns is then honest but above `tol_gap`.
//! Ill-conditioned problems (`H / mu` large against `f`, many parts sharing
//! few dimensions) converge slowly and can reach that state with a gap of
//! `1e-8` or so relative to `max |g|`.
//!
//! `H` is read only in the columns of planes that carry weight at some
//! point (whole, for the gradient) and in the block of a working set. What
//! is read is checked: a non-finite entry gives [`Error::non_finite`] naming
//! it, a column of the wrong length [`Error::dimension_mismatch`]. Entries
//! never read cannot influence the result and are not inspected: checking
//! all of `H` would cost `O(planes^2)` per call, more than a warm-started
//! solve usually does.
//!
//! Everything is serial and in a fixed order (no hashing, no threads, no
//! randomness), so equal inputs give the same bits.

mod columns;
mod newton;
mod sweep;
mod working_set;

use super::{Gram, QpOptions, QpResult};
use crate::error::{Error, Result};
use newton::Newton;
use sweep::{Counter, Stat};
use working_set::{Solver, WorkingSet};

/// A curvature `c` at most this times `eps (H_uu + H_vv)` is rounding noise.
const CURV_NOISE: f64 = 8.0;
/// A gap at most this times `eps * scale` is rounding noise (see [`Solver::noise_floor`]).
const GAP_NOISE: f64 = 64.0;
/// In a sweep, parts with a gap at most `total / (SKIP_DEN num_parts)` are skipped.
const SKIP_DEN: f64 = 4.0;
/// An inner solve on the working set stops at `KAPPA` times the gap it
/// started from (or at the tolerance).
const KAPPA: f64 = 0.1;
/// At least this many violators of a part enter the working set.
const MIN_VIOLATORS: usize = 16;
/// A working set of more planes than this is not copied out: the updates
/// then run on all planes and the columns of `H` (the copy of the block
/// would take up to `BLOCK_MAX^2` numbers).
const BLOCK_MAX: usize = 2048;
/// Outer iterations at most (a safety net; far from ever reached).
const MAX_OUTER: u32 = 10_000;
/// Updates are given up as stalled when `STALL_BASE + STALL_PER_PLANE * size`
/// of them in a row raise `D` by at most `GAIN_NOISE eps` times its scale:
/// then `D` no longer changes in floating point.
const STALL_BASE: u64 = 10_000;
const STALL_PER_PLANE: u64 = 10;
const GAIN_NOISE: f64 = 16.0;
/// A round's first Newton phase comes after this many pair updates per
/// plane: a QP that pair updates solve within them is left to them.
const NEWTON_AFTER: u64 = 100;
/// No column.
const NONE: usize = usize::MAX;

/// Solves the multi-simplex QP
///
/// ```text
/// max_beta  -1/(2 mu) beta^T H beta + f^T beta
/// s.t.      beta >= 0,  sum_{i : part[i] = p} beta_i = 1  for p in 0..num_parts
/// ```
///
/// starting from `beta` (warm start) and leaving the solution in `beta`.
///
/// The entry `beta` need not be feasible: negative entries are set to 0,
/// then each part with a positive sum is rescaled to sum 1, and a part with
/// sum 0 gets weight 1 on its plane with the largest `f_i` (the lowest index
/// among ties).
///
/// Stops when the duality gap is at most `opts.tol_gap`, after
/// `opts.max_updates` pair updates (0 = no limit), at `opts.deadline`, or
/// when the gap cannot
/// be reduced further in floating point (see the module documentation). The
/// returned `value` and `gap` are those of the returned `beta`, with the
/// gradient computed without drift.
///
/// # Errors
///
/// * [`Error::dimension_mismatch`] if `f`, `part` or `beta` is not of length
///   `h.size()`, a column of `H` that is read is not of that length, or some
///   `part[i] >= num_parts`;
/// * [`Error::invalid_argument`] if `mu` is not finite and positive,
///   `opts.tol_gap` is NaN, or a part has no plane;
/// * [`Error::non_finite`] if `f`, the entry `beta` or an entry of `H` that is
///   read holds NaN or an infinity (the message names the index), or the
///   gradient overflows.
pub fn solve(
    h: &dyn Gram,
    mu: f64,
    f: &[f64],
    part: &[usize],
    num_parts: usize,
    beta: &mut [f64],
    opts: &QpOptions,
) -> Result<QpResult> {
    solve_impl(h, mu, f, part, num_parts, beta, opts, BLOCK_MAX)
}

/// [`solve`] with the largest working set copied out as a parameter (the
/// tests force both ways of updating with it).
#[allow(clippy::too_many_arguments)]
fn solve_impl(
    h: &dyn Gram,
    mu: f64,
    f: &[f64],
    part: &[usize],
    num_parts: usize,
    beta: &mut [f64],
    opts: &QpOptions,
    block_max: usize,
) -> Result<QpResult> {
    let n = h.size();
    for (name, len) in [("f", f.len()), ("part", part.len()), ("beta", beta.len())] {
        if len != n {
            return Err(Error::dimension_mismatch(format!(
                "QP: {name} has length {len} but H has size {n}"
            )));
        }
    }
    if !(mu.is_finite() && mu > 0.0) {
        return Err(Error::invalid_argument(format!(
            "QP: mu must be finite and positive, got {mu}"
        )));
    }
    if opts.tol_gap.is_nan() {
        return Err(Error::invalid_argument("QP: tol_gap is NaN"));
    }
    let parts = Lists::of_parts(part, num_parts)?;
    if let Some(i) = first_non_finite(f) {
        return Err(Error::non_finite(format!("QP: f[{i}] = {}", f[i])));
    }
    if let Some(i) = first_non_finite(beta) {
        return Err(Error::non_finite(format!(
            "QP: entry beta[{i}] = {}",
            beta[i]
        )));
    }
    if n == 0 {
        return Ok(QpResult {
            value: 0.0,
            gap: 0.0,
            updates: 0,
        });
    }
    project(beta, f, &parts);
    let mut s = Solver {
        h,
        mu,
        f,
        parts,
        g: vec![0.0; n],
        checked: vec![false; n],
        stats: vec![Stat::default(); num_parts],
        count: Counter {
            updates: 0,
            max: opts.max_updates,
            deadline: opts.deadline,
            expired: false,
        },
        ws: WorkingSet::default(),
        newton: Newton::default(),
        block_max,
    };
    s.run(beta, opts.tol_gap)
}

/// Index lists of the planes of every part, each in increasing order.
#[derive(Default)]
struct Lists {
    /// `idx[start[p]..start[p + 1]]` are the planes of part `p`.
    start: Vec<usize>,
    idx: Vec<usize>,
}

impl Lists {
    fn of_parts(part: &[usize], num_parts: usize) -> Result<Self> {
        let mut start = vec![0usize; num_parts + 1];
        for (i, &p) in part.iter().enumerate() {
            if p >= num_parts {
                return Err(Error::dimension_mismatch(format!(
                    "QP: part[{i}] = {p} but there are {num_parts} parts"
                )));
            }
            start[p + 1] += 1;
        }
        if let Some(p) = (0..num_parts).find(|&p| start[p + 1] == 0) {
            return Err(Error::invalid_argument(format!(
                "QP: part {p} has no plane"
            )));
        }
        for p in 0..num_parts {
            start[p + 1] += start[p];
        }
        let mut next = start.clone();
        let mut idx = vec![0usize; part.len()];
        for (i, &p) in part.iter().enumerate() {
            idx[next[p]] = i;
            next[p] += 1;
        }
        Ok(Lists { start, idx })
    }

    fn len(&self) -> usize {
        self.start.len() - 1
    }

    #[inline]
    fn list(&self, p: usize) -> &[usize] {
        &self.idx[self.start[p]..self.start[p + 1]]
    }
}

/// Makes `beta` feasible (see [`solve`]).
fn project(beta: &mut [f64], f: &[f64], parts: &Lists) {
    for b in beta.iter_mut() {
        if *b < 0.0 {
            *b = 0.0;
        }
    }
    for p in 0..parts.len() {
        let list = parts.list(p);
        let max = list.iter().fold(0.0f64, |m, &i| m.max(beta[i]));
        if max > 0.0 {
            // Scale by the largest entry first so the sum cannot overflow.
            let sum: f64 = list.iter().map(|&i| beta[i] / max).sum();
            for &i in list {
                beta[i] = (beta[i] / max) / sum;
            }
        } else {
            let mut best = list[0];
            for &i in list {
                if f[i] > f[best] {
                    best = i;
                }
            }
            beta[best] = 1.0;
        }
    }
}

/// Rescales every part of `beta` to sum 1 (undoing the rounding drift of
/// the updates).
fn renormalise(beta: &mut [f64], parts: &Lists) {
    for p in 0..parts.len() {
        let list = parts.list(p);
        let sum: f64 = list.iter().map(|&i| beta[i]).sum();
        for &i in list {
            beta[i] /= sum;
        }
    }
}

/// The index of the first non-finite entry, if any.
fn first_non_finite(x: &[f64]) -> Option<usize> {
    // `x * 0` is NaN exactly for non-finite `x`; the sum vectorises.
    let mut acc = [0.0f64; 4];
    let chunks = x.chunks_exact(4);
    let rest = chunks.remainder();
    for c in chunks {
        acc[0] += c[0] * 0.0;
        acc[1] += c[1] * 0.0;
        acc[2] += c[2] * 0.0;
        acc[3] += c[3] * 0.0;
    }
    let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for v in rest {
        s += v * 0.0;
    }
    if s == 0.0 {
        None
    } else {
        x.iter().position(|v| !v.is_finite())
    }
}

/// Column `j` of `H` after checking its length.
#[inline]
fn column_of(h: &dyn Gram, j: usize) -> Result<&[f64]> {
    let c = h.column(j);
    if c.len() != h.size() {
        return Err(Error::dimension_mismatch(format!(
            "QP: column {j} of H has length {} but H has size {}",
            c.len(),
            h.size()
        )));
    }
    Ok(c)
}

/// The error for a non-finite entry `H[i][j]`.
fn non_finite_h(i: usize, j: usize, v: f64) -> Error {
    Error::non_finite(format!("QP: H[{i}][{j}] = {v}"))
}

#[cfg(test)]
mod tests;

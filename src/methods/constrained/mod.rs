//! The reduced problem of the bundle methods under constraints on `w`
//! (docs/bundle-methods.md, "Constraints"): a box `lo <= w <= hi` and rows
//! `G w >= h`,
//!
//! ```text
//! min_{w in box, G w >= h} lambda/2 ||w||^2 + alpha ||w - c||^2 + sum_p max_{i in p} (<a_i, w> + b_i)
//! ```
//!
//! With `mu = lambda + 2 alpha`, `beta` on the parts' simplices, `nu >= 0`
//! for the rows and `v = (2 alpha c - A^T beta + G^T nu) / mu`, the
//! Lagrangian's minimiser over the box is `w = clip(v)` and the dual is
//!
//! ```text
//! D(beta, nu) = b.beta + h.nu + alpha ||c||^2 - mu/2 ||v||^2 + mu/2 dist(v, box)^2,
//! ```
//!
//! concave and piecewise quadratic, with gradient `b + A w` in `beta` and
//! `h - G w` in `nu`. Each row's multiplier (of the row scaled to norm 1)
//! is capped, `nu_r <= U_r`, and written `U_r sigma_r` with `(sigma_r, 1 -
//! sigma_r)` on a two-point simplex of its own: the dual is then a
//! multi-simplex problem like the unconstrained one (the row a plane
//! `-U_r g_r` with offset `U_r h_r`, beside a zero plane). A cap that is
//! reached is raised 16-fold and the problem solved again from the same
//! multipliers. Every coordinate without a finite bound has `w_j = v_j`, so
//! `D` and its gradient need only the Gram matrix `K` of the planes and rows
//! and their entries on the bounded coordinates. The dual is maximised by
//! the primal-dual active-set method over the multi-simplex QP solver of
//! `crate::qp` (with the clipped coordinates held at their bounds the dual
//! is that QP; see `Reduced::active_set`; its matrix is kept between the
//! solves on the same planes and updated by rank-one terms when the clipped
//! set changes, `clipped_gram`), then, if its gap is still above
//! the tolerance, by accelerated projected gradient (FISTA with a restart
//! whenever `D` falls; step `1 / L`, `L = lambda_max(K) / mu` bounded by
//! the smaller of the trace and the largest absolute row sum of `K`).
//!
//! For any `beta` on the simplices and `nu >= 0`, `D` is at most the reduced
//! problem's minimum, which is at most `min F` over the feasible set: the
//! value returned is always `D` at the returned multipliers, whatever the
//! solve reached. The primal point is `clip(v)`, which is in the box; when
//! it violates a row (by about the solve's accuracy) it is repaired by
//! projections onto the violated rows and the box, and if that fails moved
//! towards the anchor (the best point so far, feasible); the final vector
//! is checked as computed (see `repair`).

mod clipped_gram;
mod dual;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Instant;

use crate::bundle::{Bundle, Certified};
use crate::error::{Error, Result};
use crate::linalg::{dist, dot, norm2};
use crate::oracle::Bounds;
use crate::qp::QpOptions;
use clipped_gram::ClippedGram;
use dual::{qp_column, Reduced};

/// The constraints of a run: a box and/or linear rows `G w >= h`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Constraints {
    /// The box (`None`: no bounds).
    pub bounds: Option<Bounds>,
    /// The rows of `G`, each of the problem's dimension.
    pub rows: Vec<Vec<f64>>,
    /// The right-hand sides `h`.
    pub rhs: Vec<f64>,
}

impl Constraints {
    /// Whether nothing constrains `w`.
    pub fn is_empty(&self) -> bool {
        self.bounds.is_none() && self.rows.is_empty()
    }

    /// Checks and sets the rows: `matrix` holds `rhs.len()` rows of `dim`
    /// numbers, row after row; every number finite.
    pub fn set_rows(&mut self, matrix: &[f64], rhs: &[f64], dim: usize) -> Result<()> {
        if matrix.len() != rhs.len() * dim {
            return Err(Error::dimension_mismatch(format!(
                "the constraint matrix has {} numbers but {} rows of dimension {dim} need {}",
                matrix.len(),
                rhs.len(),
                rhs.len() * dim
            )));
        }
        for (r, h) in rhs.iter().enumerate() {
            if !h.is_finite() {
                return Err(Error::non_finite(format!(
                    "the right-hand side b[{r}] of A w >= b is {h}"
                )));
            }
            let row = &matrix[r * dim..(r + 1) * dim];
            if let Some((j, v)) = crate::linalg::first_non_finite(row) {
                return Err(Error::non_finite(format!(
                    "the constraint matrix entry A[{r}][{j}] is {v}"
                )));
            }
        }
        self.rows = matrix.chunks(dim.max(1)).map(<[f64]>::to_vec).collect();
        self.rows.truncate(rhs.len());
        self.rhs = rhs.to_vec();
        Ok(())
    }

    /// `G w - h` of row `r`.
    fn slack(&self, r: usize, w: &[f64]) -> f64 {
        dot(&self.rows[r], w) - self.rhs[r]
    }

    /// The first row `w` violates, with its slack.
    pub fn violated_row(&self, w: &[f64]) -> Option<(usize, f64)> {
        (0..self.rows.len())
            .map(|r| (r, self.slack(r, w)))
            .find(|&(_, s)| s < 0.0)
    }

    /// Projects a start onto the box and refuses one that then violates a
    /// row (projecting onto the rows is a QP of its own).
    pub fn prepare_start(&self, w: &mut [f64]) -> Result<()> {
        if let Some(b) = &self.bounds {
            let clipped = b.clip_all(w);
            w.copy_from_slice(&clipped);
        }
        if let Some((r, s)) = self.violated_row(w) {
            return Err(Error::invalid_argument(format!(
                "the start w (projected onto the box) violates row {r} of A w >= b by {}: \
                 give a start that satisfies the linear constraints",
                -s
            )));
        }
        Ok(())
    }
}

/// What a constrained solve gives.
pub struct Solved {
    /// `D` at the returned multipliers: a lower bound on the reduced minimum.
    pub value: f64,
    /// The feasible primal point.
    pub w: Vec<f64>,
}

/// The constraints and the row multipliers kept between iterations (the
/// warm starts of the `alpha = 0` problem and of the prox problem), with
/// the caps `U_r` on the multipliers of the normalised rows.
pub struct ConstrainedDual {
    constraints: Arc<Constraints>,
    nu_lower: Vec<f64>,
    nu_prox: Vec<f64>,
    caps: Vec<f64>,
    /// The active-set method's `H` for the last clipped set, shared by
    /// every solve on the same planes.
    gram: ClippedGram,
}

/// A row whose multiplier is within this share of its cap is at the cap.
const AT_CAP: f64 = 1e-9;

impl ConstrainedDual {
    /// The state for `constraints`, multipliers at 0, caps not yet chosen.
    pub fn new(constraints: Arc<Constraints>) -> Self {
        let rows = constraints.rows.len();
        ConstrainedDual {
            constraints,
            nu_lower: vec![0.0; rows],
            nu_prox: vec![0.0; rows],
            caps: vec![0.0; rows],
            gram: ClippedGram::default(),
        }
    }

    /// The `alpha = 0` problem's bound at the multipliers of the last
    /// [`ConstrainedDual::solve`] (`value` its dual value, `w` its point),
    /// rounded down (`crate::bundle::certify`): exactly so under a box;
    /// with rows, by an allowance of `gamma` of every term's magnitude.
    pub fn certified_lower(
        &self,
        bundle: &Bundle,
        lambda: f64,
        f_best: f64,
        value: f64,
        w: &[f64],
    ) -> Certified {
        let cons = &self.constraints;
        if cons.rows.is_empty() {
            let bounds = cons.bounds.as_ref().map(|b| (b.lower(), b.upper()));
            return bundle.certified_dual_in_box(&bundle.beta, lambda, f_best, bounds);
        }
        let terms = bundle.dim() + bundle.len() + cons.rows.len() + 8;
        let offsets: f64 = bundle
            .planes()
            .iter()
            .zip(&bundle.beta)
            .map(|(p, b)| b * (p.b.abs() + p.err.offset))
            .sum();
        let rows: f64 = self
            .nu_lower
            .iter()
            .zip(&cons.rhs)
            .zip(&cons.rows)
            .map(|((nu, h), g)| nu * h.abs() / norm2(g).sqrt().max(f64::MIN_POSITIVE))
            .sum();
        let magnitude = value.abs() + offsets + rows + lambda * norm2(w);
        let rounding = 4.0 * crate::rounding::gamma(terms) * magnitude;
        Certified {
            value: value - rounding,
            irreducible: rounding,
            allowance: rounding,
        }
    }

    /// Solves the reduced problem with prox constant `alpha` around `centre`
    /// (ignored at `alpha = 0`); the plane weights are warm-started from and
    /// written to `bundle.beta` (`prox` false) or `bundle.beta_prox`.
    /// `anchor` is a feasible point (the best so far). `f_centre`, `F` at
    /// the centre, asks for a step that can make progress
    /// ([`maximise_for_progress`]); `None` solves to `opts.tol_gap`.
    #[allow(clippy::too_many_arguments)]
    pub fn solve(
        &mut self,
        bundle: &mut Bundle,
        lambda: f64,
        alpha: f64,
        centre: &[f64],
        anchor: &[f64],
        prox: bool,
        f_centre: Option<f64>,
        opts: &QpOptions,
        seconds: &mut f64,
    ) -> Result<Solved> {
        let started = Instant::now();
        let zero_centre;
        let centre = if alpha == 0.0 {
            zero_centre = vec![0.0; bundle.dim()];
            &zero_centre
        } else {
            centre
        };
        let cons = self.constraints.clone();
        let norms: Vec<f64> = cons.rows.iter().map(|g| norm2(g).sqrt()).collect();
        if self.caps.contains(&0.0) {
            // A row's multiplier balances lambda w and the planes' slopes;
            // the cap starts above their largest norm and grows when hit.
            let largest = (0..bundle.len())
                .map(|i| qp_column(bundle, i)[i].sqrt())
                .fold(0.0, f64::max);
            self.caps.iter_mut().for_each(|u| *u = 1.0 + largest);
        }
        let n = bundle.len();
        let mut value;
        let mut x;
        let mut rounds = 0;
        loop {
            let reduced = Reduced::new(bundle, &cons, &norms, &self.caps, lambda, alpha, centre);
            let (beta, nu) = if prox {
                (&bundle.beta_prox, &self.nu_prox)
            } else {
                (&bundle.beta, &self.nu_lower)
            };
            x = beta.clone();
            for (v, u) in nu.iter().zip(&self.caps) {
                let sigma = (v / u).min(1.0);
                x.extend([sigma, 1.0 - sigma]);
            }
            value = maximise_for_progress(&reduced, &mut x, *opts, f_centre, &mut self.gram)?;
            let nu: Vec<f64> = (0..self.caps.len())
                .map(|r| self.caps[r] * x[n + 2 * r])
                .collect();
            if prox {
                bundle.beta_prox.copy_from_slice(&x[..n]);
                self.nu_prox = nu;
            } else {
                bundle.beta.copy_from_slice(&x[..n]);
                self.nu_lower = nu;
            }
            // A multiplier at its cap may want more: raise the cap (the
            // value found stays a valid bound, and the next solve starts
            // from the same multipliers).
            let mut raised = false;
            for r in 0..self.caps.len() {
                if x[n + 2 * r] >= 1.0 - AT_CAP && self.caps[r] < 1e100 {
                    self.caps[r] *= 16.0;
                    raised = true;
                }
            }
            rounds += 1;
            if !raised || rounds >= 20 {
                break;
            }
        }
        let nu = if prox { &self.nu_prox } else { &self.nu_lower };
        let w = primal_point(
            bundle,
            &cons,
            &norms,
            &x[..n],
            nu,
            alpha,
            lambda,
            centre,
            anchor,
        );
        *seconds += started.elapsed().as_secs_f64();
        if !value.is_finite() {
            return Err(Error::non_finite(format!(
                "the constrained reduced problem's dual value is {value}"
            )));
        }
        Ok(Solved { value, w })
    }
}

/// Maximises the dual `D` of a reduced problem from `x` (the warm start,
/// and the result) and returns `D` there. With `f_centre` (`F` at the prox
/// centre) the step must be able to make progress: the reduced minimum
/// `min Phi <= F(c)` predicts a decrease `F(c) - min Phi`, and a solve
/// stopped at the outer gap's tolerance (a tenth of `F(w_best) - LB`, which
/// can be far larger than that decrease) may return its warm start
/// unchanged after a new plane has cut off the last step, so the same point
/// would be proposed again and again. As in the unconstrained path
/// (`reduced::prox_for_progress`), the tolerance is tightened until the
/// dual's gap is at most a tenth of the decrease it certifies, `F(c) - D -
/// gap`, or reaches `1e-15 |F(c)|`.
fn maximise_for_progress(
    reduced: &Reduced,
    x: &mut [f64],
    mut opts: QpOptions,
    f_centre: Option<f64>,
    gram: &mut ClippedGram,
) -> Result<f64> {
    let (mut value, mut gap) = reduced.maximise(x, &opts, gram)?;
    let Some(f_centre) = f_centre else {
        return Ok(value);
    };
    let floor = 1e-15 * f_centre.abs().max(1e-300);
    loop {
        let decrease = f_centre - value;
        if gap <= 0.1 * (decrease - gap) || opts.tol_gap <= floor {
            return Ok(value);
        }
        opts.tol_gap = (0.05 * decrease).min(0.5 * opts.tol_gap).max(floor);
        (value, gap) = reduced.maximise(x, &opts, gram)?;
    }
}

/// The feasible primal point of the multipliers `beta` (planes) and `nu`
/// (normalised rows): `clip(v)`, `v = (2 alpha c - A beta + sum_r nu_r
/// g_r / |g_r|) / mu`, repaired when it violates a row.
#[allow(clippy::too_many_arguments)]
fn primal_point(
    bundle: &Bundle,
    cons: &Constraints,
    norms: &[f64],
    beta: &[f64],
    nu: &[f64],
    alpha: f64,
    lambda: f64,
    centre: &[f64],
    anchor: &[f64],
) -> Vec<f64> {
    let mu = lambda + 2.0 * alpha;
    let mut w = bundle.combine(beta);
    for (r, g) in cons.rows.iter().enumerate() {
        if norms[r] > 0.0 {
            crate::linalg::axpy(-nu[r] / norms[r], g, &mut w);
        }
    }
    for (j, wj) in w.iter_mut().enumerate() {
        let v = (2.0 * alpha * centre[j] - *wj) / mu;
        *wj = match &cons.bounds {
            Some(b) => b.clip(j, v),
            None => v,
        };
    }
    if cons.rows.is_empty() {
        return w;
    }
    repair(cons, w, anchor)
}

/// A feasible point near `w` (in the box, maybe violating rows): the dual
/// solve leaves a violation of the order of its accuracy, which rounds of
/// projections onto the violated rows (each aimed a hair inside, by
/// `1e-12` of the row's scale, to absorb rounding) and onto the box remove;
/// they move `w` by about the violation. If 50 rounds do not give a point
/// that satisfies every row as computed, `w` is moved towards the feasible
/// `anchor` by the smallest share that satisfies every row, and failing
/// that the anchor itself is returned.
fn repair(cons: &Constraints, mut w: Vec<f64>, anchor: &[f64]) -> Vec<f64> {
    let norms: Vec<f64> = cons.rows.iter().map(|g| norm2(g)).collect();
    for _ in 0..50 {
        if cons.violated_row(&w).is_none() {
            return w;
        }
        for (r, g) in cons.rows.iter().enumerate() {
            let slack = cons.slack(r, &w);
            if slack < 0.0 && norms[r] > 0.0 {
                let scale: f64 = g.iter().zip(&w).map(|(a, b)| (a * b).abs()).sum();
                let target = -slack + 1e-12 * (scale + cons.rhs[r].abs());
                crate::linalg::axpy(target / norms[r], g, &mut w);
            }
        }
        if let Some(b) = &cons.bounds {
            w = b.clip_all(&w);
        }
    }
    if cons.violated_row(&w).is_none() {
        return w;
    }
    let mut theta: f64 = 0.0;
    for r in 0..cons.rows.len() {
        let (gw, g0) = (cons.slack(r, &w), cons.slack(r, anchor));
        if gw < 0.0 {
            theta = theta.max(if g0 > gw { -gw / (g0 - gw) } else { 1.0 });
        }
    }
    for k in 0..=12 {
        let t = theta + (1.0 - theta) * if k == 0 { 0.0 } else { 10f64.powi(k - 12) };
        let mut b: Vec<f64> = w
            .iter()
            .zip(anchor)
            .map(|(wi, ai)| (1.0 - t) * wi + t * ai)
            .collect();
        if let Some(bounds) = &cons.bounds {
            b = bounds.clip_all(&b);
        }
        if cons.violated_row(&b).is_none() {
            return b;
        }
    }
    anchor.to_vec()
}

/// `||w - c||`, the step length the prox rule measures.
pub fn step_length(w: &[f64], centre: &[f64]) -> f64 {
    dist(w, centre)
}

//! Kelley's cutting-plane method on the whole objective (the BMRM lecture's
//! baseline): `w_{t+1} = argmin_{||w|| <= r} F_t(w)` with `F_t` the maximum
//! of the planes of `F` itself, the regulariser linearised like the risk.
//! Without the regulariser's curvature in the model the iterates jump
//! between the ball's boundary points, which is why BMRM keeps it exact.
//!
//! The inner problem's dual is `max_{beta in simplex} b^T beta -
//! r ||A beta||`. It is solved through its smooth form `max_{beta, nu > 0}
//! b^T beta - ||A beta||^2 / (2 nu) - nu r^2 / 2`: for a fixed `nu` that is
//! the bundle QP with `mu = nu`, and for a fixed `beta` the best `nu` is
//! `||A beta|| / r`; alternating the two is block-coordinate ascent on a
//! jointly concave function. The bound itself is the exact dual
//! `b^T beta - r ||A beta||` at the `beta` found, with `A beta` formed
//! explicitly: no division by `nu`, whose floor would amplify rounding.
//!
//! That bound is a lower bound on `min F` only when the minimiser `w*` lies
//! in the ball. Two radii are proven to contain it, from any evaluated `w_t`
//! with objective subgradient `g_t`: strong convexity gives
//! `||w* - (w_t - g_t / lambda)|| <= ||g_t|| / lambda` for any convex risk,
//! and `lambda/2 ||w*||^2 <= F(w*) <= F(w_t)` when `R >= 0` (a max-oracle's
//! risk). The default ball is the smallest of them at `w_1` (and contains
//! `w_1`); a user's `cp_radius` gives the ball bound only once a proven
//! radius fits in it. Every iteration also raises the bound to
//! `F(w_t) - ||g_t||^2 / (2 lambda)`, valid whatever the ball.

use super::reduced::solve_lower;
use crate::bundle::{Bundle, Plane, PlaneError, Slope};
use crate::error::{Error, Result};
use crate::exec::{Context, Evaluation, Method};
use crate::linalg::{axpy, dist, dot, norm2};
use crate::vocab::Iteration;

/// Most alternations between `beta` and `nu` per iteration.
const MAX_ALTERNATIONS: usize = 60;
/// `nu` never goes below `NU_FLOOR * target / r^2`. At an optimum inside the
/// ball `A beta -> 0` and the best `nu` is 0, where the dual degenerates into
/// an LP that the QP solver cannot condition; any `nu > 0` still gives a
/// valid bound, `nu r^2 / 2` below the LP's, so the floor costs at most this
/// fraction of the accuracy the stopping rule asks for.
const NU_FLOOR: f64 = 0.02;

/// A bound on the rounding error of a computed sum of `terms` products,
/// relative to the sum of their magnitudes (first order, with room).
fn rounding(terms: usize) -> f64 {
    (terms as f64 + 8.0) * f64::EPSILON
}

/// What one evaluation at `w` gives the method: a plane of `F` (see
/// [`AtPoint::plane_within`]); the strong-convexity bound on `min F`; the
/// smallest radius it proves to hold the minimiser.
struct AtPoint {
    plane: Plane,
    /// The plane's rounding moves it by at most this times `||.||` away
    /// from `w` (the slope's rounding).
    slope_rounding: f64,
    w_norm: f64,
    bound: f64,
    proven_radius: f64,
}

impl AtPoint {
    /// The plane, lowered by a bound on its rounding error over the ball
    /// of radius `reach`, so that it stays below `F` there.
    fn plane_within(mut self, reach: f64) -> Plane {
        self.plane.b -= self.slope_rounding * (reach + self.w_norm);
        self.plane
    }
}

/// The risk's planes `R_p(w) + <a_p, . - w>` give `F >= b_r + <a_r, .> +
/// lambda/2 ||.||^2` with `b_r = sum_p (R_p - <a_p, w>)`: the offsets are
/// summed without the `lambda/2 ||w||^2` that would cancel and lose the
/// bound in rounding far from the optimum.
fn at_point(lambda: f64, w: &[f64], eval: &Evaluation, nonneg: bool) -> AtPoint {
    let w_norm = norm2(w).sqrt();
    let risk_grad = eval.subgradient();
    let gamma = rounding(w.len() + eval.planes.len());
    let mut b_risk = 0.0;
    let mut offset_error = 0.0;
    for p in &eval.planes {
        b_risk += p.b;
        // |R_p| <= |b_p| + ||a_p|| ||w||: both terms of b_p's computation.
        offset_error += p.b.abs() + 2.0 * p.a.norm2().sqrt() * w_norm;
    }
    let b_risk_low = b_risk - gamma * offset_error;
    let g_risk2 = norm2(&risk_grad);
    let bound = b_risk_low - (1.0 + gamma) * g_risk2 / (2.0 * lambda);
    // The objective's plane: slope a = a_r + lambda w, offset
    // b = b_r - lambda/2 ||w||^2 (the slope's rounding is allowed for by
    // `plane_within`).
    let mut a = risk_grad;
    axpy(lambda, w, &mut a);
    let a_norm = norm2(&a).sqrt();
    let half_w2 = 0.5 * lambda * w_norm * w_norm;
    let b = b_risk_low - half_w2 * (1.0 + gamma);
    // Strong convexity: ||w* - (w - g / lambda)|| <= ||g|| / lambda.
    let mut centre = w.to_vec();
    axpy(-1.0 / lambda, &a, &mut centre);
    let mut proven_radius = (norm2(&centre).sqrt() + a_norm / lambda) * (1.0 + gamma);
    if nonneg {
        proven_radius =
            proven_radius.min((2.0 * eval.objective.max(0.0) / lambda).sqrt() * (1.0 + gamma));
    }
    AtPoint {
        plane: Plane {
            part: 0,
            a: Slope::new(a),
            b,
            // Lowered by its own rounding in `plane_within`.
            err: PlaneError::default(),
        },
        slope_rounding: gamma * a_norm,
        w_norm,
        bound,
        proven_radius,
    }
}

/// Kelley's method: its model of `F`, the ball and the dual's `nu`.
pub struct CuttingPlane {
    bundle: Bundle,
    radius: f64,
    /// The smallest radius proven to hold the minimiser so far.
    proven_radius: f64,
    /// Whether `R >= 0` is known (a max-oracle's risk).
    nonneg: bool,
    nu: f64,
    previous: Vec<f64>,
}

impl CuttingPlane {
    /// A method not yet started.
    pub fn new() -> Self {
        CuttingPlane {
            bundle: Bundle::new(0, 1, 1),
            radius: 0.0,
            proven_radius: f64::INFINITY,
            nonneg: false,
            nu: 0.0,
            previous: Vec::new(),
        }
    }
}

impl Default for CuttingPlane {
    fn default() -> Self {
        Self::new()
    }
}

impl Method for CuttingPlane {
    fn start(&mut self, ctx: &mut Context<'_>, w: &[f64]) -> Result<()> {
        let lambda = ctx.lambda;
        self.bundle = Bundle::new(w.len(), 1, ctx.settings.buffer_size);
        let first = ctx.evaluate(w, 0)?;
        self.nonneg = ctx.oracles.examples.is_some();
        // The radius first: the plane's rounding allowance depends on it.
        let at = at_point(lambda, w, &first, self.nonneg);
        self.proven_radius = at.proven_radius;
        self.radius = if ctx.settings.cp_radius > 0.0 {
            ctx.settings.cp_radius
        } else if at.proven_radius > 0.0 {
            at.proven_radius.max(at.w_norm)
        } else {
            // w* = w_1 = 0: any ball holds it.
            1.0
        };
        ctx.raise_lower_bound(at.bound);
        self.bundle.add(vec![at.plane_within(self.radius)]);
        self.nu = lambda;
        self.previous = w.to_vec();
        Ok(())
    }

    fn step(&mut self, ctx: &mut Context<'_>, t: u64) -> Result<Iteration> {
        let lambda = ctx.lambda;
        let radius = self.radius;
        let bundle = &mut self.bundle;
        let opts = ctx.qp_options();
        for _ in 0..MAX_ALTERNATIONS {
            solve_lower(bundle, self.nu, &opts, ctx.qp_seconds())
                .map_err(|e| e.context(format!("in the reduced problem at iteration {t}")))?;
            let a_beta_norm = dot(&bundle.beta, &bundle.gram_times(&bundle.beta))
                .max(0.0)
                .sqrt();
            let target = (ctx.settings.tol_rel * ctx.primal().abs()).max(ctx.settings.tol_abs);
            let floor = (NU_FLOOR * target / (radius * radius)).max(1e-12 * lambda);
            let next = (a_beta_norm / radius).max(floor);
            let settled = (next - self.nu).abs() <= 1e-9 * self.nu;
            self.nu = next;
            if settled {
                break;
            }
        }
        // The exact dual of the ball problem at this beta, less a bound on
        // the rounding of its two sums.
        let a_beta = bundle.combine(&bundle.beta);
        let a_beta_norm = norm2(&a_beta).sqrt();
        let (mut offsets, mut offsets_abs, mut slopes) = (0.0, 0.0, 0.0);
        for (plane, &beta) in bundle.planes().iter().zip(&bundle.beta) {
            if beta > 0.0 {
                offsets += beta * plane.b;
                offsets_abs += beta * plane.b.abs();
                slopes += beta * plane.slope.norm2().sqrt();
            }
        }
        let gamma = rounding(bundle.len() + bundle.dim());
        let bound = offsets
            - radius * a_beta_norm
            - gamma * (offsets_abs + radius * (slopes + a_beta_norm));
        if bound.is_nan() {
            return Err(Error::non_finite(format!(
                "the cutting-plane bound is {bound} at iteration {t}"
            )));
        }
        if radius >= self.proven_radius {
            ctx.raise_lower_bound(bound);
        }
        // The ball problem's solution for this beta: -A beta / nu, in the ball.
        let mut w_new = a_beta;
        w_new.iter_mut().for_each(|x| *x /= -self.nu);
        let norm = norm2(&w_new).sqrt();
        if norm > radius {
            w_new.iter_mut().for_each(|x| *x *= radius / norm);
        }
        let eval = ctx.evaluate(&w_new, t)?;
        bundle.tick_idle();
        bundle.clean(ctx.settings.clean_after);
        let at = at_point(lambda, &w_new, &eval, self.nonneg);
        self.proven_radius = self.proven_radius.min(at.proven_radius);
        ctx.raise_lower_bound(at.bound);
        bundle.add(vec![at.plane_within(radius)]);
        let row = Iteration {
            risk: eval.risk,
            objective: eval.objective,
            num_planes: bundle.len() as u64,
            active_planes: bundle.active() as u64,
            alpha: self.nu,
            step_norm: dist(&w_new, &self.previous),
            ..Iteration::default()
        };
        self.previous = w_new;
        Ok(row)
    }
}

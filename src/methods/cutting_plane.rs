//! Kelley's cutting-plane method on the whole objective (the BMRM lecture's
//! baseline): `w_{t+1} = argmin_{||w|| <= r} F_t(w)` with `F_t` the maximum
//! of the planes of `F` itself, the regulariser linearised like the risk.
//! Without the regulariser's curvature in the model the iterates jump
//! between the ball's boundary points, which is why BMRM keeps it exact.
//!
//! The inner problem's dual is `max_{beta in simplex, nu > 0} b^T beta -
//! ||A beta||^2 / (2 nu) - nu r^2 / 2`; for a fixed `nu` it is the bundle QP
//! with `mu = nu`, and for a fixed `beta` the best `nu` is `||A beta|| / r`.
//! Alternating the two is block-coordinate ascent on a jointly concave
//! function. Every `(beta, nu)` gives a lower bound on `min F`, valid when
//! the optimum lies in the ball: the default `r = sqrt(2 F(w_1) / lambda)`
//! guarantees that when `R >= 0`.

use super::reduced::{primal_point, solve_lower};
use crate::bundle::{Bundle, Plane};
use crate::error::{Error, Result};
use crate::exec::{Context, Method};
use crate::linalg::{dist, dot, norm2};
use crate::qp::QpOptions;
use crate::vocab::Iteration;

/// Most alternations between `beta` and `nu` per iteration.
const MAX_ALTERNATIONS: usize = 60;
/// `nu` never goes below `NU_FLOOR * target / r^2`. At an optimum inside the
/// ball `A beta -> 0` and the best `nu` is 0, where the dual degenerates into
/// an LP that the QP solver cannot condition; any `nu > 0` still gives a
/// valid bound, `nu r^2 / 2` below the LP's, so the floor costs at most this
/// fraction of the accuracy the stopping rule asks for.
const NU_FLOOR: f64 = 0.02;

/// A plane of `F` at `w` from the risk's planes there.
fn objective_plane(lambda: f64, w: &[f64], risk_grad: &[f64], objective: f64) -> Plane {
    let mut a = risk_grad.to_vec();
    crate::linalg::axpy(lambda, w, &mut a);
    let b = objective - dot(&a, w);
    Plane { part: 0, a, b }
}

/// Kelley's method: its model of `F`, the ball and the dual's `nu`.
pub struct CuttingPlane {
    bundle: Bundle,
    radius: f64,
    nu: f64,
    /// The start (the centre of the `alpha = 0` primal point, unused by it).
    start: Vec<f64>,
    previous: Vec<f64>,
}

impl CuttingPlane {
    /// A method not yet started.
    pub fn new() -> Self {
        CuttingPlane {
            bundle: Bundle::new(0, 1, 1),
            radius: 0.0,
            nu: 0.0,
            start: Vec::new(),
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
        self.bundle.add(vec![objective_plane(
            lambda,
            w,
            &first.subgradient(),
            first.objective,
        )]);
        self.radius = if ctx.settings.cp_radius > 0.0 {
            ctx.settings.cp_radius
        } else if first.objective > 0.0 {
            (2.0 * first.objective / lambda).sqrt().max(norm2(w).sqrt())
        } else {
            return Err(Error::invalid_argument(format!(
                "the cutting-plane method needs cp_radius when F(w_1) = {} is not positive",
                first.objective
            )));
        };
        self.nu = lambda;
        self.start = w.to_vec();
        self.previous = w.to_vec();
        Ok(())
    }

    fn step(&mut self, ctx: &mut Context<'_>, t: u64) -> Result<Iteration> {
        let lambda = ctx.lambda;
        let radius = self.radius;
        let bundle = &mut self.bundle;
        let opts = QpOptions {
            tol_gap: ctx.qp_tolerance(),
            max_updates: ctx.settings.qp_max_updates,
        };
        let mut bound = f64::NEG_INFINITY;
        for _ in 0..MAX_ALTERNATIONS {
            let q = solve_lower(bundle, self.nu, &opts, ctx.qp_seconds())
                .map_err(|e| e.context(format!("in the reduced problem at iteration {t}")))?;
            let a_beta_norm = dot(&bundle.beta, &bundle.gram_times(&bundle.beta))
                .max(0.0)
                .sqrt();
            bound = bound.max(q.value - self.nu * radius * radius / 2.0);
            let target = (ctx.settings.tol_rel * ctx.primal().abs()).max(ctx.settings.tol_abs);
            let floor = (NU_FLOOR * target / (radius * radius)).max(1e-12 * lambda);
            let next = (a_beta_norm / radius).max(floor);
            let settled = (next - self.nu).abs() <= 1e-9 * self.nu;
            self.nu = next;
            if settled {
                break;
            }
        }
        if !bound.is_finite() {
            return Err(Error::non_finite(format!(
                "the cutting-plane bound is {bound} at iteration {t}"
            )));
        }
        ctx.raise_lower_bound(bound);
        let mut w_new = primal_point(bundle, self.nu, 0.0, &bundle.beta, &self.start);
        let norm = norm2(&w_new).sqrt();
        if norm > radius {
            w_new.iter_mut().for_each(|x| *x *= radius / norm);
        }
        let eval = ctx.evaluate(&w_new, t)?;
        bundle.tick_idle();
        bundle.clean(ctx.settings.clean_after);
        bundle.add(vec![objective_plane(
            lambda,
            &w_new,
            &eval.subgradient(),
            eval.objective,
        )]);
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

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

use super::bundle_method::{primal_point, solve_lower};
use super::run::Run;
use super::{Exit, Iteration};
use crate::bundle::{Bundle, Plane};
use crate::error::{Error, Result};
use crate::linalg::{dist, dot, norm2};
use crate::qp::QpOptions;

/// Most alternations between `beta` and `nu` per iteration.
const MAX_ALTERNATIONS: usize = 60;
/// `nu` never goes below `NU_FLOOR * target / r^2`. At an optimum inside the
/// ball `A beta -> 0` and the best `nu` is 0, where the dual degenerates into
/// an LP that the QP solver cannot condition; any `nu > 0` still gives a
/// valid bound, `nu r^2 / 2` below the LP's, so the floor costs at most this
/// fraction of the accuracy the stopping rule asks for.
const NU_FLOOR: f64 = 0.02;

/// A plane of `F` at `w` from the risk's planes there.
fn objective_plane(run: &Run<'_>, w: &[f64], risk_grad: &[f64], objective: f64) -> Plane {
    let mut a = risk_grad.to_vec();
    crate::linalg::axpy(run.lambda, w, &mut a);
    let b = objective - dot(&a, w);
    Plane { part: 0, a, b }
}

pub fn run_cutting_plane(run: &mut Run<'_>, w: &[f64]) -> Result<Exit> {
    let lambda = run.lambda;
    let mut bundle = Bundle::new(w.len(), 1, run.settings.buffer_size);
    let first = run.evaluate(w, 0)?;
    bundle.add(vec![objective_plane(
        run,
        w,
        &first.subgradient(),
        first.objective,
    )]);
    let radius = if run.settings.cp_radius > 0.0 {
        run.settings.cp_radius
    } else if first.objective > 0.0 {
        (2.0 * first.objective / lambda).sqrt().max(norm2(w).sqrt())
    } else {
        return Err(Error::invalid_argument(format!(
            "the cutting-plane method needs cp_radius when F(w_1) = {} is not positive",
            first.objective
        )));
    };
    let mut nu = lambda;
    let mut previous = w.to_vec();
    let mut t = 0;
    loop {
        t += 1;
        let opts = QpOptions {
            tol_gap: run.qp_tolerance(),
            max_updates: run.settings.qp_max_updates,
        };
        let mut bound = f64::NEG_INFINITY;
        for _ in 0..MAX_ALTERNATIONS {
            let q = solve_lower(&mut bundle, nu, &opts, &mut run.info.qp_seconds)
                .map_err(|e| e.context(format!("in the reduced problem at iteration {t}")))?;
            let a_beta_norm = dot(&bundle.beta, &bundle.gram_times(&bundle.beta))
                .max(0.0)
                .sqrt();
            bound = bound.max(q.value - nu * radius * radius / 2.0);
            let target = (run.settings.tol_rel * run.info.primal.abs()).max(run.settings.tol_abs);
            let floor = (NU_FLOOR * target / (radius * radius)).max(1e-12 * lambda);
            let next = (a_beta_norm / radius).max(floor);
            let settled = (next - nu).abs() <= 1e-9 * nu;
            nu = next;
            if settled {
                break;
            }
        }
        if !bound.is_finite() {
            return Err(Error::non_finite(format!(
                "the cutting-plane bound is {bound} at iteration {t}"
            )));
        }
        run.raise_lower_bound(bound);
        let mut w_new = primal_point(&bundle, nu, 0.0, &bundle.beta, w);
        let norm = norm2(&w_new).sqrt();
        if norm > radius {
            w_new.iter_mut().for_each(|x| *x *= radius / norm);
        }
        let eval = run.evaluate(&w_new, t)?;
        bundle.tick_idle();
        bundle.clean(run.settings.clean_after);
        bundle.add(vec![objective_plane(
            run,
            &w_new,
            &eval.subgradient(),
            eval.objective,
        )]);
        let row = Iteration {
            iteration: t,
            risk: eval.risk,
            objective: eval.objective,
            num_planes: bundle.len() as u64,
            active_planes: bundle.active() as u64,
            alpha: nu,
            step_norm: dist(&w_new, &previous),
            ..Iteration::default()
        };
        previous = w_new;
        if let Some(exit) = run.finish_iteration(row) {
            return Ok(exit);
        }
    }
}

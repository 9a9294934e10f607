//! The reduced problem BMRM, P-BMRM, Prox-BMRM and Prox-P-BMRM solve at
//! every iteration (docs/bundle-methods.md), and the step rule that chooses its
//! prox constant:
//!
//! ```text
//! min_w lambda/2 ||w||^2 + sum_p max_{i in p} (<a_i, w> + b_i) + alpha ||w - c||^2
//! ```
//!
//! through its multi-simplex dual. The lower bound always comes from the
//! `alpha = 0` problem; the step may use a positive `alpha` (the step rule
//! decides).

use std::time::Instant;

use crate::bundle::Bundle;
use crate::error::Result;
use crate::linalg::{dot, norm2};
use crate::qp::{self, QpOptions, QpResult};

/// How the prox constant of the next step is chosen.
pub trait StepRule {
    /// Called once, with the start point's norm and objective, and lambda.
    fn start(&mut self, start_norm: f64, start_objective: f64, lambda: f64);
    /// The prox constant of the next step (0 = a plain BMRM step).
    fn alpha(&self) -> f64;
    /// Whether the rule's steps need the planes' dot products with the
    /// prox-centre (then the bundle takes them with its Gram update).
    fn uses_centre(&self) -> bool {
        false
    }
    /// Called after the new point was evaluated and its planes added.
    fn update(&mut self, step: &mut StepContext<'_>) -> Result<()>;
}

/// What a step rule sees after a step.
pub struct StepContext<'b> {
    pub bundle: &'b mut Bundle,
    pub lambda: f64,
    /// `F` at the prox-centre of the step just made (the best point before it).
    pub f_prev: f64,
    /// `F` at the new iterate.
    pub f_new: f64,
    /// The lower bound of this iteration's `alpha = 0` reduced problem.
    pub lower_bound: f64,
    pub tol_rel: f64,
    /// The prox-centre of the next step (the best point so far).
    pub centre: &'b [f64],
    pub qp: QpOptions,
    pub qp_seconds: &'b mut f64,
}

/// The reduced problem around a centre `c`: `A^T c` and `||c||^2`, computed
/// once per centre and shared by every `alpha` tried.
pub struct Centre {
    pub dots: Vec<f64>,
    pub norm2: f64,
}

impl Centre {
    pub fn new(bundle: &Bundle, point: &[f64]) -> Self {
        Centre {
            dots: bundle.dots(point),
            norm2: norm2(point),
        }
    }
}

fn solve_into(
    bundle: &mut Bundle,
    mu: f64,
    f: &[f64],
    prox: bool,
    opts: &QpOptions,
    seconds: &mut f64,
) -> Result<QpResult> {
    let t = Instant::now();
    let parts = bundle.parts_of_planes();
    let mut beta = std::mem::take(if prox {
        &mut bundle.beta_prox
    } else {
        &mut bundle.beta
    });
    let res = qp::solve(&*bundle, mu, f, &parts, bundle.num_parts(), &mut beta, opts);
    *(if prox {
        &mut bundle.beta_prox
    } else {
        &mut bundle.beta
    }) = beta;
    *seconds += t.elapsed().as_secs_f64();
    res
}

/// Solves the `alpha = 0` reduced problem into `bundle.beta`; its value is a
/// lower bound on `min F` for any feasible `beta`, exact or not.
pub fn solve_lower(
    bundle: &mut Bundle,
    lambda: f64,
    opts: &QpOptions,
    seconds: &mut f64,
) -> Result<QpResult> {
    let f = bundle.offsets();
    solve_into(bundle, lambda, &f, false, opts, seconds)
}

/// Solves the reduced problem with prox constant `alpha` around `centre`
/// into `bundle.beta_prox`.
pub fn solve_prox(
    bundle: &mut Bundle,
    lambda: f64,
    alpha: f64,
    centre: &Centre,
    opts: &QpOptions,
    seconds: &mut f64,
) -> Result<QpResult> {
    let mu = lambda + 2.0 * alpha;
    let scale = 2.0 * alpha / mu;
    let f: Vec<f64> = bundle
        .offsets()
        .iter()
        .zip(&centre.dots)
        .map(|(b, d)| b + scale * d)
        .collect();
    solve_into(bundle, mu, &f, true, opts, seconds)
}

/// Solves the prox problem accurately enough to make progress: its optimum
/// `min Phi` (Phi = lambda/2 ||w||^2 + R_t(w) + alpha ||w - c||^2) predicts a
/// decrease `F(c) - min Phi >= 0`, and a QP solved only to the outer gap's
/// tolerance can be off by more than that decrease near the end, when the
/// step would land on the same point again and again. So the solve is
/// repeated with a tighter tolerance until the QP's own uncertainty is at
/// most a tenth of the predicted decrease.
pub fn solve_prox_for_progress(
    bundle: &mut Bundle,
    lambda: f64,
    alpha: f64,
    centre: &Centre,
    f_centre: f64,
    mut opts: QpOptions,
    seconds: &mut f64,
) -> Result<QpResult> {
    let constant = alpha * lambda * centre.norm2 / (lambda + 2.0 * alpha);
    let floor = 1e-15 * f_centre.abs().max(1e-300);
    loop {
        let q = solve_prox(bundle, lambda, alpha, centre, &opts, seconds)?;
        let decrease = f_centre - (q.value + constant);
        if q.gap <= 0.1 * (decrease - q.gap) || opts.tol_gap <= floor {
            return Ok(q);
        }
        opts.tol_gap = (0.05 * decrease).min(0.5 * opts.tol_gap).max(floor);
    }
}

/// `w = (2 alpha c - A beta) / (lambda + 2 alpha)` for the given weights.
pub fn primal_point(bundle: &Bundle, lambda: f64, alpha: f64, beta: &[f64], c: &[f64]) -> Vec<f64> {
    let mu = lambda + 2.0 * alpha;
    let mut w = bundle.combine(beta);
    for (wi, ci) in w.iter_mut().zip(c) {
        *wi = (2.0 * alpha * ci - *wi) / mu;
    }
    w
}

/// `||w^alpha - c||` from the Gram matrix and `A^T c`, without forming `w`:
/// `w - c = -(lambda c + A beta) / mu`.
pub fn prox_distance(bundle: &Bundle, lambda: f64, alpha: f64, centre: &Centre) -> f64 {
    let beta = &bundle.beta_prox;
    let mu = lambda + 2.0 * alpha;
    let h_beta = bundle.gram_times(beta);
    let quad = dot(beta, &h_beta);
    let cross = dot(beta, &centre.dots);
    let d2 = (lambda * lambda * centre.norm2 + 2.0 * lambda * cross + quad) / (mu * mu);
    d2.max(0.0).sqrt()
}

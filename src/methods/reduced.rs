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
use crate::qp::{self, Gram, QpOptions, QpResult};

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
    /// `||w_new - c||`, the length of the step just made from its centre.
    pub step_norm: f64,
    /// The lower bound of this iteration's `alpha = 0` reduced problem.
    pub lower_bound: f64,
    pub tol_rel: f64,
    /// The prox-centre of the next step (the best point so far).
    pub centre: &'b [f64],
    pub qp: QpOptions,
    pub qp_seconds: &'b mut f64,
    /// The constraints on `w` and their multipliers, when there are any.
    pub constrained: Option<&'b mut super::constrained::ConstrainedDual>,
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

/// The dual weights of the prox problem or of the `alpha = 0` one.
fn slot(bundle: &mut Bundle, prox: bool) -> &mut Vec<f64> {
    if prox {
        &mut bundle.beta_prox
    } else {
        &mut bundle.beta
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
    let mut beta = std::mem::take(slot(bundle, prox));
    let res = solve_weights(bundle, mu, f, &mut beta, opts);
    *slot(bundle, prox) = beta;
    *seconds += t.elapsed().as_secs_f64();
    res
}

/// The QP on the bundle's planes with the weights `beta` (warm start in,
/// solution out), the bundle only read: two solves can share it.
fn solve_weights(
    bundle: &Bundle,
    mu: f64,
    f: &[f64],
    beta: &mut [f64],
    opts: &QpOptions,
) -> Result<QpResult> {
    let parts = bundle.parts_of_planes();
    qp::solve(bundle, mu, f, &parts, bundle.num_parts(), beta, opts)
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

/// The linear term of the prox problem with constant `alpha` around `centre`.
fn prox_offsets(bundle: &Bundle, lambda: f64, alpha: f64, centre: &Centre) -> Vec<f64> {
    let mu = lambda + 2.0 * alpha;
    let scale = 2.0 * alpha / mu;
    bundle
        .offsets()
        .iter()
        .zip(&centre.dots)
        .map(|(b, d)| b + scale * d)
        .collect()
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
    let f = prox_offsets(bundle, lambda, alpha, centre);
    solve_into(bundle, lambda + 2.0 * alpha, &f, true, opts, seconds)
}

/// Solves the prox problem accurately enough to make progress: its optimum
/// `min Phi` (Phi = lambda/2 ||w||^2 + R_t(w) + alpha ||w - c||^2) predicts a
/// decrease `F(c) - min Phi >= 0`, and a QP solved only to the outer gap's
/// tolerance can be off by more than that decrease near the end, when the
/// step would land on the same point again and again. So the solve is
/// repeated with a tighter tolerance until the QP's own uncertainty is at
/// most a tenth of the predicted decrease. `beta` is the warm start and the
/// result; the bundle is only read.
fn prox_for_progress(
    bundle: &Bundle,
    lambda: f64,
    alpha: f64,
    centre: &Centre,
    f_centre: f64,
    mut opts: QpOptions,
    beta: &mut [f64],
) -> Result<QpResult> {
    let constant = alpha * lambda * centre.norm2 / (lambda + 2.0 * alpha);
    // No tighter than the QP's value can be known: rounding in `beta' G
    // beta / mu` is about `u max G_ii / mu`. Below that a solve would chase
    // noise for ever (a feature at 1e8 makes it 40 times F).
    let largest_diag = (0..bundle.len())
        .map(|i| bundle.column(i)[i])
        .fold(0.0f64, f64::max);
    let noise = 16.0 * f64::EPSILON * largest_diag / (lambda + 2.0 * alpha);
    let floor = (1e-15 * f_centre.abs()).max(noise).max(1e-300);
    let f = prox_offsets(bundle, lambda, alpha, centre);
    loop {
        let q = solve_weights(bundle, lambda + 2.0 * alpha, &f, beta, &opts)?;
        let decrease = f_centre - (q.value + constant);
        if q.gap <= 0.1 * (decrease - q.gap) || opts.tol_gap <= floor {
            return Ok(q);
        }
        opts.tol_gap = (0.05 * decrease).min(0.5 * opts.tol_gap).max(floor);
    }
}

/// The two QPs of a proximal step, at the same time on the bundle's pool
/// (they only read the bundle and each has its own weights): the `alpha = 0`
/// problem into `bundle.beta` (the lower bound, as [`solve_lower`]) and the
/// prox problem into `bundle.beta_prox` (the step, solved for progress). The
/// lower solve is the slower one (its curvature is `lambda`, the prox's
/// `lambda + 2 alpha`), so the prox solve costs no wall time on 2 threads.
/// Each solve is serial and deterministic, so the bits do not depend on the
/// number of threads. `seconds` gets the wall time of the pair.
#[allow(clippy::too_many_arguments)]
pub fn solve_lower_and_prox(
    bundle: &mut Bundle,
    lambda: f64,
    alpha: f64,
    centre: &Centre,
    f_centre: f64,
    opts: QpOptions,
    seconds: &mut f64,
) -> (Result<QpResult>, Result<QpResult>) {
    let t = Instant::now();
    let mut beta = std::mem::take(&mut bundle.beta);
    let mut beta_prox = std::mem::take(&mut bundle.beta_prox);
    let offsets = bundle.offsets();
    let shared = &*bundle;
    let (lower, prox) = shared.join(
        || solve_weights(shared, lambda, &offsets, &mut beta, &opts),
        || {
            prox_for_progress(
                shared,
                lambda,
                alpha,
                centre,
                f_centre,
                opts,
                &mut beta_prox,
            )
        },
    );
    bundle.beta = beta;
    bundle.beta_prox = beta_prox;
    *seconds += t.elapsed().as_secs_f64();
    (lower, prox)
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

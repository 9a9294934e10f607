//! Stochastic subgradient descent (the P-BMRM paper, eq. 4-6): as a start
//! for the bundle methods, or alone.
//!
//! `w <- w - eta_t (lambda w + r'_i(w))`, `eta_t = 1 / (lambda (t0 + t))`,
//! where `r_i` is an unbiased one-unit estimate of `R`: `H_i` for an example
//! of a max-oracle, `P R_p` for a part of a partitioned risk, `R` itself for a
//! full risk. `t0` is chosen among `10^0 .. 10^9` by one pass over a seeded
//! 10 % sample of the units, keeping the one with the smallest sampled `F`.
//! After every pass over all units `F(w)` is evaluated exactly; the best `w`
//! over the passes is kept, and each evaluation's cutting planes are valid
//! planes for the bundle that may follow.
//!
//! Under a box `lo <= w <= hi` the steps are projected: each step is
//! followed by `w <- clip(w)`, so every iterate (the sampled points, the
//! pass-end points and the `t0` trials) is in the box. The lower bound of a
//! plane stays the unconstrained minimum of its model, which is below the
//! minimum over the box. Linear rows `A w >= b` are refused by the solver
//! (projecting onto them is a QP of its own).

use std::time::Instant;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::error::{Error, Result};
use crate::exec::{Context, Evaluation, Method, Units};
use crate::linalg::{axpy, dot, first_non_finite, norm2};
use crate::oracle::adapters::call_max_oracle;
use crate::oracle::pass::screen_answer;
use crate::oracle::Bounds;
use crate::oracle::{AnswerLog, Corner};
use crate::rounding::gamma;
use crate::vocab::Iteration;

fn count(units: &Units) -> usize {
    match units {
        Units::Examples(o) => o.num_examples(),
        Units::Parts(r) => r.num_parts(),
    }
}

/// The corner a unit's estimate is formed in, and where an answer that
/// cannot be trusted is counted.
type Scratch<'a> = (&'a mut Corner, &'a AnswerLog);

/// Writes an unbiased estimate of `R'(w)` from unit `i` into `g` and
/// returns the matching estimate of `R(w)`.
fn estimate(
    units: &Units,
    i: usize,
    w: &[f64],
    g: &mut [f64],
    scratch: Scratch<'_>,
) -> Result<f64> {
    let (corner, answers) = scratch;
    match units {
        Units::Examples(o) => {
            call_max_oracle(o.as_ref(), i, w, corner)?;
            // An answer below the truth becomes the truth (no psi, H = 0).
            let dot = corner.dot(w);
            let (hinge, exact) = screen_answer(corner, dot, i)?;
            if !exact {
                answers.note(1);
            }
            g.iter_mut().for_each(|x| *x = 0.0);
            corner.add_to(-1.0, g);
            Ok(hinge)
        }
        Units::Parts(r) => {
            let p = r.num_parts() as f64;
            let risk = r
                .partial_risk(i, w, g)
                .map_err(|e| e.context(format!("(part {i})")))?;
            if !risk.is_finite() {
                return Err(Error::non_finite(format!("the risk is {risk} (part {i})")));
            }
            if let Some((j, v)) = first_non_finite(g) {
                return Err(Error::non_finite(format!(
                    "subgradient[{j}] is {v} (part {i})"
                )));
            }
            g.iter_mut().for_each(|x| *x *= p);
            Ok(p * risk)
        }
    }
}

/// A unit's risk estimate, refused when it is not finite (a NaN would
/// otherwise pass silently into the step sizes' choice).
fn finite_estimate(
    units: &Units,
    i: usize,
    w: &[f64],
    g: &mut [f64],
    scratch: Scratch<'_>,
) -> Result<f64> {
    let risk = estimate(units, i, w, g, scratch)?;
    if !risk.is_finite() {
        return Err(Error::non_finite(format!(
            "the risk estimate of unit {i} is {risk}"
        )));
    }
    Ok(risk)
}

/// `w <- clip(w)` onto the box, when there is one.
fn project(bounds: Option<&Bounds>, w: &mut [f64]) {
    if let Some(b) = bounds {
        for (j, x) in w.iter_mut().enumerate() {
            *x = b.clip(j, *x);
        }
    }
}

/// One SGD pass over `order`, continuing the step counter `t`, each step
/// projected onto `bounds`. Returns false when the deadline stopped it
/// part-way.
#[allow(clippy::too_many_arguments)]
fn pass(
    units: &Units,
    lambda: f64,
    t0: f64,
    t: &mut u64,
    order: &[usize],
    w: &mut [f64],
    bounds: Option<&Bounds>,
    scratch: &mut (Vec<f64>, Corner),
    answers: &AnswerLog,
    deadline: Option<Instant>,
) -> Result<bool> {
    let (g, corner) = scratch;
    for &i in order {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(false);
        }
        finite_estimate(units, i, w, g, (corner, answers))?;
        *t += 1;
        let eta = 1.0 / (lambda * (t0 + *t as f64));
        let shrink = 1.0 - eta * lambda;
        w.iter_mut().for_each(|x| *x *= shrink);
        axpy(-eta, g, w);
        project(bounds, w);
    }
    Ok(true)
}

/// `F` estimated on a sample of units.
fn sampled_objective(
    units: &Units,
    lambda: f64,
    sample: &[usize],
    w: &[f64],
    scratch: &mut (Vec<f64>, Corner),
    answers: &AnswerLog,
) -> Result<f64> {
    let (g, corner) = scratch;
    let mut r = 0.0;
    for &i in sample {
        r += finite_estimate(units, i, w, g, (corner, answers))?;
    }
    Ok(0.5 * lambda * norm2(w) + r / sample.len() as f64)
}

/// The lower bound one plane of `R` gives: `min_w lambda/2 ||w||^2 + <a, w> + b`.
/// Rounded down by a bound on its rounding (as `crate::bundle::certify`):
/// the offset's dot product and the risk's own sum, the parts' planes'
/// errors, the sum of the parts' slopes and the norm.
fn plane_lower_bound(lambda: f64, eval: &Evaluation, w: &[f64]) -> f64 {
    let a = eval.subgradient();
    let n = a.len();
    let parts = eval.planes.len();
    let b = eval.risk - dot(&a, w);
    let abs_dot: f64 = a.iter().zip(w).map(|(x, y)| (x * y).abs()).sum();
    let plane_errors: f64 = eval.planes.iter().map(|p| p.err.offset).sum();
    let offset_err =
        2.0 * gamma(n + parts + 4) * (eval.risk.abs() + abs_dot) * (1.0 + gamma(n)) + plane_errors;
    // ||a_exact|| <= ||a|| + gamma_P sum_p ||a_p||.
    let slope_err = if parts > 1 {
        gamma(parts) * eval.planes.iter().map(|p| p.a.norm2().sqrt()).sum::<f64>()
    } else {
        0.0
    };
    let radius = (norm2(&a).sqrt() + slope_err) * (1.0 + gamma(n + 2));
    let quad = radius * radius / (2.0 * lambda) * (1.0 + gamma(4));
    let value = b - quad;
    value - offset_err * (1.0 + gamma(4)) - gamma(4) * (b.abs() + quad)
}

/// SGD's state between passes.
pub struct Sgd {
    units: Units,
    rng: ChaCha8Rng,
    scratch: (Vec<f64>, Corner),
    perm: Vec<usize>,
    /// The box every step is projected onto (`None`: free).
    bounds: Option<Bounds>,
    t0: f64,
    /// Steps so far.
    t: u64,
    current: Vec<f64>,
    /// The exact evaluation at the best pass-end point.
    best: Evaluation,
    /// The other pass-end evaluations, in the order they were displaced.
    others: Vec<Evaluation>,
    /// `R` and `F` of the last evaluated point.
    last: (f64, f64),
}

impl Sgd {
    /// Chooses `t0` on a sample and evaluates the start `w` exactly; `w`
    /// must be in `bounds` when there are bounds.
    pub fn new(ctx: &mut Context<'_>, w: &[f64], bounds: Option<Bounds>) -> Result<Self> {
        let units = ctx.oracles.units.clone();
        let lambda = ctx.lambda;
        let n = count(&units);
        let dim = w.len();
        let mut rng = ChaCha8Rng::seed_from_u64(ctx.settings.seed);
        let mut scratch = (vec![0.0; dim], Corner::new(dim));
        let deadline = ctx.deadline();

        // t0 on a 10 % sample.
        let mut perm: Vec<usize> = Vec::new();
        perm.try_reserve_exact(n)
            .map_err(|_| Error::out_of_memory(format!("SGD's order of {n} units")))?;
        perm.extend(0..n);
        perm.shuffle(&mut rng);
        let sample: Vec<usize> = perm[..n.div_ceil(10).max(1)].to_vec();
        let mut best_t0 = 1.0;
        let mut best_value = f64::INFINITY;
        for k in 0..10 {
            let t0 = 10f64.powi(k);
            let mut trial = w.to_vec();
            let mut t = 0;
            if !pass(
                &units,
                lambda,
                t0,
                &mut t,
                &sample,
                &mut trial,
                bounds.as_ref(),
                &mut scratch,
                &ctx.oracles.answers,
                deadline,
            )? {
                break;
            }
            let value = sampled_objective(
                &units,
                lambda,
                &sample,
                &trial,
                &mut scratch,
                &ctx.oracles.answers,
            )?;
            if value.is_finite() && value < best_value {
                best_value = value;
                best_t0 = t0;
            }
        }

        let first = ctx.evaluate(w, 0)?;
        ctx.raise_lower_bound(plane_lower_bound(lambda, &first, w));
        Ok(Sgd {
            units,
            rng,
            scratch,
            perm,
            bounds,
            t0: best_t0,
            t: 0,
            current: w.to_vec(),
            last: (first.risk, first.objective),
            best: first,
            others: Vec::new(),
        })
    }

    /// Pass `k`: a shuffled pass over all units, then the exact evaluation
    /// of the new point. Returns that point's `R` and `F`, or `None` when
    /// the time limit stopped the pass part-way (the point is not evaluated).
    pub fn pass(&mut self, ctx: &mut Context<'_>, k: u64) -> Result<Option<(f64, f64)>> {
        let lambda = ctx.lambda;
        let deadline = ctx.deadline();
        self.perm.shuffle(&mut self.rng);
        let whole = pass(
            &self.units,
            lambda,
            self.t0,
            &mut self.t,
            &self.perm,
            &mut self.current,
            self.bounds.as_ref(),
            &mut self.scratch,
            &ctx.oracles.answers,
            deadline,
        )
        .map_err(|e| e.context(format!("in SGD pass {k}")))?;
        if !whole {
            return Ok(None);
        }
        let eval = ctx.evaluate(&self.current, k)?;
        ctx.raise_lower_bound(plane_lower_bound(lambda, &eval, &self.current));
        let figures = (eval.risk, eval.objective);
        self.last = figures;
        if eval.objective < self.best.objective {
            self.others.push(std::mem::replace(&mut self.best, eval));
        } else {
            self.others.push(eval);
        }
        Ok(Some(figures))
    }

    /// The step size of the last step.
    fn eta(&self, lambda: f64) -> f64 {
        1.0 / (lambda * (self.t0 + self.t as f64))
    }

    /// The best evaluation and the others, for the bundle that follows.
    pub fn into_evaluations(self) -> (Evaluation, Vec<Evaluation>) {
        (self.best, self.others)
    }
}

/// SGD as the whole run: one pass per iteration, `passes` of them.
pub struct SgdMethod {
    passes: u32,
    bounds: Option<Bounds>,
    sgd: Option<Sgd>,
}

impl SgdMethod {
    /// `passes` passes of SGD, projected onto `bounds` when given.
    pub fn new(passes: u32, bounds: Option<Bounds>) -> Self {
        SgdMethod {
            passes,
            bounds,
            sgd: None,
        }
    }
}

impl Method for SgdMethod {
    fn start(&mut self, ctx: &mut Context<'_>, w: &[f64]) -> Result<()> {
        self.sgd = Some(Sgd::new(ctx, w, self.bounds.take())?);
        Ok(())
    }

    fn step(&mut self, ctx: &mut Context<'_>, t: u64) -> Result<Iteration> {
        let Some(sgd) = self.sgd.as_mut() else {
            return Err(Error::internal("SGD stepped before its start"));
        };
        // A pass the time limit cut short reports the last evaluated point;
        // the executor then ends the run on the limit.
        let (risk, objective) = sgd.pass(ctx, t)?.unwrap_or(sgd.last);
        // Only the pass-end points are kept: the rest is dropped as we go.
        sgd.others.clear();
        Ok(Iteration {
            risk,
            objective,
            alpha: sgd.eta(ctx.lambda),
            ..Iteration::default()
        })
    }

    fn own_limit(&self) -> Option<u64> {
        Some(u64::from(self.passes))
    }
}

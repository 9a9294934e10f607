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

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::run::{Evaluation, Run};
use super::{Exit, Iteration};
use crate::error::{Error, Result};
use crate::linalg::{axpy, dot, first_non_finite, norm2};
use crate::oracle::adapters::call_max_oracle;
use crate::oracle::{Corner, MaxOracle, PartitionedRisk};

/// The units SGD samples: examples of a max-oracle, or parts of a risk.
pub enum Units<'a> {
    Examples(&'a dyn MaxOracle),
    Parts(&'a dyn PartitionedRisk),
}

impl Units<'_> {
    fn count(&self) -> usize {
        match self {
            Units::Examples(o) => o.num_examples(),
            Units::Parts(r) => r.num_parts(),
        }
    }

    /// Writes an unbiased estimate of `R'(w)` from unit `i` into `g` and
    /// returns the matching estimate of `R(w)`.
    fn estimate(&self, i: usize, w: &[f64], g: &mut [f64], corner: &mut Corner) -> Result<f64> {
        match self {
            Units::Examples(o) => {
                call_max_oracle(*o, i, w, corner)?;
                g.iter_mut().for_each(|x| *x = 0.0);
                corner.add_to(-1.0, g);
                Ok(corner.hinge(w))
            }
            Units::Parts(r) => {
                let p = r.num_parts() as f64;
                let risk = r
                    .partial_risk(i, w, g)
                    .map_err(|e| e.context(format!("(part {i})")))?;
                if !risk.is_finite() {
                    return Err(Error::NonFinite(format!("the risk is {risk} (part {i})")));
                }
                if let Some((j, v)) = first_non_finite(g) {
                    return Err(Error::NonFinite(format!(
                        "subgradient[{j}] is {v} (part {i})"
                    )));
                }
                g.iter_mut().for_each(|x| *x *= p);
                Ok(p * risk)
            }
        }
    }
}

/// One SGD pass over `order`, continuing the step counter `t`. Returns
/// false when the deadline stopped it part-way.
#[allow(clippy::too_many_arguments)]
fn pass(
    units: &Units<'_>,
    lambda: f64,
    t0: f64,
    t: &mut u64,
    order: &[usize],
    w: &mut [f64],
    scratch: &mut (Vec<f64>, Corner),
    deadline: Option<std::time::Instant>,
) -> Result<bool> {
    let (g, corner) = scratch;
    for &i in order {
        if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            return Ok(false);
        }
        let risk = units.estimate(i, w, g, corner)?;
        if !risk.is_finite() {
            return Err(Error::NonFinite(format!(
                "the risk estimate of unit {i} is {risk}"
            )));
        }
        *t += 1;
        let eta = 1.0 / (lambda * (t0 + *t as f64));
        let shrink = 1.0 - eta * lambda;
        w.iter_mut().for_each(|x| *x *= shrink);
        axpy(-eta, g, w);
    }
    Ok(true)
}

/// `F` estimated on a sample of units.
fn sampled_objective(
    units: &Units<'_>,
    lambda: f64,
    sample: &[usize],
    w: &[f64],
    scratch: &mut (Vec<f64>, Corner),
) -> Result<f64> {
    let (g, corner) = scratch;
    let mut r = 0.0;
    for &i in sample {
        let risk = units.estimate(i, w, g, corner)?;
        if !risk.is_finite() {
            return Err(Error::NonFinite(format!(
                "the risk estimate of unit {i} is {risk}"
            )));
        }
        r += risk;
    }
    Ok(0.5 * lambda * norm2(w) + r / sample.len() as f64)
}

/// The lower bound one plane of `R` gives: `min_w lambda/2 ||w||^2 + <a, w> + b`.
pub fn plane_lower_bound(lambda: f64, eval: &Evaluation, w: &[f64]) -> f64 {
    let a = eval.subgradient();
    let b = eval.risk - dot(&a, w);
    b - norm2(&a) / (2.0 * lambda)
}

/// Runs `passes` passes of SGD from `w` (updated in place to the best point
/// seen). Returns the exact evaluation at the best point and the planes of
/// every pass-end evaluation. `rows` says whether passes are history rows
/// (SGD alone) or not (a start for a bundle method).
pub fn run_sgd(
    run: &mut Run<'_>,
    units: &Units<'_>,
    w: &mut [f64],
    passes: u32,
    rows: bool,
) -> Result<(Evaluation, Vec<Evaluation>, Option<Exit>)> {
    let lambda = run.lambda;
    let n = units.count();
    let dim = w.len();
    let mut rng = ChaCha8Rng::seed_from_u64(run.settings.seed);
    let mut scratch = (vec![0.0; dim], Corner::new(dim));
    let oracle_start = std::time::Instant::now();

    let deadline = run.deadline();
    // t0 on a 10 % sample.
    let mut perm: Vec<usize> = Vec::new();
    perm.try_reserve_exact(n)
        .map_err(|_| Error::OutOfMemory(format!("SGD's order of {n} units")))?;
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
            units,
            lambda,
            t0,
            &mut t,
            &sample,
            &mut trial,
            &mut scratch,
            deadline,
        )? {
            break;
        }
        let value = sampled_objective(units, lambda, &sample, &trial, &mut scratch)?;
        if value.is_finite() && value < best_value {
            best_value = value;
            best_t0 = t0;
        }
    }
    run.info.oracle_seconds += oracle_start.elapsed().as_secs_f64();
    run.info.oracle_calls += (20 * sample.len()) as u64;

    let first = run.evaluate(w, 0)?;
    run.raise_lower_bound(plane_lower_bound(lambda, &first, w));
    let mut evaluations = vec![];
    let mut best_objective = first.objective;
    let mut best = first;
    let mut current = w.to_vec();
    let mut t = 0;
    let mut exit = None;
    for k in 1..=passes {
        perm.shuffle(&mut rng);
        let started = std::time::Instant::now();
        let whole = pass(
            units,
            lambda,
            best_t0,
            &mut t,
            &perm,
            &mut current,
            &mut scratch,
            deadline,
        )
        .map_err(|e| e.context(format!("in SGD pass {k}")))?;
        if !whole {
            exit = Some(Exit::TimeLimit);
            break;
        }
        run.info.oracle_seconds += started.elapsed().as_secs_f64();
        run.info.oracle_calls += n as u64;
        let eval = run.evaluate(&current, k as u64)?;
        run.raise_lower_bound(plane_lower_bound(lambda, &eval, &current));
        let objective = eval.objective;
        let risk = eval.risk;
        if objective < best_objective {
            best_objective = objective;
            w.copy_from_slice(&current);
            evaluations.push(std::mem::replace(&mut best, eval));
        } else {
            evaluations.push(eval);
        }
        if rows {
            let row = Iteration {
                iteration: k as u64,
                risk,
                objective,
                alpha: 1.0 / (lambda * (best_t0 + t as f64)),
                ..Iteration::default()
            };
            exit = run.finish_iteration(row);
            if exit.is_some() {
                break;
            }
        }
    }
    Ok((best, evaluations, exit))
}

//! The epsilon-approximate regularisation path (Osokin et al. 2016, section
//! 5; docs/bcfw.md), with `a` = `settings.path_a` and `b = 1 - a`.
//!
//! - `lambda_max`: at `w = 0` the oracle gives `y^_i`; `u = (1/n) sum_i
//!   psi_i(y^_i)`. With `alpha_i = delta(y^_i)` the dual point is `w = u /
//!   lambda` and its gap is at most `(||u||^2 + (1/n) sum_i theta_i) / lambda`,
//!   `theta_i = max_y -<u, psi_i(y)>` (the plain prediction under `u`). So
//!   `lambda_max = (||u||^2 + (1/n) sum theta_i) / (a eps)`.
//!   A max-oracle only gives loss-augmented answers, so `theta_i` is bounded
//!   from above by `H_i(T u) / T` with `T = 100 L_max / ||u||^2`: this
//!   overestimates `lambda_max` by at most 1 % (since `theta_i >= 0`) and keeps
//!   it valid; the first breakpoint is solved to `a eps` anyway.
//! - Each breakpoint is solved to an exact gap `G <= a eps` at the iterate.
//!   Going to `lambda' = rho lambda` keeps `w` and every `w_i`, scales `l_i`
//!   (and `alpha_i(y != y_i)`) by `rho`, and changes the gap to
//!   `G + (1 - rho) U`, `U = sum_i (l_i - lambda <w_i, w>)`. With
//!   `Delta = (a + b) eps - G`, the iterate stays eps-optimal down to
//!   `lambda_next = (1 - Delta / U) lambda`; when `U <= Delta` it is
//!   eps-optimal for every smaller lambda and the path ends.

use super::engine::BcfwState;
use crate::error::{Error, Result};
use crate::oracle::pass::{on_oracle_thread, oracle_pass};
use crate::oracle::MaxOracle;
use crate::oracle::SparseVec;
use crate::vocab::Exit;

/// One breakpoint of the path: `w` is eps-optimal for every lambda in
/// `[lambda_low, lambda]`.
#[derive(Debug, Clone)]
pub struct Breakpoint {
    /// The lambda of this breakpoint (the largest this `w` serves).
    pub lambda: f64,
    /// The smallest lambda this `w` is eps-optimal for (0: all below).
    pub lambda_low: f64,
    /// The iterate at this breakpoint.
    pub w: Vec<f64>,
    /// Its exact duality gap at `lambda` (at most `a eps`).
    pub gap: f64,
    /// Its primal value at `lambda`.
    pub primal: f64,
    /// BCFW passes spent at this breakpoint.
    pub passes: u64,
    /// Oracle calls so far along the path, exact passes included.
    pub oracle_calls: u64,
    /// How the solve at this breakpoint ended.
    pub exit: Exit,
    /// Whether every oracle answer of this breakpoint's solve and exact pass
    /// was trusted as a maximiser (`Info::certified`): else `gap` certifies
    /// nothing.
    pub certified: bool,
}

/// A corner of the oracle at `w = 0`: label id, psi, loss.
pub type StartCorner = (u64, SparseVec, f64);

/// What the path must reach: gap `eps` on every lambda down to `lambda_min`,
/// each breakpoint solved to `a eps`, at most `max_breakpoints`.
#[derive(Debug, Clone, Copy)]
pub struct PathTarget {
    pub eps: f64,
    pub a: f64,
    pub lambda_min: f64,
    pub max_breakpoints: usize,
}

/// lambda_max and the corners of the oracle at `w = 0` (the path's start).
pub fn lambda_max(
    oracle: &dyn MaxOracle,
    pool: &rayon::ThreadPool,
    eps: f64,
    a: f64,
) -> Result<(f64, Vec<StartCorner>)> {
    let n = oracle.num_examples();
    let dim = oracle.dim();
    let zero = vec![0.0; dim];
    let items = on_oracle_thread(oracle.thread_safe(), pool, || {
        oracle_pass(oracle, &zero, true, "in the lambda_max pass at w = 0")
    })?;
    let mut u = vec![0.0; dim];
    let mut l_max: f64 = 0.0;
    for it in &items {
        if let Some(p) = &it.psi {
            for (&j, &v) in p.idx.iter().zip(&p.val) {
                u[j as usize] += v;
            }
        }
        l_max = l_max.max(it.loss);
    }
    u.iter_mut().for_each(|x| *x /= n as f64);
    // At w = 0 with the dual at the ground truths (dual value 0) the gap is
    // the mean loss R(0): an eps above it makes w = 0 eps-optimal for every
    // lambda, and the lambda_max formula would give a lambda so small that
    // the path's iterates overflow.
    let risk_at_zero = items.iter().map(|it| it.hinge).sum::<f64>() / n as f64;
    if eps >= risk_at_zero {
        return Err(Error::invalid_argument(format!(
            "eps = {eps:e} is not below the risk at w = 0 ({risk_at_zero}): w = 0 is \
             eps-optimal for every lambda, there is no path to follow"
        )));
    }
    let uu = crate::linalg::norm2(&u);
    let corners = items
        .into_iter()
        .map(|it| (it.label, it.psi.unwrap_or_default(), it.loss))
        .collect();
    if uu == 0.0 {
        // psi is 0 at every answer: w = 0 is optimal for every lambda.
        return Ok((0.0, corners));
    }
    let t = 100.0 * l_max.max(f64::MIN_POSITIVE) / uu;
    let tu: Vec<f64> = u.iter().map(|x| t * x).collect();
    let items = on_oracle_thread(oracle.thread_safe(), pool, || {
        oracle_pass(oracle, &tu, false, "in the lambda_max pass at T u")
    })?;
    let theta_mean = items.iter().map(|it| it.hinge / t).sum::<f64>() / n as f64;
    let lmax = (uu + theta_mean.max(0.0)) / (a * eps);
    if !lmax.is_finite() {
        return Err(Error::non_finite(format!("lambda_max is {lmax}")));
    }
    Ok((lmax, corners))
}

/// Where the current iterate stops being eps-optimal going down from its
/// lambda: `Some(lambda_next)`, or `None` when it is eps-optimal for all
/// smaller lambdas. `gap` is the iterate's exact gap.
pub fn next_lambda(state: &BcfwState, gap: f64, eps: f64) -> Option<f64> {
    let w = state.w();
    let lambda = state.lambda();
    let big_u: f64 = state
        .blocks
        .iter()
        .enumerate()
        .map(|(i, b)| b.l - lambda * state.block_dot(i, w))
        .sum();
    let delta = eps - gap;
    if big_u <= delta {
        None
    } else {
        Some((1.0 - delta / big_u) * lambda)
    }
}

/// Solves the path from lambda_max down to `lambda_min` with
/// `solve(state)`, which runs BCFW at the state's lambda to gap `a eps` and
/// returns its exit; then an exact pass gives the iterate's gap.
pub fn regularization_path(
    oracle: &dyn MaxOracle,
    pool: &rayon::ThreadPool,
    state: &mut BcfwState,
    target: PathTarget,
    solve: &mut dyn FnMut(&mut BcfwState) -> Result<Exit>,
) -> Result<Vec<Breakpoint>> {
    let PathTarget {
        eps,
        a,
        lambda_min,
        max_breakpoints,
    } = target;
    if !(eps.is_finite() && eps > 0.0) {
        return Err(Error::invalid_argument(format!(
            "the path's eps must be positive, got {eps}"
        )));
    }
    if !(lambda_min.is_finite() && lambda_min > 0.0) {
        return Err(Error::invalid_argument(format!(
            "lambda_min must be positive, got {lambda_min}"
        )));
    }
    let (lmax, corners) = lambda_max(oracle, pool, eps, a)?;
    let mut lambda = lmax.max(lambda_min);
    state.set_lambda(lambda);
    state.set_corners(corners)?;
    state.count.oracle_calls += 2 * oracle.num_examples() as u64;
    let mut out = Vec::new();
    loop {
        let passes0 = state.count.passes;
        let doubtful0 = state.count.doubtful;
        let mut exit;
        let mut gap;
        let mut primal;
        loop {
            exit = solve(state)?;
            let e = state.exact_pass(oracle, pool, true)?;
            gap = e.gap;
            primal = e.primal;
            let limited = matches!(
                exit,
                Exit::MaxIterations | Exit::TimeLimit | Exit::StoppedByUser
            );
            if gap <= a * eps || limited {
                break;
            }
        }
        let next = next_lambda(state, gap, eps);
        out.push(Breakpoint {
            lambda,
            lambda_low: next.unwrap_or(0.0).max(0.0),
            w: state.w().to_vec(),
            gap,
            primal,
            passes: state.count.passes - passes0,
            oracle_calls: state.count.oracle_calls,
            exit,
            certified: state.count.doubtful == doubtful0,
        });
        let stop = matches!(exit, Exit::TimeLimit | Exit::StoppedByUser);
        match next {
            Some(l)
                if !stop
                    && l < lambda
                    && lambda > lambda_min
                    && out.len() < max_breakpoints.max(1) =>
            {
                lambda = l.max(lambda_min);
                state.set_lambda(lambda);
            }
            _ => return Ok(out),
        }
    }
}

//! Prox-BMRM and Prox-P-BMRM (Algorithm 2 of the Prox-BMRM technical report,
//! as docs/bundle-methods.md states it): BMRM steps damped by a prox term
//! `alpha ||w - w_t||^2` around the last iterate, with `alpha` re-tuned
//! whenever an iteration decreases `F` by less than `gamma`.
//!
//! K grows: after [`GROW_AFTER`] steps in a row that reach the bound and
//! lower `F`, K doubles. The report's K (0.01 ||w_1||) is tied to the
//! start's norm, so from a start far inside the optimum's ball (a few SGD
//! passes, a scaled-down solution) every step was a hundredth of a small
//! norm and the run stalled at its iteration limit; a K that is too small
//! shows exactly as steps that keep reaching it while `F` keeps falling,
//! and doubling it reaches any scale in a logarithmic number of rounds.
//! Where the report's K fits, a step that overshoots (`F` rises) or falls
//! short of K breaks the run of hits, so K stays as the report sets it.
//!
//! Scale: our risk is a mean, so `lambda` is `m` times smaller than the
//! summed-risk lambda of the paper; the prox constants are searched on the
//! grid `{0} ∪ {lambda * 2^k}`, which is the paper's `{0, 1, 2, 4, ...}`
//! made invariant to the scale of `F`.

use super::constrained::step_length;
use super::reduced::{prox_distance, solve_prox, Centre, StepContext, StepRule};
use crate::error::Result;

/// Lowest and highest exponent of the alpha grid `lambda * 2^k`.
const K_MIN: i32 = -30;
const K_MAX: i32 = 60;
/// The exponent that stands for alpha = 0.
const ZERO: i32 = i32::MIN;
/// A step at least this share of K long reached the bound (the alpha grid
/// doubles, so a searched step is between about K/2 and K).
const AT_BOUND: f64 = 0.5;
/// Steps in a row that reach the bound and lower `F` before K doubles.
const GROW_AFTER: u32 = 10;

/// The prox step rule with its constants `T` and `K`.
pub struct ProxSteps {
    t: f64,
    /// The step length bound; `None` until the start point is known.
    k: Option<f64>,
    /// The grid exponent of the current alpha; [`ZERO`] means alpha = 0.
    /// (A plain integer, not an `Option`: the optimiser computed the power
    /// of a `None`'s undefined payload before testing it, which valgrind
    /// reports.)
    exponent: i32,
    lambda: f64,
    gamma: f64,
    /// How many alpha searches ran (for tests and the history).
    pub searches: u64,
    /// Consecutive steps that reached the bound and lowered `F`.
    hits: u32,
}

impl ProxSteps {
    /// `k = 0` chooses K = 0.01 ||w_1||, or from w_1 = 0 the scale-aware
    /// 0.01 sqrt(2 F(w_1) / lambda).
    pub fn new(t: f64, k: f64, lambda: f64) -> Self {
        ProxSteps {
            t,
            k: (k > 0.0).then_some(k),
            exponent: ZERO,
            lambda,
            gamma: f64::INFINITY,
            searches: 0,
            hits: 0,
        }
    }

    fn alpha_of(&self, exponent: i32) -> f64 {
        if exponent == ZERO {
            0.0
        } else {
            self.lambda * 2f64.powi(exponent)
        }
    }

    /// The next lower and higher grid point.
    fn lower(e: i32) -> Option<i32> {
        match e {
            ZERO => None,
            k if k <= K_MIN => Some(ZERO),
            k => Some(k - 1),
        }
    }
    fn higher(e: i32) -> Option<i32> {
        match e {
            ZERO => Some(K_MIN),
            k if k >= K_MAX => None,
            k => Some(k + 1),
        }
    }

    /// The smallest grid alpha whose reduced-problem step from the centre is
    /// at most `k` long; the distance falls as alpha grows, so the search
    /// walks from the current alpha down or up.
    fn search(&mut self, step: &mut StepContext<'_>, k: f64) -> Result<()> {
        self.searches += 1;
        let centre = Centre::new(step.bundle, step.centre);
        let lambda = step.lambda;
        let mut distance = |e: i32, this: &Self| -> Result<f64> {
            let alpha = this.alpha_of(e);
            if let Some(cd) = step.constrained.as_deref_mut() {
                let c = step.centre;
                let w = cd
                    .solve(
                        step.bundle,
                        lambda,
                        alpha,
                        c,
                        c,
                        true,
                        None,
                        &step.qp,
                        step.qp_seconds,
                    )?
                    .w;
                return Ok(step_length(&w, c));
            }
            solve_prox(
                step.bundle,
                lambda,
                alpha,
                &centre,
                &step.qp,
                step.qp_seconds,
            )?;
            Ok(prox_distance(step.bundle, lambda, alpha, &centre))
        };
        let mut e = self.exponent;
        if distance(e, self)? <= k {
            while let Some(lower) = Self::lower(e) {
                if distance(lower, self)? <= k {
                    e = lower;
                } else {
                    break;
                }
            }
        } else {
            while let Some(higher) = Self::higher(e) {
                e = higher;
                if distance(e, self)? <= k {
                    break;
                }
            }
        }
        self.exponent = e;
        Ok(())
    }
}

impl StepRule for ProxSteps {
    fn start(&mut self, start_norm: f64, start_objective: f64, lambda: f64) {
        if self.k.is_none() {
            // 0.01 ||w_1||; from w_1 = 0, 0.01 of the radius sqrt(2 F(w_1) / lambda)
            // of the ball that holds the optimum when R >= 0.
            let scale = if start_norm > 0.0 {
                start_norm
            } else if start_objective > 0.0 {
                (2.0 * start_objective / lambda).sqrt()
            } else {
                0.1
            };
            self.k = Some(0.01 * scale);
        }
        self.exponent = ZERO;
        self.gamma = f64::INFINITY;
        self.hits = 0;
    }

    fn alpha(&self) -> f64 {
        self.alpha_of(self.exponent)
    }

    fn uses_centre(&self) -> bool {
        true
    }

    fn update(&mut self, step: &mut StepContext<'_>) -> Result<()> {
        let mut k = self.k.unwrap_or(1e-3);
        // A step that reached the bound and lowered F: GROW_AFTER of them in
        // a row mean K, not the model, limits the steps; K doubles.
        if step.f_new < step.f_prev && step.step_norm >= AT_BOUND * k {
            self.hits += 1;
        } else {
            self.hits = 0;
        }
        if self.hits >= GROW_AFTER {
            k *= 2.0;
            self.k = Some(k);
            self.hits = 0;
        }
        if step.f_prev - step.f_new >= self.gamma {
            return Ok(());
        }
        self.search(step, k)?;
        let eps = step.tol_rel.min(0.5);
        self.gamma = step.f_new / self.t - step.lower_bound / (self.t * (1.0 - eps));
        Ok(())
    }
}

//! BMRM, P-BMRM, Prox-BMRM and Prox-P-BMRM as one [`Method`]: each
//! iteration solves the reduced problem for the lower bound, lets the step
//! rule choose the prox constant of the step, and evaluates the new point.
//! The lower bound always comes from the `alpha = 0` problem.

use super::constrained::ConstrainedDual;
use std::time::Instant;

use super::reduced::{
    primal_point, solve_lower, solve_lower_and_prox, Centre, StepContext, StepRule,
};
use super::sgd::Sgd;
use crate::bundle::{Bundle, Certified};
use crate::error::{Error, Result};
use crate::exec::precision::{check_tolerance, IMPRECISE_LIMIT};
use crate::exec::{Context, Method};
use crate::linalg::{dist, norm2};
use crate::oracle::Bounds;
use crate::qp::QpOptions;
use crate::vocab::Iteration;

/// A bundle method: its cutting-plane model and its step rule.
pub struct BundleMethod {
    bundle: Bundle,
    rule: Box<dyn StepRule>,
    /// The prox-centre: the best point so far (an iterate worse than it does
    /// not move it, as in every proximal bundle method).
    centre: Vec<f64>,
    /// The constraints on `w` and their multipliers (`None`: unconstrained).
    constrained: Option<ConstrainedDual>,
    /// The box the SGD start projects its steps onto (`None`: free).
    sgd_bounds: Option<Bounds>,
    /// Consecutive iterations whose bound lost more than `F` to rounding.
    imprecise: u32,
    /// Consecutive iterations whose bound lost more than the tolerance to
    /// rounding.
    below_rounding: u32,
}

impl BundleMethod {
    /// A run on `bundle` (empty, or kept from the last run) with `rule`;
    /// `constrained` holds the constraints, and `sgd_bounds` their box for
    /// the SGD start.
    pub fn new(
        bundle: Bundle,
        rule: Box<dyn StepRule>,
        constrained: Option<ConstrainedDual>,
        sgd_bounds: Option<Bounds>,
    ) -> Self {
        BundleMethod {
            bundle,
            rule,
            centre: Vec::new(),
            imprecise: 0,
            below_rounding: 0,
            constrained,
            sgd_bounds,
        }
    }

    /// The bundle, to keep for the next run.
    pub fn into_bundle(self) -> Bundle {
        self.bundle
    }
}

impl Method for BundleMethod {
    /// Evaluates the start, or runs `sgd_passes` passes of SGD from it
    /// (projected onto the box) and keeps the planes of every pass.
    fn start(&mut self, ctx: &mut Context<'_>, w: &[f64]) -> Result<()> {
        let first = if ctx.settings.sgd_passes > 0 {
            let mut sgd = Sgd::new(ctx, w, self.sgd_bounds.clone())?;
            for k in 1..=ctx.settings.sgd_passes {
                if sgd.pass(ctx, u64::from(k))?.is_none() {
                    // The time limit: the first iteration ends the run.
                    break;
                }
            }
            let (best, others) = sgd.into_evaluations();
            // Each add can evict and rebuild Gram rows: thousands of passes
            // took minutes past the limit. The seeding planes
            // are optional, so the deadline just stops adding them.
            let deadline = ctx.deadline();
            for e in others {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    break;
                }
                self.bundle.add(e.planes);
            }
            best
        } else {
            ctx.evaluate(w, 0)?
        };
        self.bundle.add(first.planes);
        self.centre = ctx.best_w().to_vec();
        self.rule
            .start(norm2(&self.centre).sqrt(), ctx.primal(), ctx.lambda);
        Ok(())
    }

    fn step(&mut self, ctx: &mut Context<'_>, t: u64) -> Result<Iteration> {
        let lambda = ctx.lambda;
        let bundle = &mut self.bundle;
        let opts = ctx.qp_options();
        let alpha = self.rule.alpha();
        if let Some(cd) = &mut self.constrained {
            // Every evaluated point is feasible, so the best one (the
            // centre) anchors the repair of a row's violation.
            let centre = &self.centre;
            let lower = cd
                .solve(
                    bundle,
                    lambda,
                    0.0,
                    centre,
                    centre,
                    false,
                    None,
                    &opts,
                    ctx.qp_seconds(),
                )
                .map_err(|e| e.context(format!("in the reduced problem at iteration {t}")))?;
            let bound = cd.certified_lower(bundle, lambda, ctx.primal(), lower.value, &lower.w);
            self.imprecise = check_precision(bound, ctx, self.imprecise, t)?;
            self.below_rounding =
                check_tolerance(bound.allowance, bound.value, ctx, self.below_rounding, t)?;
            let w_new = if alpha == 0.0 {
                bundle.beta_prox.clone_from(&bundle.beta);
                lower.w
            } else {
                cd.solve(
                    bundle,
                    lambda,
                    alpha,
                    centre,
                    centre,
                    true,
                    Some(ctx.primal()),
                    &opts,
                    ctx.qp_seconds(),
                )
                .map_err(|e| e.context(format!("in the prox problem at iteration {t}")))?
                .w
            };
            return self.finish_step(ctx, t, w_new, lower.value, alpha, opts);
        }
        // A proximal step solves its prox problem beside the lower bound's.
        let (lower, prox) = if alpha == 0.0 {
            (solve_lower(bundle, lambda, &opts, ctx.qp_seconds()), None)
        } else {
            let c = Centre::new(bundle, &self.centre);
            let f_centre = ctx.primal();
            let (lower, prox) =
                solve_lower_and_prox(bundle, lambda, alpha, &c, f_centre, opts, ctx.qp_seconds());
            (lower, Some(prox))
        };
        let lower =
            lower.map_err(|e| e.context(format!("in the reduced problem at iteration {t}")))?;
        if !lower.value.is_finite() {
            return Err(Error::non_finite(format!(
                "the reduced problem's value is {} at iteration {t}",
                lower.value
            )));
        }
        // The QP's value went through the Gram matrix: the reported bound
        // is recomputed from the planes with its rounding taken off.
        let bound = bundle.certified_dual(&bundle.beta, lambda, ctx.primal());
        self.imprecise = check_precision(bound, ctx, self.imprecise, t)?;
        self.below_rounding =
            check_tolerance(bound.allowance, bound.value, ctx, self.below_rounding, t)?;
        let w_new = match prox {
            None => {
                bundle.beta_prox.clone_from(&bundle.beta);
                primal_point(bundle, lambda, 0.0, &bundle.beta, &self.centre)
            }
            Some(prox) => {
                prox.map_err(|e| e.context(format!("in the prox problem at iteration {t}")))?;
                primal_point(bundle, lambda, alpha, &bundle.beta_prox, &self.centre)
            }
        };
        self.finish_step(ctx, t, w_new, lower.value, alpha, opts)
    }
}

/// Raises the run's lower bound to `bound`, and ends the run when rounding
/// took more than `F` off the bound in [`IMPRECISE_LIMIT`] iterations in a
/// row: the data's scale is beyond what `f64` can certify (a feature at
/// 1e30 beside features near 1 makes the reduced problem's cancellation
/// 1e44), and the gap would never close. Returns the new count.
fn check_precision(bound: Certified, ctx: &mut Context<'_>, count: u32, t: u64) -> Result<u32> {
    ctx.raise_lower_bound(bound.value);
    let scale = ctx.primal().abs().max(ctx.settings.tol_abs);
    if bound.irreducible.is_nan() || bound.irreducible <= scale {
        return Ok(0);
    }
    if count + 1 < IMPRECISE_LIMIT {
        return Ok(count + 1);
    }
    Err(Error::invalid_argument(format!(
        "precision lost at iteration {t}: the rounding error bound of the lower bound is {:.3e}, \
         more than F(w) = {:.6e}, so no gap can be certified in f64 at this scale of data \
         (features many orders of magnitude apart, or iterates far out): rescale the features",
        bound.irreducible,
        ctx.primal()
    )))
}

impl BundleMethod {
    /// Evaluates the step's point, updates the bundle and lets the rule
    /// choose the next prox constant.
    fn finish_step(
        &mut self,
        ctx: &mut Context<'_>,
        t: u64,
        w_new: Vec<f64>,
        lower_bound: f64,
        alpha: f64,
        opts: QpOptions,
    ) -> Result<Iteration> {
        let lambda = ctx.lambda;
        let bundle = &mut self.bundle;
        let f_prev = ctx.primal();
        let eval = ctx.evaluate(&w_new, t)?;
        let step_norm = dist(&w_new, &self.centre);
        bundle.tick_idle();
        bundle.clean(ctx.settings.clean_after);
        let objective = eval.objective;
        let risk = eval.risk;
        // The prox-centre of the next steps is the best point: its dots with
        // every plane come with the Gram update instead of another read of
        // all planes (one or two per iteration).
        if self.rule.uses_centre() {
            bundle.add_and_dot(eval.planes, ctx.best_w());
        } else {
            bundle.add(eval.planes);
        }
        self.centre.copy_from_slice(ctx.best_w());
        let tol_rel = ctx.settings.tol_rel;
        let mut step = StepContext {
            bundle,
            lambda,
            f_prev,
            f_new: objective,
            step_norm,
            lower_bound,
            tol_rel,
            centre: &self.centre,
            qp: opts,
            qp_seconds: ctx.qp_seconds(),
            constrained: self.constrained.as_mut(),
        };
        self.rule
            .update(&mut step)
            .map_err(|e| e.context(format!("in the prox search at iteration {t}")))?;
        Ok(Iteration {
            risk,
            objective,
            num_planes: self.bundle.len() as u64,
            active_planes: self.bundle.active() as u64,
            alpha,
            step_norm,
            ..Iteration::default()
        })
    }
}

//! What a method sees of its run: the settings, the counted oracles, the
//! best point and the bounds, and the checked evaluation of all parts.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::counting::{Tally, Units};
use crate::bundle::{Plane, PlaneError, Slope};
use crate::error::{Error, Result};
use crate::linalg::{first_non_finite, norm2};
use crate::oracle::adapters::{eval_parts, PassDeadline};
use crate::oracle::{AnswerLog, MaxOracle, PartitionedRisk, Subgradient};
use crate::qp::QpOptions;
use crate::rounding::gamma;
use crate::vocab::{Exit, Info, Settings};

/// The inner QP is solved to this share of the outer gap. Its value is a
/// lower bound however inexactly it is solved (the dual value at a feasible
/// `beta`), so the share trades QP time against outer iterations only. A
/// warm-started QP stopped early also moves `w` less than the model's exact
/// minimiser would, which steadies BMRM: measured against 0.01 (the share
/// before), 0.1 took BMRM to tol_rel from 1,433 to 872 iterations on the OCR
/// words at lambda 0.01 and from 4,437 to 2,199 at 0.001, P-BMRM (16 parts)
/// from 1,579 to 959 and Prox-P-BMRM from 1,125 to 676 at 0.001, and
/// Prox-P-BMRM on 60,000 Fashion-MNIST images at lambda_sum 1 from 10.5 s to
/// 7.3 s (its QP from 40 % of the time to 17 %) at 325 against 332
/// iterations. 0.3 helped BMRM more but P-BMRM and Prox-P-BMRM less.
const QP_SHARE_OF_GAP: f64 = 0.1;

/// The risk and the cutting planes of every part at one point.
pub struct Evaluation {
    /// `R(w)`.
    pub risk: f64,
    /// `F(w)`.
    pub objective: f64,
    /// One plane per part, in part order.
    pub planes: Vec<Plane>,
}

impl Evaluation {
    /// The subgradient of the whole risk (sum of the parts', in part order).
    pub fn subgradient(&self) -> Vec<f64> {
        let mut g = vec![0.0; self.planes[0].a.dim()];
        for p in &self.planes {
            p.a.add_block_to(1.0, 0, &mut g);
        }
        g
    }
}

/// The oracles of a run, all counted into one [`Tally`].
#[derive(Clone)]
pub struct Oracles {
    /// The parts the cutting-plane model is built on.
    pub parts: Arc<dyn PartitionedRisk>,
    /// Where [`Context::evaluate`] tells the example passes of `parts` the
    /// run's deadline.
    pub pass_deadline: Arc<PassDeadline>,
    /// Where the consumers of the max-oracle's corners (the example parts,
    /// BCFW, SGD) count the answers they cannot trust.
    pub answers: Arc<AnswerLog>,
    /// The units SGD samples.
    pub units: Units,
    /// The max-oracle, when the problem has one (BCFW's).
    pub examples: Option<Arc<dyn MaxOracle>>,
    /// The same max-oracle uncounted, for work that is not part of the
    /// algorithm (BCFW's traced gaps).
    pub uncounted: Option<Arc<dyn MaxOracle>>,
    /// Where the calls above are counted.
    pub tally: Arc<Tally>,
}

/// The state of one run that the executor owns and a method reads and feeds.
pub struct Context<'a> {
    /// The settings of this run.
    pub settings: &'a Settings,
    /// `lambda` of this run.
    pub lambda: f64,
    /// The solver's thread pool.
    pub pool: &'a rayon::ThreadPool,
    /// The counted oracles.
    pub oracles: Oracles,
    pub(super) started: Instant,
    /// Time taken off the clock (work outside the algorithm).
    pub(super) excluded: Duration,
    pub(super) calls0: u64,
    pub(super) seconds0: f64,
    /// The untrusted answers counted before this run.
    doubtful0: u64,
    pub(super) info: Info,
    /// The best point seen (the returned `w`).
    best_w: Vec<f64>,
}

impl<'a> Context<'a> {
    /// A run from `start` (its first best point, until one is evaluated).
    pub fn new(
        settings: &'a Settings,
        pool: &'a rayon::ThreadPool,
        oracles: Oracles,
        start: &[f64],
    ) -> Self {
        let calls0 = oracles.tally.calls();
        let seconds0 = oracles.tally.seconds();
        let doubtful0 = oracles.answers.doubtful();
        Context {
            settings,
            lambda: settings.lambda,
            pool,
            oracles,
            started: Instant::now(),
            excluded: Duration::ZERO,
            calls0,
            seconds0,
            doubtful0,
            info: Info {
                primal: f64::INFINITY,
                lower_bound: f64::NEG_INFINITY,
                gap: f64::INFINITY,
                risk: f64::NAN,
                ..Info::default()
            },
            best_w: start.to_vec(),
        }
    }

    /// The best `F` so far (infinity before the first evaluation).
    pub fn primal(&self) -> f64 {
        self.info.primal
    }

    /// The best point so far.
    pub fn best_w(&self) -> &[f64] {
        &self.best_w
    }

    /// The seconds spent in QP solves, for the methods' solvers to add to.
    pub fn qp_seconds(&mut self) -> &mut f64 {
        &mut self.info.qp_seconds
    }

    /// `F(w) = lambda/2 ||w||^2 + r`.
    pub fn objective(&self, w: &[f64], risk: f64) -> f64 {
        0.5 * self.lambda * norm2(w) + risk
    }

    /// Runs `f` off the clock: work that is not part of the algorithm (its
    /// time counts neither as elapsed nor as oracle time).
    pub fn off_the_clock<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let t = Instant::now();
        let out = f(self);
        self.excluded += t.elapsed();
        out
    }

    /// Evaluates every part at `w` (in parallel when allowed), checks the
    /// values, turns them into cutting planes and keeps `w` if it is the best
    /// point so far. Errors name the iteration and the part.
    pub fn evaluate(&mut self, w: &[f64], iteration: u64) -> Result<Evaluation> {
        if let Some((j, v)) = first_non_finite(w) {
            return Err(Error::non_finite(format!(
                "the solver's iterate w[{j}] is {v} at iteration {iteration}"
            )));
        }
        let parts = self.oracles.parts.clone();
        let num_parts = parts.num_parts();
        self.oracles.pass_deadline.set(self.deadline());
        let (risks, grads) = eval_parts(parts.as_ref(), w, num_parts)
            .map_err(|e| e.context(format!("at iteration {iteration}")))?;
        let mut planes = Vec::with_capacity(num_parts);
        let mut risk = 0.0;
        for (p, (r, a)) in risks.into_iter().zip(grads).enumerate() {
            let part = if num_parts > 1 {
                format!(" (part {p})")
            } else {
                String::new()
            };
            if !r.is_finite() {
                return Err(Error::non_finite(format!(
                    "risk is {r} at iteration {iteration}{part}"
                )));
            }
            if let Some((j, v)) = a.first_non_finite() {
                return Err(Error::non_finite(format!(
                    "subgradient[{j}] is {v} at iteration {iteration}{part}"
                )));
            }
            risk += r;
            let b = r - a.dot(w);
            // Counted over the dimension, not the stored entries, so that a
            // dense and a sparse subgradient (one process and MPI ranks give
            // either) make the same bits; the sum itself rounds: inflate it.
            let abs_dot = a.abs_dot(w);
            let terms = w.len();
            let err = PlaneError::of_evaluation(r, abs_dot * (1.0 + gamma(terms)), terms);
            let a = match a {
                Subgradient::Dense(a) => Slope::new(a),
                Subgradient::Sparse(a) => Slope::from_sparse(w.len(), a),
            };
            planes.push(Plane { part: p, a, b, err });
        }
        let objective = self.objective(w, risk);
        if !objective.is_finite() {
            return Err(Error::non_finite(format!(
                "objective is {objective} at iteration {iteration}"
            )));
        }
        self.offer(w, objective, risk);
        Ok(Evaluation {
            risk,
            objective,
            planes,
        })
    }

    /// Keeps `w` as the returned point if its `F` is the best so far, and
    /// says whether it did.
    pub fn offer(&mut self, w: &[f64], objective: f64, risk: f64) -> bool {
        let better = objective < self.info.primal;
        if better {
            self.info.primal = objective;
            self.info.risk = risk;
            self.best_w.copy_from_slice(w);
        }
        better
    }

    /// Raises the lower bound to `lb` if that is higher.
    pub fn raise_lower_bound(&mut self, lb: f64) {
        if lb > self.info.lower_bound {
            self.info.lower_bound = lb;
        }
    }

    /// When the time limit ends the run (`None`: no limit), counting time
    /// taken off the clock so far. Loops inside a step (the SGD start, its
    /// passes) check it too.
    pub fn deadline(&self) -> Option<Instant> {
        let limit = self.settings.time_limit_seconds;
        // A limit too far away to represent is no limit.
        let limit = Duration::try_from_secs_f64(limit)
            .ok()
            .filter(|_| limit > 0.0)?;
        (self.started + self.excluded).checked_add(limit)
    }

    /// The convergence test on the best primal and the best lower bound.
    pub fn converged(&self) -> Option<Exit> {
        self.converged_at(self.info.primal)
    }

    /// The convergence test as it would be with the primal value `primal`
    /// and the best lower bound.
    pub fn converged_at(&self, primal: f64) -> Option<Exit> {
        let gap = primal - self.info.lower_bound;
        if !gap.is_finite() {
            // No primal value yet (BCFW before its first exact pass).
            None
        } else if gap <= self.settings.tol_abs {
            Some(Exit::ConvergedAbs)
        } else if gap <= self.settings.tol_rel * primal.abs() {
            Some(Exit::ConvergedRel)
        } else {
            None
        }
    }

    /// The options of the inner QP solves of this step: the accuracy from
    /// `qp_tolerance`, the update budget and the run's deadline.
    pub fn qp_options(&self) -> QpOptions {
        QpOptions {
            tol_gap: self.qp_tolerance(),
            max_updates: self.settings.qp_max_updates,
            deadline: self.deadline(),
        }
    }

    /// The accuracy the inner QP should reach: [`QP_SHARE_OF_GAP`] of the
    /// current outer gap, never far below what the stopping rule needs.
    fn qp_tolerance(&self) -> f64 {
        let scale = self.info.primal.abs().max(1e-300);
        let gap = self.info.primal - self.info.lower_bound;
        let target = (self.settings.tol_rel * scale).max(self.settings.tol_abs);
        let tol = if gap.is_finite() {
            QP_SHARE_OF_GAP * gap
        } else {
            1e-3 * scale
        };
        tol.max(1e-3 * target).max(1e-15 * scale)
    }

    /// Seconds since the start, without the time taken off the clock.
    pub(super) fn elapsed(&self) -> f64 {
        self.started
            .elapsed()
            .saturating_sub(self.excluded)
            .as_secs_f64()
    }

    /// Copies the counted calls and their time into the summary, and
    /// whether every oracle answer of the run so far was trusted.
    pub(super) fn sync_counts(&mut self) {
        self.info.certified = self.oracles.answers.doubtful() == self.doubtful0;
        let tally = &self.oracles.tally;
        self.info.oracle_calls = tally.calls() - self.calls0;
        self.info.oracle_seconds = tally.seconds() - self.seconds0;
    }

    pub(super) fn into_parts(self) -> (Info, Vec<f64>) {
        (self.info, self.best_w)
    }
}

//! What every solver loop shares: oracle evaluation with its checks, the best
//! point seen, the lower bound, timers, history rows, the observer and the
//! stopping rules.

use std::time::Instant;

use super::{Exit, Info, Iteration, Observer, Settings};
use crate::bundle::Plane;
use crate::error::{Error, Result};
use crate::linalg::{dot, first_non_finite, norm2};
use crate::oracle::adapters::eval_parts;
use crate::oracle::PartitionedRisk;

/// The risk and the cutting planes of every part at one point.
pub struct Evaluation {
    pub risk: f64,
    pub objective: f64,
    pub planes: Vec<Plane>,
}

impl Evaluation {
    /// The subgradient of the whole risk (sum of the parts', in part order).
    pub fn subgradient(&self) -> Vec<f64> {
        let mut g = vec![0.0; self.planes[0].a.len()];
        for p in &self.planes {
            crate::linalg::axpy(1.0, &p.a, &mut g);
        }
        g
    }
}

/// The state of one run of a solver.
pub struct Run<'a> {
    pub settings: &'a Settings,
    pub lambda: f64,
    pub parts: &'a dyn PartitionedRisk,
    /// User callback invocations per evaluation of all parts.
    pub calls_per_eval: u64,
    pub started: Instant,
    pub info: Info,
    pub history: &'a mut Vec<Iteration>,
    pub observer: Option<&'a mut Observer>,
    pub best_w: Vec<f64>,
    pub best_risk: f64,
}

impl<'a> Run<'a> {
    pub fn new(
        settings: &'a Settings,
        parts: &'a dyn PartitionedRisk,
        calls_per_eval: u64,
        history: &'a mut Vec<Iteration>,
        observer: Option<&'a mut Observer>,
        start: &[f64],
    ) -> Self {
        history.clear();
        Run {
            settings,
            lambda: settings.lambda,
            parts,
            calls_per_eval,
            started: Instant::now(),
            info: Info {
                primal: f64::INFINITY,
                lower_bound: f64::NEG_INFINITY,
                gap: f64::INFINITY,
                risk: f64::NAN,
                ..Info::default()
            },
            history,
            observer,
            best_w: start.to_vec(),
            best_risk: f64::NAN,
        }
    }

    /// `F(w) = lambda/2 ||w||^2 + r`.
    pub fn objective(&self, w: &[f64], risk: f64) -> f64 {
        0.5 * self.lambda * norm2(w) + risk
    }

    /// Evaluates every part at `w` (in parallel when allowed), checks the
    /// values, turns them into cutting planes and keeps `w` if it is the best
    /// point so far. Errors name the iteration and the part.
    pub fn evaluate(&mut self, w: &[f64], iteration: u64) -> Result<Evaluation> {
        if let Some((j, v)) = first_non_finite(w) {
            return Err(Error::NonFinite(format!(
                "the solver's iterate w[{j}] is {v} at iteration {iteration}"
            )));
        }
        let t = Instant::now();
        let num_parts = self.parts.num_parts();
        let result = eval_parts(self.parts, w, num_parts);
        self.info.oracle_seconds += t.elapsed().as_secs_f64();
        self.info.oracle_calls += self.calls_per_eval;
        let (risks, grads) = result.map_err(|e| e.context(format!("at iteration {iteration}")))?;
        let mut planes = Vec::with_capacity(num_parts);
        let mut risk = 0.0;
        for (p, (r, a)) in risks.into_iter().zip(grads).enumerate() {
            let part = if num_parts > 1 {
                format!(" (part {p})")
            } else {
                String::new()
            };
            if !r.is_finite() {
                return Err(Error::NonFinite(format!(
                    "risk is {r} at iteration {iteration}{part}"
                )));
            }
            if let Some((j, v)) = first_non_finite(&a) {
                return Err(Error::NonFinite(format!(
                    "subgradient[{j}] is {v} at iteration {iteration}{part}"
                )));
            }
            risk += r;
            let b = r - dot(&a, w);
            planes.push(Plane { part: p, a, b });
        }
        let objective = self.objective(w, risk);
        if !objective.is_finite() {
            return Err(Error::NonFinite(format!(
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

    /// Keeps `w` as the returned point if its `F` is the best so far.
    pub fn offer(&mut self, w: &[f64], objective: f64, risk: f64) {
        if objective < self.info.primal {
            self.info.primal = objective;
            self.info.risk = risk;
            self.best_risk = risk;
            self.best_w.copy_from_slice(w);
        }
    }

    /// Raises the lower bound to `lb` if that is higher.
    pub fn raise_lower_bound(&mut self, lb: f64) {
        if lb > self.info.lower_bound {
            self.info.lower_bound = lb;
        }
    }

    /// Fills the summary, appends a history row, calls the observer and
    /// returns how the run must end, if it must.
    pub fn finish_iteration(&mut self, mut row: Iteration) -> Option<Exit> {
        self.info.iterations = row.iteration;
        self.info.gap = self.info.primal - self.info.lower_bound;
        self.info.elapsed_seconds = self.started.elapsed().as_secs_f64();
        row.primal = self.info.primal;
        row.lower_bound = self.info.lower_bound;
        row.elapsed_seconds = self.info.elapsed_seconds;
        row.oracle_seconds = self.info.oracle_seconds;
        row.qp_seconds = self.info.qp_seconds;
        row.oracle_calls = self.info.oracle_calls;
        self.info.num_planes = row.num_planes;
        self.info.active_planes = row.active_planes;
        self.history.push(row);
        let converged = self.converged();
        if let Some(obs) = self.observer.as_mut() {
            // The observer sees every iteration, the last one included.
            if obs(&self.info).is_break() && converged.is_none() {
                return Some(Exit::StoppedByUser);
            }
        }
        if converged.is_some() {
            return converged;
        }
        let s = self.settings;
        if s.max_iterations > 0 && row.iteration >= s.max_iterations {
            return Some(Exit::MaxIterations);
        }
        if s.time_limit_seconds > 0.0 && self.info.elapsed_seconds >= s.time_limit_seconds {
            return Some(Exit::TimeLimit);
        }
        None
    }

    /// When the time limit ends the run (`None`: no limit). Loops inside an
    /// iteration (the SGD start, its passes) check it too.
    pub fn deadline(&self) -> Option<Instant> {
        let limit = self.settings.time_limit_seconds;
        (limit > 0.0).then(|| self.started + std::time::Duration::from_secs_f64(limit))
    }

    /// The convergence test on the best primal and the best lower bound.
    pub fn converged(&self) -> Option<Exit> {
        let gap = self.info.primal - self.info.lower_bound;
        if !gap.is_finite() {
            // No primal value yet (BCFW before its first exact pass).
            None
        } else if gap <= self.settings.tol_abs {
            Some(Exit::ConvergedAbs)
        } else if gap <= self.settings.tol_rel * self.info.primal.abs() {
            Some(Exit::ConvergedRel)
        } else {
            None
        }
    }

    /// The accuracy the inner QP should reach: a small fraction of the
    /// current outer gap, never far below what the stopping rule needs.
    pub fn qp_tolerance(&self) -> f64 {
        let scale = self.info.primal.abs().max(1e-300);
        let gap = self.info.primal - self.info.lower_bound;
        let target = (self.settings.tol_rel * scale).max(self.settings.tol_abs);
        let tol = if gap.is_finite() {
            0.01 * gap
        } else {
            1e-3 * scale
        };
        tol.max(1e-3 * target).max(1e-15 * scale)
    }

    /// Ends the run: the final summary.
    pub fn into_info(mut self, exit: Exit) -> Info {
        self.info.exit = exit;
        self.info.gap = self.info.primal - self.info.lower_bound;
        self.info.elapsed_seconds = self.started.elapsed().as_secs_f64();
        self.info
    }
}

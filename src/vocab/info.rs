//! What a solve reports: the exit reason, the summary and the history rows.

/// How a solve ended. The values are the C ABI's `bmrm_exit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(i32)]
pub enum Exit {
    /// No run has ended (or the run failed).
    #[default]
    /// No run yet, or the last run failed.
    NotRun = 0,
    /// `primal - lower_bound <= tol_rel * |primal|`.
    ConvergedRel = 1,
    /// `primal - lower_bound <= tol_abs`.
    ConvergedAbs = 2,
    /// `max_iterations` was reached.
    MaxIterations = 3,
    /// `time_limit_seconds` was reached.
    TimeLimit = 4,
    /// The progress observer asked to stop.
    StoppedByUser = 5,
}

/// The state of a solve, as reported at the end and to the progress observer.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Info {
    /// How the solve ended.
    pub exit: Exit,
    /// Iterations done (BCFW: passes).
    pub iterations: u64,
    /// Oracle evaluations of the whole risk (one per iteration for bundle
    /// methods, in units of passes over all parts).
    pub oracle_calls: u64,
    /// `F(w)` at the returned (best) `w`.
    pub primal: f64,
    /// A valid lower bound on `min F`.
    pub lower_bound: f64,
    /// `primal - lower_bound`.
    pub gap: f64,
    /// `R(w)` at the returned `w`.
    pub risk: f64,
    /// Cutting planes in the model.
    pub num_planes: u64,
    /// Planes with a positive dual weight.
    pub active_planes: u64,
    /// Wall time of the run.
    pub elapsed_seconds: f64,
    /// Of which in the oracle (wall time of the evaluations).
    pub oracle_seconds: f64,
    /// Of which in the inner QP solves.
    pub qp_seconds: f64,
    /// Whether every max-oracle answer of the whole run (also those of
    /// passes that did not produce the reported bound, and of the SGD
    /// start) was trusted as a maximiser: none was marked inexact
    /// (`Corner::mark_inexact`) and none was below the ground truth (such
    /// an answer is clipped at the truth, loss 0 and psi 0). When false,
    /// `lower_bound` is still a lower bound on `min F` (every corner used is
    /// a feasible labelling), but `primal` is `F(w)` with the risk as the
    /// oracle answered it, which may lie below the true `F(w)`, so `gap`
    /// certifies nothing; a run may still end `Converged*` on it. False
    /// when the run failed. Oracle levels without corners (full and
    /// partitioned risks) always certify.
    pub certified: bool,
}

/// One row of the per-iteration history.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Iteration {
    /// The iteration, from 1.
    pub iteration: u64,
    /// Best `F(w)` so far.
    pub primal: f64,
    /// Best lower bound so far.
    pub lower_bound: f64,
    /// `R` at this iteration's point.
    pub risk: f64,
    /// `F` at this iteration's point (not the best).
    pub objective: f64,
    /// Cutting planes in the model.
    pub num_planes: u64,
    /// Planes with a positive dual weight.
    pub active_planes: u64,
    /// The prox constant used for this iteration's step (0 for BMRM).
    pub alpha: f64,
    /// `||w_t - w_{t-1}||`.
    pub step_norm: f64,
    /// Wall time since the run started.
    pub elapsed_seconds: f64,
    /// Of which in the oracle.
    pub oracle_seconds: f64,
    /// Of which in the inner QP solves.
    pub qp_seconds: f64,
    /// Oracle calls so far.
    pub oracle_calls: u64,
    /// BCFW: oracle calls / number of examples (the papers' effective passes).
    pub effective_passes: f64,
    /// BCFW: the sum of the block-gap estimates (not a certificate).
    pub gap_estimate: f64,
    /// BCFW: the exact duality gap of this pass's iterate when an exact pass
    /// was made at its end (every `gap_check` passes, or every pass with
    /// `trace_gap`), else NaN.
    pub exact_gap: f64,
}

impl Default for Iteration {
    fn default() -> Self {
        Iteration {
            iteration: 0,
            primal: 0.0,
            lower_bound: 0.0,
            risk: 0.0,
            objective: 0.0,
            num_planes: 0,
            active_planes: 0,
            alpha: 0.0,
            step_norm: 0.0,
            elapsed_seconds: 0.0,
            oracle_seconds: 0.0,
            qp_seconds: 0.0,
            oracle_calls: 0,
            effective_passes: 0.0,
            gap_estimate: 0.0,
            exact_gap: f64::NAN,
        }
    }
}

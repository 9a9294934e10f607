//! The solvers: settings, the summary and history they report, and the
//! [`Solver`] that owns a problem, its thread pool and the state kept between
//! runs (the bundle, for warm starts along a lambda path).

mod bmrm;
mod bundle_method;
mod cutting_plane;
mod info;
mod path;
mod prox_bmrm;
mod run;
mod settings;
mod sgd;

use std::ops::ControlFlow;

pub use info::{Exit, Info, Iteration};
pub use path::{solve_path, PathPoint};
pub(crate) use run::Run;
pub use settings::{Algorithm, Sampling, Settings, StepType, MAX_THREADS};

use crate::bcfw::{BcfwState, BcfwStats, Bounds, Breakpoint};
use crate::bundle::Bundle;
use crate::error::{Error, Result};
use crate::oracle::{PartitionedRisk, Problem};

use sgd::Units;

/// The progress observer: called after every iteration with the current
/// summary; `ControlFlow::Break(())` stops the run (exit `StoppedByUser`).
pub type Observer = Box<dyn FnMut(&Info) -> ControlFlow<()> + Send>;

/// Default number of parts for P-BMRM over a max-oracle.
pub const DEFAULT_PARTS: usize = 16;

/// A solver for one problem. Keep it to warm-start: [`Solver::set_lambda`]
/// keeps the cutting planes (they model `R`, which does not depend on lambda),
/// and the next [`Solver::run`] starts from the `w` it is given.
pub struct Solver {
    problem: Problem,
    settings: Settings,
    /// Built at the first run: a solver that is made and freed (or only
    /// configured) starts no threads.
    pool: std::sync::OnceLock<std::sync::Arc<rayon::ThreadPool>>,
    parts: std::sync::Arc<dyn PartitionedRisk>,
    calls_per_eval: u64,
    bundle: Option<Bundle>,
    info: Info,
    history: Vec<Iteration>,
    observer: Option<Observer>,
    /// BCFW's dual state, kept between runs.
    bcfw: Option<BcfwState>,
    /// Box constraints (BCFW only).
    bounds: Option<Bounds>,
}

impl Solver {
    /// Validates the settings against the problem and builds the thread pool.
    pub fn new(problem: Problem, settings: Settings) -> Result<Self> {
        settings.validate()?;
        let dim = problem.dim();
        if dim == 0 {
            return Err(Error::InvalidArgument(
                "the problem's dimension is 0".into(),
            ));
        }
        let algorithm = settings.algorithm;
        if algorithm == Algorithm::Bcfw && !matches!(problem, Problem::Examples(_)) {
            return Err(Error::NoOracle(format!(
                "BCFW needs an example max-oracle, but the problem has {}",
                problem.level_name()
            )));
        }
        let num_parts = if algorithm.is_partitioned() {
            match &problem {
                Problem::Risk(_) => {
                    return Err(Error::NoOracle(format!(
                        "{} needs a partitioned risk or a max-oracle, but the problem has {}",
                        algorithm.name(),
                        problem.level_name()
                    )))
                }
                Problem::Partitioned(_) => settings.num_parts,
                Problem::Examples(o) => match settings.num_parts {
                    0 => DEFAULT_PARTS.min(o.num_examples()),
                    p => p,
                },
            }
        } else {
            1
        };
        if let Problem::Examples(o) = &problem {
            if o.num_examples() == 0 {
                return Err(Error::InvalidArgument(
                    "the max-oracle has 0 examples".into(),
                ));
            }
        }
        // Before the split: it allocates per part.
        check_memory(&problem, &settings, num_parts.max(1))?;
        let parts = problem.parts(num_parts)?;
        let calls_per_eval = match &problem {
            Problem::Risk(_) => 1,
            Problem::Partitioned(r) => r.num_parts() as u64,
            Problem::Examples(o) => o.num_examples() as u64,
        };
        Self::build(problem, settings, parts, calls_per_eval)
    }

    /// A bundle-method solver over a risk given as parts that evaluates all
    /// of them at once ([`PartitionedRisk::eval_all`]): the distributed
    /// parts of `crate::distributed`. P-BMRM and Prox-P-BMRM keep one model
    /// per part; the other algorithms sum the parts into one. SGD (alone or
    /// as a start) samples single parts and is refused. `calls_per_eval` is
    /// the number of user-callback calls one evaluation of all parts makes.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(crate) fn with_parts(
        parts: std::sync::Arc<dyn PartitionedRisk>,
        calls_per_eval: u64,
        settings: Settings,
    ) -> Result<Self> {
        settings.validate()?;
        let algorithm = settings.algorithm;
        if algorithm == Algorithm::Sgd || settings.sgd_passes > 0 || algorithm == Algorithm::Bcfw {
            return Err(Error::InvalidArgument(format!(
                "{} is not available over distributed parts (set sgd_passes = 0 and use a \
                 bundle method)",
                if algorithm == Algorithm::Bcfw {
                    "BCFW"
                } else {
                    "SGD"
                }
            )));
        }
        if parts.dim() == 0 || parts.num_parts() == 0 {
            return Err(Error::InvalidArgument(format!(
                "the distributed risk has dimension {} and {} parts",
                parts.dim(),
                parts.num_parts()
            )));
        }
        let problem = Problem::Partitioned(parts.clone());
        let model = if algorithm.is_partitioned() {
            parts
        } else {
            problem.parts(1)?
        };
        Self::build(problem, settings, model, calls_per_eval)
    }

    fn build(
        problem: Problem,
        settings: Settings,
        parts: std::sync::Arc<dyn PartitionedRisk>,
        calls_per_eval: u64,
    ) -> Result<Self> {
        Ok(Solver {
            problem,
            settings,
            pool: std::sync::OnceLock::new(),
            parts,
            calls_per_eval,
            bundle: None,
            info: Info::default(),
            history: Vec::new(),
            observer: None,
            bcfw: None,
            bounds: None,
        })
    }

    pub fn dim(&self) -> usize {
        self.problem.dim()
    }

    /// The solver's thread pool, built on first use.
    fn pool(&self) -> Result<std::sync::Arc<rayon::ThreadPool>> {
        if let Some(p) = self.pool.get() {
            return Ok(p.clone());
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(self.settings.num_threads)
            .build()
            .map_err(|e| Error::Internal(format!("cannot build the thread pool: {e}")))?;
        Ok(self.pool.get_or_init(|| std::sync::Arc::new(pool)).clone())
    }
    pub fn settings(&self) -> &Settings {
        &self.settings
    }
    /// The summary of the last run (also after a failed run).
    pub fn info(&self) -> &Info {
        &self.info
    }
    /// The rows of the last run, one per iteration.
    pub fn history(&self) -> &[Iteration] {
        &self.history
    }
    /// The number of parts the cutting-plane model has.
    pub fn num_parts(&self) -> usize {
        self.parts.num_parts()
    }
    /// The bundle kept from the last run, if any.
    pub fn bundle(&self) -> Option<&Bundle> {
        self.bundle.as_ref()
    }

    pub fn set_observer(
        &mut self,
        observer: impl FnMut(&Info) -> ControlFlow<()> + Send + 'static,
    ) {
        self.observer = Some(Box::new(observer));
    }
    pub fn clear_observer(&mut self) {
        self.observer = None;
    }

    /// Changes lambda, keeping the cutting planes unless
    /// `settings.reuse_planes` is off. Run again with the last solution as the
    /// start for the REUSE strategy.
    pub fn set_lambda(&mut self, lambda: f64) -> Result<()> {
        let mut s = self.settings.clone();
        s.lambda = lambda;
        s.validate()?;
        self.settings = s;
        if !self.settings.reuse_planes {
            self.bundle = None;
        }
        if let Some(state) = &mut self.bcfw {
            state.set_lambda(lambda);
        }
        Ok(())
    }

    /// Box constraints `lower <= w <= upper` (use infinities for free
    /// coordinates); BCFW only. Setting them restarts BCFW from its start.
    pub fn set_bounds(&mut self, lower: Vec<f64>, upper: Vec<f64>) -> Result<()> {
        if self.settings.algorithm != Algorithm::Bcfw {
            return Err(Error::InvalidArgument(format!(
                "box constraints are supported by BCFW only, not {}",
                self.settings.algorithm.name()
            )));
        }
        self.bounds = Some(Bounds::new(lower, upper, self.dim())?);
        self.bcfw = None;
        Ok(())
    }

    /// BCFW's figures (passes, effective passes, cache hits, memory, `ell`),
    /// once BCFW has run.
    pub fn bcfw_stats(&self) -> Option<BcfwStats> {
        self.bcfw.as_ref().map(BcfwState::stats)
    }

    /// BCFW's current iterate `clip(sum_i w_i)`, whose exact gap the last
    /// exact pass measured (the run returns the best point seen, which may be
    /// an earlier iterate or the averaged one).
    pub fn bcfw_iterate(&self) -> Option<&[f64]> {
        self.bcfw.as_ref().map(BcfwState::w)
    }

    /// The epsilon-approximate regularisation path of BCFW from lambda_max
    /// down to `lambda_min` (at most `max_breakpoints`), see
    /// [`crate::bcfw`]. Each breakpoint is solved to an exact gap of
    /// `settings.path_a * eps`, warm-started from the previous one. The
    /// solver is left at the last breakpoint's lambda and state.
    pub fn bcfw_path(
        &mut self,
        eps: f64,
        lambda_min: f64,
        max_breakpoints: usize,
    ) -> Result<Vec<Breakpoint>> {
        let Problem::Examples(oracle) = self.problem.clone() else {
            return Err(Error::NoOracle(
                "the regularisation path needs an example max-oracle".into(),
            ));
        };
        if self.settings.algorithm != Algorithm::Bcfw {
            return Err(Error::InvalidArgument(format!(
                "the regularisation path is BCFW's; the solver runs {}",
                self.settings.algorithm.name()
            )));
        }
        self.info = Info::default();
        if !(eps.is_finite() && eps > 0.0) {
            return Err(Error::InvalidArgument(format!(
                "eps must be positive and finite, got {eps}"
            )));
        }
        let saved = self.settings.clone();
        let mut path_settings = saved.clone();
        path_settings.tol_abs = path_settings.path_a * eps;
        path_settings.tol_rel = 0.0;
        let mut state = BcfwState::new(oracle.as_ref(), &path_settings, self.bounds.clone())?;
        let pool = self.pool()?;
        let a = path_settings.path_a;
        let result = {
            let mut solve = |state: &mut BcfwState| -> Result<Exit> {
                let mut s = path_settings.clone();
                s.lambda = state.lambda();
                let mut w = state.w().to_vec();
                self.settings = s;
                self.run_bcfw_with(state, &mut w)
            };
            let mut run = || {
                crate::bcfw::regularization_path(
                    oracle.as_ref(),
                    &pool,
                    &mut state,
                    crate::bcfw::PathTarget {
                        eps,
                        a,
                        lambda_min,
                        max_breakpoints,
                    },
                    &mut solve,
                )
            };
            if oracle.thread_safe() {
                pool.install(run)
            } else {
                run()
            }
        };
        let mut s = saved;
        s.lambda = state.lambda();
        self.settings = s;
        state.returned_w = Some(state.w().to_vec());
        self.bcfw = Some(state);
        result
    }

    /// Minimises `F` from the start `w`; on return `w` holds the best point
    /// seen — also when the run fails, when it holds the last valid iterate.
    pub fn run(&mut self, w: &mut [f64]) -> Result<Info> {
        // A run that fails, also before it starts, leaves "not run" behind.
        self.info = Info::default();
        if w.len() != self.dim() {
            return Err(Error::DimensionMismatch(format!(
                "w has length {} but the problem's dimension is {}",
                w.len(),
                self.dim()
            )));
        }
        if let Some((j, v)) = crate::linalg::first_non_finite(w) {
            return Err(Error::NonFinite(format!("the start w[{j}] is {v}")));
        }
        let pool = self.pool()?;
        if self.problem.thread_safe() {
            pool.install(|| self.run_in_pool(w))
        } else {
            // Oracles that are not thread-safe (MATLAB's among them) run on
            // this thread; the bundle enters the pool for its own work.
            self.run_in_pool(w)
        }
    }

    fn run_in_pool(&mut self, w: &mut [f64]) -> Result<Info> {
        if self.settings.algorithm == Algorithm::Bcfw {
            return self.run_bcfw(w);
        }
        let settings = self.settings.clone();
        let mut bundle = self.bundle.take().unwrap_or_else(|| {
            Bundle::new(self.dim(), self.parts.num_parts(), settings.buffer_size)
        });
        bundle.set_pool(self.pool()?);
        let mut history = std::mem::take(&mut self.history);
        let mut observer = self.observer.take();
        let mut run = Run::new(
            &settings,
            self.parts.as_ref(),
            self.calls_per_eval,
            &mut history,
            observer.as_mut(),
            w,
        );
        let outcome = Self::dispatch(&self.problem, &mut run, &mut bundle, w);
        let info = match outcome {
            Ok(exit) => Ok(run.into_info(exit)),
            Err(e) => {
                self.info = run.into_info(Exit::NotRun);
                Err(e)
            }
        };
        // The best point seen (the start if nothing better was evaluated).
        if let Ok(i) = &info {
            self.info = *i;
        }
        self.history = history;
        self.observer = observer;
        // A failed run may have left planes that poison every later QP (a
        // subgradient of 1e308 gives H = inf): the next run starts over.
        self.bundle = info.is_ok().then_some(bundle);
        info
    }

    /// BCFW continues from its dual state: the first run starts at
    /// `alpha_i = delta(y_i)`, i.e. `w = 0` (projected onto the box), and a
    /// later run from where the last one ended. `w` must be that point: a
    /// primal start cannot be turned into a dual one, and ignoring it would
    /// drop the caller's input silently.
    fn run_bcfw(&mut self, w: &mut [f64]) -> Result<Info> {
        let Problem::Examples(oracle) = &self.problem else {
            return Err(Error::NoOracle("BCFW needs an example max-oracle".into()));
        };
        let mut state = match self.bcfw.take() {
            Some(s) => s,
            None => BcfwState::new(oracle.as_ref(), &self.settings, self.bounds.clone())?,
        };
        let expected: &[f64] = match &state.returned_w {
            Some(r) => r,
            None => state.w(),
        };
        if w != expected {
            let msg = if state.returned_w.is_some() {
                "BCFW continues from its own dual state: pass the w the last run returned \
                 (or make a new solver to start again)"
            } else {
                "BCFW starts from the dual point alpha_i = delta(y_i), that is w = 0 \
                 (projected onto the box): pass w = 0"
            };
            self.bcfw = Some(state);
            return Err(Error::InvalidArgument(msg.into()));
        }
        let result = self.run_bcfw_with(&mut state, w);
        let info = result.map(|_| self.info);
        state.returned_w = Some(w.to_vec());
        self.bcfw = Some(state);
        info
    }

    /// One BCFW run from `state`; `w` receives the best point.
    fn run_bcfw_with(&mut self, state: &mut BcfwState, w: &mut [f64]) -> Result<Exit> {
        let Problem::Examples(oracle) = &self.problem else {
            return Err(Error::NoOracle("BCFW needs an example max-oracle".into()));
        };
        let settings = self.settings.clone();
        let mut history = std::mem::take(&mut self.history);
        let mut observer = self.observer.take();
        let start = state.w().to_vec();
        let mut run = Run::new(
            &settings,
            self.parts.as_ref(),
            self.calls_per_eval,
            &mut history,
            observer.as_mut(),
            &start,
        );
        let pool = self.pool()?;
        let outcome = crate::bcfw::run_bcfw(oracle.as_ref(), state, &mut run, &pool);
        w.copy_from_slice(&run.best_w);
        let exit = outcome.as_ref().copied().unwrap_or(Exit::NotRun);
        self.info = run.into_info(exit);
        self.history = history;
        self.observer = observer;
        outcome
    }

    fn dispatch(
        problem: &Problem,
        run: &mut Run<'_>,
        bundle: &mut Bundle,
        w: &mut [f64],
    ) -> Result<Exit> {
        let settings = run.settings;
        let result = (|| -> Result<Exit> {
            let units = match problem {
                Problem::Examples(o) => Units::Examples(o.as_ref()),
                Problem::Partitioned(r) => Units::Parts(r.as_ref()),
                Problem::Risk(_) => Units::Parts(run.parts),
            };
            if settings.algorithm == Algorithm::Sgd {
                let mut start = w.to_vec();
                let (_, _, exit) =
                    sgd::run_sgd(run, &units, &mut start, settings.sgd_passes, true)?;
                return Ok(exit.unwrap_or(Exit::MaxIterations));
            }
            if settings.algorithm == Algorithm::CuttingPlane {
                return cutting_plane::run_cutting_plane(run, w);
            }
            let mut start = w.to_vec();
            let mut first = None;
            if settings.sgd_passes > 0 {
                let (best, others, _) =
                    sgd::run_sgd(run, &units, &mut start, settings.sgd_passes, false)?;
                for e in others {
                    bundle.add(e.planes);
                }
                first = Some(best);
            }
            let mut rule: Box<dyn bundle_method::StepRule> = if settings.algorithm.is_proximal() {
                Box::new(prox_bmrm::ProxSteps::new(
                    settings.prox_t,
                    settings.prox_k,
                    settings.lambda,
                ))
            } else {
                Box::new(bmrm::PlainSteps)
            };
            bundle_method::run_bundle(run, bundle, rule.as_mut(), &start, first)
        })();
        w.copy_from_slice(&run.best_w);
        result
    }
}

/// Refuses, as `OutOfMemory`, a problem whose working memory cannot be had:
/// the sizes come from the caller (the dimension, the number of examples or
/// parts) and an allocation that fails later would abort the host. The
/// estimate is a floor (a few vectors of `w`, a plane per part, BCFW's
/// blocks, SGD's order); it is reserved once and released.
fn check_memory(problem: &Problem, settings: &Settings, model_parts: usize) -> Result<()> {
    let dim = problem.dim();
    let examples = match problem {
        Problem::Examples(o) => o.num_examples(),
        Problem::Partitioned(r) => r.num_parts(),
        Problem::Risk(_) => 0,
    };
    let f64s = |n: usize| n.checked_mul(std::mem::size_of::<f64>());
    let mut need = f64s(dim).and_then(|v| v.checked_mul(4));
    if settings.algorithm == Algorithm::Bcfw {
        // A block (its w_i, norms and weights) and the sampler's entries.
        let per_example = 128;
        need = need.and_then(|b| examples.checked_mul(per_example)?.checked_add(b));
    } else {
        need = need.and_then(|b| f64s(dim)?.checked_mul(model_parts)?.checked_add(b));
    }
    if let Problem::Partitioned(r) = problem {
        // An evaluation holds every part's subgradient at once.
        let per_part = f64s(dim).and_then(|v| v.checked_add(64));
        need = need.and_then(|b| per_part?.checked_mul(r.num_parts())?.checked_add(b));
    }
    if settings.sgd_passes > 0 {
        need = need.and_then(|b| f64s(examples.max(model_parts))?.checked_add(b));
    }
    let bytes = need.filter(|&b| b <= isize::MAX as usize).ok_or_else(|| {
        Error::OutOfMemory(format!(
            "dimension {dim} with {examples} examples and {model_parts} parts overflows the \
             address space"
        ))
    })?;
    let mut probe: Vec<u8> = Vec::new();
    probe.try_reserve_exact(bytes).map_err(|_| {
        Error::OutOfMemory(format!(
            "cannot allocate {bytes} bytes for dimension {dim} with {examples} examples and \
             {model_parts} parts"
        ))
    })
}

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
pub use settings::{Algorithm, Settings};

use crate::bundle::Bundle;
use crate::error::{Error, Result};
use crate::oracle::{PartitionedRisk, Problem};
use run::Run;
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
    pool: std::sync::Arc<rayon::ThreadPool>,
    parts: std::sync::Arc<dyn PartitionedRisk>,
    calls_per_eval: u64,
    bundle: Option<Bundle>,
    info: Info,
    history: Vec<Iteration>,
    observer: Option<Observer>,
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
        if algorithm == Algorithm::Bcfw {
            return Err(Error::InvalidArgument(
                "BCFW is not available in this version of the engine".into(),
            ));
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
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(settings.num_threads)
            .build()
            .map_err(|e| Error::Internal(format!("cannot build the thread pool: {e}")))?;
        let pool = std::sync::Arc::new(pool);
        Ok(Solver {
            problem,
            settings,
            pool,
            parts,
            calls_per_eval,
            bundle: None,
            info: Info::default(),
            history: Vec::new(),
            observer: None,
        })
    }

    pub fn dim(&self) -> usize {
        self.problem.dim()
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
        Ok(())
    }

    /// Minimises `F` from the start `w`; on return `w` holds the best point
    /// seen — also when the run fails, when it holds the last valid iterate.
    pub fn run(&mut self, w: &mut [f64]) -> Result<Info> {
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
        let pool = self.pool.clone();
        if self.problem.thread_safe() {
            pool.install(|| self.run_in_pool(w))
        } else {
            // Oracles that are not thread-safe (MATLAB's among them) run on
            // this thread; the bundle enters the pool for its own work.
            self.run_in_pool(w)
        }
    }

    fn run_in_pool(&mut self, w: &mut [f64]) -> Result<Info> {
        let settings = self.settings.clone();
        let mut bundle = self.bundle.take().unwrap_or_else(|| {
            Bundle::new(self.dim(), self.parts.num_parts(), settings.buffer_size)
        });
        bundle.set_pool(self.pool.clone());
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
        self.bundle = Some(bundle);
        info
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

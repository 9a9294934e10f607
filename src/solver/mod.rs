//! The [`Solver`]: owns a problem, its thread pool and the state kept
//! between runs (the bundle, or BCFW's dual state, for warm starts along a
//! lambda path), chooses the `Method` the settings name and runs it with
//! the executor (`crate::exec::execute`).

mod bcfw;
mod path;

use std::ops::ControlFlow;
use std::sync::{Arc, OnceLock};

pub use crate::vocab::{
    Algorithm, Exit, Info, Iteration, Observer, Sampling, Settings, StepType, MAX_THREADS,
};
pub use bcfw::{Bcfw, BcfwHandle};
pub use path::{solve_path, PathPoint};

use crate::bundle::Bundle;
use crate::error::{Error, Result};
use crate::exec::{
    execute, Context, CountedOracle, CountedParts, Method, Oracles, Reporting, Tally, Units,
};
use crate::methods::{bundle_method, Constraints, CuttingPlane, SgdMethod};
use crate::oracle::adapters::PassDeadline;
use crate::oracle::{AnswerLog, MaxOracle, PartitionedRisk, Problem};

/// Default number of parts for P-BMRM over a max-oracle.
pub const DEFAULT_PARTS: usize = 16;

/// A solver for one problem. Keep it to warm-start: [`Solver::set_lambda`]
/// keeps the cutting planes (they model `R`, which does not depend on lambda)
/// or BCFW's dual state, and the next [`Solver::run`] continues from there.
pub struct Solver {
    core: Core,
    kept: Kept,
}

/// What every run of a solver uses, whatever its method.
pub(crate) struct Core {
    problem: Problem,
    settings: Settings,
    /// Built at the first run: a solver that is made and freed (or only
    /// configured) starts no threads.
    pool: OnceLock<Arc<rayon::ThreadPool>>,
    /// The parts the cutting-plane model is built on.
    parts: Arc<dyn PartitionedRisk>,
    /// Where a run tells the example passes of `parts` its time limit.
    pass_deadline: Arc<PassDeadline>,
    /// Where every consumer of the oracle's corners counts the answers it
    /// cannot trust (a run certifies when it adds none).
    answers: Arc<AnswerLog>,
    /// User-callback calls per evaluation of all parts.
    calls_per_eval: u64,
    /// Where the counting wrappers count the calls of every run.
    tally: Arc<Tally>,
    info: Info,
    history: Vec<Iteration>,
    observer: Option<Observer>,
    /// The bundle methods' constraints on `w` (BCFW keeps its box itself).
    constraints: Arc<Constraints>,
}

/// The state a method keeps between runs.
enum Kept {
    /// The bundle methods, SGD and the cutting-plane method: the bundle.
    Planes(Option<Bundle>),
    /// BCFW: its dual state and box.
    Bcfw(Box<Bcfw>),
}

impl Solver {
    /// Validates the settings against the problem and reserves its working
    /// memory; the thread pool is built at the first run.
    pub fn new(problem: Problem, settings: Settings) -> Result<Self> {
        settings.validate()?;
        let dim = problem.dim();
        if dim == 0 {
            return Err(Error::invalid_argument("the problem's dimension is 0"));
        }
        let algorithm = settings.algorithm;
        if algorithm == Algorithm::Bcfw && !matches!(problem, Problem::Examples(_)) {
            return Err(Error::no_oracle(format!(
                "BCFW needs an example max-oracle, but the problem has {}",
                problem.level_name()
            )));
        }
        let num_parts = if algorithm.is_partitioned() {
            match &problem {
                Problem::Risk(_) => {
                    return Err(Error::no_oracle(format!(
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
            // The other algorithms take the parts a partitioned risk has and
            // split nothing themselves: another count would not be honoured.
            let own_parts = match &problem {
                Problem::Partitioned(r) => r.num_parts(),
                _ => 1,
            };
            if settings.num_parts > 1 && settings.num_parts != own_parts {
                return Err(Error::invalid_argument(format!(
                    "num_parts is {} but {} does not split the problem (P-BMRM and \
                     Prox-P-BMRM do): leave it 0",
                    settings.num_parts,
                    algorithm.name()
                )));
            }
            1
        };
        if let Problem::Examples(o) = &problem {
            if o.num_examples() == 0 {
                return Err(Error::invalid_argument("the max-oracle has 0 examples"));
            }
        }
        // Before the split: it allocates per part.
        check_memory(&problem, &settings, num_parts.max(1))?;
        let pass_deadline = Arc::default();
        let answers = Arc::default();
        let parts = problem.parts_until(num_parts, &pass_deadline, &answers)?;
        let calls_per_eval = match &problem {
            Problem::Risk(_) => 1,
            Problem::Partitioned(r) => r.num_parts() as u64,
            Problem::Examples(o) => o.num_examples() as u64,
        };
        Self::build(
            problem,
            settings,
            parts,
            (pass_deadline, answers),
            calls_per_eval,
        )
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
            return Err(Error::invalid_argument(format!(
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
            return Err(Error::invalid_argument(format!(
                "the distributed risk has dimension {} and {} parts",
                parts.dim(),
                parts.num_parts()
            )));
        }
        let problem = Problem::Partitioned(parts.clone());
        let model_parts = if algorithm.is_partitioned() {
            parts.num_parts()
        } else {
            1
        };
        check_memory(&problem, &settings, model_parts)?;
        let model = if algorithm.is_partitioned() {
            parts
        } else {
            problem.parts(1)?
        };
        Self::build(problem, settings, model, Default::default(), calls_per_eval)
    }

    fn build(
        problem: Problem,
        settings: Settings,
        parts: Arc<dyn PartitionedRisk>,
        (pass_deadline, answers): (Arc<PassDeadline>, Arc<AnswerLog>),
        calls_per_eval: u64,
    ) -> Result<Self> {
        let kept = if settings.algorithm == Algorithm::Bcfw {
            Kept::Bcfw(Box::default())
        } else {
            Kept::Planes(None)
        };
        Ok(Solver {
            core: Core {
                problem,
                settings,
                pool: OnceLock::new(),
                parts,
                pass_deadline,
                answers,
                calls_per_eval,
                tally: Arc::new(Tally::default()),
                info: Info::default(),
                history: Vec::new(),
                observer: None,
                constraints: Arc::default(),
            },
            kept,
        })
    }

    /// The dimension of `w`.
    pub fn dim(&self) -> usize {
        self.core.problem.dim()
    }
    /// The settings the solver runs with.
    pub fn settings(&self) -> &Settings {
        &self.core.settings
    }
    /// The summary of the last run (also after a failed run).
    pub fn info(&self) -> &Info {
        &self.core.info
    }
    /// The rows of the last run, one per iteration.
    pub fn history(&self) -> &[Iteration] {
        &self.core.history
    }
    /// The number of parts the cutting-plane model has.
    pub fn num_parts(&self) -> usize {
        self.core.parts.num_parts()
    }
    /// The bundle kept from the last run, if any (not for BCFW).
    pub fn bundle(&self) -> Option<&Bundle> {
        match &self.kept {
            Kept::Planes(b) => b.as_ref(),
            Kept::Bcfw(_) => None,
        }
    }

    /// BCFW's state and figures, when the solver runs BCFW.
    pub fn bcfw(&self) -> Option<&Bcfw> {
        match &self.kept {
            Kept::Bcfw(b) => Some(b),
            Kept::Planes(_) => None,
        }
    }

    /// BCFW's own operations (box constraints, the regularisation path),
    /// when the solver runs BCFW.
    pub fn bcfw_mut(&mut self) -> Option<BcfwHandle<'_>> {
        match &mut self.kept {
            Kept::Bcfw(b) => Some(BcfwHandle::new(&mut self.core, b)),
            Kept::Planes(_) => None,
        }
    }

    /// Box constraints `lower <= w <= upper` (infinities leave a coordinate
    /// free), honoured by BCFW, the four bundle methods and SGD (alone or as
    /// the bundle methods' start: projected SGD, every step clipped to the
    /// box); the cutting-plane method refuses them. A bundle method's or
    /// SGD's run projects its start onto the box; BCFW restarts from
    /// `clip(0)`. Replaces earlier bounds; the cutting planes are kept
    /// (they model the risk, which the box does not change).
    pub fn set_bounds(&mut self, lower: Vec<f64>, upper: Vec<f64>) -> Result<()> {
        let dim = self.dim();
        if let Kept::Bcfw(b) = &mut self.kept {
            return BcfwHandle::new(&mut self.core, b).set_bounds(lower, upper);
        }
        self.core.honours_constraints("box constraints", true)?;
        let mut c = (*self.core.constraints).clone();
        c.bounds = Some(crate::oracle::Bounds::new(lower, upper, dim)?);
        self.core.constraints = Arc::new(c);
        Ok(())
    }

    /// Linear constraints `A w >= b`: `matrix` holds `rhs.len()` rows of
    /// `dim()` numbers, row after row (no rows: none). Honoured by the four
    /// bundle methods, whose start must satisfy them (after the projection
    /// onto the box); the other algorithms and the SGD start (`sgd_passes >
    /// 0`) refuse them. Replaces earlier rows.
    pub fn set_linear_constraints(&mut self, matrix: &[f64], rhs: &[f64]) -> Result<()> {
        if matches!(self.kept, Kept::Bcfw(_)) {
            return Err(Error::invalid_argument(
                "linear constraints A w >= b are honoured by the bundle methods (BMRM, \
                 Prox-BMRM, P-BMRM, Prox-P-BMRM), not by BCFW (it takes box constraints)",
            ));
        }
        self.core
            .honours_constraints("linear constraints A w >= b", false)?;
        let mut c = (*self.core.constraints).clone();
        c.set_rows(matrix, rhs, self.dim())?;
        self.core.constraints = Arc::new(c);
        Ok(())
    }

    /// Calls `observer` after every iteration; it may stop the run.
    pub fn set_observer(
        &mut self,
        observer: impl FnMut(&Info) -> ControlFlow<()> + Send + 'static,
    ) {
        self.core.observer = Some(Box::new(observer));
    }
    /// Removes the observer.
    pub fn clear_observer(&mut self) {
        self.core.observer = None;
    }

    /// Changes lambda, keeping the cutting planes unless
    /// `settings.reuse_planes` is off (or BCFW's dual state, rescaled). Run
    /// again with the last solution as the start for the REUSE strategy.
    pub fn set_lambda(&mut self, lambda: f64) -> Result<()> {
        let mut s = self.core.settings.clone();
        s.lambda = lambda;
        s.validate()?;
        self.core.settings = s;
        match &mut self.kept {
            Kept::Planes(bundle) => {
                if !self.core.settings.reuse_planes {
                    *bundle = None;
                }
            }
            Kept::Bcfw(b) => b.set_lambda(lambda),
        }
        Ok(())
    }

    /// Minimises `F` from the start `w`; on return `w` holds the best point
    /// seen — also when the run fails, when it holds the last valid iterate.
    pub fn run(&mut self, w: &mut [f64]) -> Result<Info> {
        // A run that fails, also before it starts, leaves "not run" behind.
        self.core.info = Info::default();
        if w.len() != self.dim() {
            return Err(Error::dimension_mismatch(format!(
                "w has length {} but the problem's dimension is {}",
                w.len(),
                self.dim()
            )));
        }
        if let Some((j, v)) = crate::linalg::first_non_finite(w) {
            return Err(Error::non_finite(format!("the start w[{j}] is {v}")));
        }
        let pool = self.core.pool()?;
        if self.core.problem.thread_safe() {
            pool.install(|| self.run_in_pool(w))
        } else {
            // Oracles that are not thread-safe (MATLAB's among them) run on
            // this thread; the bundle enters the pool for its own work.
            let out = self.run_in_pool(w);
            // The per-thread accumulators of `dim` numbers the run left on
            // the caller's thread (a MATLAB session's) go with the run; the
            // pool's go with the solver.
            crate::oracle::adapters::release_thread_scratch();
            crate::bundle::release_thread_scratch();
            out
        }
    }

    fn run_in_pool(&mut self, w: &mut [f64]) -> Result<Info> {
        let core = &mut self.core;
        let bundle_slot = match &mut self.kept {
            Kept::Bcfw(b) => return b.run(core, w),
            Kept::Planes(b) => b,
        };
        let settings = core.settings.clone();
        let mut bundle = bundle_slot
            .take()
            .unwrap_or_else(|| Bundle::new(w.len(), core.parts.num_parts(), settings.buffer_size));
        bundle.set_pool(core.pool()?);
        let outcome = match settings.algorithm {
            Algorithm::Sgd => {
                let bounds = core.constraints.bounds.clone();
                if let Some(b) = &bounds {
                    w.copy_from_slice(&b.clip_all(w));
                }
                core.execute(&mut SgdMethod::new(settings.sgd_passes, bounds), w)
            }
            Algorithm::CuttingPlane => core.execute(&mut CuttingPlane::new(), w),
            _ => {
                let constraints = core.constraints.clone();
                if !constraints.is_empty() {
                    constraints.prepare_start(w)?;
                }
                let mut method = bundle_method(bundle, &settings, Some(constraints));
                let outcome = core.execute(&mut method, w);
                bundle = method.into_bundle();
                outcome
            }
        };
        // A failed run may have left planes that poison every later QP (a
        // subgradient of 1e308 gives H = inf): the next run starts over.
        *bundle_slot = outcome.is_ok().then_some(bundle);
        outcome.map(|_| core.info)
    }
}

/// The threads of a pool asked for `requested` (0: all cores): never more
/// than the cores this process may use. Results do not depend on the count,
/// and idle work-stealing threads cost every parallel step time in
/// proportion to their number: 1024 threads on 2 cores made one evaluation
/// of 200 examples take seconds.
fn pool_threads(requested: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if requested == 0 {
        0
    } else {
        requested.min(cores)
    }
}

impl Core {
    /// Refuses `what` for the algorithms whose iterates would leave the
    /// feasible set: the cutting-plane method, and for linear rows (`box_only`
    /// false) SGD alone or as a start, whose steps are projected onto a box
    /// but not onto rows (that projection is a QP of its own).
    fn honours_constraints(&self, what: &str, box_only: bool) -> Result<()> {
        let s = &self.settings;
        let refuse = |by: &str| {
            Err(Error::invalid_argument(format!(
                "{what} are not honoured by {by}; the bundle methods (BMRM, Prox-BMRM, \
                 P-BMRM, Prox-P-BMRM) honour them, and BCFW honours box constraints"
            )))
        };
        match s.algorithm {
            Algorithm::CuttingPlane => refuse("the cutting-plane method"),
            Algorithm::Sgd if !box_only => {
                refuse("SGD (it projects its steps onto a box, not onto rows)")
            }
            _ if s.sgd_passes > 0 && !box_only => refuse(
                "the SGD start (sgd_passes > 0; it projects its steps onto a box, not onto \
                 rows): set sgd_passes = 0",
            ),
            _ => Ok(()),
        }
    }

    /// The solver's thread pool, built on first use.
    fn pool(&self) -> Result<Arc<rayon::ThreadPool>> {
        if let Some(p) = self.pool.get() {
            return Ok(p.clone());
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(pool_threads(self.settings.num_threads))
            .build()
            .map_err(|e| Error::internal(format!("cannot build the thread pool: {e}")))?;
        Ok(self.pool.get_or_init(|| Arc::new(pool)).clone())
    }

    /// The oracles of a run, counted into the solver's tally.
    fn oracles(&self) -> Oracles {
        let tally = self.tally.clone();
        let parts: Arc<dyn PartitionedRisk> = Arc::new(CountedParts::new(
            self.parts.clone(),
            self.calls_per_eval,
            tally.clone(),
        ));
        let (units, examples, uncounted) = match &self.problem {
            Problem::Examples(o) => {
                let counted: Arc<dyn MaxOracle> = Arc::new(
                    CountedOracle::new(o.clone(), tally.clone())
                        .with_deadline(self.pass_deadline.clone()),
                );
                (
                    Units::Examples(counted.clone()),
                    Some(counted),
                    Some(o.clone()),
                )
            }
            Problem::Partitioned(r) => (
                Units::Parts(Arc::new(CountedParts::new(
                    r.clone(),
                    r.num_parts() as u64,
                    tally.clone(),
                ))),
                None,
                None,
            ),
            Problem::Risk(_) => (Units::Parts(parts.clone()), None, None),
        };
        Oracles {
            parts,
            pass_deadline: self.pass_deadline.clone(),
            answers: self.answers.clone(),
            units,
            examples,
            uncounted,
            tally,
        }
    }

    /// Runs `method` from `w` with the executor; `w` receives the best point
    /// and [`Core::info`] the summary.
    fn execute(&mut self, method: &mut dyn Method, w: &mut [f64]) -> Result<Exit> {
        let settings = self.settings.clone();
        let oracles = self.oracles();
        let pool = self.pool()?;
        let ctx = Context::new(&settings, &pool, oracles, w);
        let report = Reporting {
            history: &mut self.history,
            observer: self.observer.as_mut(),
        };
        let (info, outcome) = execute(method, ctx, report, w);
        self.info = info;
        outcome
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
        Error::out_of_memory(format!(
            "dimension {dim} with {examples} examples and {model_parts} parts overflows the \
             address space"
        ))
    })?;
    let mut probe: Vec<u8> = Vec::new();
    probe.try_reserve_exact(bytes).map_err(|_| {
        Error::out_of_memory(format!(
            "cannot allocate {bytes} bytes for dimension {dim} with {examples} examples and \
             {model_parts} parts"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parts of a dimension no machine holds, never evaluated.
    struct HugeParts;

    impl PartitionedRisk for HugeParts {
        fn dim(&self) -> usize {
            1 << 40
        }
        fn num_parts(&self) -> usize {
            1 << 10
        }
        fn partial_risk(&self, _: usize, _: &[f64], _: &mut [f64]) -> Result<f64> {
            Err(Error::oracle("never called"))
        }
    }

    #[test]
    fn distributed_parts_too_large_for_memory_are_out_of_memory() {
        // The distributed path makes the memory check of `Solver::new`
        // too: without it such a problem aborted at its first run.
        for algorithm in [Algorithm::Bmrm, Algorithm::PBmrm] {
            let settings = Settings::new(algorithm, 0.1);
            let got = Solver::with_parts(Arc::new(HugeParts), 1, settings);
            assert_eq!(
                got.err().map(|e| e.kind),
                Some(crate::ErrorKind::OutOfMemory),
                "{algorithm:?}"
            );
        }
    }
}

//! `bmrm.Solver`: the engine's solver over a Python or built-in problem.
//!
//! A solve runs on a helper thread with the GIL released; the calling
//! thread waits for it, taking the GIL every 20 ms to look for Ctrl-C
//! (`Python::check_signals` only acts on the main thread, so the wait loop,
//! not the callbacks, is where KeyboardInterrupt is seen). An interrupt or
//! an exception in a callback asks the solve to stop at the next callback
//! or progress report, and `run` raises it.

use std::ops::ControlFlow;
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bmrm::{Exit, Info, Settings};
use numpy::PyArray1;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::arrays::{to_numpy, vec_f64};
use crate::oracles::Shared;
use crate::problem::problem_of;
use crate::{bcfw, settings, to_pyerr};

/// The summary of a solve: every field of the C `bmrm_info`.
#[pyclass(name = "Info", module = "bmrm._bmrm", frozen, get_all)]
#[derive(Clone)]
pub struct PyInfo {
    /// How the solve ended: "not_run", "converged_rel", "converged_abs",
    /// "max_iterations", "time_limit" or "stopped_by_user".
    pub exit: &'static str,
    /// The C `bmrm_exit` value of `exit`.
    pub exit_code: i32,
    pub iterations: u64,
    pub oracle_calls: u64,
    pub primal: f64,
    pub lower_bound: f64,
    pub gap: f64,
    pub risk: f64,
    pub num_planes: u64,
    pub active_planes: u64,
    pub elapsed_seconds: f64,
    pub oracle_seconds: f64,
    pub qp_seconds: f64,
    /// Whether every max-oracle answer was trusted as a maximiser (none
    /// below the ground truth, which is clipped to it, none marked
    /// inexact): only then does `gap` certify (docs/reliability.md).
    pub certified: bool,
}

pub fn exit_name(e: Exit) -> &'static str {
    match e {
        Exit::NotRun => "not_run",
        Exit::ConvergedRel => "converged_rel",
        Exit::ConvergedAbs => "converged_abs",
        Exit::MaxIterations => "max_iterations",
        Exit::TimeLimit => "time_limit",
        Exit::StoppedByUser => "stopped_by_user",
    }
}

impl From<&Info> for PyInfo {
    fn from(i: &Info) -> Self {
        PyInfo {
            exit: exit_name(i.exit),
            exit_code: i.exit as i32,
            iterations: i.iterations,
            oracle_calls: i.oracle_calls,
            primal: i.primal,
            lower_bound: i.lower_bound,
            gap: i.gap,
            risk: i.risk,
            num_planes: i.num_planes,
            active_planes: i.active_planes,
            elapsed_seconds: i.elapsed_seconds,
            oracle_seconds: i.oracle_seconds,
            qp_seconds: i.qp_seconds,
            certified: i.certified,
        }
    }
}

#[pymethods]
impl PyInfo {
    fn __repr__(&self) -> String {
        format!(
            "Info(exit={:?}, iterations={}, primal={:.9e}, lower_bound={:.9e}, gap={:.3e}, \
             oracle_calls={}, elapsed_seconds={:.3}, certified={})",
            self.exit,
            self.iterations,
            self.primal,
            self.lower_bound,
            self.gap,
            self.oracle_calls,
            self.elapsed_seconds,
            if self.certified { "True" } else { "False" }
        )
    }
}

/// Runs `job` on a helper thread with the GIL released, watching for
/// Ctrl-C on this one; then raises, in order, the interrupt, a callback's
/// exception, or returns the job's result.
pub fn run_detached<R: Send>(
    py: Python<'_>,
    shared: &Shared,
    job: impl FnOnce() -> R + Send,
) -> PyResult<R> {
    let (tx, mut rx) = channel::<()>();
    let mut interrupt: Option<PyErr> = None;
    let joined = std::thread::scope(|scope| {
        let handle = scope.spawn(move || {
            let r = job();
            let _ = tx.send(());
            r
        });
        loop {
            let (status, back) = py.allow_threads(move || {
                let s = rx.recv_timeout(Duration::from_millis(20));
                (s, rx)
            });
            rx = back;
            if !matches!(status, Err(RecvTimeoutError::Timeout)) {
                break;
            }
            if interrupt.is_none() {
                if let Err(e) = py.check_signals() {
                    interrupt = Some(e);
                    shared.request_stop();
                }
            }
        }
        py.allow_threads(move || handle.join())
    });
    if let Some(e) = interrupt {
        drop(shared.take_error());
        return Err(e);
    }
    if let Some(e) = shared.take_error() {
        return Err(e);
    }
    joined.map_err(|_| PyRuntimeError::new_err("bmrm: the solve panicked"))
}

/// A solver for one problem and its settings.
///
/// Parameters
/// ----------
/// problem : FullRisk, PartitionedRisk, MaxOracle, MulticlassModel or ChainModel
///     The risk to minimise.
/// algorithm : str
///     "bmrm", "prox-bmrm", "p-bmrm", "prox-p-bmrm", "bcfw", "sgd" or
///     "cutting-plane".
/// lambda_ : float
///     The regularisation constant of F(w) = lambda/2 ||w||^2 + R(w).
/// progress : callable, optional
///     Called with an `Info` after every iteration (BCFW: every pass);
///     returning False stops the solve (exit "stopped_by_user").
/// **settings
///     Any field of the engine's settings (tol_rel, tol_abs, max_iterations,
///     num_threads, seed, sampling, step_type, ...), see docs/python.md.
#[pyclass(name = "Solver", module = "bmrm._bmrm")]
pub struct PySolver {
    solver: Mutex<bmrm::Solver>,
    shared: Arc<Shared>,
    progress: Option<Py<PyAny>>,
    last: Info,
}

impl PySolver {
    fn lock(&self) -> PyResult<MutexGuard<'_, bmrm::Solver>> {
        self.solver
            .try_lock()
            .map_err(|_| PyRuntimeError::new_err("the solver is running (called from a callback?)"))
    }

    /// Installs the observer for one solve: the progress callback, and the
    /// stop request of an interrupt or a failed callback.
    fn observe(&self, solver: &mut bmrm::Solver, py: Python<'_>) {
        let shared = self.shared.clone();
        let progress = self.progress.as_ref().map(|p| p.clone_ref(py));
        solver.set_observer(move |info: &Info| {
            if shared.stopped() {
                return ControlFlow::Break(());
            }
            let Some(cb) = &progress else {
                return ControlFlow::Continue(());
            };
            Python::with_gil(|py| match cb.call1(py, (PyInfo::from(info),)) {
                Ok(r) => match r.bind(py).is_exact_instance_of::<pyo3::types::PyBool>()
                    && !r.bind(py).is_truthy().unwrap_or(true)
                {
                    true => ControlFlow::Break(()),
                    false => ControlFlow::Continue(()),
                },
                Err(e) => {
                    shared.fail(e, "progress callback");
                    ControlFlow::Break(())
                }
            })
        });
    }

    /// Runs `job` on the locked solver detached from the GIL.
    pub fn detached<R: Send>(
        &self,
        py: Python<'_>,
        job: impl FnOnce(&mut bmrm::Solver) -> R + Send,
    ) -> PyResult<R> {
        let mut guard = self.lock()?;
        self.shared.reset();
        self.observe(&mut guard, py);
        let solver: &mut bmrm::Solver = &mut guard;
        let out = run_detached(py, &self.shared, move || job(solver));
        guard.clear_observer();
        out
    }
}

#[pymethods]
impl PySolver {
    #[new]
    #[pyo3(signature = (problem, algorithm = "bmrm", lambda_ = 1.0, progress = None, **settings))]
    fn new(
        problem: &Bound<'_, PyAny>,
        algorithm: &str,
        lambda_: f64,
        progress: Option<Py<PyAny>>,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let shared = Arc::new(Shared::default());
        let p = problem_of(problem, &shared)?;
        let mut s = Settings::new(settings::algorithm(algorithm)?, lambda_);
        settings::apply(&mut s, settings)?;
        if let Some(cb) = &progress {
            if !cb.bind(problem.py()).is_callable() {
                return Err(pyo3::exceptions::PyTypeError::new_err(
                    "progress must be callable",
                ));
            }
        }
        let solver = bmrm::Solver::new(p, s).map_err(to_pyerr)?;
        Ok(PySolver {
            solver: Mutex::new(solver),
            shared,
            progress,
            last: Info::default(),
        })
    }

    /// Minimises F from `w0` (zeros when None).
    ///
    /// Returns
    /// -------
    /// w : numpy.ndarray
    ///     The best point seen.
    /// info : Info
    ///     The summary of the solve.
    #[pyo3(signature = (w0 = None))]
    fn run<'py>(
        &mut self,
        py: Python<'py>,
        w0: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyArray1<f64>>, PyInfo)> {
        let dim = self.lock()?.dim();
        let mut w = match w0 {
            Some(w0) => vec_f64(py, w0, "w0", Some(dim))?,
            None => vec![0.0; dim],
        };
        let buf = &mut w;
        let result = self.detached(py, move |s| s.run(buf))?;
        let info = result.map_err(to_pyerr)?;
        self.last = info;
        Ok((to_numpy(py, &w), PyInfo::from(&info)))
    }

    /// Changes lambda for a warm-started next `run` (the cutting planes are
    /// kept unless `reuse_planes=False`; BCFW rescales its dual state).
    fn set_lambda(&self, lambda_: f64) -> PyResult<()> {
        self.lock()?.set_lambda(lambda_).map_err(to_pyerr)
    }

    /// The summary of the last run.
    #[getter]
    fn info(&self) -> PyInfo {
        PyInfo::from(&self.last)
    }

    #[getter]
    fn dim(&self) -> PyResult<usize> {
        Ok(self.lock()?.dim())
    }

    #[getter]
    fn lambda_(&self) -> PyResult<f64> {
        Ok(self.lock()?.settings().lambda)
    }

    /// The settings in force, as a dict.
    #[getter]
    fn settings<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        settings::to_dict(py, self.lock()?.settings())
    }

    /// The per-iteration history of the last run: a dict of numpy arrays
    /// (iteration, primal, lower_bound, risk, objective, num_planes,
    /// active_planes, alpha, step_norm, elapsed_seconds, oracle_seconds,
    /// qp_seconds, oracle_calls, effective_passes, gap_estimate, exact_gap).
    #[getter]
    fn history<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let solver = self.lock()?;
        let h = solver.history();
        let d = PyDict::new(py);
        macro_rules! col {
            ($name:ident, f64) => {
                d.set_item(
                    stringify!($name),
                    PyArray1::from_vec(py, h.iter().map(|r| r.$name).collect::<Vec<f64>>()),
                )?
            };
            ($name:ident, u64) => {
                d.set_item(
                    stringify!($name),
                    PyArray1::from_vec(py, h.iter().map(|r| r.$name).collect::<Vec<u64>>()),
                )?
            };
        }
        col!(iteration, u64);
        col!(primal, f64);
        col!(lower_bound, f64);
        col!(risk, f64);
        col!(objective, f64);
        col!(num_planes, u64);
        col!(active_planes, u64);
        col!(alpha, f64);
        col!(step_norm, f64);
        col!(elapsed_seconds, f64);
        col!(oracle_seconds, f64);
        col!(qp_seconds, f64);
        col!(oracle_calls, u64);
        col!(effective_passes, f64);
        col!(gap_estimate, f64);
        col!(exact_gap, f64);
        Ok(d)
    }

    /// Box constraints `lower <= w <= upper` (None or infinities leave
    /// coordinates free), honoured by BCFW and the four bundle methods (a
    /// bundle method projects its start onto the box; BCFW restarts from its
    /// start); the other algorithms refuse them.
    #[pyo3(signature = (lower = None, upper = None))]
    fn set_bounds(
        &self,
        py: Python<'_>,
        lower: Option<&Bound<'_, PyAny>>,
        upper: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let mut solver = self.lock()?;
        let dim = solver.dim();
        let read = |b: Option<&Bound<'_, PyAny>>, name: &str, fill: f64| match b {
            Some(b) => crate::arrays::vec_bounds(py, b, name, dim),
            None => Ok(vec![fill; dim]),
        };
        let lo = read(lower, "lower", f64::NEG_INFINITY)?;
        let hi = read(upper, "upper", f64::INFINITY)?;
        solver.set_bounds(lo, hi).map_err(to_pyerr)
    }

    /// The cutting planes a bundle method kept from its last run, as
    /// `(parts, slopes, offsets)`: plane `k` says `R_p(w) >= <slopes[k], w> +
    /// offsets[k]` for the part `p = parts[k]` of the risk (one part for
    /// BMRM, one per example for P-BMRM). None before a run and for BCFW.
    #[allow(clippy::type_complexity)]
    fn planes<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<
        Option<(
            Bound<'py, PyArray1<i64>>,
            Bound<'py, numpy::PyArray2<f64>>,
            Bound<'py, PyArray1<f64>>,
        )>,
    > {
        let solver = self.lock()?;
        let Some(bundle) = solver.bundle() else {
            return Ok(None);
        };
        let dim = bundle.dim();
        let planes = bundle.planes();
        let mut slopes = Vec::with_capacity(planes.len() * dim);
        for p in planes {
            slopes.extend(p.slope.to_dense());
        }
        let parts: Vec<i64> = planes.iter().map(|p| p.part as i64).collect();
        let offsets: Vec<f64> = planes.iter().map(|p| p.b).collect();
        let slopes = numpy::ndarray::Array2::from_shape_vec((planes.len(), dim), slopes)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(Some((
            PyArray1::from_vec(py, parts),
            numpy::PyArray2::from_owned_array(py, slopes),
            to_numpy(py, &offsets),
        )))
    }

    /// BCFW's figures (passes, effective_passes, oracle_calls, cache_hits,
    /// ell (the iterate's), returned_ell (paired with the w the last run
    /// returned), dual, gap_estimate, last_exact_gap, corners,
    /// active_corners, dense_blocks, memory_bytes, approx_passes) as a dict,
    /// or None before BCFW has run.
    fn bcfw_stats<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let solver = self.lock()?;
        bcfw::stats(py, &solver)
    }

    /// BCFW's current iterate (None before BCFW has run).
    fn bcfw_iterate<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyArray1<f64>>>> {
        let solver = self.lock()?;
        Ok(bcfw::iterate(&solver).map(|w| to_numpy(py, &w)))
    }

    /// BCFW's eps-approximate regularisation path from lambda_max down to
    /// `lambda_min`: a list of dicts (lambda_, lambda_low, w, gap, primal,
    /// passes, oracle_calls, exit), each `w` eps-optimal on
    /// [lambda_low, lambda_].
    #[pyo3(signature = (eps, lambda_min, max_breakpoints = 1000))]
    fn regularization_path<'py>(
        &self,
        py: Python<'py>,
        eps: f64,
        lambda_min: f64,
        max_breakpoints: usize,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        if !(eps.is_finite() && eps > 0.0) {
            return Err(PyValueError::new_err(format!(
                "eps must be positive, got {eps}"
            )));
        }
        let points = self
            .detached(py, move |s| bcfw::path(s, eps, lambda_min, max_breakpoints))?
            .map_err(to_pyerr)?;
        bcfw::breakpoints_to_py(py, points)
    }
}

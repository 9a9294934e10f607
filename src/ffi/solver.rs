//! `bmrm_solver` and the settings defaults.

use std::sync::{Mutex, MutexGuard, TryLockError};

use crate::error::{Error, Result};
use crate::solver::{Info, Iteration, Solver};

use super::boundary::{catch, non_null, status};
use super::callbacks::{engine_settings, observer};
use super::problem::bmrm_problem;
use super::types::{bmrm_info, bmrm_iteration, bmrm_settings, bmrm_status, RawAlgorithm};

/// A solver for one problem with fixed settings (lambda aside), keeping its
/// state between runs for warm starts. Opaque; made by `bmrm_solver_new`,
/// owned by the caller until `bmrm_solver_free`. It may be used from any
/// thread, one call at a time: a call made while another call on the same
/// solver is running (from another thread, or from inside one of its
/// callbacks) fails with BMRM_ERROR_INVALID_ARGUMENT.
pub struct bmrm_solver {
    dim: usize,
    inner: Mutex<Held>,
}

/// What a `bmrm_solver` holds: the ordinary solver of this process, or
/// (feature `mpi`, `bmrm_solver_new_mpi`) this rank's node of a distributed
/// solver: the ordinary solver over the distributed oracle on rank 0, the
/// worker that serves it on the others. Only the collective calls (run,
/// BCFW's path) and what a worker answers without a solver (its lambda
/// check, rank 0's summary) look at the difference.
pub(crate) enum Held {
    Local(Box<Solver>),
    #[cfg(feature = "mpi")]
    Mpi(crate::distributed::Node),
}

impl Held {
    /// The ordinary solver (`None` on an MPI rank other than 0).
    fn solver(&self) -> Option<&Solver> {
        match self {
            Held::Local(s) => Some(s),
            #[cfg(feature = "mpi")]
            Held::Mpi(node) => node.solver(),
        }
    }
    fn solver_mut(&mut self) -> Option<&mut Solver> {
        match self {
            Held::Local(s) => Some(s),
            #[cfg(feature = "mpi")]
            Held::Mpi(node) => node.solver_mut(),
        }
    }
    /// A run (collective over MPI).
    fn run(&mut self, w: &mut [f64]) -> Result<Info> {
        match self {
            Held::Local(s) => s.run(w),
            #[cfg(feature = "mpi")]
            Held::Mpi(node) => node.run(w),
        }
    }
    /// The summary of the last run (over MPI: rank 0's on every rank).
    fn info(&self) -> Info {
        match self {
            Held::Local(s) => *s.info(),
            #[cfg(feature = "mpi")]
            Held::Mpi(node) => node.info(),
        }
    }
    fn set_lambda(&mut self, lambda: f64) -> Result<()> {
        match self {
            Held::Local(s) => s.set_lambda(lambda),
            #[cfg(feature = "mpi")]
            Held::Mpi(node) => node.set_lambda(lambda),
        }
    }
    /// BCFW's regularisation path (collective over MPI; empty on ranks other
    /// than 0).
    pub(super) fn bcfw_path(
        &mut self,
        eps: f64,
        lambda_min: f64,
        max_breakpoints: usize,
    ) -> Result<Vec<crate::bcfw::Breakpoint>> {
        match self {
            Held::Local(s) => s.bcfw_for_path()?.path(eps, lambda_min, max_breakpoints),
            #[cfg(feature = "mpi")]
            Held::Mpi(node) => node.bcfw_path(eps, lambda_min, max_breakpoints),
        }
    }

    pub(super) fn history(&self) -> &[Iteration] {
        self.solver().map_or(&[], Solver::history)
    }
    pub(super) fn dim(&self) -> usize {
        match self {
            Held::Local(s) => s.dim(),
            #[cfg(feature = "mpi")]
            Held::Mpi(node) => node.dim(),
        }
    }
    /// Box constraints (on an MPI rank other than 0: nothing to set, only
    /// rank 0's are used).
    pub(super) fn set_bounds(&mut self, lower: Vec<f64>, upper: Vec<f64>) -> Result<()> {
        self.solver_mut()
            .map_or(Ok(()), |s| s.set_bounds(lower, upper))
    }
    /// Linear constraints `A w >= b` (as [`Held::set_bounds`] on MPI ranks).
    pub(super) fn set_linear_constraints(&mut self, matrix: &[f64], rhs: &[f64]) -> Result<()> {
        self.solver_mut()
            .map_or(Ok(()), |s| s.set_linear_constraints(matrix, rhs))
    }
    /// The solver of this process, for BCFW's dual state (which is not
    /// carried across ranks).
    pub(super) fn local_mut(&mut self) -> Result<&mut Solver> {
        match self {
            Held::Local(s) => Ok(s),
            #[cfg(feature = "mpi")]
            Held::Mpi(_) => Err(Error::invalid_argument(
                "a BCFW dual state is not available in distributed mode",
            )),
        }
    }
    pub(super) fn bcfw_stats(&self) -> Option<crate::bcfw::BcfwStats> {
        self.solver()
            .and_then(Solver::bcfw)
            .and_then(crate::solver::Bcfw::stats)
    }
}

impl bmrm_solver {
    /// A handle around `held` for a problem of dimension `dim`.
    pub(crate) fn boxed(dim: usize, held: Held) -> Box<Self> {
        Box::new(bmrm_solver {
            dim,
            inner: Mutex::new(held),
        })
    }
}

impl bmrm_solver {
    /// Borrows the solver behind `s`.
    ///
    /// # Safety
    /// `s` is NULL or a live pointer from `bmrm_solver_new`.
    pub(super) unsafe fn from_ptr<'a>(s: *const bmrm_solver) -> Result<&'a Self> {
        non_null(s, "the solver s")?;
        // SAFETY: not NULL, and live by the caller's contract; only shared
        // references are ever made (the state sits behind a mutex).
        Ok(unsafe { &*s })
    }

    /// What the handle holds, or an error when another call holds it.
    pub(super) fn lock(&self) -> Result<MutexGuard<'_, Held>> {
        match self.inner.try_lock() {
            Ok(guard) => Ok(guard),
            // A panic caught during an earlier call: the state is still
            // consistent enough to report on or to run again.
            Err(TryLockError::Poisoned(p)) => Ok(p.into_inner()),
            Err(TryLockError::WouldBlock) => Err(Error::invalid_argument(
                "the solver is busy: another call on it is running (callbacks must not \
                 call bmrm_solver_* on the solver that calls them)",
            )),
        }
    }
}

/// The default settings for `algorithm`: the engine's defaults, lambda = 0
/// (no default: set it), the BCFW options at the values of docs/bcfw.md,
/// no progress callback. Returned by value; there is nothing to
/// free. An unknown `algorithm` value is kept in the struct, and
/// `bmrm_solver_new` rejects it.
#[no_mangle]
pub extern "C" fn bmrm_settings_default(algorithm: RawAlgorithm) -> bmrm_settings {
    catch("bmrm_settings_default", || {
        Ok(bmrm_settings::defaults(algorithm))
    })
    .unwrap_or_else(|_| {
        // SAFETY: all-zero bytes are a valid `bmrm_settings` (integers,
        // floats, a NULL `Option` of a function pointer, a NULL pointer);
        // lambda = 0 makes `bmrm_solver_new` reject it.
        unsafe { std::mem::zeroed() }
    })
}

/// Makes a solver for the problem `p` with the settings `*s`, validating
/// every setting against the problem, and writes it to `*out` (written only
/// on success). `*s` is copied: the caller keeps it. The solver keeps its
/// own reference to the problem's oracle, so `p` may be freed before the
/// solver. Errors: BMRM_ERROR_NULL_ARGUMENT, BMRM_ERROR_INVALID_ARGUMENT (a
/// bad setting, e.g. lambda <= 0, an unknown algorithm), BMRM_ERROR_NO_ORACLE
/// (no oracle, or the algorithm needs a level the problem lacks: P-BMRM on a
/// full risk, BCFW without a max-oracle), BMRM_ERROR_OUT_OF_MEMORY.
///
/// # Safety
/// `p` is NULL or a live problem, `s` NULL or a readable `bmrm_settings`,
/// `out` NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn bmrm_solver_new(
    p: *const bmrm_problem,
    s: *const bmrm_settings,
    out: *mut *mut bmrm_solver,
) -> bmrm_status {
    status("bmrm_solver_new", || {
        // SAFETY: forwarded from this function's contract.
        let problem = unsafe { bmrm_problem::from_ptr(p, "the problem p") }?;
        non_null(s, "the settings s")?;
        non_null(out, "out")?;
        // SAFETY: `s` is not NULL and readable by the contract; every bit
        // pattern of the integer and float fields is valid, the enums are
        // plain integers here, and `progress` is an `Option` of a function
        // pointer, for which NULL is `None`.
        let c_settings = unsafe { s.read() };
        let settings = engine_settings(&c_settings)?;
        let engine_problem = problem.engine()?;
        let dim = problem.dim();
        // Rust aborts on a failed allocation: try the first one here, so a
        // dimension too large for memory is an error and not a crash.
        let mut probe: Vec<f64> = Vec::new();
        probe
            .try_reserve_exact(dim)
            .map_err(|_| Error::out_of_memory(format!("cannot allocate w of dimension {dim}")))?;
        drop(probe);
        let mut solver = Solver::new(engine_problem, settings)?;
        if let Some(f) = c_settings.progress {
            solver.set_observer(observer(f, c_settings.progress_user));
        }
        let handle = bmrm_solver::boxed(dim, Held::Local(Box::new(solver)));
        // SAFETY: `out` is not NULL and valid for writing by the contract.
        unsafe { out.write(Box::into_raw(handle)) };
        Ok(())
    })
}

/// Minimises F from the start `w` (`dim` doubles, which must equal the
/// problem's dimension) and writes into `w` the best point seen, the one
/// whose F is `info.primal`. After a failed run (a callback returned
/// non-zero, a NaN or Inf) `w` holds the last valid iterate and
/// `bmrm_last_error()` names the iteration, part or example and index; after
/// an argument error (NULL, wrong `dim`, a non-finite start) `w` is
/// unchanged. A progress callback that asks to stop gives BMRM_OK with exit
/// BMRM_EXIT_STOPPED_BY_USER. The callbacks run on the solver's threads
/// while this call lasts; `w` must not be touched by them. Blocks until the
/// run ends.
///
/// # Safety
/// `s` is NULL or a live solver; `w` is NULL or valid for reading and
/// writing `dim` doubles, used by nothing else during the call.
#[no_mangle]
pub unsafe extern "C" fn bmrm_solver_run(
    s: *mut bmrm_solver,
    w: *mut f64,
    dim: usize,
) -> bmrm_status {
    status("bmrm_solver_run", || {
        // SAFETY: forwarded from this function's contract.
        let solver = unsafe { bmrm_solver::from_ptr(s) }?;
        non_null(w, "w")?;
        if dim != solver.dim {
            return Err(Error::dimension_mismatch(format!(
                "dim = {dim} but the problem's dimension is {}",
                solver.dim
            )));
        }
        let mut guard = solver.lock()?;
        // SAFETY: `w` is not NULL and valid for `dim` doubles, exclusively
        // ours for the call, by the contract; `dim` is the problem's
        // dimension, which fits in an array (checked by bmrm_problem_new).
        let w = unsafe { std::slice::from_raw_parts_mut(w, dim) };
        guard.run(w).map(|_| ())
    })
}

/// Changes lambda (> 0 and finite) for the next run, keeping the solver's
/// state: the cutting planes stay (unless `reuse_planes` is 0), so running
/// again from the last solution is a warm start. On failure the solver is
/// unchanged.
///
/// # Safety
/// `s` is NULL or a live solver.
#[no_mangle]
pub unsafe extern "C" fn bmrm_solver_set_lambda(s: *mut bmrm_solver, lambda: f64) -> bmrm_status {
    status("bmrm_solver_set_lambda", || {
        // SAFETY: forwarded from this function's contract.
        let solver = unsafe { bmrm_solver::from_ptr(s) }?;
        solver.lock()?.set_lambda(lambda)
    })
}

/// Sets linear constraints A w >= b for the bundle methods (BMRM,
/// Prox-BMRM, P-BMRM, Prox-P-BMRM): `a` holds `rows` rows of `dim` doubles,
/// row after row, `b` the `rows` right-hand sides (`rows` = 0 removes them;
/// `a` and `b` may then be NULL). Every iterate satisfies them; the start
/// given to bmrm_solver_run must satisfy them after its projection onto the
/// box (bmrm_solver_set_bounds). Errors: BMRM_ERROR_INVALID_ARGUMENT (BCFW,
/// SGD or the cutting-plane method, or an SGD start), BMRM_ERROR_NON_FINITE
/// (an entry named), BMRM_ERROR_DIMENSION_MISMATCH (`dim`),
/// BMRM_ERROR_OUT_OF_MEMORY (`rows * dim` too large).
///
/// # Safety
/// `s` is NULL or a live solver; when `rows` > 0, `a` is NULL or readable
/// for `rows * dim` doubles and `b` NULL or readable for `rows` doubles.
#[no_mangle]
pub unsafe extern "C" fn bmrm_solver_set_linear_constraints(
    s: *mut bmrm_solver,
    a: *const f64,
    rows: usize,
    dim: usize,
    b: *const f64,
) -> bmrm_status {
    status("bmrm_solver_set_linear_constraints", || {
        // SAFETY: forwarded from this function's contract.
        let solver = unsafe { bmrm_solver::from_ptr(s) }?;
        let mut guard = solver.lock()?;
        if dim != guard.dim() {
            return Err(Error::dimension_mismatch(format!(
                "dim = {dim} but the problem's dimension is {}",
                guard.dim()
            )));
        }
        if rows == 0 {
            return guard.set_linear_constraints(&[], &[]);
        }
        if a.is_null() || b.is_null() {
            let which = if a.is_null() { "a" } else { "b" };
            return Err(Error::null_argument(format!(
                "{which} is NULL with rows = {rows}"
            )));
        }
        let len = rows
            .checked_mul(dim)
            .filter(|&n| n <= isize::MAX as usize / 8)
            .ok_or_else(|| {
                Error::out_of_memory(format!("{rows} rows of dimension {dim} overflow"))
            })?;
        // SAFETY: not NULL, readable for `rows * dim` and `rows` doubles by
        // the contract.
        let (matrix, rhs) = unsafe {
            (
                std::slice::from_raw_parts(a, len),
                std::slice::from_raw_parts(b, rows),
            )
        };
        guard.set_linear_constraints(matrix, rhs)
    })
}

/// Writes the summary of the last run into `*out` (written only on success):
/// also after a failed run (exit BMRM_EXIT_NOT_RUN, with the figures
/// reached); all zero with exit BMRM_EXIT_NOT_RUN before the first run.
///
/// # Safety
/// `s` is NULL or a live solver; `out` is NULL or valid for writing a
/// `bmrm_info`.
#[no_mangle]
pub unsafe extern "C" fn bmrm_solver_info(
    s: *const bmrm_solver,
    out: *mut bmrm_info,
) -> bmrm_status {
    status("bmrm_solver_info", || {
        // SAFETY: forwarded from this function's contract.
        let solver = unsafe { bmrm_solver::from_ptr(s) }?;
        non_null(out, "out")?;
        let info = bmrm_info::from(&solver.lock()?.info());
        // SAFETY: `out` is not NULL and valid for writing by the contract.
        unsafe { out.write(info) };
        Ok(())
    })
}

/// The number of rows of the last run's history (one per iteration). 0 for
/// a NULL or busy solver (then `bmrm_last_error()` says so).
///
/// # Safety
/// `s` is NULL or a live solver.
#[no_mangle]
pub unsafe extern "C" fn bmrm_solver_history_len(s: *const bmrm_solver) -> usize {
    catch("bmrm_solver_history_len", || {
        // SAFETY: forwarded from this function's contract.
        let solver = unsafe { bmrm_solver::from_ptr(s) }?;
        let len = solver.lock()?.history().len();
        Ok(len)
    })
    .unwrap_or(0)
}

/// Writes row `k` (0-based, k < `bmrm_solver_history_len(s)`) of the last
/// run's history into `*out` (written only on success); a `k` out of range
/// gives BMRM_ERROR_INVALID_ARGUMENT.
///
/// # Safety
/// `s` is NULL or a live solver; `out` is NULL or valid for writing a
/// `bmrm_iteration`.
#[no_mangle]
pub unsafe extern "C" fn bmrm_solver_history(
    s: *const bmrm_solver,
    k: usize,
    out: *mut bmrm_iteration,
) -> bmrm_status {
    status("bmrm_solver_history", || {
        // SAFETY: forwarded from this function's contract.
        let solver = unsafe { bmrm_solver::from_ptr(s) }?;
        non_null(out, "out")?;
        let guard = solver.lock()?;
        let history = guard.history();
        let row = history.get(k).ok_or_else(|| {
            Error::invalid_argument(format!(
                "k = {k} but the history has {} rows",
                history.len()
            ))
        })?;
        // SAFETY: `out` is not NULL and valid for writing by the contract.
        unsafe { out.write(bmrm_iteration::from(row)) };
        Ok(())
    })
}

/// Frees a solver made by `bmrm_solver_new` (its threads, planes and
/// history). NULL is fine (nothing happens). The pointer must not be used
/// again. If another call on the solver is running (a callback freeing its
/// own solver) the solver is not freed, and `bmrm_last_error()` says so.
///
/// # Safety
/// `s` is NULL or a live solver.
#[no_mangle]
pub unsafe extern "C" fn bmrm_solver_free(s: *mut bmrm_solver) {
    let _ = status("bmrm_solver_free", || {
        if s.is_null() {
            return Ok(());
        }
        {
            // SAFETY: not NULL and live by the contract.
            let solver = unsafe { bmrm_solver::from_ptr(s) }?;
            drop(solver.lock()?);
        }
        // SAFETY: `s` came from `Box::into_raw` in `bmrm_solver_new`, is
        // freed once by the contract, and no call holds it (checked above).
        drop(unsafe { Box::from_raw(s) });
        Ok(())
    });
}

//! `bmrm_problem`: the dimension and one oracle, at the level the caller sets.

use std::ffi::c_void;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::models::graph::GraphModel;
use crate::models::{Chain, Multiclass};
use crate::oracle::{MaxOracle, Problem};

use super::boundary::{non_null, status};
use super::callbacks::{
    bmrm_max_oracle_fn, bmrm_partial_risk_fn, bmrm_risk_fn, CMaxOracle, CPartitioned, CRisk,
};
use super::types::bmrm_status;

/// A problem: the dimension of w and one oracle (a full risk, a partitioned
/// risk or an example max-oracle). Opaque; made by `bmrm_problem_new`, owned
/// by the caller until `bmrm_problem_free`. A solver keeps its own reference
/// to the oracle, so the problem may be freed before the solvers made from it.
pub struct bmrm_problem {
    dim: usize,
    state: Mutex<State>,
}

/// A built-in model behind a problem's max-oracle (src/ffi/models.rs), kept
/// typed so that the prediction helpers can reach it.
#[derive(Clone)]
pub(crate) enum Builtin {
    Multiclass(Arc<Multiclass>),
    Chain(Arc<Chain>),
    Graph(Arc<GraphModel>),
}

/// What a problem's mutex guards: the oracle, and the built-in model it is
/// when a `bmrm_problem_new_*` constructor made it (cleared when a callback
/// replaces the oracle).
struct State {
    problem: Option<Problem>,
    builtin: Option<Builtin>,
}

impl bmrm_problem {
    /// The engine's problem, or `NoOracle` when no oracle was set.
    pub(crate) fn engine(&self) -> Result<Problem> {
        self.lock().problem.clone().ok_or_else(|| {
            Error::no_oracle(
                "the problem has no oracle: set one with bmrm_problem_set_risk, \
                 bmrm_problem_set_partitioned_risk or bmrm_problem_set_max_oracle",
            )
        })
    }

    /// The dimension of w.
    pub(crate) fn dim(&self) -> usize {
        self.dim
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The built-in model behind the oracle, if a `bmrm_problem_new_*`
    /// constructor made it and no callback replaced it.
    pub(crate) fn builtin(&self) -> Option<Builtin> {
        self.lock().builtin.clone()
    }

    /// A problem whose max-oracle is a built-in model.
    pub(crate) fn with_builtin(builtin: Builtin) -> Box<Self> {
        let oracle: Arc<dyn MaxOracle> = match &builtin {
            Builtin::Multiclass(m) => m.clone(),
            Builtin::Chain(c) => c.clone(),
            Builtin::Graph(g) => g.clone(),
        };
        Box::new(bmrm_problem {
            dim: oracle.dim(),
            state: Mutex::new(State {
                problem: Some(Problem::Examples(oracle)),
                builtin: Some(builtin),
            }),
        })
    }

    /// Borrows the problem behind `p`.
    ///
    /// # Safety
    /// `p` is NULL or a live pointer from `bmrm_problem_new`.
    pub(crate) unsafe fn from_ptr<'a>(p: *const bmrm_problem, what: &str) -> Result<&'a Self> {
        non_null(p, what)?;
        // SAFETY: not NULL, and live by the caller's contract; only shared
        // references are ever made (the oracle sits behind a mutex).
        Ok(unsafe { &*p })
    }

    fn set(&self, problem: Problem) {
        *self.lock() = State {
            problem: Some(problem),
            builtin: None,
        };
    }
}

/// The largest dimension whose w fits in memory as one array of doubles.
const MAX_DIM: usize = isize::MAX as usize / std::mem::size_of::<f64>();

/// Makes a problem over w of dimension `dim` (> 0) with no oracle yet, and
/// writes it to `*out` (written only on success). Free it with
/// `bmrm_problem_free`.
///
/// # Safety
/// `out` is NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn bmrm_problem_new(dim: usize, out: *mut *mut bmrm_problem) -> bmrm_status {
    status("bmrm_problem_new", || {
        non_null(out, "out")?;
        if dim == 0 {
            return Err(Error::invalid_argument("dim must be positive, got 0"));
        }
        if dim > MAX_DIM {
            return Err(Error::invalid_argument(format!(
                "dim = {dim} is too large for an array of doubles"
            )));
        }
        let problem = Box::new(bmrm_problem {
            dim,
            state: Mutex::new(State {
                problem: None,
                builtin: None,
            }),
        });
        // SAFETY: `out` is not NULL and valid for writing by the contract.
        unsafe { out.write(Box::into_raw(problem)) };
        Ok(())
    })
}

/// Sets the oracle to the full risk `f` (replacing any oracle set before; solvers already made keep theirs).
/// `user` is passed back to `f` unchanged and never freed; it must stay
/// valid while the problem or any solver made from it exists. Enables BMRM,
/// Prox-BMRM, SGD and the cutting-plane method.
///
/// # Safety
/// `p` is NULL or a live problem; `f`, if not NULL, follows `bmrm_risk_fn`.
#[no_mangle]
pub unsafe extern "C" fn bmrm_problem_set_risk(
    p: *mut bmrm_problem,
    f: bmrm_risk_fn,
    user: *mut c_void,
) -> bmrm_status {
    status("bmrm_problem_set_risk", || {
        // SAFETY: forwarded from this function's contract.
        let p = unsafe { bmrm_problem::from_ptr(p, "the problem p") }?;
        let f = f.ok_or_else(|| Error::null_argument("the risk function f is NULL"))?;
        p.set(Problem::from_risk(CRisk::new(f, user, p.dim)));
        Ok(())
    })
}

/// Sets the oracle to the partitioned risk R(w) = sum_{p < num_parts} f(p, w)
/// (replacing any oracle set before; solvers already made keep theirs). With `thread_safe` true, `f` may be
/// called for different parts from several threads at once; with false,
/// calls never overlap. `user` is passed back unchanged and never freed; it
/// must stay valid while the problem or any solver made from it exists.
/// Enables every bundle method, P-BMRM and Prox-P-BMRM included.
///
/// # Safety
/// `p` is NULL or a live problem; `f`, if not NULL, follows
/// `bmrm_partial_risk_fn`.
#[no_mangle]
pub unsafe extern "C" fn bmrm_problem_set_partitioned_risk(
    p: *mut bmrm_problem,
    num_parts: usize,
    f: bmrm_partial_risk_fn,
    user: *mut c_void,
    thread_safe: bool,
) -> bmrm_status {
    status("bmrm_problem_set_partitioned_risk", || {
        // SAFETY: forwarded from this function's contract.
        let p = unsafe { bmrm_problem::from_ptr(p, "the problem p") }?;
        let f = f.ok_or_else(|| Error::null_argument("the partial-risk function f is NULL"))?;
        if num_parts == 0 {
            return Err(Error::invalid_argument("num_parts must be positive, got 0"));
        }
        p.set(Problem::from_partitioned(CPartitioned::new(
            f,
            user,
            p.dim,
            num_parts,
            thread_safe,
        )));
        Ok(())
    })
}

/// Sets the oracle to the max-oracle `f` over `num_examples` examples
/// (replacing any oracle set before; solvers already made keep theirs); the risk is the mean structured hinge
/// R(w) = (1/m) sum_i max_y [L_i(y) - <w, psi_i(y)>]. With `thread_safe`
/// true, `f` may be called for different examples from several threads at
/// once; with false, calls never overlap. `user` is passed back unchanged and
/// never freed; it must stay valid while the problem or any solver made from
/// it exists. Enables every solver.
///
/// # Safety
/// `p` is NULL or a live problem; `f`, if not NULL, follows
/// `bmrm_max_oracle_fn`.
#[no_mangle]
pub unsafe extern "C" fn bmrm_problem_set_max_oracle(
    p: *mut bmrm_problem,
    num_examples: usize,
    f: bmrm_max_oracle_fn,
    user: *mut c_void,
    thread_safe: bool,
) -> bmrm_status {
    status("bmrm_problem_set_max_oracle", || {
        // SAFETY: forwarded from this function's contract.
        let p = unsafe { bmrm_problem::from_ptr(p, "the problem p") }?;
        let f = f.ok_or_else(|| Error::null_argument("the max-oracle f is NULL"))?;
        if num_examples == 0 {
            return Err(Error::invalid_argument(
                "num_examples must be positive, got 0",
            ));
        }
        p.set(Problem::from_max_oracle(CMaxOracle::new(
            f,
            user,
            p.dim,
            num_examples,
            thread_safe,
        )));
        Ok(())
    })
}

/// Frees a problem made by `bmrm_problem_new`. NULL is fine (nothing
/// happens). Solvers made from it keep working. The pointer must not be used
/// again.
///
/// # Safety
/// `p` is NULL or a live problem that no other call is using.
#[no_mangle]
pub unsafe extern "C" fn bmrm_problem_free(p: *mut bmrm_problem) {
    let _ = status("bmrm_problem_free", || {
        if !p.is_null() {
            // SAFETY: `p` came from `Box::into_raw` in `bmrm_problem_new` and
            // is freed once, by the caller's contract.
            drop(unsafe { Box::from_raw(p) });
        }
        Ok(())
    });
}

//! The C callbacks and their adapters to the engine's oracle traits.
//!
//! An adapter holds the function pointer and the caller's `user` pointer.
//! It zeroes the output buffers, calls the function, turns a non-zero return
//! into [`Error::oracle_failed`] ("risk callback returned 3"; the engine adds
//! the part, example and iteration) and leaves the checks for NaN and Inf to
//! the engine. A callback declared not thread-safe is called under a lock, so
//! two calls never overlap even if the engine's scheduling changes.

use std::ffi::c_void;
use std::ops::ControlFlow;
use std::sync::{Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::oracle::{Corner, FullRisk, MaxOracle, PartitionedRisk};
use crate::solver::Info;
use crate::vocab::{IterateHook, IterateView, Settings};

use super::corner::bmrm_corner;
use super::types::{bmrm_info, bmrm_settings};

/// The full risk: writes R(w) into `*risk` and one subgradient of R at `w`
/// into `subgrad` (`dim` doubles, zeroed on entry), and returns 0; any other
/// return value fails the solve with BMRM_ERROR_ORACLE_FAILED.
///
/// `w`, `risk` and `subgrad` are owned by the library and valid only during
/// the call. Calls never overlap; they may come from any of the solver's
/// threads (not necessarily the thread that called `bmrm_solver_run`).
pub type bmrm_risk_fn = Option<
    unsafe extern "C" fn(
        user: *mut c_void,
        w: *const f64,
        dim: usize,
        risk: *mut f64,
        subgrad: *mut f64,
    ) -> i32,
>;

/// One part of a partitioned risk R(w) = sum_p R(w, p): writes R(w, part)
/// into `*risk` and one of its subgradients into `subgrad` (`dim` doubles,
/// zeroed on entry), and returns 0; any other value fails the solve.
///
/// `w`, `risk` and `subgrad` are owned by the library and valid only during
/// the call. Calls come from the solver's threads; they overlap (for
/// different parts) only when the risk was set with `thread_safe = true`.
pub type bmrm_partial_risk_fn = Option<
    unsafe extern "C" fn(
        user: *mut c_void,
        part: usize,
        w: *const f64,
        dim: usize,
        risk: *mut f64,
        subgrad: *mut f64,
    ) -> i32,
>;

/// The loss-augmented decoder of example `example` at `w`: finds
/// y^ = argmax_y L_i(y) - <w, psi_i(y)> and reports, through the corner
/// functions on `out`, the loss L_i(y^) (`bmrm_corner_set_loss`),
/// psi_i(y^) = phi(x_i, y_i) - phi(x_i, y^) (`bmrm_corner_add` for sparse
/// entries, `bmrm_corner_dense` for a dense buffer, or both: they add up)
/// and a label id (`bmrm_corner_set_label`). `out` starts as loss 0, label 0,
/// psi = 0. Returns 0; any other value fails the solve.
///
/// `w` and `out` are owned by the library and valid only during the call.
/// Calls come from the solver's threads; they overlap (for different
/// examples) only when the oracle was set with `thread_safe = true`.
pub type bmrm_max_oracle_fn = Option<
    unsafe extern "C" fn(
        user: *mut c_void,
        example: usize,
        w: *const f64,
        dim: usize,
        out: *mut bmrm_corner,
    ) -> i32,
>;

/// The engine's settings of a C `bmrm_settings`, with its BCFW iterate
/// callback (if any) as the engine's hook.
pub(crate) fn engine_settings(c: &bmrm_settings) -> Result<Settings> {
    let mut s = c.to_engine()?;
    if let Some(f) = c.bcfw_iterate {
        s.iterate_hook = Some(iterate_hook(f, c.bcfw_iterate_user));
    }
    Ok(s)
}

/// The C iterate callback as the engine's hook.
fn iterate_hook(
    f: unsafe extern "C" fn(*mut c_void, u64, *const f64, usize, f64, f64) -> i32,
    user: *mut c_void,
) -> IterateHook {
    let user = UserPtr(user);
    IterateHook::new(move |v: &IterateView<'_>| {
        // SAFETY: `f` is the non-null iterate function of the settings the
        // solver was made with; `v.w` is valid for `v.w.len()` doubles until
        // the call returns, as the header promises.
        let rc = unsafe { f(user.get(), v.pass, v.w.as_ptr(), v.w.len(), v.ell, v.dual) };
        if rc == 0 {
            ControlFlow::Continue(())
        } else {
            ControlFlow::Break(())
        }
    })
}

/// The caller's opaque `user` pointer, passed back to its callbacks.
#[derive(Clone, Copy)]
pub(crate) struct UserPtr(*mut c_void);

impl UserPtr {
    /// Wraps the caller's pointer.
    pub(crate) fn new(user: *mut c_void) -> Self {
        UserPtr(user)
    }
    /// The pointer (a method, so that closures capture the whole `UserPtr`).
    pub(crate) fn get(self) -> *mut c_void {
        self.0
    }
}

// SAFETY: the library never dereferences the pointer; it only hands it back
// to the caller's own callbacks. The header documents that callbacks (and so
// what `user` points to) are used from the solver's threads, serialised
// unless the caller declared them thread-safe.
unsafe impl Send for UserPtr {}
// SAFETY: as for `Send`: shared access only copies the pointer value.
unsafe impl Sync for UserPtr {}

/// Serialises the calls of a callback that is not thread-safe.
struct Serial {
    thread_safe: bool,
    lock: Mutex<()>,
}

impl Serial {
    fn new(thread_safe: bool) -> Self {
        Serial {
            thread_safe,
            lock: Mutex::new(()),
        }
    }
    /// Holds the lock during a call unless the callback is thread-safe.
    fn enter(&self) -> Option<MutexGuard<'_, ()>> {
        (!self.thread_safe).then(|| self.lock.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// Checks the buffer lengths the engine passes (a broken invariant otherwise).
fn check_len(what: &str, len: usize, dim: usize) -> Result<()> {
    if len == dim {
        Ok(())
    } else {
        Err(Error::internal(format!(
            "{what} has length {len} but the problem's dimension is {dim}"
        )))
    }
}

/// A C full risk as a [`FullRisk`].
pub(crate) struct CRisk {
    f: unsafe extern "C" fn(*mut c_void, *const f64, usize, *mut f64, *mut f64) -> i32,
    user: UserPtr,
    dim: usize,
    serial: Serial,
}

impl CRisk {
    pub(crate) fn new(
        f: unsafe extern "C" fn(*mut c_void, *const f64, usize, *mut f64, *mut f64) -> i32,
        user: *mut c_void,
        dim: usize,
    ) -> Self {
        // The C signature has no thread-safety flag: always serialise.
        CRisk {
            f,
            user: UserPtr(user),
            dim,
            serial: Serial::new(false),
        }
    }
}

impl FullRisk for CRisk {
    fn dim(&self) -> usize {
        self.dim
    }
    /// No flag in the C signature: the callback runs on the caller's thread.
    fn thread_safe(&self) -> bool {
        false
    }

    fn risk(&self, w: &[f64], subgrad: &mut [f64]) -> Result<f64> {
        check_len("w", w.len(), self.dim)?;
        check_len("the subgradient", subgrad.len(), self.dim)?;
        subgrad.fill(0.0);
        let mut risk = f64::NAN;
        let _serial = self.serial.enter();
        // SAFETY: `f` is the non-null function the caller registered with
        // `bmrm_problem_set_risk`; `w` and `subgrad` hold `dim` doubles and
        // `risk` is a local, all valid for the duration of the call, which is
        // all the header promises. Calls are serialised by `_serial`.
        let rc = unsafe {
            (self.f)(
                self.user.0,
                w.as_ptr(),
                self.dim,
                &mut risk,
                subgrad.as_mut_ptr(),
            )
        };
        if rc != 0 {
            return Err(Error::oracle(format!("risk callback returned {rc}")));
        }
        Ok(risk)
    }
}

/// A C partitioned risk as a [`PartitionedRisk`].
pub(crate) struct CPartitioned {
    f: unsafe extern "C" fn(*mut c_void, usize, *const f64, usize, *mut f64, *mut f64) -> i32,
    user: UserPtr,
    dim: usize,
    num_parts: usize,
    serial: Serial,
}

impl CPartitioned {
    pub(crate) fn new(
        f: unsafe extern "C" fn(*mut c_void, usize, *const f64, usize, *mut f64, *mut f64) -> i32,
        user: *mut c_void,
        dim: usize,
        num_parts: usize,
        thread_safe: bool,
    ) -> Self {
        CPartitioned {
            f,
            user: UserPtr(user),
            dim,
            num_parts,
            serial: Serial::new(thread_safe),
        }
    }
}

impl PartitionedRisk for CPartitioned {
    fn dim(&self) -> usize {
        self.dim
    }
    fn num_parts(&self) -> usize {
        self.num_parts
    }
    fn thread_safe(&self) -> bool {
        self.serial.thread_safe
    }

    fn partial_risk(&self, part: usize, w: &[f64], subgrad: &mut [f64]) -> Result<f64> {
        check_len("w", w.len(), self.dim)?;
        check_len("the subgradient", subgrad.len(), self.dim)?;
        if part >= self.num_parts {
            return Err(Error::internal(format!(
                "part {part} asked of a risk with {} parts",
                self.num_parts
            )));
        }
        subgrad.fill(0.0);
        let mut risk = f64::NAN;
        let _serial = self.serial.enter();
        // SAFETY: `f` is the non-null function registered with
        // `bmrm_problem_set_partitioned_risk`; `w` and `subgrad` hold `dim`
        // doubles and `risk` is a local, valid for the call. Concurrent calls
        // happen only when the caller declared the function thread-safe;
        // otherwise `_serial` holds the lock.
        let rc = unsafe {
            (self.f)(
                self.user.0,
                part,
                w.as_ptr(),
                self.dim,
                &mut risk,
                subgrad.as_mut_ptr(),
            )
        };
        if rc != 0 {
            return Err(Error::oracle(format!(
                "partial-risk callback returned {rc}"
            )));
        }
        Ok(risk)
    }
}

/// A C max-oracle as a [`MaxOracle`].
pub(crate) struct CMaxOracle {
    f: unsafe extern "C" fn(*mut c_void, usize, *const f64, usize, *mut bmrm_corner) -> i32,
    user: UserPtr,
    dim: usize,
    num_examples: usize,
    serial: Serial,
}

impl CMaxOracle {
    pub(crate) fn new(
        f: unsafe extern "C" fn(*mut c_void, usize, *const f64, usize, *mut bmrm_corner) -> i32,
        user: *mut c_void,
        dim: usize,
        num_examples: usize,
        thread_safe: bool,
    ) -> Self {
        CMaxOracle {
            f,
            user: UserPtr(user),
            dim,
            num_examples,
            serial: Serial::new(thread_safe),
        }
    }
}

impl MaxOracle for CMaxOracle {
    fn dim(&self) -> usize {
        self.dim
    }
    fn num_examples(&self) -> usize {
        self.num_examples
    }
    fn thread_safe(&self) -> bool {
        self.serial.thread_safe
    }

    fn max_oracle(&self, example: usize, w: &[f64], out: &mut Corner) -> Result<()> {
        check_len("w", w.len(), self.dim)?;
        check_len("the corner", out.dim(), self.dim)?;
        if example >= self.num_examples {
            return Err(Error::internal(format!(
                "example {example} asked of a max-oracle with {} examples",
                self.num_examples
            )));
        }
        let mut handle = bmrm_corner::new(out);
        let rc = {
            let _serial = self.serial.enter();
            // SAFETY: `f` is the non-null function registered with
            // `bmrm_problem_set_max_oracle`; `w` holds `dim` doubles and
            // `handle` (and the corner it points to) lives on this stack
            // frame until the call returns, which is as long as the header
            // says `out` is valid. Concurrent calls happen only when the
            // caller declared the oracle thread-safe, each with its own corner.
            unsafe { (self.f)(self.user.0, example, w.as_ptr(), self.dim, &mut handle) }
        };
        let failed = handle.into_error();
        if rc != 0 {
            return Err(Error::oracle(format!("max-oracle returned {rc}")));
        }
        match failed {
            Some(e) => Err(e.context("(a bmrm_corner call failed in the max-oracle)")),
            None => Ok(()),
        }
    }
}

/// The progress callback as the engine's observer.
pub(crate) fn observer(
    f: unsafe extern "C" fn(*mut c_void, *const bmrm_info) -> i32,
    user: *mut c_void,
) -> impl FnMut(&Info) -> ControlFlow<()> + Send + 'static {
    let user = UserPtr(user);
    move |info: &Info| {
        let c_info = bmrm_info::from(info);
        // SAFETY: `f` is the non-null progress function of the settings the
        // solver was made with; `c_info` lives until the call returns, which
        // is as long as the header promises. The engine calls the observer
        // from its run loop only, never concurrently.
        let rc = unsafe { f(user.get(), &c_info) };
        if rc == 0 {
            ControlFlow::Continue(())
        } else {
            ControlFlow::Break(())
        }
    }
}

//! `bmrm_corner`: what a max-oracle fills, wrapping the engine's [`Corner`].

use crate::error::{Error, Result};
use crate::oracle::Corner;

use super::boundary::{catch, non_null, slice, status};
use super::types::bmrm_status;

/// The output of one max-oracle call: the loss, psi and the label id of the
/// loss-augmented argmax. Opaque; created by the library for each call of a
/// `bmrm_max_oracle_fn` and valid only inside that call (do not keep the
/// pointer). Fill it with `bmrm_corner_set_loss`, `bmrm_corner_set_label`,
/// `bmrm_corner_add` and `bmrm_corner_dense`, from the thread the oracle was
/// called on.
pub struct bmrm_corner {
    /// The engine's corner, borrowed for the duration of one oracle call.
    corner: *mut Corner,
    /// The first failed corner call, which fails the oracle call even if the
    /// oracle ignores the status it was given.
    error: Option<Error>,
}

impl bmrm_corner {
    /// A handle on `corner` for one oracle call.
    pub(crate) fn new(corner: &mut Corner) -> Self {
        bmrm_corner {
            corner,
            error: None,
        }
    }

    /// The first error of a corner call, once the oracle call is over.
    pub(crate) fn into_error(self) -> Option<Error> {
        self.error
    }

    /// Runs `f` on the corner behind `c`, recording a failure in the handle.
    ///
    /// # Safety
    /// `c` is NULL or a handle given to a max-oracle call that has not
    /// returned yet, used by that call's thread only.
    unsafe fn with<T>(c: *mut bmrm_corner, f: impl FnOnce(&mut Corner) -> Result<T>) -> Result<T> {
        non_null(c, "the corner c")?;
        // SAFETY: the caller guarantees `c` is a live handle of the current
        // oracle call on this thread (the header's contract); it is not NULL.
        let handle = unsafe { &mut *c };
        // SAFETY: `handle.corner` points to the engine's corner, which
        // outlives the oracle call and is not used by the engine until the
        // call returns.
        let corner = unsafe { &mut *handle.corner };
        let result = f(corner);
        if let Err(e) = &result {
            handle.error.get_or_insert_with(|| e.clone());
        }
        result
    }
}

/// Sets the loss L_i(y^) of the corner (0 until set). A NULL `c` is ignored
/// (and recorded for `bmrm_last_error`). A non-finite loss fails the solve
/// with BMRM_ERROR_NON_FINITE once the oracle returns.
///
/// # Safety
/// `c` is NULL or the corner of a max-oracle call in progress on this thread.
#[no_mangle]
pub unsafe extern "C" fn bmrm_corner_set_loss(c: *mut bmrm_corner, loss: f64) {
    let _ = catch("bmrm_corner_set_loss", || {
        // SAFETY: forwarded from this function's contract.
        unsafe {
            bmrm_corner::with(c, |corner| {
                corner.set_loss(loss);
                Ok(())
            })
        }
    });
}

/// Sets the 64-bit label id of y^ (0 until set). A NULL `c` is ignored (and
/// recorded for `bmrm_last_error`).
///
/// # Safety
/// `c` is NULL or the corner of a max-oracle call in progress on this thread.
#[no_mangle]
pub unsafe extern "C" fn bmrm_corner_set_label(c: *mut bmrm_corner, label_id: u64) {
    let _ = catch("bmrm_corner_set_label", || {
        // SAFETY: forwarded from this function's contract.
        unsafe {
            bmrm_corner::with(c, |corner| {
                corner.set_label(label_id);
                Ok(())
            })
        }
    });
}

/// Marks the answer as possibly not a maximiser (an approximate decoder):
/// the run then reports `certified = 0` in its bmrm_info (ABI 4). A NULL
/// `c` is ignored (and recorded for `bmrm_last_error`).
///
/// # Safety
/// `c` is NULL or the corner of a max-oracle call in progress on this thread.
#[no_mangle]
pub unsafe extern "C" fn bmrm_corner_mark_inexact(c: *mut bmrm_corner) {
    let _ = catch("bmrm_corner_mark_inexact", || {
        // SAFETY: forwarded from this function's contract.
        unsafe {
            bmrm_corner::with(c, |corner| {
                corner.mark_inexact();
                Ok(())
            })
        }
    });
}

/// psi\[index\] += value (sparse psi; repeated indices add up, and add to the
/// dense buffer if one is used too). Returns BMRM_ERROR_NULL_ARGUMENT for a
/// NULL `c` and BMRM_ERROR_DIMENSION_MISMATCH for index >= dim; such a
/// failure also fails the oracle call (and so the solve) when the oracle
/// returns, even if it returns 0. A non-finite value fails the solve with
/// BMRM_ERROR_NON_FINITE once the oracle returns.
///
/// # Safety
/// `c` is NULL or the corner of a max-oracle call in progress on this thread.
#[no_mangle]
pub unsafe extern "C" fn bmrm_corner_add(
    c: *mut bmrm_corner,
    index: usize,
    value: f64,
) -> bmrm_status {
    status("bmrm_corner_add", || {
        // SAFETY: forwarded from this function's contract.
        unsafe { bmrm_corner::with(c, |corner| corner.add(index, value)) }
    })
}

/// psi\[index\[k\]\] += values\[k\] for k < n: `n` sparse entries in one
/// call, as `n` calls of `bmrm_corner_add` would add them but at a fraction
/// of their cost. All of them are added or (an index >= dim:
/// BMRM_ERROR_DIMENSION_MISMATCH) none. BMRM_ERROR_NULL_ARGUMENT for a NULL
/// `c`, or a NULL `index` or `values` with n > 0. A failure also fails the
/// oracle call when it returns, as for `bmrm_corner_add`.
///
/// # Safety
/// `c` is NULL or the corner of a max-oracle call in progress on this thread;
/// `index` and `values` are NULL or valid for reading `n` items.
#[no_mangle]
pub unsafe extern "C" fn bmrm_corner_add_many(
    c: *mut bmrm_corner,
    index: *const usize,
    values: *const f64,
    n: usize,
) -> bmrm_status {
    status("bmrm_corner_add_many", || {
        // SAFETY: forwarded from this function's contract: `c` is a live
        // handle, and non-NULL `index` and `values` are valid for `n` items.
        unsafe {
            bmrm_corner::with(c, |corner| {
                let index = slice(index, n, "index")?;
                let values = slice(values, n, "values")?;
                corner.add_many(index, values)
            })
        }
    })
}

/// psi\[start + j\] += scale * values\[j\] for j < n, skipping the zeros of
/// `values`: a dense run of psi (a feature vector placed in a label's block,
/// e.g. +x at block y_i and -x at block y^ with scale -1) in one call. All
/// of it is added or (start + n > dim: BMRM_ERROR_DIMENSION_MISMATCH) none.
/// BMRM_ERROR_NULL_ARGUMENT for a NULL `c`, or a NULL `values` with n > 0. A
/// failure also fails the oracle call when it returns.
///
/// # Safety
/// `c` is NULL or the corner of a max-oracle call in progress on this thread;
/// `values` is NULL or valid for reading `n` items.
#[no_mangle]
pub unsafe extern "C" fn bmrm_corner_add_row(
    c: *mut bmrm_corner,
    start: usize,
    values: *const f64,
    n: usize,
    scale: f64,
) -> bmrm_status {
    status("bmrm_corner_add_row", || {
        // SAFETY: forwarded from this function's contract: `c` is a live
        // handle, and a non-NULL `values` is valid for `n` items.
        unsafe {
            bmrm_corner::with(c, |corner| {
                corner.add_row(start, slice(values, n, "values")?, scale)
            })
        }
    })
}

/// A zeroed dense psi buffer of `dim` doubles, owned by the library, to be
/// filled by the oracle; valid until the oracle call returns. Calling it
/// again in the same call returns the same buffer with its contents. Returns
/// NULL for a NULL `c`.
///
/// # Safety
/// `c` is NULL or the corner of a max-oracle call in progress on this thread.
#[no_mangle]
pub unsafe extern "C" fn bmrm_corner_dense(c: *mut bmrm_corner) -> *mut f64 {
    let got = catch("bmrm_corner_dense", || {
        // SAFETY: forwarded from this function's contract.
        unsafe { bmrm_corner::with(c, |corner| Ok(corner.dense_mut().as_mut_ptr())) }
    });
    got.unwrap_or(std::ptr::null_mut())
}

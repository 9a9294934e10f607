//! The panic boundary and the thread-local last error.
//!
//! Every exported function runs its body through [`catch`] (or [`status`]):
//! a returned [`Error`] and a caught panic both become a status code and a
//! message stored for `bmrm_last_error()`; nothing unwinds into C.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;

use crate::error::{Error, Result};

use super::types::bmrm_status;

thread_local! {
    /// The message of this thread's last failed call ("" before any).
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Stores `"{function}: {error}"` as this thread's last error.
pub(crate) fn set_last_error(function: &str, error: &Error) {
    let text = format!("{function}: {error}").replace('\0', "\\0");
    let text = CString::new(text).unwrap_or_default();
    // At thread exit the slot may be gone; then there is nobody to tell.
    let _ = LAST_ERROR.try_with(|slot| *slot.borrow_mut() = text);
}

/// The last error of this thread, as a pointer that stays valid until the
/// next failed call on this thread.
pub(crate) fn last_error_ptr() -> *const c_char {
    static EMPTY: &[u8] = b"\0";
    LAST_ERROR
        .try_with(|slot| slot.borrow().as_ptr())
        .unwrap_or(EMPTY.as_ptr().cast())
}

thread_local! {
    /// How many exported calls this thread is inside (re-entrant calls nest).
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// How many exported calls are running on any thread: a panic on one of the
/// library's pool threads belongs to one of them.
static ACTIVE_CALLS: AtomicUsize = AtomicUsize::new(0);

/// Whether a panic on this thread happens inside the library's boundary: on
/// a thread inside an exported call, or on a rayon worker while a call runs.
fn panic_is_ours() -> bool {
    DEPTH.try_with(Cell::get).unwrap_or(0) > 0
        || (rayon::current_thread_index().is_some() && ACTIVE_CALLS.load(Ordering::Relaxed) > 0)
}

/// Wraps the process's panic hook so that a panic inside the boundary prints
/// nothing on the host's stderr (a MATLAB console, a C program's log): its
/// message reaches the caller through `bmrm_last_error()` instead. Panics
/// elsewhere still go to the previous hook.
fn wrap_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !panic_is_ours() {
            previous(info);
        }
    }));
}

/// Counts one exported call on this thread for as long as it lives.
///
/// The global count is touched only by calls that a panic could not
/// otherwise be traced to: not by a call nested in another on this thread,
/// nor by a call on one of the library's pool threads while a call is
/// running (an oracle's `bmrm_corner_add` calls, hundreds per oracle call on
/// every thread: an atomic add on one cache line shared by all threads cost
/// more than the oracle's own arithmetic). Those are covered by `DEPTH`.
struct InCall {
    counted: bool,
}

impl InCall {
    fn enter() -> Self {
        static HOOK: Once = Once::new();
        HOOK.call_once(wrap_panic_hook);
        // Counted only if a panic here would not already be the library's.
        let counted = !panic_is_ours();
        let _ = DEPTH.try_with(|d| d.set(d.get() + 1));
        if counted {
            ACTIVE_CALLS.fetch_add(1, Ordering::Relaxed);
        }
        InCall { counted }
    }
}

impl Drop for InCall {
    fn drop(&mut self) {
        let _ = DEPTH.try_with(|d| d.set(d.get().saturating_sub(1)));
        if self.counted {
            ACTIVE_CALLS.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// The text of a panic payload.
fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-text payload".to_string()
    }
}

/// Runs `body` inside the panic boundary. On an error or a panic stores the
/// message for `bmrm_last_error()` and returns `on_error` with the status.
pub(crate) fn catch<T>(
    function: &'static str,
    body: impl FnOnce() -> Result<T>,
) -> std::result::Result<T, bmrm_status> {
    let in_call = InCall::enter();
    let outcome = catch_unwind(AssertUnwindSafe(body));
    drop(in_call);
    let error = match outcome {
        Ok(Ok(value)) => return Ok(value),
        Ok(Err(e)) => e,
        Err(payload) => Error::internal(format!("panic: {}", panic_message(payload.as_ref()))),
    };
    set_last_error(function, &error);
    Err(bmrm_status::of(&error))
}

/// [`catch`] for a function whose only result is its status.
pub(crate) fn status(function: &'static str, body: impl FnOnce() -> Result<()>) -> bmrm_status {
    match catch(function, body) {
        Ok(()) => bmrm_status::BMRM_OK,
        Err(s) => s,
    }
}

/// `Err(NullArgument)` naming `what` when `ptr` is NULL.
pub(crate) fn non_null<T>(ptr: *const T, what: &str) -> Result<()> {
    if ptr.is_null() {
        Err(Error::null_argument(format!("{what} is NULL")))
    } else {
        Ok(())
    }
}

/// Borrows `len` items at `ptr` as a slice, checking for NULL (allowed only
/// when `len == 0`) and for a length too large for memory.
///
/// # Safety
/// `ptr` is NULL or valid for reading `len` items during the borrow.
pub(crate) unsafe fn slice<'a, T>(ptr: *const T, len: usize, what: &str) -> Result<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    non_null(ptr, what)?;
    if len > isize::MAX as usize / std::mem::size_of::<T>().max(1) {
        return Err(Error::invalid_argument(format!(
            "{what}: {len} items do not fit in memory"
        )));
    }
    // SAFETY: not NULL, `len` items readable by the caller's contract, and
    // the total size fits in isize (checked above).
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// Copies `len` items at `ptr` into a vector the library owns, as
/// [`slice`] checks them; the memory is reserved first, so a size the
/// process cannot hold is `OutOfMemory` naming `what` (never an abort), and
/// nothing is read then.
///
/// # Safety
/// As [`slice`].
pub(crate) unsafe fn copy<T: Copy>(ptr: *const T, len: usize, what: &str) -> Result<Vec<T>> {
    let mut out = reserve(len, what)?;
    // SAFETY: forwarded from this function's contract.
    out.extend_from_slice(unsafe { slice(ptr, len, what) }?);
    Ok(out)
}

/// An empty vector with room for `len` items, or `OutOfMemory` naming
/// `what`: for the copies whose size the caller chose.
pub(crate) fn reserve<T>(len: usize, what: &str) -> Result<Vec<T>> {
    let mut out = Vec::new();
    out.try_reserve_exact(len).map_err(|_| {
        Error::out_of_memory(format!(
            "{what}: cannot allocate room for {len} items of {} bytes",
            std::mem::size_of::<T>()
        ))
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::ffi::CStr;

    use super::*;

    fn last_error() -> String {
        // SAFETY: `last_error_ptr` returns a NUL-terminated string that stays
        // valid until the next failure on this thread; it is copied at once.
        unsafe { CStr::from_ptr(last_error_ptr()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn a_panic_becomes_internal_with_its_message() {
        assert_eq!(
            status("bmrm_test", || panic!("boom {}", 42)),
            bmrm_status::BMRM_ERROR_INTERNAL
        );
        assert_eq!(last_error(), "bmrm_test: internal error: panic: boom 42");
        assert_eq!(
            status("bmrm_test", || panic!("static text")),
            bmrm_status::BMRM_ERROR_INTERNAL
        );
        assert_eq!(
            last_error(),
            "bmrm_test: internal error: panic: static text"
        );
        let got: std::result::Result<u8, _> = catch("bmrm_test", || std::panic::panic_any(7_u32));
        assert_eq!(got, Err(bmrm_status::BMRM_ERROR_INTERNAL));
        assert!(last_error().contains("non-text payload"));
    }

    #[test]
    fn a_caught_panic_prints_nothing_but_others_still_reach_the_previous_hook() {
        thread_local! {
            static PRINTED: Cell<usize> = const { Cell::new(0) };
        }
        // The hook is process-wide: count only this thread's panics.
        let _ = status("bmrm_test", || Ok(())); // the library wraps its hook once
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PRINTED.with(|p| p.set(p.get() + 1));
            before(info);
        }));
        wrap_panic_hook();
        assert_eq!(
            status("bmrm_test", || panic!("quiet")),
            bmrm_status::BMRM_ERROR_INTERNAL
        );
        assert_eq!(
            PRINTED.with(Cell::get),
            0,
            "a caught panic reached the hook"
        );
        assert!(last_error().contains("quiet"));
        // A panic on a pool thread during a call is the library's too.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let printed_on_pool = || pool.install(|| PRINTED.with(Cell::get));
        let got = status("bmrm_test", || pool.install(|| panic!("in the pool")));
        assert_eq!(got, bmrm_status::BMRM_ERROR_INTERNAL);
        assert!(last_error().contains("in the pool"));
        // A call on a pool thread inside a call (an oracle's corner calls)
        // is not counted globally; a panic there after it is still quiet.
        let got = status("bmrm_test", || {
            pool.install(|| {
                assert_eq!(status("bmrm_inner", || Ok(())), bmrm_status::BMRM_OK);
                panic!("after a nested call")
            })
        });
        assert_eq!(got, bmrm_status::BMRM_ERROR_INTERNAL);
        assert!(last_error().contains("after a nested call"));
        assert_eq!(
            printed_on_pool(),
            0,
            "a pool thread's panic reached the hook"
        );
        // Outside the boundary the host's hook still sees it.
        let outside = std::panic::catch_unwind(|| panic!("not ours"));
        assert!(outside.is_err());
        assert_eq!(PRINTED.with(Cell::get), 1);
    }

    #[test]
    fn errors_map_through_status_code_and_successes_keep_the_message() {
        let cases = [
            (
                Error::null_argument("p"),
                bmrm_status::BMRM_ERROR_NULL_ARGUMENT,
            ),
            (
                Error::invalid_argument("x"),
                bmrm_status::BMRM_ERROR_INVALID_ARGUMENT,
            ),
            (
                Error::dimension_mismatch("x"),
                bmrm_status::BMRM_ERROR_DIMENSION_MISMATCH,
            ),
            (Error::no_oracle("x"), bmrm_status::BMRM_ERROR_NO_ORACLE),
            (
                Error::oracle_failed("x"),
                bmrm_status::BMRM_ERROR_ORACLE_FAILED,
            ),
            (Error::non_finite("x"), bmrm_status::BMRM_ERROR_NON_FINITE),
            (
                Error::out_of_memory("x"),
                bmrm_status::BMRM_ERROR_OUT_OF_MEMORY,
            ),
            (Error::internal("x"), bmrm_status::BMRM_ERROR_INTERNAL),
        ];
        for (e, want) in cases {
            let text = format!("f: {e}");
            assert_eq!(status("f", || Err(e)), want);
            assert_eq!(last_error(), text);
            assert_eq!(status("g", || Ok(())), bmrm_status::BMRM_OK);
            assert_eq!(last_error(), text, "a success changed the message");
        }
    }

    #[test]
    fn messages_are_per_thread_and_survive_nul_bytes() {
        let _ = status("here", || Err(Error::oracle("a\0b")));
        assert_eq!(last_error(), "here: oracle failed: a\\0b");
        let other = std::thread::spawn(last_error).join().unwrap();
        assert_eq!(other, "");
        assert!(non_null(std::ptr::null::<u8>(), "w").is_err());
        assert!(non_null(&0_u8 as *const u8, "w").is_ok());
    }
}

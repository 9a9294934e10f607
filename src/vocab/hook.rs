//! A hook called after every BCFW pass with the iterate the BCFW MATLAB codes
//! return (the averaged one under weighted averaging) and its dual terms, so
//! a front end can return `w` with the `ell` that belongs to it and log the
//! models of every pass without keeping them in the engine.

use std::fmt;
use std::ops::ControlFlow;
use std::sync::Arc;

/// The iterate after a pass: `w` (clipped to the box, if any), the dual's
/// loss term `ell = sum_i l_i` of the same point and its dual value.
pub struct IterateView<'a> {
    /// The pass in the run (1-based).
    pub pass: u64,
    /// The iterate.
    pub w: &'a [f64],
    /// The dual's loss term of the same point.
    pub ell: f64,
    /// The dual value of the same point (a lower bound on min F).
    pub dual: f64,
    /// The point is the weighted average of the iterates.
    pub averaged: bool,
}

type HookFn = dyn Fn(&IterateView<'_>) -> ControlFlow<()> + Send + Sync;

/// The hook; `Break` stops the run (exit `StoppedByUser`).
#[derive(Clone)]
pub struct IterateHook(pub Arc<HookFn>);

impl IterateHook {
    /// Wraps `f`.
    pub fn new(f: impl Fn(&IterateView<'_>) -> ControlFlow<()> + Send + Sync + 'static) -> Self {
        IterateHook(Arc::new(f))
    }
    /// Calls the hook.
    pub fn call(&self, view: &IterateView<'_>) -> ControlFlow<()> {
        (self.0)(view)
    }
}

impl fmt::Debug for IterateHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("IterateHook")
    }
}

/// Settings compare equal when they hold the same hook.
impl PartialEq for IterateHook {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

//! The words every solver and front end shares: the settings, the summary
//! and history rows a run reports, how it ended, and the progress observer.
//!
//! A leaf: it imports nothing of the crate but the error type, so the
//! oracle layer, the methods, the executor and the front ends can all use it
//! without importing one another.

mod hook;
mod info;
mod settings;

use std::ops::ControlFlow;

pub use hook::{IterateHook, IterateView};
pub use info::{Exit, Info, Iteration};
pub use settings::{
    Algorithm, Sampling, Settings, StepType, MAX_THREADS, MULTICLASS_BCFW_MAX_CONDITION,
    MULTICLASS_BCFW_MIN_EXAMPLES,
};

/// The progress observer: called after every iteration with the current
/// summary; `ControlFlow::Break(())` stops the run (exit `StoppedByUser`).
pub type Observer = Box<dyn FnMut(&Info) -> ControlFlow<()> + Send>;

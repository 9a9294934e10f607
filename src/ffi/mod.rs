//! The C ABI (docs/c-api.md): opaque handles, a panic boundary around
//! every exported function, callback adapters for the three oracle levels,
//! and plain `#[repr(C)]` settings, info and history rows.
//!
//! `include/bmrm.h` is generated from this module by cbindgen (see
//! `build.rs`); the doc comments here are the header's documentation.
//!
//! Rules every exported function follows:
//! - it runs inside a panic boundary: a caught panic returns
//!   `BMRM_ERROR_INTERNAL`, nothing unwinds into C and nothing aborts;
//! - every pointer argument is checked for NULL;
//! - out-parameters are written only on success;
//! - a failure stores a message, `"function: kind: what failed"`, for
//!   `bmrm_last_error()` on the calling thread;
//! - enum values received from C are read as integers, so an out-of-range
//!   value is `BMRM_ERROR_INVALID_ARGUMENT`, not undefined behaviour.
//!
//! `unsafe` code of the crate lives here only, each block with its
//! `// SAFETY:` argument.

#![allow(non_camel_case_types)]
#![deny(missing_docs)]

pub mod bcfw;
mod boundary;
pub mod callbacks;
pub mod corner;
pub mod engine;
pub mod graph;
pub mod models;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod problem;
pub mod solver;
pub mod types;

use std::ffi::c_char;

use crate::error::ErrorKind;

pub use bcfw::{
    bmrm_bcfw_block, bmrm_bcfw_info, bmrm_bcfw_pass, bmrm_breakpoint, bmrm_path,
    bmrm_path_breakpoint, bmrm_path_free, bmrm_path_len, bmrm_solver_bcfw_block,
    bmrm_solver_bcfw_info, bmrm_solver_bcfw_pass, bmrm_solver_bcfw_path, bmrm_solver_bcfw_set_dual,
    bmrm_solver_set_bounds,
};
pub use callbacks::{bmrm_max_oracle_fn, bmrm_partial_risk_fn, bmrm_risk_fn};
pub use corner::{
    bmrm_corner, bmrm_corner_add, bmrm_corner_add_many, bmrm_corner_add_row, bmrm_corner_dense,
    bmrm_corner_mark_inexact, bmrm_corner_set_label, bmrm_corner_set_loss,
};
pub use engine::{bmrm_engine, bmrm_graph_engine_from_name};
pub use graph::{
    bmrm_edge_features, bmrm_graph_data, bmrm_graph_data_default, bmrm_graph_decoder_fn,
    bmrm_graph_loss, bmrm_graph_predict, bmrm_grid, bmrm_node_features, bmrm_potentials,
    bmrm_problem_new_graph, bmrm_problem_new_graph_decoder,
};
pub use models::{
    bmrm_chain_predict, bmrm_multiclass_predict, bmrm_problem_dim, bmrm_problem_new_chain_dense,
    bmrm_problem_new_chain_sparse, bmrm_problem_new_multiclass, bmrm_problem_new_multiclass_csr,
};
#[cfg(feature = "mpi")]
pub use mpi::{bmrm_mpi_examples_of, bmrm_solver_new_mpi};
pub use problem::{
    bmrm_problem, bmrm_problem_free, bmrm_problem_new, bmrm_problem_set_max_oracle,
    bmrm_problem_set_partitioned_risk, bmrm_problem_set_risk,
};
pub use solver::{
    bmrm_settings_default, bmrm_solver, bmrm_solver_free, bmrm_solver_history,
    bmrm_solver_history_len, bmrm_solver_info, bmrm_solver_new, bmrm_solver_run,
    bmrm_solver_set_lambda, bmrm_solver_set_linear_constraints,
};
pub use types::{
    bmrm_algorithm, bmrm_bcfw_iterate_fn, bmrm_exit, bmrm_info, bmrm_iteration, bmrm_progress_fn,
    bmrm_sampling, bmrm_settings, bmrm_status, bmrm_step_type, RawAlgorithm, RawExit, RawSampling,
    RawStatus, RawStepType, BMRM_ABI_VERSION,
};

/// A static NUL-terminated string.
macro_rules! cstr {
    ($s:expr) => {
        concat!($s, "\0").as_ptr().cast::<c_char>()
    };
}

/// Runs `body` inside the panic boundary; "" if it fails (it cannot: these
/// functions only pick static strings, but every export has a boundary).
fn static_text(function: &'static str, body: impl FnOnce() -> *const c_char) -> *const c_char {
    boundary::catch(function, || Ok(body())).unwrap_or(cstr!(""))
}

/// The library's version, e.g. "0.1.0": a static string, never freed.
#[no_mangle]
pub extern "C" fn bmrm_version() -> *const c_char {
    static_text("bmrm_version", || cstr!(env!("CARGO_PKG_VERSION")))
}

/// The ABI version of the library loaded at run time; a program compiled
/// against this header should check it equals BMRM_ABI_VERSION.
#[no_mangle]
pub extern "C" fn bmrm_abi_version() -> u32 {
    boundary::catch("bmrm_abi_version", || Ok(BMRM_ABI_VERSION)).unwrap_or(0)
}

/// A short description of a status, e.g. "null argument": a static string,
/// never freed. An unknown value gives "unknown status".
#[no_mangle]
pub extern "C" fn bmrm_status_string(status: RawStatus) -> *const c_char {
    static_text("bmrm_status_string", || {
        match ErrorKind::from_code(status) {
            Some(kind) => kind.description().as_ptr(),
            None if status == 0 => cstr!("ok"),
            None => cstr!("unknown status"),
        }
    })
}

/// A short description of an exit reason, e.g. "converged (relative gap)":
/// a static string, never freed. An unknown value gives "unknown exit".
#[no_mangle]
pub extern "C" fn bmrm_exit_string(exit: RawExit) -> *const c_char {
    static_text("bmrm_exit_string", || match exit {
        0 => cstr!("not run"),
        1 => cstr!("converged (relative gap)"),
        2 => cstr!("converged (absolute gap)"),
        3 => cstr!("iteration limit"),
        4 => cstr!("time limit"),
        5 => cstr!("stopped by user"),
        _ => cstr!("unknown exit"),
    })
}

/// The name of an algorithm, e.g. "Prox-P-BMRM": a static string, never
/// freed. An unknown value gives "unknown algorithm".
#[no_mangle]
pub extern "C" fn bmrm_algorithm_name(algorithm: RawAlgorithm) -> *const c_char {
    static_text("bmrm_algorithm_name", || match algorithm {
        0 => cstr!("BMRM"),
        1 => cstr!("Prox-BMRM"),
        2 => cstr!("P-BMRM"),
        3 => cstr!("Prox-P-BMRM"),
        4 => cstr!("BCFW"),
        5 => cstr!("SGD"),
        6 => cstr!("cutting-plane"),
        _ => cstr!("unknown algorithm"),
    })
}

/// The message of this thread's last failed call, naming the function and
/// what failed (e.g. "bmrm_solver_run: oracle failed: max-oracle returned 3
/// (example 41) (part 2) at iteration 7"); "" if no call has failed on this
/// thread. Successful calls leave it unchanged. The string is owned by the
/// library and stays valid until the next failed call on this thread; copy
/// it to keep it. Never NULL.
#[no_mangle]
pub extern "C" fn bmrm_last_error() -> *const c_char {
    static_text("bmrm_last_error", boundary::last_error_ptr)
}

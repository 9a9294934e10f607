//! # bmrm
//!
//! Regularised risk minimisation with bundle methods — BMRM, Prox-BMRM,
//! P-BMRM and Prox-P-BMRM — for structured-output SVMs and any convex risk
//! given as a callback. The objective is
//!
//! ```text
//! F(w) = lambda/2 ||w||^2 + R(w)
//! ```
//!
//! with `R` given at one of three oracle levels ([`oracle`]): a full risk, a
//! partitioned risk `R = sum_p R_p`, or an example max-oracle whose risk is the
//! mean structured hinge `R(w) = (1/m) sum_i max_y [L_i(y) - <w, psi_i(y)>]`.
//! Every solver returns the best `w` it has seen, `F(w)`, and a lower bound on
//! `min F` that is valid at every iteration: the gap between them is a
//! certificate of optimality.
//!
//! ```
//! use bmrm::{Algorithm, Problem, Settings, Solver};
//! use bmrm::oracle::FullRisk;
//!
//! /// R(w) = sum_j |w_j - c_j|: the optimum of F is clip(c, -1/lambda, 1/lambda).
//! struct L1 { c: Vec<f64> }
//! impl FullRisk for L1 {
//!     fn dim(&self) -> usize { self.c.len() }
//!     fn risk(&self, w: &[f64], g: &mut [f64]) -> bmrm::Result<f64> {
//!         let mut r = 0.0;
//!         for j in 0..w.len() {
//!             let d = w[j] - self.c[j];
//!             r += d.abs();
//!             g[j] = d.signum();
//!         }
//!         Ok(r)
//!     }
//! }
//!
//! let problem = Problem::from_risk(L1 { c: vec![0.5, -3.0, 2.0] });
//! let mut settings = Settings::new(Algorithm::Bmrm, 1.0);
//! settings.tol_abs = 1e-9;
//! let mut solver = Solver::new(problem, settings)?;
//! let mut w = vec![0.0; 3];
//! let info = solver.run(&mut w)?;
//! assert!(info.gap <= 1e-9);
//! assert!((w[0] - 0.5).abs() < 1e-6 && (w[1] + 1.0).abs() < 1e-6 && (w[2] - 1.0).abs() < 1e-6);
//! # Ok::<(), bmrm::Error>(())
//! ```

#![deny(missing_docs)]
#![deny(unsafe_code)]

// Internals: the BCFW state, the bundle, the QP, the dense kernels, the
// executor and the methods are reached through `Solver`; what users name is
// re-exported below.
pub(crate) mod bcfw;
pub(crate) mod bundle;
pub(crate) mod exec;
pub mod linalg;
pub(crate) mod methods;
pub(crate) mod qp;
pub(crate) mod rounding;

pub mod data;
#[cfg(feature = "mpi")]
pub mod distributed;
mod error;
// The C ABI and the SIMD kernels of `linalg` (which allow it per block)
// are the only places with `unsafe`, each block with a `// SAFETY:` comment.
#[allow(unsafe_code)]
pub mod ffi;
pub mod models;
pub mod oracle;
#[cfg(feature = "cli")]
pub mod plot;
pub mod solver;
pub mod vocab;

pub use bcfw::{BcfwStats, BlockDual, Breakpoint, CornerDual};
pub use error::{Error, ErrorKind, Result};
pub use oracle::{Bounds, CornerScratch, PassItem, SparseVec};

pub use oracle::{Corner, FullRisk, MaxOracle, PartitionedRisk, Problem};
pub use solver::Solver;
pub use vocab::{
    Algorithm, Exit, Info, IterateHook, IterateView, Iteration, Sampling, Settings, StepType,
    MULTICLASS_BCFW_MAX_CONDITION, MULTICLASS_BCFW_MIN_EXAMPLES,
};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

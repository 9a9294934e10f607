//! The multi-simplex QP: the dual of the bundle methods' reduced problem.
//!
//! ```text
//! max_beta  D(beta) = -1/(2 mu) beta^T H beta + f^T beta
//! s.t.      beta >= 0,  sum_{i : part[i] = p} beta_i = 1  for every part p
//! ```
//!
//! `H` (the Gram matrix of the plane vectors) is seen only through its
//! columns, so the caller keeps it however it likes.

/// Read access to a symmetric positive semidefinite matrix by columns.
pub trait Gram {
    /// Number of rows = number of columns.
    fn size(&self) -> usize;
    /// Column `j` (length `size()`).
    fn column(&self, j: usize) -> &[f64];
}

/// Stopping rules of the QP solver.
#[derive(Debug, Clone, Copy)]
pub struct QpOptions {
    /// Stop when the duality gap of the QP (an upper bound on
    /// `max D - D(beta)`) is at most this.
    pub tol_gap: f64,
    /// Stop after this many coordinate updates (0 = no limit).
    pub max_updates: u64,
    /// Stop at this time (the run's time limit); `beta` stays feasible, so
    /// the bound it gives stays valid.
    pub deadline: Option<std::time::Instant>,
}

/// What a QP solve reached.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QpResult {
    /// `D(beta)` at the returned `beta`.
    pub value: f64,
    /// Upper bound on `max D - D(beta)`: sum over parts of
    /// `max_{i in p} grad_i - sum_{i in p} beta_i grad_i`, grad = f - H beta / mu.
    pub gap: f64,
    /// Updates made: pair (coordinate) updates, and Newton steps on the
    /// support counted as one each.
    pub updates: u64,
}

mod splx;
pub use splx::solve;

#[cfg(test)]
mod brute_force_tests;

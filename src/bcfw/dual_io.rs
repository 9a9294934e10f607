//! A block's dual state as plain data, to carry BCFW's state across solvers
//! (a warm start from a saved state, as gapBCFW's `cache` input does): the
//! corners other than the ground truth with their weights, and the block's
//! gap estimate. `w_i` and `l_i` are recomputed from the corners at the
//! solver's lambda, so an imported state is always a feasible dual point and
//! its dual value a valid lower bound.

use super::sparse::SparseVec;

/// One corner `(y, psi_i(y), L_i(y))` with its dual weight `alpha_i(y)`.
#[derive(Debug, Clone, PartialEq)]
pub struct CornerDual {
    /// The label id (the max-oracle's `bmrm_corner_set_label`).
    pub label: u64,
    /// `psi_i(y) = phi(x_i, y_i) - phi(x_i, y)`.
    pub psi: SparseVec,
    /// `L_i(y)`.
    pub loss: f64,
    /// The dual weight `alpha_i(y)`.
    pub alpha: f64,
}

/// Block i's dual: the ground truth holds `1 - sum alpha`.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockDual {
    /// The corners kept other than the ground truth.
    pub corners: Vec<CornerDual>,
    /// The last computed gap of the block (infinity: unknown).
    pub gap_estimate: f64,
}

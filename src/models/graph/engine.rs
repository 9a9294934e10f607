//! The inference engine: the one part of a graph model that is
//! combinatorial. It is given an example's [`Potentials`] and returns a
//! labelling; the model does the linear algebra around it (scores, loss
//! augmentation, psi).

use super::potentials::{GraphShape, Potentials};
use crate::error::Result;

/// Maximises `score(y) = sum_i unary_i(y_i) + sum_e pairwise_e(y_u, y_v)`
/// over labellings of one example's graph.
pub trait Engine: Send + Sync {
    /// A short name for messages ("tree max-sum", "graph cut").
    fn name(&self) -> &str;

    /// Whether the engine can handle the graph at all (a tree engine refuses
    /// a graph with a cycle, graph cut a node with more than two states).
    /// Called once per example when the model is built; the message names
    /// the node or edge (the caller adds the example).
    fn check_shape(&self, shape: &GraphShape) -> Result<()>;

    /// Writes a labelling into `labels` (one state per node) and returns
    /// whether it is known to maximise `score`: `true` for an exact engine on
    /// potentials it handles exactly, `false` for an approximation (then the
    /// run's gap is not certified). Ties go to the lowest labelling the
    /// engine meets first; the same potentials give the same labelling.
    fn maximize(&self, potentials: &Potentials, labels: &mut [u32]) -> Result<bool>;

    /// Whether `maximize` may run on several threads at once (a caller's
    /// decoder may say no; then the model's oracle is not thread-safe).
    fn thread_safe(&self) -> bool {
        true
    }
}

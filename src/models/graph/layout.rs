//! Where each weight of a graph model sits: the unary blocks of the node
//! types, then the pairwise blocks of the edge types.

use super::examples::{EdgeFeatures, GraphExamples, NodeFeatures};
use crate::error::{Error, Result};

/// The weight layout of a graph model.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    /// Node type `t`'s unary block starts at `unary_offset[t]` (one more
    /// entry than types).
    pub unary_offset: Vec<usize>,
    /// Weights per state row in a class-form unary block (`d + bias`), or
    /// the length of a per-state block (`d`).
    pub row_len: usize,
    /// Edge type `r`'s block starts at `pair_offset[r]`.
    pub pair_offset: Vec<usize>,
    /// The states of the first and second ends of edge type `r`'s edges
    /// (tables only).
    pub pair_states: Vec<[u32; 2]>,
    /// Weights per state pair of a table (the edge features, 1 when
    /// constant); for Potts and displacement blocks, the block's length.
    pub pair_width: usize,
    /// The dimension of `w`.
    pub dim: usize,
}

impl Layout {
    /// The layout of `ex`'s weights (validated already), with a bias feature
    /// on class-form node features when `bias`.
    pub(crate) fn new(ex: &GraphExamples, bias: bool) -> Result<Self> {
        let n = ex.states.len();
        let types = (0..n).map(|i| ex.node_type(i) + 1).max().unwrap_or(1);
        if bias
            && matches!(
                ex.node_features,
                NodeFeatures::PerState { .. } | NodeFeatures::PerStateSparse(_)
            )
        {
            return Err(Error::invalid_argument(
                "graph model: a bias feature is meaningless with per-state node features \
                 (it would add the same score to every state)",
            ));
        }
        let (row_len, per_state) = match &ex.node_features {
            NodeFeatures::Dense { d, .. } => (d + usize::from(bias), false),
            NodeFeatures::Sparse(r) => (r.num_cols() + usize::from(bias), false),
            NodeFeatures::PerState { d, .. } => (*d, true),
            NodeFeatures::PerStateSparse(r) => (r.num_cols(), true),
        };
        let mut type_states = vec![0u32; types];
        if !per_state {
            for node in 0..n {
                let t = ex.node_type(node);
                let s = ex.states[node];
                if type_states[t] == 0 {
                    type_states[t] = s;
                } else if type_states[t] != s {
                    let (i, local) = ex.locate_node(node);
                    return Err(Error::invalid_argument(format!(
                        "example {i}: node {local} of type {t} has {s} states, but other nodes of \
                         the type have {} (node types share a unary block of states x features)",
                        type_states[t]
                    )));
                }
            }
        }
        let mut unary_offset = vec![0usize];
        for &k in &type_states {
            let len = if per_state {
                row_len
            } else {
                k as usize * row_len
            };
            unary_offset.push(add(*unary_offset.last().unwrap_or(&0), len)?);
        }

        let num_edges = ex.edges.len();
        let edge_types = (0..num_edges)
            .map(|e| ex.edge_type(e) + 1)
            .max()
            .unwrap_or(0);
        // Potts and displacement blocks do not depend on the state counts.
        let (pair_width, fixed_block) = match &ex.edge_features {
            EdgeFeatures::Constant => (1, false),
            EdgeFeatures::Dense { f, .. } => (*f, false),
            EdgeFeatures::Potts { f, .. } => (*f, true),
            EdgeFeatures::Displacement { .. } => (4, true),
        };
        let mut pair_states = vec![[0u32; 2]; edge_types];
        for e in 0..num_edges {
            let (i, local) = ex.locate_edge(e);
            let base = ex.node_start[i];
            let [u, v] = ex.edges[e];
            let ends = [ex.states[base + u as usize], ex.states[base + v as usize]];
            let r = ex.edge_type(e);
            if fixed_block {
                continue;
            }
            if pair_states[r] == [0, 0] {
                pair_states[r] = ends;
            } else if pair_states[r] != ends {
                return Err(Error::invalid_argument(format!(
                    "example {i}: edge {local} of type {r} joins nodes with {} and {} states, but \
                     other edges of the type join {} and {} (an edge type shares one table)",
                    ends[0], ends[1], pair_states[r][0], pair_states[r][1]
                )));
            }
            if let EdgeFeatures::Dense {
                symmetric,
                antisymmetric,
                ..
            } = &ex.edge_features
            {
                if (!symmetric.is_empty() || !antisymmetric.is_empty()) && ends[0] != ends[1] {
                    return Err(Error::invalid_argument(format!(
                        "example {i}: edge {local} joins nodes with {} and {} states; symmetric and \
                         antisymmetric edge features need square tables",
                        ends[0], ends[1]
                    )));
                }
            }
        }
        let start = *unary_offset.last().unwrap_or(&0);
        let mut pair_offset = vec![start];
        for ends in &pair_states {
            let len = if fixed_block {
                pair_width
            } else {
                mul(mul(ends[0] as usize, ends[1] as usize)?, pair_width)?
            };
            pair_offset.push(add(*pair_offset.last().unwrap_or(&start), len)?);
        }
        let dim = *pair_offset.last().unwrap_or(&start);
        if dim == 0 {
            return Err(Error::invalid_argument(
                "graph model: the model has no weights",
            ));
        }
        Ok(Layout {
            unary_offset,
            row_len,
            pair_offset,
            pair_states,
            pair_width,
            dim,
        })
    }

    /// Where state `s`'s row of node type `t`'s class-form block starts.
    #[inline]
    pub(crate) fn unary_row(&self, t: usize, s: u32) -> usize {
        self.unary_offset[t] + s as usize * self.row_len
    }

    /// Where the weights of state pair `(a, b)` of edge type `r` start.
    #[inline]
    pub(crate) fn pair_entry(&self, r: usize, a: u32, b: u32) -> usize {
        let kb = self.pair_states[r][1] as usize;
        self.pair_offset[r] + (a as usize * kb + b as usize) * self.pair_width
    }
}

fn add(a: usize, b: usize) -> Result<usize> {
    a.checked_add(b)
        .ok_or_else(|| Error::invalid_argument("graph model: the number of weights overflows"))
}

fn mul(a: usize, b: usize) -> Result<usize> {
    a.checked_mul(b)
        .ok_or_else(|| Error::invalid_argument("graph model: the number of weights overflows"))
}

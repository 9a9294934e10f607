//! HorseSeg-like segmentation at the papers' size: superpixel graphs whose
//! nodes carry normalised histograms of visual words (hundreds of features,
//! a few dozen non-zeros, as CSR rows) and whose Potts edges carry a
//! constant and the histograms' similarity; the loss is the class-weighted
//! Hamming loss (each class weighted by the inverse of its frequency, so
//! the rarer foreground counts as much as the background, HorseSeg's
//! choice).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::{Error, Result};
use crate::models::graph::examples::{EdgeFeatures, GraphExamples, GraphLoss, NodeFeatures};
use crate::models::SparseRows;

/// The shape of the generated segmentation problem.
#[derive(Debug, Clone, PartialEq)]
pub struct SuperpixelConfig {
    /// Superpixels per side of the jittered lattice.
    pub side: u32,
    /// Visual words: the histogram's length.
    pub words: usize,
    /// Pixels (word draws) per superpixel.
    pub pixels: usize,
    /// The share of a superpixel's pixels drawn from its class's words (the
    /// rest from words common to both classes).
    pub purity: f64,
}

impl Default for SuperpixelConfig {
    /// 12 x 12 superpixels, 300 words, 40 pixels each, purity 0.35.
    fn default() -> Self {
        SuperpixelConfig {
            side: 12,
            words: 300,
            pixels: 40,
            purity: 0.35,
        }
    }
}

/// `m` HorseSeg-like images (see the module documentation): foreground
/// inside a random ellipse, a loopy planar graph (4-neighbours, some
/// dropped, some diagonals), features `words` plus a constant 1 (the
/// class-form unary block of each state then has its bias), Potts features
/// `(1, similarity)` non-negative (graph cut exact under positivity), and
/// the class weights `total / (2 count_c)` of the generated labels,
/// normalised by the image's node count.
///
/// Errors: [`Error::invalid_argument`] for `m`, `side`, `words` or
/// `pixels` 0, or `purity` outside `[0, 1]`.
pub fn horseseg(m: usize, config: &SuperpixelConfig, seed: u64) -> Result<GraphExamples> {
    let c = config;
    if m == 0 || c.side == 0 || c.words < 2 || c.pixels == 0 || !(0.0..=1.0).contains(&c.purity) {
        return Err(Error::invalid_argument(format!(
            "horseseg: m, side and pixels must be at least 1, words at least 2 and purity in \
             [0, 1] (m = {m}, config {c:?})"
        )));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // Each class favours its own words: a third of the vocabulary each.
    let third = c.words / 3;
    let class_words = [0..third, third..2 * third];
    let n = (c.side * c.side) as usize;
    let d = c.words + 1;
    let mut ex = GraphExamples {
        node_start: vec![0],
        states: Vec::with_capacity(m * n),
        labels: Vec::with_capacity(m * n),
        node_types: vec![],
        node_features: NodeFeatures::Dense { values: vec![], d },
        edge_start: vec![0],
        edges: vec![],
        edge_types: vec![],
        edge_features: EdgeFeatures::Constant,
        loss: GraphLoss::Table(vec![]),
    };
    let (mut indptr, mut indices, mut values) = (vec![0usize], Vec::new(), Vec::new());
    let mut edge_values = Vec::new();
    let mut hist = vec![0u32; c.words];
    for _ in 0..m {
        let centre = [rng.gen_range(0.3..0.7), rng.gen_range(0.3..0.7)];
        let radii = [rng.gen_range(0.12..0.3), rng.gen_range(0.12..0.3)];
        // The image's own mix: how pure its superpixels are.
        let purity = c.purity * rng.gen_range(0.5..1.5);
        let first_row = indptr.len() - 1;
        for k in 0..n {
            let (x, y) = ((k as u32 % c.side) as f64, (k as u32 / c.side) as f64);
            let p = [
                (x + rng.gen_range(-0.3..0.3)) / f64::from(c.side),
                (y + rng.gen_range(-0.3..0.3)) / f64::from(c.side),
            ];
            let inside = ((p[0] - centre[0]) / radii[0]).powi(2)
                + ((p[1] - centre[1]) / radii[1]).powi(2)
                <= 1.0;
            ex.states.push(2);
            ex.labels.push(u32::from(inside));
            hist.iter_mut().for_each(|h| *h = 0);
            let own = &class_words[usize::from(inside)];
            for _ in 0..c.pixels {
                let word = if rng.gen_bool(purity.min(1.0)) {
                    rng.gen_range(own.clone())
                } else {
                    rng.gen_range(0..c.words)
                };
                hist[word] += 1;
            }
            for (j, &h) in hist.iter().enumerate() {
                if h > 0 {
                    indices.push(j as u32);
                    values.push(h as f32 / c.pixels as f32);
                }
            }
            indices.push(c.words as u32);
            values.push(1.0);
            indptr.push(indices.len());
        }
        // The histograms' similarity: the histogram intersection.
        let similarity = |u: usize, v: usize| -> f32 {
            let row = |r: usize| {
                let (a, b) = (indptr[first_row + r], indptr[first_row + r + 1] - 1);
                (&indices[a..b], &values[a..b])
            };
            let ((iu, vu), (iv, vv)) = (row(u), row(v));
            let mut s = 0.0f32;
            for (j, x) in iu.iter().zip(vu) {
                if let Some(k) = iv.iter().position(|t| t == j) {
                    s += x.min(vv[k]);
                }
            }
            s
        };
        for k in 0..n {
            let (x, y) = (k as u32 % c.side, k as u32 / c.side);
            let mut add = |u: usize, v: usize| {
                ex.edges.push([u as u32, v as u32]);
                edge_values.push(1.0);
                edge_values.push(similarity(u, v));
            };
            if x + 1 < c.side && rng.gen_bool(0.9) {
                add(k, k + 1);
            }
            if y + 1 < c.side && rng.gen_bool(0.9) {
                add(k, k + c.side as usize);
            }
            if x + 1 < c.side && y + 1 < c.side && rng.gen_bool(0.2) {
                add(k, k + c.side as usize + 1);
            }
        }
        ex.node_start.push(ex.states.len());
        ex.edge_start.push(ex.edges.len());
    }
    let foreground = ex.labels.iter().filter(|&&y| y == 1).count().max(1);
    let background = (ex.labels.len() - foreground).max(1);
    let total = ex.labels.len() as f64;
    ex.loss = GraphLoss::Hamming {
        class_weight: vec![
            total / (2.0 * background as f64),
            total / (2.0 * foreground as f64),
        ],
        normalise: true,
    };
    ex.node_features = NodeFeatures::Sparse(SparseRows::new(indptr, indices, values, d)?);
    ex.edge_features = EdgeFeatures::Potts {
        values: edge_values,
        f: 2,
    };
    ex.validate()?;
    Ok(ex)
}

//! Seeded generators of the papers' graph problems at a scale this machine
//! trains in seconds: facial landmarks and body pose (trees of parts on
//! grids of candidate positions, displacement edges) and HorseSeg-like
//! binary segmentation of superpixel graphs (Potts edges). The same seed
//! gives the same data on every platform.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::examples::{EdgeFeatures, GraphExamples, GraphLoss, NodeFeatures};
use super::potentials::Grid;

mod lbp;
mod superpixels;

pub use lbp::{LandmarkConfig, LbpLandmarks};
pub use superpixels::{horseseg, SuperpixelConfig};

/// A standard normal sample (Box-Muller; `rand_distr` is not a dependency).
fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u: f64 = rng.gen_range(f64::EPSILON..1.0);
    let v: f64 = rng.gen_range(0.0..1.0);
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// A tree of parts: the parent of each part but the root (part 0), and each
/// part's mean position.
struct PartTree {
    parent: Vec<u32>,
    mean: Vec<[f64; 2]>,
}

impl PartTree {
    /// Ends an example whose parts' nodes are pushed: one edge per part
    /// but the root, from its parent (edge type `p - 1`).
    fn close_example(&self, ex: &mut GraphExamples) {
        for p in 1..self.parent.len() {
            ex.edges.push([self.parent[p], p as u32]);
            ex.edge_types.push((p - 1) as u32);
        }
        ex.node_start.push(ex.states.len());
        ex.edge_start.push(ex.edges.len());
    }

    /// The parts parents first, the order in which each part is placed
    /// relative to its parent's position: at every step the lowest-numbered
    /// part whose parent is placed (index order when that is valid).
    fn placement_order(&self) -> Vec<usize> {
        let parts = self.parent.len();
        let mut placed = vec![false; parts];
        let mut order = Vec::with_capacity(parts);
        while order.len() < parts {
            let next = (0..parts)
                .find(|&p| !placed[p] && (p == 0 || placed[self.parent[p] as usize]))
                .expect("the parents form a tree rooted at part 0");
            placed[next] = true;
            order.push(next);
        }
        order
    }
}

/// An example's shape: a global shift, then each part (parents first,
/// `order`) displaced from its parent by the mean offset plus noise of
/// deviation `jitter`, so the edges carry the information the displacement
/// weights learn. The shift and each part's (rounded) position.
fn place_parts(
    tree: &PartTree,
    order: &[usize],
    jitter: f64,
    rng: &mut ChaCha8Rng,
) -> ([f64; 2], Vec<[i32; 2]>) {
    let parts = tree.mean.len();
    let shift = [normal(rng) * 2.0, normal(rng) * 2.0];
    let mut pos = vec![[0i32; 2]; parts];
    let mut real = vec![[0f64; 2]; parts];
    for &p in order {
        let base = if p == 0 {
            [tree.mean[0][0] + shift[0], tree.mean[0][1] + shift[1]]
        } else {
            let q = tree.parent[p] as usize;
            [
                real[q][0] + tree.mean[p][0] - tree.mean[q][0],
                real[q][1] + tree.mean[p][1] - tree.mean[q][1],
            ]
        };
        real[p] = [
            base[0] + normal(rng) * jitter,
            base[1] + normal(rng) * jitter,
        ];
        pos[p] = [real[p][0].round() as i32, real[p][1].round() as i32];
    }
    (shift, pos)
}

/// Part `p`'s `side x side` search window, centred on the mean shape
/// (shifted by a noisy detector's estimate), not on the truth `at`, but
/// moved to hold it; and the truth's state in it.
fn window(
    tree: &PartTree,
    p: usize,
    shift: [f64; 2],
    at: [i32; 2],
    side: u32,
    rng: &mut ChaCha8Rng,
) -> (Grid, u32) {
    let half = (side / 2) as i32;
    let centre = [
        (tree.mean[p][0] + shift[0] + normal(rng)).round() as i32,
        (tree.mean[p][1] + shift[1] + normal(rng)).round() as i32,
    ];
    let mut g = Grid {
        origin: [centre[0] - half, centre[1] - half],
        width: side,
        height: side,
    };
    for (origin, &a) in g.origin.iter_mut().zip(&at) {
        if a < *origin {
            *origin = a;
        } else if a > *origin + side as i32 - 1 {
            *origin = a - side as i32 + 1;
        }
    }
    let truth = ((at[1] - g.origin[1]) as u32) * side + (at[0] - g.origin[0]) as u32;
    (g, truth)
}

/// Parts on trees, each choosing a position in a `side x side` window
/// around its position in the example's (jittered) mean shape; `d`
/// appearance features per candidate position, peaked at the true position.
fn parts_on_grids(
    tree: &PartTree,
    m: usize,
    side: u32,
    d: usize,
    jitter: f64,
    loss_by_distance: bool,
    seed: u64,
) -> GraphExamples {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let parts = tree.mean.len();
    let states = side * side;
    // One template per part: what its appearance features look like at the
    // true position.
    let templates: Vec<Vec<f64>> = (0..parts)
        .map(|_| (0..d).map(|_| normal(&mut rng)).collect())
        .collect();
    let mut ex = GraphExamples {
        node_start: vec![0],
        states: vec![],
        labels: vec![],
        node_types: vec![],
        node_features: NodeFeatures::PerState { values: vec![], d },
        edge_start: vec![0],
        edges: vec![],
        edge_types: vec![],
        edge_features: EdgeFeatures::Displacement { grids: vec![] },
        loss: GraphLoss::Table(vec![]),
    };
    let mut values = Vec::with_capacity(m * parts * states as usize * d);
    let mut grids = Vec::new();
    let mut table = Vec::new();
    let order = tree.placement_order();
    for _ in 0..m {
        let (shift, pos) = place_parts(tree, &order, jitter, &mut rng);
        for p in 0..parts {
            let (g, truth) = window(tree, p, shift, pos[p], side, &mut rng);
            for s in 0..states {
                let q = g.position(s);
                let (dx, dy) = (
                    (q[0] - i64::from(pos[p][0])) as f64,
                    (q[1] - i64::from(pos[p][1])) as f64,
                );
                let dist2 = dx * dx + dy * dy;
                let peak = (-dist2 / 2.0).exp();
                for t in &templates[p] {
                    values.push((t * peak * 1.5 + normal(&mut rng) * 0.6) as f32);
                }
                table.push(if s == truth {
                    0.0
                } else if loss_by_distance {
                    // Normalised mean distance: the landmark papers' loss.
                    dist2.sqrt() / (parts as f64 * side as f64)
                } else {
                    1.0 / parts as f64
                });
            }
            ex.states.push(states);
            ex.labels.push(truth);
            ex.node_types.push(p as u32);
            grids.push(g);
        }
        tree.close_example(&mut ex);
    }
    ex.node_features = NodeFeatures::PerState { values, d };
    ex.edge_features = EdgeFeatures::Displacement { grids };
    ex.loss = GraphLoss::Table(table);
    ex
}

/// The facial-landmark problem of the Prox-BMRM report (a flandmark-like
/// detector): 8 landmarks on a tree (the face centre, the canthi, the
/// mouth corners, the nose tip), each choosing one of `side x side`
/// candidate positions scored by `d` appearance features, quadratic
/// displacement costs on the edges, and the normalised mean distance as
/// the loss. The report's detector has n = 232,476 weights (LBP features)
/// and m = 7,000 faces; this one has `8 d + 28` weights.
pub fn landmarks(m: usize, side: u32, d: usize, seed: u64) -> GraphExamples {
    parts_on_grids(&landmark_tree(), m, side, d, 1.5, true, seed)
}

/// The landmarks' tree of parts and mean shape.
fn landmark_tree() -> PartTree {
    PartTree {
        // 0 centre; 1, 2 left eye corners; 3, 4 right eye corners; 5, 6
        // mouth corners; 7 nose.
        parent: vec![0, 0, 1, 0, 3, 7, 7, 0],
        mean: vec![
            [50.0, 50.0],
            [34.0, 38.0],
            [42.0, 38.0],
            [58.0, 38.0],
            [66.0, 38.0],
            [40.0, 68.0],
            [60.0, 68.0],
            [50.0, 56.0],
        ],
    }
}

/// An LSP-like pose problem: 10 body parts on a tree (torso, head, upper
/// and lower arms, upper and lower legs), each choosing one of `side x
/// side` positions, displacement edges, and the fraction of misplaced parts
/// as the loss. The gap-BCFW paper's LSP model uses image features and 26
/// parts with mixtures; this one keeps the structure (a tree decoded by
/// distance transforms under positivity of the quadratic weights).
pub fn pose(m: usize, side: u32, d: usize, seed: u64) -> GraphExamples {
    parts_on_grids(&pose_tree(), m, side, d, 2.0, false, seed)
}

/// The pose problem's tree of parts and mean shape.
fn pose_tree() -> PartTree {
    PartTree {
        // 0 torso, 1 head, 2 / 3 upper arms, 4 / 5 lower arms, 6 / 7 upper
        // legs, 8 / 9 lower legs.
        parent: vec![0, 0, 0, 0, 2, 3, 0, 0, 6, 7],
        mean: vec![
            [50.0, 50.0],
            [50.0, 30.0],
            [38.0, 45.0],
            [62.0, 45.0],
            [32.0, 60.0],
            [68.0, 60.0],
            [44.0, 72.0],
            [56.0, 72.0],
            [43.0, 90.0],
            [57.0, 90.0],
        ],
    }
}

/// A HorseSeg-like binary segmentation problem: superpixels on a jittered
/// `side x side` lattice with 4-neighbour edges (some dropped, some
/// diagonals added: a loopy planar graph), labelled foreground inside a
/// random ellipse; `d` noisy appearance features per superpixel (one of
/// them a constant 1) and 2 non-negative Potts features per edge (a
/// constant and the appearance similarity). Loss: the fraction of
/// mislabelled superpixels. With the Potts weights kept non-negative every
/// iterate is submodular and graph cut is exact (the gap-BCFW paper's
/// positivity constraints).
pub fn segmentation(m: usize, side: u32, d: usize, seed: u64) -> GraphExamples {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let fg: Vec<f64> = (0..d).map(|_| normal(&mut rng)).collect();
    let bg: Vec<f64> = (0..d).map(|_| normal(&mut rng)).collect();
    let mut ex = GraphExamples {
        node_start: vec![0],
        states: vec![],
        labels: vec![],
        node_types: vec![],
        node_features: NodeFeatures::Dense { values: vec![], d },
        edge_start: vec![0],
        edges: vec![],
        edge_types: vec![],
        edge_features: EdgeFeatures::Potts {
            values: vec![],
            f: 2,
        },
        loss: GraphLoss::Hamming {
            class_weight: vec![],
            normalise: true,
        },
    };
    let (mut nodes, mut edge_values) = (Vec::new(), Vec::new());
    let n = (side * side) as usize;
    for _ in 0..m {
        let c = [rng.gen_range(0.3..0.7), rng.gen_range(0.3..0.7)];
        let r = [rng.gen_range(0.15..0.35), rng.gen_range(0.15..0.35)];
        let first = ex.states.len();
        for k in 0..n {
            let (x, y) = ((k as u32 % side) as f64, (k as u32 / side) as f64);
            let p = [
                (x + rng.gen_range(-0.3..0.3)) / f64::from(side),
                (y + rng.gen_range(-0.3..0.3)) / f64::from(side),
            ];
            let inside = ((p[0] - c[0]) / r[0]).powi(2) + ((p[1] - c[1]) / r[1]).powi(2) <= 1.0;
            ex.states.push(2);
            ex.labels.push(u32::from(inside));
            let mean = if inside { &fg } else { &bg };
            for (j, mu) in mean.iter().enumerate() {
                nodes.push(if j == 0 {
                    1.0
                } else {
                    (mu + normal(&mut rng) * 1.6) as f32
                });
            }
        }
        let mut add = |u: usize, v: usize, ex: &mut GraphExamples, nodes: &[f32]| {
            let row = |k: usize| &nodes[(first + k) * d..(first + k + 1) * d];
            let dist2: f64 = row(u)
                .iter()
                .zip(row(v))
                .map(|(a, b)| f64::from(a - b).powi(2))
                .sum();
            ex.edges.push([u as u32, v as u32]);
            edge_values.push(1.0);
            edge_values.push((-dist2 / (2.0 * d as f64)).exp() as f32);
        };
        for k in 0..n {
            let (x, y) = (k as u32 % side, k as u32 / side);
            if x + 1 < side && rng.gen_bool(0.9) {
                add(k, k + 1, &mut ex, &nodes);
            }
            if y + 1 < side && rng.gen_bool(0.9) {
                add(k, k + side as usize, &mut ex, &nodes);
            }
            if x + 1 < side && y + 1 < side && rng.gen_bool(0.2) {
                add(k, k + side as usize + 1, &mut ex, &nodes);
            }
        }
        ex.node_start.push(ex.states.len());
        ex.edge_start.push(ex.edges.len());
    }
    ex.node_features = NodeFeatures::Dense { values: nodes, d };
    ex.edge_features = EdgeFeatures::Potts {
        values: edge_values,
        f: 2,
    };
    ex
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every part's true position is its parent's plus the mean shape's
    /// offset, up to the jitter: a part placed before its parent would sit
    /// at the mean offset from the origin, tens of pixels off.
    #[test]
    fn every_part_lies_within_its_parents_displacement_range() {
        let cases = [
            (landmark_tree(), landmarks(300, 9, 2, 5), 1.5),
            (pose_tree(), pose(300, 9, 2, 6), 2.0),
        ];
        for (tree, ex, jitter) in cases {
            let EdgeFeatures::Displacement { grids } = &ex.edge_features else {
                panic!("displacement edges")
            };
            let parts = tree.parent.len();
            let mut worst = 0f64;
            for i in 0..ex.num_examples() {
                let first = ex.node_start[i];
                let at = |p: usize| grids[first + p].position(ex.labels[first + p]);
                for p in 1..parts {
                    let q = tree.parent[p] as usize;
                    let (child, parent) = (at(p), at(q));
                    for axis in 0..2 {
                        let seen = (child[axis] - parent[axis]) as f64;
                        let mean = tree.mean[p][axis] - tree.mean[q][axis];
                        worst = worst.max((seen - mean).abs());
                    }
                }
                // The windows (each holds its truth) stay where the mean
                // shape puts them, up to the shift (deviation 2), the
                // detector's noise (1) and the jitter along the tree.
                for p in 0..parts {
                    let g = &grids[first + p];
                    let half = f64::from(g.width / 2);
                    for axis in 0..2 {
                        let centre = f64::from(g.origin[axis]) + half;
                        let off = (centre - tree.mean[p][axis]).abs();
                        assert!(
                            off <= 20.0,
                            "example {i}: part {p}'s window is {off} px off"
                        );
                    }
                }
            }
            // The offset's noise is a difference of two rounded positions,
            // normal with deviation `jitter` per axis: 6 deviations and the
            // rounding over 2,000 draws.
            assert!(
                worst <= 6.0 * jitter + 1.0,
                "a part lies {worst} px from its parent's mean offset"
            );
        }
    }

    #[test]
    fn the_lbp_landmarks_have_the_reports_size_and_binary_sparse_descriptors() {
        assert_eq!(LandmarkConfig::papers().dim(), 232_476);
        let config = LandmarkConfig {
            side: 5,
            blocks: 30,
            bins: 8,
            signal: 0.5,
        };
        let gen = LbpLandmarks::new(config.clone(), 3).unwrap();
        let (train, test) = (gen.examples(20, 0).unwrap(), gen.examples(20, 1).unwrap());
        assert_ne!(train.labels, test.labels);
        assert_eq!(gen.examples(20, 0).unwrap().labels, train.labels);
        let NodeFeatures::PerStateSparse(rows) = &train.node_features else {
            panic!("sparse per-state features")
        };
        // One code per cell: `blocks` ones per position, each in its cell.
        assert_eq!(rows.num_rows(), 20 * 8 * 25);
        assert_eq!(rows.nnz(), rows.num_rows() * config.blocks);
        for r in 0..rows.num_rows() {
            let (idx, val) = rows.row(r);
            for (b, (&j, &v)) in idx.iter().zip(val).enumerate() {
                assert_eq!(j as usize / config.bins, b);
                assert_eq!(v, 1.0);
            }
        }
        let model = crate::models::graph::GraphModel::new(
            train,
            false,
            crate::models::graph::EngineKind::DistanceTransform.into(),
        )
        .unwrap();
        assert_eq!(crate::MaxOracle::dim(&model), config.dim());
        // The part's own codes mark the truth: the weights that count them
        // place parts better than the weights that count another part's.
        let counting = |shift: usize| {
            let mut w = vec![0.0; config.dim()];
            for p in 0..8 {
                for (b, &k) in gen.codes[(p + shift) % 8].iter().enumerate() {
                    w[p * config.blocks * config.bins + b * config.bins + k as usize] = 1.0;
                }
            }
            model.hamming_error(&w).unwrap()
        };
        let (own, other) = (counting(0), counting(1));
        assert!(
            own < 0.75 * other,
            "own codes {own}, another part's {other}"
        );
        let bad = LandmarkConfig {
            signal: 1.5,
            ..config
        };
        assert!(LbpLandmarks::new(bad, 1).is_err());
    }

    #[test]
    fn horseseg_weights_the_classes_by_inverse_frequency() {
        let config = SuperpixelConfig {
            side: 6,
            words: 30,
            pixels: 20,
            purity: 0.4,
        };
        let ex = horseseg(10, &config, 5).unwrap();
        let GraphLoss::Hamming { class_weight, .. } = &ex.loss else {
            panic!("Hamming loss")
        };
        // Each class's weight times its count is half the nodes.
        for (c, weight) in class_weight.iter().enumerate() {
            let count = ex.labels.iter().filter(|&&y| y == c as u32).count();
            assert!((weight * count as f64 - ex.labels.len() as f64 / 2.0).abs() < 1e-9);
        }
        let NodeFeatures::Sparse(rows) = &ex.node_features else {
            panic!("sparse histograms")
        };
        assert_eq!(rows.num_cols(), 31);
        for r in 0..rows.num_rows() {
            let (idx, val) = rows.row(r);
            // A normalised histogram and the constant.
            let mass: f32 = val[..val.len() - 1].iter().sum();
            assert!((mass - 1.0).abs() < 1e-5 && idx.last() == Some(&30));
        }
        assert!(horseseg(0, &config, 5).is_err());
    }

    #[test]
    fn the_generators_give_valid_seeded_problems() {
        let problems = [
            landmarks(5, 7, 4, 1),
            pose(5, 5, 3, 2),
            segmentation(5, 6, 4, 3),
        ];
        for ex in &problems {
            ex.validate().unwrap();
            assert_eq!(ex.num_examples(), 5);
        }
        assert_eq!(problems[0].states.len(), 5 * 8);
        assert_eq!(problems[1].states.len(), 5 * 10);
        assert_eq!(problems[2].states.len(), 5 * 36);
        // Same seed, same data; another seed, other data.
        let again = landmarks(5, 7, 4, 1);
        assert_eq!(again.labels, problems[0].labels);
        let other = landmarks(5, 7, 4, 9);
        assert_ne!(other.labels, problems[0].labels);
        // Segmentation: both classes occur.
        let fg = problems[2].labels.iter().filter(|&&y| y == 1).count();
        assert!(fg > 0 && fg < problems[2].labels.len());
    }
}

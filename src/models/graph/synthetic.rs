//! Seeded generators of the papers' graph problems at a scale this machine
//! trains in seconds: facial landmarks and body pose (trees of parts on
//! grids of candidate positions, displacement edges) and HorseSeg-like
//! binary segmentation of superpixel graphs (Potts edges). The same seed
//! gives the same data on every platform.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::examples::{EdgeFeatures, GraphExamples, GraphLoss, NodeFeatures};
use super::potentials::Grid;

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
    let half = (side / 2) as i32;
    for _ in 0..m {
        // The example's shape: a global shift, then each part displaced from
        // its parent by the mean offset plus noise, so the edges carry the
        // information the displacement weights learn.
        let shift = [normal(&mut rng) * 2.0, normal(&mut rng) * 2.0];
        let mut pos = vec![[0i32; 2]; parts];
        let mut real = vec![[0f64; 2]; parts];
        for p in 0..parts {
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
                base[0] + normal(&mut rng) * jitter,
                base[1] + normal(&mut rng) * jitter,
            ];
            pos[p] = [real[p][0].round() as i32, real[p][1].round() as i32];
        }
        for p in 0..parts {
            // The window is centred on the mean shape (shifted by a noisy
            // detector's estimate), not on the truth.
            let centre = [
                (tree.mean[p][0] + shift[0] + normal(&mut rng)).round() as i32,
                (tree.mean[p][1] + shift[1] + normal(&mut rng)).round() as i32,
            ];
            let mut g = Grid {
                origin: [centre[0] - half, centre[1] - half],
                width: side,
                height: side,
            };
            // Keep the truth inside the window.
            for (origin, &at) in g.origin.iter_mut().zip(&pos[p]) {
                if at < *origin {
                    *origin = at;
                } else if at > *origin + side as i32 - 1 {
                    *origin = at - side as i32 + 1;
                }
            }
            let truth =
                ((pos[p][1] - g.origin[1]) as u32) * side + (pos[p][0] - g.origin[0]) as u32;
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
        for p in 1..parts {
            ex.edges.push([tree.parent[p], p as u32]);
            ex.edge_types.push((p - 1) as u32);
        }
        ex.node_start.push(ex.states.len());
        ex.edge_start.push(ex.edges.len());
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
    let tree = PartTree {
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
    };
    parts_on_grids(&tree, m, side, d, 1.5, true, seed)
}

/// An LSP-like pose problem: 10 body parts on a tree (torso, head, upper
/// and lower arms, upper and lower legs), each choosing one of `side x
/// side` positions, displacement edges, and the fraction of misplaced parts
/// as the loss. The gap-BCFW paper's LSP model uses image features and 26
/// parts with mixtures; this one keeps the structure (a tree decoded by
/// distance transforms under positivity of the quadratic weights).
pub fn pose(m: usize, side: u32, d: usize, seed: u64) -> GraphExamples {
    let tree = PartTree {
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
    };
    parts_on_grids(&tree, m, side, d, 2.0, false, seed)
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

//! `GraphModel::with_allowed_states` against enumeration: on random small
//! graphs whose pairwise terms dwarf the unary ones, every exact engine's
//! answer is allowed and scores as high as the best allowed labelling
//! (found here by enumerating the labellings and scoring them with the
//! joint feature map written out densely), with and without the loss.

use bmrm::models::graph::{
    EdgeFeatures, EngineChoice, EngineKind, GraphExamples, GraphLoss, GraphModel, Grid,
    NodeFeatures,
};
use bmrm::ErrorKind;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const D: usize = 2;

/// One random example per call: `n` nodes of `k` states, a random tree
/// (plus an edge closing a cycle when `cycle`), Potts edges when `potts`.
struct Case {
    ex: GraphExamples,
    allowed: Vec<bool>,
    w: Vec<f64>,
}

fn case(rng: &mut ChaCha8Rng, k: u32, cycle: bool, potts: bool) -> Case {
    let n = rng.gen_range(2..=5u32);
    let mut edges = vec![];
    for v in 1..n {
        let u = rng.gen_range(0..v);
        edges.push(if rng.gen_bool(0.5) { [u, v] } else { [v, u] });
    }
    if cycle && n >= 3 {
        edges.push([0, n - 1]);
    }
    let labels: Vec<u32> = (0..n).map(|_| rng.gen_range(0..k)).collect();
    let mut allowed = vec![];
    for &y in &labels {
        for s in 0..k {
            allowed.push(s == y || rng.gen_bool(0.4));
        }
    }
    let feats: Vec<f32> = (0..n as usize * D)
        .map(|_| rng.gen_range(-2..=2) as f32 * 0.5)
        .collect();
    let edge_features = if potts {
        EdgeFeatures::Potts {
            values: (0..edges.len())
                .map(|_| rng.gen_range(0..=4) as f32)
                .collect(),
            f: 1,
        }
    } else {
        EdgeFeatures::Constant
    };
    let ex = GraphExamples {
        node_start: vec![0, n as usize],
        states: vec![k; n as usize],
        labels,
        node_types: vec![],
        node_features: NodeFeatures::Dense {
            values: feats,
            d: D,
        },
        edge_start: vec![0, edges.len()],
        edges,
        edge_types: vec![],
        edge_features,
        loss: GraphLoss::Hamming {
            class_weight: vec![],
            normalise: false,
        },
    };
    let pair_len = if potts { 1 } else { (k * k) as usize };
    let mut w: Vec<f64> = (0..k as usize * D)
        .map(|_| rng.gen_range(-1.0..1.0))
        .collect();
    for _ in 0..pair_len {
        // Pairwise weights 50 times the unary ones (Potts: >= 0, submodular).
        let v: f64 = rng.gen_range(-50.0..50.0);
        w.push(if potts { v.abs() } else { v });
    }
    Case { ex, allowed, w }
}

/// `<w, phi(x, y)>` (+ the Hamming loss when `augment`), from the layout.
fn score(c: &Case, k: u32, y: &[u32], augment: bool) -> f64 {
    let NodeFeatures::Dense { values, .. } = &c.ex.node_features else {
        unreachable!()
    };
    let mut s = 0.0;
    for (n, &yn) in y.iter().enumerate() {
        for j in 0..D {
            s += c.w[yn as usize * D + j] * f64::from(values[n * D + j]);
        }
        if augment && yn != c.ex.labels[n] {
            s += 1.0;
        }
    }
    let base = k as usize * D;
    for (e, &[u, v]) in c.ex.edges.iter().enumerate() {
        let (a, b) = (y[u as usize], y[v as usize]);
        s += match &c.ex.edge_features {
            EdgeFeatures::Potts { values, .. } => {
                if a == b {
                    0.0
                } else {
                    -c.w[base] * f64::from(values[e])
                }
            }
            _ => c.w[base + (a * k + b) as usize],
        };
    }
    s
}

/// The best score over the allowed labellings, by enumeration.
fn best_allowed(c: &Case, k: u32, augment: bool) -> f64 {
    let n = c.ex.states.len();
    let mut best = f64::NEG_INFINITY;
    let mut y = vec![0u32; n];
    'all: loop {
        if y.iter()
            .enumerate()
            .all(|(i, &s)| c.allowed[i * k as usize + s as usize])
        {
            best = best.max(score(c, k, &y, augment));
        }
        for slot in y.iter_mut() {
            *slot += 1;
            if *slot < k {
                continue 'all;
            }
            *slot = 0;
        }
        return best;
    }
}

fn check(engine: EngineKind, k: u32, cycle: bool, potts: bool, cases: usize, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for t in 0..cases {
        let c = case(&mut rng, k, cycle, potts);
        let model = GraphModel::new(c.ex.clone(), false, EngineChoice::Kind(engine))
            .and_then(|m| m.with_allowed_states(c.allowed.clone()))
            .unwrap_or_else(|e| panic!("{engine:?} case {t}: {e}"));
        for augment in [false, true] {
            let (y, exact) = if augment {
                model.loss_augmented(&c.w, 0).unwrap()
            } else {
                model.predict(&c.w, 0).unwrap()
            };
            assert!(exact, "{engine:?} case {t}");
            for (i, &s) in y.iter().enumerate() {
                assert!(
                    c.allowed[i * k as usize + s as usize],
                    "{engine:?} case {t}: node {i} in state {s}, not allowed"
                );
            }
            let (got, want) = (score(&c, k, &y, augment), best_allowed(&c, k, augment));
            assert!(
                (got - want).abs() <= 1e-9 * (1.0 + want.abs()),
                "{engine:?} case {t} (augment {augment}): {got} vs the best allowed {want}"
            );
        }
    }
}

#[test]
fn exhaustive_and_auto_on_graphs_with_cycles() {
    check(EngineKind::Exhaustive, 3, true, false, 300, 1);
    check(EngineKind::Auto, 3, true, false, 300, 2);
}

#[test]
fn tree_max_sum_on_trees() {
    check(EngineKind::TreeMaxSum, 4, false, false, 300, 3);
}

#[test]
fn graph_cut_on_binary_submodular_graphs() {
    check(EngineKind::GraphCut, 2, true, true, 300, 4);
}

#[test]
fn bad_masks_are_refused_naming_the_node() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let c = case(&mut rng, 3, false, false);
    let model = || GraphModel::new(c.ex.clone(), false, EngineChoice::Kind(EngineKind::Auto));
    let e = model()
        .unwrap()
        .with_allowed_states(vec![true; 2])
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::DimensionMismatch);
    assert!(e.message.contains("one per node state"), "{e}");

    let mut none = c.allowed.clone();
    none[3..6].iter_mut().for_each(|a| *a = false);
    let e = model().unwrap().with_allowed_states(none).unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    assert!(e.message.contains("node 1 has no allowed state"), "{e}");

    let mut truth = vec![true; c.allowed.len()];
    truth[c.ex.labels[0] as usize] = false;
    let e = model().unwrap().with_allowed_states(truth).unwrap_err();
    assert!(e.message.contains("node 0's true state"), "{e}");

    let mut ex = c.ex.clone();
    ex.node_features = NodeFeatures::PerState {
        values: vec![0.0; ex.states.iter().sum::<u32>() as usize],
        d: 1,
    };
    ex.edge_features = EdgeFeatures::Displacement {
        grids: vec![
            Grid {
                origin: [0, 0],
                width: 3,
                height: 1
            };
            ex.states.len()
        ],
    };
    let e = GraphModel::new(ex, false, EngineChoice::Kind(EngineKind::Auto))
        .unwrap()
        .with_allowed_states(c.allowed.clone())
        .unwrap_err();
    assert!(e.message.contains("displacement"), "{e}");
}

//! The graph model's table forms against the state-major model they
//! re-store: a lower-triangle `w` scores, decodes and gives the corner of
//! its expanded symmetric table, with psi folded onto the unordered pairs
//! (so `||w||^2` counts each pair once); a feature-major `w` is the
//! state-major one permuted, psi permuted alike.

use bmrm::models::graph::{
    EdgeFeatures, EngineChoice, EngineKind, GraphExamples, GraphLoss, GraphModel, NodeFeatures,
    TableForm,
};
use bmrm::{Algorithm, Corner, MaxOracle, Problem, Settings, Solver};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const K: u32 = 3;
const D: usize = 2;

/// `m` random graphs of 1..=5 nodes (a tree, sometimes a cycle), `K`
/// states, `D` node features; `f` dense edge features (constant when 0).
fn examples(rng: &mut ChaCha8Rng, m: usize, f: usize) -> GraphExamples {
    let (mut node_start, mut edge_start) = (vec![0], vec![0]);
    let (mut states, mut labels, mut edges) = (vec![], vec![], vec![]);
    for _ in 0..m {
        let n = rng.gen_range(1..=5u32);
        for _ in 0..n {
            states.push(K);
            labels.push(rng.gen_range(0..K));
        }
        for v in 1..n {
            let u = rng.gen_range(0..v);
            edges.push(if rng.gen_bool(0.5) { [u, v] } else { [v, u] });
        }
        if n >= 3 && rng.gen_bool(0.5) {
            edges.push([0, n - 1]);
        }
        node_start.push(states.len());
        edge_start.push(edges.len());
    }
    let quarter = |rng: &mut ChaCha8Rng| rng.gen_range(-8..=8) as f32 * 0.25;
    let node_values = (0..states.len() * D).map(|_| quarter(rng)).collect();
    let edge_features = if f == 0 {
        EdgeFeatures::Constant
    } else {
        EdgeFeatures::Dense {
            values: (0..edges.len() * f).map(|_| quarter(rng)).collect(),
            f,
            symmetric: vec![1],
            antisymmetric: vec![2],
        }
    };
    GraphExamples {
        node_start,
        states,
        labels,
        node_types: vec![],
        node_features: NodeFeatures::Dense {
            values: node_values,
            d: D,
        },
        edge_start,
        edges,
        edge_types: vec![],
        edge_features,
        loss: GraphLoss::Hamming {
            class_weight: vec![],
            normalise: false,
        },
    }
}

fn model(ex: &GraphExamples, form: TableForm) -> GraphModel {
    GraphModel::new(
        ex.clone(),
        false,
        EngineChoice::Kind(EngineKind::Exhaustive),
    )
    .unwrap()
    .with_table_form(form)
    .unwrap()
}

/// The lower triangle's index of the unordered pair `{a, b}`.
fn tri(a: usize, b: usize) -> usize {
    let (hi, lo) = (a.max(b), a.min(b));
    hi * (hi + 1) / 2 + lo
}

fn corner(m: &GraphModel, i: usize, w: &[f64]) -> (Vec<f64>, f64, u64) {
    let mut c = Corner::new(m.dim());
    m.max_oracle(i, w, &mut c).unwrap();
    assert!(c.is_exact());
    let mut psi = vec![0.0; m.dim()];
    c.add_to(1.0, &mut psi);
    (psi, c.loss(), c.label())
}

#[test]
fn lower_triangle_is_the_expanded_symmetric_table_with_psi_folded() {
    let mut rng = ChaCha8Rng::seed_from_u64(45);
    let k = K as usize;
    let unary = k * D;
    for _ in 0..20 {
        let ex = examples(&mut rng, 5, 0);
        let full = model(&ex, TableForm::StateMajor);
        let triangle = model(&ex, TableForm::LowerTriangle);
        assert_eq!(triangle.dim(), unary + k * (k + 1) / 2);
        assert_eq!(full.dim(), unary + k * k);
        assert_eq!(triangle.pairwise_offset(0), unary);
        for _ in 0..3 {
            let w: Vec<f64> = (0..triangle.dim())
                .map(|_| rng.gen_range(-8..=8) as f64 * 0.25)
                .collect();
            let mut expanded = w[..unary].to_vec();
            for a in 0..k {
                for b in 0..k {
                    expanded.push(w[unary + tri(a, b)]);
                }
            }
            for i in 0..triangle.num_examples() {
                assert_eq!(
                    triangle.predict(&w, i).unwrap(),
                    full.predict(&expanded, i).unwrap()
                );
                assert_eq!(
                    triangle.loss_augmented(&w, i).unwrap(),
                    full.loss_augmented(&expanded, i).unwrap()
                );
                let (psi_t, loss_t, label_t) = corner(&triangle, i, &w);
                let (psi_f, loss_f, label_f) = corner(&full, i, &expanded);
                assert_eq!((loss_t, label_t), (loss_f, label_f));
                assert_eq!(psi_t[..unary], psi_f[..unary]);
                // An edge in (a, b) counts once for the pair {a, b}.
                for a in 0..k {
                    for b in 0..=a {
                        let mut want = psi_f[unary + a * k + b];
                        if a != b {
                            want += psi_f[unary + b * k + a];
                        }
                        assert_eq!(psi_t[unary + tri(a, b)], want, "pair ({a}, {b})");
                    }
                }
            }
        }
    }
}

#[test]
fn feature_major_is_the_state_major_layout_permuted() {
    let mut rng = ChaCha8Rng::seed_from_u64(46);
    let (k, f) = (K as usize, 3);
    let unary = k * D;
    // Feature-major position of state-major entry (a, b, j).
    let moved = |a: usize, b: usize, j: usize| unary + j * k * k + a * k + b;
    for _ in 0..20 {
        let ex = examples(&mut rng, 5, f);
        let state_major = model(&ex, TableForm::StateMajor);
        let feature_major = model(&ex, TableForm::FeatureMajor);
        assert_eq!(feature_major.dim(), state_major.dim());
        let w: Vec<f64> = (0..state_major.dim())
            .map(|_| rng.gen_range(-8..=8) as f64 * 0.25)
            .collect();
        let mut permuted = w.clone();
        for a in 0..k {
            for b in 0..k {
                for j in 0..f {
                    permuted[moved(a, b, j)] = w[unary + (a * k + b) * f + j];
                }
            }
        }
        for i in 0..state_major.num_examples() {
            assert_eq!(
                feature_major.predict(&permuted, i).unwrap(),
                state_major.predict(&w, i).unwrap()
            );
            let (psi_p, loss_p, label_p) = corner(&feature_major, i, &permuted);
            let (psi_s, loss_s, label_s) = corner(&state_major, i, &w);
            assert_eq!((loss_p, label_p), (loss_s, label_s));
            assert_eq!(psi_p[..unary], psi_s[..unary]);
            for a in 0..k {
                for b in 0..k {
                    for j in 0..f {
                        let want = psi_s[unary + (a * k + b) * f + j];
                        assert!((psi_p[moved(a, b, j)] - want).abs() < 1e-12);
                    }
                }
            }
        }
    }
}

/// `lambda/2 ||w||^2 + R(w)`, the risk the mean hinge by the model's corners.
fn objective(m: &GraphModel, lambda: f64, w: &[f64]) -> f64 {
    let risk: f64 = (0..m.num_examples())
        .map(|i| {
            let (psi, loss, _) = corner(m, i, w);
            loss - psi.iter().zip(w).map(|(p, v)| p * v).sum::<f64>()
        })
        .sum::<f64>()
        / m.num_examples() as f64;
    0.5 * lambda * w.iter().map(|v| v * v).sum::<f64>() + risk
}

#[test]
fn the_forms_certify_different_optima_where_the_norms_differ() {
    // The same scores, but the full table regularises an off-diagonal pair
    // twice: its optimum, mapped onto the triangle, is not the triangle's
    // (whose certified bound it must respect).
    let mut rng = ChaCha8Rng::seed_from_u64(47);
    let ex = examples(&mut rng, 8, 0);
    let lambda = 0.05;
    let run = |m: &GraphModel| {
        let mut s = Settings::new(Algorithm::Bmrm, lambda);
        s.tol_abs = 1e-10;
        s.tol_rel = 0.0;
        let mut solver = Solver::new(Problem::from_max_oracle(m.clone()), s).unwrap();
        let mut w = vec![0.0; m.dim()];
        let info = solver.run(&mut w).unwrap();
        (w, info)
    };
    let (tm, fm) = (
        model(&ex, TableForm::LowerTriangle),
        model(&ex, TableForm::StateMajor),
    );
    let (wt, it) = run(&tm);
    let (wf, _) = run(&fm);
    assert!(it.lower_bound <= it.primal && it.primal - it.lower_bound <= 1e-9);
    let k = K as usize;
    let unary = k * D;
    let mut folded = wf[..unary].to_vec();
    for a in 0..k {
        for b in 0..=a {
            folded.push(wf[unary + a * k + b]);
        }
    }
    let f_folded = objective(&tm, lambda, &folded);
    assert!(f_folded >= it.lower_bound - 1e-12);
    assert!(f_folded > it.primal + 1e-6, "{f_folded} vs {}", it.primal);
    assert!((objective(&tm, lambda, &wt) - it.primal).abs() <= 1e-9);
}

#[test]
fn forms_the_edge_features_do_not_allow_are_errors() {
    let mut rng = ChaCha8Rng::seed_from_u64(48);
    let constant = examples(&mut rng, 3, 0);
    let dense = examples(&mut rng, 3, 3);
    let build = |ex: &GraphExamples, form| {
        GraphModel::new(
            ex.clone(),
            false,
            EngineChoice::Kind(EngineKind::Exhaustive),
        )
        .unwrap()
        .with_table_form(form)
    };
    let err = build(&constant, TableForm::FeatureMajor).unwrap_err();
    assert!(err.to_string().contains("dense edge features"), "{err}");
    let err = build(&dense, TableForm::LowerTriangle).unwrap_err();
    assert!(err.to_string().contains("constant edge features"), "{err}");
}

#[test]
fn edge_types_without_edges_keep_their_tables() {
    let mut rng = ChaCha8Rng::seed_from_u64(49);
    let mut ex = examples(&mut rng, 4, 0);
    let k = K as usize;
    let unary = k * D;
    // The same graphs without edges: no table unless the caller asks.
    ex.edges.clear();
    ex.edge_start.iter_mut().for_each(|e| *e = 0);
    let bare = GraphModel::new(
        ex.clone(),
        false,
        EngineChoice::Kind(EngineKind::Exhaustive),
    )
    .unwrap();
    assert_eq!(bare.dim(), unary);
    let build = |states: &[[u32; 2]], form| {
        GraphModel::new(
            ex.clone(),
            false,
            EngineChoice::Kind(EngineKind::Exhaustive),
        )
        .unwrap()
        .with_edge_type_states(states)
        .and_then(|m| m.with_table_form(form))
    };
    let full = build(&[[K, K]], TableForm::StateMajor).unwrap();
    let triangle = build(&[[K, K]], TableForm::LowerTriangle).unwrap();
    assert_eq!(full.dim(), unary + k * k);
    assert_eq!(triangle.dim(), unary + k * (k + 1) / 2);
    let w: Vec<f64> = (0..triangle.dim())
        .map(|_| rng.gen_range(-8..=8) as f64 * 0.25)
        .collect();
    for i in 0..bare.num_examples() {
        let (psi_t, loss_t, _) = corner(&triangle, i, &w);
        let (psi_b, loss_b, _) = corner(&bare, i, &w[..unary]);
        assert_eq!(loss_t, loss_b);
        assert_eq!(psi_t[..unary], psi_b[..]);
        assert!(psi_t[unary..].iter().all(|&v| v == 0.0));
    }
    // A type whose edges join other state counts is an error naming it.
    let with_edges = examples(&mut rng, 4, 0);
    let err = GraphModel::new(
        with_edges,
        false,
        EngineChoice::Kind(EngineKind::Exhaustive),
    )
    .unwrap()
    .with_edge_type_states(&[[2, 2]])
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("edge type 0 is given 2 x 2 states"),
        "{err}"
    );
}

#[test]
fn the_state_major_form_keeps_potts_blocks() {
    // Potts edges hold one weight per feature, not a table: asking for the
    // default form (as the Python binding always does) keeps that block.
    let mut rng = ChaCha8Rng::seed_from_u64(41);
    let mut ex = examples(&mut rng, 6, 0);
    let f = 2;
    ex.edge_features = EdgeFeatures::Potts {
        values: (0..ex.edges.len() * f).map(|e| (e % 3) as f32).collect(),
        f,
    };
    let plain = GraphModel::new(
        ex.clone(),
        false,
        EngineChoice::Kind(EngineKind::Exhaustive),
    )
    .unwrap();
    let dim = plain.dim();
    assert_eq!(dim, K as usize * D + f);
    let formed = model(&ex, TableForm::StateMajor);
    assert_eq!(formed.dim(), dim);
    assert_eq!(
        formed.positivity_coordinates(),
        plain.positivity_coordinates()
    );
    assert_eq!(plain.positivity_coordinates().len(), f);
}

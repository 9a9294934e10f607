//! The chain model against brute force: the loss-augmented Viterbi and the
//! plain prediction against enumeration of every label sequence on short
//! chains (dense and sparse features), psi and the loss entry by entry
//! against a naive phi(x, y_i) - phi(x, y^), label ids, validation, threads,
//! and solver runs whose certificates agree.

use bmrm::models::chain::sequence_id;
use bmrm::models::{Chain, ChainFeatures, SparseRows};
use bmrm::oracle::{Corner, MaxOracle};
use bmrm::{Algorithm, Error, Problem, Settings, Solver};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

/// psi of a corner as a dense vector.
fn dense_psi(c: &Corner) -> Vec<f64> {
    let mut v = vec![0.0; c.dim()];
    c.add_to(1.0, &mut v);
    v
}

/// The features of token `tok` as (feature, value) pairs, bias included.
fn token_features(model: &Chain, tok: usize) -> Vec<(usize, f64)> {
    let mut out: Vec<(usize, f64)> = match model.features() {
        ChainFeatures::Dense { values, d } => (0..*d)
            .map(|j| (j, f64::from(values[tok * d + j])))
            .collect(),
        ChainFeatures::Sparse(rows) => {
            let (idx, val) = rows.row(tok);
            idx.iter()
                .zip(val)
                .map(|(&j, &v)| (j as usize, f64::from(v)))
                .collect()
        }
    };
    if model.has_bias() {
        out.push((model.feature_dim(), 1.0));
    }
    out
}

/// phi(x_i, y) built naively from the documented layout.
fn phi(model: &Chain, i: usize, y: &[u32]) -> Vec<f64> {
    let mut v = vec![0.0; model.dim()];
    for (t, tok) in model.tokens(i).enumerate() {
        for (j, x) in token_features(model, tok) {
            v[model.emission_index(y[t] as usize, j)] += x;
        }
        if t > 0 {
            v[model.transition_index(y[t - 1] as usize, y[t] as usize)] += 1.0;
        }
    }
    v[model.start_index(y[0] as usize)] += 1.0;
    v[model.end_index(y[y.len() - 1] as usize)] += 1.0;
    v
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Every sequence of `len` labels in `0..k`.
fn all_sequences(k: usize, len: usize) -> Vec<Vec<u32>> {
    let mut out = vec![vec![]];
    for _ in 0..len {
        out = out
            .into_iter()
            .flat_map(|s| {
                (0..k as u32).map(move |y| {
                    let mut s = s.clone();
                    s.push(y);
                    s
                })
            })
            .collect();
    }
    out
}

fn hamming(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).filter(|(x, y)| x != y).count()
}

/// A random chain problem with sequences of lengths 1..=5 and 3 labels.
fn random_chain(rng: &mut ChaCha8Rng, sparse: bool, bias: bool) -> (Chain, Vec<f64>) {
    let k = 3;
    let d = 4;
    let lengths: Vec<usize> = (1..=5).chain(1..=5).collect();
    let tokens: usize = lengths.iter().sum();
    let labels: Vec<u32> = (0..tokens).map(|_| rng.gen_range(0..k as u32)).collect();
    let model = if sparse {
        let mut indptr = vec![0];
        let mut indices = Vec::new();
        let mut values = Vec::new();
        for _ in 0..tokens {
            for _ in 0..rng.gen_range(0..4) {
                indices.push(rng.gen_range(0..6u32)); // repeats allowed: they add up
                values.push(if rng.gen_bool(0.5) {
                    1.0
                } else {
                    rng.gen_range(-1.0..1.0f32)
                });
            }
            indptr.push(indices.len());
        }
        let rows = SparseRows::new(indptr, indices, values, 6).unwrap();
        Chain::sparse(rows, &lengths, labels, k, bias).unwrap()
    } else {
        let values: Vec<f32> = (0..tokens * d)
            .map(|_| {
                if rng.gen_bool(0.3) {
                    0.0
                } else {
                    rng.gen_range(-1.0..1.0f32)
                }
            })
            .collect();
        Chain::dense(values, d, &lengths, labels, k, bias).unwrap()
    };
    let w: Vec<f64> = (0..model.dim()).map(|_| rng.gen_range(-1.0..1.0)).collect();
    (model, w)
}

/// The number of psi entries the oracle should write for `yhat`: two per
/// feature of every wrong token, two per differing transition, start, end.
fn expected_entries(model: &Chain, i: usize, yhat: &[u32]) -> usize {
    let y = model.labels(i);
    let mut n = 0;
    for (t, tok) in model.tokens(i).enumerate() {
        if y[t] != yhat[t] {
            let nz = token_features(model, tok)
                .iter()
                .filter(|(_, x)| *x != 0.0)
                .count();
            n += 2 * nz;
        }
        if t > 0 && (y[t - 1], y[t]) != (yhat[t - 1], yhat[t]) {
            n += 2;
        }
    }
    n += 2 * usize::from(y[0] != yhat[0]);
    n += 2 * usize::from(y[y.len() - 1] != yhat[yhat.len() - 1]);
    n
}

#[test]
fn oracle_and_prediction_match_enumeration() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut checked = 0;
    let mut wrong_corners = 0;
    for trial in 0..40 {
        let sparse = trial % 2 == 1;
        let bias = trial % 4 < 2;
        let (model, w) = random_chain(&mut rng, sparse, bias);
        let k = model.num_labels();
        assert_eq!(
            model.dim(),
            k * (model.feature_dim() + usize::from(bias)) + k * k + 2 * k
        );
        let mut corner = Corner::new(model.dim());
        let mut pred = Vec::new();
        for i in 0..model.num_examples() {
            let y = model.labels(i).to_vec();
            let len = y.len();
            let seqs = all_sequences(k, len);
            let score = |s: &[u32]| dot(&w, &phi(&model, i, s));
            let aug: Vec<f64> = seqs
                .iter()
                .map(|s| score(s) + hamming(s, &y) as f64 / len as f64)
                .collect();
            let plain: Vec<f64> = seqs.iter().map(|s| score(s)).collect();
            let truth_score = score(&y);

            // Loss-augmented argmax.
            corner.clear();
            model.max_oracle(i, &w, &mut corner).unwrap();
            let best = aug.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let hinge = best - truth_score;
            assert!(
                (corner.hinge(&w) - hinge).abs() < 1e-9,
                "trial {trial} ex {i}: hinge {} vs {hinge}",
                corner.hinge(&w)
            );
            let mut sorted = aug.clone();
            sorted.sort_by(|a, b| b.partial_cmp(a).unwrap());
            let unique = sorted.len() == 1 || sorted[0] - sorted[1] > 1e-9;
            if unique {
                let winner = &seqs[aug.iter().position(|&a| a == best).unwrap()];
                let want_loss = hamming(winner, &y) as f64 / len as f64;
                assert_eq!(corner.loss(), want_loss, "trial {trial} ex {i}");
                assert_eq!(corner.label(), model.label_id(i, winner));
                let want_psi: Vec<f64> = phi(&model, i, &y)
                    .iter()
                    .zip(&phi(&model, i, winner))
                    .map(|(a, b)| a - b)
                    .collect();
                let got = dense_psi(&corner);
                for (j, (g, e)) in got.iter().zip(&want_psi).enumerate() {
                    assert!(
                        (g - e).abs() < 1e-12,
                        "trial {trial} ex {i} psi[{j}]: {g} vs {e}"
                    );
                }
                // Only what differs is reported.
                assert_eq!(
                    corner.sparse_entries().count(),
                    expected_entries(&model, i, winner),
                    "trial {trial} ex {i}"
                );
                assert!(corner.dense().is_none(), "psi is sparse");
                if want_loss > 0.0 {
                    wrong_corners += 1;
                }
                checked += 1;
            }

            // Plain prediction, alone and together with the oracle.
            let pbest = plain.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let p = model.predict(&w, i);
            assert!((score(&p) - pbest).abs() < 1e-9, "trial {trial} ex {i}");
            let mut c2 = Corner::new(model.dim());
            model
                .max_oracle_and_predict(i, &w, &mut c2, &mut pred)
                .unwrap();
            assert_eq!(pred, p);
            assert_eq!(c2.label(), corner.label());
            assert_eq!(dense_psi(&c2), dense_psi(&corner));
        }
    }
    assert!(checked > 300, "{checked}");
    assert!(wrong_corners > 100, "{wrong_corners}");
}

/// At w = 0 every wrong label scores 1/L and the truth 0: the oracle picks
/// the lowest wrong label everywhere (loss 1), the prediction all zeros, and
/// a w that makes the truth win by a margin gives the zero corner.
#[test]
fn ties_at_zero_and_the_zero_corner() {
    let x = vec![1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0];
    let model = Chain::dense(x, 2, &[3], vec![0, 2, 1], 3, false).unwrap();
    let w = vec![0.0; model.dim()];
    let mut c = Corner::new(model.dim());
    model.max_oracle(0, &w, &mut c).unwrap();
    assert_eq!(c.loss(), 1.0);
    assert_eq!(c.label(), model.label_id(0, &[1, 0, 0]));
    assert!((c.hinge(&w) - 1.0).abs() < 1e-15);
    assert_eq!(model.predict(&w, 0), vec![0, 0, 0]);

    // Transition weights 10 on 0 -> 2 and 2 -> 1, start 0, end 1: the truth
    // wins by far.
    let mut w = w;
    w[model.transition_index(0, 2)] = 10.0;
    w[model.transition_index(2, 1)] = 10.0;
    w[model.start_index(0)] = 10.0;
    w[model.end_index(1)] = 10.0;
    c.clear();
    model.max_oracle(0, &w, &mut c).unwrap();
    assert_eq!(c.loss(), 0.0);
    assert_eq!(c.sparse_entries().count(), 0);
    assert_eq!(c.label(), model.ground_truth_id(0));
    assert_eq!(model.predict(&w, 0), vec![0, 2, 1]);
    assert_eq!(model.hamming_error(&w), 0.0);
}

#[test]
fn label_ids() {
    // Exact packing: all 3^5 sequences of length 5 get distinct ids, and the
    // packing is sum_t y_t K^t.
    let mut ids: Vec<u64> = all_sequences(3, 5)
        .iter()
        .map(|s| sequence_id(3, s))
        .collect();
    assert_eq!(sequence_id(3, &[2, 1, 0, 0, 1]), 2 + 3 + 81);
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 243);
    // 26^13 < 2^64: packed; 26^14 > 2^64: hashed (and still distinct here).
    let long13 = vec![25u32; 13];
    assert_eq!(sequence_id(26, &long13) as u128, 26u128.pow(13) - 1);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut hashed: Vec<u64> = (0..2000)
        .map(|_| {
            let s: Vec<u32> = (0..30).map(|_| rng.gen_range(0..26)).collect();
            sequence_id(26, &s)
        })
        .collect();
    hashed.sort_unstable();
    hashed.dedup();
    assert_eq!(hashed.len(), 2000);
    assert_ne!(sequence_id(26, &[0; 14]), sequence_id(26, &[0; 15]));
}

#[test]
fn validation() {
    let ok = || vec![0.5f32; 6];
    let bad = |r: bmrm::Result<Chain>, want: &str| match r {
        Err(
            e @ (Error {
                kind: bmrm::ErrorKind::InvalidArgument,
                ..
            }
            | Error {
                kind: bmrm::ErrorKind::DimensionMismatch,
                ..
            }),
        ) => {
            assert!(e.to_string().contains(want), "{e} lacks {want}")
        }
        other => panic!("expected an error with {want}, got {other:?}"),
    };
    assert!(Chain::dense(ok(), 2, &[1, 2], vec![0, 1, 1], 2, true).is_ok());
    bad(
        Chain::dense(ok(), 2, &[], vec![], 2, true),
        "at least one sequence",
    );
    bad(
        Chain::dense(ok(), 2, &[3, 0], vec![0, 1, 1], 2, true),
        "sequence 1 has length 0",
    );
    bad(
        Chain::dense(ok(), 2, &[1, 2], vec![0, 1, 1], 1, true),
        "num_labels",
    );
    bad(
        Chain::dense(ok(), 2, &[1, 2], vec![0, 1, 2], 2, true),
        "label 2 of token 2 (sequence 1, position 1)",
    );
    bad(
        Chain::dense(ok(), 2, &[1, 1], vec![0, 1, 1], 2, true),
        "3 labels",
    );
    bad(
        Chain::dense(ok(), 3, &[1, 2], vec![0, 1, 1], 2, true),
        "needs 9",
    );
    bad(
        Chain::dense(ok(), 0, &[1, 2], vec![0, 1, 1], 2, true),
        "feature dimension",
    );
    let mut nan = ok();
    nan[3] = f32::NAN;
    bad(
        Chain::dense(nan, 2, &[1, 2], vec![0, 1, 1], 2, true),
        "feature 1 of token 1 is NaN",
    );
    let rows = SparseRows::indicators(vec![0, 1, 3], vec![0, 4, 1], 5).unwrap();
    bad(
        Chain::sparse(rows, &[3], vec![0, 1, 1], 2, true),
        "2 sparse feature rows",
    );
    assert!(SparseRows::indicators(vec![0, 1, 3], vec![0, 5, 1], 5)
        .unwrap_err()
        .to_string()
        .contains("index 5 of row 1"));
    assert!(SparseRows::new(vec![0, 2, 1], vec![0, 1], vec![1.0, 1.0], 5).is_err());
    assert!(SparseRows::new(vec![0, 1], vec![0], vec![f32::INFINITY], 5)
        .unwrap_err()
        .to_string()
        .contains("not finite"));

    let model = Chain::dense(ok(), 2, &[1, 2], vec![0, 1, 1], 2, true).unwrap();
    let mut c = Corner::new(model.dim());
    assert!(matches!(
        model.max_oracle(0, &[0.0; 3], &mut c),
        Err(Error {
            kind: bmrm::ErrorKind::DimensionMismatch,
            ..
        })
    ));
    assert!(matches!(
        model.max_oracle(2, &vec![0.0; model.dim()], &mut c),
        Err(Error {
            kind: bmrm::ErrorKind::InvalidArgument,
            ..
        })
    ));
    let w = vec![f64::NAN; model.dim()];
    assert!(matches!(
        model.max_oracle(0, &w, &mut c),
        Err(Error {
            kind: bmrm::ErrorKind::NonFinite,
            ..
        })
    ));
}

/// Dense and sparse storage of the same tokens are the same model (up to
/// where the emission weights sit).
#[test]
fn dense_and_sparse_storage_agree() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let (dense, _) = random_chain(&mut rng, false, true);
    let ChainFeatures::Dense { values, d } = dense.features() else {
        unreachable!()
    };
    let rows = SparseRows::from_dense(values, *d).unwrap();
    let lengths: Vec<usize> = (0..dense.num_examples())
        .map(|i| dense.tokens(i).len())
        .collect();
    let sparse = Chain::sparse(rows, &lengths, dense.all_labels().to_vec(), 3, true).unwrap();
    assert_eq!(sparse.dim(), dense.dim());
    // The same weights in each layout: map every dense index to the sparse one.
    let mut map = vec![usize::MAX; dense.dim()];
    for y in 0..3 {
        for j in 0..=*d {
            map[dense.emission_index(y, j)] = sparse.emission_index(y, j);
        }
    }
    for (j, slot) in map.iter_mut().enumerate().skip(3 * (d + 1)) {
        *slot = j;
    }
    for _ in 0..20 {
        let wd: Vec<f64> = (0..dense.dim()).map(|_| rng.gen_range(-1.0..1.0)).collect();
        let mut ws = vec![0.0; dense.dim()];
        for (j, &v) in wd.iter().enumerate() {
            ws[map[j]] = v;
        }
        for i in 0..dense.num_examples() {
            let (mut cd, mut cs) = (Corner::new(dense.dim()), Corner::new(dense.dim()));
            dense.max_oracle(i, &wd, &mut cd).unwrap();
            sparse.max_oracle(i, &ws, &mut cs).unwrap();
            assert_eq!(cd.label(), cs.label());
            assert_eq!(cd.loss(), cs.loss());
            assert!((cd.hinge(&wd) - cs.hinge(&ws)).abs() < 1e-12);
            let pd = dense_psi(&cd);
            let ps = dense_psi(&cs);
            for j in 0..dense.dim() {
                assert!((pd[j] - ps[map[j]]).abs() < 1e-12);
            }
            assert_eq!(dense.predict(&wd, i), sparse.predict(&ws, i));
        }
    }
}

/// Concurrent calls (rayon) give the corners of serial calls.
#[test]
fn thread_safe_oracle() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let (model, w) = random_chain(&mut rng, true, true);
    let serial: Vec<(u64, Vec<f64>)> = (0..model.num_examples())
        .map(|i| {
            let mut c = Corner::new(model.dim());
            model.max_oracle(i, &w, &mut c).unwrap();
            (c.label(), dense_psi(&c))
        })
        .collect();
    for _ in 0..20 {
        let par: Vec<(u64, Vec<f64>)> = (0..model.num_examples() * 10)
            .into_par_iter()
            .map(|n| {
                let i = n % model.num_examples();
                let mut c = Corner::new(model.dim());
                model.max_oracle(i, &w, &mut c).unwrap();
                (c.label(), dense_psi(&c))
            })
            .collect();
        for (n, got) in par.iter().enumerate() {
            assert_eq!(got, &serial[n % model.num_examples()]);
        }
    }
}

/// A small chain problem with learnable structure (labels follow a Markov
/// chain, features are the label's mean plus noise).
fn synthetic_chain(m: usize, sparse: bool, seed: u64) -> Chain {
    let (k, d) = (4usize, 6usize);
    let (values, lengths, labels) = bmrm::models::synthetic::markov_chain(m, k, d, seed);
    if sparse {
        let rows = SparseRows::from_dense(&values, d).unwrap();
        Chain::sparse(rows, &lengths, labels, k, true).unwrap()
    } else {
        Chain::dense(values, d, &lengths, labels, k, true).unwrap()
    }
}

/// BMRM and P-BMRM converge on the same chain problem to the same optimum:
/// every lower bound is below every primal, and the primals agree within the
/// gaps; the dense and sparse storages reach the same optimum.
#[test]
fn solvers_agree_on_a_chain_problem() {
    let lambda = 0.01;
    let mut runs = Vec::new();
    for (sparse, alg, parts) in [
        (false, Algorithm::Bmrm, 1),
        (false, Algorithm::PBmrm, 4),
        (false, Algorithm::ProxBmrm, 1),
        (true, Algorithm::Bmrm, 1),
        (true, Algorithm::ProxPBmrm, 4),
    ] {
        let model = synthetic_chain(60, sparse, 21);
        let mut s = Settings::new(alg, lambda);
        s.tol_rel = 1e-6;
        s.num_parts = parts;
        let mut solver = Solver::new(Problem::from_max_oracle(model.clone()), s).unwrap();
        let mut w = vec![0.0; solver.dim()];
        let info = solver.run(&mut w).unwrap();
        assert!(
            info.gap <= 1e-6 * info.primal.abs() + 1e-12,
            "{alg:?}: {info:?}"
        );
        let err = model.hamming_error(&w);
        println!(
            "{} sparse={sparse}: {} iterations, F = {:.10}, lower bound {:.10}, training error {err:.3}",
            alg.name(),
            info.iterations,
            info.primal,
            info.lower_bound
        );
        assert!(err < 0.2, "{err}");
        runs.push((info.primal, info.lower_bound));
    }
    let min_primal = runs.iter().map(|r| r.0).fold(f64::INFINITY, f64::min);
    let max_lower = runs.iter().map(|r| r.1).fold(f64::NEG_INFINITY, f64::max);
    assert!(
        max_lower <= min_primal + 1e-12,
        "{max_lower} > {min_primal}"
    );
    for (p, _) in &runs {
        assert!((p - min_primal) <= 2e-6 * min_primal, "{p} vs {min_primal}");
    }
}

/// A chain and the graph model of the same data: dense token features as
/// class-form node features, edges `(t, t + 1)` with a constant table as
/// the transition weights, normalised Hamming loss, tree max-sum. Both lay
/// out the emission and transition weights alike; the chain's start and
/// end biases follow (the graph has none).
fn chain_and_graph(
    rng: &mut ChaCha8Rng,
    dyadic: bool,
) -> (Chain, bmrm::models::graph::GraphModel, usize) {
    use bmrm::models::graph::{
        EdgeFeatures, EngineKind, GraphExamples, GraphLoss, GraphModel, NodeFeatures,
    };
    let k = rng.gen_range(2..11usize);
    let d = rng.gen_range(1..6usize);
    let bias = rng.gen_bool(0.5);
    let m = rng.gen_range(1..5usize);
    // Power-of-two lengths keep the loss augmentation 1 / L exact too, so
    // that ties are exact ties.
    // (the first of length 2 or more: the graph has an edge type).
    let lengths: Vec<usize> = (0..m)
        .map(|i| match dyadic {
            true => [1, 2, 4, 8][rng.gen_range(usize::from(i == 0)..4)],
            false => rng.gen_range(1 + usize::from(i == 0)..9),
        })
        .collect();
    let tokens: usize = lengths.iter().sum();
    let labels: Vec<u32> = (0..tokens).map(|_| rng.gen_range(0..k as u32)).collect();
    // Features on a grid of 1/64: psi's sums are exact in any order.
    let values: Vec<f32> = (0..tokens * d)
        .map(|_| f32::from(rng.gen_range(-64i8..=64)) / 64.0)
        .collect();
    let chain = Chain::dense(values.clone(), d, &lengths, labels.clone(), k, bias).unwrap();
    let mut node_start = vec![0];
    let mut edge_start = vec![0];
    let mut edges = Vec::new();
    for &l in &lengths {
        node_start.push(node_start.last().unwrap() + l);
        edges.extend((1..l as u32).map(|t| [t - 1, t]));
        edge_start.push(edges.len());
    }
    let ex = GraphExamples {
        node_start,
        states: vec![k as u32; tokens],
        labels,
        node_types: vec![],
        node_features: NodeFeatures::Dense { values, d },
        edge_start,
        edges,
        edge_types: vec![],
        edge_features: EdgeFeatures::Constant,
        loss: GraphLoss::Hamming {
            class_weight: vec![],
            normalise: true,
        },
    };
    let graph = GraphModel::new(ex, bias, EngineKind::TreeMaxSum.into()).unwrap();
    let shared = k * (d + usize::from(bias)) + k * k;
    assert_eq!(graph.dim(), shared);
    assert_eq!(chain.dim(), shared + 2 * k);
    assert_eq!(graph.pairwise_offset(0), chain.transition_index(0, 0));
    (chain, graph, shared)
}

#[test]
fn the_graph_model_of_a_chain_gives_the_chains_oracle_answers() {
    let mut rng = ChaCha8Rng::seed_from_u64(2027);
    let (mut answered, mut truths) = (0, 0);
    for round in 0..400 {
        let dyadic = round % 2 == 1;
        let (chain, graph, shared) = chain_and_graph(&mut rng, dyadic);
        for _ in 0..3 {
            // The chain's start and end biases are 0: the graph has none.
            let mut w = vec![0.0; chain.dim()];
            for x in &mut w[..shared] {
                *x = match dyadic {
                    true => f64::from(rng.gen_range(-4i32..=4)) / 4.0,
                    false => rng.gen_range(-1.0..1.0),
                };
            }
            let wg = &w[..shared];
            for i in 0..chain.num_examples() {
                let (mut a, mut b) = (Corner::new(chain.dim()), Corner::new(graph.dim()));
                chain.max_oracle(i, &w, &mut a).unwrap();
                graph.max_oracle(i, wg, &mut b).unwrap();
                let what = format!("round {round}, example {i}");
                assert!(b.is_exact(), "{what}");
                assert_eq!(a.label(), b.label(), "{what}");
                assert_eq!(a.loss().to_bits(), b.loss().to_bits(), "{what}");
                let (pa, pb) = (dense_psi(&a), dense_psi(&b));
                assert_eq!(&pa[..shared], &pb[..], "{what}");
                let value =
                    |p: &[f64], w: &[f64]| p.iter().zip(w).fold(0.0, |acc, (x, y)| acc + x * y);
                assert_eq!(
                    (a.loss() - value(&pa, &w)).to_bits(),
                    (b.loss() - value(&pb, wg)).to_bits(),
                    "{what}"
                );
                // The start and end entries: the truth's first and last
                // labels against the answer's.
                let truth = chain.labels(i);
                let (yhat, _) = graph.loss_augmented(wg, i).unwrap();
                let mut ends = vec![0.0; 2 * chain.num_labels()];
                if a.loss() > 0.0 {
                    let (s, e) = (chain.start_index(0) - shared, chain.end_index(0) - shared);
                    ends[s + truth[0] as usize] += 1.0;
                    ends[s + yhat[0] as usize] -= 1.0;
                    ends[e + truth[truth.len() - 1] as usize] += 1.0;
                    ends[e + yhat[yhat.len() - 1] as usize] -= 1.0;
                    answered += 1;
                } else {
                    truths += 1;
                }
                assert_eq!(&pa[shared..], &ends[..], "{what}");
                let (py, exact) = graph.predict(wg, i).unwrap();
                assert!(exact);
                assert_eq!(chain.predict(&w, i), py, "{what}");
            }
        }
    }
    // Both kinds of answer were met.
    assert!(
        answered > 1000 && truths > 20,
        "{answered} answers, {truths} truths"
    );
}

//! The semi-Markov segmentation model against exhaustive enumeration of all
//! segmentations of small instances: the loss-augmented argmax, its loss,
//! psi and label id, the prediction, the solver's certificate, the input
//! errors and the thread-count independence.

use std::sync::Arc;

use bmrm::models::segmentation::synthetic::{licence_plates, PlateConfig};
use bmrm::models::segmentation::SegmentedSequence;
use bmrm::models::Segmentation;
use bmrm::{Algorithm, Corner, MaxOracle, Problem, Settings, Solver};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Every segmentation of `0..t` with labels of the given widths.
fn all_segmentations(widths: &[usize], t: usize) -> Vec<Vec<(u32, usize)>> {
    fn rec(
        widths: &[usize],
        t: usize,
        pos: usize,
        cur: &mut Vec<(u32, usize)>,
        out: &mut Vec<Vec<(u32, usize)>>,
    ) {
        if pos == t {
            out.push(cur.clone());
            return;
        }
        for (c, &w) in widths.iter().enumerate() {
            if pos + w <= t {
                cur.push((c as u32, pos));
                rec(widths, t, pos + w, cur, out);
                cur.pop();
            }
        }
    }
    let mut out = Vec::new();
    rec(widths, t, 0, &mut Vec::new(), &mut out);
    out
}

/// The joint feature vector, written from the module's definition.
fn phi(model: &Segmentation, i: usize, y: &[(u32, usize)]) -> Vec<f64> {
    let d = model.feature_dim();
    let cols = model.columns(i);
    let mut v = vec![0.0; model.dim()];
    for (j, &(c, s)) in y.iter().enumerate() {
        let c = c as usize;
        for col in 0..model.widths()[c] {
            for f in 0..d {
                v[model.template_index(c, col, f)] += f64::from(cols[(s + col) * d + f]);
            }
        }
        if j > 0 {
            v[model.transition_index(y[j - 1].0 as usize, c)] += 1.0;
        }
    }
    v[model.start_index(y[0].0 as usize)] += 1.0;
    v[model.end_index(y[y.len() - 1].0 as usize)] += 1.0;
    v
}

/// The normalised number of columns labelled differently.
fn loss(model: &Segmentation, i: usize, y: &[(u32, usize)]) -> f64 {
    let truth = model.column_labels(i);
    let mut wrong = 0;
    for &(c, s) in y {
        wrong += truth[s..s + model.widths()[c as usize]]
            .iter()
            .filter(|&&y| y != c)
            .count();
    }
    wrong as f64 / truth.len() as f64
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn dense_psi(c: &Corner) -> Vec<f64> {
    let mut v = vec![0.0; c.dim()];
    c.add_to(1.0, &mut v);
    v
}

/// A random segmentation of about `target` columns, and its length.
fn random_truth(
    rng: &mut ChaCha8Rng,
    widths: &[usize],
    target: usize,
) -> (Vec<(u32, usize)>, usize) {
    let mut segs = Vec::new();
    let mut pos = 0;
    while pos < target {
        let c = rng.gen_range(0..widths.len());
        segs.push((c as u32, pos));
        pos += widths[c];
    }
    (segs, pos)
}

/// A random small model: K in 1..=3 labels of widths 1..=3, 1..=3
/// examples of up to about 10 columns, d in 1..=3.
fn random_model(rng: &mut ChaCha8Rng) -> Segmentation {
    let k = rng.gen_range(1..=3);
    let widths: Vec<usize> = (0..k).map(|_| rng.gen_range(1..=3)).collect();
    let d = rng.gen_range(1..=3);
    let m = rng.gen_range(1..=3);
    let examples: Vec<SegmentedSequence> = (0..m)
        .map(|_| {
            let target = rng.gen_range(1..=9);
            let (segments, t) = random_truth(rng, &widths, target);
            // Small integers sometimes, to make ties.
            let integer = rng.gen_bool(0.3);
            let columns = (0..t * d)
                .map(|_| {
                    if integer {
                        rng.gen_range(-1..=1) as f32
                    } else {
                        rng.gen_range(-1.0..1.0)
                    }
                })
                .collect();
            SegmentedSequence { columns, segments }
        })
        .collect();
    Segmentation::new(d, widths, &examples).unwrap()
}

#[test]
fn the_oracle_and_prediction_equal_exhaustive_search() {
    let mut rng = ChaCha8Rng::seed_from_u64(27);
    let (mut instances, mut truth_answers, mut wrong_answers) = (0, 0, 0);
    while instances < 1500 {
        let model = random_model(&mut rng);
        let dim = model.dim();
        for i in 0..model.num_examples() {
            let all = all_segmentations(model.widths(), model.num_columns(i));
            let truth = model.segments(i).to_vec();
            assert!(all.contains(&truth));
            // Ids are distinct within an example.
            let mut ids: Vec<u64> = all.iter().map(|y| model.label_id(y)).collect();
            ids.sort_unstable();
            ids.dedup();
            assert_eq!(ids.len(), all.len());
            let phi_truth = phi(&model, i, &truth);
            // w: noise, plus a multiple of the truth's features (so the
            // truth often wins), sometimes 0 or small integers (ties).
            let alpha = [0.0, 0.3, 3.0][rng.gen_range(0..3)];
            let kind = rng.gen_range(0..4);
            let w: Vec<f64> = phi_truth
                .iter()
                .map(|&p| match kind {
                    0 => 0.0,
                    1 => f64::from(rng.gen_range(-1i32..=1)),
                    _ => alpha * p + rng.gen_range(-1.0..1.0),
                })
                .collect();
            let score_truth = dot(&w, &phi_truth);
            let values: Vec<f64> = all
                .iter()
                .map(|y| loss(&model, i, y) - (score_truth - dot(&w, &phi(&model, i, y))))
                .collect();
            let best = values.iter().cloned().fold(f64::NEG_INFINITY, f64::max);

            let mut corner = Corner::new(dim);
            model.max_oracle(i, &w, &mut corner).unwrap();
            let h = corner.hinge(&w);
            assert!(
                (h - best).abs() <= 1e-9,
                "hinge {h} against enumerated {best}"
            );
            let k = all
                .iter()
                .position(|y| model.label_id(y) == corner.label())
                .expect("the corner's label is a segmentation");
            let y = &all[k];
            assert!((values[k] - best).abs() <= 1e-9);
            assert_eq!(corner.loss(), loss(&model, i, y));
            let psi_ref: Vec<f64> = phi_truth
                .iter()
                .zip(phi(&model, i, y))
                .map(|(a, b)| a - b)
                .collect();
            for (a, b) in dense_psi(&corner).iter().zip(&psi_ref) {
                assert!((a - b).abs() <= 1e-12, "psi {a} against {b}");
            }
            if best <= 1e-12 {
                // The truth attains the maximum (its value is 0): the
                // oracle returns it, with the zero corner.
                assert!(best >= -1e-12);
                assert_eq!(corner.label(), model.label_id(&truth));
                assert_eq!(corner.loss(), 0.0);
                assert_eq!(corner.sparse_entries().count(), 0);
                truth_answers += 1;
            } else {
                assert_ne!(y, &truth);
                wrong_answers += 1;
            }

            // Prediction: the best score without the loss.
            let pred = model.predict(&w, i).unwrap();
            let top = all
                .iter()
                .map(|y| dot(&w, &phi(&model, i, y)))
                .fold(f64::NEG_INFINITY, f64::max);
            assert!((dot(&w, &phi(&model, i, &pred)) - top).abs() <= 1e-9);
            assert_eq!(
                model.wrong_columns(i, &pred) as f64,
                loss(&model, i, &pred) * model.num_columns(i) as f64
            );
            instances += 1;
        }
    }
    assert!(
        truth_answers > 100 && wrong_answers > 100,
        "{truth_answers} / {wrong_answers}"
    );
}

/// `F(w) = lambda/2 |w|^2 + (1/m) sum_i max_y [L_i(y) - <w, psi_i(y)>]` by
/// enumeration.
fn primal_by_enumeration(model: &Segmentation, lambda: f64, w: &[f64]) -> f64 {
    let m = model.num_examples();
    let mut risk = 0.0;
    for i in 0..m {
        let truth_score = dot(w, &phi(model, i, model.segments(i)));
        risk += all_segmentations(model.widths(), model.num_columns(i))
            .iter()
            .map(|y| loss(model, i, y) - (truth_score - dot(w, &phi(model, i, y))))
            .fold(f64::NEG_INFINITY, f64::max);
    }
    0.5 * lambda * dot(w, w) + risk / m as f64
}

#[test]
fn bmrm_certifies_a_lower_bound_below_the_enumerated_primal() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let widths = vec![1, 2, 3];
    let d = 2;
    let examples: Vec<SegmentedSequence> = (0..6)
        .map(|_| {
            let (segments, t) = random_truth(&mut rng, &widths, 7);
            let columns = segments
                .iter()
                .flat_map(|&(c, _)| (0..widths[c as usize] * d).map(move |j| (c as usize, j)))
                .map(|(c, j)| (((c * 7 + j) % 3) as f64 - 1.0 + rng.gen_range(-0.8..0.8)) as f32)
                .collect::<Vec<f32>>();
            assert_eq!(columns.len(), t * d);
            SegmentedSequence { columns, segments }
        })
        .collect();
    let model = Segmentation::new(d, widths, &examples).unwrap();
    for lambda in [1.0, 0.1, 0.01] {
        let mut s = Settings::new(Algorithm::Bmrm, lambda);
        s.tol_rel = 1e-4;
        let mut solver = Solver::new(Problem::from_max_oracle(model.clone()), s).unwrap();
        let mut w = vec![0.0; solver.dim()];
        let info = solver.run(&mut w).unwrap();
        let primal = primal_by_enumeration(&model, lambda, &w);
        assert!((info.primal - primal).abs() <= 1e-9 * primal.abs().max(1.0));
        assert!(info.gap <= 1e-4 * info.primal.abs() + 1e-12);
        // The bound is below F anywhere, so below F at these points too.
        let mut others = vec![vec![0.0; w.len()]];
        for scale in [0.5, 1.5] {
            others.push(w.iter().map(|x| x * scale).collect());
        }
        others.push(w.iter().map(|x| x + rng.gen_range(-0.05..0.05)).collect());
        for v in std::iter::once(&w).chain(&others) {
            let f = primal_by_enumeration(&model, lambda, v);
            assert!(
                info.lower_bound <= f + 1e-12,
                "lambda {lambda}: lower bound {} above F = {f}",
                info.lower_bound
            );
        }
    }
}

#[test]
fn bad_inputs_give_errors_naming_the_example_and_segment() {
    let ok = SegmentedSequence {
        columns: vec![0.5; 5 * 2],
        segments: vec![(0, 0), (1, 1), (0, 4)],
    };
    let widths = vec![1, 3];
    assert!(Segmentation::new(2, widths.clone(), std::slice::from_ref(&ok)).is_ok());
    let err = |d: usize, widths: Vec<usize>, ex: SegmentedSequence| {
        Segmentation::new(d, widths, &[ok.clone(), ex])
            .unwrap_err()
            .to_string()
    };
    let with =
        |columns: Vec<f32>, segments: Vec<(u32, usize)>| SegmentedSequence { columns, segments };
    let cases: Vec<(String, &str)> = vec![
        (err(2, widths.clone(), with(vec![], vec![])), "example 1: it has no columns (T = 0)"),
        (
            err(2, widths.clone(), with(vec![0.0; 7], vec![(0, 0)])),
            "example 1: 7 feature values",
        ),
        (
            err(2, widths.clone(), with(vec![0.0, f32::NAN, 0.0, 0.0], vec![(0, 0), (0, 1)])),
            "example 1: feature 1 of column 0 is NaN",
        ),
        (
            err(2, widths.clone(), with(vec![0.0; 4], vec![(0, 0), (2, 1)])),
            "example 1: segment 1 has label 2, out of range for 2 labels",
        ),
        (
            err(2, widths.clone(), with(vec![0.0; 6], vec![(0, 0), (0, 2), (0, 2)])),
            "example 1: segment 1 starts at column 2",
        ),
        (
            err(2, widths.clone(), with(vec![0.0; 12], vec![(0, 0), (1, 1), (0, 1)])),
            "example 1: segment 2 starts at column 1",
        ),
        (
            err(2, widths.clone(), with(vec![0.0; 6], vec![(0, 0), (0, 1), (1, 2)])),
            "example 1: segment 2 (label 1, width 3) starts at column 2 and runs past the end of the 3 columns",
        ),
        (
            err(2, widths.clone(), with(vec![0.0; 6], vec![(0, 0), (0, 1)])),
            "example 1: the 2 segments cover columns 0..2 but the example has T = 3",
        ),
        (
            err(2, widths.clone(), with(vec![0.0; 6], vec![])),
            "example 1: it has no segments",
        ),
        (err(0, widths.clone(), ok.clone()), "feature dimension d must be at least 1"),
        (err(2, vec![], ok.clone()), "got 0 widths"),
        (err(2, vec![1, 0], ok.clone()), "label 1 has width 0"),
    ];
    for (msg, want) in cases {
        assert!(msg.contains(want), "{msg:?} does not contain {want:?}");
    }
    assert!(Segmentation::new(2, widths.clone(), &[])
        .unwrap_err()
        .to_string()
        .contains("at least one example"));
    // The oracle and prediction check w and the example.
    let model = Segmentation::new(2, widths, &[ok]).unwrap();
    let mut c = Corner::new(model.dim());
    let w = vec![0.0; model.dim()];
    assert!(model
        .max_oracle(1, &w, &mut c)
        .unwrap_err()
        .to_string()
        .contains("example 1"));
    assert!(model
        .max_oracle(0, &w[1..], &mut c)
        .unwrap_err()
        .to_string()
        .contains("length"));
    assert!(model.predict(&w[1..], 0).is_err());
    let mut bad = w.clone();
    bad[0] = f64::NAN;
    assert!(model
        .max_oracle(0, &bad, &mut c)
        .unwrap_err()
        .to_string()
        .contains("example 0"));
    bad[0] = f64::INFINITY;
    assert!(model.predict(&bad, 0).is_err());
}

#[test]
fn solutions_are_bit_identical_on_one_and_two_threads_and_learn_the_plates() {
    let config = PlateConfig {
        chars: 6,
        min_width: 2,
        max_width: 4,
        rows: 6,
        min_len: 3,
        max_len: 5,
        max_gap: 2,
        noise: 0.3,
    };
    let plates = licence_plates(160, 11, &config).unwrap();
    let again = licence_plates(160, 11, &config).unwrap();
    assert_eq!(plates.examples, again.examples);
    assert_eq!(plates.widths, again.widths);
    let (train, test) = plates.examples.split_at(80);
    let model = Arc::new(Segmentation::new(plates.d, plates.widths.clone(), train).unwrap());
    let test = Segmentation::new(plates.d, plates.widths.clone(), test).unwrap();
    for alg in [Algorithm::Bmrm, Algorithm::ProxPBmrm, Algorithm::Bcfw] {
        let mut runs = Vec::new();
        for threads in [1, 2] {
            let mut s = Settings::new(alg, 1e-3);
            s.num_threads = threads;
            s.tol_rel = 1e-2;
            if alg == Algorithm::Bcfw {
                s.num_passes = 30;
            } else {
                s.max_iterations = 2000;
            }
            if alg.is_partitioned() {
                s.num_parts = 4;
            }
            let mut solver = Solver::new(Problem::Examples(model.clone()), s).unwrap();
            let mut w = vec![0.0; solver.dim()];
            let info = solver.run(&mut w).unwrap();
            runs.push((w, info));
        }
        let bits = |w: &[f64]| w.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&runs[0].0), bits(&runs[1].0), "{alg:?}");
        assert_eq!(runs[0].1.primal.to_bits(), runs[1].1.primal.to_bits());
        assert_eq!(
            runs[0].1.lower_bound.to_bits(),
            runs[1].1.lower_bound.to_bits()
        );
        assert_eq!(runs[0].1.iterations, runs[1].1.iterations);
        // The model learns: few wrong columns on unseen plates, against
        // most of them at w = 0 (which labels every column background).
        let w = &runs[0].0;
        let err = test.column_error(w).unwrap();
        let err0 = test.column_error(&vec![0.0; w.len()]).unwrap();
        assert!(
            err < 0.1 && err0 > 0.5,
            "{alg:?}: column error {err}, at w = 0 {err0}"
        );
    }
}

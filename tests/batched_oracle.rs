//! The built-in multiclass oracle answering a block of examples at once
//! (one matrix product for the scores) against the same oracle asked one
//! example at a time, and the bundle methods' pass over it against a plain
//! reference; dense and CSR rows, random sizes (feature counts that are not
//! multiples of the vector width), 1, 2 and 4 threads.

use std::sync::Arc;

use bmrm::models::{Multiclass, SparseRows};
use bmrm::oracle::{Corner, MaxOracle};
use bmrm::{ErrorKind, Problem};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// `len` random features, about half of them exactly 0 (as in images).
fn random_features(rng: &mut ChaCha8Rng, len: usize) -> Vec<f32> {
    (0..len)
        .map(|_| {
            if rng.gen_bool(0.5) {
                0.0
            } else {
                rng.gen_range(-2.0..2.0)
            }
        })
        .collect()
}

/// A random model: about half the features exactly 0 (as in images).
fn random_model(rng: &mut ChaCha8Rng, sparse: bool) -> (Multiclass, Vec<f32>, usize) {
    let m = rng.gen_range(1..150);
    let d = rng.gen_range(1..70);
    let k = rng.gen_range(2..13);
    let bias = rng.gen_bool(0.5);
    let x = random_features(rng, m * d);
    let y: Vec<usize> = (0..m).map(|_| rng.gen_range(0..k)).collect();
    let model = if sparse {
        let rows = SparseRows::from_dense(&x, d).unwrap();
        Multiclass::new_sparse(rows, y, k, bias).unwrap()
    } else {
        Multiclass::new(x.clone(), d, y, k, bias).unwrap()
    };
    (model, x, d)
}

/// A random `w`; sometimes 0 (every score ties) or with equal class blocks.
fn random_w(rng: &mut ChaCha8Rng, dim: usize, kind: usize) -> Vec<f64> {
    match kind {
        0 => vec![0.0; dim],
        _ => (0..dim).map(|_| rng.gen_range(-0.5..0.5)).collect(),
    }
}

fn entries(c: &Corner) -> Vec<(usize, u64)> {
    c.sparse_entries().map(|(i, v)| (i, v.to_bits())).collect()
}

#[test]
fn a_block_answers_as_its_examples_do_bit_for_bit() {
    let mut rng = ChaCha8Rng::seed_from_u64(14);
    for case in 0..60 {
        let (model, _, _) = random_model(&mut rng, case % 2 == 1);
        let m = model.num_examples();
        let w = random_w(&mut rng, model.dim(), case % 3);
        let first = rng.gen_range(0..m);
        let len = rng.gen_range(1..=m - first);
        let mut block = vec![Corner::new(model.dim()); len];
        model
            .max_oracle_block(first, &w, &mut block)
            .unwrap()
            .unwrap();
        for (j, got) in block.iter().enumerate() {
            let mut want = Corner::new(model.dim());
            model.max_oracle(first + j, &w, &mut want).unwrap();
            assert_eq!(
                got.label(),
                want.label(),
                "case {case} example {}",
                first + j
            );
            assert_eq!(got.loss().to_bits(), want.loss().to_bits());
            assert_eq!(entries(got), entries(&want), "case {case}");
        }
    }
}

/// The mean hinge and its subgradient in plain `f64` loops, from the
/// definition (no kernel, no corner).
fn reference_risk(model: &Multiclass, x: &[f32], d: usize, w: &[f64]) -> (f64, Vec<f64>) {
    let k = model.num_classes();
    let dp = model.block_dim();
    let m = model.num_examples();
    let mut g = vec![0.0; model.dim()];
    let mut risk = 0.0;
    for i in 0..m {
        let xi = &x[i * d..(i + 1) * d];
        let score = |c: usize| -> f64 {
            let v = &w[c * dp..(c + 1) * dp];
            let mut s: f64 = xi.iter().zip(v).map(|(&a, b)| f64::from(a) * b).sum();
            if model.has_bias() {
                s += v[d];
            }
            s
        };
        let yi = model.labels()[i];
        let mut best = yi;
        let mut best_score = score(yi);
        for c in 0..k {
            if c != yi && 1.0 + score(c) > best_score {
                best = c;
                best_score = 1.0 + score(c);
            }
        }
        if best != yi {
            risk += best_score - score(yi);
            for (j, &a) in xi.iter().enumerate() {
                g[yi * dp + j] -= f64::from(a);
                g[best * dp + j] += f64::from(a);
            }
            if model.has_bias() {
                g[yi * dp + d] -= 1.0;
                g[best * dp + d] += 1.0;
            }
        }
    }
    g.iter_mut().for_each(|v| *v /= m as f64);
    (risk / m as f64, g)
}

#[test]
fn the_pass_of_the_bundle_methods_matches_the_definition() {
    let mut rng = ChaCha8Rng::seed_from_u64(15);
    for case in 0..40 {
        let (model, x, d) = random_model(&mut rng, case % 2 == 1);
        // Away from ties, so the reference's rounding picks the same labels.
        let w = random_w(&mut rng, model.dim(), 1);
        let (want_r, want_g) = reference_risk(&model, &x, d, &w);
        let parts = rng.gen_range(1..=model.num_examples().min(5));
        let risk = Problem::from_max_oracle(model).parts(parts).unwrap();
        let mut total = 0.0;
        let mut g_sum = vec![0.0; risk.dim()];
        let mut g = vec![0.0; risk.dim()];
        for p in 0..parts {
            total += risk.partial_risk(p, &w, &mut g).unwrap();
            g_sum.iter_mut().zip(&g).for_each(|(s, v)| *s += v);
        }
        assert!(
            (total - want_r).abs() <= 1e-12 * (1.0 + want_r.abs()),
            "case {case}"
        );
        for (a, b) in g_sum.iter().zip(&want_g) {
            assert!((a - b).abs() <= 1e-12, "case {case}: {a} vs {b}");
        }
    }
}

/// The oracle without its block methods: the pass goes through the corners.
struct OneByOne(Multiclass);
impl MaxOracle for OneByOne {
    fn dim(&self) -> usize {
        self.0.dim()
    }
    fn num_examples(&self) -> usize {
        self.0.num_examples()
    }
    fn max_oracle(&self, i: usize, w: &[f64], out: &mut Corner) -> bmrm::Result<()> {
        self.0.max_oracle(i, w, out)
    }
}

#[test]
fn block_risk_gives_the_corners_subgradient_bit_for_bit() {
    let mut rng = ChaCha8Rng::seed_from_u64(16);
    for case in 0..30 {
        let (model, _, _) = random_model(&mut rng, case % 2 == 1);
        let w = random_w(&mut rng, model.dim(), case % 3);
        let fast = Problem::from_max_oracle(model.clone()).parts(1).unwrap();
        let slow = Problem::from_max_oracle(OneByOne(model)).parts(1).unwrap();
        let mut g_fast = vec![0.0; fast.dim()];
        let mut g_slow = vec![0.0; fast.dim()];
        let r_fast = fast.partial_risk(0, &w, &mut g_fast).unwrap();
        let r_slow = slow.partial_risk(0, &w, &mut g_slow).unwrap();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&g_fast), bits(&g_slow), "case {case}");
        // The hinges come from the scores instead of <w, psi>: rounding only.
        assert!(
            (r_fast - r_slow).abs() <= 1e-13 * (1.0 + r_slow.abs()),
            "case {case}"
        );
    }
}

#[test]
fn long_spans_give_the_corners_subgradient_bit_for_bit() {
    // Enough examples that the pass asks `block_risk` for spans of many
    // blocks of 48 (chunks of about 1,100 examples, cut at 1,024), the
    // class rows packed once per span: the subgradient is still the
    // corners' to the bit, and the risk the definition's.
    let mut rng = ChaCha8Rng::seed_from_u64(19);
    let (m, d, k) = (70_000, 33, 5);
    let x = random_features(&mut rng, m * d);
    let y: Vec<usize> = (0..m).map(|_| rng.gen_range(0..k)).collect();
    let model = Multiclass::new(x.clone(), d, y, k, true).unwrap();
    // Scaled so that some examples violate their margin and some do not.
    let w: Vec<f64> = (0..model.dim()).map(|_| rng.gen_range(-0.3..0.3)).collect();
    let (want_r, want_g) = reference_risk(&model, &x, d, &w);
    let zero = vec![0.0; model.dim()];
    let (want_zero_r, want_zero_g) = reference_risk(&model, &x, d, &zero);
    let fast = Problem::from_max_oracle(model.clone()).parts(1).unwrap();
    let slow = Problem::from_max_oracle(OneByOne(model)).parts(1).unwrap();
    let mut g_fast = vec![0.0; fast.dim()];
    let mut g_slow = vec![0.0; fast.dim()];
    let r_fast = fast.partial_risk(0, &w, &mut g_fast).unwrap();
    let r_slow = slow.partial_risk(0, &w, &mut g_slow).unwrap();
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&g_fast), bits(&g_slow));
    assert!((r_fast - r_slow).abs() <= 1e-12 * (1.0 + r_slow.abs()));
    assert!((r_fast - want_r).abs() <= 1e-12 * (1.0 + want_r.abs()));
    assert!(
        want_r > 0.05 && want_r < 3.0,
        "a mix of violators: {want_r}"
    );
    for (a, b) in g_fast.iter().zip(&want_g) {
        assert!((a - b).abs() <= 1e-12, "{a} vs {b}");
    }
    // At w = 0 every example violates, and the pass sums each tile as
    // every example's row in block y^ less the tile's truth sums: the same
    // subgradient up to rounding (these features are not on a grid, so the
    // bits may differ from the corners').
    let (want_r, want_g) = (want_zero_r, want_zero_g);
    let mut g = vec![0.0; fast.dim()];
    let r = fast.partial_risk(0, &zero, &mut g).unwrap();
    assert!((r - want_r).abs() <= 1e-12 * want_r, "{r} vs {want_r}");
    let scale = want_g.iter().fold(0.0f64, |a, b| a.max(b.abs()));
    assert!(scale > 0.1);
    for (a, b) in g.iter().zip(&want_g) {
        assert!((a - b).abs() <= 1e-12 * scale, "{a} vs {b}");
    }
}

#[test]
fn one_two_and_four_threads_give_the_same_bits() {
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    for sparse in [false, true] {
        // Large enough for several chunks and blocks per part.
        let m = 3000;
        let d = 37;
        let x: Vec<f32> = (0..m * d).map(|_| rng.gen_range(-1.0..1.0)).collect();
        let y: Vec<usize> = (0..m).map(|_| rng.gen_range(0..7)).collect();
        let model = if sparse {
            Multiclass::new_sparse(SparseRows::from_dense(&x, d).unwrap(), y, 7, true).unwrap()
        } else {
            Multiclass::new(x, d, y, 7, true).unwrap()
        };
        let w: Vec<f64> = (0..model.dim()).map(|_| rng.gen_range(-0.3..0.3)).collect();
        let model = Arc::new(model);
        let mut runs = Vec::new();
        for threads in [1, 2, 4] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let out = pool.install(|| {
                let mut bits = Vec::new();
                for parts in [1, 3] {
                    let risk = Problem::Examples(model.clone()).parts(parts).unwrap();
                    let mut g = vec![0.0; risk.dim()];
                    for p in 0..parts {
                        bits.push(risk.partial_risk(p, &w, &mut g).unwrap().to_bits());
                        bits.extend(g.iter().map(|v| v.to_bits()));
                    }
                }
                let pass = bmrm::oracle::pass::oracle_pass(model.as_ref(), &w, true, "").unwrap();
                for item in pass {
                    bits.push(item.hinge.to_bits());
                    bits.push(item.label);
                }
                bits
            });
            runs.push(out);
        }
        assert_eq!(runs[0], runs[1], "sparse {sparse}: 1 vs 2 threads");
        assert_eq!(runs[0], runs[2], "sparse {sparse}: 1 vs 4 threads");
    }
}

#[test]
fn a_nan_weight_is_an_error_naming_the_first_example_either_way() {
    let mut rng = ChaCha8Rng::seed_from_u64(18);
    for sparse in [false, true] {
        let (model, _, _) = random_model(&mut rng, sparse);
        let mut w = random_w(&mut rng, model.dim(), 1);
        // A NaN in the last class's block: every example's score is NaN.
        let last = model.dim() - 1;
        w[last] = f64::NAN;
        let fast = Problem::from_max_oracle(model.clone()).parts(1).unwrap();
        let slow = Problem::from_max_oracle(OneByOne(model.clone()))
            .parts(1)
            .unwrap();
        let mut g = vec![0.0; fast.dim()];
        let e_fast = fast.partial_risk(0, &w, &mut g).unwrap_err();
        let e_slow = slow.partial_risk(0, &w, &mut g).unwrap_err();
        assert_eq!(e_fast.kind, ErrorKind::NonFinite);
        assert_eq!(e_fast.to_string(), e_slow.to_string());
        assert!(e_fast.to_string().contains("(example 0)"), "{e_fast}");
        let mut block = vec![Corner::new(model.dim()); model.num_examples()];
        assert!(model.max_oracle_block(0, &w, &mut block).unwrap().is_err());
    }
}

#[test]
fn a_pass_after_another_gives_the_bits_of_a_first_pass() {
    // The chunks' accumulators are kept between passes: a pass at `w2`
    // after one at `w1` must not see `w1`'s sums.
    let mut rng = ChaCha8Rng::seed_from_u64(16);
    for case in 0..20 {
        let (model, _, _) = random_model(&mut rng, false);
        let model: Arc<dyn MaxOracle> = Arc::new(model);
        let parts = rng.gen_range(1..=model.num_examples().min(3));
        let w1 = random_w(&mut rng, model.dim(), 1);
        let w2 = random_w(&mut rng, model.dim(), case % 3);
        let reused = Problem::Examples(model.clone()).parts(parts).unwrap();
        let fresh = Problem::Examples(model).parts(parts).unwrap();
        let mut g1 = vec![0.0; reused.dim()];
        let mut g2 = vec![0.0; reused.dim()];
        for p in 0..parts {
            reused.partial_risk(p, &w1, &mut g1).unwrap();
        }
        for p in 0..parts {
            let r1 = reused.partial_risk(p, &w2, &mut g1).unwrap();
            let r2 = fresh.partial_risk(p, &w2, &mut g2).unwrap();
            assert_eq!(r1.to_bits(), r2.to_bits(), "case {case} part {p}");
            let bits = |g: &[f64]| g.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&g1), bits(&g2), "case {case} part {p}");
        }
    }
}

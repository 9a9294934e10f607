//! Helpers shared by the integration tests: exact references computed
//! without the library's solvers.

#![allow(dead_code)]

fn ternary(g: &dyn Fn(f64) -> f64, mut lo: f64, mut hi: f64) -> f64 {
    for _ in 0..200 {
        let a = lo + (hi - lo) / 3.0;
        let b = hi - (hi - lo) / 3.0;
        if g(a) <= g(b) {
            hi = b;
        } else {
            lo = a;
        }
    }
    0.5 * (lo + hi)
}

/// The minimum of a convex function of two variables on `[lo, hi]^2`, by
/// nested ternary search (exact to rounding after 200 rounds each).
pub fn nested_ternary(f: &dyn Fn(f64, f64) -> f64, lo: f64, hi: f64) -> (f64, f64, f64) {
    nested_ternary_in(f, (lo, hi), (lo, hi))
}

/// The same on the rectangle `xs x ys`.
pub fn nested_ternary_in(
    f: &dyn Fn(f64, f64) -> f64,
    xs: (f64, f64),
    ys: (f64, f64),
) -> (f64, f64, f64) {
    let inner = |x: f64| {
        let y = ternary(&|y| f(x, y), ys.0, ys.1);
        f(x, y)
    };
    let x = ternary(&inner, xs.0, xs.1);
    let y = ternary(&|y| f(x, y), ys.0, ys.1);
    (x, y, f(x, y))
}

/// A synthetic Gaussian multiclass model without bias (seeded).
pub fn multiclass(m: usize, d: usize, k: usize, seed: u64) -> bmrm::models::Multiclass {
    let (x, y) = bmrm::models::synthetic::gaussian_multiclass(m, d, k, 2.0, seed);
    bmrm::models::Multiclass::new(x, d, y, k, false).unwrap()
}

/// `F(w)` of a multiclass model without bias, by enumerating every class
/// with the 0/1 loss (no library oracle involved).
pub fn brute_primal(model: &bmrm::models::Multiclass, w: &[f64], lambda: f64) -> f64 {
    let d = model.feature_dim();
    let k = model.num_classes();
    let m = bmrm::oracle::MaxOracle::num_examples(model);
    let score = |x: &[f32], c: usize| -> f64 {
        x.iter()
            .zip(&w[c * d..(c + 1) * d])
            .map(|(&a, &b)| a as f64 * b)
            .sum()
    };
    let mut risk = 0.0;
    for i in 0..m {
        let x = model.example(i);
        let yi = model.labels()[i];
        let truth = score(x, yi);
        risk += (0..k)
            .map(|c| f64::from(u8::from(c != yi)) + score(x, c) - truth)
            .fold(f64::NEG_INFINITY, f64::max);
    }
    0.5 * lambda * w.iter().map(|v| v * v).sum::<f64>() + risk / m as f64
}

//! The constrained reduced problem against its minimum found without the
//! library's dual (nested ternary search on the primal, in two dimensions):
//! the value returned and the certified bound never above it, and a
//! warm-started solve (after other solves on the planes, their `H` and
//! clipped set kept) agreeing with a cold one.

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{ConstrainedDual, Constraints};
use crate::bundle::{Bundle, Plane, PlaneError, Slope};
use crate::oracle::Bounds;
use crate::qp::QpOptions;

/// `argmin` and `min` of a convex `g` on `[lo, hi]`.
fn ternary(g: &dyn Fn(f64) -> f64, mut lo: f64, mut hi: f64) -> (f64, f64) {
    for _ in 0..200 {
        let (a, b) = (lo + (hi - lo) / 3.0, hi - (hi - lo) / 3.0);
        if g(a) <= g(b) {
            hi = b;
        } else {
            lo = a;
        }
    }
    let x = 0.5 * (lo + hi);
    (x, g(x))
}

/// `min` of a convex `g(x, y)` on a rectangle, by nested ternary search.
fn nested(g: &dyn Fn(f64, f64) -> f64, x: (f64, f64), y: (f64, f64)) -> ((f64, f64), f64) {
    let inner = |a: f64| ternary(&|b| g(a, b), y.0, y.1).1;
    let (a, v) = ternary(&inner, x.0, x.1);
    let (b, _) = ternary(&|b| g(a, b), y.0, y.1);
    ((a, b), v)
}

/// Random planes in two dimensions, `parts` parts.
fn planes(count: usize, parts: usize, seed: u64) -> Vec<Plane> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..count)
        .map(|i| Plane {
            part: i % parts,
            a: Slope::new(vec![rng.gen_range(-2.0..2.0), rng.gen_range(-2.0..2.0)]),
            b: rng.gen_range(0.0..1.0),
            err: PlaneError::default(),
        })
        .collect()
}

/// `lambda/2 ||w||^2 + alpha ||w - c||^2 + sum_p max_{i in p} (<a_i, w> + b_i)`.
fn phi(planes: &[Plane], parts: usize, lambda: f64, alpha: f64, c: [f64; 2], w: [f64; 2]) -> f64 {
    let mut risk = vec![f64::NEG_INFINITY; parts];
    for p in planes {
        let v = p.a.dot_dense(&w) + p.b;
        risk[p.part] = risk[p.part].max(v);
    }
    let prox = (w[0] - c[0]).powi(2) + (w[1] - c[1]).powi(2);
    0.5 * lambda * (w[0] * w[0] + w[1] * w[1]) + alpha * prox + risk.iter().sum::<f64>()
}

fn tight() -> QpOptions {
    QpOptions {
        tol_gap: 1e-13,
        max_updates: 0,
        deadline: None,
    }
}

/// Under a box that binds, for one and two parts: the `alpha = 0` and the
/// prox problem's values, and the certified bound, are at most the searched
/// minimum and within the solve's accuracy of it; the point is in the box.
/// After more planes, the warm solve (planes' weights, `H` and clipped set
/// kept from the earlier solves) gives the cold solve's value.
#[test]
fn box_dual_values_stay_below_the_searched_minimum_and_warm_equals_cold() {
    let lambda = 0.5;
    for parts in [1, 2] {
        let all = planes(10, parts, 11 + parts as u64);
        let (first, later) = all.split_at(6);
        let free = |w0: f64, w1: f64| phi(first, parts, lambda, 0.0, [0.0; 2], [w0, w1]);
        let ((u0, _), free_min) = nested(&free, (-20.0, 20.0), (-20.0, 20.0));
        // w_0 >= u_0 + 0.5 cuts the free optimum off.
        let lo0 = u0 + 0.5;
        let bounds = Bounds::new(vec![lo0, f64::NEG_INFINITY], vec![f64::INFINITY; 2], 2).unwrap();
        let constraints = Arc::new(Constraints {
            bounds: Some(bounds),
            ..Constraints::default()
        });
        let mut bundle = Bundle::new(2, parts, 100);
        bundle.add(first.to_vec());
        let mut dual = ConstrainedDual::new(constraints.clone());
        let mut seconds = 0.0;
        let zero = [0.0; 2];
        let min_in_box = |planes: &[Plane], alpha: f64, c: [f64; 2]| {
            let g = |w0: f64, w1: f64| phi(planes, parts, lambda, alpha, c, [w0, w1]);
            nested(&g, (lo0, lo0 + 40.0), (-20.0, 20.0)).1
        };
        let what = format!("{parts} part(s)");
        let check = |value: f64, w: &[f64], minimum: f64, what: &str| {
            assert!(w[0] >= lo0, "{what}: {w:?}");
            assert!(
                value <= minimum + 1e-12 * minimum.abs(),
                "{what}: {value} > {minimum}"
            );
            assert!(
                value >= minimum - 1e-7,
                "{what}: {value} far below {minimum}"
            );
        };
        let lower = dual
            .solve(
                &mut bundle,
                lambda,
                0.0,
                &zero,
                &zero,
                false,
                None,
                &tight(),
                &mut seconds,
            )
            .unwrap();
        let minimum = min_in_box(first, 0.0, zero);
        assert!(minimum > free_min + 1e-6, "{what}: the box binds");
        check(lower.value, &lower.w, minimum, &what);
        let f_w = phi(first, parts, lambda, 0.0, zero, [lower.w[0], lower.w[1]]);
        let certified = dual.certified_lower(&bundle, lambda, f_w, lower.value, &lower.w);
        assert!(
            certified.value <= minimum,
            "{what}: {certified:?} {minimum}"
        );
        // A prox problem around a centre inside the box.
        let centre = [lo0 + 1.0, 0.5];
        let alpha = 0.75;
        let prox = dual
            .solve(
                &mut bundle,
                lambda,
                alpha,
                &centre,
                &centre,
                true,
                None,
                &tight(),
                &mut seconds,
            )
            .unwrap();
        check(
            prox.value,
            &prox.w,
            min_in_box(first, alpha, centre),
            &format!("{what}, prox"),
        );
        // More planes: warm from everything above, against a cold solve.
        bundle.add(later.to_vec());
        let mut cold_bundle = bundle.clone();
        cold_bundle.beta.iter_mut().for_each(|b| *b = 0.0);
        let warm = dual
            .solve(
                &mut bundle,
                lambda,
                0.0,
                &zero,
                &zero,
                false,
                None,
                &tight(),
                &mut seconds,
            )
            .unwrap();
        let cold = ConstrainedDual::new(constraints)
            .solve(
                &mut cold_bundle,
                lambda,
                0.0,
                &zero,
                &zero,
                false,
                None,
                &tight(),
                &mut seconds,
            )
            .unwrap();
        let minimum = min_in_box(&all, 0.0, zero);
        check(warm.value, &warm.w, minimum, &format!("{what}, warm"));
        check(cold.value, &cold.w, minimum, &format!("{what}, cold"));
        assert!(
            (warm.value - cold.value).abs() <= 1e-9 * cold.value.abs(),
            "{what}: warm {} cold {}",
            warm.value,
            cold.value
        );
    }
}

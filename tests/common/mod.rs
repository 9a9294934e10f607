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

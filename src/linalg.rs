//! The few dense vector operations the solvers need. Each is a fixed-order
//! serial loop (four interleaved accumulators, so the compiler can vectorise)
//! and therefore gives the same bits on every run and thread count.

/// `<x, y>`.
#[inline]
pub fn dot(x: &[f64], y: &[f64]) -> f64 {
    debug_assert_eq!(x.len(), y.len());
    let mut acc = [0.0f64; 4];
    let xc = x.chunks_exact(4);
    let yc = y.chunks_exact(4);
    let (xr, yr) = (xc.remainder(), yc.remainder());
    for (a, b) in xc.zip(yc) {
        acc[0] += a[0] * b[0];
        acc[1] += a[1] * b[1];
        acc[2] += a[2] * b[2];
        acc[3] += a[3] * b[3];
    }
    let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (a, b) in xr.iter().zip(yr) {
        s += a * b;
    }
    s
}

/// `||x||^2`.
#[inline]
pub fn norm2(x: &[f64]) -> f64 {
    dot(x, x)
}

/// `y += alpha * x`.
#[inline]
pub fn axpy(alpha: f64, x: &[f64], y: &mut [f64]) {
    debug_assert_eq!(x.len(), y.len());
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += alpha * xi;
    }
}

/// `||x - y||`.
#[inline]
pub fn dist(x: &[f64], y: &[f64]) -> f64 {
    x.iter()
        .zip(y)
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f64>()
        .sqrt()
}

/// The index and value of the first non-finite entry, if any.
pub fn first_non_finite(x: &[f64]) -> Option<(usize, f64)> {
    x.iter().position(|v| !v.is_finite()).map(|j| (j, x[j]))
}

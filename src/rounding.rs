//! Bounds on floating-point rounding, shared by every certificate: the
//! bundle's dual value, BCFW's dual and `ell`, the constrained reduced
//! problem, SGD's reported objective and AD3's dual bound each lower their
//! value by the rounding these bounds allow, so that what they report stays
//! on the safe side of the exact value. A leaf: it imports nothing.

/// The unit roundoff of `f64`.
pub const U: f64 = f64::EPSILON / 2.0;

/// `gamma_k = k u / (1 - k u)`, the relative error bound of a `k`-term sum
/// (Higham, Accuracy and Stability of Numerical Algorithms, 3.1); infinite
/// once `k u >= 1/2`, where the bound means nothing.
pub fn gamma(k: usize) -> f64 {
    let ku = k as f64 * U;
    if ku >= 0.5 {
        f64::INFINITY
    } else {
        ku / (1.0 - ku)
    }
}

#[cfg(test)]
mod tests {
    use super::gamma;

    #[test]
    fn gamma_grows_with_the_terms_and_ends_infinite() {
        assert_eq!(gamma(0), 0.0);
        assert!((gamma(1) - f64::EPSILON / 2.0).abs() < 1e-30);
        assert!(gamma(10) > gamma(9));
        assert!(gamma(usize::MAX).is_infinite());
    }
}

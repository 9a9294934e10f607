//! The lower bound a bundle method reports, evaluated so that rounding
//! cannot lift it above `min F`, at any scale of the data.
//!
//! The reduced problem's dual value at weights `beta` (one simplex per
//! part) is `D(beta) = sum_i beta_i b_i - ||sum_i beta_i a_i||^2 / (2 lambda)`,
//! and weak duality makes it `<= min F` when the planes are exact minorants
//! and `beta` lies exactly on the simplices. Neither holds in floating point:
//!
//! - the QP's own value goes through the Gram matrix, `beta' G beta`, whose
//!   cancellation error is `eps * max |G|`: with one feature scaled to 1e30
//!   the Gram entries are 1e60 and the "bound" came out at 1.3e45 for a
//!   primal of 1;
//! - a plane's offset `b = R(w_t) - <a, w_t>` is rounded, an aggregated
//!   plane's slope and offset too, and `sum beta_i` is 1 only to rounding.
//!
//! So the bound is recomputed from the vector `v = sum beta_i a_i` itself,
//! with a running bound on every rounding (Higham's `gamma_k = k u / (1 - k
//! u)` for a sum of `k` terms), and lowered by it. A plane `i` carries
//! `offset_err` and `slope_err`: at any `w` its value exceeds an exact
//! minorant by at most `offset_err + slope_err ||w||`; the optimum lies in the
//! ball `||w*|| <= sqrt(2 F_best / lambda)`, which bounds the second term.
//! The result is a valid bound, loose by the size of the rounding: when the
//! data's scale makes that rounding large (the 1e30 feature), the gap stays
//! large and says so instead of a false convergence.

use super::Bundle;
use crate::rounding::{gamma, U};

/// How far a plane's value may exceed an exact minorant of its part's risk:
/// by at most `offset + slope * ||w||` at any `w`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PlaneError {
    /// The offset's rounding.
    pub offset: f64,
    /// A bound on `||a - a_exact||`.
    pub slope: f64,
}

impl PlaneError {
    /// A plane `<a, w> + b` made at `w_t` from a risk value `r` and a
    /// subgradient `a` as `b = r - <a, w_t>`: the dot product of `n` terms
    /// and the subtraction round, and the risk itself is allowed the
    /// rounding of an `n`-term sum of terms no larger than `|r| + sum |a_k
    /// w_k|` (what an oracle that sums its terms in `f64` makes).
    pub fn of_evaluation(r: f64, abs_dot: f64, n: usize) -> Self {
        PlaneError {
            offset: 2.0 * gamma(n + 4) * (r.abs() + abs_dot),
            slope: 0.0,
        }
    }
}

impl Bundle {
    /// The dual value at the weights `beta` (one simplex per part), rounded
    /// down by a bound on every rounding error in it and in the planes, with
    /// `f_best` an upper bound on `min F` (the best primal value seen). It
    /// is `<= min F` whatever the scale of the data; `-inf` when the
    /// weights are too far from the simplices to bound anything.
    pub fn certified_dual(&self, beta: &[f64], lambda: f64, f_best: f64) -> Certified {
        self.certified_dual_in_box(beta, lambda, f_best, None)
    }

    /// [`Bundle::certified_dual`] of the problem with `w` confined to the box
    /// `lo <= w <= hi`: the dual is `sum beta_i b_i - lambda sum_j h_j(x_j)`
    /// at `x = -v / lambda`, `h_j(x) = c x - c^2/2` with `c` = `x` clipped to
    /// coordinate `j`'s interval (`x^2/2` when free); `|h_j(x) - h_j(y)| <=
    /// (|y| + |x - y|) |x - y|` bounds what `v`'s rounding does to it.
    pub fn certified_dual_in_box(
        &self,
        beta: &[f64],
        lambda: f64,
        f_best: f64,
        bounds: Option<(&[f64], &[f64])>,
    ) -> Certified {
        let planes = self.planes();
        let n_planes = planes.len();
        debug_assert_eq!(beta.len(), n_planes);
        let parts = self.num_parts();
        // Any weights on the simplices give a bound, and a QP solved to a
        // tolerance leaves its sums off 1 by about that tolerance, which the
        // bound below would have to pay for: rescale each part's weights to
        // sum 1 first (up to this division's and the sum's rounding).
        let mut part_sum = vec![0.0f64; parts];
        for (plane, &b) in planes.iter().zip(beta) {
            part_sum[plane.part] += b;
        }
        let scaled: Vec<f64> = planes
            .iter()
            .zip(beta)
            .map(|(plane, &b)| {
                let s = part_sum[plane.part];
                if s > 0.0 {
                    b / s
                } else {
                    b
                }
            })
            .collect();
        let beta = &scaled[..];
        // Per part: the weights' sum, the weighted offsets, their absolute
        // sum, and the weighted plane errors.
        let mut sum = vec![0.0f64; parts];
        let mut offsets = vec![0.0f64; parts];
        let mut abs_offsets = vec![0.0f64; parts];
        let mut errs_offset = vec![0.0f64; parts];
        let mut errs_slope = vec![0.0f64; parts];
        let mut count = vec![0usize; parts];
        for (plane, &b) in planes.iter().zip(beta) {
            if b < 0.0 || !b.is_finite() {
                return Certified::NOTHING;
            }
            if b == 0.0 {
                continue;
            }
            let p = plane.part;
            sum[p] += b;
            offsets[p] += b * plane.b;
            abs_offsets[p] += b * plane.b.abs();
            errs_offset[p] += b * plane.err.offset;
            errs_slope[p] += b * plane.err.slope;
            count[p] += 1;
        }
        // `eta[p]` bounds |1/s_p - 1| for the exact sum s_p of the weights:
        // the exact convex weights are beta / s_p.
        let mut eta_max = 0.0f64;
        let mut eta = vec![0.0f64; parts];
        for p in 0..parts {
            let s_err = (sum[p] - 1.0).abs() + gamma(count[p]) * sum[p];
            if s_err >= 0.5 {
                return Certified::NOTHING;
            }
            eta[p] = s_err / (1.0 - s_err);
            eta_max = eta_max.max(eta[p]);
        }
        // `v = sum beta_i a_i` and `|a|`'s combination bound the quadratic.
        let (v, abs_v) = self.combine_with_abs(beta);
        let norm_v = crate::linalg::norm2(&v).sqrt();
        let norm_abs = crate::linalg::norm2(&abs_v).sqrt();
        let n = v.len();
        // |v_exact - v| per coordinate <= (gamma_N + eta_max) |a|-combination,
        // and the norms themselves round by gamma_n.
        let delta = (gamma(n_planes + 1) + eta_max) * norm_abs;
        let quad_up = match bounds {
            None => {
                let radius = (norm_v + delta) * (1.0 + gamma(n + 2));
                radius * radius * (1.0 + 4.0 * U) / (2.0 * lambda)
            }
            Some((lo, hi)) => {
                // lambda sum h_j(x_j) with x = -v / lambda, its sum's and
                // terms' rounding, and what v's error moves it by.
                let mut h = 0.0;
                let mut abs_h = 0.0;
                let mut norm_x = 0.0;
                for j in 0..n {
                    let x = -v[j] / lambda;
                    let c = x.max(lo[j]).min(hi[j]);
                    let hj = c * x - 0.5 * c * c;
                    h += hj;
                    abs_h += (c * x).abs() + 0.5 * c * c;
                    norm_x += x * x;
                }
                let norm_x = norm_x.sqrt() * (1.0 + gamma(n + 2));
                let d = delta / lambda * (1.0 + gamma(2));
                lambda * (h + gamma(n + 4) * abs_h + (norm_x + d) * d) * (1.0 + 4.0 * U)
            }
        };
        let ball = (2.0 * f_best.max(0.0) / lambda).sqrt() * (1.0 + 4.0 * U);
        let mut linear = 0.0;
        let mut error = 0.0;
        for p in 0..parts {
            linear += offsets[p];
            // The offsets' sum rounds, the exact weights differ by eta, and
            // the planes' own errors at the optimum.
            let sum_err = gamma(count[p]) * abs_offsets[p];
            error += sum_err
                + eta[p] * (offsets[p].abs() + sum_err)
                + (1.0 + eta[p]) * (errs_offset[p] + errs_slope[p] * ball);
        }
        // The quadratic as computed, without the allowances.
        let quad = match bounds {
            None => norm_v * norm_v / (2.0 * lambda),
            Some((lo, hi)) => (0..n)
                .map(|j| {
                    let x = -v[j] / lambda;
                    let c = x.max(lo[j]).min(hi[j]);
                    lambda * (c * x - 0.5 * c * c)
                })
                .sum(),
        };
        let value = linear - quad_up;
        let slack = error * (1.0 + gamma(parts + 4)) + gamma(parts + 4) * (linear.abs() + quad_up);
        let bound = value - slack;
        if bound.is_nan() {
            Certified::NOTHING
        } else {
            Certified {
                value: bound,
                // What rounding costs even where `v` vanishes: the planes'
                // and offsets' errors, and `v`'s own error squared.
                irreducible: error + delta * delta / (2.0 * lambda),
                allowance: (linear - quad) - bound,
            }
        }
    }
}

/// A lower bound and what rounding took off it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Certified {
    /// The bound.
    pub value: f64,
    /// The part of the rounding allowance that no iterate removes (at the
    /// optimum `v = lambda w*` is small, its cross term with `v`'s error
    /// too): when it exceeds `F` itself, the data's scale is beyond what
    /// `f64` can certify.
    pub irreducible: f64,
    /// All that rounding took off the bound: with a stopping tolerance
    /// below it, the gap stalls at the rounding floor.
    pub allowance: f64,
}

impl Certified {
    /// No bound at all.
    pub const NOTHING: Certified = Certified {
        value: f64::NEG_INFINITY,
        irreducible: f64::INFINITY,
        allowance: f64::INFINITY,
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::{Plane, Slope};

    fn plane(part: usize, a: Vec<f64>, b: f64) -> Plane {
        Plane {
            part,
            a: Slope::new(a),
            b,
            err: PlaneError::default(),
        }
    }

    /// With exact planes and exact weights the bound is the dual value up
    /// to a few roundings, and never above it.
    #[test]
    fn exact_planes_give_the_dual_value_rounded_down() {
        let mut bundle = Bundle::new(2, 1, 10);
        bundle.add(vec![
            plane(0, vec![1.0, 0.0], 0.5),
            plane(0, vec![0.0, -2.0], 1.0),
        ]);
        let beta = [0.25, 0.75];
        let lambda = 0.5;
        // v = (0.25, -1.5); D = 0.125 + 0.75 - (0.0625 + 2.25) / 1.0
        let exact = 0.875 - 2.3125;
        let bound = bundle.certified_dual(&beta, lambda, 10.0).value;
        assert!(bound <= exact, "{bound} > {exact}");
        assert!(exact - bound < 1e-13, "{bound} too loose against {exact}");
    }

    /// The Gram route's cancellation: a coordinate at 1e30 next to ones.
    /// Whatever the bound, it may not exceed the exactly computed dual
    /// value (done here in scaled arithmetic on the one large coordinate).
    #[test]
    fn huge_coordinates_give_a_bound_below_the_dual_value() {
        let mut bundle = Bundle::new(2, 1, 10);
        let a1 = vec![1e30, 1.0];
        let a2_0 = -1e30 + 1e14;
        let a2 = vec![a2_0, -1.0];
        bundle.add(vec![plane(0, a1, 0.5), plane(0, a2, 0.5)]);
        let beta = [0.5, 0.5];
        let lambda = 1.0;
        // v_0 = (1e30 + a2_0) / 2 is exact in f64 (Sterbenz), v_1 = 0; the
        // Gram route cancels 1e60-sized entries instead.
        let v0 = 0.5 * (1e30 + a2_0);
        let exact = 0.5 - v0 * v0 / 2.0 * (1.0 + 4.0 * U);
        let bound = bundle.certified_dual(&beta, lambda, 1.0).value;
        assert!(bound <= exact, "{bound} > {exact}");
    }

    /// Weights off the simplex are rescaled onto it (any simplex point
    /// bounds); negative ones bound nothing.
    #[test]
    fn weights_are_rescaled_and_negative_ones_refused() {
        let mut bundle = Bundle::new(1, 1, 10);
        bundle.add(vec![plane(0, vec![1.0], 0.0)]);
        let one = bundle.certified_dual(&[1.0], 1.0, 1.0).value;
        assert_eq!(bundle.certified_dual(&[3.0], 1.0, 1.0).value, one);
        assert!(one <= -0.5 && one > -0.5 - 1e-14, "{one}");
        assert_eq!(
            bundle.certified_dual(&[-0.1], 1.0, 1.0).value,
            f64::NEG_INFINITY
        );
    }

    /// A plane's declared error lowers the bound by at least that error.
    #[test]
    fn plane_errors_lower_the_bound() {
        let mut exact = Bundle::new(1, 1, 10);
        exact.add(vec![plane(0, vec![0.0], 1.0)]);
        let mut loose = Bundle::new(1, 1, 10);
        let mut p = plane(0, vec![0.0], 1.0);
        p.err = PlaneError {
            offset: 1e-3,
            slope: 1e-3,
        };
        loose.add(vec![p]);
        let lambda = 2.0;
        let f_best = 1.0; // ball radius 1
        let a = exact.certified_dual(&[1.0], lambda, f_best).value;
        let b = loose.certified_dual(&[1.0], lambda, f_best).value;
        assert!(a - b >= 2e-3 * (1.0 - 1e-12), "{a} vs {b}");
    }
}

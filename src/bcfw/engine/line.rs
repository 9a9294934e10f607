//! The exact line searches of BCFW's steps: along a direction in
//! `self.dir` (under a box, by bisection on the slope), and the FW step
//! without a box from its scalars.

use super::BcfwState;

impl BcfwState {
    /// The exact line search of `phi(gamma) = f(v + gamma d, l + gamma dl)`
    /// on `[0, gmax]`; returns the step and the decrease of `f`.
    pub(super) fn line_search(&self, i: usize, dl: f64, gmax: f64) -> (f64, f64) {
        if self.classes.is_some() {
            return self.class_line_search(i, dl, gmax);
        }
        let d = &self.dir;
        let lambda = self.lambda;
        let slope0 = lambda * d.dot_dense(point!(self)) - dl;
        if slope0 >= 0.0 || d.nnz() == 0 {
            return (0.0, 0.0);
        }
        let gamma = match &self.bounds {
            None => {
                let curv = lambda * d.norm2();
                if curv > 0.0 {
                    (-slope0 / curv).min(gmax)
                } else {
                    gmax
                }
            }
            Some(bounds) => {
                // phi' is non-decreasing (f is convex): bisection on its sign.
                let slope = |g: f64| -> f64 {
                    let mut s = 0.0;
                    for (&j, &x) in d.idx.iter().zip(&d.val) {
                        let j = j as usize;
                        s += bounds.clip(j, self.v[j] + g * x) * x;
                    }
                    lambda * s - dl
                };
                let top = if gmax.is_finite() { gmax } else { 1e12 };
                if slope(top) <= 0.0 {
                    top
                } else {
                    let (mut lo, mut hi) = (0.0, top);
                    for _ in 0..100 {
                        let mid = 0.5 * (lo + hi);
                        if slope(mid) <= 0.0 {
                            lo = mid;
                        } else {
                            hi = mid;
                        }
                        if hi - lo <= 1e-15 * hi {
                            break;
                        }
                    }
                    lo
                }
            }
        };
        (gamma, self.gain(dl, gamma))
    }

    /// `f(now) - f(after a step gamma along d)`, computed exactly.
    pub(super) fn gain(&self, dl: f64, gamma: f64) -> f64 {
        let d = &self.dir;
        let lambda = self.lambda;
        let mut dh = 0.0;
        for (&j, &x) in d.idx.iter().zip(&d.val) {
            let j = j as usize;
            let (a, b) = (self.v[j], self.v[j] + gamma * x);
            dh += match &self.bounds {
                Some(bd) if bd.is_constrained(j) => bd.h(j, a) - bd.h(j, b),
                _ => 0.5 * (a * a - b * b),
            };
        }
        lambda * dh + gamma * dl
    }
}

/// The FW step without a box along `w_s - w_i`, from its scalars
/// (`psi` the corner's, `scale = 1/(lambda n)`).
pub(super) struct FwLine {
    /// The change of `l` per unit step, `L(s)/n - l_i`.
    pub dl: f64,
    /// `scale <w, psi>`.
    pub scaled_w_dot_psi: f64,
    /// `<w, w_i>`.
    pub w_dot_wi: f64,
    /// `scale^2 ||psi||^2`.
    pub scaled_psi_norm2: f64,
    /// `scale <psi, w_i>`.
    pub scaled_psi_dot_wi: f64,
    /// `||w_i||^2`.
    pub w_norm2: f64,
}

impl FwLine {
    /// The step (`fixed`, or the exact line search on `[0, 1]`) and the
    /// decrease of the dual objective it gives.
    pub fn step(&self, lambda: f64, fixed: Option<f64>) -> (f64, f64) {
        // -phi'(0): the block gap.
        let g = self.dl - lambda * (self.scaled_w_dot_psi - self.w_dot_wi);
        let curvature =
            (self.scaled_psi_norm2 - 2.0 * self.scaled_psi_dot_wi + self.w_norm2).max(0.0);
        let gamma = match fixed {
            Some(gamma) => gamma,
            None if g <= 0.0 => 0.0,
            None if curvature > 0.0 => (g / (lambda * curvature)).min(1.0),
            None => 1.0,
        };
        (gamma, gamma * g - 0.5 * lambda * gamma * gamma * curvature)
    }
}

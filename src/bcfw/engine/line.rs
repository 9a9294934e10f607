//! The exact line search of BCFW's steps along the direction in
//! `self.scratch.dir` (under a box, by bisection on the slope), and the decrease of
//! the dual objective a step gives.

use super::BcfwState;

impl BcfwState {
    /// The exact line search of `phi(gamma) = f(v + gamma d, l + gamma dl)`
    /// on `[0, gmax]`; returns the step and the decrease of `f`.
    pub(super) fn line_search(&self, i: usize, dl: f64, gmax: f64) -> (f64, f64) {
        if self.form.classes().is_some() {
            return self.class_line_search(i, dl, gmax);
        }
        let d = &self.scratch.dir;
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
        let d = &self.scratch.dir;
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

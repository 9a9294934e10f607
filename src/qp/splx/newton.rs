//! Newton steps on the support (see the parent module, "Newton steps").
//!
//! On the face of the support `S` (the planes with `beta_i > 0`), `D` is a
//! concave quadratic under one equality per part. A direction that keeps
//! every part's sum is `d = Z y`: in each part one plane `r` (its largest
//! weight) takes `-sum` of the others' `y`. The Newton direction solves
//!
//! ```text
//! (Z^T H Z / mu + rho I) y = Z^T g,
//! ```
//!
//! with `(Z^T g)_a = g_a - g_r` and `(Z^T H Z)_ab = H_ab - H_ar - H_rb +
//! H_rr` (the curvature of the pair steps, for every pair of moves at
//! once). The small ridge `rho` keeps the factorisation positive where
//! rounding makes a singular `Z^T H Z` indefinite; along a direction where
//! `H` is flat it makes `y` long, and the step length below cuts it. Whatever
//! `d` the rounding gives, the step is taken safely: `D(beta + t d)` is the
//! concave parabola `t (g.d) - t^2 (d.H d) / (2 mu)`, maximised over the `t`
//! that keep `beta >= 0`, and a step that would not raise `D` is not taken.
//! A step cut short by a plane reaching 0 drops that plane from the support.

use super::columns::Columns;
use super::*;

/// The ridge, relative to the largest diagonal entry of `Z^T H Z / mu`; it is
/// raised by `RIDGE_GROWTH` when the factorisation meets a pivot that is
/// not positive, at most `RIDGE_TRIES` times.
const RIDGE: f64 = 1e-8;
const RIDGE_GROWTH: f64 = 1e3;
const RIDGE_TRIES: u32 = 3;
/// A support of more planes than this gets no Newton step (the
/// factorisation is cubic in it).
pub(super) const MAX_SUPPORT: usize = 512;
/// Newton steps in a row at most (each one that is cut short drops a plane).
const STEPS_PER_PHASE: u32 = 8;

/// Buffers of the Newton steps, reused between calls.
#[derive(Default)]
pub(super) struct Newton {
    /// The support's planes, part after part (only parts with 2 or more),
    /// each part's reference plane first.
    support: Vec<usize>,
    /// For every entry of `support`, the position of its part's reference.
    reference: Vec<usize>,
    /// The moves (every entry of `support` but the references), positions
    /// in `support`.
    moves: Vec<usize>,
    /// `Z^T H Z / mu + rho I` and then its Cholesky factor, row-major (lower
    /// half used).
    factor: Vec<f64>,
    /// `Z^T H Z / mu` before the ridge (for a retry with a larger one).
    unridged: Vec<f64>,
    /// `Z^T g`, then `y`.
    y: Vec<f64>,
    /// The direction on `support`.
    dir: Vec<f64>,
    /// `H[., S] d` over all planes of the problem.
    hd: Vec<f64>,
    /// The support's weights after a projected step, and `H[., S]` times
    /// their change.
    target: Vec<f64>,
    hd_moved: Vec<f64>,
}

/// What a phase of Newton steps did.
pub(super) struct Phase {
    /// Steps taken.
    pub(super) steps: u64,
    /// The increase of `D` they made.
    pub(super) gain: f64,
}

impl Newton {
    /// The cost of a step in units of pair updates on `planes` planes (a
    /// pair update costs about `planes` multiply-adds), for pacing.
    pub(super) fn cost(support: usize, planes: usize) -> u64 {
        let s = support as u64;
        s * s * s / (3 * planes.max(1) as u64) + 2 * s
    }

    /// Planes in the support at the last step.
    pub(super) fn support_len(&self) -> usize {
        self.support.len()
    }

    /// Up to `STEPS_PER_PHASE` Newton steps on the problem `(cols, lists,
    /// g, beta)`, keeping `g` up to date; stops after a full step (the face
    /// is solved), when a step would not raise `D`, or when the update
    /// budget is spent.
    pub(super) fn phase<C: Columns>(
        &mut self,
        cols: &mut C,
        lists: &Lists,
        mu: f64,
        g: &mut [f64],
        beta: &mut [f64],
        count: &mut Counter,
    ) -> Result<Phase> {
        let mut phase = Phase {
            steps: 0,
            gain: 0.0,
        };
        for _ in 0..STEPS_PER_PHASE {
            if !count.left() || !self.collect(lists, beta) {
                break;
            }
            let Some((gain, cut)) = self.step(cols, mu, g, beta)? else {
                break;
            };
            count.updates += 1;
            phase.steps += 1;
            phase.gain += gain;
            if !cut {
                break;
            }
        }
        Ok(phase)
    }

    /// One step on the support [`Newton::collect`] found; `None` if none
    /// was taken, else the gain and whether a plane stopped it.
    fn step<C: Columns>(
        &mut self,
        cols: &mut C,
        mu: f64,
        g: &mut [f64],
        beta: &mut [f64],
    ) -> Result<Option<(f64, bool)>> {
        for &a in &self.support {
            cols.prepare(a)?;
        }
        if !self.factorise(cols, mu) {
            return Ok(None);
        }
        self.direction(g);
        let d = &self.dir;
        let slope: f64 = self.support.iter().zip(d).map(|(&a, &x)| g[a] * x).sum();
        if !(slope > 0.0 && slope.is_finite()) {
            return Ok(None);
        }
        // H[., S] d over every plane, for the curvature and for `g`.
        let terms = self.support.iter().copied().zip(d.iter().copied());
        columns_times(cols, terms, g.len(), &mut self.hd);
        let curv: f64 = self
            .support
            .iter()
            .zip(d)
            .map(|(&a, &x)| x * self.hd[a])
            .sum::<f64>()
            / mu;
        // The longest step that keeps `beta >= 0`, and the plane that stops it.
        let mut t_max = f64::INFINITY;
        let mut stop = NONE;
        for (k, (&a, &x)) in self.support.iter().zip(d).enumerate() {
            if x < 0.0 {
                let t = beta[a] / -x;
                if t < t_max {
                    t_max = t;
                    stop = k;
                }
            }
        }
        let t_best = if curv > 0.0 {
            slope / curv
        } else {
            f64::INFINITY
        };
        let cut = t_max <= t_best;
        let t = if cut { t_max } else { t_best };
        let gain = t * slope - 0.5 * t * t * curv;
        if !(t > 0.0 && t.is_finite() && gain > 0.0 && gain.is_finite()) {
            return Ok(None);
        }
        // Cut short, the full step with the weights that would turn
        // negative set to 0 (each part rescaled to sum 1) drops them all at
        // once; it is taken if it gains more.
        if cut && t_best.is_finite() {
            let projected = self.projected(cols, mu, g, beta, t_best);
            if projected > gain && projected.is_finite() {
                for (&a, &b) in self.support.iter().zip(&self.target) {
                    beta[a] = b;
                }
                subtract_scaled(g, 1.0 / mu, &self.hd_moved);
                return Ok(Some((projected, true)));
            }
        }
        let d = &self.dir;
        for (k, (&a, &x)) in self.support.iter().zip(d).enumerate() {
            let b = beta[a] + t * x;
            beta[a] = if (cut && k == stop) || b < 0.0 {
                0.0
            } else {
                b
            };
        }
        subtract_scaled(g, t / mu, &self.hd);
        Ok(Some((gain, cut)))
    }

    /// The gain of moving the support's weights to `beta + t d` with the
    /// negative ones set to 0 and each part rescaled to sum 1; leaves those
    /// weights in `target` and `H[., S] (target - beta)` in `hd_moved`.
    fn projected<C: Columns>(&mut self, cols: &C, mu: f64, g: &[f64], beta: &[f64], t: f64) -> f64 {
        self.target.clear();
        self.target.extend(
            self.support
                .iter()
                .zip(&self.dir)
                .map(|(&a, &x)| (beta[a] + t * x).max(0.0)),
        );
        let mut from = 0;
        while from < self.support.len() {
            let to = (from + 1..self.support.len())
                .find(|&k| self.reference[k] == k)
                .unwrap_or(self.support.len());
            let sum: f64 = self.target[from..to].iter().sum();
            self.target[from..to].iter_mut().for_each(|b| *b /= sum);
            from = to;
        }
        let moved = || {
            self.support
                .iter()
                .zip(&self.target)
                .map(|(&a, &b)| (a, b - beta[a]))
                .filter(|&(_, delta)| delta != 0.0)
        };
        let linear: f64 = moved().fold(0.0, |acc, (a, delta)| acc + g[a] * delta);
        columns_times(cols, moved(), g.len(), &mut self.hd_moved);
        let quadratic: f64 = self
            .support
            .iter()
            .zip(&self.target)
            .map(|(&a, &b)| (b - beta[a]) * self.hd_moved[a])
            .sum::<f64>()
            / mu;
        linear - 0.5 * quadratic
    }

    /// The support of every part with at least 2 planes in it, and the
    /// moves; false if there is none or the support is too large.
    fn collect(&mut self, lists: &Lists, beta: &[f64]) -> bool {
        self.support.clear();
        self.reference.clear();
        self.moves.clear();
        for p in 0..lists.len() {
            let from = self.support.len();
            self.support
                .extend(lists.list(p).iter().copied().filter(|&a| beta[a] > 0.0));
            if self.support.len() - from < 2 {
                self.support.truncate(from);
                continue;
            }
            // The largest weight (the lowest index among ties) first.
            let mut best = from;
            for k in from..self.support.len() {
                if beta[self.support[k]] > beta[self.support[best]] {
                    best = k;
                }
            }
            self.support.swap(from, best);
            self.reference.resize(self.support.len(), from);
            self.moves.extend(from + 1..self.support.len());
        }
        !self.support.is_empty() && self.support.len() <= MAX_SUPPORT
    }

    /// Builds `Z^T H Z / mu + rho I` and factors it; false if no ridge
    /// within `RIDGE_TRIES` makes it positive definite.
    fn factorise<C: Columns>(&mut self, cols: &C, mu: f64) -> bool {
        let n = self.moves.len();
        let h = |x: usize, y: usize| cols.col(self.support[x])[self.support[y]];
        let reduced = |a: usize, b: usize| {
            let (ra, rb) = (self.reference[a], self.reference[b]);
            (((h(a, b) - h(a, rb)) - h(ra, b)) + h(ra, rb)) / mu
        };
        self.factor.clear();
        self.factor.resize(n * n, 0.0);
        let mut diag_max = 0.0f64;
        for i in 0..n {
            for j in 0..=i {
                self.factor[i * n + j] = reduced(self.moves[i], self.moves[j]);
            }
            diag_max = diag_max.max(self.factor[i * n + i]);
        }
        if !(diag_max > 0.0 && diag_max.is_finite()) {
            return false;
        }
        self.unridged.clear();
        self.unridged.extend_from_slice(&self.factor);
        let mut ridge = RIDGE * diag_max;
        for _ in 0..RIDGE_TRIES {
            for i in 0..n {
                self.factor[i * n + i] += ridge;
            }
            if cholesky(&mut self.factor, n) {
                return true;
            }
            self.factor.copy_from_slice(&self.unridged);
            ridge *= RIDGE_GROWTH;
        }
        false
    }

    /// The direction into `dir`, from the factor.
    fn direction(&mut self, g: &[f64]) {
        let n = self.moves.len();
        self.y.clear();
        self.y.extend(
            self.moves
                .iter()
                .map(|&a| g[self.support[a]] - g[self.support[self.reference[a]]]),
        );
        solve_factored(&self.factor, n, &mut self.y);
        self.dir.clear();
        self.dir.resize(self.support.len(), 0.0);
        for (&a, &y) in self.moves.iter().zip(&self.y) {
            self.dir[a] = y;
            self.dir[self.reference[a]] -= y;
        }
    }
}

/// `out = sum_k x_k H[., a_k]` over `len` planes, for the `(a_k, x_k)`
/// of `terms`, in their order.
fn columns_times<C: Columns>(
    cols: &C,
    terms: impl Iterator<Item = (usize, f64)>,
    len: usize,
    out: &mut Vec<f64>,
) {
    out.clear();
    out.resize(len, 0.0);
    for (a, x) in terms {
        crate::linalg::axpy(x, cols.col(a), out);
    }
}

/// `g -= s h` (`g + (-s) h`: the same bits, negation being exact).
fn subtract_scaled(g: &mut [f64], s: f64, h: &[f64]) {
    crate::linalg::axpy(-s, h, g);
}

/// In-place Cholesky factorisation `A = L L^T` of the lower half of the
/// row-major `n x n` matrix `a`; false if a pivot is not positive.
fn cholesky(a: &mut [f64], n: usize) -> bool {
    for j in 0..n {
        let row_j = &a[j * n..j * n + j];
        let s = a[j * n + j] - row_j.iter().map(|x| x * x).sum::<f64>();
        if !(s > 0.0 && s.is_finite()) {
            return false;
        }
        let pivot = s.sqrt();
        a[j * n + j] = pivot;
        for i in j + 1..n {
            let (upper, lower) = a.split_at_mut(i * n);
            let row_j = &upper[j * n..j * n + j];
            let row_i = &mut lower[..=j];
            let dot: f64 = row_i[..j].iter().zip(row_j).map(|(x, y)| x * y).sum();
            row_i[j] = (row_i[j] - dot) / pivot;
        }
    }
    true
}

/// Solves `L L^T x = b` in place, `L` from [`cholesky`].
fn solve_factored(l: &[f64], n: usize, b: &mut [f64]) {
    for i in 0..n {
        let row = &l[i * n..i * n + i];
        let dot: f64 = row.iter().zip(&b[..i]).map(|(x, y)| x * y).sum();
        b[i] = (b[i] - dot) / l[i * n + i];
    }
    for i in (0..n).rev() {
        b[i] /= l[i * n + i];
        let x = b[i];
        for (k, bk) in b[..i].iter_mut().enumerate() {
            *bk -= l[i * n + k] * x;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn cholesky_and_its_solve_against_the_definitions() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for n in [1usize, 2, 5, 17] {
            // A = B B^T + I, positive definite.
            let b: Vec<f64> = (0..n * n).map(|_| rng.gen_range(-1.0..1.0)).collect();
            let a: Vec<f64> = (0..n * n)
                .map(|k| {
                    let (i, j) = (k / n, k % n);
                    let dot: f64 = (0..n).map(|t| b[i * n + t] * b[j * n + t]).sum();
                    dot + if i == j { 1.0 } else { 0.0 }
                })
                .collect();
            let mut l = a.clone();
            assert!(cholesky(&mut l, n));
            for i in 0..n {
                for j in 0..=i {
                    let llt: f64 = (0..=j).map(|t| l[i * n + t] * l[j * n + t]).sum();
                    assert!((llt - a[i * n + j]).abs() <= 1e-12 * (1.0 + a[i * n + j].abs()));
                }
            }
            let rhs: Vec<f64> = (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect();
            let mut x = rhs.clone();
            solve_factored(&l, n, &mut x);
            for i in 0..n {
                let ax: f64 = (0..n).map(|j| a[i * n + j] * x[j]).sum();
                assert!((ax - rhs[i]).abs() <= 1e-11, "n {n}: row {i}");
            }
        }
        // Not positive definite: refused.
        let mut m = vec![1.0, 0.0, 2.0, 1.0];
        assert!(!cholesky(&mut m, 2));
        let mut m = vec![f64::NAN];
        assert!(!cholesky(&mut m, 1));
    }
}

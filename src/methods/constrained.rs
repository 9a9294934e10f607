//! The reduced problem of the bundle methods under constraints on `w`
//! (docs/bundle-methods.md, "Constraints"): a box `lo <= w <= hi` and rows
//! `G w >= h`,
//!
//! ```text
//! min_{w in box, G w >= h} lambda/2 ||w||^2 + alpha ||w - c||^2 + sum_p max_{i in p} (<a_i, w> + b_i)
//! ```
//!
//! With `mu = lambda + 2 alpha`, `beta` on the parts' simplices, `nu >= 0`
//! for the rows and `v = (2 alpha c - A^T beta + G^T nu) / mu`, the
//! Lagrangian's minimiser over the box is `w = clip(v)` and the dual is
//!
//! ```text
//! D(beta, nu) = b.beta + h.nu + alpha ||c||^2 - mu/2 ||v||^2 + mu/2 dist(v, box)^2,
//! ```
//!
//! concave and piecewise quadratic, with gradient `b + A w` in `beta` and
//! `h - G w` in `nu`. Every coordinate without a finite bound has
//! `w_j = v_j`, so `D` and its gradient need only the Gram matrix of the
//! planes and rows and their entries on the bounded coordinates. The dual is
//! maximised by accelerated projected gradient (FISTA with a restart
//! whenever `D` falls; step `1 / L`, `L = lambda_max(K) / mu` bounded by the
//! smaller of the trace and the largest absolute row sum of `K`).
//!
//! For any `beta` on the simplices and `nu >= 0`, `D` is at most the reduced
//! problem's minimum, which is at most `min F` over the feasible set: the
//! value returned is always `D` at the returned multipliers, whatever the
//! solve reached. The primal point is `clip(v)`, which is in the box; when
//! it violates a row (by about the solve's accuracy) it is repaired by
//! projections onto the violated rows and the box, and if that fails moved
//! towards the anchor (the best point so far, feasible); the final vector
//! is checked as computed (see `repair`).

use std::sync::Arc;
use std::time::Instant;

use crate::bcfw::Bounds;
use crate::bundle::{Bundle, Slope};
use crate::error::{Error, Result};
use crate::linalg::{dist, dot, norm2};
use crate::qp::QpOptions;

/// The constraints of a run: a box and/or linear rows `G w >= h`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Constraints {
    /// The box (`None`: no bounds).
    pub bounds: Option<Bounds>,
    /// The rows of `G`, each of the problem's dimension.
    pub rows: Vec<Vec<f64>>,
    /// The right-hand sides `h`.
    pub rhs: Vec<f64>,
}

impl Constraints {
    /// Whether nothing constrains `w`.
    pub fn is_empty(&self) -> bool {
        self.bounds.is_none() && self.rows.is_empty()
    }

    /// Checks and sets the rows: `matrix` holds `rhs.len()` rows of `dim`
    /// numbers, row after row; every number finite.
    pub fn set_rows(&mut self, matrix: &[f64], rhs: &[f64], dim: usize) -> Result<()> {
        if matrix.len() != rhs.len() * dim {
            return Err(Error::dimension_mismatch(format!(
                "the constraint matrix has {} numbers but {} rows of dimension {dim} need {}",
                matrix.len(),
                rhs.len(),
                rhs.len() * dim
            )));
        }
        for (r, h) in rhs.iter().enumerate() {
            if !h.is_finite() {
                return Err(Error::non_finite(format!(
                    "the right-hand side b[{r}] of A w >= b is {h}"
                )));
            }
            let row = &matrix[r * dim..(r + 1) * dim];
            if let Some((j, v)) = crate::linalg::first_non_finite(row) {
                return Err(Error::non_finite(format!(
                    "the constraint matrix entry A[{r}][{j}] is {v}"
                )));
            }
        }
        self.rows = matrix.chunks(dim.max(1)).map(<[f64]>::to_vec).collect();
        self.rows.truncate(rhs.len());
        self.rhs = rhs.to_vec();
        Ok(())
    }

    /// `G w - h` of row `r`.
    fn slack(&self, r: usize, w: &[f64]) -> f64 {
        dot(&self.rows[r], w) - self.rhs[r]
    }

    /// The first row `w` violates, with its slack.
    pub fn violated_row(&self, w: &[f64]) -> Option<(usize, f64)> {
        (0..self.rows.len())
            .map(|r| (r, self.slack(r, w)))
            .find(|&(_, s)| s < 0.0)
    }

    /// Projects a start onto the box and refuses one that then violates a
    /// row (projecting onto the rows is a QP of its own).
    pub fn prepare_start(&self, w: &mut [f64]) -> Result<()> {
        if let Some(b) = &self.bounds {
            let clipped = b.clip_all(w);
            w.copy_from_slice(&clipped);
        }
        if let Some((r, s)) = self.violated_row(w) {
            return Err(Error::invalid_argument(format!(
                "the start w (projected onto the box) violates row {r} of A w >= b by {}: \
                 give a start that satisfies the linear constraints",
                -s
            )));
        }
        Ok(())
    }
}

/// What a constrained solve gives.
pub struct Solved {
    /// `D` at the returned multipliers: a lower bound on the reduced minimum.
    pub value: f64,
    /// The feasible primal point.
    pub w: Vec<f64>,
}

/// The constraints and the row multipliers kept between iterations (the
/// warm starts of the `alpha = 0` problem and of the prox problem).
pub struct ConstrainedDual {
    constraints: Arc<Constraints>,
    nu_lower: Vec<f64>,
    nu_prox: Vec<f64>,
}

impl ConstrainedDual {
    /// The state for `constraints`, multipliers at 0.
    pub fn new(constraints: Arc<Constraints>) -> Self {
        let rows = constraints.rows.len();
        ConstrainedDual {
            constraints,
            nu_lower: vec![0.0; rows],
            nu_prox: vec![0.0; rows],
        }
    }

    /// Solves the reduced problem with prox constant `alpha` around `centre`
    /// (ignored at `alpha = 0`); the plane weights are warm-started from and
    /// written to `bundle.beta` (`prox` false) or `bundle.beta_prox`.
    /// `anchor` is a feasible point (the best so far).
    #[allow(clippy::too_many_arguments)]
    pub fn solve(
        &mut self,
        bundle: &mut Bundle,
        lambda: f64,
        alpha: f64,
        centre: &[f64],
        anchor: &[f64],
        prox: bool,
        opts: &QpOptions,
        seconds: &mut f64,
    ) -> Result<Solved> {
        let started = Instant::now();
        let zero_centre;
        let centre = if alpha == 0.0 {
            zero_centre = vec![0.0; bundle.dim()];
            &zero_centre
        } else {
            centre
        };
        let reduced = Reduced::new(bundle, &self.constraints, lambda, alpha, centre);
        let (beta, nu) = if prox {
            (&mut bundle.beta_prox, &mut self.nu_prox)
        } else {
            (&mut bundle.beta, &mut self.nu_lower)
        };
        let mut x: Vec<f64> = beta.iter().chain(nu.iter()).copied().collect();
        let value = reduced.maximise(&mut x, opts)?;
        let n = reduced.n;
        beta.copy_from_slice(&x[..n]);
        nu.copy_from_slice(&x[n..]);
        let w = reduced.primal(bundle, &self.constraints, &x, centre, anchor);
        *seconds += started.elapsed().as_secs_f64();
        if !value.is_finite() {
            return Err(Error::non_finite(format!(
                "the constrained reduced problem's dual value is {value}"
            )));
        }
        Ok(Solved { value, w })
    }
}

/// `a` on the coordinates `coords` (increasing).
fn gather(slope: &Slope, coords: &[usize]) -> Vec<f64> {
    match slope {
        Slope::Dense(a) => coords.iter().map(|&j| a[j]).collect(),
        Slope::Sparse { index, value, .. } => coords
            .iter()
            .map(|&j| index.binary_search(&(j as u32)).map_or(0.0, |k| value[k]))
            .collect(),
    }
}

/// The dual of one reduced problem: the planes and rows as `Z` (`n` planes,
/// then the rows), with coefficients `gamma = [beta, -nu]`.
struct Reduced {
    n: usize,
    m: usize,
    /// The dimension of `w`.
    dim: usize,
    alpha: f64,
    mu: f64,
    /// `K = Z Z^T`, row-major `m x m`.
    k: Vec<f64>,
    /// `b` for the planes, `h` for the rows.
    offsets: Vec<f64>,
    /// `Z c` and `||c||^2`.
    zc: Vec<f64>,
    cc: f64,
    /// The coordinates with a finite bound, their bounds, `Z` on them
    /// (row-major `m x |C|`) and `c` on them.
    lo: Vec<f64>,
    hi: Vec<f64>,
    z_bounded: Vec<f64>,
    c_bounded: Vec<f64>,
    /// The planes of every part.
    parts: Vec<Vec<usize>>,
}

/// `D` and what its gradient and the gap need, at one point.
struct Eval {
    value: f64,
    /// The gradient: `b + A w`, then `h - G w`.
    grad: Vec<f64>,
}

impl Reduced {
    fn new(bundle: &Bundle, cons: &Constraints, lambda: f64, alpha: f64, centre: &[f64]) -> Self {
        let n = bundle.len();
        let rows = cons.rows.len();
        let m = n + rows;
        let coords: Vec<usize> = match &cons.bounds {
            Some(b) => (0..bundle.dim()).filter(|&j| b.is_constrained(j)).collect(),
            None => Vec::new(),
        };
        let mut k = vec![0.0; m * m];
        let plane_rows: Vec<Vec<f64>> = cons.rows.iter().map(|g| bundle.dots(g)).collect();
        for i in 0..n {
            k[i * m..i * m + n].copy_from_slice(qp_column(bundle, i));
        }
        for r in 0..rows {
            for i in 0..n {
                k[i * m + n + r] = plane_rows[r][i];
                k[(n + r) * m + i] = plane_rows[r][i];
            }
            for s in 0..rows {
                k[(n + r) * m + n + s] = dot(&cons.rows[r], &cons.rows[s]);
            }
        }
        let with_rows = |plane_dots: Vec<f64>, p: &[f64]| -> Vec<f64> {
            let mut out = plane_dots;
            out.extend(cons.rows.iter().map(|g| dot(g, p)));
            out
        };
        let mut z_bounded = Vec::with_capacity(m * coords.len());
        for plane in bundle.planes() {
            z_bounded.extend(gather(&plane.slope, &coords));
        }
        for g in &cons.rows {
            z_bounded.extend(coords.iter().map(|&j| g[j]));
        }
        let (lo, hi) = match &cons.bounds {
            Some(b) => (
                coords.iter().map(|&j| b.lower()[j]).collect(),
                coords.iter().map(|&j| b.upper()[j]).collect(),
            ),
            None => (Vec::new(), Vec::new()),
        };
        let mut parts = vec![Vec::new(); bundle.num_parts()];
        for (i, p) in bundle.parts_of_planes().into_iter().enumerate() {
            parts[p].push(i);
        }
        let mut offsets = bundle.offsets();
        offsets.extend_from_slice(&cons.rhs);
        Reduced {
            n,
            m,
            dim: bundle.dim(),
            alpha,
            mu: lambda + 2.0 * alpha,
            k,
            offsets,
            zc: if alpha == 0.0 {
                vec![0.0; m]
            } else {
                with_rows(bundle.dots(centre), centre)
            },
            cc: norm2(centre),
            lo,
            hi,
            z_bounded,
            c_bounded: coords.iter().map(|&j| centre[j]).collect(),
            parts,
        }
    }

    fn gamma(&self, x: &[f64]) -> Vec<f64> {
        let mut g = x.to_vec();
        g[self.n..].iter_mut().for_each(|v| *v = -*v);
        g
    }

    fn eval(&self, x: &[f64]) -> Eval {
        let (m, mu, alpha) = (self.m, self.mu, self.alpha);
        let gamma = self.gamma(x);
        let s: Vec<f64> = (0..m)
            .map(|i| dot(&self.k[i * m..(i + 1) * m], &gamma))
            .collect();
        let gamma_zc = dot(&gamma, &self.zc);
        let v2 =
            (4.0 * alpha * alpha * self.cc - 4.0 * alpha * gamma_zc + dot(&gamma, &s)) / (mu * mu);
        let nb = self.lo.len();
        let mut q: Vec<f64> = (0..m)
            .map(|i| (2.0 * alpha * self.zc[i] - s[i]) / mu)
            .collect();
        let mut delta2 = 0.0;
        for j in 0..nb {
            let mut zg = 0.0;
            for (i, g) in gamma.iter().enumerate() {
                zg += g * self.z_bounded[i * nb + j];
            }
            let v = (2.0 * alpha * self.c_bounded[j] - zg) / mu;
            let delta = v.max(self.lo[j]).min(self.hi[j]) - v;
            if delta != 0.0 {
                for (i, qi) in q.iter_mut().enumerate() {
                    *qi += self.z_bounded[i * nb + j] * delta;
                }
                delta2 += delta * delta;
            }
        }
        let value = dot(&self.offsets, x) + alpha * self.cc - 0.5 * mu * v2 + 0.5 * mu * delta2;
        let grad = (0..m)
            .map(|i| {
                if i < self.n {
                    self.offsets[i] + q[i]
                } else {
                    self.offsets[i] - q[i]
                }
            })
            .collect();
        Eval { value, grad }
    }

    /// The inner stopping measure. When `w = clip(v)` satisfies every row
    /// it is the duality gap `P(w) - D(x)` (the Frank-Wolfe gap of `beta`
    /// plus `nu`'s complementary slackness), an upper bound on `max D -
    /// D(x)`; a row that `w` violates adds `(nu_r + 1)` times its violation
    /// (the first-order cost of repairing it, with a floor). It only decides
    /// when to stop: the bound returned is `D` itself.
    fn gap(&self, x: &[f64], e: &Eval) -> f64 {
        let n = self.n;
        let mut gap = 0.0;
        for part in &self.parts {
            let best = part
                .iter()
                .map(|&i| e.grad[i])
                .fold(f64::NEG_INFINITY, f64::max);
            let mean: f64 = part.iter().map(|&i| x[i] * e.grad[i]).sum();
            if !part.is_empty() {
                gap += best - mean;
            }
        }
        for (nu, grad) in x[n..].iter().zip(&e.grad[n..]) {
            // grad = h - G w: positive on a violated row.
            let slack = -grad;
            gap += if slack >= 0.0 {
                nu * slack
            } else {
                (nu + 1.0) * -slack
            };
        }
        gap
    }

    /// `x` onto the parts' simplices and `nu >= 0`.
    fn project(&self, x: &mut [f64]) {
        for part in &self.parts {
            let mut vals: Vec<f64> = part.iter().map(|&i| x[i]).collect();
            project_simplex(&mut vals);
            for (&i, v) in part.iter().zip(vals) {
                x[i] = v;
            }
        }
        x[self.n..].iter_mut().for_each(|v| *v = v.max(0.0));
    }

    /// Maximises `D` from `x`; `x` becomes the best point met and the
    /// return value `D` there. Without rows, rounds of the active-set
    /// method come first (`active_set`); accelerated projected gradient
    /// finishes what they leave.
    fn maximise(&self, x: &mut [f64], opts: &QpOptions) -> Result<f64> {
        self.project(x);
        if self.m == self.n && !self.lo.is_empty() {
            self.active_set(x, opts)?;
        }
        Ok(self.fista(x, opts))
    }

    /// `v` on the bounded coordinates at `x`, and which of them `clip`
    /// moves (-1: to `lo`, 1: to `hi`, 0: inside).
    fn clipped(&self, x: &[f64]) -> Vec<i8> {
        let nb = self.lo.len();
        let gamma = self.gamma(x);
        (0..nb)
            .map(|j| {
                let zg: f64 = (0..self.m)
                    .map(|i| gamma[i] * self.z_bounded[i * nb + j])
                    .sum();
                let v = (2.0 * self.alpha * self.c_bounded[j] - zg) / self.mu;
                if v < self.lo[j] {
                    -1
                } else if v > self.hi[j] {
                    1
                } else {
                    0
                }
            })
            .collect()
    }

    /// The primal-dual active-set method on the box (no rows): with the
    /// clipped coordinates `S` held at their bounds and the others free,
    /// the dual is the unconstrained reduced problem's multi-simplex QP
    /// with `H = K - sum_{j in S} z_j z_j^T` and
    /// `f_i = b_i + (2 alpha / mu) (Z c - sum_{j in S} z_j c_j)_i + sum_{j in S} z_ij bound_j`,
    /// solved by `crate::qp` (the coordinate solver, fast on the
    /// ill-conditioned duals of bundles). Its solution is optimal for `D`
    /// once `clip(v)` clips exactly `S` there (then the gradients agree);
    /// otherwise `S` becomes the set `clip(v)` clips and the QP is solved
    /// again, at most 20 times. `x` ends at the best point for the true
    /// `D` met (the QP's own value is not used).
    fn active_set(&self, x: &mut [f64], opts: &QpOptions) -> Result<()> {
        let (n, nb) = (self.n, self.lo.len());
        let part_of: Vec<usize> = {
            let mut p = vec![0; n];
            for (k, part) in self.parts.iter().enumerate() {
                part.iter().for_each(|&i| p[i] = k);
            }
            p
        };
        let mut best = self.eval(x).value;
        let mut best_x = x.to_vec();
        let mut side = self.clipped(x);
        for _ in 0..20 {
            let set: Vec<usize> = (0..nb).filter(|&j| side[j] != 0).collect();
            let free: Vec<usize> = (0..nb).filter(|&j| side[j] == 0).collect();
            let z = |i: usize, j: usize| self.z_bounded[i * nb + j];
            // H from the free coordinates when every coordinate is bounded
            // and fewer are free (fewer terms, no cancellation).
            let direct = nb == self.dim && free.len() < set.len();
            let mut cols: Vec<Vec<f64>> = (0..n)
                .map(|i| {
                    if direct {
                        vec![0.0; n]
                    } else {
                        self.k[i * self.m..i * self.m + n].to_vec()
                    }
                })
                .collect();
            let (terms, sign) = if direct { (&free, 1.0) } else { (&set, -1.0) };
            for &j in terms {
                for (i, col) in cols.iter_mut().enumerate() {
                    let zi = sign * z(i, j);
                    if zi != 0.0 {
                        for (k, h) in col.iter_mut().enumerate() {
                            *h += zi * z(k, j);
                        }
                    }
                }
            }
            let scale = 2.0 * self.alpha / self.mu;
            let f: Vec<f64> = (0..n)
                .map(|i| {
                    let mut fi = self.offsets[i] + scale * self.zc[i];
                    for &j in &set {
                        let bound = if side[j] < 0 { self.lo[j] } else { self.hi[j] };
                        fi += z(i, j) * (bound - scale * self.c_bounded[j]);
                    }
                    fi
                })
                .collect();
            let gram = DenseGram(cols);
            crate::qp::solve(&gram, self.mu, &f, &part_of, self.parts.len(), x, opts)?;
            self.project(x);
            let value = self.eval(x).value;
            if value > best {
                best = value;
                best_x.copy_from_slice(x);
            }
            let next = self.clipped(x);
            if next == side {
                break;
            }
            side = next;
        }
        x.copy_from_slice(&best_x);
        Ok(())
    }

    /// Accelerated projected gradient from `x` (feasible); `x` becomes the
    /// best point met and the return value `D` there.
    fn fista(&self, x: &mut [f64], opts: &QpOptions) -> f64 {
        let m = self.m;
        let trace: f64 = (0..m).map(|i| self.k[i * m + i]).sum();
        let row_sum = (0..m)
            .map(|i| {
                self.k[i * m..(i + 1) * m]
                    .iter()
                    .map(|v| v.abs())
                    .sum::<f64>()
            })
            .fold(0.0, f64::max);
        let lipschitz = (trace.min(row_sum) / self.mu).max(1e-300);
        let mut best = self.eval(x);
        let mut best_x = x.to_vec();
        let mut prev = x.to_vec();
        let mut cur = x.to_vec();
        let mut cur_value = best.value;
        let mut t = 1.0f64;
        let mut idle = 0u32;
        let budget = if opts.max_updates > 0 {
            (opts.max_updates / m.max(1) as u64).max(100)
        } else {
            u64::MAX
        };
        let mut steps = 0u64;
        loop {
            let gap = self.gap(&best_x, &best);
            if gap <= opts.tol_gap || steps >= budget || idle >= 2000 {
                break;
            }
            if steps.is_multiple_of(64) && opts.deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
            steps += 1;
            let t_next = 0.5 * (1.0 + (1.0 + 4.0 * t * t).sqrt());
            let momentum = (t - 1.0) / t_next;
            let y: Vec<f64> = cur
                .iter()
                .zip(&prev)
                .map(|(c, p)| c + momentum * (c - p))
                .collect();
            let gy = self.eval(&y).grad;
            let mut next: Vec<f64> = y.iter().zip(&gy).map(|(v, g)| v + g / lipschitz).collect();
            self.project(&mut next);
            let e = self.eval(&next);
            if e.value < cur_value {
                // Restart: forget the momentum, step from the current point.
                t = 1.0;
                prev.clone_from(&cur);
                idle += 1;
                if momentum == 0.0 {
                    // A plain step went down: rounding only.
                    idle = idle.max(2000);
                }
                continue;
            }
            t = t_next;
            prev = std::mem::replace(&mut cur, next);
            cur_value = e.value;
            let scale = 4.0 * f64::EPSILON * (1.0 + best.value.abs());
            if e.value > best.value + scale {
                idle = 0;
            } else {
                idle += 1;
            }
            if e.value > best.value {
                best = e;
                best_x.clone_from(&cur);
            }
        }
        x.copy_from_slice(&best_x);
        best.value
    }

    /// The feasible primal point of `x`: `clip(v)`, moved towards the
    /// anchor when it violates a row.
    fn primal(
        &self,
        bundle: &Bundle,
        cons: &Constraints,
        x: &[f64],
        centre: &[f64],
        anchor: &[f64],
    ) -> Vec<f64> {
        let n = self.n;
        let mut w = bundle.combine(&x[..n]);
        for (r, g) in cons.rows.iter().enumerate() {
            crate::linalg::axpy(-x[n + r], g, &mut w);
        }
        for (j, wj) in w.iter_mut().enumerate() {
            let v = (2.0 * self.alpha * centre[j] - *wj) / self.mu;
            *wj = match &cons.bounds {
                Some(b) => b.clip(j, v),
                None => v,
            };
        }
        if cons.rows.is_empty() {
            return w;
        }
        repair(cons, w, anchor)
    }
}

/// A feasible point near `w` (in the box, maybe violating rows): the dual
/// solve leaves a violation of the order of its accuracy, which rounds of
/// projections onto the violated rows (each aimed a hair inside, by
/// `1e-12` of the row's scale, to absorb rounding) and onto the box remove;
/// they move `w` by about the violation. If 50 rounds do not give a point
/// that satisfies every row as computed, `w` is moved towards the feasible
/// `anchor` by the smallest share that satisfies every row, and failing
/// that the anchor itself is returned.
fn repair(cons: &Constraints, mut w: Vec<f64>, anchor: &[f64]) -> Vec<f64> {
    let norms: Vec<f64> = cons.rows.iter().map(|g| norm2(g)).collect();
    for _ in 0..50 {
        if cons.violated_row(&w).is_none() {
            return w;
        }
        for (r, g) in cons.rows.iter().enumerate() {
            let slack = cons.slack(r, &w);
            if slack < 0.0 && norms[r] > 0.0 {
                let scale: f64 = g.iter().zip(&w).map(|(a, b)| (a * b).abs()).sum();
                let target = -slack + 1e-12 * (scale + cons.rhs[r].abs());
                crate::linalg::axpy(target / norms[r], g, &mut w);
            }
        }
        if let Some(b) = &cons.bounds {
            w = b.clip_all(&w);
        }
    }
    if cons.violated_row(&w).is_none() {
        return w;
    }
    let mut theta: f64 = 0.0;
    for r in 0..cons.rows.len() {
        let (gw, g0) = (cons.slack(r, &w), cons.slack(r, anchor));
        if gw < 0.0 {
            theta = theta.max(if g0 > gw { -gw / (g0 - gw) } else { 1.0 });
        }
    }
    for k in 0..=12 {
        let t = theta + (1.0 - theta) * if k == 0 { 0.0 } else { 10f64.powi(k - 12) };
        let mut b: Vec<f64> = w
            .iter()
            .zip(anchor)
            .map(|(wi, ai)| (1.0 - t) * wi + t * ai)
            .collect();
        if let Some(bounds) = &cons.bounds {
            b = bounds.clip_all(&b);
        }
        if cons.violated_row(&b).is_none() {
            return b;
        }
    }
    anchor.to_vec()
}

/// A Gram matrix held as its columns.
struct DenseGram(Vec<Vec<f64>>);

impl crate::qp::Gram for DenseGram {
    fn size(&self) -> usize {
        self.0.len()
    }
    fn column(&self, j: usize) -> &[f64] {
        &self.0[j]
    }
}

/// Column `i` of the planes' Gram matrix.
fn qp_column(bundle: &Bundle, i: usize) -> &[f64] {
    crate::qp::Gram::column(bundle, i)
}

/// Euclidean projection onto the probability simplex (sort-based).
fn project_simplex(v: &mut [f64]) {
    if v.is_empty() {
        return;
    }
    let mut sorted = v.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let mut sum = 0.0;
    let mut tau = 0.0;
    for (k, &u) in sorted.iter().enumerate() {
        sum += u;
        let t = (sum - 1.0) / (k + 1) as f64;
        if u - t > 0.0 {
            tau = t;
        }
    }
    v.iter_mut().for_each(|x| *x = (*x - tau).max(0.0));
}

/// `||w - c||`, the step length the prox rule measures.
pub fn step_length(w: &[f64], centre: &[f64]) -> f64 {
    dist(w, centre)
}

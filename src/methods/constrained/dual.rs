//! The dual of the constrained reduced problem as a multi-simplex problem
//! (see the parent module): its value and gradient from the Gram matrix and
//! the bounded coordinates, the active-set rounds over `crate::qp` and the
//! accelerated projected gradient.

use std::time::Instant;

use super::clipped_gram::{ClippedGram, Source};
use super::Constraints;
use crate::bundle::{Bundle, Slope};
use crate::error::Result;
use crate::linalg::{dot, norm2};
use crate::qp::QpOptions;

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

/// The dual of one reduced problem as a multi-simplex problem: `Z` holds
/// the `n` planes, then per row `r` a pair on a simplex of its own: the
/// plane `(-U_r g_r / |g_r|, U_r h_r / |g_r|)` and the zero plane. Its
/// weight `sigma_r` is `nu_r / U_r`, so the pair stands for the multiplier
/// `0 <= nu_r <= U_r` of the normalised row: a restriction of the dual
/// (its values stay lower bounds), exact while no `nu_r` reaches its cap.
pub(super) struct Reduced {
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
    /// The bundle's generation and the rows' caps: `K` and `Z` are the
    /// same for the same key.
    generation: u64,
    caps: Vec<f64>,
}

/// `D` and what its gradient and the gap need, at one point.
struct Eval {
    value: f64,
    /// The gradient: `b + A w`, then `h - G w`.
    grad: Vec<f64>,
}

impl Reduced {
    pub(super) fn new(
        bundle: &Bundle,
        cons: &Constraints,
        norms: &[f64],
        caps: &[f64],
        lambda: f64,
        alpha: f64,
        centre: &[f64],
    ) -> Self {
        let n = bundle.len();
        let rows = cons.rows.len();
        let m = n + 2 * rows;
        // Row r's plane: -scale[r] g_r; a zero row (satisfied: the start is
        // feasible) gets a zero plane.
        let scale: Vec<f64> = (0..rows)
            .map(|r| {
                if norms[r] > 0.0 {
                    caps[r] / norms[r]
                } else {
                    0.0
                }
            })
            .collect();
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
            let a = n + 2 * r;
            for i in 0..n {
                k[i * m + a] = -scale[r] * plane_rows[r][i];
                k[a * m + i] = k[i * m + a];
            }
            for s in 0..rows {
                let b = n + 2 * s;
                k[a * m + b] = scale[r] * scale[s] * dot(&cons.rows[r], &cons.rows[s]);
            }
        }
        let with_rows = |plane_dots: Vec<f64>, p: &[f64]| -> Vec<f64> {
            let mut out = plane_dots;
            for (g, sc) in cons.rows.iter().zip(&scale) {
                out.extend([-sc * dot(g, p), 0.0]);
            }
            out
        };
        let mut z_bounded = Vec::with_capacity(m * coords.len());
        for plane in bundle.planes() {
            z_bounded.extend(gather(&plane.slope, &coords));
        }
        for (g, sc) in cons.rows.iter().zip(&scale) {
            z_bounded.extend(coords.iter().map(|&j| -sc * g[j]));
            z_bounded.extend(coords.iter().map(|_| 0.0));
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
        parts.extend((0..rows).map(|r| vec![n + 2 * r, n + 2 * r + 1]));
        let mut offsets = bundle.offsets();
        for (h, sc) in cons.rhs.iter().zip(&scale) {
            offsets.extend([sc * h, 0.0]);
        }
        Reduced {
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
            generation: bundle.generation(),
            caps: caps.to_vec(),
        }
    }

    fn eval(&self, x: &[f64]) -> Eval {
        let (m, mu, alpha) = (self.m, self.mu, self.alpha);
        let gamma = x;
        let s: Vec<f64> = (0..m)
            .map(|i| dot(&self.k[i * m..(i + 1) * m], gamma))
            .collect();
        let gamma_zc = dot(gamma, &self.zc);
        let v2 =
            (4.0 * alpha * alpha * self.cc - 4.0 * alpha * gamma_zc + dot(gamma, &s)) / (mu * mu);
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
        let grad = (0..m).map(|i| self.offsets[i] + q[i]).collect();
        Eval { value, grad }
    }

    /// The Frank-Wolfe gap of `x` over all simplices: the duality gap of
    /// `clip(v)` in the problem whose rows are priced by their caps (exact
    /// penalties), an upper bound on `max D - D(x)`. It decides when to
    /// stop; the bound returned is `D` itself.
    fn gap(&self, x: &[f64], e: &Eval) -> f64 {
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
        gap
    }

    /// `x` onto the simplices.
    fn project(&self, x: &mut [f64]) {
        for part in &self.parts {
            let mut vals: Vec<f64> = part.iter().map(|&i| x[i]).collect();
            project_simplex(&mut vals);
            for (&i, v) in part.iter().zip(vals) {
                x[i] = v;
            }
        }
    }

    /// Maximises `D` from `x`; `x` becomes the best point met, and the
    /// return values are `D` there and its Frank-Wolfe gap (an upper bound
    /// on `max D - D`). Rounds of the active-set method come first
    /// (`active_set`, its `H` kept in `gram` between solves on the same
    /// planes); accelerated projected gradient finishes what they leave.
    pub(super) fn maximise(
        &self,
        x: &mut [f64],
        opts: &QpOptions,
        gram: &mut ClippedGram,
    ) -> Result<(f64, f64)> {
        self.project(x);
        self.active_set(x, opts, gram)?;
        Ok(self.fista(x, opts))
    }

    /// `v` on the bounded coordinates at `x`, and which of them `clip`
    /// moves (-1: to `lo`, 1: to `hi`, 0: inside).
    fn clipped(&self, x: &[f64]) -> Vec<i8> {
        let nb = self.lo.len();
        let gamma = x;
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

    /// The primal-dual active-set method on the box: with the
    /// clipped coordinates `S` held at their bounds and the others free,
    /// the dual is the unconstrained reduced problem's multi-simplex QP
    /// with `H = K - sum_{j in S} z_j z_j^T` and
    /// `f_i = b_i + (2 alpha / mu) (Z c - sum_{j in S} z_j c_j)_i + sum_{j in S} z_ij bound_j`,
    /// solved by `crate::qp` (the coordinate solver, fast on the
    /// ill-conditioned duals of bundles). Its solution is optimal for `D`
    /// once `clip(v)` clips exactly `S` there (then the gradients agree);
    /// otherwise `S` is updated (coordinates `clip(v)` newly clips join
    /// first; only a round that adds none lets any leave) and the QP is
    /// solved again, at most 20 times. The rounds also stop as soon as `D`'s own
    /// Frank-Wolfe gap is within the tolerance (a coordinate that crossed
    /// its bound by a hair changes `S` but not what the solve needs). `x`
    /// ends at the best point met by the true `D` and its gap (`better`; the QP's own
    /// value is not used). `H` comes from `gram`, updated by the coordinates that
    /// changed (`clipped_gram`).
    fn active_set(&self, x: &mut [f64], opts: &QpOptions, gram: &mut ClippedGram) -> Result<()> {
        let (n, nb) = (self.m, self.lo.len());
        let part_of: Vec<usize> = {
            let mut p = vec![0; n];
            for (k, part) in self.parts.iter().enumerate() {
                part.iter().for_each(|&i| p[i] = k);
            }
            p
        };
        let start = self.eval(x);
        let mut best = (start.value, self.gap(x, &start));
        let mut best_x = x.to_vec();
        if best.1 <= opts.tol_gap {
            return Ok(());
        }
        let mut side = self.clipped(x);
        for _ in 0..20 {
            let set: Vec<usize> = (0..nb).filter(|&j| side[j] != 0).collect();
            let z = |i: usize, j: usize| self.z_bounded[i * nb + j];
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
            let source = Source {
                key: (self.generation, &self.caps),
                k: &self.k,
                z: &self.z_bounded,
                m: n,
                nb,
                all_bounded: nb == self.dim,
            };
            let clipped: Vec<bool> = side.iter().map(|&s| s != 0).collect();
            let h = gram.sync(&source, &clipped);
            crate::qp::solve(h, self.mu, &f, &part_of, self.parts.len(), x, opts)?;
            self.project(x);
            let e = self.eval(x);
            let point = (e.value, self.gap(x, &e));
            if better(point, best) {
                best = point;
                best_x.copy_from_slice(x);
            }
            let next = self.clipped(x);
            if next == side || best.1 <= opts.tol_gap {
                break;
            }
            // Coordinates join before any leaves: swapping the whole set
            // at once makes it swing back and forth between rounds.
            let joins = (0..nb).any(|j| next[j] != 0 && next[j] != side[j]);
            if joins {
                for (s, &t) in side.iter_mut().zip(&next) {
                    if t != 0 {
                        *s = t;
                    }
                }
            } else {
                side = next;
            }
        }
        x.copy_from_slice(&best_x);
        Ok(())
    }

    /// Accelerated projected gradient from `x` (feasible); `x` becomes the
    /// best point met and the return values are `D` there and its gap.
    fn fista(&self, x: &mut [f64], opts: &QpOptions) -> (f64, f64) {
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
        let mut gap = self.gap(x, &best);
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
            let e_gap = self.gap(&cur, &e);
            if better((e.value, e_gap), (best.value, gap)) {
                best = e;
                gap = e_gap;
                best_x.clone_from(&cur);
            }
        }
        x.copy_from_slice(&best_x);
        (best.value, gap)
    }
}

/// Whether a point of the dual, `(D, its Frank-Wolfe gap)`, is better than
/// `best`: a higher `D`, or, at a `D` equal to within rounding, a smaller
/// gap. Near the optimum `D` is flat to the last bits, and a round that
/// closes the gap can end a few ulps below its warm start: keeping the warm
/// start (by `D` alone) returns a point whose gap the outer method cannot
/// close, and BMRM then proposes nearly the same `w` again and again.
fn better(point: (f64, f64), best: (f64, f64)) -> bool {
    let tie = 4.0 * f64::EPSILON * (1.0 + best.0.abs());
    point.0 > best.0 + tie || (point.0 >= best.0 - tie && point.1 < best.1)
}

/// Column `i` of the planes' Gram matrix.
pub(super) fn qp_column(bundle: &Bundle, i: usize) -> &[f64] {
    crate::qp::Gram::column(bundle, i)
}

/// Euclidean projection onto the probability simplex (sort-based). A
/// point already on it up to the rounding of its sum is left as it is: the
/// projection would shift every weight by that rounding, lifting the zero
/// weights of inactive planes to about `1e-17`, and a plane with a
/// positive weight is never cleaned out of the bundle.
fn project_simplex(v: &mut [f64]) {
    if v.is_empty() {
        return;
    }
    let sum: f64 = v.iter().sum();
    let rounding = 4.0 * f64::EPSILON * v.len() as f64;
    if v.iter().all(|&x| x >= 0.0) && (sum - 1.0).abs() <= rounding {
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

//! AD3's local sub-problem for one pairwise factor, solved exactly by the
//! active-set method of Martins et al. (JMLR 16, 2015, section 6).
//!
//! For an edge `e = (u, v)` with table `theta` and targets `z_u`, `z_v`
//! (the consensus marginals plus the multipliers over `eta`), find the
//! distribution `beta` over the edge's configurations `(a, b)` (allowed
//! rows and columns only) minimising
//!
//! ```text
//! 1/2 ||q_u - z_u||^2 + 1/2 ||q_v - z_v||^2 - sum_(a,b) beta_ab theta_ab / eta
//! q_u(a) = sum_b beta_ab,   q_v(b) = sum_a beta_ab
//! ```
//!
//! A configuration's column of the map `beta -> (q_u, q_v)` is `e_a (+) e_b`:
//! the configurations are the edges of the complete bipartite graph between
//! the rows and the columns, and a set of them is linearly independent
//! exactly when it is a forest there. The active set `W` is kept a forest,
//! so the KKT system of the equality-constrained problem on `W`,
//!
//! ```text
//! [G 1; 1^T 0] [beta; tau] = [z_u(a) + z_v(b) + theta_ab / eta; 1],
//! G_(ab),(a'b') = [a = a'] + [b = b'],
//! ```
//!
//! is non-singular. Each step either moves towards the solution on `W`
//! (dropping the configuration that blocks it), or, at that solution, asks
//! the factor's MAP oracle for the configuration with the largest reduced
//! score `theta_ab / eta + (z_u - q_u)(a) + (z_v - q_v)(b)`: at most `tau`
//! means optimal, otherwise it enters `W`. When it would close a cycle in
//! `W`, the cycle's alternating signs give a direction that leaves `q`
//! unchanged and lowers the objective by its reduced score minus `tau`;
//! `beta` moves along it until a configuration of the cycle leaves.
//! Warm-started from the previous call's active set, a call usually takes
//! one or two steps.

/// The most steps of one call (then the current feasible point is kept:
/// the bound of the outer loop does not depend on the sub-problem's
/// accuracy).
const MAX_STEPS: usize = 200;

/// One factor's active set and weights, kept between calls.
#[derive(Debug, Clone, Default)]
pub(super) struct ActiveSet {
    /// The configurations `(a, b)` in the active set.
    configs: Vec<(u32, u32)>,
    /// Their weights (a distribution).
    beta: Vec<f64>,
}

impl ActiveSet {
    /// Adds the factor's joint marginals (row-major, `nv` columns) to
    /// `out`.
    pub(super) fn add_joint(&self, nv: usize, out: &mut [f64]) {
        for (&(a, b), &w) in self.configs.iter().zip(&self.beta) {
            out[a as usize * nv + b as usize] += w;
        }
    }

    /// Drops the active set if a configuration is no longer allowed.
    pub(super) fn restrict(&mut self, rows: &[bool], cols: &[bool]) {
        if self
            .configs
            .iter()
            .any(|&(a, b)| !rows[a as usize] || !cols[b as usize])
        {
            self.configs.clear();
            self.beta.clear();
        }
    }
}

/// The sub-problem's data: the table (row-major, `rows.len()` by
/// `cols.len()`), the targets and which states are allowed.
pub(super) struct Factor<'a> {
    /// `theta_ab / eta`, row-major.
    pub scaled: &'a [f64],
    /// `z_u`.
    pub z_u: &'a [f64],
    /// `z_v`.
    pub z_v: &'a [f64],
    /// The first node's allowed states.
    pub rows: &'a [bool],
    /// The second node's allowed states.
    pub cols: &'a [bool],
}

impl Factor<'_> {
    /// The reduced score of `(a, b)` at marginals `q_u`, `q_v`.
    #[inline]
    fn reduced(&self, a: usize, b: usize, q_u: &[f64], q_v: &[f64]) -> f64 {
        let nv = self.cols.len();
        self.scaled[a * nv + b] + (self.z_u[a] - q_u[a]) + (self.z_v[b] - q_v[b])
    }

    /// The allowed configuration of largest reduced score (the first on
    /// ties) and that score.
    fn oracle(&self, q_u: &[f64], q_v: &[f64]) -> ((u32, u32), f64) {
        let mut best = ((0, 0), f64::NEG_INFINITY);
        for (a, _) in self.rows.iter().enumerate().filter(|r| *r.1) {
            for (b, _) in self.cols.iter().enumerate().filter(|c| *c.1) {
                let r = self.reduced(a, b, q_u, q_v);
                if r > best.1 {
                    best = ((a as u32, b as u32), r);
                }
            }
        }
        best
    }

    /// Solves the sub-problem from `set` (updated), writing the marginals
    /// `q_u` and `q_v`.
    pub(super) fn solve(&self, set: &mut ActiveSet, q_u: &mut [f64], q_v: &mut [f64]) {
        let marginals = |set: &ActiveSet, q_u: &mut [f64], q_v: &mut [f64]| {
            q_u.iter_mut().for_each(|x| *x = 0.0);
            q_v.iter_mut().for_each(|x| *x = 0.0);
            for (&(a, b), &w) in set.configs.iter().zip(&set.beta) {
                q_u[a as usize] += w;
                q_v[b as usize] += w;
            }
        };
        if set.configs.is_empty() {
            marginals(set, q_u, q_v);
            let (y, _) = self.oracle(q_u, q_v);
            set.configs.push(y);
            set.beta.push(1.0);
        }
        let scale = self
            .scaled
            .iter()
            .chain(self.z_u)
            .chain(self.z_v)
            .fold(1.0f64, |m, x| m.max(x.abs()));
        let tolerance = 1e-12 * scale;
        for _ in 0..MAX_STEPS {
            let Some((hat, tau)) = self.kkt(set) else {
                // Not reached with a forest; keep the feasible point.
                break;
            };
            if hat.iter().all(|&x| x >= 0.0) {
                set.beta = hat;
                marginals(set, q_u, q_v);
                let (y, r) = self.oracle(q_u, q_v);
                if r <= tau + tolerance || set.configs.contains(&y) {
                    return;
                }
                self.enter(set, y);
            } else {
                // Move towards `hat` until a weight reaches zero; drop it.
                let mut step = 1.0;
                let mut blocking = 0;
                for (k, (&b, &h)) in set.beta.iter().zip(&hat).enumerate() {
                    if h < 0.0 {
                        let t = b / (b - h);
                        if t < step {
                            step = t;
                            blocking = k;
                        }
                    }
                }
                for (b, &h) in set.beta.iter_mut().zip(&hat) {
                    *b += step * (h - *b);
                }
                set.configs.remove(blocking);
                set.beta.remove(blocking);
                normalise(&mut set.beta);
            }
        }
        marginals(set, q_u, q_v);
    }

    /// Adds configuration `y` (weight 0) to `set`; when it closes a cycle,
    /// moves along the cycle's null direction and drops the configuration
    /// that reaches zero weight first.
    fn enter(&self, set: &mut ActiveSet, y: (u32, u32)) {
        let nu = self.rows.len();
        // The path from row y.0 to column y.1 in the forest, as indices
        // into `set.configs`.
        let Some(path) = forest_path(&set.configs, nu, y.0 as usize, nu + y.1 as usize) else {
            set.configs.push(y);
            set.beta.push(0.0);
            return;
        };
        // The cycle y, path[0], path[1], ...: signs +1 (y), -1, +1, ...
        let mut step = f64::INFINITY;
        let mut blocking = path[0];
        for (k, &c) in path.iter().enumerate() {
            if k % 2 == 0 && set.beta[c] < step {
                step = set.beta[c];
                blocking = c;
            }
        }
        for (k, &c) in path.iter().enumerate() {
            if k % 2 == 0 {
                set.beta[c] -= step;
            } else {
                set.beta[c] += step;
            }
        }
        set.configs[blocking] = y;
        set.beta[blocking] = step;
        normalise(&mut set.beta);
    }

    /// The equality-constrained minimiser on `set`: the weights and `tau`
    /// (`None` if the system is singular).
    fn kkt(&self, set: &ActiveSet) -> Option<(Vec<f64>, f64)> {
        let k = set.configs.len();
        let nv = self.cols.len();
        let size = k + 1;
        let mut m = vec![0.0; size * (size + 1)];
        for (i, &(a, b)) in set.configs.iter().enumerate() {
            for (j, &(c, d)) in set.configs.iter().enumerate() {
                m[i * (size + 1) + j] = f64::from(u8::from(a == c) + u8::from(b == d));
            }
            m[i * (size + 1) + k] = 1.0;
            m[i * (size + 1) + size] = self.z_u[a as usize]
                + self.z_v[b as usize]
                + self.scaled[a as usize * nv + b as usize];
            m[k * (size + 1) + i] = 1.0;
        }
        m[k * (size + 1) + size] = 1.0;
        let x = gauss(&mut m, size)?;
        Some((x[..k].to_vec(), x[k]))
    }
}

/// Rescales weights to sum to 1 (they drift by roundings).
fn normalise(beta: &mut [f64]) {
    let s: f64 = beta.iter().sum();
    if s > 0.0 {
        beta.iter_mut().for_each(|b| *b /= s);
    }
}

/// The configurations (indices into `configs`) on the path from vertex
/// `from` to vertex `to` of the bipartite forest `configs` (rows are
/// vertices `0..nu`, columns `nu..`), in order; `None` if not connected.
fn forest_path(configs: &[(u32, u32)], nu: usize, from: usize, to: usize) -> Option<Vec<usize>> {
    let ends = |c: usize| (configs[c].0 as usize, nu + configs[c].1 as usize);
    // Breadth-first search; `via[x]` = the configuration reaching vertex x.
    let mut via: Vec<(usize, usize)> = Vec::new(); // (vertex, config)
    let mut queue = vec![from];
    let mut seen = vec![from];
    let mut head = 0;
    while head < queue.len() {
        let x = queue[head];
        head += 1;
        if x == to {
            let mut path = Vec::new();
            let mut at = to;
            while at != from {
                let &(_, c) = via.iter().find(|(v, _)| *v == at)?;
                path.push(c);
                let (r, s) = ends(c);
                at = if r == at { s } else { r };
            }
            path.reverse();
            return Some(path);
        }
        for c in 0..configs.len() {
            let (r, s) = ends(c);
            let next = if r == x {
                s
            } else if s == x {
                r
            } else {
                continue;
            };
            if !seen.contains(&next) {
                seen.push(next);
                via.push((next, c));
                queue.push(next);
            }
        }
    }
    None
}

/// Solves the `size x size` system stored row-major with its right-hand
/// side as an extra column, by Gaussian elimination with partial pivoting.
fn gauss(m: &mut [f64], size: usize) -> Option<Vec<f64>> {
    let w = size + 1;
    for col in 0..size {
        let pivot = (col..size).max_by(|&i, &j| {
            m[i * w + col]
                .abs()
                .partial_cmp(&m[j * w + col].abs())
                .unwrap_or(std::cmp::Ordering::Equal)
        })?;
        if m[pivot * w + col].abs() < 1e-12 {
            return None;
        }
        if pivot != col {
            for k in 0..w {
                m.swap(pivot * w + k, col * w + k);
            }
        }
        for i in col + 1..size {
            let f = m[i * w + col] / m[col * w + col];
            if f != 0.0 {
                for k in col..w {
                    m[i * w + k] -= f * m[col * w + k];
                }
            }
        }
    }
    let mut x = vec![0.0; size];
    for i in (0..size).rev() {
        let mut s = m[i * w + size];
        for k in i + 1..size {
            s -= m[i * w + k] * x[k];
        }
        x[i] = s / m[i * w + i];
    }
    Some(x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The objective at a distribution over all configurations.
    fn objective(f: &Factor, beta: &[f64]) -> f64 {
        let (nu, nv) = (f.rows.len(), f.cols.len());
        let mut q_u = vec![0.0; nu];
        let mut q_v = vec![0.0; nv];
        let mut lin = 0.0;
        for a in 0..nu {
            for b in 0..nv {
                q_u[a] += beta[a * nv + b];
                q_v[b] += beta[a * nv + b];
                lin += beta[a * nv + b] * f.scaled[a * nv + b];
            }
        }
        let sq = |q: &[f64], z: &[f64]| q.iter().zip(z).map(|(x, y)| (x - y).powi(2)).sum::<f64>();
        0.5 * sq(&q_u, f.z_u) + 0.5 * sq(&q_v, f.z_v) - lin
    }

    /// The active set's answer satisfies the optimality conditions of the
    /// QP (checked independently: no allowed configuration has a reduced
    /// score above the weighted mean of the support's), and no random
    /// feasible point, nor a step from the answer towards one, does
    /// better.
    #[test]
    fn active_set_solves_the_factor_qp() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for case in 0..400 {
            let (nu, nv) = (rng.gen_range(1..=4), rng.gen_range(1..=4));
            let integer = rng.gen_bool(0.5);
            let draw = |rng: &mut ChaCha8Rng| {
                if integer {
                    f64::from(rng.gen_range(-2i32..=2))
                } else {
                    rng.gen_range(-2.0..2.0)
                }
            };
            let scaled: Vec<f64> = (0..nu * nv).map(|_| draw(&mut rng)).collect();
            let z_u: Vec<f64> = (0..nu).map(|_| draw(&mut rng)).collect();
            let z_v: Vec<f64> = (0..nv).map(|_| draw(&mut rng)).collect();
            let mut rows: Vec<bool> = (0..nu).map(|_| rng.gen_bool(0.8)).collect();
            let mut cols: Vec<bool> = (0..nv).map(|_| rng.gen_bool(0.8)).collect();
            rows[rng.gen_range(0..nu)] = true;
            cols[rng.gen_range(0..nv)] = true;
            let f = Factor {
                scaled: &scaled,
                z_u: &z_u,
                z_v: &z_v,
                rows: &rows,
                cols: &cols,
            };
            let mut set = ActiveSet::default();
            let (mut q_u, mut q_v) = (vec![0.0; nu], vec![0.0; nv]);
            f.solve(&mut set, &mut q_u, &mut q_v);
            let mut beta = vec![0.0; nu * nv];
            for (&(a, b), &w) in set.configs.iter().zip(&set.beta) {
                assert!(rows[a as usize] && cols[b as usize], "case {case}");
                assert!(w >= -1e-12, "case {case}: weight {w}");
                beta[a as usize * nv + b as usize] += w;
            }
            assert!((beta.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            let best = objective(&f, &beta);
            // Optimality: the objective's gradient along any vertex minus
            // the answer is >= 0 (convex problem over a simplex).
            let mut grad = vec![0.0; nu * nv];
            for a in 0..nu {
                for b in 0..nv {
                    grad[a * nv + b] = (q_u[a] - z_u[a]) + (q_v[b] - z_v[b]) - scaled[a * nv + b];
                }
            }
            let at: f64 = grad.iter().zip(&beta).map(|(g, b)| g * b).sum();
            for a in (0..nu).filter(|&a| rows[a]) {
                for b in (0..nv).filter(|&b| cols[b]) {
                    assert!(
                        grad[a * nv + b] >= at - 1e-9,
                        "case {case}: ({a}, {b}) descends: {} < {at}",
                        grad[a * nv + b]
                    );
                }
            }
            for _ in 0..20 {
                let mut other: Vec<f64> = (0..nu * nv)
                    .map(|k| {
                        if rows[k / nv] && cols[k % nv] {
                            rng.gen::<f64>()
                        } else {
                            0.0
                        }
                    })
                    .collect();
                let s: f64 = other.iter().sum();
                other.iter_mut().for_each(|x| *x /= s);
                assert!(objective(&f, &other) >= best - 1e-9, "case {case}");
                let mix: Vec<f64> = beta
                    .iter()
                    .zip(&other)
                    .map(|(b, o)| 0.99 * b + 0.01 * o)
                    .collect();
                assert!(objective(&f, &mix) >= best - 1e-12, "case {case}");
            }
        }
    }

    #[test]
    fn a_cycle_in_the_support_is_broken() {
        // Configurations (0,0), (0,1), (1,1) form a path; (1,0) closes a
        // cycle.
        let configs = [(0, 0), (0, 1), (1, 1)];
        assert_eq!(forest_path(&configs, 2, 1, 2), Some(vec![2, 1, 0]));
        assert_eq!(forest_path(&configs[..2], 2, 1, 2), None);
    }
}

//! The multi-simplex QP solver against an exact brute-force optimum on small
//! random instances: every choice of a support per part, the KKT linear
//! system of the equality-constrained QP on that support, the best `D` over
//! the feasible stationary points.

use super::{solve, Gram, QpOptions};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

struct Dense(Vec<Vec<f64>>);

impl Gram for Dense {
    fn size(&self) -> usize {
        self.0.len()
    }
    fn column(&self, j: usize) -> &[f64] {
        &self.0[j]
    }
}

fn value(h: &Dense, mu: f64, f: &[f64], beta: &[f64]) -> f64 {
    let n = f.len();
    let mut q = 0.0;
    for j in 0..n {
        for i in 0..n {
            q += beta[i] * h.0[j][i] * beta[j];
        }
    }
    let lin: f64 = f.iter().zip(beta).map(|(a, b)| a * b).sum();
    lin - q / (2.0 * mu)
}

/// Solves `m x = r` by Gaussian elimination with partial pivoting; `None`
/// if a pivot is negligible.
fn lin_solve(mut m: Vec<Vec<f64>>, mut r: Vec<f64>) -> Option<Vec<f64>> {
    let k = r.len();
    let scale = m
        .iter()
        .flatten()
        .fold(0.0f64, |a, &b| a.max(b.abs()))
        .max(f64::MIN_POSITIVE);
    for c in 0..k {
        let piv = (c..k).max_by(|&a, &b| m[a][c].abs().total_cmp(&m[b][c].abs()))?;
        if m[piv][c].abs() <= 1e-11 * scale {
            return None;
        }
        m.swap(c, piv);
        r.swap(c, piv);
        let (top, bottom) = m.split_at_mut(c + 1);
        let pivot = &top[c];
        for (off, row) in bottom.iter_mut().enumerate() {
            let t = row[c] / pivot[c];
            if t != 0.0 {
                for (x, &y) in row[c..].iter_mut().zip(&pivot[c..]) {
                    *x -= t * y;
                }
                r[c + 1 + off] -= t * r[c];
            }
        }
    }
    let mut x = vec![0.0; k];
    for c in (0..k).rev() {
        let s: f64 = (c + 1..k).map(|j| m[c][j] * x[j]).sum();
        x[c] = (r[c] - s) / m[c][c];
    }
    Some(x)
}

/// The exact optimum `max D` by enumerating one non-empty support per part.
fn brute_force(h: &Dense, mu: f64, f: &[f64], part: &[usize], num_parts: usize) -> f64 {
    let n = f.len();
    let lists: Vec<Vec<usize>> = (0..num_parts)
        .map(|p| (0..n).filter(|&i| part[i] == p).collect())
        .collect();
    let mut best = f64::NEG_INFINITY;
    // masks[p] runs over the non-empty subsets of part p.
    let mut masks = vec![1u32; num_parts];
    loop {
        let support: Vec<usize> = (0..num_parts)
            .flat_map(|p| {
                let m = masks[p];
                lists[p]
                    .iter()
                    .enumerate()
                    .filter(move |(k, _)| m >> k & 1 == 1)
                    .map(|(_, &i)| i)
            })
            .collect();
        let k = support.len();
        // [H_SS / mu, E^T; E, 0] [beta_S; lambda] = [f_S; 1]
        let mut m = vec![vec![0.0; k + num_parts]; k + num_parts];
        let mut r = vec![0.0; k + num_parts];
        for (a, &i) in support.iter().enumerate() {
            for (b, &j) in support.iter().enumerate() {
                m[a][b] = h.0[j][i] / mu;
            }
            m[a][k + part[i]] = 1.0;
            m[k + part[i]][a] = 1.0;
            r[a] = f[i];
        }
        for p in 0..num_parts {
            r[k + p] = 1.0;
        }
        if let Some(x) = lin_solve(m, r) {
            if x[..k].iter().all(|&b| b >= -1e-12) {
                let mut beta = vec![0.0; n];
                for (a, &i) in support.iter().enumerate() {
                    beta[i] = x[a].max(0.0);
                }
                // Feasible up to rounding: renormalise each part.
                for list in &lists {
                    let s: f64 = list.iter().map(|&i| beta[i]).sum();
                    for &i in list {
                        beta[i] /= s;
                    }
                }
                best = best.max(value(h, mu, f, &beta));
            }
        }
        // Next combination of masks.
        let mut p = 0;
        loop {
            if p == num_parts {
                return best;
            }
            masks[p] += 1;
            if masks[p] < 1 << lists[p].len() {
                break;
            }
            masks[p] = 1;
            p += 1;
        }
    }
}

struct Instance {
    h: Dense,
    mu: f64,
    f: Vec<f64>,
    part: Vec<usize>,
    num_parts: usize,
}

/// `H = A^T A` with `A` of 2 to 4 rows (so often singular), sometimes with
/// a duplicated plane, entries scaled by `scale`.
fn instance(rng: &mut ChaCha8Rng, scale: f64) -> Instance {
    let n = rng.gen_range(2..=7usize);
    let num_parts = rng.gen_range(1..=3usize.min(n));
    let rows = rng.gen_range(2..=4usize);
    let mut a: Vec<Vec<f64>> = (0..n)
        .map(|_| (0..rows).map(|_| rng.gen_range(-1.0..1.0)).collect())
        .collect();
    let mut f: Vec<f64> = (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect();
    if n >= 3 && rng.gen_bool(0.3) {
        // Two identical planes (same vector, possibly different offsets).
        a[n - 1] = a[0].clone();
        if rng.gen_bool(0.5) {
            f[n - 1] = f[0];
        }
    }
    let mut part: Vec<usize> = (0..n)
        .map(|i| {
            if i < num_parts {
                i
            } else {
                rng.gen_range(0..num_parts)
            }
        })
        .collect();
    // Shuffle the part labels so parts are not contiguous.
    for i in (1..n).rev() {
        let j = rng.gen_range(0..=i);
        part.swap(i, j);
    }
    let h: Vec<Vec<f64>> = (0..n)
        .map(|j| {
            (0..n)
                .map(|i| scale * a[i].iter().zip(&a[j]).map(|(x, y)| x * y).sum::<f64>())
                .collect()
        })
        .collect();
    let mu = [0.05, 0.3, 1.0, 4.0][rng.gen_range(0..4)] * scale;
    Instance {
        h: Dense(h),
        mu,
        f,
        part,
        num_parts,
    }
}

fn check_feasible(beta: &[f64], part: &[usize], num_parts: usize) {
    assert!(
        beta.iter().all(|&b| b >= 0.0),
        "negative weight in {beta:?}"
    );
    for p in 0..num_parts {
        let s: f64 = (0..beta.len())
            .filter(|&i| part[i] == p)
            .map(|i| beta[i])
            .sum();
        assert!((s - 1.0).abs() <= 1e-12, "part {p} sums to {s}");
    }
}

fn run_random(seed: u64, count: usize, scale: f64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let tol = 1e-11;
    for case in 0..count {
        let ins = instance(&mut rng, scale);
        let n = ins.f.len();
        let best = brute_force(&ins.h, ins.mu, &ins.f, &ins.part, ins.num_parts);
        assert!(
            best.is_finite(),
            "case {case}: no feasible stationary point"
        );
        // Cold start, and a warm start from random (infeasible) weights.
        let warm: Vec<f64> = (0..n).map(|_| rng.gen_range(-0.5..2.0)).collect();
        for start in [vec![0.0; n], warm] {
            let mut beta = start.clone();
            let opts = QpOptions {
                tol_gap: tol,
                max_updates: 0,
                deadline: None,
            };
            let res = solve(
                &ins.h,
                ins.mu,
                &ins.f,
                &ins.part,
                ins.num_parts,
                &mut beta,
                &opts,
            )
            .unwrap();
            check_feasible(&beta, &ins.part, ins.num_parts);
            let d = value(&ins.h, ins.mu, &ins.f, &beta);
            let rel = 1e-8 * best.abs().max(1.0);
            assert!(
                (res.value - best).abs() <= rel,
                "case {case}: value {} but optimum {best} (start {start:?})",
                res.value
            );
            assert!(
                (res.value - d).abs() <= 1e-12 * d.abs().max(1.0),
                "case {case}: reported value {} but D(beta) = {d}",
                res.value
            );
            let true_gap = best - d;
            assert!(
                res.gap >= true_gap - 1e-9,
                "case {case}: gap {} below the true gap {true_gap}",
                res.gap
            );
            assert!(
                res.gap >= 0.0 && res.gap <= tol,
                "case {case}: gap {}",
                res.gap
            );
        }
    }
}

#[test]
fn random_small_instances_match_brute_force() {
    run_random(1, 400, 1.0);
}

#[test]
fn random_small_instances_large_entries() {
    // Gram entries around 1e6 (mu scaled alike, so D stays of order 1).
    run_random(2, 150, 1e6);
}

#[test]
fn random_small_instances_tiny_entries() {
    run_random(3, 150, 1e-9);
}

#[test]
fn brute_force_agrees_with_closed_form_on_two_planes() {
    // A check of the reference itself: one part, two planes.
    let h = Dense(vec![vec![2.0, 0.5], vec![0.5, 1.0]]);
    let (mu, f) = (1.0, [0.3, 0.1]);
    // t* = (mu (f0 - f1) + H11 - H01) / (H00 + H11 - 2 H01) = 0.7 / 2 = 0.35
    let t: f64 = 0.35;
    let d = value(&h, mu, &f, &[t, 1.0 - t]);
    let b = brute_force(&h, mu, &f, &[0, 0], 1);
    assert!((b - d).abs() < 1e-14, "{b} vs {d}");
}

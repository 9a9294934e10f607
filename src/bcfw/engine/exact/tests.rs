//! The exact block step against a brute-force solve of the block's QP.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{project_simplex, solve_block};

/// A random block: `K` classes, a row `r` of `dp` entries, the other
/// blocks' sum `u = w - w_i`, the block's weights, losses, `lambda`, `n`.
struct Case {
    k: usize,
    truth: usize,
    r: Vec<f64>,
    u: Vec<f64>,
    alpha: Vec<f64>,
    losses: Vec<f64>,
    lambda: f64,
    n: usize,
}

impl Case {
    fn random(rng: &mut ChaCha8Rng, k: usize, zero_row: bool) -> Case {
        let dp = 3;
        let truth = rng.gen_range(0..k);
        let r: Vec<f64> = (0..dp)
            .map(|_| {
                if zero_row {
                    0.0
                } else {
                    rng.gen_range(-1.0..1.0)
                }
            })
            .collect();
        let u: Vec<f64> = (0..k * dp).map(|_| rng.gen_range(-2.0..2.0)).collect();
        // Weights on a random face of the simplex.
        let mut alpha: Vec<f64> = (0..k)
            .map(|_| {
                if rng.gen_bool(0.5) {
                    rng.gen_range(0.0..1.0)
                } else {
                    0.0
                }
            })
            .collect();
        alpha[truth] += 0.1;
        let sum: f64 = alpha.iter().sum();
        alpha.iter_mut().for_each(|a| *a /= sum);
        let losses = (0..k)
            .map(|y| {
                if y == truth {
                    0.0
                } else {
                    rng.gen_range(0.2..2.0)
                }
            })
            .collect();
        Case {
            k,
            truth,
            r,
            u,
            alpha,
            losses,
            lambda: 10f64.powf(rng.gen_range(-3.0..0.0)),
            n: rng.gen_range(1..20),
        }
    }

    /// `w = u + r ⊗ c(alpha)`, `c = (e_t - alpha) / (lambda n)`.
    fn w(&self, alpha: &[f64]) -> Vec<f64> {
        let dp = self.r.len();
        let ln = self.lambda * self.n as f64;
        let mut w = self.u.clone();
        for k in 0..self.k {
            let c = (f64::from(u8::from(k == self.truth)) - alpha[k]) / ln;
            for j in 0..dp {
                w[k * dp + j] += c * self.r[j];
            }
        }
        w
    }

    /// The dual `lambda/2 ||w||^2 - (1/n) sum alpha L`, computed from `w`.
    fn f(&self, alpha: &[f64]) -> f64 {
        let w = self.w(alpha);
        let l: f64 = alpha.iter().zip(&self.losses).map(|(a, l)| a * l).sum();
        0.5 * self.lambda * w.iter().map(|x| x * x).sum::<f64>() - l / self.n as f64
    }

    /// The class scores `<w_k, r>` at the current weights.
    fn scores(&self) -> Vec<f64> {
        let dp = self.r.len();
        let w = self.w(&self.alpha);
        (0..self.k)
            .map(|k| (0..dp).map(|j| w[k * dp + j] * self.r[j]).sum())
            .collect()
    }

    /// The minimiser over the simplex by enumerating the supports: on a
    /// support S the minimiser of the quadratic `f = h/2 ||a||^2 + <g, a> +
    /// f0` under `sum a = 1` is `a_S = (nu - g_S) / h`; the best feasible one
    /// over all supports (with `h`, `g` read off `f` itself).
    fn brute_force(&self) -> Vec<f64> {
        let k = self.k;
        let zero = vec![0.0; k];
        let f0 = self.f(&zero);
        let unit = |m: usize, x: f64| {
            let mut a = zero.clone();
            a[m] = x;
            a
        };
        let h = self.f(&unit(0, 2.0)) - 2.0 * self.f(&unit(0, 1.0)) + f0;
        let g: Vec<f64> = (0..k)
            .map(|m| self.f(&unit(m, 1.0)) - f0 - 0.5 * h)
            .collect();
        let mut best: Option<(f64, Vec<f64>)> = None;
        for set in 1u32..(1 << k) {
            let members: Vec<usize> = (0..k).filter(|m| set & (1 << m) != 0).collect();
            let a = if h > 1e-9 * f0.abs().max(1.0) {
                let nu = (h + members.iter().map(|&m| g[m]).sum::<f64>()) / members.len() as f64;
                let mut a = zero.clone();
                for &m in &members {
                    a[m] = (nu - g[m]) / h;
                }
                if a.iter().any(|&x| x < -1e-12) {
                    continue;
                }
                a
            } else if members.len() == 1 {
                unit(members[0], 1.0)
            } else {
                continue;
            };
            let v = self.f(&a);
            if best.as_ref().is_none_or(|(b, _)| v < *b) {
                best = Some((v, a));
            }
        }
        best.expect("a vertex is always feasible").1
    }
}

#[test]
fn exact_step_equals_brute_force_solve_of_the_block_qp() {
    let mut rng = ChaCha8Rng::seed_from_u64(29);
    let mut moved = 0;
    for trial in 0..400 {
        let k = 2 + trial % 4;
        let case = Case::random(&mut rng, k, false);
        let scores = case.scores();
        let r2: f64 = case.r.iter().map(|x| x * x).sum();
        let mut alpha = case.alpha.clone();
        let (mut z, mut sorted) = (vec![], vec![]);
        solve_block(
            &mut alpha,
            case.truth,
            &scores,
            &case.losses,
            r2,
            case.lambda * case.n as f64,
            &mut z,
            &mut sorted,
        );
        let brute = case.brute_force();
        assert!(alpha.iter().all(|&a| a >= 0.0), "trial {trial}: {alpha:?}");
        let sum: f64 = alpha.iter().sum();
        assert!((sum - 1.0).abs() < 1e-12, "trial {trial}: sum {sum}");
        let (fa, fb) = (case.f(&alpha), case.f(&brute));
        let scale = fa.abs().max(fb.abs()).max(1.0);
        assert!(
            (fa - fb).abs() <= 1e-9 * scale,
            "trial {trial}: f {fa} against brute force {fb}"
        );
        for (a, b) in alpha.iter().zip(&brute) {
            assert!(
                (a - b).abs() < 1e-6,
                "trial {trial}: {alpha:?} vs {brute:?}"
            );
        }
        moved += usize::from(case.f(&case.alpha) > fa + 1e-9 * scale);
    }
    // The cases are not all at their optimum already.
    assert!(moved > 300, "only {moved} of 400 blocks moved");
}

#[test]
fn a_zero_row_puts_the_mass_on_the_largest_loss() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for _ in 0..50 {
        let case = Case::random(&mut rng, 4, true);
        let scores = case.scores();
        assert!(scores.iter().all(|&s| s == 0.0));
        let mut alpha = case.alpha.clone();
        let (mut z, mut sorted) = (vec![], vec![]);
        solve_block(
            &mut alpha,
            case.truth,
            &scores,
            &case.losses,
            0.0,
            case.lambda * case.n as f64,
            &mut z,
            &mut sorted,
        );
        let brute = case.brute_force();
        assert!((case.f(&alpha) - case.f(&brute)).abs() < 1e-12);
    }
}

#[test]
fn projection_onto_the_simplex_is_the_nearest_point() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for _ in 0..200 {
        let k = rng.gen_range(1..8);
        let z: Vec<f64> = (0..k).map(|_| rng.gen_range(-3.0..3.0)).collect();
        let mut p = vec![0.0; k];
        project_simplex(&z, &mut p, &mut vec![]);
        let d = |a: &[f64]| {
            a.iter()
                .zip(&z)
                .map(|(x, y)| (x - y) * (x - y))
                .sum::<f64>()
        };
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12 && p.iter().all(|&x| x >= 0.0));
        // No random point of the simplex is nearer.
        for _ in 0..200 {
            let mut q: Vec<f64> = (0..k).map(|_| -rng.gen_range(1e-12f64..1.0).ln()).collect();
            let s: f64 = q.iter().sum();
            q.iter_mut().for_each(|x| *x /= s);
            assert!(d(&p) <= d(&q) + 1e-12);
        }
    }
}

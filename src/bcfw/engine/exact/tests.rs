//! The exact block step against a brute-force solve of the block's QP.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{block_move, project_simplex, solve_block, BlockMove, ClassLosses};

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
        self.brute_force_on(&vec![true; self.k])
    }

    /// [`Self::brute_force`] on the face of the simplex where only the
    /// `allowed` classes hold weight.
    fn brute_force_on(&self, allowed: &[bool]) -> Vec<f64> {
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
            if members.iter().any(|&m| !allowed[m]) {
                continue;
            }
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

#[test]
fn a_step_with_shrunk_classes_is_the_exact_solve_on_their_face() {
    let mut rng = ChaCha8Rng::seed_from_u64(31);
    let mut faces = 0;
    for trial in 0..400 {
        let k = 3 + trial % 3;
        let case = Case::random(&mut rng, k, false);
        let scores_all = case.scores();
        // Shrunk: some classes without weight, never the truth.
        let off: Vec<bool> = (0..k)
            .map(|m| m != case.truth && case.alpha[m] == 0.0 && rng.gen_bool(0.7))
            .collect();
        faces += usize::from(off.iter().any(|&o| o));
        // Shrunk classes are not scored: their scores are 0.
        let scores: Vec<f64> = (0..k)
            .map(|m| if off[m] { 0.0 } else { scores_all[m] })
            .collect();
        let ln = case.lambda * case.n as f64;
        let coef: Vec<f64> = (0..k)
            .map(|m| (f64::from(u8::from(m == case.truth)) - case.alpha[m]) / ln)
            .collect();
        let l: f64 = case
            .alpha
            .iter()
            .zip(&case.losses)
            .map(|(a, x)| a * x)
            .sum::<f64>()
            / case.n as f64;
        let r2: f64 = case.r.iter().map(|x| x * x).sum();
        let mut out = BlockMove::default();
        block_move(
            &mut out,
            &coef,
            l,
            case.truth,
            &scores,
            &case.losses,
            &off,
            r2,
            case.lambda,
            case.n,
            (case.truth, 0.0),
        );
        if out.shrink {
            // At the truth with every active margin held: no move.
            assert!(out.dc.iter().all(|&d| d == 0.0), "trial {trial}");
            continue;
        }
        let mut alpha: Vec<f64> = (0..k).map(|m| -ln * (coef[m] + out.dc[m])).collect();
        alpha[case.truth] = 1.0
            - (0..k)
                .filter(|&m| m != case.truth)
                .map(|m| alpha[m])
                .sum::<f64>();
        let allowed: Vec<bool> = off.iter().map(|&o| !o).collect();
        let brute = case.brute_force_on(&allowed);
        let (fa, fb) = (case.f(&alpha), case.f(&brute));
        let scale = fa.abs().max(fb.abs()).max(1.0);
        assert!(
            (fa - fb).abs() <= 1e-9 * scale,
            "trial {trial}: f {fa} against brute force on the face {fb}"
        );
        for m in 0..k {
            if off[m] {
                assert_eq!(alpha[m], 0.0, "trial {trial}: shrunk class {m} moved");
                assert!(out.off[m], "trial {trial}: class {m} unshrunk");
            }
        }
        // The change of the loss term is that of the weights.
        let l_new: f64 = alpha
            .iter()
            .zip(&case.losses)
            .map(|(a, x)| a * x)
            .sum::<f64>()
            / case.n as f64;
        assert!((l + out.dl - l_new).abs() <= 1e-12 * l_new.abs().max(1.0));
    }
    assert!(faces > 150, "only {faces} of 400 trials had shrunk classes");
}

#[test]
fn a_class_is_shrunk_only_without_weight_and_below_every_weighted_class() {
    let mut rng = ChaCha8Rng::seed_from_u64(37);
    let mut shrunk = 0;
    for trial in 0..400 {
        let k = 3 + trial % 4;
        let case = Case::random(&mut rng, k, false);
        let scores = case.scores();
        let ln = case.lambda * case.n as f64;
        let coef: Vec<f64> = (0..k)
            .map(|m| (f64::from(u8::from(m == case.truth)) - case.alpha[m]) / ln)
            .collect();
        let r2: f64 = case.r.iter().map(|x| x * x).sum();
        let mut out = BlockMove::default();
        block_move(
            &mut out,
            &coef,
            0.0,
            case.truth,
            &scores,
            &case.losses,
            &vec![false; k],
            r2,
            case.lambda,
            case.n,
            (case.truth, 0.0),
        );
        if out.shrink {
            continue;
        }
        let g = |m: usize| case.losses[m] + scores[m];
        let g_min = (0..k)
            .filter(|&m| case.alpha[m] > 0.0)
            .map(g)
            .fold(f64::INFINITY, f64::min);
        for (m, (c, d)) in coef.iter().zip(&out.dc).enumerate() {
            // Independently: no weight before or after, and a loss-augmented
            // score below every class that held weight.
            let after = -ln * (c + d);
            let expect = m != case.truth && case.alpha[m] == 0.0 && after == 0.0 && g(m) < g_min;
            assert_eq!(out.off[m], expect, "trial {trial}, class {m}");
            shrunk += usize::from(out.off[m]);
        }
    }
    assert!(shrunk > 50, "only {shrunk} classes shrunk");
}

/// The 0/1 losses are kept as one row per truth (unless there are fewer
/// blocks than classes), any others per block; either way block `i`'s
/// losses are the ones given.
#[test]
fn class_losses_give_each_block_its_own() {
    let k = 4;
    let truth = |i: usize| (3 * i + 1) % k;
    let zero_one = |n: usize| -> Vec<f64> {
        (0..n * k)
            .map(|j| if j % k == truth(j / k) { 0.0 } else { 1.0 })
            .collect()
    };
    let mut other = zero_one(7);
    other[2 * k + (truth(2) + 1) % k] = 2.5;
    for (all, packed) in [(zero_one(7), true), (other, false), (zero_one(3), false)] {
        let n = all.len() / k;
        let losses = ClassLosses::new(k, all.clone(), truth);
        assert_eq!(matches!(losses, ClassLosses::ZeroOne { .. }), packed);
        for i in 0..n {
            assert_eq!(
                losses.of(i, truth(i)),
                &all[i * k..(i + 1) * k],
                "block {i}"
            );
        }
        let per_block = 8 * n * k;
        assert_eq!(losses.bytes() < per_block, packed, "{n} blocks");
    }
}

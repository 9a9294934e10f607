use super::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A dense symmetric matrix kept by columns.
struct Dense(Vec<Vec<f64>>);

impl Gram for Dense {
    fn size(&self) -> usize {
        self.0.len()
    }
    fn column(&self, j: usize) -> &[f64] {
        &self.0[j]
    }
}

fn dense(rows: &[&[f64]]) -> Dense {
    Dense(rows.iter().map(|r| r.to_vec()).collect())
}

fn d_of(h: &Dense, mu: f64, f: &[f64], beta: &[f64]) -> f64 {
    let n = f.len();
    let mut q = 0.0;
    for j in 0..n {
        for i in 0..n {
            q += beta[i] * h.0[j][i] * beta[j];
        }
    }
    f.iter().zip(beta).map(|(a, b)| a * b).sum::<f64>() - q / (2.0 * mu)
}

fn opts(tol_gap: f64) -> QpOptions {
    QpOptions {
        tol_gap,
        max_updates: 0,
        deadline: None,
    }
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs().max(1.0)
}

/// The maximiser over `t in [0, 1]` of `D(t e_0 + (1 - t) e_1)`.
fn two_plane_t(h: &Dense, mu: f64, f: &[f64]) -> f64 {
    let (a, b, c) = (h.0[0][0], h.0[1][1], h.0[0][1]);
    let curv = a + b - 2.0 * c;
    let slope0 = mu * (f[0] - f[1]) + b - c; // mu * dD/dt at t = 0
    if curv <= 0.0 {
        if slope0 > 0.0 {
            1.0
        } else {
            0.0
        }
    } else {
        (slope0 / curv).clamp(0.0, 1.0)
    }
}

#[test]
fn two_planes_closed_form() {
    type Case<'a> = (&'a [&'a [f64]], f64, [f64; 2]);
    let cases: [Case; 6] = [
        // interior
        (&[&[2.0, 0.5], &[0.5, 1.0]], 1.0, [0.3, 0.1]),
        // clipped at t = 1 (plane 0 dominates)
        (&[&[1.0, 0.0], &[0.0, 1.0]], 0.1, [5.0, 0.0]),
        // clipped at t = 0
        (&[&[1.0, 0.0], &[0.0, 1.0]], 0.1, [0.0, 5.0]),
        // identical columns: D is linear, the larger f wins
        (&[&[3.0, 3.0], &[3.0, 3.0]], 2.0, [0.1, 0.2]),
        // large entries
        (&[&[4e6, 1e6], &[1e6, 2e6]], 1e6, [0.5, -0.25]),
        // tiny entries
        (&[&[4e-12, 1e-12], &[1e-12, 2e-12]], 1e-12, [0.5, -0.25]),
    ];
    for (k, (rows, mu, f)) in cases.iter().enumerate() {
        let h = dense(rows);
        let t = two_plane_t(&h, *mu, f);
        let want = d_of(&h, *mu, f, &[t, 1.0 - t]);
        for (start, block_max) in [
            ([0.0, 0.0], BLOCK_MAX),
            ([1.0, 0.0], BLOCK_MAX),
            ([0.0, 1.0], 0),
            ([0.3, 0.7], 0),
        ] {
            let mut beta = start;
            let o = opts(1e-13);
            let r = solve_impl(&h, *mu, f, &[0, 0], 1, &mut beta, &o, block_max).unwrap();
            assert!(
                close(r.value, want, 1e-12),
                "case {k}: {} vs {want}",
                r.value
            );
            assert!((beta[0] - t).abs() < 1e-9, "case {k}: beta {beta:?}, t {t}");
            assert!(r.gap <= 1e-13, "case {k}: gap {}", r.gap);
        }
    }
}

/// max D over one simplex of three planes: the vertices, the optimum of
/// every edge (closed form) and the stationary point of the face.
fn three_plane_optimum(h: &Dense, mu: f64, f: &[f64]) -> f64 {
    let mut best = f64::NEG_INFINITY;
    let pairs = [(0, 1), (0, 2), (1, 2)];
    for &(i, j) in &pairs {
        let sub = Dense(vec![vec![h.0[i][i], h.0[i][j]], vec![h.0[j][i], h.0[j][j]]]);
        let t = two_plane_t(&sub, mu, &[f[i], f[j]]);
        let mut beta = [0.0; 3];
        beta[i] = t;
        beta[j] = 1.0 - t;
        best = best.max(d_of(h, mu, f, &beta));
    }
    // Face: beta = (x, y, 1 - x - y), grad in (x, y) = 0:
    // M [x, y] = r with M = K (H / mu) K^T, K = [[1, 0, -1], [0, 1, -1]].
    let hh = |i: usize, j: usize| h.0[j][i] / mu;
    let m00 = hh(0, 0) - 2.0 * hh(0, 2) + hh(2, 2);
    let m11 = hh(1, 1) - 2.0 * hh(1, 2) + hh(2, 2);
    let m01 = hh(0, 1) - hh(0, 2) - hh(1, 2) + hh(2, 2);
    let r0 = f[0] - f[2] - hh(0, 2) + hh(2, 2);
    let r1 = f[1] - f[2] - hh(1, 2) + hh(2, 2);
    let det = m00 * m11 - m01 * m01;
    if det.abs() > 1e-12 * (m00.abs() + m11.abs()).powi(2) {
        let x = (r0 * m11 - r1 * m01) / det;
        let y = (m00 * r1 - m01 * r0) / det;
        if x >= 0.0 && y >= 0.0 && x + y <= 1.0 {
            best = best.max(d_of(h, mu, f, &[x, y, 1.0 - x - y]));
        }
    }
    best
}

#[test]
fn three_planes_closed_form() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for case in 0..300 {
        let a: Vec<Vec<f64>> = (0..3)
            .map(|_| (0..3).map(|_| rng.gen_range(-1.0..1.0)).collect())
            .collect();
        let h = Dense(
            (0..3)
                .map(|j| {
                    (0..3)
                        .map(|i| (0..3).map(|k| a[i][k] * a[j][k]).sum())
                        .collect()
                })
                .collect(),
        );
        let f: Vec<f64> = (0..3).map(|_| rng.gen_range(-1.0..1.0)).collect();
        let mu = rng.gen_range(0.05..3.0);
        let want = three_plane_optimum(&h, mu, &f);
        for block_max in [BLOCK_MAX, 0] {
            let mut beta = [0.0; 3];
            let o = opts(1e-12);
            let r = solve_impl(&h, mu, &f, &[0, 0, 0], 1, &mut beta, &o, block_max).unwrap();
            assert!(
                close(r.value, want, 1e-9),
                "case {case}: {} vs {want}",
                r.value
            );
            assert!(r.gap <= 1e-12);
        }
    }
}

#[test]
fn one_plane_per_part_is_fixed() {
    let h = dense(&[&[2.0, -1.0], &[-1.0, 3.0]]);
    let f = [0.5, 2.0];
    let mu = 0.5;
    let mut beta = [0.2, -4.0];
    let r = solve(&h, mu, &f, &[1, 0], 2, &mut beta, &opts(0.0)).unwrap();
    assert_eq!(beta, [1.0, 1.0]);
    // D = 2.5 - (2 + 3 - 2) / (2 * 0.5) = -0.5
    assert!((r.value + 0.5).abs() < 1e-15, "{}", r.value);
    assert_eq!(r.gap, 0.0);
    assert_eq!(r.updates, 0);
}

#[test]
fn projection_of_the_warm_start() {
    let h = dense(&[
        &[1.0, 0.0, 0.0, 0.0],
        &[0.0, 1.0, 0.0, 0.0],
        &[0.0, 0.0, 1.0, 0.0],
        &[0.0, 0.0, 0.0, 1.0],
    ]);
    // Part 0 = {0, 2}, part 1 = {1, 3}; no updates allowed, so beta is
    // the projection.
    let f = [0.0, 7.0, 1.0, 7.0];
    let o = QpOptions {
        tol_gap: f64::INFINITY,
        max_updates: 0,
        deadline: None,
    };
    let mut beta = [-1.0, 0.0, 3.0, -0.0];
    solve(&h, 1.0, &f, &[0, 1, 0, 1], 2, &mut beta, &o).unwrap();
    // part 0: negative clipped, rescaled; part 1: sum 0, ties on f: lowest index
    assert_eq!(beta, [0.0, 1.0, 1.0, 0.0]);
    let mut beta = [2.0, 1.0, 6.0, 3.0];
    solve(&h, 1.0, &f, &[0, 1, 0, 1], 2, &mut beta, &o).unwrap();
    assert_eq!(beta, [0.25, 0.25, 0.75, 0.75]);
    // Huge entries do not overflow the sum.
    let mut beta = [f64::MAX, 0.0, f64::MAX, 1.0];
    solve(&h, 1.0, &f, &[0, 1, 0, 1], 2, &mut beta, &o).unwrap();
    assert_eq!(beta, [0.5, 0.0, 0.5, 1.0]);
}

/// A random problem `H = A^T A` of `n` planes in `num_parts` parts.
fn random_problem(
    rng: &mut ChaCha8Rng,
    n: usize,
    dim: usize,
    num_parts: usize,
) -> (Dense, Vec<f64>, Vec<usize>) {
    let a: Vec<Vec<f64>> = (0..n)
        .map(|_| (0..dim).map(|_| rng.gen_range(-1.0..1.0)).collect())
        .collect();
    let h = Dense(
        (0..n)
            .map(|j| {
                (0..n)
                    .map(|i| a[i].iter().zip(&a[j]).map(|(x, y)| x * y).sum())
                    .collect()
            })
            .collect(),
    );
    let f = (0..n).map(|_| rng.gen_range(0.0..1.0)).collect();
    let part = (0..n).map(|i| (i * 7 + 3) % num_parts).collect();
    (h, f, part)
}

#[test]
fn infeasible_warm_starts_reach_the_same_optimum() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let (h, f, part) = random_problem(&mut rng, 60, 8, 3);
    let mu = 0.2;
    let mut b0 = vec![0.0; 60];
    let r0 = solve(&h, mu, &f, &part, 3, &mut b0, &opts(1e-12)).unwrap();
    let starts: Vec<Vec<f64>> = vec![
        (0..60)
            .map(|i| if i % 2 == 0 { -1.0 } else { 0.0 })
            .collect(),
        (0..60).map(|i| (i as f64 - 30.0) / 7.0).collect(),
        (0..60).map(|i| 1.0 + i as f64).collect(),
        b0.iter().map(|b| 3.0 * b - 1e-17).collect(),
    ];
    for (k, start) in starts.into_iter().enumerate() {
        let mut beta = start;
        let r = solve(&h, mu, &f, &part, 3, &mut beta, &opts(1e-12)).unwrap();
        assert!(
            close(r.value, r0.value, 1e-11),
            "start {k}: {} vs {}",
            r.value,
            r0.value
        );
        assert!(r.gap <= 1e-12);
        assert!(beta.iter().all(|&b| b >= 0.0));
    }
}

#[test]
fn warm_start_from_a_nearby_problem_needs_fewer_updates() {
    let (cold_total, warm_total) = (0..4).fold((0, 0), |(ct, wt), seed| {
        let mut rng = ChaCha8Rng::seed_from_u64(100 + seed);
        let (h, f, part) = random_problem(&mut rng, 200, 10, 3);
        let mu = 1.0;
        let mut beta = vec![0.0; 200];
        let r = solve(&h, mu, &f, &part, 3, &mut beta, &opts(1e-9)).unwrap();
        // From its own optimum, nothing is left to do.
        let mut again = beta.clone();
        let ra = solve(&h, mu, &f, &part, 3, &mut again, &opts(2e-9)).unwrap();
        assert_eq!(ra.updates, 0);
        assert!(close(ra.value, r.value, 1e-14));
        // Perturb the offsets slightly.
        let f2: Vec<f64> = f
            .iter()
            .map(|x| x + 1e-4 * rng.gen_range(-1.0..1.0))
            .collect();
        let mut cold = vec![0.0; 200];
        let rc = solve(&h, mu, &f2, &part, 3, &mut cold, &opts(1e-9)).unwrap();
        let mut warm = beta.clone();
        let rw = solve(&h, mu, &f2, &part, 3, &mut warm, &opts(1e-9)).unwrap();
        assert!(
            close(rw.value, rc.value, 1e-8),
            "{} vs {}",
            rw.value,
            rc.value
        );
        // On seed 3 the cold start runs long enough for Newton steps, which
        // make it the faster (2,363 against 3,713 updates; 10,646 before the
        // Newton steps): only the pair updates' warm start is compared.
        if seed == 3 {
            return (ct, wt);
        }
        assert!(
            rw.updates < rc.updates,
            "seed {seed}: warm {} updates, cold {}",
            rw.updates,
            rc.updates
        );
        (ct + rc.updates, wt + rw.updates)
    });
    // About half as many over the three (1,365 against 2,623).
    assert!(
        3 * warm_total < 2 * cold_total,
        "warm {warm_total}, cold {cold_total}"
    );
}

#[test]
fn new_planes_entered_at_zero() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let (h, f, part) = random_problem(&mut rng, 120, 10, 2);
    let mu = 0.1;
    // Solve on the first 100 planes, then add 20 planes at weight 0.
    let h0 = Dense(h.0[..100].iter().map(|c| c[..100].to_vec()).collect());
    let mut b0 = vec![0.0; 100];
    solve(&h0, mu, &f[..100], &part[..100], 2, &mut b0, &opts(1e-12)).unwrap();
    let mut warm = b0.clone();
    warm.resize(120, 0.0);
    let rw = solve(&h, mu, &f, &part, 2, &mut warm, &opts(1e-12)).unwrap();
    let mut cold = vec![0.0; 120];
    let rc = solve(&h, mu, &f, &part, 2, &mut cold, &opts(1e-12)).unwrap();
    assert!(close(rw.value, rc.value, 1e-10));
    assert!(rw.gap <= 1e-12 && rc.gap <= 1e-12);
}

#[test]
fn max_updates_is_respected_and_result_is_honest() {
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    let (h, f, part) = random_problem(&mut rng, 200, 15, 5);
    let mu = 0.01;
    let mut opt = vec![0.0; 200];
    let best = solve(&h, mu, &f, &part, 5, &mut opt, &opts(1e-12)).unwrap();
    for limit in [1u64, 2, 7, 30] {
        let mut beta = vec![0.0; 200];
        let o = QpOptions {
            tol_gap: 0.0,
            max_updates: limit,
            deadline: None,
        };
        let r = solve(&h, mu, &f, &part, 5, &mut beta, &o).unwrap();
        assert!(r.updates <= limit);
        let d = d_of(&h, mu, &f, &beta);
        assert!(close(r.value, d, 1e-12), "{} vs {d}", r.value);
        assert!(r.gap >= best.value - d - 1e-12);
    }
}

#[test]
fn zero_tolerance_and_no_limit_terminate() {
    let mut rng = ChaCha8Rng::seed_from_u64(33);
    let (mut h, f, part) = random_problem(&mut rng, 80, 5, 2);
    // Duplicate planes make the optimum non-unique.
    for i in 40..80 {
        let c = h.0[i - 40].clone();
        h.0[i] = c;
    }
    for j in 0..80 {
        for i in 40..80 {
            h.0[j][i] = h.0[j][i - 40];
        }
    }
    let mut beta = vec![0.0; 80];
    let r = solve(&h, 0.3, &f, &part, 2, &mut beta, &opts(0.0)).unwrap();
    assert!(r.gap < 1e-12, "{}", r.gap);
}

#[test]
fn deterministic() {
    let mut rng = ChaCha8Rng::seed_from_u64(77);
    let (h, f, part) = random_problem(&mut rng, 150, 12, 3);
    let run = || {
        let mut beta = vec![0.0; 150];
        let r = solve(&h, 0.02, &f, &part, 3, &mut beta, &opts(1e-9)).unwrap();
        (r, beta)
    };
    let (r1, b1) = run();
    let (r2, b2) = run();
    assert_eq!(r1, r2);
    assert_eq!(b1, b2);
}

#[test]
fn block_and_full_updates_agree() {
    let mut rng = ChaCha8Rng::seed_from_u64(41);
    for (n, dim, num_parts, mu) in [(40, 3, 1, 1.0), (120, 8, 4, 0.1), (300, 30, 6, 0.5)] {
        let (h, f, part) = random_problem(&mut rng, n, dim, num_parts);
        let tol = 1e-10;
        let mut results = vec![];
        // Copied out, never copied out, and a limit some working sets exceed.
        for block_max in [BLOCK_MAX, 0, n / 8] {
            let mut beta = vec![0.0; n];
            let o = opts(tol);
            let r = solve_impl(&h, mu, &f, &part, num_parts, &mut beta, &o, block_max).unwrap();
            assert!(r.gap <= tol, "n {n}, block_max {block_max}: gap {}", r.gap);
            let d = d_of(&h, mu, &f, &beta);
            assert!(close(r.value, d, 1e-12), "{} vs {d}", r.value);
            results.push(r.value);
        }
        for v in &results {
            assert!(close(*v, results[0], 1e-9), "{results:?}");
        }
    }
}

#[test]
fn unread_entries_of_h_are_not_inspected() {
    // Plane 2 is far below the others and never enters: its column is
    // not read (its row is, within the columns of planes 0 and 1), so a
    // NaN on its diagonal does not matter.
    let h = dense(&[&[1.0, 0.2, 0.0], &[0.2, 1.0, 0.0], &[0.0, 0.0, f64::NAN]]);
    let f = [0.5, 0.4, -1e6];
    for block_max in [BLOCK_MAX, 0] {
        let mut beta = [0.0; 3];
        let r = solve_impl(
            &h,
            1.0,
            &f,
            &[0, 0, 0],
            1,
            &mut beta,
            &opts(1e-12),
            block_max,
        );
        let r = r.unwrap();
        assert_eq!(beta[2], 0.0);
        assert!(r.value.is_finite() && r.gap <= 1e-12);
    }
}

#[test]
fn errors() {
    let h = dense(&[&[1.0, 0.5], &[0.5, 1.0]]);
    let f = [0.1, 0.2];
    let o = opts(1e-9);
    let mut beta = [0.5, 0.5];
    let e = solve(&h, 1.0, &[0.1, f64::NAN], &[0, 0], 1, &mut beta, &o).unwrap_err();
    assert!(
        matches!(&e, Error { kind: crate::ErrorKind::NonFinite, message: m, .. } if m.contains("f[1]")),
        "{e}"
    );
    let e = solve(&h, 1.0, &[0.1], &[0, 0], 1, &mut beta, &o).unwrap_err();
    assert!(
        matches!(
            e,
            Error {
                kind: crate::ErrorKind::DimensionMismatch,
                ..
            }
        ),
        "{e}"
    );
    let e = solve(&h, 1.0, &f, &[0], 1, &mut beta, &o).unwrap_err();
    assert!(
        matches!(
            e,
            Error {
                kind: crate::ErrorKind::DimensionMismatch,
                ..
            }
        ),
        "{e}"
    );
    let e = solve(&h, 1.0, &f, &[0, 0], 1, &mut [1.0], &o).unwrap_err();
    assert!(
        matches!(
            e,
            Error {
                kind: crate::ErrorKind::DimensionMismatch,
                ..
            }
        ),
        "{e}"
    );
    let e = solve(&h, 1.0, &f, &[0, 2], 2, &mut beta, &o).unwrap_err();
    assert!(
        matches!(
            e,
            Error {
                kind: crate::ErrorKind::DimensionMismatch,
                ..
            }
        ),
        "{e}"
    );
    for mu in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let e = solve(&h, mu, &f, &[0, 0], 1, &mut beta, &o).unwrap_err();
        assert!(
            matches!(
                e,
                Error {
                    kind: crate::ErrorKind::InvalidArgument,
                    ..
                }
            ),
            "{e}"
        );
    }
    let e = solve(&h, 1.0, &f, &[0, 0], 2, &mut beta, &o).unwrap_err();
    assert!(
        matches!(&e, Error { kind: crate::ErrorKind::InvalidArgument, message: m, .. } if m.contains("part 1")),
        "{e}"
    );
    let e = solve(&h, 1.0, &f, &[0, 0], 1, &mut [f64::NAN, 1.0], &o).unwrap_err();
    assert!(
        matches!(
            e,
            Error {
                kind: crate::ErrorKind::NonFinite,
                ..
            }
        ),
        "{e}"
    );
    // A non-finite entry in a column that is read.
    let bad = dense(&[&[1.0, f64::INFINITY], &[f64::INFINITY, 1.0]]);
    let e = solve(&bad, 1.0, &f, &[0, 0], 1, &mut [0.5, 0.5], &o).unwrap_err();
    assert!(
        matches!(&e, Error { kind: crate::ErrorKind::NonFinite, message: m, .. } if m.contains("H[1][0]")),
        "{e}"
    );
    let bad = dense(&[&[1.0, 0.0], &[0.0, f64::NAN]]);
    let e = solve(&bad, 1.0, &[0.0, 1.0], &[0, 0], 1, &mut [1.0, 0.0], &o).unwrap_err();
    assert!(
        matches!(&e, Error { kind: crate::ErrorKind::NonFinite, message: m, .. } if m.contains("H[1][1]")),
        "{e}"
    );
    // A non-finite entry met when a plane enters, both ways of updating.
    let bad = dense(&[
        &[1.0, 0.0, 0.0],
        &[0.0, 1.0, f64::NAN],
        &[0.0, f64::NAN, 1.0],
    ]);
    for block_max in [BLOCK_MAX, 0] {
        let mut beta = [1.0, 0.0, 0.0];
        let r = solve_impl(
            &bad,
            1.0,
            &[0.0, 0.5, 1.0],
            &[0, 0, 0],
            1,
            &mut beta,
            &o,
            block_max,
        );
        let e = r.unwrap_err();
        assert!(
            matches!(&e, Error { kind: crate::ErrorKind::NonFinite, message: m, .. } if m.contains("H[1][2]") || m.contains("H[2][1]")),
            "{e}"
        );
    }
    // A column of the wrong length.
    let bad = Dense(vec![vec![1.0, 0.0], vec![0.0]]);
    let e = solve(&bad, 1.0, &f, &[0, 0], 1, &mut [0.5, 0.5], &o).unwrap_err();
    assert!(
        matches!(
            e,
            Error {
                kind: crate::ErrorKind::DimensionMismatch,
                ..
            }
        ),
        "{e}"
    );
    // The empty problem.
    let empty = Dense(vec![]);
    let r = solve(&empty, 1.0, &[], &[], 0, &mut [], &o).unwrap();
    assert_eq!((r.value, r.gap, r.updates), (0.0, 0.0, 0));
    let e = solve(&empty, 1.0, &[], &[], 1, &mut [], &o).unwrap_err();
    assert!(
        matches!(
            e,
            Error {
                kind: crate::ErrorKind::InvalidArgument,
                ..
            }
        ),
        "{e}"
    );
}

/// The gap of `beta` computed here from scratch: `sum_p max_{i in p} g_i -
/// sum_{i in p} beta_i g_i` with `g = f - H beta / mu`.
fn gap_of(h: &Dense, mu: f64, f: &[f64], part: &[usize], num_parts: usize, beta: &[f64]) -> f64 {
    let n = f.len();
    let g: Vec<f64> = (0..n)
        .map(|i| f[i] - (0..n).map(|j| h.0[j][i] * beta[j]).sum::<f64>() / mu)
        .collect();
    (0..num_parts)
        .map(|p| {
            let members = (0..n).filter(|&i| part[i] == p);
            let top = members
                .clone()
                .map(|i| g[i])
                .fold(f64::NEG_INFINITY, f64::max);
            top - members.map(|i| beta[i] * g[i]).sum::<f64>()
        })
        .sum()
}

#[test]
fn ill_conditioned_problems_are_solved_by_newton_steps() {
    // Many planes in few dimensions with a small `mu`: the optimal face
    // holds about `dim + parts` planes and `H / mu` is badly conditioned,
    // where pair updates alone converge slowly (hundreds of thousands of
    // updates for this size; the bundle QPs of graph problems at small
    // lambda were of this kind).
    for (seed, num_parts) in [(41u64, 1usize), (42, 1), (43, 4)] {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (h, f, part) = random_problem(&mut rng, 400, 12, num_parts);
        let mu = 1e-3;
        let mut beta = vec![0.0; 400];
        let r = solve(&h, mu, &f, &part, num_parts, &mut beta, &opts(1e-10)).unwrap();
        let gap = gap_of(&h, mu, &f, &part, num_parts, &beta);
        assert!(r.gap <= 1e-10, "seed {seed}: gap {}", r.gap);
        assert!(gap <= 1e-9, "seed {seed}: gap {gap} recomputed");
        assert!(close(r.value, d_of(&h, mu, &f, &beta), 1e-12));
        let support = beta.iter().filter(|&&b| b > 0.0).count();
        assert!(
            support <= 12 + num_parts + 2,
            "seed {seed}: support {support}"
        );
        // Pair updates alone: about 6 million on seed 41.
        assert!(r.updates < 100_000, "seed {seed}: {} updates", r.updates);
    }
}

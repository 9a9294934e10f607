//! No lower bound above `min F`, at any scale of
//! data and down to the last rounding.
//!
//! - Tiny separable risks whose optimum is known exactly (dyadic data, or
//!   the optimum in double-double arithmetic): with `tol = 0` every solver
//!   runs until it can say no more, and its best bound must stay `<= min F`.
//! - The built-in multiclass model with one feature scaled to 1e30 or 1e15:
//!   the bundle methods used to report a bound of 1e45 (or 1.00107 against a
//!   primal of 0.98442); now a run either ends with an error that names the
//!   lost precision or reports a bound below the primal of its `w`.

mod common;

use bmrm::models::Multiclass;
use bmrm::oracle::{Corner, MaxOracle, PartitionedRisk};
use bmrm::{Algorithm, ErrorKind, Problem, Settings, Solver};

const BUNDLE_METHODS: [Algorithm; 4] = [
    Algorithm::Bmrm,
    Algorithm::ProxBmrm,
    Algorithm::PBmrm,
    Algorithm::ProxPBmrm,
];

/// `R(w) = (1/16) sum_j |w_j - c_j|`, one part per coordinate.
struct ScaledL1 {
    c: Vec<f64>,
}

impl PartitionedRisk for ScaledL1 {
    fn dim(&self) -> usize {
        self.c.len()
    }
    fn num_parts(&self) -> usize {
        self.c.len()
    }
    fn partial_risk(&self, p: usize, w: &[f64], g: &mut [f64]) -> bmrm::Result<f64> {
        g.iter_mut().for_each(|x| *x = 0.0);
        let d = w[p] - self.c[p];
        g[p] = if d > 0.0 { 1.0 / 16.0 } else { -1.0 / 16.0 };
        Ok(d.abs() / 16.0)
    }
}

#[test]
fn bundle_bounds_stay_below_an_exact_optimum_at_tol_zero() {
    // lambda = 2^-20 and |c_j| <= 2 keep w* = c (lambda |c_j| <= 1/16), so
    // min F = lambda/2 sum c_j^2, exact in f64 with these dyadic c_j.
    let c: Vec<f64> = (0..16).map(|j| (j as f64 - 7.5) / 4.0).collect();
    let lambda = 2f64.powi(-20);
    let min_f = 0.5 * lambda * c.iter().map(|x| x * x).sum::<f64>();
    assert_eq!(min_f * 2.0 / lambda, c.iter().map(|x| x * x).sum::<f64>());
    for algorithm in BUNDLE_METHODS {
        let mut s = Settings::new(algorithm, lambda);
        s.tol_rel = 0.0;
        s.tol_abs = 0.0;
        s.max_iterations = 400;
        let mut solver =
            Solver::new(Problem::from_partitioned(ScaledL1 { c: c.clone() }), s).unwrap();
        let mut w = vec![0.0; c.len()];
        let info = solver.run(&mut w).unwrap();
        assert!(
            info.lower_bound <= min_f,
            "{algorithm:?}: bound {:e} above min F {:e} by {:e}",
            info.lower_bound,
            min_f,
            info.lower_bound - min_f
        );
        // And it is a real bound, not given up: close to the optimum.
        assert!(
            min_f - info.lower_bound <= 1e-3 * min_f,
            "{algorithm:?}: {info:?}"
        );
    }
}

/// `(hi, lo)` with `hi + lo = a + b` exactly.
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// `(hi, lo)` with `hi + lo = a * b` exactly.
fn two_prod(a: f64, b: f64) -> (f64, f64) {
    let p = a * b;
    (p, a.mul_add(b, -p))
}

/// A double-double number: `hi + lo`, about 106 bits.
#[derive(Clone, Copy)]
struct Dd(f64, f64);

impl Dd {
    fn add(self, o: Dd) -> Dd {
        let (s, e) = two_sum(self.0, o.0);
        let e = e + self.1 + o.1;
        let (h, l) = two_sum(s, e);
        Dd(h, l)
    }
    fn mul(self, o: Dd) -> Dd {
        let (p, e) = two_prod(self.0, o.0);
        let e = e + self.0 * o.1 + self.1 * o.0;
        let (h, l) = two_sum(p, e);
        Dd(h, l)
    }
    fn div(self, o: Dd) -> Dd {
        let q = self.0 / o.0;
        let r = self.add(o.mul(Dd(-q, 0.0)));
        let q2 = r.0 / o.0;
        let (h, l) = two_sum(q, q2);
        Dd(h, l)
    }
    /// Whether `x <= self` as exact reals (up to the ~1e-32 of the format).
    fn at_least(self, x: f64) -> bool {
        let d = self.add(Dd(-x, 0.0));
        d.0 >= 0.0
    }
}

/// Example `i`: `max(0, delta - x_i w_i)`, as a max-oracle with two labels
/// (0 the truth: loss and psi zero; 1: loss `delta`, psi `-x_i e_i`).
struct Hinges {
    x: Vec<f64>,
    delta: f64,
}

impl MaxOracle for Hinges {
    fn dim(&self) -> usize {
        self.x.len()
    }
    fn num_examples(&self) -> usize {
        self.x.len()
    }
    fn max_oracle(&self, i: usize, w: &[f64], out: &mut Corner) -> bmrm::Result<()> {
        out.clear();
        if self.delta - self.x[i] * w[i] > 0.0 {
            out.set_label(1);
            out.set_loss(self.delta);
            out.dense_mut()[i] = -self.x[i];
        } else {
            out.set_label(0);
        }
        Ok(())
    }
}

#[test]
fn bcfw_bounds_stay_below_the_optimum_in_double_double() {
    // Mean risk: F = lambda/2 ||w||^2 + (1/n) sum max(0, delta - x_i w_i).
    // With x_i^2 <= n lambda delta, w_i* = x_i / (n lambda) and
    // min F = sum_i [delta/n - x_i^2 / (2 n^2 lambda)].
    let n = 8usize;
    let delta = 1.0;
    for lambda in [0.05, 0.3, 0.07] {
        let x: Vec<f64> = (0..n)
            .map(|i| 0.1 + 0.05 * i as f64)
            .filter(|&x| x * x <= n as f64 * lambda * delta)
            .collect();
        let n = x.len();
        let nn = Dd(n as f64, 0.0);
        let mut min_f = Dd(0.0, 0.0);
        for &xi in &x {
            let loss = Dd(delta, 0.0).div(nn);
            let quad = Dd(xi, 0.0)
                .mul(Dd(xi, 0.0))
                .div(Dd(2.0, 0.0).mul(nn).mul(nn).mul(Dd(lambda, 0.0)));
            min_f = min_f.add(loss).add(Dd(-quad.0, -quad.1));
        }
        for step in [bmrm::StepType::FrankWolfe, bmrm::StepType::Pairwise] {
            let mut s = Settings::new(Algorithm::Bcfw, lambda);
            s.tol_rel = 0.0;
            s.tol_abs = 0.0;
            s.max_iterations = 300;
            s.step_type = step;
            s.gap_check = 1;
            let oracle = Hinges {
                x: x.clone(),
                delta,
            };
            let mut solver = Solver::new(Problem::from_max_oracle(oracle), s).unwrap();
            let mut w = vec![0.0; n];
            let info = solver.run(&mut w).unwrap();
            assert!(
                min_f.at_least(info.lower_bound),
                "lambda {lambda}, {step:?}: bound {:e} above min F {:e}",
                info.lower_bound,
                min_f.0
            );
            assert!(min_f.0 - info.lower_bound < 1e-9, "{info:?}");
        }
    }
}

/// A multiclass model with feature 2 of every example scaled by `scale`.
fn scaled_multiclass(scale: f32) -> Multiclass {
    let (m, d, k) = (200, 5, 3);
    let (mut x, y) = bmrm::models::synthetic::gaussian_multiclass(m, d, k, 1.0, 3);
    for i in 0..m {
        x[i * d + 2] *= scale;
    }
    Multiclass::new(x, d, y, k, true).unwrap()
}

#[test]
fn huge_features_never_give_a_bound_above_the_primal() {
    for scale in [1e30f32, 1e15, 1e8, 1.0] {
        for algorithm in BUNDLE_METHODS.into_iter().chain([Algorithm::Bcfw]) {
            let model = scaled_multiclass(scale);
            let mut s = Settings::new(algorithm, 0.025);
            s.max_iterations = 60;
            let mut solver = Solver::new(Problem::from_max_oracle(model), s).unwrap();
            let mut w = vec![0.0; solver.dim()];
            match solver.run(&mut w) {
                Ok(info) => assert!(
                    info.lower_bound <= info.primal,
                    "scale {scale:e}, {algorithm:?}: {info:?}"
                ),
                Err(e) => {
                    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
                    assert!(e.message().contains("precision lost"), "{e}");
                    assert!(scale >= 1e8, "scale {scale:e} should be solvable: {e}");
                }
            }
        }
    }
}

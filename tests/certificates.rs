//! Certificates under attack: on small random problems whose optimum is
//! computed here without the library (nested ternary search in one or two
//! dimensions), every lower bound a run reports must lie below that optimum
//! and below the run's own primal, whatever the start, the warm start, the
//! sign of the risk, lambda or the ball's radius.

mod common;

use bmrm::oracle::FullRisk;
use bmrm::{Algorithm, Problem, Settings, Solver};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// `R(w) = max_k <c_k, w> + d_k`: a convex risk of any sign.
#[derive(Clone)]
struct MaxAffine {
    c: Vec<Vec<f64>>,
    d: Vec<f64>,
}

impl MaxAffine {
    fn value(&self, w: &[f64]) -> (f64, usize) {
        let mut best = (f64::NEG_INFINITY, 0);
        for (k, (c, d)) in self.c.iter().zip(&self.d).enumerate() {
            let v = c.iter().zip(w).map(|(a, b)| a * b).sum::<f64>() + d;
            if v > best.0 {
                best = (v, k);
            }
        }
        best
    }

    fn objective(&self, lambda: f64, w: &[f64]) -> f64 {
        0.5 * lambda * w.iter().map(|x| x * x).sum::<f64>() + self.value(w).0
    }

    /// `min F` by nested ternary search on a box that holds the minimiser
    /// (`w* = -C beta / lambda`, so `|w*_j| <= max_k |c_kj| / lambda`).
    fn optimum(&self, lambda: f64) -> f64 {
        let dim = self.c[0].len();
        let reach = |j: usize| self.c.iter().map(|c| c[j].abs()).fold(0.0, f64::max) / lambda;
        if dim == 1 {
            let f = |x: f64, _: f64| self.objective(lambda, &[x]);
            common::nested_ternary_in(&f, (-reach(0), reach(0)), (0.0, 0.0)).2
        } else {
            let f = |x: f64, y: f64| self.objective(lambda, &[x, y]);
            common::nested_ternary_in(&f, (-reach(0), reach(0)), (-reach(1), reach(1))).2
        }
    }
}

impl FullRisk for MaxAffine {
    fn dim(&self) -> usize {
        self.c[0].len()
    }
    fn risk(&self, w: &[f64], g: &mut [f64]) -> bmrm::Result<f64> {
        let (v, k) = self.value(w);
        g.copy_from_slice(&self.c[k]);
        Ok(v)
    }
}

fn random_risk(rng: &mut ChaCha8Rng, dim: usize) -> MaxAffine {
    let planes = rng.gen_range(1..=5);
    let scale = [1e-3, 1.0, 1e3][rng.gen_range(0..3)];
    let shift = [0.0, -10.0, 10.0, -1e4][rng.gen_range(0..4)];
    MaxAffine {
        c: (0..planes)
            .map(|_| (0..dim).map(|_| scale * rng.gen_range(-1.0..1.0)).collect())
            .collect(),
        d: (0..planes)
            .map(|_| shift + rng.gen_range(-5.0..5.0))
            .collect(),
    }
}

/// The bound of a finished run against the optimum and the run's primal.
fn check(what: &str, risk: &MaxAffine, lambda: f64, info: &bmrm::Info, w: &[f64]) {
    let opt = risk.optimum(lambda);
    let slack = 1e-9 * (opt.abs() + 1.0);
    assert!(
        info.lower_bound <= opt + slack,
        "{what}: lower bound {} above the optimum {opt} (primal {})",
        info.lower_bound,
        info.primal
    );
    assert!(
        info.lower_bound <= info.primal + slack,
        "{what}: lower bound {} above the primal {}",
        info.lower_bound,
        info.primal
    );
    let f = risk.objective(lambda, w);
    assert!(
        (f - info.primal).abs() <= 1e-9 * (f.abs() + 1.0),
        "{what}: primal {} but F(w) = {f}",
        info.primal
    );
}

#[test]
fn cutting_plane_bounds_stay_below_the_optimum() {
    let lambdas = [1e-9, 1e-4, 0.1, 1.0, 1e3, 1e6];
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    for case in 0..120 {
        let dim = rng.gen_range(1..=2);
        let risk = random_risk(&mut rng, dim);
        let lambda = lambdas[rng.gen_range(0..lambdas.len())];
        let mut s = Settings::new(Algorithm::CuttingPlane, lambda);
        s.max_iterations = 60;
        s.tol_rel = 1e-6;
        s.num_threads = 1;
        // Tiny lambdas make the inner QP ill-conditioned: the time limit,
        // which the QP honours, bounds each run (its bound stays valid).
        s.time_limit_seconds = 0.1;
        // A user radius now and then, small ones excluding the optimum.
        if rng.gen_bool(0.3) {
            s.cp_radius = [1e-3, 1.0, 1e3][rng.gen_range(0..3)];
        }
        let start_scale = [0.0, 1.0, 1e3][rng.gen_range(0..3)];
        let mut w: Vec<f64> = (0..dim)
            .map(|_| start_scale * rng.gen_range(-1.0..1.0))
            .collect();
        let mut solver = Solver::new(Problem::from_risk(risk.clone()), s).unwrap();
        let what = format!("case {case} (lambda {lambda}, start {w:?})");
        match solver.run(&mut w) {
            Ok(info) => check(&what, &risk, lambda, &info, &w),
            // F(w_1) <= 0 without a radius is refused, not mis-certified.
            Err(e) => panic!("{what}: {e}"),
        }
        // A warm start at another lambda from the solution just found.
        let next = lambdas[rng.gen_range(0..lambdas.len())];
        solver.set_lambda(next).unwrap();
        let what = format!("case {case} warm (lambda {lambda} -> {next})");
        match solver.run(&mut w) {
            Ok(info) => check(&what, &risk, next, &info, &w),
            Err(e) => panic!("{what}: {e}"),
        }
    }
}

#[test]
fn the_time_limit_ends_the_cutting_plane_qp() {
    // Tiny lambdas make the inner QP ill-conditioned; without an update
    // budget only the time limit ends it (it once ran 18 s past a limit
    // of 1 s).
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    let mut limited = 0;
    for case in 0..40 {
        let dim = rng.gen_range(1..=2);
        let risk = random_risk(&mut rng, dim);
        let mut s = Settings::new(Algorithm::CuttingPlane, 1e-9);
        s.qp_max_updates = 0;
        s.tol_rel = 1e-12;
        s.tol_abs = 1e-12;
        s.max_iterations = 1000;
        s.time_limit_seconds = 0.2;
        s.num_threads = 1;
        let mut w = vec![0.0; dim];
        let mut solver = Solver::new(Problem::from_risk(risk.clone()), s).unwrap();
        let started = std::time::Instant::now();
        let info = solver.run(&mut w).unwrap();
        let took = started.elapsed().as_secs_f64();
        assert!(took < 2.0, "case {case}: {took} s for a limit of 0.2 s");
        if info.exit == bmrm::Exit::TimeLimit {
            limited += 1;
            check(&format!("case {case}"), &risk, 1e-9, &info, &w);
        }
    }
    assert!(
        limited > 0,
        "no run reached the limit: the test tests nothing"
    );
}

//! The core engine against independent references: analytic optima, exact
//! optima of tiny problems found by another method, agreement of every
//! solver's primal with every other solver's lower bound, determinism across
//! thread counts, warm starts, a full plane buffer, and errors.

mod common;

use std::ops::ControlFlow;

use common::nested_ternary;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bmrm::models::{synthetic, BinaryHinge, Multiclass};
use bmrm::oracle::{Corner, ExampleParts, FullRisk, MaxOracle, PartitionedRisk};
use bmrm::{Algorithm, Error, Exit, Problem, Sampling, Settings, Solver, StepType};

const ALL_BUNDLE: [Algorithm; 4] = [
    Algorithm::Bmrm,
    Algorithm::ProxBmrm,
    Algorithm::PBmrm,
    Algorithm::ProxPBmrm,
];

/// R(w) = sum_j |w_j - c_j|, as a full risk and as one part per coordinate.
#[derive(Clone)]
struct L1 {
    c: Vec<f64>,
}
impl FullRisk for L1 {
    fn dim(&self) -> usize {
        self.c.len()
    }
    fn risk(&self, w: &[f64], g: &mut [f64]) -> bmrm::Result<f64> {
        let mut r = 0.0;
        for j in 0..w.len() {
            let d = w[j] - self.c[j];
            r += d.abs();
            g[j] = if d > 0.0 { 1.0 } else { -1.0 };
        }
        Ok(r)
    }
}
impl PartitionedRisk for L1 {
    fn dim(&self) -> usize {
        self.c.len()
    }
    fn num_parts(&self) -> usize {
        self.c.len()
    }
    fn partial_risk(&self, p: usize, w: &[f64], g: &mut [f64]) -> bmrm::Result<f64> {
        g.iter_mut().for_each(|x| *x = 0.0);
        let d = w[p] - self.c[p];
        g[p] = if d > 0.0 { 1.0 } else { -1.0 };
        Ok(d.abs())
    }
}

fn l1_optimum(c: &[f64], lambda: f64) -> (Vec<f64>, f64) {
    let w: Vec<f64> = c
        .iter()
        .map(|&x| x.clamp(-1.0 / lambda, 1.0 / lambda))
        .collect();
    let f = w
        .iter()
        .zip(c)
        .map(|(w, c)| 0.5 * lambda * w * w + (w - c).abs())
        .sum();
    (w, f)
}

fn solve(problem: Problem, settings: Settings) -> (Vec<f64>, bmrm::Info, Solver) {
    let mut solver = Solver::new(problem, settings).expect("settings are valid");
    let mut w = vec![0.0; solver.dim()];
    let info = solver.run(&mut w).expect("the run succeeds");
    (w, info, solver)
}

#[test]
fn l1_risk_reaches_the_analytic_optimum_with_every_solver() {
    let c = vec![0.3, -2.5, 1.7, 0.0, -0.4, 4.0, -0.9];
    let lambda = 0.8;
    let (w_star, f_star) = l1_optimum(&c, lambda);
    let full = Problem::from_risk(L1 { c: c.clone() });
    let parts = Problem::from_partitioned(L1 { c: c.clone() });
    for alg in ALL_BUNDLE {
        let problem = if alg.is_partitioned() {
            parts.clone()
        } else {
            full.clone()
        };
        let mut s = Settings::new(alg, lambda);
        s.tol_rel = 0.0;
        s.tol_abs = 1e-9;
        s.max_iterations = 5000;
        let (w, info, _) = solve(problem, s);
        assert!(
            matches!(info.exit, Exit::ConvergedAbs),
            "{}: exit {:?} gap {}",
            alg.name(),
            info.exit,
            info.gap
        );
        assert!(
            info.lower_bound <= f_star + 1e-12,
            "{}: bound above optimum",
            alg.name()
        );
        assert!(
            (info.primal - f_star).abs() <= 1e-8,
            "{}: {} vs {}",
            alg.name(),
            info.primal,
            f_star
        );
        // F is strongly convex: ||w - w*||^2 <= 2 (F(w) - F*) / lambda.
        let d2: f64 = w.iter().zip(&w_star).map(|(a, b)| (a - b) * (a - b)).sum();
        assert!(
            d2 <= 2.0 * 1e-8 / lambda + 1e-12,
            "{}: w off by {d2}",
            alg.name()
        );
    }
}

#[test]
fn p_bmrm_on_separable_parts_needs_few_iterations() {
    // Each part is a 1-D |w_p - c_p|: one model per part is exact after two
    // planes per part, while a single model needs many more.
    let c: Vec<f64> = (0..20).map(|j| (j as f64 * 0.37).sin()).collect();
    let parts = Problem::from_partitioned(L1 { c: c.clone() });
    let full = Problem::from_risk(L1 { c });
    let mut s = Settings::new(Algorithm::PBmrm, 0.5);
    s.tol_rel = 0.0;
    s.tol_abs = 1e-10;
    let (_, p_info, _) = solve(parts, s.clone());
    s.algorithm = Algorithm::Bmrm;
    let (_, one_info, _) = solve(full, s);
    assert!(
        p_info.iterations * 3 < one_info.iterations,
        "{} vs {}",
        p_info.iterations,
        one_info.iterations
    );
}

/// The exact minimiser of a convex function of two variables by nested
/// ternary search (an independent method: no cutting planes, no QP).
#[test]
fn tiny_binary_svm_matches_an_exact_two_dimensional_search() {
    let (x, y) = synthetic::gaussian_binary(9, 2, 1.0, 7);
    let lambda = 0.3;
    let model = BinaryHinge::new(x.clone(), 2, y.clone(), false).unwrap();
    let f = |a: f64, b: f64| {
        let r: f64 = (0..y.len())
            .map(|i| (1.0 - y[i] * (a * x[2 * i] as f64 + b * x[2 * i + 1] as f64)).max(0.0))
            .sum::<f64>()
            / y.len() as f64;
        0.5 * lambda * (a * a + b * b) + r
    };
    let (_, _, f_star) = nested_ternary(&f, -20.0, 20.0);
    let problem = Problem::from_max_oracle(model);
    for alg in ALL_BUNDLE {
        let mut s = Settings::new(alg, lambda);
        s.tol_rel = 0.0;
        s.tol_abs = 1e-9;
        if alg.is_partitioned() {
            s.num_parts = 3;
        }
        s.max_iterations = 3000;
        let (w, info, _) = solve(problem.clone(), s);
        assert!(
            matches!(info.exit, Exit::ConvergedAbs),
            "{}: {:?}",
            alg.name(),
            info.exit
        );
        assert!(
            (info.primal - f_star).abs() < 1e-8,
            "{}: {} vs {f_star}",
            alg.name(),
            info.primal
        );
        assert!((f(w[0], w[1]) - info.primal).abs() < 1e-12);
        assert!(info.lower_bound <= f_star + 1e-9);
    }
}

fn multiclass(m: usize, d: usize, k: usize, seed: u64) -> Multiclass {
    let (x, y) = synthetic::gaussian_multiclass(m, d, k, 2.0, seed);
    Multiclass::new(x, d, y, k, true).unwrap()
}

/// Every solver's primal is within its tolerance of the best lower bound of
/// all solvers, and no lower bound exceeds any primal.
fn cross_check(problem: Problem, lambda: f64, tol_rel: f64, extra: &[Algorithm]) {
    let mut results = vec![];
    for alg in ALL_BUNDLE.into_iter().chain(extra.iter().copied()) {
        let mut s = Settings::new(alg, lambda);
        s.tol_rel = tol_rel;
        s.max_iterations = 20_000;
        if alg.is_partitioned() {
            s.num_parts = 4;
        }
        if alg == Algorithm::Sgd {
            s.sgd_passes = 30;
        }
        let (_, info, _) = solve(problem.clone(), s);
        results.push((alg, info));
    }
    let max_lb = results
        .iter()
        .map(|r| r.1.lower_bound)
        .fold(f64::NEG_INFINITY, f64::max);
    let min_primal = results
        .iter()
        .map(|r| r.1.primal)
        .fold(f64::INFINITY, f64::min);
    assert!(
        max_lb <= min_primal + 1e-12,
        "bound {max_lb} above primal {min_primal}"
    );
    for (alg, info) in &results {
        if *alg == Algorithm::Sgd {
            // SGD has no certificate of its own; its point must be near.
            assert!(
                info.primal <= min_primal * 1.05,
                "SGD primal {} vs {min_primal}",
                info.primal
            );
            continue;
        }
        assert!(
            matches!(info.exit, Exit::ConvergedRel),
            "{}: {:?}",
            alg.name(),
            info.exit
        );
        assert!(
            info.primal - max_lb <= tol_rel * info.primal.abs() + 1e-12,
            "{}: primal {} best bound {max_lb}",
            alg.name(),
            info.primal
        );
    }
}

#[test]
fn solvers_agree_on_multiclass() {
    let model = multiclass(300, 8, 5, 3);
    cross_check(
        Problem::from_max_oracle(model),
        0.01,
        1e-4,
        &[Algorithm::Sgd],
    );
}

#[test]
fn solvers_agree_on_binary_hinge() {
    let (x, y) = synthetic::gaussian_binary(400, 10, 1.5, 11);
    let model = BinaryHinge::new(x, 10, y, true).unwrap();
    cross_check(Problem::from_max_oracle(model), 0.003, 1e-4, &[]);
}

#[test]
fn the_cutting_plane_baseline_converges_slower_than_bmrm() {
    let (x, y) = synthetic::gaussian_binary(300, 6, 1.5, 12);
    let problem = Problem::from_max_oracle(BinaryHinge::new(x, 6, y, true).unwrap());
    let mut s = Settings::new(Algorithm::CuttingPlane, 0.01);
    s.tol_rel = 1e-3;
    s.max_iterations = 5000;
    let (_, cp, _) = solve(problem.clone(), s.clone());
    s.algorithm = Algorithm::Bmrm;
    let (_, bm, _) = solve(problem, s);
    assert_eq!(cp.exit, Exit::ConvergedRel);
    assert!(cp.lower_bound <= bm.primal + 1e-12 && bm.lower_bound <= cp.primal + 1e-12);
    assert!(
        cp.iterations > bm.iterations,
        "CP {} vs BMRM {}",
        cp.iterations,
        bm.iterations
    );
}

#[test]
fn results_are_bit_identical_for_any_thread_count() {
    let model = Arc::new(multiclass(500, 12, 6, 5));
    for alg in [Algorithm::Bmrm, Algorithm::ProxPBmrm] {
        let mut reference: Option<(Vec<f64>, bmrm::Info)> = None;
        for threads in [1, 2, 16] {
            let mut s = Settings::new(alg, 0.005);
            s.num_threads = threads;
            s.sgd_passes = 1;
            let (w, info, _) = solve(Problem::Examples(model.clone()), s);
            match &reference {
                None => reference = Some((w, info)),
                Some((w0, i0)) => {
                    assert!(
                        w.iter().zip(w0).all(|(a, b)| a.to_bits() == b.to_bits()),
                        "{} threads",
                        threads
                    );
                    assert_eq!(info.iterations, i0.iterations);
                    assert_eq!(info.primal.to_bits(), i0.primal.to_bits());
                    assert_eq!(info.lower_bound.to_bits(), i0.lower_bound.to_bits());
                }
            }
        }
    }
}

#[test]
fn warm_start_along_a_lambda_path_beats_cold_starts() {
    let model = Arc::new(multiclass(400, 10, 4, 9));
    let lambdas = [1e-1, 1e-2, 1e-3];
    for alg in [Algorithm::Bmrm, Algorithm::ProxBmrm] {
        let mut s = Settings::new(alg, 1.0);
        s.tol_rel = 1e-3;
        let mut w = vec![0.0; model.dim()];
        let path = bmrm::solver::solve_path(Problem::Examples(model.clone()), &s, &lambdas, &mut w)
            .unwrap();
        let warm: u64 = path.iter().map(|p| p.info.iterations).sum();
        let mut cold = 0;
        for (&lambda, point) in lambdas.iter().zip(&path) {
            s.lambda = lambda;
            let (_, info, _) = solve(Problem::Examples(model.clone()), s.clone());
            cold += info.iterations;
            // Same optimum within the tolerances.
            assert!(point.info.lower_bound <= info.primal + 1e-12);
            assert!(info.lower_bound <= point.info.primal + 1e-12);
        }
        assert!(warm < cold, "{}: warm {warm} vs cold {cold}", alg.name());
    }
}

#[test]
fn a_full_plane_buffer_aggregates_and_still_converges() {
    let model = Arc::new(multiclass(300, 8, 5, 21));
    let mut s = Settings::new(Algorithm::Bmrm, 0.002);
    s.tol_rel = 1e-3;
    let (_, reference, _) = solve(Problem::Examples(model.clone()), s.clone());
    s.buffer_size = 6;
    s.clean_after = 0;
    s.max_iterations = 20_000;
    let (_, info, solver) = solve(Problem::Examples(model), s);
    assert_eq!(info.exit, Exit::ConvergedRel);
    assert!(
        solver.bundle().unwrap().aggregations > 0,
        "the buffer never filled"
    );
    assert!(solver.bundle().unwrap().len() <= 6);
    assert!(info.lower_bound <= reference.primal + 1e-12);
    assert!(reference.lower_bound <= info.primal + 1e-12);
}

#[test]
fn example_parts_cover_every_example_once() {
    let model = Arc::new(multiclass(10, 3, 3, 2));
    let w: Vec<f64> = (0..model.dim()).map(|j| (j as f64).cos()).collect();
    let mut corner = Corner::new(model.dim());
    let mut mean = 0.0;
    for i in 0..10 {
        model.max_oracle(i, &w, &mut corner).unwrap();
        mean += corner.hinge(&w) / 10.0;
        corner.clear();
    }
    for p in [1, 3, 4, 7, 10] {
        let parts = ExampleParts::new(model.clone(), p);
        let sizes: Vec<usize> = (0..p).map(|k| parts.block(k).len()).collect();
        assert_eq!(sizes.iter().sum::<usize>(), 10);
        assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
        let mut g = vec![0.0; model.dim()];
        let total: f64 = (0..p)
            .map(|k| parts.partial_risk(k, &w, &mut g).unwrap())
            .sum();
        assert!((total - mean).abs() < 1e-12, "P = {p}: {total} vs {mean}");
    }
}

#[test]
fn sgd_start_helps_and_keeps_the_certificate() {
    // At lambda 1e-3 an SGD start moves BMRM's iteration count by a few
    // either way on this problem (494 cold, 498 after 3 passes); at 1e-2 it
    // saves iterations (138 cold, 128 after 3 passes, 123 after 5).
    let model = Arc::new(multiclass(600, 10, 5, 4));
    let mut s = Settings::new(Algorithm::Bmrm, 1e-2);
    let (_, cold, _) = solve(Problem::Examples(model.clone()), s.clone());
    s.sgd_passes = 3;
    let (_, warm, _) = solve(Problem::Examples(model), s);
    assert_eq!(warm.exit, Exit::ConvergedRel);
    assert!(warm.lower_bound <= cold.primal + 1e-12 && cold.lower_bound <= warm.primal + 1e-12);
    assert!(
        warm.iterations < cold.iterations,
        "{} vs {}",
        warm.iterations,
        cold.iterations
    );
}

/// A max-oracle that fails or returns NaN at a chosen example and call.
struct Faulty {
    inner: Multiclass,
    example: usize,
    after_calls: usize,
    nan: bool,
    calls: AtomicUsize,
}
impl MaxOracle for Faulty {
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn num_examples(&self) -> usize {
        self.inner.num_examples()
    }
    fn max_oracle(&self, i: usize, w: &[f64], out: &mut Corner) -> bmrm::Result<()> {
        self.inner.max_oracle(i, w, out)?;
        if i == self.example && self.calls.fetch_add(1, Ordering::SeqCst) >= self.after_calls {
            if self.nan {
                out.add(3, f64::NAN)?;
            } else {
                return Err(Error::oracle("the decoder ran out of patience"));
            }
        }
        Ok(())
    }
}

#[test]
fn a_failing_oracle_or_a_nan_ends_the_run_with_a_message_naming_where() {
    for nan in [false, true] {
        let faulty = Faulty {
            inner: multiclass(50, 4, 3, 1),
            example: 41,
            after_calls: 2,
            nan,
            calls: AtomicUsize::new(0),
        };
        let mut solver = Solver::new(
            Problem::from_max_oracle(faulty),
            Settings::new(Algorithm::Bmrm, 1e-3),
        )
        .unwrap();
        let mut w = vec![0.0; solver.dim()];
        let err = solver.run(&mut w).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("example 41") && msg.contains("iteration 2"),
            "{msg}"
        );
        if nan {
            assert!(
                matches!(
                    err,
                    Error {
                        kind: bmrm::ErrorKind::NonFinite,
                        ..
                    }
                ),
                "{err:?}"
            );
            assert!(msg.contains("psi[3] is NaN"), "{msg}");
        } else {
            assert!(
                matches!(
                    err,
                    Error {
                        kind: bmrm::ErrorKind::OracleFailed,
                        ..
                    }
                ),
                "{err:?}"
            );
            assert!(msg.contains("ran out of patience"), "{msg}");
        }
        // w holds the best valid point, whose value the summary reports.
        assert!(w.iter().all(|x| x.is_finite()));
        assert!(solver.info().primal.is_finite());
    }
}

struct NanRisk;
impl FullRisk for NanRisk {
    fn dim(&self) -> usize {
        20
    }
    fn risk(&self, w: &[f64], g: &mut [f64]) -> bmrm::Result<f64> {
        g.iter_mut().for_each(|x| *x = 1.0);
        if w[0] != 0.0 {
            g[12] = f64::NAN;
        }
        Ok(1.0 + w.iter().sum::<f64>())
    }
}

#[test]
fn a_nan_subgradient_is_named_by_index_and_iteration() {
    let mut solver = Solver::new(
        Problem::from_risk(NanRisk),
        Settings::new(Algorithm::ProxBmrm, 1.0),
    )
    .unwrap();
    let mut w = vec![0.0; 20];
    let err = solver.run(&mut w).unwrap_err();
    assert!(matches!(
        err,
        Error {
            kind: bmrm::ErrorKind::NonFinite,
            ..
        }
    ));
    assert!(
        err.to_string()
            .contains("subgradient[12] is NaN at iteration 1"),
        "{err}"
    );
    assert!(
        w.iter().all(|&x| x == 0.0),
        "w must hold the last valid iterate"
    );
}

#[test]
fn the_observer_can_stop_the_run() {
    let model = multiclass(200, 6, 4, 8);
    let mut solver = Solver::new(
        Problem::from_max_oracle(model),
        Settings::new(Algorithm::Bmrm, 1e-4),
    )
    .unwrap();
    let seen = Arc::new(AtomicUsize::new(0));
    let seen2 = seen.clone();
    solver.set_observer(move |info| {
        seen2.fetch_add(1, Ordering::SeqCst);
        if info.iterations >= 3 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    let mut w = vec![0.0; solver.dim()];
    let info = solver.run(&mut w).unwrap();
    assert_eq!(info.exit, Exit::StoppedByUser);
    assert_eq!(info.iterations, 3);
    assert_eq!(seen.load(Ordering::SeqCst), 3);
    assert_eq!(solver.history().len(), 3);
    let h = solver.history();
    assert!(h
        .windows(2)
        .all(|p| p[1].primal <= p[0].primal && p[1].lower_bound >= p[0].lower_bound));
}

#[test]
fn bad_settings_and_inputs_are_rejected_with_messages() {
    let problem = Problem::from_risk(L1 { c: vec![1.0] });
    let bad = |f: &dyn Fn(&mut Settings)| {
        let mut s = Settings::new(Algorithm::Bmrm, 1.0);
        f(&mut s);
        Solver::new(problem.clone(), s).err().expect("rejected")
    };
    assert!(
        matches!(bad(&|s| s.lambda = 0.0), Error { kind: bmrm::ErrorKind::InvalidArgument, message: m, .. } if m.contains("lambda"))
    );
    assert!(matches!(
        bad(&|s| s.lambda = f64::NAN),
        Error {
            kind: bmrm::ErrorKind::InvalidArgument,
            ..
        }
    ));
    assert!(
        matches!(bad(&|s| s.tol_rel = -1.0), Error { kind: bmrm::ErrorKind::InvalidArgument, message: m, .. } if m.contains("tol_rel"))
    );
    assert!(
        matches!(bad(&|s| s.tol_rel = 0.0), Error { kind: bmrm::ErrorKind::InvalidArgument, message: m, .. } if m.contains("stopping"))
    );
    assert!(matches!(
        bad(&|s| s.algorithm = Algorithm::PBmrm),
        Error {
            kind: bmrm::ErrorKind::NoOracle,
            ..
        }
    ));
    let mut solver = Solver::new(problem, Settings::new(Algorithm::Bmrm, 1.0)).unwrap();
    assert!(matches!(
        solver.run(&mut [0.0, 0.0]),
        Err(Error {
            kind: bmrm::ErrorKind::DimensionMismatch,
            ..
        })
    ));
    assert!(matches!(
        solver.set_lambda(-2.0),
        Err(Error {
            kind: bmrm::ErrorKind::InvalidArgument,
            ..
        })
    ));
    assert!(matches!(
        solver.run(&mut [f64::INFINITY]),
        Err(Error {
            kind: bmrm::ErrorKind::NonFinite,
            ..
        })
    ));
}

#[test]
fn limits_end_the_run_with_their_exit() {
    let model = Arc::new(multiclass(200, 6, 4, 8));
    let mut s = Settings::new(Algorithm::Bmrm, 1e-5);
    s.max_iterations = 4;
    let (_, info, solver) = solve(Problem::Examples(model.clone()), s.clone());
    assert_eq!(info.exit, Exit::MaxIterations);
    assert_eq!(solver.history().len(), 4);
    s.max_iterations = 0;
    s.time_limit_seconds = 1e-9;
    let (_, info, _) = solve(Problem::Examples(model), s);
    assert_eq!(info.exit, Exit::TimeLimit);
    assert_eq!(info.iterations, 1);
}

/// A max-oracle that must stay on one thread (as MATLAB's API must).
struct CallerThreadOnly {
    inner: Multiclass,
    thread: std::thread::ThreadId,
    foreign_calls: AtomicUsize,
}
impl MaxOracle for CallerThreadOnly {
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn num_examples(&self) -> usize {
        self.inner.num_examples()
    }
    fn max_oracle(&self, i: usize, w: &[f64], out: &mut Corner) -> bmrm::Result<()> {
        if std::thread::current().id() != self.thread {
            self.foreign_calls.fetch_add(1, Ordering::Relaxed);
        }
        self.inner.max_oracle(i, w, out)
    }
    fn thread_safe(&self) -> bool {
        false
    }
}

#[test]
fn an_oracle_that_is_not_thread_safe_runs_on_the_callers_thread() {
    let oracle = Arc::new(CallerThreadOnly {
        inner: multiclass(300, 5, 3, 9),
        thread: std::thread::current().id(),
        foreign_calls: AtomicUsize::new(0),
    });
    for alg in [Algorithm::Bmrm, Algorithm::ProxPBmrm] {
        let mut s = Settings::new(alg, 0.01);
        s.num_threads = 2;
        s.sgd_passes = 1;
        let mut solver = Solver::new(Problem::Examples(oracle.clone()), s).unwrap();
        let mut w = vec![0.0; oracle.dim()];
        let info = solver.run(&mut w).unwrap();
        assert!(info.iterations > 1);
    }
    assert_eq!(oracle.foreign_calls.load(Ordering::Relaxed), 0);
}

/// A setting an algorithm would not read is refused, naming it, and the
/// same setting is accepted (and runs) where it applies.
#[test]
fn settings_an_algorithm_does_not_use_are_refused_by_name() {
    let model = Arc::new(multiclass(60, 4, 3, 5));
    let examples = Problem::Examples(model);
    type Change = fn(&mut Settings);
    let cases: [(&str, Change, Algorithm, Algorithm); 12] = [
        (
            "use_cache",
            |s| s.use_cache = true,
            Algorithm::Bmrm,
            Algorithm::Bcfw,
        ),
        (
            "step_type",
            |s| s.step_type = StepType::Pairwise,
            Algorithm::PBmrm,
            Algorithm::Bcfw,
        ),
        (
            "gap_check",
            |s| s.gap_check = 3,
            Algorithm::Sgd,
            Algorithm::Bcfw,
        ),
        (
            "multi_plane",
            |s| s.multi_plane = true,
            Algorithm::ProxBmrm,
            Algorithm::Bcfw,
        ),
        (
            "mini_batch",
            |s| s.mini_batch = 8,
            Algorithm::CuttingPlane,
            Algorithm::Bcfw,
        ),
        (
            "buffer_size",
            |s| s.buffer_size = 50,
            Algorithm::Bcfw,
            Algorithm::Bmrm,
        ),
        (
            "clean_after",
            |s| s.clean_after = 3,
            Algorithm::Sgd,
            Algorithm::CuttingPlane,
        ),
        (
            "reuse_planes",
            |s| s.reuse_planes = false,
            Algorithm::CuttingPlane,
            Algorithm::PBmrm,
        ),
        (
            "prox_t",
            |s| s.prox_t = 10.0,
            Algorithm::Bmrm,
            Algorithm::ProxBmrm,
        ),
        (
            "cp_radius",
            |s| s.cp_radius = 5.0,
            Algorithm::Bmrm,
            Algorithm::CuttingPlane,
        ),
        (
            "sgd_passes",
            |s| s.sgd_passes = 2,
            Algorithm::Bcfw,
            Algorithm::ProxPBmrm,
        ),
        (
            "num_parts",
            |s| s.num_parts = 4,
            Algorithm::Bmrm,
            Algorithm::PBmrm,
        ),
    ];
    for (field, change, refused, accepted) in cases {
        let mut s = Settings::new(refused, 0.1);
        change(&mut s);
        let err = Solver::new(examples.clone(), s).err().expect("refused");
        assert_eq!(err.kind, bmrm::ErrorKind::InvalidArgument, "{field}");
        assert!(err.message.starts_with(field), "{field}: {}", err.message);
        assert!(
            err.message.contains(refused.name()),
            "{field}: {}",
            err.message
        );
        let mut s = Settings::new(accepted, 0.1);
        s.tol_rel = 1e-2;
        change(&mut s);
        let (_, info, _) = solve(examples.clone(), s);
        assert!(info.iterations > 0, "{field} with {}", accepted.name());
    }
    // Every algorithm's own defaults are valid.
    for alg in (0..7).map(|a| Algorithm::from_i32(a).expect("an algorithm")) {
        Settings::new(alg, 0.1)
            .validate()
            .expect("defaults are valid");
    }
    // Settings BCFW would not act on are refused too.
    let mut s = Settings::new(Algorithm::Bcfw, 0.1);
    s.early_exact_factor = 0.8;
    let err = Solver::new(examples.clone(), s.clone())
        .err()
        .expect("no tol_abs");
    assert!(err.message.contains("tol_abs"), "{}", err.message);
    s.tol_abs = 1e-3;
    Solver::new(examples.clone(), s).expect("with tol_abs");
    let mut s = Settings::new(Algorithm::Bcfw, 0.1);
    s.gap_degree = 2.0;
    s.sampling = Sampling::Uniform;
    let err = Solver::new(examples.clone(), s.clone())
        .err()
        .expect("not gap sampling");
    assert!(err.message.starts_with("gap_degree"), "{}", err.message);
    s.sampling = Sampling::Gap;
    Solver::new(examples, s).expect("with gap sampling");
}

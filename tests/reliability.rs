//! Regression tests of an attack run's findings at the Rust API: hostile
//! sizes give `OutOfMemory`/`InvalidArgument` instead of an abort, limits are
//! honoured, a NaN is never ignored, and a failed run leaves the solver usable
//! and its summary saying so.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bmrm::models::{synthetic, Multiclass};
use bmrm::oracle::{Corner, FullRisk, MaxOracle, PartitionedRisk};
use bmrm::{Algorithm, Error, Exit, Problem, Settings, Solver, StepType};

/// R(w) = sum_p |w_p - 1| over `dim` parts; `nan_at` makes the call of that
/// index return a NaN risk; `delay` sleeps in every call.
struct Parts {
    dim: usize,
    calls: AtomicUsize,
    nan_at: Option<usize>,
    delay: Duration,
}

impl Parts {
    fn new(dim: usize) -> Self {
        Parts {
            dim,
            calls: AtomicUsize::new(0),
            nan_at: None,
            delay: Duration::ZERO,
        }
    }
}

impl PartitionedRisk for Parts {
    fn dim(&self) -> usize {
        self.dim
    }
    fn num_parts(&self) -> usize {
        self.dim
    }
    fn partial_risk(&self, p: usize, w: &[f64], g: &mut [f64]) -> bmrm::Result<f64> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(self.delay);
        g.iter_mut().for_each(|x| *x = 0.0);
        let d = w[p] - 1.0;
        g[p] = d.signum();
        if Some(call) == self.nan_at {
            return Ok(f64::NAN);
        }
        Ok(d.abs())
    }
}

#[test]
fn sgd_refuses_a_nan_risk_at_any_call() {
    for algorithm in [Algorithm::Sgd, Algorithm::Bmrm] {
        for nan_at in [0, 1, 2, 7, 30] {
            let mut parts = Parts::new(4);
            parts.nan_at = Some(nan_at);
            let mut s = Settings::new(algorithm, 0.1);
            s.sgd_passes = 3;
            s.num_parts = 4;
            let mut solver = Solver::new(Problem::from_partitioned(parts), s).unwrap();
            let mut w = vec![0.0; 4];
            let got = solver.run(&mut w);
            assert!(
                matches!(
                    got,
                    Err(Error {
                        kind: bmrm::ErrorKind::NonFinite,
                        ..
                    })
                ),
                "{algorithm:?}, NaN at call {nan_at}: {got:?}"
            );
            assert_eq!(solver.info().exit, Exit::NotRun);
        }
    }
}

/// R(w) = |w_0 - 1| + |w_1|, whose subgradient is scaled by 1e308 while
/// `poison` is set.
struct Poisonable {
    poison: Arc<AtomicBool>,
}

impl FullRisk for Poisonable {
    fn dim(&self) -> usize {
        2
    }
    fn risk(&self, w: &[f64], g: &mut [f64]) -> bmrm::Result<f64> {
        let scale = if self.poison.load(Ordering::SeqCst) {
            1e308
        } else {
            1.0
        };
        g[0] = scale * (w[0] - 1.0).signum();
        g[1] = scale * w[1].signum();
        Ok((w[0] - 1.0).abs() + w[1].abs())
    }
}

#[test]
fn a_run_poisoned_by_a_huge_subgradient_does_not_poison_the_next() {
    for algorithm in [Algorithm::Bmrm, Algorithm::ProxBmrm] {
        let poison = Arc::new(AtomicBool::new(false));
        let problem = Problem::from_risk(Poisonable {
            poison: poison.clone(),
        });
        let mut solver = Solver::new(problem, Settings::new(algorithm, 0.5)).unwrap();
        let mut w = vec![0.0; 2];
        let first = solver.run(&mut w).unwrap();
        assert_ne!(first.exit, Exit::NotRun);
        poison.store(true, Ordering::SeqCst);
        let mut w = vec![0.0; 2];
        assert!(
            solver.run(&mut w).is_err(),
            "{algorithm:?}: 1e308 went unnoticed"
        );
        assert_eq!(solver.info().exit, Exit::NotRun, "the failed run's info");
        poison.store(false, Ordering::SeqCst);
        let mut w = vec![0.0; 2];
        let again = solver
            .run(&mut w)
            .unwrap_or_else(|e| panic!("{algorithm:?}: the solver stayed poisoned: {e}"));
        // min 0.25 w0^2 + |w0 - 1| + 0.25 w1^2 + |w1|: w = (1, 0), F = 0.25.
        assert!((again.primal - 0.25).abs() < 1e-3, "{again:?}");
        assert!(again.lower_bound <= again.primal);
    }
}

#[test]
fn a_run_refused_before_it_starts_leaves_not_run_in_the_info() {
    let mut solver = Solver::new(
        Problem::from_partitioned(Parts::new(3)),
        Settings::new(Algorithm::Bmrm, 0.5),
    )
    .unwrap();
    let mut w = vec![0.0; 3];
    assert_ne!(solver.run(&mut w).unwrap().exit, Exit::NotRun);
    let mut bad = vec![f64::NAN; 3];
    assert!(solver.run(&mut bad).is_err());
    assert_eq!(solver.info().exit, Exit::NotRun);
}

#[test]
fn num_threads_is_capped_and_checked_before_any_thread_starts() {
    let mut s = Settings::new(Algorithm::Bmrm, 0.1);
    s.num_threads = 100_000;
    let started = Instant::now();
    let got = Solver::new(Problem::from_partitioned(Parts::new(2)), s);
    assert!(
        matches!(&got, Err(Error { kind: bmrm::ErrorKind::InvalidArgument, message: m, .. }) if m.contains("num_threads")),
        "{:?}",
        got.err()
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    let mut s = Settings::new(Algorithm::Bmrm, 0.1);
    s.num_threads = bmrm::solver::MAX_THREADS;
    assert!(Solver::new(Problem::from_partitioned(Parts::new(2)), s).is_ok());
}

/// The threads of this process (Linux; `None` elsewhere).
fn process_threads() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Threads:"))?;
    line["Threads:".len()..].trim().parse().ok()
}

#[test]
fn a_solver_starts_at_most_a_thread_per_core_and_only_at_its_first_run() {
    let Some(before) = process_threads() else {
        return;
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut s = Settings::new(Algorithm::Bmrm, 0.1);
    s.num_threads = bmrm::solver::MAX_THREADS;
    let mut solver = Solver::new(Problem::from_partitioned(Parts::new(2)), s).unwrap();
    solver.set_lambda(0.2).unwrap();
    // The other tests of this binary start a few threads at most: a pool of
    // MAX_THREADS built in `Solver::new` would add a thousand.
    let made = process_threads().unwrap();
    assert!(
        made < before + MAX_THREADS_SEEN,
        "{before} threads before Solver::new, {made} after"
    );
    let mut w = vec![0.0; 2];
    solver.run(&mut w).unwrap();
    // The pool is capped at the cores (1024 threads on 2 cores
    // made every evaluation take seconds); the check is meaningful where
    // the cores are fewer than half of MAX_THREADS.
    let ran = process_threads().unwrap();
    if cores < MAX_THREADS_SEEN {
        assert!(
            ran < before + MAX_THREADS_SEEN,
            "{before} threads before the run, {ran} during the solver's life ({cores} cores)"
        );
    }
}

/// Half the pool of the test above: more new threads than this is the pool.
const MAX_THREADS_SEEN: usize = bmrm::solver::MAX_THREADS / 2;

/// A max-oracle claiming `n` examples of dimension `dim` (never called: the
/// solver must refuse it first).
struct Huge {
    n: usize,
    dim: usize,
}

impl MaxOracle for Huge {
    fn dim(&self) -> usize {
        self.dim
    }
    fn num_examples(&self) -> usize {
        self.n
    }
    fn max_oracle(&self, _: usize, _: &[f64], _: &mut Corner) -> bmrm::Result<()> {
        Err(Error::oracle("a huge oracle was called"))
    }
}

#[test]
fn huge_example_counts_and_dimensions_are_out_of_memory_not_an_abort() {
    let cases = [
        (Algorithm::Bcfw, 1usize << 40, 4usize),
        (Algorithm::Bcfw, usize::MAX, 4),
        (Algorithm::Sgd, 1 << 40, 4),
        (Algorithm::Sgd, usize::MAX, 4),
        (Algorithm::Bmrm, 4, 1 << 60),
        (Algorithm::PBmrm, 1 << 20, 1 << 40),
    ];
    for (algorithm, n, dim) in cases {
        let mut s = Settings::new(algorithm, 0.1);
        if algorithm == Algorithm::PBmrm {
            s.num_parts = 1 << 20;
        }
        let got = Solver::new(Problem::from_max_oracle(Huge { n, dim }), s);
        assert!(
            matches!(
                got,
                Err(Error {
                    kind: bmrm::ErrorKind::OutOfMemory,
                    ..
                })
            ),
            "{algorithm:?} n = {n} dim = {dim}: {:?}",
            got.err()
        );
    }
}

#[test]
fn time_limit_stops_the_sgd_start() {
    // 200 parts of 2 ms: the t0 search alone takes 10 x 2 x 20 calls and
    // every pass 200 calls, about 1.2 s a pass and an hour for 3000 passes.
    let delay = Duration::from_millis(2);
    for algorithm in [Algorithm::Sgd, Algorithm::Bmrm] {
        let mut s = Settings::new(algorithm, 0.1);
        s.sgd_passes = 3000;
        s.time_limit_seconds = 0.3;
        s.num_parts = 200;
        let problem = Problem::from_partitioned(Parts {
            delay,
            ..Parts::new(200)
        });
        let mut solver = Solver::new(problem, s).unwrap();
        let mut w = vec![0.0; 200];
        let started = Instant::now();
        let info = solver.run(&mut w).unwrap();
        assert_eq!(info.exit, Exit::TimeLimit, "{algorithm:?}");
        // The limit, plus at most one exact evaluation (200 x 2 ms) per
        // phase; far below the hour the passes would take.
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{algorithm:?} took {:?}",
            started.elapsed()
        );
    }
}

fn small_multiclass() -> Multiclass {
    let (x, y) = synthetic::gaussian_multiclass(12, 3, 3, 2.0, 5);
    Multiclass::new(x, 3, y, 3, true).unwrap()
}

#[test]
fn bcfw_path_refuses_a_degenerate_eps() {
    for eps in [1e300, f64::INFINITY, f64::NAN, 0.0, -1.0] {
        let mut s = Settings::new(Algorithm::Bcfw, 0.1);
        s.num_passes = 50;
        let mut solver = Solver::new(Problem::from_max_oracle(small_multiclass()), s).unwrap();
        let got = solver.bcfw_mut().unwrap().path(eps, 1e-300, 10);
        match got {
            Err(Error {
                kind: bmrm::ErrorKind::InvalidArgument,
                message: m,
                ..
            }) => assert!(m.contains("eps"), "{m}"),
            Err(e) => panic!("eps = {eps}: {e}"),
            Ok(path) => {
                for b in &path {
                    assert!(
                        b.gap.is_finite() && b.primal.is_finite(),
                        "eps = {eps}: {b:?}"
                    );
                }
            }
        }
    }
}

/// Four parts; part 2 fails.
struct FailingPart;

impl PartitionedRisk for FailingPart {
    fn dim(&self) -> usize {
        4
    }
    fn num_parts(&self) -> usize {
        4
    }
    fn partial_risk(&self, p: usize, _: &[f64], g: &mut [f64]) -> bmrm::Result<f64> {
        g.iter_mut().for_each(|x| *x = 0.0);
        if p == 2 {
            return Err(Error::oracle("callback returned 3"));
        }
        Ok(1.0)
    }
}

#[test]
fn a_failing_part_is_named_once_under_every_algorithm() {
    for algorithm in [Algorithm::Bmrm, Algorithm::ProxBmrm, Algorithm::PBmrm] {
        let mut solver = Solver::new(
            Problem::from_partitioned(FailingPart),
            Settings::new(algorithm, 0.1),
        )
        .unwrap();
        let mut w = vec![0.0; 4];
        let message = solver.run(&mut w).unwrap_err().to_string();
        assert_eq!(
            message.matches("(part ").count(),
            1,
            "{algorithm:?}: {message}"
        );
        assert!(message.contains("(part 2)"), "{algorithm:?}: {message}");
    }
}

/// The multiclass oracle of `small_multiclass` answering every wrong class
/// with the one label id 5: two labels, one id.
struct CollidingIds(Multiclass);

impl MaxOracle for CollidingIds {
    fn dim(&self) -> usize {
        self.0.dim()
    }
    fn num_examples(&self) -> usize {
        self.0.num_examples()
    }
    fn max_oracle(&self, i: usize, w: &[f64], out: &mut Corner) -> bmrm::Result<()> {
        self.0.max_oracle(i, w, out)?;
        out.set_label(5);
        Ok(())
    }
}

#[test]
fn bcfw_reports_label_ids_that_name_two_labels() {
    // With every corner kept (cache, pairwise, away), a reused id with
    // another psi made BCFW step towards the wrong corner and stall.
    for (step_type, use_cache) in [
        (bmrm::StepType::FrankWolfe, true),
        (bmrm::StepType::Pairwise, false),
        (bmrm::StepType::Pairwise, true),
        (bmrm::StepType::Away, false),
    ] {
        let mut s = Settings::new(Algorithm::Bcfw, 0.01);
        s.step_type = step_type;
        s.use_cache = use_cache;
        s.num_passes = 200;
        let problem = Problem::from_max_oracle(CollidingIds(small_multiclass()));
        let mut solver = Solver::new(problem, s).unwrap();
        let mut w = vec![0.0; solver.dim()];
        match solver.run(&mut w) {
            Err(Error {
                kind: bmrm::ErrorKind::OracleFailed,
                message,
                ..
            }) => assert!(message.contains("label id 5"), "{message}"),
            other => panic!("{step_type:?} cache {use_cache}: {other:?}"),
        }
    }
}

#[test]
fn bcfw_with_a_box_excluding_zero_starts_from_w_zero() {
    // The start is the box's projection of 0; w = 0 names it (finding 7:
    // it was refused with "pass w = 0").
    let problem = Problem::from_max_oracle(small_multiclass());
    let mut s = Settings::new(Algorithm::Bcfw, 0.1);
    s.tol_abs = 1e-6;
    s.tol_rel = 1e-12;
    let mut solver = Solver::new(problem, s).unwrap();
    let dim = solver.dim();
    let lower = vec![0.25; dim];
    let upper = vec![f64::INFINITY; dim];
    solver.bcfw_mut().unwrap().set_bounds(lower, upper).unwrap();
    let mut w = vec![1.0; dim];
    let refused = solver.run(&mut w).unwrap_err();
    assert_eq!(refused.kind, bmrm::ErrorKind::InvalidArgument);
    assert!(refused.message.contains("w = 0"), "{}", refused.message);
    let mut w = vec![0.0; dim];
    let info = solver.run(&mut w).unwrap();
    assert!(w.iter().all(|&x| x >= 0.25), "{w:?}");
    assert!(
        info.lower_bound <= info.primal && info.gap <= 1e-6,
        "{info:?}"
    );
    // A later run continues from the w the last one returned.
    let info2 = solver.run(&mut w).unwrap();
    assert!(info2.lower_bound <= info2.primal, "{info2:?}");
}

/// 2^40 examples whose answer is always the ground truth; `slow_after`
/// makes calls past that many sleep a little (a pass that would take hours).
struct Endless {
    calls: AtomicUsize,
}

impl MaxOracle for Endless {
    fn dim(&self) -> usize {
        3
    }
    fn num_examples(&self) -> usize {
        1 << 40
    }
    fn max_oracle(&self, _: usize, _: &[f64], _: &mut Corner) -> bmrm::Result<()> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

#[test]
fn the_time_limit_ends_a_pass_over_very_many_examples() {
    // Finding 5: a bundle method over 2^40 examples checked the limit only
    // between iterations, i.e. after 2^40 calls.
    for algorithm in [Algorithm::Bmrm, Algorithm::PBmrm, Algorithm::CuttingPlane] {
        let mut s = Settings::new(algorithm, 0.1);
        s.time_limit_seconds = 0.3;
        if algorithm == Algorithm::PBmrm {
            s.num_parts = 4;
        }
        let oracle = Arc::new(Endless {
            calls: AtomicUsize::new(0),
        });
        let problem = Problem::Examples(oracle.clone());
        let mut solver = Solver::new(problem, s).unwrap();
        let mut w = vec![0.5; 3];
        let started = Instant::now();
        let info = solver.run(&mut w).unwrap();
        assert!(started.elapsed() < Duration::from_secs(10), "{algorithm:?}");
        assert_eq!(info.exit, Exit::TimeLimit, "{algorithm:?}");
        assert!(oracle.calls.load(Ordering::Relaxed) > 0, "{algorithm:?}");
        // No evaluation finished: the start comes back untouched.
        assert_eq!(w, vec![0.5; 3], "{algorithm:?}");
        assert!(info.lower_bound <= info.primal, "{info:?}");
    }
}

/// A multiclass problem big enough that the phases below run long.
fn medium_multiclass() -> Multiclass {
    let (x, y) = synthetic::gaussian_multiclass(200, 20, 4, 1.0, 3);
    Multiclass::new(x, 20, y, 4, true).unwrap()
}

/// What a case of the test below changes in the settings.
type SetOne = fn(&mut Settings);

#[test]
fn the_time_limit_ends_every_phase_that_can_run_long() {
    // Seeding the bundle with every SGD pass's planes, the
    // multi-plane approximate passes and block steps, and a pool of 1024
    // threads on a machine with few cores each ran far past the limit (50 s
    // for a 1 s limit, or without end). The bound is the limit plus 3 s: a
    // correctness bound (the run ends), not a speed claim.
    let limit = 1.0;
    let cases: [(&str, SetOne); 4] = [
        ("sgd start", |s| s.sgd_passes = u32::MAX),
        ("mp_approx_passes", |s| {
            s.multi_plane = true;
            s.mp_approx_passes = u32::MAX;
        }),
        ("mp_block_steps", |s| {
            s.multi_plane = true;
            s.mp_block_steps = u32::MAX;
        }),
        ("num_threads", |s| s.num_threads = bmrm::solver::MAX_THREADS),
    ];
    for (what, set) in cases {
        let algorithm = if what.starts_with("mp_") {
            Algorithm::Bcfw
        } else {
            Algorithm::ProxPBmrm
        };
        let mut s = Settings::new(algorithm, 1e-4);
        if algorithm == Algorithm::ProxPBmrm {
            s.num_parts = 16;
        }
        s.tol_rel = 1e-14;
        s.time_limit_seconds = limit;
        set(&mut s);
        let mut solver = Solver::new(Problem::from_max_oracle(medium_multiclass()), s).unwrap();
        let mut w = vec![0.0; solver.dim()];
        let started = Instant::now();
        let info = solver.run(&mut w).unwrap();
        let took = started.elapsed().as_secs_f64();
        assert_eq!(info.exit, Exit::TimeLimit, "{what}: {info:?}");
        assert!(
            took < limit + 3.0,
            "{what}: a {limit} s limit took {took:.1} s"
        );
        assert!(info.lower_bound <= info.primal, "{what}: {info:?}");
    }
}

/// The oracle of `small_multiclass` failing from call `fail_at` on.
struct FailsLater {
    model: Multiclass,
    calls: AtomicUsize,
    fail_at: usize,
}

impl MaxOracle for FailsLater {
    fn dim(&self) -> usize {
        self.model.dim()
    }
    fn num_examples(&self) -> usize {
        self.model.num_examples()
    }
    fn max_oracle(&self, i: usize, w: &[f64], out: &mut Corner) -> bmrm::Result<()> {
        if self.calls.fetch_add(1, Ordering::SeqCst) >= self.fail_at {
            return Err(Error::oracle("the decoder failed"));
        }
        self.model.max_oracle(i, w, out)
    }
}

#[test]
fn a_failed_run_is_not_certified_under_every_algorithm() {
    use Algorithm::*;
    for algorithm in [Bmrm, ProxBmrm, PBmrm, ProxPBmrm, Bcfw, Sgd, CuttingPlane] {
        // At the first call, and after some iterations of exact answers.
        for fail_at in [0, 40] {
            let oracle = FailsLater {
                model: small_multiclass(),
                calls: AtomicUsize::new(0),
                fail_at,
            };
            let mut s = Settings::new(algorithm, 0.1);
            s.tol_rel = 1e-12;
            s.num_threads = 1;
            let mut solver = Solver::new(Problem::from_max_oracle(oracle), s).unwrap();
            let mut w = vec![0.0; solver.dim()];
            let what = format!("{algorithm:?}, failing at call {fail_at}");
            solver.run(&mut w).expect_err(&what);
            let info = solver.info();
            assert_eq!(info.exit, Exit::NotRun, "{what}");
            assert!(!info.certified, "{what}: {info:?}");
        }
    }
}

#[test]
fn a_tolerance_below_rounding_ends_the_run_naming_it() {
    // tol_abs far below what f64 can certify at the problem's scale: the
    // gap stalls at its rounding floor; the run must say so long before
    // max_iterations instead of running to it.
    for algorithm in [Algorithm::Bmrm, Algorithm::ProxPBmrm] {
        let mut s = Settings::new(algorithm, 1e-3);
        s.tol_rel = 0.0;
        s.tol_abs = 1e-300;
        s.max_iterations = 1000;
        if algorithm == Algorithm::ProxPBmrm {
            s.num_parts = 2;
        }
        let iterations = Arc::new(AtomicUsize::new(0));
        let seen = iterations.clone();
        let mut solver = Solver::new(Problem::from_max_oracle(medium_multiclass()), s).unwrap();
        solver.set_observer(move |_| {
            seen.fetch_add(1, Ordering::Relaxed);
            std::ops::ControlFlow::Continue(())
        });
        let mut w = vec![0.0; solver.dim()];
        let e = match solver.run(&mut w) {
            Ok(info) => panic!("{algorithm:?}: {info:?}"),
            Err(e) => e,
        };
        assert!(e.to_string().contains("tol_abs = 1.000e-300"), "{e}");
        assert!(e.to_string().contains("precision lost"), "{e}");
        let t = iterations.load(Ordering::Relaxed);
        assert!(t < 1000, "{algorithm:?}: {t} iterations");
        // A tolerance of 0 is off: the run goes on to its iteration limit.
        let mut s = Settings::new(algorithm, 1e-3);
        s.tol_rel = 0.0;
        s.max_iterations = t as u64 + 20;
        if algorithm == Algorithm::ProxPBmrm {
            s.num_parts = 2;
        }
        let mut solver = Solver::new(Problem::from_max_oracle(medium_multiclass()), s).unwrap();
        let mut w = vec![0.0; solver.dim()];
        let info = solver.run(&mut w).unwrap();
        assert_ne!(info.exit, Exit::NotRun, "{algorithm:?}: {info:?}");
    }
}

#[test]
fn bcfw_ends_a_run_whose_tolerance_is_below_rounding_naming_it() {
    // BCFW's bound loses gamma_2K of |ell| + lambda ||v||^2 to the rounding
    // of its K block steps, an allowance that grows with every pass: at
    // tol_rel = 1e-15 the gap stalls at it (2.4e-10 after 2,630 pairwise
    // passes here) and the run went on to its pass limit. It must end
    // before, saying so. (Plain FW steps, whose gap falls as 1/k, were
    // still at 2.9e-6 after 2,000 passes: they meet the floor much later.)
    for step_type in [StepType::Exact, StepType::Pairwise] {
        let mut s = Settings::new(Algorithm::Bcfw, 0.1);
        s.tol_rel = 1e-15;
        s.tol_abs = 0.0;
        s.max_iterations = 5000;
        s.num_passes = 5000;
        s.step_type = step_type;
        let passes = Arc::new(AtomicUsize::new(0));
        let seen = passes.clone();
        let mut solver = Solver::new(Problem::from_max_oracle(medium_multiclass()), s).unwrap();
        solver.set_observer(move |_| {
            seen.fetch_add(1, Ordering::Relaxed);
            std::ops::ControlFlow::Continue(())
        });
        let mut w = vec![0.0; solver.dim()];
        let e = match solver.run(&mut w) {
            Ok(info) => panic!("{step_type:?}: {info:?}"),
            Err(e) => e,
        };
        assert!(e.to_string().contains("precision lost"), "{e}");
        assert!(e.to_string().contains("tol_rel = 1.000e-15"), "{e}");
        let k = passes.load(Ordering::Relaxed);
        assert!(k < 4000, "{step_type:?}: {k} passes");
        // A reachable tolerance still converges.
        let mut s = Settings::new(Algorithm::Bcfw, 0.1);
        s.tol_rel = 1e-6;
        s.tol_abs = 0.0;
        s.step_type = step_type;
        let mut solver = Solver::new(Problem::from_max_oracle(medium_multiclass()), s).unwrap();
        let mut w = vec![0.0; solver.dim()];
        let info = solver.run(&mut w).unwrap();
        assert_eq!(info.exit, Exit::ConvergedRel, "{step_type:?}: {info:?}");
    }
}

/// 100 examples whose answer (the truth) takes 200 ms each: a decoder of
/// seconds per example, answered one example at a time.
struct SlowDecoder;

impl MaxOracle for SlowDecoder {
    fn dim(&self) -> usize {
        3
    }
    fn num_examples(&self) -> usize {
        100
    }
    fn max_oracle(&self, _: usize, _: &[f64], _: &mut Corner) -> bmrm::Result<()> {
        std::thread::sleep(Duration::from_millis(200));
        Ok(())
    }
}

#[test]
fn the_time_limit_is_checked_between_slow_examples() {
    // The clock was read between blocks of 48 examples (and every 1024):
    // a 0.5 s limit over a 200 ms decoder ran 9.6 s. It must stop within
    // about one decode of the limit; the bound (limit + 1 s) is a
    // correctness bound, not a speed claim.
    for algorithm in [Algorithm::Bmrm, Algorithm::ProxPBmrm] {
        let mut s = Settings::new(algorithm, 0.1);
        s.time_limit_seconds = 0.5;
        s.num_threads = 1;
        if algorithm == Algorithm::ProxPBmrm {
            s.num_parts = 2;
        }
        let mut solver = Solver::new(Problem::from_max_oracle(SlowDecoder), s).unwrap();
        let mut w = vec![0.0; 3];
        let started = Instant::now();
        let info = solver.run(&mut w).unwrap();
        let took = started.elapsed().as_secs_f64();
        assert_eq!(info.exit, Exit::TimeLimit, "{algorithm:?}: {info:?}");
        assert!(took < 1.5, "{algorithm:?}: a 0.5 s limit took {took:.2} s");
    }
}

/// 100 examples of the hinge `max(0, 1 - w)` (dim 1) whose answer takes
/// 200 ms each: `F(w) = 0.05 w^2 + max(0, 1 - w)` at lambda 0.1 has its
/// minimum `F* = 0.05` at `w = 1`.
struct SlowHinge;

impl MaxOracle for SlowHinge {
    fn dim(&self) -> usize {
        1
    }
    fn num_examples(&self) -> usize {
        100
    }
    fn max_oracle(&self, _: usize, w: &[f64], out: &mut Corner) -> bmrm::Result<()> {
        std::thread::sleep(Duration::from_millis(200));
        if 1.0 - w[0] > 0.0 {
            out.set_loss(1.0);
            out.set_label(1);
            out.add(0, 1.0)?;
        }
        Ok(())
    }
}

#[test]
fn bcfw_checks_the_time_limit_between_slow_examples() {
    // BCFW read the clock only between passes, and its certificate (an
    // exact pass) ran whole after the limit: a 0.5 s limit over 200 ms
    // decodes took two passes (40 s). It must stop within about one decode
    // of the limit, keeping only complete certificates. The bound
    // (limit + 1 s) is a correctness bound, not a speed claim.
    for batch in [1, 4] {
        let mut s = Settings::new(Algorithm::Bcfw, 0.1);
        s.time_limit_seconds = 0.5;
        s.num_threads = 1;
        s.mini_batch = batch;
        let mut solver = Solver::new(Problem::from_max_oracle(SlowHinge), s).unwrap();
        let mut w = vec![0.0; 1];
        let started = Instant::now();
        let info = solver.run(&mut w).unwrap();
        let took = started.elapsed().as_secs_f64();
        assert_eq!(info.exit, Exit::TimeLimit, "batch {batch}: {info:?}");
        assert!(took < 1.5, "batch {batch}: a 0.5 s limit took {took:.2} s");
        // No pass was complete: no primal value, and a bound below F*.
        assert!(info.lower_bound <= 0.05 + 1e-12, "batch {batch}: {info:?}");
        assert!(info.primal >= 0.05 - 1e-12, "batch {batch}: {info:?}");
        assert!(!info.certified || info.primal.is_infinite(), "{info:?}");
    }
}

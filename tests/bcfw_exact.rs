//! BCFW's exact block steps (`StepType::Exact`) on class-factored blocks:
//! they must reach the optimum BMRM certifies independently, never give a
//! dual value (a lower bound) above it while blocks are shrunk, give the
//! same bits for any thread count with mini-batches, and be refused where
//! they cannot be honoured.

use std::sync::{Arc, Mutex};

use bmrm::models::{synthetic, Multiclass};
use bmrm::{
    Algorithm, Corner, ErrorKind, Exit, MaxOracle, Problem, Result, Sampling, Settings, Solver,
    StepType,
};

fn model(m: usize, d: usize, k: usize, seed: u64) -> Multiclass {
    let (x, y) = synthetic::gaussian_multiclass(m, d, k, 1.5, seed);
    Multiclass::new(x, d, y, k, true).unwrap()
}

/// BMRM's certified optimum: `(lower bound, primal)` within 1e-9.
fn optimum(model: &Multiclass, lambda: f64) -> (f64, f64) {
    let mut s = Settings::new(Algorithm::Bmrm, lambda);
    s.tol_rel = 0.0;
    s.tol_abs = 1e-9;
    let mut solver = Solver::new(Problem::from_max_oracle(model.clone()), s).unwrap();
    let mut w = vec![0.0; solver.dim()];
    let info = solver.run(&mut w).unwrap();
    assert_eq!(info.exit, Exit::ConvergedAbs);
    (info.lower_bound, info.primal)
}

fn exact(lambda: f64, sampling: Sampling, batch: u32) -> Settings {
    let mut s = Settings::new(Algorithm::Bcfw, lambda);
    s.step_type = StepType::Exact;
    s.sampling = sampling;
    s.mini_batch = batch;
    s.tol_rel = 0.0;
    s.tol_abs = 1e-5;
    // (gap sampling in batches of 64 needs about 3,100 passes at lambda
    // 1e-2 with the shrinking kept between exact passes)
    s.max_iterations = 6000;
    s.gap_check = 3;
    s.seed = 7;
    s
}

#[test]
fn exact_steps_reach_bmrm_certified_optimum_and_every_dual_stays_below_it() {
    let model = model(200, 20, 5, 4);
    for lambda in [1e-1, 1e-2] {
        let (lb, opt) = optimum(&model, lambda);
        // gap_check 10^6 with at most 6000 passes: only the gap estimate of
        // the shrunk problem can call the exact passes that certify.
        for (sampling, batch, gap_check) in [
            (Sampling::Permutation, 0, 3),
            (Sampling::Gap, 0, 3),
            (Sampling::Uniform, 0, 3),
            (Sampling::Permutation, 16, 3),
            (Sampling::Gap, 64, 3),
            (Sampling::Permutation, 0, 1_000_000),
            (Sampling::Gap, 16, 1_000_000),
        ] {
            let what =
                format!("lambda {lambda}, {sampling:?}, mini_batch {batch}, gap_check {gap_check}");
            let mut s = exact(lambda, sampling, batch);
            s.gap_check = gap_check;
            // The dual after every pass, shrunk blocks and all.
            let duals = Arc::new(Mutex::new(Vec::new()));
            let seen = duals.clone();
            s.iterate_hook = Some(bmrm::IterateHook::new(move |v| {
                seen.lock().unwrap().push(v.dual);
                std::ops::ControlFlow::Continue(())
            }));
            let mut solver = Solver::new(Problem::from_max_oracle(model.clone()), s).unwrap();
            let mut w = vec![0.0; solver.dim()];
            let info = solver.run(&mut w).unwrap();
            assert_eq!(info.exit, Exit::ConvergedAbs, "{what}: {info:?}");
            assert!(
                info.lower_bound <= opt + 1e-12 && info.primal >= lb - 1e-12,
                "{what}: [{}, {}] against BMRM's [{lb}, {opt}]",
                info.lower_bound,
                info.primal
            );
            assert!(info.primal - lb <= 1e-5 + 1e-12, "{what}: {info:?}");
            let duals = duals.lock().unwrap();
            assert!(!duals.is_empty());
            for (pass, &d) in duals.iter().enumerate() {
                assert!(
                    d <= opt + 1e-12,
                    "{what}: dual {d} > optimum {opt} after pass {pass}"
                );
            }
            // The dual never falls: every step is exact (or a line search).
            for p in duals.windows(2) {
                assert!(p[1] >= p[0] - 1e-12 * p[0].abs(), "{what}: {p:?}");
            }
        }
    }
}

#[test]
fn exact_steps_give_the_same_bits_for_any_thread_count() {
    let model = model(500, 12, 4, 9);
    // gap_check 1000: the exact passes come from the gap estimate (tol_abs
    // 1e-3 gives it a target). Permutation and uniform sampling draw a
    // pass's blocks first, and with 2 or 4 threads a second thread reads
    // their rows ahead of the steps (exact/warm.rs).
    for (sampling, batch, gap_check, tol_abs) in [
        (Sampling::Gap, 0, 3, 0.0),
        (Sampling::Gap, 1, 3, 0.0),
        (Sampling::Gap, 16, 3, 0.0),
        (Sampling::Gap, 64, 3, 0.0),
        (Sampling::Gap, 0, 1000, 1e-3),
        (Sampling::Gap, 16, 1000, 1e-3),
        (Sampling::Permutation, 0, 3, 0.0),
        (Sampling::Permutation, 1, 1000, 1e-3),
        (Sampling::Uniform, 0, 3, 0.0),
    ] {
        let mut results = Vec::new();
        for threads in [1, 2, 4] {
            let mut s = exact(0.01, sampling, batch);
            s.max_iterations = 12;
            s.tol_abs = tol_abs;
            s.gap_check = gap_check;
            s.num_threads = threads;
            let mut solver = Solver::new(Problem::from_max_oracle(model.clone()), s).unwrap();
            let mut w = vec![0.0; solver.dim()];
            let a = solver.run(&mut w).unwrap();
            solver.set_lambda(0.001).unwrap();
            let b = solver.run(&mut w).unwrap();
            let bits: Vec<u64> = w.iter().map(|x| x.to_bits()).collect();
            let stats = solver.bcfw().unwrap().stats().unwrap();
            results.push((
                bits,
                a.lower_bound.to_bits(),
                b.lower_bound.to_bits(),
                b.primal.to_bits(),
                stats.ell.to_bits(),
                stats.oracle_calls,
            ));
        }
        assert_eq!(
            results[0], results[1],
            "{sampling:?}, mini_batch {batch}, gap_check {gap_check}: 1 and 2 threads"
        );
        assert_eq!(
            results[0], results[2],
            "{sampling:?}, mini_batch {batch}, gap_check {gap_check}: 1 and 4 threads"
        );
    }
}

/// The multiclass model through its corners, with its class rows and
/// per-example class answers when `class_rows` (else none), but never its
/// pass of all class scores (`class_scores_pass`).
struct Limited {
    model: Multiclass,
    class_rows: bool,
}

impl MaxOracle for Limited {
    fn dim(&self) -> usize {
        self.model.dim()
    }
    fn num_examples(&self) -> usize {
        self.model.num_examples()
    }
    fn max_oracle(&self, example: usize, w: &[f64], out: &mut Corner) -> Result<()> {
        self.model.max_oracle(example, w, out)
    }
    fn class_rows(&self) -> Option<Arc<dyn bmrm::oracle::ClassRows>> {
        self.model.class_rows().filter(|_| self.class_rows)
    }
    fn class_answer(
        &self,
        example: usize,
        w: &[f64],
        scores: &mut [f64],
    ) -> Option<Result<bmrm::oracle::ClassAnswer>> {
        self.model
            .class_answer(example, w, scores)
            .filter(|_| self.class_rows)
    }
}

#[test]
fn exact_steps_are_refused_where_they_cannot_be_honoured() {
    let m = model(50, 5, 3, 1);
    let run = |problem: Problem, s: Settings| -> bmrm::Error {
        let mut solver = match Solver::new(problem, s) {
            Ok(solver) => solver,
            Err(e) => return e,
        };
        let mut w = vec![0.0; solver.dim()];
        solver.run(&mut w).expect_err("refused")
    };
    let e = run(
        Problem::from_max_oracle(Limited {
            model: m.clone(),
            class_rows: false,
        }),
        exact(0.01, Sampling::Gap, 0),
    );
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    assert!(e.message.contains("Exact"), "{}", e.message);
    for (field, set) in [
        (
            "use_cache",
            (|s: &mut Settings| s.use_cache = true) as fn(&mut Settings),
        ),
        ("multi_plane", |s: &mut Settings| s.multi_plane = true),
        ("line_search", |s: &mut Settings| s.line_search = false),
    ] {
        let mut s = exact(0.01, Sampling::Gap, 0);
        set(&mut s);
        let e = run(Problem::from_max_oracle(m.clone()), s);
        assert_eq!(e.kind, ErrorKind::InvalidArgument, "{field}");
        assert!(e.message.contains(field), "{field}: {}", e.message);
    }
    // Box constraints: the blocks are then general vectors.
    let mut solver = Solver::new(
        Problem::from_max_oracle(m.clone()),
        exact(0.01, Sampling::Gap, 0),
    )
    .unwrap();
    let dim = solver.dim();
    let boxed = solver
        .set_bounds(vec![-1.0; dim], vec![1.0; dim])
        .and_then(|_| {
            let mut w = vec![0.0; dim];
            solver.run(&mut w)
        });
    let e = boxed.expect_err("exact steps under a box");
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    assert!(e.message.contains("Exact"), "{}", e.message);
}

/// Exact passes from all class scores at once keep shrunk the blocks and
/// classes the scores show inactive, where the per-example passes clear
/// the shrinking: up to the pass after the first exact pass the runs are
/// the same (the bound bit for bit, the primal up to rounding), both
/// certify BMRM's optimum, and keeping the shrinking asks for fewer block
/// answers.
#[test]
fn exact_passes_from_all_class_scores_keep_the_shrinking_they_show() {
    let model = model(400, 15, 6, 12);
    for lambda in [1e-1, 1e-2] {
        let (lb, opt) = optimum(&model, lambda);
        let problems = || {
            [
                Problem::from_max_oracle(model.clone()),
                Problem::from_max_oracle(Limited {
                    model: model.clone(),
                    class_rows: true,
                }),
            ]
        };
        let mut firsts = Vec::new();
        let mut calls = Vec::new();
        for (problem, again) in problems().into_iter().zip(problems()) {
            let mut s = exact(lambda, Sampling::Permutation, 0);
            s.max_iterations = 2;
            let mut solver = Solver::new(problem, s.clone()).unwrap();
            let mut w = vec![0.0; solver.dim()];
            let info = solver.run(&mut w).unwrap();
            assert_eq!(info.exit, Exit::MaxIterations);
            firsts.push((info.primal, info.lower_bound.to_bits()));

            s.max_iterations = 6000;
            let mut solver = Solver::new(again, s).unwrap();
            let mut w = vec![0.0; solver.dim()];
            let info = solver.run(&mut w).unwrap();
            assert_eq!(info.exit, Exit::ConvergedAbs, "lambda {lambda}: {info:?}");
            assert!(
                info.lower_bound <= opt + 1e-12 && info.primal >= lb - 1e-12,
                "lambda {lambda}: [{}, {}] against BMRM's [{lb}, {opt}]",
                info.lower_bound,
                info.primal
            );
            calls.push(info.oracle_calls);
        }
        // The same iterates (the bound's bits); the primal's hinges from
        // the scores or from the corners' entries, equal up to rounding.
        assert_eq!(firsts[0].1, firsts[1].1, "lambda {lambda}");
        let (a, b) = (firsts[0].0, firsts[1].0);
        assert!(
            (a - b).abs() <= 1e-12 * a.abs(),
            "lambda {lambda}: {a} against {b}"
        );
        assert!(calls[0] < calls[1], "lambda {lambda}: calls {calls:?}");
    }
}

//! BCFW's exact block steps (`StepType::Exact`): on class-factored blocks
//! (the multiclass model) and on blocks held as vectors (the chain model,
//! and the multiclass model under a box: each block's sub-problem solved
//! over its kept corners). They must reach the optimum BMRM certifies
//! independently, never give a dual value (a lower bound) above it while
//! blocks are shrunk, never let the dual fall, skip the blocks they
//! shrink, give the same bits for any thread count, and be refused where
//! they cannot be honoured.

use std::sync::{Arc, Mutex};

use bmrm::models::{synthetic, Chain, Multiclass};
use bmrm::oracle::{ClassAnswer, ClassRows, Factoring};
use bmrm::{
    Algorithm, Corner, ErrorKind, Exit, Info, IterateHook, MaxOracle, Problem, Result, Sampling,
    Settings, Solver, StepType,
};

fn model(m: usize, d: usize, k: usize, seed: u64) -> Multiclass {
    let (x, y) = synthetic::gaussian_multiclass(m, d, k, 1.5, seed);
    Multiclass::new(x, d, y, k, true).unwrap()
}

/// BMRM's certified optimum `(lower bound, primal)` within 1e-9, under the
/// box `bounds` when given.
fn optimum<O: MaxOracle + Clone + 'static>(
    oracle: &O,
    lambda: f64,
    bounds: Option<(Vec<f64>, Vec<f64>)>,
) -> (f64, f64) {
    let mut s = Settings::new(Algorithm::Bmrm, lambda);
    s.tol_rel = 0.0;
    s.tol_abs = 1e-9;
    let mut solver = Solver::new(Problem::from_max_oracle(oracle.clone()), s).unwrap();
    if let Some((lo, hi)) = bounds {
        solver.set_bounds(lo, hi).unwrap();
    }
    let mut w = vec![0.0; solver.dim()];
    let info = solver.run(&mut w).unwrap();
    assert_eq!(info.exit, Exit::ConvergedAbs);
    (info.lower_bound, info.primal)
}

/// Runs `s` (under the box `bounds` when given), recording the dual after
/// every pass, shrunk blocks and all; returns the run's info, the duals
/// and each history row's effective passes and whether it had an exact
/// pass.
fn run_recorded<O: MaxOracle + Clone + 'static>(
    oracle: &O,
    mut s: Settings,
    bounds: Option<(Vec<f64>, Vec<f64>)>,
) -> (Info, Vec<f64>, Vec<(f64, bool)>) {
    let duals = Arc::new(Mutex::new(Vec::new()));
    let seen = duals.clone();
    s.iterate_hook = Some(IterateHook::new(move |v| {
        seen.lock().unwrap().push(v.dual);
        std::ops::ControlFlow::Continue(())
    }));
    let mut solver = Solver::new(Problem::from_max_oracle(oracle.clone()), s).unwrap();
    if let Some((lo, hi)) = bounds {
        solver.set_bounds(lo, hi).unwrap();
    }
    let mut w = vec![0.0; solver.dim()];
    let info = solver.run(&mut w).unwrap();
    let passes = solver
        .history()
        .iter()
        .map(|r| (r.effective_passes, r.objective.is_finite()))
        .collect();
    let duals = duals.lock().unwrap().clone();
    (info, duals, passes)
}

/// The run converged, and its interval `[lower bound, primal]` meets
/// BMRM's `[lb, opt]`.
fn check_converged(what: &str, info: &Info, (lb, opt): (f64, f64)) {
    assert_eq!(info.exit, Exit::ConvergedAbs, "{what}: {info:?}");
    assert!(
        info.lower_bound <= opt + 1e-12 && info.primal >= lb - 1e-12,
        "{what}: [{}, {}] against BMRM's [{lb}, {opt}]",
        info.lower_bound,
        info.primal
    );
}

/// The certificate against BMRM's `[lb, opt]`: the run converged to 1e-5,
/// its interval meets BMRM's, every dual is below the optimum, and the
/// dual never falls (every step is exact or a line search).
fn check_certified(what: &str, info: &Info, duals: &[f64], (lb, opt): (f64, f64)) {
    check_converged(what, info, (lb, opt));
    assert!(info.primal - lb <= 1e-5 + 1e-12, "{what}: {info:?}");
    assert!(!duals.is_empty());
    for (pass, &d) in duals.iter().enumerate() {
        assert!(
            d <= opt + 1e-12,
            "{what}: dual {d} > optimum {opt} after pass {pass}"
        );
    }
    for p in duals.windows(2) {
        assert!(
            p[1] >= p[0] - 1e-12 * p[0].abs(),
            "{what}: the dual fell: {p:?}"
        );
    }
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
        let optimum = optimum(&model, lambda, None);
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
            let (info, duals, _) = run_recorded(&model, s, None);
            check_certified(&what, &info, &duals, optimum);
        }
    }
}

/// A run at `s`'s lambda, then one at lambda 1e-3 from where it ended:
/// `w`, both lower bounds, the last primal and `ell` as bits, and the
/// oracle calls (what must not depend on the thread count).
fn lambda_change_bits<O: MaxOracle + Clone + 'static>(
    oracle: &O,
    s: Settings,
) -> (Vec<u64>, [u64; 4], u64) {
    let mut solver = Solver::new(Problem::from_max_oracle(oracle.clone()), s).unwrap();
    let mut w = vec![0.0; solver.dim()];
    let a = solver.run(&mut w).unwrap();
    solver.set_lambda(0.001).unwrap();
    let b = solver.run(&mut w).unwrap();
    let stats = solver.bcfw().unwrap().stats().unwrap();
    let bounds = [a.lower_bound, b.lower_bound, b.primal, stats.ell].map(f64::to_bits);
    (
        w.iter().map(|x| x.to_bits()).collect(),
        bounds,
        stats.oracle_calls,
    )
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
            results.push(lambda_change_bits(&model, s));
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
/// pass of all class scores (`ClassRows::scores_pass`).
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
    fn factoring(&self) -> Factoring {
        match self.model.factoring() {
            Factoring::Classes(rows) if self.class_rows => {
                Factoring::Classes(Arc::new(WithoutPass(rows)))
            }
            _ => Factoring::Vector,
        }
    }
}

/// Class rows without their pass of all class scores.
struct WithoutPass(Arc<dyn ClassRows>);

impl ClassRows for WithoutPass {
    fn answer(&self, i: usize, w: &[f64], scores: &mut [f64]) -> Result<ClassAnswer> {
        self.0.answer(i, w, scores)
    }
    fn num_classes(&self) -> usize {
        self.0.num_classes()
    }
    fn truth(&self, i: usize) -> usize {
        self.0.truth(i)
    }
    fn row_norm2(&self, i: usize) -> f64 {
        self.0.row_norm2(i)
    }
    fn row_dot(&self, i: usize, k: usize, w: &[f64]) -> f64 {
        self.0.row_dot(i, k, w)
    }
    fn row_dots(&self, i: usize, off: &[bool], w: &[f64], out: &mut [f64]) {
        self.0.row_dots(i, off, w, out);
    }
    fn add_row(&self, i: usize, k: usize, a: f64, v: &mut [f64]) {
        self.0.add_row(i, k, a, v);
    }
    fn prefetch(&self, i: usize) {
        self.0.prefetch(i);
    }
    fn prefetch_row(&self, i: usize) {
        self.0.prefetch_row(i);
    }
    fn warm(&self, i: usize) -> Option<f64> {
        self.0.warm(i)
    }
    fn row_entries(&self, i: usize, f: &mut dyn FnMut(usize, f64)) {
        self.0.row_entries(i, f);
    }
    fn class_loss(&self, i: usize, y: usize) -> Option<f64> {
        self.0.class_loss(i, y)
    }
}

#[test]
fn exact_steps_are_refused_where_they_cannot_be_honoured() {
    let m = model(50, 5, 3, 1);
    let run = |problem: Problem, s: Settings| -> Result<bmrm::Info> {
        let mut solver = Solver::new(problem, s)?;
        let mut w = vec![0.0; solver.dim()];
        solver.run(&mut w)
    };
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
        let e = run(Problem::from_max_oracle(m.clone()), s).expect_err(field);
        assert_eq!(e.kind, ErrorKind::InvalidArgument, "{field}");
        assert!(e.message.contains(field), "{field}: {}", e.message);
    }
    // Without class rows (or under a box) the blocks are vectors and the
    // steps solve each block's sub-problem over its kept corners
    // (below): honoured, not refused.
    let info = run(
        Problem::from_max_oracle(Limited {
            model: m.clone(),
            class_rows: false,
        }),
        exact(0.01, Sampling::Gap, 0),
    )
    .expect("exact steps on vector blocks");
    assert_eq!(info.exit, Exit::ConvergedAbs, "{info:?}");
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
        let (lb, opt) = optimum(&model, lambda, None);
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
            check_converged(&format!("lambda {lambda}"), &info, (lb, opt));
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

/// A chain of `m` sequences over `k` labels and `d` dense features, with a
/// bias: its corners do not factor over classes, so its blocks are
/// vectors.
fn chain(m: usize, k: usize, d: usize, seed: u64) -> Chain {
    let (values, lengths, labels) = synthetic::markov_chain(m, k, d, seed);
    Chain::dense(values, d, &lengths, labels, k, true).unwrap()
}

#[test]
fn exact_steps_on_chains_reach_bmrm_certified_optimum() {
    let model = chain(60, 4, 6, 3);
    for lambda in [1e-1, 1e-2] {
        let optimum = optimum(&model, lambda, None);
        for sampling in [Sampling::Gap, Sampling::Permutation, Sampling::Uniform] {
            let what = format!("chain, lambda {lambda}, {sampling:?}");
            let (info, duals, _) = run_recorded(&model, exact(lambda, sampling, 0), None);
            check_certified(&what, &info, &duals, optimum);
        }
    }
}

#[test]
fn exact_steps_under_a_box_reach_bmrm_certified_optimum() {
    // The multiclass model under a box: its blocks are then vectors.
    let (x, y) = synthetic::gaussian_multiclass(150, 8, 4, 1.5, 2);
    let model = Multiclass::new(x, 8, y, 4, true).unwrap();
    let dim = model.dim();
    let bounds = (vec![-0.3; dim], vec![0.4; dim]);
    for lambda in [1e-1, 1e-2] {
        let optimum = optimum(&model, lambda, Some(bounds.clone()));
        let what = format!("multiclass under a box, lambda {lambda}");
        let s = exact(lambda, Sampling::Gap, 0);
        let (info, duals, _) = run_recorded(&model, s, Some(bounds.clone()));
        check_certified(&what, &info, &duals, optimum);
    }
}

#[test]
fn shrunk_blocks_are_skipped_until_the_next_exact_pass() {
    // At lambda 1 most sequences soon sit at their truth with every margin
    // held: a pass without an exact pass then calls the oracle for fewer
    // than all blocks, and a pass with one for all of them again.
    let model = chain(60, 4, 6, 3);
    let mut s = exact(1.0, Sampling::Permutation, 0);
    s.tol_abs = 0.0;
    s.max_iterations = 12;
    s.gap_check = 4;
    let (_, _, passes) = run_recorded(&model, s, None);
    let calls: Vec<(f64, bool)> = std::iter::once((0.0, false))
        .chain(passes.iter().copied())
        .collect::<Vec<_>>()
        .windows(2)
        .map(|p| (p[1].0 - p[0].0, p[1].1))
        .collect();
    let skipped = calls
        .iter()
        .filter(|&&(c, exact_pass)| !exact_pass && c < 0.9)
        .count();
    assert!(skipped > 0, "no pass skipped a block: {calls:?}");
    // Every block is visited again after an exact pass: the pass after
    // one calls the oracle at least as often as the pass before it.
    for (j, &(_, exact_pass)) in calls.iter().enumerate() {
        if exact_pass && j > 0 && j + 1 < calls.len() {
            assert!(
                calls[j + 1].0 >= calls[j - 1].0,
                "pass {}: {calls:?}",
                j + 1
            );
        }
    }
}

#[test]
fn exact_steps_on_chains_give_the_same_bits_for_any_thread_count() {
    let model = chain(80, 5, 6, 8);
    for sampling in [Sampling::Gap, Sampling::Permutation] {
        let mut results = Vec::new();
        for threads in [1, 2, 4] {
            let mut s = exact(0.01, sampling, 0);
            s.max_iterations = 10;
            s.tol_abs = 0.0;
            s.num_threads = threads;
            results.push(lambda_change_bits(&model, s));
        }
        assert_eq!(results[0], results[1], "{sampling:?}: 1 and 2 threads");
        assert_eq!(results[0], results[2], "{sampling:?}: 1 and 4 threads");
    }
}

#[test]
fn exact_steps_on_vector_blocks_refuse_mini_batches() {
    let model = chain(20, 3, 4, 1);
    let mut s = exact(0.01, Sampling::Gap, 0);
    s.mini_batch = 8;
    let err = match Solver::new(Problem::from_max_oracle(model), s) {
        Err(e) => e,
        Ok(mut solver) => {
            let mut w = vec![0.0; solver.dim()];
            solver.run(&mut w).expect_err("mini-batches refused")
        }
    };
    assert_eq!(err.kind, ErrorKind::InvalidArgument, "{err}");
    assert!(err.message.contains("mini_batch"), "{}", err.message);
}

/// `F(w)` from the oracle's answers, independently of the solver's passes.
fn primal_of(oracle: &Multiclass, lambda: f64, w: &[f64]) -> f64 {
    let m = oracle.num_examples();
    let mut corner = Corner::new(oracle.dim());
    let mut risk = 0.0;
    for i in 0..m {
        corner.clear();
        oracle.max_oracle(i, w, &mut corner).unwrap();
        risk += corner.hinge(w);
    }
    0.5 * lambda * w.iter().map(|x| x * x).sum::<f64>() + risk / m as f64
}

/// Exact steps evaluate, at an exact pass, the average of the dual points
/// that ended the passes since the previous one, pass `s` of them
/// weighted by `s`, besides the iterate: a run that ends there returns
/// the point of lower primal value, reports that value, and when it is the
/// average the state moves to the averaged dual point, so that the
/// iterate is the point returned and `ell - lambda/2 |w|^2` its dual value
/// (below BMRM's certified optimum). Here the run stops by its pass
/// limit, so the last certificate evaluates the average.
#[test]
fn exact_steps_return_the_pass_average_when_it_is_better() {
    let model = model(300, 10, 4, 9);
    let lambda = 1e-3;
    let mut s = exact(lambda, Sampling::Permutation, 0);
    s.tol_abs = 0.0;
    s.max_iterations = 14;
    s.gap_check = 6;
    let store = Arc::new(Mutex::new(Vec::new()));
    let hook = store.clone();
    s.iterate_hook = Some(IterateHook::new(move |v| {
        hook.lock().unwrap().push((v.w.to_vec(), v.ell, v.dual));
        std::ops::ControlFlow::Continue(())
    }));
    let mut solver = Solver::new(Problem::from_max_oracle(model.clone()), s).unwrap();
    let mut w = vec![0.0; solver.dim()];
    let info = solver.run(&mut w).unwrap();
    assert_eq!(info.exit, Exit::MaxIterations, "{info:?}");
    let seen = store.lock().unwrap().clone();
    assert_eq!(seen.len(), 14);
    // Exact passes after passes 6 and 12 (gap_check), and the last
    // certificate after pass 14: the average is of passes 13 and 14.
    let at_exact: Vec<&Vec<f64>> = [6, 12, 14].iter().map(|&p| &seen[p - 1].0).collect();
    let (a, b) = (&seen[12], &seen[13]);
    let average: Vec<f64> =
        a.0.iter()
            .zip(&b.0)
            .map(|(x, y)| (x + 2.0 * y) / 3.0)
            .collect();
    let best_iterate = at_exact
        .iter()
        .map(|x| primal_of(&model, lambda, x))
        .fold(f64::INFINITY, f64::min);
    let f_average = primal_of(&model, lambda, &average);
    assert!(
        f_average < best_iterate * (1.0 - 1e-9),
        "the case must have an average better than every certified iterate: {f_average} \
         against {best_iterate}"
    );
    let scale = average.iter().map(|x| x.abs()).fold(1.0, f64::max);
    for (j, (x, y)) in w.iter().zip(&average).enumerate() {
        assert!(
            (x - y).abs() <= 1e-12 * scale,
            "w[{j}] = {x}, the average's {y}"
        );
    }
    assert!(
        (info.primal - f_average).abs() <= 1e-12 * f_average.abs(),
        "reported {} against {f_average}",
        info.primal
    );
    // The state moved there: its iterate is the point returned, its `ell`
    // the average of the two passes' (to their rounding allowances), and
    // `ell - lambda/2 |w|^2` its dual value, a valid bound at least the
    // average of the two duals (the dual is concave).
    let iterate = solver.bcfw().and_then(|h| h.iterate()).unwrap().to_vec();
    assert_eq!(iterate, w);
    let stats = solver.bcfw().and_then(|h| h.stats()).unwrap();
    let ell = (a.1 + 2.0 * b.1) / 3.0;
    assert!(
        (stats.ell - ell).abs() <= 1e-10,
        "ell {} against {ell}",
        stats.ell
    );
    let dual = stats.ell - 0.5 * lambda * w.iter().map(|x| x * x).sum::<f64>();
    assert!(
        (dual - stats.dual).abs() <= 1e-12,
        "{dual} against {}",
        stats.dual
    );
    assert!(dual >= (a.2 + 2.0 * b.2) / 3.0 - 1e-10);
    let (lb, opt) = optimum(&model, lambda, None);
    assert!(
        dual <= opt && info.lower_bound <= opt,
        "{dual}, {info:?}, optimum {opt}"
    );
    // The blocks moved with v: a run continuing from there (14 more
    // passes) keeps every dual below BMRM's optimum and never lets it fall.
    let mut w2 = w.clone();
    let more = solver.run(&mut w2).unwrap();
    let after: Vec<f64> = store.lock().unwrap()[14..].iter().map(|x| x.2).collect();
    assert_eq!(after.len(), 14);
    let mut last = stats.dual;
    for (pass, &d) in after.iter().enumerate() {
        assert!(
            d <= opt,
            "dual {d} above the optimum {opt}, pass {pass} after the move"
        );
        assert!(
            d >= last - 1e-12 * last.abs(),
            "the dual fell: {last} -> {d}"
        );
        last = d;
    }
    assert!(more.lower_bound <= opt && more.primal >= lb, "{more:?}");
}

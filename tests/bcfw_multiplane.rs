//! Multi-plane BCFW (approximate passes over the kept corners between
//! oracle passes) against independent references: the optimum BMRM
//! certifies on multiclass and chain problems (its lower bound never above
//! BMRM's primal, its primal within the tolerance of BMRM's bound), bit
//! identity for 1, 2 and 4 threads, and its settings' validation.

mod common;

use common::multiclass;

use std::sync::Arc;

use bmrm::models::{synthetic, Chain, Multiclass};
use bmrm::{Algorithm, Exit, Problem, Settings, Solver, StepType};

/// The 120-example, 3-class problem of the MATLAB tests (tests/octave's
/// mc_data: class k has +1.5 on one feature, the last feature is 1), from
/// the same LCG.
fn matlab_multiclass() -> Multiclass {
    let (m, d, k) = (120, 6, 3);
    let mut state: u64 = 7;
    let mut x = vec![0.0f32; m * d];
    let mut y = vec![0usize; m];
    for i in 0..m {
        y[i] = i % k;
        for j in 0..d - 1 {
            state = (state * 1_103_515_245 + 12_345) % (1 << 31);
            let mut v = 2.0 * state as f64 / (1u64 << 31) as f64 - 1.0;
            if j == y[i] % (d - 1) {
                v += 1.5;
            }
            x[i * d + j] = v as f32;
        }
        x[i * d + d - 1] = 1.0;
    }
    Multiclass::new(x, d, y, k, false).unwrap()
}

fn bmrm_reference(problem: &Problem, lambda: f64) -> bmrm::Info {
    let mut s = Settings::new(Algorithm::Bmrm, lambda);
    s.tol_rel = 1e-8;
    let mut solver = Solver::new(problem.clone(), s).unwrap();
    let mut w = vec![0.0; solver.dim()];
    let info = solver.run(&mut w).unwrap();
    assert_eq!(info.exit, Exit::ConvergedRel);
    info
}

fn multi_plane(lambda: f64) -> Settings {
    let mut s = Settings::new(Algorithm::Bcfw, lambda);
    s.multi_plane = true;
    s.num_threads = 2;
    s
}

/// Each variant's certificate against BMRM's: bounds cross nowhere, and the
/// primal is within the tolerance of BMRM's lower bound.
fn check_against_bmrm(problem: Problem, lambda: f64) {
    let reference = bmrm_reference(&problem, lambda);
    let tol = 1e-3;
    for step in [StepType::FrankWolfe, StepType::Pairwise, StepType::All] {
        for (cache, block_steps, passes) in [(false, 0, 10), (true, 2, 3), (false, 1, 1)] {
            let mut s = multi_plane(lambda);
            s.tol_rel = tol;
            s.step_type = step;
            s.use_cache = cache;
            s.mp_block_steps = block_steps;
            s.mp_approx_passes = passes;
            s.mp_inactive_passes = 3;
            s.max_iterations = 2000;
            let mut solver = Solver::new(problem.clone(), s).unwrap();
            let mut w = vec![0.0; solver.dim()];
            let info = solver.run(&mut w).unwrap();
            let what = format!("{step:?} cache={cache} block_steps={block_steps}");
            assert!(
                matches!(info.exit, Exit::ConvergedRel | Exit::ConvergedAbs),
                "{what}: {info:?}"
            );
            assert!(
                info.lower_bound <= reference.primal + 1e-12,
                "{what}: bound {} above BMRM's primal {}",
                info.lower_bound,
                reference.primal
            );
            assert!(
                reference.lower_bound <= info.primal + 1e-12,
                "{what}: BMRM's bound {} above the primal {}",
                reference.lower_bound,
                info.primal
            );
            assert!(
                info.primal - reference.lower_bound <= 1.01 * tol * info.primal.abs() + 1e-12,
                "{what}: primal {} vs BMRM bound {}",
                info.primal,
                reference.lower_bound
            );
            let stats = solver.bcfw().and_then(|b| b.stats()).unwrap();
            assert!(stats.approx_passes > 0, "{what}: no approximate pass");
        }
    }
}

#[test]
fn multi_plane_reaches_the_optimum_bmrm_certifies_on_multiclass() {
    let model = multiclass(150, 6, 4, 2);
    check_against_bmrm(Problem::from_max_oracle(model), 0.05);
}

#[test]
fn multi_plane_reaches_the_optimum_bmrm_certifies_on_a_chain() {
    let (x, lengths, labels) = synthetic::markov_chain(60, 4, 6, 8);
    let model = Chain::dense(x, 6, &lengths, labels, 4, true).unwrap();
    check_against_bmrm(Problem::from_max_oracle(model), 0.05);
}

/// The timed rule (timing-dependent iterates) still certifies correctly.
#[test]
fn the_timed_rule_keeps_the_certificate_valid() {
    let problem = Problem::from_max_oracle(multiclass(200, 5, 3, 4));
    let reference = bmrm_reference(&problem, 0.01);
    let mut s = multi_plane(0.01);
    s.mp_timed = true;
    s.mp_approx_passes = 50;
    s.step_type = StepType::Pairwise;
    s.tol_abs = 1e-5;
    s.tol_rel = 0.0;
    let mut solver = Solver::new(problem, s).unwrap();
    let mut w = vec![0.0; solver.dim()];
    let info = solver.run(&mut w).unwrap();
    assert_eq!(info.exit, Exit::ConvergedAbs);
    assert!(info.lower_bound <= reference.primal + 1e-12);
    assert!(reference.lower_bound <= info.primal + 1e-12);
    assert!(info.primal - reference.lower_bound <= 1e-5 + 1e-12);
}

/// The 120-example problem of the MATLAB tests (plain BCFW needed 530 to 1240
/// passes for gap 1e-4): multi-plane gets there in at most 100 effective
/// passes (oracle calls / n, exact passes included), and its answer agrees
/// with BMRM's.
#[test]
fn the_small_multiclass_problem_needs_few_oracle_passes() {
    let problem = Problem::from_max_oracle(matlab_multiclass());
    let lambda = 0.01;
    let reference = bmrm_reference(&problem, lambda);
    let mut s = multi_plane(lambda);
    s.step_type = StepType::Pairwise;
    s.tol_abs = 1e-4;
    s.tol_rel = 0.0;
    s.max_iterations = 1000;
    let mut solver = Solver::new(problem.clone(), s).unwrap();
    let mut w = vec![0.0; solver.dim()];
    let info = solver.run(&mut w).unwrap();
    let stats = solver.bcfw().and_then(|b| b.stats()).unwrap();
    assert_eq!(info.exit, Exit::ConvergedAbs, "{info:?}");
    assert!(
        stats.effective_passes <= 100.0,
        "{} effective passes",
        stats.effective_passes
    );
    assert!(info.lower_bound <= reference.primal + 1e-12);
    assert!(reference.lower_bound <= info.primal + 1e-12);
    // Without the approximate passes it takes several times as many.
    let mut s = Settings::new(Algorithm::Bcfw, lambda);
    s.step_type = StepType::Pairwise;
    s.use_cache = true;
    s.tol_abs = 1e-4;
    s.tol_rel = 0.0;
    s.max_iterations = 5000;
    let mut plain = Solver::new(problem, s).unwrap();
    let mut w = vec![0.0; plain.dim()];
    plain.run(&mut w).unwrap();
    let plain_passes = plain
        .bcfw()
        .and_then(|b| b.stats())
        .unwrap()
        .effective_passes;
    eprintln!(
        "gap 1e-4: multi-plane {:.1} effective passes, pairwise + cache {plain_passes:.1}",
        stats.effective_passes
    );
    assert!(stats.effective_passes < plain_passes);
}

#[test]
fn multi_plane_results_are_bit_identical_for_any_thread_count() {
    let model = Arc::new(multiclass(300, 8, 5, 3));
    let mut reference: Option<(Vec<f64>, bmrm::Info, u64)> = None;
    for threads in [1, 2, 4] {
        let mut s = multi_plane(0.01);
        s.num_threads = threads;
        s.step_type = StepType::Pairwise;
        s.mp_block_steps = 1;
        s.gap_check = 2;
        s.tol_rel = 1e-4;
        let mut solver = Solver::new(Problem::Examples(model.clone()), s).unwrap();
        let mut w = vec![0.0; solver.dim()];
        let mut info = solver.run(&mut w).unwrap();
        info.elapsed_seconds = 0.0;
        info.oracle_seconds = 0.0;
        let approx = solver.bcfw().and_then(|b| b.stats()).unwrap().approx_passes;
        match &reference {
            None => reference = Some((w, info, approx)),
            Some((w0, info0, approx0)) => {
                assert_eq!(&w, w0, "{threads} threads");
                assert_eq!(info.primal.to_bits(), info0.primal.to_bits());
                assert_eq!(info.lower_bound.to_bits(), info0.lower_bound.to_bits());
                assert_eq!(info.iterations, info0.iterations);
                assert_eq!(approx, *approx0);
            }
        }
    }
}

/// Approximate passes make no oracle call: with the exact passes off the
/// count, a run's oracle calls are n per pass whatever their number.
#[test]
fn approximate_passes_call_no_oracle_and_drop_unused_corners() {
    let model = Arc::new(multiclass(100, 5, 6, 5));
    let mut s = multi_plane(0.001);
    s.num_passes = 6;
    s.gap_check = 1000;
    s.tol_rel = 0.0;
    s.mp_inactive_passes = 1;
    s.cache_size = 2;
    let mut solver = Solver::new(Problem::Examples(model.clone()), s).unwrap();
    let mut w = vec![0.0; solver.dim()];
    solver.run(&mut w).unwrap();
    let stats = solver.bcfw().and_then(|b| b.stats()).unwrap();
    // 6 passes of 100 calls, and the final certificate's exact pass.
    assert_eq!(stats.oracle_calls, 700);
    assert!(stats.approx_passes >= 6, "{stats:?}");
    // Inactive corners beyond cache_size = 2 per block are dropped.
    let inactive = stats.corners + 100 - stats.active_corners;
    assert!(inactive <= 2 * 100, "{stats:?}");
}

#[test]
fn bad_multi_plane_settings_are_rejected_by_name() {
    let model = Arc::new(multiclass(20, 3, 2, 1));
    let mut s = multi_plane(0.1);
    s.mp_inactive_passes = 0;
    let e = Solver::new(Problem::Examples(model.clone()), s)
        .err()
        .unwrap();
    assert!(e.to_string().contains("mp_inactive_passes"), "{e}");
    let mut s = multi_plane(0.1);
    s.cache_size = 0;
    let e = Solver::new(Problem::Examples(model.clone()), s)
        .err()
        .unwrap();
    assert!(e.to_string().contains("cache_size"), "{e}");
    let mut s = multi_plane(0.1);
    s.mini_batch = 4;
    s.use_cache = true;
    let e = Solver::new(Problem::Examples(model), s).err().unwrap();
    assert!(e.to_string().contains("mini_batch"), "{e}");
}

/// Mini-batch BCFW (batches of blocks answered at one w, steps in a fixed
/// order) and the full batch (every pass an exact pass): BMRM's certificate
/// and bit identity for 1, 2 and 4 threads, alone and with multi-plane.
#[test]
fn mini_batch_matches_bmrm_and_is_bit_identical_for_any_thread_count() {
    let (x, lengths, labels) = synthetic::markov_chain(60, 4, 6, 8);
    let chain = Problem::from_max_oracle(Chain::dense(x, 6, &lengths, labels, 4, true).unwrap());
    let mc = Problem::from_max_oracle(multiclass(150, 6, 4, 2));
    for problem in [chain, mc] {
        let reference = bmrm_reference(&problem, 0.05);
        for (batch, mp, step) in [
            (8, false, StepType::FrankWolfe),
            (16, true, StepType::Pairwise),
            (1_000_000, false, StepType::FrankWolfe),
            (1_000_000, true, StepType::Pairwise),
        ] {
            let mut first: Option<(Vec<f64>, bmrm::Info)> = None;
            for threads in [1, 2, 4] {
                let mut s = Settings::new(Algorithm::Bcfw, 0.05);
                s.mini_batch = batch;
                s.multi_plane = mp;
                s.step_type = step;
                s.num_threads = threads;
                s.tol_rel = 1e-3;
                s.max_iterations = 3000;
                let mut solver = Solver::new(problem.clone(), s).unwrap();
                let mut w = vec![0.0; solver.dim()];
                let mut info = solver.run(&mut w).unwrap();
                let what = format!("batch {batch} mp {mp} {step:?} {threads} threads");
                assert_eq!(info.exit, Exit::ConvergedRel, "{what}: {info:?}");
                assert!(info.lower_bound <= reference.primal + 1e-12, "{what}");
                assert!(reference.lower_bound <= info.primal + 1e-12, "{what}");
                assert!(
                    info.primal - reference.lower_bound <= 1.01e-3 * info.primal.abs() + 1e-12,
                    "{what}: primal {} vs BMRM bound {}",
                    info.primal,
                    reference.lower_bound
                );
                info.elapsed_seconds = 0.0;
                info.oracle_seconds = 0.0;
                match &first {
                    None => first = Some((w, info)),
                    Some((w0, info0)) => {
                        assert_eq!(&w, w0, "{what}");
                        assert_eq!(info.primal.to_bits(), info0.primal.to_bits(), "{what}");
                        assert_eq!(info.lower_bound.to_bits(), info0.lower_bound.to_bits());
                        assert_eq!(info.oracle_calls, info0.oracle_calls, "{what}");
                    }
                }
            }
        }
    }
}

/// A full batch certifies every pass itself: no separate exact passes, so
/// the oracle calls are exactly n per pass.
#[test]
fn a_full_batch_pass_is_its_own_exact_pass() {
    let model = Arc::new(multiclass(100, 5, 4, 9));
    let mut s = Settings::new(Algorithm::Bcfw, 0.01);
    s.mini_batch = 100;
    s.num_passes = 7;
    s.tol_rel = 0.0;
    s.gap_check = 2;
    let mut solver = Solver::new(Problem::Examples(model), s).unwrap();
    let mut w = vec![0.0; solver.dim()];
    let info = solver.run(&mut w).unwrap();
    let stats = solver.bcfw().and_then(|b| b.stats()).unwrap();
    assert_eq!(info.exit, Exit::MaxIterations);
    assert_eq!(stats.oracle_calls, 700);
    // Every row has its certificate.
    assert!(solver.history().iter().all(|r| r.exact_gap.is_finite()));
}

/// Under box constraints the approximate steps and the batch steps keep
/// w in the box and reach the constrained optimum an exact search finds.
#[test]
fn multi_plane_and_mini_batch_respect_a_box_and_reach_its_optimum() {
    let case = common::BoxCase::new();
    for (mp, batch, step) in [
        (true, 0, StepType::FrankWolfe),
        (true, 0, StepType::Pairwise),
        (false, 8, StepType::FrankWolfe),
        (true, 1000, StepType::Pairwise),
    ] {
        let mut s = Settings::new(Algorithm::Bcfw, case.lambda);
        s.multi_plane = mp;
        s.mini_batch = batch;
        s.step_type = step;
        s.tol_rel = 1e-6;
        s.max_iterations = 20_000;
        case.check(s, &format!("mp {mp} batch {batch} {step:?}"));
    }
}

/// Every multi-plane setting is honoured: changing it changes the run.
#[test]
fn every_multi_plane_setting_changes_the_iterates() {
    let model = Arc::new(multiclass(120, 5, 4, 11));
    let run = |edit: &dyn Fn(&mut Settings)| -> (Vec<f64>, u64) {
        let mut s = multi_plane(0.01);
        s.step_type = StepType::Pairwise;
        s.num_passes = 4;
        s.tol_rel = 0.0;
        s.mp_approx_passes = 3;
        s.mp_inactive_passes = 2;
        edit(&mut s);
        let mut solver = Solver::new(Problem::Examples(model.clone()), s).unwrap();
        let mut w = vec![0.0; solver.dim()];
        solver.run(&mut w).unwrap();
        let stats = solver.bcfw().and_then(|b| b.stats()).unwrap();
        (w, stats.approx_passes)
    };
    let (base, approx) = run(&|_| {});
    assert_eq!(approx, 12, "3 approximate passes after each of 4 passes");
    let (w, _) = run(&|s| s.multi_plane = false);
    assert_ne!(w, base, "multi_plane");
    let (w, approx) = run(&|s| s.mp_approx_passes = 1);
    assert_eq!(approx, 4);
    assert_ne!(w, base, "mp_approx_passes");
    let (w, _) = run(&|s| s.mp_block_steps = 2);
    assert_ne!(w, base, "mp_block_steps");
    let (w, _) = run(&|s| s.mp_inactive_passes = 1);
    assert_ne!(w, base, "mp_inactive_passes");
    let (w, _) = run(&|s| s.mini_batch = 10);
    assert_ne!(w, base, "mini_batch");
}

//! BCFW and its variants against independent references: the gap against a
//! primal computed by enumerating labels and a dual computed from the
//! returned figures, the optimum BMRM certifies, an exact search for a
//! box-constrained problem, the regularisation path against BMRM bounds at
//! every breakpoint, determinism across thread counts, and a broken oracle.

mod common;

use common::{brute_primal, multiclass};

use std::sync::Arc;

use bmrm::models::{synthetic, Chain, Multiclass};
use bmrm::oracle::{Corner, MaxOracle};
use bmrm::{Algorithm, Error, Exit, Problem, Sampling, Settings, Solver, StepType};

fn converged(info: &bmrm::Info) -> bool {
    matches!(info.exit, Exit::ConvergedRel | Exit::ConvergedAbs)
}

fn bcfw_settings(lambda: f64) -> Settings {
    let mut s = Settings::new(Algorithm::Bcfw, lambda);
    s.num_threads = 2;
    s
}

#[test]
fn the_gap_is_primal_minus_dual_computed_independently() {
    let model = Arc::new(multiclass(60, 4, 3, 1));
    let lambda = 0.05;
    for (step, cache) in [
        (StepType::FrankWolfe, false),
        (StepType::Pairwise, true),
        (StepType::Away, false),
    ] {
        let mut s = bcfw_settings(lambda);
        s.gap_check = 1;
        s.num_passes = 4;
        s.tol_rel = 0.0;
        s.step_type = step;
        s.use_cache = cache;
        let mut solver = Solver::new(Problem::Examples(model.clone()), s).unwrap();
        let mut w = vec![0.0; solver.dim()];
        let info = solver.run(&mut w).unwrap();
        assert_eq!(info.exit, Exit::MaxIterations);
        let iterate = solver.bcfw().and_then(|b| b.iterate()).unwrap().to_vec();
        let stats = solver.bcfw().and_then(|b| b.stats()).unwrap();
        let primal = brute_primal(&model, &iterate, lambda);
        let dual = stats.ell - 0.5 * lambda * iterate.iter().map(|v| v * v).sum::<f64>();
        let reported = solver.history().last().unwrap().exact_gap;
        assert!(
            (reported - (primal - dual)).abs() <= 1e-10 * primal.abs().max(1.0),
            "{step:?}: gap {reported} vs primal - dual {}",
            primal - dual
        );
        assert!(reported > 0.0);
        // The returned point's primal value is what the summary says.
        let p = brute_primal(&model, &w, lambda);
        assert!((p - info.primal).abs() <= 1e-10 * p.abs().max(1.0));
        assert!(info.lower_bound <= info.primal);
    }
}

/// Every combination reaches the optimum BMRM certifies: BCFW's primal is
/// within its tolerance of BMRM's lower bound, and its lower bound is below
/// BMRM's primal.
fn check_variants_against_bmrm(problem: Problem, lambda: f64, tol: f64) {
    let mut s = Settings::new(Algorithm::Bmrm, lambda);
    s.tol_rel = 1e-7;
    let mut bmrm = Solver::new(problem.clone(), s).unwrap();
    let mut w = vec![0.0; bmrm.dim()];
    let reference = bmrm.run(&mut w).unwrap();
    assert_eq!(reference.exit, Exit::ConvergedRel);
    let samplings = [
        Sampling::Uniform,
        Sampling::Permutation,
        Sampling::Gap,
        Sampling::MaxGap,
    ];
    let steps = [
        StepType::FrankWolfe,
        StepType::Pairwise,
        StepType::Away,
        StepType::All,
    ];
    for sampling in samplings {
        for step in steps {
            for cache in [false, true] {
                let mut s = bcfw_settings(lambda);
                // gapBCFW's gapDegree: gap sampling by the squared gaps.
                s.gap_degree = if cache && sampling == Sampling::Gap {
                    2.0
                } else {
                    1.0
                };
                s.tol_rel = tol;
                s.sampling = sampling;
                s.step_type = step;
                s.use_cache = cache;
                s.weighted_averaging = step == StepType::FrankWolfe && cache;
                s.max_iterations = 2000;
                let mut solver = Solver::new(problem.clone(), s).unwrap();
                let mut w = vec![0.0; solver.dim()];
                let info = solver.run(&mut w).unwrap();
                let what = format!("{sampling:?} {step:?} cache={cache}");
                assert!(converged(&info), "{what}: {info:?}");
                assert!(
                    info.primal - reference.lower_bound <= 1.01 * tol * info.primal.abs() + 1e-12,
                    "{what}: primal {} vs BMRM bound {}",
                    info.primal,
                    reference.lower_bound
                );
                assert!(
                    info.lower_bound <= reference.primal + 1e-12,
                    "{what}: bound {} above BMRM's primal {}",
                    info.lower_bound,
                    reference.primal
                );
                if cache {
                    assert!(
                        solver.bcfw().and_then(|b| b.stats()).unwrap().cache_hits > 0,
                        "{what}"
                    );
                }
            }
        }
    }
}

#[test]
fn every_variant_reaches_the_optimum_bmrm_certifies_on_multiclass() {
    let model = multiclass(150, 6, 4, 2);
    check_variants_against_bmrm(Problem::from_max_oracle(model), 0.05, 1e-3);
}

#[test]
fn every_variant_reaches_the_optimum_bmrm_certifies_on_a_chain() {
    let (x, lengths, labels) = synthetic::markov_chain(60, 4, 6, 8);
    let model = Chain::dense(x, 6, &lengths, labels, 4, true).unwrap();
    check_variants_against_bmrm(Problem::from_max_oracle(model), 0.05, 1e-3);
}

#[test]
fn results_are_bit_identical_for_any_thread_count() {
    let model = Arc::new(multiclass(300, 8, 5, 3));
    let mut reference: Option<(Vec<f64>, bmrm::Info)> = None;
    for threads in [1, 2, 4] {
        let mut s = bcfw_settings(0.01);
        s.num_threads = threads;
        s.step_type = StepType::Pairwise;
        s.use_cache = true;
        s.gap_check = 2;
        s.tol_rel = 1e-3;
        let mut solver = Solver::new(Problem::Examples(model.clone()), s).unwrap();
        let mut w = vec![0.0; solver.dim()];
        let mut info = solver.run(&mut w).unwrap();
        info.elapsed_seconds = 0.0;
        info.oracle_seconds = 0.0;
        match &reference {
            None => reference = Some((w, info)),
            Some((w0, info0)) => {
                assert_eq!(&w, w0, "{threads} threads");
                assert_eq!(info.primal.to_bits(), info0.primal.to_bits());
                assert_eq!(info.lower_bound.to_bits(), info0.lower_bound.to_bits());
                assert_eq!(info.iterations, info0.iterations);
            }
        }
    }
}

#[test]
fn box_constraints_hold_and_match_an_exact_search() {
    let case = common::BoxCase::new();
    for step in [StepType::FrankWolfe, StepType::Pairwise, StepType::Away] {
        let mut s = bcfw_settings(case.lambda);
        s.tol_rel = 1e-6;
        s.step_type = step;
        s.max_iterations = 20_000;
        case.check(s, &format!("{step:?}"));
    }
}

#[test]
fn every_breakpoint_of_the_path_is_eps_optimal_by_an_independent_check() {
    let model = Arc::new(multiclass(80, 5, 3, 5));
    let eps = 0.02;
    let mut s = bcfw_settings(1.0);
    s.gap_check = 2;
    let mut solver = Solver::new(Problem::Examples(model.clone()), s).unwrap();
    let path = solver.bcfw_mut().unwrap().path(eps, 1e-3, 100).unwrap();
    assert!(path.len() >= 3, "{} breakpoints", path.len());
    for (k, bp) in path.iter().enumerate() {
        assert!(
            bp.gap <= 0.9 * eps + 1e-12,
            "breakpoint {k}: gap {}",
            bp.gap
        );
        if k > 0 {
            assert!(bp.lambda < path[k - 1].lambda);
            // The previous breakpoint covers down to where this one starts.
            assert!(
                (path[k - 1].lambda_low - bp.lambda).abs() <= 1e-12 * bp.lambda
                    || bp.lambda == 1e-3
            );
        }
        // Independent: F(w) by enumeration, min F bounded by BMRM at both
        // ends of the interval the breakpoint claims.
        for lambda in [bp.lambda, bp.lambda_low.max(1e-3)] {
            let mut b = Settings::new(Algorithm::Bmrm, lambda);
            b.tol_rel = 1e-7;
            let mut bmrm = Solver::new(Problem::Examples(model.clone()), b).unwrap();
            let mut w = vec![0.0; bmrm.dim()];
            let reference = bmrm.run(&mut w).unwrap();
            let primal = brute_primal(&model, &bp.w, lambda);
            assert!(
                primal - reference.lower_bound <= eps + 1e-9,
                "breakpoint {k} at lambda {lambda}: F(w) - min F <= {} > eps",
                primal - reference.lower_bound
            );
        }
    }
    // The first breakpoint is lambda_max: w there is nearly 0-optimal.
    assert!(path[0].lambda > 1.0);
}

#[test]
fn warm_starts_keep_the_state_and_refuse_a_foreign_start() {
    let model = Arc::new(multiclass(100, 5, 3, 6));
    let mut s = bcfw_settings(0.1);
    s.tol_rel = 1e-3;
    let mut solver = Solver::new(Problem::Examples(model.clone()), s.clone()).unwrap();
    let mut w = vec![0.5; solver.dim()];
    assert!(
        matches!(solver.run(&mut w), Err(Error { kind: bmrm::ErrorKind::InvalidArgument, message: m, .. }) if m.contains("w = 0"))
    );
    let mut w = vec![0.0; solver.dim()];
    solver.run(&mut w).unwrap();
    let mut other = w.clone();
    other[0] += 1.0;
    assert!(matches!(
        solver.run(&mut other),
        Err(Error {
            kind: bmrm::ErrorKind::InvalidArgument,
            ..
        })
    ));
    solver.set_lambda(0.01).unwrap();
    let warm = solver.run(&mut w).unwrap();
    let mut s2 = s;
    s2.lambda = 0.01;
    let mut cold_solver = Solver::new(Problem::Examples(model), s2).unwrap();
    let mut w2 = vec![0.0; cold_solver.dim()];
    let cold = cold_solver.run(&mut w2).unwrap();
    assert!(converged(&warm));
    assert!(
        warm.oracle_calls < cold.oracle_calls,
        "warm {} vs cold {}",
        warm.oracle_calls,
        cold.oracle_calls
    );
}

/// An oracle that returns a corner worse than the ground truth.
struct Broken(Multiclass);
impl MaxOracle for Broken {
    fn dim(&self) -> usize {
        self.0.dim()
    }
    fn num_examples(&self) -> usize {
        self.0.num_examples()
    }
    fn max_oracle(&self, i: usize, w: &[f64], out: &mut Corner) -> bmrm::Result<()> {
        self.0.max_oracle(i, w, out)?;
        if i == 7 {
            // Loss 0 and psi = w: H = -||w||^2, below the truth once w != 0.
            out.clear();
            out.set_label(99);
            out.dense_mut().copy_from_slice(w);
        }
        Ok(())
    }
}

#[test]
fn an_oracle_below_the_ground_truth_is_clipped_and_not_certified() {
    // The answer is replaced by the ground truth (the zero corner)
    // and the run says it certifies nothing; it used to end with an error.
    let model = multiclass(20, 3, 3, 7);
    let mut s = bcfw_settings(0.1);
    s.sampling = Sampling::Permutation;
    let mut solver = Solver::new(Problem::from_max_oracle(Broken(model)), s).unwrap();
    let mut w = vec![0.0; solver.dim()];
    // At w = 0 the bad corner has H = 0; once w[0] > 0 it is below the truth.
    let info = solver.run(&mut w).unwrap();
    assert!(!info.certified, "{info:?}");
    assert!(
        info.lower_bound.is_finite() && info.primal.is_finite(),
        "{info:?}"
    );
}

/// A sparse multiclass oracle over a huge dimension: class c of example i
/// uses coordinates c * D + (a few feature ids of example i).
struct SparseWide {
    classes: usize,
    width: usize,
    feats: Vec<[usize; 3]>,
    labels: Vec<usize>,
}
impl MaxOracle for SparseWide {
    fn dim(&self) -> usize {
        self.classes * self.width
    }
    fn num_examples(&self) -> usize {
        self.labels.len()
    }
    fn max_oracle(&self, i: usize, w: &[f64], out: &mut Corner) -> bmrm::Result<()> {
        let score =
            |c: usize| -> f64 { self.feats[i].iter().map(|&f| w[c * self.width + f]).sum() };
        let yi = self.labels[i];
        let best = (0..self.classes)
            .map(|c| (c, f64::from(u8::from(c != yi)) + score(c)))
            .fold(
                (yi, f64::NEG_INFINITY),
                |a, b| if b.1 > a.1 { b } else { a },
            )
            .0;
        out.set_label(best as u64);
        if best != yi {
            out.set_loss(1.0);
            for &f in &self.feats[i] {
                out.add(yi * self.width + f, 1.0)?;
                out.add(best * self.width + f, -1.0)?;
            }
        }
        Ok(())
    }
}

#[test]
fn block_storage_stays_sparse_on_a_wide_problem() {
    let n = 400;
    let width = 500_000;
    let oracle = SparseWide {
        classes: 4,
        width,
        feats: (0..n)
            .map(|i| [i % 997, (i * 7919) % width, (i * 104_729) % width])
            .collect(),
        labels: (0..n).map(|i| i % 4).collect(),
    };
    let dim = oracle.dim();
    let mut s = bcfw_settings(0.01);
    s.tol_rel = 1e-2;
    s.step_type = StepType::Pairwise;
    s.use_cache = true;
    let mut solver = Solver::new(Problem::from_max_oracle(oracle), s).unwrap();
    let mut w = vec![0.0; dim];
    let info = solver.run(&mut w).unwrap();
    assert!(converged(&info));
    let stats = solver.bcfw().and_then(|b| b.stats()).unwrap();
    let dense_blocks = (n * dim * 8) as u64;
    assert_eq!(stats.dense_blocks, 0);
    // The two dense iterates (v and w) dominate; the blocks are tiny.
    assert!(
        stats.memory_bytes < 3 * (dim as u64) * 8,
        "{} bytes, dense blocks would take {dense_blocks}",
        stats.memory_bytes
    );
}

#[test]
fn heuristic_gaps_trigger_the_exact_pass_early_and_the_stop_stays_exact() {
    let model = Arc::new(multiclass(60, 4, 3, 3));
    let run = |factor: f64| {
        let mut s = bcfw_settings(0.05);
        s.tol_rel = 0.0;
        s.tol_abs = 1e-3;
        s.gap_check = 1000;
        s.max_iterations = 300;
        s.step_type = StepType::Pairwise;
        s.early_exact_factor = factor;
        let mut solver = Solver::new(Problem::Examples(model.clone()), s).unwrap();
        let mut w = vec![0.0; solver.dim()];
        solver.run(&mut w).unwrap()
    };
    // Off: no exact pass before pass 1000, so the run hits the pass limit.
    let off = run(0.0);
    assert_eq!(off.exit, Exit::MaxIterations, "{off:?}");
    // On: an exact pass once the estimates sum below 0.8 tol_abs; the stop
    // is on the exact (certified) gap.
    let on = run(0.8);
    assert!(converged(&on) && on.iterations < 300, "{on:?}");
    assert!(on.primal - on.lower_bound <= 1e-3, "{on:?}");
}

/// What the iterate hook saw: the pass, the point, its dual, averaged or not.
type Seen = (u64, Vec<f64>, f64, bool);

#[test]
fn the_iterate_hook_sees_each_pass_point_with_its_own_dual_and_can_stop() {
    use std::ops::ControlFlow;
    use std::sync::Mutex;
    let model = Arc::new(multiclass(40, 3, 3, 5));
    let lambda = 0.05;
    for averaging in [false, true] {
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let log = seen.clone();
        let mut s = bcfw_settings(lambda);
        s.tol_rel = 0.0;
        s.tol_abs = 0.0;
        s.max_iterations = 50;
        s.weighted_averaging = averaging;
        s.iterate_hook = Some(bmrm::IterateHook::new(move |v| {
            log.lock()
                .unwrap()
                .push((v.pass, v.w.to_vec(), v.dual, v.averaged));
            if v.pass == 3 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        }));
        let mut solver = Solver::new(Problem::Examples(model.clone()), s).unwrap();
        let mut w = vec![0.0; solver.dim()];
        let info = solver.run(&mut w).unwrap();
        // The hook's stop ends the run after pass 3, like the observer's.
        assert_eq!(info.exit, Exit::StoppedByUser, "{info:?}");
        assert_eq!(info.iterations, 3);
        let seen = seen.lock().unwrap();
        assert_eq!(
            seen.iter().map(|x| x.0).collect::<Vec<_>>(),
            [1, 2, 3],
            "one call per pass"
        );
        for (pass, point, dual, averaged) in seen.iter() {
            assert_eq!(*averaged, averaging, "pass {pass}");
            // The dual value belongs to the point: weak duality against a
            // primal computed by enumeration.
            assert!(
                *dual <= brute_primal(&model, point, lambda) + 1e-12,
                "pass {pass}"
            );
        }
        if !averaging {
            // Without averaging the point is BCFW's iterate and its dual.
            let bcfw = solver.bcfw().unwrap();
            assert_eq!(seen[2].1.as_slice(), bcfw.iterate().unwrap());
            assert_eq!(seen[2].2, bcfw.stats().unwrap().dual);
        }
    }
}

/// The `w` a run returns is its best point evaluated, which can be the
/// weighted average or an earlier iterate rather than the final iterate:
/// `returned_ell` (C's `ell`) is paired with it, so that `returned_ell -
/// lambda/2 |w|^2` is the reported dual value and below BMRM's certified
/// optimum, while `ell` stays the iterate's own.
#[test]
fn the_ell_paired_with_the_returned_point_gives_a_valid_bound() {
    let model = Arc::new(multiclass(80, 5, 3, 12));
    let lambda = 0.01;
    let mut sb = Settings::new(Algorithm::Bmrm, lambda);
    sb.tol_rel = 0.0;
    sb.tol_abs = 1e-10;
    let mut bmrm = Solver::new(Problem::Examples(model.clone()), sb).unwrap();
    let mut wb = vec![0.0; bmrm.dim()];
    let optimum = bmrm.run(&mut wb).unwrap().primal;
    let mut not_the_iterate = 0;
    for (averaging, passes) in [(true, 7), (true, 12), (false, 9), (false, 13)] {
        let mut s = bcfw_settings(lambda);
        s.weighted_averaging = averaging;
        s.gap_check = 1;
        s.num_passes = passes;
        s.tol_rel = 0.0;
        let mut solver = Solver::new(Problem::Examples(model.clone()), s).unwrap();
        let mut w = vec![0.0; solver.dim()];
        solver.run(&mut w).unwrap();
        let iterate = solver.bcfw().and_then(|b| b.iterate()).unwrap().to_vec();
        let stats = solver.bcfw().and_then(|b| b.stats()).unwrap();
        let half = |x: &[f64]| 0.5 * lambda * x.iter().map(|v| v * v).sum::<f64>();
        let what = format!("averaging {averaging}, {passes} passes");
        let paired = stats.returned_ell - half(&w);
        assert!(
            (paired - stats.dual).abs() <= 1e-12,
            "{what}: {paired} against {}",
            stats.dual
        );
        assert!(
            paired <= optimum,
            "{what}: {paired} above the optimum {optimum}"
        );
        assert!(
            (stats.ell - half(&iterate) - stats.dual).abs() <= 1e-12,
            "{what}"
        );
        if w != iterate {
            not_the_iterate += 1;
        } else {
            assert_eq!(stats.returned_ell, stats.ell, "{what}");
        }
    }
    assert!(
        not_the_iterate > 0,
        "no case returned another point than the iterate"
    );
}

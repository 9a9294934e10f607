//! BCFW warm starts across lambda (issue: a false certificate after
//! `set_lambda`): after `set_lambda` in either direction, every bound BCFW
//! reports — the run's lower bound and the dual of its `ell` — stays below
//! the optimum that BMRM certifies from scratch at the new lambda.

use bmrm::models::{synthetic, BinaryHinge, Multiclass};
use bmrm::{Algorithm, Exit, Problem, Sampling, Settings, Solver, StepType};

/// min F at `lambda`, certified by BMRM to an absolute gap of 1e-10:
/// (primal, lower bound).
fn bmrm_optimum(problem: &Problem, lambda: f64) -> (f64, f64) {
    let mut s = Settings::new(Algorithm::Bmrm, lambda);
    s.tol_rel = 0.0;
    s.tol_abs = 1e-10;
    let mut solver = Solver::new(problem.clone(), s).unwrap();
    let mut w = vec![0.0; solver.dim()];
    let info = solver.run(&mut w).unwrap();
    assert_eq!(info.exit, Exit::ConvergedAbs);
    (info.primal, info.lower_bound)
}

fn check_path(problem: &Problem, lambdas: [f64; 2], step: StepType, cache: bool, avg: bool) {
    let mut s = Settings::new(Algorithm::Bcfw, lambdas[0]);
    s.tol_rel = 0.0;
    s.tol_abs = 1e-6;
    check_with(problem, lambdas, step, cache, avg, s);
    // The defaults' stopping rule too (a relative gap, loose).
    check_with(
        problem,
        lambdas,
        step,
        cache,
        avg,
        Settings::new(Algorithm::Bcfw, lambdas[0]),
    );
}

fn check_with(
    problem: &Problem,
    lambdas: [f64; 2],
    step: StepType,
    cache: bool,
    avg: bool,
    mut s: Settings,
) {
    s.step_type = step;
    s.use_cache = cache;
    s.weighted_averaging = avg;
    s.sampling = Sampling::Gap;
    s.max_iterations = 400;
    s.num_threads = 2;
    let mut solver = Solver::new(problem.clone(), s).unwrap();
    let mut w = vec![0.0; solver.dim()];
    solver.run(&mut w).unwrap();
    for &lambda in &lambdas[1..] {
        let (opt, opt_lb) = bmrm_optimum(problem, lambda);
        solver.set_lambda(lambda).unwrap();
        let info = solver.run(&mut w).unwrap();
        let what = format!(
            "{:?} -> {lambda}, {step:?}, cache {cache}, avg {avg}",
            lambdas[0]
        );
        let slack = 1e-9 * (1.0 + opt.abs());
        assert!(
            info.lower_bound <= opt + slack,
            "{what}: lower bound {} above the optimum {opt} (BMRM's bound {opt_lb})",
            info.lower_bound
        );
        assert!(
            info.lower_bound <= info.primal + slack,
            "{what}: bound above primal"
        );
        assert!(info.gap >= -slack, "{what}: negative gap {}", info.gap);
        assert!(
            info.primal >= opt_lb - slack,
            "{what}: primal below BMRM's bound"
        );
        let stats = solver.bcfw().and_then(|b| b.stats()).unwrap();
        assert!(
            stats.dual <= opt + slack,
            "{what}: BCFW dual {} above {opt}",
            stats.dual
        );
        // The dual the BCFW codes' users compute from ell and their iterate.
        let it = solver.bcfw().and_then(|b| b.iterate()).unwrap();
        let user_dual = stats.ell - 0.5 * lambda * it.iter().map(|x| x * x).sum::<f64>();
        assert!(
            user_dual <= opt + slack,
            "{what}: ell - lambda/2||w||^2 = {user_dual} above {opt}"
        );
        // The certified gap covers the true suboptimality.
        assert!(
            info.primal - opt <= info.gap + slack,
            "{what}: primal {} vs {opt}, gap {}",
            info.primal,
            info.gap
        );
    }
}

#[test]
fn bcfw_bounds_stay_valid_after_set_lambda_up_and_down() {
    let (x, y) = synthetic::gaussian_binary(24, 5, 1.0, 3);
    let hinge = Problem::from_max_oracle(BinaryHinge::new(x, 5, y, true).unwrap());
    let (x, y) = synthetic::gaussian_multiclass(40, 4, 3, 1.0, 7);
    let multi = Problem::from_max_oracle(Multiclass::new(x, 4, y, 3, true).unwrap());
    for problem in [&hinge, &multi] {
        for pair in [
            [0.1, 0.3],
            [0.01, 1.0],
            [1.0, 0.1],
            [0.001, 0.5],
            [0.5, 0.001],
        ] {
            for (step, cache) in [
                (StepType::FrankWolfe, false),
                (StepType::Pairwise, true),
                (StepType::Away, false),
            ] {
                check_path(problem, pair, step, cache, false);
            }
            check_path(problem, pair, StepType::FrankWolfe, false, true);
        }
    }
}

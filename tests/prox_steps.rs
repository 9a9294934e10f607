//! The prox step bound K of Prox-BMRM and Prox-P-BMRM grows when the steps
//! keep reaching it while `F` keeps falling, so the proximal methods
//! converge from any start: 0, a start a hundredth of the optimum (the
//! scale a few SGD passes leave; with K = 0.01 ||w_1|| fixed both stopped at
//! 1,000 iterations with a gap of 15-18 times F here) and a REUSE start
//! from the solution at 10 times lambda. Each run is checked against BMRM's
//! certified optimum.

mod common;

use std::sync::Arc;

use bmrm::models::Multiclass;
use bmrm::{Algorithm, Exit, Info, Problem, Settings, Solver};

const LAMBDA: f64 = 1e-3;

fn settings(algorithm: Algorithm, lambda: f64) -> Settings {
    let mut s = Settings::new(algorithm, lambda);
    s.tol_rel = 1e-3;
    s.max_iterations = 1000;
    if algorithm.is_partitioned() {
        s.num_parts = 4;
    }
    s
}

/// BMRM's solution and summary at `lambda`, to a relative gap of 1e-6.
fn reference(model: &Arc<Multiclass>, lambda: f64) -> (Vec<f64>, Info) {
    let mut s = Settings::new(Algorithm::Bmrm, lambda);
    s.tol_rel = 1e-6;
    let mut solver = Solver::new(Problem::Examples(model.clone()), s).unwrap();
    let mut w = vec![0.0; solver.dim()];
    let info = solver.run(&mut w).unwrap();
    assert_eq!(info.exit, Exit::ConvergedRel, "{info:?}");
    (w, info)
}

/// Converged within `most` iterations to BMRM's optimum, certified.
fn check(what: &str, info: &Info, best: &Info, most: u64) {
    println!(
        "{what}: {} iterations, F {:.9}, gap / F {:.2e}",
        info.iterations,
        info.primal,
        info.gap / info.primal
    );
    assert_eq!(info.exit, Exit::ConvergedRel, "{what}: {info:?}");
    assert!(
        info.iterations <= most,
        "{what}: {} iterations",
        info.iterations
    );
    assert!(
        info.certified && info.gap <= 1e-3 * info.primal,
        "{what}: {info:?}"
    );
    // Both certificates: each bound below the other's primal.
    assert!(
        info.lower_bound <= best.primal,
        "{what}: {info:?} vs {best:?}"
    );
    assert!(
        best.lower_bound <= info.primal,
        "{what}: {info:?} vs {best:?}"
    );
}

#[test]
fn proximal_steps_converge_from_a_start_a_hundredth_of_the_optimum() {
    let model = Arc::new(common::multiclass(200, 10, 5, 3));
    let (w_star, best) = reference(&model, LAMBDA);
    for algorithm in [Algorithm::ProxBmrm, Algorithm::ProxPBmrm] {
        let mut solver = Solver::new(
            Problem::Examples(model.clone()),
            settings(algorithm, LAMBDA),
        )
        .unwrap();
        let mut w: Vec<f64> = w_star.iter().map(|x| 0.01 * x).collect();
        let info = solver.run(&mut w).unwrap();
        check(&format!("{algorithm:?} from w*/100"), &info, &best, 400);
    }
}

#[test]
fn proximal_steps_converge_from_zero_and_from_a_reuse_start() {
    let model = Arc::new(common::multiclass(200, 10, 5, 3));
    let (_, best) = reference(&model, LAMBDA);
    for algorithm in [Algorithm::ProxBmrm, Algorithm::ProxPBmrm] {
        let mut solver = Solver::new(
            Problem::Examples(model.clone()),
            settings(algorithm, 10.0 * LAMBDA),
        )
        .unwrap();
        let mut w = vec![0.0; solver.dim()];
        solver.run(&mut w).unwrap();
        solver.set_lambda(LAMBDA).unwrap();
        let info = solver.run(&mut w).unwrap();
        check(&format!("{algorithm:?} REUSE"), &info, &best, 400);
        let mut fresh = Solver::new(
            Problem::Examples(model.clone()),
            settings(algorithm, LAMBDA),
        )
        .unwrap();
        let mut w = vec![0.0; fresh.dim()];
        let info = fresh.run(&mut w).unwrap();
        check(&format!("{algorithm:?} from 0"), &info, &best, 400);
    }
}

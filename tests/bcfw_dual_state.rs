//! BCFW's per-block dual state saved from one solver and restored into
//! another (the warm start of gapBCFW's `cache` input): the restored state is
//! the same dual point, a run continues from it, a state moved to another
//! lambda stays a valid lower bound (checked against an independent BMRM
//! run), and malformed states are refused without touching the solver.

use bmrm::models::{synthetic, Multiclass};
use bmrm::{
    Algorithm, BlockDual, CornerDual, ErrorKind, Exit, Problem, Settings, Solver, StepType,
};

fn problem() -> Problem {
    let (x, y) = synthetic::gaussian_multiclass(60, 4, 3, 2.0, 5);
    Problem::from_max_oracle(Multiclass::new(x, 4, y, 3, false).unwrap())
}

fn settings(lambda: f64) -> Settings {
    let mut s = Settings::new(Algorithm::Bcfw, lambda);
    s.step_type = StepType::Pairwise;
    s.use_cache = true;
    s.num_threads = 1;
    s
}

fn saved(s: &Solver, n: usize) -> Vec<BlockDual> {
    (0..n)
        .map(|i| s.bcfw().unwrap().block_dual(i).expect("corners kept"))
        .collect()
}

#[test]
fn a_saved_dual_state_restores_the_same_point_and_stays_a_valid_bound() {
    let lambda = 0.05;
    let mut first = Solver::new(problem(), {
        let mut s = settings(lambda);
        s.max_iterations = 5;
        s
    })
    .unwrap();
    let mut w = vec![0.0; first.dim()];
    first.run(&mut w).unwrap();
    let state = saved(&first, 60);
    let stats = first.bcfw().unwrap().stats().unwrap();
    let iterate = first.bcfw().unwrap().iterate().unwrap().to_vec();

    // Restored into a fresh solver: the same w and ell (to rounding).
    let mut second = Solver::new(problem(), settings(lambda)).unwrap();
    let start = second
        .bcfw_mut()
        .unwrap()
        .set_dual(state.clone())
        .unwrap()
        .to_vec();
    let d2 = second.bcfw().unwrap().stats().unwrap();
    let dist: f64 = start
        .iter()
        .zip(&iterate)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(dist < 1e-12, "restored w differs by {dist}");
    assert!((d2.ell - stats.ell).abs() < 1e-12 && (d2.dual - stats.dual).abs() < 1e-12);
    // A run continues from it and converges.
    let mut w2 = start.clone();
    let info = second.run(&mut w2).unwrap();
    assert!(
        matches!(info.exit, Exit::ConvergedRel | Exit::ConvergedAbs),
        "{info:?}"
    );
    assert!(info.lower_bound >= d2.dual - 1e-12);

    // At another lambda (gapBCFW's keep_dual): a valid lower bound.
    let mut bmrm_s = Settings::new(Algorithm::Bmrm, 0.2);
    bmrm_s.tol_rel = 1e-9;
    let mut bmrm = Solver::new(problem(), bmrm_s).unwrap();
    let mut wb = vec![0.0; bmrm.dim()];
    let reference = bmrm.run(&mut wb).unwrap();
    let mut third = Solver::new(problem(), settings(0.2)).unwrap();
    third.bcfw_mut().unwrap().set_dual(state.clone()).unwrap();
    let dual = third.bcfw().unwrap().stats().unwrap().dual;
    assert!(
        dual <= reference.primal + 1e-12,
        "dual {dual} above BMRM's primal {}",
        reference.primal
    );

    // Malformed states are refused and leave the solver as it was.
    let mut bad = state.clone();
    bad[3].corners.push(CornerDual {
        label: 7,
        psi: Default::default(),
        loss: 1.0,
        alpha: 2.0,
    });
    assert!(
        matches!(third.bcfw_mut().unwrap().set_dual(bad), Err(e) if e.kind() == ErrorKind::InvalidArgument && e.message().contains("block 3"))
    );
    let mut bad = state.clone();
    if let Some(c) = bad[1].corners.first_mut() {
        c.psi.idx = vec![100_000];
        c.psi.val = vec![1.0];
    }
    assert!(third.bcfw_mut().unwrap().set_dual(bad).is_err() || state[1].corners.is_empty());
    assert!(third
        .bcfw_mut()
        .unwrap()
        .set_dual(state[..10].to_vec())
        .is_err());
    assert_eq!(third.bcfw().unwrap().stats().unwrap().dual, dual);
    // FW steps without a cache keep no corners: no state to save or set.
    let mut fw = settings(lambda);
    fw.step_type = StepType::FrankWolfe;
    fw.use_cache = false;
    let mut plain = Solver::new(problem(), fw).unwrap();
    assert!(plain.bcfw_mut().unwrap().set_dual(state).is_err());
}

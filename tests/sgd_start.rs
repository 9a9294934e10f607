//! Projected SGD, alone and as the bundle methods' start, under a box: every
//! point it asks the oracle at is in the box, and every bundle method
//! started from it reaches the constrained optimum found without the
//! library (nested ternary search on a two-weight problem), with its lower
//! bound below that optimum.

mod common;

use std::sync::{Arc, Mutex};

use bmrm::models::Multiclass;
use bmrm::{Algorithm, Corner, Exit, MaxOracle, Problem, Settings, Solver};

const BUNDLE: [Algorithm; 4] = [
    Algorithm::Bmrm,
    Algorithm::ProxBmrm,
    Algorithm::PBmrm,
    Algorithm::ProxPBmrm,
];

/// The multiclass model of [`common::BoxCase`], recording every point the
/// oracle is asked at.
struct Recording {
    inner: Arc<Multiclass>,
    seen: Mutex<Vec<Vec<f64>>>,
}

impl MaxOracle for Recording {
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn num_examples(&self) -> usize {
        MaxOracle::num_examples(&*self.inner)
    }
    fn max_oracle(&self, example: usize, w: &[f64], out: &mut Corner) -> bmrm::Result<()> {
        self.seen.lock().unwrap().push(w.to_vec());
        self.inner.max_oracle(example, w, out)
    }
}

fn recording(case: &common::BoxCase) -> Arc<Recording> {
    Arc::new(Recording {
        inner: case.model.clone(),
        seen: Mutex::new(Vec::new()),
    })
}

fn outside(case: &common::BoxCase, w: &[f64]) -> bool {
    w[0] < case.lo[0] || w[1] > case.hi[1]
}

#[test]
fn projected_sgd_keeps_every_iterate_in_the_box() {
    let case = common::BoxCase::new();
    let (_, _, f_box) = case.optimum;
    for boxed in [false, true] {
        let oracle = recording(&case);
        let mut s = Settings::new(Algorithm::Sgd, case.lambda);
        s.sgd_passes = Settings::SGD_START_PASSES;
        let mut solver = Solver::new(Problem::Examples(oracle.clone()), s).unwrap();
        if boxed {
            solver
                .set_bounds(case.lo.to_vec(), case.hi.to_vec())
                .unwrap();
        }
        let mut w = vec![0.0; 2];
        let info = solver.run(&mut w).unwrap();
        let seen = oracle.seen.lock().unwrap();
        // Ten passes of 40 steps, the t0 trials and the pass-end evaluations.
        assert!(seen.len() > 400, "{}", seen.len());
        let first_out = seen.iter().position(|p| outside(&case, p));
        if boxed {
            assert_eq!(first_out, None, "{:?}", first_out.map(|k| &seen[k]));
            assert!(!outside(&case, &w), "{w:?}");
            assert!(info.lower_bound <= f_box + 1e-12, "{info:?} {f_box}");
            assert!(info.primal >= f_box - 1e-12, "{info:?} {f_box}");
        } else {
            // Without the box its path leaves it: the projection is what
            // keeps the boxed run inside.
            assert!(first_out.is_some());
        }
    }
}

#[test]
fn every_bundle_method_from_the_sgd_start_reaches_the_constrained_optimum() {
    let case = common::BoxCase::new();
    let (x, y, f_box) = case.optimum;
    for algorithm in BUNDLE {
        let oracle = recording(&case);
        let mut s = Settings::new(algorithm, case.lambda);
        s.sgd_passes = Settings::SGD_START_PASSES;
        s.tol_rel = 1e-9;
        s.max_iterations = 2000;
        if algorithm.is_partitioned() {
            s.num_parts = 4;
        }
        let mut solver = Solver::new(Problem::Examples(oracle.clone()), s).unwrap();
        solver
            .set_bounds(case.lo.to_vec(), case.hi.to_vec())
            .unwrap();
        // A start outside the box: projected onto it first.
        let mut w = vec![-5.0, 5.0];
        let info = solver.run(&mut w).unwrap();
        let what = format!("{algorithm:?}");
        assert!(
            matches!(info.exit, Exit::ConvergedRel | Exit::ConvergedAbs),
            "{what}: {info:?}"
        );
        let seen = oracle.seen.lock().unwrap();
        assert!(seen.len() > 400, "{what}: the SGD start ran");
        if let Some(p) = seen.iter().find(|p| outside(&case, p)) {
            panic!("{what}: asked at {p:?}, outside the box");
        }
        let f_w = common::brute_primal(&case.model, &w, case.lambda);
        assert!(
            (f_w - info.primal).abs() <= 1e-12 * f_w,
            "{what}: {f_w} {info:?}"
        );
        assert!(
            (info.primal - f_box).abs() <= 1e-7 * f_box,
            "{what}: {} vs the searched {f_box} at ({x}, {y})",
            info.primal
        );
        assert!(info.lower_bound <= f_box + 1e-12, "{what}: {info:?}");
    }
}

//! BCFW's class-factored blocks: the multiclass model's corners are
//! `r_i ⊗ (e_{y_i} - e_y)`, so BCFW keeps `K` coefficients per block instead
//! of a vector of `K d'`. The steps must be the general blocks' steps (the
//! same oracle calls, iterates equal up to rounding), their certificates
//! valid against BMRM's optimum, their memory `K` numbers per block, and
//! their results the same bits for any thread count.

use bmrm::models::{synthetic, Multiclass, SparseRows};
use bmrm::{
    Algorithm, BcfwStats, Corner, Exit, Info, MaxOracle, Problem, Result, Sampling, Settings,
    Solver, StepType,
};

/// The multiclass model seen through its corners: BCFW keeps general block
/// vectors for it.
struct Wrapped {
    model: Multiclass,
}

fn general(model: Multiclass) -> Wrapped {
    Wrapped { model }
}

impl MaxOracle for Wrapped {
    fn dim(&self) -> usize {
        self.model.dim()
    }
    fn num_examples(&self) -> usize {
        self.model.num_examples()
    }
    fn max_oracle(&self, example: usize, w: &[f64], out: &mut Corner) -> Result<()> {
        self.model.max_oracle(example, w, out)
    }
    fn max_oracle_block(&self, first: usize, w: &[f64], out: &mut [Corner]) -> Option<Result<()>> {
        self.model.max_oracle_block(first, w, out)
    }
}

fn model(m: usize, d: usize, k: usize, bias: bool, sparse: bool, seed: u64) -> Multiclass {
    let (mut x, y) = synthetic::gaussian_multiclass(m, d, k, 1.5, seed);
    // Zero a third of the features, so sparse rows skip entries.
    for (j, v) in x.iter_mut().enumerate() {
        if j % 3 == 1 {
            *v = 0.0;
        }
    }
    if sparse {
        let rows = SparseRows::from_dense(&x, d).unwrap();
        Multiclass::new_sparse(rows, y, k, bias).unwrap()
    } else {
        Multiclass::new(x, d, y, k, bias).unwrap()
    }
}

fn settings(lambda: f64, sampling: Sampling, line_search: bool, avg: bool) -> Settings {
    let mut s = Settings::new(Algorithm::Bcfw, lambda);
    s.sampling = sampling;
    s.line_search = line_search;
    s.weighted_averaging = avg;
    s.tol_rel = 0.0;
    s.tol_abs = 0.0;
    s.max_iterations = 25;
    s.gap_check = 5;
    s.seed = 11;
    s
}

struct Run {
    infos: Vec<Info>,
    w: Vec<f64>,
    stats: BcfwStats,
}

/// Runs at `lambdas[0]`, then moves to each further lambda and runs again.
fn run(problem: Problem, s: Settings, lambdas: &[f64]) -> Run {
    let mut solver = Solver::new(problem, s).unwrap();
    let mut w = vec![0.0; solver.dim()];
    let mut infos = vec![solver.run(&mut w).unwrap()];
    for &lambda in lambdas {
        solver.set_lambda(lambda).unwrap();
        infos.push(solver.run(&mut w).unwrap());
    }
    let stats = solver.bcfw().unwrap().stats().unwrap();
    Run { infos, w, stats }
}

fn close(a: f64, b: f64, scale: f64) -> bool {
    (a - b).abs() <= 1e-9 * scale.max(1e-3)
}

#[test]
fn class_blocks_take_the_general_blocks_steps() {
    let cases = [
        (Sampling::Gap, true, false, true, false),
        (Sampling::Uniform, true, false, false, false),
        (Sampling::Gap, false, true, true, false),
        (Sampling::Gap, true, false, true, true),
        (Sampling::Uniform, true, true, false, true),
    ];
    for (sampling, line_search, avg, bias, sparse) in cases {
        let what = format!(
            "{sampling:?}, line search {line_search}, averaging {avg}, bias {bias}, sparse {sparse}"
        );
        let m = model(150, 12, 5, bias, sparse, 3);
        let s = settings(0.01, sampling, line_search, avg);
        // Down (w_i kept), then up past the truths' weights (w_i shrunk).
        let lambdas = [0.002, 0.5];
        let factored = run(Problem::from_max_oracle(m.clone()), s.clone(), &lambdas);
        let general = run(Problem::from_max_oracle(general(m)), s, &lambdas);
        assert_eq!(factored.stats.dense_blocks, 0, "{what}");
        assert_eq!(
            factored.stats.oracle_calls, general.stats.oracle_calls,
            "{what}"
        );
        for (f, g) in factored.infos.iter().zip(&general.infos) {
            assert_eq!(f.exit, g.exit, "{what}");
            assert_eq!(f.iterations, g.iterations, "{what}");
            let scale = g.primal.abs();
            assert!(
                close(f.primal, g.primal, scale) && close(f.lower_bound, g.lower_bound, scale),
                "{what}: primal {} vs {}, lower bound {} vs {}",
                f.primal,
                g.primal,
                f.lower_bound,
                g.lower_bound
            );
        }
        let wmax = general.w.iter().fold(0.0f64, |a, x| a.max(x.abs()));
        let diff = factored
            .w
            .iter()
            .zip(&general.w)
            .fold(0.0f64, |a, (x, y)| a.max((x - y).abs()));
        assert!(
            diff <= 1e-9 * wmax,
            "{what}: w differs by {diff} (max |w| {wmax})"
        );
        assert!(
            close(factored.stats.ell, general.stats.ell, general.stats.ell),
            "{what}: ell {} vs {}",
            factored.stats.ell,
            general.stats.ell
        );
    }
}

#[test]
fn class_blocks_certify_against_bmrm_and_hold_k_numbers_per_block() {
    let (m, d, k) = (300, 40, 6);
    let model = model(m, d, k, true, false, 5);
    let problem = Problem::from_max_oracle(model.clone());
    let lambda = 1e-2;
    let mut b = Settings::new(Algorithm::Bmrm, lambda);
    b.tol_rel = 0.0;
    b.tol_abs = 1e-9;
    let mut solver = Solver::new(problem.clone(), b).unwrap();
    let mut w = vec![0.0; solver.dim()];
    let opt = solver.run(&mut w).unwrap();
    assert_eq!(opt.exit, Exit::ConvergedAbs);

    let mut s = Settings::new(Algorithm::Bcfw, lambda);
    s.tol_rel = 0.0;
    s.tol_abs = 1e-3;
    s.max_iterations = 2000;
    let factored = run(problem, s.clone(), &[]);
    let info = &factored.infos[0];
    assert_eq!(info.exit, Exit::ConvergedAbs, "{info:?}");
    assert!(
        info.lower_bound <= opt.primal + 1e-12 && opt.lower_bound <= info.primal + 1e-12,
        "BCFW [{}, {}] against BMRM [{}, {}]",
        info.lower_bound,
        info.primal,
        opt.lower_bound,
        opt.primal
    );
    assert!(info.primal - opt.primal <= 1e-3 + 1e-9);

    let general = run(Problem::from_max_oracle(general(model)), s, &[]);
    assert!(general.stats.dense_blocks > 0);
    // K coefficients per block against general vectors of up to K (d + 1).
    assert!(
        8 * factored.stats.memory_bytes < general.stats.memory_bytes,
        "{} against {} bytes",
        factored.stats.memory_bytes,
        general.stats.memory_bytes
    );
}

#[test]
fn class_blocks_give_the_same_bits_for_any_thread_count() {
    let model = model(200, 10, 4, true, false, 9);
    let mut results = Vec::new();
    for threads in [1, 2, 4] {
        let mut s = settings(0.01, Sampling::Gap, true, false);
        s.num_threads = threads;
        let r = run(Problem::from_max_oracle(model.clone()), s, &[0.1]);
        let bits: Vec<u64> = r.w.iter().map(|x| x.to_bits()).collect();
        results.push((
            bits,
            r.infos[1].lower_bound.to_bits(),
            r.stats.ell.to_bits(),
        ));
    }
    assert_eq!(results[0], results[1]);
    assert_eq!(results[0], results[2]);
}

/// Along a path the solves run many passes, and a block drawn by the gap
/// sampler at a near tie of two weights can differ between two roundings:
/// the first breakpoints agree to rounding, the later ones are each
/// certified.
#[test]
fn class_blocks_follow_the_general_regularisation_path() {
    let model = model(120, 6, 4, true, false, 4);
    let s = settings(1.0, Sampling::Gap, true, false);
    let eps = 0.02;
    let path = |problem: Problem| {
        let mut solver = Solver::new(problem, s.clone()).unwrap();
        solver.bcfw_mut().unwrap().path(eps, 1e-3, 100).unwrap()
    };
    let factored = path(Problem::from_max_oracle(model.clone()));
    let general = path(Problem::from_max_oracle(general(model)));
    assert!(factored.len() >= 8, "{} breakpoints", factored.len());
    assert!(factored.len().abs_diff(general.len()) <= 1);
    for (k, (f, g)) in factored.iter().zip(&general).enumerate() {
        assert!(
            f.gap <= s.path_a * eps + 1e-12,
            "breakpoint {k}: gap {}",
            f.gap
        );
        if k < 5 {
            assert_eq!(f.passes, g.passes, "breakpoint {k}");
            assert!(
                close(f.lambda, g.lambda, g.lambda),
                "{k}: {} vs {}",
                f.lambda,
                g.lambda
            );
            assert!(
                close(f.primal, g.primal, g.primal),
                "{k}: {} vs {}",
                f.primal,
                g.primal
            );
        }
    }
}

/// With corners kept a corner is its class. The FW steps with the cache and
/// the away steps take the general steps; every variant (pairwise, away,
/// cache, multi-plane) certifies against BMRM's optimum, and the corners it
/// exports are the oracle's, entry for entry.
#[test]
fn class_blocks_with_kept_corners_take_the_general_steps_and_certify() {
    let model = model(160, 10, 5, true, false, 8);
    let lambda = 0.01;
    let mut b = Settings::new(Algorithm::Bmrm, lambda);
    b.tol_rel = 0.0;
    b.tol_abs = 1e-10;
    let mut solver = Solver::new(Problem::from_max_oracle(model.clone()), b).unwrap();
    let mut w = vec![0.0; solver.dim()];
    let opt = solver.run(&mut w).unwrap();
    assert_eq!(opt.exit, Exit::ConvergedAbs);

    let variant = |step: StepType, cache: bool, multi_plane: bool, sampling: Sampling| {
        let mut s = settings(lambda, sampling, true, false);
        s.step_type = step;
        s.use_cache = cache;
        s.multi_plane = multi_plane;
        s
    };
    // Trajectories that take no decision on a tie of two equal gains.
    for s in [
        variant(StepType::FrankWolfe, true, false, Sampling::Permutation),
        variant(StepType::Away, true, false, Sampling::Gap),
    ] {
        let what = format!("{:?}, cache {}", s.step_type, s.use_cache);
        let mut solvers: Vec<Solver> = [
            Problem::from_max_oracle(model.clone()),
            Problem::from_max_oracle(general(model.clone())),
        ]
        .into_iter()
        .map(|p| Solver::new(p, s.clone()).unwrap())
        .collect();
        let infos: Vec<Info> = solvers
            .iter_mut()
            .map(|solver| {
                let mut w = vec![0.0; solver.dim()];
                solver.run(&mut w).unwrap()
            })
            .collect();
        assert_eq!(infos[0].oracle_calls, infos[1].oracle_calls, "{what}");
        let scale = infos[1].primal;
        assert!(close(infos[0].primal, infos[1].primal, scale), "{what}");
        assert!(
            close(infos[0].lower_bound, infos[1].lower_bound, scale),
            "{what}"
        );
        for i in [0, 17, 159] {
            let f = solvers[0].bcfw().unwrap().block_dual(i).unwrap();
            let g = solvers[1].bcfw().unwrap().block_dual(i).unwrap();
            assert_eq!(f.corners.len(), g.corners.len(), "{what}, block {i}");
            for (a, b) in f.corners.iter().zip(&g.corners) {
                assert_eq!((a.label, a.loss), (b.label, b.loss), "{what}, block {i}");
                assert_eq!(a.psi, b.psi, "{what}, block {i}");
                assert!((a.alpha - b.alpha).abs() <= 1e-9, "{what}, block {i}");
            }
        }
    }
    // Every variant, on class blocks and on general ones: every lower
    // bound of the run below the optimum, every primal value above it. With
    // away steps (`All`) and the cache, the general blocks gave a dual
    // value above the optimum after 606 passes, until away steps rebuilt
    // w_i from the weights.
    for s in [
        variant(StepType::Pairwise, false, false, Sampling::Gap),
        variant(StepType::Pairwise, true, false, Sampling::Gap),
        variant(StepType::All, true, false, Sampling::Gap),
        variant(StepType::Away, false, false, Sampling::Uniform),
        variant(StepType::FrankWolfe, false, true, Sampling::Gap),
        variant(StepType::Pairwise, true, true, Sampling::Gap),
    ] {
        let what = format!(
            "{:?}, cache {}, multi-plane {}",
            s.step_type, s.use_cache, s.multi_plane
        );
        let mut s = s;
        s.tol_abs = 1e-6;
        s.max_iterations = 800;
        for problem in [
            Problem::from_max_oracle(model.clone()),
            Problem::from_max_oracle(general(model.clone())),
        ] {
            let mut solver = Solver::new(problem, s.clone()).unwrap();
            let mut w = vec![0.0; solver.dim()];
            let info = solver.run(&mut w).unwrap();
            for r in solver.history() {
                assert!(
                    r.lower_bound <= opt.primal + 1e-12,
                    "{what}: pass {} lower bound {} above BMRM's optimum {}",
                    r.iteration,
                    r.lower_bound,
                    opt.primal
                );
            }
            assert!(opt.lower_bound <= info.primal + 1e-12, "{what}");
            assert!(info.gap <= 1e-3, "{what}: {info:?}");
            // The dual the BCFW codes' users compute from ell and the iterate.
            let stats = solver.bcfw().unwrap().stats().unwrap();
            let it = solver.bcfw().unwrap().iterate().unwrap();
            let wn2: f64 = it.iter().map(|x| x * x).sum();
            assert!(
                stats.ell - 0.5 * lambda * wn2 <= opt.primal + 1e-9,
                "{what}"
            );
        }
    }
}

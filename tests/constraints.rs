//! Constraints on `w` for the bundle methods: a box `lo <= w <= hi`
//! and rows `A w >= b`. Every evaluated point is feasible, the lower bound
//! stays below the constrained optimum (found here without the library: in
//! closed form, or by ternary search on the feasible set), the gap closes,
//! the bits do not depend on the thread count, and bad inputs are refused by
//! name.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bmrm::models::graph::{synthetic, EngineKind, GraphModel};
use bmrm::oracle::{FullRisk, PartitionedRisk};
use bmrm::{Algorithm, Corner, Error, ErrorKind, Exit, MaxOracle, Problem, Settings, Solver};

const BUNDLE: [Algorithm; 4] = [
    Algorithm::Bmrm,
    Algorithm::ProxBmrm,
    Algorithm::PBmrm,
    Algorithm::ProxPBmrm,
];

/// `R(w) = (1/16) sum_j |w_j - c_j|`, the coordinates split into parts
/// `j mod parts`; records every point it is evaluated at.
struct AbsRisk {
    c: Vec<f64>,
    parts: usize,
    seen: Mutex<Vec<Vec<f64>>>,
}

impl AbsRisk {
    fn new(c: Vec<f64>, parts: usize) -> Arc<Self> {
        Arc::new(AbsRisk {
            c,
            parts,
            seen: Mutex::new(Vec::new()),
        })
    }
    fn seen(&self) -> Vec<Vec<f64>> {
        self.seen.lock().unwrap().clone()
    }
}

impl PartitionedRisk for AbsRisk {
    fn dim(&self) -> usize {
        self.c.len()
    }
    fn num_parts(&self) -> usize {
        self.parts
    }
    fn partial_risk(&self, part: usize, w: &[f64], g: &mut [f64]) -> bmrm::Result<f64> {
        self.seen.lock().unwrap().push(w.to_vec());
        g.iter_mut().for_each(|x| *x = 0.0);
        let mut r = 0.0;
        for j in (part..self.c.len()).step_by(self.parts) {
            let d = w[j] - self.c[j];
            r += d.abs() / 16.0;
            g[j] = if d > 0.0 { 1.0 / 16.0 } else { -1.0 / 16.0 };
        }
        Ok(r)
    }
}

/// The same risk as a full risk (for the algorithms that refuse bounds).
impl FullRisk for AbsRisk {
    fn dim(&self) -> usize {
        self.c.len()
    }
    fn risk(&self, w: &[f64], g: &mut [f64]) -> bmrm::Result<f64> {
        let mut total = 0.0;
        let mut part_g = vec![0.0; w.len()];
        g.iter_mut().for_each(|x| *x = 0.0);
        for p in 0..self.parts {
            total += self.partial_risk(p, w, &mut part_g)?;
            g.iter_mut().zip(&part_g).for_each(|(a, b)| *a += b);
        }
        Ok(total)
    }
}

fn objective(c: &[f64], lambda: f64, w: &[f64]) -> f64 {
    w.iter()
        .zip(c)
        .map(|(x, cj)| 0.5 * lambda * x * x + (x - cj).abs() / 16.0)
        .sum()
}

fn settings(algorithm: Algorithm, lambda: f64, threads: usize) -> Settings {
    let mut s = Settings::new(algorithm, lambda);
    s.tol_rel = 0.0;
    s.tol_abs = 1e-7;
    s.max_iterations = 2000;
    s.num_threads = threads;
    s
}

fn inside(w: &[f64], lo: &[f64], hi: &[f64]) -> bool {
    w.iter()
        .zip(lo.iter().zip(hi))
        .all(|(x, (l, h))| l <= x && x <= h)
}

/// The box problem: c spread around 0, lambda 1, so the free optimum is
/// `sign(c) min(|c|, 1/16)`; the box cuts some coordinates.
fn box_problem() -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let c = vec![0.5, -0.3, 0.02, -0.01, 0.2, -0.7, 0.04, 0.3];
    let inf = f64::INFINITY;
    let lo = vec![0.0, 0.0, 0.03, -inf, -inf, -0.02, -1.0, 0.1];
    let hi = vec![inf, inf, inf, -0.05, 0.01, inf, 1.0, 0.2];
    (c, lo, hi)
}

#[test]
fn every_bundle_method_honours_a_box_and_reaches_the_clipped_optimum() {
    let lambda = 1.0;
    let (c, lo, hi) = box_problem();
    // Coordinate-wise: the free optimum clipped into the interval (each
    // coordinate's objective is convex in one variable).
    let w_star: Vec<f64> = c
        .iter()
        .enumerate()
        .map(|(j, &cj)| (cj.signum() * cj.abs().min(1.0 / (16.0 * lambda))).clamp(lo[j], hi[j]))
        .collect();
    let f_star = objective(&c, lambda, &w_star);
    for algorithm in BUNDLE {
        let risk = AbsRisk::new(c.clone(), 2);
        let mut solver = Solver::new(
            Problem::Partitioned(risk.clone()),
            settings(algorithm, lambda, 1),
        )
        .unwrap();
        solver.set_bounds(lo.clone(), hi.clone()).unwrap();
        // A start outside the box is projected onto it.
        let mut w = vec![3.0; c.len()];
        let info = solver.run(&mut w).unwrap();
        let seen = risk.seen();
        assert!(seen.len() > 2, "{algorithm:?}");
        for (k, p) in seen.iter().enumerate() {
            assert!(inside(p, &lo, &hi), "{algorithm:?} point {k} {p:?}");
        }
        assert!(inside(&w, &lo, &hi), "{algorithm:?} {w:?}");
        assert!(
            info.lower_bound <= f_star + 1e-12,
            "{algorithm:?}: bound {} above the optimum {f_star}",
            info.lower_bound
        );
        assert!(info.gap <= 1e-7, "{algorithm:?} {info:?}");
        assert!(
            (info.primal - f_star).abs() <= 1e-7,
            "{algorithm:?}: {} vs {f_star}",
            info.primal
        );
        for (j, (a, b)) in w.iter().zip(&w_star).enumerate() {
            // F grows by at least lambda/2 d^2 away from the optimum.
            assert!((a - b).abs() <= 1e-3, "{algorithm:?} w[{j}] = {a} vs {b}");
        }
        // The box binds: the free optimum is not feasible and is lower.
        let free: Vec<f64> = c
            .iter()
            .map(|&cj| cj.signum() * cj.abs().min(1.0 / 16.0))
            .collect();
        assert!(objective(&c, lambda, &free) < f_star - 1e-3);
    }
}

#[test]
fn constrained_runs_are_bit_identical_on_one_and_two_threads() {
    let (c, lo, hi) = box_problem();
    for algorithm in BUNDLE {
        let run = |threads: usize| {
            let risk = AbsRisk::new(c.clone(), 2);
            let mut s = settings(algorithm, 0.5, threads);
            s.max_iterations = 30;
            let mut solver = Solver::new(Problem::Partitioned(risk), s).unwrap();
            solver.set_bounds(lo.clone(), hi.clone()).unwrap();
            solver
                .set_linear_constraints(&[1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], &[0.2])
                .unwrap();
            let mut w = vec![0.1; c.len()];
            w[1] = 0.1;
            let info = solver.run(&mut w).unwrap();
            let bits: Vec<u64> = w.iter().map(|x| x.to_bits()).collect();
            (bits, info.primal.to_bits(), info.lower_bound.to_bits())
        };
        assert_eq!(run(1), run(2), "{algorithm:?}");
    }
}

/// `min f` over `{x in [x0, x1], y in [y0, y1], x + y >= s}` by nested
/// ternary search (f convex): for each x, y ranges over
/// `[max(y0, s - x), y1]`.
fn constrained_reference(
    f: &dyn Fn(f64, f64) -> f64,
    xs: (f64, f64),
    y: (f64, f64),
    s: f64,
) -> f64 {
    fn ternary(g: &dyn Fn(f64) -> f64, mut lo: f64, mut hi: f64) -> f64 {
        for _ in 0..200 {
            let a = lo + (hi - lo) / 3.0;
            let b = hi - (hi - lo) / 3.0;
            if g(a) <= g(b) {
                hi = b;
            } else {
                lo = a;
            }
        }
        0.5 * (lo + hi)
    }
    // Only x with s - x <= y1 are feasible.
    let x_lo = xs.0.max(s - y.1);
    let inner = |x: f64| {
        let from = y.0.max(s - x);
        let yy = ternary(&|v| f(x, v), from, y.1);
        f(x, yy)
    };
    let x = ternary(&inner, x_lo, xs.1);
    inner(x)
}

#[test]
fn one_inequality_in_two_dimensions_matches_the_search_on_the_feasible_set() {
    let lambda = 0.1;
    let c = vec![-1.0, 0.3];
    // Free optimum (-0.625, 0.3): w1 + w2 = -0.325, cut off by w1 + w2 >= 0.5.
    let s = 0.5;
    let f = |x: f64, y: f64| objective(&c, lambda, &[x, y]);
    let f_star = constrained_reference(&f, (-5.0, 5.0), (-5.0, 5.0), s);
    // With a box as well: w2 <= 0.1 forces w1 >= 0.4.
    let f_star_box = constrained_reference(&f, (-5.0, 5.0), (-5.0, 0.1), s);
    assert!(f_star_box > f_star + 1e-4, "{f_star_box} {f_star}");
    for algorithm in BUNDLE {
        for (with_box, reference) in [(false, f_star), (true, f_star_box)] {
            let risk = AbsRisk::new(c.clone(), 2);
            let mut solver = Solver::new(
                Problem::Partitioned(risk.clone()),
                settings(algorithm, lambda, 1),
            )
            .unwrap();
            solver.set_linear_constraints(&[1.0, 1.0], &[s]).unwrap();
            let hi = [f64::INFINITY, if with_box { 0.1 } else { f64::INFINITY }];
            if with_box {
                solver
                    .set_bounds(vec![f64::NEG_INFINITY; 2], hi.to_vec())
                    .unwrap();
            }
            let mut w = vec![2.0, 0.0];
            let info = solver.run(&mut w).unwrap();
            let what = format!("{algorithm:?} box {with_box}");
            for p in risk.seen() {
                assert!(p[0] + p[1] >= s && p[1] <= hi[1], "{what}: {p:?}");
            }
            assert!(
                info.lower_bound <= reference + 1e-12,
                "{what}: bound {} above {reference}",
                info.lower_bound
            );
            assert!(info.gap <= 1e-7, "{what}: {info:?}");
            assert!(
                (info.primal - reference).abs() <= 2e-7,
                "{what}: {info:?} vs {reference}"
            );
            assert!(w[0] + w[1] >= s && w[1] <= hi[1], "{what}: {w:?}");
        }
    }
}

#[test]
fn non_negative_weights_on_a_multiclass_model_agree_with_bcfw() {
    // The same box for BCFW (its own dual) and BMRM: each one's bound
    // stays below the other's primal, and both primals are feasible.
    let model = Arc::new(common::multiclass(60, 4, 3, 7));
    let lambda = 0.05;
    let mut results = Vec::new();
    for algorithm in [Algorithm::Bmrm, Algorithm::PBmrm, Algorithm::Bcfw] {
        let mut s = Settings::new(algorithm, lambda);
        s.tol_rel = 0.0;
        s.tol_abs = 1e-6;
        s.max_iterations = 5000;
        let problem = Problem::Examples(model.clone());
        let mut solver = Solver::new(problem, s).unwrap();
        let dim = solver.dim();
        solver
            .set_bounds(vec![0.0; dim], vec![f64::INFINITY; dim])
            .unwrap();
        let mut w = vec![0.0; dim];
        let info = solver.run(&mut w).unwrap();
        assert!(w.iter().all(|&x| x >= 0.0), "{algorithm:?} {w:?}");
        let f = common::brute_primal(&model, &w, lambda);
        assert!((f - info.primal).abs() <= 1e-9 * (1.0 + f), "{algorithm:?}");
        assert!(info.gap <= 1e-6, "{algorithm:?} {info:?}");
        results.push((algorithm, info));
    }
    for (a, x) in &results {
        for (b, y) in &results {
            assert!(
                x.lower_bound <= y.primal + 1e-12,
                "{a:?} bound {} above {b:?} primal {}",
                x.lower_bound,
                y.primal
            );
        }
    }
}

fn refused(e: Error, kind: ErrorKind, names: &str) {
    assert_eq!(e.kind, kind, "{}", e.message);
    assert!(
        e.message.contains(names),
        "'{}' should name {names}",
        e.message
    );
}

#[test]
fn bad_constraints_are_refused_by_name() {
    let c = vec![0.1, 0.2, 0.3];
    let new = |algorithm: Algorithm| {
        let risk = AbsRisk::new(c.clone(), 1);
        let problem = if algorithm.is_partitioned() {
            Problem::Partitioned(risk)
        } else {
            Problem::Risk(risk)
        };
        Solver::new(problem, settings(algorithm, 1.0, 1)).unwrap()
    };
    let inf = f64::INFINITY;
    let mut s = new(Algorithm::Bmrm);
    let e = s
        .set_bounds(vec![0.0, 1.0, 0.0], vec![1.0, 0.5, 1.0])
        .unwrap_err();
    refused(e, ErrorKind::InvalidArgument, "coordinate 1");
    let e = s.set_bounds(vec![0.0; 2], vec![1.0; 3]).unwrap_err();
    refused(e, ErrorKind::DimensionMismatch, "dimension is 3");
    let e = s.set_bounds(vec![f64::NAN; 3], vec![inf; 3]).unwrap_err();
    refused(e, ErrorKind::InvalidArgument, "coordinate 0");
    let e = s.set_linear_constraints(&[1.0, 0.0], &[0.0]).unwrap_err();
    refused(e, ErrorKind::DimensionMismatch, "1 rows of dimension 3");
    let e = s
        .set_linear_constraints(&[1.0, 0.0, 0.0, 0.0, f64::NAN, 0.0], &[0.0, 1.0])
        .unwrap_err();
    refused(e, ErrorKind::NonFinite, "A[1][1]");
    let e = s
        .set_linear_constraints(&[1.0, 0.0, 0.0], &[inf])
        .unwrap_err();
    refused(e, ErrorKind::NonFinite, "b[0]");
    // A start that violates a row is refused, naming it; one that satisfies
    // it runs.
    s.set_linear_constraints(&[0.0, 0.0, 1.0, 1.0, 0.0, 0.0], &[0.0, 0.5])
        .unwrap();
    let e = s.run(&mut [0.0, 0.0, 0.0]).unwrap_err();
    refused(e, ErrorKind::InvalidArgument, "row 1");
    let mut w = [1.0, 0.0, 0.0];
    s.run(&mut w).unwrap();
    assert!(w[0] >= 0.5 && w[2] >= 0.0, "{w:?}");
    // No rows: the constraints go; the free optimum (c clipped to 1/16).
    s.set_linear_constraints(&[], &[]).unwrap();
    let mut w = [0.0; 3];
    s.run(&mut w).unwrap();
    assert!((w[0] - 0.0625).abs() < 1e-3, "{w:?}");

    // The algorithms whose iterates would leave the set refuse by name:
    // the cutting-plane method both, SGD (projected onto a box) the rows.
    let mut s = new(Algorithm::CuttingPlane);
    let e = s.set_bounds(vec![0.0; 3], vec![inf; 3]).unwrap_err();
    refused(e, ErrorKind::InvalidArgument, "cutting-plane");
    let mut s = new(Algorithm::Sgd);
    s.set_bounds(vec![0.0; 3], vec![inf; 3]).unwrap();
    for mut s in [new(Algorithm::CuttingPlane), new(Algorithm::Sgd)] {
        let e = s
            .set_linear_constraints(&[1.0, 0.0, 0.0], &[0.0])
            .unwrap_err();
        let name = if s.settings().algorithm == Algorithm::Sgd {
            "SGD"
        } else {
            "cutting-plane"
        };
        refused(e, ErrorKind::InvalidArgument, name);
    }
    let mut with_sgd = settings(Algorithm::Bmrm, 1.0, 1);
    with_sgd.sgd_passes = 2;
    let mut s = Solver::new(Problem::Risk(AbsRisk::new(c.clone(), 1)), with_sgd).unwrap();
    s.set_bounds(vec![0.0; 3], vec![inf; 3]).unwrap();
    let e = s
        .set_linear_constraints(&[1.0, 0.0, 0.0], &[0.0])
        .unwrap_err();
    refused(e, ErrorKind::InvalidArgument, "sgd_passes");
    // BCFW takes a box but not rows.
    let model = common::multiclass(10, 2, 2, 1);
    let mut s = Settings::new(Algorithm::Bcfw, 0.1);
    s.num_passes = 5;
    let mut bcfw = Solver::new(Problem::from_max_oracle(model), s).unwrap();
    let dim = bcfw.dim();
    let e = bcfw
        .set_linear_constraints(&vec![1.0; dim], &[0.0])
        .unwrap_err();
    refused(e, ErrorKind::InvalidArgument, "BCFW");
    bcfw.set_bounds(vec![0.0; dim], vec![inf; dim]).unwrap();
}

#[test]
fn a_box_and_a_row_on_a_multiclass_model_give_crossing_free_certificates() {
    // w >= 0 on the first class's weights and w_0 + w_1 >= 0.5, for every
    // bundle method: each result is feasible, each bound stays below every
    // method's primal, and every gap closes.
    let model = Arc::new(common::multiclass(120, 6, 3, 7));
    let lambda = 0.05;
    let mut results = Vec::new();
    for algorithm in BUNDLE {
        let mut s = Settings::new(algorithm, lambda);
        s.tol_rel = 1e-6;
        let mut solver = Solver::new(Problem::Examples(model.clone()), s).unwrap();
        let dim = solver.dim();
        let mut lo = vec![f64::NEG_INFINITY; dim];
        lo[..6].iter_mut().for_each(|x| *x = 0.0);
        solver.set_bounds(lo, vec![f64::INFINITY; dim]).unwrap();
        let mut row = vec![0.0; dim];
        row[0] = 1.0;
        row[1] = 1.0;
        solver.set_linear_constraints(&row, &[0.5]).unwrap();
        let mut w = vec![0.0; dim];
        w[0] = 1.0;
        let info = solver.run(&mut w).unwrap();
        assert!(
            w[..6].iter().all(|&x| x >= 0.0) && w[0] + w[1] >= 0.5,
            "{algorithm:?} {w:?}"
        );
        let f = common::brute_primal(&model, &w, lambda);
        assert!((f - info.primal).abs() <= 1e-9 * (1.0 + f), "{algorithm:?}");
        assert!(info.gap <= 1e-6 * info.primal, "{algorithm:?} {info:?}");
        results.push((algorithm, info));
    }
    for (a, x) in &results {
        for (b, y) in &results {
            assert!(
                x.lower_bound <= y.primal + 1e-12,
                "{a:?} bound {} above {b:?} primal {}",
                x.lower_bound,
                y.primal
            );
        }
    }
}

/// A graph model's max-oracle that checks every point it is asked at
/// against the box `w >= lo` and keeps the first one outside it.
struct InBox {
    inner: Arc<GraphModel>,
    lo: Vec<f64>,
    calls: AtomicU64,
    outside: Mutex<Option<Vec<f64>>>,
}

impl InBox {
    fn check(&self, w: &[f64]) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if w.iter().zip(&self.lo).any(|(x, l)| x < l) {
            self.outside
                .lock()
                .unwrap()
                .get_or_insert_with(|| w.to_vec());
        }
    }
}

impl MaxOracle for InBox {
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn num_examples(&self) -> usize {
        MaxOracle::num_examples(&*self.inner)
    }
    fn max_oracle(&self, example: usize, w: &[f64], out: &mut Corner) -> bmrm::Result<()> {
        self.check(w);
        self.inner.max_oracle(example, w, out)
    }
    fn max_oracle_block(
        &self,
        first: usize,
        w: &[f64],
        out: &mut [Corner],
    ) -> Option<bmrm::Result<()>> {
        self.check(w);
        self.inner.max_oracle_block(first, w, out)
    }
    fn block_risk(
        &self,
        first: usize,
        n: usize,
        w: &[f64],
        grad: &mut [f64],
    ) -> Option<bmrm::Result<f64>> {
        self.check(w);
        self.inner.block_risk(first, n, w, grad)
    }
    fn thread_safe(&self) -> bool {
        self.inner.thread_safe()
    }
}

/// `F(w)` of a graph model: the mean of the hinges of the loss-augmented
/// argmaxes (exact engines), plus the regulariser.
fn graph_primal(model: &GraphModel, w: &[f64], lambda: f64) -> f64 {
    let m = MaxOracle::num_examples(model);
    let mut corner = Corner::new(w.len());
    let mut risk = 0.0;
    for i in 0..m {
        corner.clear();
        model.max_oracle(i, w, &mut corner).unwrap();
        risk += corner.hinge(w).max(0.0);
    }
    0.5 * lambda * w.iter().map(|v| v * v).sum::<f64>() + risk / m as f64
}

/// On small landmark, pose and HorseSeg-like problems under the
/// positivity constraints of `GraphModel::positivity_coordinates`,
/// Prox-BMRM and Prox-P-BMRM converge (they made no progress when the
/// constrained prox problem was solved only to the outer gap's tolerance)
/// to the optimum constrained BMRM certifies, every point they evaluate is
/// in the box, and each bound stays below `F` of the returned `w`.
#[test]
fn proximal_methods_under_positivity_reach_bmrm_s_optimum_on_graph_problems() {
    let m = 12;
    let tol_rel = 1e-3;
    let problems = [
        (
            "landmarks",
            synthetic::landmarks(m, 4, 3, 27),
            EngineKind::DistanceTransform,
        ),
        (
            "pose",
            synthetic::pose(m, 4, 3, 27),
            EngineKind::DistanceTransform,
        ),
        (
            "segmentation",
            synthetic::segmentation(m, 4, 3, 27),
            EngineKind::GraphCut,
        ),
    ];
    for (name, examples, engine) in problems {
        let model = Arc::new(GraphModel::new(examples, false, engine.into()).unwrap());
        let dim = model.dim();
        let lambda = 10.0 / m as f64;
        let mut lo = vec![f64::NEG_INFINITY; dim];
        let positive = model.positivity_coordinates();
        assert!(!positive.is_empty(), "{name}");
        positive.iter().for_each(|&j| lo[j] = 0.0);
        let run = |algorithm: Algorithm| {
            let oracle = Arc::new(InBox {
                inner: model.clone(),
                lo: lo.clone(),
                calls: AtomicU64::new(0),
                outside: Mutex::new(None),
            });
            let mut s = Settings::new(algorithm, lambda);
            s.tol_rel = tol_rel;
            s.max_iterations = 1000;
            if algorithm.is_partitioned() {
                s.num_parts = 4;
            }
            let mut solver = Solver::new(Problem::Examples(oracle.clone()), s).unwrap();
            solver
                .set_bounds(lo.clone(), vec![f64::INFINITY; dim])
                .unwrap();
            let mut w = vec![0.0; dim];
            let info = solver.run(&mut w).unwrap();
            let what = format!("{name}, {algorithm:?}");
            assert!(oracle.calls.load(Ordering::Relaxed) > 0, "{what}");
            let outside = oracle.outside.lock().unwrap().clone();
            assert!(outside.is_none(), "{what}: evaluated at {outside:?}");
            assert!(w.iter().zip(&lo).all(|(x, l)| x >= l), "{what}: {w:?}");
            let f = graph_primal(&model, &w, lambda);
            assert!(
                (f - info.primal).abs() <= 1e-9 * f.abs(),
                "{what}: F(w) = {f}, reported {}",
                info.primal
            );
            assert!(info.lower_bound <= f, "{what}: {info:?}");
            (info, what)
        };
        let (bmrm, _) = run(Algorithm::Bmrm);
        assert_eq!(bmrm.exit, Exit::ConvergedRel, "{name}: {bmrm:?}");
        // Positivity binds: without it the optimum is lower.
        let mut free = Settings::new(Algorithm::Bmrm, lambda);
        free.tol_rel = tol_rel;
        free.max_iterations = 1000;
        let free_info = if name == "segmentation" {
            None // graph cut needs the Potts weights >= 0
        } else {
            let mut solver = Solver::new(Problem::Examples(model.clone()), free).unwrap();
            Some(solver.run(&mut vec![0.0; dim]).unwrap())
        };
        if let Some(f) = free_info {
            assert!(f.primal < bmrm.lower_bound, "{name}: {f:?} {bmrm:?}");
        }
        for algorithm in [Algorithm::ProxBmrm, Algorithm::ProxPBmrm] {
            let (info, what) = run(algorithm);
            assert!(
                matches!(info.exit, Exit::ConvergedRel | Exit::ConvergedAbs),
                "{what}: {info:?}"
            );
            assert!(info.iterations <= 400, "{what}: {info:?}");
            assert!(info.gap <= tol_rel * info.primal, "{what}: {info:?}");
            // Both certificates bracket the same constrained minimum.
            assert!(info.lower_bound <= bmrm.primal, "{what}: {info:?} {bmrm:?}");
            assert!(bmrm.lower_bound <= info.primal, "{what}: {info:?} {bmrm:?}");
            assert!(
                (info.primal - bmrm.primal).abs() <= info.gap.max(bmrm.gap),
                "{what}: {} vs BMRM's {}",
                info.primal,
                bmrm.primal
            );
        }
    }
}

/// A tiny box problem whose constrained optimum is found without the
/// library: two classes and one feature (`w = (w_0, w_1)`, `F` by
/// enumerating both classes, `common::brute_primal`), the box `w_1 <= u_1 /
/// 2` cutting off the free optimum `u`, the optimum found by nested ternary
/// search. The start 0 is feasible and far from it at this small lambda
/// (the first step overshoots by orders of magnitude, which left the
/// constrained prox steps of Prox-BMRM and Prox-P-BMRM stuck). Every bundle
/// method reaches the optimum, inside the box, with its bound below it.
#[test]
fn every_bundle_method_reaches_the_searched_optimum_of_a_tiny_box_problem() {
    let model = Arc::new(common::multiclass(40, 1, 2, 4));
    let lambda = 0.002;
    let f = |a: f64, b: f64| common::brute_primal(&model, &[a, b], lambda);
    let (u0, u1, f_free) = common::nested_ternary(&f, -2000.0, 2000.0);
    let hi = [f64::INFINITY, 0.5 * u1];
    assert!(
        hi[1] > 0.0,
        "the start 0 must be feasible: u = ({u0}, {u1})"
    );
    let (x, y, f_box) = common::nested_ternary_in(&f, (-2000.0, 2000.0), (-2000.0, hi[1]));
    assert!(f_box > f_free + 1e-6, "the box must bind: {f_box} {f_free}");
    assert!(hi[1] - y < 1e-9, "the optimum is on the box's face: {y}");
    for algorithm in BUNDLE {
        let mut s = Settings::new(algorithm, lambda);
        s.tol_rel = 1e-9;
        s.max_iterations = 2000;
        if algorithm.is_partitioned() {
            s.num_parts = 4;
        }
        let mut solver = Solver::new(Problem::Examples(model.clone()), s).unwrap();
        solver
            .set_bounds(vec![f64::NEG_INFINITY; 2], hi.to_vec())
            .unwrap();
        let mut w = vec![0.0; 2];
        let info = solver.run(&mut w).unwrap();
        let what = format!("{algorithm:?}");
        assert!(
            matches!(info.exit, Exit::ConvergedRel | Exit::ConvergedAbs),
            "{what}: {info:?}"
        );
        assert!(w[1] <= hi[1], "{what}: {w:?} outside the box");
        let f_w = f(w[0], w[1]);
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

/// Under a box the bundle is cleaned as without one: a plane whose weight
/// stays 0 goes. On a landmark problem under positivity, every bundle
/// method's mean plane count stays within 1.5 times the unconstrained
/// run's at the same lambda (it was 2.1-3.3 times when the projection onto
/// the simplices lifted zero weights to the rounding of their sum and no
/// plane ever looked inactive), and the certificates of the two runs are
/// consistent: the box's bound is below its `F`, and not below the free
/// run's bound (the box can only raise the minimum).
#[test]
fn planes_are_pruned_under_a_box_as_without_one() {
    let m = 30;
    let model = Arc::new(
        GraphModel::new(
            synthetic::landmarks(m, 5, 4, 27),
            false,
            EngineKind::DistanceTransform.into(),
        )
        .unwrap(),
    );
    let dim = model.dim();
    let lambda = 10.0 / m as f64;
    let mut lo = vec![f64::NEG_INFINITY; dim];
    model
        .positivity_coordinates()
        .iter()
        .for_each(|&j| lo[j] = 0.0);
    let run = |algorithm: Algorithm, boxed: bool| {
        let mut s = Settings::new(algorithm, lambda);
        s.tol_rel = 1e-2;
        s.max_iterations = 2000;
        if algorithm.is_partitioned() {
            s.num_parts = 4;
        }
        let mut solver = Solver::new(Problem::Examples(model.clone()), s).unwrap();
        if boxed {
            solver
                .set_bounds(lo.clone(), vec![f64::INFINITY; dim])
                .unwrap();
        }
        let info = solver.run(&mut vec![0.0; dim]).unwrap();
        let history = solver.history();
        let mean = history.iter().map(|h| h.num_planes as f64).sum::<f64>() / history.len() as f64;
        (info, mean)
    };
    for algorithm in BUNDLE {
        let (boxed, boxed_planes) = run(algorithm, true);
        let (free, free_planes) = run(algorithm, false);
        let what = format!("{algorithm:?}: {boxed:?} {free:?}");
        assert_eq!(boxed.exit, Exit::ConvergedRel, "{what}");
        assert!(
            boxed_planes <= 1.5 * free_planes,
            "{what}: {boxed_planes} planes on average under the box, {free_planes} without"
        );
        assert!(boxed.lower_bound <= boxed.primal, "{what}");
        assert!(free.lower_bound <= boxed.primal, "{what}");
    }
}

#[test]
fn bmrm_under_a_box_closes_a_gap_near_rounding() {
    // Near the optimum the reduced problem's dual is flat to its last bits:
    // an active-set round that closes the dual's gap may end a few ulps
    // below its warm start. Keeping the warm start (by the dual value alone)
    // hands BMRM a point whose gap it cannot close, and it then proposes
    // nearly the same `w` until `max_iterations`. Tiny multiclass problems
    // with three weights held at or below zero, solved to 1e-11 of F.
    for seed in 0..12 {
        let model = Arc::new(common::multiclass(12, 3, 3, seed));
        let lambda = 1.0 / 12.0;
        let mut s = Settings::new(Algorithm::Bmrm, lambda);
        s.tol_rel = 0.0;
        s.tol_abs = 1e-11;
        s.max_iterations = 400;
        let mut solver = Solver::new(Problem::Examples(model.clone()), s).unwrap();
        let dim = solver.dim();
        let mut upper = vec![f64::INFINITY; dim];
        upper[..3].iter_mut().for_each(|u| *u = 0.0);
        solver
            .set_bounds(vec![f64::NEG_INFINITY; dim], upper.clone())
            .unwrap();
        let mut w = vec![0.0; dim];
        let info = solver.run(&mut w).unwrap();
        assert!(w.iter().zip(&upper).all(|(x, u)| x <= u), "seed {seed}");
        assert_eq!(info.exit, Exit::ConvergedAbs, "seed {seed}: {info:?}");
        let f = common::brute_primal(&model, &w, lambda);
        assert!(info.lower_bound <= f, "seed {seed}: {info:?} F {f}");
    }
}

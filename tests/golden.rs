//! Golden results: every algorithm on small fixed problems, recorded bit for
//! bit (a hash of the f64 bits of `w`, of every history row and of BCFW's
//! figures, plus a few plain values) so that a restructuring of the engine
//! can show it changed no figure, iterate or count.
//!
//! `BMRM_GOLDEN_RECORD=1 cargo test --release --test golden` rewrites
//! `tests/golden/results.txt`; without it every line must match exactly.
//! Times are left out (they are the only figures that may differ).

use std::fmt::Write as _;
use std::sync::Arc;

use bmrm::models::{synthetic, BinaryHinge, Chain, Multiclass};
use bmrm::oracle::{ExampleParts, FullRisk, MaxOracle};
use bmrm::{Algorithm, Info, Iteration, Problem, Sampling, Settings, Solver, StepType};

const FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/results.txt");

/// FNV-1a over 64-bit words.
struct Hash(u64);

impl Hash {
    fn new() -> Self {
        Hash(0xcbf2_9ce4_8422_2325)
    }
    fn u(&mut self, v: u64) {
        for b in v.to_le_bytes() {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    fn f(&mut self, v: f64) {
        self.u(v.to_bits());
    }
    fn all(&mut self, v: &[f64]) {
        v.iter().for_each(|&x| self.f(x));
    }
}

fn hash_w(w: &[f64]) -> u64 {
    let mut h = Hash::new();
    h.all(w);
    h.0
}

/// Every history figure except the times.
fn hash_history(rows: &[Iteration]) -> u64 {
    let mut h = Hash::new();
    for r in rows {
        h.u(r.iteration);
        h.f(r.primal);
        h.f(r.lower_bound);
        h.f(r.risk);
        h.f(r.objective);
        h.u(r.num_planes);
        h.u(r.active_planes);
        h.f(r.alpha);
        h.f(r.step_norm);
        h.u(r.oracle_calls);
        h.f(r.effective_passes);
        h.f(r.gap_estimate);
        h.f(r.exact_gap);
    }
    h.0
}

/// One line: the certificate, the counts and the iterate.
fn line(name: &str, info: &Info, w: &[f64], history: &[Iteration]) -> String {
    format!(
        "{name}: exit={:?} iterations={} oracle_calls={} primal={:016x} lower={:016x} \
         risk={:016x} planes={}/{} rows={} history={:016x} w={:016x} w0={:e} wlast={:e}",
        info.exit,
        info.iterations,
        info.oracle_calls,
        info.primal.to_bits(),
        info.lower_bound.to_bits(),
        info.risk.to_bits(),
        info.num_planes,
        info.active_planes,
        history.len(),
        hash_history(history),
        hash_w(w),
        w[0],
        w[w.len() - 1],
    )
}

fn multiclass() -> Arc<dyn MaxOracle> {
    let (x, y) = synthetic::gaussian_multiclass(40, 4, 3, 2.0, 7);
    Arc::new(Multiclass::new(x, 4, y, 3, true).unwrap())
}

fn chain() -> Arc<dyn MaxOracle> {
    let (k, d) = (3usize, 4usize);
    let (values, lengths, labels) = synthetic::markov_chain(12, k, d, 5);
    Arc::new(Chain::dense(values, d, &lengths, labels, k, true).unwrap())
}

fn binary() -> Arc<dyn MaxOracle> {
    let (x, y) = synthetic::gaussian_binary(50, 5, 1.0, 3);
    Arc::new(BinaryHinge::new(x, 5, y, true).unwrap())
}

/// The mean absolute deviation `R(w) = (1/m) sum_i |<x_i, w> - y_i|` as a
/// full risk (no parts, no max-oracle).
struct Deviation {
    x: Vec<f64>,
    y: Vec<f64>,
    d: usize,
}

impl FullRisk for Deviation {
    fn dim(&self) -> usize {
        self.d
    }
    fn risk(&self, w: &[f64], g: &mut [f64]) -> bmrm::Result<f64> {
        let m = self.y.len();
        g.iter_mut().for_each(|v| *v = 0.0);
        let mut r = 0.0;
        for i in 0..m {
            let row = &self.x[i * self.d..(i + 1) * self.d];
            let e: f64 = row.iter().zip(w).map(|(a, b)| a * b).sum::<f64>() - self.y[i];
            r += e.abs();
            for (gj, a) in g.iter_mut().zip(row) {
                *gj += e.signum() * a / m as f64;
            }
        }
        Ok(r / m as f64)
    }
}

fn deviation() -> Problem {
    let (m, d) = (30usize, 3usize);
    let x: Vec<f64> = (0..m * d)
        .map(|k| ((k * 7919 % 97) as f64 / 97.0) - 0.5)
        .collect();
    let y: Vec<f64> = (0..m)
        .map(|i| ((i * 31 % 11) as f64 / 11.0) - 0.3)
        .collect();
    Problem::from_risk(Deviation { x, y, d })
}

fn settings(algorithm: Algorithm, lambda: f64) -> Settings {
    let mut s = Settings::new(algorithm, lambda);
    s.num_threads = 2;
    s
}

fn single(out: &mut String, name: &str, problem: Problem, s: Settings) {
    let bcfw = s.algorithm == Algorithm::Bcfw;
    let mut solver = Solver::new(problem, s).unwrap();
    let mut w = vec![0.0; solver.dim()];
    let info = solver.run(&mut w).unwrap();
    out.push_str(&line(name, &info, &w, solver.history()));
    if bcfw {
        out.push_str(&bcfw_figures(&solver));
    }
    out.push('\n');
}

fn bcfw_figures(solver: &Solver) -> String {
    let s = solver.bcfw().and_then(|b| b.stats()).unwrap();
    let mut h = Hash::new();
    h.u(s.passes);
    h.f(s.effective_passes);
    h.u(s.oracle_calls);
    h.u(s.cache_hits);
    h.f(s.ell);
    h.f(s.dual);
    h.f(s.gap_estimate);
    h.f(s.last_exact_gap);
    h.u(s.corners);
    h.u(s.active_corners);
    h.u(s.dense_blocks);
    format!(
        " bcfw: passes={} calls={} hits={} stats={:016x} iterate={:016x}",
        s.passes,
        s.oracle_calls,
        s.cache_hits,
        h.0,
        hash_w(solver.bcfw().and_then(|b| b.iterate()).unwrap())
    )
}

/// Decreasing lambdas, each run warm-started from the last solution.
fn warm(out: &mut String, name: &str, problem: Problem, s: Settings) {
    let mut solver = Solver::new(problem, s).unwrap();
    let mut w = vec![0.0; solver.dim()];
    for lambda in [0.1, 0.03, 0.01] {
        solver.set_lambda(lambda).unwrap();
        let info = solver.run(&mut w).unwrap();
        out.push_str(&line(
            &format!("{name} lambda={lambda}"),
            &info,
            &w,
            solver.history(),
        ));
        out.push('\n');
    }
}

fn results() -> String {
    let mut out = String::new();
    let mc = || Problem::Examples(multiclass());
    let ch = || Problem::Examples(chain());
    let parts = || Problem::from_partitioned(ExampleParts::new(binary(), 5));

    for (alg, k) in [
        (Algorithm::Bmrm, 0),
        (Algorithm::ProxBmrm, 0),
        (Algorithm::PBmrm, 4),
        (Algorithm::ProxPBmrm, 4),
    ] {
        let mut s = settings(alg, 0.01);
        s.num_parts = k;
        s.tol_rel = 1e-5;
        single(
            &mut out,
            &format!("multiclass {}", alg.name()),
            mc(),
            s.clone(),
        );
        single(&mut out, &format!("chain {}", alg.name()), ch(), s.clone());
        let mut p = s.clone();
        p.num_parts = 0;
        single(&mut out, &format!("parts {}", alg.name()), parts(), p);
        if !alg.is_partitioned() {
            single(
                &mut out,
                &format!("risk {}", alg.name()),
                deviation(),
                s.clone(),
            );
        }
        let mut sgd = s.clone();
        sgd.sgd_passes = 3;
        single(
            &mut out,
            &format!("multiclass {} +SGD", alg.name()),
            mc(),
            sgd,
        );
    }
    let mut limited = settings(Algorithm::ProxBmrm, 0.001);
    limited.max_iterations = 7;
    limited.tol_rel = 0.0;
    single(&mut out, "multiclass Prox-BMRM 7 iterations", mc(), limited);

    let mut cp = settings(Algorithm::CuttingPlane, 0.1);
    cp.tol_rel = 1e-3;
    cp.max_iterations = 200;
    single(&mut out, "multiclass cutting-plane", mc(), cp.clone());
    single(&mut out, "parts cutting-plane", parts(), cp.clone());
    single(&mut out, "risk cutting-plane", deviation(), cp);

    let mut sgd = settings(Algorithm::Sgd, 0.01);
    sgd.sgd_passes = 6;
    single(&mut out, "multiclass SGD", mc(), sgd.clone());
    single(&mut out, "chain SGD", ch(), sgd.clone());
    single(&mut out, "parts SGD", parts(), sgd.clone());
    single(&mut out, "risk SGD", deviation(), sgd);

    let variants: [(&str, Sampling, StepType, bool, bool, bool, u32); 6] = [
        (
            "uniform FW",
            Sampling::Uniform,
            StepType::FrankWolfe,
            false,
            true,
            false,
            1,
        ),
        (
            "perm pairwise cache",
            Sampling::Permutation,
            StepType::Pairwise,
            true,
            true,
            false,
            2,
        ),
        (
            "gap away cache",
            Sampling::Gap,
            StepType::Away,
            true,
            true,
            false,
            1,
        ),
        (
            "gap FW fixed-step avg",
            Sampling::Gap,
            StepType::FrankWolfe,
            false,
            false,
            true,
            3,
        ),
        (
            "perm FW cache avg",
            Sampling::Permutation,
            StepType::FrankWolfe,
            true,
            true,
            true,
            1,
        ),
        (
            "gap pairwise",
            Sampling::Gap,
            StepType::Pairwise,
            false,
            true,
            false,
            2,
        ),
    ];
    for (name, sampling, step, cache, line_search, avg, gap_check) in variants {
        let mut s = settings(Algorithm::Bcfw, 0.01);
        s.sampling = sampling;
        s.step_type = step;
        s.use_cache = cache;
        s.line_search = line_search;
        s.weighted_averaging = avg;
        s.gap_check = gap_check;
        s.tol_rel = 1e-4;
        s.num_passes = 40;
        single(
            &mut out,
            &format!("multiclass BCFW {name}"),
            mc(),
            s.clone(),
        );
        single(&mut out, &format!("chain BCFW {name}"), ch(), s.clone());
    }

    // Box-constrained BCFW.
    for step in [StepType::FrankWolfe, StepType::Pairwise] {
        let mut s = settings(Algorithm::Bcfw, 0.01);
        s.step_type = step;
        s.tol_rel = 1e-4;
        s.num_passes = 40;
        let problem = mc();
        let mut solver = Solver::new(problem, s).unwrap();
        let dim = solver.dim();
        let lower: Vec<f64> = (0..dim)
            .map(|j| if j % 3 == 0 { -0.2 } else { f64::NEG_INFINITY })
            .collect();
        let upper: Vec<f64> = (0..dim)
            .map(|j| if j % 2 == 0 { 0.3 } else { f64::INFINITY })
            .collect();
        solver.bcfw_mut().unwrap().set_bounds(lower, upper).unwrap();
        // 0 is inside the box: BCFW's start.
        let mut w = vec![0.0; dim];
        let info = solver.run(&mut w).unwrap();
        out.push_str(&line(
            &format!("multiclass BCFW box {step:?}"),
            &info,
            &w,
            solver.history(),
        ));
        out.push_str(&bcfw_figures(&solver));
        out.push('\n');
    }

    // The regularisation path.
    for (name, problem) in [("multiclass", mc()), ("chain", ch())] {
        let mut s = settings(Algorithm::Bcfw, 0.01);
        s.sampling = Sampling::Gap;
        s.step_type = StepType::Pairwise;
        s.use_cache = true;
        let mut solver = Solver::new(problem, s).unwrap();
        let path = solver.bcfw_mut().unwrap().path(0.05, 1e-3, 6).unwrap();
        for (k, b) in path.iter().enumerate() {
            writeln!(
                out,
                "{name} BCFW path {k}: lambda={:016x} low={:016x} gap={:016x} primal={:016x} \
                 passes={} calls={} exit={:?} w={:016x}",
                b.lambda.to_bits(),
                b.lambda_low.to_bits(),
                b.gap.to_bits(),
                b.primal.to_bits(),
                b.passes,
                b.oracle_calls,
                b.exit,
                hash_w(&b.w),
            )
            .unwrap();
        }
    }

    // Warm starts along decreasing lambdas.
    for alg in [Algorithm::Bmrm, Algorithm::ProxBmrm, Algorithm::PBmrm] {
        let mut s = settings(alg, 0.1);
        s.num_parts = if alg.is_partitioned() { 4 } else { 0 };
        s.tol_rel = 1e-5;
        warm(
            &mut out,
            &format!("multiclass warm {}", alg.name()),
            mc(),
            s,
        );
    }
    let mut s = settings(Algorithm::Bcfw, 0.1);
    s.tol_rel = 1e-4;
    s.num_passes = 60;
    s.sampling = Sampling::Gap;
    s.use_cache = true;
    warm(&mut out, "multiclass warm BCFW", mc(), s.clone());
    s.step_type = StepType::Away;
    warm(&mut out, "chain warm BCFW away", ch(), s);
    out
}

#[test]
fn every_algorithm_reproduces_its_recorded_results_bit_for_bit() {
    let got = results();
    if std::env::var_os("BMRM_GOLDEN_RECORD").is_some() {
        std::fs::create_dir_all(std::path::Path::new(FILE).parent().unwrap()).unwrap();
        std::fs::write(FILE, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(FILE)
        .expect("tests/golden/results.txt is missing: record it with BMRM_GOLDEN_RECORD=1");
    let mut mismatches = Vec::new();
    let (g, w): (Vec<&str>, Vec<&str>) = (got.lines().collect(), want.lines().collect());
    for k in 0..g.len().max(w.len()) {
        let (a, b) = (g.get(k).copied(), w.get(k).copied());
        if a != b {
            mismatches.push(format!("recorded: {b:?}\n     got: {a:?}"));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} lines differ:\n{}",
        mismatches.len(),
        w.len(),
        mismatches.join("\n")
    );
}

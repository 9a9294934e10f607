//! The tables the structured benchmarks print: the shape of Table 2 of the
//! Prox-BMRM technical report (BMRM, Prox-BMRM and Prox-P-BMRM iterations,
//! seconds and speed-up over BMRM at several lambdas, SGD or REUSE starts)
//! and the certified gap of BCFW variants against effective passes (the
//! gap-BCFW paper's figures), and each run's QP seconds per iteration and
//! plane count. Included by `#[path]` from each benchmark.
//!
//! The SGD start is the library's (`Settings::sgd_passes`); where the
//! library refuses it (under box constraints) and `sgd_start` is "auto",
//! or when it is "bench", a projected SGD here (`projected_sgd`), whose
//! seconds count.

use std::time::Instant;

use bmrm::{Algorithm, Corner, MaxOracle, Problem, Sampling, Settings, Solver, StepType};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// What both tables are run with.
#[derive(Clone)]
pub struct TableSettings {
    /// Summed-risk lambdas as in the report (mean-risk lambda = summed / m), decreasing.
    pub lambdas: Vec<f64>,
    /// Relative tolerance (the report's eps).
    pub tol_rel: f64,
    /// Parts of Prox-P-BMRM.
    pub parts: usize,
    /// Threads (0 = all cores).
    pub threads: usize,
    /// Iteration cap per lambda.
    pub max_iterations: u64,
    /// "reuse": each lambda starts from the previous solution (the first from
    /// the solution at 10x it, not counted); "sgd": each from SGD passes.
    pub start: String,
    /// SGD passes of the SGD start.
    pub sgd_passes: u32,
    /// Whose SGD start: "library", "bench" (projected SGD here) or "auto"
    /// (the library's, the bench's where the library refuses it).
    pub sgd_start: String,
    /// Summed-risk lambda of the BCFW runs.
    pub bcfw_lambda: f64,
    /// Passes of every BCFW run.
    pub bcfw_passes: u64,
    /// Seed of the BCFW runs.
    pub seed: u64,
    /// Box constraints `w >= 0` on these coordinates (positivity), for
    /// every solver.
    pub non_negative: Vec<usize>,
}

/// One solve of the bundle table.
pub struct Cell {
    pub iterations: u64,
    pub seconds: f64,
    pub rel_gap: f64,
    pub test_error: f64,
    /// Seconds in the QP solves per iteration.
    pub qp_per_iteration: f64,
    /// Planes in the model: the mean and the largest over the iterations.
    pub mean_planes: f64,
    pub max_planes: u64,
    /// Whether the gap is certified (every oracle answer exact).
    pub certified: bool,
}

/// The algorithms of the table, in its order.
pub const TABLE_ALGORITHMS: [Algorithm; 3] =
    [Algorithm::Bmrm, Algorithm::ProxBmrm, Algorithm::ProxPBmrm];

fn algorithm_label(alg: Algorithm, parts: usize) -> String {
    if alg.is_partitioned() {
        format!("{} (P={parts})", alg.name())
    } else {
        alg.name().to_string()
    }
}

fn configured(alg: Algorithm, lambda: f64, t: &TableSettings) -> Settings {
    let mut s = Settings::new(alg, lambda);
    s.tol_rel = t.tol_rel;
    if alg.is_partitioned() {
        s.num_parts = t.parts;
    }
    s.num_threads = t.threads;
    s.max_iterations = t.max_iterations;
    s
}

fn solver(problem: &Problem, s: Settings, t: &TableSettings) -> bmrm::Result<Solver> {
    let mut solver = Solver::new(problem.clone(), s)?;
    if !t.non_negative.is_empty() {
        let dim = solver.dim();
        let mut lo = vec![f64::NEG_INFINITY; dim];
        for &j in &t.non_negative {
            lo[j] = 0.0;
        }
        solver.set_bounds(lo, vec![f64::INFINITY; dim])?;
    }
    Ok(solver)
}

/// The start of one cell: the solver to run and the point it starts from,
/// and the seconds spent outside the solver to get there (counted).
fn sgd_start(
    problem: &Problem,
    alg: Algorithm,
    lambda: f64,
    t: &TableSettings,
) -> bmrm::Result<(Solver, Vec<f64>, f64, &'static str)> {
    if t.sgd_start != "bench" {
        // The library refuses its SGD start where its iterates would leave
        // the box (`Solver::set_bounds` says so); "auto" then falls back.
        let mut s = configured(alg, lambda, t);
        s.sgd_passes = t.sgd_passes;
        match solver(problem, s, t) {
            Ok(solve) => {
                let w = vec![0.0; solve.dim()];
                return Ok((solve, w, 0.0, "library SGD"));
            }
            Err(e) if t.sgd_start == "library" || t.non_negative.is_empty() => return Err(e),
            Err(_) => {}
        }
    }
    let Problem::Examples(oracle) = problem else {
        return Err(bmrm::Error::invalid_argument(
            "the bench's projected SGD start needs a max-oracle problem",
        ));
    };
    let started = Instant::now();
    let w = projected_sgd(&**oracle, lambda, &t.non_negative, t.sgd_passes, t.seed)?;
    let seconds = started.elapsed().as_secs_f64();
    let solve = solver(problem, configured(alg, lambda, t), t)?;
    Ok((solve, w, seconds, "projected SGD (bench)"))
}

/// The report's Table 2 shape for `problem` (m examples): prints the table
/// and returns it. `test_error` measures a solution on held-out data.
pub fn bundle_table(
    problem: &Problem,
    m: usize,
    t: &TableSettings,
    test_error: &dyn Fn(&[f64]) -> bmrm::Result<f64>,
) -> bmrm::Result<Vec<Vec<Cell>>> {
    let mut table: Vec<Vec<Cell>> = vec![];
    let mut start_used = String::new();
    for alg in TABLE_ALGORITHMS {
        let mut row = vec![];
        let mut reused: Option<(Solver, Vec<f64>)> = None;
        for (k, &lambda_sum) in t.lambdas.iter().enumerate() {
            let lambda = lambda_sum / m as f64;
            let (mut solve, mut w, extra) = match (t.start.as_str(), reused.take()) {
                ("reuse", Some((mut s, w))) => {
                    s.set_lambda(lambda)?;
                    (s, w, 0.0)
                }
                ("reuse", None) => {
                    debug_assert_eq!(k, 0);
                    let mut s = solver(problem, configured(alg, lambda * 10.0, t), t)?;
                    let mut w = vec![0.0; s.dim()];
                    s.run(&mut w)?; // the start of the first lambda, not counted
                    s.set_lambda(lambda)?;
                    start_used = "REUSE".into();
                    (s, w, 0.0)
                }
                _ => {
                    let (s, w, extra, how) = sgd_start(problem, alg, lambda, t)?;
                    start_used = format!("SGD ({} passes, {how})", t.sgd_passes);
                    (s, w, extra)
                }
            };
            let info = solve.run(&mut w)?;
            let history = solve.history();
            let mean_planes = history.iter().map(|r| r.num_planes as f64).sum::<f64>()
                / history.len().max(1) as f64;
            let cell = Cell {
                iterations: info.iterations,
                seconds: info.elapsed_seconds + extra,
                rel_gap: info.gap / info.primal.abs(),
                test_error: test_error(&w)?,
                qp_per_iteration: info.qp_seconds / info.iterations.max(1) as f64,
                mean_planes,
                max_planes: history.iter().map(|r| r.num_planes).max().unwrap_or(0),
                certified: info.certified,
            };
            eprintln!(
                "{:<12} lambda_sum {:>8}: {:>5} iterations {:>7.2} s ({:.1} % in the oracle, \
                 {:.1} % in the QP, start {:.2} s), F = {:.6}, gap/F = {:.2e}{}, {:?}, \
                 planes {:.0} mean / {} max, test error {:.4}",
                alg.name(),
                lambda_sum,
                cell.iterations,
                cell.seconds,
                100.0 * info.oracle_seconds / info.elapsed_seconds.max(1e-12),
                100.0 * info.qp_seconds / info.elapsed_seconds.max(1e-12),
                extra,
                info.primal,
                cell.rel_gap,
                if cell.certified {
                    ""
                } else {
                    " (not certified)"
                },
                info.exit,
                cell.mean_planes,
                cell.max_planes,
                cell.test_error
            );
            row.push(cell);
            reused = Some((solve, w));
        }
        table.push(row);
    }
    println!(
        "\nIterations, seconds (speed-up over BMRM = BMRM's seconds / these), certified gap / F \
         reached (* not certified), test error; {start_used} start"
    );
    print!("| lambda_sum |");
    for l in &t.lambdas {
        print!(" {l} |");
    }
    println!();
    println!("|---|{}", "---|".repeat(t.lambdas.len()));
    for (alg, row) in TABLE_ALGORITHMS.iter().zip(&table) {
        print!("| {} |", algorithm_label(*alg, t.parts));
        for (c, base) in row.iter().zip(&table[0]) {
            print!(
                " {}, {:.2} s ({:.2}x), {:.1e}{}, {:.3} |",
                c.iterations,
                c.seconds,
                base.seconds / c.seconds,
                c.rel_gap,
                if c.certified { "" } else { "*" },
                c.test_error
            );
        }
        println!();
    }
    println!("\nQP milliseconds per iteration, planes (mean / max)");
    print!("| lambda_sum |");
    for l in &t.lambdas {
        print!(" {l} |");
    }
    println!();
    println!("|---|{}", "---|".repeat(t.lambdas.len()));
    for (alg, row) in TABLE_ALGORITHMS.iter().zip(&table) {
        print!("| {} |", algorithm_label(*alg, t.parts));
        for c in row {
            print!(
                " {:.2} ms, {:.0} / {} |",
                1e3 * c.qp_per_iteration,
                c.mean_planes,
                c.max_planes
            );
        }
        println!();
    }
    Ok(table)
}

/// The QP's cost under the box against without it, at the same lambdas:
/// QP seconds per iteration and mean planes, constrained / unconstrained
/// (the graph problems; the plates have no box).
#[allow(dead_code)]
pub fn qp_comparison(constrained: &[Vec<Cell>], unconstrained: &[Vec<Cell>], t: &TableSettings) {
    println!(
        "\nQP ms per iteration and mean planes, with positivity / without (ratio), same lambda \
         and start"
    );
    print!("| lambda_sum |");
    for l in &t.lambdas {
        print!(" {l} |");
    }
    println!();
    println!("|---|{}", "---|".repeat(t.lambdas.len()));
    for ((alg, on), off) in TABLE_ALGORITHMS.iter().zip(constrained).zip(unconstrained) {
        print!("| {} |", algorithm_label(*alg, t.parts));
        for (a, b) in on.iter().zip(off) {
            print!(
                " {:.2} / {:.2} ms ({:.1}x), {:.0} / {:.0} planes ({:.1}x) |",
                1e3 * a.qp_per_iteration,
                1e3 * b.qp_per_iteration,
                a.qp_per_iteration / b.qp_per_iteration.max(1e-12),
                a.mean_planes,
                b.mean_planes,
                a.mean_planes / b.mean_planes.max(1e-12)
            );
        }
        println!();
    }
}

/// `F(w)` over `examples` (the mean hinge of the loss-augmented argmaxes).
fn primal(oracle: &dyn MaxOracle, w: &[f64], lambda: f64, examples: &[usize]) -> bmrm::Result<f64> {
    let mut corner = Corner::new(w.len());
    let mut risk = 0.0;
    for &i in examples {
        corner.clear();
        oracle.max_oracle(i, w, &mut corner)?;
        risk += corner.hinge(w).max(0.0);
    }
    let norm2: f64 = w.iter().map(|x| x * x).sum();
    Ok(0.5 * lambda * norm2 + risk / examples.len() as f64)
}

/// Projected SGD passes over `order` from `w`, continuing the step count
/// `t`: `w <- clip(w - eta_t (lambda w - psi_i(y^)))`, `eta_t = 1 /
/// (lambda (t0 + t))`, clipping the coordinates in `positive` at 0.
fn sgd_pass(
    oracle: &dyn MaxOracle,
    lambda: f64,
    t0: f64,
    t: &mut u64,
    order: &[usize],
    positive: &[usize],
    w: &mut [f64],
) -> bmrm::Result<()> {
    let mut corner = Corner::new(w.len());
    for &i in order {
        corner.clear();
        oracle.max_oracle(i, w, &mut corner)?;
        *t += 1;
        let eta = 1.0 / (lambda * (t0 + *t as f64));
        w.iter_mut().for_each(|x| *x *= 1.0 - eta * lambda);
        if corner.hinge(w) > 0.0 {
            corner.add_to(eta, w);
        }
        positive.iter().for_each(|&j| w[j] = w[j].max(0.0));
    }
    Ok(())
}

/// The SGD start of the P-BMRM paper (eq. 4-6) kept inside the box `w_j >=
/// 0` (j in `positive`) by projecting every step: `t0` among `10^0 ..
/// 10^6` by one pass over the first 10 % of the examples (the smallest `F`
/// on them), then `passes` passes over all in seeded orders, keeping the
/// best `w` by `F`. Feasible, so the bundle method starts from it as is.
pub fn projected_sgd(
    oracle: &dyn MaxOracle,
    lambda: f64,
    positive: &[usize],
    passes: u32,
    seed: u64,
) -> bmrm::Result<Vec<f64>> {
    let m = oracle.num_examples();
    let dim = oracle.dim();
    let sample: Vec<usize> = (0..m.div_ceil(10)).collect();
    let mut best_t0 = (f64::INFINITY, 1.0);
    for k in 0..=6 {
        let t0 = 10f64.powi(k);
        let mut w = vec![0.0; dim];
        sgd_pass(oracle, lambda, t0, &mut 0, &sample, positive, &mut w)?;
        let f = primal(oracle, &w, lambda, &sample)?;
        if f < best_t0.0 {
            best_t0 = (f, t0);
        }
    }
    let all: Vec<usize> = (0..m).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut w = vec![0.0; dim];
    let mut best = (primal(oracle, &w, lambda, &all)?, w.clone());
    let mut t = 0;
    for _ in 0..passes {
        let mut order = all.clone();
        order.shuffle(&mut rng);
        sgd_pass(oracle, lambda, best_t0.1, &mut t, &order, positive, &mut w)?;
        let f = primal(oracle, &w, lambda, &all)?;
        if f < best.0 {
            best = (f, w.clone());
        }
    }
    Ok(best.1)
}

/// Effective passes at which the BCFW table samples a run.
const CHECKPOINTS: [f64; 5] = [1.0, 2.0, 5.0, 10.0, 20.0];

/// The exact duality gap of BCFW variants after effective passes (each
/// pass's iterate, `trace_gap`), the certified gap / F at the end, seconds.
pub fn bcfw_table(problem: &Problem, m: usize, t: &TableSettings) -> bmrm::Result<()> {
    let lambda = t.bcfw_lambda / m as f64;
    let variants = [
        ("uniform-BCFW", Sampling::Uniform, StepType::FrankWolfe),
        ("gap-BCFW", Sampling::Gap, StepType::FrankWolfe),
        ("gap-BCPFW (pairwise)", Sampling::Gap, StepType::Pairwise),
        ("gap-BCAFW (away)", Sampling::Gap, StepType::Away),
        ("gap-BCFW exact steps", Sampling::Gap, StepType::Exact),
    ];
    let mut rows = vec![];
    for (name, sampling, step) in variants {
        let mut s = Settings::new(Algorithm::Bcfw, lambda);
        s.sampling = sampling;
        s.step_type = step;
        s.num_passes = t.bcfw_passes;
        s.tol_rel = 0.0;
        s.tol_abs = 0.0;
        s.trace_gap = true;
        s.num_threads = t.threads;
        s.seed = t.seed;
        let mut solve = solver(problem, s, t)?;
        let mut w = vec![0.0; solve.dim()];
        let info = solve.run(&mut w)?;
        let gaps: Vec<Option<f64>> = CHECKPOINTS
            .iter()
            .map(|&c| {
                solve
                    .history()
                    .iter()
                    .find(|r| r.effective_passes >= c)
                    .map(|r| r.exact_gap)
            })
            .collect();
        eprintln!(
            "{name:<22} {} passes, {:.2} s, F = {:.6}, certified gap {:.2e}",
            info.iterations, info.elapsed_seconds, info.primal, info.gap
        );
        rows.push((
            name,
            gaps,
            info.gap / info.primal.abs(),
            info.elapsed_seconds,
        ));
    }
    println!(
        "\nBCFW at lambda_sum = {}: exact duality gap after effective passes, the certified \
         gap / F at the end, seconds",
        t.bcfw_lambda
    );
    print!("| variant |");
    for c in CHECKPOINTS {
        print!(" {c} |");
    }
    println!(" gap / F | seconds |");
    println!("|---|{}---|---|", "---|".repeat(CHECKPOINTS.len()));
    for (name, gaps, rel, secs) in rows {
        print!("| {name} |");
        for g in gaps {
            match g {
                Some(g) => print!(" {g:.2e} |"),
                None => print!(" - |"),
            }
        }
        println!(" {rel:.2e} | {secs:.2} |");
    }
    Ok(())
}

//! The tables the structured benchmarks print: the shape of Table 2 of the
//! Prox-BMRM technical report (BMRM, Prox-BMRM and Prox-P-BMRM iterations,
//! seconds and speed-up over BMRM at several lambdas, SGD or REUSE starts)
//! and the certified gap of BCFW variants against effective passes (the
//! gap-BCFW paper's figures). Included by `#[path]` from each benchmark.

use bmrm::{Algorithm, Problem, Sampling, Settings, Solver, StepType};

/// What both tables are run with.
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

/// The report's Table 2 shape for `problem` (m examples): prints the table
/// and returns it. `test_error` measures a solution on held-out data.
pub fn bundle_table(
    problem: &Problem,
    m: usize,
    t: &TableSettings,
    test_error: &dyn Fn(&[f64]) -> bmrm::Result<f64>,
) -> bmrm::Result<Vec<Vec<Cell>>> {
    let algs = [Algorithm::Bmrm, Algorithm::ProxBmrm, Algorithm::ProxPBmrm];
    let mut table: Vec<Vec<Cell>> = vec![];
    for alg in algs {
        let mut row = vec![];
        let mut reused: Option<(Solver, Vec<f64>)> = None;
        for (k, &lambda_sum) in t.lambdas.iter().enumerate() {
            let lambda = lambda_sum / m as f64;
            let (mut solve, mut w) = match (t.start.as_str(), reused.take()) {
                ("reuse", Some((mut s, w))) => {
                    s.set_lambda(lambda)?;
                    (s, w)
                }
                ("reuse", None) => {
                    debug_assert_eq!(k, 0);
                    let mut s = solver(problem, configured(alg, lambda * 10.0, t), t)?;
                    let mut w = vec![0.0; s.dim()];
                    s.run(&mut w)?; // the start of the first lambda, not counted
                    s.set_lambda(lambda)?;
                    (s, w)
                }
                _ => {
                    let mut s = configured(alg, lambda, t);
                    s.sgd_passes = t.sgd_passes;
                    let s = solver(problem, s, t)?;
                    let w = vec![0.0; s.dim()];
                    (s, w)
                }
            };
            let info = solve.run(&mut w)?;
            let cell = Cell {
                iterations: info.iterations,
                seconds: info.elapsed_seconds,
                rel_gap: info.gap / info.primal.abs(),
                test_error: test_error(&w)?,
            };
            eprintln!(
                "{:<12} lambda_sum {:>8}: {:>5} iterations {:>7.2} s ({:.1} % in the oracle), \
                 F = {:.6}, gap/F = {:.2e}, {:?}, test error {:.4}",
                alg.name(),
                lambda_sum,
                cell.iterations,
                cell.seconds,
                100.0 * info.oracle_seconds / info.elapsed_seconds.max(1e-12),
                info.primal,
                cell.rel_gap,
                info.exit,
                cell.test_error
            );
            row.push(cell);
            reused = Some((solve, w));
        }
        table.push(row);
    }
    println!(
        "\nIterations, seconds (speed-up over BMRM = BMRM's seconds / these), certified gap / F \
         reached, test error; {} start",
        t.start.to_uppercase()
    );
    print!("| lambda_sum |");
    for l in &t.lambdas {
        print!(" {l} |");
    }
    println!();
    println!("|---|{}", "---|".repeat(t.lambdas.len()));
    for (alg, row) in algs.iter().zip(&table) {
        let name = if alg.is_partitioned() {
            format!("{} (P={})", alg.name(), t.parts)
        } else {
            alg.name().to_string()
        };
        print!("| {name} |");
        for (c, base) in row.iter().zip(&table[0]) {
            print!(
                " {}, {:.2} s ({:.2}x), {:.1e}, {:.3} |",
                c.iterations,
                c.seconds,
                base.seconds / c.seconds,
                c.rel_gap,
                c.test_error
            );
        }
        println!();
    }
    Ok(table)
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

//! The shape of Table 2 of the Prox-BMRM technical report on its
//! licence-plate segmentation problem, on plates generated in code
//! (`bmrm::models::segmentation::synthetic::licence_plates`, fixed seed):
//! iterations, seconds and speed-up over BMRM of BMRM, Prox-BMRM and
//! Prox-P-BMRM at four lambdas with the REUSE start (each lambda starts
//! from the solution at the previous, 10x larger one; the first from the
//! solution at 10x it, not counted), with the certified relative gap
//! reached, side by side; then the certified duality gap of BCFW variants
//! (uniform and gap sampling, FW, pairwise and away steps) against
//! effective passes at one lambda.
//!
//! The BCFW gap is the exact duality gap of the iterate at the end of every
//! pass (`trace_gap`: for the table only, its calls and time not counted).
//!
//!     cargo bench --bench licence_plates -- --help

use std::sync::Arc;

use bmrm::models::segmentation::synthetic::{licence_plates, PlateConfig};
use bmrm::models::Segmentation;
use bmrm::{Algorithm, MaxOracle, Problem, Sampling, Settings, Solver, StepType};
use clap::Parser;

#[derive(Parser)]
#[command(about = "Bundle methods and BCFW on synthetic licence-plate segmentation")]
struct Args {
    /// Training plates (the report: 6,788).
    #[arg(long, default_value_t = 200)]
    examples: usize,
    /// Test plates, for the column error of the solutions.
    #[arg(long, default_value_t = 200)]
    test_examples: usize,
    /// Character labels (plus the background).
    #[arg(long, default_value_t = 10)]
    chars: usize,
    /// Pixels per column.
    #[arg(long, default_value_t = 16)]
    rows: usize,
    /// Pixel noise.
    #[arg(long, default_value_t = 1.0)]
    noise: f64,
    /// Summed-risk lambdas as in the report (mean-risk lambda = summed / m), decreasing.
    #[arg(long, value_delimiter = ',', default_value = "1000,100,10,1")]
    lambdas: Vec<f64>,
    /// Relative tolerance (the report's eps).
    #[arg(long, default_value_t = 0.01)]
    tol_rel: f64,
    /// Parts of Prox-P-BMRM.
    #[arg(long, default_value_t = 16)]
    parts: usize,
    /// Summed-risk lambda of the BCFW runs.
    #[arg(long, default_value_t = 10.0)]
    bcfw_lambda: f64,
    /// Passes of every BCFW run.
    #[arg(long, default_value_t = 20)]
    bcfw_passes: u64,
    /// Threads (0 = all cores).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    #[arg(long, default_value_t = 27)]
    seed: u64,
    /// Iteration cap per lambda.
    #[arg(long, default_value_t = 5_000)]
    max_iterations: u64,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

struct Cell {
    iterations: u64,
    seconds: f64,
    rel_gap: f64,
    test_error: f64,
}

/// Effective passes at which the BCFW table samples a run.
const CHECKPOINTS: [f64; 5] = [1.0, 2.0, 5.0, 10.0, 20.0];

fn main() -> bmrm::Result<()> {
    let args = Args::parse();
    let config = PlateConfig {
        chars: args.chars,
        rows: args.rows,
        noise: args.noise,
        ..PlateConfig::default()
    };
    let plates = licence_plates(args.examples + args.test_examples, args.seed, &config)?;
    let (train, test) = plates.examples.split_at(args.examples);
    let model = Arc::new(Segmentation::new(plates.d, plates.widths.clone(), train)?);
    let test = Segmentation::new(plates.d, plates.widths.clone(), test)?;
    let m = args.examples;
    println!(
        "licence plates: m = {m} ({} columns), n = {}, K = {} labels (widths {}..{}), d = {}, \
         tol_rel = {}, P = {}, threads = {}, REUSE start",
        model.total_columns(),
        model.dim(),
        model.num_labels(),
        plates.widths.iter().min().unwrap_or(&0),
        plates.widths.iter().max().unwrap_or(&0),
        plates.d,
        args.tol_rel,
        args.parts,
        if args.threads == 0 {
            rayon::current_num_threads()
        } else {
            args.threads
        }
    );
    let algs = [Algorithm::Bmrm, Algorithm::ProxBmrm, Algorithm::ProxPBmrm];
    let mut table: Vec<Vec<Cell>> = vec![];
    for alg in algs {
        let mut s = Settings::new(alg, args.lambdas[0] * 10.0 / m as f64);
        s.tol_rel = args.tol_rel;
        if alg.is_partitioned() {
            s.num_parts = args.parts;
        }
        s.num_threads = args.threads;
        s.max_iterations = args.max_iterations;
        let mut solver = Solver::new(Problem::Examples(model.clone()), s)?;
        let mut w = vec![0.0; solver.dim()];
        solver.run(&mut w)?; // the start for the first lambda, not counted
        let mut row = vec![];
        for &lambda_sum in &args.lambdas {
            solver.set_lambda(lambda_sum / m as f64)?;
            let info = solver.run(&mut w)?;
            let cell = Cell {
                iterations: info.iterations,
                seconds: info.elapsed_seconds,
                rel_gap: info.gap / info.primal.abs(),
                test_error: test.column_error(&w)?,
            };
            eprintln!(
                "{:<12} lambda_sum {:>6}: {:>5} iterations {:>7.2} s ({:.1} % in the oracle), \
                 F = {:.6}, gap/F = {:.2e}, {:?}, test column error {:.4}",
                alg.name(),
                lambda_sum,
                cell.iterations,
                cell.seconds,
                100.0 * info.oracle_seconds / info.elapsed_seconds,
                info.primal,
                cell.rel_gap,
                info.exit,
                cell.test_error
            );
            row.push(cell);
        }
        table.push(row);
    }
    println!(
        "\nIterations, seconds (speed-up over BMRM = BMRM's seconds / these), certified gap / F \
         reached, test column error"
    );
    print!("| lambda_sum |");
    for l in &args.lambdas {
        print!(" {l} |");
    }
    println!();
    println!("|---|{}", "---|".repeat(args.lambdas.len()));
    for (alg, row) in algs.iter().zip(&table) {
        let name = if alg.is_partitioned() {
            format!("{} (P={})", alg.name(), args.parts)
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
    bcfw_table(&args, &model)
}

fn bcfw_table(args: &Args, model: &Arc<Segmentation>) -> bmrm::Result<()> {
    let m = args.examples;
    let lambda = args.bcfw_lambda / m as f64;
    let variants = [
        ("uniform-BCFW", Sampling::Uniform, StepType::FrankWolfe),
        ("gap-BCFW", Sampling::Gap, StepType::FrankWolfe),
        ("gap-BCPFW (pairwise)", Sampling::Gap, StepType::Pairwise),
        ("gap-BCAFW (away)", Sampling::Gap, StepType::Away),
    ];
    let mut rows = vec![];
    for (name, sampling, step) in variants {
        let mut s = Settings::new(Algorithm::Bcfw, lambda);
        s.sampling = sampling;
        s.step_type = step;
        s.num_passes = args.bcfw_passes;
        s.tol_rel = 0.0;
        s.tol_abs = 0.0;
        s.trace_gap = true;
        s.num_threads = args.threads;
        s.seed = args.seed;
        let mut solver = Solver::new(Problem::Examples(model.clone()), s)?;
        let mut w = vec![0.0; solver.dim()];
        let info = solver.run(&mut w)?;
        let gaps: Vec<Option<f64>> = CHECKPOINTS
            .iter()
            .map(|&c| {
                solver
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
        args.bcfw_lambda
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

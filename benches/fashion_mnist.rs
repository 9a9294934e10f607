//! The shape of the Prox-BMRM / P-BMRM papers' tables (docs/benchmarks.md)
//! on a linear multiclass SO-SVM on Fashion-MNIST (n = 7,850 with the bias,
//! m = 60,000): iterations and seconds to `tol_rel` for BMRM, Prox-BMRM,
//! P-BMRM and Prox-P-BMRM at several lambdas with the REUSE start (each
//! lambda starts from the solution at the previous, 10x larger lambda; the
//! first from the solution at 10x the first lambda, not counted), each
//! algorithm's figures as a ratio to BMRM's, and the share of wall time spent
//! outside the oracle.
//!
//! Prints the table, writes it as CSV (`--csv`) and as an SVG plot
//! (`--plot`: iterations and seconds to `tol_rel` against lambda_sum, log-log,
//! one line per algorithm).
//!
//! This is a benchmark program, not a test:
//!     cargo bench --bench fashion_mnist -- --help
//! Needs `apt-get install dataset-fashion-mnist`.

use std::io::Write;
use std::sync::Arc;

use bmrm::models::Multiclass;
use bmrm::plot;
use bmrm::{Algorithm, Problem, Settings, Solver};
use clap::Parser;

#[derive(Parser)]
#[command(about = "Iterations and seconds to tol_rel of the bundle methods on Fashion-MNIST")]
struct Args {
    /// Directory of the IDX files.
    #[arg(long, default_value = "/usr/share/datasets/fashion-mnist")]
    dir: String,
    /// Training examples used (the first m of the 60,000).
    #[arg(long, default_value_t = 60_000)]
    examples: usize,
    /// Summed-risk lambdas as in the papers (mean-risk lambda = summed / m), decreasing.
    #[arg(long, value_delimiter = ',', default_value = "1000,100,10,1")]
    lambdas: Vec<f64>,
    /// Relative tolerance (the papers' eps).
    #[arg(long, default_value_t = 0.01)]
    tol_rel: f64,
    /// Parts of P-BMRM and Prox-P-BMRM.
    #[arg(long, default_value_t = 16)]
    parts: usize,
    /// Threads (0 = all cores).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Algorithms to run (bmrm, prox, p, proxp).
    #[arg(long, value_delimiter = ',', default_value = "bmrm,prox,p,proxp")]
    algorithms: Vec<String>,
    /// Remove a plane whose dual weight stayed 0 for this many iterations
    /// (the solver's `clean_after`; 0 keeps its default).
    #[arg(long, default_value_t = 0)]
    clean_after: u32,
    /// Most planes kept, aggregated when full (the solver's `buffer_size`;
    /// 0 keeps its default).
    #[arg(long, default_value_t = 0)]
    buffer_size: usize,
    /// Keep the cutting planes between lambdas too (the papers reuse w only).
    #[arg(long)]
    reuse_planes: bool,
    /// Iteration cap per lambda.
    #[arg(long, default_value_t = 20_000)]
    max_iterations: u64,
    /// CSV output.
    #[arg(long, default_value = "bench-out/fashion_mnist_bundle.csv")]
    csv: String,
    /// SVG plot output.
    #[arg(long, default_value = "bench-out/fashion_mnist_bundle.svg")]
    plot: String,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

fn algorithm(name: &str) -> Algorithm {
    match name {
        "bmrm" => Algorithm::Bmrm,
        "prox" => Algorithm::ProxBmrm,
        "p" => Algorithm::PBmrm,
        "proxp" => Algorithm::ProxPBmrm,
        other => panic!("unknown algorithm {other}"),
    }
}

struct Cell {
    iterations: u64,
    seconds: f64,
    outside: f64,
    /// The share of the wall time in the inner QP solves (part of `outside`).
    qp: f64,
    primal: f64,
    exit: bmrm::Exit,
}

fn main() -> bmrm::Result<()> {
    let args = Args::parse();
    let (x, d, y) = bmrm::data::idx::fashion_mnist(&args.dir, true, Some(args.examples))?;
    let m = y.len();
    let model = Arc::new(Multiclass::new(x, d, y, 10, true)?);
    println!(
        "Fashion-MNIST: m = {m}, n = {}, tol_rel = {}, P = {}, threads = {}, REUSE start{}",
        bmrm::MaxOracle::dim(model.as_ref()),
        args.tol_rel,
        args.parts,
        if args.threads == 0 {
            rayon::current_num_threads()
        } else {
            args.threads
        },
        if args.reuse_planes { " + planes" } else { "" }
    );
    let algs: Vec<Algorithm> = args.algorithms.iter().map(|a| algorithm(a)).collect();
    let mut table: Vec<Vec<Cell>> = vec![];
    for &alg in &algs {
        let mut s = Settings::new(alg, args.lambdas[0] * 10.0 / m as f64);
        s.tol_rel = args.tol_rel;
        if alg.is_partitioned() {
            s.num_parts = args.parts;
        }
        s.num_threads = args.threads;
        s.max_iterations = args.max_iterations;
        s.reuse_planes = args.reuse_planes;
        if args.buffer_size > 0 {
            s.buffer_size = args.buffer_size;
        }
        if args.clean_after > 0 {
            s.clean_after = args.clean_after;
        }
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
                outside: 1.0 - info.oracle_seconds / info.elapsed_seconds,
                qp: info.qp_seconds / info.elapsed_seconds,
                primal: info.primal,
                exit: info.exit,
            };
            eprintln!(
                "{:<12} lambda_sum {:>8}: {:>6} iterations {:>9.2} s, {:.1} % outside the oracle ({:.1} % in the QP), F = {:.6}, {:?}",
                alg.name(),
                lambda_sum,
                cell.iterations,
                cell.seconds,
                100.0 * cell.outside,
                100.0 * cell.qp,
                cell.primal,
                cell.exit
            );
            row.push(cell);
        }
        table.push(row);
    }
    print_table(&args, &algs, &table);
    write_csv(&args, m, &algs, &table)
        .map_err(|e| bmrm::Error::invalid_argument(format!("{}: {e}", args.csv)))?;
    write_plot(&args, m, &algs, &table).map_err(bmrm::Error::invalid_argument)?;
    Ok(())
}

fn write_plot(
    args: &Args,
    m: usize,
    algs: &[Algorithm],
    table: &[Vec<Cell>],
) -> Result<(), String> {
    let path = std::path::Path::new(&args.plot);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let series = |f: &dyn Fn(&Cell) -> f64| -> Vec<plot::Series> {
        algs.iter()
            .zip(table)
            .map(|(a, row)| plot::Series {
                name: if a.is_partitioned() {
                    format!("{} (P={})", a.name(), args.parts)
                } else {
                    a.name().to_string()
                },
                points: args
                    .lambdas
                    .iter()
                    .zip(row)
                    .map(|(&l, c)| (l, f(c)))
                    .collect(),
            })
            .collect()
    };
    let panel = |title: &str, y: &str, s| plot::Panel {
        title: title.into(),
        x_label: "lambda_sum = m lambda".into(),
        y_label: y.into(),
        log_x: true,
        log_y: true,
        series: s,
    };
    plot::write_svg(
        path,
        &format!(
            "Fashion-MNIST multiclass SVM, m = {m}, tol_rel = {}, REUSE start",
            args.tol_rel
        ),
        &[
            panel(
                "iterations to tol_rel",
                "iterations",
                series(&|c| c.iterations as f64),
            ),
            panel("seconds to tol_rel", "seconds", series(&|c| c.seconds)),
        ],
        640,
        480,
    )?;
    println!("wrote {}", args.plot);
    Ok(())
}

fn print_table(args: &Args, algs: &[Algorithm], table: &[Vec<Cell>]) {
    let bmrm = algs.iter().position(|&a| a == Algorithm::Bmrm);
    println!("\niterations to tol_rel (ratio to BMRM) | seconds (ratio) | time outside the oracle");
    print!("{:<12}", "lambda_sum");
    for l in &args.lambdas {
        print!(" | {:>34}", l);
    }
    println!();
    for (a, row) in algs.iter().zip(table) {
        print!("{:<12}", a.name());
        for (j, c) in row.iter().enumerate() {
            let (ri, rs) = match bmrm {
                Some(b) => (
                    c.iterations as f64 / table[b][j].iterations as f64,
                    c.seconds / table[b][j].seconds,
                ),
                None => (f64::NAN, f64::NAN),
            };
            let mark = if matches!(c.exit, bmrm::Exit::ConvergedRel | bmrm::Exit::ConvergedAbs) {
                ""
            } else {
                "*"
            };
            print!(
                " | {:>5}{mark} ({:>4.2}) {:>7.1}s ({:>4.2}) {:>4.1}%",
                c.iterations,
                ri,
                c.seconds,
                rs,
                100.0 * c.outside
            );
        }
        println!();
    }
    println!("(* = stopped before tol_rel)");
}

fn write_csv(
    args: &Args,
    m: usize,
    algs: &[Algorithm],
    table: &[Vec<Cell>],
) -> std::io::Result<()> {
    if let Some(dir) = std::path::Path::new(&args.csv).parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::File::create(&args.csv)?;
    writeln!(
        f,
        "algorithm,lambda_sum,lambda_mean,iterations,seconds,outside_oracle,primal,exit"
    )?;
    for (a, row) in algs.iter().zip(table) {
        for (c, l) in row.iter().zip(&args.lambdas) {
            writeln!(
                f,
                "{},{},{},{},{},{},{},{:?}",
                a.name(),
                l,
                l / m as f64,
                c.iterations,
                c.seconds,
                c.outside,
                c.primal,
                c.exit
            )?;
        }
    }
    println!("wrote {}", args.csv);
    Ok(())
}

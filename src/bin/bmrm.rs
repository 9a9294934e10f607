//! The `bmrm` command-line tool. `bmrm demo` trains a multiclass SO-SVM on
//! data generated in code with every bundle method and prints them side by
//! side.

use std::sync::Arc;
use std::time::Instant;

use bmrm::models::{synthetic, Multiclass};
use bmrm::{Algorithm, Problem, Settings, Solver};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "bmrm",
    version,
    about = "Bundle methods for regularised risk minimisation"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Train a linear multiclass SVM (Crammer-Singer) on generated data with
    /// BMRM, Prox-BMRM, P-BMRM and Prox-P-BMRM and compare them.
    Demo {
        /// Training examples.
        #[arg(long, default_value_t = 20_000)]
        examples: usize,
        /// Features per example.
        #[arg(long, default_value_t = 64)]
        features: usize,
        /// Classes.
        #[arg(long, default_value_t = 10)]
        classes: usize,
        /// Regularisation constant of the mean risk (LIBLINEAR's C = 1/(m lambda)).
        #[arg(long, default_value_t = 1e-3)]
        lambda: f64,
        /// Relative tolerance of the stopping rule.
        #[arg(long, default_value_t = 1e-3)]
        tol_rel: f64,
        /// Parts of the P-BMRM variants.
        #[arg(long, default_value_t = 16)]
        parts: usize,
        /// Threads (0 = all cores).
        #[arg(long, default_value_t = 0)]
        threads: usize,
        /// Seed of the generated data.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo {
            examples,
            features,
            classes,
            lambda,
            tol_rel,
            parts,
            threads,
            seed,
        } => demo(
            examples, features, classes, lambda, tol_rel, parts, threads, seed,
        ),
    };
    if let Err(e) = result {
        eprintln!("bmrm: {e}");
        std::process::exit(1);
    }
}

#[allow(clippy::too_many_arguments)]
fn demo(
    m: usize,
    d: usize,
    k: usize,
    lambda: f64,
    tol_rel: f64,
    parts: usize,
    threads: usize,
    seed: u64,
) -> bmrm::Result<()> {
    let (x, y) = synthetic::gaussian_multiclass(m + m / 4, d, k, 4.0, seed);
    let (train_x, test_x) = x.split_at(m * d);
    let (train_y, test_y) = y.split_at(m);
    let train = Arc::new(Multiclass::new(
        train_x.to_vec(),
        d,
        train_y.to_vec(),
        k,
        true,
    )?);
    let test = Multiclass::new(test_x.to_vec(), d, test_y.to_vec(), k, true)?;
    println!(
        "multiclass SVM on generated data: {m} training / {} test examples, {d} features, {k} classes, \
         lambda = {lambda:e} (C = {:.3e}), tol_rel = {tol_rel:e}",
        test_y.len(),
        1.0 / (m as f64 * lambda)
    );
    println!(
        "{:<12} {:>6} {:>9} {:>9} {:>14} {:>11} {:>10} {:>10}",
        "algorithm", "iters", "seconds", "oracle %", "primal", "rel. gap", "train err", "test err"
    );
    for alg in [
        Algorithm::Bmrm,
        Algorithm::ProxBmrm,
        Algorithm::PBmrm,
        Algorithm::ProxPBmrm,
    ] {
        let mut s = Settings::new(alg, lambda);
        s.tol_rel = tol_rel;
        s.num_threads = threads;
        s.num_parts = parts;
        let mut solver = Solver::new(Problem::Examples(train.clone()), s)?;
        let mut w = vec![0.0; solver.dim()];
        let t = Instant::now();
        let info = solver.run(&mut w)?;
        let secs = t.elapsed().as_secs_f64();
        println!(
            "{:<12} {:>6} {:>9.3} {:>8.1}% {:>14.8} {:>11.2e} {:>9.2}% {:>9.2}%",
            alg.name(),
            info.iterations,
            secs,
            100.0 * info.oracle_seconds / info.elapsed_seconds,
            info.primal,
            info.gap / info.primal.abs(),
            100.0 * train.error_rate(&w),
            100.0 * test.error_rate(&w)
        );
    }
    Ok(())
}

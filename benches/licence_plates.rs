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

#[path = "common/structured.rs"]
mod structured;

use std::sync::Arc;

use bmrm::models::segmentation::synthetic::{licence_plates, PlateConfig};
use bmrm::models::Segmentation;
use bmrm::{MaxOracle, Problem};
use clap::Parser;
use structured::{bcfw_table, bundle_table, TableSettings};

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
    let settings = TableSettings {
        lambdas: args.lambdas.clone(),
        tol_rel: args.tol_rel,
        parts: args.parts,
        threads: args.threads,
        max_iterations: args.max_iterations,
        start: "reuse".into(),
        sgd_passes: 0,
        bcfw_lambda: args.bcfw_lambda,
        bcfw_passes: args.bcfw_passes,
        seed: args.seed,
        non_negative: vec![],
    };
    let problem = Problem::Examples(model.clone());
    bundle_table(&problem, m, &settings, &|w| test.column_error(w))?;
    bcfw_table(&problem, m, &settings)
}

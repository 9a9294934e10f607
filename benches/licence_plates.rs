//! The shape of Table 2 of the Prox-BMRM technical report on its
//! licence-plate segmentation problem, on plates generated in code
//! (`bmrm::models::segmentation::synthetic::licence_plates`, fixed seed):
//! iterations, seconds and speed-up over BMRM of BMRM, Prox-BMRM and
//! Prox-P-BMRM at four lambdas with the SGD start and the REUSE start (each
//! lambda starts from the solution at the previous, 10x larger one; the
//! first from the solution at 10x it, not counted), with the certified
//! relative gap reached, the test column error and each run's QP seconds
//! per iteration and planes, side by side; `--scale papers` runs the
//! report's size (m = 6,788, n = 4,059); then the certified duality gap of BCFW variants
//! (uniform and gap sampling, FW, pairwise and away steps) against
//! effective passes at one lambda.
//!
//! The BCFW gap is the exact duality gap of the iterate at the end of every
//! pass (`trace_gap`: for the table only, its calls and time not counted).
//!
//!     cargo bench --bench licence_plates -- --help
//!     cargo bench --bench licence_plates -- --scale papers

#[path = "common/structured.rs"]
mod structured;

use std::sync::Arc;

use bmrm::models::segmentation::synthetic::{licence_plates, PlateConfig};
use bmrm::models::Segmentation;
use bmrm::{MaxOracle, Problem};
use clap::Parser;
use structured::{bcfw_table, bundle_table, TableSettings};

/// The problem's size: a quick check, or the report's.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Scale {
    /// 200 plates of 10 characters (3-7 columns of 16 pixels).
    Quick,
    /// The report's size: m = 6,788 training plates, n = 4,059 weights (36
    /// characters of 3 columns of 24 pixels: 24 (1 + 36 x 3) + 37^2 + 2 x 37
    /// = 4,059), 1,000 test plates, lambda_sum 1e5 / 1e4 / 1e3 / 1e2, 10
    /// SGD passes.
    Papers,
}

#[derive(Parser)]
#[command(about = "Bundle methods and BCFW on synthetic licence-plate segmentation")]
struct Args {
    /// Problem size and defaults: quick (the default) or papers.
    #[arg(long, value_enum, default_value = "quick")]
    scale: Scale,
    /// Training plates (default: quick 200, papers 6,788 as the report).
    #[arg(long)]
    examples: Option<usize>,
    /// Test plates, for the column error of the solutions (default: quick
    /// 200, papers 1,000).
    #[arg(long)]
    test_examples: Option<usize>,
    /// Character labels (plus the background; default: quick 10, papers 36).
    #[arg(long)]
    chars: Option<usize>,
    /// Pixels per column (default: quick 16, papers 24).
    #[arg(long)]
    rows: Option<usize>,
    /// Pixel noise.
    #[arg(long, default_value_t = 1.0)]
    noise: f64,
    /// Summed-risk lambdas as in the report (mean-risk lambda = summed / m),
    /// decreasing (default: quick 1000,100,10,1; papers the report's
    /// 1e5,1e4,1e3,1e2).
    #[arg(long, value_delimiter = ',')]
    lambdas: Option<Vec<f64>>,
    /// Starts: "sgd" and "reuse" (each lambda from the previous solution).
    #[arg(long, value_delimiter = ',', default_value = "sgd,reuse")]
    starts: Vec<String>,
    /// Whose SGD start: "auto", "library" or "bench" (projected SGD in the
    /// bench; no box here, so all agree in what they compute).
    #[arg(long, default_value = "auto")]
    sgd_start: String,
    /// SGD passes of the SGD start (default: quick 2, papers 10 as the report).
    #[arg(long)]
    sgd_passes: Option<u32>,
    /// Relative tolerance (the report's eps).
    #[arg(long, default_value_t = 0.01)]
    tol_rel: f64,
    /// Parts of Prox-P-BMRM.
    #[arg(long, default_value_t = 16)]
    parts: usize,
    /// Summed-risk lambda of the BCFW runs.
    #[arg(long, default_value_t = 10.0)]
    bcfw_lambda: f64,
    /// Passes of every BCFW run (0: none; default: quick 20, papers 0).
    #[arg(long)]
    bcfw_passes: Option<u64>,
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
    let papers = args.scale == Scale::Papers;
    let config = if papers {
        PlateConfig {
            chars: args.chars.unwrap_or(36),
            min_width: 3,
            max_width: 3,
            rows: args.rows.unwrap_or(24),
            noise: args.noise,
            ..PlateConfig::default()
        }
    } else {
        PlateConfig {
            chars: args.chars.unwrap_or(10),
            rows: args.rows.unwrap_or(16),
            noise: args.noise,
            ..PlateConfig::default()
        }
    };
    let m = args.examples.unwrap_or(if papers { 6_788 } else { 200 });
    let m_test = args
        .test_examples
        .unwrap_or(if papers { 1_000 } else { 200 });
    let lambdas = args.lambdas.clone().unwrap_or(if papers {
        vec![1e5, 1e4, 1e3, 1e2]
    } else {
        vec![1000.0, 100.0, 10.0, 1.0]
    });
    let plates = licence_plates(m + m_test, args.seed, &config)?;
    let (train, test) = plates.examples.split_at(m);
    let model = Arc::new(Segmentation::new(plates.d, plates.widths.clone(), train)?);
    let test = Segmentation::new(plates.d, plates.widths.clone(), test)?;
    println!(
        "licence plates: m = {m} ({} columns), {m_test} test plates, n = {}, K = {} labels \
         (widths {}..{}), d = {}, tol_rel = {}, P = {}, threads = {}",
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
    let problem = Problem::Examples(model.clone());
    let mut last = None;
    for start in &args.starts {
        if start != "sgd" && start != "reuse" {
            return Err(bmrm::Error::invalid_argument(format!(
                "--starts: {start} is neither sgd nor reuse"
            )));
        }
        let settings = TableSettings {
            lambdas: lambdas.clone(),
            tol_rel: args.tol_rel,
            parts: args.parts,
            threads: args.threads,
            max_iterations: args.max_iterations,
            start: start.clone(),
            sgd_passes: args.sgd_passes.unwrap_or(if papers { 10 } else { 2 }),
            sgd_start: args.sgd_start.clone(),
            bcfw_lambda: args.bcfw_lambda,
            bcfw_passes: args.bcfw_passes.unwrap_or(if papers { 0 } else { 20 }),
            seed: args.seed,
            non_negative: vec![],
        };
        bundle_table(&problem, m, &settings, &|w| test.column_error(w))?;
        last = Some(settings);
    }
    match last {
        Some(settings) if settings.bcfw_passes > 0 => bcfw_table(&problem, m, &settings),
        _ => Ok(()),
    }
}

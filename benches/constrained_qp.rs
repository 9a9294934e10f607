//! The reduced problem's cost under a box against without one: on the
//! facial-landmark problem generated in code
//! (`bmrm::models::graph::synthetic::landmarks`), BMRM, Prox-BMRM and
//! Prox-P-BMRM from `w = 0` at each lambda, once with the problem's
//! positivity coordinates kept `>= 0` and once unconstrained, side by
//! side: iterations, QP seconds per iteration, the mean and largest plane
//! count, and the constrained run's ratios to the unconstrained one.
//!
//!     cargo bench --bench constrained_qp -- --help

use std::sync::Arc;

use bmrm::models::graph::{synthetic, EngineKind, GraphModel};
use bmrm::{Algorithm, Info, Iteration, MaxOracle, Problem, Settings, Solver};
use clap::Parser;

#[derive(Parser)]
#[command(about = "QP time and plane count of the bundle methods with and without a box")]
struct Args {
    /// Training examples.
    #[arg(long, default_value_t = 100)]
    examples: usize,
    /// Candidate positions per side of a part's grid.
    #[arg(long, default_value_t = 9)]
    side: u32,
    /// Appearance features per position.
    #[arg(long, default_value_t = 8)]
    features: usize,
    /// Summed-risk lambdas (mean-risk lambda = summed / m).
    #[arg(long, value_delimiter = ',', default_value = "100,10")]
    lambdas: Vec<f64>,
    /// Methods: bmrm, prox-bmrm, prox-p-bmrm.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "bmrm,prox-bmrm,prox-p-bmrm"
    )]
    algorithms: Vec<String>,
    /// Parts of Prox-P-BMRM.
    #[arg(long, default_value_t = 16)]
    parts: usize,
    /// Relative tolerance.
    #[arg(long, default_value_t = 0.01)]
    tol_rel: f64,
    /// Iteration cap per run.
    #[arg(long, default_value_t = 1_000)]
    max_iterations: u64,
    /// Time limit per run, seconds.
    #[arg(long, default_value_t = 60.0)]
    time_limit: f64,
    /// Runs of each configuration; the least QP time of them is printed
    /// (the iterates are the same in every run; the least time is the one
    /// other processes disturbed least).
    #[arg(long, default_value_t = 1)]
    repeats: usize,
    /// Only the constrained runs (for profiling).
    #[arg(long)]
    box_only: bool,
    /// Threads (0 = all cores).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    #[arg(long, default_value_t = 27)]
    seed: u64,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// One run's figures.
struct Run {
    info: Info,
    mean_planes: f64,
    max_planes: u64,
}

impl Run {
    fn qp_per_iteration(&self) -> f64 {
        self.info.qp_seconds / self.info.iterations.max(1) as f64
    }
}

fn run(
    model: &Arc<GraphModel>,
    alg: Algorithm,
    lambda: f64,
    positive: Option<&[usize]>,
    args: &Args,
) -> bmrm::Result<Run> {
    let dim = model.dim();
    let mut info = Info::default();
    let mut least_qp = f64::INFINITY;
    let mut solver = None;
    for _ in 0..args.repeats.max(1) {
        let mut s = Settings::new(alg, lambda);
        s.tol_rel = args.tol_rel;
        s.max_iterations = args.max_iterations;
        s.time_limit_seconds = args.time_limit;
        s.num_threads = args.threads;
        if alg.is_partitioned() {
            s.num_parts = args.parts;
        }
        let mut fresh = Solver::new(Problem::Examples(model.clone()), s)?;
        if let Some(positive) = positive {
            let mut lo = vec![f64::NEG_INFINITY; dim];
            positive.iter().for_each(|&j| lo[j] = 0.0);
            fresh.set_bounds(lo, vec![f64::INFINITY; dim])?;
        }
        let mut w = vec![0.0; dim];
        info = fresh.run(&mut w)?;
        least_qp = least_qp.min(info.qp_seconds);
        solver = Some(fresh);
    }
    info.qp_seconds = least_qp;
    let solver = solver.expect("at least one run");
    let history: &[Iteration] = solver.history();
    let mean_planes =
        history.iter().map(|h| h.num_planes as f64).sum::<f64>() / history.len().max(1) as f64;
    let max_planes = history.iter().map(|h| h.num_planes).max().unwrap_or(0);
    Ok(Run {
        info,
        mean_planes,
        max_planes,
    })
}

fn main() -> bmrm::Result<()> {
    let args = Args::parse();
    let m = args.examples;
    let examples = synthetic::landmarks(m, args.side, args.features, args.seed);
    let model = Arc::new(GraphModel::new(
        examples,
        false,
        EngineKind::DistanceTransform.into(),
    )?);
    let positive = model.positivity_coordinates();
    println!(
        "landmarks: m = {m}, n = {}, {} weights kept >= 0, tol_rel = {}, from w = 0, {} thread(s)",
        model.dim(),
        positive.len(),
        args.tol_rel,
        args.threads
    );
    println!(
        "| method | lambda_sum | iterations box / free | QP ms per iteration box / free (ratio) | \
         mean planes box / free (ratio) | largest box / free | exit box / free |"
    );
    println!("|---|---|---|---|---|---|---|");
    for name in &args.algorithms {
        let alg = match name.as_str() {
            "bmrm" => Algorithm::Bmrm,
            "prox-bmrm" => Algorithm::ProxBmrm,
            "p-bmrm" => Algorithm::PBmrm,
            "prox-p-bmrm" => Algorithm::ProxPBmrm,
            other => {
                return Err(bmrm::Error::invalid_argument(format!(
                    "unknown algorithm {other} (bmrm, prox-bmrm, p-bmrm, prox-p-bmrm)"
                )))
            }
        };
        for &lambda_sum in &args.lambdas {
            let lambda = lambda_sum / m as f64;
            let boxed = run(&model, alg, lambda, Some(&positive), &args)?;
            if args.box_only {
                println!(
                    "| {} | {lambda_sum} | {} | {:.2} | {:.0} | {} | {:?} |",
                    alg.name(),
                    boxed.info.iterations,
                    1e3 * boxed.qp_per_iteration(),
                    boxed.mean_planes,
                    boxed.max_planes,
                    boxed.info.exit
                );
            }
            if args.box_only {
                continue;
            }
            let free = run(&model, alg, lambda, None, &args)?;
            let label = if alg.is_partitioned() {
                format!("{} P={}", alg.name(), args.parts)
            } else {
                alg.name().to_string()
            };
            println!(
                "| {label} | {lambda_sum} | {} / {} | {:.2} / {:.2} ({:.2}x) | {:.0} / {:.0} ({:.2}x) | {} / {} | {:?} / {:?} |",
                boxed.info.iterations,
                free.info.iterations,
                1e3 * boxed.qp_per_iteration(),
                1e3 * free.qp_per_iteration(),
                boxed.qp_per_iteration() / free.qp_per_iteration().max(1e-12),
                boxed.mean_planes,
                free.mean_planes,
                boxed.mean_planes / free.mean_planes.max(1e-12),
                boxed.max_planes,
                free.max_planes,
                boxed.info.exit,
                free.info.exit,
            );
        }
    }
    Ok(())
}

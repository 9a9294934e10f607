//! `bmrm-mpi`: the distributed bundle solvers from the command line (feature
//! `mpi`), to be started by `mpirun`:
//!
//! ```sh
//! mpirun -np 4 bmrm-mpi train --dir /usr/share/datasets/fashion-mnist -a p-bmrm --lambda-sum 100
//! ```
//!
//! Every rank reads the data and keeps only its examples; rank 0 prints the
//! summary (and writes `w`, one number per line, with `--output`).

use std::path::PathBuf;
use std::time::Duration;

use bmrm::distributed::{self, Data, Options};
use bmrm::{Algorithm, Settings};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "bmrm-mpi",
    version,
    about = "Bundle methods distributed over MPI (start with mpirun)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Train a linear multiclass SVM (Crammer-Singer) with the examples
    /// spread over the ranks: Fashion-MNIST IDX files, or generated data.
    Train(TrainArgs),
}

#[derive(clap::Args, Clone)]
pub struct TrainArgs {
    /// Directory of the IDX files (train-images-idx3-ubyte[.gz], ...).
    #[arg(long, default_value = "/usr/share/datasets/fashion-mnist")]
    dir: PathBuf,
    /// Use generated data (Gaussian classes) instead of the IDX files.
    #[arg(long)]
    generated: bool,
    /// Training examples (the first m of the files; for generated data the count).
    #[arg(long)]
    examples: Option<usize>,
    /// Features and classes of generated data.
    #[arg(long, default_value_t = 64)]
    features: usize,
    #[arg(long, default_value_t = 10)]
    classes: usize,
    /// bmrm, prox-bmrm, p-bmrm, prox-p-bmrm or cutting-plane.
    #[arg(short, long, default_value = "p-bmrm")]
    algorithm: String,
    /// Lambda of the mean risk (LIBLINEAR's C = 1/(m lambda)).
    #[arg(long, conflicts_with = "lambda_sum")]
    lambda: Option<f64>,
    /// Lambda of the summed risk, as in the papers (lambda = lambda_sum / m).
    #[arg(long)]
    lambda_sum: Option<f64>,
    /// Cutting-plane models (P-BMRM) or evaluation blocks (0: 16 for P-BMRM,
    /// one per rank otherwise).
    #[arg(long, default_value_t = 0)]
    parts: usize,
    #[arg(long, default_value_t = 1e-2)]
    tol_rel: f64,
    #[arg(long, default_value_t = 0)]
    max_iterations: u64,
    /// Threads per rank (0: all cores).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Seconds rank 0 waits for a rank's answer before it ends the run.
    #[arg(long, default_value_t = 600.0)]
    timeout: f64,
    /// Write w here (rank 0), one number per line.
    #[arg(long)]
    output: Option<PathBuf>,
    /// Seed of generated data.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

fn algorithm(name: &str) -> Result<Algorithm, String> {
    Ok(match name {
        "bmrm" => Algorithm::Bmrm,
        "prox-bmrm" => Algorithm::ProxBmrm,
        "p-bmrm" => Algorithm::PBmrm,
        "prox-p-bmrm" => Algorithm::ProxPBmrm,
        "cutting-plane" => Algorithm::CuttingPlane,
        other => {
            return Err(format!(
                "unknown algorithm {other} (the distributed solvers are the bundle methods)"
            ))
        }
    })
}

fn main() {
    let cli = Cli::parse();
    let Command::Train(args) = cli.command;
    let Some(universe) = mpi::initialize() else {
        eprintln!("bmrm-mpi: MPI is already initialised");
        std::process::exit(2);
    };
    let world = universe.world();
    let code = match train(&world, &args) {
        Ok(()) => 0,
        Err(e) => {
            use mpi::topology::Communicator;
            if world.rank() == 0 {
                eprintln!("bmrm-mpi: {e}");
            }
            if distributed::ranks_lost(&e) {
                // A rank that did not answer cannot finalise: leaving
                // without MPI_Finalize makes mpirun end every rank.
                std::process::exit(1);
            }
            1
        }
    };
    drop(world);
    drop(universe);
    std::process::exit(code);
}

/// The command `mpirun -np R bmrm-mpi train ...` (also what `bmrm train
/// --distributed` runs).
fn train(world: &mpi::topology::SimpleCommunicator, a: &TrainArgs) -> bmrm::Result<()> {
    use mpi::topology::Communicator;
    let bad = bmrm::Error::invalid_argument;
    let alg = algorithm(&a.algorithm).map_err(bad)?;
    let data = if a.generated {
        Data::Generated {
            examples: a.examples.unwrap_or(20_000),
            features: a.features,
            classes: a.classes,
            seed: a.seed,
        }
    } else {
        Data::Idx {
            dir: a.dir.clone(),
            max_examples: a.examples,
        }
    };
    // With --lambda-sum, lambda = lambda_sum / m is set once the data are read.
    let mut settings = Settings::new(alg, a.lambda.unwrap_or(1.0));
    settings.num_parts = a.parts;
    settings.tol_rel = a.tol_rel;
    settings.max_iterations = a.max_iterations;
    settings.num_threads = a.threads;
    if a.lambda.is_none() && a.lambda_sum.is_none() {
        return Err(bad("set --lambda or --lambda-sum".into()));
    }
    let options = Options {
        reply_timeout: (a.timeout > 0.0 && a.timeout.is_finite())
            .then(|| Duration::from_secs_f64(a.timeout)),
        command_timeout: None,
    };
    let t = distributed::train_multiclass(world, &data, settings.clone(), a.lambda_sum, options)?;
    settings.lambda = a
        .lambda_sum
        .map_or(settings.lambda, |ls| ls / t.examples as f64);
    if world.rank() == 0 {
        let i = &t.info;
        println!(
            "{} over {} ranks: m = {}, n = {}, P = {}, lambda = {:e}, {} iterations, {:?}",
            alg.name(),
            t.ranks,
            t.examples,
            t.dim,
            t.parts,
            settings.lambda,
            i.iterations,
            i.exit
        );
        println!(
            "primal {:.8}, lower bound {:.8}, relative gap {:.2e}; {:.2} s ({:.2} s in the \
             distributed evaluation, {:.2} s in the QP); rank 0: {:.2} s on its own parts, {} \
             bytes sent, {} received",
            i.primal,
            i.lower_bound,
            i.gap / i.primal.abs(),
            t.run_seconds,
            i.oracle_seconds,
            i.qp_seconds,
            t.stats.local_seconds,
            t.stats.bytes_sent,
            t.stats.bytes_received
        );
        if let Some(path) = &a.output {
            let text: String = t.w.iter().map(|x| format!("{x:e}\n")).collect();
            std::fs::write(path, text).map_err(|e| {
                bmrm::Error::invalid_argument(format!("cannot write {}: {e}", path.display()))
            })?;
        }
    }
    Ok(())
}

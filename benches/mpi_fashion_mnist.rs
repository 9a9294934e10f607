//! The distributed P-BMRM (feature `mpi`) on Fashion-MNIST with 1, 2 and 4
//! MPI ranks side by side: iterations, total seconds, the distributed
//! evaluation's seconds per iteration (what the engine sees as its oracle:
//! sending w, every rank's parts, gathering), the slowest rank's own
//! evaluation per iteration, and the bytes per iteration; then a projection
//! of the communication per iteration for larger clusters.
//!
//! On one machine with 2 cores the ranks share the cores, so the figures
//! show the overhead of the distribution, not a speed-up.
//!
//!     apt-get install dataset-fashion-mnist libopenmpi-dev openmpi-bin libclang-dev
//!     cargo bench --features mpi --bench mpi_fashion_mnist
//!     cargo bench --features mpi --bench mpi_fashion_mnist -- --ranks 1,2 --examples 20000

use std::process::Command;

use bmrm::distributed::{self, Data, Options};
use bmrm::{Algorithm, Settings};
use clap::Parser;
use mpi::collective::CommunicatorCollectives;
use mpi::topology::Communicator;

#[derive(Parser, Clone)]
#[command(about = "Distributed P-BMRM on Fashion-MNIST with 1, 2, 4 MPI ranks")]
struct Args {
    /// Directory of the IDX files.
    #[arg(long, default_value = "/usr/share/datasets/fashion-mnist")]
    dir: String,
    /// Training examples used (the first m of the 60,000).
    #[arg(long, default_value_t = 60_000)]
    examples: usize,
    /// Rank counts to compare.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    ranks: Vec<usize>,
    /// Summed-risk lambda as in the papers (lambda = lambda_sum / m).
    #[arg(long, default_value_t = 1000.0)]
    lambda_sum: f64,
    #[arg(long, default_value_t = 0.01)]
    tol_rel: f64,
    /// Cutting-plane models.
    #[arg(long, default_value_t = 16)]
    parts: usize,
    /// Cores of the machine, shared by the ranks (threads per rank = cores / ranks, at least 1).
    #[arg(long, default_value_t = 2)]
    cores: usize,
    /// Run as one rank of the MPI job (set by the driver).
    #[arg(long, hide = true)]
    child: bool,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

fn settings(a: &Args, ranks: usize) -> Settings {
    let mut s = Settings::new(Algorithm::PBmrm, 1.0);
    s.tol_rel = a.tol_rel;
    s.num_parts = a.parts;
    s.num_threads = (a.cores / ranks).max(1);
    s
}

fn main() {
    let args = Args::parse();
    if args.child {
        child(&args);
    } else {
        driver(&args);
    }
}

/// One rank of the job: trains, then rank 0 prints one RESULT line with the
/// slowest rank's own evaluation time.
fn child(a: &Args) {
    let universe = mpi::initialize().expect("MPI initialises");
    let world = universe.world();
    let ranks = world.size() as usize;
    let data = Data::Idx {
        dir: a.dir.clone().into(),
        max_examples: Some(a.examples),
    };
    let t = distributed::train_multiclass(
        &world,
        &data,
        settings(a, ranks),
        Some(a.lambda_sum),
        Options::default(),
    )
    .unwrap_or_else(|e| {
        eprintln!("rank {}: {e}", world.rank());
        std::process::exit(1)
    });
    let mut slowest = 0.0f64;
    world.all_reduce_into(
        &t.stats.local_seconds,
        &mut slowest,
        mpi::collective::SystemOperation::max(),
    );
    if world.rank() == 0 {
        let i = &t.info;
        let it = i.iterations.max(1) as f64;
        let bytes = (t.stats.bytes_sent + t.stats.bytes_received) as f64
            / t.stats.evaluations.max(1) as f64;
        println!(
            "RESULT ranks={} threads={} iterations={} total={:.3} oracle_per_iter={:.5} \
             slowest_local_per_iter={:.5} rank0_local_per_iter={:.5} rank0_wait_per_iter={:.5} qp={:.3} bytes_per_iter={:.0} primal={:.10} w={:016x} \
             m={} n={} parts={} load={:.2}",
            ranks,
            (a.cores / ranks).max(1),
            i.iterations,
            t.run_seconds,
            i.oracle_seconds / it,
            slowest / t.stats.evaluations.max(1) as f64,
            t.stats.local_seconds / t.stats.evaluations.max(1) as f64,
            t.stats.wait_seconds / t.stats.evaluations.max(1) as f64,
            i.qp_seconds,
            bytes,
            i.primal,
            hash(&t.w),
            t.examples,
            t.dim,
            t.parts,
            t.load_seconds
        );
    }
}

fn hash(w: &[f64]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for x in w {
        for b in x.to_bits().to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x100000001b3);
        }
    }
    h
}

fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
        .unwrap_or("?")
}

fn driver(a: &Args) {
    let exe = std::env::current_exe().expect("the benchmark's path");
    println!(
        "Distributed P-BMRM on Fashion-MNIST: m = {}, P = {}, lambda_sum = {}, tol_rel = {}, \
         {} cores shared by all ranks (mpirun --oversubscribe on one machine)",
        a.examples, a.parts, a.lambda_sum, a.tol_rel, a.cores
    );
    let mut rows = Vec::new();
    for &r in &a.ranks {
        let out = Command::new("mpirun")
            // Open MPI binds each of up to 2 ranks to one core by default,
            // which would put a rank's threads on one core.
            .args([
                "--allow-run-as-root",
                "--oversubscribe",
                "--bind-to",
                "none",
                "-np",
            ])
            .arg(r.to_string())
            .env(
                "OMPI_MCA_btl_vader_single_copy_mechanism",
                std::env::var("OMPI_MCA_btl_vader_single_copy_mechanism")
                    .unwrap_or_else(|_| "none".into()),
            )
            .arg(&exe)
            .args(["--child", "--dir", &a.dir])
            .args(["--examples", &a.examples.to_string()])
            .args(["--lambda-sum", &a.lambda_sum.to_string()])
            .args(["--tol-rel", &a.tol_rel.to_string()])
            .args(["--parts", &a.parts.to_string()])
            .args(["--cores", &a.cores.to_string()])
            .output()
            .expect("cannot start mpirun (apt-get install openmpi-bin)");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        match text.lines().find(|l| l.starts_with("RESULT ")) {
            Some(l) => {
                eprintln!("{l}");
                rows.push(l.to_string());
            }
            None => {
                eprintln!(
                    "{r} ranks failed:\n{text}\n{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                std::process::exit(1);
            }
        }
    }
    println!(
        "\n{:>5} {:>8} {:>6} {:>9} {:>16} {:>18} {:>12} {:>14} {:>17}",
        "ranks",
        "threads",
        "iters",
        "total s",
        "eval ms/iter",
        "slowest rank ms",
        "MB/iter",
        "primal",
        "w (bits hash)"
    );
    let base: f64 = field(&rows[0], "total").parse().unwrap_or(f64::NAN);
    for l in &rows {
        let total: f64 = field(l, "total").parse().unwrap_or(f64::NAN);
        let per: f64 = field(l, "oracle_per_iter").parse().unwrap_or(f64::NAN);
        let slow: f64 = field(l, "slowest_local_per_iter")
            .parse()
            .unwrap_or(f64::NAN);
        let bytes: f64 = field(l, "bytes_per_iter").parse().unwrap_or(f64::NAN);
        println!(
            "{:>5} {:>8} {:>6} {:>9} {:>16.1} {:>18.1} {:>12.3} {:>14} {:>17}",
            field(l, "ranks"),
            field(l, "threads"),
            field(l, "iterations"),
            format!("{total:.1} ({:.2})", total / base),
            1e3 * per,
            1e3 * slow,
            bytes / 1e6,
            field(l, "primal"),
            field(l, "w"),
        );
    }
    let same = rows.iter().all(|l| field(l, "w") == field(&rows[0], "w"));
    println!(
        "\nSame w to the bit and the same iterations for every rank count: {same}. On {} cores \
         the ranks share the cores: the figures show the overhead of the distribution (sending \
         w, gathering the subgradients, idle waiting), not a speed-up.",
        a.cores
    );

    // Communication per iteration through rank 0, for larger clusters.
    let n: f64 = field(&rows[0], "n").parse().unwrap_or(7850.0);
    let one_eval: f64 = field(&rows[0], "slowest_local_per_iter")
        .parse::<f64>()
        .unwrap_or(f64::NAN)
        * (a.cores as f64);
    println!(
        "\nProjected communication per iteration at rank 0 (n = {n}, 8-byte doubles): w to each \
         other rank, (n + 2) x 8 bytes; from every part its risk and dense subgradient, (n + 1) \
         x 8 bytes. Compute: the measured evaluation of all m examples on one core ({:.0} ms) \
         divided over the ranks' cores.",
        1e3 * one_eval
    );
    println!(
        "{:>6} {:>6} {:>10} {:>12} {:>12} {:>12} {:>16}",
        "ranks",
        "parts",
        "MB out",
        "MB in",
        "ms @10Gb/s",
        "ms @100Gb/s",
        "compute ms (1 core/rank)"
    );
    for &r in &[4usize, 16, 64, 256, 1024] {
        let p = a.parts.max(r) as f64;
        let out = (r as f64 - 1.0) * (n + 2.0) * 8.0;
        let inn = p * (n + 1.0) * 8.0;
        let bytes = out + inn;
        println!(
            "{:>6} {:>6} {:>10.2} {:>12.2} {:>12.2} {:>12.3} {:>16.2}",
            r,
            p,
            out / 1e6,
            inn / 1e6,
            1e3 * bytes / 1.25e9,
            1e3 * bytes / 12.5e9,
            1e3 * one_eval / r as f64
        );
    }
    println!(
        "(parts = max(P, ranks): one part per rank at least. Rank 0's link carries all of it; \
         the time grows linearly in the ranks while the compute shrinks as 1/ranks, so beyond \
         the crossing point more ranks cost more than they save, unless the subgradients are \
         summed per rank (BMRM: one vector per rank) or sent sparse.)"
    );
}

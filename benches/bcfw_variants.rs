//! BCFW variants side by side: for each problem and variant,
//! oracle calls / n to a certified gap (exact passes included), seconds,
//! wall time / time inside the oracle, and the certified gap at the end;
//! ratios are to gap-BCFW+cache. Runs are repeated; oracle counts are
//! deterministic (the variants here use no timing rule), seconds are given
//! as the median with the spread (min-max) of the repeats.
//!
//! Problems: the OCR words (chain, OCR-large split, lambda 0.01 and 0.001,
//! stop at gap 0.01), Fashion-MNIST (multiclass with bias, the first
//! `--fashion` training images, lambda 1e-3, stop at tol_rel) and CoNLL-2000
//! chunking (chain on its standard training split, lambda 0.01, tol_rel).
//!
//!     cargo bench --bench bcfw_variants -- --help

use std::sync::Arc;

use bmrm::data::conll::read_conll;
use bmrm::data::ocr::{read_ocr, OcrSplit};
use bmrm::models::Multiclass;
use bmrm::{Algorithm, MaxOracle, Problem, Sampling, Settings, Solver, StepType};
use clap::Parser;

#[derive(Parser)]
#[command(about = "BCFW variants side by side: oracle calls, seconds, wall/oracle, gap")]
struct Args {
    #[arg(long, default_value = "../shared/data/ocr_letters.tsv.gz")]
    ocr: String,
    #[arg(long, default_value = "../shared/data/conll2000_chunk_test.tsv.gz")]
    conll: String,
    #[arg(long, default_value = "/usr/share/datasets/fashion-mnist")]
    fashion_dir: String,
    /// Fashion-MNIST training images used (0: skip the problem).
    #[arg(long, default_value_t = 10_000)]
    fashion: usize,
    /// Problems to run (ocr0.01, ocr0.001, fashion, conll).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "ocr0.01,ocr0.001,fashion,conll"
    )]
    problems: Vec<String>,
    /// Only the variants whose names contain one of these.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Repeats of every run (seconds: median and spread).
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// Threads (1 for the wall/oracle target; 0 = all cores).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Most passes of a run.
    #[arg(long, default_value_t = 1000)]
    max_passes: u64,
    /// Seconds allowed per run.
    #[arg(long, default_value_t = 300.0)]
    time_limit: f64,
    /// tol_rel of the Fashion-MNIST and CoNLL runs.
    #[arg(long, default_value_t = 1e-2)]
    tol_rel: f64,
    /// Multi-plane: most approximate passes after an oracle pass.
    #[arg(long, default_value_t = 10)]
    mp_passes: u32,
    /// An exact pass as soon as the gap estimates sum below this times the
    /// gap tolerance (`early_exact_factor`; 0, the library's default: off).
    #[arg(long, default_value_t = 0.0)]
    early_exact: f64,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

struct Variant {
    name: &'static str,
    sampling: Sampling,
    step: StepType,
    cache: bool,
    multi_plane: bool,
    /// Mini-batch size (0: off).
    batch: u32,
}

const VARIANTS: [Variant; 9] = [
    Variant {
        name: "uniform-BCFW",
        sampling: Sampling::Uniform,
        step: StepType::FrankWolfe,
        cache: false,
        multi_plane: false,
        batch: 0,
    },
    Variant {
        name: "gap-BCFW (default)",
        sampling: Sampling::Gap,
        step: StepType::FrankWolfe,
        cache: false,
        multi_plane: false,
        batch: 0,
    },
    Variant {
        name: "gap-BCFW+cache",
        sampling: Sampling::Gap,
        step: StepType::FrankWolfe,
        cache: true,
        multi_plane: false,
        batch: 0,
    },
    Variant {
        name: "gap-BCPFW+cache",
        sampling: Sampling::Gap,
        step: StepType::Pairwise,
        cache: true,
        multi_plane: false,
        batch: 0,
    },
    Variant {
        name: "multi-plane FW",
        sampling: Sampling::Gap,
        step: StepType::FrankWolfe,
        cache: false,
        multi_plane: true,
        batch: 0,
    },
    Variant {
        name: "multi-plane PFW",
        sampling: Sampling::Gap,
        step: StepType::Pairwise,
        cache: false,
        multi_plane: true,
        batch: 0,
    },
    Variant {
        name: "multi-plane PFW+cache",
        sampling: Sampling::Gap,
        step: StepType::Pairwise,
        cache: true,
        multi_plane: true,
        batch: 0,
    },
    Variant {
        name: "mini-batch 64",
        sampling: Sampling::Gap,
        step: StepType::FrankWolfe,
        cache: false,
        multi_plane: false,
        batch: 64,
    },
    Variant {
        name: "mini-batch 64 + MP PFW",
        sampling: Sampling::Gap,
        step: StepType::Pairwise,
        cache: false,
        multi_plane: true,
        batch: 64,
    },
];

struct Case {
    name: String,
    model: Arc<dyn MaxOracle>,
    lambda: f64,
    tol_abs: f64,
    tol_rel: f64,
}

struct Row {
    name: &'static str,
    effective: f64,
    seconds: Vec<f64>,
    wall_per_oracle: Vec<f64>,
    gap: f64,
    converged: bool,
}

fn main() -> bmrm::Result<()> {
    let args = Args::parse();
    let mut cases = Vec::new();
    for p in &args.problems {
        match p.as_str() {
            "ocr0.01" | "ocr0.001" => {
                let words = read_ocr(&args.ocr)?;
                let (train, _) = words.split(OcrSplit::Large);
                cases.push(Case {
                    name: format!("OCR-large chain, lambda {}", &p[3..]),
                    model: Arc::new(train.chain()?),
                    lambda: p[3..].parse().expect("a lambda"),
                    tol_abs: 0.01,
                    tol_rel: 0.0,
                });
            }
            "fashion" if args.fashion > 0 => {
                let (x, d, y) =
                    bmrm::data::idx::fashion_mnist(&args.fashion_dir, true, Some(args.fashion))?;
                cases.push(Case {
                    name: format!("Fashion-MNIST {} images, lambda 1e-3", y.len()),
                    model: Arc::new(Multiclass::new(x, d, y, 10, true)?),
                    lambda: 1e-3,
                    tol_abs: 0.0,
                    tol_rel: args.tol_rel,
                });
            }
            "conll" => {
                let data = read_conll(&args.conll)?;
                let (train, _) = data.standard_split();
                cases.push(Case {
                    name: format!(
                        "CoNLL-2000 chain ({} sentences), lambda 0.01",
                        train.num_sentences()
                    ),
                    model: Arc::new(train.chain(true)?),
                    lambda: 0.01,
                    tol_abs: 0.0,
                    tol_rel: args.tol_rel,
                });
            }
            "fashion" => {}
            other => eprintln!("unknown problem {other}, skipped"),
        }
    }
    for case in &cases {
        let rows: Vec<Row> = VARIANTS
            .iter()
            .filter(|v| {
                args.only.is_empty() || args.only.iter().any(|o| v.name.contains(o.as_str()))
            })
            .map(|v| run(&args, case, v))
            .collect::<bmrm::Result<_>>()?;
        print_table(case, &rows);
    }
    Ok(())
}

fn run(args: &Args, case: &Case, v: &Variant) -> bmrm::Result<Row> {
    let mut row = Row {
        name: v.name,
        effective: 0.0,
        seconds: vec![],
        wall_per_oracle: vec![],
        gap: f64::NAN,
        converged: false,
    };
    for _ in 0..args.repeats.max(1) {
        let mut s = Settings::new(Algorithm::Bcfw, case.lambda);
        s.sampling = v.sampling;
        s.step_type = v.step;
        s.use_cache = v.cache;
        s.multi_plane = v.multi_plane;
        s.mini_batch = v.batch;
        s.mp_approx_passes = args.mp_passes;
        s.early_exact_factor = args.early_exact;
        s.tol_abs = case.tol_abs;
        s.tol_rel = case.tol_rel;
        s.max_iterations = args.max_passes;
        s.time_limit_seconds = args.time_limit;
        s.num_threads = args.threads;
        let mut solver = Solver::new(Problem::Examples(case.model.clone()), s)?;
        let mut w = vec![0.0; solver.dim()];
        let info = solver.run(&mut w)?;
        let stats = solver.bcfw().and_then(|b| b.stats()).expect("BCFW ran");
        row.effective = stats.effective_passes;
        row.seconds.push(info.elapsed_seconds);
        row.wall_per_oracle
            .push(info.elapsed_seconds / info.oracle_seconds);
        row.gap = info.gap;
        row.converged = matches!(
            info.exit,
            bmrm::Exit::ConvergedAbs | bmrm::Exit::ConvergedRel
        );
        eprintln!(
            "{:<45} {:<22} {:>7.1} oracle passes {:>8.2} s wall/oracle {:>5.2} gap {:.2e} {:?} ({} approximate passes, {} dense blocks, {:.0} MB)",
            case.name,
            v.name,
            stats.effective_passes,
            info.elapsed_seconds,
            info.elapsed_seconds / info.oracle_seconds,
            info.gap,
            info.exit,
            stats.approx_passes,
            stats.dense_blocks,
            stats.memory_bytes as f64 / 1e6
        );
    }
    Ok(row)
}

/// The median and the spread (max - min) / median.
fn median_spread(x: &[f64]) -> (f64, f64) {
    let mut v = x.to_vec();
    v.sort_by(f64::total_cmp);
    let med = v[v.len() / 2];
    (med, (v[v.len() - 1] - v[0]) / med)
}

fn print_table(case: &Case, rows: &[Row]) {
    let target = if case.tol_abs > 0.0 {
        format!("gap {}", case.tol_abs)
    } else {
        format!("tol_rel {}", case.tol_rel)
    };
    println!(
        "\n{}: to a certified {target} (ratios to gap-BCFW+cache)",
        case.name
    );
    println!(
        "{:<22} | {:>16} | {:>22} | {:>16} | {:>9} | conv",
        "variant", "oracle calls / n", "seconds (spread)", "wall/oracle", "gap"
    );
    let reference = rows.iter().find(|r| r.name == "gap-BCFW+cache");
    for r in rows {
        let (sec, spread) = median_spread(&r.seconds);
        let (ratio, _) = median_spread(&r.wall_per_oracle);
        let (re, rs) = reference.map_or((f64::NAN, f64::NAN), |b| {
            (r.effective / b.effective, sec / median_spread(&b.seconds).0)
        });
        println!(
            "{:<22} | {:>7.1} ({:>5.2}) | {:>7.2} ({:>4.2}) ±{:>4.0}% | {:>16.2} | {:>9.2e} | {}",
            r.name,
            r.effective,
            re,
            sec,
            rs,
            50.0 * spread,
            ratio,
            r.gap,
            if r.converged { "yes" } else { "no" }
        );
    }
}

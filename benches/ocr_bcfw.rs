//! The comparison of Figure 3 of "Minding the gaps for block Frank-Wolfe
//! optimization of structured SVMs" on the OCR handwritten words (OCR-large:
//! train on folds 1..9, 6,251 words; test on fold 0): the duality gap against
//! effective passes and against seconds for the 8 combinations of uniform or
//! gap sampling, FW or pairwise steps, and with or without the cache, at
//! three lambdas. The chain model is the standard one (d = 4,082; Viterbi).
//!
//! The gap is the exact duality gap of the iterate at the end of every pass
//! (`trace_gap`: computed for the figure only; its oracle calls and time are
//! not counted). Effective passes are oracle calls / n, exact gap passes of
//! the algorithm (every `gap_check` passes) included.
//!
//! Also prints, for every run, the cost of a pass against the pure oracle
//! time inside it (target: at most 1.2x), and the test error at the end.
//!
//!     cargo bench --bench ocr_bcfw -- --help
//! Needs ../shared/data/ocr_letters.tsv.gz (or --data).

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use bmrm::data::ocr::{read_ocr, OcrSplit};
use bmrm::models::Chain;
use bmrm::{Algorithm, Corner, MaxOracle, Problem, Sampling, Settings, Solver, StepType};
use clap::Parser;

#[derive(Parser)]
#[command(about = "BCFW variants on the OCR words: gap against passes and seconds")]
struct Args {
    /// The OCR letters file.
    #[arg(long, default_value = "../shared/data/ocr_letters.tsv.gz")]
    data: String,
    /// Lambdas (mean-risk convention, as in the BCFW papers).
    #[arg(long, value_delimiter = ',', default_value = "0.01,0.001,0.1")]
    lambdas: Vec<f64>,
    /// Most passes per run.
    #[arg(long, default_value_t = 60)]
    passes: u64,
    /// Stop a run once its exact gap is below this (0: run all passes).
    #[arg(long, default_value_t = 0.0)]
    stop_gap: f64,
    /// The gap whose passes and seconds the table reports.
    #[arg(long, default_value_t = 0.01)]
    target_gap: f64,
    /// Threads for the exact passes (0 = all cores).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Only the variants whose names contain one of these (e.g. uniform-BCFW,gap;
    /// `=gap-BCFW`: that name exactly).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Do not compute the exact gap after every pass (timing runs).
    #[arg(long)]
    no_trace: bool,
    /// CSV output: one row per pass of every run.
    #[arg(long, default_value = "bench-out/ocr_bcfw.csv")]
    csv: String,
    /// Also run the multi-plane variants (gap sampling, FW and pairwise).
    #[arg(long)]
    mp: bool,
    /// Multi-plane: most approximate passes after each oracle pass.
    #[arg(long, default_value_t = 10)]
    mp_passes: u32,
    /// Multi-plane: stop the approximate passes by measured time.
    #[arg(long)]
    mp_timed: bool,
    /// Multi-plane: passes a corner may stay unused before it is dropped.
    #[arg(long, default_value_t = 10)]
    mp_inactive: u32,
    /// Multi-plane: approximate steps on a block right after its oracle call.
    #[arg(long, default_value_t = 0)]
    mp_block_steps: u32,
    /// Mini-batch size of every run (0: one block at a time).
    #[arg(long, default_value_t = 0)]
    mini_batch: u32,
    /// An exact gap pass every this many passes.
    #[arg(long, default_value_t = 10)]
    gap_check: u32,
    /// Block iterates: `factored` (chain blocks, what the model gives),
    /// `general` (the model seen through its corners: sparse-vector
    /// blocks) or `both` (each variant with both, one after the other).
    #[arg(long, default_value = "factored")]
    blocks: String,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// The chain model through its corners alone (no chain rows): BCFW keeps
/// general sparse-vector blocks, as for any other oracle.
struct Corners(Arc<Chain>);

impl MaxOracle for Corners {
    fn dim(&self) -> usize {
        self.0.dim()
    }
    fn num_examples(&self) -> usize {
        self.0.num_examples()
    }
    fn max_oracle(&self, example: usize, w: &[f64], out: &mut Corner) -> bmrm::Result<()> {
        self.0.max_oracle(example, w, out)
    }
}

struct Variant {
    sampling: Sampling,
    step: StepType,
    cache: bool,
    mp: bool,
}

impl Variant {
    fn name(&self) -> String {
        format!(
            "{}{}{}{}",
            match self.sampling {
                Sampling::Gap => "gap",
                Sampling::Uniform => "uniform",
                Sampling::Permutation => "perm",
                Sampling::MaxGap => "maxgap",
            },
            match self.step {
                StepType::FrankWolfe => "-BCFW",
                StepType::Pairwise => "-BCPFW",
                StepType::Away => "-BCAFW",
                StepType::All => "-all",
                StepType::Exact => "-exact",
            },
            if self.cache { "+cache" } else { "" },
            if self.mp { "+mp" } else { "" }
        )
    }
}

/// Effective passes at which the gap-against-passes table samples a run.
const CHECKPOINTS: [f64; 6] = [2.5, 5.0, 10.0, 20.0, 40.0, 80.0];

struct Outcome {
    name: String,
    lambda: f64,
    /// The exact gap at the first pass at or after each checkpoint.
    gaps_at: Vec<Option<f64>>,
    /// (effective passes, seconds) when the gap first went below the target.
    reached: Option<(f64, f64)>,
    final_gap: f64,
    passes: u64,
    effective: f64,
    seconds: f64,
    oracle_seconds: f64,
    test_error: f64,
}

fn main() -> bmrm::Result<()> {
    let args = Args::parse();
    let words = read_ocr(&args.data)?;
    let (train, test) = words.split(OcrSplit::Large);
    let model = Arc::new(train.chain()?);
    let test_model = test.chain()?;
    println!(
        "OCR-large: {} train words ({} letters), {} test words, d = {}, threads = {}",
        train.num_words(),
        train.num_letters(),
        test.num_words(),
        bmrm::MaxOracle::dim(model.as_ref()),
        if args.threads == 0 {
            rayon::current_num_threads()
        } else {
            args.threads
        }
    );
    let mut variants = Vec::new();
    for sampling in [Sampling::Uniform, Sampling::Gap] {
        for step in [StepType::FrankWolfe, StepType::Pairwise] {
            for (cache, mp) in [(false, false), (true, false), (false, true), (true, true)] {
                if mp && (!args.mp || sampling != Sampling::Gap) {
                    continue;
                }
                let v = Variant {
                    sampling,
                    step,
                    cache,
                    mp,
                };
                let picked = |o: &String| match o.strip_prefix('=') {
                    Some(exact) => v.name() == exact,
                    None => v.name().contains(o.as_str()),
                };
                if args.only.is_empty() || args.only.iter().any(picked) {
                    variants.push(v);
                }
            }
        }
    }
    if let Some(dir) = std::path::Path::new(&args.csv).parent() {
        std::fs::create_dir_all(dir).map_err(|e| io_error(&args.csv, e))?;
    }
    let mut csv = std::fs::File::create(&args.csv).map_err(|e| io_error(&args.csv, e))?;
    writeln!(
        csv,
        "lambda,variant,pass,effective_passes,seconds,exact_gap,primal,dual"
    )
    .map_err(|e| io_error(&args.csv, e))?;
    let mut outcomes = Vec::new();
    let kinds: &[bool] = match args.blocks.as_str() {
        "factored" => &[false],
        "general" => &[true],
        "both" => &[false, true],
        other => {
            return Err(bmrm::Error::invalid_argument(format!(
                "--blocks {other}: use factored, general or both"
            )))
        }
    };
    let corners: Arc<dyn MaxOracle> = Arc::new(Corners(model.clone()));
    for &lambda in &args.lambdas {
        for (v, &general) in variants
            .iter()
            .flat_map(|v| kinds.iter().map(move |g| (v, g)))
        {
            let mut s = Settings::new(Algorithm::Bcfw, lambda);
            s.sampling = v.sampling;
            s.step_type = v.step;
            s.use_cache = v.cache;
            s.multi_plane = v.mp;
            s.gap_check = args.gap_check;
            s.mini_batch = args.mini_batch;
            s.mp_approx_passes = args.mp_passes;
            s.mp_timed = args.mp_timed;
            s.mp_inactive_passes = args.mp_inactive;
            s.mp_block_steps = args.mp_block_steps;
            s.num_passes = args.passes;
            s.tol_rel = 0.0;
            s.tol_abs = args.stop_gap;
            s.trace_gap = !args.no_trace;
            s.num_threads = args.threads;
            s.seed = args.seed;
            let name = format!("{}{}", v.name(), if general { "/vec" } else { "" });
            let oracle: Arc<dyn MaxOracle> = if general {
                corners.clone()
            } else {
                model.clone()
            };
            let mut solver = Solver::new(Problem::Examples(oracle), s)?;
            let mut w = vec![0.0; solver.dim()];
            let t = Instant::now();
            let info = solver.run(&mut w)?;
            let wall = t.elapsed().as_secs_f64();
            let stats = solver.bcfw().and_then(|b| b.stats()).expect("BCFW ran");
            let mut reached = None;
            for r in solver.history() {
                writeln!(
                    csv,
                    "{lambda},{},{},{},{},{},{},{}",
                    name,
                    r.iteration,
                    r.effective_passes,
                    r.elapsed_seconds,
                    r.exact_gap,
                    r.primal,
                    r.lower_bound
                )
                .map_err(|e| io_error(&args.csv, e))?;
                if reached.is_none() && r.exact_gap <= args.target_gap {
                    reached = Some((r.effective_passes, r.elapsed_seconds));
                }
            }
            let gaps_at = CHECKPOINTS
                .iter()
                .map(|&c| {
                    solver
                        .history()
                        .iter()
                        .find(|r| r.effective_passes >= c)
                        .map(|r| r.exact_gap)
                })
                .collect();
            let out = Outcome {
                name: name.clone(),
                lambda,
                gaps_at,
                reached,
                final_gap: stats.last_exact_gap,
                passes: stats.passes,
                effective: stats.effective_passes,
                seconds: info.elapsed_seconds,
                oracle_seconds: info.oracle_seconds,
                test_error: test_model.hamming_error(&w),
            };
            eprintln!(
                "lambda {lambda:<6} {:<18} {:>4} passes ({:>6.1} effective) {:>7.2} s \
                 (wall {wall:.2} s with the traced gaps), gap {:.2e}, pass/oracle {:.2}, test error {:.4}, \
                 {} approximate passes, {:.1} corners per block",
                out.name,
                out.passes,
                out.effective,
                out.seconds,
                out.final_gap,
                out.seconds / out.oracle_seconds,
                out.test_error,
                stats.approx_passes,
                stats.corners as f64 / train.num_words() as f64
            );
            outcomes.push(out);
        }
    }
    print_table(&args, &outcomes);
    println!("\nper-pass rows written to {}", args.csv);
    Ok(())
}

fn print_table(args: &Args, outcomes: &[Outcome]) {
    for &lambda in &args.lambdas {
        let rows: Vec<&Outcome> = outcomes.iter().filter(|o| o.lambda == lambda).collect();
        println!("\nlambda = {lambda}: exact gap after effective passes");
        print!("{:<18}", "variant");
        for c in CHECKPOINTS {
            print!(" | {c:>8}");
        }
        println!();
        for o in &rows {
            print!("{:<18}", o.name);
            for g in &o.gaps_at {
                match g {
                    Some(g) => print!(" | {g:>8.1e}"),
                    None => print!(" | {:>8}", "-"),
                }
            }
            println!();
        }
        let uniform = rows
            .iter()
            .find(|o| o.name == "uniform-BCFW")
            .and_then(|o| o.reached);
        println!(
            "\nlambda = {lambda}: effective passes and seconds to gap {} (ratio to uniform-BCFW), \
             final gap, pass cost / oracle time, test error",
            args.target_gap
        );
        println!(
            "{:<18} | {:>22} | {:>22} | {:>9} | {:>9} | {:>6}",
            "variant", "effective passes", "seconds", "gap", "pass/orc", "error"
        );
        for o in rows {
            let (p, s) = match o.reached {
                Some((p, s)) => {
                    let (rp, rs) =
                        uniform.map_or((f64::NAN, f64::NAN), |(up, us)| (p / up, s / us));
                    (
                        format!("{p:>7.1} ({rp:>4.2})"),
                        format!("{s:>7.2} ({rs:>4.2})"),
                    )
                }
                None => (
                    format!("> {:>5.1}", o.effective),
                    format!("> {:>5.1}", o.seconds),
                ),
            };
            println!(
                "{:<18} | {:>22} | {:>22} | {:>9.2e} | {:>9.2} | {:>6.4}",
                o.name,
                p,
                s,
                o.final_gap,
                o.seconds / o.oracle_seconds,
                o.test_error
            );
        }
    }
}

fn io_error(path: &str, e: std::io::Error) -> bmrm::Error {
    bmrm::Error::invalid_argument(format!("{path}: {e}"))
}

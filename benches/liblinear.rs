//! Side by side with LIBLINEAR's Crammer-Singer solver (`-s 4`) on
//! Fashion-MNIST (all 60,000 training images by default; `--examples` for
//! fewer): the wall time each of our solvers and LIBLINEAR need to reach the
//! same primal value, within `--within` (default 0.1 %) of the optimum,
//! printed as ratios to LIBLINEAR with the absolute figures beside them.
//! Every run is repeated `--repeats` times: the median and the spread
//! (fastest and slowest) are printed.
//!
//! How the primal comparison is done:
//! - Both solve the same problem. LIBLINEAR minimises `1/2 ||w||^2 + C sum_i
//!   xi_i` with `xi_i = max_k (w_k x_i + [k != y_i]) - w_{y_i} x_i`; divided
//!   by `C m` that is our `F(w) = lambda/2 ||w||^2 + (1/m) sum_i xi_i` with
//!   `lambda = 1/(C m)`, i.e. `C = 1/lambda_sum`. `-B 1` appends a constant 1
//!   feature whose weight is regularised like the others: our `bias = true`.
//! - The optimum: Prox-P-BMRM to `tol_rel = within / 100`. Its lower bound
//!   `LB` is certified: it is the value of the bundle's reduced problem, a
//!   minimum of `F`'s cutting-plane model, and every plane lies below the
//!   risk everywhere, so `LB <= min F`. The run's own primal `F(w) <= LB (1 +
//!   within / 100)` shows the bound is tight. The target is
//!   `F <= LB (1 + within)`; every primal value seen (ours recomputed
//!   directly, LIBLINEAR's) is checked to be `>= LB`.
//! - LIBLINEAR: its model file (`w` as `nr_feature + 1` rows of `nr_class`
//!   values, the classes in the order of its `label` line, the bias row last)
//!   is read back and `F` is computed in our convention on the same data.
//!   Its stopping rule is a dual tolerance `-e`, so it is run with `-e` =
//!   0.1 (its default), 0.03, 0.01, ... until its `F` reaches the target.
//!   It runs in memory, as ours do: benches/c/liblinear_train.c, compiled
//!   here against the system's LIBLINEAR (`linear.h`, `-llinear`: the
//!   library liblinear-train calls), reads the features and labels from raw
//!   files, builds LIBLINEAR's problem as liblinear-train builds it from a
//!   data file (each row's non-zeros, then the bias feature), and times
//!   only its call to `train()`. A call still going after
//!   `--liblinear-limit` seconds is stopped (at lambda 1e-5 its default `-e
//!   0.1` alone took over half an hour here): its time to the target is then
//!   only known to exceed the limit, and our ratios to it are printed as
//!   upper bounds, `<0.30`.
//! - The runs are interleaved: each round runs every solver of ours once,
//!   then LIBLINEAR once (the first round's is the run that found its `-e`),
//!   and the ratio printed is the median of the rounds' ratios, with their
//!   spread: on a shared machine a slow minute then slows both sides of a
//!   round alike.
//! - The reference solve stops after `--reference-limit` seconds if it has
//!   not reached its tolerance: its `LB` is still certified (a lower bound
//!   at every iteration), and the target `LB (1 + within)` only stricter.
//! - Ours: one run each, from `w = 0`, until both figures below are in;
//!   the time to target is the elapsed time of the first iteration whose best
//!   primal is `<= LB (1 + within)` (for BCFW, whose primal is evaluated at
//!   its exact passes, the first such exact pass). The time until our own
//!   certificate says `gap <= within * F` is printed too.
//! - Through the C ABI (`--c-abi`): benches/c/fashion_abi.c, compiled here
//!   against libbmrm.a with `-O3 -march=native`, reads the same features and
//!   labels from raw files, builds the problem with
//!   `bmrm_problem_new_multiclass` or with its own max-oracle behind
//!   `bmrm_problem_set_max_oracle` (`callback:`, `callback-row:`), and stops
//!   from its progress callback by the same rule, printing the times from
//!   the `bmrm_info` it is given; its `w` is read back and checked as ours.
//!
//! A benchmark program, not a test:
//!     cargo bench --bench liblinear -- --help
//! Needs `apt-get install dataset-fashion-mnist liblinear-dev` and a C
//! compiler.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use bmrm::models::Multiclass;
use bmrm::{Algorithm, Problem, Settings, Solver, StepType};
use clap::Parser;

#[path = "../tests/support/mod.rs"]
mod support;

#[derive(Parser)]
#[command(about = "Time to the same primal value: our solvers against LIBLINEAR -s 4")]
struct Args {
    /// Directory of the IDX files.
    #[arg(long, default_value = "/usr/share/datasets/fashion-mnist")]
    dir: String,
    /// Training examples used (the first m of the 60,000).
    #[arg(long, default_value_t = 60_000)]
    examples: usize,
    /// Summed-risk lambdas (lambda_sum = m lambda = 1/C); the defaults are
    /// lambda = 1e-2, 1e-3, 1e-4 and 1e-5 on 60,000 images (C = 0.001667,
    /// 0.01667, 0.1667 and 1.667).
    #[arg(long, value_delimiter = ',', default_value = "600,60,6,0.6")]
    lambda_sums: Vec<f64>,
    /// Runs of each solver (and of LIBLINEAR at the tolerance it needs).
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// The target: F <= LB (1 + within), LB a certified lower bound on min F.
    #[arg(long, default_value_t = 1e-3)]
    within: f64,
    /// Threads of our solvers (LIBLINEAR -s 4 is single-threaded); a list
    /// runs every solver with each (the C ABI runs use the first).
    #[arg(long, value_delimiter = ',', default_value = "2,1")]
    threads: Vec<usize>,
    /// Our algorithms (bmrm, prox, p, proxp, bcfw) and BCFW variants
    /// (bcpfw-cache: gap sampling, pairwise steps and the cache;
    /// mp-bcpfw-cache: the same with multi-plane passes; bcfw-exact: exact
    /// block steps, with suffixes -b<B> for mini-batches of B blocks,
    /// -perm or -uniform for the sampling, -g<N> for gap_check N).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "proxp,bcfw-exact-perm-g1000,bcfw-exact-perm-b64-g1000"
    )]
    algorithms: Vec<String>,
    /// Runs through the C ABI (benches/c/fashion_abi.c, compiled here with
    /// the system C compiler against libbmrm.a): `proxp`, `p`, `bmrm`,
    /// `bcfw` or `bcpfw-cache` on the built-in model
    /// (`bmrm_problem_new_multiclass`), or the same names after `callback:`
    /// on a max-oracle written in C (`bmrm_problem_set_max_oracle`, one
    /// `bmrm_corner_add` per non-zero of psi) or after `callback-row:` (the
    /// same oracle, psi's two rows by `bmrm_corner_add_row`); `none` for no
    /// run (the default).
    #[arg(long, value_delimiter = ',', default_value = "none")]
    c_abi: Vec<String>,
    /// Parts of P-BMRM and Prox-P-BMRM.
    #[arg(long, default_value_t = 16)]
    parts: usize,
    /// Seconds after which a LIBLINEAR run is stopped (its time to the
    /// target then only known to exceed them).
    #[arg(long, default_value_t = 900.0)]
    liblinear_limit: f64,
    /// Seconds after which the reference solve stops (its lower bound still
    /// certified).
    #[arg(long, default_value_t = 900.0)]
    reference_limit: f64,
    /// Working directory (data file, models) and CSV output.
    #[arg(long, default_value = "bench-out")]
    out: PathBuf,
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
        n if n == "bcfw" || n.starts_with("bcfw-exact") || n.contains("bcpfw-cache") => {
            Algorithm::Bcfw
        }
        other => panic!("unknown algorithm {other}"),
    }
}

/// The settings of a BCFW variant named on the command line:
/// `bcpfw-cache`, `mp-bcpfw-cache`, or `bcfw-exact` with optional
/// suffixes `-b<B>` (mini-batches of B blocks), `-perm` / `-uniform`
/// (sampling; gap sampling by default) and `-g<N>` (`gap_check` N).
fn bcfw_variant(name: &str, s: &mut Settings) {
    if name.contains("bcpfw-cache") {
        s.step_type = StepType::Pairwise;
        s.use_cache = true;
    }
    s.multi_plane = name.starts_with("mp-");
    if let Some(rest) = name.strip_prefix("bcfw-exact") {
        s.step_type = StepType::Exact;
        for part in rest.split('-').filter(|p| !p.is_empty()) {
            match part {
                "perm" => s.sampling = bmrm::Sampling::Permutation,
                "uniform" => s.sampling = bmrm::Sampling::Uniform,
                p if p.starts_with('b') => s.mini_batch = p[1..].parse().expect("-b<B>"),
                p if p.starts_with('g') => s.gap_check = p[1..].parse().expect("-g<N>"),
                other => panic!("unknown BCFW variant suffix {other} in {name}"),
            }
        }
    }
}

/// `F(w)` in our convention, computed directly (independent of the oracle).
fn primal(x: &[f32], y: &[usize], d: usize, k: usize, lambda: f64, w: &[f64]) -> f64 {
    let dp = d + 1;
    let m = y.len();
    let mut risk = 0.0;
    let mut s = vec![0.0f64; k];
    for i in 0..m {
        let xi = &x[i * d..(i + 1) * d];
        for (c, sc) in s.iter_mut().enumerate() {
            let wc = &w[c * dp..(c + 1) * dp];
            *sc = wc[d]
                + wc[..d]
                    .iter()
                    .zip(xi)
                    .map(|(a, &b)| a * f64::from(b))
                    .sum::<f64>();
        }
        let truth = s[y[i]];
        let best = (0..k)
            .map(|c| s[c] + if c == y[i] { 0.0 } else { 1.0 })
            .fold(f64::NEG_INFINITY, f64::max);
        risk += best - truth;
    }
    0.5 * lambda * w.iter().map(|v| v * v).sum::<f64>() + risk / m as f64
}

/// Reads a LIBLINEAR `-s 4 -B 1` model file into our layout (class `c`'s
/// block of `d + 1` weights, bias last).
fn read_liblinear_model(path: &Path, d: usize, k: usize) -> Vec<f64> {
    let f = BufReader::new(std::fs::File::open(path).expect("the model file"));
    let mut labels: Vec<usize> = vec![];
    let mut rows: Vec<Vec<f64>> = vec![];
    let mut in_w = false;
    for line in f.lines() {
        let line = line.unwrap();
        if in_w {
            rows.push(
                line.split_whitespace()
                    .map(|v| v.parse().unwrap())
                    .collect(),
            );
        } else if let Some(l) = line.strip_prefix("label ") {
            labels = l.split_whitespace().map(|v| v.parse().unwrap()).collect();
        } else if let Some(b) = line.strip_prefix("bias ") {
            assert_eq!(
                b.trim().parse::<f64>().unwrap(),
                1.0,
                "the model must have -B 1"
            );
        } else if line.trim() == "w" {
            in_w = true;
        }
    }
    assert_eq!(labels.len(), k, "nr_class");
    assert_eq!(rows.len(), d + 1, "nr_feature + bias rows");
    let mut w = vec![0.0; k * (d + 1)];
    for (j, row) in rows.iter().enumerate() {
        for (pos, &label) in labels.iter().enumerate() {
            w[label * (d + 1) + j] = row[pos];
        }
    }
    w
}

/// benches/c/liblinear_train.c, compiled against the system's LIBLINEAR.
fn liblinear_program() -> PathBuf {
    let source = support::root().join("benches/c/liblinear_train.c");
    support::compile(
        &support::compiler("CC", "cc"),
        &["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror"],
        &[support::path_arg(&source), "-llinear".into()],
        &support::work_dir("bench-c"),
        "liblinear_train",
    )
}

/// The wall seconds of LIBLINEAR's `train()` in one run, or `None` when it
/// was stopped at `--liblinear-limit`.
fn run_liblinear(
    args: &Args,
    raw: &RawData,
    program: &Path,
    (c, eps): (f64, f64),
    model: &Path,
) -> Option<f64> {
    let limit = args.liblinear_limit.ceil().max(1.0) as u64;
    let out = Command::new(program)
        .arg(&raw.x_file)
        .arg(&raw.y_file)
        .args([
            raw.m.to_string(),
            raw.d.to_string(),
            format!("{c:e}"),
            format!("{eps:e}"),
            limit.to_string(),
        ])
        .arg(model)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} ({e})", program.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    match out.status.code() {
        Some(0) => Some(
            line_fields(&stdout, "train")[0]
                .parse()
                .expect("train()'s seconds"),
        ),
        Some(3) => None,
        _ => panic!(
            "liblinear_train failed ({}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// The fields after `tag` on the line a C program prints starting with it.
fn line_fields<'a>(stdout: &'a str, tag: &str) -> Vec<&'a str> {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(tag)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {tag} line in:\n{stdout}"))
        .split_whitespace()
        .collect()
}

/// One solver's figures over the repeats.
struct Row {
    name: String,
    /// Seconds to the target, one per round (`None`: not reached).
    to_target: Vec<Option<f64>>,
    /// Seconds a run was stopped after without reaching the target
    /// (LIBLINEAR at its limit): a lower bound on its time to it.
    beyond: Option<f64>,
    /// Seconds until the solver's own gap certified `within`, per run.
    certified: Vec<f64>,
    iterations: u64,
    primal: f64,
    note: String,
}

impl Row {
    fn new(name: String) -> Self {
        Row {
            name,
            to_target: vec![],
            beyond: None,
            certified: vec![],
            iterations: 0,
            primal: f64::NAN,
            note: String::new(),
        }
    }
}

/// What one run of ours gives: the seconds to the target and to our own
/// certificate (when reached), and where it stopped.
struct Run {
    to_target: Option<f64>,
    certified: Option<f64>,
    iterations: u64,
    primal: f64,
    w: Vec<f64>,
    note: String,
}

/// A `--c-abi` name split into how the C program makes the problem
/// (`builtin`, `callback`, `callback-row`) and the algorithm.
fn c_mode(name: &str) -> (&str, &str) {
    name.split_once(':').unwrap_or(("builtin", name))
}

/// A row's name: the algorithm (with its parts), and how it was called.
fn row_name(name: &str, through_c: bool, parts: usize) -> String {
    let (mode, alg_name) = c_mode(name);
    let alg = algorithm(alg_name);
    let base = if alg.is_partitioned() {
        format!("{} (P={parts})", alg.name())
    } else if alg_name != "bcfw" && alg == Algorithm::Bcfw {
        format!("BCFW {alg_name}")
    } else {
        alg.name().to_string()
    };
    match (through_c, mode) {
        (false, _) => base,
        (true, "builtin") => format!("C ABI: {base}"),
        (true, "callback") => format!("C oracle: {base}"),
        (true, "callback-row") => format!("C oracle, rows: {base}"),
        (true, other) => panic!("unknown way to call the C ABI: {other}"),
    }
}

/// One run of ours through the Rust API, from `w = 0`, stopped by the
/// observer once both figures are in.
fn run_ours(
    args: &Args,
    model: &Arc<Multiclass>,
    name: &str,
    threads: usize,
    lambda: f64,
    target: f64,
) -> Run {
    let alg = algorithm(name);
    let mut s = Settings::new(alg, lambda);
    if alg == Algorithm::Bcfw {
        bcfw_variant(name, &mut s);
    }
    // BCFW's exact passes come when its gap estimate says this target is
    // near (exact steps), so it is told the target.
    s.tol_rel = if alg == Algorithm::Bcfw {
        args.within
    } else {
        0.0
    };
    s.num_threads = threads;
    if alg.is_partitioned() {
        s.num_parts = args.parts;
    }
    s.max_iterations = 100_000;
    s.time_limit_seconds = 1800.0;
    let mut solver = Solver::new(Problem::Examples(model.clone()), s).expect("the solver");
    let within = args.within;
    solver.set_observer(move |i: &bmrm::Info| {
        if i.primal <= target && i.gap <= within * i.primal.abs() {
            std::ops::ControlFlow::Break(())
        } else {
            std::ops::ControlFlow::Continue(())
        }
    });
    let mut w = vec![0.0; solver.dim()];
    let info = solver.run(&mut w).expect("the run");
    let hist = solver.history();
    Run {
        to_target: hist
            .iter()
            .find(|r| r.primal <= target)
            .map(|r| r.elapsed_seconds),
        certified: hist
            .iter()
            .find(|r| r.primal.is_finite() && r.primal - r.lower_bound <= within * r.primal.abs())
            .map(|r| r.elapsed_seconds),
        iterations: info.iterations,
        primal: info.primal,
        w,
        note: format!("{:?}", info.exit),
    }
}

/// The features and labels written raw, once, for the C programs
/// (benches/c: ours through the C ABI, LIBLINEAR in memory).
struct RawData {
    x_file: PathBuf,
    y_file: PathBuf,
    m: usize,
    d: usize,
}

impl RawData {
    fn new(args: &Args, x: &[f32], y: &[usize]) -> Self {
        let m = y.len();
        let d = x.len() / m;
        let x_file = args.out.join(format!("fashion_mnist_{m}.f32"));
        let y_file = args.out.join(format!("fashion_mnist_{m}.u32"));
        let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_ne_bytes()).collect();
        std::fs::write(&x_file, bytes).expect("the features file");
        let bytes: Vec<u8> = y.iter().flat_map(|&v| (v as u32).to_ne_bytes()).collect();
        std::fs::write(&y_file, bytes).expect("the labels file");
        RawData {
            x_file,
            y_file,
            m,
            d,
        }
    }
}

/// The C ABI program, made once per benchmark run.
struct CData {
    program: PathBuf,
    w_file: PathBuf,
}

impl CData {
    /// Compiles benches/c/fashion_abi.c against libbmrm.a as a C user would
    /// (`-O3 -march=native`).
    fn new(args: &Args) -> Self {
        let mut link = support::static_link_args(&["include"], "benches/c/fashion_abi.c");
        link.push("-lm".into());
        let program = support::compile(
            &support::compiler("CC", "cc"),
            &[
                "-std=c11",
                "-O3",
                "-march=native",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-pedantic",
                "-pthread",
            ],
            &link,
            &support::work_dir("bench-c"),
            "fashion_abi",
        );
        CData {
            program,
            w_file: args.out.join("fashion_abi_w.f64"),
        }
    }

    /// One run of the C program: `name` is an algorithm, after `callback:`
    /// or `callback-row:` for the C oracle.
    fn run(&self, args: &Args, raw: &RawData, name: &str, lambda: f64, target: f64) -> Run {
        let (mode, alg) = c_mode(name);
        let out = support::run_ok(
            Command::new(&self.program)
                .arg(&raw.x_file)
                .arg(&raw.y_file)
                .args([
                    raw.m.to_string(),
                    raw.d.to_string(),
                    "10".into(),
                    format!("{lambda:e}"),
                    format!("{target:.17e}"),
                    format!("{:e}", args.within),
                    args.threads[0].to_string(),
                    args.parts.to_string(),
                    alg.into(),
                    mode.into(),
                ])
                .arg(&self.w_file),
            "fashion_abi",
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let f = line_fields(&stdout, "result");
        let secs = |v: &str| v.parse::<f64>().ok();
        let w: Vec<f64> = std::fs::read(&self.w_file)
            .expect("w from the C program")
            .chunks_exact(8)
            .map(|b| f64::from_ne_bytes(b.try_into().expect("8 bytes")))
            .collect();
        Run {
            to_target: secs(f[0]),
            certified: secs(f[1]),
            iterations: f[2].parse().expect("iterations"),
            primal: f[4].parse().expect("primal"),
            w,
            note: format!(
                "{} oracle calls, {} s in bmrm_solver_run, {} s in the oracle",
                f[3], f[5], f[6]
            ),
        }
    }
}

/// The median, fastest and slowest of `v`.
fn spread(v: &[f64]) -> Option<(f64, f64, f64)> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let median = if n % 2 == 1 {
        s[n / 2]
    } else {
        0.5 * (s[n / 2 - 1] + s[n / 2])
    };
    Some((median, s[0], s[n - 1]))
}

/// Runs LIBLINEAR with `-e` = 0.1, 0.03, 0.01, ... until its `F` reaches
/// the target: that `-e` and the seconds of the run that found it (the
/// first round's), or LIBLINEAR's row saying why none did.
fn find_tolerance(
    args: &Args,
    (raw, program): (&RawData, &Path),
    (x, y, k): (&[f32], &[usize], usize),
    (lambda, lb, target): (f64, f64, f64),
    model: &Path,
) -> Result<(f64, f64), Box<Row>> {
    let c = 1.0 / (lambda * y.len() as f64);
    let mut eps = 0.1;
    loop {
        let Some(secs) = run_liblinear(args, raw, program, (c, eps), model) else {
            eprintln!(
                "LIBLINEAR -e {eps:e}: stopped after {} s",
                args.liblinear_limit
            );
            return Err(Box::new(Row {
                beyond: Some(args.liblinear_limit),
                primal: f64::NAN,
                note: format!(
                    "-e {eps:e} stopped at --liblinear-limit {} s",
                    args.liblinear_limit
                ),
                ..Row::new("LIBLINEAR -s 4".into())
            }));
        };
        let w = read_liblinear_model(model, raw.d, k);
        let f = primal(x, y, raw.d, k, lambda, &w);
        assert!(
            f >= lb,
            "LIBLINEAR's primal {f} below the certified bound {lb}"
        );
        eprintln!(
            "LIBLINEAR -e {eps:e}: {secs:.2} s, F = {f:.8} ({:+.3} % from LB)",
            100.0 * (f / lb - 1.0)
        );
        if f <= target {
            return Ok((eps, secs));
        }
        if eps < 1e-6 {
            return Err(Box::new(Row {
                primal: f,
                note: format!("-e {eps:e} still above the target"),
                ..Row::new("LIBLINEAR -s 4".into())
            }));
        }
        eps /= if eps > 0.02 { 10.0 / 3.0 } else { 3.0 };
    }
}

fn main() -> bmrm::Result<()> {
    let args = Args::parse();
    let (x, d, y) = bmrm::data::idx::fashion_mnist(&args.dir, true, Some(args.examples))?;
    let m = y.len();
    let k = 10;
    std::fs::create_dir_all(&args.out).expect("the output directory");
    let raw = RawData::new(&args, &x, &y);
    let ll_program = liblinear_program();
    let model = Arc::new(Multiclass::new(x.clone(), d, y.clone(), k, true)?);
    println!(
        "Fashion-MNIST: m = {m}, n = {}, our threads = {:?}, LIBLINEAR -s 4 -B 1 (1 thread, \
         in memory), target F <= LB (1 + {})",
        k * (d + 1),
        args.threads,
        args.within
    );
    let mut c_data: Option<CData> = None;
    let mut csv = String::from(
        "lambda_sum,C,solver,seconds_to_target (each round),seconds_certified (each run),iterations,primal,target,note\n",
    );
    for &ls in &args.lambda_sums {
        let lambda = ls / m as f64;
        let c = 1.0 / ls;
        // The reference optimum.
        let mut s = Settings::new(Algorithm::ProxPBmrm, lambda);
        s.tol_rel = args.within / 100.0;
        s.num_threads = args.threads.iter().copied().max().unwrap_or(2).max(2);
        s.num_parts = args.parts;
        s.time_limit_seconds = args.reference_limit;
        let mut solver = Solver::new(Problem::Examples(model.clone()), s)?;
        let mut w = vec![0.0; solver.dim()];
        let reference = solver.run(&mut w)?;
        let lb = reference.lower_bound;
        let target = lb * (1.0 + args.within);
        println!(
            "\nlambda_sum = {ls} (C = {c}): optimum in [{lb:.8}, {:.8}] ({:?} after {} \
             iterations, {:.0} s), target F <= {target:.8}",
            reference.primal, reference.exit, reference.iterations, reference.elapsed_seconds
        );
        let ours = args
            .threads
            .iter()
            .flat_map(|&t| args.algorithms.iter().map(move |n| (n.clone(), false, t)));
        let configs: Vec<(String, bool, usize)> = ours
            .chain(
                args.c_abi
                    .iter()
                    .filter(|n| n.as_str() != "none")
                    .map(|n| (n.clone(), true, args.threads[0])),
            )
            .collect();
        let mut rows: Vec<Row> = configs
            .iter()
            .map(|(name, through_c, threads)| {
                Row::new(format!(
                    "{}, {threads} thr",
                    row_name(name, *through_c, args.parts)
                ))
            })
            .collect();
        let ll_model = args.out.join("liblinear.model");
        let found = find_tolerance(
            &args,
            (&raw, &ll_program),
            (&x, &y, k),
            (lambda, lb, target),
            &ll_model,
        );
        let (found, mut ll_row) = match found {
            Ok((eps, first)) => (
                Some((eps, first)),
                Row {
                    note: format!("-e {eps:e}, train() in memory"),
                    ..Row::new("LIBLINEAR -s 4".into())
                },
            ),
            Err(row) => (None, *row),
        };
        for round in 0..args.repeats.max(1) {
            for ((name, through_c, threads), row) in configs.iter().zip(&mut rows) {
                let run = if *through_c {
                    let c = c_data.get_or_insert_with(|| CData::new(&args));
                    c.run(&args, &raw, name, lambda, target)
                } else {
                    run_ours(&args, &model, name, *threads, lambda, target)
                };
                let check = primal(&x, &y, d, k, lambda, &run.w);
                assert!(
                    (check - run.primal).abs() <= 1e-9 * run.primal.abs().max(1.0),
                    "{}: primal {} vs recomputed {check}",
                    row.name,
                    run.primal
                );
                assert!(
                    check >= lb,
                    "a primal value {check} below the certified bound {lb}"
                );
                row.to_target.push(run.to_target);
                row.certified.extend(run.certified);
                row.iterations = run.iterations;
                row.primal = run.primal;
                row.note = run.note;
                eprintln!(
                    "{:<36} to target {:?} s, certified {:?} s, {} iterations",
                    row.name, run.to_target, run.certified, run.iterations
                );
            }
            if let Some((eps, first)) = found {
                let secs = if round == 0 {
                    Some(first)
                } else {
                    // A repeat stopped at the limit counts as the limit.
                    run_liblinear(&args, &raw, &ll_program, (c, eps), &ll_model)
                        .or(Some(args.liblinear_limit))
                };
                eprintln!("LIBLINEAR -e {eps:e}: {secs:?} s in train()");
                ll_row.to_target.push(secs);
            }
        }
        if found.is_some() {
            let w = read_liblinear_model(&ll_model, d, k);
            ll_row.primal = primal(&x, &y, d, k, lambda, &w);
        }
        println!(
            "{:<36} {:>24} {:>20} {:>16} {:>8} {:>14}  note",
            "solver",
            "to target (s) [spread]",
            "ratio [spread]",
            "certified (s)",
            "iters",
            "final F"
        );
        let fmt = |v: &[f64]| {
            spread(v).map_or("-".to_string(), |(med, lo, hi)| {
                format!("{med:.2} [{lo:.2}-{hi:.2}]")
            })
        };
        for r in rows.iter().chain(std::iter::once(&ll_row)) {
            let reached: Vec<f64> = r.to_target.iter().flatten().copied().collect();
            let ratio = match ll_row.beyond {
                // LIBLINEAR stopped at its limit: only a lower bound on its
                // time.
                Some(l) => spread(&reached).map_or("-".into(), |s| format!("<{:.2}", s.0 / l)),
                None => fmt(&paired_ratios(&r.to_target, &ll_row.to_target)),
            };
            println!(
                "{:<36} {:>24} {:>20} {:>16} {:>8} {:>14.8}  {}",
                r.name,
                r.beyond
                    .map_or_else(|| fmt(&reached), |l| format!(">{l:.1}")),
                ratio,
                fmt(&r.certified),
                r.iterations,
                r.primal,
                r.note
            );
            let list = |v: &[f64]| {
                v.iter()
                    .map(|t| format!("{t:.3}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let rounds = r
                .to_target
                .iter()
                .map(|t| t.map_or("-".into(), |t| format!("{t:.3}")))
                .collect::<Vec<_>>()
                .join(" ");
            csv += &format!(
                "{ls},{c},{},{rounds},{},{},{},{target},{}\n",
                r.name,
                list(&r.certified),
                r.iterations,
                r.primal,
                r.note.replace(',', ";")
            );
        }
    }
    let csv_path = args.out.join("liblinear.csv");
    std::fs::write(&csv_path, csv).expect("the CSV file");
    println!("\nwrote {}", csv_path.display());
    Ok(())
}

/// Each round's ratio of `ours` to LIBLINEAR's time, where both reached the
/// target.
fn paired_ratios(ours: &[Option<f64>], liblinear: &[Option<f64>]) -> Vec<f64> {
    ours.iter()
        .zip(liblinear)
        .filter_map(|(a, b)| match (a, b) {
            (Some(a), Some(b)) if *b > 0.0 => Some(a / b),
            _ => None,
        })
        .collect()
}

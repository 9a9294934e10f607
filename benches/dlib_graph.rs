//! HorseSeg-like segmentation side by side with dlib's
//! `structural_graph_labeling_trainer` (benches/dlib/graph_labeling.cpp,
//! built here with the system's C++ compiler against `libdlib-dev`).
//!
//! dlib minimises `h(w) = 1/2 |w|^2 + C (1/m) sum_i max_y [L_i(y) +
//! <w, phi(x_i, y)> - <w, phi(x_i, y_i)>]` (a mean risk) with the edge
//! weights kept non-negative, where `phi` adds a node's vector when the node
//! is labelled 1 and subtracts an edge's vector when its ends differ, and
//! `L_i(y)` sums the per-node costs of the mislabelled nodes. That is
//! bmrm's `F(w) = lambda/2 |w|^2 + R(w)` with `lambda = 1 / C` and `F = h
//! / C`, on a graph model with `PerState` node features (state 0 the zero
//! vector, state 1 the superpixel's features: no weights for label 0, as in
//! dlib), Potts edges, the normalised Hamming loss as per-node costs and
//! the Potts weights in the box `w >= 0`. dlib stops when `F(w_t) -
//! J_t(w_t) < eps` (its risk gap, in units of F); the bench sets eps to
//! `--eps-rel` times the optimum and reports bmrm's time to dlib's `F`.
//!
//!     apt-get install libdlib-dev
//!     cargo bench --bench dlib_graph -- --help

#[path = "dlib/pair.rs"]
mod pair;
#[path = "../tests/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use bmrm::{Algorithm, Problem, Settings, Solver};
use clap::Parser;
use pair::Pair;

#[derive(Parser)]
#[command(about = "HorseSeg-like segmentation: bmrm against dlib's graph-labeling trainer")]
struct Args {
    /// Training examples.
    #[arg(long, default_value_t = 200)]
    examples: usize,
    /// Superpixels per side of a lattice.
    #[arg(long, default_value_t = 10)]
    superpixels: u32,
    /// Features per superpixel (the first a constant 1).
    #[arg(long, default_value_t = 8)]
    features: usize,
    /// Summed-risk lambdas (mean-risk lambda = summed / m, dlib's C = m / summed).
    #[arg(long, value_delimiter = ',', default_value = "100,10,1,0.1")]
    lambdas: Vec<f64>,
    /// dlib's eps as a fraction of the optimum F* (from a bmrm run to tol_rel 1e-5).
    #[arg(long, default_value_t = 0.01)]
    eps_rel: f64,
    /// bmrm's methods (bmrm, prox-bmrm, p-bmrm, prox-p-bmrm).
    #[arg(long, value_delimiter = ',', default_value = "bmrm")]
    methods: Vec<String>,
    /// Threads of both (dlib's trainer defaults to 2).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Seconds after which a dlib run stops (oca's max runtime); bmrm's
    /// target is then the F dlib reached.
    #[arg(long, default_value_t = 120.0)]
    dlib_limit: f64,
    /// Runs of each solver per lambda (median and range printed).
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    #[arg(long, default_value_t = 27)]
    seed: u64,
    /// Skip the like-for-like check on a tiny problem.
    #[arg(long)]
    no_check: bool,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// A bmrm run in the box `w_edge >= 0` from 0.
struct BmrmRun {
    w: Vec<f64>,
    primal: f64,
    lower_bound: f64,
    seconds: f64,
    iterations: u64,
    /// Of `seconds`, in the oracle and in the reduced problem.
    oracle_seconds: f64,
    qp_seconds: f64,
    /// For each target, the seconds at the first iteration whose best `F`
    /// was at most it.
    seconds_to_targets: Vec<Option<f64>>,
}

fn run_bmrm(
    pair: &Pair,
    alg: Algorithm,
    lambda: f64,
    tol: (f64, f64),
    threads: usize,
    targets: &[f64],
) -> bmrm::Result<BmrmRun> {
    let mut s = Settings::new(alg, lambda);
    (s.tol_rel, s.tol_abs) = tol;
    s.num_threads = threads;
    s.max_iterations = 20_000;
    let mut solver = Solver::new(Problem::Examples(pair.model.clone()), s)?;
    let dim = solver.dim();
    let mut lower = vec![f64::NEG_INFINITY; dim];
    pair.model
        .positivity_coordinates()
        .into_iter()
        .for_each(|j| lower[j] = 0.0);
    solver.set_bounds(lower, vec![f64::INFINITY; dim])?;
    let mut w = vec![0.0; dim];
    let info = solver.run(&mut w)?;
    assert!(info.certified, "graph cut answers are exact");
    let seconds_to_targets = targets
        .iter()
        .map(|&target| {
            solver
                .history()
                .iter()
                .find(|row| row.primal <= target)
                .map(|row| row.elapsed_seconds)
        })
        .collect();
    Ok(BmrmRun {
        w,
        primal: info.primal,
        lower_bound: info.lower_bound,
        seconds: info.elapsed_seconds,
        iterations: info.iterations,
        oracle_seconds: info.oracle_seconds,
        qp_seconds: info.qp_seconds,
        seconds_to_targets,
    })
}

/// benches/dlib/graph_labeling.cpp built against the system's dlib, or
/// `None` (with the reason) when dlib is not installed.
fn dlib_program() -> Result<PathBuf, String> {
    let pc = Command::new("pkg-config")
        .args(["--cflags", "--libs", "dlib-1"])
        .output()
        .map_err(|e| format!("pkg-config: {e}"))?;
    if !pc.status.success() {
        return Err("pkg-config finds no dlib-1 (apt-get install libdlib-dev)".into());
    }
    let flags: Vec<String> = String::from_utf8_lossy(&pc.stdout)
        .split_whitespace()
        .map(String::from)
        .collect();
    let source = support::root().join("benches/dlib/graph_labeling.cpp");
    let mut args = vec![support::path_arg(&source)];
    args.extend(flags);
    Ok(support::compile(
        &support::compiler("CXX", "c++"),
        &["-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror"],
        &args,
        &support::work_dir("bench-dlib"),
        "graph_labeling",
    ))
}

/// One dlib run: seconds, iterations, `F = h / C` as dlib computed it, and
/// w in bmrm's order.
struct DlibRun {
    seconds: f64,
    iterations: u64,
    /// Stopped by the time limit, not by its eps.
    limited: bool,
    primal: f64,
    w: Vec<f64>,
}

fn run_dlib(
    program: &Path,
    pair: &Pair,
    file: &Path,
    c: f64,
    eps: f64,
    (threads, limit): (usize, f64),
    check_trainer: bool,
) -> DlibRun {
    let w_file = file.with_extension("w");
    let mut cmd = Command::new(program);
    cmd.arg("train")
        .arg(file)
        .args([
            format!("{c:e}"),
            format!("{eps:e}"),
            threads.to_string(),
            format!("{limit:e}"),
        ])
        .arg(&w_file);
    if check_trainer {
        cmd.arg("--check-trainer");
    }
    let out = support::run_ok(&mut cmd, "graph_labeling train");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let train = fields(&stdout, "train");
    let objective = fields(&stdout, "objective");
    if check_trainer {
        assert_eq!(fields(&stdout, "trainer_match"), [1.0], "the trainer's w");
    }
    DlibRun {
        seconds: train[0],
        iterations: train[1] as u64,
        limited: train[2] != 0.0,
        primal: objective[0] / c,
        w: pair.dlib_to_ours(&read_w(&w_file)),
    }
}

/// dlib's `F = h / C` of `w` (bmrm's order), by dlib's separation oracle,
/// and the seconds of that pass over all examples.
fn dlib_primal(program: &Path, pair: &Pair, file: &Path, c: f64, w: &[f64]) -> (f64, f64) {
    let w_file = file.with_extension("w_in");
    let text: String = pair
        .ours_to_dlib(w)
        .iter()
        .map(|x| format!("{x:e}\n"))
        .collect();
    std::fs::write(&w_file, text).expect("write w");
    let out = support::run_ok(
        Command::new(program)
            .arg("eval")
            .arg(file)
            .arg(format!("{c:e}"))
            .arg(&w_file),
        "graph_labeling eval",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    (
        fields(&stdout, "objective")[0] / c,
        fields(&stdout, "pass")[0],
    )
}

fn read_w(path: &Path) -> Vec<f64> {
    std::fs::read_to_string(path)
        .expect("dlib's w")
        .split_whitespace()
        .map(|x| x.parse().expect("a number"))
        .collect()
}

/// The numbers after `tag` on the line that starts with it.
fn fields(stdout: &str, tag: &str) -> Vec<f64> {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(tag)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {tag} line in:\n{stdout}"))
        .split_whitespace()
        .map(|x| x.parse().expect("a number"))
        .collect()
}

/// Median, smallest and largest.
fn spread(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn same(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1e-12)
}

/// The like-for-like check on a tiny problem (m = 6, 4 x 4 superpixels):
/// dlib's own trainer gives the wrapper's w bit for bit; `F` of dlib's and
/// bmrm's w agree between dlib's oracle, bmrm's and enumeration of every
/// labelling; bmrm's certified lower bound is below both.
fn check(program: &Path, dir: &Path, threads: usize) -> bmrm::Result<()> {
    let pair = Pair::new(6, 4, 3, 5)?;
    let file = dir.join("tiny.txt");
    pair.write(&file).expect("write the problem");
    for lambda_sum in [1.0, 0.05] {
        let lambda = lambda_sum / pair.m() as f64;
        let c = 1.0 / lambda;
        let ours = run_bmrm(&pair, Algorithm::Bmrm, lambda, (1e-9, 0.0), threads, &[])?;
        let theirs = run_dlib(program, &pair, &file, c, 1e-6, (threads, 1e9), true);
        // A third point far from the optimum, where other labellings win.
        let far: Vec<f64> = ours.w.iter().map(|x| 20.0 * x).collect();
        for (who, w, reported) in [
            ("bmrm's", &ours.w, Some(ours.primal)),
            ("dlib's", &theirs.w, Some(theirs.primal)),
            ("20 x bmrm's", &far, None),
        ] {
            let by_bmrm = pair.primal(w, lambda)?;
            let by_dlib = dlib_primal(program, &pair, &file, c, w).0;
            let by_enum = pair.primal_by_enumeration(&pair.ours_to_dlib(w), lambda);
            println!(
                "check lambda_sum {lambda_sum}: F({who} w) = {by_bmrm:.12} (bmrm), {by_dlib:.12} \
                 (dlib), {by_enum:.12} (enumeration); reported {reported:.12?}"
            );
            assert!(same(by_bmrm, by_enum, 1e-9) && same(by_dlib, by_enum, 1e-9));
            assert!(reported.is_none_or(|r| same(r, by_enum, 1e-9)));
            assert!(
                ours.lower_bound <= by_enum + 1e-12,
                "bmrm's bound above an F"
            );
            assert!(w[pair.d..].iter().all(|&x| x >= 0.0), "edge weights >= 0");
        }
        println!(
            "check lambda_sum {lambda_sum}: bmrm's bound {:.12}, gap of dlib's F to it {:.2e}",
            ours.lower_bound,
            theirs.primal - ours.lower_bound
        );
    }
    Ok(())
}

fn algorithm(name: &str) -> bmrm::Result<Algorithm> {
    Ok(match name {
        "bmrm" => Algorithm::Bmrm,
        "prox-bmrm" => Algorithm::ProxBmrm,
        "p-bmrm" => Algorithm::PBmrm,
        "prox-p-bmrm" => Algorithm::ProxPBmrm,
        other => {
            return Err(bmrm::Error::invalid_argument(format!(
                "--methods: unknown method {other} (bmrm, prox-bmrm, p-bmrm, prox-p-bmrm)"
            )))
        }
    })
}

fn main() -> bmrm::Result<()> {
    let args = Args::parse();
    let methods = args
        .methods
        .iter()
        .map(|m| algorithm(m))
        .collect::<bmrm::Result<Vec<_>>>()?;
    let bad = |what: &str| Err(bmrm::Error::invalid_argument(what.to_string()));
    if args.repeats == 0 || args.examples == 0 || args.superpixels < 2 || args.features == 0 {
        return bad("--repeats, --examples and --features must be >= 1, --superpixels >= 2");
    }
    if args.lambdas.iter().any(|l| !(*l > 0.0 && l.is_finite()))
        || !(args.eps_rel > 0.0 && args.dlib_limit > 0.0)
    {
        return bad("--lambdas, --eps-rel and --dlib-limit must be positive and finite");
    }
    let program = match dlib_program() {
        Ok(p) => p,
        Err(why) => {
            println!("dlib_graph: skipped: {why}");
            return Ok(());
        }
    };
    let dir = support::work_dir("bench-dlib");
    if !args.no_check {
        check(&program, &dir, args.threads)?;
    }
    let pair = Pair::new(args.examples, args.superpixels, args.features, args.seed)?;
    let file = dir.join("horseseg.txt");
    pair.write(&file).expect("write the problem");
    let m = pair.m();
    let ex = pair.examples();
    println!(
        "\n## HorseSeg-like: m = {m} ({} nodes, {} edges), n = {}, {} thread(s), dlib eps = {} F*, \
         {} repeats (median [min-max])",
        ex.states.len(),
        ex.edges.len(),
        pair.d + pair.f,
        args.threads,
        args.eps_rel,
        args.repeats
    );
    println!(
        "\n| lambda_sum (C) | F* | dlib: s, iterations, F | method | same eps: s, it, F, oracle / QP % | \
         to dlib's F: s | dlib s / ours, per dlib run |"
    );
    println!("|---|---|---|---|---|---|---|");
    let mut pass_line = String::new();
    for &lambda_sum in &args.lambdas {
        let lambda = lambda_sum / m as f64;
        let c = 1.0 / lambda;
        let reference = run_bmrm(
            &pair,
            Algorithm::Bmrm,
            lambda,
            (1e-5, 0.0),
            args.threads,
            &[],
        )?;
        if lambda_sum == args.lambdas[0] {
            // One pass of each oracle over all examples at bmrm's solution.
            let (mut ours, mut theirs) = (vec![], vec![]);
            for _ in 0..args.repeats {
                let start = Instant::now();
                pair.primal(&reference.w, lambda)?;
                ours.push(start.elapsed().as_secs_f64());
                theirs.push(dlib_primal(&program, &pair, &file, c, &reference.w).1);
            }
            let (ours, theirs) = (spread(ours), spread(theirs));
            pass_line = format!(
                "\none oracle pass over the m examples (1 thread): bmrm {:.1} ms [{:.1}-{:.1}], \
                 dlib {:.1} ms [{:.1}-{:.1}], dlib / bmrm {:.2}x",
                1e3 * ours.0,
                1e3 * ours.1,
                1e3 * ours.2,
                1e3 * theirs.0,
                1e3 * theirs.1,
                1e3 * theirs.2,
                theirs.0 / ours.0
            );
        }
        let eps = args.eps_rel * reference.primal;
        let dlib: Vec<DlibRun> = (0..args.repeats)
            .map(|_| {
                let limits = (args.threads, args.dlib_limit);
                run_dlib(&program, &pair, &file, c, eps, limits, false)
            })
            .collect();
        // dlib's F by bmrm's objective (the same definition). dlib's
        // threaded risk sums in a varying order, so its runs end at
        // different F: each is paired with bmrm's time to its own F.
        let mut f_dlib = vec![];
        for run in &dlib {
            let f = pair.primal(&run.w, lambda)?;
            // A run stopped by the limit may end on an iteration served
            // from its cache, whose risk is an underestimate.
            assert!(
                run.limited || same(f, run.primal, 1e-9),
                "dlib's F by both codes: {f} (bmrm), {} (dlib)",
                run.primal
            );
            assert!(f >= reference.lower_bound, "bmrm's bound above dlib's F");
            f_dlib.push(f);
        }
        let f_range = spread(f_dlib.clone());
        let it_range = spread(dlib.iter().map(|r| r.iterations as f64).collect());
        let limited = dlib.iter().filter(|r| r.limited).count();
        let limited = if limited > 0 {
            format!(" ({limited} stopped at {} s)", args.dlib_limit)
        } else {
            String::new()
        };
        let dlib_s = spread(dlib.iter().map(|r| r.seconds).collect());
        for &alg in &methods {
            let mut same_eps = vec![];
            // to_dlib[k]: bmrm's seconds to dlib run k's F, one per repeat.
            let mut to_dlib = vec![vec![]; dlib.len()];
            let mut last = None;
            for _ in 0..args.repeats {
                // dlib's stopping rule (gap < eps) ...
                let run = run_bmrm(&pair, alg, lambda, (0.0, eps), args.threads, &f_dlib)?;
                same_eps.push(run.seconds);
                // ... and the first iterate as good as each dlib run's, from
                // a run whose certified gap guarantees F <= every F_dlib
                // when the same-eps run stopped above one.
                let times = if run.seconds_to_targets.iter().all(Option::is_some) {
                    run.seconds_to_targets.clone()
                } else {
                    let tol = (f_range.1 - reference.primal).max(1e-3 * eps);
                    run_bmrm(&pair, alg, lambda, (0.0, tol), args.threads, &f_dlib)?
                        .seconds_to_targets
                };
                for (k, t) in times.into_iter().enumerate() {
                    to_dlib[k].push(t.unwrap_or(f64::NAN));
                }
                last = Some(run);
            }
            let to: Vec<f64> = to_dlib.into_iter().map(|t| spread(t).0).collect();
            let ratio = spread(dlib.iter().zip(&to).map(|(d, t)| d.seconds / t).collect());
            let run = last.expect("at least one repeat");
            let (s, to) = (spread(same_eps), spread(to));
            println!(
                "| {lambda_sum} ({c:.4}) | {:.6e} | {:.3} [{:.3}-{:.3}], {}-{}, {:.6e}-{:.6e}{} | {} | {:.3} \
                 [{:.3}-{:.3}], {}, {:.6e}, {:.0} / {:.0} | {:.3} [{:.3}-{:.3}] | {:.2}x [{:.2}-{:.2}] |",
                reference.primal,
                dlib_s.0,
                dlib_s.1,
                dlib_s.2,
                it_range.1,
                it_range.2,
                f_range.1,
                f_range.2,
                limited,
                alg.name(),
                s.0,
                s.1,
                s.2,
                run.iterations,
                run.primal,
                100.0 * run.oracle_seconds / run.seconds,
                100.0 * run.qp_seconds / run.seconds,
                to.0,
                to.1,
                to.2,
                ratio.0,
                ratio.1,
                ratio.2
            );
        }
    }
    println!("{pass_line}");
    Ok(())
}

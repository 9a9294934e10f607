//! The papers' graph problems on data generated in code (fixed seeds,
//! `bmrm::models::graph::synthetic`), each with the shape of the Prox-BMRM
//! report's Table 2 (BMRM, Prox-BMRM and Prox-P-BMRM iterations, seconds,
//! speed-up over BMRM, certified gap and test error at four lambdas, SGD
//! and REUSE starts, with positivity and without), each run's QP seconds
//! per iteration and planes (with positivity against without, side by
//! side), and the gap-BCFW paper's certified gap of BCFW variants against
//! effective passes:
//!
//! - `landmarks`: 8 facial landmarks on a tree, sparse binary LBP-like
//!   descriptors per candidate position (`synthetic::LbpLandmarks`; at
//!   `--scale papers` the report's n = 232,476), displacement costs, the
//!   normalised mean distance as the loss (the distance transform;
//!   positivity of the quadratic weights);
//! - `pose`: 10 body parts on a tree, as an LSP-like problem (the distance
//!   transform);
//! - `horseseg`: binary segmentation of loopy superpixel graphs with
//!   visual-word histograms and Potts edges, the class-weighted Hamming
//!   loss (`synthetic::horseseg`; graph cut under positivity, `Auto`
//!   without, whose alpha-expansion is not certified).
//!
//! The peak resident memory (VmHWM) is printed after each problem is built.
//!
//!     cargo bench --bench graph_problems -- --help
//!     cargo bench --bench graph_problems -- --scale papers

#[path = "common/chains.rs"]
mod chains;
#[path = "common/structured.rs"]
mod structured;

use std::sync::Arc;

use std::time::Instant;

use bmrm::ffi::{
    bmrm_graph_data, bmrm_graph_data_default, bmrm_potentials, bmrm_problem, bmrm_problem_dim,
    bmrm_problem_free, bmrm_problem_new_graph_decoder, bmrm_settings_default, bmrm_solver,
    bmrm_solver_free, bmrm_solver_new, bmrm_solver_run, bmrm_status,
};
use bmrm::models::graph::engines::TreeMaxSum;
use bmrm::models::graph::synthetic::{self, LandmarkConfig, LbpLandmarks, SuperpixelConfig};
use bmrm::models::graph::{
    EdgeFeatures, Engine, EngineKind, GraphExamples, GraphLoss, GraphModel, GraphShape,
    NodeFeatures, Pairwise, Potentials,
};
use bmrm::{Algorithm, MaxOracle, Problem, Settings, Solver};
use chains::chains;
use clap::Parser;
use structured::{bcfw_table, bundle_table, qp_comparison, TableSettings};

/// The problems' sizes: a quick check, or the papers'.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Scale {
    /// Small problems that run in minutes on 2 cores.
    Quick,
    /// The papers' sizes: landmarks m = 2,000, n = 232,476 (LBP-like
    /// descriptors, 9 x 9 windows); pose m = 1,000; HorseSeg-like m = 200
    /// (12 x 12 superpixels, 300 visual words); 10 SGD passes.
    Papers,
}

#[derive(Parser)]
#[command(about = "Bundle methods and BCFW on the papers' graph problems, generated in code")]
struct Args {
    /// Problem sizes and defaults: quick (the default) or papers (the
    /// report's sizes; hours on 2 cores).
    #[arg(long, value_enum, default_value = "quick")]
    scale: Scale,
    /// Which problems: landmarks, pose, horseseg.
    #[arg(long, value_delimiter = ',', default_value = "landmarks,pose,horseseg")]
    problems: Vec<String>,
    /// Training examples per problem (default: the scale's: quick 40 / 40
    /// / 30, papers 2,000 / 1,000 / 200).
    #[arg(long)]
    examples: Option<usize>,
    /// Test examples per problem (default: a quarter of the training ones,
    /// at least 20).
    #[arg(long)]
    test_examples: Option<usize>,
    /// Summed-risk lambdas as in the report (mean-risk lambda = summed / m),
    /// decreasing (default: landmarks 1e4,1e3,1e2,10 (the report's);
    /// pose and horseseg 100,10,1,0.1).
    #[arg(long, value_delimiter = ',')]
    lambdas: Option<Vec<f64>>,
    /// Runs with positivity of the weights that keep the engines exact
    /// ("on") and without ("off").
    #[arg(long, value_delimiter = ',', default_value = "on,off")]
    positivity: Vec<String>,
    /// Starts: "reuse" (each lambda from the previous solution) and "sgd".
    #[arg(long, value_delimiter = ',', default_value = "sgd,reuse")]
    starts: Vec<String>,
    /// Whose SGD start: "auto" (the library's; under positivity, where the
    /// library refuses it, the bench's projected SGD), "library", "bench".
    #[arg(long, default_value = "auto")]
    sgd_start: String,
    /// SGD passes of the SGD start (default: quick 2, papers 10 as the
    /// report).
    #[arg(long)]
    sgd_passes: Option<u32>,
    /// Relative tolerance (the report's eps).
    #[arg(long, default_value_t = 0.01)]
    tol_rel: f64,
    /// Parts of Prox-P-BMRM.
    #[arg(long, default_value_t = 16)]
    parts: usize,
    /// Summed-risk lambda of the BCFW runs.
    #[arg(long, default_value_t = 1.0)]
    bcfw_lambda: f64,
    /// Passes of every BCFW run (0: no BCFW table; default: quick 20,
    /// papers 0).
    #[arg(long)]
    bcfw_passes: Option<u64>,
    /// Threads (0 = all cores).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    #[arg(long, default_value_t = 27)]
    seed: u64,
    /// Iteration cap per lambda (default: quick 500, papers 3,000).
    #[arg(long)]
    max_iterations: Option<u64>,
    /// Examples of the speed comparisons (multiclass as a one-node graph
    /// against the built-in multiclass model; a decoder behind the C ABI
    /// against the built-in engine); 0 skips them (default: quick 5,000,
    /// papers 0).
    #[arg(long)]
    speed_examples: Option<usize>,
    /// Repeats of each speed comparison (the median and the spread are printed).
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// The peak resident memory of this process so far, in MB (Linux's VmHWM;
/// NaN elsewhere).
fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// A problem's training and test sets and its engines with positivity and
/// without.
struct Built {
    train: GraphExamples,
    test: GraphExamples,
    engine_on: EngineKind,
    engine_off: EngineKind,
    describe: String,
}

fn build(name: &str, m: usize, m_test: usize, papers: bool, seed: u64) -> bmrm::Result<Built> {
    Ok(match name {
        "landmarks" => {
            let config = if papers {
                LandmarkConfig::papers()
            } else {
                LandmarkConfig {
                    side: 7,
                    blocks: 24,
                    bins: 16,
                    signal: 0.1,
                }
            };
            let describe = format!(
                "{0} x {0} windows, {1} cells x {2} codes ({1} non-zeros of {3} per position)",
                config.side,
                config.blocks,
                config.bins,
                config.blocks * config.bins
            );
            let gen = LbpLandmarks::new(config, seed)?;
            Built {
                train: gen.examples(m, 0)?,
                test: gen.examples(m_test, 1)?,
                engine_on: EngineKind::DistanceTransform,
                engine_off: EngineKind::DistanceTransform,
                describe,
            }
        }
        "pose" => {
            let (side, d) = if papers { (9, 32) } else { (7, 8) };
            let all = synthetic::pose(m + m_test, side, d, seed);
            Built {
                train: all.select(0..m),
                test: all.select(m..m + m_test),
                engine_on: EngineKind::DistanceTransform,
                engine_off: EngineKind::DistanceTransform,
                describe: format!("{side} x {side} windows, {d} dense features per position"),
            }
        }
        "horseseg" => {
            let config = if papers {
                SuperpixelConfig::default()
            } else {
                SuperpixelConfig {
                    side: 8,
                    words: 60,
                    pixels: 30,
                    purity: 0.35,
                }
            };
            let describe = format!(
                "{0} x {0} superpixels, {1} visual words, {2} pixels each, class-weighted Hamming",
                config.side, config.words, config.pixels
            );
            let all = synthetic::horseseg(m + m_test, &config, seed)?;
            Built {
                train: all.select(0..m),
                test: all.select(m..m + m_test),
                engine_on: EngineKind::GraphCut,
                engine_off: EngineKind::Auto,
                describe,
            }
        }
        other => {
            return Err(bmrm::Error::invalid_argument(format!(
                "--problems: unknown problem {other} (landmarks, pose, horseseg)"
            )))
        }
    })
}

fn main() -> bmrm::Result<()> {
    let args = Args::parse();
    let papers = args.scale == Scale::Papers;
    for p in &args.positivity {
        if p != "on" && p != "off" {
            return Err(bmrm::Error::invalid_argument(format!(
                "--positivity: {p} is neither on nor off"
            )));
        }
    }
    for s in &args.starts {
        if s != "sgd" && s != "reuse" {
            return Err(bmrm::Error::invalid_argument(format!(
                "--starts: {s} is neither sgd nor reuse"
            )));
        }
    }
    if !["auto", "library", "bench"].contains(&args.sgd_start.as_str()) {
        return Err(bmrm::Error::invalid_argument(format!(
            "--sgd-start: {} is not auto, library or bench",
            args.sgd_start
        )));
    }
    let speed_examples = args
        .speed_examples
        .unwrap_or(if papers { 0 } else { 5_000 });
    if speed_examples > 0 {
        speed(&args, speed_examples)?;
    }
    for name in args.problems.iter().filter(|p| !p.is_empty()) {
        let m = args.examples.unwrap_or(match (name.as_str(), papers) {
            ("landmarks", true) => 2_000,
            ("pose", true) => 1_000,
            ("horseseg", true) => 200,
            ("horseseg", false) => 30,
            _ => 40,
        });
        let m_test = args.test_examples.unwrap_or((m / 4).max(20));
        let lambdas = args.lambdas.clone().unwrap_or(match name.as_str() {
            "landmarks" => vec![1e4, 1e3, 1e2, 10.0],
            _ => vec![100.0, 10.0, 1.0, 0.1],
        });
        let started = Instant::now();
        let built = build(name, m, m_test, papers, args.seed)?;
        let generated = started.elapsed().as_secs_f64();
        let nodes = built.train.states.len();
        let edges = built.train.edges.len();
        let nnz = match &built.train.node_features {
            NodeFeatures::PerStateSparse(r) | NodeFeatures::Sparse(r) => r.nnz(),
            NodeFeatures::PerState { values, .. } | NodeFeatures::Dense { values, .. } => {
                values.len()
            }
        };
        let mut cells = vec![];
        let (mut train, mut test_set) = (Some(built.train), Some(built.test));
        for (k, positivity) in args.positivity.iter().enumerate() {
            let on = positivity == "on";
            let engine = if on {
                built.engine_on
            } else {
                built.engine_off
            };
            // The last run takes the examples, the others copy them.
            let last = k + 1 == args.positivity.len();
            let take = |set: &mut Option<GraphExamples>| -> GraphExamples {
                if last {
                    set.take().expect("taken once")
                } else {
                    set.clone().expect("kept until the last run")
                }
            };
            let model = Arc::new(GraphModel::new(take(&mut train), false, engine.into())?);
            let test = GraphModel::new(take(&mut test_set), false, engine.into())?;
            let positive = if on {
                model.positivity_coordinates()
            } else {
                vec![]
            };
            println!(
                "\n## {name}: m = {m} ({nodes} nodes, {edges} edges), {m_test} test examples, \
                 n = {}, {}; {nnz} stored node-feature values; engine {engine:?}; positivity \
                 {positivity} ({} weights kept >= 0); tol_rel = {}, P = {}; generated in {:.1} s, \
                 peak RSS {:.0} MB",
                model.dim(),
                built.describe,
                positive.len(),
                args.tol_rel,
                args.parts,
                generated,
                peak_rss_mb()
            );
            let problem = Problem::Examples(model.clone());
            for start in &args.starts {
                let settings = TableSettings {
                    lambdas: lambdas.clone(),
                    tol_rel: args.tol_rel,
                    parts: args.parts,
                    threads: args.threads,
                    max_iterations: args
                        .max_iterations
                        .unwrap_or(if papers { 3_000 } else { 500 }),
                    start: start.clone(),
                    sgd_passes: args.sgd_passes.unwrap_or(if papers { 10 } else { 2 }),
                    sgd_start: args.sgd_start.clone(),
                    bcfw_lambda: args.bcfw_lambda,
                    bcfw_passes: 0,
                    seed: args.seed,
                    non_negative: positive.clone(),
                };
                let table = bundle_table(&problem, m, &settings, &|w| test.hamming_error(w))?;
                cells.push((on, start.clone(), table, settings));
            }
            let bcfw_passes = args.bcfw_passes.unwrap_or(if papers { 0 } else { 20 });
            if bcfw_passes > 0 && on {
                let settings = TableSettings {
                    bcfw_passes,
                    ..cells.last().map(|c| c.3.clone()).expect("a start ran")
                };
                bcfw_table(&problem, m, &settings)?;
            }
            println!("peak RSS after the runs: {:.0} MB", peak_rss_mb());
        }
        for start in &args.starts {
            let find = |on: bool| cells.iter().find(|c| c.0 == on && &c.1 == start);
            if let (Some(a), Some(b)) = (find(true), find(false)) {
                println!("\n### {name}, {} start", start.to_uppercase());
                qp_comparison(&a.2, &b.2, &a.3);
            }
        }
    }
    Ok(())
}

/// Seconds of `repeats` runs of `run`: the median and the range.
fn timed(
    repeats: usize,
    mut run: impl FnMut() -> bmrm::Result<f64>,
) -> bmrm::Result<(f64, f64, f64)> {
    let mut t = (0..repeats.max(1))
        .map(|_| run())
        .collect::<bmrm::Result<Vec<f64>>>()?;
    t.sort_by(f64::total_cmp);
    Ok((t[t.len() / 2], t[0], t[t.len() - 1]))
}

/// Prox-P-BMRM's seconds to tol_rel 1e-3 on `problem`.
fn solve_seconds(problem: &Problem, lambda: f64, threads: usize) -> bmrm::Result<f64> {
    let mut s = Settings::new(Algorithm::ProxPBmrm, lambda);
    s.num_parts = 16;
    s.num_threads = threads;
    let mut solver = Solver::new(problem.clone(), s)?;
    let mut w = vec![0.0; solver.dim()];
    let start = Instant::now();
    solver.run(&mut w)?;
    Ok(start.elapsed().as_secs_f64())
}

/// The decoder of the C ABI comparison: the built-in tree engine called
/// from a `bmrm_graph_decoder_fn`, so the difference is the C path (the
/// potentials marshalled, one call per example).
unsafe extern "C" fn tree_decoder(
    _user: *mut std::ffi::c_void,
    p: *const bmrm_potentials,
    labels: *mut u32,
    _exact: *mut bool,
) -> i32 {
    // SAFETY: the library passes valid potentials and `num_nodes` labels.
    let p = unsafe { &*p };
    let n = p.num_nodes;
    let e = p.num_edges;
    // SAFETY: the arrays' lengths are those bmrm_potentials documents.
    let (states, flat, unary_start, pair_start) = unsafe {
        (
            std::slice::from_raw_parts(p.states, n),
            std::slice::from_raw_parts(p.edges, 2 * e),
            std::slice::from_raw_parts(p.unary_start, n + 1),
            std::slice::from_raw_parts(p.pairwise_start, e + 1),
        )
    };
    // SAFETY: as above.
    let (unary, pairwise, out) = unsafe {
        (
            std::slice::from_raw_parts(p.unary, unary_start[n]),
            std::slice::from_raw_parts(p.pairwise, pair_start[e]),
            std::slice::from_raw_parts_mut(labels, n),
        )
    };
    let edges: Vec<[u32; 2]> = flat.chunks_exact(2).map(|c| [c[0], c[1]]).collect();
    let potentials = Potentials {
        example: p.example,
        shape: GraphShape {
            states,
            edges: &edges,
        },
        unary,
        unary_start,
        pairwise: Pairwise::Tables {
            values: pairwise,
            start: pair_start,
        },
    };
    match TreeMaxSum.maximize(&potentials, out) {
        Ok(_) => 0,
        Err(_) => 1,
    }
}

/// The speed targets: multiclass as a one-node graph against the built-in
/// multiclass model, and a C decoder over the library's potentials against
/// the built-in engine, each to the same tolerance, side by side.
fn speed(args: &Args, examples: usize) -> bmrm::Result<()> {
    let (m, d, k) = (examples, 64, 10);
    let (x, y) = bmrm::models::synthetic::gaussian_multiclass(m, d, k, 2.0, args.seed);
    let lambda = 1e-3;
    let builtin = Problem::from_max_oracle(bmrm::models::Multiclass::new(
        x.clone(),
        d,
        y.clone(),
        k,
        true,
    )?);
    let graph = GraphExamples {
        node_start: (0..=m).collect(),
        states: vec![k as u32; m],
        labels: y.iter().map(|&c| c as u32).collect(),
        node_types: vec![],
        node_features: NodeFeatures::Dense { values: x, d },
        edge_start: vec![0; m + 1],
        edges: vec![],
        edge_types: vec![],
        edge_features: EdgeFeatures::Constant,
        loss: GraphLoss::Hamming {
            class_weight: vec![],
            normalise: false,
        },
    };
    let one_node = Problem::from_max_oracle(GraphModel::new(graph, true, EngineKind::Auto.into())?);
    let a = timed(args.repeats, || {
        solve_seconds(&builtin, lambda, args.threads)
    })?;
    let b = timed(args.repeats, || {
        solve_seconds(&one_node, lambda, args.threads)
    })?;
    println!(
        "
## Speed: Prox-P-BMRM (P = 16) to tol_rel 1e-3, median [min-max] of {} runs",
        args.repeats
    );
    println!("| problem | built-in | graph model | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| multiclass, m = {m}, d = {d}, K = {k}, lambda = {lambda}: Multiclass vs one-node graphs | {:.3} s [{:.3}-{:.3}] | {:.3} s [{:.3}-{:.3}] | {:.2}x |",
        a.0, a.1, a.2, b.0, b.1, b.2, b.0 / a.0
    );
    // Chains of 8 nodes with 5 states: the tree engine, built in and behind
    // the C ABI.
    let chains = chains(examples / 5, args.seed);
    let engine = Problem::from_max_oracle(GraphModel::new(
        chains.clone(),
        true,
        EngineKind::TreeMaxSum.into(),
    )?);
    let data = CGraph::new(&chains);
    let mut raw: *mut bmrm_problem = std::ptr::null_mut();
    // SAFETY: `data` holds the arrays `g` points to while the call runs;
    // the decoder is thread-safe (it keeps nothing between calls).
    let rc = unsafe {
        bmrm_problem_new_graph_decoder(
            &data.g,
            Some(tree_decoder),
            std::ptr::null_mut(),
            true,
            &mut raw,
        )
    };
    if rc != bmrm_status::BMRM_OK {
        return Err(bmrm::Error::internal(format!(
            "bmrm_problem_new_graph_decoder: {rc:?}"
        )));
    }
    let c_problem = CProblem(raw);
    let c = timed(args.repeats, || c_seconds(&c_problem, lambda, args.threads))?;
    let e = timed(args.repeats, || {
        solve_seconds(&engine, lambda, args.threads)
    })?;
    println!(
        "| chains, m = {}, 8 nodes x 5 states, d = 16: built-in tree engine vs a C decoder (the same engine behind bmrm_graph_decoder_fn) | {:.3} s [{:.3}-{:.3}] | {:.3} s [{:.3}-{:.3}] | {:.2}x |",
        chains.num_examples(), e.0, e.1, e.2, c.0, c.1, c.2, c.0 / e.0
    );
    Ok(())
}

/// The C arrays of a graph problem (dense features, constant edges, the
/// Hamming loss) and the `bmrm_graph_data` pointing into them.
struct CGraph {
    g: bmrm_graph_data,
    /// What `g` points into (the vectors' buffers do not move with them).
    _examples: GraphExamples,
    _edges: Vec<u32>,
}

impl CGraph {
    fn new(ex: &GraphExamples) -> Self {
        let ex = ex.clone();
        let NodeFeatures::Dense { values, d } = &ex.node_features else {
            unreachable!("dense features")
        };
        let edges: Vec<u32> = ex.edges.iter().flatten().copied().collect();
        let mut g = bmrm_graph_data_default();
        g.num_examples = ex.num_examples();
        g.node_start = ex.node_start.as_ptr();
        g.states = ex.states.as_ptr();
        g.labels = ex.labels.as_ptr();
        g.node_values = values.as_ptr();
        g.node_dim = *d;
        g.bias = true;
        g.edge_start = ex.edge_start.as_ptr();
        g.edges = edges.as_ptr();
        g.normalise = true;
        CGraph {
            g,
            _examples: ex,
            _edges: edges,
        }
    }
}

/// A C problem, freed on drop.
struct CProblem(*mut bmrm_problem);

impl Drop for CProblem {
    fn drop(&mut self) {
        // SAFETY: made by bmrm_problem_new_graph_decoder, freed once.
        unsafe { bmrm_problem_free(self.0) };
    }
}

/// Prox-P-BMRM's seconds to tol_rel 1e-3 through the C ABI.
fn c_seconds(p: &CProblem, lambda: f64, threads: usize) -> bmrm::Result<f64> {
    let mut s = bmrm_settings_default(Algorithm::ProxPBmrm as i32);
    s.lambda = lambda;
    s.num_parts = 16;
    s.num_threads = threads as u64;
    let mut solver: *mut bmrm_solver = std::ptr::null_mut();
    let mut dim = 0usize;
    // SAFETY: `p.0` is a live problem; the out-pointers are locals.
    unsafe {
        if bmrm_problem_dim(p.0, &mut dim) != bmrm_status::BMRM_OK
            || bmrm_solver_new(p.0, &s, &mut solver) != bmrm_status::BMRM_OK
        {
            return Err(bmrm::Error::internal("bmrm_solver_new failed"));
        }
    }
    let mut w = vec![0.0; dim];
    let start = Instant::now();
    // SAFETY: `solver` is live and `w` holds `dim` doubles.
    let rc = unsafe { bmrm_solver_run(solver, w.as_mut_ptr(), dim) };
    let seconds = start.elapsed().as_secs_f64();
    // SAFETY: made above, freed once.
    unsafe { bmrm_solver_free(solver) };
    if rc != bmrm_status::BMRM_OK {
        return Err(bmrm::Error::internal(format!("bmrm_solver_run: {rc:?}")));
    }
    Ok(seconds)
}

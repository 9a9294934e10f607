//! The papers' graph problems on data generated in code (fixed seeds,
//! `bmrm::models::graph::synthetic`), each with the shape of the Prox-BMRM
//! report's Table 2 (BMRM, Prox-BMRM and Prox-P-BMRM iterations, seconds
//! and speed-up over BMRM at four lambdas) and the gap-BCFW paper's
//! certified gap of BCFW variants against effective passes:
//!
//! - `landmarks`: 8 facial landmarks on a tree, candidate positions on a
//!   grid, displacement costs, the normalised mean distance as the loss
//!   (the distance transform; positivity of the quadratic weights);
//! - `pose`: 10 body parts on a tree, as an LSP-like problem (the distance
//!   transform under positivity);
//! - `horseseg`: binary segmentation of loopy superpixel graphs with Potts
//!   edges (graph cut; positivity keeps every iterate submodular).
//!
//!     cargo bench --bench graph_problems -- --help

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
use bmrm::models::graph::{
    synthetic, EdgeFeatures, Engine, EngineKind, GraphExamples, GraphLoss, GraphModel, GraphShape,
    NodeFeatures, Pairwise, Potentials,
};
use bmrm::{Algorithm, Corner, MaxOracle, Problem, Settings, Solver};
use clap::Parser;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use structured::{bcfw_table, bundle_table, TableSettings};

#[derive(Parser)]
#[command(about = "Bundle methods and BCFW on the papers' graph problems, generated in code")]
struct Args {
    /// Which problems: landmarks, pose, horseseg.
    #[arg(long, value_delimiter = ',', default_value = "landmarks,pose,horseseg")]
    problems: Vec<String>,
    /// Training examples per problem (test examples: as many).
    #[arg(long, default_value_t = 300)]
    examples: usize,
    /// Candidate positions per side of a part's grid (landmarks, pose).
    #[arg(long, default_value_t = 9)]
    side: u32,
    /// Appearance features per position or superpixel.
    #[arg(long, default_value_t = 8)]
    features: usize,
    /// Superpixels per side of a segmentation lattice.
    #[arg(long, default_value_t = 10)]
    superpixels: u32,
    /// Summed-risk lambdas as in the report (mean-risk lambda = summed / m), decreasing.
    #[arg(long, value_delimiter = ',', default_value = "100,10,1,0.1")]
    lambdas: Vec<f64>,
    /// Relative tolerance (the report's eps).
    #[arg(long, default_value_t = 0.01)]
    tol_rel: f64,
    /// Parts of Prox-P-BMRM.
    #[arg(long, default_value_t = 16)]
    parts: usize,
    /// "reuse" or "sgd" (under the positivity constraints: projected SGD,
    /// `sgd_bundle_table`).
    #[arg(long, default_value = "reuse")]
    start: String,
    /// SGD passes of the SGD start.
    #[arg(long, default_value_t = 2)]
    sgd_passes: u32,
    /// Summed-risk lambda of the BCFW runs.
    #[arg(long, default_value_t = 1.0)]
    bcfw_lambda: f64,
    /// Passes of every BCFW run (0: no BCFW table).
    #[arg(long, default_value_t = 20)]
    bcfw_passes: u64,
    /// Threads (0 = all cores).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    #[arg(long, default_value_t = 27)]
    seed: u64,
    /// Iteration cap per lambda.
    #[arg(long, default_value_t = 3_000)]
    max_iterations: u64,
    /// Examples of the speed comparisons (multiclass as a one-node graph
    /// against the built-in multiclass model; a decoder behind the C ABI
    /// against the built-in engine); 0 skips them.
    #[arg(long, default_value_t = 5_000)]
    speed_examples: usize,
    /// Repeats of each speed comparison (the median and the spread are printed).
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

fn main() -> bmrm::Result<()> {
    let args = Args::parse();
    let t = |non_negative: Vec<usize>| TableSettings {
        lambdas: args.lambdas.clone(),
        tol_rel: args.tol_rel,
        parts: args.parts,
        threads: args.threads,
        max_iterations: args.max_iterations,
        start: args.start.clone(),
        sgd_passes: args.sgd_passes,
        bcfw_lambda: args.bcfw_lambda,
        bcfw_passes: args.bcfw_passes,
        seed: args.seed,
        non_negative,
    };
    let m = args.examples;
    if args.speed_examples > 0 {
        speed(&args)?;
    }
    for name in args.problems.iter().filter(|p| !p.is_empty()) {
        let (all, engine) = match name.as_str() {
            "landmarks" => (
                synthetic::landmarks(2 * m, args.side, args.features, args.seed),
                EngineKind::DistanceTransform,
            ),
            "pose" => (
                synthetic::pose(2 * m, args.side, args.features, args.seed),
                EngineKind::DistanceTransform,
            ),
            "horseseg" => (
                synthetic::segmentation(2 * m, args.superpixels, args.features, args.seed),
                EngineKind::GraphCut,
            ),
            other => {
                return Err(bmrm::Error::invalid_argument(format!(
                    "unknown problem {other} (landmarks, pose, horseseg)"
                )))
            }
        };
        let (train, test) = (all.select(0..m), all.select(m..2 * m));
        let nodes = train.states.len();
        let edges = train.edges.len();
        let model = Arc::new(GraphModel::new(train, false, engine.into())?);
        let test = GraphModel::new(test, false, engine.into())?;
        let positive = model.positivity_coordinates();
        println!(
            "\n## {name}: m = {m} ({nodes} nodes, {edges} edges), n = {}, engine {engine:?}, \
             {} weights kept >= 0, tol_rel = {}, P = {}",
            model.dim(),
            positive.len(),
            args.tol_rel,
            args.parts
        );
        let problem = Problem::Examples(model.clone());
        let settings = t(positive);
        if settings.start == "sgd" && !settings.non_negative.is_empty() {
            // The library refuses its SGD start under constraints (SGD's
            // iterates would leave the box): a projected SGD start here.
            sgd_bundle_table(&model, &settings, &|w| test.hamming_error(w))?;
        } else {
            bundle_table(&problem, m, &settings, &|w| test.hamming_error(w))?;
        }
        if args.bcfw_passes > 0 {
            bcfw_table(&problem, m, &settings)?;
        }
    }
    Ok(())
}

/// `F(w)` on `model` (the mean hinge of the loss-augmented argmaxes).
fn primal(model: &GraphModel, w: &[f64], lambda: f64, examples: &[usize]) -> bmrm::Result<f64> {
    let mut corner = Corner::new(w.len());
    let mut risk = 0.0;
    for &i in examples {
        corner.clear();
        model.max_oracle(i, w, &mut corner)?;
        risk += corner.hinge(w).max(0.0);
    }
    let norm2: f64 = w.iter().map(|x| x * x).sum();
    Ok(0.5 * lambda * norm2 + risk / examples.len() as f64)
}

/// Projected SGD passes over `order` from `w`, continuing the step count
/// `t`: `w <- clip(w - eta_t (lambda w - psi_i(y^)))`, `eta_t = 1 /
/// (lambda (t0 + t))`, clipping the coordinates in `positive` at 0.
fn sgd_pass(
    model: &GraphModel,
    lambda: f64,
    t0: f64,
    t: &mut u64,
    order: &[usize],
    positive: &[usize],
    w: &mut [f64],
) -> bmrm::Result<()> {
    let mut corner = Corner::new(w.len());
    for &i in order {
        corner.clear();
        model.max_oracle(i, w, &mut corner)?;
        *t += 1;
        let eta = 1.0 / (lambda * (t0 + *t as f64));
        w.iter_mut().for_each(|x| *x *= 1.0 - eta * lambda);
        if corner.hinge(w) > 0.0 {
            corner.add_to(eta, w);
        }
        positive.iter().for_each(|&j| w[j] = w[j].max(0.0));
    }
    Ok(())
}

/// The SGD start of the P-BMRM paper (eq. 4-6) kept inside the box `w_j >=
/// 0` (j in `positive`) by projecting every step: `t0` among `10^0 ..
/// 10^6` by one pass over the first 10 % of the examples (the smallest `F`
/// on them), then `passes` passes over all in seeded orders, keeping the
/// best `w` by `F`. Feasible, so the bundle method starts from it as is.
fn projected_sgd(
    model: &GraphModel,
    lambda: f64,
    positive: &[usize],
    passes: u32,
    seed: u64,
) -> bmrm::Result<Vec<f64>> {
    let m = MaxOracle::num_examples(model);
    let dim = model.dim();
    let sample: Vec<usize> = (0..m.div_ceil(10)).collect();
    let mut best_t0 = (f64::INFINITY, 1.0);
    for k in 0..=6 {
        let t0 = 10f64.powi(k);
        let mut w = vec![0.0; dim];
        sgd_pass(model, lambda, t0, &mut 0, &sample, positive, &mut w)?;
        let f = primal(model, &w, lambda, &sample)?;
        if f < best_t0.0 {
            best_t0 = (f, t0);
        }
    }
    let all: Vec<usize> = (0..m).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut w = vec![0.0; dim];
    let mut best = (primal(model, &w, lambda, &all)?, w.clone());
    let mut t = 0;
    for _ in 0..passes {
        let mut order = all.clone();
        order.shuffle(&mut rng);
        sgd_pass(model, lambda, best_t0.1, &mut t, &order, positive, &mut w)?;
        let f = primal(model, &w, lambda, &all)?;
        if f < best.0 {
            best = (f, w.clone());
        }
    }
    Ok(best.1)
}

/// The report's Table 2 shape with the SGD start under the positivity
/// constraints: for each method and lambda, projected SGD from 0
/// (`projected_sgd`), then the bundle method in the box from its result;
/// the seconds include the SGD passes.
fn sgd_bundle_table(
    model: &Arc<GraphModel>,
    t: &TableSettings,
    test_error: &dyn Fn(&[f64]) -> bmrm::Result<f64>,
) -> bmrm::Result<()> {
    let m = MaxOracle::num_examples(&**model);
    let dim = model.dim();
    let algs = [Algorithm::Bmrm, Algorithm::ProxBmrm, Algorithm::ProxPBmrm];
    let mut table: Vec<Vec<(u64, f64, f64, f64)>> = vec![];
    for alg in algs {
        let mut row = vec![];
        for &lambda_sum in &t.lambdas {
            let lambda = lambda_sum / m as f64;
            let started = Instant::now();
            let mut w = projected_sgd(model, lambda, &t.non_negative, t.sgd_passes, t.seed)?;
            let sgd_seconds = started.elapsed().as_secs_f64();
            let mut s = Settings::new(alg, lambda);
            s.tol_rel = t.tol_rel;
            if alg.is_partitioned() {
                s.num_parts = t.parts;
            }
            s.num_threads = t.threads;
            s.max_iterations = t.max_iterations;
            let mut solver = Solver::new(Problem::Examples(model.clone()), s)?;
            let mut lo = vec![f64::NEG_INFINITY; dim];
            t.non_negative.iter().for_each(|&j| lo[j] = 0.0);
            solver.set_bounds(lo, vec![f64::INFINITY; dim])?;
            let info = solver.run(&mut w)?;
            let seconds = sgd_seconds + info.elapsed_seconds;
            let rel_gap = info.gap / info.primal.abs();
            let error = test_error(&w)?;
            eprintln!(
                "{:<12} lambda_sum {:>8}: {:>5} iterations {:>7.2} s (SGD {:.2} s, {:.1} % in the \
                 oracle), F = {:.6}, gap/F = {:.2e}, {:?}, test error {:.4}",
                alg.name(),
                lambda_sum,
                info.iterations,
                seconds,
                sgd_seconds,
                100.0 * info.oracle_seconds / info.elapsed_seconds.max(1e-12),
                info.primal,
                rel_gap,
                info.exit,
                error
            );
            row.push((info.iterations, seconds, rel_gap, error));
        }
        table.push(row);
    }
    println!(
        "\nIterations, seconds (speed-up over BMRM = BMRM's seconds / these), certified gap / F \
         reached, test error; SGD start ({} projected SGD passes, their time included)",
        t.sgd_passes
    );
    print!("| lambda_sum |");
    for l in &t.lambdas {
        print!(" {l} |");
    }
    println!();
    println!("|---|{}", "---|".repeat(t.lambdas.len()));
    for (alg, row) in algs.iter().zip(&table) {
        let name = if alg.is_partitioned() {
            format!("{} (P={})", alg.name(), t.parts)
        } else {
            alg.name().to_string()
        };
        print!("| {name} |");
        for (c, base) in row.iter().zip(&table[0]) {
            print!(
                " {}, {:.2} s ({:.2}x), {:.1e}, {:.3} |",
                c.0,
                c.1,
                base.1 / c.1,
                c.2,
                c.3
            );
        }
        println!();
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
fn speed(args: &Args) -> bmrm::Result<()> {
    let (m, d, k) = (args.speed_examples, 64, 10);
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
    let chains = chains(args.speed_examples / 5, args.seed);
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

/// `m` chains of 8 nodes with 5 states and 16 features, labels following
/// the features' strongest class.
fn chains(m: usize, seed: u64) -> GraphExamples {
    let (x, y) = bmrm::models::synthetic::gaussian_multiclass(8 * m, 16, 5, 1.0, seed);
    GraphExamples {
        node_start: (0..=m).map(|i| 8 * i).collect(),
        states: vec![5; 8 * m],
        labels: y.iter().map(|&c| c as u32).collect(),
        node_types: vec![],
        node_features: NodeFeatures::Dense { values: x, d: 16 },
        edge_start: (0..=m).map(|i| 7 * i).collect(),
        edges: (0..m).flat_map(|_| (0..7u32).map(|t| [t, t + 1])).collect(),
        edge_types: vec![],
        edge_features: EdgeFeatures::Constant,
        loss: GraphLoss::Hamming {
            class_weight: vec![],
            normalise: true,
        },
    }
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

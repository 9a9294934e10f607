//! The graph models' oracle alone: seconds per pass (every example's
//! loss-augmented decoding once) of
//!
//! - the graph-cut engine on HorseSeg-like segmentation
//!   (`synthetic::segmentation`, Potts edges) at a `w` from a short BMRM
//!   run under the positivity constraints (so every decoding is
//!   submodular and builds a full network), on one thread;
//! - the C decoder path (`bmrm_problem_new_graph_decoder`: the potentials
//!   marshalled for the caller, one call per example) on chains of 8
//!   nodes with 5 states, against the built-in tree engine on the same
//!   chains, both timed as BMRM's oracle seconds per iteration.
//!
//! Compare a run before and after a change of the oracle's hot path.
//!
//!     cargo bench --profile release --bench graph_oracle -- --help

#[path = "common/chains.rs"]
mod chains;

use std::time::Instant;

use bmrm::ffi::{
    bmrm_graph_data_default, bmrm_info, bmrm_potentials, bmrm_problem, bmrm_problem_free,
    bmrm_problem_new_graph_decoder, bmrm_settings_default, bmrm_solver, bmrm_solver_free,
    bmrm_solver_info, bmrm_solver_new, bmrm_solver_run, bmrm_status,
};
use bmrm::models::graph::{synthetic, EngineKind, GraphExamples, GraphModel, NodeFeatures};
use bmrm::{Algorithm, Corner, MaxOracle, Problem, Settings, Solver};
use chains::chains;
use clap::Parser;

#[derive(Parser)]
#[command(about = "Seconds per oracle pass of the graph models (graph cut, the C decoder path)")]
struct Args {
    /// HorseSeg-like images.
    #[arg(long, default_value_t = 200)]
    examples: usize,
    /// Superpixels per side of the segmentation lattice.
    #[arg(long, default_value_t = 10)]
    superpixels: u32,
    /// Appearance features per superpixel.
    #[arg(long, default_value_t = 20)]
    features: usize,
    /// Chains of the C decoder comparison.
    #[arg(long, default_value_t = 2000)]
    chains: usize,
    /// Passes (or BMRM iterations) timed; the median pass is printed.
    #[arg(long, default_value_t = 20)]
    passes: usize,
    #[arg(long, default_value_t = 27)]
    seed: u64,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

fn median(mut t: Vec<f64>) -> f64 {
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// The graph-cut oracle's seconds per pass, serial, at a `w` of a short
/// constrained BMRM run.
fn graph_cut(args: &Args) -> bmrm::Result<(f64, usize)> {
    let ex = synthetic::segmentation(args.examples, args.superpixels, args.features, args.seed);
    let model = GraphModel::new(ex, false, EngineKind::GraphCut.into())?;
    let dim = model.dim();
    let positive = model.positivity_coordinates();
    let model = std::sync::Arc::new(model);
    let mut s = Settings::new(Algorithm::Bmrm, 1e-2);
    s.max_iterations = 20;
    s.num_threads = 1;
    let mut solver = Solver::new(Problem::Examples(model.clone()), s)?;
    let mut lo = vec![f64::NEG_INFINITY; dim];
    for j in positive {
        lo[j] = 0.0;
    }
    solver.set_bounds(lo, vec![f64::INFINITY; dim])?;
    let mut w = vec![0.0; dim];
    solver.run(&mut w)?;
    let m = model.num_examples();
    let mut corner = Corner::new(dim);
    let mut times = Vec::new();
    for _ in 0..args.passes.max(1) {
        let start = Instant::now();
        for i in 0..m {
            corner.clear();
            model.max_oracle(i, &w, &mut corner)?;
        }
        times.push(start.elapsed().as_secs_f64());
    }
    Ok((median(times), m))
}

/// A decoder that costs next to nothing (each node its best unary state,
/// the answer marked inexact), so the timing is the C path's own.
unsafe extern "C" fn unary_decoder(
    _user: *mut std::ffi::c_void,
    p: *const bmrm_potentials,
    labels: *mut u32,
    exact: *mut bool,
) -> i32 {
    // SAFETY: the library passes valid potentials, `num_nodes` labels and
    // `exact`.
    let p = unsafe { &*p };
    let n = p.num_nodes;
    // SAFETY: the arrays' lengths are those bmrm_potentials documents.
    let (unary_start, out) = unsafe {
        (
            std::slice::from_raw_parts(p.unary_start, n + 1),
            std::slice::from_raw_parts_mut(labels, n),
        )
    };
    // SAFETY: as above.
    let unary = unsafe { std::slice::from_raw_parts(p.unary, unary_start[n]) };
    for (i, y) in out.iter_mut().enumerate() {
        let scores = &unary[unary_start[i]..unary_start[i + 1]];
        *y = (0..scores.len())
            .max_by(|&a, &b| scores[a].total_cmp(&scores[b]))
            .unwrap_or(0) as u32;
    }
    // SAFETY: `exact` points to the library's flag.
    unsafe { *exact = false };
    0
}

/// BMRM's oracle seconds per iteration (one pass), `passes` iterations,
/// through the C ABI with [`unary_decoder`].
fn c_decoder(ex: &GraphExamples, passes: usize) -> bmrm::Result<f64> {
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
    let mut problem: *mut bmrm_problem = std::ptr::null_mut();
    // SAFETY: `g` points into `ex` and `edges`, alive during the call; the
    // decoder keeps nothing between calls.
    let rc = unsafe {
        bmrm_problem_new_graph_decoder(
            &g,
            Some(unary_decoder),
            std::ptr::null_mut(),
            true,
            &mut problem,
        )
    };
    if rc != bmrm_status::BMRM_OK {
        return Err(bmrm::Error::internal(
            "bmrm_problem_new_graph_decoder failed",
        ));
    }
    let mut s = bmrm_settings_default(Algorithm::Bmrm as i32);
    s.lambda = 1e-2;
    s.tol_rel = 0.0;
    s.max_iterations = passes as u64;
    s.num_threads = 1;
    let mut solver: *mut bmrm_solver = std::ptr::null_mut();
    // SAFETY: bmrm_info is plain old data; zero is a valid value.
    let mut info: bmrm_info = unsafe { std::mem::zeroed() };
    let mut n = 0usize;
    // SAFETY: `problem` is live; the out-pointers are locals; `w` holds
    // the problem's dimension.
    let ok = unsafe {
        bmrm::ffi::bmrm_problem_dim(problem, &mut n) == bmrm_status::BMRM_OK
            && bmrm_solver_new(problem, &s, &mut solver) == bmrm_status::BMRM_OK
    };
    if !ok {
        // SAFETY: made above, freed once.
        unsafe { bmrm_problem_free(problem) };
        return Err(bmrm::Error::internal("bmrm_solver_new failed"));
    }
    let mut w = vec![0.0; n];
    // SAFETY: `solver` is live, `w` holds `n` doubles, `info` is a local;
    // both handles are freed once.
    let rc = unsafe {
        let rc = bmrm_solver_run(solver, w.as_mut_ptr(), n);
        bmrm_solver_info(solver, &mut info);
        bmrm_solver_free(solver);
        bmrm_problem_free(problem);
        rc
    };
    if rc != bmrm_status::BMRM_OK {
        return Err(bmrm::Error::internal(format!("bmrm_solver_run: {rc:?}")));
    }
    Ok(info.oracle_seconds / info.iterations.max(1) as f64)
}

/// The built-in tree engine's BMRM oracle seconds per iteration on `ex`.
fn built_in(ex: &GraphExamples, passes: usize) -> bmrm::Result<f64> {
    let model = GraphModel::new(ex.clone(), true, EngineKind::TreeMaxSum.into())?;
    let mut s = Settings::new(Algorithm::Bmrm, 1e-2);
    s.tol_rel = 0.0;
    s.max_iterations = passes as u64;
    s.num_threads = 1;
    let mut solver = Solver::new(Problem::from_max_oracle(model), s)?;
    let mut w = vec![0.0; solver.dim()];
    let info = solver.run(&mut w)?;
    Ok(info.oracle_seconds / info.iterations.max(1) as f64)
}

fn main() -> bmrm::Result<()> {
    let args = Args::parse();
    let (cut, m) = graph_cut(&args)?;
    println!(
        "graph cut, HorseSeg-like m = {m}, {0}x{0} superpixels, d = {1}: {2:.3} ms per pass (median of {3}, 1 thread)",
        args.superpixels,
        args.features,
        1e3 * cut,
        args.passes
    );
    let ex = chains(args.chains, args.seed);
    let c = c_decoder(&ex, args.passes)?;
    let rust = built_in(&ex, args.passes)?;
    println!(
        "chains m = {}, 8 nodes x 5 states, oracle ms per BMRM iteration (1 thread): C decoder path {:.3} | built-in tree engine {:.3} | ratio {:.2}x",
        args.chains,
        1e3 * c,
        1e3 * rust,
        c / rust
    );
    Ok(())
}

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

use bmrm::models::graph::{synthetic, EngineKind, GraphModel};
use bmrm::{MaxOracle, Problem};
use clap::Parser;
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
    /// "reuse" or "sgd".
    #[arg(long, default_value = "reuse")]
    start: String,
    /// SGD passes of the SGD start.
    #[arg(long, default_value_t = 2)]
    sgd_passes: u32,
    /// Summed-risk lambda of the BCFW runs.
    #[arg(long, default_value_t = 1.0)]
    bcfw_lambda: f64,
    /// Passes of every BCFW run.
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
    for name in &args.problems {
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
        bundle_table(&problem, m, &settings, &|w| test.hamming_error(w))?;
        bcfw_table(&problem, m, &settings)?;
    }
    Ok(())
}

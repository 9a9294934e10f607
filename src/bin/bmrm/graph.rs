//! `bmrm train --graph` and `bmrm predict` of a graph model (the reader of
//! the graph text format is [`crate::graph_data`]).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bmrm::models::graph::registry::{self, EngineEntry, ENGINES};
use bmrm::models::graph::{EngineChoice, EngineKind, GraphModel};
use bmrm::{MaxOracle, Problem, Solver};
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use serde_json::json;

use crate::graph_data::{parse_header, read, GraphFile, Header};
use crate::modelfile::ModelFile;
use crate::progress::{emit, info_json, rel_gap, short, Mode, Progress};
use crate::{option_names, say};

/// `--engine`: a built-in inference engine of the registry.
#[derive(Debug, Clone, Copy)]
pub struct EngineArg(&'static EngineEntry);

impl EngineArg {
    /// The default, [`EngineKind::Auto`].
    pub fn auto() -> Self {
        EngineArg(registry::entry(EngineKind::Auto))
    }
    fn kind(self) -> EngineKind {
        self.0.kind
    }
    fn name(self) -> &'static str {
        self.0.name
    }
}

/// `--engine`'s values: every registry entry, its name with its aliases
/// and its summary for the help.
pub fn engine_parser() -> impl TypedValueParser<Value = EngineArg> {
    PossibleValuesParser::new(ENGINES.iter().map(|e| {
        PossibleValue::new(e.name)
            .aliases(e.aliases.iter().copied())
            .help(e.summary)
    }))
    .map(|name| EngineArg(registry::by_name(&name).expect("a possible value is a registry name")))
}

fn model(g: GraphFile, bias: bool, engine: EngineArg, path: &Path) -> Result<GraphModel, String> {
    GraphModel::new(g.examples, bias, EngineChoice::Kind(engine.kind()))
        .map_err(|e| format!("graph file {}: {e}", path.display()))
}

/// What `bmrm train --graph` needs from the command line.
pub struct TrainGraph<'a> {
    pub data: &'a Path,
    pub limit: Option<usize>,
    pub engine: EngineArg,
    pub bias: bool,
    pub reg: &'a crate::RegArgs,
    pub solver: &'a crate::SolverArgs,
    pub mode: Mode,
    pub output: Option<&'a Path>,
    pub test: Option<&'a Path>,
    /// Every weight >= 0 (`--nonneg`).
    pub nonneg: bool,
}

/// `bmrm train --graph`.
pub fn train(a: TrainGraph<'_>) -> Result<(), String> {
    let mode = a.mode;
    let g = read(a.data, a.limit)?;
    let (header, states) = (g.header.clone(), g.states);
    let m = g.examples.num_examples();
    let model = Arc::new(model(g, a.bias, a.engine, a.data)?);
    let lambda = a.reg.lambda(m);
    let settings = a.solver.settings(lambda)?;
    let (alg, tol_rel) = (settings.algorithm, settings.tol_rel);
    let mut solver = Solver::new(Problem::Examples(model.clone()), settings)
        .map_err(|e| option_names(&e.to_string()))?;
    if a.nonneg {
        let dim = solver.dim();
        solver
            .set_bounds(vec![0.0; dim], vec![f64::INFINITY; dim])
            .map_err(|e| format!("--nonneg: {e}"))?;
    }
    say!(
        mode,
        "training a graph model ({m} examples, {states} states, {} weights, engine {}) with {} at lambda = {}",
        solver.dim(),
        a.engine.name(),
        alg.name(),
        short(lambda)
    );
    let progress = Progress::attach(&mut solver, mode, alg.name().to_string(), tol_rel, vec![]);
    let mut w = vec![0.0; solver.dim()];
    // The time limit covers the run and the error passes after it.
    let limit = solver.settings().time_limit_seconds;
    let deadline = (limit > 0.0).then(|| Instant::now() + Duration::from_secs_f64(limit));
    let result = solver.run(&mut w);
    progress.finish(result.as_ref().ok());
    let info = result.map_err(|e| e.to_string())?;
    let train_error = hamming_error_until(&model, &w, deadline)?;
    let test_error = match a.test {
        Some(p) => {
            let t = read(p, None)?;
            check_same(&header, states, &t, p)?;
            let tm = model_for(t, a.bias, a.engine, p, w.len())?;
            hamming_error_until(&tm, &w, deadline)?
        }
        None => None,
    };
    if let Some(out) = a.output {
        let mut f = ModelFile::new();
        f.set("model", "graph");
        f.set("graph-format", 1);
        f.set("states", states);
        f.set("node-features", header.node_dim);
        f.set("edges", &header.edges);
        f.set("edge-features", header.edge_dim);
        f.set("loss", &header.loss);
        f.set("bias", u8::from(a.bias));
        f.set("engine", a.engine.name());
        f.set("algorithm", alg.name());
        f.set("lambda", lambda);
        f.set("train-examples", m);
        f.set("primal", info.primal);
        f.set("gap", info.gap);
        f.set("certified", u8::from(info.certified));
        f.weights = w.clone();
        f.write(out)?;
    }
    match mode {
        Mode::Human => {
            println!(
                "{}: {:?} after {} iterations in {:.2} s",
                alg.name(),
                info.exit,
                info.iterations,
                info.elapsed_seconds
            );
            println!(
                "primal F(w) = {:.8}, lower bound = {:.8}, gap = {:.3e} (relative {:.3e}){}",
                info.primal,
                info.lower_bound,
                info.gap,
                rel_gap(&info),
                if model.exact() {
                    ""
                } else {
                    " (approximate engine: not certified)"
                }
            );
            match train_error {
                Some(e) => println!("training error {:.2} % of nodes", 100.0 * e),
                None => println!("training error not computed (the time limit passed)"),
            }
            match (test_error, a.test) {
                (Some(e), _) => println!("test error {:.2} % of nodes", 100.0 * e),
                (None, Some(_)) => println!("test error not computed (the time limit passed)"),
                (None, None) => {}
            }
            match a.output {
                Some(p) => println!("model written to {}", p.display()),
                None => println!("model not saved (use --output FILE)"),
            }
        }
        Mode::Json => {
            let mut v = json!({
                "type": "summary",
                "model": "graph",
                "engine": a.engine.name(),
                "algorithm": alg.name(),
                "lambda": lambda,
                "examples": m,
                "train_error": train_error,
                "test_error": test_error,
                "model_file": a.output.map(|p| p.display().to_string()),
            });
            for (key, val) in info_json(&info).as_object().unwrap() {
                v[key] = val.clone();
            }
            emit(&v);
        }
        Mode::Quiet => {}
    }
    Ok(())
}

/// The fraction of nodes `model` labels wrongly at `w`, decoding example
/// after example; `None` when `deadline` passes first (a slow engine's pass
/// could run far beyond the time limit).
fn hamming_error_until(
    model: &GraphModel,
    w: &[f64],
    deadline: Option<Instant>,
) -> Result<Option<f64>, String> {
    let ex = model.examples();
    let mut wrong = 0usize;
    for i in 0..ex.num_examples() {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(None);
        }
        let (y, _) = model.predict(w, i).map_err(|e| e.to_string())?;
        let truth = &ex.labels[ex.node_start[i]..ex.node_start[i + 1]];
        wrong += y.iter().zip(truth).filter(|(a, b)| a != b).count();
    }
    Ok(Some(wrong as f64 / ex.states.len() as f64))
}

/// The data's kinds must be the model's.
fn check_same(h: &Header, states: u32, g: &GraphFile, p: &Path) -> Result<(), String> {
    let mut want = h.clone();
    want.examples = g.header.examples;
    if g.header != want || g.states != states {
        return Err(format!(
            "graph file {}: node-features={} edges={} edge-features={} loss={} with {} states, \
             but the model has node-features={} edges={} edge-features={} loss={} with {states} states",
            p.display(),
            g.header.node_dim,
            g.header.edges,
            g.header.edge_dim,
            g.header.loss,
            g.states,
            h.node_dim,
            h.edges,
            h.edge_dim,
            h.loss
        ));
    }
    Ok(())
}

fn model_for(
    g: GraphFile,
    bias: bool,
    e: EngineArg,
    p: &Path,
    dim: usize,
) -> Result<GraphModel, String> {
    let gm = model(g, bias, e, p)?;
    if gm.dim() != dim {
        return Err(format!(
            "graph file {}: the model has {dim} weights but this data needs {}",
            p.display(),
            gm.dim()
        ));
    }
    Ok(gm)
}

/// A graph model file read back.
pub struct SavedGraph {
    header: Header,
    states: u32,
    bias: bool,
    engine: EngineArg,
    w: Vec<f64>,
}

/// Reads a model file whose `model` is `graph`; every key must be known.
pub fn read_model(f: ModelFile, path: &Path) -> Result<SavedGraph, String> {
    const KEYS: [&str; 15] = [
        "model",
        "graph-format",
        "states",
        "node-features",
        "edges",
        "edge-features",
        "loss",
        "bias",
        "engine",
        "algorithm",
        "lambda",
        "train-examples",
        "primal",
        "gap",
        "certified",
    ];
    let name = path.display();
    if let Some((k, _)) = f.header.iter().find(|(k, _)| !KEYS.contains(&k.as_str())) {
        return Err(format!(
            "model file {name}: unknown key `{k}` in a graph model"
        ));
    }
    if f.require::<u32>(path, "graph-format")? != 1 {
        return Err(format!(
            "model file {name}: this bmrm reads graph-format 1 only"
        ));
    }
    let header = parse_header(&format!(
        "bmrm-graph 1 examples=1 node-features={} edges={} edge-features={} loss={}",
        f.require::<usize>(path, "node-features")?,
        f.require::<String>(path, "edges")?,
        f.require::<usize>(path, "edge-features")?,
        f.require::<String>(path, "loss")?,
    ))
    .map_err(|e| format!("model file {name}: {e}"))?;
    let engine_name = f.require::<String>(path, "engine")?;
    let engine = registry::by_name(&engine_name)
        .map(EngineArg)
        .ok_or_else(|| format!("model file {name}: unknown engine `{engine_name}`"))?;
    let bias = match f.require::<u8>(path, "bias")? {
        0 => false,
        1 => true,
        b => return Err(format!("model file {name}: bias {b} is not 0 or 1")),
    };
    Ok(SavedGraph {
        header,
        states: f.require(path, "states")?,
        bias,
        engine,
        w: f.weights,
    })
}

/// `bmrm predict` with a graph model: one labelling a line (the states of
/// the example's nodes) on stdout or in `output`, the node error on stdout.
pub fn predict(
    saved: SavedGraph,
    data: &Path,
    limit: Option<usize>,
    output: Option<&Path>,
    mode: Mode,
) -> Result<(), String> {
    let g = read(data, limit)?;
    check_same(&saved.header, saved.states, &g, data)?;
    let gm = model_for(g, saved.bias, saved.engine, data, saved.w.len())?;
    let ex = gm.examples();
    let (mut lines, mut wrong, mut all_exact) = (Vec::new(), 0usize, true);
    for i in 0..ex.num_examples() {
        let (y, exact) = gm.predict(&saved.w, i).map_err(|e| e.to_string())?;
        all_exact &= exact;
        let truth = &ex.labels[ex.node_start[i]..ex.node_start[i + 1]];
        wrong += y.iter().zip(truth).filter(|(a, b)| a != b).count();
        lines.push(
            y.iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(" "),
        );
    }
    let nodes = ex.labels.len();
    let error = wrong as f64 / nodes.max(1) as f64;
    match output {
        Some(p) => {
            let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
            std::fs::write(p, text)
                .map_err(|e| format!("predictions file {}: {e}", p.display()))?;
        }
        None if mode != Mode::Json => lines.iter().for_each(|l| println!("{l}")),
        None => {}
    }
    say!(
        mode,
        "{} examples ({nodes} nodes) of {}: node error {:.2} %{}",
        ex.num_examples(),
        data.display(),
        100.0 * error,
        if all_exact {
            ""
        } else {
            " (some labellings not known to be maximisers)"
        }
    );
    if mode == Mode::Json {
        emit(&json!({
            "type": "summary",
            "model": "graph",
            "examples": ex.num_examples(),
            "nodes": nodes,
            "error": error,
            "exact": all_exact,
            "labellings": if output.is_none() { json!(lines) } else { json!(null) },
            "predictions": output.map(|p| p.display().to_string()),
        }));
    }
    Ok(())
}

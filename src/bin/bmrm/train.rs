//! `bmrm train`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bmrm::Solver;
use clap::Args;
use serde_json::json;

use crate::data;
use crate::model::{Errors, Provenance, Task};
use crate::progress::{emit, info_json, rel_gap, short, Mode, Progress, NOT_CERTIFIED};
use crate::{option_names, say, DataArgs, OutputArgs, RegArgs, SolverArgs};

#[derive(Args, Debug)]
pub struct TrainArgs {
    #[command(flatten, next_help_heading = "Data and model")]
    pub data: DataArgs,
    #[command(flatten, next_help_heading = "Regularisation (give one)")]
    pub reg: RegArgs,
    #[command(flatten, next_help_heading = "Solver")]
    pub solver: SolverArgs,
    #[command(flatten, next_help_heading = "Output")]
    pub out: OutputArgs,
    /// Save the model to this file (a text file; `bmrm predict` reads it).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also report the error on this data, in the same format: for idx, ocr and conll
    /// data the test part of the standard split (with --folds: the other folds).
    #[arg(long, value_name = "DATA")]
    pub test: Option<PathBuf>,
    /// Keep every weight >= 0 (box constraints, honoured by BMRM, Prox-BMRM,
    /// P-BMRM, Prox-P-BMRM and BCFW; SGD, an SGD start and the cutting-plane
    /// method refuse it).
    #[arg(long)]
    pub nonneg: bool,
    /// DATA (and --test) are graph files (docs/cli.md, "Graph problems"): train a
    /// factor-graph model, decoded by --engine.
    #[arg(long)]
    pub graph: bool,
    /// With --graph: the inference engine.
    #[arg(long, value_name = "NAME", value_parser = crate::graph::engine_parser())]
    pub engine: Option<crate::graph::EngineArg>,
    /// Train over MPI (a build with `--features mpi`, started by mpirun, e.g.
    /// `mpirun -np 4 bmrm train --distributed ...`): every rank reads the
    /// data and evaluates its share of the parts; rank 0 keeps the bundle,
    /// reports and writes the model. The result is the single-process one
    /// with the same parts.
    #[cfg(feature = "mpi")]
    #[arg(long)]
    pub distributed: bool,
}

/// `--distributed`: the run over MPI. `None` on ranks other than 0 (they
/// have nothing to report); rank 0 gets the solution and the MPI universe,
/// which must live until the output is written.
#[cfg(feature = "mpi")]
fn run_distributed(
    task: &Task,
    settings: bmrm::Settings,
) -> Result<
    Option<(
        Vec<f64>,
        bmrm::Info,
        bmrm::distributed::mpi::environment::Universe,
    )>,
    String,
> {
    use bmrm::distributed::mpi::topology::Communicator;
    use bmrm::distributed::{join_whole, ranks_lost, Options};
    let universe =
        bmrm::distributed::mpi::initialize().ok_or("--distributed: MPI is already initialised")?;
    let world = universe.world();
    let mut w = vec![0.0; task.problem().dim()];
    let outcome = join_whole(&world, &task.problem(), settings, Options::default())
        .and_then(|mut node| node.run(&mut w));
    match outcome {
        Ok(info) if world.rank() == 0 => Ok(Some((w, info, universe))),
        Ok(_) => Ok(None),
        Err(e) if ranks_lost(&e) => {
            // Lost ranks would make MPI_Finalize wait forever.
            eprintln!("bmrm train --distributed (rank {}): {e}", world.rank());
            std::process::exit(1);
        }
        Err(e) => Err(format!("rank {}: {e}", world.rank())),
    }
}

/// Trains in this process, with the live progress display.
fn train_here(
    task: &Task,
    settings: bmrm::Settings,
    mode: Mode,
    lambda: f64,
    tol_rel: f64,
    nonneg: bool,
) -> Result<(Vec<f64>, bmrm::Info), String> {
    let alg = settings.algorithm;
    let m = task.num_examples();
    let mut solver =
        Solver::new(task.problem(), settings).map_err(|e| option_names(&e.to_string()))?;
    if nonneg {
        let dim = solver.dim();
        solver
            .set_bounds(vec![0.0; dim], vec![f64::INFINITY; dim])
            .map_err(|e| format!("--nonneg: {}", option_names(&e.to_string())))?;
    }
    say!(
        mode,
        "training a {} with {} at lambda = {} (C = 1/(m lambda) = {}, m = {m})",
        task.describe(solver.dim()),
        alg.name(),
        short(lambda),
        short(1.0 / (m as f64 * lambda))
    );
    let progress = Progress::attach(&mut solver, mode, alg.name().to_string(), tol_rel, vec![]);
    let mut w = vec![0.0; solver.dim()];
    let result = solver.run(&mut w);
    progress.finish(result.as_ref().ok());
    let info = result.map_err(|e| e.to_string())?;
    Ok((w, info))
}

/// The folds not in `folds`.
pub fn other_folds(folds: Option<&[u8]>) -> Option<Vec<u8>> {
    folds.map(|f| (0..10).filter(|x| !f.contains(x)).collect())
}

/// What an error pass cut short by the time limit prints.
const NOT_COMPUTED: &str = "not computed (the time limit passed)";

/// "12.34 %" and, for chains, the sequence error.
pub fn describe_errors(e: &Errors, unit: &str) -> String {
    let mut s = format!("{:.2} %", 100.0 * e.rate);
    if let Some(r) = e.sequence_rate {
        s += &format!(" of {unit} ({:.2} % of sequences)", 100.0 * r);
    }
    if e.unknown > 0 {
        s += &format!(
            " ({} with labels not in the training data, counted as errors)",
            e.unknown
        );
    }
    s
}

pub fn run(mut a: TrainArgs) -> Result<(), String> {
    let mode = a.out.mode();
    a.reg.check()?;
    a.solver.settings(1.0)?; // the other settings, before reading the data
    if let Some(out) = &a.output {
        crate::modelfile::check_writable(out)?;
    }
    if a.graph {
        return run_graph(&a, mode);
    }
    if a.engine.is_some() {
        return Err("--engine is for graph models: give --graph".into());
    }
    let src = a.data.source();
    let ex = data::load(&src, None)?;
    let (n_seq, n_tok, secs) = (ex.num_sequences(), ex.len(), ex.seconds);
    let task = Task::new(ex, a.data.model, !a.solver.no_bias)?;
    let m = task.num_examples();
    say!(
        mode,
        "read {} from {} in {secs:.1} s",
        if task.kind == crate::model::Kind::Chain {
            format!("{n_seq} sequences ({n_tok} tokens)")
        } else {
            format!("{n_tok} examples")
        },
        src.describe()
    );
    let lambda = a.reg.lambda(m);
    if let Some((examples, norm2)) = task.multiclass_rows() {
        if let Some(pick) = a.solver.pick_for_multiclass(lambda, examples, norm2) {
            say!(mode, "algorithm: {pick}");
        }
    }
    let settings = a.solver.settings(lambda)?;
    // The time limit covers the run and the error passes after it.
    let limit = settings.time_limit_seconds;
    let deadline = Duration::try_from_secs_f64(limit)
        .ok()
        .filter(|_| limit > 0.0)
        .and_then(|l| Instant::now().checked_add(l));
    let alg = settings.algorithm;
    let tol_rel = settings.tol_rel;
    #[cfg(feature = "mpi")]
    let _universe;
    #[cfg(feature = "mpi")]
    if a.distributed && a.nonneg {
        return Err("--nonneg is not available with --distributed".into());
    }
    #[cfg(feature = "mpi")]
    let (w, info) = if a.distributed {
        match run_distributed(&task, settings.clone())? {
            Some((w, info, universe)) => {
                _universe = universe;
                (w, info)
            }
            None => return Ok(()),
        }
    } else {
        train_here(&task, settings, mode, lambda, tol_rel, a.nonneg)?
    };
    #[cfg(not(feature = "mpi"))]
    let (w, info) = train_here(&task, settings, mode, lambda, tol_rel, a.nonneg)?;
    let unit = match task.space.input {
        data::Format::Ocr => "letters",
        _ => "tokens",
    };
    let train_errors = task.errors_until(&w, deadline);
    let test = match &a.test {
        Some(p) => {
            let folds = other_folds(a.data.folds.as_deref());
            let tsrc = a.data.held_out(p, folds.as_deref());
            let ex = data::load(&tsrc, Some(&task.space))?;
            let test_task = Task::new(ex, task.kind, task.bias)?;
            Some((
                tsrc.describe(),
                test_task.num_examples(),
                test_task.errors_until(&w, deadline),
            ))
        }
        None => None,
    };
    if let Some(out) = &a.output {
        task.to_file(
            &w,
            &Provenance {
                algorithm: alg.name(),
                lambda,
                train_examples: m,
                info: &info,
            },
        )
        .write(out)?;
    }
    match mode {
        Mode::Human => {
            println!(
                "{}: {:?} after {} iterations in {:.2} s ({:.0} % in the oracle)",
                alg.name(),
                info.exit,
                info.iterations,
                info.elapsed_seconds,
                100.0 * info.oracle_seconds / info.elapsed_seconds.max(1e-12)
            );
            println!(
                "primal F(w) = {:.8}, lower bound = {:.8}, gap = {:.3e} (relative {:.3e})",
                info.primal,
                info.lower_bound,
                info.gap,
                rel_gap(&info)
            );
            if !info.certified {
                println!("{NOT_CERTIFIED}");
            }
            match &train_errors {
                Some(e) => println!("training error {}", describe_errors(e, unit)),
                None => println!("training error {NOT_COMPUTED}"),
            }
            match &test {
                Some((what, n, Some(e))) => println!(
                    "test error {} on {n} {} of {what}",
                    describe_errors(e, unit),
                    if e.sequence_rate.is_some() {
                        "sequences"
                    } else {
                        "examples"
                    }
                ),
                Some((what, _, None)) => println!("test error on {what} {NOT_COMPUTED}"),
                None => {}
            }
            match &a.output {
                Some(p) => println!("model written to {}", p.display()),
                None => println!("model not saved (use --output FILE)"),
            }
        }
        Mode::Json => {
            let mut v = json!({
                "type": "summary",
                "model": task.kind.name(),
                "algorithm": alg.name(),
                "lambda": lambda,
                "C": 1.0 / (m as f64 * lambda),
                "examples": m,
                "features": task.space.d,
                "classes": task.space.labels.len(),
                "train_error": train_errors.as_ref().map(|e| e.rate),
                "train_sequence_error": train_errors.as_ref().and_then(|e| e.sequence_rate),
                "test_error": test.as_ref().and_then(|t| t.2.as_ref()).map(|e| e.rate),
                "test_sequence_error": test
                    .as_ref()
                    .and_then(|t| t.2.as_ref())
                    .and_then(|e| e.sequence_rate),
                "model_file": a.output.as_ref().map(|p| p.display().to_string()),
            });
            for (key, val) in info_json(&info).as_object().unwrap() {
                v[key] = val.clone();
            }
            if !info.certified {
                v["note"] = json!(NOT_CERTIFIED);
            }
            emit(&v);
        }
        Mode::Quiet => {}
    }
    Ok(())
}

/// `bmrm train --graph`: the options that do not apply to graph data are errors.
fn run_graph(a: &TrainArgs, mode: Mode) -> Result<(), String> {
    let d = &a.data;
    let unused = [
        (d.format != data::Format::Auto, "--format"),
        (d.split.is_some(), "--split"),
        (d.folds.is_some(), "--folds"),
        (d.model != crate::model::Kind::Auto, "--model"),
    ];
    if let Some((_, name)) = unused.iter().find(|(set, _)| *set) {
        return Err(format!("{name} does not apply to graph data (--graph)"));
    }
    #[cfg(feature = "mpi")]
    if a.distributed {
        return Err("--distributed does not apply to graph data (--graph)".into());
    }
    crate::graph::train(crate::graph::TrainGraph {
        data: &d.data,
        limit: d.examples,
        engine: a.engine.unwrap_or_else(crate::graph::EngineArg::auto),
        bias: !a.solver.no_bias,
        reg: &a.reg,
        solver: &a.solver,
        mode,
        output: a.output.as_deref(),
        test: a.test.as_deref(),
        nonneg: a.nonneg,
    })
}

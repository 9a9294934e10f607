//! `bmrm path`: a lambda path with warm starts and validation error.

use std::path::PathBuf;

use bmrm::{Algorithm, Solver};
use clap::Args;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde_json::json;

use crate::data;
use crate::model::{Provenance, Task};
use crate::progress::{emit, info_json, rel_gap, short, Mode, Progress};
use crate::train::other_folds;
use crate::{option_names, say, DataArgs, OutputArgs, SolverArgs};

#[derive(Args, Debug)]
pub struct PathArgs {
    /// The lambdas, comma-separated, solved in decreasing order.
    #[arg(
        long,
        value_delimiter = ',',
        conflicts_with = "cs",
        allow_negative_numbers = true,
        default_value = "1e-1,1e-2,1e-3,1e-4"
    )]
    pub lambdas: Vec<f64>,
    /// LIBLINEAR's C values instead of lambdas (lambda = 1/(m C)), comma-separated.
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
    pub cs: Option<Vec<f64>>,
    /// Validation data, in the same format: for idx, ocr and conll data the test part of
    /// the standard split (with --folds: the other folds).
    #[arg(long, value_name = "DATA", conflicts_with = "holdout")]
    pub validation: Option<PathBuf>,
    /// Without --validation: hold out this share of the training examples
    /// (chosen at random with --seed) for validation.
    #[arg(long, default_value_t = 0.2)]
    pub holdout: f64,
    /// BCFW: the regularisation path's duality-gap target: every lambda in
    /// [--lambda-min, lambda_max] gets a model within eps of optimal.
    #[arg(long, default_value_t = 1e-2, allow_negative_numbers = true)]
    pub eps: f64,
    /// BCFW: where the regularisation path stops.
    #[arg(long, default_value_t = 1e-4, allow_negative_numbers = true)]
    pub lambda_min: f64,
    /// BCFW: most breakpoints of the regularisation path.
    #[arg(long, default_value_t = 200)]
    pub max_breakpoints: usize,
    /// BCFW: solve on the --lambdas grid (warm starts) instead of the regularisation path.
    #[arg(long)]
    pub bcfw_grid: bool,
    #[command(flatten, next_help_heading = "Data and model")]
    pub data: DataArgs,
    #[command(flatten, next_help_heading = "Solver")]
    pub solver: SolverArgs,
    #[command(flatten, next_help_heading = "Output")]
    pub out: OutputArgs,
    /// Save the model with the lowest validation error here.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(a: PathArgs) -> Result<(), String> {
    let mode = a.out.mode();
    if let Some(out) = &a.output {
        crate::modelfile::check_writable(out)?;
    }
    let given: Vec<f64> = a.cs.clone().unwrap_or_else(|| a.lambdas.clone());
    let what = if a.cs.is_some() { "--cs" } else { "--lambdas" };
    if given.is_empty() {
        return Err(format!("{what} is empty"));
    }
    if let Some(v) = given.iter().find(|v| !(v.is_finite() && **v > 0.0)) {
        return Err(format!(
            "{what}: every value must be a positive number, got {v}"
        ));
    }
    if a.validation.is_none() && !(a.holdout > 0.0 && a.holdout < 1.0) {
        return Err(format!(
            "--holdout must be between 0 and 1 (exclusive), got {}",
            a.holdout
        ));
    }
    a.solver.settings(1.0)?;
    if !(a.eps.is_finite() && a.eps > 0.0) {
        return Err(format!("--eps must be a positive number, got {}", a.eps));
    }
    if !(a.lambda_min.is_finite() && a.lambda_min > 0.0) {
        return Err(format!(
            "--lambda-min must be a positive number, got {}",
            a.lambda_min
        ));
    }
    let src = a.data.source();
    let ex = data::load(&src, None)?;
    let bias = !a.solver.no_bias;
    // The training and validation sets.
    let (train, val, val_what) = match &a.validation {
        Some(p) => {
            let folds = other_folds(a.data.folds.as_deref());
            let vsrc = a.data.held_out(p, folds.as_deref());
            let vex = data::load(&vsrc, Some(&ex.space))?;
            let train = Task::new(ex, a.data.model, bias)?;
            let val = Task::new(vex, train.kind, bias)?;
            (train, val, vsrc.describe())
        }
        None => {
            let n = ex.num_sequences();
            let n_val = ((n as f64) * a.holdout).round() as usize;
            if n_val == 0 || n_val >= n {
                return Err(format!(
                    "--holdout {} of {n} examples leaves no training or no validation example",
                    a.holdout
                ));
            }
            let mut idx: Vec<usize> = (0..n).collect();
            idx.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(a.solver.seed));
            let (val_idx, train_idx) = idx.split_at(n_val);
            let (mut val_idx, mut train_idx) = (val_idx.to_vec(), train_idx.to_vec());
            val_idx.sort_unstable();
            train_idx.sort_unstable();
            let train = Task::new(ex.select(&train_idx), a.data.model, bias)?;
            let val = Task::new(ex.select(&val_idx), train.kind, bias)?;
            let unit = if ex.lengths.is_some() {
                "sequences"
            } else {
                "examples"
            };
            (
                train,
                val,
                format!("{n_val} held-out {unit} (seed {})", a.solver.seed),
            )
        }
    };
    let m = train.num_examples();
    let mut lambdas: Vec<f64> = if a.cs.is_some() {
        given.iter().map(|c| 1.0 / (m as f64 * c)).collect()
    } else {
        given
    };
    lambdas.sort_by(|x, y| y.partial_cmp(x).unwrap());
    lambdas.dedup();
    let settings = a.solver.settings(lambdas[0])?;
    let alg = settings.algorithm;
    let tol_rel = settings.tol_rel;
    let mut solver =
        Solver::new(train.problem(), settings).map_err(|e| option_names(&e.to_string()))?;
    say!(
        mode,
        "{m} training examples from {}, validation on {val_what}; {}",
        src.describe(),
        train.describe(solver.dim())
    );
    let bcfw_path = alg == Algorithm::Bcfw && !a.bcfw_grid;
    if bcfw_path {
        say!(
            mode,
            "BCFW regularisation path: every lambda from lambda_max down to {:e} gets a model \
             within a duality gap of eps = {:e}; one row per breakpoint",
            a.lambda_min,
            a.eps
        );
    } else {
        say!(
            mode,
            "{} on {} lambdas, each warm-started from the previous solution{}",
            alg.name(),
            lambdas.len(),
            if alg == Algorithm::Bcfw {
                ""
            } else {
                " (cutting planes kept)"
            }
        );
    }
    say!(
        mode,
        "{:>11} {:>11} {:>6} {:>8} {:>13} {:>9} {:>10} {:>9}",
        "lambda",
        "C",
        "iters",
        "seconds",
        "primal",
        "rel. gap",
        "train err",
        "val. err"
    );
    let mut best: Option<(f64, f64, Vec<f64>, bmrm::Info)> = None;
    let mut rows = Vec::new();
    let mut report =
        |lambda: f64, info: bmrm::Info, w: &[f64], extra: Vec<(&str, serde_json::Value)>| {
            let train_err = train.errors(w).rate;
            let val_err = val.errors(w).rate;
            let c = 1.0 / (m as f64 * lambda);
            say!(
                mode,
                "{:>11.4e} {:>11.4e} {:>6} {:>8.2} {:>13.8} {:>9.2e} {:>9.2}% {:>8.2}%",
                lambda,
                c,
                info.iterations,
                info.elapsed_seconds,
                info.primal,
                rel_gap(&info),
                100.0 * train_err,
                100.0 * val_err
            );
            if mode == Mode::Json {
                let mut v = json!({
                    "type": "lambda",
                    "lambda": lambda,
                    "C": c,
                    "train_error": train_err,
                    "validation_error": val_err,
                });
                for (key, val) in info_json(&info).as_object().unwrap() {
                    v[key] = val.clone();
                }
                for (key, val) in extra {
                    v[key] = val;
                }
                emit(&v);
            }
            rows.push((lambda, val_err));
            if best.as_ref().is_none_or(|b| val_err < b.1) {
                best = Some((lambda, val_err, w.to_vec(), info));
            }
        };
    if bcfw_path {
        let progress = Progress::attach(&mut solver, mode, "BCFW path".into(), 0.0, vec![]);
        let t = std::time::Instant::now();
        // `bcfw_path` is set for the BCFW algorithm only, so the handle exists.
        let result = match solver.bcfw_mut() {
            Some(mut bcfw) => bcfw.path(a.eps, a.lambda_min, a.max_breakpoints),
            None => Err(bmrm::Error::invalid_argument(
                "the BCFW path needs --algorithm bcfw",
            )),
        };
        progress.finish(None);
        let points = result.map_err(|e| e.to_string())?;
        let seconds = t.elapsed().as_secs_f64();
        for p in &points {
            let info = bmrm::Info {
                exit: p.exit,
                iterations: p.passes,
                oracle_calls: p.oracle_calls,
                primal: p.primal,
                lower_bound: p.primal - p.gap,
                gap: p.gap,
                certified: p.certified,
                ..Default::default()
            };
            report(
                p.lambda,
                info,
                &p.w,
                vec![
                    ("lambda_low", json!(p.lambda_low)),
                    ("passes", json!(p.passes)),
                ],
            );
        }
        say!(
            mode,
            "{} breakpoints in {seconds:.2} s ({} oracle calls, {:.1} effective passes)",
            points.len(),
            points.last().map_or(0, |p| p.oracle_calls),
            points
                .last()
                .map_or(0.0, |p| p.oracle_calls as f64 / m as f64)
        );
    } else {
        let mut w = vec![0.0; solver.dim()];
        for &lambda in &lambdas {
            solver.set_lambda(lambda).map_err(|e| e.to_string())?;
            let progress = Progress::attach(
                &mut solver,
                mode,
                format!("{} lambda {lambda:.3e}", alg.name()),
                tol_rel,
                vec![("lambda", json!(lambda))],
            );
            let result = solver.run(&mut w);
            progress.finish(result.as_ref().ok());
            let info = result.map_err(|e| e.to_string())?;
            report(lambda, info, &w, vec![]);
        }
    }
    let (best_lambda, best_err, best_w, best_info) = best.expect("at least one lambda");
    say!(
        mode,
        "lowest validation error: {:.2} % at lambda = {} (C = {})",
        100.0 * best_err,
        short(best_lambda),
        short(1.0 / (m as f64 * best_lambda))
    );
    if let Some(out) = &a.output {
        train
            .to_file(
                &best_w,
                &Provenance {
                    algorithm: alg.name(),
                    lambda: best_lambda,
                    train_examples: m,
                    info: &best_info,
                },
            )
            .write(out)?;
        say!(
            mode,
            "model at lambda = {} written to {}",
            short(best_lambda),
            out.display()
        );
    }
    if mode == Mode::Json {
        emit(&json!({
            "type": "summary",
            "model": train.kind.name(),
            "algorithm": alg.name(),
            "best_lambda": best_lambda,
            "best_C": 1.0 / (m as f64 * best_lambda),
            "best_validation_error": best_err,
            "lambdas": rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            "validation_errors": rows.iter().map(|r| r.1).collect::<Vec<_>>(),
            "model_file": a.output.as_ref().map(|p| p.display().to_string()),
        }));
    }
    Ok(())
}

//! `bmrm train`.

use std::path::PathBuf;
use std::sync::Arc;

use bmrm::models::Multiclass;
use bmrm::{Problem, Solver};
use clap::Args;
use serde_json::json;

use crate::data::{self, Source, Split};
use crate::model::{error_rate, LinearMulticlass, Provenance};
use crate::progress::{emit, info_json, rel_gap, Progress};
use crate::{say, DataArgs, OutputArgs, RegArgs, SolverArgs};

#[derive(Args, Debug)]
pub struct TrainArgs {
    #[command(flatten, next_help_heading = "Data")]
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
    /// Also report the error on this data (same format as the training data;
    /// for an idx directory, its t10k-* files unless --split says otherwise).
    #[arg(long, value_name = "DATA")]
    pub test: Option<PathBuf>,
}

pub fn run(a: TrainArgs) -> Result<(), String> {
    let mode = a.out.mode();
    a.reg.check()?;
    a.solver.settings(1.0)?; // the other settings, before reading the data
    let src = Source {
        path: &a.data.data,
        format: a.data.format,
        split: a.data.split.unwrap_or(Split::Train),
        limit: a.data.examples,
    };
    let set = data::load_multiclass(&src)?;
    let (m, d, k) = (set.m(), set.d, set.labels.len());
    say!(
        mode,
        "read {m} examples, {d} features, {k} classes from {} in {:.1} s",
        src.describe(),
        set.seconds
    );
    let lambda = a.reg.lambda(m);
    let settings = a.solver.settings(lambda)?;
    let bias = !a.solver.no_bias;
    let labels = set.labels.clone();
    if k < 2 {
        return Err(format!(
            "{}: every example has the label {}; a classifier needs at least 2 classes",
            src.describe(),
            labels.name(0)
        ));
    }
    let model =
        Arc::new(Multiclass::new(set.x, d, set.classes, k, bias).map_err(|e| e.to_string())?);
    let alg = settings.algorithm;
    let tol_rel = settings.tol_rel;
    let mut solver =
        Solver::new(Problem::Examples(model.clone()), settings).map_err(|e| e.to_string())?;
    say!(
        mode,
        "training {} with lambda = {lambda:e} (C = 1/(m lambda) = {:.4e}), {} weights",
        alg.name(),
        1.0 / (m as f64 * lambda),
        solver.dim()
    );
    let progress = Progress::attach(&mut solver, mode, alg.name().to_string(), tol_rel, vec![]);
    let mut w = vec![0.0; solver.dim()];
    let result = solver.run(&mut w);
    progress.finish(result.as_ref().ok());
    let info = result.map_err(|e| e.to_string())?;
    let train_error = model.error_rate(&w);
    let trained = LinearMulticlass { labels, d, bias, w };
    let test = match &a.test {
        Some(p) => {
            let tsrc = Source {
                path: p,
                format: a.data.format,
                split: a.data.split.unwrap_or(Split::Test),
                limit: None,
            };
            let ev = data::load_for_model(&tsrc, &trained.labels, d)?;
            let pred = trained.predict_all(&ev.x);
            let (err, unknown) = error_rate(&pred, &ev.truth);
            Some((tsrc.describe(), pred.len(), err, unknown))
        }
        None => None,
    };
    if let Some(out) = &a.output {
        trained
            .to_file(&Provenance {
                algorithm: alg.name(),
                lambda,
                train_examples: m,
                info: &info,
            })
            .write(out)?;
    }
    if mode.human() {
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
        println!("training error {:.2} %", 100.0 * train_error);
        if let Some((what, n, err, unknown)) = &test {
            println!(
                "test error {:.2} % on {n} examples of {what}{}",
                100.0 * err,
                if *unknown > 0 {
                    format!(" ({unknown} with labels not in the training data, counted as errors)")
                } else {
                    String::new()
                }
            );
        }
        match &a.output {
            Some(p) => println!("model written to {}", p.display()),
            None => println!("model not saved (use --output FILE)"),
        }
    } else if mode == crate::progress::Mode::Json {
        let mut v = json!({
            "type": "summary",
            "algorithm": alg.name(),
            "lambda": lambda,
            "C": 1.0 / (m as f64 * lambda),
            "examples": m,
            "features": d,
            "classes": k,
            "train_error": train_error,
            "test_error": test.as_ref().map(|t| t.2),
            "model": a.output.as_ref().map(|p| p.display().to_string()),
        });
        for (key, val) in info_json(&info).as_object().unwrap() {
            v[key] = val.clone();
        }
        emit(&v);
    }
    Ok(())
}

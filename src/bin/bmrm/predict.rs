//! `bmrm predict`.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use serde_json::json;

use crate::data::{self, Source, Split};
use crate::model::{Kind, Saved};
use crate::progress::{emit, Mode};
use crate::train::describe_errors;
use crate::{say, OutputArgs};

#[derive(Args, Debug)]
pub struct PredictArgs {
    /// A model file written by `bmrm train --output`.
    #[arg(value_name = "MODEL")]
    pub model: PathBuf,
    /// The data, in the format the model was trained on (a libsvm file, an idx
    /// directory, an ocr or conll file).
    #[arg(value_name = "DATA")]
    pub data: PathBuf,
    /// Data format.
    #[arg(long, value_enum, default_value_t = data::Format::Auto)]
    pub format: data::Format,
    /// Which part of an idx, ocr or conll data set (default: test, the t10k-* files,
    /// OCR fold 0, or the CoNLL sentences after the first 1,500).
    #[arg(long, value_enum)]
    pub split: Option<Split>,
    /// OCR data: predict these folds (0..9, comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "FOLDS")]
    pub folds: Option<Vec<u8>>,
    /// Use only the first N examples (words or sentences for ocr and conll).
    #[arg(long, value_name = "N")]
    pub examples: Option<usize>,
    /// Write the predictions here: one label a line (in the training file's labels), or for
    /// chain models one sequence a line (OCR: the word).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub out: OutputArgs,
}

pub fn run(a: PredictArgs) -> Result<(), String> {
    let mode = a.out.mode();
    let file = crate::modelfile::ModelFile::read(&a.model)?;
    if file.get("model") == Some("graph") {
        return run_graph(a, file, mode);
    }
    let saved = Saved::read(&a.model)?;
    let src = Source {
        path: &a.data,
        format: a.format,
        split: a.split,
        default_split: Split::Test,
        folds: a.folds.as_deref(),
        limit: a.examples,
    };
    let t = Instant::now();
    let ex = data::load(&src, Some(&saved.space))?;
    let task = saved.task(ex)?;
    let errors = task.errors(&saved.w);
    let secs = t.elapsed().as_secs_f64();
    if let Some(out) = &a.output {
        let e = |e: std::io::Error| format!("predictions file {}: {e}", out.display());
        let mut f = BufWriter::new(std::fs::File::create(out).map_err(e)?);
        for line in task.prediction_lines(&errors.predictions) {
            writeln!(f, "{line}").map_err(e)?;
        }
        f.flush().map_err(e)?;
    }
    let n = task.num_examples();
    let tokens = errors.predictions.len();
    let unit = if saved.space.input == data::Format::Ocr {
        "letters"
    } else {
        "tokens"
    };
    let what = if task.kind == Kind::Chain {
        format!("{n} sequences ({tokens} {unit})")
    } else {
        format!("{n} examples")
    };
    say!(
        mode,
        "{what} of {}: accuracy {:.2} %, error {}",
        src.describe(),
        100.0 * (1.0 - errors.rate),
        describe_errors(&errors, unit)
    );
    say!(mode, "read and predicted in {secs:.2} s");
    if let Some(out) = &a.output {
        say!(mode, "predictions written to {}", out.display());
    }
    if mode == Mode::Json {
        emit(&json!({
            "type": "summary",
            "model": task.kind.name(),
            "model_file": a.model.display().to_string(),
            "data": src.describe(),
            "examples": n,
            "tokens": tokens,
            "accuracy": 1.0 - errors.rate,
            "error": errors.rate,
            "sequence_error": errors.sequence_rate,
            "unknown_labels": errors.unknown,
            "predictions": a.output.as_ref().map(|p| p.display().to_string()),
            "seconds": secs,
        }));
    }
    Ok(())
}

/// `bmrm predict` with a graph model: DATA is a graph file; the options that
/// do not apply to it are errors.
fn run_graph(a: PredictArgs, file: crate::modelfile::ModelFile, mode: Mode) -> Result<(), String> {
    let unused = [
        (a.format != data::Format::Auto, "--format"),
        (a.split.is_some(), "--split"),
        (a.folds.is_some(), "--folds"),
    ];
    if let Some((_, name)) = unused.iter().find(|(set, _)| *set) {
        return Err(format!("{name} does not apply to a graph model"));
    }
    let saved = crate::graph::read_model(file, &a.model)?;
    crate::graph::predict(saved, &a.data, a.examples, a.output.as_deref(), mode)
}

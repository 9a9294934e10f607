//! `bmrm predict`.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use serde_json::json;

use crate::data::{self, Source, Split};
use crate::model::{error_rate, LinearMulticlass};
use crate::modelfile::ModelFile;
use crate::progress::{emit, Mode};
use crate::{say, OutputArgs};

#[derive(Args, Debug)]
pub struct PredictArgs {
    /// A model file written by `bmrm train --output`.
    #[arg(value_name = "MODEL")]
    pub model: PathBuf,
    /// The data: a LIBSVM-format file or an IDX directory (then its t10k-*
    /// files unless --split train).
    #[arg(value_name = "DATA")]
    pub data: PathBuf,
    /// Data format (auto: a directory is idx, a file is libsvm).
    #[arg(long, value_enum, default_value_t = data::Format::Auto)]
    pub format: data::Format,
    /// For idx data: read the train-* or the t10k-* files (default: test).
    #[arg(long, value_enum)]
    pub split: Option<Split>,
    /// Use only the first N examples.
    #[arg(long, value_name = "N")]
    pub examples: Option<usize>,
    /// Write the predictions here, one label a line (in the labels of the training file).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten, next_help_heading = "Output")]
    pub out: OutputArgs,
}

pub fn run(a: PredictArgs) -> Result<(), String> {
    let mode = a.out.mode();
    let file = ModelFile::read(&a.model)?;
    let model = LinearMulticlass::from_file(&file, &a.model)?;
    let src = Source {
        path: &a.data,
        format: a.format,
        split: a.split.unwrap_or(Split::Test),
        limit: a.examples,
    };
    let t = Instant::now();
    let ev = data::load_for_model(&src, &model.labels, model.d)?;
    let pred = model.predict_all(&ev.x);
    let secs = t.elapsed().as_secs_f64();
    let (err, unknown) = error_rate(&pred, &ev.truth);
    if let Some(out) = &a.output {
        let e = |e: std::io::Error| format!("predictions file {}: {e}", out.display());
        let mut f = BufWriter::new(std::fs::File::create(out).map_err(e)?);
        for &c in &pred {
            writeln!(f, "{}", model.labels.name(c)).map_err(e)?;
        }
        f.flush().map_err(e)?;
    }
    let n = pred.len();
    say!(
        mode,
        "{n} examples of {}: accuracy {:.2} %, error {:.2} % ({} wrong){}",
        src.describe(),
        100.0 * (1.0 - err),
        100.0 * err,
        (err * n as f64).round() as usize,
        if unknown > 0 {
            format!("; {unknown} have labels the model never saw (counted as errors)")
        } else {
            String::new()
        }
    );
    say!(mode, "read and predicted in {secs:.2} s");
    if let Some(out) = &a.output {
        say!(mode, "predictions written to {}", out.display());
    }
    if mode == Mode::Json {
        emit(&json!({
            "type": "summary",
            "model": a.model.display().to_string(),
            "data": src.describe(),
            "examples": n,
            "accuracy": 1.0 - err,
            "error": err,
            "unknown_labels": unknown,
            "predictions": a.output.as_ref().map(|p| p.display().to_string()),
            "seconds": secs,
        }));
    }
    Ok(())
}

//! Models as the command line handles them: built over a data set (a
//! [`Task`]), saved to and read from a [`ModelFile`], and used to predict.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use bmrm::models::{Chain, Multiclass};
use bmrm::{Info, Problem};
use clap::ValueEnum;
use rayon::prelude::*;

use crate::data::{format_from_name, Examples, Features, Space};
use crate::modelfile::ModelFile;

/// The model to train.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// chain for ocr and conll data (sequences), multiclass otherwise.
    Auto,
    /// Crammer-Singer multiclass SVM: one label per example (per letter or
    /// token for ocr and conll data, each on its own).
    Multiclass,
    /// Linear-chain structured SVM (Viterbi, normalised Hamming loss): one
    /// label sequence per word / sentence; ocr and conll data only.
    Chain,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Auto => "auto",
            Kind::Multiclass => "multiclass",
            Kind::Chain => "chain",
        }
    }
}

/// A model over a data set: the oracle the solver needs and the evaluation
/// of a `w` on these examples.
pub struct Task {
    pub kind: Kind,
    pub bias: bool,
    pub space: Space,
    multiclass: Option<Arc<Multiclass>>,
    chain: Option<Arc<Chain>>,
    truth: Vec<Option<usize>>,
    lengths: Option<Vec<usize>>,
}

/// Prediction errors of a `w` on a task.
pub struct Errors {
    /// Wrong examples (tokens) over all.
    pub rate: f64,
    /// Chain models: wrong sequences over all.
    pub sequence_rate: Option<f64>,
    /// Examples whose label the model does not know (counted as wrong).
    pub unknown: usize,
    /// The predicted class of every example (token).
    pub predictions: Vec<usize>,
}

impl Task {
    /// A multiclass task's rows: how many and their mean squared norm (for
    /// the library's pick of the algorithm); None for other tasks.
    pub fn multiclass_rows(&self) -> Option<(usize, f64)> {
        self.multiclass
            .as_ref()
            .map(|m| (m.labels().len(), m.mean_row_norm2()))
    }
    /// The model `kind` over `ex` (`Kind::Auto` resolved from the data).
    pub fn new(ex: Examples, kind: Kind, bias: bool) -> Result<Task, String> {
        let kind = match kind {
            Kind::Auto if ex.lengths.is_some() => Kind::Chain,
            Kind::Auto => Kind::Multiclass,
            k => k,
        };
        let k = ex.space.labels.len();
        if k < 2 {
            return Err(format!(
                "{}: every example has the label {}; a classifier needs at least 2 classes",
                ex.what,
                ex.space.labels.first().map_or("", |s| s.as_str())
            ));
        }
        // Unknown labels (test files only) get class 0 for the oracle; the
        // errors are counted against `truth`.
        let labels: Vec<usize> = ex.truth.iter().map(|t| t.unwrap_or(0)).collect();
        let e = |e: bmrm::Error| format!("{}: {e}", ex.what);
        let (mut multiclass, mut chain) = (None, None);
        match kind {
            Kind::Multiclass => {
                let m = match ex.features {
                    Features::Dense { x, d } => Multiclass::new(x, d, labels, k, bias),
                    Features::Sparse(rows) => Multiclass::new_sparse(rows, labels, k, bias),
                }
                .map_err(e)?;
                multiclass = Some(Arc::new(m));
            }
            Kind::Chain => {
                let Some(lengths) = &ex.lengths else {
                    return Err(format!(
                        "{}: the chain model needs sequences (ocr or conll data)",
                        ex.what
                    ));
                };
                let y: Vec<u32> = labels.iter().map(|&c| c as u32).collect();
                let c = match ex.features {
                    Features::Dense { x, d } => Chain::dense(x, d, lengths, y, k, bias),
                    Features::Sparse(rows) => Chain::sparse(rows, lengths, y, k, bias),
                }
                .map_err(e)?;
                chain = Some(Arc::new(c));
            }
            Kind::Auto => unreachable!(),
        }
        Ok(Task {
            kind,
            bias,
            space: ex.space,
            multiclass,
            chain,
            truth: ex.truth,
            lengths: ex.lengths,
        })
    }

    pub fn problem(&self) -> Problem {
        match (&self.multiclass, &self.chain) {
            (Some(m), _) => Problem::Examples(m.clone()),
            (_, Some(c)) => Problem::Examples(c.clone()),
            _ => unreachable!(),
        }
    }

    /// The weights' layout depends on sparse storage for chains.
    fn sparse(&self) -> bool {
        self.chain.as_ref().is_some_and(|c| c.is_sparse())
    }

    /// Examples the solver sees (sequences for chains).
    pub fn num_examples(&self) -> usize {
        match &self.lengths {
            Some(l) if self.kind == Kind::Chain => l.len(),
            _ => self.truth.len(),
        }
    }

    /// A short description: `chain model, 26 labels, 4082 weights`.
    pub fn describe(&self, dim: usize) -> String {
        format!(
            "{} model, {} labels, {} features{}, {dim} weights",
            self.kind.name(),
            self.space.labels.len(),
            self.space.d,
            if self.bias { " + bias" } else { "" }
        )
    }

    pub fn errors(&self, w: &[f64]) -> Errors {
        self.errors_until(w, None)
            .expect("a pass without a deadline is complete")
    }

    /// [`Task::errors`], or `None` when `deadline` passes first (the clock
    /// is read before each example or sequence: the pass after a run
    /// honours the run's time limit).
    pub fn errors_until(&self, w: &[f64], deadline: Option<Instant>) -> Option<Errors> {
        let past = || deadline.is_some_and(|d| Instant::now() >= d);
        let predictions: Vec<usize> = match (&self.multiclass, &self.chain) {
            (Some(m), _) => (0..self.truth.len())
                .into_par_iter()
                .map(|i| (!past()).then(|| m.predict_example(w, i)))
                .collect::<Option<_>>()?,
            (_, Some(c)) => (0..bmrm::MaxOracle::num_examples(c.as_ref()))
                .into_par_iter()
                .map(|i| (!past()).then(|| c.predict(w, i)))
                .collect::<Option<Vec<Vec<u32>>>>()?
                .concat()
                .into_iter()
                .map(|y| y as usize)
                .collect(),
            _ => unreachable!(),
        };
        let wrong: Vec<bool> = predictions
            .iter()
            .zip(&self.truth)
            .map(|(p, t)| Some(*p) != *t)
            .collect();
        let n = wrong.iter().filter(|&&x| x).count();
        let sequence_rate = match (&self.lengths, self.kind) {
            (Some(lengths), Kind::Chain) => {
                let mut start = 0;
                let mut bad = 0;
                for &l in lengths {
                    bad += usize::from(wrong[start..start + l].iter().any(|&x| x));
                    start += l;
                }
                Some(bad as f64 / lengths.len() as f64)
            }
            _ => None,
        };
        Some(Errors {
            rate: n as f64 / wrong.len().max(1) as f64,
            sequence_rate,
            unknown: self.truth.iter().filter(|t| t.is_none()).count(),
            predictions,
        })
    }

    /// The predictions as text lines: one label a line, or for chains one
    /// sequence a line (letters joined, other labels separated by spaces).
    pub fn prediction_lines(&self, predictions: &[usize]) -> Vec<String> {
        let name = |c: usize| self.space.labels[c].as_str();
        match (&self.lengths, self.kind) {
            (Some(lengths), Kind::Chain) => {
                let sep = if self.space.labels.iter().all(|l| l.chars().count() == 1) {
                    ""
                } else {
                    " "
                };
                let mut start = 0;
                lengths
                    .iter()
                    .map(|&l| {
                        let s: Vec<&str> = predictions[start..start + l]
                            .iter()
                            .map(|&c| name(c))
                            .collect();
                        start += l;
                        s.join(sep)
                    })
                    .collect()
            }
            _ => predictions.iter().map(|&c| name(c).to_string()).collect(),
        }
    }

    /// The model file of `w` trained on this task.
    pub fn to_file(&self, w: &[f64], how: &Provenance) -> ModelFile {
        let mut f = ModelFile::new();
        f.set("model", self.kind.name());
        f.set("input", self.space.input.name());
        f.set("classes", self.space.labels.len());
        f.set("labels", self.space.labels.join(" "));
        f.set("features", self.space.d);
        f.set("bias", u8::from(self.bias));
        f.set("sparse", u8::from(self.sparse()));
        if let Some(v) = &self.space.conll_vocab {
            let v: Vec<String> = v.iter().map(|x| x.to_string()).collect();
            f.set("conll-vocab", v.join(" "));
        }
        f.set("lambda", format!("{:e}", how.lambda));
        f.set(
            "C",
            format!("{:e}", 1.0 / (how.train_examples as f64 * how.lambda)),
        );
        f.set("train-examples", how.train_examples);
        f.set("algorithm", how.algorithm);
        f.set("iterations", how.info.iterations);
        f.set("primal", format!("{:e}", how.info.primal));
        f.set("lower-bound", format!("{:e}", how.info.lower_bound));
        // 0: an oracle answer was not a maximiser, the gap certifies nothing.
        f.set("certified", u8::from(how.info.certified));
        f.set("exit", format!("{:?}", how.info.exit));
        f.weights = w.to_vec();
        f
    }
}

/// How a model was trained, for the model file's header.
pub struct Provenance<'a> {
    pub algorithm: &'a str,
    pub lambda: f64,
    pub train_examples: usize,
    pub info: &'a Info,
}

/// A model read back from a file: what is needed to rebuild its task over
/// new data, and the weights.
pub struct Saved {
    pub kind: Kind,
    pub bias: bool,
    pub sparse: bool,
    pub space: Space,
    pub w: Vec<f64>,
}

/// The header keys of a model file (what `Task::to_file` writes).
const KNOWN_KEYS: [&str; 17] = [
    "model",
    "input",
    "classes",
    "labels",
    "features",
    "bias",
    "sparse",
    "conll-vocab",
    "lambda",
    "C",
    "train-examples",
    "algorithm",
    "iterations",
    "primal",
    "lower-bound",
    "exit",
    "certified",
];

impl Saved {
    pub fn read(path: &Path) -> Result<Saved, String> {
        let f = ModelFile::read(path)?;
        let bad = |m: String| format!("model file {}: {m}", path.display());
        // A key this version does not know would be ignored, and with it
        // whatever it means: refuse it, naming it.
        let unknown: Vec<&str> = f
            .header
            .iter()
            .map(|(k, _)| k.as_str())
            .filter(|k| !KNOWN_KEYS.contains(k))
            .collect();
        if !unknown.is_empty() {
            return Err(bad(format!(
                "unknown header key{} `{}` (this bmrm knows {})",
                if unknown.len() > 1 { "s" } else { "" },
                unknown.join("`, `"),
                KNOWN_KEYS.join(", ")
            )));
        }
        let kind = match f.require::<String>(path, "model")?.as_str() {
            "multiclass" => Kind::Multiclass,
            "chain" => Kind::Chain,
            other => return Err(bad(format!("unknown model `{other}`"))),
        };
        let input_name: String = f.require(path, "input")?;
        let input = format_from_name(&input_name)
            .ok_or_else(|| bad(format!("unknown input `{input_name}`")))?;
        let k: usize = f.require(path, "classes")?;
        let labels: Vec<String> = f
            .get("labels")
            .unwrap_or("")
            .split_whitespace()
            .map(str::to_string)
            .collect();
        if labels.len() != k {
            return Err(bad(format!("`classes {k}` but {} labels", labels.len())));
        }
        let d: usize = f.require(path, "features")?;
        let flag = |key: &str| -> Result<bool, String> {
            match f.require::<u8>(path, key)? {
                0 => Ok(false),
                1 => Ok(true),
                b => Err(bad(format!("`{key} {b}` (0 or 1)"))),
            }
        };
        let bias = flag("bias")?;
        let sparse = flag("sparse")?;
        let conll_vocab = match f.get("conll-vocab") {
            Some(v) => Some(
                v.split_whitespace()
                    .map(|x| x.parse::<usize>())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|_| bad(format!("`conll-vocab {v}`: not a list of counts")))?,
            ),
            None => None,
        };
        if k < 2 {
            return Err(bad(format!("`classes {k}`: a model has at least 2")));
        }
        if let Some(vocab) = &conll_vocab {
            let total = vocab.iter().try_fold(0usize, |a, &v| a.checked_add(v));
            if total != Some(d) {
                return Err(bad(format!(
                    "`conll-vocab` adds up to {} features, but `features {d}`",
                    total.map_or("more than 2^64".to_string(), |t| t.to_string())
                )));
            }
        }
        // Checked: a corrupted `features` or `classes` must not wrap around
        // to the number of weights the file happens to hold.
        let n = d.checked_add(usize::from(bias)).and_then(|de| {
            let emissions = k.checked_mul(de)?;
            match kind {
                Kind::Chain => emissions.checked_add(k.checked_mul(k.checked_add(2)?)?),
                _ => Some(emissions),
            }
        });
        let Some(n) = n else {
            return Err(bad(format!(
                "{k} labels and {d} features{} overflow the number of weights",
                if bias { " + bias" } else { "" }
            )));
        };
        if f.weights.len() != n {
            return Err(bad(format!(
                "{} weights, but a {} model with {k} labels and {d} features{} has {n}",
                f.weights.len(),
                kind.name(),
                if bias { " + bias" } else { "" }
            )));
        }
        Ok(Saved {
            kind,
            bias,
            sparse,
            space: Space {
                input,
                labels,
                d,
                conll_vocab,
            },
            w: f.weights,
        })
    }

    /// The task of this model over `ex` (read into the model's space).
    pub fn task(&self, ex: Examples) -> Result<Task, String> {
        let space = self.space.clone();
        let mut ex = ex;
        ex.space.labels = space.labels.clone();
        let t = Task::new(ex, self.kind, self.bias)?;
        if t.sparse() != self.sparse {
            return Err(format!(
                "the model's weights are laid out for {} features, the data's are {}",
                if self.sparse { "sparse" } else { "dense" },
                if t.sparse() { "sparse" } else { "dense" }
            ));
        }
        let task = Task { space, ..t };
        // The data's feature space must be the model's: a model file whose
        // `features` disagree with the data would index past its weights.
        let dim = task.problem().dim();
        if dim != self.w.len() {
            return Err(format!(
                "the model has {} weights, but over this data its model has {dim}",
                self.w.len()
            ));
        }
        Ok(task)
    }
}

#[cfg(test)]
#[path = "model_fuzz.rs"]
mod fuzz;

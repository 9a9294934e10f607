//! Loading data sets for the command line: the formats, their detection, and
//! the conversion to what the models take.

use std::path::Path;
use std::time::Instant;

use bmrm::data::idx;
use bmrm::data::libsvm::{self, LabelMap};
use clap::ValueEnum;

/// The data formats the tool reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Guess: a directory is `idx`; anything else is `libsvm`.
    Auto,
    /// `label index:value ...` text (LIBSVM, LIBLINEAR, SVMlight, SVM-multiclass), plain or .gz.
    Libsvm,
    /// A directory with the four IDX files of MNIST / Fashion-MNIST
    /// (train-images-idx3-ubyte[.gz], ...); see --split.
    Idx,
}

/// Which half of an IDX directory to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Split {
    /// `train-*` files (60,000 examples for (Fashion-)MNIST).
    Train,
    /// `t10k-*` files (10,000 examples).
    Test,
}

/// Where a data set comes from, as given on the command line.
#[derive(Debug, Clone)]
pub struct Source<'a> {
    pub path: &'a Path,
    pub format: Format,
    pub split: Split,
    /// Only the first `limit` examples.
    pub limit: Option<usize>,
}

impl Source<'_> {
    pub fn resolved_format(&self) -> Format {
        match self.format {
            Format::Auto if self.path.is_dir() => Format::Idx,
            Format::Auto => Format::Libsvm,
            f => f,
        }
    }

    /// A short description for messages: `file.svm (libsvm)`.
    pub fn describe(&self) -> String {
        match self.resolved_format() {
            Format::Idx => format!(
                "{} (idx, {} set)",
                self.path.display(),
                match self.split {
                    Split::Train => "train",
                    Split::Test => "test",
                }
            ),
            f => format!(
                "{} ({})",
                self.path.display(),
                f.to_possible_value().unwrap().get_name()
            ),
        }
    }
}

/// A multiclass data set: dense row-major features and the classes.
pub struct Multiclass {
    pub x: Vec<f32>,
    pub d: usize,
    pub classes: Vec<usize>,
    pub labels: LabelMap,
    pub seconds: f64,
}

impl Multiclass {
    pub fn m(&self) -> usize {
        self.classes.len()
    }
}

/// Reads a training set.
pub fn load_multiclass(src: &Source) -> Result<Multiclass, String> {
    let t = Instant::now();
    if !src.path.exists() {
        return Err(format!(
            "data file {}: no such file or directory",
            src.path.display()
        ));
    }
    let mut out = match src.resolved_format() {
        Format::Idx => {
            let (x, d, y) = idx::fashion_mnist(src.path, src.split == Split::Train, src.limit)
                .map_err(|e| e.to_string())?;
            Multiclass {
                x,
                d,
                classes: y,
                labels: LabelMap::identity(10),
                seconds: 0.0,
            }
        }
        Format::Libsvm | Format::Auto => {
            let mut data = libsvm::read(src.path).map_err(|e| e.to_string())?;
            if let Some(n) = src.limit {
                data.truncate(n);
            }
            if data.num_features == 0 {
                return Err(format!(
                    "data file {}: no example has a feature (every line is just a label)",
                    src.path.display()
                ));
            }
            Multiclass {
                x: data.to_dense(data.num_features),
                d: data.num_features,
                classes: data.classes,
                labels: data.labels,
                seconds: 0.0,
            }
        }
    };
    out.seconds = t.elapsed().as_secs_f64();
    Ok(out)
}

/// A data set to evaluate a trained model on: features with the model's `d`
/// (extra features dropped, missing ones 0) and the true class of each
/// example in the model's label map (`None`: a label the model never saw).
pub struct Evaluation {
    pub x: Vec<f32>,
    pub truth: Vec<Option<usize>>,
}

pub fn load_for_model(src: &Source, labels: &LabelMap, d: usize) -> Result<Evaluation, String> {
    if !src.path.exists() {
        return Err(format!(
            "data file {}: no such file or directory",
            src.path.display()
        ));
    }
    match src.resolved_format() {
        Format::Idx => {
            let (x, dd, y) = idx::fashion_mnist(src.path, src.split == Split::Train, src.limit)
                .map_err(|e| e.to_string())?;
            if dd != d {
                return Err(format!(
                    "data {}: {dd} features per example but the model has {d}",
                    src.describe()
                ));
            }
            let truth = y.iter().map(|&c| labels.class_of(c as f64)).collect();
            Ok(Evaluation { x, truth })
        }
        Format::Libsvm | Format::Auto => {
            let mut data = libsvm::read(src.path).map_err(|e| e.to_string())?;
            if let Some(n) = src.limit {
                data.truncate(n);
            }
            Ok(Evaluation {
                x: data.to_dense(d),
                truth: data.classes_in(labels),
            })
        }
    }
}

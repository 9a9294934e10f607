//! A trained model as the command line handles it: written to and read from
//! a [`ModelFile`], and used to predict.

use std::path::Path;

use bmrm::data::libsvm::LabelMap;
use bmrm::Info;
use rayon::prelude::*;

use crate::modelfile::ModelFile;

/// How a model was trained, for the model file's header.
pub struct Provenance<'a> {
    pub algorithm: &'a str,
    pub lambda: f64,
    pub train_examples: usize,
    pub info: &'a Info,
}

/// A linear multiclass model: `argmax_c <w_c, (x, 1)>`.
pub struct LinearMulticlass {
    pub labels: LabelMap,
    pub d: usize,
    pub bias: bool,
    pub w: Vec<f64>,
}

impl LinearMulticlass {
    pub fn k(&self) -> usize {
        self.labels.len()
    }
    fn block(&self) -> usize {
        self.d + usize::from(self.bias)
    }

    /// The class of the features `x` (length `d`); ties go to the lowest
    /// class, as in the library's `Multiclass::predict`.
    pub fn predict(&self, x: &[f32]) -> usize {
        let b = self.block();
        let mut best = (0, f64::NEG_INFINITY);
        for c in 0..self.k() {
            let wc = &self.w[c * b..(c + 1) * b];
            let mut s: f64 = wc[..self.d]
                .iter()
                .zip(x)
                .map(|(w, &v)| w * f64::from(v))
                .sum();
            if self.bias {
                s += wc[self.d];
            }
            if s > best.1 {
                best = (c, s);
            }
        }
        best.0
    }

    /// The predicted class of every row of the row-major `x`.
    pub fn predict_all(&self, x: &[f32]) -> Vec<usize> {
        x.par_chunks(self.d.max(1))
            .map(|r| self.predict(r))
            .collect()
    }

    pub fn to_file(&self, how: &Provenance) -> ModelFile {
        let mut f = ModelFile::new();
        f.set("model", "multiclass");
        f.set("classes", self.k());
        f.set("labels", self.labels.names().join(" "));
        f.set("features", self.d);
        f.set("bias", u8::from(self.bias));
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
        f.set("exit", format!("{:?}", how.info.exit));
        f.weights = self.w.clone();
        f
    }

    pub fn from_file(f: &ModelFile, path: &Path) -> Result<Self, String> {
        let kind: String = f.require(path, "model")?;
        if kind != "multiclass" {
            return Err(format!(
                "model file {}: a `{kind}` model, not multiclass",
                path.display()
            ));
        }
        let k: usize = f.require(path, "classes")?;
        let names: Vec<&str> = f.get("labels").unwrap_or("").split_whitespace().collect();
        if names.len() != k {
            return Err(format!(
                "model file {}: `classes {k}` but {} labels",
                path.display(),
                names.len()
            ));
        }
        let labels = LabelMap::from_names(&names)
            .map_err(|e| format!("model file {}: {e}", path.display()))?;
        if labels.names() != names {
            return Err(format!(
                "model file {}: the labels must be in increasing numeric order",
                path.display()
            ));
        }
        let d: usize = f.require(path, "features")?;
        let bias = match f.require::<u8>(path, "bias")? {
            0 => false,
            1 => true,
            b => {
                return Err(format!(
                    "model file {}: `bias {b}` (0 or 1)",
                    path.display()
                ))
            }
        };
        let n = k * (d + usize::from(bias));
        if f.weights.len() != n {
            return Err(format!(
                "model file {}: {} weights, but {k} classes x ({d} features + {} bias) needs {n}",
                path.display(),
                f.weights.len(),
                u8::from(bias)
            ));
        }
        Ok(LinearMulticlass {
            labels,
            d,
            bias,
            w: f.weights.clone(),
        })
    }
}

/// The error rate of `pred` against `truth` (a `None` truth, a label the
/// model never saw, counts as an error) and the number of such labels.
pub fn error_rate(pred: &[usize], truth: &[Option<usize>]) -> (f64, usize) {
    let unknown = truth.iter().filter(|t| t.is_none()).count();
    let wrong = pred
        .iter()
        .zip(truth)
        .filter(|(p, t)| Some(**p) != **t)
        .count();
    (wrong as f64 / pred.len().max(1) as f64, unknown)
}

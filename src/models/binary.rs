//! The binary linear SVM with hinge loss, written as a max-oracle.
//!
//! With labels `y_i in {-1, +1}` the hinge `max(0, 1 - y_i <w, x_i>)` is the
//! structured hinge over the two labels `{y_i, -y_i}`:
//!
//! | y^ | loss | psi | `L - <w, psi>` |
//! |---|---|---|---|
//! | `y_i` | 0 | 0 | 0 |
//! | `-y_i` | 1 | `y_i x_i` | `1 - y_i <w, x_i>` |
//!
//! The mean `R(w) = (1/m) sum_i max(0, 1 - y_i <w, x_i>)` plus
//! `lambda/2 ||w||^2` is the L1-loss SVM of LIBLINEAR (`-s 3`) with
//! `C = 1/(m lambda)`.

use rayon::prelude::*;

use super::{check_example, check_w_len, DenseFeatures};
use crate::error::{Error, Result};
use crate::oracle::{Corner, MaxOracle};

const NAME: &str = "binary hinge model";

/// A binary linear SVM with hinge loss over dense `f32` features; `w` has
/// `d' = d + bias` entries (the bias weight last).
///
/// The oracle returns `y^ = -y_i` (loss 1, `psi = y_i (x_i, 1)`) when
/// `1 - y_i <w, x_i> > 0` and `y^ = y_i` (loss 0, `psi = 0`) otherwise, so at
/// the kink the ground truth is preferred. The label id is 0 for `-1` and 1
/// for `+1`. Entries where `x_i` is exactly 0 are not added to psi.
#[derive(Debug, Clone)]
pub struct BinaryHinge {
    x: DenseFeatures,
    labels: Vec<f64>,
}

/// The label id of a ±1 label: 0 for -1, 1 for +1.
#[inline]
fn label_id(y: f64) -> u64 {
    u64::from(y > 0.0)
}

impl BinaryHinge {
    /// A model over `labels.len()` examples with the row-major `features`
    /// (`labels.len() x d`) and labels exactly `-1.0` or `+1.0`, with a
    /// constant 1 appended to every example when `bias` is set.
    ///
    /// Errors: [`Error::invalid_argument`] for `d == 0`, no examples, a label
    /// other than ±1 or a non-finite feature; [`Error::dimension_mismatch`]
    /// when `features.len() != labels.len() * d`.
    pub fn new(features: Vec<f32>, d: usize, labels: Vec<f64>, bias: bool) -> Result<Self> {
        let x = DenseFeatures::new(NAME, features, d, labels.len(), bias)?;
        if let Some(i) = labels.iter().position(|&y| y != 1.0 && y != -1.0) {
            return Err(Error::invalid_argument(format!(
                "{NAME}: label {} of example {i} is not -1 or +1",
                labels[i]
            )));
        }
        Ok(BinaryHinge { x, labels })
    }

    /// Features per example as given, `d` (without the bias).
    pub fn feature_dim(&self) -> usize {
        self.x.d()
    }
    /// Whether a constant 1 feature is appended to every example.
    pub fn has_bias(&self) -> bool {
        self.x.bias()
    }
    /// The ±1 labels, one per example.
    pub fn labels(&self) -> &[f64] {
        &self.labels
    }
    /// The row-major `m x d` features.
    pub fn features(&self) -> &[f32] {
        self.x.values()
    }
    /// The `d` features of example `i` (without the bias).
    pub fn example(&self, i: usize) -> &[f32] {
        self.x.row(i)
    }

    /// The decision value `<w, (x, 1)>` of the features `x` (length `d`).
    ///
    /// # Panics
    /// When `w.len() != dim()` or `x.len() != feature_dim()`.
    pub fn decision_value(&self, w: &[f64], x: &[f32]) -> f64 {
        assert_eq!(w.len(), self.dim(), "{NAME}: w has the wrong length");
        assert_eq!(x.len(), self.x.d(), "{NAME}: x has the wrong length");
        self.x.score(w, x)
    }

    /// The predicted label of `x`: `+1.0` when the decision value is `>= 0`,
    /// `-1.0` otherwise.
    ///
    /// # Panics
    /// When `w.len() != dim()` or `x.len() != feature_dim()`.
    pub fn predict(&self, w: &[f64], x: &[f32]) -> f64 {
        if self.decision_value(w, x) >= 0.0 {
            1.0
        } else {
            -1.0
        }
    }

    /// The fraction of this model's own examples that
    /// [`BinaryHinge::predict`] gets wrong.
    ///
    /// # Panics
    /// When `w.len() != dim()`.
    pub fn error_rate(&self, w: &[f64]) -> f64 {
        assert_eq!(w.len(), self.dim(), "{NAME}: w has the wrong length");
        let m = self.x.m();
        let wrong: usize = (0..m)
            .into_par_iter()
            .map(|i| usize::from(self.predict(w, self.x.row(i)) != self.labels[i]))
            .sum();
        wrong as f64 / m as f64
    }
}

impl MaxOracle for BinaryHinge {
    fn dim(&self) -> usize {
        self.x.d_ext()
    }

    fn num_examples(&self) -> usize {
        self.x.m()
    }

    fn max_oracle(&self, example: usize, w: &[f64], out: &mut Corner) -> Result<()> {
        check_w_len(NAME, w, self.dim())?;
        check_example(NAME, example, self.x.m())?;
        let x = self.x.row(example);
        let y = self.labels[example];
        let margin = y * self.x.score(w, x);
        if !margin.is_finite() {
            return Err(Error::non_finite(format!(
                "{NAME}: the decision value is {} for example {example}",
                margin * y
            )));
        }
        if 1.0 - margin <= 0.0 {
            out.set_loss(0.0);
            out.set_label(label_id(y));
            return Ok(());
        }
        out.set_loss(1.0);
        out.set_label(label_id(-y));
        for (j, &v) in x.iter().enumerate() {
            if v != 0.0 {
                out.add(j, y * f64::from(v))?;
            }
        }
        if self.x.bias() {
            out.add(self.x.d(), y)?;
        }
        Ok(())
    }
}

//! Built-in risks: ready-made max-oracles for the classic linear models.
//!
//! They exist so that the solvers can be tested, benchmarked and
//! demonstrated on real problems without a user callback, and so that a Rust
//! user gets the standard models in one line:
//!
//! - [`Multiclass`]: the linear multiclass SVM with 0/1 loss (Crammer-Singer,
//!   LIBLINEAR's `-s 4`), the structured-output SVM whose output space is a
//!   set of `K` classes. The workhorse of the MNIST / Fashion-MNIST
//!   experiments.
//! - [`BinaryHinge`]: the binary linear SVM with hinge loss written as a
//!   max-oracle with two labels; the simplest structured SVM, useful to check
//!   solvers against a textbook problem.
//! - [`Chain`]: a linear chain for sequence labelling (Viterbi, normalised
//!   Hamming loss) over dense or sparse token features: the OCR and CoNLL
//!   experiments of the BCFW papers.
//! - [`Segmentation`]: a semi-Markov segmentation of a sequence of columns
//!   into segments of fixed widths per label, scored by template
//!   correlation (the licence-plate problem of the Prox-BMRM report), with
//!   its plate generator [`segmentation::synthetic`].
//! - [`SparseRows`]: CSR rows, the sparse input of [`Multiclass`] and
//!   [`Chain`].
//! - [`synthetic`]: seeded Gaussian data generators for both models, for tests
//!   and demos (the same seed gives the same data on every platform).
//!
//! The dense models store their features, row-major (`m x d`), as `f32`:
//! the features of the data sets they are meant for (pixels `u8 / 255`) are
//! exact enough in `f32`, and it halves the memory of a data set like
//! Fashion-MNIST (60000 x 784: 188 MB instead of 376 MB) and the memory
//! traffic of every oracle call. All arithmetic (scores, psi) is in `f64`, so
//! the model is exactly the linear model on the stored `f32` values.
//!
//! With the optional bias feature a constant 1 is appended to every example
//! (`d' = d + 1`); the bias weight is then regularised like the other
//! weights, as in LIBLINEAR's `-B 1`.

pub mod binary;
pub mod chain;
pub mod graph;
pub mod multiclass;
pub(crate) mod path;
pub mod segmentation;
pub mod sparse;
pub mod synthetic;

pub use binary::BinaryHinge;
pub use chain::{Chain, ChainFeatures};
pub use multiclass::Multiclass;
pub use segmentation::Segmentation;
pub use sparse::SparseRows;

use crate::error::{Error, Result};

/// `<w, x>` for `f64` weights and `f32` features, in `f64`, by the
/// dispatched kernel ([`crate::linalg::dot_f32`]: one fixed reduction order).
#[inline]
pub(crate) fn dot_f32(w: &[f64], x: &[f32]) -> f64 {
    crate::linalg::dot_f32(x, w)
}

/// `out[r K + y] = <W_y, (x_r, 1?)>` for the dense rows `x_r` (`d`
/// features each) and the `K` class rows `W_y = w[y de .. (y + 1) de]`
/// (`de = d + bias`, the bias weight last): one product of the rows with
/// the class block (each entry the bits of [`dot_f32`] of its two rows),
/// then the bias. The unary scores of the chain model's tokens and of the
/// graph model's class-form nodes.
pub(crate) fn class_scores(
    rows: &[&[f32]],
    w: &[f64],
    k: usize,
    d: usize,
    bias: bool,
    out: &mut [f64],
) {
    let de = d + usize::from(bias);
    let classes: Vec<&[f64]> = (0..k).map(|y| &w[y * de..y * de + d]).collect();
    crate::linalg::row_dots(rows, &classes, d, out);
    if bias {
        for e in out.chunks_exact_mut(k) {
            for (y, ey) in e.iter_mut().enumerate() {
                *ey += w[y * de + d];
            }
        }
    }
}

/// Adds `sign (x, 1?)` to `out` at `base` (the bias entry after the `d`
/// features): a dense class row of psi, as the chain model writes a token's
/// emission and the graph model a class-form node's unary row.
pub(crate) fn add_class_row(
    out: &mut crate::oracle::Corner,
    base: usize,
    x: &[f32],
    bias: bool,
    sign: f64,
) -> Result<()> {
    out.add_row(base, x, sign)?;
    if bias {
        out.add(base + x.len(), sign)?;
    }
    Ok(())
}

/// A dense row-major feature matrix (`m x d`, `f32`) with an optional bias
/// feature: the storage shared by the built-in models.
#[derive(Debug, Clone)]
pub(crate) struct DenseFeatures {
    values: Vec<f32>,
    d: usize,
    m: usize,
    bias: bool,
}

impl DenseFeatures {
    /// Checks that `values` holds `m` rows of `d` finite numbers. `model`
    /// names the caller in messages.
    pub(crate) fn new(
        model: &str,
        values: Vec<f32>,
        d: usize,
        m: usize,
        bias: bool,
    ) -> Result<Self> {
        if d == 0 {
            return Err(Error::invalid_argument(format!(
                "{model}: the feature dimension d must be at least 1"
            )));
        }
        if m == 0 {
            return Err(Error::invalid_argument(format!(
                "{model}: there must be at least one example (got 0 labels)"
            )));
        }
        let expected = m.checked_mul(d).ok_or_else(|| {
            Error::invalid_argument(format!("{model}: {m} examples x {d} features overflows"))
        })?;
        if values.len() != expected {
            return Err(Error::dimension_mismatch(format!(
                "{model}: {} feature values given, but {m} labels x d = {d} needs {expected} \
                 (features are row-major, one row of d values per example)",
                values.len()
            )));
        }
        if let Some(k) = values.iter().position(|v| !v.is_finite()) {
            return Err(Error::invalid_argument(format!(
                "{model}: feature {} of example {} is {}",
                k % d,
                k / d,
                values[k]
            )));
        }
        Ok(DenseFeatures { values, d, m, bias })
    }

    /// Features per example, without the bias.
    #[inline]
    pub(crate) fn d(&self) -> usize {
        self.d
    }
    /// Features per example including the bias: `d + bias`.
    #[inline]
    pub(crate) fn d_ext(&self) -> usize {
        self.d + usize::from(self.bias)
    }
    #[inline]
    pub(crate) fn m(&self) -> usize {
        self.m
    }
    #[inline]
    pub(crate) fn bias(&self) -> bool {
        self.bias
    }
    #[inline]
    pub(crate) fn values(&self) -> &[f32] {
        &self.values
    }
    /// The `d` features of example `i` (without the bias).
    #[inline]
    pub(crate) fn row(&self, i: usize) -> &[f32] {
        &self.values[i * self.d..(i + 1) * self.d]
    }

    /// `<v, (x, 1)>` with `v` a block of `d_ext()` weights and `x` a row of
    /// `d` features (the bias weight is `v[d]` when there is a bias).
    #[inline]
    pub(crate) fn score(&self, v: &[f64], x: &[f32]) -> f64 {
        let s = dot_f32(&v[..self.d], x);
        if self.bias {
            s + v[self.d]
        } else {
            s
        }
    }
}

/// Runs `f` with this thread's buffers in `key` (fresh ones if they are in
/// use, which only a re-entrant call could cause): the per-thread scratch of
/// the models' and engines' hot loops, reused across calls so that they do
/// not allocate.
pub(crate) fn with_scratch<T: Default + 'static, R>(
    key: &'static std::thread::LocalKey<std::cell::RefCell<T>>,
    f: impl FnOnce(&mut T) -> R,
) -> R {
    let mut f = Some(f);
    let r = key.try_with(|s| {
        s.try_borrow_mut()
            .ok()
            .map(|mut s| (f.take().expect("called once"))(&mut s))
    });
    match r {
        Ok(Some(r)) => r,
        _ => (f.take().expect("called once"))(&mut T::default()),
    }
}

/// The error for a `w` of the wrong length.
pub(crate) fn check_w_len(model: &str, w: &[f64], dim: usize) -> Result<()> {
    if w.len() != dim {
        return Err(Error::dimension_mismatch(format!(
            "{model}: w has length {} but the model has dimension {dim}",
            w.len()
        )));
    }
    Ok(())
}

/// The errors of a decoding's `w`: the wrong length, or a NaN or infinite
/// weight (it would make every score NaN and the argmax arbitrary), naming
/// the coordinate.
pub(crate) fn check_weights(model: &str, w: &[f64], dim: usize) -> Result<()> {
    check_w_len(model, w, dim)?;
    match crate::linalg::first_non_finite(w) {
        Some((j, v)) => Err(Error::non_finite(format!("{model}: w[{j}] is {v}"))),
        None => Ok(()),
    }
}

/// The error for an example index out of range.
pub(crate) fn check_example(model: &str, example: usize, m: usize) -> Result<()> {
    if example >= m {
        return Err(Error::invalid_argument(format!(
            "{model}: example {example} is out of range (the model has {m} examples)"
        )));
    }
    Ok(())
}

//! The linear multiclass SVM with 0/1 loss (Crammer-Singer) as a max-oracle.
//!
//! With `K` classes, features `x` of dimension `d` (plus an optional constant
//! bias feature, `d' = d + 1`) and `w` made of `K` blocks of `d'` weights
//! (class `k` at `w[k d' .. (k+1) d']`), the joint feature map is
//! `phi(x, y) = x` placed in block `y`, and example `i` has the hinge
//!
//! ```text
//! H_i(w) = max_y [ (y != y_i) + <w_y, x_i> ] - <w_{y_i}, x_i>
//! ```
//!
//! The mean `R(w) = (1/m) sum_i H_i(w)` plus `lambda/2 ||w||^2` is
//! LIBLINEAR's Crammer-Singer problem (`-s 4`) with `C = 1/(m lambda)`.

use std::sync::{Arc, OnceLock};

use rayon::prelude::*;

use super::{check_example, check_w_len, DenseFeatures, SparseRows};
use crate::error::{Error, Result};
use crate::linalg::PackedRows;
use crate::oracle::{Corner, Factoring, MaxOracle};
use complement::{TruthSums, TILE};
use rows::Rows;

const NAME: &str = "multiclass model";

/// A linear multiclass SVM with 0/1 loss over dense `f32` rows
/// ([`Multiclass::new`]) or sparse CSR rows ([`Multiclass::new_sparse`]).
///
/// # Oracle and its tie rule
///
/// For example `i` the oracle returns
/// `y^ = argmax_y [ (y != y_i) + <w_y, x_i> ]` with the loss
/// `L = [y^ != y_i]`, `psi = phi(x_i, y_i) - phi(x_i, y^)` (`+x_i` in block
/// `y_i`, `-x_i` in block `y^`; `psi = 0` when `y^ = y_i`) and label id `y^`.
/// Ties are broken as follows: if the ground truth `y_i` attains the maximum
/// it is chosen (so the corner is `loss 0, psi 0` whenever `H_i(w) = 0`);
/// otherwise the lowest class index attaining the maximum is chosen.
/// At `w = 0` this gives `y^ = 0` (or `1` when `y_i = 0`).
///
/// psi is reported through [`Corner::add`]; entries where `x_i` is exactly 0
/// are skipped (about half the pixels of MNIST-like data; all but the stored
/// entries of a sparse row), so a corner holds at most `2 d'` entries (`2
/// (nnz_i + bias)` for a sparse row). Dense and sparse rows holding the same
/// values give the same corners, entry for entry. One example's oracle does
/// not allocate (beyond the corner's own reused buffers); a block
/// ([`MaxOracle::max_oracle_block`]) is scored as one matrix product into a
/// buffer of its own and gives each example the same bits as its single
/// call. The oracle is thread-safe.
///
/// # LIBLINEAR
///
/// `lambda/2 ||w||^2 + (1/m) sum_i H_i(w)` is `1/(C m)` times LIBLINEAR's
/// Crammer-Singer objective `1/2 ||w||^2 + C sum_i H_i(w)` (`-s 4`), so both
/// have the same minimiser when `C = 1/(m lambda)` (and `-B 1` is `bias`).
#[derive(Debug, Clone)]
pub struct Multiclass {
    /// Shared with the class-factored view BCFW keeps (`view.rs`).
    x: Arc<Rows>,
    labels: Arc<Vec<usize>>,
    num_classes: usize,
    /// The tiles' per-class row sums of the pass's complement form
    /// ([`complement`]), kept across passes and clones.
    truth_sums: Arc<TruthSums>,
    /// `||(x_i, 1)||^2` of every example, computed when BCFW first asks
    /// for the class view and kept across clones.
    row_norms: Arc<OnceLock<Arc<Vec<f64>>>>,
}

/// Examples scored at once by the pass of the bundle methods
/// ([`MaxOracle::block_risk`] cuts its span into blocks of this many): a
/// multiple of the wide tile's 2 rows, whose 48 rows stay in L2 between
/// their scores and their subgradient.
const RISK_BLOCK: usize = 48;

impl Multiclass {
    /// A model over `labels.len()` examples whose features are the row-major
    /// `features` (`labels.len() x d`), labels in `0..num_classes`, with a
    /// constant 1 appended to every example when `bias` is set.
    ///
    /// Errors: [`Error::invalid_argument`] for `d == 0`, no examples, fewer
    /// than 2 classes, a label out of range or a non-finite feature;
    /// [`Error::dimension_mismatch`] when `features.len() != labels.len() * d`.
    pub fn new(
        features: Vec<f32>,
        d: usize,
        labels: Vec<usize>,
        num_classes: usize,
        bias: bool,
    ) -> Result<Self> {
        let x = DenseFeatures::new(NAME, features, d, labels.len(), bias)?;
        Self::build(Rows::Dense(x), labels, num_classes)
    }

    /// A model over the sparse `rows` (one per example, `rows.num_cols()`
    /// features), labels in `0..num_classes`, with a constant 1 appended to
    /// every example when `bias` is set. The model is the one
    /// [`Multiclass::new`] builds from the same values stored densely.
    ///
    /// Errors: as [`Multiclass::new`]; [`Error::dimension_mismatch`] when the
    /// number of rows is not the number of labels.
    pub fn new_sparse(
        rows: SparseRows,
        labels: Vec<usize>,
        num_classes: usize,
        bias: bool,
    ) -> Result<Self> {
        if rows.num_cols() == 0 {
            return Err(Error::invalid_argument(format!(
                "{NAME}: the feature dimension d must be at least 1"
            )));
        }
        if labels.is_empty() {
            return Err(Error::invalid_argument(format!(
                "{NAME}: there must be at least one example (got 0 labels)"
            )));
        }
        if rows.num_rows() != labels.len() {
            return Err(Error::dimension_mismatch(format!(
                "{NAME}: {} sparse rows but {} labels",
                rows.num_rows(),
                labels.len()
            )));
        }
        Self::build(Rows::Sparse { rows, bias }, labels, num_classes)
    }

    fn build(x: Rows, labels: Vec<usize>, num_classes: usize) -> Result<Self> {
        if num_classes < 2 {
            return Err(Error::invalid_argument(format!(
                "{NAME}: num_classes must be at least 2 (got {num_classes})"
            )));
        }
        // `d + bias` and `K (d + bias)` doubles must fit in memory: a sparse
        // feature count of SIZE_MAX must not wrap around to 0.
        let weights = x
            .d()
            .checked_add(usize::from(x.bias()))
            .and_then(|de| num_classes.checked_mul(de))
            .filter(|&n| n <= isize::MAX as usize / std::mem::size_of::<f64>());
        if weights.is_none() {
            return Err(Error::invalid_argument(format!(
                "{NAME}: {num_classes} classes x ({} features + bias {}) weights overflow the \
                 dimension",
                x.d(),
                usize::from(x.bias())
            )));
        }
        if let Some(i) = labels.iter().position(|&y| y >= num_classes) {
            return Err(Error::invalid_argument(format!(
                "{NAME}: label {} of example {i} is out of range 0..{num_classes}",
                labels[i]
            )));
        }
        Ok(Multiclass {
            x: Arc::new(x),
            labels: Arc::new(labels),
            num_classes,
            truth_sums: Arc::default(),
            row_norms: Arc::default(),
        })
    }

    /// Number of classes `K`.
    pub fn num_classes(&self) -> usize {
        self.num_classes
    }
    /// Features per example as given, `d` (without the bias).
    pub fn feature_dim(&self) -> usize {
        self.x.d()
    }
    /// Weights per class, `d' = d + 1` with a bias, `d` without.
    pub fn block_dim(&self) -> usize {
        self.x.d_ext()
    }
    /// Whether a constant 1 feature is appended to every example.
    pub fn has_bias(&self) -> bool {
        self.x.bias()
    }
    /// The labels, one per example.
    pub fn labels(&self) -> &[usize] {
        &self.labels
    }
    /// The rows' mean squared norm `mean_i ||(x_i, 1)||^2` (bias included).
    pub fn mean_row_norm2(&self) -> f64 {
        let m = self.labels.len();
        let sum: f64 = (0..m).map(|i| self.x.row_norm2(i)).sum();
        sum / m.max(1) as f64
    }
    /// The settings the library picks for this model at `lambda`
    /// ([`crate::Settings::for_multiclass`]: BCFW with exact steps on
    /// well-conditioned problems, Prox-P-BMRM otherwise).
    pub fn settings_for(&self, lambda: f64) -> crate::Settings {
        crate::Settings::for_multiclass(lambda, self.labels.len(), self.mean_row_norm2())
    }
    /// Whether the rows are sparse ([`Multiclass::new_sparse`]).
    pub fn is_sparse(&self) -> bool {
        matches!(*self.x, Rows::Sparse { .. })
    }
    /// The row-major `m x d` features of a dense model.
    ///
    /// # Panics
    /// When the model holds sparse rows (see [`Multiclass::sparse_rows`]).
    pub fn features(&self) -> &[f32] {
        self.dense().values()
    }
    /// The `d` features of example `i` (without the bias) of a dense model.
    ///
    /// # Panics
    /// When the model holds sparse rows (see [`Multiclass::sparse_rows`]).
    pub fn example(&self, i: usize) -> &[f32] {
        self.dense().row(i)
    }
    /// The rows of a sparse model, `None` for a dense one.
    pub fn sparse_rows(&self) -> Option<&SparseRows> {
        match &*self.x {
            Rows::Sparse { rows, .. } => Some(rows),
            Rows::Dense(_) => None,
        }
    }

    fn dense(&self) -> &DenseFeatures {
        match &*self.x {
            Rows::Dense(x) => x,
            Rows::Sparse { .. } => panic!("{NAME}: the model holds sparse rows, not dense ones"),
        }
    }

    /// `<w_k, (x_i, 1)>`: the score of class `k` for example `i`.
    #[inline]
    fn class_score(&self, w: &[f64], k: usize, i: usize) -> f64 {
        self.x.class_score(w, k, i)
    }

    /// A NaN score would silently lose every comparison: fail instead.
    #[inline]
    fn check_score(&self, s: f64, k: usize, example: usize) -> Result<()> {
        if s.is_finite() {
            Ok(())
        } else {
            Err(Error::non_finite(format!(
                "{NAME}: the score of class {k} is {s} for example {example}"
            )))
        }
    }

    /// The class with the highest score, the lowest index on ties.
    fn argmax(&self, score: impl Fn(usize) -> f64) -> usize {
        let mut best = 0;
        let mut best_score = score(0);
        for k in 1..self.num_classes {
            let s = score(k);
            if s > best_score {
                best = k;
                best_score = s;
            }
        }
        best
    }

    /// The predicted class `argmax_k <w_k, (x, 1)>` of the dense features
    /// `x` (length `d`, without the bias); ties go to the lowest class index.
    /// Works for a sparse model too (`x` is then the densified row).
    ///
    /// # Panics
    /// When `w.len() != dim()` or `x.len() != feature_dim()`.
    pub fn predict(&self, w: &[f64], x: &[f32]) -> usize {
        assert_eq!(w.len(), self.dim(), "{NAME}: w has the wrong length");
        assert_eq!(x.len(), self.x.d(), "{NAME}: x has the wrong length");
        let dp = self.x.d_ext();
        let d = self.x.d();
        self.argmax(|k| {
            let v = &w[k * dp..(k + 1) * dp];
            let s = super::dot_f32(&v[..d], x);
            if self.x.bias() {
                s + v[d]
            } else {
                s
            }
        })
    }

    /// The predicted class of this model's example `i` (dense or sparse);
    /// ties go to the lowest class index.
    ///
    /// # Panics
    /// When `w.len() != dim()` or `i` is out of range.
    pub fn predict_example(&self, w: &[f64], i: usize) -> usize {
        assert_eq!(w.len(), self.dim(), "{NAME}: w has the wrong length");
        self.argmax(|k| self.class_score(w, k, i))
    }

    /// The fraction of this model's own examples that
    /// [`Multiclass::predict_example`] gets wrong. (For a test set, build a
    /// second `Multiclass` over it and call this with the same `w`.)
    ///
    /// # Panics
    /// When `w.len() != dim()`.
    pub fn error_rate(&self, w: &[f64]) -> f64 {
        assert_eq!(w.len(), self.dim(), "{NAME}: w has the wrong length");
        let m = self.x.m();
        let wrong: usize = (0..m)
            .into_par_iter()
            .map(|i| usize::from(self.predict_example(w, i) != self.labels[i]))
            .sum();
        wrong as f64 / m as f64
    }
}

impl MaxOracle for Multiclass {
    fn dim(&self) -> usize {
        self.num_classes * self.x.d_ext()
    }

    fn num_examples(&self) -> usize {
        self.x.m()
    }

    fn max_oracle(&self, example: usize, w: &[f64], out: &mut Corner) -> Result<()> {
        check_w_len(NAME, w, self.dim())?;
        check_example(NAME, example, self.x.m())?;
        self.answer(example, |k| self.class_score(w, k, example), out)
    }

    fn block_risk(
        &self,
        first: usize,
        n: usize,
        w: &[f64],
        grad: &mut [f64],
    ) -> Option<Result<f64>> {
        Some(self.block_risk_of(first, n, w, grad))
    }

    /// The block's scores as one product, then each example's answer from
    /// its row of scores: the same bits as [`MaxOracle::max_oracle`].
    fn max_oracle_block(&self, first: usize, w: &[f64], out: &mut [Corner]) -> Option<Result<()>> {
        Some(self.block_of(first, w, out))
    }

    /// `psi_i(y) = (x_i, 1) ⊗ (e_{y_i} - e_y)`: the model's corners factor
    /// over classes with the rows `(x_i, 1)` (`view.rs`).
    fn factoring(&self) -> Factoring {
        Factoring::Classes(Arc::new(self.class_view()))
    }
}

impl Multiclass {
    /// [`MaxOracle::max_oracle_block`].
    fn block_of(&self, first: usize, w: &[f64], out: &mut [Corner]) -> Result<()> {
        check_w_len(NAME, w, self.dim())?;
        if out.is_empty() {
            return Ok(());
        }
        check_example(NAME, first + out.len() - 1, self.x.m())?;
        let k = self.num_classes;
        let mut scores = vec![0.0; out.len() * k];
        self.x.block_scores(w, first, k, &mut scores, None);
        for (j, (corner, s)) in out.iter_mut().zip(scores.chunks_exact(k)).enumerate() {
            self.answer(first + j, |c| s[c], corner)?;
        }
        Ok(())
    }

    /// The loss-augmented argmax of `example` and its augmented score, from
    /// the class scores `score(k) = <w_k, (x, 1)>`.
    fn decide(&self, example: usize, score: impl Fn(usize) -> f64) -> Result<(usize, f64)> {
        let yi = self.labels[example];
        // The ground truth first (loss 0), then the others (loss 1) in
        // increasing order, replacing only on a strict increase: this is the
        // tie rule documented on the type.
        let mut best = yi;
        let mut best_score = score(yi);
        self.check_score(best_score, yi, example)?;
        for k in 0..self.num_classes {
            if k == yi {
                continue;
            }
            let s = 1.0 + score(k);
            self.check_score(s, k, example)?;
            if s > best_score {
                best = k;
                best_score = s;
            }
        }
        Ok((best, best_score))
    }

    /// The loss-augmented argmax of `example` from its class scores
    /// `score(k) = <w_k, (x, 1)>`, written to `out`.
    fn answer(&self, example: usize, score: impl Fn(usize) -> f64, out: &mut Corner) -> Result<()> {
        let yi = self.labels[example];
        let (best, _) = self.decide(example, score)?;
        out.set_label(best as u64);
        if best == yi {
            out.set_loss(0.0);
            return Ok(());
        }
        out.set_loss(1.0);
        let dp = self.x.d_ext();
        self.x.add_row(out, example, yi * dp, 1.0)?;
        self.x.add_row(out, example, best * dp, -1.0)
    }

    /// [`MaxOracle::block_risk`]: the class blocks packed once
    /// ([`PackedRows`]), then the span in tiles of [`TILE`] examples from
    /// its start, the last one shorter ([`Multiclass::tile_risk`]); the
    /// risk is the sum of the blocks' sums.
    fn block_risk_of(&self, first: usize, n: usize, w: &[f64], grad: &mut [f64]) -> Result<f64> {
        check_w_len(NAME, w, self.dim())?;
        check_w_len(NAME, grad, self.dim())?;
        if n == 0 {
            return Ok(0.0);
        }
        check_example(NAME, first + n - 1, self.x.m())?;
        let k = self.num_classes;
        let packed = self.x.packed_classes(w, k);
        let mut work = RiskWork {
            scores: vec![0.0; RISK_BLOCK.min(n) * k],
            answers: Vec::with_capacity(RISK_BLOCK),
            per_class: vec![(Vec::new(), Vec::new()); k],
            tile_sums: Vec::new(),
        };
        let mut risk = 0.0;
        let end = first + n;
        let mut start = first;
        while start < end {
            let len = TILE.min(end - start);
            self.tile_risk((start, len), w, packed.as_ref(), grad, &mut work, &mut risk)?;
            start += len;
        }
        Ok(risk)
    }

    /// The examples `first..first + n`: their scores as one product and
    /// each one's answer `(example, y_i, y^)` into `work.answers`, from
    /// which the sum of their hinges `1 + s_y^ - s_yi` (0 when `y^ = y_i`)
    /// and the number of margin violators.
    fn score_block(
        &self,
        first: usize,
        n: usize,
        w: &[f64],
        packed: Option<&PackedRows<'_>>,
        work: &mut RiskWork<'_>,
    ) -> Result<(f64, usize)> {
        let k = self.num_classes;
        let scores = &mut work.scores[..n * k];
        self.x.block_scores(w, first, k, scores, packed);
        let mut risk = 0.0;
        let mut violators = 0;
        work.answers.clear();
        for (j, s) in scores.chunks_exact(k).enumerate() {
            let i = first + j;
            let yi = self.labels[i];
            let (best, best_score) = self.decide(i, |c| s[c])?;
            if best != yi {
                risk += best_score - s[yi];
                violators += 1;
            }
            work.answers.push((i, yi, best));
        }
        Ok((risk, violators))
    }

    /// Adds the rows of the answers in `work` to `out` as `adds` says
    /// (the subgradient's `-psi`, `-x` in block `y_i` and `+x` in block `y^`
    /// of each violator, or one of its two parts for every example) by a
    /// vector kernel: the bits of adding the corners' entries one example
    /// at a time, since the rows are added whole (a zero feature adds `-0`
    /// or `+0`, which changes no sum that starts at `+0`).
    fn add_rows<'a>(&'a self, adds: Adds, out: &mut [f64], work: &mut RiskWork<'a>) {
        let dp = self.x.d_ext();
        let class_signs = |&(_, yi, best): &(usize, usize, usize)| match adds {
            Adds::Violators if best != yi => [Some((yi, -1.0)), Some((best, 1.0))],
            Adds::Violators => [None, None],
            Adds::Answers => [Some((best, 1.0)), None],
            Adds::Truths => [Some((yi, 1.0)), None],
        };
        match &*self.x {
            Rows::Dense(x) => {
                // Class by class, the rows that go into its block, in
                // example order (gathered in one sweep of the answers):
                // each entry of `out` receives the same additions in the
                // same order as one `add_row_to` per example, with the
                // block loaded and stored once.
                let d = x.d();
                for (rows, signs) in work.per_class.iter_mut() {
                    rows.clear();
                    signs.clear();
                }
                for a in work.answers.iter() {
                    for (c, sign) in class_signs(a).into_iter().flatten() {
                        let (rows, signs) = &mut work.per_class[c];
                        rows.push(x.row(a.0));
                        signs.push(sign);
                    }
                }
                for (c, (rows, signs)) in work.per_class.iter().enumerate() {
                    if !rows.is_empty() {
                        crate::linalg::axpy_rows(signs, rows, &mut out[c * dp..c * dp + d]);
                    }
                }
                if x.bias() {
                    for a in work.answers.iter() {
                        for (c, sign) in class_signs(a).into_iter().flatten() {
                            out[c * dp + d] += sign;
                        }
                    }
                }
            }
            Rows::Sparse { .. } => {
                for a in work.answers.iter() {
                    for (c, sign) in class_signs(a).into_iter().flatten() {
                        self.x.add_row_to(out, a.0, c * dp, sign);
                    }
                }
            }
        }
    }
}

/// Which rows [`Multiclass::add_rows`] adds.
#[derive(Debug, Clone, Copy)]
enum Adds {
    /// Each violator's `-psi`: `-x` in block `y_i`, `+x` in block `y^`.
    Violators,
    /// `+x` in block `y^` for every example.
    Answers,
    /// `+x` in block `y_i` for every example.
    Truths,
}

/// The buffers of the bundle methods' pass ([`Multiclass::score_block`]),
/// reused between its blocks.
struct RiskWork<'a> {
    scores: Vec<f64>,
    /// (example, y_i, y^) of the block's examples.
    answers: Vec<(usize, usize, usize)>,
    /// For each class, the rows added to its block and their signs.
    per_class: Vec<(Vec<&'a [f32]>, Vec<f64>)>,
    /// A tile's truth sums when they are not kept ([`TruthSums`]).
    tile_sums: Vec<f64>,
}

mod complement;

mod pass;

mod rows;
mod view;

//! A semi-Markov segmentation model (licence-plate segmentation, the third
//! problem of the Prox-BMRM technical report of Franc and Uricar) as a
//! max-oracle: an image's `T` columns are covered by consecutive segments,
//! each a character of a known width, and a character is scored by
//! correlating its template with the columns it covers.
//!
//! # Examples and outputs
//!
//! An example is a sequence of `T >= 1` columns, each a `d`-dimensional
//! `f32` feature vector (a column of pixels), stored row-major as in
//! [`super::Chain`]. An output is a segmentation: a list of segments
//! `(label, start)`, starts increasing, covering `0..T` exactly, where
//! label `c` in `0..K` always has the width `widths[c]` the model was built
//! with. There is no special background label: the gaps between characters
//! are a label of width 1 like any other (the generator of [`synthetic`]
//! makes label 0 that label). Since widths are fixed, a segmentation is
//! determined by its column labels (a run of one label splits into segments
//! of its width in one way only), and by its sequence of segment labels.
//!
//! # Joint features
//!
//! ```text
//! phi(x, y) = sum_{(c, s) in y} (x_s, .., x_{s + w_c - 1}) in the template block of c   (w_c d weights)
//!           + sum over consecutive segments e(transition a -> b)                  (K x K weights)
//!           + e(start: label of the first segment) + e(end: label of the last)    (K + K weights)
//! ```
//!
//! so `dim = d sum_c w_c + K^2 + 2K`, and the score of a segment is the
//! correlation `<template_c, columns s..s + w_c>`: one dense dot product of
//! `w_c d` numbers, because the columns are contiguous. The template of
//! label `c` is `w[template_index(c, 0, 0)..][..w_c d]`, column after column;
//! then come the transitions (`a K + b`), the start and the end biases (see
//! [`Segmentation::template_index`], [`Segmentation::transition_index`],
//! [`Segmentation::start_index`], [`Segmentation::end_index`]). The
//! transitions and the start bias play the role of a per-label bias (every
//! segment has exactly one of them), so there is no separate bias feature.
//!
//! # Loss and oracle
//!
//! The loss counts the wrongly segmented columns, those whose label differs
//! from the truth's, **normalised by `T`** like the chain's Hamming loss:
//! `L_i(y) = (1/T) #{t : label_y(t) != label_{y_i}(t)}`, in `[0, 1]`, zero
//! only for the truth (see above). The report counts columns without the
//! normalisation; it only rescales lambda per example.
//!
//! Loss-augmented inference is a semi-Markov dynamic programme over (end
//! position, label of the last segment) in `O(T K (K + w d))`: the score of
//! every segment `(c, s)` is computed once, by [`crate::linalg::dot_f32`],
//! and its loss `(1/T) #{t in s..s + w_c : truth(t) != c}` from per-label
//! prefix counts of the columns whose true label is `c`.
//!
//! psi is reported sparsely: the columns of the segments that are not in
//! both segmentations (`+` for the truth's, `-` for the answer's, zero
//! features skipped), and the transitions, start and end labels that differ.
//!
//! # Label ids and ties
//!
//! [`segmentation_id`]: the segment labels packed in bijective base `K + 1`
//! (`sum_j (c_j + 1) (K + 1)^j`) when that fits in 64 bits, so two different
//! segmentations of one example get different ids; else the FNV-1a hash of
//! the labels. The programme keeps the lowest predecessor label among equal
//! scores and the lowest last label; when the truth's score is at least the
//! best loss-augmented score the truth is returned (loss 0, psi 0).
//!
//! # Threads and memory
//!
//! The oracle is thread-safe and does not allocate in the hot loop once its
//! per-thread scratch (`thread_local!`) has grown to the longest example.

mod decode;
pub mod synthetic;

use std::cell::RefCell;

use super::{check_example, check_w_len};
use crate::error::{Error, Result};
use crate::models::with_scratch;
use crate::oracle::{Corner, MaxOracle};

const NAME: &str = "segmentation model";

/// One example: its columns and its ground-truth segmentation.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentedSequence {
    /// `T d` features, column after column (`T` = `columns.len() / d`).
    pub columns: Vec<f32>,
    /// The true segments `(label, start)`, starts increasing from 0, each
    /// ending where the next starts and the last at `T`.
    pub segments: Vec<(u32, usize)>,
}

/// A semi-Markov segmentation structured SVM with the normalised column
/// loss; see the module documentation.
#[derive(Debug, Clone)]
pub struct Segmentation {
    /// All columns of all examples, example after example (`d` each).
    columns: Vec<f32>,
    /// Example `i` is columns `col_starts[i]..col_starts[i + 1]`.
    col_starts: Vec<usize>,
    /// The true segments of all examples, example after example.
    segments: Vec<(u32, usize)>,
    /// Example `i`'s segments are `seg_starts[i]..seg_starts[i + 1]`.
    seg_starts: Vec<usize>,
    /// The true label of every column, example after example.
    column_labels: Vec<u32>,
    d: usize,
    widths: Vec<usize>,
    /// Offset of each label's template block in `w`.
    template_offsets: Vec<usize>,
    trans: usize,
    start: usize,
    end: usize,
    dim: usize,
}

/// The dynamic programme's per-thread tables (`T` columns, `K` labels).
#[derive(Default)]
struct Scratch {
    /// `seg[s K + c]`: the score of segment `(c, s)` (unused when it does
    /// not fit).
    seg: Vec<f64>,
    /// `count[c (T + 1) + t]`: columns before `t` whose true label is `c`.
    count: Vec<u32>,
    /// `best[t K + c]`: the best score of a segmentation of `0..t` whose
    /// last segment has label `c` (`-inf` when there is none).
    best: Vec<f64>,
    /// `back[t K + c]`: the label of the segment before that last one
    /// (`u32::MAX` when it is the first).
    back: Vec<u32>,
    /// The decoded segments.
    path: Vec<(u32, usize)>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// The 64-bit id of a segmentation over `num_labels` labels, from its
/// segment labels (which determine it, the widths being fixed): bijective
/// base-`(K + 1)` packing `sum_j (labels[j] + 1) (K + 1)^j` when
/// `(K + 1)^n <= 2^64`, injective over all lengths; else FNV-1a over the
/// labels' little-endian bytes.
pub fn segmentation_id(num_labels: usize, labels: impl ExactSizeIterator<Item = u32>) -> u64 {
    let base = num_labels as u128 + 1;
    let fits = u32::try_from(labels.len())
        .ok()
        .and_then(|n| base.checked_pow(n))
        .is_some_and(|p| p <= 1u128 << 64);
    if fits {
        let mut id = 0u128;
        let mut place = 1u128;
        for c in labels {
            id += (u128::from(c) + 1) * place;
            place *= base;
        }
        // Below (K + 1)^n <= 2^64, so the cast keeps every bit.
        id as u64
    } else {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for c in labels {
            for b in c.to_le_bytes() {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        h
    }
}

impl Segmentation {
    /// A segmentation model with `d` features per column and labels of the
    /// given `widths` (`K = widths.len()` labels, each width at least 1),
    /// over the `examples`.
    ///
    /// Errors ([`Error::invalid_argument`] unless said otherwise), each
    /// naming the example and segment: no example, fewer than 1 label or
    /// a width of 0, `d = 0`, an example with no columns (`T = 0`), a
    /// number of feature values that is not a multiple of `d`
    /// ([`Error::dimension_mismatch`]), a non-finite feature, no segments,
    /// a label out of range, a segment that does not start where the
    /// previous one ended (or the first not at 0), a segment whose width
    /// runs past `T`, segments that end before `T`, and a dimension that
    /// overflows.
    pub fn new(d: usize, widths: Vec<usize>, examples: &[SegmentedSequence]) -> Result<Self> {
        let invalid = |m: String| Err(Error::invalid_argument(format!("{NAME}: {m}")));
        if d == 0 {
            return invalid("the feature dimension d must be at least 1".into());
        }
        let k = widths.len();
        if k == 0 || k > u32::MAX as usize {
            return invalid(format!("there must be 1..2^32 labels (got {k} widths)"));
        }
        if let Some(c) = widths.iter().position(|&w| w == 0) {
            return invalid(format!("label {c} has width 0 (widths are at least 1)"));
        }
        if examples.is_empty() {
            return invalid("there must be at least one example (got 0)".into());
        }
        let overflow = || Error::invalid_argument(format!("{NAME}: the dimension overflows"));
        let mut template_offsets = Vec::with_capacity(k);
        let mut off = 0usize;
        for &w in &widths {
            template_offsets.push(off);
            off = w
                .checked_mul(d)
                .and_then(|b| off.checked_add(b))
                .ok_or_else(overflow)?;
        }
        let trans = off;
        let start = k
            .checked_mul(k)
            .and_then(|kk| trans.checked_add(kk))
            .ok_or_else(overflow)?;
        let end = start + k;
        let dim = end.checked_add(k).ok_or_else(overflow)?;
        let mut model = Segmentation {
            columns: Vec::new(),
            col_starts: vec![0],
            segments: Vec::new(),
            seg_starts: vec![0],
            column_labels: Vec::new(),
            d,
            widths,
            template_offsets,
            trans,
            start,
            end,
            dim,
        };
        for (i, ex) in examples.iter().enumerate() {
            model.push_example(i, ex)?;
        }
        Ok(model)
    }

    /// Checks example `i` and appends it.
    fn push_example(&mut self, i: usize, ex: &SegmentedSequence) -> Result<()> {
        let invalid = |m: String| Err(Error::invalid_argument(format!("{NAME}: example {i}: {m}")));
        let d = self.d;
        if !ex.columns.len().is_multiple_of(d) {
            return Err(Error::dimension_mismatch(format!(
                "{NAME}: example {i}: {} feature values is not a whole number of columns of \
                 d = {d}",
                ex.columns.len()
            )));
        }
        let t_len = ex.columns.len() / d;
        if t_len == 0 {
            return invalid("it has no columns (T = 0)".into());
        }
        if let Some(j) = ex.columns.iter().position(|v| !v.is_finite()) {
            return invalid(format!(
                "feature {} of column {} is {}",
                j % d,
                j / d,
                ex.columns[j]
            ));
        }
        if ex.segments.is_empty() {
            return invalid(format!("it has no segments to cover its {t_len} columns"));
        }
        let k = self.widths.len();
        let mut pos = 0usize;
        for (j, &(c, s)) in ex.segments.iter().enumerate() {
            if c as usize >= k {
                return invalid(format!(
                    "segment {j} has label {c}, out of range for {k} labels"
                ));
            }
            if s != pos {
                return invalid(format!(
                    "segment {j} starts at column {s}, but the segments before it cover \
                     0..{pos} (segments must cover 0..T = {t_len} in order, without gaps \
                     or overlaps)"
                ));
            }
            let w = self.widths[c as usize];
            if w > t_len - s {
                return invalid(format!(
                    "segment {j} (label {c}, width {w}) starts at column {s} and runs past \
                     the end of the {t_len} columns"
                ));
            }
            pos = s + w;
        }
        if pos != t_len {
            return invalid(format!(
                "the {} segments cover columns 0..{pos} but the example has T = {t_len} \
                 columns",
                ex.segments.len()
            ));
        }
        self.columns.extend_from_slice(&ex.columns);
        self.col_starts.push(self.col_starts[i] + t_len);
        self.segments.extend_from_slice(&ex.segments);
        self.seg_starts.push(self.segments.len());
        for &(c, _) in &ex.segments {
            let w = self.widths[c as usize];
            self.column_labels.extend(std::iter::repeat_n(c, w));
        }
        Ok(())
    }

    /// Number of labels `K`.
    pub fn num_labels(&self) -> usize {
        self.widths.len()
    }
    /// The width of every label.
    pub fn widths(&self) -> &[usize] {
        &self.widths
    }
    /// Features per column, `d`.
    pub fn feature_dim(&self) -> usize {
        self.d
    }
    /// The number of columns `T` of example `i`.
    pub fn num_columns(&self, i: usize) -> usize {
        self.col_starts[i + 1] - self.col_starts[i]
    }
    /// Columns in all examples.
    pub fn total_columns(&self) -> usize {
        self.column_labels.len()
    }
    /// The `T d` features of example `i`, column after column.
    pub fn columns(&self, i: usize) -> &[f32] {
        &self.columns[self.col_starts[i] * self.d..self.col_starts[i + 1] * self.d]
    }
    /// The true segments of example `i`.
    pub fn segments(&self, i: usize) -> &[(u32, usize)] {
        &self.segments[self.seg_starts[i]..self.seg_starts[i + 1]]
    }
    /// The true label of every column of example `i`.
    pub fn column_labels(&self, i: usize) -> &[u32] {
        &self.column_labels[self.col_starts[i]..self.col_starts[i + 1]]
    }

    /// Where the template weight of `label` for feature `feature` of the
    /// segment's column `column` (`0..width`) sits in `w`.
    #[inline]
    pub fn template_index(&self, label: usize, column: usize, feature: usize) -> usize {
        self.template_offsets[label] + column * self.d + feature
    }
    /// Where the weight of the transition `from -> to` sits in `w`.
    #[inline]
    pub fn transition_index(&self, from: usize, to: usize) -> usize {
        self.trans + from * self.widths.len() + to
    }
    /// Where the start bias of `label` (first segment) sits in `w`.
    #[inline]
    pub fn start_index(&self, label: usize) -> usize {
        self.start + label
    }
    /// Where the end bias of `label` (last segment) sits in `w`.
    #[inline]
    pub fn end_index(&self, label: usize) -> usize {
        self.end + label
    }

    /// The label id of a segmentation (the ids the oracle reports).
    pub fn label_id(&self, segments: &[(u32, usize)]) -> u64 {
        segmentation_id(self.widths.len(), segments.iter().map(|&(c, _)| c))
    }
}

impl MaxOracle for Segmentation {
    fn dim(&self) -> usize {
        self.dim
    }

    fn num_examples(&self) -> usize {
        self.col_starts.len() - 1
    }

    fn max_oracle(&self, example: usize, w: &[f64], out: &mut Corner) -> Result<()> {
        check_w_len(NAME, w, self.dim)?;
        check_example(NAME, example, self.num_examples())?;
        with_scratch(&SCRATCH, |s| self.oracle_in(example, w, out, s))
    }
}

//! A linear chain model for sequence labelling (handwriting recognition on
//! OCR words, text chunking on CoNLL-2000) as a max-oracle: one example is one
//! sequence, the output is one label per token, decoded by Viterbi.
//!
//! # Joint features
//!
//! With `K` labels, a sequence `x = (x_1..x_L)` of tokens and labels
//! `y = (y_1..y_L)`:
//!
//! ```text
//! phi(x, y) = sum_t emission(x_t) in the block of y_t      (K blocks of d' = d + bias weights)
//!           + sum_{t>1} e(transition y_{t-1} -> y_t)        (K x K weights)
//!           + e(start y_1) + e(end y_L)                     (K + K weights)
//! ```
//!
//! so `dim = K d' + K^2 + 2K`; with `bias` a constant 1 is appended to every
//! token's features. For OCR (`K = 26`, 128 pixels, bias) that is the
//! standard `26 * 129 + 26 * 26 + 2 * 26 = 4082`.
//!
//! Where each weight sits is given by [`Chain::emission_index`],
//! [`Chain::transition_index`], [`Chain::start_index`] and
//! [`Chain::end_index`]: emission weights come first (`[0, K d')`), then the
//! transitions (`K d' + a K + b` for `a -> b`), the start biases and the end
//! biases. The emission block is **label-major** for dense features (label
//! `y` owns the contiguous `y d' .. (y + 1) d'`, so a score is one dense dot
//! product) and **feature-major** for sparse features (feature `j` owns the
//! `K` contiguous weights `j K .. (j + 1) K`, so the few active features of a
//! token read `K` neighbouring weights each instead of `K` scattered cache
//! lines: CoNLL's weight vector is 13 MB).
//!
//! # Loss and oracle
//!
//! The loss is the normalised Hamming loss `L_i(y) = (1/L) #{t : y_t != y_{i,t}}`.
//! The loss-augmented argmax adds `1/L` to the score of every wrong label at
//! every position and runs Viterbi, `O(L K^2 + L K d')` for dense features,
//! `O(L K^2 + K nnz)` for sparse ones.
//!
//! psi is always reported **sparsely** through [`Corner::add`], for both
//! kinds: only positions where `y^_t != y_{i,t}` contribute their emission
//! rows (`+x_t` for `y_{i,t}`, `-x_t` for `y^_t`, zero features skipped), and
//! only transitions, start and end labels that differ contribute `+1 / -1`.
//! For dense OCR features a corner then holds at most `2 (129 n_wrong + L + 1)`
//! entries, where a dense psi would be 4082 values to write, clear and scan,
//! and near the optimum most letters are right.
//!
//! # Label ids
//!
//! [`sequence_id`]: the labels packed exactly in base `K`
//! (`sum_t y_t K^(t-1)`) when `K^L <= 2^64`, so two different sequences of
//! one example always get different ids (OCR words of up to 13 letters); for
//! longer sequences the FNV-1a hash of the labels (collisions possible, but
//! with probability about `2^-64` per pair).
//!
//! # Ties
//!
//! Viterbi keeps the lowest label index among equal scores. When the ground
//! truth's score is at least the best loss-augmented score, the ground truth
//! is returned (loss 0, psi 0), so `H_i(w) = 0` gives the zero corner.
//!
//! # Threads and memory
//!
//! The oracle is thread-safe and does not allocate in the hot loop: Viterbi's
//! tables live in per-thread scratch buffers (`thread_local!`) that grow to
//! the longest sequence seen and are then reused; psi goes into the caller's
//! reused [`Corner`].

mod decode;
mod rows;

use std::cell::RefCell;
use std::sync::Arc;

use super::sparse::SparseRows;
use super::{check_example, check_w_len};
use crate::error::{Error, Result};
use crate::models::path::PathMaxSum;
use crate::models::with_scratch;
use crate::oracle::{ChainAnswer, ChainRows, Corner, Factoring, MaxOracle};

const NAME: &str = "chain model";

/// The token features of a chain model.
#[derive(Debug, Clone)]
pub enum ChainFeatures {
    /// `d` dense features per token, row-major: `values.len() = tokens * d`.
    Dense {
        /// The features, token after token.
        values: Vec<f32>,
        /// Features per token.
        d: usize,
    },
    /// One sparse row per token (for indicator features, values 1; see
    /// [`SparseRows::indicators`]).
    Sparse(SparseRows),
}

impl ChainFeatures {
    fn num_tokens(&self) -> usize {
        match self {
            ChainFeatures::Dense { values, d } => values.len() / (*d).max(1),
            ChainFeatures::Sparse(rows) => rows.num_rows(),
        }
    }
    fn dim(&self) -> usize {
        match self {
            ChainFeatures::Dense { d, .. } => *d,
            ChainFeatures::Sparse(rows) => rows.num_cols(),
        }
    }
}

/// A linear chain structured SVM with normalised Hamming loss; see the
/// module documentation for the feature map, the oracle and the layout of `w`.
#[derive(Debug, Clone)]
pub struct Chain {
    /// Shared with the view BCFW's chain blocks read
    /// ([`MaxOracle::factoring`]).
    features: Arc<ChainFeatures>,
    bias: bool,
    /// The labels of all tokens, sequence after sequence.
    labels: Vec<u32>,
    /// Sequence `i` is tokens `starts[i]..starts[i + 1]`.
    starts: Vec<usize>,
    k: usize,
    /// Emission weights per label: `d + bias`.
    de: usize,
    /// Offsets of the transition, start and end weights.
    trans: usize,
    start: usize,
    end: usize,
    dim: usize,
}

/// Viterbi's per-thread tables.
#[derive(Default)]
struct Scratch {
    /// `emit[t K + y]`: the emission score of label `y` at token `t`.
    emit: Vec<f64>,
    /// The path programme's tables and the decoded labels.
    dp: PathMaxSum,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// The 64-bit id of a label sequence over `num_labels` labels: exact base-`K`
/// packing `sum_t labels[t] K^t` when `K^L <= 2^64`, else FNV-1a over the
/// labels' little-endian bytes. Within sequences of one length the packing
/// is injective; see the module documentation.
pub fn sequence_id(num_labels: usize, labels: &[u32]) -> u64 {
    let fits = u32::try_from(labels.len())
        .ok()
        .and_then(|l| (num_labels as u128).checked_pow(l))
        .is_some_and(|n| n <= 1u128 << 64);
    if fits {
        let k = num_labels as u128;
        let id = labels
            .iter()
            .rev()
            .fold(0u128, |acc, &y| acc * k + u128::from(y));
        id as u64
    } else {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &y in labels {
            for b in y.to_le_bytes() {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        h
    }
}

impl Chain {
    /// A chain model over sequences of the given `lengths` (each at least 1)
    /// whose tokens, sequence after sequence, have the `features` and the
    /// `labels` (in `0..num_labels`); with `bias` a constant 1 feature is
    /// appended to every token.
    ///
    /// Errors: [`Error::invalid_argument`] for no sequence, an empty sequence,
    /// fewer than 2 labels, zero features, a label out of range, a
    /// non-finite feature or a dimension that overflows;
    /// [`Error::dimension_mismatch`] when the lengths, the labels and the
    /// feature rows disagree on the number of tokens.
    pub fn new(
        features: ChainFeatures,
        lengths: &[usize],
        labels: Vec<u32>,
        num_labels: usize,
        bias: bool,
    ) -> Result<Self> {
        let invalid = |m: String| Err(Error::invalid_argument(format!("{NAME}: {m}")));
        if lengths.is_empty() {
            return invalid("there must be at least one sequence (got 0 lengths)".into());
        }
        if let Some(i) = lengths.iter().position(|&l| l == 0) {
            return invalid(format!("sequence {i} has length 0"));
        }
        if num_labels < 2 || num_labels > u32::MAX as usize {
            return invalid(format!("num_labels must be in 2..2^32 (got {num_labels})"));
        }
        let d = features.dim();
        if d == 0 {
            return invalid("the feature dimension must be at least 1".into());
        }
        let mut starts = Vec::with_capacity(lengths.len() + 1);
        starts.push(0usize);
        for &l in lengths {
            let next = starts
                .last()
                .and_then(|s| s.checked_add(l))
                .ok_or_else(|| Error::invalid_argument(format!("{NAME}: lengths overflow")))?;
            starts.push(next);
        }
        let tokens = *starts.last().unwrap_or(&0);
        if labels.len() != tokens {
            return Err(Error::dimension_mismatch(format!(
                "{NAME}: the lengths add up to {tokens} tokens but {} labels are given",
                labels.len()
            )));
        }
        match &features {
            ChainFeatures::Dense { values, d } => {
                if Some(values.len()) != tokens.checked_mul(*d) {
                    return Err(Error::dimension_mismatch(format!(
                        "{NAME}: {} feature values given, but {tokens} tokens x d = {d} needs \
                         {} (row-major, one row of d values per token)",
                        values.len(),
                        tokens.saturating_mul(*d)
                    )));
                }
                if let Some(p) = values.iter().position(|v| !v.is_finite()) {
                    return invalid(format!(
                        "feature {} of token {} is {}",
                        p % d,
                        p / d,
                        values[p]
                    ));
                }
            }
            ChainFeatures::Sparse(rows) => {
                if rows.num_rows() != tokens {
                    return Err(Error::dimension_mismatch(format!(
                        "{NAME}: the lengths add up to {tokens} tokens but there are {} \
                         sparse feature rows",
                        rows.num_rows()
                    )));
                }
            }
        }
        debug_assert_eq!(features.num_tokens(), tokens);
        if let Some(t) = labels.iter().position(|&y| y as usize >= num_labels) {
            let i = starts.partition_point(|&s| s <= t) - 1;
            return invalid(format!(
                "label {} of token {} (sequence {i}, position {}) is out of range 0..{num_labels}",
                labels[t],
                t,
                t - starts[i]
            ));
        }
        let k = num_labels;
        let Some(de) = d.checked_add(usize::from(bias)) else {
            return invalid(format!("{d} features + bias overflows the dimension"));
        };
        let dims = k
            .checked_mul(de)
            .and_then(|e| k.checked_mul(k + 2).and_then(|r| e.checked_add(r)))
            .filter(|&n| n <= isize::MAX as usize / 8);
        let Some(dim) = dims else {
            return invalid(format!(
                "{k} labels x {de} emission weights overflows the dimension"
            ));
        };
        let trans = k * de;
        Ok(Chain {
            features: Arc::new(features),
            bias,
            labels,
            starts,
            k,
            de,
            trans,
            start: trans + k * k,
            end: trans + k * k + k,
            dim,
        })
    }

    /// [`Chain::new`] with `d` dense features per token (row-major).
    pub fn dense(
        values: Vec<f32>,
        d: usize,
        lengths: &[usize],
        labels: Vec<u32>,
        num_labels: usize,
        bias: bool,
    ) -> Result<Self> {
        Self::new(
            ChainFeatures::Dense { values, d },
            lengths,
            labels,
            num_labels,
            bias,
        )
    }

    /// [`Chain::new`] with one sparse row per token.
    pub fn sparse(
        rows: SparseRows,
        lengths: &[usize],
        labels: Vec<u32>,
        num_labels: usize,
        bias: bool,
    ) -> Result<Self> {
        Self::new(
            ChainFeatures::Sparse(rows),
            lengths,
            labels,
            num_labels,
            bias,
        )
    }

    /// Number of labels `K`.
    pub fn num_labels(&self) -> usize {
        self.k
    }
    /// Features per token as given, `d` (without the bias).
    pub fn feature_dim(&self) -> usize {
        self.features.dim()
    }
    /// Whether a constant 1 feature is appended to every token.
    pub fn has_bias(&self) -> bool {
        self.bias
    }
    /// Whether the features are sparse rows.
    pub fn is_sparse(&self) -> bool {
        matches!(*self.features, ChainFeatures::Sparse(_))
    }
    /// The token features.
    pub fn features(&self) -> &ChainFeatures {
        &self.features
    }
    /// Tokens in all sequences.
    pub fn num_tokens(&self) -> usize {
        self.labels.len()
    }
    /// The tokens of sequence `i`, as a range into the flat token arrays.
    pub fn tokens(&self, i: usize) -> std::ops::Range<usize> {
        self.starts[i]..self.starts[i + 1]
    }
    /// The ground-truth labels of sequence `i`.
    pub fn labels(&self, i: usize) -> &[u32] {
        &self.labels[self.tokens(i)]
    }
    /// The labels of all tokens, sequence after sequence.
    pub fn all_labels(&self) -> &[u32] {
        &self.labels
    }

    /// Where the emission weight of `feature` (`0..d`, or `d` for the bias)
    /// for `label` sits in `w`.
    #[inline]
    pub fn emission_index(&self, label: usize, feature: usize) -> usize {
        match *self.features {
            ChainFeatures::Dense { .. } => label * self.de + feature,
            ChainFeatures::Sparse(_) => feature * self.k + label,
        }
    }
    /// Where the weight of the transition `from -> to` sits in `w`.
    #[inline]
    pub fn transition_index(&self, from: usize, to: usize) -> usize {
        self.trans + from * self.k + to
    }
    /// Where the start bias of `label` (first token) sits in `w`.
    #[inline]
    pub fn start_index(&self, label: usize) -> usize {
        self.start + label
    }
    /// Where the end bias of `label` (last token) sits in `w`.
    #[inline]
    pub fn end_index(&self, label: usize) -> usize {
        self.end + label
    }

    /// The label id of `labels` as a labelling of sequence `example` (the
    /// ids the oracle reports; see [`sequence_id`]). For the ground truth:
    /// `label_id(i, model.labels(i))`.
    ///
    /// # Panics
    /// When `labels.len()` is not the length of sequence `example`.
    pub fn label_id(&self, example: usize, labels: &[u32]) -> u64 {
        assert_eq!(
            labels.len(),
            self.tokens(example).len(),
            "{NAME}: a labelling of sequence {example} has its length"
        );
        sequence_id(self.k, labels)
    }

    /// The label id of the ground truth of sequence `example`.
    pub fn ground_truth_id(&self, example: usize) -> u64 {
        sequence_id(self.k, self.labels(example))
    }
}

impl MaxOracle for Chain {
    fn dim(&self) -> usize {
        self.dim
    }

    fn num_examples(&self) -> usize {
        self.starts.len() - 1
    }

    fn max_oracle(&self, example: usize, w: &[f64], out: &mut Corner) -> Result<()> {
        check_w_len(NAME, w, self.dim)?;
        check_example(NAME, example, self.num_examples())?;
        with_scratch(&SCRATCH, |s| {
            self.emission_scores(w, self.tokens(example), &mut s.emit);
            self.oracle_in(example, w, out, s)
        })
    }

    /// The corners factor over positions: BCFW keeps chain blocks.
    fn factoring(&self) -> Factoring {
        Factoring::Chains(Arc::new(self.rows_view()))
    }
}

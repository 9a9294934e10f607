//! Oracles whose corners factor over the positions of a chain: the joint
//! features of a labelling `y = (y_1..y_L)` of a sequence `x = (x_1..x_L)`
//! are `sum_t x_t` in the emission block of `y_t`, one indicator per
//! transition `y_{t-1} -> y_t`, and, when the model has them, indicators
//! of the first and the last label. Every corner `psi_i(y) = phi(x_i,
//! y_i) - phi(x_i, y)` is then `sum_t x_t ⊗ (e_{y_it} - e_{y_t})` plus a
//! few structural entries, and so is every BCFW block iterate with real
//! coefficients: BCFW keeps `L K` emission coefficients and the structural
//! entries instead of a sparse vector (docs/bcfw.md, "Chain-factored
//! blocks"; `src/bcfw/chains.rs`).

use crate::error::Result;

/// Where the structural weights of a chain sit in `w`: the transition
/// `a -> b` at `transitions + a K + b`, the first label `k` at `start + k`
/// and the last at `end + k` (absent when the model has no such weights).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainLayout {
    /// The offset of the `K x K` transition table.
    pub transitions: usize,
    /// The offset of the `K` first-label weights, if any.
    pub start: Option<usize>,
    /// The offset of the `K` last-label weights, if any.
    pub end: Option<usize>,
}

/// The token features and ground truths of a chain-factored oracle
/// ([`super::Factoring::Chains`]): the arithmetic BCFW needs on `sum_t
/// x_t ⊗ c_t`, and the oracle call that also gives the emission scores.
/// Its arithmetic may be called from any thread, also when the oracle is
/// not thread-safe (BCFW's exact passes compute `<w, w_i>` in parallel);
/// [`ChainRows::answer`] is called as [`super::MaxOracle::max_oracle`] is.
pub trait ChainRows: Send + Sync {
    /// The oracle call: writes the emission scores `<w_k, x_t>` of
    /// sequence `i` into `scores[t K + k]` (length `L_i K`) and the
    /// labelling of [`super::MaxOracle::max_oracle`]'s answer at `w` into
    /// `labels` (length `L_i`; the ground truth when that is the answer),
    /// and returns its loss.
    fn answer(
        &self,
        i: usize,
        w: &[f64],
        scores: &mut [f64],
        labels: &mut [u32],
    ) -> Result<ChainAnswer>;
    /// The number of labels `K`.
    fn num_labels(&self) -> usize;
    /// The ground-truth labels of sequence `i` (its length is `L_i`).
    fn truth(&self, i: usize) -> &[u32];
    /// Where the structural weights sit.
    fn layout(&self) -> ChainLayout;
    /// The Gram matrix of sequence `i`'s token features, `G_ts = <x_t,
    /// x_s>` (bias included), row-major into `out` (length `L_i^2`).
    fn gram(&self, i: usize, out: &mut [f64]);
    /// `sum_k c_k <w_k, x_t>` for token `t` of sequence `i` over the
    /// non-zero `c_k` (`c` has length `K`).
    fn token_dot(&self, i: usize, t: usize, c: &[f64], w: &[f64]) -> f64;
    /// `v_k += c x_t` for every `(k, c)` of `change` (labels increasing,
    /// each once), token `t` of sequence `i`.
    fn add_token(&self, i: usize, t: usize, change: &[(u32, f64)], v: &mut [f64]);
}

/// The answer of [`ChainRows::answer`]: the loss `L_i(y^)` of
/// the labelling written (0 for the ground truth).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChainAnswer {
    /// `L_i(y^)`.
    pub loss: f64,
}

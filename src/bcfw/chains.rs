//! Chain-factored block iterates: for an oracle whose corners factor over
//! the positions of a chain ([`crate::oracle::chains`]), BCFW keeps every
//! `w_i = (1/(lambda n)) sum_y alpha_i(y) psi_i(y)` as per-position label
//! coefficients and a few structural entries, and takes every quantity of
//! a FW step from the oracle's emission scores and the sequence's Gram
//! matrix, without forming psi as a vector.
//!
//! # The algebra
//!
//! Sequence `i` has tokens `x_1..x_L` (bias included), truth `g = y_i`
//! and `K` labels. A corner `y` is
//!
//! ```text
//! psi(y) = sum_t x_t ⊗ d_t  +  p(y),   d_t = e_{g_t} - e_{y_t}  (0 where y_t = g_t)
//! ```
//!
//! with `x ⊗ d` the emission weights `d_k x` in label `k`'s block and
//! `p(y)` the structural entries: `+1` at transition `g_{t-1} -> g_t` and
//! `-1` at `y_{t-1} -> y_t` where the pairs differ, likewise for the first
//! and the last label (entries at the same weight summed). A convex
//! combination of corners keeps that form, so
//!
//! ```text
//! w_i = sum_t x_t ⊗ c_t + q,   c_t in R^K (L K numbers),  q sparse over the K^2 + 2K
//! ```
//!
//! With the emission scores `s_t[k] = <w_k, x_t>` (the oracle computes them
//! for Viterbi and returns them) and `G_ts = <x_t, x_s>` (per sequence,
//! computed once):
//!
//! - `<w, w_i>   = sum_t <c_t, s_t> + <q, w>`;
//! - `<w, psi>   = sum_{t wrong} (s_t[g_t] - s_t[y_t]) + <p, w>`;
//! - `<psi, w_i> = sum_{t wrong} sum_s G_ts (c_s[g_t] - c_s[y_t]) + <p, q>`;
//! - `||psi||^2  = sum_{t, u wrong} G_tu <d_t, d_u> + ||p||^2`, with
//!   `<d_t, d_u> = [g_t = g_u] - [g_t = y_u] - [y_t = g_u] + [y_t = y_u]`;
//!
//! since `<x_t ⊗ a, x_s ⊗ b> = G_ts <a, b>` and the emission and the
//! structural weights are disjoint. `||w_i||^2` is carried by the steps'
//! recurrence, as for sparse blocks. The FW step `w_i <- (1 - gamma) w_i +
//! gamma psi / (lambda n)` is `c_t <- (1 - gamma) c_t + gamma d_t / (lambda
//! n)` for every `t` and the same on `q`; `v = sum_j w_j` moves by `x_t ⊗
//! (c_t^new - c_t^old)` per position (one scaled feature row per label in
//! use) and by the change of `q`. Against a sparse block this removes
//! forming psi from the oracle's entries and the gathers along `w_i`: a
//! step costs `O(L K + L^2 + nnz(q))` besides moving `v`.
//!
//! Only FW steps without kept corners, a box or mini-batches use these
//! blocks (the default BCFW); other settings keep general blocks.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::oracle::sparse::SparseVec;
use crate::oracle::{ChainLayout, ChainRows};

/// The terms a FW step needs of the oracle's fresh answer on a chain block
/// (psi unscaled).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FreshTerms {
    pub w_dot_wi: f64,
    pub w_dot_psi: f64,
    pub psi_dot_wi: f64,
    pub psi_norm2: f64,
}

/// The coefficients of every chain block, with the features they multiply.
pub struct ChainBlocks {
    pub rows: Arc<dyn ChainRows>,
    pub k: usize,
    /// Block `i`'s tokens are rows `first[i]..first[i + 1]` of `coef`.
    first: Vec<usize>,
    /// `c_t` of every token at `coef[t K .. (t + 1) K]`.
    coef: Vec<f64>,
    /// The labels of a token whose entry of `c_t` is not zero ([`Mask`]):
    /// a position the block's corners never labelled wrong has `c_t = 0`,
    /// and the loops skip it (most positions of most words); the step
    /// visits the few labels in use of the others.
    used: Vec<Mask>,
    /// The ground truths of all sequences, at the tokens' rows (`rows.truth`
    /// is a call through the trait object, asked three times a step).
    truth: Vec<u32>,
    /// Block `i`'s Gram matrix at `gram[gram_at[i]..]`, `L_i x L_i`.
    gram_at: Vec<usize>,
    gram: Vec<f64>,
    /// `q` of every block, coordinates of `w` increasing.
    structure: Vec<SparseVec>,
    /// The emission scores and the labelling of the oracle's last answer.
    pub scores: Vec<f64>,
    pub labels: Vec<u32>,
    /// `p` of the last answer.
    fresh: SparseVec,
    /// Scratch: the new `q`, one position's non-zero coefficient changes
    /// `(label, change)`, `p`'s entries before they are sorted.
    merged: SparseVec,
    change: Vec<(u32, f64)>,
    pairs: Vec<(u32, f64)>,
    /// Scratch: the last answer's wrong positions `(t, g_t, y_t)`.
    wrong: Vec<(usize, usize, usize)>,
}

impl ChainBlocks {
    /// Every `w_i = 0` (the start `alpha_i = delta(y_i)`) for `n` sequences
    /// of an oracle of dimension `dim`; an error when the rows' labels or
    /// layout do not fit.
    pub fn new(rows: Arc<dyn ChainRows>, n: usize, dim: usize) -> Result<Self> {
        let k = rows.num_labels();
        let ChainLayout {
            transitions,
            start,
            end,
        } = rows.layout();
        let fits = |at: usize, len: usize| at.checked_add(len).is_some_and(|e| e <= dim);
        if k == 0
            || !fits(transitions, k.saturating_mul(k))
            || start.is_some_and(|s| !fits(s, k))
            || end.is_some_and(|e| !fits(e, k))
        {
            return Err(Error::invalid_argument(format!(
                "the chain rows' layout ({k} labels, {:?}) does not fit in the dimension {dim}",
                rows.layout()
            )));
        }
        let mut first = Vec::with_capacity(n + 1);
        let mut gram_at = Vec::with_capacity(n + 1);
        first.push(0);
        gram_at.push(0);
        for i in 0..n {
            let truth = rows.truth(i);
            if truth.is_empty() {
                return Err(Error::invalid_argument(format!(
                    "chain rows: sequence {i} has no tokens"
                )));
            }
            if let Some(t) = truth.iter().position(|&y| y as usize >= k) {
                return Err(Error::invalid_argument(format!(
                    "chain rows: label {} of sequence {i}, position {t}, is not one of the {k}",
                    truth[t]
                )));
            }
            let l = truth.len();
            first.push(first[i] + l);
            gram_at.push(gram_at[i] + l * l);
        }
        let mut truth = Vec::with_capacity(first[n]);
        for i in 0..n {
            truth.extend_from_slice(rows.truth(i));
        }
        let mut gram = vec![0.0; gram_at[n]];
        for i in 0..n {
            rows.gram(i, &mut gram[gram_at[i]..gram_at[i + 1]]);
        }
        Ok(ChainBlocks {
            k,
            coef: vec![0.0; first[n] * k],
            used: vec![0; first[n]],
            truth,
            first,
            gram_at,
            gram,
            structure: vec![SparseVec::default(); n],
            scores: Vec::new(),
            labels: Vec::new(),
            fresh: SparseVec::default(),
            merged: SparseVec::default(),
            change: Vec::with_capacity(k.min(64)),
            pairs: Vec::new(),
            wrong: Vec::new(),
            rows,
        })
    }

    pub fn bytes(&self) -> usize {
        (self.coef.capacity() + self.gram.capacity()) * 8
            + (self.first.capacity() + self.gram_at.capacity()) * 8
            + self.used.capacity() * 8
            + self.truth.capacity() * 4
            + self
                .structure
                .iter()
                .map(|q| q.bytes() + std::mem::size_of::<SparseVec>())
                .sum::<usize>()
    }

    /// `L_i`.
    pub fn len(&self, i: usize) -> usize {
        self.first[i + 1] - self.first[i]
    }

    /// The ground truth of block `i`.
    fn truth(&self, i: usize) -> &[u32] {
        &self.truth[self.first[i]..self.first[i + 1]]
    }

    fn coef(&self, i: usize) -> &[f64] {
        &self.coef[self.first[i] * self.k..self.first[i + 1] * self.k]
    }

    /// Sizes the answer buffers for block `i`.
    pub fn prepare(&mut self, i: usize) {
        let l = self.len(i);
        self.scores.resize(l * self.k, 0.0);
        self.labels.resize(l, 0);
    }

    /// `<w, w_i>` at any `w` (exact passes): the tokens' scores of the
    /// labels in use.
    pub fn dot(&self, i: usize, w: &[f64]) -> f64 {
        let mut acc = 0.0;
        let used = &self.used[self.first[i]..self.first[i + 1]];
        for (t, c) in self.coef(i).chunks_exact(self.k).enumerate() {
            if used[t] != 0 {
                acc += self.rows.token_dot(i, t, c, w);
            }
        }
        acc + self.structure[i].dot_dense(w)
    }

    /// Asks for block `i`'s lines (coefficients, label masks, truth, Gram
    /// matrix, structural entries) to be brought into the cache, a step
    /// before it is used: the blocks are drawn at random from tens of
    /// megabytes, and lines that arrive while the current step runs do not
    /// stall the next. (Not the sequence's features: measured on the OCR
    /// words, their 64 lines a word cost more in prefetch instructions
    /// waiting for fill buffers than the oracle's streaming reads of them
    /// lose.) A hint: changes nothing.
    pub fn prefetch(&self, i: usize) {
        use crate::linalg::prefetch_l2 as prefetch;
        let tokens = self.first[i]..self.first[i + 1];
        prefetch(&self.coef[tokens.start * self.k..tokens.end * self.k]);
        prefetch(&self.used[tokens.clone()]);
        prefetch(&self.truth[tokens]);
        prefetch(&self.gram[self.gram_at[i]..self.gram_at[i + 1]]);
        let q = &self.structure[i];
        prefetch(&q.idx);
        prefetch(&q.val);
    }

    /// Whether the last answer is block `i`'s ground truth.
    pub fn answered_truth(&self, i: usize) -> bool {
        self.labels == self.truth(i)
    }

    /// An error when the last answer has a label out of range.
    pub fn check_answer(&self, i: usize) -> Result<()> {
        match self.labels.iter().position(|&y| y as usize >= self.k) {
            None => Ok(()),
            Some(t) => Err(Error::oracle(format!(
                "chain max-oracle for example {i} answered label {} at position {t}, not one \
                 of the {} labels",
                self.labels[t], self.k
            ))),
        }
    }

    /// The terms of the last answer on block `i` at `w` (whose emission
    /// scores are `self.scores`), with its structural entries `p` kept for
    /// the step.
    pub fn fresh_terms(&mut self, i: usize, w: &[f64]) -> FreshTerms {
        let k = self.k;
        let l = self.len(i);
        let truth = &self.truth[self.first[i]..self.first[i + 1]];
        let y = &self.labels;
        structural(
            self.rows.layout(),
            k,
            truth,
            y,
            &mut self.pairs,
            &mut self.fresh,
        );
        let c = &self.coef[self.first[i] * k..self.first[i + 1] * k];
        let q = &self.structure[i];
        let g = &self.gram[self.gram_at[i]..self.gram_at[i + 1]];
        let used = &self.used[self.first[i]..self.first[i + 1]];
        let mut w_dot_wi = 0.0;
        for (t, (ct, st)) in c
            .chunks_exact(k)
            .zip(self.scores.chunks_exact(k))
            .enumerate()
        {
            if used[t] != 0 {
                w_dot_wi += dot4(ct, st);
            }
        }
        w_dot_wi += q.dot_dense(w);
        let mut w_dot_psi = self.fresh.dot_dense(w);
        let mut psi_dot_wi =
            crate::linalg::sparse_sparse_dot(&self.fresh.idx, &self.fresh.val, &q.idx, &q.val);
        let mut psi_norm2 = self.fresh.norm2();
        // The wrong positions once, not once per wrong position.
        let wrong = &mut self.wrong;
        wrong.clear();
        wrong.extend(
            (0..l)
                .filter(|&t| truth[t] != y[t])
                .map(|t| (t, truth[t] as usize, y[t] as usize)),
        );
        for &(t, gt, yt) in wrong.iter() {
            w_dot_psi += self.scores[t * k + gt] - self.scores[t * k + yt];
            let row = &g[t * l..(t + 1) * l];
            for (s, cs) in c.chunks_exact(k).enumerate() {
                if used[s] != 0 {
                    psi_dot_wi += row[s] * (cs[gt] - cs[yt]);
                }
            }
            for &(u, gu, yu) in wrong.iter() {
                let same = |a: usize, b: usize| if a == b { 1.0 } else { 0.0 };
                let d = same(gt, gu) - same(gt, yu) - same(yt, gu) + same(yt, yu);
                psi_norm2 += row[u] * d;
            }
        }
        FreshTerms {
            w_dot_wi,
            w_dot_psi,
            psi_dot_wi,
            psi_norm2,
        }
    }

    /// The FW step `w_i <- (1 - gamma) w_i + gamma scale psi` towards the
    /// last answer (`towards_answer`) or the ground truth (psi = 0), with
    /// `v` moved by the change of `w_i`, position by position.
    pub fn step_towards(
        &mut self,
        i: usize,
        gamma: f64,
        scale: f64,
        towards_answer: bool,
        v: &mut [f64],
    ) {
        let k = self.k;
        let keep = 1.0 - gamma;
        let add = gamma * scale;
        let truth = &self.truth[self.first[i]..self.first[i + 1]];
        let c = &mut self.coef[self.first[i] * k..self.first[i + 1] * k];
        let used = &mut self.used[self.first[i]..self.first[i + 1]];
        for (t, ct) in c.chunks_exact_mut(k).enumerate() {
            let wrong = towards_answer && truth[t] != self.labels[t];
            // The answer's labels at a wrong position (none elsewhere).
            let (gl, yl, visit) = if wrong {
                let (gl, yl) = (truth[t] as usize, self.labels[t] as usize);
                (gl, yl, used[t] | bit(k, gl) | bit(k, yl))
            } else {
                (usize::MAX, usize::MAX, used[t])
            };
            if visit == 0 {
                continue;
            }
            // Labels outside `visit` have c = 0 and stay 0.
            self.change.clear();
            let mut now = 0;
            for label in labels_of(k, visit) {
                let ck = &mut ct[label];
                let mut next = keep * *ck;
                if label == gl {
                    next += add;
                } else if label == yl {
                    next -= add;
                }
                let dk = next - *ck;
                if dk != 0.0 {
                    self.change.push((label as u32, dk));
                }
                *ck = next;
                if next != 0.0 {
                    now |= bit(k, label);
                }
            }
            if !self.change.is_empty() {
                self.rows.add_token(i, t, &self.change, v);
            }
            used[t] = now;
        }
        // q <- keep q + add p, v by the change, in one walk.
        let empty = SparseVec::default();
        let p = if towards_answer { &self.fresh } else { &empty };
        let q = &self.structure[i];
        let out = &mut self.merged;
        out.idx.clear();
        out.val.clear();
        let (mut a, mut b) = (0, 0);
        while a < q.idx.len() || b < p.idx.len() {
            let (j, old, next) = if b >= p.idx.len() || (a < q.idx.len() && q.idx[a] < p.idx[b]) {
                a += 1;
                (q.idx[a - 1], q.val[a - 1], keep * q.val[a - 1])
            } else if a >= q.idx.len() || p.idx[b] < q.idx[a] {
                b += 1;
                (p.idx[b - 1], 0.0, add * p.val[b - 1])
            } else {
                a += 1;
                b += 1;
                (
                    q.idx[a - 1],
                    q.val[a - 1],
                    keep * q.val[a - 1] + add * p.val[b - 1],
                )
            };
            v[j as usize] += next - old;
            if next != 0.0 {
                out.idx.push(j);
                out.val.push(next);
            }
        }
        std::mem::swap(&mut self.structure[i], &mut self.merged);
    }

    /// `w_i <- f w_i`, `v` moved by the change (a change of lambda).
    pub fn scale_block(&mut self, i: usize, f: f64, v: &mut [f64]) {
        let k = self.k;
        let c = &mut self.coef[self.first[i] * k..self.first[i + 1] * k];
        let used = &mut self.used[self.first[i]..self.first[i + 1]];
        for (t, ct) in c.chunks_exact_mut(k).enumerate() {
            if used[t] == 0 {
                continue;
            }
            let mut now = 0;
            self.change.clear();
            for label in labels_of(k, used[t]) {
                let ck = &mut ct[label];
                let next = f * *ck;
                if next != *ck {
                    self.change.push((label as u32, next - *ck));
                }
                *ck = next;
                if next != 0.0 {
                    now |= bit(k, label);
                }
            }
            self.rows.add_token(i, t, &self.change, v);
            used[t] = now;
        }
        let q = &mut self.structure[i];
        for (&j, x) in q.idx.iter().zip(q.val.iter_mut()) {
            let next = f * *x;
            v[j as usize] += next - *x;
            *x = next;
        }
    }
}

/// The labels of a position whose coefficient may be non-zero: bit `k` for
/// label `k` when there are at most 64 labels; with more, every bit for a
/// position in use (all its labels are then visited). 0: `c_t = 0`.
type Mask = u64;

/// The mask of label `label` among `k`.
fn bit(k: usize, label: usize) -> Mask {
    if k <= 64 {
        1 << label
    } else {
        Mask::MAX
    }
}

/// The labels of `mask` among `k`, increasing.
fn labels_of(k: usize, mask: Mask) -> impl Iterator<Item = usize> {
    let (mut bits, mut all) = if k <= 64 {
        (mask, 0..0)
    } else {
        (0, 0..if mask == 0 { 0 } else { k })
    };
    std::iter::from_fn(move || {
        if bits != 0 {
            let label = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            Some(label)
        } else {
            all.next()
        }
    })
}

/// `<a, b>` in four interleaved sums (the coefficients of a position
/// against its scores: a chain of `K` dependent additions otherwise).
fn dot4(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0; 4];
    let (ac, bc) = (a.chunks_exact(4), b.chunks_exact(4));
    let tail: f64 = ac
        .remainder()
        .iter()
        .zip(bc.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ac.zip(bc) {
        for r in 0..4 {
            acc[r] += x[r] * y[r];
        }
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// `p(y)`: the structural entries of the corner `y` against the truth `g`,
/// coordinates increasing, entries at one weight summed, zeros dropped.
fn structural(
    layout: ChainLayout,
    k: usize,
    g: &[u32],
    y: &[u32],
    e: &mut Vec<(u32, f64)>,
    out: &mut SparseVec,
) {
    e.clear();
    let at = |base: usize, j: usize| (base + j) as u32;
    for t in 1..g.len() {
        let (ga, gb, ya, yb) = (g[t - 1], g[t], y[t - 1], y[t]);
        if (ga, gb) != (ya, yb) {
            let tr = layout.transitions;
            e.push((at(tr, ga as usize * k + gb as usize), 1.0));
            e.push((at(tr, ya as usize * k + yb as usize), -1.0));
        }
    }
    let last = g.len() - 1;
    for (base, t) in [(layout.start, 0), (layout.end, last)] {
        if let Some(base) = base {
            if g[t] != y[t] {
                e.push((at(base, g[t] as usize), 1.0));
                e.push((at(base, y[t] as usize), -1.0));
            }
        }
    }
    e.sort_unstable_by_key(|&(j, _)| j);
    out.idx.clear();
    out.val.clear();
    for &(j, x) in e.iter() {
        if out.idx.last() == Some(&j) {
            *out.val.last_mut().expect("an entry") += x;
        } else {
            out.idx.push(j);
            out.val.push(x);
        }
    }
    // Drop the entries that cancelled.
    let mut kept = 0;
    for r in 0..out.idx.len() {
        if out.val[r] != 0.0 {
            out.idx[kept] = out.idx[r];
            out.val[kept] = out.val[r];
            kept += 1;
        }
    }
    out.idx.truncate(kept);
    out.val.truncate(kept);
}

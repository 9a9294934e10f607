//! The chain model seen through its positions, for BCFW's chain blocks
//! ([`crate::oracle::chains`]): the oracle call that also returns the
//! emission scores, and the token arithmetic on `sum_t x_t ⊗ c_t`.

use super::*;
use crate::models::dot_f32;
use crate::oracle::ChainLayout;

/// A cheap copy of the model (its features are shared) that answers
/// [`ChainRows`].
pub(super) struct ChainView {
    chain: Chain,
}

impl Chain {
    /// The view [`MaxOracle::factoring`] returns.
    pub(super) fn rows_view(&self) -> ChainView {
        ChainView {
            chain: self.clone(),
        }
    }

    /// [`ChainRows::answer`]: the emission scores, then the answer of
    /// [`MaxOracle::max_oracle`] from them (the same Viterbi, the same
    /// ties).
    pub(super) fn chain_answer_of(
        &self,
        example: usize,
        w: &[f64],
        scores: &mut [f64],
        labels: &mut [u32],
    ) -> Result<ChainAnswer> {
        check_w_len(NAME, w, self.dim)?;
        check_example(NAME, example, self.num_examples())?;
        let toks = self.tokens(example);
        let len = toks.len();
        if scores.len() != len * self.k || labels.len() != len {
            return Err(Error::dimension_mismatch(format!(
                "{NAME}: {} scores and {} labels asked for example {example}, which has {len} \
                 tokens and {} labels",
                scores.len(),
                labels.len(),
                self.k
            )));
        }
        let truth = &self.labels[toks.clone()];
        with_scratch(&SCRATCH, |s| {
            self.emission_scores(w, toks, &mut s.emit);
            scores.copy_from_slice(&s.emit);
            let best = self.viterbi(w, len, Some(truth), 1.0 / len as f64, s);
            let gt = self.path_score(w, &s.emit, truth);
            if !best.is_finite() || !gt.is_finite() {
                return Err(Error::non_finite(format!(
                    "{NAME}: the Viterbi score is {best} and the ground truth's score is {gt} \
                     for example {example}"
                )));
            }
            if gt >= best {
                labels.copy_from_slice(truth);
                return Ok(ChainAnswer { loss: 0.0 });
            }
            labels.copy_from_slice(&s.dp.path);
            let wrong = truth
                .iter()
                .zip(labels.iter())
                .filter(|(a, b)| a != b)
                .count();
            Ok(ChainAnswer {
                loss: wrong as f64 / len as f64,
            })
        })
    }
}

/// The entries of a sparse token row with repeated indices summed, in
/// increasing index order.
fn merged_row(rows: &super::SparseRows, tok: usize) -> Vec<(u32, f64)> {
    let (idx, val) = rows.row(tok);
    let mut e: Vec<(u32, f64)> = idx
        .iter()
        .zip(val)
        .map(|(&j, &x)| (j, f64::from(x)))
        .collect();
    e.sort_by_key(|&(j, _)| j);
    e.dedup_by(|b, a| {
        if a.0 == b.0 {
            a.1 += b.1;
            true
        } else {
            false
        }
    });
    e
}

impl ChainRows for ChainView {
    fn answer(
        &self,
        i: usize,
        w: &[f64],
        scores: &mut [f64],
        labels: &mut [u32],
    ) -> Result<ChainAnswer> {
        self.chain.chain_answer_of(i, w, scores, labels)
    }

    fn num_labels(&self) -> usize {
        self.chain.k
    }

    fn truth(&self, i: usize) -> &[u32] {
        self.chain.labels(i)
    }

    fn layout(&self) -> ChainLayout {
        ChainLayout {
            transitions: self.chain.trans,
            start: Some(self.chain.start),
            end: Some(self.chain.end),
        }
    }

    fn gram(&self, i: usize, out: &mut [f64]) {
        let toks = self.chain.tokens(i);
        let (first, len) = (toks.start, toks.len());
        let bias = if self.chain.bias { 1.0 } else { 0.0 };
        match &*self.chain.features {
            ChainFeatures::Dense { values, d } => {
                let row = |t: usize| &values[(first + t) * d..(first + t + 1) * d];
                for t in 0..len {
                    for s in 0..=t {
                        let g = row(t)
                            .iter()
                            .zip(row(s))
                            .map(|(&a, &b)| f64::from(a) * f64::from(b))
                            .sum::<f64>()
                            + bias;
                        out[t * len + s] = g;
                        out[s * len + t] = g;
                    }
                }
            }
            ChainFeatures::Sparse(rows) => {
                let merged: Vec<Vec<(u32, f64)>> =
                    (0..len).map(|t| merged_row(rows, first + t)).collect();
                for t in 0..len {
                    for s in 0..=t {
                        let (a, b) = (&merged[t], &merged[s]);
                        let (mut p, mut q, mut g) = (0, 0, bias);
                        while p < a.len() && q < b.len() {
                            match a[p].0.cmp(&b[q].0) {
                                std::cmp::Ordering::Less => p += 1,
                                std::cmp::Ordering::Greater => q += 1,
                                std::cmp::Ordering::Equal => {
                                    g += a[p].1 * b[q].1;
                                    p += 1;
                                    q += 1;
                                }
                            }
                        }
                        out[t * len + s] = g;
                        out[s * len + t] = g;
                    }
                }
            }
        }
    }

    fn token_dot(&self, i: usize, t: usize, c: &[f64], w: &[f64]) -> f64 {
        let ch = &self.chain;
        let tok = ch.tokens(i).start + t;
        let mut acc = 0.0;
        match &*ch.features {
            ChainFeatures::Dense { values, d } => {
                let x = &values[tok * d..(tok + 1) * d];
                for (k, &ck) in c.iter().enumerate() {
                    if ck != 0.0 {
                        let base = k * ch.de;
                        let mut s = dot_f32(&w[base..base + d], x);
                        if ch.bias {
                            s += w[base + d];
                        }
                        acc += ck * s;
                    }
                }
            }
            ChainFeatures::Sparse(rows) => {
                let k = ch.k;
                let (idx, val) = rows.row(tok);
                for (&j, &x) in idx.iter().zip(val) {
                    let wj = &w[j as usize * k..(j as usize + 1) * k];
                    let s: f64 = c.iter().zip(wj).map(|(a, b)| a * b).sum();
                    acc += f64::from(x) * s;
                }
                if ch.bias {
                    let b = rows.num_cols() * k;
                    acc += c.iter().zip(&w[b..b + k]).map(|(a, b)| a * b).sum::<f64>();
                }
            }
        }
        acc
    }

    fn add_token(&self, i: usize, t: usize, change: &[(u32, f64)], v: &mut [f64]) {
        let ch = &self.chain;
        let tok = ch.tokens(i).start + t;
        match &*ch.features {
            ChainFeatures::Dense { values, d } => {
                let x = &values[tok * d..(tok + 1) * d];
                // The label blocks of `v` a batch at a time, the row read
                // once per batch (one axpy per label otherwise).
                let mut targets = [(0.0, 0); 32];
                for batch in change.chunks(targets.len()) {
                    for (slot, &(k, c)) in targets.iter_mut().zip(batch) {
                        *slot = (c, k as usize * ch.de);
                    }
                    crate::linalg::axpy_scatter(&targets[..batch.len()], x, v);
                }
                if ch.bias {
                    for &(k, c) in change {
                        v[k as usize * ch.de + d] += c;
                    }
                }
            }
            ChainFeatures::Sparse(rows) => {
                let k = ch.k;
                let (idx, val) = rows.row(tok);
                for (&j, &x) in idx.iter().zip(val) {
                    let vj = &mut v[j as usize * k..(j as usize + 1) * k];
                    for &(label, c) in change {
                        vj[label as usize] += c * f64::from(x);
                    }
                }
                if ch.bias {
                    let b = rows.num_cols() * k;
                    for &(label, c) in change {
                        v[b + label as usize] += c;
                    }
                }
            }
        }
    }
}

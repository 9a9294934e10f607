//! The feature rows of a multiclass model, dense or sparse CSR (with the
//! optional constant bias feature): the scores, row norms and row
//! additions the oracle, the pass and BCFW's class view are built on.

use super::super::{DenseFeatures, SparseRows};
use crate::error::Result;
use crate::linalg::PackedRows;
use crate::oracle::Corner;

/// The rows of a multiclass model.
#[derive(Debug, Clone)]
pub(super) enum Rows {
    Dense(DenseFeatures),
    Sparse { rows: SparseRows, bias: bool },
}

impl Rows {
    pub(super) fn d(&self) -> usize {
        match self {
            Rows::Dense(x) => x.d(),
            Rows::Sparse { rows, .. } => rows.num_cols(),
        }
    }
    pub(super) fn bias(&self) -> bool {
        match self {
            Rows::Dense(x) => x.bias(),
            Rows::Sparse { bias, .. } => *bias,
        }
    }
    pub(super) fn d_ext(&self) -> usize {
        self.d() + usize::from(self.bias())
    }
    pub(super) fn m(&self) -> usize {
        match self {
            Rows::Dense(x) => x.m(),
            Rows::Sparse { rows, .. } => rows.num_rows(),
        }
    }
    /// `<v, (x_i, 1)>` for a block `v` of `d_ext()` weights.
    #[inline]
    pub(super) fn score(&self, v: &[f64], i: usize) -> f64 {
        match self {
            Rows::Dense(x) => x.score(v, x.row(i)),
            Rows::Sparse { rows, bias } => {
                let s = rows.dot_row(v, i);
                if *bias {
                    s + v[rows.num_cols()]
                } else {
                    s
                }
            }
        }
    }
    /// `<w_k, (x_i, 1)>` for the class blocks `w`.
    #[inline]
    pub(super) fn class_score(&self, w: &[f64], k: usize, i: usize) -> f64 {
        let dp = self.d_ext();
        self.score(&w[k * dp..(k + 1) * dp], i)
    }
    /// `out[j K + k] = <w_k, (x_{first + j}, 1)>` for the `out.len() / K`
    /// examples from `first`: a dense block is one product of its rows with
    /// the class blocks ([`crate::linalg::row_dots_ahead`], which meanwhile
    /// prefetches the next `n` rows: a pass asks for its blocks in order); a
    /// sparse row is read once for all classes. Each score is the same bits
    /// as [`Rows::score`]. `packed`, when given, is [`Rows::packed_classes`]
    /// of this `w`, read rather than packed again.
    pub(super) fn block_scores(
        &self,
        w: &[f64],
        first: usize,
        num_classes: usize,
        out: &mut [f64],
        packed: Option<&PackedRows<'_>>,
    ) {
        let (d, dp) = (self.d(), self.d_ext());
        let n = out.len() / num_classes;
        match self {
            Rows::Dense(x) => {
                let rows: Vec<&[f32]> = (first..first + n).map(|i| x.row(i)).collect();
                let next_end = (first + 2 * n).min(x.m());
                let next = &x.values()[(first + n).min(next_end) * d..next_end * d];
                match packed {
                    Some(p) => crate::linalg::row_dots_packed(&rows, p, out, next),
                    None => {
                        let classes = class_rows(w, num_classes, d, dp);
                        crate::linalg::row_dots_ahead(&rows, &classes, d, out, next);
                    }
                }
            }
            Rows::Sparse { rows, .. } => {
                for (j, s) in out.chunks_exact_mut(num_classes).enumerate() {
                    s.fill(0.0);
                    let (idx, val) = rows.row(first + j);
                    for (&c, &v) in idx.iter().zip(val) {
                        let v = f64::from(v);
                        for (k, sk) in s.iter_mut().enumerate() {
                            *sk += w[k * dp + c as usize] * v;
                        }
                    }
                }
            }
        }
        if self.bias() {
            for s in out.chunks_exact_mut(num_classes) {
                for (k, sk) in s.iter_mut().enumerate() {
                    *sk += w[k * dp + d];
                }
            }
        }
    }
    /// The class blocks of `w` (without the bias) packed once for the
    /// products of many blocks of dense rows; `None` for sparse rows.
    pub(super) fn packed_classes<'w>(
        &self,
        w: &'w [f64],
        num_classes: usize,
    ) -> Option<PackedRows<'w>> {
        match self {
            Rows::Dense(_) => {
                let classes = class_rows(w, num_classes, self.d(), self.d_ext());
                Some(PackedRows::new(&classes, self.d()))
            }
            Rows::Sparse { .. } => None,
        }
    }
    /// One entry per cache line of row `i` (16 `f32` or `u32`), summed
    /// ([`crate::oracle::ClassRows::warm`]).
    pub(super) fn warm(&self, i: usize) -> f64 {
        let lines_f32 = |v: &[f32]| v.iter().step_by(16).map(|&x| f64::from(x)).sum::<f64>();
        match self {
            Rows::Dense(x) => lines_f32(x.row(i)),
            Rows::Sparse { rows, .. } => {
                let (idx, val) = rows.row(i);
                lines_f32(val) + idx.iter().step_by(16).map(|&j| f64::from(j)).sum::<f64>()
            }
        }
    }
    /// `||(x_i, 1)||^2`.
    pub(super) fn row_norm2(&self, i: usize) -> f64 {
        let sum: f64 = match self {
            Rows::Dense(x) => {
                // Eight interleaved sums (one chain of dependent additions
                // took a tenth of a BCFW run at lambda 1e-2).
                let row = x.row(i);
                let mut acc = [0.0f64; 8];
                let chunks = row.chunks_exact(8);
                let tail: f64 = chunks
                    .remainder()
                    .iter()
                    .map(|&v| f64::from(v).powi(2))
                    .sum();
                for c in chunks {
                    for (a, &v) in acc.iter_mut().zip(c) {
                        *a += f64::from(v) * f64::from(v);
                    }
                }
                acc.iter().sum::<f64>() + tail
            }
            Rows::Sparse { rows, .. } => rows
                .row(i)
                .1
                .iter()
                .map(|&v| f64::from(v) * f64::from(v))
                .sum(),
        };
        sum + if self.bias() { 1.0 } else { 0.0 }
    }
    /// `g[base..] += sign * (x_i, 1)`: dense rows by the vector kernel,
    /// sparse rows entry by entry.
    pub(super) fn add_row_to(&self, g: &mut [f64], i: usize, base: usize, sign: f64) {
        let d = self.d();
        match self {
            Rows::Dense(x) => crate::linalg::axpy_f32(sign, x.row(i), &mut g[base..base + d]),
            Rows::Sparse { rows, .. } => {
                let (idx, val) = rows.row(i);
                for (&j, &v) in idx.iter().zip(val) {
                    g[base + j as usize] += sign * f64::from(v);
                }
            }
        }
        if self.bias() {
            g[base + d] += sign;
        }
    }
    /// Adds `sign * (x_i, 1)` at `base` to the corner, skipping zeros.
    pub(super) fn add_row(&self, out: &mut Corner, i: usize, base: usize, sign: f64) -> Result<()> {
        match self {
            // One range check and no branch per pixel (Corner::add_row).
            Rows::Dense(x) => {
                out.add_row(base, x.row(i), sign)?;
                if self.bias() {
                    out.add(base + self.d(), sign)?;
                }
                Ok(())
            }
            Rows::Sparse { .. } => self.try_for_each_entry(i, |j, v| out.add(base + j, sign * v)),
        }
    }
    /// Calls `f(j, value)` for the non-zero entries of `(x_i, 1)` in
    /// increasing `j`, stopping at the first error.
    pub(super) fn try_for_each_entry(
        &self,
        i: usize,
        mut f: impl FnMut(usize, f64) -> Result<()>,
    ) -> Result<()> {
        match self {
            Rows::Dense(x) => {
                for (j, &v) in x.row(i).iter().enumerate() {
                    if v != 0.0 {
                        f(j, f64::from(v))?;
                    }
                }
            }
            Rows::Sparse { rows, .. } => {
                let (idx, val) = rows.row(i);
                for (&j, &v) in idx.iter().zip(val) {
                    if v != 0.0 {
                        f(j as usize, f64::from(v))?;
                    }
                }
            }
        }
        if self.bias() {
            f(self.d(), 1.0)?;
        }
        Ok(())
    }
}

/// The first `d` weights of each of the `num_classes` blocks of `dp` of `w`.
fn class_rows(w: &[f64], num_classes: usize, d: usize, dp: usize) -> Vec<&[f64]> {
    (0..num_classes).map(|k| &w[k * dp..k * dp + d]).collect()
}

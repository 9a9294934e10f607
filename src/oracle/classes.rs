//! Oracles whose corners factor over classes: `psi_i(y) = r_i ⊗ (e_{t_i} -
//! e_y)`, the row `r_i` of example `i` placed with `+` in the class block
//! of its ground truth `t_i` and with `-` in the block of `y` (the
//! multiclass model). Every block iterate of BCFW is then `r_i ⊗ c_i` for
//! `K` coefficients `c_i`, so BCFW keeps `K` numbers per example instead of
//! a vector of `K d'`, and a block step touches only the classes it moves
//! (docs/bcfw.md, "Class-factored blocks").

use crate::error::Result;

/// The rows and ground truths of a class-factored oracle
/// ([`super::Factoring::Classes`]): the arithmetic BCFW needs on `r_i ⊗
/// c`, and the oracle calls that also give the class scores. `w` is made
/// of `num_classes` blocks of equal length (class `k` at
/// `w[k d' .. (k + 1) d']`). Its arithmetic may be called from any thread, also when the
/// oracle is not thread-safe (BCFW's exact passes compute `<w, w_i>` in
/// parallel); its oracle calls ([`ClassRows::answer`],
/// [`ClassRows::scores_pass`]) are made as [`super::MaxOracle::max_oracle`]
/// is, from one thread at a time unless the oracle is thread-safe.
pub trait ClassRows: Send + Sync {
    /// The oracle call: writes `<w_k, r_i>` of every class `k` into
    /// `scores` (length `K`) and returns the class and loss of
    /// [`super::MaxOracle::max_oracle`]'s answer for example `i` at `w`
    /// (same tie rule).
    fn answer(&self, i: usize, w: &[f64], scores: &mut [f64]) -> Result<ClassAnswer>;
    /// The class scores `<w_k, r_i>` of every example at `w`, into `out[i
    /// K + k]` (`n K` of them), for rows that know their class losses
    /// ([`ClassRows::class_loss`]): BCFW's exact gap passes over exact block
    /// steps then take every answer by enumerating the `K` classes, and
    /// keep shrunk what the scores show inactive. `None`, the default: not
    /// available (one [`ClassRows::answer`] per example).
    fn scores_pass(&self, _w: &[f64], _out: &mut [f64]) -> Option<Result<()>> {
        None
    }
    /// The number of classes `K`.
    fn num_classes(&self) -> usize;
    /// The ground-truth class `t_i` of example `i`.
    fn truth(&self, i: usize) -> usize;
    /// `||r_i||^2`.
    fn row_norm2(&self, i: usize) -> f64;
    /// `<w_k, r_i>`.
    fn row_dot(&self, i: usize, k: usize, w: &[f64]) -> f64;
    /// `out[k] = <w_k, r_i>` for every class `k` not `off` (0 for those),
    /// each the bits of [`ClassRows::row_dot`]: an implementor may read
    /// `r_i` once for all classes. The default calls `row_dot` per class.
    fn row_dots(&self, i: usize, off: &[bool], w: &[f64], out: &mut [f64]) {
        for (k, (o, &skip)) in out.iter_mut().zip(off).enumerate() {
            *o = if skip { 0.0 } else { self.row_dot(i, k, w) };
        }
    }
    /// `v_k += a r_i`.
    fn add_row(&self, i: usize, k: usize, a: f64, v: &mut [f64]);
    /// Brings what example `i`'s step reads first (its row's norm, its
    /// truth) towards the caches, for a block visited soon: BCFW draws its
    /// blocks at random from more data than the caches hold. A hint; the
    /// default does nothing.
    fn prefetch(&self, _i: usize) {}
    /// Brings example `i`'s row towards L2, for the block stepped next when
    /// no second thread reads rows ahead ([`ClassRows::warm`]). A hint; the
    /// default does nothing.
    fn prefetch_row(&self, _i: usize) {}
    /// Reads example `i`'s row, a value per cache line, and returns their
    /// sum (which the caller keeps, so that the reads are made): BCFW's
    /// exact steps call it from a second thread a few blocks ahead of the
    /// steps, which then find the row in the cache the cores share. A
    /// hint, which changes no result; `None`, the default: nothing to read.
    fn warm(&self, _i: usize) -> Option<f64> {
        None
    }
    /// Calls `f(j, r_ij)` for the non-zero entries of `r_i` in increasing
    /// `j` (an offset in a class block): what a corner holds, for exports.
    fn row_entries(&self, i: usize, f: &mut dyn FnMut(usize, f64));
    /// `L_i(y)` of every class `y` (0 for the truth), for BCFW's exact
    /// block steps, which weigh all `K` corners at once; `None`, the
    /// default: not known without an oracle call (exact steps refused).
    fn class_loss(&self, _i: usize, _y: usize) -> Option<f64> {
        None
    }
}

/// The answer of [`ClassRows::answer`]: the class `y^` of the
/// loss-augmented argmax and its loss `L_i(y^)` (0 for the ground truth).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClassAnswer {
    /// `y^`, also the answer's label id.
    pub class: usize,
    /// `L_i(y^)`.
    pub loss: f64,
}

//! What a max-oracle call reports: a corner of the dual (loss, psi, label id).

use crate::error::{Error, Result};

/// The output of one max-oracle call: the loss `L_i(y^)`, the vector
/// `psi_i(y^)` and a label id. `psi` may be given as sparse entries
/// ([`Corner::add`]), as a dense buffer ([`Corner::dense_mut`]) or both
/// (they add up). A corner is reused across calls: [`Corner::clear`] resets it
/// without freeing its buffers, so the hot loop does not allocate.
#[derive(Debug, Clone)]
pub struct Corner {
    dim: usize,
    loss: f64,
    label: u64,
    sparse_index: Vec<usize>,
    sparse_value: Vec<f64>,
    dense: Vec<f64>,
    dense_used: bool,
    /// Whether the oracle knows its answer to be a maximiser.
    exact: bool,
}

impl Corner {
    /// An empty corner (loss 0, label 0, psi = 0) of dimension `dim`.
    pub fn new(dim: usize) -> Self {
        Corner {
            dim,
            loss: 0.0,
            label: 0,
            sparse_index: Vec::new(),
            sparse_value: Vec::new(),
            dense: Vec::new(),
            dense_used: false,
            exact: true,
        }
    }

    /// Back to loss 0, label 0 and psi = 0, keeping the buffers.
    pub fn clear(&mut self) {
        self.loss = 0.0;
        self.label = 0;
        self.exact = true;
        self.sparse_index.clear();
        self.sparse_value.clear();
        if self.dense_used {
            self.dense.iter_mut().for_each(|x| *x = 0.0);
            self.dense_used = false;
        }
    }

    /// The dimension of psi.
    pub fn dim(&self) -> usize {
        self.dim
    }
    /// The loss `L_i(y^)` set by the oracle.
    pub fn loss(&self) -> f64 {
        self.loss
    }
    /// The label id set by the oracle.
    pub fn label(&self) -> u64 {
        self.label
    }
    /// Sets the loss `L_i(y^)` of the answer.
    pub fn set_loss(&mut self, loss: f64) {
        self.loss = loss;
    }
    /// Sets the answer's 64-bit label id (equal ids mean equal labels).
    pub fn set_label(&mut self, label: u64) {
        self.label = label;
    }

    /// Marks the answer as possibly not a maximiser (an approximate
    /// inference engine): a run that sees such an answer does not certify
    /// its gap.
    pub fn mark_inexact(&mut self) {
        self.exact = false;
    }
    /// Whether the oracle knows its answer to be a maximiser (`true` unless
    /// [`Corner::mark_inexact`] was called since the last clear).
    pub fn is_exact(&self) -> bool {
        self.exact
    }

    /// `psi[index] += value`.
    pub fn add(&mut self, index: usize, value: f64) -> Result<()> {
        if index >= self.dim {
            return Err(Error::dimension_mismatch(format!(
                "corner index {index} is out of range for dimension {}",
                self.dim
            )));
        }
        self.sparse_index.push(index);
        self.sparse_value.push(value);
        Ok(())
    }

    /// `psi[index[k]] += value[k]` for every `k`: a list of entries in one
    /// call, all of them or (an index out of range) none.
    pub fn add_many(&mut self, index: &[usize], value: &[f64]) -> Result<()> {
        if index.len() != value.len() {
            return Err(Error::dimension_mismatch(format!(
                "{} corner indices but {} values",
                index.len(),
                value.len()
            )));
        }
        if let Some(k) = index.iter().position(|&j| j >= self.dim) {
            return Err(Error::dimension_mismatch(format!(
                "corner index {} (entry {k}) is out of range for dimension {}",
                index[k], self.dim
            )));
        }
        self.sparse_index.extend_from_slice(index);
        self.sparse_value.extend_from_slice(value);
        Ok(())
    }

    /// `psi[base + j] += scale * values[j]` for every non-zero `values[j]`:
    /// a feature row written in one bounds check, with no branch per value
    /// (rows of pixels are zero half the time, in no pattern). All of it or
    /// (entries out of range) none.
    pub fn add_row<A: Copy + Into<f64>>(
        &mut self,
        base: usize,
        values: &[A],
        scale: f64,
    ) -> Result<()> {
        if base
            .checked_add(values.len())
            .is_none_or(|end| end > self.dim)
        {
            return Err(Error::dimension_mismatch(format!(
                "corner entries {base}..{} are out of range for dimension {}",
                base.saturating_add(values.len()),
                self.dim
            )));
        }
        let start = self.sparse_index.len();
        self.sparse_index.resize(start + values.len(), 0);
        self.sparse_value.resize(start + values.len(), 0.0);
        let (index, value) = (
            &mut self.sparse_index[start..],
            &mut self.sparse_value[start..],
        );
        let mut kept = 0;
        for (j, &v) in values.iter().enumerate() {
            let v: f64 = v.into();
            // Written at the next free slot; the slot is kept only when v != 0.
            index[kept] = base + j;
            value[kept] = scale * v;
            kept += usize::from(v != 0.0);
        }
        self.sparse_index.truncate(start + kept);
        self.sparse_value.truncate(start + kept);
        Ok(())
    }

    /// A zeroed dense psi buffer of length `dim` (zeroed on first use after
    /// [`Corner::clear`]), to be filled by the oracle.
    pub fn dense_mut(&mut self) -> &mut [f64] {
        if self.dense.len() != self.dim {
            self.dense = vec![0.0; self.dim];
        }
        self.dense_used = true;
        &mut self.dense
    }

    /// The sparse entries added so far, as (index, value) pairs (repeats add up).
    pub fn sparse_entries(&self) -> impl Iterator<Item = (usize, f64)> + '_ {
        self.sparse_index
            .iter()
            .copied()
            .zip(self.sparse_value.iter().copied())
    }

    /// The dense part of psi, if the oracle used it.
    pub fn dense(&self) -> Option<&[f64]> {
        self.dense_used.then_some(&self.dense[..])
    }

    /// `<w, psi>`.
    pub fn dot(&self, w: &[f64]) -> f64 {
        // `0.0 +` as the sum started from 0 before: the same bits for -0.0.
        let s = match self.dense() {
            Some(d) => 0.0 + crate::linalg::dot(d, w),
            None => 0.0,
        };
        entries_dot(s, &self.sparse_index, &self.sparse_value, w)
    }

    /// `y += alpha * psi`.
    pub fn add_to(&self, alpha: f64, y: &mut [f64]) {
        if let Some(d) = self.dense() {
            crate::linalg::axpy(alpha, d, y);
        }
        for (i, v) in self.sparse_entries() {
            y[i] += alpha * v;
        }
    }

    /// The hinge value of this corner at `w`: `loss - <w, psi>`.
    pub fn hinge(&self, w: &[f64]) -> f64 {
        self.loss - self.dot(w)
    }

    /// An error naming the first non-finite value (loss or psi entry).
    pub fn check_finite(&self) -> Result<()> {
        if !self.loss.is_finite() {
            return Err(Error::non_finite(format!("loss is {}", self.loss)));
        }
        if let Some(d) = self.dense() {
            if let Some(j) = d.iter().position(|x| !x.is_finite()) {
                return Err(Error::non_finite(format!("psi[{j}] is {}", d[j])));
            }
        }
        if let Some(k) = self.sparse_value.iter().position(|x| !x.is_finite()) {
            return Err(Error::non_finite(format!(
                "psi[{}] is {}",
                self.sparse_index[k], self.sparse_value[k]
            )));
        }
        Ok(())
    }
}

/// `s + sum_k value[k] w[index[k]]`, added in entry order. Kept out of
/// line: inlined into the oracle pass's loop its running sum lived on the
/// stack, a store and a load per entry.
#[inline(never)]
fn entries_dot(mut s: f64, index: &[usize], value: &[f64], w: &[f64]) -> f64 {
    for (&i, &v) in index.iter().zip(value) {
        s += v * w[i];
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_adds_its_non_zeros_as_single_entries_would() {
        let values = [0.0f32, 1.5, 0.0, -2.0, f32::NAN, 0.0, 3.0];
        let mut by_row = Corner::new(12);
        by_row.add(0, 9.0).unwrap();
        by_row.add_row(4, &values, -0.5).unwrap();
        let mut by_entry = Corner::new(12);
        by_entry.add(0, 9.0).unwrap();
        for (j, &v) in values.iter().enumerate() {
            if v != 0.0 {
                by_entry.add(4 + j, -0.5 * f64::from(v)).unwrap();
            }
        }
        let pairs = |c: &Corner| -> Vec<(usize, u64)> {
            c.sparse_entries().map(|(j, v)| (j, v.to_bits())).collect()
        };
        assert_eq!(pairs(&by_row), pairs(&by_entry));
        assert_eq!(pairs(&by_row).len(), 5);
        // One past the end is refused, and nothing is written.
        let err = by_row.add_row(6, &values, 1.0).unwrap_err();
        assert!(err.to_string().contains("6..13"), "{err}");
        assert_eq!(pairs(&by_row).len(), 5);
        // A start so large that start + n overflows is refused too.
        let err = by_row.add_row(usize::MAX, &values, 1.0).unwrap_err();
        assert!(err.to_string().contains("out of range"), "{err}");
        // Rows of doubles (the C ABI's) give the same entries.
        let wide: Vec<f64> = values.iter().map(|&v| f64::from(v)).collect();
        let mut by_f64 = Corner::new(12);
        by_f64.add(0, 9.0).unwrap();
        by_f64.add_row(4, &wide, -0.5).unwrap();
        assert_eq!(pairs(&by_f64), pairs(&by_entry));
    }

    #[test]
    fn a_list_adds_as_single_entries_would_or_not_at_all() {
        let index = [3usize, 0, 3, 11];
        let value = [1.0, -2.0, 0.5, f64::INFINITY];
        let mut by_list = Corner::new(12);
        by_list.add(5, 1.0).unwrap();
        by_list.add_many(&index, &value).unwrap();
        let mut by_entry = Corner::new(12);
        by_entry.add(5, 1.0).unwrap();
        for (&j, &v) in index.iter().zip(&value) {
            by_entry.add(j, v).unwrap();
        }
        let pairs = |c: &Corner| -> Vec<(usize, u64)> {
            c.sparse_entries().map(|(j, v)| (j, v.to_bits())).collect()
        };
        assert_eq!(pairs(&by_list), pairs(&by_entry));
        // One index out of range: an error naming it, and nothing added.
        let err = by_list.add_many(&[1, 12, 2], &[1.0, 2.0, 3.0]).unwrap_err();
        assert!(err.to_string().contains("index 12 (entry 1)"), "{err}");
        assert_eq!(pairs(&by_list), pairs(&by_entry));
        let err = by_list.add_many(&[1, 2], &[1.0]).unwrap_err();
        assert!(
            err.to_string().contains("2 corner indices but 1 values"),
            "{err}"
        );
        assert_eq!(pairs(&by_list), pairs(&by_entry));
    }
}

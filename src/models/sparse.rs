//! Sparse rows in compressed-sparse-row (CSR) form: the storage of sparse
//! inputs for the built-in models (multiclass over sparse vectors, chains over
//! indicator features such as CoNLL's word and tag attributes).
//!
//! Column indices are `u32` (4 bytes instead of 8 per entry: a sparse data
//! set is mostly indices) and values `f32`, like the dense features of the
//! other models; every product is taken in `f64`.

use crate::error::{Error, Result};

/// `num_rows` sparse rows over `num_cols` columns: row `r` holds the entries
/// `indices[indptr[r]..indptr[r + 1]]` with the values at the same
/// positions. Indices need not be sorted; a repeated index adds up.
#[derive(Debug, Clone, PartialEq)]
pub struct SparseRows {
    indptr: Vec<usize>,
    indices: Vec<u32>,
    values: Vec<f32>,
    num_cols: usize,
}

impl SparseRows {
    /// Checks and wraps CSR arrays: `indptr` has `num_rows + 1` entries,
    /// starts at 0, never decreases and ends at `indices.len()`;
    /// `values.len() == indices.len()`; every index is `< num_cols`; every
    /// value is finite.
    ///
    /// Errors: [`Error::invalid_argument`] naming the first offending row and
    /// entry; [`Error::dimension_mismatch`] when the lengths disagree.
    pub fn new(
        indptr: Vec<usize>,
        indices: Vec<u32>,
        values: Vec<f32>,
        num_cols: usize,
    ) -> Result<Self> {
        if indptr.is_empty() {
            return Err(Error::invalid_argument(
                "sparse rows: indptr must have num_rows + 1 entries (got none)",
            ));
        }
        if indptr[0] != 0 {
            return Err(Error::invalid_argument(format!(
                "sparse rows: indptr[0] must be 0 (got {})",
                indptr[0]
            )));
        }
        if let Some(r) = indptr.windows(2).position(|p| p[1] < p[0]) {
            return Err(Error::invalid_argument(format!(
                "sparse rows: indptr decreases at row {r} ({} then {})",
                indptr[r],
                indptr[r + 1]
            )));
        }
        let nnz = *indptr.last().unwrap_or(&0);
        if nnz != indices.len() || values.len() != indices.len() {
            return Err(Error::dimension_mismatch(format!(
                "sparse rows: indptr ends at {nnz} but there are {} indices and {} values",
                indices.len(),
                values.len()
            )));
        }
        let rows = SparseRows {
            indptr,
            indices,
            values,
            num_cols,
        };
        if let Some(k) = rows.indices.iter().position(|&j| j as usize >= num_cols) {
            let r = rows.row_of(k);
            return Err(Error::invalid_argument(format!(
                "sparse rows: index {} of row {r} (entry {k}) is out of range 0..{num_cols}",
                rows.indices[k]
            )));
        }
        if let Some(k) = rows.values.iter().position(|v| !v.is_finite()) {
            let r = rows.row_of(k);
            return Err(Error::invalid_argument(format!(
                "sparse rows: value {} of row {r} (entry {k}, column {}) is not finite",
                rows.values[k], rows.indices[k]
            )));
        }
        Ok(rows)
    }

    /// Indicator rows: every listed index has the value 1.
    pub fn indicators(indptr: Vec<usize>, indices: Vec<u32>, num_cols: usize) -> Result<Self> {
        let values = vec![1.0; indices.len()];
        Self::new(indptr, indices, values, num_cols)
    }

    /// Dense row-major rows (`num_rows x num_cols`) as CSR, keeping the
    /// non-zero entries in column order.
    pub fn from_dense(values: &[f32], num_cols: usize) -> Result<Self> {
        if num_cols == 0 || !values.len().is_multiple_of(num_cols) {
            return Err(Error::dimension_mismatch(format!(
                "sparse rows: {} dense values are not rows of {num_cols}",
                values.len()
            )));
        }
        let mut indptr = vec![0];
        let mut indices = Vec::new();
        let mut vals = Vec::new();
        for row in values.chunks_exact(num_cols) {
            for (j, &v) in row.iter().enumerate() {
                if v != 0.0 {
                    indices.push(j as u32);
                    vals.push(v);
                }
            }
            indptr.push(indices.len());
        }
        Self::new(indptr, indices, vals, num_cols)
    }

    /// The row that holds entry `k`.
    fn row_of(&self, k: usize) -> usize {
        self.indptr.partition_point(|&p| p <= k) - 1
    }

    /// The number of rows.
    pub fn num_rows(&self) -> usize {
        self.indptr.len() - 1
    }
    /// The number of columns.
    pub fn num_cols(&self) -> usize {
        self.num_cols
    }
    /// Stored entries in all rows.
    pub fn nnz(&self) -> usize {
        self.indices.len()
    }
    /// The indices and values of row `r`.
    #[inline]
    pub fn row(&self, r: usize) -> (&[u32], &[f32]) {
        let (a, b) = (self.indptr[r], self.indptr[r + 1]);
        (&self.indices[a..b], &self.values[a..b])
    }
    /// The CSR arrays `(indptr, indices, values)`.
    pub fn parts(&self) -> (&[usize], &[u32], &[f32]) {
        (&self.indptr, &self.indices, &self.values)
    }

    /// Rows `rows` (in that order) as a new matrix over the same columns.
    pub fn select(&self, rows: impl IntoIterator<Item = usize>) -> Self {
        let mut indptr = vec![0];
        let mut indices = Vec::new();
        let mut values = Vec::new();
        for r in rows {
            let (i, v) = self.row(r);
            indices.extend_from_slice(i);
            values.extend_from_slice(v);
            indptr.push(indices.len());
        }
        SparseRows {
            indptr,
            indices,
            values,
            num_cols: self.num_cols,
        }
    }

    /// `<v, row r>` with `v` a block of at least `num_cols` weights.
    #[inline]
    pub(crate) fn dot_row(&self, v: &[f64], r: usize) -> f64 {
        let (idx, val) = self.row(r);
        let mut s = 0.0;
        for (&j, &x) in idx.iter().zip(val) {
            s += v[j as usize] * f64::from(x);
        }
        s
    }
}

//! A plane's slope as the bundle keeps it: dense, or sparse when most of its
//! entries are zero (the chain model's planes on CoNLL have a few thousand
//! non-zeros of 1.7 million). Every product below gives the bits of the
//! dense kernel on the densified vectors (see `linalg::sparse_dot`), so
//! the storage changes memory only, never a result.

use std::cell::RefCell;

use crate::linalg;
use crate::oracle::sparse::scatter;
use crate::oracle::SparseVec;

thread_local! {
    /// Zeros of the largest dimension met, per thread, to scatter one sparse
    /// slope into (see [`Slope::with_dense`]); all zero between uses.
    static SCATTER: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
}

/// A slope is kept sparse when its `(u32, f64)` entries take at most this
/// fraction of the dense vector's bytes.
const SPARSE_SHARE: f64 = 0.5;

/// Frees this thread's scatter vector (the next use allocates one).
pub(crate) fn release_thread_scratch() {
    SCATTER.with(|cell| drop(cell.take()));
}

/// A plane's slope `a`.
#[derive(Debug, Clone)]
pub enum Slope {
    /// Every entry.
    Dense(Vec<f64>),
    /// The non-zero entries, indices increasing, of a vector of length `dim`.
    Sparse {
        dim: usize,
        index: Vec<u32>,
        value: Vec<f64>,
    },
}

impl Slope {
    /// Whether `nnz` non-zeros of `dim` are kept sparse: when that saves at
    /// least half the memory.
    fn keeps_sparse(nnz: usize, dim: usize) -> bool {
        dim <= u32::MAX as usize && ((nnz * (4 + 8)) as f64) <= SPARSE_SHARE * (8 * dim) as f64
    }

    /// `a` given by its non-zeros (`sparse`) in dimension `dim`: the slope
    /// [`Slope::new`] makes of the dense vector.
    pub fn from_sparse(dim: usize, sparse: SparseVec) -> Self {
        if Self::keeps_sparse(sparse.nnz(), dim) {
            Slope::Sparse {
                dim,
                index: sparse.idx,
                value: sparse.val,
            }
        } else {
            Slope::Dense(sparse.to_dense(dim))
        }
    }

    /// `a`, kept sparse when that saves at least half its memory.
    pub fn new(a: Vec<f64>) -> Self {
        let nnz = a.iter().filter(|v| **v != 0.0).count();
        if Self::keeps_sparse(nnz, a.len()) {
            Self::from_sparse(a.len(), SparseVec::from_dense(&a))
        } else {
            Slope::Dense(a)
        }
    }

    /// The length of `a`.
    pub fn dim(&self) -> usize {
        match self {
            Slope::Dense(a) => a.len(),
            Slope::Sparse { dim, .. } => *dim,
        }
    }

    /// Bytes held by the slope's entries.
    pub fn bytes(&self) -> usize {
        match self {
            Slope::Dense(a) => 8 * a.len(),
            Slope::Sparse { index, value, .. } => 4 * index.len() + 8 * value.len(),
        }
    }

    /// The dense row, when the slope is kept dense.
    pub fn as_dense(&self) -> Option<&[f64]> {
        match self {
            Slope::Dense(a) => Some(a),
            Slope::Sparse { .. } => None,
        }
    }

    /// `a` as a dense vector.
    pub fn to_dense(&self) -> Vec<f64> {
        match self {
            Slope::Dense(a) => a.clone(),
            Slope::Sparse { dim, index, value } => scatter(index, value, *dim),
        }
    }

    /// `a` as a dense vector, moved out when it is kept dense.
    pub fn into_dense(self) -> Vec<f64> {
        match self {
            Slope::Dense(a) => a,
            sparse => sparse.to_dense(),
        }
    }

    /// Calls `f` with `a` as a dense vector: its own row when dense, else
    /// scattered into the thread's vector of zeros, which is zeroed again
    /// after `f` (if `f` panics the vector is dropped, never reused dirty).
    /// Sparse slopes then take their products with `a` as a gather along
    /// their own coordinates, with none of the mispredicted branches of a
    /// merge of two index lists.
    pub fn with_dense<R>(&self, f: impl FnOnce(&[f64]) -> R) -> R {
        match self {
            Slope::Dense(a) => f(a),
            Slope::Sparse { dim, index, value } => {
                let mut zeros = SCATTER.with(RefCell::take);
                if zeros.len() < *dim {
                    zeros.resize(*dim, 0.0);
                }
                for (&j, &v) in index.iter().zip(value) {
                    zeros[j as usize] = v;
                }
                let out = f(&zeros[..*dim]);
                for &j in index {
                    zeros[j as usize] = 0.0;
                }
                SCATTER.with(|cell| *cell.borrow_mut() = zeros);
                out
            }
        }
    }

    /// `<a, c>` for a dense `c`.
    pub fn dot_dense(&self, c: &[f64]) -> f64 {
        match self {
            Slope::Dense(a) => linalg::dot(a, c),
            Slope::Sparse { index, value, .. } => linalg::sparse_dot(index, value, c),
        }
    }

    /// `<a, other>`.
    pub fn dot(&self, other: &Slope) -> f64 {
        match (self, other) {
            (Slope::Dense(a), _) => other.dot_dense(a),
            (_, Slope::Dense(b)) => self.dot_dense(b),
            (
                Slope::Sparse {
                    index: ia,
                    value: va,
                    ..
                },
                Slope::Sparse {
                    index: ib,
                    value: vb,
                    ..
                },
            ) => linalg::sparse_sparse_dot(ia, va, ib, vb),
        }
    }

    /// `||a||^2`.
    pub fn norm2(&self) -> f64 {
        self.dot(self)
    }

    /// `y[range] += alpha * |a[range]|` (bounds the rounding of
    /// [`Slope::add_block_to`]'s sums).
    pub fn add_abs_block_to(&self, alpha: f64, start: usize, y: &mut [f64]) {
        match self {
            Slope::Dense(a) => {
                let end = start + y.len();
                for (yj, aj) in y.iter_mut().zip(&a[start..end]) {
                    *yj += alpha * aj.abs();
                }
            }
            Slope::Sparse { index, value, .. } => {
                let from = index.partition_point(|&j| (j as usize) < start);
                let to = index.partition_point(|&j| (j as usize) < start + y.len());
                for (&j, &v) in index[from..to].iter().zip(&value[from..to]) {
                    y[j as usize - start] += alpha * v.abs();
                }
            }
        }
    }

    /// `y[range] += alpha * a[range]` for the coordinates `start..start +
    /// y.len()` (one block of a parallel sum).
    pub fn add_block_to(&self, alpha: f64, start: usize, y: &mut [f64]) {
        match self {
            Slope::Dense(a) => linalg::axpy(alpha, &a[start..start + y.len()], y),
            Slope::Sparse { index, value, .. } => {
                let from = index.partition_point(|&j| (j as usize) < start);
                let to = index.partition_point(|&j| (j as usize) < start + y.len());
                for (&j, &v) in index[from..to].iter().zip(&value[from..to]) {
                    y[j as usize - start] += alpha * v;
                }
            }
        }
    }
}

//! Vectors of a block: sparse while few coordinates are used, dense after.
//!
//! A structured problem with d = 1.6 million weights and thousands of
//! examples cannot keep a dense `w_i` per example; the joint feature
//! differences `psi_i(y)` touch a few hundred coordinates, and so do the
//! block iterates built from them.

use crate::oracle::Corner;

/// Sorted, duplicate-free coordinates with their values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SparseVec {
    /// The coordinates, increasing.
    pub idx: Vec<u32>,
    /// Their values.
    pub val: Vec<f64>,
}

impl SparseVec {
    /// The number of stored coordinates.
    pub fn nnz(&self) -> usize {
        self.idx.len()
    }

    /// Heap bytes held (capacity, for memory accounting).
    pub fn bytes(&self) -> usize {
        self.idx.capacity() * 4 + self.val.capacity() * 8
    }

    /// The corner's psi (sparse entries and dense part added up), in
    /// coordinate order, exact zeros dropped. `scratch` is reused.
    pub fn from_corner(c: &Corner, scratch: &mut Vec<(u32, f64)>) -> SparseVec {
        let mut out = SparseVec::default();
        out.set_from_corner(c, scratch);
        out
    }

    /// [`SparseVec::from_corner`] into `self`, reusing its buffers (no
    /// allocation once they are large enough: the block steps' hot path).
    pub fn set_from_corner(&mut self, c: &Corner, scratch: &mut Vec<(u32, f64)>) {
        scratch.clear();
        if let Some(d) = c.dense() {
            scratch.extend(
                d.iter()
                    .enumerate()
                    .filter(|(_, &v)| v != 0.0)
                    .map(|(j, &v)| (j as u32, v)),
            );
        }
        scratch.extend(c.sparse_entries().map(|(j, v)| (j as u32, v)));
        // Deterministic for the same input (no random pivots), so repeated
        // indices always add up in the same order.
        scratch.sort_unstable_by_key(|e| e.0);
        self.idx.clear();
        self.val.clear();
        let mut k = 0;
        while k < scratch.len() {
            let j = scratch[k].0;
            let mut v = 0.0;
            while k < scratch.len() && scratch[k].0 == j {
                v += scratch[k].1;
                k += 1;
            }
            if v != 0.0 {
                self.idx.push(j);
                self.val.push(v);
            }
        }
    }

    /// `<self, w>` for a dense `w`.
    pub fn dot_dense(&self, w: &[f64]) -> f64 {
        self.idx
            .iter()
            .zip(&self.val)
            .map(|(&j, &v)| v * w[j as usize])
            .sum()
    }

    /// The squared norm `||x||^2`.
    pub fn norm2(&self) -> f64 {
        self.val.iter().map(|v| v * v).sum()
    }
}

/// A dense block vector stored as `c * u`, so that scaling the whole block
/// (every FW step scales `w_i` by `1 - gamma`) costs O(1).
#[derive(Debug, Clone, PartialEq)]
pub struct Scaled {
    pub u: Vec<f64>,
    pub c: f64,
}

impl Scaled {
    /// `self <- a * self` in O(1) (O(d) when the scale leaves a safe range).
    fn scale(&mut self, a: f64) {
        if a == 0.0 {
            self.u.iter_mut().for_each(|v| *v = 0.0);
            self.c = 1.0;
        } else {
            self.c *= a;
            self.renormalise();
        }
    }

    fn renormalise(&mut self) {
        if !(1e-100..=1e100).contains(&self.c.abs()) {
            let c = self.c;
            self.u.iter_mut().for_each(|x| *x *= c);
            self.c = 1.0;
        }
    }
}

/// A block iterate `w_i`: sparse until it fills a third of the coordinates.
#[derive(Debug, Clone, PartialEq)]
pub enum BlockVec {
    Sparse(SparseVec),
    Dense(Scaled),
}

impl Default for BlockVec {
    fn default() -> Self {
        BlockVec::Sparse(SparseVec::default())
    }
}

impl BlockVec {
    pub fn bytes(&self) -> usize {
        match self {
            BlockVec::Sparse(s) => s.bytes(),
            BlockVec::Dense(d) => d.u.capacity() * 8,
        }
    }

    pub fn is_dense(&self) -> bool {
        matches!(self, BlockVec::Dense(_))
    }

    /// `<self, w>` for a dense `w`.
    pub fn dot_dense(&self, w: &[f64]) -> f64 {
        match self {
            BlockVec::Sparse(s) => s.dot_dense(w),
            BlockVec::Dense(d) => d.c * crate::linalg::dot(&d.u, w),
        }
    }

    /// `<self, x>` for a sparse `x`.
    pub fn dot_sparse(&self, x: &SparseVec) -> f64 {
        match self {
            BlockVec::Dense(d) => d.c * x.dot_dense(&d.u),
            BlockVec::Sparse(s) => {
                let (mut p, mut q, mut acc) = (0, 0, 0.0);
                while p < s.idx.len() && q < x.idx.len() {
                    match s.idx[p].cmp(&x.idx[q]) {
                        std::cmp::Ordering::Less => p += 1,
                        std::cmp::Ordering::Greater => q += 1,
                        std::cmp::Ordering::Equal => {
                            acc += s.val[p] * x.val[q];
                            p += 1;
                            q += 1;
                        }
                    }
                }
                acc
            }
        }
    }

    pub fn norm2(&self) -> f64 {
        match self {
            BlockVec::Sparse(s) => s.norm2(),
            BlockVec::Dense(d) => d.c * d.c * crate::linalg::norm2(&d.u),
        }
    }

    /// `y += alpha * self`.
    pub fn add_to(&self, alpha: f64, y: &mut [f64]) {
        match self {
            BlockVec::Sparse(s) => {
                for (&j, &v) in s.idx.iter().zip(&s.val) {
                    y[j as usize] += alpha * v;
                }
            }
            BlockVec::Dense(d) => crate::linalg::axpy(alpha * d.c, &d.u, y),
        }
    }

    /// Calls `f(j, value)` for every stored coordinate (the tests' view).
    #[cfg(test)]
    pub fn for_each(&self, mut f: impl FnMut(usize, f64)) {
        match self {
            BlockVec::Sparse(s) => {
                for (&j, &v) in s.idx.iter().zip(&s.val) {
                    f(j as usize, v)
                }
            }
            BlockVec::Dense(d) => {
                for (j, &v) in d.u.iter().enumerate() {
                    if v != 0.0 {
                        f(j, d.c * v)
                    }
                }
            }
        }
    }

    /// `self <- a * self`.
    pub fn scale(&mut self, a: f64) {
        match self {
            BlockVec::Dense(d) => d.scale(a),
            BlockVec::Sparse(s) => s.val.iter_mut().for_each(|v| *v *= a),
        }
    }

    /// `self <- a * self + b * x` for a sparse `x`; `merged` is scratch.
    /// Turns dense when the result fills a third of `dim` coordinates.
    pub fn combine(&mut self, a: f64, b: f64, x: &SparseVec, dim: usize, merged: &mut SparseVec) {
        match self {
            BlockVec::Dense(d) => {
                d.scale(a);
                let f = b / d.c;
                for (&j, &v) in x.idx.iter().zip(&x.val) {
                    d.u[j as usize] += f * v;
                }
            }
            BlockVec::Sparse(s) => {
                merged.idx.clear();
                merged.val.clear();
                merge(s, a, x, b, merged);
                std::mem::swap(s, merged);
                if 3 * s.nnz() > dim {
                    let mut u = vec![0.0; dim];
                    for (&j, &v) in s.idx.iter().zip(&s.val) {
                        u[j as usize] = v;
                    }
                    *self = BlockVec::Dense(Scaled { u, c: 1.0 });
                }
            }
        }
    }
}

/// `out += a * p + b * q` (appended) for sorted sparse vectors, zeros dropped.
pub fn merge(p: &SparseVec, a: f64, q: &SparseVec, b: f64, out: &mut SparseVec) {
    let (mut x, mut y) = (0, 0);
    while x < p.idx.len() || y < q.idx.len() {
        let (j, v) = if y >= q.idx.len() || (x < p.idx.len() && p.idx[x] < q.idx[y]) {
            x += 1;
            (p.idx[x - 1], a * p.val[x - 1])
        } else if x >= p.idx.len() || q.idx[y] < p.idx[x] {
            y += 1;
            (q.idx[y - 1], b * q.val[y - 1])
        } else {
            x += 1;
            y += 1;
            (p.idx[x - 1], a * p.val[x - 1] + b * q.val[y - 1])
        };
        if v != 0.0 {
            out.idx.push(j);
            out.val.push(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sv(pairs: &[(u32, f64)]) -> SparseVec {
        SparseVec {
            idx: pairs.iter().map(|p| p.0).collect(),
            val: pairs.iter().map(|p| p.1).collect(),
        }
    }

    #[test]
    fn combine_matches_dense_arithmetic_and_turns_dense() {
        let dim = 9;
        let mut b = BlockVec::Sparse(sv(&[(1, 2.0), (4, -1.0)]));
        let mut scratch = SparseVec::default();
        b.combine(
            0.5,
            2.0,
            &sv(&[(0, 1.0), (4, 0.25), (7, 3.0)]),
            dim,
            &mut scratch,
        );
        let mut dense = vec![0.0; dim];
        b.for_each(|j, v| dense[j] = v);
        assert_eq!(dense, vec![2.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 6.0, 0.0]);
        // 4 of 9 coordinates used: more than a third, so dense now.
        b.combine(1.0, 1.0, &sv(&[(2, 1.0)]), dim, &mut scratch);
        assert!(b.is_dense());
        assert_eq!(b.dot_dense(&[1.0; 9]), 10.0);
    }

    #[test]
    fn corners_become_sorted_sums_without_zeros() {
        let mut c = Corner::new(6);
        c.add(4, 1.0).unwrap();
        c.add(1, 2.0).unwrap();
        c.add(4, -1.0).unwrap();
        c.dense_mut()[1] = 0.5;
        c.dense_mut()[5] = -2.0;
        let s = SparseVec::from_corner(&c, &mut Vec::new());
        assert_eq!(s, sv(&[(1, 2.5), (5, -2.0)]));
    }
}

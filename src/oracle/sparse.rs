//! Sparse vectors with sorted coordinates: the compact form of a corner's
//! `psi` (a few hundred non-zeros among millions of weights), kept by the
//! passes over all examples and by BCFW's blocks.

use super::Corner;
/// Sorted, duplicate-free coordinates with their values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SparseVec {
    /// The coordinates, increasing.
    pub idx: Vec<u32>,
    /// The values, one per coordinate.
    pub val: Vec<f64>,
}

impl SparseVec {
    /// The number of stored coordinates.
    pub fn nnz(&self) -> usize {
        self.idx.len()
    }

    /// Bytes held (for the memory figure).
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
        // A stable sort: repeated indices add up in the order the oracle
        // gave them, and the sorted runs oracles write (a row per class, a
        // feature block per position) are merged in linear time.
        scratch.sort_by_key(|e| e.0);
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

    /// `||self||^2`.
    pub fn norm2(&self) -> f64 {
        self.val.iter().map(|v| v * v).sum()
    }

    /// `||self - other||^2`, walking both sorted index lists once.
    pub fn dist2(&self, other: &SparseVec) -> f64 {
        let (p, q) = (self, other);
        let (mut x, mut y, mut sum) = (0, 0, 0.0);
        while x < p.idx.len() || y < q.idx.len() {
            let d = if y >= q.idx.len() || (x < p.idx.len() && p.idx[x] < q.idx[y]) {
                x += 1;
                p.val[x - 1]
            } else if x >= p.idx.len() || q.idx[y] < p.idx[x] {
                y += 1;
                q.val[y - 1]
            } else {
                x += 1;
                y += 1;
                p.val[x - 1] - q.val[y - 1]
            };
            sum += d * d;
        }
        sum
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

/// A sparse vector from `(index, value)` pairs in index order (tests).
#[cfg(test)]
pub(crate) fn sv(pairs: &[(u32, f64)]) -> SparseVec {
    SparseVec {
        idx: pairs.iter().map(|p| p.0).collect(),
        val: pairs.iter().map(|p| p.1).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dist2_is_the_squared_distance_over_both_supports() {
        let p = sv(&[(1, 1.0), (4, 2.0), (9, -1.0)]);
        let q = sv(&[(0, 3.0), (4, 2.5), (9, -1.0)]);
        // (1)^2 at 1, (3)^2 at 0, (-0.5)^2 at 4, 0 at 9
        assert_eq!(p.dist2(&q), 1.0 + 9.0 + 0.25);
        assert_eq!(q.dist2(&p), p.dist2(&q));
        assert_eq!(p.dist2(&p), 0.0);
        assert_eq!(p.dist2(&SparseVec::default()), p.norm2());
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

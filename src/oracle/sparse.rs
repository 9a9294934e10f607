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
    pub fn from_corner(c: &Corner, scratch: &mut CornerScratch) -> SparseVec {
        let mut out = SparseVec::default();
        out.set_from_corner(c, scratch);
        out
    }

    /// [`SparseVec::from_corner`] into `self`, reusing its buffers (no
    /// allocation once they are large enough: the block steps' hot path).
    ///
    /// The entries are added up in a dense accumulator, in the order the
    /// oracle gave them (the dense part first), and read back in
    /// coordinate order through two levels of bit marks: linear in the
    /// entries, with no sort.
    pub fn set_from_corner(&mut self, c: &Corner, scratch: &mut CornerScratch) {
        self.set_from_corner_with(c, scratch, |_| {});
    }

    /// [`SparseVec::set_from_corner`] that first shows `psi_dense`, psi as a
    /// dense vector, so that dot products with psi can be gathered along
    /// another vector's coordinates (no walk over both supports).
    pub fn set_from_corner_with(
        &mut self,
        c: &Corner,
        scratch: &mut CornerScratch,
        psi_dense: impl FnOnce(&[f64]),
    ) {
        // 1 v is v: the sums of `add_corner` with alpha = 1 are psi's.
        scratch.add_corner(c, 1.0);
        psi_dense(&scratch.sums[..c.dim()]);
        self.idx.clear();
        self.val.clear();
        scratch.drain_into(self);
    }

    /// The non-zero entries of `a`.
    pub fn from_dense(a: &[f64]) -> SparseVec {
        let mut out = SparseVec::default();
        for (j, &v) in a.iter().enumerate() {
            if v != 0.0 {
                out.idx.push(j as u32);
                out.val.push(v);
            }
        }
        out
    }

    /// Every entry of the vector of dimension `dim` (at least one past the
    /// last coordinate).
    pub fn to_dense(&self, dim: usize) -> Vec<f64> {
        scatter(&self.idx, &self.val, dim)
    }

    /// `y += alpha * self` (a multiply and an add per stored coordinate).
    pub fn add_to(&self, alpha: f64, y: &mut [f64]) {
        for (&j, &v) in self.idx.iter().zip(&self.val) {
            y[j as usize] += alpha * v;
        }
    }

    /// Drops the stored coordinates whose value is exactly zero, keeping
    /// the others in order.
    pub fn drop_zeros(&mut self) {
        let mut k = 0;
        for r in 0..self.idx.len() {
            if self.val[r] != 0.0 {
                self.idx[k] = self.idx[r];
                self.val[k] = self.val[r];
                k += 1;
            }
        }
        self.idx.truncate(k);
        self.val.truncate(k);
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

/// The reused buffers of [`SparseVec::set_from_corner`]: a dense
/// accumulator of the corner's dimension (zero outside a conversion), a bit
/// per coordinate touched and a bit per 64-coordinate word touched, so that
/// reading back costs the touched words plus `dim / 4096`, not `dim`.
/// Allocated on first use.
#[derive(Debug, Clone, Default)]
pub struct CornerScratch {
    sums: Vec<f64>,
    touched: Vec<u64>,
    touched_words: Vec<u64>,
}

impl CornerScratch {
    fn fit(&mut self, dim: usize) {
        if self.sums.len() < dim {
            self.sums.resize(dim, 0.0);
            self.touched.resize(dim.div_ceil(64), 0);
            self.touched_words.resize(dim.div_ceil(64 * 64), 0);
        }
    }

    fn add(&mut self, j: usize, v: f64) {
        self.sums[j] += v;
        let word = j / 64;
        self.touched_words[word / 64] |= 1 << (word % 64);
        self.touched[word] |= 1 << (j % 64);
    }

    /// Adds `alpha * psi` of corner `c` (its dense part first, then its
    /// entries; each a multiply and an add, as [`Corner::add_to`] does).
    pub(crate) fn add_corner(&mut self, c: &Corner, alpha: f64) {
        self.fit(c.dim());
        if let Some(d) = c.dense() {
            for (j, &v) in d.iter().enumerate() {
                if v != 0.0 {
                    self.add(j, alpha * v);
                }
            }
        }
        for (j, v) in c.sparse_entries() {
            self.add(j, alpha * v);
        }
    }

    /// The non-zero sums as a sparse vector; the scratch is zero again.
    pub(crate) fn take_sums(&mut self) -> SparseVec {
        let mut out = SparseVec::default();
        self.drain_into(&mut out);
        out
    }

    /// Appends the non-zero sums in coordinate order and resets every
    /// touched entry to zero.
    fn drain_into(&mut self, out: &mut SparseVec) {
        for g in 0..self.touched_words.len() {
            let mut words = std::mem::take(&mut self.touched_words[g]);
            while words != 0 {
                let word = g * 64 + words.trailing_zeros() as usize;
                words &= words - 1;
                let mut bits = std::mem::take(&mut self.touched[word]);
                while bits != 0 {
                    let j = word * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    let v = std::mem::take(&mut self.sums[j]);
                    if v != 0.0 {
                        out.idx.push(j as u32);
                        out.val.push(v);
                    }
                }
            }
        }
    }
}

/// The dense vector of dimension `dim` with `value[k]` at `index[k]`.
pub fn scatter(index: &[u32], value: &[f64], dim: usize) -> Vec<f64> {
    let mut a = vec![0.0; dim];
    for (&j, &v) in index.iter().zip(value) {
        a[j as usize] = v;
    }
    a
}

/// `out += a * p + b * q` (appended) for sorted sparse vectors, zeros dropped.
pub fn merge(p: &SparseVec, a: f64, q: &SparseVec, b: f64, out: &mut SparseVec) {
    merge_visiting(p, a, q, b, out, |_, _, _| {});
}

/// [`merge`] that also calls `visit(j, true, p_j)` and then
/// `visit(j, false, q_j)` for the stored coordinates of `p` and of `q`, in
/// coordinate order: a step that moves another vector by the same
/// coordinates does it in this one walk.
#[inline]
pub fn merge_visiting(
    p: &SparseVec,
    a: f64,
    q: &SparseVec,
    b: f64,
    out: &mut SparseVec,
    mut visit: impl FnMut(usize, bool, f64),
) {
    let (mut x, mut y) = (0, 0);
    while x < p.idx.len() || y < q.idx.len() {
        let (j, v) = if y >= q.idx.len() || (x < p.idx.len() && p.idx[x] < q.idx[y]) {
            x += 1;
            visit(p.idx[x - 1] as usize, true, p.val[x - 1]);
            (p.idx[x - 1], a * p.val[x - 1])
        } else if x >= p.idx.len() || q.idx[y] < p.idx[x] {
            y += 1;
            visit(q.idx[y - 1] as usize, false, q.val[y - 1]);
            (q.idx[y - 1], b * q.val[y - 1])
        } else {
            x += 1;
            y += 1;
            visit(p.idx[x - 1] as usize, true, p.val[x - 1]);
            visit(q.idx[y - 1] as usize, false, q.val[y - 1]);
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
        let s = SparseVec::from_corner(&c, &mut CornerScratch::default());
        assert_eq!(s, sv(&[(1, 2.5), (5, -2.0)]));
    }

    #[test]
    fn summed_corners_are_their_dense_sum_bit_for_bit() {
        // Two corners with dense parts and repeated entries, added with
        // alpha = -1 as a chunk of examples adds them.
        let mut a = Corner::new(9);
        a.add(3, 0.1).unwrap();
        a.add(7, -2.5).unwrap();
        a.add(3, 0.2).unwrap();
        a.dense_mut()[3] = 1.0 / 3.0;
        a.dense_mut()[8] = 4.0;
        let mut b = Corner::new(9);
        b.add(7, 2.5).unwrap();
        b.add(0, 1e-3).unwrap();
        let mut dense = vec![0.0; 9];
        let mut scratch = CornerScratch::default();
        for c in [&a, &b] {
            c.add_to(-1.0, &mut dense);
            scratch.add_corner(c, -1.0);
        }
        let sums = scratch.take_sums();
        let want: Vec<(u32, f64)> = dense
            .iter()
            .enumerate()
            .filter(|(_, v)| **v != 0.0)
            .map(|(j, &v)| (j as u32, v))
            .collect();
        assert_eq!(sums, sv(&want));
        assert_eq!(sums.idx, vec![0, 3, 8]); // 7 cancels exactly
        assert!(scratch.sums.iter().all(|&x| x == 0.0));
    }

    #[test]
    fn reused_scratch_sums_repeats_in_order_across_dimensions() {
        // Sums in the oracle's order, compared with an ordered map; the
        // scratch is reused for a larger and then a smaller corner, and
        // must come back clean from each.
        let mut scratch = CornerScratch::default();
        let mut seed = 12345u64;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 33
        };
        for dim in [70, 300_000, 5_000] {
            let mut c = Corner::new(dim);
            let mut want = std::collections::BTreeMap::new();
            for k in 0..2_000 {
                let j = (next() as usize) % dim;
                // Some exact cancellations, some repeats, some -0.0.
                let v = match k % 4 {
                    0 => -0.0,
                    1 => (next() % 7) as f64 - 3.0,
                    _ => (next() as f64) / 1e9 - 2.0,
                };
                c.add(j, v).unwrap();
                *want.entry(j as u32).or_insert(0.0) += v;
            }
            let got = SparseVec::from_corner(&c, &mut scratch);
            let want: Vec<(u32, f64)> = want.into_iter().filter(|e| e.1 != 0.0).collect();
            assert_eq!(got, sv(&want), "dim {dim}");
            assert!(scratch.sums.iter().all(|&x| x == 0.0));
            assert!(scratch
                .touched
                .iter()
                .chain(&scratch.touched_words)
                .all(|&b| b == 0));
        }
    }
}

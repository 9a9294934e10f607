//! Vectors of a block: sparse while few coordinates are used, dense after.
//!
//! A structured problem with d = 1.6 million weights and thousands of
//! examples cannot keep a dense `w_i` per example; the joint feature
//! differences `psi_i(y)` touch a few hundred coordinates, and so do the
//! block iterates built from them.

use crate::oracle::sparse::{merge, merge_visiting, SparseVec};

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
    /// Few coordinates used: stored sparse.
    Sparse(SparseVec),
    /// Many coordinates used: stored dense, with a lazy scale.
    Dense(Scaled),
}

impl Default for BlockVec {
    fn default() -> Self {
        BlockVec::Sparse(SparseVec::default())
    }
}

impl BlockVec {
    /// Bytes held (for the memory figure).
    pub fn bytes(&self) -> usize {
        match self {
            BlockVec::Sparse(s) => s.bytes(),
            BlockVec::Dense(d) => d.u.capacity() * 8,
        }
    }

    /// Whether the vector is stored dense.
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

    /// `(<self, w>, <self, x>, k)` for a dense `w` and an `x` given dense, in
    /// one gather along a sparse block's coordinates: the same sums, bit for
    /// bit, as [`BlockVec::dot_dense`] and [`BlockVec::dot_sparse`] with `x`'s
    /// non-zeros (a zero of `x` adds a zero); `k` counts the block's
    /// coordinates where `x` is not zero. `None` for a dense block.
    pub fn gathered_dots(&self, w: &[f64], x: &[f64]) -> Option<(f64, f64, usize)> {
        let BlockVec::Sparse(s) = self else {
            return None;
        };
        // The starts of `Iterator::sum` and of the intersection walk.
        let (mut with_w, mut with_x, mut shared) = (-0.0, 0.0, 0);
        for (&j, &u) in s.idx.iter().zip(&s.val) {
            with_w += u * w[j as usize];
            with_x += u * x[j as usize];
            shared += usize::from(x[j as usize] != 0.0);
        }
        Some((with_w, with_x, shared))
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

    /// `||self||^2`.
    pub fn norm2(&self) -> f64 {
        match self {
            BlockVec::Sparse(s) => s.norm2(),
            BlockVec::Dense(d) => d.c * d.c * crate::linalg::norm2(&d.u),
        }
    }

    /// `y += alpha * self`.
    pub fn add_to(&self, alpha: f64, y: &mut [f64]) {
        match self {
            BlockVec::Sparse(s) => s.add_to(alpha, y),
            BlockVec::Dense(d) => crate::linalg::axpy(alpha * d.c, &d.u, y),
        }
    }

    /// Calls `f(j, value)` for every stored coordinate (the tests' and the debug checks' view).
    #[cfg(any(test, debug_assertions))]
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

    /// A FW step's update of the block and of the sum `v` of all blocks:
    /// `v += b * x - gamma * self`, then `self <- (1 - gamma) * self + b * x`.
    /// A sparse block does both in one walk over the two supports, in place
    /// when `x_within` says that every coordinate of `x` is one of the
    /// block's (no coordinate to insert).
    #[allow(clippy::too_many_arguments)]
    pub fn step_towards(
        &mut self,
        gamma: f64,
        b: f64,
        x: &SparseVec,
        x_within: bool,
        v: &mut [f64],
        dim: usize,
        merged: &mut SparseVec,
    ) {
        let keep = 1.0 - gamma;
        match self {
            BlockVec::Sparse(s) if x_within => {
                // The block's walk with no branch on the coordinates: a
                // coordinate that `x` lacks gets -0.0 added, which changes
                // no value, so the results are those of the merge below.
                let mut q = 0;
                let mut zeros = false;
                for (&j, u) in s.idx.iter().zip(s.val.iter_mut()) {
                    let hit = x.idx.get(q) == Some(&j);
                    let bx = if hit { b * x.val[q] } else { -0.0 };
                    q += usize::from(hit);
                    let j = j as usize;
                    v[j] += -gamma * *u;
                    v[j] += bx;
                    *u = keep * *u + bx;
                    zeros |= *u == 0.0;
                }
                debug_assert_eq!(q, x.nnz(), "x has a coordinate outside the block");
                if zeros {
                    // The merge drops exact zeros (all of them when gamma = 1).
                    s.drop_zeros();
                }
                self.densify_if_full(dim);
            }
            BlockVec::Sparse(s) => {
                // Per coordinate the same operations, in the same order, as
                // `add_to` and the scatter of `x` followed by `combine`.
                merged.idx.clear();
                merged.val.clear();
                merge_visiting(s, keep, x, b, merged, |j, of_self, value| {
                    v[j] += if of_self { -gamma * value } else { b * value }
                });
                std::mem::swap(s, merged);
                self.densify_if_full(dim);
            }
            BlockVec::Dense(_) => {
                self.add_to(-gamma, v);
                x.add_to(b, v);
                self.combine(keep, b, x, dim, merged);
            }
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
                self.densify_if_full(dim);
            }
        }
    }

    /// A sparse block that fills a third of `dim` coordinates turns dense.
    fn densify_if_full(&mut self, dim: usize) {
        if let BlockVec::Sparse(s) = self {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::sparse::sv;

    #[test]
    fn fw_step_in_place_is_the_merge_bit_for_bit() {
        // x's coordinates are all the block's: the in-place walk applies.
        let dim = 20;
        let block = BlockVec::Sparse(sv(&[(0, 1.5), (3, -0.2), (4, 2.0), (7, 0.9), (11, -3.0)]));
        let x = sv(&[(0, 0.3), (4, -1.7), (11, 1.0)]);
        // gamma = 1 zeroes the coordinates x lacks (dropped, as the merge
        // drops them); b = 3 / 1.5 cancels coordinate 4 exactly as well.
        for (gamma, b) in [(0.37, 0.37 * 0.013), (1.0, 0.5), (0.25, 1.5 * 0.75 / 1.7)] {
            let v0: Vec<f64> = (0..dim).map(|j| 1.0 / (j as f64 + 1.0) - 0.3).collect();
            let (mut want, mut v_want) = (block.clone(), v0.clone());
            want.step_towards(
                gamma,
                b,
                &x,
                false,
                &mut v_want,
                dim,
                &mut SparseVec::default(),
            );
            let (mut got, mut v_got) = (block.clone(), v0);
            got.step_towards(
                gamma,
                b,
                &x,
                true,
                &mut v_got,
                dim,
                &mut SparseVec::default(),
            );
            assert_eq!(got, want, "gamma {gamma}");
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&v_got), bits(&v_want), "gamma {gamma}");
        }
        let mut last = block.clone();
        last.step_towards(
            1.0,
            0.5,
            &x,
            true,
            &mut vec![0.0; dim],
            dim,
            &mut SparseVec::default(),
        );
        assert_eq!(
            last,
            BlockVec::Sparse(sv(&[(0, 0.15), (4, -0.85), (11, 0.5)]))
        );
    }

    #[test]
    fn gathered_dots_are_the_two_dot_products_bit_for_bit() {
        let dim = 10;
        let block = BlockVec::Sparse(sv(&[(1, 0.3), (2, -1.25), (5, 7.1), (8, 1e-3)]));
        let w: Vec<f64> = (0..dim).map(|j| (j as f64).sin()).collect();
        // x shares coordinates 2 and 8 with the block, and has its own.
        let x = sv(&[(0, 4.0), (2, 0.77), (6, -2.0), (8, -3.3)]);
        let mut x_dense = vec![0.0; dim];
        for (&j, &v) in x.idx.iter().zip(&x.val) {
            x_dense[j as usize] = v;
        }
        let (with_w, with_x, shared) = block.gathered_dots(&w, &x_dense).unwrap();
        assert_eq!(shared, 2);
        assert_eq!(with_w.to_bits(), block.dot_dense(&w).to_bits());
        assert_eq!(with_x.to_bits(), block.dot_sparse(&x).to_bits());
        assert_eq!(with_x, 0.77 * -1.25 + -3.3 * 1e-3);
        let dense = BlockVec::Dense(Scaled {
            u: w.clone(),
            c: 1.0,
        });
        assert!(dense.gathered_dots(&w, &x_dense).is_none());
    }

    #[test]
    fn fw_step_in_one_walk_is_the_three_updates_bit_for_bit() {
        let dim = 12;
        let x = sv(&[(0, 0.3), (4, -1.7), (7, 2.9), (11, 1.0)]);
        let (gamma, b) = (0.37, 0.37 * 0.013);
        for start in [
            BlockVec::Sparse(sv(&[(1, 2.0), (4, -1.1), (9, 0.7)])),
            BlockVec::Dense(Scaled {
                u: (0..dim).map(|j| j as f64 * 0.1 - 0.4).collect(),
                c: 0.8,
            }),
        ] {
            let v0: Vec<f64> = (0..dim).map(|j| 1.0 / (j as f64 + 1.0)).collect();
            // The updates one after the other.
            let (mut want, mut v_want) = (start.clone(), v0.clone());
            want.add_to(-gamma, &mut v_want);
            for (&j, &xj) in x.idx.iter().zip(&x.val) {
                v_want[j as usize] += b * xj;
            }
            want.combine(1.0 - gamma, b, &x, dim, &mut SparseVec::default());
            // In one walk.
            let (mut got, mut v_got) = (start, v0);
            got.step_towards(
                gamma,
                b,
                &x,
                false,
                &mut v_got,
                dim,
                &mut SparseVec::default(),
            );
            assert_eq!(got, want);
            assert_eq!(v_got, v_want);
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
}

//! Class-factored block iterates: for an oracle whose corners are
//! `psi_i(y) = r_i ⊗ (e_{t_i} - e_y)` ([`crate::oracle::classes`]), every
//! `w_i = (1/(lambda n)) sum_y alpha_i(y) psi_i(y)` is `r_i ⊗ c_i` with
//! `c_i` in `R^K`. Keeping `c_i` costs `K` numbers per example where the
//! general iterate fills up to `K d'`, and every quantity of a FW step
//! comes from the oracle's class scores and `||r_i||^2`. A kept corner
//! (pairwise and away steps, the cache, multi-plane working sets) is its
//! class alone, and a step direction is `r_i ⊗ delta` for a `delta` in
//! `R^K`.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::oracle::sparse::SparseVec;
use crate::oracle::ClassRows;

/// The coefficients `c_i` of every block, with the rows they multiply.
pub struct ClassBlocks {
    pub rows: Arc<dyn ClassRows>,
    pub k: usize,
    /// `c_i` at `coef[i K .. (i + 1) K]`.
    coef: Vec<f64>,
    /// The class scores `<w_k, r_i>` of the block being stepped at the
    /// current `w`: all of them after an oracle answer, else those of the
    /// truth and of the kept corners ([`ClassBlocks::score_corners`]).
    pub scores: Vec<f64>,
    /// A step direction `r_i ⊗ dir`, and the best one so far while others
    /// are tried.
    pub dir: Vec<f64>,
    pub dir_parked: Vec<f64>,
}

impl ClassBlocks {
    /// Every `c_i = 0` (the start `alpha_i = delta(y_i)`).
    pub fn new(rows: Arc<dyn ClassRows>, n: usize) -> Self {
        let k = rows.num_classes();
        ClassBlocks {
            rows,
            k,
            coef: vec![0.0; n * k],
            scores: vec![0.0; k],
            dir: vec![0.0; k],
            dir_parked: vec![0.0; k],
        }
    }

    /// The class an answer's label id names on block `i` (an error beyond
    /// the `K` classes).
    pub fn class_of(&self, i: usize, label: u64) -> Result<usize> {
        match usize::try_from(label) {
            Ok(class) if class < self.k => Ok(class),
            _ => Err(Error::oracle(format!(
                "max-oracle for example {i} answered label {label}, not one of the {} classes",
                self.k
            ))),
        }
    }

    pub fn bytes(&self) -> usize {
        (self.coef.capacity() + 3 * self.k) * 8
    }

    pub fn coef(&self, i: usize) -> &[f64] {
        &self.coef[i * self.k..(i + 1) * self.k]
    }

    /// `c_i` and the direction buffer, the one read while the other is written.
    pub fn coef_and_dir(&mut self, i: usize) -> (&[f64], &mut [f64]) {
        (&self.coef[i * self.k..(i + 1) * self.k], &mut self.dir)
    }

    pub fn coef_mut(&mut self, i: usize) -> &mut [f64] {
        &mut self.coef[i * self.k..(i + 1) * self.k]
    }

    /// Every block's `c_i`, block after block.
    pub fn all_coef(&self) -> &[f64] {
        &self.coef
    }

    pub fn all_coef_mut(&mut self) -> &mut [f64] {
        &mut self.coef
    }

    /// `<w, w_i> = sum_k c_ik <w_k, r_i>`, over the classes in use.
    pub fn dot(&self, i: usize, w: &[f64]) -> f64 {
        const STACK: usize = 16;
        let c = self.coef(i);
        let mut acc = 0.0;
        if c.len() <= STACK {
            // The classes in use scored at once (`ClassRows::row_dots`).
            let mut off = [true; STACK];
            let mut s = [0.0; STACK];
            for (o, &ck) in off.iter_mut().zip(c) {
                *o = ck == 0.0;
            }
            self.rows.row_dots(i, &off[..c.len()], w, &mut s[..c.len()]);
            for (&ck, &sk) in c.iter().zip(&s) {
                if ck != 0.0 {
                    acc += ck * sk;
                }
            }
        } else {
            for (k, &ck) in c.iter().enumerate() {
                if ck != 0.0 {
                    acc += ck * self.rows.row_dot(i, k, w);
                }
            }
        }
        acc
    }

    /// Scores at `w` the truth of block `i`, every class its `c_i` uses and
    /// the given classes (its kept corners); returns `<w, w_i>`. (A corner
    /// whose weight fell to 0 may leave a rounding residue in `c_i` after
    /// the cache evicted it.)
    pub fn score_corners(&mut self, i: usize, kept: impl Iterator<Item = usize>, w: &[f64]) -> f64 {
        let t = self.rows.truth(i);
        let c = &self.coef[i * self.k..(i + 1) * self.k];
        for (k, (&ck, s)) in c.iter().zip(self.scores.iter_mut()).enumerate() {
            if ck != 0.0 || k == t {
                *s = self.rows.row_dot(i, k, w);
            }
        }
        for k in kept {
            if c[k] == 0.0 && k != t {
                self.scores[k] = self.rows.row_dot(i, k, w);
            }
        }
        self.dot_scored(i)
    }

    /// `<w, w_i> = sum_k c_ik s_k` from the scores.
    pub fn dot_scored(&self, i: usize) -> f64 {
        let mut acc = 0.0;
        for (&c, &s) in self.coef(i).iter().zip(&self.scores) {
            if c != 0.0 {
                acc += c * s;
            }
        }
        acc
    }

    /// `<w, psi_i(y)> = s_t - s_y` from the scores (0 for the truth).
    pub fn psi_dot_w(&self, i: usize, y: usize) -> f64 {
        let t = self.rows.truth(i);
        if y == t {
            0.0
        } else {
            self.scores[t] - self.scores[y]
        }
    }

    /// `<w, r_i ⊗ dir> = sum_k dir_k s_k` from the scores.
    pub fn dir_dot_w(&self) -> f64 {
        let mut acc = 0.0;
        for (&d, &s) in self.dir.iter().zip(&self.scores) {
            if d != 0.0 {
                acc += d * s;
            }
        }
        acc
    }

    /// `w_i += gamma r_i ⊗ dir` and `v` with it, class by class.
    pub fn move_along_dir(&mut self, i: usize, gamma: f64, v: &mut [f64]) {
        let c = &mut self.coef[i * self.k..(i + 1) * self.k];
        for (k, (ck, &d)) in c.iter_mut().zip(&self.dir).enumerate() {
            if d != 0.0 {
                let next = *ck + gamma * d;
                let change = next - *ck;
                *ck = next;
                self.rows.add_row(i, k, change, v);
            }
        }
    }

    /// `psi_i(y)` as a sparse vector of dimension `dim` (exports), entry
    /// for entry as the oracle writes it: `+r_i` in the truth's block, `-r_i`
    /// in `y`'s, lower class first.
    pub fn corner_psi(&self, i: usize, y: usize, dim: usize) -> SparseVec {
        let t = self.rows.truth(i);
        let mut psi = SparseVec::default();
        if y == t {
            return psi;
        }
        let block = dim / self.k;
        let (first, second) = if t < y {
            ((t, 1.0), (y, -1.0))
        } else {
            ((y, -1.0), (t, 1.0))
        };
        for (class, sign) in [first, second] {
            self.rows.row_entries(i, &mut |j, x| {
                psi.idx.push((class * block + j) as u32);
                psi.val.push(sign * x);
            });
        }
        psi
    }

    /// `v += a w_i`.
    pub fn add_to(&self, i: usize, a: f64, v: &mut [f64]) {
        for (k, &c) in self.coef(i).iter().enumerate() {
            if c != 0.0 {
                self.rows.add_row(i, k, a * c, v);
            }
        }
    }

    /// `||w_i||^2 = ||r_i||^2 ||c_i||^2`.
    pub fn norm2(&self, i: usize) -> f64 {
        self.rows.row_norm2(i) * self.coef(i).iter().map(|c| c * c).sum::<f64>()
    }

    /// The FW step `w_i <- (1 - gamma) w_i + gamma scale psi_i(y)` for the
    /// corner `(t_i, y)` (`None`: the ground truth), with `v` moved by the
    /// change of `w_i`, class by class where it changes.
    pub fn step_towards(
        &mut self,
        i: usize,
        gamma: f64,
        corner: Option<(usize, usize)>,
        scale: f64,
        v: &mut [f64],
    ) {
        let keep = 1.0 - gamma;
        let c = &mut self.coef[i * self.k..(i + 1) * self.k];
        for (k, ck) in c.iter_mut().enumerate() {
            let mut next = keep * *ck;
            match corner {
                Some((t, _)) if k == t => next += gamma * scale,
                Some((_, y)) if k == y => next -= gamma * scale,
                _ => {}
            }
            let change = next - *ck;
            *ck = next;
            if change != 0.0 {
                self.rows.add_row(i, k, change, v);
            }
        }
    }

    /// `w_i = scale psi_i(y)` for the class `y` (0 for the ground truth).
    pub fn set_corner(&mut self, i: usize, class: usize, scale: f64) {
        let t = self.rows.truth(i);
        let c = self.coef_mut(i);
        c.fill(0.0);
        if class != t {
            c[t] = scale;
            c[class] = -scale;
        }
    }
}

//! Class-factored block iterates: for an oracle whose corners are
//! `psi_i(y) = r_i ⊗ (e_{t_i} - e_y)` ([`crate::oracle::classes`]), every
//! `w_i = (1/(lambda n)) sum_y alpha_i(y) psi_i(y)` is `r_i ⊗ c_i` with
//! `c_i` in `R^K`. Keeping `c_i` costs `K` numbers per example where the
//! general iterate fills up to `K d'`, and every quantity of a FW step
//! comes from the oracle's class scores and `||r_i||^2`.

use std::sync::Arc;

use crate::oracle::ClassRows;

/// The coefficients `c_i` of every block, with the rows they multiply.
pub struct ClassBlocks {
    pub rows: Arc<dyn ClassRows>,
    pub k: usize,
    /// `c_i` at `coef[i K .. (i + 1) K]`.
    coef: Vec<f64>,
    /// The class scores of the last oracle answer (scratch).
    pub scores: Vec<f64>,
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
        }
    }

    pub fn bytes(&self) -> usize {
        (self.coef.capacity() + self.scores.capacity()) * 8
    }

    pub fn coef(&self, i: usize) -> &[f64] {
        &self.coef[i * self.k..(i + 1) * self.k]
    }

    pub fn coef_mut(&mut self, i: usize) -> &mut [f64] {
        &mut self.coef[i * self.k..(i + 1) * self.k]
    }

    /// `<w, w_i> = sum_k c_ik <w_k, r_i>`, over the classes in use.
    pub fn dot(&self, i: usize, w: &[f64]) -> f64 {
        let mut acc = 0.0;
        for (k, &c) in self.coef(i).iter().enumerate() {
            if c != 0.0 {
                acc += c * self.rows.row_dot(i, k, w);
            }
        }
        acc
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

//! The multiclass model seen through its classes, for BCFW's
//! class-factored blocks ([`crate::oracle::classes`]): the oracle call that
//! also returns every class score, the pass of all class scores, and the
//! arithmetic on `(x_i, 1) ⊗ c`.

use std::sync::Arc;

use super::rows::Rows;
use super::{check_example, check_w_len, Multiclass, NAME};
use crate::error::{Error, Result};
use crate::oracle::{ClassAnswer, ClassRows, MaxOracle};

/// A cheap copy of the model (its rows are shared) with the rows' norms,
/// answering [`ClassRows`].
pub(super) struct ClassView {
    model: Multiclass,
    /// `||(x_i, 1)||^2` of every example.
    norms: Arc<Vec<f64>>,
}

impl Multiclass {
    /// The view [`crate::oracle::MaxOracle::factoring`] returns; the norms
    /// are computed on the first call only.
    pub(super) fn class_view(&self) -> ClassView {
        let norms = self.row_norms.get_or_init(|| {
            Arc::new(
                (0..self.x.m())
                    .map(|i| self.x.row_norm2(i))
                    .collect::<Vec<f64>>(),
            )
        });
        ClassView {
            model: self.clone(),
            norms: norms.clone(),
        }
    }
}

impl ClassRows for ClassView {
    /// Every class score, then the answer of
    /// [`crate::oracle::MaxOracle::max_oracle`] from them.
    fn answer(&self, example: usize, w: &[f64], scores: &mut [f64]) -> Result<ClassAnswer> {
        let m = &self.model;
        check_w_len(NAME, w, m.dim())?;
        check_example(NAME, example, m.x.m())?;
        if scores.len() != m.num_classes {
            return Err(Error::dimension_mismatch(format!(
                "{NAME}: {} scores asked for {} classes",
                scores.len(),
                m.num_classes
            )));
        }
        m.x.all_scores(w, example, scores);
        let (class, _) = m.decide(example, |k| scores[k])?;
        let loss = if class == m.labels[example] { 0.0 } else { 1.0 };
        Ok(ClassAnswer { class, loss })
    }
    /// Blocks of examples scored by one product each (`multiclass/pass.rs`).
    fn scores_pass(&self, w: &[f64], out: &mut [f64]) -> Option<Result<()>> {
        Some(self.model.all_class_scores(w, out))
    }
    fn num_classes(&self) -> usize {
        self.model.num_classes
    }
    fn truth(&self, i: usize) -> usize {
        self.model.labels[i]
    }
    fn row_norm2(&self, i: usize) -> f64 {
        self.norms[i]
    }
    fn row_dot(&self, i: usize, k: usize, w: &[f64]) -> f64 {
        self.model.x.class_score(w, k, i)
    }
    fn row_dots(&self, i: usize, off: &[bool], w: &[f64], out: &mut [f64]) {
        self.model.x.scores_of(w, i, off, out);
    }
    /// The example's norm and label; not its row ([`ClassRows::prefetch_row`]).
    fn prefetch(&self, i: usize) {
        crate::linalg::prefetch(std::slice::from_ref(&self.norms[i]));
        crate::linalg::prefetch(std::slice::from_ref(&self.model.labels[i]));
    }
    /// The row's lines into L2 (not L1, where they wait for fill buffers:
    /// at lambda 1e-3 on Fashion-MNIST, 1 thread, that was no faster; into
    /// L2, 3.09-3.24 s against 3.45-3.66 s).
    fn prefetch_row(&self, i: usize) {
        match &*self.model.x {
            Rows::Dense(x) => crate::linalg::prefetch_l2(x.row(i)),
            Rows::Sparse { rows, .. } => {
                let (idx, val) = rows.row(i);
                crate::linalg::prefetch_l2(idx);
                crate::linalg::prefetch_l2(val);
            }
        }
    }
    fn warm(&self, i: usize) -> Option<f64> {
        Some(self.model.x.warm(i))
    }
    fn add_row(&self, i: usize, k: usize, a: f64, v: &mut [f64]) {
        let x = &self.model.x;
        x.add_row_to(v, i, k * x.d_ext(), a);
    }
    /// The 0/1 loss.
    fn class_loss(&self, i: usize, y: usize) -> Option<f64> {
        Some(if y == self.model.labels[i] { 0.0 } else { 1.0 })
    }
    fn row_entries(&self, i: usize, f: &mut dyn FnMut(usize, f64)) {
        // Infallible: `f` returns nothing.
        let _ = self.model.x.try_for_each_entry(i, |j, v| {
            f(j, v);
            Ok(())
        });
    }
}

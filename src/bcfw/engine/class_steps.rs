//! BCFW's block step on class-factored blocks ([`super::super::classes`]).

use super::super::blocks::Atom;
use super::steps::{track_truth, update_weights, CornerRef, StepKind};
use super::{BcfwState, Result};
use crate::oracle::pass::below_truth;
use crate::oracle::sparse::SparseVec;

/// The steps of class-factored blocks: with `w_i = r_i ⊗ c_i` and a corner
/// `psi = r_i ⊗ (e_t - e_y)` (its class `y` alone), `<w, w_i> = sum_k c_k
/// s_k` for the class scores `s_k = <w_k, r_i>`, `<w, psi> = s_t - s_y`,
/// `<psi, w_i> = ||r_i||^2 (c_t - c_y)` and `||psi||^2 = 2 ||r_i||^2`; a
/// direction is `r_i ⊗ dir`. The scores come from the oracle's answer (all
/// K), else from scoring the block's truth and used and kept classes once
/// per step; a step moves `v` only in the classes whose coefficient changes.
impl BcfwState {
    /// `<w, w_i>` at the start of a step on block `i`; with class blocks,
    /// also the scores of its truth and kept classes.
    pub(super) fn step_dot(&mut self, i: usize) -> f64 {
        match self.form.classes_mut() {
            Some(cb) => {
                let kept = self.blocks[i].atoms.iter().map(|a| a.label as usize);
                cb.score_corners(i, kept, point!(self))
            }
            None => self.blocks[i].w.dot_dense(point!(self)),
        }
    }

    /// `<w, w_i>` after the oracle answered block `i` (its scores, on class
    /// blocks).
    pub(super) fn answered_dot(&self, i: usize) -> f64 {
        match self.form.classes() {
            Some(cb) => cb.dot_scored(i),
            None => self.blocks[i].w.dot_dense(point!(self)),
        }
    }

    /// `<w, psi>` of kept corner `k` of block `i`.
    pub(super) fn atom_dot_w(&self, i: usize, k: usize) -> f64 {
        let a = &self.blocks[i].atoms[k];
        match self.form.classes() {
            Some(cb) => cb.psi_dot_w(i, a.label as usize),
            None => a.psi.dot_dense(point!(self)),
        }
    }

    /// The class and loss of a corner of block `i` (`None`: the truth).
    fn corner_class(&self, i: usize, s: CornerRef) -> Option<(usize, f64)> {
        match s {
            CornerRef::Truth => None,
            CornerRef::Atom(k) => {
                let a = &self.blocks[i].atoms[k];
                Some((a.label as usize, a.loss))
            }
            CornerRef::Fresh => Some((self.fresh.class, self.fresh.loss)),
        }
    }

    /// Swaps the direction with the parked one (the best so far).
    pub(super) fn swap_dirs(&mut self) {
        std::mem::swap(&mut self.scratch.dir, &mut self.scratch.dir_parked);
        if let Some(cb) = self.form.classes_mut() {
            std::mem::swap(&mut cb.dir, &mut cb.dir_parked);
        }
    }

    /// The oracle call of a step on class blocks: the answer's class
    /// becomes the fresh corner, a kept corner or the truth.
    pub(super) fn call_class_oracle(&mut self, i: usize) -> Result<(CornerRef, f64)> {
        let (y, loss) = self.class_answer(i)?;
        let cb = self.form.classes().expect("class blocks");
        let h = loss - cb.psi_dot_w(i, y);
        self.fresh.psi.idx.clear();
        self.fresh.psi.val.clear();
        self.adopt_fresh(i, y as u64, loss, h)
    }

    /// The class oracle's answer for block `i` at `w` (all class scores
    /// kept): its class and loss (0 for the truth), checked.
    pub(super) fn class_answer(&mut self, i: usize) -> Result<(usize, f64)> {
        let cb = self.form.classes_mut().expect("class blocks");
        let answer = cb.rows.answer(i, point!(self), &mut cb.scores)?;
        self.count.oracle_calls += 1;
        let mut y = cb.class_of(i, answer.class as u64)?;
        let truth = cb.rows.truth(i);
        let mut loss = if y == truth { 0.0 } else { answer.loss };
        if below_truth(loss, cb.psi_dot_w(i, y), i)? {
            // Below the truth: the answer becomes the truth
            // (`pass::screen_answer`).
            self.count.doubtful += 1;
            (y, loss) = (truth, 0.0);
        }
        self.fresh.class = y;
        Ok((y, loss))
    }

    /// The FW line's corner terms on class blocks: `(loss, scale <w, psi>,
    /// scale^2 ||psi||^2, <psi, w_i>)`.
    pub(super) fn class_fw_terms(
        &self,
        i: usize,
        s: CornerRef,
        scale: f64,
    ) -> (f64, f64, f64, f64) {
        let cb = self.form.classes().expect("class blocks");
        let Some((y, loss)) = self.corner_class(i, s) else {
            return (0.0, 0.0, 0.0, 0.0);
        };
        let r2 = cb.rows.row_norm2(i);
        let c = cb.coef(i);
        let t = cb.rows.truth(i);
        (
            loss,
            scale * cb.psi_dot_w(i, y),
            2.0 * scale * scale * r2,
            r2 * (c[t] - c[y]),
        )
    }

    /// [`Self::apply_fw`] on class blocks.
    pub(super) fn class_apply_fw(&mut self, i: usize, gamma: f64, dl: f64, s: CornerRef) {
        let scale = 1.0 / (self.lambda * self.n as f64);
        let corner = self.corner_class(i, s);
        let cb = self.form.classes_mut().expect("class blocks");
        let t = cb.rows.truth(i);
        cb.step_towards(i, gamma, corner.map(|(y, _)| (t, y)), scale, &mut self.v);
        let b = &mut self.blocks[i];
        b.w_norm2 = cb.norm2(i);
        b.l += gamma * dl;
        self.l += gamma * dl;
        if self.keep_atoms {
            update_weights(b, StepKind::FrankWolfe, gamma, s, CornerRef::Truth);
        } else {
            track_truth(b, gamma, s);
        }
    }

    /// [`Self::direction_to`] on class blocks: `dir` of `r_i ⊗ dir`.
    pub(super) fn class_direction_to(
        &mut self,
        i: usize,
        s: CornerRef,
        a: CornerRef,
        kind: StepKind,
    ) -> (f64, f64) {
        let n = self.n as f64;
        let scale = 1.0 / (self.lambda * n);
        let (sc, ac) = (self.corner_class(i, s), self.corner_class(i, a));
        let b = &self.blocks[i];
        let alpha_a = match a {
            CornerRef::Truth => b.truth_alpha,
            CornerRef::Atom(k) => b.atoms[k].alpha,
            CornerRef::Fresh => 0.0,
        };
        let cb = self.form.classes_mut().expect("class blocks");
        let t = cb.rows.truth(i);
        let (c, dir) = cb.coef_and_dir(i);
        // psi of a corner over scale: e_t - e_y (0 for the truth).
        let add = |dir: &mut [f64], corner: Option<(usize, f64)>, f: f64| {
            if let Some((y, _)) = corner {
                dir[t] += f * scale;
                dir[y] -= f * scale;
            }
        };
        let loss = |corner: Option<(usize, f64)>| corner.map_or(0.0, |(_, l)| l);
        match kind {
            StepKind::FrankWolfe => {
                dir.iter_mut().zip(c).for_each(|(d, &x)| *d = -x);
                add(dir, sc, 1.0);
                (loss(sc) / n - b.l, 1.0)
            }
            StepKind::Pairwise => {
                dir.fill(0.0);
                add(dir, sc, 1.0);
                add(dir, ac, -1.0);
                ((loss(sc) - loss(ac)) / n, alpha_a)
            }
            StepKind::Away => {
                dir.copy_from_slice(c);
                add(dir, ac, -1.0);
                (b.l - loss(ac) / n, alpha_a / (1.0 - alpha_a))
            }
        }
    }

    /// [`Self::line_search`] on class blocks (no box): the exact step along
    /// `r_i ⊗ dir` on `[0, gmax]` and the decrease of `f`.
    pub(super) fn class_line_search(&self, i: usize, dl: f64, gmax: f64) -> (f64, f64) {
        let cb = self.form.classes().expect("class blocks");
        let lambda = self.lambda;
        let w_dot_d = cb.dir_dot_w();
        let d_norm2 = cb.rows.row_norm2(i) * cb.dir.iter().map(|d| d * d).sum::<f64>();
        let slope0 = lambda * w_dot_d - dl;
        if slope0 >= 0.0 || d_norm2 == 0.0 {
            return (0.0, 0.0);
        }
        let gamma = (-slope0 / (lambda * d_norm2)).min(gmax);
        let gain = gamma * dl - lambda * (gamma * w_dot_d + 0.5 * gamma * gamma * d_norm2);
        (gamma, gain)
    }

    /// [`Self::apply`] on class blocks.
    pub(super) fn class_apply(
        &mut self,
        i: usize,
        kind: StepKind,
        gamma: f64,
        dl: f64,
        s: CornerRef,
        a: CornerRef,
    ) {
        let cb = self.form.classes_mut().expect("class blocks");
        cb.move_along_dir(i, gamma, &mut self.v);
        let b = &mut self.blocks[i];
        b.w_norm2 = cb.norm2(i);
        b.l += gamma * dl;
        self.l += gamma * dl;
        update_weights(b, kind, gamma, s, a);
        if kind == StepKind::Away {
            self.rebuild_class_block(i);
        }
    }

    /// [`Self::rebuild_block`] on class blocks: `c_i` from the weights.
    pub(super) fn rebuild_class_block(&mut self, i: usize) {
        let n = self.n as f64;
        let scale = 1.0 / (self.lambda * n);
        let b = &mut self.blocks[i];
        let cb = self.form.classes_mut().expect("class blocks");
        let t = cb.rows.truth(i);
        let (c, dir) = cb.coef_and_dir(i);
        dir.fill(0.0);
        let mut l = 0.0;
        for a in b.atoms.iter().filter(|a| a.alpha > 0.0) {
            dir[t] += scale * a.alpha;
            dir[a.label as usize] -= scale * a.alpha;
            l += a.alpha * a.loss / n;
        }
        // dir = c_new - c_old, then a unit step along it.
        dir.iter_mut().zip(c).for_each(|(d, &x)| *d -= x);
        cb.move_along_dir(i, 1.0, &mut self.v);
        b.w_norm2 = cb.norm2(i);
        self.l += l - b.l;
        b.l = l;
    }

    /// A kept corner for the class of `label` on block `i` (class blocks
    /// keep no psi), or for `psi`.
    pub(super) fn new_atom(
        &self,
        i: usize,
        label: u64,
        psi: SparseVec,
        loss: f64,
        alpha: f64,
    ) -> Result<Atom> {
        let (psi, psi_norm2) = match self.form.classes() {
            Some(cb) => {
                cb.class_of(i, label)?;
                (SparseVec::default(), 2.0 * cb.rows.row_norm2(i))
            }
            None => {
                let norm2 = psi.norm2();
                (psi, norm2)
            }
        };
        Ok(Atom {
            label,
            psi,
            loss,
            psi_norm2,
            alpha,
            last_used: self.count.steps,
            used_pass: self.count.passes,
        })
    }

    /// Whether an answer is block `i`'s ground truth: its class on class
    /// blocks, else loss 0 with psi 0.
    pub(super) fn is_truth(&self, i: usize, label: u64, loss: f64, psi: &SparseVec) -> bool {
        match self.form.classes() {
            Some(cb) => label as usize == cb.rows.truth(i),
            None => psi.nnz() == 0 && loss == 0.0,
        }
    }

    /// Debug builds: class block `i`'s coefficients agree with its weights.
    #[cfg(debug_assertions)]
    pub(super) fn check_class_block(&self, i: usize) {
        let Some(cb) = self.form.classes() else {
            return;
        };
        let scale = 1.0 / (self.lambda * self.n as f64);
        let t = cb.rows.truth(i);
        let mut expect = vec![0.0; cb.k];
        for a in &self.blocks[i].atoms {
            expect[t] += scale * a.alpha;
            expect[a.label as usize] -= scale * a.alpha;
        }
        for (k, (&e, &c)) in expect.iter().zip(cb.coef(i)).enumerate() {
            assert!(
                (e - c).abs() <= 1e-9 * scale,
                "block {i}, class {k}: c {c} vs {e}"
            );
        }
    }
}

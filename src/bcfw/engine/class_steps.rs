//! BCFW's block step on class-factored blocks ([`super::super::classes`]).

use super::steps::{track_truth, CornerRef, FwLine};
use super::{BcfwState, Error, Result};
use crate::oracle::pass::check_not_below_truth;
use crate::oracle::MaxOracle;
use crate::vocab::Settings;

impl BcfwState {
    /// A block step on class-factored blocks ([`super::super::classes`]):
    /// the oracle gives the class scores `s_k = <w_k, r_i>` and its class
    /// `y^`; with `psi = r_i ⊗ (e_t - e_y^)` and `w_i = r_i ⊗ c_i`,
    /// `<w, w_i> = sum_k c_k s_k`, `<w, psi> = s_t - s_y^`,
    /// `<psi, w_i> = ||r_i||^2 (c_t - c_y^)` and `||psi||^2 = 2 ||r_i||^2`,
    /// so the FW step is the one of [`Self::fw_candidate`] and moves `v`
    /// only in the classes whose coefficient changes.
    pub(super) fn class_block_step(
        &mut self,
        oracle: &dyn MaxOracle,
        settings: &Settings,
        i: usize,
    ) -> Result<()> {
        let Some(cb) = self.classes.as_mut() else {
            return self.block_step(oracle, settings, i);
        };
        let Some(answer) = oracle.class_answer(i, point!(self), &mut cb.scores) else {
            return Err(Error::oracle(
                "the max-oracle gives class rows (MaxOracle::class_rows) but no class answers \
                 (MaxOracle::class_answer)",
            ));
        };
        let answer = answer?;
        self.steps += 1;
        self.oracle_calls += 1;
        let n = self.n as f64;
        let lambda = self.lambda;
        let scale = 1.0 / (lambda * n);
        let t = cb.rows.truth(i);
        let y = answer.class;
        if y >= cb.k {
            return Err(Error::oracle(format!(
                "max-oracle for example {i} answered class {y} of {} classes",
                cb.k
            )));
        }
        let s = &cb.scores;
        let c = cb.coef(i);
        let w_dot_wi: f64 = c.iter().zip(s).map(|(c, s)| c * s).sum();
        let r2 = cb.rows.row_norm2(i);
        let truth = y == t;
        // H_i(w) = L - <w, psi>; 0 for the ground truth.
        let (loss, w_dot_psi) = if truth {
            (0.0, 0.0)
        } else {
            (answer.loss, s[t] - s[y])
        };
        let h = loss - w_dot_psi;
        check_not_below_truth(h, loss, w_dot_psi, y as u64, i)?;
        let b = &self.blocks[i];
        let line = FwLine {
            dl: loss / n - b.l,
            scaled_w_dot_psi: scale * w_dot_psi,
            w_dot_wi,
            scaled_psi_norm2: if truth { 0.0 } else { 2.0 * scale * scale * r2 },
            scaled_psi_dot_wi: if truth {
                0.0
            } else {
                scale * r2 * (c[t] - c[y])
            },
            w_norm2: b.w_norm2,
        };
        let g = lambda * w_dot_wi - b.l + h / n;
        self.set_estimate(i, g);
        let fixed = (!settings.line_search).then(|| 2.0 * n / (self.steps as f64 - 1.0 + 2.0 * n));
        let (gamma, _) = line.step(lambda, fixed);
        if gamma > 0.0 {
            let cb = self.classes.as_mut().expect("class-factored blocks");
            let corner = (!truth).then_some((t, y));
            cb.step_towards(i, gamma, corner, scale, &mut self.v);
            let b = &mut self.blocks[i];
            b.w_norm2 = cb.norm2(i);
            b.l += gamma * line.dl;
            self.l += gamma * line.dl;
            track_truth(
                b,
                gamma,
                if truth {
                    CornerRef::Truth
                } else {
                    CornerRef::Fresh
                },
            );
        }
        self.average_step();
        Ok(())
    }
}

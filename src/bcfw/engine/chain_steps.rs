//! BCFW's block step on chain-factored blocks ([`super::super::chains`]):
//! the oracle call returns the emission scores with its labelling, from
//! which the step's dot products come (`FreshDots` as a sparse block's
//! gathers give them), and the FW update moves the per-position
//! coefficients.

use super::steps::{track_truth, CornerRef};
use super::{BcfwState, Error, FreshDots, Result};
use crate::oracle::pass::below_rounding;
use crate::vocab::{Settings, StepType};

/// Whether runs with these settings step on chain blocks: FW steps with
/// no kept corners (no cache, no multi-plane) and one block at a time.
pub(super) fn chain_steps_fit(settings: &Settings) -> bool {
    settings.step_type == StepType::FrankWolfe
        && !settings.use_cache
        && !settings.multi_plane
        && settings.mini_batch == 0
}

impl BcfwState {
    /// The oracle call of a step on chain blocks: the answer becomes the
    /// fresh corner or the truth, with the step's dot products in
    /// `fresh_dots` and `||psi||^2` in `fresh_norm2`.
    pub(super) fn call_chain_oracle(&mut self, i: usize) -> Result<(CornerRef, f64)> {
        let cb = self.form.chains_mut().expect("chain blocks");
        cb.prepare(i);
        let answer = cb
            .rows
            .answer(i, point!(self), &mut cb.scores, &mut cb.labels)
            .map_err(|e| e.context(format!("(example {i})")))?;
        self.count.oracle_calls += 1;
        cb.check_answer(i)?;
        let truth = cb.answered_truth(i);
        let f = cb.fresh_terms(i, point!(self));
        self.fresh.dots = Some(FreshDots {
            block: i,
            w_dot_wi: f.w_dot_wi,
            psi_dot_wi: f.psi_dot_wi,
            psi_within: false,
        });
        let loss = if truth { 0.0 } else { answer.loss };
        let hinge = loss - f.w_dot_psi;
        if !hinge.is_finite() || !f.psi_norm2.is_finite() {
            return Err(Error::non_finite(format!(
                "max-oracle answer for example {i} has H = L - <w, psi> = {hinge} \
                 (loss {loss}, <w, psi> = {}, ||psi||^2 = {})",
                f.w_dot_psi, f.psi_norm2
            )));
        }
        if truth {
            return Ok((CornerRef::Truth, 0.0));
        }
        if hinge < 0.0 && below_rounding(hinge, loss, f.w_dot_psi) {
            // Below the truth: the answer becomes the truth
            // (`pass::screen_answer`).
            self.count.doubtful += 1;
            return Ok((CornerRef::Truth, 0.0));
        }
        self.fresh.loss = loss;
        self.fresh.w_dot_psi = f.w_dot_psi;
        self.fresh.norm2 = f.psi_norm2;
        Ok((CornerRef::Fresh, hinge))
    }

    /// The FW line's corner terms on chain blocks: `(loss, scale <w, psi>,
    /// scale^2 ||psi||^2, <psi, w_i>)`.
    pub(super) fn chain_fw_terms(&self, s: CornerRef, scale: f64) -> (f64, f64, f64, f64) {
        match (s, self.fresh.dots) {
            (CornerRef::Fresh, Some(dots)) => (
                self.fresh.loss,
                scale * self.fresh.w_dot_psi,
                scale * scale * self.fresh.norm2,
                dots.psi_dot_wi,
            ),
            _ => (0.0, 0.0, 0.0, 0.0),
        }
    }

    /// Prefetches the block the sampler will draw next
    /// ([`ChainBlocks::prefetch`]), once this step's gap estimate is set:
    /// then nothing changes the draw before it is made, and the guess is
    /// the block drawn (a pass's last step guesses past an exact pass).
    pub(super) fn prefetch_next_chain_block(&self) {
        if let (Some(cb), Some(j)) = (
            self.form.chains(),
            self.sampling.sampler.peek(&self.sampling.rng),
        ) {
            cb.prefetch(j);
            let b = &self.blocks[j];
            crate::linalg::prefetch_l2(std::slice::from_ref(b));
        }
    }

    /// [`Self::apply_fw`] on chain blocks.
    pub(super) fn chain_apply_fw(
        &mut self,
        i: usize,
        gamma: f64,
        dl: f64,
        s: CornerRef,
        psi_dot_wi: f64,
    ) {
        let scale = 1.0 / (self.lambda * self.n as f64);
        let fresh = s == CornerRef::Fresh;
        let psi_norm2 = if fresh { self.fresh.norm2 } else { 0.0 };
        let cb = self.form.chains_mut().expect("chain blocks");
        cb.step_towards(i, gamma, scale, fresh, &mut self.v);
        let b = &mut self.blocks[i];
        let keep = 1.0 - gamma;
        b.w_norm2 = keep * keep * b.w_norm2
            + 2.0 * gamma * keep * scale * psi_dot_wi
            + gamma * gamma * scale * scale * psi_norm2;
        b.l += gamma * dl;
        self.l += gamma * dl;
        track_truth(b, gamma, s);
    }
}

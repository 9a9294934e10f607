//! The passes that evaluate a point: the exact gap pass at the iterate
//! (every block's gap, the primal value, the certificate) and the primal
//! value at an averaged point.

use rayon::prelude::*;

use super::BcfwState;
use crate::error::{Error, Result};
use crate::oracle::pass::{on_oracle_thread, oracle_pass, PassItem};
use crate::oracle::MaxOracle;

/// The result of an exact pass at the current iterate.
pub struct ExactPass {
    pub primal: f64,
    pub risk: f64,
    pub gap: f64,
}

impl BcfwState {
    /// An exact pass at the current iterate: every block's gap, the primal
    /// value and the total gap. With `refresh` the gap estimates (and the
    /// sampler's weights) are replaced by the exact gaps.
    pub fn exact_pass(
        &mut self,
        oracle: &dyn MaxOracle,
        pool: &rayon::ThreadPool,
        refresh: bool,
    ) -> Result<ExactPass> {
        self.exact_pass_items(oracle, pool, refresh, false)
            .map(|(e, _)| e)
    }

    /// [`Self::exact_pass`]; with `corners` it also returns the oracle's
    /// answers with their psi (else they go to the multi-plane working sets).
    pub(super) fn exact_pass_items(
        &mut self,
        oracle: &dyn MaxOracle,
        pool: &rayon::ThreadPool,
        refresh: bool,
        corners: bool,
    ) -> Result<(ExactPass, Vec<PassItem>)> {
        let context = format!("in the exact gap pass after pass {}", self.count.passes);
        let absorb = refresh && !corners && self.working_set.is_some();
        // Exact steps on an oracle that scores every class at once: the
        // answers from the scores, the shrinking kept where they show it.
        let mut exact = self.form.take_class_exact();
        let scored = match (&mut exact, corners) {
            (Some(ex), false) => self.scored_pass(oracle, pool, ex, refresh),
            _ => None,
        };
        self.form.put_class_exact(exact);
        let shrinking_kept = scored.is_some();
        let (mut items, wi_dots) = match scored {
            Some(done) => done.map_err(|e| e.context(context.clone()))?,
            None => {
                // Class blocks keep only the answers' labels.
                let keep_psi = (absorb && self.form.classes().is_none()) || corners;
                let items = on_oracle_thread(oracle.thread_safe(), pool, || {
                    oracle_pass(oracle, point!(self), keep_psi, &context)
                })?;
                let w = point!(self);
                let wi_dots: Vec<f64> = pool.install(|| {
                    (0..self.n)
                        .into_par_iter()
                        .map(|i| self.block_dot(i, w))
                        .collect()
                });
                (items, wi_dots)
            }
        };
        if refresh {
            self.count.oracle_calls += self.n as u64;
        }
        self.count.doubtful += items.iter().filter(|x| !x.exact).count() as u64;
        let n = self.n as f64;
        let mut risk = 0.0;
        let mut gap = 0.0;
        for (i, (item, wdot)) in items.iter().zip(&wi_dots).enumerate() {
            risk += item.hinge;
            let g = self.lambda * wdot - self.blocks[i].l + item.hinge / n;
            gap += g;
            if refresh {
                self.set_estimate(i, g);
            }
        }
        risk /= n;
        if let Some(keep) = self.working_set.filter(|_| absorb) {
            self.absorb_corners(&mut items, keep)?;
        }
        if refresh {
            // Every block was scored at w: shrunk blocks are visited again,
            // unless the scored pass kept them shrunk from their scores.
            if !shrinking_kept {
                self.unshrink_all();
            }
            self.sampling.sampler.all_visited();
            self.gaps.last_exact = gap;
            self.gaps.sum = gap;
        }
        let primal = 0.5 * self.lambda * crate::linalg::norm2(point!(self)) + risk;
        for (what, x) in [("primal value", primal), ("risk", risk), ("gap", gap)] {
            if !x.is_finite() {
                return Err(Error::non_finite(format!("BCFW's {what} is {x} {context}")));
            }
        }
        // The reported gap is against the certified dual.
        let gap = gap + self.rounding(self.l, &self.v);
        Ok((ExactPass { primal, risk, gap }, items))
    }

    /// The primal value and risk at `point` (not the iterate: an averaged
    /// point), from one pass of class scores when exact steps have them,
    /// else from one oracle pass. Counted as `n` oracle calls.
    pub fn primal_at(
        &mut self,
        oracle: &dyn MaxOracle,
        pool: &rayon::ThreadPool,
        point: &[f64],
    ) -> Result<(f64, f64)> {
        let context = format!(
            "in the pass at the averaged point after pass {}",
            self.count.passes
        );
        let scored = match self.form.class_exact() {
            Some(ex) => self.scored_risk(oracle, pool, ex, point),
            None => None,
        };
        let risk = match scored {
            Some(risk) => risk.map_err(|e| e.context(context))?,
            None => {
                let items = on_oracle_thread(oracle.thread_safe(), pool, || {
                    oracle_pass(oracle, point, false, &context)
                })?;
                self.count.doubtful += items.iter().filter(|x| !x.exact).count() as u64;
                items.iter().map(|x| x.hinge).sum::<f64>() / items.len() as f64
            }
        };
        self.count.oracle_calls += self.n as u64;
        Ok((0.5 * self.lambda * crate::linalg::norm2(point) + risk, risk))
    }
}

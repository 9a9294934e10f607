//! A block's dual state as plain data, to carry BCFW's state across solvers
//! (a warm start from a saved state, as gapBCFW's `cache` input does): the
//! corners other than the ground truth with their weights, and the block's
//! gap estimate. `w_i` and `l_i` are recomputed from the corners at the
//! solver's lambda, so an imported state is always a feasible dual point and
//! its dual value a valid lower bound.

use super::super::blocks::Atom;
use super::super::sparse::BlockVec;
use super::{BcfwState, Error, Result};
use crate::oracle::sparse::SparseVec;

/// One corner `(y, psi_i(y), L_i(y))` with its dual weight `alpha_i(y)`.
#[derive(Debug, Clone, PartialEq)]
pub struct CornerDual {
    /// The label id (the max-oracle's `bmrm_corner_set_label`).
    pub label: u64,
    /// `psi_i(y) = phi(x_i, y_i) - phi(x_i, y)`.
    pub psi: SparseVec,
    /// `L_i(y)`.
    pub loss: f64,
    /// The dual weight `alpha_i(y)`.
    pub alpha: f64,
}

/// Block i's dual: the ground truth holds `1 - sum alpha`.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockDual {
    /// The corners kept other than the ground truth.
    pub corners: Vec<CornerDual>,
    /// The last computed gap of the block (infinity: unknown).
    pub gap_estimate: f64,
}

impl BcfwState {
    /// Block `i`'s corners and weights (None when corners are not kept: FW
    /// steps without a cache).
    pub fn block_dual(&self, i: usize) -> Option<BlockDual> {
        let b = self.blocks.get(i)?;
        if !self.keep_atoms {
            return None;
        }
        Some(BlockDual {
            corners: b
                .atoms
                .iter()
                .map(|a| CornerDual {
                    label: a.label,
                    psi: match self.form.classes() {
                        Some(cb) => cb.corner_psi(i, a.label as usize, self.dim),
                        None => a.psi.clone(),
                    },
                    loss: a.loss,
                    alpha: a.alpha,
                })
                .collect(),
            gap_estimate: b.gap_estimate,
        })
    }

    /// Replaces the dual by `blocks` (one per example): every `w_i`, `l_i`
    /// is recomputed from the corners at the current lambda, so the state is
    /// a feasible dual point whatever the corners came from. Checks weights
    /// (finite, >= 0, summing to at most 1), losses, indices and labels.
    pub fn set_dual(&mut self, blocks: Vec<BlockDual>) -> Result<()> {
        let bad = |m: String| Err(Error::invalid_argument(m));
        if !self.keep_atoms {
            return bad(
                "a BCFW dual state needs the corners kept: use the cache or \
                        pairwise/away steps"
                    .into(),
            );
        }
        if blocks.len() != self.n {
            return bad(format!(
                "{} blocks given for {} examples",
                blocks.len(),
                self.n
            ));
        }
        for (i, b) in blocks.iter().enumerate() {
            let mut total = 0.0;
            for (k, c) in b.corners.iter().enumerate() {
                if !(c.alpha >= 0.0 && c.alpha.is_finite() && c.loss.is_finite()) {
                    return bad(format!(
                        "block {i}, corner {k}: weight {} and loss {} must be finite, weight >= 0",
                        c.alpha, c.loss
                    ));
                }
                if c.psi.idx.len() != c.psi.val.len()
                    || c.psi.idx.windows(2).any(|p| p[0] >= p[1])
                    || c.psi.idx.last().is_some_and(|&j| j as usize >= self.dim)
                    || c.psi.val.iter().any(|x| !x.is_finite())
                {
                    return bad(format!(
                        "block {i}, corner {k}: psi needs increasing indices below {} and finite values",
                        self.dim
                    ));
                }
                if b.corners[..k].iter().any(|o| o.label == c.label) {
                    return bad(format!("block {i}: label id {} appears twice", c.label));
                }
                total += c.alpha;
            }
            if total > 1.0 + 1e-9 {
                return bad(format!("block {i}: the weights sum to {total} > 1"));
            }
            if b.gap_estimate.is_nan() {
                return bad(format!("block {i}: the gap estimate is NaN"));
            }
        }
        let n = self.n as f64;
        let scale = 1.0 / (self.lambda * n);
        // Imported corners are general vectors, whatever the oracle.
        self.form.become_vectors();
        self.v.iter_mut().for_each(|x| *x = 0.0);
        self.l = 0.0;
        self.gaps.sum = 0.0;
        let mut all_known = true;
        let (dim, merged) = (self.dim, &mut self.scratch.merged);
        for (i, (b, d)) in self.blocks.iter_mut().zip(blocks).enumerate() {
            let mut w = BlockVec::default();
            let mut l = 0.0;
            let mut total = 0.0;
            b.atoms.clear();
            for c in d.corners {
                if c.alpha > 0.0 {
                    w.combine(1.0, c.alpha * scale, &c.psi, dim, merged);
                    l += c.alpha * c.loss / n;
                    total += c.alpha;
                }
                b.atoms.push(Atom {
                    label: c.label,
                    psi_norm2: c.psi.norm2(),
                    psi: c.psi,
                    loss: c.loss,
                    alpha: c.alpha,
                    last_used: 0,
                    used_pass: self.count.passes,
                });
            }
            w.add_to(1.0, &mut self.v);
            b.w_norm2 = w.norm2();
            b.w = w;
            b.l = l;
            b.truth_alpha = (1.0 - total).max(0.0);
            self.l += l;
            b.gap_estimate = d.gap_estimate.max(0.0);
            if b.gap_estimate.is_finite() {
                self.gaps.sum += b.gap_estimate;
                self.sampling.sampler.set_gap(i, b.gap_estimate);
            } else {
                all_known = false;
            }
        }
        if all_known {
            self.sampling.sampler.all_visited();
        }
        self.recount_estimated();
        self.refresh_w();
        self.gaps.last_exact = f64::INFINITY;
        // The imported iterate is new: every block is visited again.
        self.unshrink_all();
        self.returned_w = None;
        self.reset_average();
        Ok(())
    }
}

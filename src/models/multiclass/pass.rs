//! The multiclass model's class scores without corners: one example's
//! scores read from its row once (BCFW's exact block steps), and every
//! example's in one pass of block products (BCFW's exact gap passes over
//! exact steps, [`crate::oracle::ClassRows::scores_pass`]).

use rayon::prelude::*;

use super::{check_w_len, Multiclass, Rows, NAME};
use crate::error::{Error, Result};
use crate::oracle::adapters::ORACLE_BLOCK;
use crate::oracle::MaxOracle;

/// Classes scored at once from a stack array (more: one `dot` each).
const STACK_CLASSES: usize = 16;

/// No class left out, for [`Rows::scores_of`] on all classes.
const NONE_OFF: [bool; STACK_CLASSES] = [false; STACK_CLASSES];

impl Rows {
    /// `out[k] = <w_k, (x_i, 1)>` for every class `k` not `off` (0 for
    /// those), each the bits of [`Rows::class_score`]: a dense row is one
    /// product with the class blocks, so it is widened once for all of them.
    pub(super) fn scores_of(&self, w: &[f64], i: usize, off: &[bool], out: &mut [f64]) {
        let (d, dp) = (self.d(), self.d_ext());
        match self {
            Rows::Dense(x) if out.len() <= STACK_CLASSES => {
                let mut blocks: [&[f64]; STACK_CLASSES] = [&[]; STACK_CLASSES];
                let mut which = [0; STACK_CLASSES];
                let mut n = 0;
                for (k, _) in off.iter().enumerate().filter(|(_, &skip)| !skip) {
                    blocks[n] = &w[k * dp..k * dp + d];
                    which[n] = k;
                    n += 1;
                }
                let mut dots = [0.0; STACK_CLASSES];
                crate::linalg::row_dots(&[x.row(i)], &blocks[..n], d, &mut dots[..n]);
                out.fill(0.0);
                for (&k, &s) in which[..n].iter().zip(&dots) {
                    out[k] = if x.bias() { s + w[k * dp + d] } else { s };
                }
            }
            _ => {
                for (k, (o, &skip)) in out.iter_mut().zip(off).enumerate() {
                    *o = if skip { 0.0 } else { self.class_score(w, k, i) };
                }
            }
        }
    }

    /// [`Rows::scores_of`] every class (`out.len()` of them).
    pub(super) fn all_scores(&self, w: &[f64], i: usize, out: &mut [f64]) {
        match NONE_OFF.get(..out.len()) {
            Some(off) => self.scores_of(w, i, off, out),
            None => {
                for (k, o) in out.iter_mut().enumerate() {
                    *o = self.class_score(w, k, i);
                }
            }
        }
    }
}

impl Multiclass {
    /// [`crate::oracle::ClassRows::scores_pass`]: blocks of examples scored by one
    /// product each, in parallel (each block on one thread).
    pub(super) fn all_class_scores(&self, w: &[f64], out: &mut [f64]) -> Result<()> {
        check_w_len(NAME, w, self.dim())?;
        let k = self.num_classes;
        if out.len() != self.x.m() * k {
            return Err(Error::dimension_mismatch(format!(
                "{NAME}: {} scores asked for {} examples of {k} classes",
                out.len(),
                self.x.m()
            )));
        }
        // The class rows packed once for the whole pass, read by every
        // thread (the same bits as packing them per block).
        let packed = self.x.packed_classes(w, k);
        out.par_chunks_mut(ORACLE_BLOCK * k)
            .enumerate()
            .for_each(|(b, scores)| {
                self.x
                    .block_scores(w, b * ORACLE_BLOCK, k, scores, packed.as_ref())
            });
        Ok(())
    }
}

//! The draws of a pass of exact steps, one batch after another, with the
//! next unshrunk block's lines prefetched while a block steps.

use super::{warm, ExactSteps};
use crate::bcfw::engine::{BcfwState, Result};
use crate::oracle::MaxOracle;

impl BcfwState {
    /// The draws of one pass of exact steps (`ex.order` when made `ahead`),
    /// their blocks stepped in batches of `size`, the next block's row
    /// prefetched when `row` (no second thread reads it); `progress` counts
    /// the unshrunk draws made, for [`warm`].
    pub(super) fn exact_steps_draws(
        &mut self,
        oracle: &dyn MaxOracle,
        pool: &rayon::ThreadPool,
        ex: &mut ExactSteps,
        (size, ahead, row): (usize, bool, bool),
        progress: &warm::Progress,
    ) -> Result<()> {
        let mut draws = 0;
        // The position of the next draw not shrunk, scanned once per pass.
        let mut live = 0;
        let mut live_drawn = 0;
        while draws < self.n {
            ex.batch.clear();
            while ex.batch.len() < size && draws < self.n {
                let i = if ahead {
                    let i = ex.order[draws];
                    if !ex.shrunk[i] {
                        live_drawn += 1;
                        progress.reached(live_drawn);
                        live = live.max(draws + 1);
                        while live < self.n && ex.shrunk[ex.order[live]] {
                            live += 1;
                        }
                        if let Some(&next) = ex.order.get(live) {
                            self.prefetch_block(ex, next, row);
                        }
                    }
                    i
                } else {
                    self.sampling.sampler.next(&mut self.sampling.rng)
                };
                draws += 1;
                if !ex.shrunk[i] && !ex.in_batch[i] {
                    ex.in_batch[i] = true;
                    ex.batch.push(i);
                }
            }
            for &i in &ex.batch {
                ex.in_batch[i] = false;
            }
            if !ex.batch.is_empty() {
                self.exact_batch(oracle, pool, ex)?;
            }
        }
        Ok(())
    }

    /// Prefetches block `i`'s state and what `ClassRows::prefetch` names
    /// of its example (the multiclass model: its norm and label), a hint;
    /// its row too when `row` (else the second thread reads it, [`warm`]).
    fn prefetch_block(&self, ex: &ExactSteps, i: usize, row: bool) {
        let cb = self.form.classes().expect("class blocks");
        let k = cb.k;
        cb.rows.prefetch(i);
        if row {
            cb.rows.prefetch_row(i);
        }
        crate::linalg::prefetch(cb.coef(i));
        ex.losses.prefetch(i);
        crate::linalg::prefetch(&ex.class_off[i * k..(i + 1) * k]);
        crate::linalg::prefetch(std::slice::from_ref(&ex.classes_off[i]));
        crate::linalg::prefetch(std::slice::from_ref(&self.blocks[i]));
    }
}

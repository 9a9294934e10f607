//! Mini-batch BCFW (Wang, Sadhanala, Dai, Neiswanger, Sra and Xing,
//! "Parallel and distributed block-coordinate Frank-Wolfe algorithms",
//! ICML 2016): the oracle answers a batch of blocks at the same `w` (in
//! parallel when the oracle is thread-safe), then the block steps are taken
//! one after the other in a fixed order, each with its exact line search at
//! the point the previous steps left. The answers and the order do not
//! depend on the threads, so neither do the results. A batch of all `n`
//! blocks is an exact pass: its answers also give the certificate at `w`.

use rand::seq::SliceRandom;
use rayon::prelude::*;

use super::steps::CornerRef;
use super::{BcfwState, ExactPass, Result};
use crate::oracle::adapters::{call_max_oracle, deadline_passed, past};
use crate::oracle::pass::{on_oracle_thread, screen_answer, PassItem};
use crate::oracle::sparse::{CornerScratch, SparseVec};
use crate::oracle::{Corner, MaxOracle};
use crate::vocab::Settings;

impl BcfwState {
    /// One pass of `n` block steps in batches of `settings.mini_batch`
    /// blocks drawn by the sampler (a batch of `n` or more: every block once
    /// at one `w`, see [`Self::full_batch_pass`]).
    pub fn batch_pass(
        &mut self,
        oracle: &dyn MaxOracle,
        settings: &Settings,
        pool: &rayon::ThreadPool,
    ) -> Result<()> {
        self.begin_pass(settings);
        let size = (settings.mini_batch as usize).clamp(1, self.n);
        let mut done = 0;
        let mut blocks = Vec::with_capacity(size);
        let mut in_batch = vec![false; self.n];
        while done < self.n {
            let take = size.min(self.n - done);
            self.draw_batch(take, &mut blocks, &mut in_batch);
            let items = self.answers(oracle, pool, &blocks)?;
            self.count.doubtful += items.iter().filter(|x| !x.exact).count() as u64;
            self.count.oracle_calls += blocks.len() as u64;
            for (&i, item) in blocks.iter().zip(items) {
                in_batch[i] = false;
                self.answered_step(settings, i, item)?;
            }
            done += blocks.len();
        }
        self.count.passes += 1;
        Ok(())
    }

    /// Draws up to `take` distinct blocks: a block drawn twice would get the
    /// same answer twice (its estimate only changes with its step), so a
    /// drawn block's sampling weight is 0 until its step sets it again, and
    /// repeats (uniform sampling) are drawn again, a bounded number of times.
    fn draw_batch(&mut self, take: usize, blocks: &mut Vec<usize>, in_batch: &mut [bool]) {
        blocks.clear();
        let mut attempts = 0;
        while blocks.len() < take && attempts < 4 * take {
            attempts += 1;
            let i = self.sampling.sampler.next(&mut self.sampling.rng);
            if in_batch[i] {
                continue;
            }
            in_batch[i] = true;
            self.sampling.sampler.set_gap(i, 0.0);
            blocks.push(i);
        }
    }

    /// A batch of all `n` blocks: an exact pass at `w` (its certificate is
    /// returned, with the point it is for), then one step on every block
    /// towards its answer, in a random order.
    pub fn full_batch_pass(
        &mut self,
        oracle: &dyn MaxOracle,
        settings: &Settings,
        pool: &rayon::ThreadPool,
    ) -> Result<(ExactPass, Vec<f64>)> {
        self.begin_pass(settings);
        let at = self.w().to_vec();
        let (exact, items) = self.exact_pass_items(oracle, pool, true, true)?;
        let mut order = std::mem::take(&mut self.scratch.order);
        order.clear();
        order.extend(0..self.n);
        order.shuffle(&mut self.sampling.rng);
        let mut items: Vec<Option<PassItem>> = items.into_iter().map(Some).collect();
        for &i in &order {
            let item = items[i].take().expect("one answer per block");
            self.answered_step(settings, i, item)?;
        }
        self.scratch.order = order;
        self.count.passes += 1;
        Ok((exact, at))
    }

    /// The oracle's answers (with psi) for `blocks` at the current point, in
    /// the order of `blocks`.
    fn answers(
        &self,
        oracle: &dyn MaxOracle,
        pool: &rayon::ThreadPool,
        blocks: &[usize],
    ) -> Result<Vec<PassItem>> {
        let w = self.w();
        let dim = self.dim;
        let deadline = self.deadline;
        let one = |state: &mut (Corner, CornerScratch), i: usize| -> Result<PassItem> {
            if past(deadline) {
                return Err(deadline_passed());
            }
            let (corner, scratch) = state;
            call_max_oracle(oracle, i, w, corner)?;
            let dot = corner.dot(w);
            let (hinge, exact) = screen_answer(corner, dot, i)?;
            let psi = SparseVec::from_corner(corner, scratch);
            super::check_psi_norm(&psi, i)?;
            Ok(PassItem {
                hinge,
                exact,
                loss: corner.loss(),
                label: corner.label(),
                psi: Some(psi),
            })
        };
        let items: Vec<Result<PassItem>> = on_oracle_thread(oracle.thread_safe(), pool, || {
            if oracle.thread_safe() {
                blocks
                    .par_iter()
                    .map_init(
                        || (Corner::new(dim), CornerScratch::default()),
                        |s, &i| one(s, i),
                    )
                    .collect()
            } else {
                let mut state = (Corner::new(dim), CornerScratch::default());
                blocks.iter().map(|&i| one(&mut state, i)).collect()
            }
        });
        items.into_iter().collect()
    }

    /// The block step on `i` towards the corner the oracle gave (possibly at
    /// an earlier point of the batch), judged at the current point.
    fn answered_step(&mut self, settings: &Settings, i: usize, item: PassItem) -> Result<()> {
        self.begin_step();
        let n = self.n as f64;
        let w_dot_wi = self.blocks[i].w.dot_dense(self.w());
        let base = self.lambda * w_dot_wi - self.blocks[i].l;
        self.fresh.psi = item.psi.unwrap_or_default();
        let h = item.loss - self.fresh.psi.dot_dense(self.w());
        let (s, h) = self.adopt_fresh(i, item.label, item.loss, h)?;
        if let CornerRef::Atom(k) = s {
            let a = &mut self.blocks[i].atoms[k];
            a.last_used = self.count.steps;
            a.used_pass = self.count.passes;
        }
        self.set_estimate(i, base + h / n);
        let fixed =
            (!settings.line_search).then(|| 2.0 * n / (self.count.steps as f64 - 1.0 + 2.0 * n));
        self.step_towards(settings, i, s, w_dot_wi, fixed);
        if settings.multi_plane {
            self.approximate_block_steps(settings, i);
        }
        Ok(())
    }
}

//! Exact block steps on class-factored blocks (`StepType::Exact`): each
//! visited block's sub-problem is solved over its whole simplex, as in the
//! sequential dual method of Keerthi, Sundararajan, Chang, Hsieh and Lin
//! ("A sequential dual method for large scale multi-class linear SVMs",
//! KDD 2008), instead of one Frank-Wolfe step towards one corner.
//!
//! Block `i` holds `w_i = r_i ⊗ c_i` with `c_i = (e_t - alpha_i) / (lambda
//! n)` (`alpha_i` on the simplex of the `K` classes, `t` the truth). With
//! the other blocks fixed, the dual `f = lambda/2 ||w||^2 - l` is, up to a
//! constant and the factor `lambda ||r_i||^2 / (lambda n)^2`,
//! `1/2 ||alpha - z||^2` with `z = alpha_old + lambda n (s + L) /
//! ||r_i||^2`, `s_k = <w_k, r_i>` the class scores at the current `w` and
//! `L` the class losses. So the exact step is the Euclidean projection of
//! `z` onto the simplex: a sort of `K` numbers ([`project_simplex`]).
//!
//! Shrinking: a block whose `alpha_i` is its truth and whose every margin
//! holds with room, `s_t - s_y >= L_y + SHRINK_MARGIN` for all `y != t`,
//! would not move; it is skipped until the next exact pass, which scores
//! every block at the current `w` (the certificate) and lets every block be
//! visited again, or, from all class scores at once ([`scored`]), keeps
//! skipped what those scores show inactive. Within a block, single classes
//! are shrunk too
//! ([`active`]): a block with shrunk classes scores only its others
//! (`ClassRows::row_dot`, no oracle call) and steps on the face where the
//! shrunk ones hold no weight. The dual stays a feasible point throughout,
//! so its value is a valid lower bound; the reported gap comes only from
//! exact passes.
//!
//! Mini-batches (`mini_batch = B > 1`): the `B` blocks of a batch are
//! scored and solved at the same `w`, in parallel; their joint direction
//! `D = sum_i r_i ⊗ (c_i^new - c_i)` is feasible on `[0, 1]` (every block
//! moves towards a point of its simplex), and the step along it is the
//! exact line search `t = clip((dl - lambda <v, D>) / (lambda ||D||^2), 0,
//! 1)`, so the dual never gets worse. `D` is summed in the batch's order and
//! each block is scored and solved by one thread: the bits do not depend
//! on the number of threads.

use rayon::prelude::*;

use super::super::classes::ClassBlocks;
use super::{BcfwState, Error, Result};
use crate::oracle::pass::below_truth;
use crate::oracle::{ClassAnswer, MaxOracle};
use crate::vocab::Settings;

/// The room by which every margin of a block at its truth must hold for the
/// block to be skipped until the next exact pass (in units of the loss).
const SHRINK_MARGIN: f64 = 0.0;

/// What exact steps keep between passes.
pub(crate) struct ExactSteps {
    /// Blocks skipped until the next exact pass.
    shrunk: Vec<bool>,
    /// Classes skipped until the next exact pass, `K` per block
    /// ([`active`]), and how many of each block's.
    class_off: Vec<bool>,
    classes_off: Vec<u32>,
    /// The class losses `L_i(y)` of every block.
    losses: ClassLosses,
    /// The pass's draws, when made before its steps.
    order: Vec<usize>,
    /// Those not shrunk at the pass's start, whose rows a second thread
    /// reads ahead of the steps ([`warm`]), when [`warm::WarmChoice`]
    /// picks it.
    live: Vec<usize>,
    /// Whether the rows give a second thread something to read
    /// (`ClassRows::warm`), and whether that thread reads them this pass.
    rows_to_read: bool,
    warm: warm::WarmChoice,
    // Scratch of a batch, reused.
    batch: Vec<usize>,
    in_batch: Vec<bool>,
    scores: Vec<f64>,
    moves: Vec<BlockMove>,
    joint: Vec<f64>,
}

impl ExactSteps {
    /// The state for class blocks `cb` of `n` examples: an error when the
    /// oracle does not give its class losses, or gives one that is not
    /// finite.
    pub(crate) fn of_blocks(cb: &ClassBlocks, n: usize) -> Result<Self> {
        let mut losses = Vec::with_capacity(n * cb.k);
        for i in 0..n {
            for y in 0..cb.k {
                match cb.rows.class_loss(i, y) {
                    Some(l) if l.is_finite() => {
                        losses.push(if y == cb.rows.truth(i) { 0.0 } else { l })
                    }
                    Some(l) => {
                        return Err(Error::non_finite(format!(
                            "the loss of class {y} of example {i} is {l}"
                        )))
                    }
                    None => {
                        return Err(Error::invalid_argument(
                            "step_type Exact needs the class losses of the oracle's rows \
                             (ClassRows::class_loss)",
                        ))
                    }
                }
            }
        }
        let mut ex = Self::new(n, cb.k, losses, |i| cb.rows.truth(i));
        ex.rows_to_read = n > 0 && cb.rows.warm(0).is_some();
        Ok(ex)
    }

    /// The state for `n` blocks of `k` classes with the class losses
    /// `losses` (`k` per block, 0 for the truth), whose truths are `truth`.
    fn new(n: usize, k: usize, losses: Vec<f64>, truth: impl Fn(usize) -> usize) -> Self {
        ExactSteps {
            shrunk: vec![false; n],
            class_off: vec![false; n * k],
            losses: ClassLosses::new(k, losses, truth),
            classes_off: vec![0; n],
            order: Vec::new(),
            live: Vec::new(),
            rows_to_read: false,
            warm: warm::WarmChoice::default(),
            batch: Vec::new(),
            in_batch: vec![false; n],
            scores: Vec::new(),
            moves: Vec::new(),
            joint: Vec::new(),
        }
    }

    /// Every block is visited again (after an exact pass re-checked them all).
    pub(crate) fn unshrink_all(&mut self) {
        self.shrunk.fill(false);
        self.class_off.fill(false);
        self.classes_off.fill(0);
    }

    pub(crate) fn bytes(&self) -> usize {
        self.shrunk.capacity()
            + self.in_batch.capacity()
            + self.class_off.capacity()
            + 4 * self.classes_off.capacity()
            + self.losses.bytes()
            + 8 * (self.order.capacity()
                + self.live.capacity()
                + self.batch.capacity()
                + self.scores.capacity()
                + self.joint.capacity())
            + self.moves.capacity() * std::mem::size_of::<BlockMove>()
            + self
                .moves
                .iter()
                .map(|m| {
                    m.off.capacity()
                        + 8 * (m.dc.capacity()
                            + m.alpha.capacity()
                            + m.before.capacity()
                            + m.act.capacity()
                            + m.z.capacity()
                            + m.sorted.capacity()
                            + m.part.iter().map(Vec::capacity).sum::<usize>())
                })
                .sum::<usize>()
    }
}

/// The class losses `L_i(y)` of every block (0 for the truth). The 0/1
/// loss, the multiclass model's, is kept as one row per truth when those
/// `K x K` are fewer than `K` per block: on Fashion-MNIST they stay in L1,
/// where `K` losses per block (4.8 MB) were two more cold lines to fetch
/// for every drawn block.
enum ClassLosses {
    /// Row `t` of `k x k`: 1, and 0 at `t`.
    ZeroOne { k: usize, rows: Vec<f64> },
    /// `k` per block.
    PerBlock { k: usize, all: Vec<f64> },
}

impl ClassLosses {
    fn new(k: usize, all: Vec<f64>, truth: impl Fn(usize) -> usize) -> Self {
        let zero_one = k * k <= all.len()
            && all.chunks_exact(k.max(1)).enumerate().all(|(i, row)| {
                let t = truth(i);
                row.iter()
                    .enumerate()
                    .all(|(y, &l)| l == if y == t { 0.0 } else { 1.0 })
            });
        if zero_one {
            let rows = (0..k * k)
                .map(|j| if j / k == j % k { 0.0 } else { 1.0 })
                .collect();
            ClassLosses::ZeroOne { k, rows }
        } else {
            ClassLosses::PerBlock { k, all }
        }
    }

    /// Block `i`'s losses; `truth` is its truth.
    #[inline]
    fn of(&self, i: usize, truth: usize) -> &[f64] {
        match self {
            ClassLosses::ZeroOne { k, rows } => &rows[truth * k..(truth + 1) * k],
            ClassLosses::PerBlock { k, all } => &all[i * k..(i + 1) * k],
        }
    }

    /// Prefetches block `i`'s losses when they are its own (a hint).
    fn prefetch(&self, i: usize) {
        if let ClassLosses::PerBlock { k, all } = self {
            crate::linalg::prefetch(&all[i * k..(i + 1) * k]);
        }
    }

    fn bytes(&self) -> usize {
        match self {
            ClassLosses::ZeroOne { rows: v, .. } | ClassLosses::PerBlock { all: v, .. } => {
                8 * v.capacity()
            }
        }
    }
}

/// One block's exact step, computed at the batch's `w`.
#[derive(Default, Clone)]
struct BlockMove {
    /// `c_i^new - c_i`.
    dc: Vec<f64>,
    /// `l_i^new - l_i`.
    dl: f64,
    /// `alpha_i^new(t) - alpha_i(t)`.
    dtruth: f64,
    /// The block gap at the batch's `w` (before the step).
    gap: f64,
    /// The block is at its truth with every margin by `SHRINK_MARGIN`.
    shrink: bool,
    /// The oracle's answer was not trusted (clipped at the truth).
    doubtful: bool,
    /// The block's scores came from an oracle call (no class shrunk).
    called: bool,
    /// The block's classes shrunk after the step.
    off: Vec<bool>,
    // Scratch of the solve: the weights before and after, the active
    // classes and their weights, scores and losses, the point projected,
    // its sort.
    alpha: Vec<f64>,
    before: Vec<f64>,
    act: Vec<usize>,
    part: [Vec<f64>; 3],
    z: Vec<f64>,
    sorted: Vec<f64>,
}

/// The Euclidean projection of `z` onto the simplex `{a >= 0, sum a = 1}`,
/// into `out`: `out = max(z - theta, 0)` with the threshold `theta` from
/// the sorted `z` (`sorted` is scratch).
pub(crate) fn project_simplex(z: &[f64], out: &mut [f64], sorted: &mut Vec<f64>) {
    sorted.clear();
    sorted.extend_from_slice(z);
    sorted.sort_unstable_by(|a, b| b.total_cmp(a));
    let mut cum = 0.0;
    let mut theta = sorted[0] - 1.0;
    for (j, &u) in sorted.iter().enumerate() {
        cum += u;
        let t = (cum - 1.0) / (j + 1) as f64;
        if u - t > 0.0 {
            theta = t;
        }
    }
    for (o, &x) in out.iter_mut().zip(z) {
        *o = (x - theta).max(0.0);
    }
}

/// The minimiser over the simplex of block `i`'s dual with the other
/// blocks fixed: `alpha` holds the block's weights on entry (truth `t`)
/// and the new ones on return. `scores` are `<w_k, r_i>` at the current
/// `w`, `losses` `L_i(k)`, `row_norm2` `||r_i||^2`, `lambda_n` `lambda n`.
/// A zero row leaves `w` unmoved: the mass goes to the largest loss.
#[allow(clippy::too_many_arguments)]
pub(crate) fn solve_block(
    alpha: &mut [f64],
    truth: usize,
    scores: &[f64],
    losses: &[f64],
    row_norm2: f64,
    lambda_n: f64,
    z: &mut Vec<f64>,
    sorted: &mut Vec<f64>,
) {
    if row_norm2 <= 0.0 {
        let mut best = truth;
        for k in 0..alpha.len() {
            if losses[k] + scores[k] > losses[best] + scores[best] {
                best = k;
            }
        }
        alpha.fill(0.0);
        alpha[best] = 1.0;
        return;
    }
    let f = lambda_n / row_norm2;
    z.clear();
    z.extend(
        alpha
            .iter()
            .zip(scores.iter().zip(losses))
            .map(|(&a, (&s, &l))| a + f * (s + l)),
    );
    project_simplex(z, alpha, sorted);
}

/// Whether a block would not move and is skipped until the next exact
/// pass: its `alpha_i` is its truth (`c_i = 0`) and every margin of its
/// classes not `off` holds, `L_m + s_m - s_t < -SHRINK_MARGIN`.
fn block_shrinks(coef: &[f64], truth: usize, scores: &[f64], losses: &[f64], off: &[bool]) -> bool {
    coef.iter().all(|&c| c == 0.0)
        && (0..coef.len())
            .filter(|&m| m != truth && !off[m])
            .all(|m| losses[m] + scores[m] - scores[truth] < -SHRINK_MARGIN)
}

/// `alpha_i` from `c_i` into `alpha`: `alpha_k = -lambda n c_k` off the
/// truth (at least 0), the rest of the simplex's mass on the truth.
pub(super) fn alpha_of(coef: &[f64], truth: usize, lambda_n: f64, alpha: &mut Vec<f64>) {
    alpha.clear();
    alpha.resize(coef.len(), 0.0);
    let mut off = 0.0;
    for m in 0..coef.len() {
        if m != truth {
            alpha[m] = (-lambda_n * coef[m]).max(0.0);
            off += alpha[m];
        }
    }
    alpha[truth] = (1.0 - off).max(0.0);
}

/// Block `i`'s exact step from its scores at the batch's `w`: `coef` is
/// `c_i`, `l` its `l_i`, `(y, loss)` the oracle's answer.
#[allow(clippy::too_many_arguments)]
fn block_move(
    out: &mut BlockMove,
    coef: &[f64],
    l: f64,
    truth: usize,
    scores: &[f64],
    losses: &[f64],
    off_in: &[bool],
    row_norm2: f64,
    lambda: f64,
    n: usize,
    answer: (usize, f64),
) {
    let k = coef.len();
    let lambda_n = lambda * n as f64;
    let (y, loss) = answer;
    // H_i at the answer and the block gap at w.
    let psi_dot_w = if y == truth {
        0.0
    } else {
        scores[truth] - scores[y]
    };
    let h = loss - psi_dot_w;
    let w_dot_wi: f64 = coef.iter().zip(scores).map(|(c, s)| c * s).sum();
    out.gap = lambda * w_dot_wi - l + h / n as f64;
    out.shrink = block_shrinks(coef, truth, scores, losses, off_in);
    out.dc.clear();
    out.dc.resize(k, 0.0);
    if out.shrink {
        out.off.clear();
        out.off.extend_from_slice(off_in);
        out.dl = 0.0;
        out.dtruth = 0.0;
        return;
    }
    let mut alpha = std::mem::take(&mut out.alpha);
    alpha_of(coef, truth, lambda_n, &mut alpha);
    let old_truth = alpha[truth];
    out.before.clear();
    out.before.extend_from_slice(&alpha);
    out.act.clear();
    out.act.extend((0..k).filter(|&m| !off_in[m]));
    if out.act.len() == k {
        solve_block(
            &mut alpha,
            truth,
            scores,
            losses,
            row_norm2,
            lambda_n,
            &mut out.z,
            &mut out.sorted,
        );
    } else {
        // The sub-problem on the face of the active classes (the shrunk
        // ones hold 0 and keep it).
        let [a, s, ls] = &mut out.part;
        a.clear();
        s.clear();
        ls.clear();
        for &m in &out.act {
            a.push(alpha[m]);
            s.push(scores[m]);
            ls.push(losses[m]);
        }
        let t = out
            .act
            .iter()
            .position(|&m| m == truth)
            .expect("the truth is active");
        solve_block(
            a,
            t,
            s,
            ls,
            row_norm2,
            lambda_n,
            &mut out.z,
            &mut out.sorted,
        );
        for (&m, &x) in out.act.iter().zip(a.iter()) {
            alpha[m] = x;
        }
    }
    active::classes_to_shrink(
        off_in,
        truth,
        &out.before,
        &alpha,
        scores,
        losses,
        &mut out.off,
    );
    let mut new_l = 0.0;
    let mut off = 0.0;
    for m in 0..k {
        if m != truth {
            out.dc[m] = -alpha[m] / lambda_n - coef[m];
            off += alpha[m];
            new_l += alpha[m] * losses[m];
        }
    }
    out.dc[truth] = off / lambda_n - coef[truth];
    out.dl = new_l / n as f64 - l;
    out.dtruth = alpha[truth] - old_truth;
    out.alpha = alpha;
}

impl BcfwState {
    /// One pass of exact block steps: `n` draws of the sampler, shrunk
    /// blocks skipped, in batches of `mini_batch` (one block at a time for
    /// 0 or 1). Without class blocks, the steps over kept corners
    /// (`kept_exact.rs`).
    pub fn exact_steps_pass(
        &mut self,
        oracle: &dyn MaxOracle,
        settings: &Settings,
        pool: &rayon::ThreadPool,
    ) -> Result<()> {
        self.form.bind(oracle);
        let Some(mut ex) = self.form.take_class_exact() else {
            return self.kept_exact_pass(oracle, settings);
        };
        self.begin_pass(settings);
        let size = (settings.mini_batch as usize).clamp(1, self.n);
        // One block at a time, with draws that do not depend on the steps:
        // the pass's draws first, so that the next block's lines are
        // fetched while this one steps (the blocks are cold: drawn at
        // random from data larger than the caches).
        let ahead = size == 1 && self.sampling.sampler.draws_ahead();
        ex.order.clear();
        if ahead {
            ex.order
                .extend((0..self.n).map(|_| self.sampling.sampler.next(&mut self.sampling.rng)));
        }
        // With a second thread, it reads the rows of the pass's coming
        // blocks while this one steps ([`warm`]), or the steps ask for the
        // next block's row themselves.
        let rows = self.form.classes().map(|cb| cb.rows.clone());
        let can_warm = ahead && ex.rows_to_read && pool.current_num_threads() > 1;
        let warm = can_warm && ex.warm.pick();
        ex.live.clear();
        if warm {
            ex.live
                .extend(ex.order.iter().copied().filter(|&i| !ex.shrunk[i]));
        }
        let live_blocks = std::mem::take(&mut ex.live);
        let (started, steps_before) = (std::time::Instant::now(), self.count.steps);
        let result = warm::with_rows_ahead(pool, rows.as_deref(), &live_blocks, |progress| {
            self.exact_steps_draws(oracle, pool, &mut ex, (size, ahead, !warm), progress)
        });
        if can_warm {
            ex.warm
                .record(warm, started.elapsed(), self.count.steps - steps_before);
        }
        ex.live = live_blocks;
        self.form.put_class_exact(Some(ex));
        result.map_err(|e: Error| {
            e.context(format!(
                "at BCFW pass {} (block step {})",
                self.count.passes + 1,
                self.count.steps
            ))
        })?;
        self.count.passes += 1;
        Ok(())
    }

    /// The exact steps of the blocks of `ex.batch`, scored at one `w`.
    fn exact_batch(
        &mut self,
        oracle: &dyn MaxOracle,
        pool: &rayon::ThreadPool,
        ex: &mut ExactSteps,
    ) -> Result<()> {
        let cb = self.form.classes().expect("class blocks");
        let k = cb.k;
        let b = ex.batch.len();
        ex.scores.resize(b * k, 0.0);
        if ex.moves.len() < b {
            ex.moves.resize(b, BlockMove::default());
        }
        let (lambda, n) = (self.lambda, self.n);
        let w = point!(self);
        let blocks = &self.blocks;
        let (losses, class_off, classes_off) = (&ex.losses, &ex.class_off, &ex.classes_off);
        let one = |i: usize, scores: &mut [f64], out: &mut BlockMove| -> Result<()> {
            let truth = cb.rows.truth(i);
            let losses = losses.of(i, truth);
            let off = &class_off[i * k..(i + 1) * k];
            out.called = classes_off[i] == 0;
            let (y, loss) = if out.called {
                let answer = cb.rows.answer(i, w, scores)?;
                let (y, loss, doubtful) = screen(cb, i, answer, scores, truth)?;
                out.doubtful = doubtful;
                (y, loss)
            } else {
                out.doubtful = false;
                active::score_active(cb.rows.as_ref(), i, w, off, losses, scores)?
            };
            block_move(
                out,
                cb.coef(i),
                blocks[i].l,
                truth,
                scores,
                losses,
                off,
                cb.rows.row_norm2(i),
                lambda,
                n,
                (y, loss),
            );
            Ok(())
        };
        let work = ex
            .batch
            .iter()
            .zip(ex.scores.chunks_exact_mut(k))
            .zip(ex.moves.iter_mut());
        if b > 1 && oracle.thread_safe() {
            let items: Vec<_> = work.collect();
            pool.install(|| {
                items
                    .into_par_iter()
                    .map(|((&i, s), m)| one(i, s, m))
                    .collect::<Result<Vec<()>>>()
            })?;
        } else {
            for ((&i, s), m) in work {
                one(i, s, m)?;
            }
        }
        for (j, &i) in ex.batch.iter().enumerate() {
            let m = &ex.moves[j];
            self.count.oracle_calls += u64::from(m.called);
            self.count.steps += 1;
            self.count.doubtful += u64::from(m.doubtful);
            self.set_estimate(i, m.gap);
            ex.shrunk[i] = m.shrink;
            ex.class_off[i * k..(i + 1) * k].copy_from_slice(&m.off);
            ex.classes_off[i] = m.off.iter().filter(|&&o| o).count() as u32;
        }
        let t = if b == 1 { 1.0 } else { self.joint_step(ex) };
        if t > 0.0 {
            for (j, &i) in ex.batch.iter().enumerate() {
                self.apply_move(i, &ex.moves[j], t, b == 1);
            }
            if b > 1 {
                for (x, d) in self.v.iter_mut().zip(&ex.joint) {
                    *x += t * d;
                }
            }
        }
        for _ in 0..b {
            self.average_step();
        }
        Ok(())
    }

    /// The batch's joint direction `D` (into `ex.joint`) and the exact step
    /// along it on `[0, 1]`.
    fn joint_step(&mut self, ex: &mut ExactSteps) -> f64 {
        let cb = self.form.classes().expect("class blocks");
        ex.joint.clear();
        ex.joint.resize(self.dim, 0.0);
        let mut dl = 0.0;
        for (j, &i) in ex.batch.iter().enumerate() {
            let m = &ex.moves[j];
            dl += m.dl;
            for (k, &d) in m.dc.iter().enumerate() {
                if d != 0.0 {
                    cb.rows.add_row(i, k, d, &mut ex.joint);
                }
            }
        }
        let v_dot_d = crate::linalg::dot(&self.v, &ex.joint);
        let d_norm2 = crate::linalg::norm2(&ex.joint);
        let slope0 = self.lambda * v_dot_d - dl;
        if slope0 >= 0.0 {
            return 0.0;
        }
        if d_norm2 > 0.0 {
            (-slope0 / (self.lambda * d_norm2)).min(1.0)
        } else {
            1.0
        }
    }

    /// Moves block `i` by `t` times its exact step; `v` too when `own_v`
    /// (else the batch's joint direction moves it).
    fn apply_move(&mut self, i: usize, m: &BlockMove, t: f64, own_v: bool) {
        let cb = self.form.classes_mut().expect("class blocks");
        if own_v {
            cb.dir.copy_from_slice(&m.dc);
            cb.move_along_dir(i, t, &mut self.v);
        } else {
            for (c, &d) in cb.coef_mut(i).iter_mut().zip(&m.dc) {
                *c += t * d;
            }
        }
        let blk = &mut self.blocks[i];
        blk.w_norm2 = cb.norm2(i);
        blk.l += t * m.dl;
        self.l += t * m.dl;
        blk.truth_alpha = (blk.truth_alpha + t * m.dtruth).clamp(0.0, 1.0);
    }
}

/// The answer's class and loss, checked as every oracle answer is: an
/// answer below the truth by more than rounding becomes the truth and is
/// not trusted (`pass::screen_answer`).
fn screen(
    cb: &ClassBlocks,
    i: usize,
    answer: ClassAnswer,
    scores: &[f64],
    truth: usize,
) -> Result<(usize, f64, bool)> {
    let y = cb.class_of(i, answer.class as u64)?;
    let loss = if y == truth { 0.0 } else { answer.loss };
    let dot = if y == truth {
        0.0
    } else {
        scores[truth] - scores[y]
    };
    if below_truth(loss, dot, i)? {
        return Ok((truth, 0.0, true));
    }
    Ok((y, loss, false))
}

mod active;
mod draws;
mod scored;
#[cfg(test)]
mod tests;
mod warm;

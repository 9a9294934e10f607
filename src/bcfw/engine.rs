//! The BCFW state and its block steps (docs/bcfw.md).
//!
//! Dual (minimised): `f = lambda/2 (||v||^2 - ||v - clip(v)||^2) - l`, with
//! `v = sum_i w_i`, `l = sum_i l_i` and the primal point `w = clip(v)` (the
//! identity without box constraints). Its negation is a lower bound on the
//! primal optimum, and `primal(w) + f = sum_i g_i`, the sum of block gaps.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use super::blocks::{Atom, Block};
use super::bounds::Bounds;
use super::pass::{check_not_below_truth, on_oracle_thread, oracle_pass};
use super::sampler::Sampler;
use super::sparse::{merge, BlockVec, SparseVec};
use super::BcfwStats;
use crate::error::{Error, Result};
use crate::oracle::adapters::call_max_oracle;
use crate::oracle::{Corner, MaxOracle};
use crate::solver::{Iteration, Settings, StepType};

/// The primal point: `clip(v)` under a box, else `v` itself (then `w` is
/// not stored: every step would write both).
macro_rules! point {
    ($s:expr) => {
        if $s.bounds.is_some() {
            &$s.w[..]
        } else {
            &$s.v[..]
        }
    };
}

/// A corner of one block: the ground truth, a kept atom, or the oracle's
/// fresh answer (when atoms are not kept).
#[derive(Debug, Clone, Copy, PartialEq)]
enum CornerRef {
    Truth,
    Atom(usize),
    Fresh,
}

/// The candidate steps on a block.
#[derive(Debug, Clone, Copy, PartialEq)]
enum StepKind {
    FrankWolfe,
    Pairwise,
    Away,
}

/// The result of an exact pass at the current iterate.
pub struct ExactPass {
    pub primal: f64,
    pub risk: f64,
    pub gap: f64,
}

/// Everything BCFW keeps between block steps and between runs.
pub struct BcfwState {
    n: usize,
    dim: usize,
    lambda: f64,
    pub(super) blocks: Vec<Block>,
    /// `v = sum_i w_i`.
    v: Vec<f64>,
    /// The primal point `clip(v)` under a box (empty without one).
    w: Vec<f64>,
    /// `l = sum_i l_i`.
    l: f64,
    bounds: Option<Bounds>,
    /// Whether corners and their weights are kept (pairwise/away steps or the cache).
    keep_atoms: bool,
    /// Weighted averages of `v` and `l` (option).
    vbar: Option<Vec<f64>>,
    lbar: f64,
    avg_steps: u64,
    /// Block steps so far (for the step 2n/(k + 2n) and the eviction score).
    steps: u64,
    /// The last exact total gap (infinity before the first exact pass).
    last_exact_gap: f64,
    /// The sum of the finite block-gap estimates.
    estimate_sum: f64,
    rng: ChaCha8Rng,
    sampler: Sampler,
    pub(super) passes: u64,
    pub(super) oracle_calls: u64,
    pub(super) cache_hits: u64,
    /// Seconds inside oracle calls (block steps and exact passes).
    pub(super) oracle_seconds: f64,
    /// The `w` the last run returned (a later run must start from it).
    pub(crate) returned_w: Option<Vec<f64>>,
    // Scratch, reused so block steps do not allocate.
    corner: Corner,
    pairs: Vec<(u32, f64)>,
    dir: SparseVec,
    dir_parked: SparseVec,
    /// psi of the oracle's last answer when atoms are not kept.
    fresh_psi: SparseVec,
    fresh_norm2: f64,
    merged: SparseVec,
}

impl BcfwState {
    /// The start `alpha_i = delta(y_i)`: `w = clip(0)`, `l = 0`.
    pub fn new(
        oracle: &dyn MaxOracle,
        settings: &Settings,
        bounds: Option<Bounds>,
    ) -> Result<Self> {
        let n = oracle.num_examples();
        let dim = oracle.dim();
        if dim > u32::MAX as usize {
            return Err(Error::invalid_argument(format!(
                "BCFW supports dimensions up to 2^32 - 1, got {dim}"
            )));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(settings.seed);
        let sampler = Sampler::new(settings.sampling, n, &mut rng).with_degree(settings.gap_degree);
        let v = vec![0.0; dim];
        let w = match &bounds {
            Some(b) => b.clip_all(&v),
            None => Vec::new(),
        };
        Ok(BcfwState {
            n,
            dim,
            lambda: settings.lambda,
            blocks: (0..n).map(|_| Block::new()).collect(),
            v,
            w,
            l: 0.0,
            bounds,
            keep_atoms: settings.use_cache || settings.step_type != StepType::FrankWolfe,
            vbar: None,
            lbar: 0.0,
            avg_steps: 0,
            steps: 0,
            last_exact_gap: f64::INFINITY,
            estimate_sum: 0.0,
            rng,
            sampler,
            passes: 0,
            oracle_calls: 0,
            cache_hits: 0,
            oracle_seconds: 0.0,
            returned_w: None,
            corner: Corner::new(dim),
            pairs: Vec::new(),
            dir: SparseVec::default(),
            dir_parked: SparseVec::default(),
            fresh_psi: SparseVec::default(),
            fresh_norm2: 0.0,
            merged: SparseVec::default(),
        })
    }

    pub fn lambda(&self) -> f64 {
        self.lambda
    }
    pub fn w(&self) -> &[f64] {
        point!(self)
    }

    /// The start of the regularisation path: `alpha_i = delta(y^_i)` for the
    /// corners `(psi_i, L_i)` the oracle gave at `w = 0`, at this lambda.
    pub fn set_corners(&mut self, corners: Vec<(u64, SparseVec, f64)>) {
        let scale = 1.0 / (self.lambda * self.n as f64);
        self.v.iter_mut().for_each(|x| *x = 0.0);
        self.l = 0.0;
        for (b, (label, psi, loss)) in self.blocks.iter_mut().zip(corners) {
            let mut w = BlockVec::default();
            w.combine(0.0, scale, &psi, self.dim, &mut self.merged);
            w.add_to(1.0, &mut self.v);
            b.w_norm2 = w.norm2();
            b.w = w;
            b.l = loss / self.n as f64;
            self.l += b.l;
            b.atoms.clear();
            if psi.nnz() == 0 && loss == 0.0 {
                b.truth_alpha = 1.0;
            } else {
                b.truth_alpha = 0.0;
                if self.keep_atoms {
                    b.atoms.push(Atom {
                        label,
                        psi_norm2: psi.norm2(),
                        psi,
                        loss,
                        alpha: 1.0,
                        last_used: 0,
                    });
                }
            }
        }
        self.refresh_w();
        self.reset_average();
    }

    /// Moves to a new lambda. The dual weights `alpha_i(y != y_i)` and `l_i`
    /// scale by `c_i` and the ground truth takes the rest. `c_i = rho =
    /// lambda_new / lambda_old` keeps `w_i` and `w` (the regularisation
    /// path's warm start); it is feasible while `rho (1 - alpha_i(y_i)) <= 1`,
    /// always when lambda decreases. When lambda grows past that, `c_i =
    /// 1 / (1 - alpha_i(y_i))` (the truth's weight becomes 0) is the largest
    /// feasible scale and `w_i` shrinks by `c_i / rho`: an infeasible `alpha`
    /// would give a dual value above the optimum, a false certificate.
    pub fn set_lambda(&mut self, lambda: f64) {
        let rho = lambda / self.lambda;
        let mut shrunk = false;
        for (i, b) in self.blocks.iter_mut().enumerate() {
            let mass = 1.0 - b.truth_alpha;
            let c = if rho * mass <= 1.0 { rho } else { 1.0 / mass };
            // The block gap moves by (1 - c)(l_i - lambda <w_i, w>) at a fixed
            // w: exact when every block keeps its w_i, an estimate otherwise.
            if b.gap_estimate.is_finite() {
                let u = b.l - self.lambda * b.w.dot_dense(point!(self));
                b.gap_estimate += (1.0 - c) * u;
                self.estimate_sum += (1.0 - c) * u;
                self.sampler.set_gap(i, b.gap_estimate);
            }
            b.l *= c;
            for a in &mut b.atoms {
                a.alpha *= c;
            }
            if c == rho {
                b.truth_alpha = 1.0 - rho * mass;
            } else {
                b.truth_alpha = 0.0;
                let f = c / rho;
                b.w.add_to(f - 1.0, &mut self.v);
                b.w.scale(f);
                b.w_norm2 *= f * f;
                shrunk = true;
            }
        }
        if shrunk {
            self.l = self.blocks.iter().map(|b| b.l).sum();
            self.refresh_w();
        } else {
            self.l *= rho;
        }
        self.lambda = lambda;
        self.last_exact_gap = f64::INFINITY;
        self.reset_average();
    }

    fn reset_average(&mut self) {
        if self.vbar.is_some() {
            self.vbar = Some(self.v.clone());
            self.lbar = self.l;
            self.avg_steps = 0;
        }
    }

    fn refresh_w(&mut self) {
        if let Some(b) = &self.bounds {
            self.w = b.clip_all(&self.v);
        }
    }

    /// `-f`: the dual value, a lower bound on the primal optimum.
    pub fn dual(&self) -> f64 {
        dual_value(self.lambda, &self.v, self.bounds.as_ref(), self.l)
    }

    /// The dual value of the averaged weights, when averaging is on.
    pub fn dual_of_average(&self) -> Option<f64> {
        self.vbar
            .as_ref()
            .map(|vb| dual_value(self.lambda, vb, self.bounds.as_ref(), self.lbar))
    }

    /// Calls `f(w, ell, dual, averaged)` with the iterate the BCFW codes
    /// return: the averaged point under weighted averaging, else the last.
    pub fn with_iterate<R>(&self, f: impl FnOnce(&[f64], f64, f64, bool) -> R) -> R {
        match (self.average_point(), self.dual_of_average()) {
            (Some(avg), Some(dual)) => f(&avg, self.lbar, dual, true),
            _ => f(point!(self), self.l, self.dual(), false),
        }
    }

    /// Block `i`'s corners and weights (None when corners are not kept: FW
    /// steps without a cache).
    pub fn block_dual(&self, i: usize) -> Option<super::BlockDual> {
        let b = self.blocks.get(i)?;
        if !self.keep_atoms {
            return None;
        }
        Some(super::BlockDual {
            corners: b
                .atoms
                .iter()
                .map(|a| super::CornerDual {
                    label: a.label,
                    psi: a.psi.clone(),
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
    pub fn set_dual(&mut self, blocks: Vec<super::BlockDual>) -> Result<()> {
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
        self.v.iter_mut().for_each(|x| *x = 0.0);
        self.l = 0.0;
        self.estimate_sum = 0.0;
        let mut all_known = true;
        for (i, (b, d)) in self.blocks.iter_mut().zip(blocks).enumerate() {
            let mut w = BlockVec::default();
            let mut l = 0.0;
            let mut total = 0.0;
            b.atoms.clear();
            for c in d.corners {
                if c.alpha > 0.0 {
                    w.combine(1.0, c.alpha * scale, &c.psi, self.dim, &mut self.merged);
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
                self.estimate_sum += b.gap_estimate;
                self.sampler.set_gap(i, b.gap_estimate);
            } else {
                all_known = false;
            }
        }
        if all_known {
            self.sampler.all_visited();
        }
        self.refresh_w();
        self.last_exact_gap = f64::INFINITY;
        self.returned_w = None;
        self.reset_average();
        Ok(())
    }

    /// Every block's gap estimate is known (finite).
    pub fn all_estimated(&self) -> bool {
        self.blocks.iter().all(|b| b.gap_estimate.is_finite())
    }

    /// The averaged primal point `clip(vbar)`, when averaging is on.
    pub fn average_point(&self) -> Option<Vec<f64>> {
        self.vbar.as_ref().map(|vb| match &self.bounds {
            Some(b) => b.clip_all(vb),
            None => vb.clone(),
        })
    }

    /// The sum of the finite block-gap estimates (kept as a running sum,
    /// recomputed at every exact pass).
    pub fn gap_estimate(&self) -> f64 {
        self.estimate_sum
    }

    fn set_estimate(&mut self, i: usize, g: f64) {
        let old = self.blocks[i].gap_estimate;
        if old.is_finite() {
            self.estimate_sum -= old;
        }
        if g.is_finite() {
            self.estimate_sum += g;
        }
        self.blocks[i].gap_estimate = g;
        self.sampler.set_gap(i, g);
    }

    pub fn stats(&self) -> BcfwStats {
        let memory = self.blocks.iter().map(Block::bytes).sum::<usize>()
            + (self.v.capacity() + self.w.capacity()) * 8
            + self.vbar.as_ref().map_or(0, |v| v.capacity() * 8);
        BcfwStats {
            passes: self.passes,
            effective_passes: self.oracle_calls as f64 / self.n as f64,
            oracle_calls: self.oracle_calls,
            cache_hits: self.cache_hits,
            ell: self.l,
            dual: self.dual(),
            gap_estimate: self.gap_estimate(),
            last_exact_gap: self.last_exact_gap,
            corners: self.blocks.iter().map(|b| b.atoms.len() as u64).sum(),
            active_corners: self.blocks.iter().map(|b| b.active_atoms() as u64).sum(),
            dense_blocks: self.blocks.iter().filter(|b| b.w.is_dense()).count() as u64,
            memory_bytes: memory as u64,
        }
    }

    /// An exact pass at the current iterate: every block's gap, the primal
    /// value and the total gap. With `refresh` the gap estimates (and the
    /// sampler's weights) are replaced by the exact gaps.
    pub fn exact_pass(
        &mut self,
        oracle: &dyn MaxOracle,
        pool: &rayon::ThreadPool,
        refresh: bool,
    ) -> Result<ExactPass> {
        let context = format!("in the exact gap pass after pass {}", self.passes);
        let t = std::time::Instant::now();
        let items = on_oracle_thread(oracle.thread_safe(), pool, || {
            oracle_pass(oracle, point!(self), false, &context)
        })?;
        self.oracle_seconds += t.elapsed().as_secs_f64();
        if refresh {
            self.oracle_calls += self.n as u64;
        }
        let w = point!(self);
        let wi_dots: Vec<f64> =
            pool.install(|| self.blocks.par_iter().map(|b| b.w.dot_dense(w)).collect());
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
        if refresh {
            self.sampler.all_visited();
            self.last_exact_gap = gap;
            self.estimate_sum = gap;
        }
        let primal = 0.5 * self.lambda * crate::linalg::norm2(point!(self)) + risk;
        Ok(ExactPass { primal, risk, gap })
    }

    /// One pass: `n` block steps.
    pub fn pass(&mut self, oracle: &dyn MaxOracle, settings: &Settings) -> Result<()> {
        if settings.weighted_averaging && self.vbar.is_none() {
            self.vbar = Some(self.v.clone());
            self.lbar = self.l;
            self.avg_steps = 0;
        }
        for _ in 0..self.n {
            let i = self.sampler.next(&mut self.rng);
            self.block_step(oracle, settings, i).map_err(|e| {
                e.context(format!(
                    "at BCFW pass {} (block step {})",
                    self.passes + 1,
                    self.steps + 1
                ))
            })?;
        }
        self.passes += 1;
        Ok(())
    }

    fn block_step(&mut self, oracle: &dyn MaxOracle, settings: &Settings, i: usize) -> Result<()> {
        self.steps += 1;
        let n = self.n as f64;
        let lambda = self.lambda;
        let w_dot_wi = self.blocks[i].w.dot_dense(point!(self));
        let base = lambda * w_dot_wi - self.blocks[i].l;

        // The FW corner: the cache's best corner on a hit, else the oracle's.
        let mut fw = None;
        if settings.use_cache && self.blocks[i].gap_estimate.is_finite() {
            let (c, h) = self.best_cached(i);
            let g = base + h / n;
            let global = if self.last_exact_gap.is_finite() {
                self.last_exact_gap
            } else {
                self.gap_estimate()
            };
            let need = (settings.cache_factor * self.blocks[i].gap_estimate)
                .max(settings.cache_nu * global / n);
            if g >= need && g > 0.0 {
                self.cache_hits += 1;
                fw = Some((c, g));
            }
        }
        let (s, g) = match fw {
            Some(hit) => hit,
            None => {
                let (s, h) = self.call_oracle(oracle, i)?;
                (s, base + h / n)
            }
        };
        if let CornerRef::Atom(k) = s {
            self.blocks[i].atoms[k].last_used = self.steps;
        }
        self.set_estimate(i, g);

        // FW step, and the alternative of the step type; keep the better.
        let fixed = (!settings.line_search).then(|| 2.0 * n / (self.steps as f64 - 1.0 + 2.0 * n));
        // Without a box the FW step needs no direction vector: its slope and
        // curvature come from <w, w_i>, <psi, w_i>, ||psi||^2 and ||w_i||^2.
        let fast = self.bounds.is_none();
        let (dl_fw, gamma_fw, gain_fw, psi_dot_wi) = if fast {
            self.fw_candidate(i, s, w_dot_wi, fixed)
        } else {
            let (dl, _) = self.direction_to(i, s, CornerRef::Truth, StepKind::FrankWolfe);
            let (gamma, gain) = match fixed {
                Some(gamma) => (gamma, self.gain(&self.dir, dl, gamma)),
                None => self.line_search(&self.dir, dl, 1.0),
            };
            (dl, gamma, gain, 0.0)
        };
        let mut chosen = (StepKind::FrankWolfe, gamma_fw, dl_fw, CornerRef::Truth);
        let alternatives: &[StepKind] = match settings.step_type {
            StepType::FrankWolfe => &[],
            StepType::Pairwise => &[StepKind::Pairwise],
            StepType::Away => &[StepKind::Away],
            StepType::All => &[StepKind::Pairwise, StepKind::Away],
        };
        if !alternatives.is_empty() {
            if let Some((a, alpha_a)) = self.away_corner(i) {
                let mut best_gain = gain_fw;
                for &kind in alternatives {
                    // An away corner holding (almost) all the mass is w_i
                    // itself: its direction is rounding noise with an
                    // unbounded step.
                    let usable = match kind {
                        StepKind::Pairwise => a != s,
                        _ => alpha_a < 1.0 - 1e-9,
                    };
                    if !usable {
                        continue;
                    }
                    // Park the best direction so far while this one is tried.
                    std::mem::swap(&mut self.dir, &mut self.dir_parked);
                    let (dl, gmax) = self.direction_to(i, s, a, kind);
                    let (gamma, gain) = self.line_search(&self.dir, dl, gmax);
                    if gain > best_gain {
                        best_gain = gain;
                        chosen = (kind, gamma, dl, a);
                    } else {
                        std::mem::swap(&mut self.dir, &mut self.dir_parked);
                    }
                }
            }
        }
        let (kind, gamma, dl, away) = chosen;
        if gamma > 0.0 {
            if fast && kind == StepKind::FrankWolfe {
                self.apply_fw(i, gamma, dl, s, psi_dot_wi);
            } else {
                self.apply(i, kind, gamma, dl, s, away);
            }
        }
        if settings.use_cache {
            self.blocks[i].evict(settings.cache_size);
        } else if self.keep_atoms {
            self.blocks[i].atoms.retain(|a| a.alpha > 0.0);
        }
        #[cfg(debug_assertions)]
        self.check_block(i);
        if let Some(vbar) = &mut self.vbar {
            self.avg_steps += 1;
            let rho = 2.0 / (self.avg_steps as f64 + 2.0);
            for (b, x) in vbar.iter_mut().zip(&self.v) {
                *b = (1.0 - rho) * *b + rho * x;
            }
            self.lbar = (1.0 - rho) * self.lbar + rho * self.l;
        }
        Ok(())
    }

    /// Debug builds: block `i`'s iterate agrees with its weights.
    #[cfg(debug_assertions)]
    fn check_block(&self, i: usize) {
        if !self.keep_atoms || self.dim > 10_000 {
            return;
        }
        let b = &self.blocks[i];
        let n = self.n as f64;
        let total: f64 = b.truth_alpha + b.atoms.iter().map(|a| a.alpha).sum::<f64>();
        assert!(
            (total - 1.0).abs() < 1e-9,
            "block {i}: weights sum to {total}"
        );
        let l: f64 = b.atoms.iter().map(|a| a.alpha * a.loss / n).sum();
        assert!((l - b.l).abs() < 1e-9, "block {i}: l_i {} vs {l}", b.l);
        let mut w = vec![0.0; self.dim];
        for a in &b.atoms {
            for (&j, &x) in a.psi.idx.iter().zip(&a.psi.val) {
                w[j as usize] += a.alpha * x / (self.lambda * n);
            }
        }
        b.w.for_each(|j, x| w[j] -= x);
        let err = w.iter().map(|x| x.abs()).fold(0.0, f64::max);
        assert!(err < 1e-9, "block {i}: w_i off by {err}");
    }

    /// The kept corner with the largest `H_i(w)` (the ground truth has 0).
    fn best_cached(&self, i: usize) -> (CornerRef, f64) {
        let mut best = (CornerRef::Truth, 0.0);
        for (k, a) in self.blocks[i].atoms.iter().enumerate() {
            let h = a.loss - a.psi.dot_dense(point!(self));
            if h > best.1 {
                best = (CornerRef::Atom(k), h);
            }
        }
        best
    }

    /// The active corner with the smallest `H_i(w)` and its weight.
    fn away_corner(&self, i: usize) -> Option<(CornerRef, f64)> {
        let b = &self.blocks[i];
        let mut best: Option<(CornerRef, f64, f64)> = None;
        if b.truth_alpha > 0.0 {
            best = Some((CornerRef::Truth, 0.0, b.truth_alpha));
        }
        for (k, a) in b.atoms.iter().enumerate() {
            if a.alpha > 0.0 {
                let h = a.loss - a.psi.dot_dense(point!(self));
                if best.map_or(true, |(_, hb, _)| h < hb) {
                    best = Some((CornerRef::Atom(k), h, a.alpha));
                }
            }
        }
        best.map(|(c, _, alpha)| (c, alpha))
    }

    /// Calls the oracle on block `i` at `w`, checks its answer, and returns
    /// the corner (kept as an atom when atoms are kept) and `H_i(w)` there.
    fn call_oracle(&mut self, oracle: &dyn MaxOracle, i: usize) -> Result<(CornerRef, f64)> {
        let t = std::time::Instant::now();
        call_max_oracle(oracle, i, point!(self), &mut self.corner)?;
        self.oracle_seconds += t.elapsed().as_secs_f64();
        self.oracle_calls += 1;
        let dot = self.corner.dot(point!(self));
        let h = self.corner.loss() - dot;
        check_not_below_truth(h, self.corner.loss(), dot, self.corner.label(), i)?;
        // Into the reused buffer: only a corner kept as a new atom allocates.
        self.fresh_psi
            .set_from_corner(&self.corner, &mut self.pairs);
        let loss = self.corner.loss();
        let label = self.corner.label();
        if self.fresh_psi.nnz() == 0 && loss == 0.0 {
            return Ok((CornerRef::Truth, 0.0));
        }
        if !self.keep_atoms {
            self.fresh_norm2 = self.fresh_psi.norm2();
            return Ok((CornerRef::Fresh, h));
        }
        let b = &mut self.blocks[i];
        if let Some(k) = b.find(label) {
            let known = b.atoms[k].loss;
            if (known - loss).abs() > 1e-9 * known.abs().max(loss.abs()).max(1.0) {
                return Err(Error::oracle(format!(
                    "max-oracle for example {i} returned label id {label} with loss {loss}, \
                     but earlier with loss {known}: a label id must name one label"
                )));
            }
            return Ok((CornerRef::Atom(k), h));
        }
        let psi = std::mem::take(&mut self.fresh_psi);
        let psi_norm2 = psi.norm2();
        b.atoms.push(Atom {
            label,
            psi,
            loss,
            psi_norm2,
            alpha: 0.0,
            last_used: self.steps,
        });
        Ok((CornerRef::Atom(b.atoms.len() - 1), h))
    }

    /// Writes the direction of a step into `self.dir` and returns the change
    /// of `l` per unit step and the largest step:
    /// FW `w_s - w_i` (up to 1), pairwise `w_s - w_a` (up to `alpha_a`),
    /// away `w_i - w_a` (up to `alpha_a / (1 - alpha_a)`).
    fn direction_to(&mut self, i: usize, s: CornerRef, a: CornerRef, kind: StepKind) -> (f64, f64) {
        let n = self.n as f64;
        let scale = 1.0 / (self.lambda * n);
        let b = &self.blocks[i];
        let corner = |c: CornerRef| -> (Option<&SparseVec>, f64, f64) {
            match c {
                CornerRef::Truth => (None, 0.0, b.truth_alpha),
                CornerRef::Atom(k) => (Some(&b.atoms[k].psi), b.atoms[k].loss, b.atoms[k].alpha),
                CornerRef::Fresh => (Some(&self.fresh_psi), self.corner.loss(), 0.0),
            }
        };
        let mut dir = std::mem::take(&mut self.dir);
        dir.idx.clear();
        dir.val.clear();
        let (dl, gmax) = match kind {
            StepKind::FrankWolfe => {
                let (ps, ls, _) = corner(s);
                sparse_sub(ps, scale, Some(&b.w), &mut dir);
                (ls / n - b.l, 1.0)
            }
            StepKind::Pairwise => {
                let (ps, ls, _) = corner(s);
                let (pa, la, alpha_a) = corner(a);
                sparse_diff(ps, pa, scale, &mut dir);
                ((ls - la) / n, alpha_a)
            }
            StepKind::Away => {
                let (pa, la, alpha_a) = corner(a);
                // w_i - w_a = -(w_a - w_i)
                sparse_sub(pa, scale, Some(&b.w), &mut dir);
                dir.val.iter_mut().for_each(|x| *x = -*x);
                (b.l - la / n, alpha_a / (1.0 - alpha_a))
            }
        };
        self.dir = dir;
        (dl, gmax)
    }

    /// The exact line search of `phi(gamma) = f(v + gamma d, l + gamma dl)`
    /// on `[0, gmax]`; returns the step and the decrease of `f`.
    fn line_search(&self, d: &SparseVec, dl: f64, gmax: f64) -> (f64, f64) {
        let lambda = self.lambda;
        let slope0 = lambda * d.dot_dense(point!(self)) - dl;
        if slope0 >= 0.0 || d.nnz() == 0 {
            return (0.0, 0.0);
        }
        let gamma = match &self.bounds {
            None => {
                let curv = lambda * d.norm2();
                if curv > 0.0 {
                    (-slope0 / curv).min(gmax)
                } else {
                    gmax
                }
            }
            Some(bounds) => {
                // phi' is non-decreasing (f is convex): bisection on its sign.
                let slope = |g: f64| -> f64 {
                    let mut s = 0.0;
                    for (&j, &x) in d.idx.iter().zip(&d.val) {
                        let j = j as usize;
                        s += bounds.clip(j, self.v[j] + g * x) * x;
                    }
                    lambda * s - dl
                };
                let top = if gmax.is_finite() { gmax } else { 1e12 };
                if slope(top) <= 0.0 {
                    top
                } else {
                    let (mut lo, mut hi) = (0.0, top);
                    for _ in 0..100 {
                        let mid = 0.5 * (lo + hi);
                        if slope(mid) <= 0.0 {
                            lo = mid;
                        } else {
                            hi = mid;
                        }
                        if hi - lo <= 1e-15 * hi {
                            break;
                        }
                    }
                    lo
                }
            }
        };
        (gamma, self.gain(d, dl, gamma))
    }

    /// `f(now) - f(after a step gamma along d)`, computed exactly.
    fn gain(&self, d: &SparseVec, dl: f64, gamma: f64) -> f64 {
        let lambda = self.lambda;
        let mut dh = 0.0;
        for (&j, &x) in d.idx.iter().zip(&d.val) {
            let j = j as usize;
            let (a, b) = (self.v[j], self.v[j] + gamma * x);
            dh += match &self.bounds {
                Some(bd) if bd.is_constrained(j) => bd.h(j, a) - bd.h(j, b),
                _ => 0.5 * (a * a - b * b),
            };
        }
        lambda * dh + gamma * dl
    }

    /// Applies the chosen step (its direction is in `self.dir`).
    fn apply(&mut self, i: usize, kind: StepKind, gamma: f64, dl: f64, s: CornerRef, a: CornerRef) {
        let dir = std::mem::take(&mut self.dir);
        let b = &mut self.blocks[i];
        b.w.combine(1.0, gamma, &dir, self.dim, &mut self.merged);
        b.l += gamma * dl;
        self.l += gamma * dl;
        for (&j, &x) in dir.idx.iter().zip(&dir.val) {
            let j = j as usize;
            self.v[j] += gamma * x;
            if let Some(bd) = &self.bounds {
                self.w[j] = bd.clip(j, self.v[j]);
            }
        }
        self.dir = dir;
        b.w_norm2 = b.w.norm2();
        if self.keep_atoms {
            update_weights(b, kind, gamma, s, a);
        } else {
            track_truth(b, gamma, s);
        }
    }

    /// The FW candidate without a box: `(dl, gamma, gain, <psi_s, w_i>)`.
    fn fw_candidate(
        &self,
        i: usize,
        s: CornerRef,
        w_dot_wi: f64,
        fixed: Option<f64>,
    ) -> (f64, f64, f64, f64) {
        let n = self.n as f64;
        let lambda = self.lambda;
        let scale = 1.0 / (lambda * n);
        let b = &self.blocks[i];
        let (psi, loss, psi_norm2) = match s {
            CornerRef::Truth => (&EMPTY, 0.0, 0.0),
            CornerRef::Atom(k) => (&b.atoms[k].psi, b.atoms[k].loss, b.atoms[k].psi_norm2),
            CornerRef::Fresh => (&self.fresh_psi, self.corner.loss(), self.fresh_norm2),
        };
        let w_dot_psi = psi.dot_dense(&self.v);
        let psi_dot_wi = b.w.dot_sparse(psi);
        let dl = loss / n - b.l;
        // -phi'(0): the block gap.
        let g = dl - lambda * (scale * w_dot_psi - w_dot_wi);
        let curvature = (scale * scale * psi_norm2 - 2.0 * scale * psi_dot_wi + b.w_norm2).max(0.0);
        let gamma = match fixed {
            Some(gamma) => gamma,
            None if g <= 0.0 => 0.0,
            None if curvature > 0.0 => (g / (lambda * curvature)).min(1.0),
            None => 1.0,
        };
        let gain = gamma * g - 0.5 * lambda * gamma * gamma * curvature;
        (dl, gamma, gain, psi_dot_wi)
    }

    /// The FW step without a box: `w_i <- (1 - gamma) w_i + gamma w_s`,
    /// `v` moved by the difference; O(nnz(w_i) + nnz(psi)).
    fn apply_fw(&mut self, i: usize, gamma: f64, dl: f64, s: CornerRef, psi_dot_wi: f64) {
        let scale = 1.0 / (self.lambda * self.n as f64);
        let b = &mut self.blocks[i];
        let (psi, psi_norm2) = match s {
            CornerRef::Truth => (&EMPTY, 0.0),
            CornerRef::Atom(k) => (&b.atoms[k].psi, b.atoms[k].psi_norm2),
            CornerRef::Fresh => (&self.fresh_psi, self.fresh_norm2),
        };
        b.w.add_to(-gamma, &mut self.v);
        for (&j, &x) in psi.idx.iter().zip(&psi.val) {
            self.v[j as usize] += gamma * scale * x;
        }
        let keep = 1.0 - gamma;
        b.w_norm2 = keep * keep * b.w_norm2
            + 2.0 * gamma * keep * scale * psi_dot_wi
            + gamma * gamma * scale * scale * psi_norm2;
        b.w.combine(keep, gamma * scale, psi, self.dim, &mut self.merged);
        b.l += gamma * dl;
        self.l += gamma * dl;
        if self.keep_atoms {
            update_weights(b, StepKind::FrankWolfe, gamma, s, CornerRef::Truth);
        } else {
            track_truth(b, gamma, s);
        }
    }
}

/// The empty psi of the ground truth.
static EMPTY: SparseVec = SparseVec {
    idx: Vec::new(),
    val: Vec::new(),
};

/// A FW step when corners are not kept: only the truth's weight is
/// tracked, as it bounds how far lambda may grow with `w_i` kept
/// (`set_lambda`).
fn track_truth(b: &mut Block, gamma: f64, s: CornerRef) {
    let to_truth = if s == CornerRef::Truth { gamma } else { 0.0 };
    b.truth_alpha = (1.0 - gamma) * b.truth_alpha + to_truth;
}

/// Moves the dual weights of block `b` as the step did.
fn update_weights(b: &mut Block, kind: StepKind, gamma: f64, s: CornerRef, a: CornerRef) {
    let add = |b: &mut Block, c: CornerRef, delta: f64| match c {
        CornerRef::Truth => b.truth_alpha += delta,
        CornerRef::Atom(k) => b.atoms[k].alpha += delta,
        CornerRef::Fresh => {}
    };
    match kind {
        StepKind::FrankWolfe => {
            b.truth_alpha *= 1.0 - gamma;
            b.atoms.iter_mut().for_each(|x| x.alpha *= 1.0 - gamma);
            add(b, s, gamma);
        }
        StepKind::Pairwise => {
            add(b, a, -gamma);
            add(b, s, gamma);
        }
        StepKind::Away => {
            b.truth_alpha *= 1.0 + gamma;
            b.atoms.iter_mut().for_each(|x| x.alpha *= 1.0 + gamma);
            add(b, a, -gamma);
        }
    }
    // Drop steps and rounding: weights at (or a hair below) zero are zero.
    if b.truth_alpha < 1e-12 {
        b.truth_alpha = 0.0;
    }
    for x in &mut b.atoms {
        if x.alpha < 1e-12 {
            x.alpha = 0.0;
        }
    }
}

/// `out = scale * p - q` over the union of supports (`p` or `q` may be absent).
fn sparse_sub(p: Option<&SparseVec>, scale: f64, q: Option<&BlockVec>, out: &mut SparseVec) {
    let empty = SparseVec::default();
    let p = p.unwrap_or(&empty);
    match q {
        None => {
            out.idx.extend_from_slice(&p.idx);
            out.val.extend(p.val.iter().map(|x| scale * x));
        }
        Some(BlockVec::Dense(d)) => {
            let mut k = 0;
            for (j, &y) in d.u.iter().enumerate() {
                let mut x = -d.c * y;
                if k < p.idx.len() && p.idx[k] as usize == j {
                    x += scale * p.val[k];
                    k += 1;
                }
                if x != 0.0 {
                    out.idx.push(j as u32);
                    out.val.push(x);
                }
            }
        }
        Some(BlockVec::Sparse(q)) => merge(p, scale, q, -1.0, out),
    }
}

/// `out = scale * (p - q)`.
fn sparse_diff(p: Option<&SparseVec>, q: Option<&SparseVec>, scale: f64, out: &mut SparseVec) {
    let empty = SparseVec::default();
    merge(p.unwrap_or(&empty), scale, q.unwrap_or(&empty), -scale, out);
}

/// `-f = l - lambda/2 (||v||^2 - ||v - clip(v)||^2)`.
fn dual_value(lambda: f64, v: &[f64], bounds: Option<&Bounds>, l: f64) -> f64 {
    let h: f64 = match bounds {
        None => 0.5 * crate::linalg::norm2(v),
        Some(b) => v.iter().enumerate().map(|(j, &x)| b.h(j, x)).sum(),
    };
    l - lambda * h
}

/// Makes a history row of a pass.
pub fn pass_row(
    state: &BcfwState,
    exact: Option<&ExactPass>,
    traced_gap: Option<f64>,
) -> Iteration {
    let stats = state.stats();
    Iteration {
        iteration: state.passes,
        risk: exact.map_or(f64::NAN, |e| e.risk),
        objective: exact.map_or(f64::NAN, |e| e.primal),
        num_planes: stats.corners,
        active_planes: stats.active_corners,
        effective_passes: stats.effective_passes,
        gap_estimate: stats.gap_estimate,
        exact_gap: exact.map(|e| e.gap).or(traced_gap).unwrap_or(f64::NAN),
        ..Iteration::default()
    }
}

/// The pass limit: `num_passes` and `max_iterations` both count passes; the
/// smaller non-zero one applies.
pub fn pass_limit(settings: &Settings) -> Option<u64> {
    match (settings.num_passes, settings.max_iterations) {
        (0, 0) => None,
        (0, m) | (m, 0) => Some(m),
        (a, b) => Some(a.min(b)),
    }
}

//! The BCFW state and its block steps (docs/bcfw.md).
//!
//! Dual (minimised): `f = lambda/2 (||v||^2 - ||v - clip(v)||^2) - l`, with
//! `v = sum_i w_i`, `l = sum_i l_i` and the primal point `w = clip(v)` (the
//! identity without box constraints). Its negation is a lower bound on the
//! primal optimum, and `primal(w) + f = sum_i g_i`, the sum of block gaps.

use std::time::Instant;

use super::blocks::Block;
use super::sparse::BlockVec;
use super::BcfwStats;
use crate::error::{Error, Result};
use crate::oracle::adapters::{deadline_passed, past};
use crate::oracle::sparse::SparseVec;
use crate::oracle::Bounds;
use crate::oracle::MaxOracle;
use crate::vocab::{Iteration, Settings, StepType};

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

mod average;
mod batch;
mod chain_steps;
mod class_steps;
mod dual;
mod evaluate;
mod exact;
mod form;
mod kept_exact;
mod line;
mod multiplane;
mod parts;
mod steps;

pub use dual::{BlockDual, CornerDual};
pub use evaluate::ExactPass;
use form::BlockForm;
use parts::{Averaging, FreshCorner, FreshDots, GapEstimates, Sampling, Scratch, StepCounts};

/// An error when `||psi||^2` of example `i`'s answer is not finite: the
/// steps' curvature would be infinite, and BCFW would make no progress
/// (psi = 1e160) or carry infinities (psi = 1e308).
pub(crate) fn check_psi_norm(psi: &SparseVec, i: usize) -> Result<()> {
    let n2 = psi.norm2();
    if n2.is_finite() {
        return Ok(());
    }
    Err(Error::non_finite(format!(
        "||psi||^2 of the max-oracle's answer for example {i} is {n2} (psi's entries must \
         be below about 1e154 in magnitude)"
    )))
}

/// Everything BCFW keeps between block steps and between runs.
pub struct BcfwState {
    n: usize,
    dim: usize,
    lambda: f64,
    pub(super) blocks: Vec<Block>,
    /// The form the blocks' iterates are held in, with what only its steps
    /// keep ([`BlockForm`]).
    form: BlockForm,
    /// `v = sum_i w_i`.
    v: Vec<f64>,
    /// The primal point `clip(v)` under a box (empty without one).
    w: Vec<f64>,
    /// `l = sum_i l_i`.
    l: f64,
    bounds: Option<Bounds>,
    /// Whether corners and their weights are kept (pairwise/away steps,
    /// the cache, multi-plane or exact steps on vector blocks).
    keep_atoms: bool,
    /// Multi-plane: the most inactive corners per block, set by each pass;
    /// then exact passes add their corners to the working sets.
    working_set: Option<usize>,
    /// Where the approximate steps and passes stop (the run's time limit).
    deadline: Option<Instant>,
    /// The `w` the last run returned (a later run must start from it).
    pub(crate) returned_w: Option<Vec<f64>>,
    pub(super) count: StepCounts,
    average: Averaging,
    gaps: GapEstimates,
    sampling: Sampling,
    fresh: FreshCorner,
    scratch: Scratch,
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
        let form = BlockForm::choose(oracle, settings, bounds.is_some(), n)?;
        // Exact steps keep corners on vector blocks (their sub-problem is
        // solved over them), not on class blocks (which hold every corner).
        let keep_atoms = settings.use_cache
            || settings.multi_plane
            || form.keeps_corners_for_exact()
            || !matches!(settings.step_type, StepType::FrankWolfe | StepType::Exact);
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
            form,
            v,
            w,
            l: 0.0,
            bounds,
            keep_atoms,
            working_set: None,
            deadline: None,
            returned_w: None,
            count: StepCounts::default(),
            average: Averaging::default(),
            gaps: GapEstimates::new(n),
            sampling: Sampling::new(settings, n),
            fresh: FreshCorner::default(),
            scratch: Scratch::new(dim),
        })
    }

    pub fn num_examples(&self) -> usize {
        self.n
    }
    pub fn lambda(&self) -> f64 {
        self.lambda
    }
    pub fn w(&self) -> &[f64] {
        point!(self)
    }

    /// The start of the regularisation path: `alpha_i = delta(y^_i)` for the
    /// corners `(psi_i, L_i)` the oracle gave at `w = 0`, at this lambda.
    pub fn set_corners(&mut self, corners: Vec<(u64, SparseVec, f64)>) -> Result<()> {
        let scale = 1.0 / (self.lambda * self.n as f64);
        // The path's corners come as vectors: general blocks (class blocks
        // take them as classes).
        if self.form.chains().is_some() {
            self.form.become_vectors();
        }
        self.v.iter_mut().for_each(|x| *x = 0.0);
        self.l = 0.0;
        for (i, (label, psi, loss)) in corners.into_iter().enumerate() {
            let truth = self.is_truth(i, label, loss, &psi);
            let atom = if truth || !self.keep_atoms {
                None
            } else {
                Some(self.new_atom(i, label, psi.clone(), loss, 1.0)?)
            };
            let b = &mut self.blocks[i];
            match self.form.classes_mut() {
                Some(cb) => {
                    // The corner's class is its label id (Factoring::Classes).
                    let class = cb.class_of(i, label)?;
                    cb.set_corner(i, class, if truth { 0.0 } else { scale });
                    cb.add_to(i, 1.0, &mut self.v);
                    b.w_norm2 = cb.norm2(i);
                }
                None => {
                    let mut w = BlockVec::default();
                    w.combine(0.0, scale, &psi, self.dim, &mut self.scratch.merged);
                    w.add_to(1.0, &mut self.v);
                    b.w_norm2 = w.norm2();
                    b.w = w;
                }
            }
            b.l = loss / self.n as f64;
            self.l += b.l;
            b.truth_alpha = if truth { 1.0 } else { 0.0 };
            b.atoms.clear();
            b.atoms.extend(atom);
        }
        self.refresh_w();
        self.reset_average();
        Ok(())
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
                let u = b.l - self.lambda * self.form.dot(b, i, point!(self));
                b.gap_estimate += (1.0 - c) * u;
                self.gaps.sum += (1.0 - c) * u;
                self.sampling.sampler.set_gap(i, b.gap_estimate);
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
                match &mut self.form {
                    BlockForm::Classes { blocks: cb, .. } => {
                        cb.add_to(i, f - 1.0, &mut self.v);
                        cb.coef_mut(i).iter_mut().for_each(|x| *x *= f);
                    }
                    BlockForm::Chains(ch) => ch.scale_block(i, f, &mut self.v),
                    BlockForm::Vectors { .. } => {
                        b.w.add_to(f - 1.0, &mut self.v);
                        b.w.scale(f);
                    }
                }
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
        self.gaps.last_exact = f64::INFINITY;
        self.recount_estimated();
        // Every margin moved with w: the shrinking the last exact pass kept
        // is re-checked by visiting every block again.
        self.unshrink_all();
        self.reset_average();
    }

    fn reset_average(&mut self) {
        if self.average.v.is_some() {
            self.average.v = Some(self.v.clone());
            self.average.l = self.l;
            self.average.steps = 0;
        }
    }

    fn refresh_w(&mut self) {
        if let Some(b) = &self.bounds {
            self.w = b.clip_all(&self.v);
        }
    }

    /// `-f`: the dual value as the steps keep it (their progress measure).
    /// What a user reads is [`BcfwState::certified_dual`].
    pub fn dual(&self) -> f64 {
        dual_value(self.lambda, &self.v, self.bounds.as_ref(), self.l)
    }

    /// The rounding allowance of `l` and `v` after the block steps so far:
    /// both are sums updated once per step, each update rounding relative
    /// to the magnitudes it adds, so after `K` steps they may be off by
    /// `gamma_{2K}` of those magnitudes (left in, they gave a bound 4.4e-16
    /// above `min F` on a tiny problem). Taken off `ell` and the dual wherever
    /// they are reported, so that a certificate computed from them stays
    /// below `min F`.
    fn rounding(&self, l: f64, v: &[f64]) -> f64 {
        let terms = 2 * self.count.steps as usize + 4 * self.n + 16;
        let magnitude = l.abs() + self.lambda * crate::linalg::norm2(v);
        2.0 * crate::rounding::gamma(terms) * magnitude
    }

    /// `ell` paired with the point the last run returned, `w`: the
    /// iterate's `l` (rounded down) when `w` is the iterate, or under a
    /// box; otherwise (an earlier iterate of lower primal value, a weighted
    /// average) the value for which `ell - lambda/2 ||w||^2` is the
    /// certified dual value, rounded down by that subtraction's own
    /// allowance: the certificate a caller computes from `w` and this
    /// `ell` is valid whichever point was returned.
    fn returned_ell(&self) -> f64 {
        match &self.returned_w {
            Some(w) if self.bounds.is_none() && w[..] != self.v[..] => {
                let half = 0.5 * self.lambda * crate::linalg::norm2(w);
                let dual = self.certified_dual();
                let slack = 2.0 * crate::rounding::gamma(w.len() + 8) * (dual.abs() + 2.0 * half);
                dual + half - slack
            }
            _ => self.l - self.rounding(self.l, &self.v),
        }
    }

    /// The dual value rounded down by [`BcfwState::rounding`]: a lower bound
    /// on the primal optimum.
    pub fn certified_dual(&self) -> f64 {
        self.dual() - self.rounding(self.l, &self.v)
    }

    /// The certified dual value of the averaged weights, when averaging is on.
    pub fn dual_of_average(&self) -> Option<f64> {
        self.average.v.as_ref().map(|vb| {
            dual_value(self.lambda, vb, self.bounds.as_ref(), self.average.l)
                - self.rounding(self.average.l, vb)
        })
    }

    /// Calls `f(w, ell, dual, averaged)` with the iterate the BCFW codes
    /// return: the averaged point under weighted averaging, else the last.
    /// `ell` and `dual` are rounded down by the same allowance, so that
    /// `ell - lambda/2 ||w||^2` computed by the caller is a valid bound too.
    pub fn with_iterate<R>(&self, f: impl FnOnce(&[f64], f64, f64, bool) -> R) -> R {
        match (self.average_point(), self.average.v.as_ref()) {
            (Some(avg), Some(vb)) => {
                let e = self.rounding(self.average.l, vb);
                let dual = dual_value(self.lambda, vb, self.bounds.as_ref(), self.average.l);
                f(&avg, self.average.l - e, dual - e, true)
            }
            _ => {
                let e = self.rounding(self.l, &self.v);
                f(point!(self), self.l - e, self.dual() - e, false)
            }
        }
    }

    /// Every block's gap estimate is known (finite).
    pub fn all_estimated(&self) -> bool {
        debug_assert_eq!(self.gaps.unknown, self.walk_unestimated());
        self.gaps.unknown == 0
    }

    /// The blocks whose gap estimate is not known, by walking them all.
    fn walk_unestimated(&self) -> usize {
        self.blocks
            .iter()
            .filter(|b| !b.gap_estimate.is_finite())
            .count()
    }

    /// Recounts the blocks whose gap estimate is not known, after changes
    /// to many (a new lambda, an imported dual).
    fn recount_estimated(&mut self) {
        self.gaps.unknown = self.walk_unestimated();
    }

    /// The corners kept and those with weight (the truth's among them),
    /// over all blocks, in one walk.
    fn corner_counts(&self) -> (u64, u64) {
        self.blocks.iter().fold((0, 0), |(all, active), b| {
            (all + b.atoms.len() as u64, active + b.active_atoms() as u64)
        })
    }

    /// The averaged primal point `clip(vbar)`, when averaging is on.
    pub fn average_point(&self) -> Option<Vec<f64>> {
        self.average.v.as_ref().map(|vb| match &self.bounds {
            Some(b) => b.clip_all(vb),
            None => vb.clone(),
        })
    }

    /// The sum of the finite block-gap estimates (kept as a running sum,
    /// recomputed at every exact pass).
    pub fn gap_estimate(&self) -> f64 {
        self.gaps.sum
    }

    fn set_estimate(&mut self, i: usize, g: f64) {
        let old = self.blocks[i].gap_estimate;
        if old.is_finite() {
            self.gaps.sum -= old;
            self.gaps.unknown += 1;
        }
        if g.is_finite() {
            self.gaps.sum += g;
            self.gaps.unknown -= 1;
        }
        self.blocks[i].gap_estimate = g;
        self.sampling.sampler.set_gap(i, g);
    }

    pub fn stats(&self) -> BcfwStats {
        let (corners, active_corners) = self.corner_counts();
        let memory = self.blocks.iter().map(Block::bytes).sum::<usize>()
            + (self.v.capacity() + self.w.capacity()) * 8
            + self.average.v.as_ref().map_or(0, |v| v.capacity() * 8)
            + self.form.bytes();
        BcfwStats {
            passes: self.count.passes,
            effective_passes: self.count.oracle_calls as f64 / self.n as f64,
            oracle_calls: self.count.oracle_calls,
            cache_hits: self.count.cache_hits,
            approx_passes: self.count.approx_passes,
            ell: self.l - self.rounding(self.l, &self.v),
            returned_ell: self.returned_ell(),
            dual: self.certified_dual(),
            gap_estimate: self.gap_estimate(),
            last_exact_gap: self.gaps.last_exact,
            corners,
            active_corners,
            dense_blocks: self.blocks.iter().filter(|b| b.w.is_dense()).count() as u64,
            memory_bytes: memory as u64,
        }
    }

    /// Every block the exact steps shrunk is visited again.
    fn unshrink_all(&mut self) {
        self.form.unshrink_all();
    }

    /// What every kind of pass sets up first: the multi-plane working-set
    /// bound and the weighted average.
    fn begin_pass(&mut self, settings: &Settings) {
        self.working_set = settings.multi_plane.then_some(settings.cache_size);
        if settings.weighted_averaging && self.average.v.is_none() {
            self.average.v = Some(self.v.clone());
            self.average.l = self.l;
            self.average.steps = 0;
        }
    }

    /// One pass: `n` block steps. At the deadline it gives up between two
    /// steps (each step keeps the dual feasible, so the dual value stays a
    /// bound; the pass is not counted).
    pub fn pass(&mut self, oracle: &dyn MaxOracle, settings: &Settings) -> Result<()> {
        self.form.bind(oracle);
        self.begin_pass(settings);
        for _ in 0..self.n {
            if past(self.deadline) {
                return Err(deadline_passed());
            }
            let i = self.sampling.sampler.next(&mut self.sampling.rng);
            self.block_step(oracle, settings, i).map_err(|e| {
                e.context(format!(
                    "at BCFW pass {} (block step {})",
                    self.count.passes + 1,
                    self.count.steps + 1
                ))
            })?;
            if settings.multi_plane {
                self.approximate_block_steps(settings, i);
            }
        }
        self.count.passes += 1;
        Ok(())
    }

    /// `<w, w_i>` of block `i`.
    pub(super) fn block_dot(&self, i: usize, w: &[f64]) -> f64 {
        self.form.dot(&self.blocks[i], i, w)
    }
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
    // Not `stats()`: its memory and dense-block counts walk every block.
    let (corners, active_corners) = state.corner_counts();
    Iteration {
        iteration: state.count.passes,
        risk: exact.map_or(f64::NAN, |e| e.risk),
        objective: exact.map_or(f64::NAN, |e| e.primal),
        num_planes: corners,
        active_planes: active_corners,
        effective_passes: state.count.oracle_calls as f64 / state.n as f64,
        gap_estimate: state.gap_estimate(),
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

//! BCFW's block step: the Frank-Wolfe corner (from the cache or the
//! oracle), the pairwise and away alternatives, the exact line search and
//! the update of the block's iterate and dual weights.

use super::super::blocks::{Atom, Block};
use super::super::sparse::BlockVec;
use super::{BcfwState, Error, FreshDots, Result};
use crate::oracle::adapters::call_max_oracle;
use crate::oracle::pass::screen_answer;
use crate::oracle::sparse::{merge, SparseVec};
use crate::oracle::MaxOracle;
use crate::vocab::{Settings, StepType};

/// A corner of one block: the ground truth, a kept atom, or the oracle's
/// fresh answer (when atoms are not kept).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum CornerRef {
    Truth,
    Atom(usize),
    Fresh,
}

/// The candidate steps on a block.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum StepKind {
    FrankWolfe,
    Pairwise,
    Away,
}

impl BcfwState {
    /// Where every block step starts: counted, and with no dot products of
    /// an earlier oracle answer (they hold for the step that follows its
    /// call only).
    pub(super) fn begin_step(&mut self) {
        self.count.steps += 1;
        self.fresh.dots = None;
    }

    /// Block `i`'s step; returns its FW corner and the block's gap there.
    pub(super) fn block_step(
        &mut self,
        oracle: &dyn MaxOracle,
        settings: &Settings,
        i: usize,
    ) -> Result<(CornerRef, f64)> {
        self.begin_step();
        let n = self.n as f64;
        let lambda = self.lambda;
        let check_cache = settings.use_cache && self.blocks[i].gap_estimate.is_finite();
        // <w, w_i> before the cache's test, which needs it; else after the
        // oracle's answer, whose scores give it on class blocks.
        let before = check_cache.then(|| self.step_dot(i));

        // The FW corner and H_i(w) there: the cache's best corner on a hit,
        // else the oracle's.
        let mut fw = None;
        if let Some(w_dot_wi) = before {
            let (c, h) = self.best_cached(i);
            let g = lambda * w_dot_wi - self.blocks[i].l + h / n;
            let global = if self.gaps.last_exact.is_finite() {
                self.gaps.last_exact
            } else {
                self.gap_estimate()
            };
            let need = (settings.cache_factor * self.blocks[i].gap_estimate)
                .max(settings.cache_nu * global / n);
            if g >= need && g > 0.0 {
                self.count.cache_hits += 1;
                fw = Some((c, h));
            }
        }
        let (s, h) = match fw {
            Some(hit) => hit,
            None => self.call_oracle(oracle, i)?,
        };
        let w_dot_wi = match (before, self.fresh.dots) {
            (Some(w_dot_wi), _) => w_dot_wi,
            (None, Some(dots)) => dots.w_dot_wi,
            (None, None) => self.answered_dot(i),
        };
        let g = lambda * w_dot_wi - self.blocks[i].l + h / n;
        if let CornerRef::Atom(k) = s {
            let a = &mut self.blocks[i].atoms[k];
            a.last_used = self.count.steps;
            a.used_pass = self.count.passes;
        }
        self.set_estimate(i, g);
        self.prefetch_next_chain_block();
        let fixed =
            (!settings.line_search).then(|| 2.0 * n / (self.count.steps as f64 - 1.0 + 2.0 * n));
        self.step_towards(settings, i, s, w_dot_wi, fixed);
        Ok((s, g))
    }

    /// An approximate step on block `i` (multi-plane's, and exact steps'
    /// among a vector block's kept corners): towards the best kept corner
    /// at `w`, no oracle call, always with the exact line search (a fixed
    /// step towards a corner that is not the block's maximiser could raise
    /// the dual objective), unless the block's gap over its kept corners is
    /// at most `stop_at` (`f64::NEG_INFINITY`: never). The gap estimate is
    /// left as the oracle gave it. Returns whether the block moved.
    pub(super) fn approximate_step(&mut self, settings: &Settings, i: usize, stop_at: f64) -> bool {
        let w_dot_wi = self.step_dot(i);
        let (s, h) = self.best_cached(i);
        let gap = self.lambda * w_dot_wi - self.blocks[i].l + h / self.n as f64;
        if gap <= stop_at {
            return false;
        }
        self.begin_step();
        if let CornerRef::Atom(k) = s {
            let a = &mut self.blocks[i].atoms[k];
            a.last_used = self.count.steps;
            a.used_pass = self.count.passes;
        }
        self.step_towards(settings, i, s, w_dot_wi, None)
    }

    /// The step on block `i` with FW corner `s`: the FW step and the
    /// alternative of the step type, the better one applied; then the
    /// corners kept are trimmed and the average updated. Returns whether
    /// the block moved.
    pub(super) fn step_towards(
        &mut self,
        settings: &Settings,
        i: usize,
        s: CornerRef,
        w_dot_wi: f64,
        fixed: Option<f64>,
    ) -> bool {
        // Without a box the FW step needs no direction vector: its slope and
        // curvature come from <w, w_i>, <psi, w_i>, ||psi||^2 and ||w_i||^2.
        let fast = self.bounds.is_none();
        let (dl_fw, gamma_fw, gain_fw, psi_dot_wi) = if fast {
            self.fw_candidate(i, s, w_dot_wi, fixed)
        } else {
            let (dl, _) = self.direction_to(i, s, CornerRef::Truth, StepKind::FrankWolfe);
            let (gamma, gain) = match fixed {
                Some(gamma) => (gamma, self.gain(dl, gamma)),
                None => self.line_search(i, dl, 1.0),
            };
            (dl, gamma, gain, 0.0)
        };
        let mut chosen = (StepKind::FrankWolfe, gamma_fw, dl_fw, CornerRef::Truth);
        let alternatives: &[StepKind] = match settings.step_type {
            StepType::FrankWolfe => &[],
            StepType::Pairwise => &[StepKind::Pairwise],
            StepType::Away => &[StepKind::Away],
            // (Exact steps on class blocks take their own passes:
            // `exact_steps_pass`; on vector blocks, these: `kept_exact`.)
            StepType::All | StepType::Exact => &[StepKind::Pairwise, StepKind::Away],
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
                    self.swap_dirs();
                    let (dl, gmax) = self.direction_to(i, s, a, kind);
                    let (gamma, gain) = self.line_search(i, dl, gmax);
                    if gain > best_gain {
                        best_gain = gain;
                        chosen = (kind, gamma, dl, a);
                    } else {
                        self.swap_dirs();
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
        if settings.multi_plane {
            // The working set: corners with weight, and those that were the
            // best corner within the last mp_inactive_passes oracle passes.
            let horizon = u64::from(settings.mp_inactive_passes);
            let now = self.count.passes;
            let b = &mut self.blocks[i];
            b.atoms
                .retain(|a| a.alpha > 0.0 || now - a.used_pass <= horizon);
            b.evict(settings.cache_size);
        } else if settings.use_cache {
            self.blocks[i].evict(settings.cache_size);
        } else if self.keep_atoms {
            self.blocks[i].atoms.retain(|a| a.alpha > 0.0);
        }
        #[cfg(debug_assertions)]
        self.check_block(i);
        self.average_step();
        gamma > 0.0
    }

    /// Weighted averaging: `vbar`, `lbar` move towards `v`, `l` after a step.
    pub(super) fn average_step(&mut self) {
        if let Some(vbar) = &mut self.average.v {
            self.average.steps += 1;
            let rho = 2.0 / (self.average.steps as f64 + 2.0);
            for (b, x) in vbar.iter_mut().zip(&self.v) {
                *b = (1.0 - rho) * *b + rho * x;
            }
            self.average.l = (1.0 - rho) * self.average.l + rho * self.l;
        }
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
        // Weights below 1e-12 are dropped as rounding (their share stays
        // in w_i and l_i): after many steps they add up to about 1e-9.
        assert!(
            (total - 1.0).abs() < 1e-7,
            "block {i}: weights sum to {total}"
        );
        let l: f64 = b.atoms.iter().map(|a| a.alpha * a.loss / n).sum();
        assert!((l - b.l).abs() < 1e-9, "block {i}: l_i {} vs {l}", b.l);
        if self.form.classes().is_some() {
            return self.check_class_block(i);
        }
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
            let h = a.loss - self.atom_dot_w(i, k);
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
                let h = a.loss - self.atom_dot_w(i, k);
                if best.is_none_or(|(_, hb, _)| h < hb) {
                    best = Some((CornerRef::Atom(k), h, a.alpha));
                }
            }
        }
        best.map(|(c, _, alpha)| (c, alpha))
    }

    /// Calls the oracle on block `i` at `w`, checks its answer, and returns
    /// the corner (kept as an atom when atoms are kept) and `H_i(w)` there.
    fn call_oracle(&mut self, oracle: &dyn MaxOracle, i: usize) -> Result<(CornerRef, f64)> {
        if self.form.classes().is_some() {
            return self.call_class_oracle(i);
        }
        if self.form.chains().is_some() {
            return self.call_chain_oracle(i);
        }
        call_max_oracle(oracle, i, point!(self), &mut self.scratch.corner)?;
        self.count.oracle_calls += 1;
        let dot = self.scratch.corner.dot(point!(self));
        // An answer below the truth becomes the truth (the zero corner).
        let (h, exact) = screen_answer(&mut self.scratch.corner, dot, i)?;
        self.count.doubtful += u64::from(!exact);
        // Into the reused buffer: only a corner kept as a new atom allocates.
        let (block, point) = (&self.blocks[i].w, point!(self));
        let mut dots = None;
        self.fresh.psi.set_from_corner_with(
            &self.scratch.corner,
            &mut self.scratch.corner_sums,
            |psi| {
                dots = block.gathered_dots(point, psi);
            },
        );
        super::check_psi_norm(&self.fresh.psi, i)?;
        self.fresh.dots = dots.map(|(w_dot_wi, psi_dot_wi, shared)| FreshDots {
            block: i,
            w_dot_wi,
            psi_dot_wi,
            psi_within: shared == self.fresh.psi.nnz(),
        });
        let (label, loss) = (self.scratch.corner.label(), self.scratch.corner.loss());
        self.adopt_fresh(i, label, loss, h)
    }

    /// Makes the corner in `self.fresh.psi` (label, loss, `H_i(w) = h`) the
    /// block's FW corner: the ground truth, a kept atom (new or known), or
    /// the fresh corner when atoms are not kept.
    pub(super) fn adopt_fresh(
        &mut self,
        i: usize,
        label: u64,
        loss: f64,
        h: f64,
    ) -> Result<(CornerRef, f64)> {
        self.fresh.loss = loss;
        if self.is_truth(i, label, loss, &self.fresh.psi) {
            return Ok((CornerRef::Truth, 0.0));
        }
        if !self.keep_atoms {
            self.fresh.norm2 = self.fresh.psi.norm2();
            return Ok((CornerRef::Fresh, h));
        }
        let b = &mut self.blocks[i];
        if let Some(k) = b.find(label) {
            check_same_label(i, label, &b.atoms[k], loss, &self.fresh.psi)?;
            return Ok((CornerRef::Atom(k), h));
        }
        let psi = std::mem::take(&mut self.fresh.psi);
        let atom = self.new_atom(i, label, psi, loss, 0.0)?;
        let b = &mut self.blocks[i];
        b.atoms.push(atom);
        Ok((CornerRef::Atom(b.atoms.len() - 1), h))
    }

    /// Writes the direction of a step into `self.scratch.dir` and returns the change
    /// of `l` per unit step and the largest step:
    /// FW `w_s - w_i` (up to 1), pairwise `w_s - w_a` (up to `alpha_a`),
    /// away `w_i - w_a` (up to `alpha_a / (1 - alpha_a)`).
    fn direction_to(&mut self, i: usize, s: CornerRef, a: CornerRef, kind: StepKind) -> (f64, f64) {
        if self.form.classes().is_some() {
            return self.class_direction_to(i, s, a, kind);
        }
        let n = self.n as f64;
        let scale = 1.0 / (self.lambda * n);
        let b = &self.blocks[i];
        let corner = |c: CornerRef| -> (Option<&SparseVec>, f64, f64) {
            match c {
                CornerRef::Truth => (None, 0.0, b.truth_alpha),
                CornerRef::Atom(k) => (Some(&b.atoms[k].psi), b.atoms[k].loss, b.atoms[k].alpha),
                CornerRef::Fresh => (Some(&self.fresh.psi), self.fresh.loss, 0.0),
            }
        };
        let mut dir = std::mem::take(&mut self.scratch.dir);
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
        self.scratch.dir = dir;
        (dl, gmax)
    }

    /// Applies the chosen step (its direction is in `self.scratch.dir`).
    fn apply(&mut self, i: usize, kind: StepKind, gamma: f64, dl: f64, s: CornerRef, a: CornerRef) {
        if self.form.classes().is_some() {
            return self.class_apply(i, kind, gamma, dl, s, a);
        }
        let dir = std::mem::take(&mut self.scratch.dir);
        let b = &mut self.blocks[i];
        b.w.combine(1.0, gamma, &dir, self.dim, &mut self.scratch.merged);
        b.l += gamma * dl;
        self.l += gamma * dl;
        for (&j, &x) in dir.idx.iter().zip(&dir.val) {
            let j = j as usize;
            self.v[j] += gamma * x;
            if let Some(bd) = &self.bounds {
                self.w[j] = bd.clip(j, self.v[j]);
            }
        }
        self.scratch.dir = dir;
        b.w_norm2 = b.w.norm2();
        if self.keep_atoms {
            update_weights(b, kind, gamma, s, a);
            if kind == StepKind::Away {
                self.rebuild_block(i);
            }
        } else {
            track_truth(b, gamma, s);
        }
    }

    /// Recomputes block `i`'s `w_i` and `l_i` from its weights, and `v`
    /// and `l` with them. After an away step: its step `alpha_a / (1 -
    /// alpha_a)` grows without bound as `alpha_a` nears 1, and multiplies
    /// the rounding of `w_i - w_a` and of the weights' sum by as much, which
    /// left `w_i` outside the block's simplex (dual values 1e-4 above the
    /// optimum after 250-600 passes with away steps).
    fn rebuild_block(&mut self, i: usize) {
        if self.form.classes().is_some() {
            return self.rebuild_class_block(i);
        }
        let n = self.n as f64;
        let scale = 1.0 / (self.lambda * n);
        let b = &mut self.blocks[i];
        let (dim, merged) = (self.dim, &mut self.scratch.merged);
        let mut w = BlockVec::default();
        let mut l = 0.0;
        for a in b.atoms.iter().filter(|a| a.alpha > 0.0) {
            w.combine(1.0, a.alpha * scale, &a.psi, dim, merged);
            l += a.alpha * a.loss / n;
        }
        b.w.add_to(-1.0, &mut self.v);
        w.add_to(1.0, &mut self.v);
        b.w_norm2 = w.norm2();
        b.w = w;
        self.l += l - b.l;
        b.l = l;
        self.refresh_w();
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
            CornerRef::Fresh => (&self.fresh.psi, self.fresh.loss, self.fresh.norm2),
        };
        let (loss, scaled_w_dot_psi, scaled_psi_norm2, psi_dot_wi) =
            if self.form.classes().is_some() {
                self.class_fw_terms(i, s, scale)
            } else if self.form.chains().is_some() {
                self.chain_fw_terms(s, scale)
            } else {
                let wp = scale * psi.dot_dense(&self.v);
                let psi_dot_wi = match (s, self.fresh.dots) {
                    (CornerRef::Fresh, Some(dots)) if dots.block == i => dots.psi_dot_wi,
                    _ => b.w.dot_sparse(psi),
                };
                (loss, wp, scale * scale * psi_norm2, psi_dot_wi)
            };
        let dl = loss / n - b.l;
        // -phi'(0): the block gap.
        let g = dl - lambda * (scaled_w_dot_psi - w_dot_wi);
        let curvature = (scaled_psi_norm2 - 2.0 * scale * psi_dot_wi + b.w_norm2).max(0.0);
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
        if self.form.classes().is_some() {
            return self.class_apply_fw(i, gamma, dl, s);
        }
        if self.form.chains().is_some() {
            return self.chain_apply_fw(i, gamma, dl, s, psi_dot_wi);
        }
        let scale = 1.0 / (self.lambda * self.n as f64);
        let b = &mut self.blocks[i];
        let (psi, psi_norm2) = match s {
            CornerRef::Truth => (&EMPTY, 0.0),
            CornerRef::Atom(k) => (&b.atoms[k].psi, b.atoms[k].psi_norm2),
            CornerRef::Fresh => (&self.fresh.psi, self.fresh.norm2),
        };
        let keep = 1.0 - gamma;
        b.w_norm2 = keep * keep * b.w_norm2
            + 2.0 * gamma * keep * scale * psi_dot_wi
            + gamma * gamma * scale * scale * psi_norm2;
        // The truth's psi is empty: within any block.
        let within = match s {
            CornerRef::Truth => true,
            CornerRef::Fresh => self
                .fresh
                .dots
                .is_some_and(|d| d.block == i && d.psi_within),
            CornerRef::Atom(_) => false,
        };
        b.w.step_towards(
            gamma,
            gamma * scale,
            psi,
            within,
            &mut self.v,
            self.dim,
            &mut self.scratch.merged,
        );
        b.l += gamma * dl;
        self.l += gamma * dl;
        if self.keep_atoms {
            update_weights(b, StepKind::FrankWolfe, gamma, s, CornerRef::Truth);
        } else {
            track_truth(b, gamma, s);
        }
    }
}

/// A label id seen again must come with the loss and the psi it had: a
/// label id names one label (another psi under a known id would make the
/// steps move towards the wrong corner).
pub(super) fn check_same_label(
    i: usize,
    label: u64,
    known: &Atom,
    loss: f64,
    psi: &SparseVec,
) -> Result<()> {
    let known_loss = known.loss;
    if (known_loss - loss).abs() > 1e-9 * known_loss.abs().max(loss.abs()).max(1.0) {
        return Err(Error::oracle(format!(
            "max-oracle for example {i} returned label id {label} with loss {loss}, \
             but earlier with loss {known_loss}: a label id must name one label"
        )));
    }
    let scale = known.psi_norm2.max(psi.norm2()).max(f64::MIN_POSITIVE);
    if known.psi.dist2(psi) > 1e-18 * scale {
        return Err(Error::oracle(format!(
            "max-oracle for example {i} returned label id {label} with a psi other than \
             the one it returned earlier for that id: a label id must name one label"
        )));
    }
    Ok(())
}

/// The empty psi of the ground truth.
static EMPTY: SparseVec = SparseVec {
    idx: Vec::new(),
    val: Vec::new(),
};

/// A FW step when corners are not kept: only the truth's weight is
/// tracked, as it bounds how far lambda may grow with `w_i` kept
/// (`set_lambda`).
pub(super) fn track_truth(b: &mut Block, gamma: f64, s: CornerRef) {
    let to_truth = if s == CornerRef::Truth { gamma } else { 0.0 };
    b.truth_alpha = (1.0 - gamma) * b.truth_alpha + to_truth;
}

/// Moves the dual weights of block `b` as the step did.
pub(super) fn update_weights(
    b: &mut Block,
    kind: StepKind,
    gamma: f64,
    s: CornerRef,
    a: CornerRef,
) {
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
    if kind == StepKind::Away {
        // An away step multiplies the weights by 1 + gamma, up to 1e9, and
        // with them any rounding of their sum: back to exactly one.
        let total = b.truth_alpha + b.atoms.iter().map(|x| x.alpha).sum::<f64>();
        b.truth_alpha /= total;
        b.atoms.iter_mut().for_each(|x| x.alpha /= total);
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

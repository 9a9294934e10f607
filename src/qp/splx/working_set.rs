//! The solver state and its rounds on a working set (see the parent module).

use super::columns::{Block, Full};
use super::newton::Newton;
use super::sweep::{scan_all, sweeps, Counter, End, Stat};
use super::*;

/// Buffers of the working set, reused between outer iterations.
#[derive(Default)]
pub(super) struct WorkingSet {
    /// The planes, part after part, increasing within a part.
    pub(super) planes: Vec<usize>,
    /// The parts as lists of positions in `planes`.
    pub(super) lists: Lists,
    pub(super) slot: Vec<usize>,
    pub(super) pool: Vec<f64>,
    pub(super) g: Vec<f64>,
    pub(super) beta: Vec<f64>,
    /// `beta` on entry of the inner solve.
    pub(super) old: Vec<f64>,
    pub(super) stats: Vec<Stat>,
    /// Violators of one part: `(g_i, i)`.
    pub(super) cand: Vec<(f64, usize)>,
}

pub(super) struct Solver<'a> {
    pub(super) h: &'a dyn Gram,
    pub(super) mu: f64,
    pub(super) f: &'a [f64],
    pub(super) parts: Lists,
    pub(super) g: Vec<f64>,
    /// Columns of `H` already checked by [`Full`].
    pub(super) checked: Vec<bool>,
    pub(super) stats: Vec<Stat>,
    pub(super) count: Counter,
    pub(super) ws: WorkingSet,
    pub(super) newton: Newton,
    /// The largest working set copied out.
    pub(super) block_max: usize,
}

impl Solver<'_> {
    pub(super) fn run(&mut self, beta: &mut [f64], tol: f64) -> Result<QpResult> {
        self.fresh(beta)?;
        let mut outer = 0;
        let mut stalls = 0;
        let gap = loop {
            let floor = self.noise_floor();
            let gap = scan_all(&self.parts, &self.g, beta, &mut self.stats);
            let target = tol.max(floor);
            if gap <= target || !self.count.left() || outer == MAX_OUTER {
                break gap;
            }
            outer += 1;
            let inner_target = target.max(KAPPA * gap);
            let min_gain = GAIN_NOISE * f64::EPSILON * self.value_scale(beta);
            let (end, made) = if self.select(beta) {
                let res = self.solve_block(beta, inner_target, min_gain)?;
                if res.1 > 0 {
                    renormalise(beta, &self.parts);
                    self.sync(beta)?;
                }
                res
            } else {
                let mut cols = Full {
                    h: self.h,
                    checked: &mut self.checked,
                };
                let res = sweeps(
                    &mut cols,
                    &self.parts,
                    self.mu,
                    &mut self.g,
                    beta,
                    &mut self.stats,
                    gap,
                    inner_target,
                    min_gain,
                    &mut self.count,
                    &mut self.newton,
                )?;
                if res.1 > 0 {
                    renormalise(beta, &self.parts);
                    self.fresh(beta)?;
                }
                res
            };
            // Two stalls in a row: the planes outside the working set did
            // not help either.
            stalls = if end == End::Stalled { stalls + 1 } else { 0 };
            if made == 0 || stalls == 2 {
                // `g` is current (fresh or synchronised): report its gap.
                break scan_all(&self.parts, &self.g, beta, &mut self.stats);
            }
        };
        // D = f.beta - beta.H beta / (2 mu) = (f.beta + g.beta) / 2.
        let fb: f64 = self.f.iter().zip(beta.iter()).map(|(a, b)| a * b).sum();
        let gb: f64 = self.g.iter().zip(beta.iter()).map(|(a, b)| a * b).sum();
        Ok(QpResult {
            value: 0.5 * (fb + gb),
            gap,
            updates: self.count.updates,
        })
    }

    /// `|f.beta| + |beta.H beta| / (2 mu)`, the size of the terms of `D`.
    pub(super) fn value_scale(&self, beta: &[f64]) -> f64 {
        let fb: f64 = self.f.iter().zip(beta.iter()).map(|(a, b)| a * b).sum();
        let gb: f64 = self.g.iter().zip(beta.iter()).map(|(a, b)| a * b).sum();
        fb.abs() + 0.5 * (fb - gb).abs()
    }

    /// Recomputes `g` from scratch.
    pub(super) fn fresh(&mut self, beta: &[f64]) -> Result<()> {
        self.g.copy_from_slice(self.f);
        for (j, &b) in beta.iter().enumerate() {
            if b > 0.0 {
                let c = column_of(self.h, j)?;
                let s = b / self.mu;
                // `g -= s H_j` by the vector kernel: `g + (-s) h` is the
                // bits of `g - s h`.
                let n = self.g.len().min(c.len());
                crate::linalg::axpy(-s, &c[..n], &mut self.g[..n]);
            }
        }
        self.check_gradient(beta)
    }

    /// Brings `g` up to date after `solve_block`: the weight changes of the
    /// working set are applied column by column, so `g` does not inherit
    /// the rounding drift of the incremental updates.
    pub(super) fn sync(&mut self, beta: &[f64]) -> Result<()> {
        let ws = &self.ws;
        for (&j, &old) in ws.planes.iter().zip(&ws.old) {
            let d = beta[j] - old;
            if d != 0.0 {
                let c = column_of(self.h, j)?;
                let s = d / self.mu;
                let n = self.g.len().min(c.len());
                crate::linalg::axpy(-s, &c[..n], &mut self.g[..n]);
            }
        }
        self.check_gradient(beta)
    }

    /// A non-finite entry of `H` in a column of the support makes `g`
    /// non-finite; so does an overflow. Tells which.
    pub(super) fn check_gradient(&self, beta: &[f64]) -> Result<()> {
        let Some(i) = first_non_finite(&self.g) else {
            return Ok(());
        };
        let support = (0..beta.len()).filter(|&j| beta[j] > 0.0);
        for j in support.chain(self.ws.planes.iter().copied()) {
            let c = self.h.column(j);
            if let Some(k) = first_non_finite(c) {
                return Err(non_finite_h(k, j, c[k]));
            }
        }
        Err(Error::non_finite(format!(
            "QP: the gradient overflows at plane {i} (H beta / mu too large)"
        )))
    }

    /// The level below which the gap is rounding noise: `GAP_NOISE eps`
    /// times `sum_p max_{i in p} (|f_i| + |(H beta)_i| / mu)`, the size of
    /// the terms `g` is the difference of.
    pub(super) fn noise_floor(&self) -> f64 {
        let mut scale = 0.0;
        for p in 0..self.parts.len() {
            let m = self
                .parts
                .list(p)
                .iter()
                .map(|&i| self.f[i].abs() + (self.f[i] - self.g[i]).abs())
                .fold(0.0f64, f64::max);
            scale += m;
        }
        GAP_NOISE * f64::EPSILON * scale
    }

    /// Chooses the working set: per part, the support and the planes whose
    /// gradient exceeds the smallest one of the support (the most violating
    /// `max(MIN_VIOLATORS, support size)` of them). Returns false if it is
    /// too large to be worth it.
    pub(super) fn select(&mut self, beta: &[f64]) -> bool {
        let limit = self.block_max;
        let ws = &mut self.ws;
        ws.planes.clear();
        ws.lists.start.clear();
        ws.lists.start.push(0);
        for p in 0..self.parts.len() {
            let from = ws.planes.len();
            let floor = self.g[self.stats[p].v];
            ws.cand.clear();
            for &i in self.parts.list(p) {
                if beta[i] > 0.0 {
                    ws.planes.push(i);
                } else if self.g[i] > floor {
                    ws.cand.push((self.g[i], i));
                }
            }
            let k = MIN_VIOLATORS.max(ws.planes.len() - from);
            if ws.cand.len() > k {
                // Largest gradients first, lowest index among ties: a strict
                // total order, so the chosen set is well defined.
                ws.cand
                    .select_nth_unstable_by(k - 1, |a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                ws.cand.truncate(k);
            }
            ws.planes.extend(ws.cand.iter().map(|&(_, i)| i));
            ws.planes[from..].sort_unstable();
            ws.lists.start.push(ws.planes.len());
            if ws.planes.len() > limit {
                return false;
            }
        }
        true
    }

    /// Pair updates on the working set chosen by `select`, with its own
    /// gradient and the block of `H` copied out column by column as needed;
    /// writes its weights back into `beta`. Returns how the sweeps ended and
    /// the updates made.
    pub(super) fn solve_block(
        &mut self,
        beta: &mut [f64],
        target: f64,
        min_gain: f64,
    ) -> Result<(End, u64)> {
        let ws = &mut self.ws;
        let m = ws.planes.len();
        ws.lists.idx.clear();
        ws.lists.idx.extend(0..m);
        ws.slot.clear();
        ws.slot.resize(m, NONE);
        ws.pool.clear();
        ws.pool.reserve(m * m);
        ws.g.clear();
        ws.g.extend(ws.planes.iter().map(|&i| self.g[i]));
        ws.beta.clear();
        ws.beta.extend(ws.planes.iter().map(|&i| beta[i]));
        ws.old.clear();
        ws.old.extend_from_slice(&ws.beta);
        ws.stats.resize(self.parts.len(), Stat::default());
        let gap = scan_all(&ws.lists, &ws.g, &ws.beta, &mut ws.stats);
        let mut cols = Block {
            h: self.h,
            planes: &ws.planes,
            slot: &mut ws.slot,
            pool: &mut ws.pool,
        };
        let res = sweeps(
            &mut cols,
            &ws.lists,
            self.mu,
            &mut ws.g,
            &mut ws.beta,
            &mut ws.stats,
            gap,
            target,
            min_gain,
            &mut self.count,
            &mut self.newton,
        )?;
        for (&i, &b) in ws.planes.iter().zip(&ws.beta) {
            beta[i] = b;
        }
        Ok(res)
    }
}

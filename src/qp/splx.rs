//! Solver of the multi-simplex QP (see the parent module for the problem):
//! warm-started pairwise coordinate ascent in the style of SMO, run on a
//! working set.
//!
//! # Pair steps
//!
//! Write `g = f - H beta / mu` for the gradient of `D`. Moving weight
//! `delta` from a plane `v` of part `p` with `beta_v > 0` to a plane `u` of
//! the same part keeps `beta` feasible and changes `D` by
//!
//! ```text
//! delta (g_u - g_v) - delta^2 c / (2 mu),    c = H_uu + H_vv - 2 H_uv >= 0,
//! ```
//!
//! a concave parabola, maximised over `[0, beta_v]` by
//! `delta = min((g_u - g_v) mu / c, beta_v)`; if `c` is zero up to rounding
//! (`c <= 8 eps (H_uu + H_vv)`, e.g. two identical planes) `D` is linear
//! along the step and `delta = beta_v`. The pair is the most violating one
//! of the part: `u = argmax_{i in p} g_i`, `v = argmin_{i in p, beta_i > 0} g_i`
//! (lowest index among ties). If `g_u <= g_v`, all of the support has the
//! part's largest gradient, which is the optimality condition of the part.
//! After a step `g -= (delta / mu) (H[., u] - H[., v])`: one fused pass over
//! two columns, so an update costs `O(planes)` and allocates nothing.
//!
//! For feasible `beta` and every part `p`, `max_{i in p} g_i - sum_{i in p}
//! beta_i g_i` is what the linearisation of `D` at `beta` gains on the
//! simplex of `p`; by concavity their sum bounds `max D - D(beta)`. This is
//! the gap tested against `tol_gap` and returned.
//!
//! # Which part
//!
//! Parts are visited cyclically. A sweep starts with a scan of every part
//! (which also gives the exact gap for the stopping test); the parts whose
//! gap is at most `1 / (4 num_parts)` of the total are skipped in that
//! sweep (together they hold at most a quarter of it), each other part gets
//! one pair step, after a rescan of that part alone. Always updating the part
//! of largest gap instead needs a scan of all planes per update, not of one
//! part. Measured with the plain `O(planes)` updates on simulated P-BMRM
//! runs (hinge loss, 4,000 examples, dimension 60, up to 4,000 planes,
//! `lambda = 1e-3` and `1e-4`), the largest-gap rule made anywhere from 40%
//! fewer to twice as many updates, each ~3 times dearer (3.7 against
//! 1.25 us at 3,000 planes): the total QP time was 2.5 to 6 times longer
//! with 16 parts (4.7 s against 1.9 s, 3.1 s against 0.5 s) and 64 parts
//! (5.8 s against 2.1 s, 3.2 s against 0.9 s), and the same with one part.
//! Single cold solves of 3,000-plane instances agree: 16 parts 7.1 s
//! against 3.4-4.2 s, 64 parts 14.9 s against 2.6-3.2 s.
//!
//! # Working set
//!
//! Most pair steps of a bundle QP move weight among the few planes of the
//! support, yet each costs a pass over all planes. So the updates run in
//! rounds on a working set: the support plus, per part, the planes whose
//! gradient exceeds the support's smallest (the `max(16, support size)`
//! largest of them). The set gets its own gradient and a copy of its block
//! of `H`, column by column as the steps first use them, and its updates
//! cost `O(set size)`. A round stops at a tenth of the gap it started from
//! (or the tolerance); the weight changes are then applied to the full
//! gradient column by column, the full gap is measured, and a new set is
//! chosen. A set of more than 2,048 planes is not copied; the updates then
//! run on all planes and the gradient is recomputed from scratch after the
//! round. On the same QP instances from simulated runs as above, with
//! 1 / 16 / 64 parts, this took the QP time from 1.30 / 0.56 / 0.97 s to
//! 0.69 / 0.15 / 0.22 s (`lambda = 1e-3`, `tol_gap = 1e-8`), and from
//! 12.1 / 9.3 / 5.6 s to 2.0 / 2.1 / 1.3 s (`lambda = 1e-4`, 2,000 planes).
//!
//! # Numerics and stopping
//!
//! The gradient is computed from scratch on entry (the warm start). After a
//! round on the working set it is updated by the exact weight changes, not
//! by the rounds' incremental updates, so it carries no drift; after a
//! round on all planes it is recomputed from scratch. The returned `gap`
//! and `value` (`(f.beta + g.beta) / 2`) come from this gradient, at the
//! returned `beta`, which is renormalised to sum 1 per part after each
//! round.
//!
//! Besides `tol_gap` and `max_updates` (0 = no limit), the solver stops when
//! more cannot be had in floating point: when the gap is at most
//! `64 eps sum_p max_{i in p} (|f_i| + |(H beta)_i| / mu)` (the rounding
//! noise of `g`), when a sweep changes nothing, or when twice in a row
//! `10,000 + 10 * (planes in the set)` updates have raised `D` by at most
//! `16 eps (|f.beta| + beta.H beta / (2 mu))` in total (`D` no longer
//! changes). It therefore always stops, even with `tol_gap = 0` and no
//! update limit; the gap it returns is then honest but above `tol_gap`.
//! Ill-conditioned problems (`H / mu` large against `f`, many parts sharing
//! few dimensions) converge slowly and can reach that state with a gap of
//! `1e-8` or so relative to `max |g|`.
//!
//! `H` is read only in the columns of planes that carry weight at some
//! point (whole, for the gradient) and in the block of a working set. What
//! is read is checked: a non-finite entry gives [`Error::non_finite`] naming
//! it, a column of the wrong length [`Error::dimension_mismatch`]. Entries
//! never read cannot influence the result and are not inspected: checking
//! all of `H` would cost `O(planes^2)` per call, more than a warm-started
//! solve usually does.
//!
//! Everything is serial and in a fixed order (no hashing, no threads, no
//! randomness), so equal inputs give the same bits.

use super::{Gram, QpOptions, QpResult};
use crate::error::{Error, Result};

/// A curvature `c` at most this times `eps (H_uu + H_vv)` is rounding noise.
const CURV_NOISE: f64 = 8.0;
/// A gap at most this times `eps * scale` is rounding noise (see [`Solver::noise_floor`]).
const GAP_NOISE: f64 = 64.0;
/// In a sweep, parts with a gap at most `total / (SKIP_DEN num_parts)` are skipped.
const SKIP_DEN: f64 = 4.0;
/// An inner solve on the working set stops at `KAPPA` times the gap it
/// started from (or at the tolerance).
const KAPPA: f64 = 0.1;
/// At least this many violators of a part enter the working set.
const MIN_VIOLATORS: usize = 16;
/// A working set of more planes than this is not copied out: the updates
/// then run on all planes and the columns of `H` (the copy of the block
/// would take up to `BLOCK_MAX^2` numbers).
const BLOCK_MAX: usize = 2048;
/// Outer iterations at most (a safety net; far from ever reached).
const MAX_OUTER: u32 = 10_000;
/// Updates are given up as stalled when `STALL_BASE + STALL_PER_PLANE * size`
/// of them in a row raise `D` by at most `GAIN_NOISE eps` times its scale:
/// then `D` no longer changes in floating point.
const STALL_BASE: u64 = 10_000;
const STALL_PER_PLANE: u64 = 10;
const GAIN_NOISE: f64 = 16.0;
/// No column.
const NONE: usize = usize::MAX;

/// Solves the multi-simplex QP
///
/// ```text
/// max_beta  -1/(2 mu) beta^T H beta + f^T beta
/// s.t.      beta >= 0,  sum_{i : part[i] = p} beta_i = 1  for p in 0..num_parts
/// ```
///
/// starting from `beta` (warm start) and leaving the solution in `beta`.
///
/// The entry `beta` need not be feasible: negative entries are set to 0,
/// then each part with a positive sum is rescaled to sum 1, and a part with
/// sum 0 gets weight 1 on its plane with the largest `f_i` (the lowest index
/// among ties).
///
/// Stops when the duality gap is at most `opts.tol_gap`, after
/// `opts.max_updates` pair updates (0 = no limit), or when the gap cannot
/// be reduced further in floating point (see the module documentation). The
/// returned `value` and `gap` are those of the returned `beta`, with the
/// gradient computed without drift.
///
/// # Errors
///
/// * [`Error::dimension_mismatch`] if `f`, `part` or `beta` is not of length
///   `h.size()`, a column of `H` that is read is not of that length, or some
///   `part[i] >= num_parts`;
/// * [`Error::invalid_argument`] if `mu` is not finite and positive,
///   `opts.tol_gap` is NaN, or a part has no plane;
/// * [`Error::non_finite`] if `f`, the entry `beta` or an entry of `H` that is
///   read holds NaN or an infinity (the message names the index), or the
///   gradient overflows.
pub fn solve(
    h: &dyn Gram,
    mu: f64,
    f: &[f64],
    part: &[usize],
    num_parts: usize,
    beta: &mut [f64],
    opts: &QpOptions,
) -> Result<QpResult> {
    solve_impl(h, mu, f, part, num_parts, beta, opts, BLOCK_MAX)
}

/// [`solve`] with the largest working set copied out as a parameter (the
/// tests force both ways of updating with it).
#[allow(clippy::too_many_arguments)]
fn solve_impl(
    h: &dyn Gram,
    mu: f64,
    f: &[f64],
    part: &[usize],
    num_parts: usize,
    beta: &mut [f64],
    opts: &QpOptions,
    block_max: usize,
) -> Result<QpResult> {
    let n = h.size();
    for (name, len) in [("f", f.len()), ("part", part.len()), ("beta", beta.len())] {
        if len != n {
            return Err(Error::dimension_mismatch(format!(
                "QP: {name} has length {len} but H has size {n}"
            )));
        }
    }
    if !(mu.is_finite() && mu > 0.0) {
        return Err(Error::invalid_argument(format!(
            "QP: mu must be finite and positive, got {mu}"
        )));
    }
    if opts.tol_gap.is_nan() {
        return Err(Error::invalid_argument("QP: tol_gap is NaN"));
    }
    let parts = Lists::of_parts(part, num_parts)?;
    if let Some(i) = first_non_finite(f) {
        return Err(Error::non_finite(format!("QP: f[{i}] = {}", f[i])));
    }
    if let Some(i) = first_non_finite(beta) {
        return Err(Error::non_finite(format!(
            "QP: entry beta[{i}] = {}",
            beta[i]
        )));
    }
    if n == 0 {
        return Ok(QpResult {
            value: 0.0,
            gap: 0.0,
            updates: 0,
        });
    }
    project(beta, f, &parts);
    let mut s = Solver {
        h,
        mu,
        f,
        parts,
        g: vec![0.0; n],
        checked: vec![false; n],
        stats: vec![Stat::default(); num_parts],
        count: Counter {
            updates: 0,
            max: opts.max_updates,
        },
        ws: WorkingSet::default(),
        block_max,
    };
    s.run(beta, opts.tol_gap)
}

/// Index lists of the planes of every part, each in increasing order.
#[derive(Default)]
struct Lists {
    /// `idx[start[p]..start[p + 1]]` are the planes of part `p`.
    start: Vec<usize>,
    idx: Vec<usize>,
}

impl Lists {
    fn of_parts(part: &[usize], num_parts: usize) -> Result<Self> {
        let mut start = vec![0usize; num_parts + 1];
        for (i, &p) in part.iter().enumerate() {
            if p >= num_parts {
                return Err(Error::dimension_mismatch(format!(
                    "QP: part[{i}] = {p} but there are {num_parts} parts"
                )));
            }
            start[p + 1] += 1;
        }
        if let Some(p) = (0..num_parts).find(|&p| start[p + 1] == 0) {
            return Err(Error::invalid_argument(format!(
                "QP: part {p} has no plane"
            )));
        }
        for p in 0..num_parts {
            start[p + 1] += start[p];
        }
        let mut next = start.clone();
        let mut idx = vec![0usize; part.len()];
        for (i, &p) in part.iter().enumerate() {
            idx[next[p]] = i;
            next[p] += 1;
        }
        Ok(Lists { start, idx })
    }

    fn len(&self) -> usize {
        self.start.len() - 1
    }

    #[inline]
    fn list(&self, p: usize) -> &[usize] {
        &self.idx[self.start[p]..self.start[p + 1]]
    }
}

/// Makes `beta` feasible (see [`solve`]).
fn project(beta: &mut [f64], f: &[f64], parts: &Lists) {
    for b in beta.iter_mut() {
        if *b < 0.0 {
            *b = 0.0;
        }
    }
    for p in 0..parts.len() {
        let list = parts.list(p);
        let max = list.iter().fold(0.0f64, |m, &i| m.max(beta[i]));
        if max > 0.0 {
            // Scale by the largest entry first so the sum cannot overflow.
            let sum: f64 = list.iter().map(|&i| beta[i] / max).sum();
            for &i in list {
                beta[i] = (beta[i] / max) / sum;
            }
        } else {
            let mut best = list[0];
            for &i in list {
                if f[i] > f[best] {
                    best = i;
                }
            }
            beta[best] = 1.0;
        }
    }
}

/// Rescales every part of `beta` to sum 1 (undoing the rounding drift of
/// the updates).
fn renormalise(beta: &mut [f64], parts: &Lists) {
    for p in 0..parts.len() {
        let list = parts.list(p);
        let sum: f64 = list.iter().map(|&i| beta[i]).sum();
        for &i in list {
            beta[i] /= sum;
        }
    }
}

/// The index of the first non-finite entry, if any.
fn first_non_finite(x: &[f64]) -> Option<usize> {
    // `x * 0` is NaN exactly for non-finite `x`; the sum vectorises.
    let mut acc = [0.0f64; 4];
    let chunks = x.chunks_exact(4);
    let rest = chunks.remainder();
    for c in chunks {
        acc[0] += c[0] * 0.0;
        acc[1] += c[1] * 0.0;
        acc[2] += c[2] * 0.0;
        acc[3] += c[3] * 0.0;
    }
    let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for v in rest {
        s += v * 0.0;
    }
    if s == 0.0 {
        None
    } else {
        x.iter().position(|v| !v.is_finite())
    }
}

/// Column `j` of `H` after checking its length.
#[inline]
fn column_of(h: &dyn Gram, j: usize) -> Result<&[f64]> {
    let c = h.column(j);
    if c.len() != h.size() {
        return Err(Error::dimension_mismatch(format!(
            "QP: column {j} of H has length {} but H has size {}",
            c.len(),
            h.size()
        )));
    }
    Ok(c)
}

/// The error for a non-finite entry `H[i][j]`.
fn non_finite_h(i: usize, j: usize, v: f64) -> Error {
    Error::non_finite(format!("QP: H[{i}][{j}] = {v}"))
}

/// What a scan of one part finds.
#[derive(Debug, Clone, Copy, Default)]
struct Stat {
    /// `argmax_{i in p} g_i` (the lowest index among ties).
    u: usize,
    /// `argmin_{i in p, beta_i > 0} g_i` (the lowest index among ties).
    v: usize,
    /// `g_u - g_v`.
    diff: f64,
    /// `max(0, g_u - sum_{i in p} beta_i g_i)`.
    gap: f64,
}

#[inline]
fn scan(list: &[usize], g: &[f64], beta: &[f64]) -> Stat {
    let mut u = list[0];
    let mut gu = g[u];
    let mut v = list[0];
    let mut gv = f64::INFINITY;
    let mut bg = 0.0;
    for &i in list {
        let gi = g[i];
        if gi > gu {
            u = i;
            gu = gi;
        }
        let b = beta[i];
        if b > 0.0 {
            bg += b * gi;
            if gi < gv {
                v = i;
                gv = gi;
            }
        }
    }
    Stat {
        u,
        v,
        diff: gu - gv,
        gap: (gu - bg).max(0.0),
    }
}

/// Scans every part into `stats`; returns the total gap.
fn scan_all(lists: &Lists, g: &[f64], beta: &[f64], stats: &mut [Stat]) -> f64 {
    let mut gap = 0.0;
    for (p, st) in stats.iter_mut().enumerate() {
        *st = scan(lists.list(p), g, beta);
        gap += st.gap;
    }
    gap
}

/// The update counter and its limit.
struct Counter {
    updates: u64,
    /// 0 = no limit.
    max: u64,
}

impl Counter {
    #[inline]
    fn left(&self) -> bool {
        self.max == 0 || self.updates < self.max
    }
}

/// Where the pair updates read the columns of their problem.
trait Columns {
    /// Makes column `j` readable (fetches or checks it on its first use).
    fn prepare(&mut self, j: usize) -> Result<()>;
    /// Column `j`, after `prepare(j)`.
    fn col(&self, j: usize) -> &[f64];
}

/// The columns of `H` itself, each checked on its first use.
struct Full<'a, 'b> {
    h: &'a dyn Gram,
    checked: &'b mut [bool],
}

impl Columns for Full<'_, '_> {
    #[inline]
    fn prepare(&mut self, j: usize) -> Result<()> {
        if !self.checked[j] {
            let c = column_of(self.h, j)?;
            if let Some(i) = first_non_finite(c) {
                return Err(non_finite_h(i, j, c[i]));
            }
            self.checked[j] = true;
        }
        Ok(())
    }
    #[inline]
    fn col(&self, j: usize) -> &[f64] {
        self.h.column(j)
    }
}

/// The block of `H` on the working set, a column copied out (and checked)
/// the first time a pair update uses it.
struct Block<'a, 'b> {
    h: &'a dyn Gram,
    planes: &'b [usize],
    /// `slot[a]`: where local column `a` is in `pool` (`NONE`: not yet).
    slot: &'b mut [usize],
    /// Copied columns, each of `planes.len()` entries; its capacity is
    /// reserved for all of them, so it never reallocates.
    pool: &'b mut Vec<f64>,
}

impl Columns for Block<'_, '_> {
    #[inline]
    fn prepare(&mut self, a: usize) -> Result<()> {
        if self.slot[a] == NONE {
            let m = self.planes.len();
            let j = self.planes[a];
            let c = column_of(self.h, j)?;
            let from = self.pool.len();
            self.pool.extend(self.planes.iter().map(|&i| c[i]));
            if let Some(b) = first_non_finite(&self.pool[from..]) {
                return Err(non_finite_h(self.planes[b], j, self.pool[from + b]));
            }
            self.slot[a] = from / m;
        }
        Ok(())
    }
    #[inline]
    fn col(&self, a: usize) -> &[f64] {
        let m = self.planes.len();
        let s = self.slot[a] * m;
        &self.pool[s..s + m]
    }
}

/// One pair step from `v` to `u` (`g_u - g_v = diff > 0`) on the problem
/// `(cols, g, beta)`. Returns the increase of `D` if `beta` changed.
#[inline]
fn step<C: Columns>(
    cols: &mut C,
    mu: f64,
    g: &mut [f64],
    beta: &mut [f64],
    st: &Stat,
) -> Result<Option<f64>> {
    let (u, v) = (st.u, st.v);
    cols.prepare(u)?;
    cols.prepare(v)?;
    let (cu, cv) = (cols.col(u), cols.col(v));
    let (huu, hvv, huv) = (cu[u], cv[v], cu[v]);
    let c = huu + hvv - 2.0 * huv;
    let bv = beta[v];
    let (delta, gain) = if c > CURV_NOISE * f64::EPSILON * (huu.abs() + hvv.abs()) {
        let delta = (st.diff * mu / c).min(bv);
        (delta, delta * (st.diff - 0.5 * delta * c / mu))
    } else {
        (bv, bv * st.diff)
    };
    // `diff`, `mu` and `c` are positive and finite, so `delta` is not NaN;
    // it is 0 if the quotient underflows.
    if delta <= 0.0 {
        return Ok(None);
    }
    let bu = beta[u];
    let new_bu = bu + delta;
    let new_bv = if delta >= bv { 0.0 } else { bv - delta };
    if new_bu == bu && new_bv == bv {
        return Ok(None);
    }
    beta[u] = new_bu;
    beta[v] = new_bv;
    let s = delta / mu;
    for ((gi, &a), &b) in g.iter_mut().zip(cu).zip(cv) {
        *gi -= s * (a - b);
    }
    Ok(Some(gain))
}

/// How a run of sweeps ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The gap reached the target.
    Target,
    /// The update budget is spent.
    Budget,
    /// A sweep changed nothing, or `D` stopped increasing (in floating point).
    Stalled,
}

/// Cyclic sweeps of pair updates on the problem `(cols, lists, g, beta)`,
/// whose scan `stats` with total `gap` is current, until its gap is at most
/// `target`, the update budget is spent, or progress stops (`D` rises by
/// less than `min_gain` over a long run of updates). `g` is kept up to
/// date incrementally. Returns how it ended and the updates made.
#[allow(clippy::too_many_arguments)]
fn sweeps<C: Columns>(
    cols: &mut C,
    lists: &Lists,
    mu: f64,
    g: &mut [f64],
    beta: &mut [f64],
    stats: &mut [Stat],
    mut gap: f64,
    target: f64,
    min_gain: f64,
    count: &mut Counter,
) -> Result<(End, u64)> {
    let start = count.updates;
    let num_parts = lists.len();
    let window = STALL_BASE + STALL_PER_PLANE * g.len() as u64;
    let mut window_start = start;
    let mut gained = 0.0;
    while gap > target {
        let thr = gap / (SKIP_DEN * num_parts as f64);
        // `stats` describe the current `g` until the first update.
        let mut current = true;
        let mut any = false;
        for (p, &s0) in stats.iter().enumerate() {
            if !count.left() {
                return Ok((End::Budget, count.updates - start));
            }
            // `gap` is never NaN (it comes from `f64::max`).
            if s0.gap <= thr {
                continue;
            }
            let st = if current {
                s0
            } else {
                scan(lists.list(p), g, beta)
            };
            // `diff > 0` is false for NaN too.
            if st.diff > 0.0 {
                if let Some(gain) = step(cols, mu, g, beta, &st)? {
                    count.updates += 1;
                    gained += gain;
                    current = false;
                    any = true;
                }
            }
        }
        if !any {
            return Ok((End::Stalled, count.updates - start));
        }
        if count.updates - window_start >= window {
            if gained <= min_gain {
                return Ok((End::Stalled, count.updates - start));
            }
            window_start = count.updates;
            gained = 0.0;
        }
        gap = scan_all(lists, g, beta, stats);
    }
    Ok((End::Target, count.updates - start))
}

/// Buffers of the working set, reused between outer iterations.
#[derive(Default)]
struct WorkingSet {
    /// The planes, part after part, increasing within a part.
    planes: Vec<usize>,
    /// The parts as lists of positions in `planes`.
    lists: Lists,
    slot: Vec<usize>,
    pool: Vec<f64>,
    g: Vec<f64>,
    beta: Vec<f64>,
    /// `beta` on entry of the inner solve.
    old: Vec<f64>,
    stats: Vec<Stat>,
    /// Violators of one part: `(g_i, i)`.
    cand: Vec<(f64, usize)>,
}

struct Solver<'a> {
    h: &'a dyn Gram,
    mu: f64,
    f: &'a [f64],
    parts: Lists,
    g: Vec<f64>,
    /// Columns of `H` already checked by [`Full`].
    checked: Vec<bool>,
    stats: Vec<Stat>,
    count: Counter,
    ws: WorkingSet,
    /// The largest working set copied out.
    block_max: usize,
}

impl Solver<'_> {
    fn run(&mut self, beta: &mut [f64], tol: f64) -> Result<QpResult> {
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
    fn value_scale(&self, beta: &[f64]) -> f64 {
        let fb: f64 = self.f.iter().zip(beta.iter()).map(|(a, b)| a * b).sum();
        let gb: f64 = self.g.iter().zip(beta.iter()).map(|(a, b)| a * b).sum();
        fb.abs() + 0.5 * (fb - gb).abs()
    }

    /// Recomputes `g` from scratch.
    fn fresh(&mut self, beta: &[f64]) -> Result<()> {
        self.g.copy_from_slice(self.f);
        for (j, &b) in beta.iter().enumerate() {
            if b > 0.0 {
                let c = column_of(self.h, j)?;
                let s = b / self.mu;
                for (gi, &hij) in self.g.iter_mut().zip(c) {
                    *gi -= s * hij;
                }
            }
        }
        self.check_gradient(beta)
    }

    /// Brings `g` up to date after `solve_block`: the weight changes of the
    /// working set are applied column by column, so `g` does not inherit
    /// the rounding drift of the incremental updates.
    fn sync(&mut self, beta: &[f64]) -> Result<()> {
        let ws = &self.ws;
        for (&j, &old) in ws.planes.iter().zip(&ws.old) {
            let d = beta[j] - old;
            if d != 0.0 {
                let c = column_of(self.h, j)?;
                let s = d / self.mu;
                for (gi, &hij) in self.g.iter_mut().zip(c) {
                    *gi -= s * hij;
                }
            }
        }
        self.check_gradient(beta)
    }

    /// A non-finite entry of `H` in a column of the support makes `g`
    /// non-finite; so does an overflow. Tells which.
    fn check_gradient(&self, beta: &[f64]) -> Result<()> {
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
    fn noise_floor(&self) -> f64 {
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
    fn select(&mut self, beta: &[f64]) -> bool {
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
    fn solve_block(&mut self, beta: &mut [f64], target: f64, min_gain: f64) -> Result<(End, u64)> {
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
        )?;
        for (&i, &b) in ws.planes.iter().zip(&ws.beta) {
            beta[i] = b;
        }
        Ok(res)
    }
}

#[cfg(test)]
mod tests;

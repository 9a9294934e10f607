//! The pair steps and the sweeps over the parts (see the parent module).

use super::columns::Columns;
use super::newton::Newton;
use super::*;
use crate::error::Result;

/// What a scan of one part finds.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Stat {
    /// `argmax_{i in p} g_i` (the lowest index among ties).
    pub(super) u: usize,
    /// `argmin_{i in p, beta_i > 0} g_i` (the lowest index among ties).
    pub(super) v: usize,
    /// `g_u - g_v`.
    pub(super) diff: f64,
    /// `max(0, g_u - sum_{i in p} beta_i g_i)`.
    pub(super) gap: f64,
}

#[inline]
pub(super) fn scan(list: &[usize], g: &[f64], beta: &[f64]) -> Stat {
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
pub(super) fn scan_all(lists: &Lists, g: &[f64], beta: &[f64], stats: &mut [Stat]) -> f64 {
    let mut gap = 0.0;
    for (p, st) in stats.iter_mut().enumerate() {
        *st = scan(lists.list(p), g, beta);
        gap += st.gap;
    }
    gap
}

/// The update counter and its limits: a number of updates and a time.
pub(super) struct Counter {
    pub(super) updates: u64,
    /// 0 = no limit.
    pub(super) max: u64,
    /// When the solve must end (`None`: no limit); looked at every
    /// `DEADLINE_EVERY` updates.
    pub(super) deadline: Option<std::time::Instant>,
    /// The deadline has passed (it stays passed).
    pub(super) expired: bool,
}

/// Updates between two readings of the clock (a reading costs about as
/// much as a few updates of a small problem).
const DEADLINE_EVERY: u64 = 64;

impl Counter {
    /// Whether another update may be made.
    #[inline]
    pub(super) fn left(&mut self) -> bool {
        if self.max != 0 && self.updates >= self.max {
            return false;
        }
        if let Some(d) = self.deadline {
            if !self.expired && self.updates.is_multiple_of(DEADLINE_EVERY) {
                self.expired = std::time::Instant::now() >= d;
            }
        }
        !self.expired
    }
}

/// One pair step from `v` to `u` (`g_u - g_v = diff > 0`) on the problem
/// `(cols, g, beta)`. Returns the increase of `D` if `beta` changed.
#[inline]
pub(super) fn step<C: Columns>(
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
    // By the vector kernel (the bits of the plain loop).
    let n = g.len().min(cu.len()).min(cv.len());
    crate::linalg::sub_scaled_diff(s, &cu[..n], &cv[..n], &mut g[..n]);
    Ok(Some(gain))
}

/// How a run of sweeps ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
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
/// date incrementally. Once `NEWTON_AFTER` pair updates per plane have not
/// reached `target`, and then after every `planes` more (or as many as the
/// last phase's Newton steps cost, if more), a phase of Newton steps is
/// taken (see "Newton steps" in the parent module). Returns how it ended
/// and the updates made.
#[allow(clippy::too_many_arguments)]
pub(super) fn sweeps<C: Columns>(
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
    solver: &mut Newton,
) -> Result<(End, u64)> {
    let start = count.updates;
    let num_parts = lists.len();
    let planes = g.len();
    let window = STALL_BASE + STALL_PER_PLANE * planes as u64;
    let mut window_start = start;
    let mut gained = 0.0;
    // The first phase of Newton steps after `NEWTON_AFTER` updates per
    // plane, the next ones `planes` updates (or the last phase's cost)
    // apart.
    let mut newton_at = start + NEWTON_AFTER * planes as u64;
    while gap > target {
        if count.updates >= newton_at {
            let phase = solver.phase(cols, lists, mu, g, beta, count)?;
            let step_cost = Newton::cost(solver.support_len(), planes);
            newton_at = count.updates + (phase.steps.max(1) * step_cost).max(planes as u64);
            if phase.steps > 0 {
                gained += phase.gain;
                gap = scan_all(lists, g, beta, stats);
                if gap <= target {
                    break;
                }
            }
        }
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

//! The "precision lost" stop shared by every method that certifies a gap:
//! a stopping tolerance below what rounding lets the bound certify would
//! keep the gap above it forever, so the run ends saying so instead of
//! spinning until its limits.

use super::Context;
use crate::error::{Error, Result};

/// Bounds in a row at the rounding floor before the run ends with an error
/// saying so (the gap could never close).
pub(crate) const IMPRECISE_LIMIT: u32 = 10;

/// Ends the run when the stopping tolerance is below what rounding lets
/// the bound certify: in [`IMPRECISE_LIMIT`] bounds in a row what rounding
/// took off the bound (`allowance`) was at least half of the gap to
/// `bound` and more than `max(tol_abs, tol_rel |F|)`, so the gap stalls
/// above the tolerance (a tolerance of 0 is off and never fires). `count`
/// is the bounds in a row so far, `t` the iteration; returns the new count.
pub(crate) fn check_tolerance(
    allowance: f64,
    bound: f64,
    ctx: &Context<'_>,
    count: u32,
    t: u64,
) -> Result<u32> {
    let s = ctx.settings;
    let target = s.tol_abs.max(s.tol_rel * ctx.primal().abs());
    // At the rounding floor: more than half of this bound's gap is
    // rounding, and that part exceeds the tolerance.
    let at_floor = ctx.primal() - bound <= 2.0 * allowance;
    if target.is_nan() || target <= 0.0 || allowance.is_nan() || allowance <= target || !at_floor {
        return Ok(0);
    }
    if count + 1 < IMPRECISE_LIMIT {
        return Ok(count + 1);
    }
    let which = if s.tol_abs >= s.tol_rel * ctx.primal().abs() {
        format!("tol_abs = {:.3e}", s.tol_abs)
    } else {
        format!("tol_rel = {:.3e} (a gap of {target:.3e})", s.tol_rel)
    };
    Err(Error::invalid_argument(format!(
        "precision lost at iteration {t}: {which} is below the rounding error bound of the \
         lower bound, {allowance:.3e} (F(w) = {:.6e}, gap {:.3e}), so the gap can never reach \
         it in f64: raise the tolerance",
        ctx.primal(),
        ctx.primal() - bound
    )))
}

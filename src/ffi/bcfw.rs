//! BCFW's additions to the C ABI: box constraints, BCFW's own figures and
//! per-pass rows, the regularisation path, and the per-block dual state
//! (saved and restored for warm starts across solvers).

use crate::bcfw::{BcfwStats, BlockDual, Breakpoint, CornerDual};
use crate::error::{Error, Result};
use crate::oracle::SparseVec;
use crate::solver::Iteration;

use super::boundary::{catch, non_null, status};
use super::solver::bmrm_solver;
use super::types::{bmrm_exit, bmrm_status};

/// BCFW's figures, cumulative over the runs of one solver
/// (`bmrm_solver_bcfw_info`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct bmrm_bcfw_info {
    /// Passes of n block steps.
    pub passes: u64,
    /// Max-oracle calls, exact gap passes included.
    pub oracle_calls: u64,
    /// Block steps answered by the cache (no oracle call).
    pub cache_hits: u64,
    /// Corners kept other than the ground truths (active sets and caches).
    pub corners: u64,
    /// Corners with a positive weight, ground truths included.
    pub active_corners: u64,
    /// Blocks whose w_i is stored dense (the others are sparse).
    pub dense_blocks: u64,
    /// Bytes held by the per-block state and the iterates.
    pub memory_bytes: u64,
    /// oracle_calls / n: the papers' effective passes.
    pub effective_passes: f64,
    /// The dual's loss term l = sum_i l_i (the BCFW MATLAB code's `ell`)
    /// paired with the w the last `bmrm_solver_run` returned: l itself
    /// when that w is the iterate (or under a box); when the run returned
    /// another point (its best primal value came from an earlier iterate or
    /// an averaged point), the value for which ell - lambda/2 |w|^2 is
    /// `dual` (rounded down), so that this certificate is valid for the w
    /// returned. The iterate's own l comes with it in `bcfw_iterate`.
    pub ell: f64,
    /// The dual value at the current weights (a lower bound on min F).
    pub dual: f64,
    /// The sum of the block-gap estimates (not a certificate).
    pub gap_estimate: f64,
    /// The total gap of the last exact pass (infinity before the first).
    pub last_exact_gap: f64,
}

impl From<BcfwStats> for bmrm_bcfw_info {
    fn from(s: BcfwStats) -> Self {
        bmrm_bcfw_info {
            passes: s.passes,
            oracle_calls: s.oracle_calls,
            cache_hits: s.cache_hits,
            corners: s.corners,
            active_corners: s.active_corners,
            dense_blocks: s.dense_blocks,
            memory_bytes: s.memory_bytes,
            effective_passes: s.effective_passes,
            ell: s.returned_ell,
            dual: s.dual,
            gap_estimate: s.gap_estimate,
            last_exact_gap: s.last_exact_gap,
        }
    }
}

/// One BCFW pass of the last run (`bmrm_solver_bcfw_pass`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct bmrm_bcfw_pass {
    /// The pass number in the run (1-based).
    pub pass: u64,
    /// Oracle calls of the run so far.
    pub oracle_calls: u64,
    /// Effective passes of the solver so far (oracle calls / n).
    pub effective_passes: f64,
    /// The best primal value so far (from the exact passes).
    pub primal: f64,
    /// The best dual value so far; primal - lower_bound is a certified gap.
    pub lower_bound: f64,
    /// The sum of the block-gap estimates after the pass.
    pub gap_estimate: f64,
    /// The exact duality gap of the iterate when an exact pass ended this
    /// pass (every gap_check passes), else NaN.
    pub exact_gap: f64,
    /// Seconds since the run started.
    pub elapsed_seconds: f64,
}

impl From<&Iteration> for bmrm_bcfw_pass {
    fn from(r: &Iteration) -> Self {
        bmrm_bcfw_pass {
            pass: r.iteration,
            oracle_calls: r.oracle_calls,
            effective_passes: r.effective_passes,
            primal: r.primal,
            lower_bound: r.lower_bound,
            gap_estimate: r.gap_estimate,
            exact_gap: r.exact_gap,
            elapsed_seconds: r.elapsed_seconds,
        }
    }
}

/// One breakpoint of the regularisation path (`bmrm_path_breakpoint`): its
/// w is eps-optimal for every lambda in [lambda_low, lambda].
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct bmrm_breakpoint {
    /// The lambda this breakpoint was solved at.
    pub lambda: f64,
    /// The smallest lambda this w is eps-optimal for (0: every smaller one).
    pub lambda_low: f64,
    /// The exact duality gap at lambda (at most path_a * eps).
    pub gap: f64,
    /// The primal value at lambda.
    pub primal: f64,
    /// BCFW passes spent at this breakpoint.
    pub passes: u64,
    /// Oracle calls along the path so far.
    pub oracle_calls: u64,
    /// How the solve at this breakpoint ended.
    pub exit: bmrm_exit,
}

/// A regularisation path (opaque): made by `bmrm_solver_bcfw_path`, freed by
/// `bmrm_path_free`.
pub struct bmrm_path {
    points: Vec<Breakpoint>,
}

/// Sets box constraints lower <= w <= upper (`lower` and `upper` each NULL,
/// meaning no bound, or `dim` doubles; use -INFINITY / INFINITY for free
/// coordinates) on a BCFW solver, a bundle-method solver (BMRM, Prox-BMRM,
/// P-BMRM, Prox-P-BMRM) or an SGD solver. BCFW's next run starts afresh at
/// w = clip(0); a bundle method's or SGD's run projects its start onto the
/// box, keeps its cutting planes and keeps every iterate in the box (SGD,
/// alone or as the `sgd_passes` start, projects every step onto it).
/// Errors: BMRM_ERROR_INVALID_ARGUMENT (the cutting-plane method, lower >
/// upper, NaN), BMRM_ERROR_DIMENSION_MISMATCH.
///
/// # Safety
/// `s` is NULL or a live solver; `lower` and `upper` are NULL or readable
/// for `dim` doubles.
#[no_mangle]
pub unsafe extern "C" fn bmrm_solver_set_bounds(
    s: *mut bmrm_solver,
    lower: *const f64,
    upper: *const f64,
    dim: usize,
) -> bmrm_status {
    status("bmrm_solver_set_bounds", || {
        // SAFETY: forwarded from this function's contract.
        let solver = unsafe { bmrm_solver::from_ptr(s) }?;
        let mut guard = solver.lock()?;
        if dim != guard.dim() {
            return Err(Error::dimension_mismatch(format!(
                "dim = {dim} but the problem's dimension is {}",
                guard.dim()
            )));
        }
        let read = |p: *const f64, fill: f64| -> Vec<f64> {
            if p.is_null() {
                vec![fill; dim]
            } else {
                // SAFETY: not NULL, readable for `dim` doubles by the contract.
                unsafe { std::slice::from_raw_parts(p, dim) }.to_vec()
            }
        };
        let lo = read(lower, f64::NEG_INFINITY);
        let hi = read(upper, f64::INFINITY);
        guard.set_bounds(lo, hi)
    })
}

/// Writes BCFW's figures into `*out` (written only on success). Errors:
/// BMRM_ERROR_INVALID_ARGUMENT when the solver has not run BCFW.
///
/// # Safety
/// `s` is NULL or a live solver; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn bmrm_solver_bcfw_info(
    s: *const bmrm_solver,
    out: *mut bmrm_bcfw_info,
) -> bmrm_status {
    status("bmrm_solver_bcfw_info", || {
        // SAFETY: forwarded from this function's contract.
        let solver = unsafe { bmrm_solver::from_ptr(s) }?;
        non_null(out, "out")?;
        let stats = solver
            .lock()?
            .bcfw_stats()
            .ok_or_else(|| Error::invalid_argument("the solver has not run BCFW"))?;
        // SAFETY: `out` is not NULL and writable by the contract.
        unsafe { out.write(stats.into()) };
        Ok(())
    })
}

/// Writes pass `k` (0-based, below `bmrm_solver_history_len`) of the last
/// BCFW run into `*out` (written only on success).
///
/// # Safety
/// `s` is NULL or a live solver; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn bmrm_solver_bcfw_pass(
    s: *const bmrm_solver,
    k: usize,
    out: *mut bmrm_bcfw_pass,
) -> bmrm_status {
    status("bmrm_solver_bcfw_pass", || {
        // SAFETY: forwarded from this function's contract.
        let solver = unsafe { bmrm_solver::from_ptr(s) }?;
        non_null(out, "out")?;
        let guard = solver.lock()?;
        if guard.bcfw_stats().is_none() {
            return Err(Error::invalid_argument("the solver has not run BCFW"));
        }
        let history = guard.history();
        let row = history.get(k).ok_or_else(|| {
            Error::invalid_argument(format!("k = {k} but the run has {} passes", history.len()))
        })?;
        // SAFETY: `out` is not NULL and writable by the contract.
        unsafe { out.write(row.into()) };
        Ok(())
    })
}

/// Computes BCFW's epsilon-approximate regularisation path from lambda_max
/// down to `lambda_min` (at most `max_breakpoints`, 0 = no limit): each
/// breakpoint's w is eps-optimal on [lambda_low, lambda]. Writes the path to
/// `*out` (written only on success; free it with `bmrm_path_free`). The
/// solver is left at the last breakpoint's lambda and state, so
/// `bmrm_solver_run` continues from there. Uses the solver's settings
/// (path_a, gap_check, steps, cache, limits per breakpoint).
///
/// # Safety
/// `s` is NULL or a live BCFW solver; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn bmrm_solver_bcfw_path(
    s: *mut bmrm_solver,
    eps: f64,
    lambda_min: f64,
    max_breakpoints: usize,
    out: *mut *mut bmrm_path,
) -> bmrm_status {
    status("bmrm_solver_bcfw_path", || {
        // SAFETY: forwarded from this function's contract.
        let solver = unsafe { bmrm_solver::from_ptr(s) }?;
        non_null(out, "out")?;
        let limit = if max_breakpoints == 0 {
            usize::MAX
        } else {
            max_breakpoints
        };
        let points = solver.lock()?.bcfw_path(eps, lambda_min, limit)?;
        let path = Box::into_raw(Box::new(bmrm_path { points }));
        // SAFETY: `out` is not NULL and writable by the contract.
        unsafe { out.write(path) };
        Ok(())
    })
}

/// The number of breakpoints of a path (0 for NULL).
///
/// # Safety
/// `p` is NULL or a live path.
#[no_mangle]
pub unsafe extern "C" fn bmrm_path_len(p: *const bmrm_path) -> usize {
    catch("bmrm_path_len", || {
        // SAFETY: forwarded from this function's contract.
        Ok(unsafe { path_ref(p) }?.points.len())
    })
    .unwrap_or(0)
}

/// Writes breakpoint `k` into `*out` and, when `w` is not NULL, its weights
/// into `w[0..dim)` (`dim` must be the problem's dimension).
///
/// # Safety
/// `p` is NULL or a live path; `out` NULL or writable; `w` NULL or writable
/// for `dim` doubles.
#[no_mangle]
pub unsafe extern "C" fn bmrm_path_breakpoint(
    p: *const bmrm_path,
    k: usize,
    out: *mut bmrm_breakpoint,
    w: *mut f64,
    dim: usize,
) -> bmrm_status {
    status("bmrm_path_breakpoint", || {
        // SAFETY: forwarded from this function's contract.
        let path = unsafe { path_ref(p) }?;
        non_null(out, "out")?;
        let point = path.points.get(k).ok_or_else(|| {
            Error::invalid_argument(format!(
                "k = {k} but the path has {} breakpoints",
                path.points.len()
            ))
        })?;
        if !w.is_null() {
            if dim != point.w.len() {
                return Err(Error::dimension_mismatch(format!(
                    "dim = {dim} but the problem's dimension is {}",
                    point.w.len()
                )));
            }
            // SAFETY: not NULL and writable for `dim` doubles by the contract.
            unsafe { std::slice::from_raw_parts_mut(w, dim) }.copy_from_slice(&point.w);
        }
        let row = bmrm_breakpoint {
            lambda: point.lambda,
            lambda_low: point.lambda_low,
            gap: point.gap,
            primal: point.primal,
            passes: point.passes,
            oracle_calls: point.oracle_calls,
            exit: point.exit.into(),
        };
        // SAFETY: `out` is not NULL and writable by the contract.
        unsafe { out.write(row) };
        Ok(())
    })
}

/// Frees a path. NULL is fine.
///
/// # Safety
/// `p` is NULL or a live path, not used again.
#[no_mangle]
pub unsafe extern "C" fn bmrm_path_free(p: *mut bmrm_path) {
    let _ = status("bmrm_path_free", || {
        if !p.is_null() {
            // SAFETY: made by `Box::into_raw` in `bmrm_solver_bcfw_path`,
            // freed once by the contract.
            drop(unsafe { Box::from_raw(p) });
        }
        Ok(())
    });
}

/// # Safety
/// `p` is NULL or a live path.
unsafe fn path_ref<'a>(p: *const bmrm_path) -> Result<&'a bmrm_path> {
    non_null(p, "the path p")?;
    // SAFETY: not NULL and live by the caller's contract.
    Ok(unsafe { &*p })
}

/// The sizes of one block's BCFW dual state (`bmrm_solver_bcfw_block`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct bmrm_bcfw_block {
    /// Corners kept other than the ground truth, each with a label id, a
    /// loss, a dual weight and psi.
    pub num_corners: usize,
    /// Non-zeros of the corners' psi together.
    pub psi_nnz: usize,
    /// The block's last gap estimate (INFINITY: unknown).
    pub gap_estimate: f64,
}

/// Block `i`'s BCFW dual state, once BCFW has run with corners kept (a cache
/// or pairwise/away steps): the sizes into `*out` and, when the arrays are
/// not NULL (all or none), the corners: `labels`, `losses`, `alphas`
/// (`num_corners` each), `psi_start` (`num_corners + 1` offsets into
/// `psi_index`/`psi_value`, `psi_nnz` each; 0-based indices). The ground
/// truth holds `1 - sum alphas`. Errors: BMRM_ERROR_INVALID_ARGUMENT (no
/// BCFW state, corners not kept, `i` out of range, some arrays NULL).
///
/// # Safety
/// `s` is NULL or a live solver; `out` NULL or writable; the arrays NULL or
/// writable for the sizes above.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn bmrm_solver_bcfw_block(
    s: *const bmrm_solver,
    i: usize,
    out: *mut bmrm_bcfw_block,
    labels: *mut u64,
    losses: *mut f64,
    alphas: *mut f64,
    psi_start: *mut usize,
    psi_index: *mut usize,
    psi_value: *mut f64,
) -> bmrm_status {
    status("bmrm_solver_bcfw_block", || {
        // SAFETY: forwarded from this function's contract.
        let solver = unsafe { bmrm_solver::from_ptr(s) }?;
        non_null(out, "out")?;
        let mut guard = solver.lock()?;
        let local = guard.local_mut()?;
        let b = local.bcfw().and_then(|h| h.block_dual(i)).ok_or_else(|| {
            Error::invalid_argument(format!(
                "no BCFW dual state for block {i}: BCFW has not run, i is out of range, or \
                 corners are not kept (FW steps without a cache)"
            ))
        })?;
        let nnz: usize = b.corners.iter().map(|c| c.psi.nnz()).sum();
        let arrays = [
            labels.is_null(),
            losses.is_null(),
            alphas.is_null(),
            psi_start.is_null(),
            psi_index.is_null(),
            psi_value.is_null(),
        ];
        if arrays.iter().any(|&x| x) && !arrays.iter().all(|&x| x) {
            return Err(Error::invalid_argument(
                "give all the corner arrays or none",
            ));
        }
        if !labels.is_null() {
            let k = b.corners.len();
            // SAFETY: not NULL and writable for the sizes reported by this
            // function, by the contract.
            let (lab, los, alp, start, idx, val) = unsafe {
                (
                    std::slice::from_raw_parts_mut(labels, k),
                    std::slice::from_raw_parts_mut(losses, k),
                    std::slice::from_raw_parts_mut(alphas, k),
                    std::slice::from_raw_parts_mut(psi_start, k + 1),
                    std::slice::from_raw_parts_mut(psi_index, nnz),
                    std::slice::from_raw_parts_mut(psi_value, nnz),
                )
            };
            let mut at = 0;
            for (c, corner) in b.corners.iter().enumerate() {
                lab[c] = corner.label;
                los[c] = corner.loss;
                alp[c] = corner.alpha;
                start[c] = at;
                for (&j, &x) in corner.psi.idx.iter().zip(&corner.psi.val) {
                    idx[at] = j as usize;
                    val[at] = x;
                    at += 1;
                }
            }
            start[k] = at;
        }
        let sizes = bmrm_bcfw_block {
            num_corners: b.corners.len(),
            psi_nnz: nnz,
            gap_estimate: b.gap_estimate,
        };
        // SAFETY: `out` is not NULL and writable by the contract.
        unsafe { out.write(sizes) };
        Ok(())
    })
}

/// Replaces the BCFW dual state of all `n` blocks (a warm start from a
/// state saved with `bmrm_solver_bcfw_block`): block b has `num_corners[b]`
/// corners, taken in order from `labels`, `losses`, `alphas` and
/// `psi_start` (`sum num_corners + 1` offsets into `psi_index`/`psi_value`),
/// and the gap estimate `gap_estimates[b]` (INFINITY: unknown). Every w_i
/// and l_i is recomputed from the corners at the solver's lambda, so the
/// state is a feasible dual point. Writes into `w` (`dim` doubles) the
/// iterate the next `bmrm_solver_run` must be given as its start. Errors:
/// BMRM_ERROR_INVALID_ARGUMENT (not BCFW, corners not kept, n not the number
/// of examples, a weight < 0 or weights summing above 1, a non-finite
/// value, indices not increasing or >= dim, a label id twice in a block),
/// BMRM_ERROR_DIMENSION_MISMATCH.
///
/// # Safety
/// `s` is NULL or a live solver; the arrays NULL or readable for the sizes
/// above; `w` NULL or writable for `dim` doubles.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn bmrm_solver_bcfw_set_dual(
    s: *mut bmrm_solver,
    n: usize,
    num_corners: *const usize,
    gap_estimates: *const f64,
    labels: *const u64,
    losses: *const f64,
    alphas: *const f64,
    psi_start: *const usize,
    psi_index: *const usize,
    psi_value: *const f64,
    w: *mut f64,
    dim: usize,
) -> bmrm_status {
    status("bmrm_solver_bcfw_set_dual", || {
        // SAFETY: forwarded from this function's contract.
        let solver = unsafe { bmrm_solver::from_ptr(s) }?;
        non_null(num_corners, "num_corners")?;
        non_null(gap_estimates, "gap_estimates")?;
        non_null(psi_start, "psi_start")?;
        non_null(w, "w")?;
        let mut guard = solver.lock()?;
        if dim != guard.dim() {
            return Err(Error::dimension_mismatch(format!(
                "dim = {dim} but the problem's dimension is {}",
                guard.dim()
            )));
        }
        // SAFETY: not NULL and readable for n entries by the contract.
        let (counts, gaps) = unsafe {
            (
                std::slice::from_raw_parts(num_corners, n),
                std::slice::from_raw_parts(gap_estimates, n),
            )
        };
        let total = counts.iter().try_fold(0usize, |a, &c| a.checked_add(c));
        let total = total.ok_or_else(|| Error::invalid_argument("num_corners overflows"))?;
        if total > 0 {
            non_null(labels, "labels")?;
            non_null(losses, "losses")?;
            non_null(alphas, "alphas")?;
        }
        // SAFETY: readable for total + 1 offsets by the contract.
        let start = unsafe { std::slice::from_raw_parts(psi_start, total + 1) };
        if start[0] != 0 || start.windows(2).any(|p| p[0] > p[1]) {
            return Err(Error::invalid_argument(
                "psi_start must start at 0 and never decrease",
            ));
        }
        let nnz = start[total];
        if nnz > 0 {
            non_null(psi_index, "psi_index")?;
            non_null(psi_value, "psi_value")?;
        }
        let read = |c: usize| -> (&[u64], &[f64], &[f64]) {
            if c == 0 {
                return (&[], &[], &[]);
            }
            // SAFETY: not NULL (checked when total > 0) and readable for
            // `total` entries by the contract.
            unsafe {
                (
                    std::slice::from_raw_parts(labels, c),
                    std::slice::from_raw_parts(losses, c),
                    std::slice::from_raw_parts(alphas, c),
                )
            }
        };
        let (lab, los, alp) = read(total);
        let (idx, val): (&[usize], &[f64]) = if nnz == 0 {
            (&[], &[])
        } else {
            // SAFETY: not NULL and readable for `nnz` entries by the contract.
            unsafe {
                (
                    std::slice::from_raw_parts(psi_index, nnz),
                    std::slice::from_raw_parts(psi_value, nnz),
                )
            }
        };
        let mut blocks = Vec::new();
        blocks
            .try_reserve_exact(n)
            .map_err(|_| Error::out_of_memory(format!("cannot hold {n} blocks")))?;
        let mut c = 0;
        for (&k, &gap) in counts.iter().zip(gaps) {
            let mut corners = Vec::with_capacity(k);
            for _ in 0..k {
                let range = start[c]..start[c + 1];
                let mut psi = SparseVec::default();
                for (&j, &x) in idx[range.clone()].iter().zip(&val[range]) {
                    let j = u32::try_from(j).map_err(|_| {
                        Error::invalid_argument(format!("psi index {j} is out of range"))
                    })?;
                    psi.idx.push(j);
                    psi.val.push(x);
                }
                corners.push(CornerDual {
                    label: lab[c],
                    psi,
                    loss: los[c],
                    alpha: alp[c],
                });
                c += 1;
            }
            blocks.push(BlockDual {
                corners,
                gap_estimate: gap,
            });
        }
        let mut bcfw = guard
            .local_mut()?
            .bcfw_mut()
            .ok_or_else(|| Error::invalid_argument("a BCFW dual state needs the BCFW algorithm"))?;
        let start_w = bcfw.set_dual(blocks)?;
        // SAFETY: not NULL and writable for `dim` doubles by the contract;
        // `start_w` has the problem's dimension, checked equal to `dim`.
        unsafe { std::ptr::copy_nonoverlapping(start_w.as_ptr(), w, dim) };
        Ok(())
    })
}

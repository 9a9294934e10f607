//! The executor: one loop for every method.
//!
//! A [`Method`] knows only its own mathematics: how to start, how to make
//! one iteration, and what to do when the run stops. The loop of
//! [`execute`] alone keeps the clock, counts the oracle calls (through the
//! [`counting`] wrappers every callback goes through), writes the history,
//! calls the observer, applies the limits and makes the final summary with
//! its certificate (the best primal and the best lower bound).

pub mod context;
pub mod counting;
pub(crate) mod precision;

pub use context::{Context, Evaluation, Oracles};
pub use counting::{CountedOracle, CountedParts, Tally, Units};

use crate::error::Result;
use crate::oracle::adapters::is_deadline_passed;
use crate::vocab::{Exit, Info, Iteration, Observer};

/// An optimiser as the executor runs it.
pub trait Method {
    /// Everything before the first iteration, from the start point `w`
    /// (usually its evaluation).
    fn start(&mut self, ctx: &mut Context<'_>, w: &[f64]) -> Result<()>;

    /// Iteration `t` (from 1): its history row. The loop fills in the
    /// figures it owns (best primal, lower bound, times and calls).
    fn step(&mut self, ctx: &mut Context<'_>, t: u64) -> Result<Iteration>;

    /// A limit on iterations of the method's own, checked after the
    /// settings' limits (BCFW's `num_passes`, SGD's passes).
    fn own_limit(&self) -> Option<u64> {
        None
    }

    /// A stop the method's own hook asked for in the last step (BCFW's
    /// iterate hook), checked after the stopping rules: a converged run
    /// still ends converged. The run ends with [`Exit::StoppedByUser`].
    fn stop_requested(&self) -> bool {
        false
    }

    /// Called once the loop stopped with `exit`; may refresh the certificate
    /// and so change how the run ended.
    fn finish(&mut self, _ctx: &mut Context<'_>, exit: Exit) -> Result<Exit> {
        Ok(exit)
    }
}

/// The rows and the observer a run reports to.
pub struct Reporting<'r> {
    /// The history, cleared at the start of the run.
    pub history: &'r mut Vec<Iteration>,
    /// The progress observer, if any.
    pub observer: Option<&'r mut Observer>,
}

/// Runs `method` from `w` until a stopping rule holds. On return `w` holds
/// the best point seen, also when the run fails (then the summary has exit
/// [`Exit::NotRun`]). Returns the summary and the run's outcome.
pub fn execute(
    method: &mut dyn Method,
    mut ctx: Context<'_>,
    report: Reporting<'_>,
    w: &mut [f64],
) -> (Info, Result<Exit>) {
    let Reporting {
        history,
        mut observer,
    } = report;
    history.clear();
    let outcome = (|| -> Result<Exit> {
        // A pass over the examples that gave up at the time limit ends the
        // run like the limit between iterations does.
        match method.start(&mut ctx, w) {
            Err(e) if is_deadline_passed(&e) => return Ok(Exit::TimeLimit),
            other => other?,
        }
        let mut t = 0u64;
        let exit = loop {
            t += 1;
            let row = match method.step(&mut ctx, t) {
                Err(e) if is_deadline_passed(&e) => break Exit::TimeLimit,
                other => other?,
            };
            if let Some(exit) = finish_iteration(&mut ctx, history, &mut observer, t, row) {
                break exit;
            }
            if method.stop_requested() {
                break Exit::StoppedByUser;
            }
            if method.own_limit().is_some_and(|m| t >= m) {
                break Exit::MaxIterations;
            }
        };
        method.finish(&mut ctx, exit)
    })();
    ctx.sync_counts();
    // The deadline is this run's: a later pass (another run's, a path's
    // lambda_max pass) must not give up at it.
    ctx.oracles.pass_deadline.set(None);
    let elapsed = ctx.elapsed();
    let (mut info, best) = ctx.into_parts();
    w.copy_from_slice(&best);
    info.exit = *outcome.as_ref().unwrap_or(&Exit::NotRun);
    // A failed run certifies nothing, whatever its answers were until then.
    info.certified &= outcome.is_ok();
    info.gap = info.primal - info.lower_bound;
    info.elapsed_seconds = elapsed;
    (info, outcome)
}

/// Fills the summary, appends a history row, calls the observer and returns
/// how the run must end, if it must.
fn finish_iteration(
    ctx: &mut Context<'_>,
    history: &mut Vec<Iteration>,
    observer: &mut Option<&mut Observer>,
    t: u64,
    mut row: Iteration,
) -> Option<Exit> {
    ctx.sync_counts();
    let elapsed = ctx.elapsed();
    let info = &mut ctx.info;
    row.iteration = t;
    info.iterations = row.iteration;
    info.gap = info.primal - info.lower_bound;
    info.elapsed_seconds = elapsed;
    row.primal = info.primal;
    row.lower_bound = info.lower_bound;
    row.elapsed_seconds = info.elapsed_seconds;
    row.oracle_seconds = info.oracle_seconds;
    row.qp_seconds = info.qp_seconds;
    row.oracle_calls = info.oracle_calls;
    info.num_planes = row.num_planes;
    info.active_planes = row.active_planes;
    history.push(row);
    let converged = ctx.converged();
    if let Some(obs) = observer.as_mut() {
        // The observer sees every iteration, the last one included.
        if obs(&ctx.info).is_break() && converged.is_none() {
            return Some(Exit::StoppedByUser);
        }
    }
    if converged.is_some() {
        return converged;
    }
    let s = ctx.settings;
    if s.max_iterations > 0 && row.iteration >= s.max_iterations {
        return Some(Exit::MaxIterations);
    }
    if s.time_limit_seconds > 0.0 && ctx.info.elapsed_seconds >= s.time_limit_seconds {
        return Some(Exit::TimeLimit);
    }
    None
}

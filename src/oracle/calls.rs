//! Calling a max-oracle for one example or a block of them, checking each
//! answer: the calls every pass over the examples goes through.

use std::time::Instant;

use super::{Corner, MaxOracle};
use crate::error::{Error, Result};

/// The source of the error of a pass that gave up at its deadline: the
/// executor ends the run with `Exit::TimeLimit` on it.
#[derive(Debug)]
pub(crate) struct DeadlinePassed;

impl std::fmt::Display for DeadlinePassed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the time limit passed during a pass over the examples")
    }
}

impl std::error::Error for DeadlinePassed {}

/// The error of a pass giving up at its deadline.
pub(crate) fn deadline_passed() -> Error {
    Error::internal(DeadlinePassed.to_string()).with_source(DeadlinePassed)
}

/// Whether `deadline` is set and passed.
pub(crate) fn past(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

/// Whether `e` is a pass giving up at its deadline.
pub(crate) fn is_deadline_passed(e: &Error) -> bool {
    e.source.as_ref().is_some_and(|s| s.is::<DeadlinePassed>())
}

/// Calls the oracle for `example` into `corner` and checks its output.
pub fn call_max_oracle(
    oracle: &dyn MaxOracle,
    example: usize,
    w: &[f64],
    corner: &mut Corner,
) -> Result<()> {
    call_max_oracle_named(oracle, example, example, w, corner)
}

/// [`call_max_oracle`] for the oracle's example `example`, named `name` in
/// errors (its index in the whole problem, for an oracle holding a shard).
pub fn call_max_oracle_named(
    oracle: &dyn MaxOracle,
    example: usize,
    name: usize,
    w: &[f64],
    corner: &mut Corner,
) -> Result<()> {
    corner.clear();
    oracle
        .max_oracle(example, w, corner)
        .map_err(|e| e.context(format!("(example {name})")))?;
    check_corner(corner, name)
}

/// Examples the passes ask the oracle for at once
/// ([`MaxOracle::max_oracle_block`]); a multiple of the multiclass kernel's
/// register tile (3 rows), small enough that the corners stay in cache.
pub const ORACLE_BLOCK: usize = 48;

/// [`call_max_oracle_named`] for the oracle's examples `first..first +
/// out.len()`, named from `name` on: one [`MaxOracle::max_oracle_block`]
/// call when the oracle answers blocks, else one call per example. When a
/// block fails, its examples are asked one by one, so the error names the
/// first example that fails, as a single call would.
pub fn call_max_oracle_block(
    oracle: &dyn MaxOracle,
    first: usize,
    name: usize,
    w: &[f64],
    out: &mut [Corner],
) -> Result<()> {
    call_max_oracle_block_until(oracle, first, name, w, out, None)
}

/// [`call_max_oracle_block`], giving up at `deadline` between two examples
/// of an oracle answered one example at a time (a slow decoder: a block of
/// them could run far past the time limit). A block the oracle answers at
/// once is never cut.
pub(crate) fn call_max_oracle_block_until(
    oracle: &dyn MaxOracle,
    first: usize,
    name: usize,
    w: &[f64],
    out: &mut [Corner],
    deadline: Option<Instant>,
) -> Result<()> {
    out.iter_mut().for_each(Corner::clear);
    match oracle.max_oracle_block(first, w, out) {
        Some(Ok(())) => {
            for (j, corner) in out.iter().enumerate() {
                check_corner(corner, name + j)?;
            }
            Ok(())
        }
        Some(Err(block_error)) => {
            one_by_one(oracle, first, name, w, out, None)?;
            // Every single call succeeded: an oracle whose block disagrees
            // with its examples.
            Err(block_error.context(format!(
                "(examples {name}..{}; each alone succeeds)",
                name + out.len()
            )))
        }
        None => one_by_one(oracle, first, name, w, out, deadline),
    }
}

/// The examples of a block, one call each; the clock is read before each
/// example when there is a `deadline`.
fn one_by_one(
    oracle: &dyn MaxOracle,
    first: usize,
    name: usize,
    w: &[f64],
    out: &mut [Corner],
    deadline: Option<Instant>,
) -> Result<()> {
    for (j, corner) in out.iter_mut().enumerate() {
        if past(deadline) {
            return Err(deadline_passed());
        }
        call_max_oracle_named(oracle, first + j, name + j, w, corner)?;
    }
    Ok(())
}

/// A non-finite loss or psi entry as an error naming example `name`.
fn check_corner(corner: &Corner, name: usize) -> Result<()> {
    corner.check_finite().map_err(|e| match e {
        Error {
            kind: crate::ErrorKind::NonFinite,
            message: m,
            ..
        } => Error::non_finite(format!("max-oracle {m} for example {name}")),
        other => other,
    })
}

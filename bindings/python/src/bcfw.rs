//! The BCFW-only calls of the engine (its typed handle `Solver::bcfw` /
//! `Solver::bcfw_mut`), in one place.

use bmrm::Breakpoint;
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::solver::exit_name;

/// The error for a BCFW-only call on a solver that runs another algorithm.
fn not_bcfw(solver: &bmrm::Solver, what: &str) -> bmrm::Error {
    bmrm::Error::invalid_argument(format!(
        "{what} is BCFW's; the solver runs {}",
        solver.settings().algorithm.name()
    ))
}

pub fn iterate(solver: &bmrm::Solver) -> Option<Vec<f64>> {
    solver.bcfw().and_then(|b| b.iterate()).map(<[f64]>::to_vec)
}

pub fn path(
    solver: &mut bmrm::Solver,
    eps: f64,
    lambda_min: f64,
    max_breakpoints: usize,
) -> bmrm::Result<Vec<Breakpoint>> {
    if solver.bcfw().is_none() {
        return Err(not_bcfw(solver, "the regularisation path"));
    }
    match solver.bcfw_mut() {
        Some(mut b) => b.path(eps, lambda_min, max_breakpoints),
        None => Ok(Vec::new()),
    }
}

pub fn stats<'py>(py: Python<'py>, solver: &bmrm::Solver) -> PyResult<Option<Bound<'py, PyDict>>> {
    let Some(s) = solver.bcfw().and_then(|b| b.stats()) else {
        return Ok(None);
    };
    let d = PyDict::new(py);
    d.set_item("passes", s.passes)?;
    d.set_item("effective_passes", s.effective_passes)?;
    d.set_item("oracle_calls", s.oracle_calls)?;
    d.set_item("cache_hits", s.cache_hits)?;
    d.set_item("ell", s.ell)?;
    d.set_item("returned_ell", s.returned_ell)?;
    d.set_item("dual", s.dual)?;
    d.set_item("gap_estimate", s.gap_estimate)?;
    d.set_item("last_exact_gap", s.last_exact_gap)?;
    d.set_item("corners", s.corners)?;
    d.set_item("active_corners", s.active_corners)?;
    d.set_item("dense_blocks", s.dense_blocks)?;
    d.set_item("memory_bytes", s.memory_bytes)?;
    d.set_item("approx_passes", s.approx_passes)?;
    Ok(Some(d))
}

pub fn breakpoints_to_py(
    py: Python<'_>,
    points: Vec<Breakpoint>,
) -> PyResult<Vec<Bound<'_, PyDict>>> {
    points
        .into_iter()
        .map(|b| {
            let d = PyDict::new(py);
            d.set_item("lambda_", b.lambda)?;
            d.set_item("lambda_low", b.lambda_low)?;
            d.set_item("w", PyArray1::from_vec(py, b.w))?;
            d.set_item("gap", b.gap)?;
            d.set_item("primal", b.primal)?;
            d.set_item("passes", b.passes)?;
            d.set_item("oracle_calls", b.oracle_calls)?;
            d.set_item("exit", exit_name(b.exit))?;
            Ok(d)
        })
        .collect()
}

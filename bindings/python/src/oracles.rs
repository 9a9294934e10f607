//! The three oracle levels as Python callables. Python oracles declare
//! themselves not thread-safe, so the engine calls them one at a time on the
//! thread that runs the solve; each call takes the GIL. An exception raised
//! by a callback is kept in the solve's [`Shared`] slot and ends the solve
//! with an oracle error; `Solver.run` then re-raises the original exception
//! (with its traceback).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use bmrm::oracle::{Corner, FullRisk, MaxOracle, PartitionedRisk};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::arrays::{to_numpy, vec_f64, vec_index};

/// What one solve shares between its callbacks and the Python caller: the
/// first exception raised, and the stop request (an exception, or Ctrl-C
/// seen by the waiting caller).
#[derive(Default)]
pub struct Shared {
    error: Mutex<Option<PyErr>>,
    stop: AtomicBool,
}

impl Shared {
    /// Keeps `err` (the first one wins), asks the solve to stop and returns
    /// the engine error that ends it.
    pub fn fail(&self, err: PyErr, what: &str) -> bmrm::Error {
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(err);
        }
        self.stop.store(true, Ordering::SeqCst);
        bmrm::Error::oracle(format!("the Python {what} raised an exception"))
    }
    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
    /// The kept exception, if any (taken: the slot is empty afterwards).
    pub fn take_error(&self) -> Option<PyErr> {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
    /// Ready for the next solve.
    pub fn reset(&self) {
        self.stop.store(false, Ordering::SeqCst);
        drop(self.take_error());
    }
    /// The error returned for a call skipped because a stop was requested.
    fn interrupted() -> bmrm::Error {
        bmrm::Error::oracle("the solve was interrupted")
    }
}

/// A built-in model the engine asks one example at a time (a graph model,
/// whose engine may take seconds per example): the stop a KeyboardInterrupt
/// asks for is seen before every example, not at the end of the pass.
pub struct Interruptible<M> {
    pub inner: std::sync::Arc<M>,
    pub shared: std::sync::Arc<Shared>,
}

impl<M: MaxOracle> MaxOracle for Interruptible<M> {
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn num_examples(&self) -> usize {
        self.inner.num_examples()
    }
    fn thread_safe(&self) -> bool {
        self.inner.thread_safe()
    }
    fn max_oracle(&self, example: usize, w: &[f64], out: &mut Corner) -> bmrm::Result<()> {
        if self.shared.stopped() {
            return Err(Shared::interrupted());
        }
        self.inner.max_oracle(example, w, out)
    }
}

/// Reads a `(value, vector)` answer of a risk callback.
fn risk_answer(
    py: Python<'_>,
    ret: &Bound<'_, PyAny>,
    what: &str,
    subgrad: &mut [f64],
) -> PyResult<f64> {
    let t = ret.downcast::<PyTuple>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{what} must return a tuple (risk, subgradient), got {}",
            ret.get_type()
        ))
    })?;
    if t.len() != 2 {
        return Err(PyTypeError::new_err(format!(
            "{what} must return a tuple (risk, subgradient), got {} items",
            t.len()
        )));
    }
    let risk: f64 = t
        .get_item(0)?
        .extract()
        .map_err(|_| PyTypeError::new_err(format!("{what}: the risk (item 0) must be a float")))?;
    if !risk.is_finite() {
        return Err(PyValueError::new_err(format!("{what}: the risk is {risk}")));
    }
    let g = vec_f64(
        py,
        &t.get_item(1)?,
        &format!("{what}: the subgradient"),
        Some(subgrad.len()),
    )?;
    subgrad.copy_from_slice(&g);
    Ok(risk)
}

/// `R(w)` from `fn(w) -> (risk, subgradient)`.
pub struct PyFullRisk {
    pub func: Py<PyAny>,
    pub dim: usize,
    pub shared: std::sync::Arc<Shared>,
}

impl FullRisk for PyFullRisk {
    fn dim(&self) -> usize {
        self.dim
    }
    fn risk(&self, w: &[f64], subgrad: &mut [f64]) -> bmrm::Result<f64> {
        if self.shared.stopped() {
            return Err(Shared::interrupted());
        }
        Python::with_gil(|py| {
            let ret = self.func.bind(py).call1((to_numpy(py, w),))?;
            risk_answer(py, &ret, "the risk callback", subgrad)
        })
        .map_err(|e| self.shared.fail(e, "risk callback"))
    }
    fn thread_safe(&self) -> bool {
        false
    }
}

/// `R(w, p)` from `fn(part, w) -> (risk, subgradient)`.
pub struct PyPartitionedRisk {
    pub func: Py<PyAny>,
    pub dim: usize,
    pub num_parts: usize,
    pub shared: std::sync::Arc<Shared>,
}

impl PartitionedRisk for PyPartitionedRisk {
    fn dim(&self) -> usize {
        self.dim
    }
    fn num_parts(&self) -> usize {
        self.num_parts
    }
    fn partial_risk(&self, part: usize, w: &[f64], subgrad: &mut [f64]) -> bmrm::Result<f64> {
        if self.shared.stopped() {
            return Err(Shared::interrupted());
        }
        Python::with_gil(|py| {
            let ret = self.func.bind(py).call1((part, to_numpy(py, w)))?;
            risk_answer(py, &ret, "the partitioned risk callback", subgrad)
        })
        .map_err(|e| self.shared.fail(e, "partitioned risk callback"))
    }
    fn thread_safe(&self) -> bool {
        false
    }
}

/// The max-oracle `fn(example, w) -> (loss, psi, label_id)`, `psi` a dense
/// vector or a pair `(indices, values)`.
pub struct PyMaxOracle {
    pub func: Py<PyAny>,
    pub dim: usize,
    pub num_examples: usize,
    pub shared: std::sync::Arc<Shared>,
}

/// Fills `out` from a max-oracle answer.
fn corner_answer(py: Python<'_>, ret: &Bound<'_, PyAny>, out: &mut Corner) -> PyResult<()> {
    const WHAT: &str = "the max-oracle callback";
    let t = ret.downcast::<PyTuple>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{WHAT} must return a tuple (loss, psi, label_id), got {}",
            ret.get_type()
        ))
    })?;
    if t.len() != 3 {
        return Err(PyTypeError::new_err(format!(
            "{WHAT} must return a tuple (loss, psi, label_id), got {} items",
            t.len()
        )));
    }
    let loss: f64 = t
        .get_item(0)?
        .extract()
        .map_err(|_| PyTypeError::new_err(format!("{WHAT}: the loss (item 0) must be a float")))?;
    if !loss.is_finite() {
        return Err(PyValueError::new_err(format!("{WHAT}: the loss is {loss}")));
    }
    let label: u64 = t.get_item(2)?.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "{WHAT}: the label id (item 2) must be an integer in 0..2**64"
        ))
    })?;
    out.set_loss(loss);
    out.set_label(label);
    let psi = t.get_item(1)?;
    let dim = out.dim();
    if let Ok(pair) = psi.downcast::<PyTuple>() {
        if pair.len() != 2 {
            return Err(PyTypeError::new_err(format!(
                "{WHAT}: a sparse psi is a pair (indices, values), got {} items",
                pair.len()
            )));
        }
        let idx = vec_index(py, &pair.get_item(0)?, &format!("{WHAT}: psi indices"))?;
        let val = vec_f64(
            py,
            &pair.get_item(1)?,
            &format!("{WHAT}: psi values"),
            Some(idx.len()),
        )?;
        for (&j, &v) in idx.iter().zip(&val) {
            if j >= dim {
                return Err(PyValueError::new_err(format!(
                    "{WHAT}: psi index {j} is out of range 0..{dim}"
                )));
            }
            out.add(j, v)
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
        }
    } else {
        let v = vec_f64(py, &psi, &format!("{WHAT}: psi"), Some(dim))?;
        out.dense_mut().copy_from_slice(&v);
    }
    Ok(())
}

impl MaxOracle for PyMaxOracle {
    fn dim(&self) -> usize {
        self.dim
    }
    fn num_examples(&self) -> usize {
        self.num_examples
    }
    fn max_oracle(&self, example: usize, w: &[f64], out: &mut Corner) -> bmrm::Result<()> {
        if self.shared.stopped() {
            return Err(Shared::interrupted());
        }
        Python::with_gil(|py| {
            let ret = self.func.bind(py).call1((example, to_numpy(py, w)))?;
            corner_answer(py, &ret, out)
        })
        .map_err(|e| self.shared.fail(e, "max-oracle callback"))
    }
    fn thread_safe(&self) -> bool {
        false
    }
}

//! numpy in and out: any real dtype and any stride is accepted; anything
//! else is a `TypeError` or `ValueError` that names the argument.

use numpy::{PyArray1, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::{PyMemoryError, PyTypeError, PyValueError};
use pyo3::prelude::*;

/// `obj` as a numpy array of `ndim` dimensions converted to `dtype`
/// ("float64", "float32", "int64", ...), C-contiguous. Booleans, integers
/// and floats convert; complex, object and string arrays do not.
fn as_contiguous<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    name: &str,
    ndim: usize,
    dtype: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let np = py.import("numpy")?;
    let arr = np
        .call_method1("asarray", (obj,))
        .map_err(|e| PyTypeError::new_err(format!("{name}: cannot be read as an array ({e})")))?;
    let kind: String = arr.getattr("dtype")?.getattr("kind")?.extract()?;
    if !matches!(kind.as_str(), "b" | "i" | "u" | "f") {
        let dt: String = arr.getattr("dtype")?.str()?.extract()?;
        return Err(PyTypeError::new_err(format!(
            "{name}: expected an array of real numbers, got dtype {dt}"
        )));
    }
    let got: usize = arr.getattr("ndim")?.extract()?;
    if got != ndim {
        let shape: String = arr.getattr("shape")?.str()?.extract()?;
        return Err(PyValueError::new_err(format!(
            "{name}: expected a {ndim}-dimensional array, got shape {shape}"
        )));
    }
    np.call_method1("ascontiguousarray", (arr, dtype))
}

/// `obj` as a 1-D `f64` vector, converted and copied (no value checks).
fn read_f64(py: Python<'_>, obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<f64>> {
    let arr = as_contiguous(py, obj, name, 1, "float64")?;
    let v = copy_of(
        arr.downcast::<PyArray1<f64>>()?.readonly().as_slice()?,
        name,
    )?;
    Ok(v)
}

/// A copy of `values` the library owns, its memory reserved first: a size
/// the process cannot hold is a `MemoryError` naming `name`, not an abort.
fn copy_of<T: Copy>(values: &[T], name: &str) -> PyResult<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(values.len()).map_err(|_| {
        PyMemoryError::new_err(format!(
            "{name}: cannot allocate a copy of {} values",
            values.len()
        ))
    })?;
    v.extend_from_slice(values);
    Ok(v)
}

/// A 1-D array of finite numbers as `f64`, of length `len` when given.
pub fn vec_f64(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    name: &str,
    len: Option<usize>,
) -> PyResult<Vec<f64>> {
    // Fast path: a float64 vector (the common oracle answer), any stride.
    let v: Vec<f64> = if let Ok(a) = obj.downcast::<PyArray1<f64>>() {
        let r = a.readonly();
        r.as_array().iter().copied().collect()
    } else {
        read_f64(py, obj, name)?
    };
    if let Some(n) = len {
        if v.len() != n {
            return Err(PyValueError::new_err(format!(
                "{name}: expected length {n}, got {}",
                v.len()
            )));
        }
    }
    if let Some(j) = v.iter().position(|x| !x.is_finite()) {
        return Err(PyValueError::new_err(format!(
            "{name}: element {j} is {} (values must be finite)",
            v[j]
        )));
    }
    Ok(v)
}

/// A 1-D array of bounds (infinities allowed, NaN not) of length `len`.
pub fn vec_bounds(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    name: &str,
    len: usize,
) -> PyResult<Vec<f64>> {
    let v = read_f64(py, obj, name)?;
    if v.len() != len {
        return Err(PyValueError::new_err(format!(
            "{name}: expected length {len}, got {}",
            v.len()
        )));
    }
    if let Some(j) = v.iter().position(|x| x.is_nan()) {
        return Err(PyValueError::new_err(format!("{name}: element {j} is NaN")));
    }
    Ok(v)
}

/// A 2-D array of finite numbers as row-major `f32`: `(values, rows, cols)`.
pub fn matrix_f32(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    name: &str,
) -> PyResult<(Vec<f32>, usize, usize)> {
    let arr = as_contiguous(py, obj, name, 2, "float32")?;
    let a = arr.downcast::<numpy::PyArray2<f32>>()?;
    let shape = a.shape().to_vec();
    let v = copy_of(a.readonly().as_slice()?, name)?;
    if let Some(p) = v.iter().position(|x| !x.is_finite()) {
        return Err(PyValueError::new_err(format!(
            "{name}: element ({}, {}) is not finite",
            p / shape[1].max(1),
            p % shape[1].max(1)
        )));
    }
    Ok((v, shape[0], shape[1]))
}

/// A 1-D array of non-negative integers (labels, lengths, CSR index arrays).
/// Floats are accepted when they hold whole numbers.
pub fn vec_index(py: Python<'_>, obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<usize>> {
    let v = read_f64(py, obj, name)?;
    v.iter()
        .enumerate()
        .map(|(j, &x)| {
            if x >= 0.0 && x.fract() == 0.0 && x < 9.0e15 {
                Ok(x as usize)
            } else {
                Err(PyValueError::new_err(format!(
                    "{name}: element {j} is {x}, expected a non-negative integer"
                )))
            }
        })
        .collect()
}

/// A fresh `float64` numpy vector holding `v`.
pub fn to_numpy<'py>(py: Python<'py>, v: &[f64]) -> Bound<'py, PyArray1<f64>> {
    PyArray1::from_slice(py, v)
}

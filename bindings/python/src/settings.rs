//! `Solver(..., **settings)`: every field of the engine's `Settings` by
//! name; an unknown name or a value of the wrong type is an error naming it.

use bmrm::{Algorithm, Sampling, Settings, StepType};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The algorithm named `name` ("bmrm", "prox-bmrm", "p-bmrm",
/// "prox-p-bmrm", "bcfw", "sgd", "cutting-plane"; `_` may stand for `-`).
pub fn algorithm(name: &str) -> PyResult<Algorithm> {
    Ok(match name.to_ascii_lowercase().replace('_', "-").as_str() {
        "bmrm" => Algorithm::Bmrm,
        "prox-bmrm" => Algorithm::ProxBmrm,
        "p-bmrm" => Algorithm::PBmrm,
        "prox-p-bmrm" => Algorithm::ProxPBmrm,
        "bcfw" => Algorithm::Bcfw,
        "sgd" => Algorithm::Sgd,
        "cutting-plane" => Algorithm::CuttingPlane,
        _ => {
            return Err(PyValueError::new_err(format!(
                "algorithm: unknown algorithm {name:?} (use 'bmrm', 'prox-bmrm', 'p-bmrm', \
                 'prox-p-bmrm', 'bcfw', 'sgd' or 'cutting-plane')"
            )))
        }
    })
}

fn sampling(v: &str) -> PyResult<Sampling> {
    Ok(match v {
        "uniform" => Sampling::Uniform,
        "permutation" => Sampling::Permutation,
        "gap" => Sampling::Gap,
        "max-gap" => Sampling::MaxGap,
        _ => {
            return Err(PyValueError::new_err(format!(
                "sampling: unknown value {v:?} (use 'uniform', 'permutation', 'gap' or 'max-gap')"
            )))
        }
    })
}

fn step_type(v: &str) -> PyResult<StepType> {
    Ok(match v {
        "fw" | "frank-wolfe" => StepType::FrankWolfe,
        "pairwise" => StepType::Pairwise,
        "away" => StepType::Away,
        "all" => StepType::All,
        "exact" => StepType::Exact,
        _ => {
            return Err(PyValueError::new_err(format!(
                "step_type: unknown value {v:?} (use 'fw', 'pairwise', 'away', 'all' or 'exact')"
            )))
        }
    })
}

fn get<'py, T: FromPyObject<'py>>(value: &Bound<'py, PyAny>, key: &str, what: &str) -> PyResult<T> {
    value.extract().map_err(|_| {
        PyTypeError::new_err(format!("{key}: expected {what}, got {}", value.get_type()))
    })
}

/// Applies the keyword settings to `s`.
pub fn apply(s: &mut Settings, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
    let Some(kwargs) = kwargs else {
        return Ok(());
    };
    for (k, v) in kwargs.iter() {
        let key: String = k.extract()?;
        let v = &v;
        let key = key.as_str();
        const F: &str = "a float";
        const U: &str = "a non-negative integer";
        const B: &str = "a bool";
        match key {
            "tol_rel" => s.tol_rel = get(v, key, F)?,
            "tol_abs" => s.tol_abs = get(v, key, F)?,
            "max_iterations" => s.max_iterations = get(v, key, U)?,
            "time_limit_seconds" => s.time_limit_seconds = get(v, key, F)?,
            "num_threads" => s.num_threads = get(v, key, U)?,
            "num_parts" => s.num_parts = get(v, key, U)?,
            "buffer_size" => s.buffer_size = get(v, key, U)?,
            "clean_after" => s.clean_after = get(v, key, U)?,
            "prox_t" => s.prox_t = get(v, key, F)?,
            "prox_k" => s.prox_k = get(v, key, F)?,
            "sgd_passes" => s.sgd_passes = get(v, key, U)?,
            "cp_radius" => s.cp_radius = get(v, key, F)?,
            "reuse_planes" => s.reuse_planes = get(v, key, B)?,
            "qp_max_updates" => s.qp_max_updates = get(v, key, U)?,
            "seed" => s.seed = get(v, key, U)?,
            "sampling" => s.sampling = sampling(&get::<String>(v, key, "a string")?)?,
            "step_type" => s.step_type = step_type(&get::<String>(v, key, "a string")?)?,
            "line_search" => s.line_search = get(v, key, B)?,
            "weighted_averaging" => s.weighted_averaging = get(v, key, B)?,
            "gap_check" => s.gap_check = get(v, key, U)?,
            "use_cache" => s.use_cache = get(v, key, B)?,
            "cache_size" => s.cache_size = get(v, key, U)?,
            "cache_nu" => s.cache_nu = get(v, key, F)?,
            "cache_factor" => s.cache_factor = get(v, key, F)?,
            "num_passes" => s.num_passes = get(v, key, U)?,
            "path_a" => s.path_a = get(v, key, F)?,
            "trace_gap" => s.trace_gap = get(v, key, B)?,
            "gap_degree" => s.gap_degree = get(v, key, F)?,
            "early_exact_factor" => s.early_exact_factor = get(v, key, F)?,
            "multi_plane" => s.multi_plane = get(v, key, B)?,
            "mp_approx_passes" => s.mp_approx_passes = get(v, key, U)?,
            "mp_timed" => s.mp_timed = get(v, key, B)?,
            "mp_inactive_passes" => s.mp_inactive_passes = get(v, key, U)?,
            "mp_block_steps" => s.mp_block_steps = get(v, key, U)?,
            "mini_batch" => s.mini_batch = get(v, key, U)?,
            _ => {
                return Err(PyTypeError::new_err(format!(
                    "unknown setting {key:?} (see help(bmrm.Solver) for the settings)"
                )))
            }
        }
    }
    Ok(())
}

/// The settings as a dict (names as accepted by `apply`).
pub fn to_dict<'py>(py: Python<'py>, s: &Settings) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("algorithm", s.algorithm.name())?;
    d.set_item("lambda_", s.lambda)?;
    d.set_item("tol_rel", s.tol_rel)?;
    d.set_item("tol_abs", s.tol_abs)?;
    d.set_item("max_iterations", s.max_iterations)?;
    d.set_item("time_limit_seconds", s.time_limit_seconds)?;
    d.set_item("num_threads", s.num_threads)?;
    d.set_item("num_parts", s.num_parts)?;
    d.set_item("buffer_size", s.buffer_size)?;
    d.set_item("clean_after", s.clean_after)?;
    d.set_item("prox_t", s.prox_t)?;
    d.set_item("prox_k", s.prox_k)?;
    d.set_item("sgd_passes", s.sgd_passes)?;
    d.set_item("cp_radius", s.cp_radius)?;
    d.set_item("reuse_planes", s.reuse_planes)?;
    d.set_item("qp_max_updates", s.qp_max_updates)?;
    d.set_item("seed", s.seed)?;
    d.set_item(
        "sampling",
        match s.sampling {
            Sampling::Uniform => "uniform",
            Sampling::Permutation => "permutation",
            Sampling::Gap => "gap",
            Sampling::MaxGap => "max-gap",
        },
    )?;
    d.set_item(
        "step_type",
        match s.step_type {
            StepType::FrankWolfe => "fw",
            StepType::Pairwise => "pairwise",
            StepType::Away => "away",
            StepType::All => "all",
            StepType::Exact => "exact",
        },
    )?;
    d.set_item("line_search", s.line_search)?;
    d.set_item("weighted_averaging", s.weighted_averaging)?;
    d.set_item("gap_check", s.gap_check)?;
    d.set_item("use_cache", s.use_cache)?;
    d.set_item("cache_size", s.cache_size)?;
    d.set_item("cache_nu", s.cache_nu)?;
    d.set_item("cache_factor", s.cache_factor)?;
    d.set_item("num_passes", s.num_passes)?;
    d.set_item("path_a", s.path_a)?;
    d.set_item("trace_gap", s.trace_gap)?;
    d.set_item("gap_degree", s.gap_degree)?;
    d.set_item("early_exact_factor", s.early_exact_factor)?;
    d.set_item("multi_plane", s.multi_plane)?;
    d.set_item("mp_approx_passes", s.mp_approx_passes)?;
    d.set_item("mp_timed", s.mp_timed)?;
    d.set_item("mp_inactive_passes", s.mp_inactive_passes)?;
    d.set_item("mp_block_steps", s.mp_block_steps)?;
    d.set_item("mini_batch", s.mini_batch)?;
    Ok(d)
}

//! Solver settings with their defaults and validation.

use crate::error::{Error, Result};

/// Which optimiser to run. The values are the C ABI's `bmrm_algorithm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Algorithm {
    /// Bundle method for regularised risk minimisation (Teo et al.): one model.
    Bmrm = 0,
    /// Proximal BMRM (Algorithm 2 of the Prox-BMRM technical report).
    ProxBmrm = 1,
    /// BMRM with one cutting-plane model per part.
    PBmrm = 2,
    /// Proximal BMRM with one cutting-plane model per part.
    ProxPBmrm = 3,
    /// Block-coordinate Frank-Wolfe (not in this crate version yet).
    Bcfw = 4,
    /// Stochastic (sub)gradient descent alone.
    Sgd = 5,
    /// Kelley's cutting-plane method on F over a norm ball (the baseline).
    CuttingPlane = 6,
}

impl Algorithm {
    pub fn from_i32(v: i32) -> Option<Self> {
        Some(match v {
            0 => Algorithm::Bmrm,
            1 => Algorithm::ProxBmrm,
            2 => Algorithm::PBmrm,
            3 => Algorithm::ProxPBmrm,
            4 => Algorithm::Bcfw,
            5 => Algorithm::Sgd,
            6 => Algorithm::CuttingPlane,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Bmrm => "BMRM",
            Algorithm::ProxBmrm => "Prox-BMRM",
            Algorithm::PBmrm => "P-BMRM",
            Algorithm::ProxPBmrm => "Prox-P-BMRM",
            Algorithm::Bcfw => "BCFW",
            Algorithm::Sgd => "SGD",
            Algorithm::CuttingPlane => "cutting-plane",
        }
    }

    /// Whether the algorithm keeps one cutting-plane model per part.
    pub fn is_partitioned(self) -> bool {
        matches!(self, Algorithm::PBmrm | Algorithm::ProxPBmrm)
    }

    /// Whether the algorithm uses the proximal term.
    pub fn is_proximal(self) -> bool {
        matches!(self, Algorithm::ProxBmrm | Algorithm::ProxPBmrm)
    }
}

/// Every setting of the engine. `Settings::new(algorithm, lambda)` gives the
/// defaults; [`Settings::validate`] is called by the solver.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub algorithm: Algorithm,
    /// Regularisation constant of `F(w) = lambda/2 ||w||^2 + R(w)` (mean risk).
    pub lambda: f64,
    /// Stop when `primal - lower_bound <= tol_rel * |primal|` (default 1e-3).
    pub tol_rel: f64,
    /// Stop when `primal - lower_bound <= tol_abs` (default 0: off).
    pub tol_abs: f64,
    /// Most iterations (0 = no limit).
    pub max_iterations: u64,
    /// Wall-time limit in seconds (0 = none).
    pub time_limit_seconds: f64,
    /// Threads of the solver's pool (0 = all cores).
    pub num_threads: usize,
    /// Parts for P-BMRM over a max-oracle (0 = 16, or m when m < 16). For a
    /// partitioned risk, 0 uses its own parts.
    pub num_parts: usize,
    /// Most cutting planes kept; when full, planes are aggregated (default 2000,
    /// raised to 4 x the number of parts when smaller).
    pub buffer_size: usize,
    /// Remove a plane whose dual weight stayed 0 for this many iterations
    /// (0 = never remove; default 10).
    pub clean_after: u32,
    /// Prox-BMRM's T (default 100).
    pub prox_t: f64,
    /// Prox-BMRM's K, the step length bound (0 = 0.01 ||w_1||, see the README).
    pub prox_k: f64,
    /// Passes of SGD before the bundle method starts (0 = none). For
    /// [`Algorithm::Sgd`] this is the whole run (default 5 there).
    pub sgd_passes: u32,
    /// Radius of the norm ball of the cutting-plane method (0 = sqrt(2 F(w_1) / lambda)).
    pub cp_radius: f64,
    /// Keep the cutting planes when lambda changes (planes model R, not F,
    /// so they stay valid). Default true.
    pub reuse_planes: bool,
    /// Most coordinate updates of one QP solve (0 = no limit; default 10^7,
    /// a guard: the bound stays valid when a solve stops early).
    pub qp_max_updates: u64,
    /// Seed of every random choice (SGD order, t0 tuning sample).
    pub seed: u64,
}

impl Settings {
    pub fn new(algorithm: Algorithm, lambda: f64) -> Self {
        Settings {
            algorithm,
            lambda,
            tol_rel: 1e-3,
            tol_abs: 0.0,
            max_iterations: 0,
            time_limit_seconds: 0.0,
            num_threads: 0,
            num_parts: 0,
            buffer_size: 2000,
            clean_after: 10,
            prox_t: 100.0,
            prox_k: 0.0,
            sgd_passes: if algorithm == Algorithm::Sgd { 5 } else { 0 },
            cp_radius: 0.0,
            reuse_planes: true,
            qp_max_updates: 10_000_000,
            seed: 0,
        }
    }

    /// Checks every field; the message names the field and its value.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidArgument(m));
        if !(self.lambda.is_finite() && self.lambda > 0.0) {
            return bad(format!(
                "lambda must be positive and finite, got {}",
                self.lambda
            ));
        }
        if !(self.tol_rel.is_finite() && self.tol_rel >= 0.0) {
            return bad(format!("tol_rel must be >= 0, got {}", self.tol_rel));
        }
        if !(self.tol_abs.is_finite() && self.tol_abs >= 0.0) {
            return bad(format!("tol_abs must be >= 0, got {}", self.tol_abs));
        }
        if !(self.time_limit_seconds.is_finite() && self.time_limit_seconds >= 0.0) {
            return bad(format!(
                "time_limit_seconds must be >= 0, got {}",
                self.time_limit_seconds
            ));
        }
        if !(self.prox_t.is_finite() && self.prox_t > 0.0) {
            return bad(format!("prox_t must be positive, got {}", self.prox_t));
        }
        if !(self.prox_k.is_finite() && self.prox_k >= 0.0) {
            return bad(format!("prox_k must be >= 0, got {}", self.prox_k));
        }
        if !(self.cp_radius.is_finite() && self.cp_radius >= 0.0) {
            return bad(format!("cp_radius must be >= 0, got {}", self.cp_radius));
        }
        if self.buffer_size < 2 {
            return bad(format!(
                "buffer_size must be >= 2, got {}",
                self.buffer_size
            ));
        }
        if self.algorithm == Algorithm::Sgd && self.sgd_passes == 0 {
            return bad("the SGD algorithm needs sgd_passes >= 1".into());
        }
        let stops = self.tol_rel > 0.0
            || self.tol_abs > 0.0
            || self.max_iterations > 0
            || self.time_limit_seconds > 0.0
            || self.algorithm == Algorithm::Sgd;
        if !stops {
            return bad(
                "no stopping rule: set tol_rel, tol_abs, max_iterations or time_limit_seconds"
                    .into(),
            );
        }
        Ok(())
    }
}

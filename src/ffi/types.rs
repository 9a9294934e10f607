//! The plain `#[repr(C)]` types of the C ABI: the status, exit and algorithm
//! enums, the BCFW option enums, `bmrm_settings`, `bmrm_info` and
//! `bmrm_iteration`, with their conversions to and from the engine's types.

use std::ffi::c_void;

use crate::error::{Error, ErrorKind, Result};
use crate::solver::{Algorithm, Exit, Info, Iteration, Sampling, Settings, StepType};

/// The version of the binary interface described by this header. It changes
/// whenever a type's layout, an enum value or a function's signature changes
/// incompatibly; compare it with `bmrm_abi_version()` to check that the
/// library loaded at run time matches the header a program was compiled with.
pub const BMRM_ABI_VERSION: u32 = 4;

/// Did the call succeed. Every function that can fail returns one of these;
/// on failure `bmrm_last_error()` gives a message naming what failed.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum bmrm_status {
    /// Success.
    BMRM_OK = 0,
    /// A required pointer argument was NULL.
    BMRM_ERROR_NULL_ARGUMENT = 1,
    /// An argument or a setting is out of its domain: lambda <= 0, dim == 0,
    /// an unknown enum value, a bad setting, a history row that does not exist.
    BMRM_ERROR_INVALID_ARGUMENT = 2,
    /// Two sizes that must agree do not (e.g. the `dim` given to
    /// `bmrm_solver_run` and the problem's, or a corner index >= dim).
    BMRM_ERROR_DIMENSION_MISMATCH = 3,
    /// The algorithm needs an oracle level the problem lacks (P-BMRM on a
    /// full risk), or the problem has no oracle at all.
    BMRM_ERROR_NO_ORACLE = 4,
    /// A callback returned non-zero.
    BMRM_ERROR_ORACLE_FAILED = 5,
    /// NaN or Inf from a callback (risk, subgradient, loss, psi) or in the solver.
    BMRM_ERROR_NON_FINITE = 6,
    /// An allocation could not be made.
    BMRM_ERROR_OUT_OF_MEMORY = 7,
    /// A caught panic or a broken invariant: a bug in the library.
    BMRM_ERROR_INTERNAL = 8,
    /// Reading or writing a file failed.
    BMRM_ERROR_IO = 9,
    /// An MPI rank died or stopped answering; the communicator cannot be used
    /// for another run (end the job).
    BMRM_ERROR_RANK_LOST = 10,
}

impl bmrm_status {
    /// The C status of an error kind. The kinds' `#[repr(i32)]` values are
    /// the status table (`src/error.rs`); this match names each kind's C
    /// constant, and the assertion below fails the build when a number
    /// differs, so the table exists once.
    pub(crate) const fn of_kind(kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::NullArgument => bmrm_status::BMRM_ERROR_NULL_ARGUMENT,
            ErrorKind::InvalidArgument => bmrm_status::BMRM_ERROR_INVALID_ARGUMENT,
            ErrorKind::DimensionMismatch => bmrm_status::BMRM_ERROR_DIMENSION_MISMATCH,
            ErrorKind::NoOracle => bmrm_status::BMRM_ERROR_NO_ORACLE,
            ErrorKind::OracleFailed => bmrm_status::BMRM_ERROR_ORACLE_FAILED,
            ErrorKind::NonFinite => bmrm_status::BMRM_ERROR_NON_FINITE,
            ErrorKind::OutOfMemory => bmrm_status::BMRM_ERROR_OUT_OF_MEMORY,
            ErrorKind::Internal => bmrm_status::BMRM_ERROR_INTERNAL,
            ErrorKind::Io => bmrm_status::BMRM_ERROR_IO,
            ErrorKind::RankLost => bmrm_status::BMRM_ERROR_RANK_LOST,
        }
    }

    /// The status of an engine error.
    pub(crate) fn of(e: &Error) -> Self {
        Self::of_kind(e.kind())
    }
}

// The build-time check that every C status value is its kind's value.
const _: () = {
    let mut i = 0;
    while i < ErrorKind::ALL.len() {
        let kind = ErrorKind::ALL[i];
        assert!(bmrm_status::of_kind(kind) as i32 == kind as i32);
        i += 1;
    }
};

/// How a solve ended (the `exit` of `bmrm_info`).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum bmrm_exit {
    /// No run yet, or the last run failed (its status said why).
    BMRM_EXIT_NOT_RUN = 0,
    /// primal - lower_bound <= tol_rel * |primal|.
    BMRM_EXIT_CONVERGED_REL = 1,
    /// primal - lower_bound <= tol_abs.
    BMRM_EXIT_CONVERGED_ABS = 2,
    /// `max_iterations` was reached.
    BMRM_EXIT_MAX_ITERATIONS = 3,
    /// `time_limit_seconds` was reached.
    BMRM_EXIT_TIME_LIMIT = 4,
    /// The progress callback returned non-zero (the run's status is BMRM_OK).
    BMRM_EXIT_STOPPED_BY_USER = 5,
}

impl From<Exit> for bmrm_exit {
    fn from(e: Exit) -> Self {
        match e {
            Exit::NotRun => bmrm_exit::BMRM_EXIT_NOT_RUN,
            Exit::ConvergedRel => bmrm_exit::BMRM_EXIT_CONVERGED_REL,
            Exit::ConvergedAbs => bmrm_exit::BMRM_EXIT_CONVERGED_ABS,
            Exit::MaxIterations => bmrm_exit::BMRM_EXIT_MAX_ITERATIONS,
            Exit::TimeLimit => bmrm_exit::BMRM_EXIT_TIME_LIMIT,
            Exit::StoppedByUser => bmrm_exit::BMRM_EXIT_STOPPED_BY_USER,
        }
    }
}

/// Which optimiser to run.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum bmrm_algorithm {
    /// BMRM: one cutting-plane model of the whole risk.
    BMRM_ALGORITHM_BMRM = 0,
    /// Proximal BMRM: BMRM with a prox term that bounds the step length.
    BMRM_ALGORITHM_PROX_BMRM = 1,
    /// P-BMRM: one cutting-plane model per part (needs a partitioned risk or a
    /// max-oracle).
    BMRM_ALGORITHM_P_BMRM = 2,
    /// Proximal P-BMRM (needs a partitioned risk or a max-oracle).
    BMRM_ALGORITHM_PROX_P_BMRM = 3,
    /// Block-coordinate Frank-Wolfe (needs a max-oracle; BMRM_ERROR_NO_ORACLE
    /// otherwise), with the BCFW options of `bmrm_settings`.
    BMRM_ALGORITHM_BCFW = 4,
    /// Stochastic subgradient descent alone (`sgd_passes` passes).
    BMRM_ALGORITHM_SGD = 5,
    /// Kelley's cutting-plane method over a norm ball (the baseline).
    BMRM_ALGORITHM_CUTTING_PLANE = 6,
}

impl From<Algorithm> for bmrm_algorithm {
    fn from(a: Algorithm) -> Self {
        match a {
            Algorithm::Bmrm => bmrm_algorithm::BMRM_ALGORITHM_BMRM,
            Algorithm::ProxBmrm => bmrm_algorithm::BMRM_ALGORITHM_PROX_BMRM,
            Algorithm::PBmrm => bmrm_algorithm::BMRM_ALGORITHM_P_BMRM,
            Algorithm::ProxPBmrm => bmrm_algorithm::BMRM_ALGORITHM_PROX_P_BMRM,
            Algorithm::Bcfw => bmrm_algorithm::BMRM_ALGORITHM_BCFW,
            Algorithm::Sgd => bmrm_algorithm::BMRM_ALGORITHM_SGD,
            Algorithm::CuttingPlane => bmrm_algorithm::BMRM_ALGORITHM_CUTTING_PLANE,
        }
    }
}

/// How BCFW picks the next block (example).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum bmrm_sampling {
    /// Uniformly at random, with replacement.
    BMRM_SAMPLING_UNIFORM = 0,
    /// A new random permutation of the examples every pass.
    BMRM_SAMPLING_PERM = 1,
    /// Proportionally to the last computed block gaps (gap sampling).
    BMRM_SAMPLING_GAP = 2,
    /// The block with the largest gap estimate, deterministically (ABI 2).
    BMRM_SAMPLING_MAX_GAP = 3,
}

/// Which step BCFW takes on a block.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum bmrm_step_type {
    /// Frank-Wolfe steps towards the oracle's corner.
    BMRM_STEP_FW = 0,
    /// Pairwise steps: move mass from the away corner to the FW corner.
    BMRM_STEP_PAIRWISE = 1,
    /// FW or away steps, whichever improves the dual more.
    BMRM_STEP_AWAY = 2,
    /// The best of a FW, a pairwise and an away step (ABI 2).
    BMRM_STEP_ALL = 3,
    /// The block's sub-problem solved exactly on the built-in multiclass
    /// model (class-factored blocks), over the block's kept corners on
    /// other problems; an added value, same ABI.
    BMRM_STEP_EXACT = 4,
}

/// A `bmrm_status` received from C, as a plain integer so that an
/// out-of-range value is handled instead of being undefined behaviour.
/// The header spells it `bmrm_status` (cbindgen.toml renames it).
pub type RawStatus = i32;
/// A `bmrm_exit` received from C (see [`RawStatus`]); spelled `bmrm_exit`.
pub type RawExit = i32;
/// A `bmrm_algorithm` received from C (see [`RawStatus`]); spelled `bmrm_algorithm`.
pub type RawAlgorithm = i32;
/// A `bmrm_sampling` received from C (see [`RawStatus`]); spelled `bmrm_sampling`.
pub type RawSampling = i32;
/// A `bmrm_step_type` received from C (see [`RawStatus`]); spelled `bmrm_step_type`.
pub type RawStepType = i32;

/// Called after every iteration with the current summary (`info` is owned by
/// the library and valid only during the call). Return 0 to go on, non-zero
/// to stop: the run then ends with exit BMRM_EXIT_STOPPED_BY_USER and status
/// BMRM_OK. Calls never overlap; they come from one of the solver's threads.
/// It must not call `bmrm_solver_*` functions on the solver being run (they
/// fail with BMRM_ERROR_INVALID_ARGUMENT: the solver is busy).
pub type bmrm_progress_fn =
    Option<unsafe extern "C" fn(user: *mut c_void, info: *const bmrm_info) -> i32>;

/// BCFW: called after every pass with the iterate the BCFW MATLAB codes
/// return (the weighted average under `weighted_averaging`, else the last
/// iterate): `w` (`dim` doubles, owned by the library, valid during the call),
/// the dual's loss term `ell` of that point and its dual value. Return 0 to
/// go on, non-zero to stop (exit BMRM_EXIT_STOPPED_BY_USER). Called on the
/// thread that called `bmrm_solver_run`, never concurrently; it must not call
/// `bmrm_solver_*` on the solver being run.
pub type bmrm_bcfw_iterate_fn = Option<
    unsafe extern "C" fn(
        user: *mut c_void,
        pass: u64,
        w: *const f64,
        dim: usize,
        ell: f64,
        dual: f64,
    ) -> i32,
>;

/// Every setting of the engine, as a plain struct of fixed-width fields.
///
/// Get the defaults with `bmrm_settings_default(algorithm)`, change the
/// fields you need (at least `lambda`, which has no default), and pass a
/// pointer to `bmrm_solver_new`, which validates every field and copies the
/// struct (the caller keeps ownership; it may be freed or reused at once).
/// Flags are `uint8_t`: 0 is off, any other value is on. A field that the
/// chosen algorithm would not read (a BCFW field under a bundle method, a
/// bundle field under BCFW, ...) must keep its default: otherwise
/// `bmrm_solver_new` fails with BMRM_ERROR_INVALID_ARGUMENT naming it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct bmrm_settings {
    /// Which optimiser to run. An unknown value is rejected by
    /// `bmrm_solver_new` with BMRM_ERROR_INVALID_ARGUMENT.
    pub algorithm: RawAlgorithm,
    /// Passes of stochastic subgradient descent before a bundle method
    /// starts (0 = none, the default; the Prox-BMRM report's start is 10);
    /// for BMRM_ALGORITHM_SGD the whole run (default 5 there, must be >= 1).
    /// Under box constraints every step is projected onto the box; linear
    /// constraints refuse SGD.
    pub sgd_passes: u32,
    /// The regularisation constant of F(w) = lambda/2 ||w||^2 + R(w), with
    /// the mean risk of a max-oracle (see the README for the conversion from
    /// a summed risk or LIBLINEAR's C). No default: `bmrm_settings_default`
    /// sets 0, which `bmrm_solver_new` rejects; it must be positive and finite.
    pub lambda: f64,
    /// Stop when primal - lower_bound <= tol_rel * |primal| (default 1e-3).
    pub tol_rel: f64,
    /// Stop when primal - lower_bound <= tol_abs (default 0: off).
    pub tol_abs: f64,
    /// Most iterations (0 = no limit, the default).
    pub max_iterations: u64,
    /// Wall-time limit in seconds (0 = none, the default).
    pub time_limit_seconds: f64,
    /// Threads of the solver's pool (0 = all cores, the default; at most
    /// 1024). The solution is bit-identical for every value. The pool is
    /// built at the first run.
    pub num_threads: u64,
    /// Seed of every random choice (SGD order, sampling); default 0.
    pub seed: u64,
    /// Parts (cutting-plane models) of P-BMRM and Prox-P-BMRM. Over a
    /// max-oracle: 0 = 16, or the number of examples when smaller; the parts
    /// are contiguous blocks of examples. Over a partitioned risk: 0, 1 (all
    /// parts summed into one) or its own number of parts.
    pub num_parts: u64,
    /// Most cutting planes kept (default 2000, at least 2); when full, planes
    /// are aggregated, so a run never fails for lack of room.
    pub buffer_size: u64,
    /// Most coordinate updates of one inner QP solve (0 = no limit; default
    /// 10^7). The lower bound stays valid when a solve stops early.
    pub qp_max_updates: u64,
    /// Remove a plane whose dual weight stayed 0 for this many iterations
    /// (0 = never; default 10).
    pub clean_after: u32,
    /// Keep the cutting planes when `bmrm_solver_set_lambda` changes lambda
    /// (they model R, which lambda does not change); default 1.
    pub reuse_planes: u8,
    /// BCFW: line search for the step size (default 1); 0 uses the fixed
    /// step 2n/(k + 2n).
    pub line_search: u8,
    /// BCFW: weighted averaging of the iterates, rho = 2/(k + 2) (default 0).
    pub weighted_averaging: u8,
    /// BCFW: keep a cache of corners per example (default 0).
    pub use_cache: u8,
    /// Prox-BMRM's T (default 100, > 0).
    pub prox_t: f64,
    /// Prox-BMRM's K, the bound on the step length (0 = 0.01 ||w_1||, or a
    /// scale-aware value when w_1 = 0; the default).
    pub prox_k: f64,
    /// Radius of the norm ball of the cutting-plane method (0, the default:
    /// the smallest radius proven to hold the minimiser at w_1, from strong
    /// convexity for any risk, and sqrt(2 F(w_1) / lambda) for a max-oracle's
    /// risk >= 0). A user's radius gives the ball's lower bound only once an
    /// evaluated point proves the minimiser inside it.
    pub cp_radius: f64,
    /// BCFW: how blocks are sampled (default BMRM_SAMPLING_GAP).
    pub sampling: RawSampling,
    /// BCFW: which steps are taken (default BMRM_STEP_FW).
    pub step_type: RawStepType,
    /// BCFW: one exact pass over all blocks every `gap_check` passes to
    /// refresh the gap estimates and test convergence (default 10).
    pub gap_check: u32,
    /// BCFW: most corners cached per example (default 50).
    pub cache_size: u32,
    /// BCFW: a cache hit needs a gap >= cache_nu * G/n, G the last exact
    /// total gap (default 0.01).
    pub cache_nu: f64,
    /// BCFW: ... and a gap >= cache_factor * the block's last gap (default 0.25).
    pub cache_factor: f64,
    /// BCFW: most passes over the examples (0 = no limit, the default).
    pub num_passes: u64,
    /// BCFW regularisation path: the share `a` of the target gap used at each
    /// breakpoint (default 0.9, in (0, 1)).
    pub path_a: f64,
    /// Called after every iteration with the current summary; a non-zero
    /// return stops the run (exit BMRM_EXIT_STOPPED_BY_USER, status BMRM_OK).
    /// NULL (the default) for none.
    pub progress: bmrm_progress_fn,
    /// Passed back unchanged as the first argument of `progress`; never
    /// dereferenced or freed by the library. May be NULL.
    pub progress_user: *mut c_void,
    /// BCFW: called after every pass with the iterate and its `ell` (see
    /// `bmrm_bcfw_iterate_fn`); NULL (the default) for none. (ABI 2)
    pub bcfw_iterate: bmrm_bcfw_iterate_fn,
    /// Passed back unchanged as the first argument of `bcfw_iterate`.
    pub bcfw_iterate_user: *mut c_void,
    /// BCFW gap sampling: blocks drawn proportionally to gap^gap_degree
    /// (default 1; positive and finite). (ABI 2)
    pub gap_degree: f64,
    /// BCFW: an exact gap pass as soon as every block's gap estimate is known
    /// and their sum is <= early_exact_factor * tol_abs (gapBCFW's
    /// quit_passes_heuristic_gap; default 0 = off). (ABI 2)
    pub early_exact_factor: f64,
    /// BCFW: multi-plane BCFW (default 0): after each pass of oracle steps,
    /// approximate passes towards the best kept corner of each block, no
    /// oracle call (docs/bcfw.md). (ABI 3)
    pub multi_plane: u8,
    /// Multi-plane: 1 stops the approximate passes once their dual increase
    /// per second falls below the oracle pass's (results then depend on
    /// timing); 0 (the default) only when one gains nothing. (ABI 3)
    pub mp_timed: u8,
    /// Multi-plane: most approximate passes after each oracle pass
    /// (default 10). (ABI 3)
    pub mp_approx_passes: u32,
    /// Multi-plane: a corner without weight unused for this many oracle
    /// passes is dropped (default 10, >= 1). (ABI 3)
    pub mp_inactive_passes: u32,
    /// Multi-plane: approximate steps on a block right after its oracle
    /// call (default 0). (ABI 3)
    pub mp_block_steps: u32,
    /// BCFW: mini-batch size (default 0 = one block at a time): the oracle
    /// answers this many blocks at one `w` (in parallel), then their steps
    /// are taken in a fixed order; `n` or more makes every pass an exact
    /// pass with its certificate (docs/bcfw.md). (ABI 3)
    pub mini_batch: u32,
}

impl bmrm_settings {
    /// The engine's defaults for `algorithm` (from [`Settings::new`]) with
    /// lambda = 0 (unset) and the BCFW defaults of docs/bcfw.md.
    pub(crate) fn defaults(algorithm: RawAlgorithm) -> Self {
        let engine = Settings::new(
            Algorithm::from_i32(algorithm).unwrap_or(Algorithm::Bmrm),
            0.0,
        );
        bmrm_settings {
            algorithm,
            sgd_passes: engine.sgd_passes,
            lambda: engine.lambda,
            tol_rel: engine.tol_rel,
            tol_abs: engine.tol_abs,
            max_iterations: engine.max_iterations,
            time_limit_seconds: engine.time_limit_seconds,
            num_threads: engine.num_threads as u64,
            seed: engine.seed,
            num_parts: engine.num_parts as u64,
            buffer_size: engine.buffer_size as u64,
            qp_max_updates: engine.qp_max_updates,
            clean_after: engine.clean_after,
            reuse_planes: u8::from(engine.reuse_planes),
            line_search: u8::from(engine.line_search),
            weighted_averaging: u8::from(engine.weighted_averaging),
            use_cache: u8::from(engine.use_cache),
            prox_t: engine.prox_t,
            prox_k: engine.prox_k,
            cp_radius: engine.cp_radius,
            sampling: engine.sampling as RawSampling,
            step_type: engine.step_type as RawStepType,
            gap_check: engine.gap_check,
            cache_size: u32::try_from(engine.cache_size).unwrap_or(u32::MAX),
            cache_nu: engine.cache_nu,
            cache_factor: engine.cache_factor,
            num_passes: engine.num_passes,
            path_a: engine.path_a,
            progress: None,
            progress_user: std::ptr::null_mut(),
            bcfw_iterate: None,
            bcfw_iterate_user: std::ptr::null_mut(),
            gap_degree: engine.gap_degree,
            early_exact_factor: engine.early_exact_factor,
            multi_plane: u8::from(engine.multi_plane),
            mp_timed: u8::from(engine.mp_timed),
            mp_approx_passes: engine.mp_approx_passes,
            mp_inactive_passes: engine.mp_inactive_passes,
            mp_block_steps: engine.mp_block_steps,
            mini_batch: engine.mini_batch,
        }
    }

    /// The engine's settings. Checks what only the C side can get wrong (enum
    /// values, sizes that do not fit in `size_t`); the engine's
    /// [`Settings::validate`] checks the rest in `Solver::new` and
    /// `Solver::set_lambda`.
    pub(crate) fn to_engine(self) -> Result<Settings> {
        let algorithm = Algorithm::from_i32(self.algorithm).ok_or_else(|| {
            Error::invalid_argument(format!(
                "algorithm = {} is not a bmrm_algorithm (0..=6)",
                self.algorithm
            ))
        })?;
        if !(0..=3).contains(&self.sampling) {
            return Err(Error::invalid_argument(format!(
                "sampling = {} is not a bmrm_sampling (0..=3)",
                self.sampling
            )));
        }
        if !(0..=4).contains(&self.step_type) {
            return Err(Error::invalid_argument(format!(
                "step_type = {} is not a bmrm_step_type (0..=4)",
                self.step_type
            )));
        }
        let size = |name: &str, v: u64| {
            usize::try_from(v).map_err(|_| {
                Error::invalid_argument(format!("{name} = {v} does not fit in size_t"))
            })
        };
        let mut s = Settings::new(algorithm, self.lambda);
        s.tol_rel = self.tol_rel;
        s.tol_abs = self.tol_abs;
        s.max_iterations = self.max_iterations;
        s.time_limit_seconds = self.time_limit_seconds;
        s.num_threads = size("num_threads", self.num_threads)?;
        s.num_parts = size("num_parts", self.num_parts)?;
        s.buffer_size = size("buffer_size", self.buffer_size)?;
        s.clean_after = self.clean_after;
        s.prox_t = self.prox_t;
        s.prox_k = self.prox_k;
        s.sgd_passes = self.sgd_passes;
        s.cp_radius = self.cp_radius;
        s.reuse_planes = self.reuse_planes != 0;
        s.qp_max_updates = self.qp_max_updates;
        s.seed = self.seed;
        s.sampling = Sampling::from_i32(self.sampling).unwrap_or(Sampling::Gap);
        s.step_type = StepType::from_i32(self.step_type).unwrap_or(StepType::FrankWolfe);
        s.line_search = self.line_search != 0;
        s.weighted_averaging = self.weighted_averaging != 0;
        s.use_cache = self.use_cache != 0;
        s.gap_check = self.gap_check;
        s.cache_size = size("cache_size", u64::from(self.cache_size))?;
        s.cache_nu = self.cache_nu;
        s.cache_factor = self.cache_factor;
        s.num_passes = self.num_passes;
        s.path_a = self.path_a;
        s.gap_degree = self.gap_degree;
        s.early_exact_factor = self.early_exact_factor;
        s.multi_plane = self.multi_plane != 0;
        s.mp_timed = self.mp_timed != 0;
        s.mp_approx_passes = self.mp_approx_passes;
        s.mp_inactive_passes = self.mp_inactive_passes;
        s.mp_block_steps = self.mp_block_steps;
        s.mini_batch = self.mini_batch;
        Ok(s)
    }
}

/// The summary of a solve: what `bmrm_solver_info` returns and what the
/// progress callback sees after every iteration.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct bmrm_info {
    /// How the solve ended (BMRM_EXIT_NOT_RUN while running, before the first
    /// run and after a failed run).
    pub exit: bmrm_exit,
    /// Iterations done.
    pub iterations: u64,
    /// Evaluations of the whole risk, counted in user callback calls (one per
    /// part, or one per example for a max-oracle).
    pub oracle_calls: u64,
    /// F(w) at the returned (best) w.
    pub primal: f64,
    /// A valid lower bound on min F: lower_bound <= F(w*) always.
    pub lower_bound: f64,
    /// primal - lower_bound, the certificate of optimality.
    pub gap: f64,
    /// R(w) at the returned w.
    pub risk: f64,
    /// Cutting planes in the model.
    pub num_planes: u64,
    /// Planes with a positive dual weight.
    pub active_planes: u64,
    /// Wall time of the run so far.
    pub elapsed_seconds: f64,
    /// Of which in the user's callbacks (wall time of the evaluations).
    pub oracle_seconds: f64,
    /// Of which in the inner QP solves.
    pub qp_seconds: f64,
    /// 1 when every max-oracle answer of the run was trusted as a maximiser
    /// (none marked inexact with bmrm_corner_mark_inexact, none below the
    /// ground truth, which is clipped to it), so the gap certifies; 0 when
    /// not (lower_bound is still a lower bound on min F, but primal is F with
    /// the risk as the oracle answered it) and after a failed run (ABI 4).
    pub certified: u8,
}

impl From<&Info> for bmrm_info {
    fn from(i: &Info) -> Self {
        bmrm_info {
            exit: i.exit.into(),
            iterations: i.iterations,
            oracle_calls: i.oracle_calls,
            primal: i.primal,
            lower_bound: i.lower_bound,
            gap: i.gap,
            risk: i.risk,
            num_planes: i.num_planes,
            active_planes: i.active_planes,
            elapsed_seconds: i.elapsed_seconds,
            oracle_seconds: i.oracle_seconds,
            qp_seconds: i.qp_seconds,
            certified: u8::from(i.certified),
        }
    }
}

/// One row of a solve's history (one per iteration), from `bmrm_solver_history`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct bmrm_iteration {
    /// The iteration, from 1.
    pub iteration: u64,
    /// Best F(w) so far.
    pub primal: f64,
    /// Best lower bound so far.
    pub lower_bound: f64,
    /// R at this iteration's point.
    pub risk: f64,
    /// F at this iteration's point (not the best).
    pub objective: f64,
    /// Cutting planes in the model.
    pub num_planes: u64,
    /// Planes with a positive dual weight.
    pub active_planes: u64,
    /// The prox constant of this iteration's step (0 for BMRM).
    pub alpha: f64,
    /// ||w_t - w_{t-1}||.
    pub step_norm: f64,
    /// Wall time since the run started.
    pub elapsed_seconds: f64,
    /// Of which in the user's callbacks.
    pub oracle_seconds: f64,
    /// Of which in the inner QP solves.
    pub qp_seconds: f64,
    /// User callback calls so far.
    pub oracle_calls: u64,
}

impl From<&Iteration> for bmrm_iteration {
    fn from(r: &Iteration) -> Self {
        bmrm_iteration {
            iteration: r.iteration,
            primal: r.primal,
            lower_bound: r.lower_bound,
            risk: r.risk,
            objective: r.objective,
            num_planes: r.num_planes,
            active_planes: r.active_planes,
            alpha: r.alpha,
            step_norm: r.step_norm,
            elapsed_seconds: r.elapsed_seconds,
            oracle_seconds: r.oracle_seconds,
            qp_seconds: r.qp_seconds,
            oracle_calls: r.oracle_calls,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_convert_back_to_the_engine_defaults() {
        for a in 0..=6 {
            let alg = Algorithm::from_i32(a).unwrap();
            let mut c = bmrm_settings::defaults(a);
            assert_eq!(c.to_engine(), Ok(Settings::new(alg, 0.0)));
            c.lambda = 0.5;
            c.num_parts = 3;
            c.reuse_planes = 7; // any non-zero value is on
            let mut want = Settings::new(alg, 0.5);
            want.num_parts = 3;
            assert_eq!(c.to_engine(), Ok(want));
            assert_eq!(bmrm_algorithm::from(alg) as i32, a);
        }
    }

    #[test]
    fn out_of_range_enum_values_are_errors() {
        let mut c = bmrm_settings::defaults(0);
        c.algorithm = 7;
        assert!(
            matches!(c.to_engine(), Err(Error { kind: crate::ErrorKind::InvalidArgument, message: m, .. }) if m.contains("algorithm = 7"))
        );
        let mut c = bmrm_settings::defaults(0);
        c.sampling = -1;
        assert!(
            matches!(c.to_engine(), Err(Error { kind: crate::ErrorKind::InvalidArgument, message: m, .. }) if m.contains("sampling"))
        );
        let mut c = bmrm_settings::defaults(0);
        c.step_type = 5;
        assert!(
            matches!(c.to_engine(), Err(Error { kind: crate::ErrorKind::InvalidArgument, message: m, .. }) if m.contains("step_type"))
        );
        for &kind in ErrorKind::ALL {
            assert_eq!(bmrm_status::of(&Error::new(kind, "x")) as i32, kind as i32);
        }
    }
}

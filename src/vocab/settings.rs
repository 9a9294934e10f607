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
    /// Block-coordinate Frank-Wolfe on the dual of the structured SVM
    /// (Lacoste-Julien et al.; gap sampling, pairwise/away steps and caching
    /// of Osokin et al.), see docs/bcfw.md.
    Bcfw = 4,
    /// Stochastic (sub)gradient descent alone.
    Sgd = 5,
    /// Kelley's cutting-plane method on F over a norm ball (the baseline).
    CuttingPlane = 6,
}

impl Algorithm {
    /// The algorithm of a C `bmrm_algorithm` value (`None` when out of range).
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

    /// The algorithm's name, e.g. "Prox-P-BMRM".
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

/// How BCFW picks the next block (example). The values are the C ABI's
/// `bmrm_sampling`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Sampling {
    /// Uniformly at random, with replacement.
    Uniform = 0,
    /// A new random permutation of the examples every pass.
    Permutation = 1,
    /// Proportionally to the last computed block gaps; blocks never visited
    /// first (gap sampling).
    Gap = 2,
    /// Deterministically the block with the largest gap estimate (ties: the
    /// lowest index); blocks never visited first (gapBCFW's 'maxGap').
    MaxGap = 3,
}

impl Sampling {
    /// The sampling of a C `bmrm_sampling` value (`None` when out of range).
    pub fn from_i32(v: i32) -> Option<Self> {
        Some(match v {
            0 => Sampling::Uniform,
            1 => Sampling::Permutation,
            2 => Sampling::Gap,
            3 => Sampling::MaxGap,
            _ => return None,
        })
    }
}

/// Which steps BCFW takes on a block. The values are the C ABI's
/// `bmrm_step_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum StepType {
    /// Frank-Wolfe steps towards the oracle's corner (BCFW).
    FrankWolfe = 0,
    /// The better of a FW step and a pairwise step that moves mass from the
    /// away corner to the FW corner (BCPFW).
    Pairwise = 1,
    /// The better of a FW step and an away step (BCAFW).
    Away = 2,
    /// The best of a FW, a pairwise and an away step (gapBCFW's "all steps").
    All = 3,
    /// The block's sub-problem solved exactly over its simplex (Keerthi et
    /// al., KDD 2008: a projection of K numbers), for class-factored
    /// oracles (the multiclass model) only; with shrinking of blocks at
    /// their truth by a margin, re-checked at every exact pass.
    Exact = 4,
}

impl StepType {
    /// The step type of a C `bmrm_step_type` value (`None` when out of range).
    pub fn from_i32(v: i32) -> Option<Self> {
        Some(match v {
            0 => StepType::FrankWolfe,
            1 => StepType::Pairwise,
            2 => StepType::Away,
            3 => StepType::All,
            4 => StepType::Exact,
            _ => return None,
        })
    }
}

/// Every setting of the engine. `Settings::new(algorithm, lambda)` gives the
/// defaults; [`Settings::validate`] is called by the solver.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Which optimiser to run.
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
    /// Threads of the solver's pool (0 = all cores; at most [`MAX_THREADS`]).
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
    /// Prox-BMRM's K, the step length bound (0 = 0.01 ||w_1||, see the
    /// README); it doubles after 10 steps in a row that reach it and lower F.
    pub prox_k: f64,
    /// Passes of SGD before the bundle method starts (0 = none;
    /// [`Settings::SGD_START_PASSES`] is the Prox-BMRM report's start). For
    /// [`Algorithm::Sgd`] this is the whole run (default 5 there). Under a
    /// box every step is projected onto it; linear rows refuse SGD.
    pub sgd_passes: u32,
    /// Radius of the norm ball of the cutting-plane method (0: the smallest
    /// radius proven at `w_1` to hold the minimiser). A user's radius gives
    /// the ball's lower bound only once an evaluated point proves the
    /// minimiser inside it (see `methods::cutting_plane`).
    pub cp_radius: f64,
    /// Keep the cutting planes when lambda changes (planes model R, not F,
    /// so they stay valid). Default true.
    pub reuse_planes: bool,
    /// Most coordinate updates of one QP solve (0 = no limit; default 10^7,
    /// a guard: the bound stays valid when a solve stops early).
    pub qp_max_updates: u64,
    /// Seed of every random choice (SGD order, t0 tuning sample, BCFW sampling).
    pub seed: u64,
    /// BCFW: how blocks are sampled (default gap sampling).
    pub sampling: Sampling,
    /// BCFW: FW, pairwise, away or exact block steps (default FW).
    pub step_type: StepType,
    /// BCFW: exact line search (default true); false uses 2n/(k + 2n).
    pub line_search: bool,
    /// BCFW: weighted averaging of the iterates, rho = 2/(k + 2) (default false).
    pub weighted_averaging: bool,
    /// BCFW: one exact pass over all blocks every `gap_check` passes (default
    /// 10) refreshes the gap estimates and gives the certificate.
    pub gap_check: u32,
    /// BCFW: keep a cache of corners per block (default false).
    pub use_cache: bool,
    /// BCFW: most inactive corners cached per block (default 50).
    pub cache_size: usize,
    /// BCFW: a cache hit needs a gap >= cache_nu * G/n, G the last exact gap
    /// (default 0.01) ...
    pub cache_nu: f64,
    /// ... and >= cache_factor * the block's last gap estimate (default 0.25).
    pub cache_factor: f64,
    /// BCFW: most passes (n block steps each; 0 = no limit). `max_iterations`
    /// counts passes too; the smaller non-zero limit applies.
    pub num_passes: u64,
    /// BCFW regularisation path: the share `a` of the target gap each
    /// breakpoint is solved to (default 0.9, in (0, 1)).
    pub path_a: f64,
    /// BCFW, for benchmarks: compute the exact duality gap at the end of every
    /// pass for the history (`Iteration::exact_gap`) without using it and
    /// without counting its oracle calls or time (default false).
    pub trace_gap: bool,
    /// BCFW: called after every pass with the iterate (the averaged one
    /// under weighted averaging) and its `ell` (default none).
    pub iterate_hook: Option<super::IterateHook>,
    /// BCFW gap sampling: blocks drawn proportionally to `gap^gap_degree`
    /// (default 1; > 0 and finite).
    pub gap_degree: f64,
    /// BCFW: an exact pass as soon as every block's gap estimate is known and
    /// their sum is <= early_exact_factor * tol_abs, not only every
    /// gap_check passes (gapBCFW's quit_passes_heuristic_gap with its
    /// eps multiplier; default 0 = off).
    pub early_exact_factor: f64,
    /// BCFW: multi-plane BCFW (Shah et al. 2015; docs/bcfw.md): after each
    /// pass of oracle steps, approximate passes that step towards the best
    /// kept corner of each block without calling the oracle (default false).
    pub multi_plane: bool,
    /// Multi-plane: most approximate passes after each oracle pass
    /// (default 10). They stop sooner once one gains nothing, and with
    /// `mp_timed` once their dual increase per second falls below the
    /// oracle pass's.
    pub mp_approx_passes: u32,
    /// Multi-plane: stop the approximate passes by measured time (the
    /// paper's rule; results then depend on timing). Default false: the
    /// number of approximate passes depends only on the data and the seed.
    pub mp_timed: bool,
    /// Multi-plane: a corner with no weight that was not the best corner of
    /// its block for this many passes is dropped (default 10, >= 1).
    pub mp_inactive_passes: u32,
    /// Multi-plane: approximate steps on a block right after its oracle
    /// call (default 0).
    pub mp_block_steps: u32,
    /// BCFW: mini-batch BCFW (Wang et al. 2016; docs/bcfw.md): the oracle
    /// answers this many blocks at the same `w` (in parallel), then their
    /// steps are taken in a fixed order; `n` or more: every pass is one
    /// exact pass at `w` (its certificate included) followed by one step per
    /// block. 0 or 1 (the default): one block at a time.
    pub mini_batch: u32,
}

/// The largest condition `mean_i ||(x_i, 1)||^2 / (lambda n)` at which the
/// built-in multiclass model is trained by BCFW with exact block steps when
/// the caller leaves the algorithm to the library (`bmrm train` without
/// `-a`, Python's `LinearSSVMClassifier(algorithm='auto')`); Prox-P-BMRM
/// above it. Exact block steps are dual coordinate ascent, whose passes to a
/// given gap grow with `1 + R^2 / (lambda n)` (R^2 the rows' squared norm),
/// while a bundle method's iterations grow with `1 / lambda` alone. Measured
/// to a certified 0.1 % on Fashion-MNIST (mean squared norm 163): on 10,000
/// images, 1 thread, CPU seconds, condition 1.6 (lambda 1e-2) exact steps
/// 1.0; 16 (lambda 1e-3) exact steps 5.3, Prox-P-BMRM 6.8; 163 (lambda 1e-4)
/// Prox-P-BMRM 46, exact steps 48. On all 60,000, wall seconds, 1 and 2
/// threads: condition 2.7 (lambda 1e-3) exact steps 5.9 and 5.2, Prox-P-BMRM
/// 11.3 and 6.0; 27 (lambda 1e-4) Prox-P-BMRM 31.3 and 20.5, exact steps 45
/// and 44 (docs/benchmarks.md). On badly scaled data
/// (rows of norm 100, 80 examples, lambda 1/80: condition 10^4) the exact
/// steps were still 98 % from the optimum after 1,000 passes, BMRM done in 12
/// iterations.
pub const MULTICLASS_BCFW_MAX_CONDITION: f64 = 20.0;

/// The fewest examples for which the library picks BCFW for the built-in
/// multiclass model: on fewer, a bundle method's iterations cost next to
/// nothing and its certificate arrives in tens of them.
pub const MULTICLASS_BCFW_MIN_EXAMPLES: usize = 1000;

/// The most threads a solver's pool may have: more cannot help a solver and
/// cost the host memory and minutes of thread creation.
pub const MAX_THREADS: usize = 1024;

impl Settings {
    /// The SGD start of the Prox-BMRM report's experiments: 10 passes of
    /// (projected) SGD before the bundle method (`sgd_passes`).
    pub const SGD_START_PASSES: u32 = 10;

    /// The defaults for `algorithm` at `lambda` (validated when the solver is made).
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
            sampling: Sampling::Gap,
            step_type: StepType::FrankWolfe,
            line_search: true,
            weighted_averaging: false,
            gap_check: 10,
            use_cache: false,
            cache_size: 50,
            cache_nu: 0.01,
            cache_factor: 0.25,
            num_passes: 0,
            path_a: 0.9,
            trace_gap: false,
            iterate_hook: None,
            gap_degree: 1.0,
            early_exact_factor: 0.0,
            multi_plane: false,
            mp_approx_passes: 10,
            mp_timed: false,
            mp_inactive_passes: 10,
            mp_block_steps: 0,
            mini_batch: 0,
        }
    }

    /// The settings the library picks for the built-in multiclass model on
    /// `examples` rows of mean squared norm `mean_row_norm2` (bias
    /// included) at `lambda`: BCFW with exact steps, permutation sampling and
    /// an exact pass when the shrunk problem's gap says so (`gap_check`
    /// 1000) when there are at least [`MULTICLASS_BCFW_MIN_EXAMPLES`] and the
    /// condition `mean_row_norm2 / (lambda examples)` is at most
    /// [`MULTICLASS_BCFW_MAX_CONDITION`]; Prox-P-BMRM otherwise.
    pub fn for_multiclass(lambda: f64, examples: usize, mean_row_norm2: f64) -> Self {
        let condition = mean_row_norm2 / (lambda * examples as f64);
        if examples >= MULTICLASS_BCFW_MIN_EXAMPLES && condition <= MULTICLASS_BCFW_MAX_CONDITION {
            let mut s = Settings::new(Algorithm::Bcfw, lambda);
            s.step_type = StepType::Exact;
            s.sampling = Sampling::Permutation;
            s.gap_check = 1000;
            s
        } else {
            Settings::new(Algorithm::ProxPBmrm, lambda)
        }
    }

    /// Checks every field; the message names the field and its value.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::invalid_argument(m));
        if !(self.lambda.is_finite() && self.lambda > 0.0) {
            return bad(format!(
                "lambda must be positive and finite, got {}",
                self.lambda
            ));
        }
        // A subnormal lambda has an infinite 1/lambda (5e-324) or carries
        // few significant bits: every method divides by it (BCFW's
        // 1/(lambda n), the bundle's w = -A beta / lambda).
        if self.lambda < f64::MIN_POSITIVE {
            return bad(format!(
                "lambda must be at least {:e} (the smallest normal double, so that 1/lambda \
                 is finite), got {:e}",
                f64::MIN_POSITIVE,
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
        if self.num_threads > MAX_THREADS {
            return bad(format!(
                "num_threads must be at most {MAX_THREADS} (0 = all cores), got {}",
                self.num_threads
            ));
        }
        if self.buffer_size < 2 {
            return bad(format!(
                "buffer_size must be >= 2, got {}",
                self.buffer_size
            ));
        }
        if self.gap_check == 0 {
            return bad("gap_check must be >= 1".into());
        }
        if self.use_cache && self.cache_size == 0 {
            return bad("cache_size must be >= 1 when the cache is on".into());
        }
        if !(self.cache_nu.is_finite() && self.cache_nu >= 0.0) {
            return bad(format!("cache_nu must be >= 0, got {}", self.cache_nu));
        }
        if !(self.cache_factor.is_finite() && self.cache_factor >= 0.0) {
            return bad(format!(
                "cache_factor must be >= 0, got {}",
                self.cache_factor
            ));
        }
        if !(self.early_exact_factor >= 0.0 && self.early_exact_factor.is_finite()) {
            return bad(format!(
                "early_exact_factor must be >= 0 and finite, got {}",
                self.early_exact_factor
            ));
        }
        if !(self.gap_degree > 0.0 && self.gap_degree.is_finite()) {
            return bad(format!(
                "gap_degree must be positive and finite, got {}",
                self.gap_degree
            ));
        }
        if self.early_exact_factor > 0.0 && self.tol_abs == 0.0 {
            return bad(
                "early_exact_factor needs tol_abs > 0 (the early exact pass comes once the gap \
                 estimates sum below early_exact_factor * tol_abs)"
                    .into(),
            );
        }
        if self.gap_degree != 1.0 && self.sampling != Sampling::Gap {
            return bad(format!(
                "gap_degree is used by gap sampling only, but sampling is {:?}",
                self.sampling
            ));
        }
        if self.mini_batch > 1 && self.use_cache {
            return bad(
                "mini_batch > 1 does not combine with use_cache (every block of a batch calls \
                 the oracle; multi_plane works with it)"
                    .into(),
            );
        }
        if self.step_type == StepType::Exact {
            for (field, on) in [
                ("use_cache", self.use_cache),
                ("multi_plane", self.multi_plane),
                ("line_search = false", !self.line_search),
            ] {
                if on {
                    return bad(format!(
                        "{field} does not combine with step_type Exact (an exact block step \
                         solves the block's sub-problem over all its corners)"
                    ));
                }
            }
        }
        if self.mp_inactive_passes == 0 {
            return bad("mp_inactive_passes must be >= 1".into());
        }
        if self.multi_plane && self.cache_size == 0 {
            return bad(
                "cache_size must be >= 1 with multi_plane (it bounds the working set)".into(),
            );
        }
        if !(self.path_a > 0.0 && self.path_a < 1.0) {
            return bad(format!("path_a must be in (0, 1), got {}", self.path_a));
        }
        if self.algorithm == Algorithm::Sgd && self.sgd_passes == 0 {
            return bad("the SGD algorithm needs sgd_passes >= 1".into());
        }
        if let Some((field, users)) = self.unused_setting() {
            return bad(format!(
                "{field} is not used by {} (it applies to {users}): leave it at its default",
                self.algorithm.name()
            ));
        }
        let stops = self.tol_rel > 0.0
            || self.tol_abs > 0.0
            || self.max_iterations > 0
            || self.time_limit_seconds > 0.0
            || (self.algorithm == Algorithm::Bcfw && self.num_passes > 0)
            || self.algorithm == Algorithm::Sgd;
        if !stops {
            return bad(
                "no stopping rule: set tol_rel, tol_abs, max_iterations, time_limit_seconds \
                 (or num_passes for BCFW)"
                    .into(),
            );
        }
        Ok(())
    }

    /// The first setting that differs from its default although
    /// `self.algorithm` does not read it, with the algorithms that do: a
    /// setting that is accepted is honoured, one that would not be is an
    /// error naming it. (`num_parts` is checked by the solver, which knows
    /// whether the parts come from the problem.)
    fn unused_setting(&self) -> Option<(&'static str, &'static str)> {
        use Algorithm::*;
        const BCFW: (&[Algorithm], &str) = (&[Bcfw], "BCFW");
        const PLANES: (&[Algorithm], &str) = (
            &[Bmrm, ProxBmrm, PBmrm, ProxPBmrm, CuttingPlane],
            "the bundle methods and the cutting-plane method",
        );
        const BUNDLE: (&[Algorithm], &str) = (
            &[Bmrm, ProxBmrm, PBmrm, ProxPBmrm],
            "BMRM, Prox-BMRM, P-BMRM and Prox-P-BMRM",
        );
        const PROX: (&[Algorithm], &str) = (&[ProxBmrm, ProxPBmrm], "Prox-BMRM and Prox-P-BMRM");
        const CP: (&[Algorithm], &str) = (&[CuttingPlane], "the cutting-plane method");
        const SGD: (&[Algorithm], &str) = (
            &[Sgd, Bmrm, ProxBmrm, PBmrm, ProxPBmrm],
            "SGD and, as their start, the bundle methods",
        );
        let d = Settings::new(self.algorithm, self.lambda);
        let changed = [
            ("sampling", self.sampling != d.sampling, BCFW),
            ("step_type", self.step_type != d.step_type, BCFW),
            ("line_search", self.line_search != d.line_search, BCFW),
            (
                "weighted_averaging",
                self.weighted_averaging != d.weighted_averaging,
                BCFW,
            ),
            ("gap_check", self.gap_check != d.gap_check, BCFW),
            ("use_cache", self.use_cache != d.use_cache, BCFW),
            ("cache_size", self.cache_size != d.cache_size, BCFW),
            ("cache_nu", self.cache_nu != d.cache_nu, BCFW),
            ("cache_factor", self.cache_factor != d.cache_factor, BCFW),
            ("num_passes", self.num_passes != d.num_passes, BCFW),
            ("path_a", self.path_a != d.path_a, BCFW),
            ("trace_gap", self.trace_gap != d.trace_gap, BCFW),
            ("iterate_hook", self.iterate_hook.is_some(), BCFW),
            ("gap_degree", self.gap_degree != d.gap_degree, BCFW),
            (
                "early_exact_factor",
                self.early_exact_factor != d.early_exact_factor,
                BCFW,
            ),
            ("multi_plane", self.multi_plane != d.multi_plane, BCFW),
            (
                "mp_approx_passes",
                self.mp_approx_passes != d.mp_approx_passes,
                BCFW,
            ),
            ("mp_timed", self.mp_timed != d.mp_timed, BCFW),
            (
                "mp_inactive_passes",
                self.mp_inactive_passes != d.mp_inactive_passes,
                BCFW,
            ),
            (
                "mp_block_steps",
                self.mp_block_steps != d.mp_block_steps,
                BCFW,
            ),
            ("mini_batch", self.mini_batch != d.mini_batch, BCFW),
            ("buffer_size", self.buffer_size != d.buffer_size, PLANES),
            ("clean_after", self.clean_after != d.clean_after, PLANES),
            (
                "qp_max_updates",
                self.qp_max_updates != d.qp_max_updates,
                PLANES,
            ),
            ("reuse_planes", self.reuse_planes != d.reuse_planes, BUNDLE),
            ("prox_t", self.prox_t != d.prox_t, PROX),
            ("prox_k", self.prox_k != d.prox_k, PROX),
            ("cp_radius", self.cp_radius != d.cp_radius, CP),
            ("sgd_passes", self.sgd_passes != d.sgd_passes, SGD),
        ];
        changed
            .into_iter()
            .find(|(_, differs, (users, _))| *differs && !users.contains(&self.algorithm))
            .map(|(field, _, (_, names))| (field, names))
    }
}

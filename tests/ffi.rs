//! The C ABI, from C and against the Rust API.
//!
//! - The layout of every `repr(C)` type and every enum value are pinned here,
//!   and the C compiler's view of `include/bmrm.h` (printed by the C test
//!   program) must agree with the Rust types.
//! - `include/bmrm.h` must be what cbindgen generates now (build.rs writes
//!   the generated header to `OUT_DIR`).
//! - `tests/c/ffi_test.c` is compiled with the system C compiler against the
//!   static library cargo built for this test run, and run: it checks every
//!   function and every error path itself, and prints its solutions, which
//!   must equal (within the solvers' certified tolerance) those of the same
//!   problems solved through the Rust API.
//! - `scripts/install.sh` installs into a temporary prefix and
//!   `examples/c/multiclass.c` is built against the installed files with
//!   pkg-config (shared and static) and run.
//! - `c_programs_under_valgrind` (ignored by default; scripts/test.sh runs
//!   it) runs both C programs under valgrind's memcheck.

mod support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use bmrm::ffi::{
    bmrm_algorithm, bmrm_bcfw_info, bmrm_bcfw_pass, bmrm_breakpoint, bmrm_exit, bmrm_info,
    bmrm_iteration, bmrm_sampling, bmrm_settings, bmrm_settings_default, bmrm_status,
    bmrm_step_type, BMRM_ABI_VERSION,
};
use bmrm::oracle::{Corner, FullRisk, MaxOracle, PartitionedRisk};
use bmrm::{Algorithm, Info, Iteration, Problem, Settings, Solver};
use support::{lib_dir, path_arg, root, run_ok, shared_lib_name, static_link_args, strict_flags};

// ---------------------------------------------------------------------------
// Layout and enum values.

/// The offset of `field` in the value `v` (safe: only addresses are taken).
macro_rules! offset {
    ($v:expr, $field:ident) => {
        std::ptr::addr_of!($v.$field) as usize - std::ptr::addr_of!($v) as usize
    };
}

fn settings_offsets() -> Vec<(&'static str, usize)> {
    let s = bmrm_settings_default(0);
    vec![
        ("algorithm", offset!(s, algorithm)),
        ("sgd_passes", offset!(s, sgd_passes)),
        ("lambda", offset!(s, lambda)),
        ("tol_rel", offset!(s, tol_rel)),
        ("tol_abs", offset!(s, tol_abs)),
        ("max_iterations", offset!(s, max_iterations)),
        ("time_limit_seconds", offset!(s, time_limit_seconds)),
        ("num_threads", offset!(s, num_threads)),
        ("seed", offset!(s, seed)),
        ("num_parts", offset!(s, num_parts)),
        ("buffer_size", offset!(s, buffer_size)),
        ("qp_max_updates", offset!(s, qp_max_updates)),
        ("clean_after", offset!(s, clean_after)),
        ("reuse_planes", offset!(s, reuse_planes)),
        ("line_search", offset!(s, line_search)),
        ("weighted_averaging", offset!(s, weighted_averaging)),
        ("use_cache", offset!(s, use_cache)),
        ("prox_t", offset!(s, prox_t)),
        ("prox_k", offset!(s, prox_k)),
        ("cp_radius", offset!(s, cp_radius)),
        ("sampling", offset!(s, sampling)),
        ("step_type", offset!(s, step_type)),
        ("gap_check", offset!(s, gap_check)),
        ("cache_size", offset!(s, cache_size)),
        ("cache_nu", offset!(s, cache_nu)),
        ("cache_factor", offset!(s, cache_factor)),
        ("num_passes", offset!(s, num_passes)),
        ("path_a", offset!(s, path_a)),
        ("progress", offset!(s, progress)),
        ("progress_user", offset!(s, progress_user)),
        ("bcfw_iterate", offset!(s, bcfw_iterate)),
        ("bcfw_iterate_user", offset!(s, bcfw_iterate_user)),
        ("gap_degree", offset!(s, gap_degree)),
        ("early_exact_factor", offset!(s, early_exact_factor)),
        ("multi_plane", offset!(s, multi_plane)),
        ("mp_timed", offset!(s, mp_timed)),
        ("mp_approx_passes", offset!(s, mp_approx_passes)),
        ("mp_inactive_passes", offset!(s, mp_inactive_passes)),
        ("mp_block_steps", offset!(s, mp_block_steps)),
        ("mini_batch", offset!(s, mini_batch)),
    ]
}

fn info_offsets() -> Vec<(&'static str, usize)> {
    let i = bmrm_info::from(&Info::default());
    vec![
        ("exit", offset!(i, exit)),
        ("iterations", offset!(i, iterations)),
        ("oracle_calls", offset!(i, oracle_calls)),
        ("primal", offset!(i, primal)),
        ("lower_bound", offset!(i, lower_bound)),
        ("gap", offset!(i, gap)),
        ("risk", offset!(i, risk)),
        ("num_planes", offset!(i, num_planes)),
        ("active_planes", offset!(i, active_planes)),
        ("elapsed_seconds", offset!(i, elapsed_seconds)),
        ("oracle_seconds", offset!(i, oracle_seconds)),
        ("qp_seconds", offset!(i, qp_seconds)),
        ("certified", offset!(i, certified)),
    ]
}

fn iteration_offsets() -> Vec<(&'static str, usize)> {
    let r = bmrm_iteration::from(&Iteration::default());
    vec![
        ("iteration", offset!(r, iteration)),
        ("primal", offset!(r, primal)),
        ("lower_bound", offset!(r, lower_bound)),
        ("risk", offset!(r, risk)),
        ("objective", offset!(r, objective)),
        ("num_planes", offset!(r, num_planes)),
        ("active_planes", offset!(r, active_planes)),
        ("alpha", offset!(r, alpha)),
        ("step_norm", offset!(r, step_norm)),
        ("elapsed_seconds", offset!(r, elapsed_seconds)),
        ("oracle_seconds", offset!(r, oracle_seconds)),
        ("qp_seconds", offset!(r, qp_seconds)),
        ("oracle_calls", offset!(r, oracle_calls)),
    ]
}

/// (type, size, align) of every `repr(C)` type of the ABI.
fn rust_layouts() -> Vec<(&'static str, usize, usize)> {
    use std::mem::{align_of, size_of};
    vec![
        (
            "bmrm_settings",
            size_of::<bmrm_settings>(),
            align_of::<bmrm_settings>(),
        ),
        ("bmrm_info", size_of::<bmrm_info>(), align_of::<bmrm_info>()),
        (
            "bmrm_iteration",
            size_of::<bmrm_iteration>(),
            align_of::<bmrm_iteration>(),
        ),
        (
            "bmrm_status",
            size_of::<bmrm_status>(),
            align_of::<bmrm_status>(),
        ),
        ("bmrm_exit", size_of::<bmrm_exit>(), align_of::<bmrm_exit>()),
        (
            "bmrm_algorithm",
            size_of::<bmrm_algorithm>(),
            align_of::<bmrm_algorithm>(),
        ),
        (
            "bmrm_sampling",
            size_of::<bmrm_sampling>(),
            align_of::<bmrm_sampling>(),
        ),
        (
            "bmrm_step_type",
            size_of::<bmrm_step_type>(),
            align_of::<bmrm_step_type>(),
        ),
        (
            "bmrm_bcfw_info",
            size_of::<bmrm_bcfw_info>(),
            align_of::<bmrm_bcfw_info>(),
        ),
        (
            "bmrm_bcfw_pass",
            size_of::<bmrm_bcfw_pass>(),
            align_of::<bmrm_bcfw_pass>(),
        ),
        (
            "bmrm_breakpoint",
            size_of::<bmrm_breakpoint>(),
            align_of::<bmrm_breakpoint>(),
        ),
    ]
}

/// Every constant of the ABI with its value, as the Rust types define them.
fn rust_enum_values() -> Vec<(&'static str, i64)> {
    use bmrm_algorithm::*;
    use bmrm_exit::*;
    use bmrm_sampling::*;
    use bmrm_status::*;
    use bmrm_step_type::*;
    vec![
        ("BMRM_ABI_VERSION", i64::from(BMRM_ABI_VERSION)),
        ("BMRM_OK", BMRM_OK as i64),
        ("BMRM_ERROR_NULL_ARGUMENT", BMRM_ERROR_NULL_ARGUMENT as i64),
        (
            "BMRM_ERROR_INVALID_ARGUMENT",
            BMRM_ERROR_INVALID_ARGUMENT as i64,
        ),
        (
            "BMRM_ERROR_DIMENSION_MISMATCH",
            BMRM_ERROR_DIMENSION_MISMATCH as i64,
        ),
        ("BMRM_ERROR_NO_ORACLE", BMRM_ERROR_NO_ORACLE as i64),
        ("BMRM_ERROR_ORACLE_FAILED", BMRM_ERROR_ORACLE_FAILED as i64),
        ("BMRM_ERROR_NON_FINITE", BMRM_ERROR_NON_FINITE as i64),
        ("BMRM_ERROR_OUT_OF_MEMORY", BMRM_ERROR_OUT_OF_MEMORY as i64),
        ("BMRM_ERROR_INTERNAL", BMRM_ERROR_INTERNAL as i64),
        ("BMRM_ERROR_IO", BMRM_ERROR_IO as i64),
        ("BMRM_ERROR_RANK_LOST", BMRM_ERROR_RANK_LOST as i64),
        ("BMRM_EXIT_NOT_RUN", BMRM_EXIT_NOT_RUN as i64),
        ("BMRM_EXIT_CONVERGED_REL", BMRM_EXIT_CONVERGED_REL as i64),
        ("BMRM_EXIT_CONVERGED_ABS", BMRM_EXIT_CONVERGED_ABS as i64),
        ("BMRM_EXIT_MAX_ITERATIONS", BMRM_EXIT_MAX_ITERATIONS as i64),
        ("BMRM_EXIT_TIME_LIMIT", BMRM_EXIT_TIME_LIMIT as i64),
        (
            "BMRM_EXIT_STOPPED_BY_USER",
            BMRM_EXIT_STOPPED_BY_USER as i64,
        ),
        ("BMRM_ALGORITHM_BMRM", BMRM_ALGORITHM_BMRM as i64),
        ("BMRM_ALGORITHM_PROX_BMRM", BMRM_ALGORITHM_PROX_BMRM as i64),
        ("BMRM_ALGORITHM_P_BMRM", BMRM_ALGORITHM_P_BMRM as i64),
        (
            "BMRM_ALGORITHM_PROX_P_BMRM",
            BMRM_ALGORITHM_PROX_P_BMRM as i64,
        ),
        ("BMRM_ALGORITHM_BCFW", BMRM_ALGORITHM_BCFW as i64),
        ("BMRM_ALGORITHM_SGD", BMRM_ALGORITHM_SGD as i64),
        (
            "BMRM_ALGORITHM_CUTTING_PLANE",
            BMRM_ALGORITHM_CUTTING_PLANE as i64,
        ),
        ("BMRM_SAMPLING_UNIFORM", BMRM_SAMPLING_UNIFORM as i64),
        ("BMRM_SAMPLING_PERM", BMRM_SAMPLING_PERM as i64),
        ("BMRM_SAMPLING_GAP", BMRM_SAMPLING_GAP as i64),
        ("BMRM_SAMPLING_MAX_GAP", BMRM_SAMPLING_MAX_GAP as i64),
        ("BMRM_STEP_FW", BMRM_STEP_FW as i64),
        ("BMRM_STEP_PAIRWISE", BMRM_STEP_PAIRWISE as i64),
        ("BMRM_STEP_AWAY", BMRM_STEP_AWAY as i64),
        ("BMRM_STEP_ALL", BMRM_STEP_ALL as i64),
        ("BMRM_STEP_EXACT", BMRM_STEP_EXACT as i64),
    ]
}

/// The promises of docs/c-api.md and ABI version 3 (1 + the BCFW iterate
/// callback, gap_degree, max-gap sampling and all-steps at the end of
/// bmrm_settings and the enums in 2; the multi-plane fields at the end of
/// bmrm_settings and mini_batch in 3; `certified` at the end of bmrm_info in
/// 4): changing any of
/// these numbers breaks compiled C programs, and needs a new
/// BMRM_ABI_VERSION.
#[test]
fn abi_layout_and_values_are_pinned() {
    assert_eq!(BMRM_ABI_VERSION, 4);
    let expected_values: [(&str, i64); 34] = [
        ("BMRM_ABI_VERSION", 4),
        ("BMRM_OK", 0),
        ("BMRM_ERROR_NULL_ARGUMENT", 1),
        ("BMRM_ERROR_INVALID_ARGUMENT", 2),
        ("BMRM_ERROR_DIMENSION_MISMATCH", 3),
        ("BMRM_ERROR_NO_ORACLE", 4),
        ("BMRM_ERROR_ORACLE_FAILED", 5),
        ("BMRM_ERROR_NON_FINITE", 6),
        ("BMRM_ERROR_OUT_OF_MEMORY", 7),
        ("BMRM_ERROR_INTERNAL", 8),
        ("BMRM_ERROR_IO", 9),
        ("BMRM_ERROR_RANK_LOST", 10),
        ("BMRM_EXIT_NOT_RUN", 0),
        ("BMRM_EXIT_CONVERGED_REL", 1),
        ("BMRM_EXIT_CONVERGED_ABS", 2),
        ("BMRM_EXIT_MAX_ITERATIONS", 3),
        ("BMRM_EXIT_TIME_LIMIT", 4),
        ("BMRM_EXIT_STOPPED_BY_USER", 5),
        ("BMRM_ALGORITHM_BMRM", 0),
        ("BMRM_ALGORITHM_PROX_BMRM", 1),
        ("BMRM_ALGORITHM_P_BMRM", 2),
        ("BMRM_ALGORITHM_PROX_P_BMRM", 3),
        ("BMRM_ALGORITHM_BCFW", 4),
        ("BMRM_ALGORITHM_SGD", 5),
        ("BMRM_ALGORITHM_CUTTING_PLANE", 6),
        ("BMRM_SAMPLING_UNIFORM", 0),
        ("BMRM_SAMPLING_PERM", 1),
        ("BMRM_SAMPLING_GAP", 2),
        ("BMRM_SAMPLING_MAX_GAP", 3),
        ("BMRM_STEP_FW", 0),
        ("BMRM_STEP_PAIRWISE", 1),
        ("BMRM_STEP_AWAY", 2),
        ("BMRM_STEP_ALL", 3),
        ("BMRM_STEP_EXACT", 4),
    ];
    assert_eq!(rust_enum_values(), expected_values.to_vec());

    // The engine's enums carry the C values too.
    for a in 0..=6 {
        let alg = Algorithm::from_i32(a).expect("a known algorithm");
        assert_eq!(alg as i32, a);
        assert_eq!(bmrm_algorithm::from(alg) as i32, a);
    }
    assert_eq!(Algorithm::from_i32(7), None);
    assert_eq!(bmrm_exit::from(bmrm::Exit::StoppedByUser) as i32, 5);

    // Every enum is a C int; the structs have the sizes of ABI version 1.
    for (name, size, align) in rust_layouts().into_iter().skip(3).take(5) {
        assert_eq!((size, align), (4, 4), "{name}");
    }
    if cfg!(target_pointer_width = "64") {
        let expected = [
            ("bmrm_settings", 240, 8),
            ("bmrm_info", 104, 8),
            ("bmrm_iteration", 104, 8),
            ("bmrm_status", 4, 4),
            ("bmrm_exit", 4, 4),
            ("bmrm_algorithm", 4, 4),
            ("bmrm_sampling", 4, 4),
            ("bmrm_step_type", 4, 4),
            ("bmrm_bcfw_info", 96, 8),
            ("bmrm_bcfw_pass", 64, 8),
            ("bmrm_breakpoint", 56, 8),
        ];
        assert_eq!(rust_layouts(), expected.to_vec());
        let settings = [
            ("algorithm", 0),
            ("sgd_passes", 4),
            ("lambda", 8),
            ("tol_rel", 16),
            ("tol_abs", 24),
            ("max_iterations", 32),
            ("time_limit_seconds", 40),
            ("num_threads", 48),
            ("seed", 56),
            ("num_parts", 64),
            ("buffer_size", 72),
            ("qp_max_updates", 80),
            ("clean_after", 88),
            ("reuse_planes", 92),
            ("line_search", 93),
            ("weighted_averaging", 94),
            ("use_cache", 95),
            ("prox_t", 96),
            ("prox_k", 104),
            ("cp_radius", 112),
            ("sampling", 120),
            ("step_type", 124),
            ("gap_check", 128),
            ("cache_size", 132),
            ("cache_nu", 136),
            ("cache_factor", 144),
            ("num_passes", 152),
            ("path_a", 160),
            ("progress", 168),
            ("progress_user", 176),
            ("bcfw_iterate", 184),
            ("bcfw_iterate_user", 192),
            ("gap_degree", 200),
            ("early_exact_factor", 208),
            ("multi_plane", 216),
            ("mp_timed", 217),
            ("mp_approx_passes", 220),
            ("mp_inactive_passes", 224),
            ("mp_block_steps", 228),
            ("mini_batch", 232),
        ];
        assert_eq!(settings_offsets(), settings.to_vec());
        // bmrm_info: the exit, 4 bytes of padding, 11 eight-byte fields,
        // then the byte `certified` (and 7 bytes of padding).
        let info: Vec<usize> = info_offsets().iter().map(|&(_, o)| o).collect();
        assert_eq!(info, [0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96]);
        // bmrm_iteration: 13 eight-byte fields.
        let rows: Vec<usize> = iteration_offsets().iter().map(|&(_, o)| o).collect();
        assert_eq!(rows, (0..13).map(|k| 8 * k).collect::<Vec<_>>());
    }
}

/// `bmrm_settings_default` gives the engine's defaults (`Settings::new`),
/// and the struct converts back to exactly those settings.
#[test]
fn settings_defaults_are_the_engines() {
    for a in 0..=6 {
        let alg = Algorithm::from_i32(a).unwrap();
        let c = bmrm_settings_default(a);
        let engine = Settings::new(alg, 0.0);
        assert_eq!(c.algorithm, a);
        assert_eq!(c.lambda, 0.0);
        assert_eq!(c.tol_rel, engine.tol_rel);
        assert_eq!(c.tol_abs, engine.tol_abs);
        assert_eq!(c.max_iterations, engine.max_iterations);
        assert_eq!(c.time_limit_seconds, engine.time_limit_seconds);
        assert_eq!(c.num_threads, engine.num_threads as u64);
        assert_eq!(c.num_parts, engine.num_parts as u64);
        assert_eq!(c.buffer_size, engine.buffer_size as u64);
        assert_eq!(c.clean_after, engine.clean_after);
        assert_eq!(c.prox_t, engine.prox_t);
        assert_eq!(c.prox_k, engine.prox_k);
        assert_eq!(c.sgd_passes, engine.sgd_passes);
        assert_eq!(c.cp_radius, engine.cp_radius);
        assert_eq!(c.reuse_planes != 0, engine.reuse_planes);
        assert_eq!(c.qp_max_updates, engine.qp_max_updates);
        assert_eq!(c.seed, engine.seed);
        assert!(c.progress.is_none() && c.progress_user.is_null());
        // BCFW options (docs/bcfw.md).
        assert_eq!(c.sampling, bmrm_sampling::BMRM_SAMPLING_GAP as i32);
        assert_eq!(c.step_type, bmrm_step_type::BMRM_STEP_FW as i32);
        assert_eq!((c.gap_check, c.cache_size, c.num_passes), (10, 50, 0));
        assert_eq!(
            (c.line_search, c.weighted_averaging, c.use_cache),
            (1, 0, 0)
        );
        assert_eq!((c.cache_nu, c.cache_factor, c.path_a), (0.01, 0.25, 0.9));
    }
    // An unknown algorithm is kept, for bmrm_solver_new to reject.
    assert_eq!(bmrm_settings_default(42).algorithm, 42);
}

/// The committed header is what cbindgen generates from the code now.
#[test]
fn header_is_current() {
    let generated = std::fs::read_to_string(Path::new(env!("OUT_DIR")).join("bmrm.h"))
        .expect("build.rs writes OUT_DIR/bmrm.h");
    let committed = std::fs::read_to_string(root().join("include").join("bmrm.h"))
        .expect("include/bmrm.h is committed");
    if generated != committed {
        let line = generated
            .lines()
            .zip(committed.lines())
            .position(|(a, b)| a != b)
            .map_or(
                generated.lines().count().min(committed.lines().count()),
                |l| l,
            );
        panic!(
            "include/bmrm.h differs from what cbindgen generates from src/ffi (first at line \
             {}): run `cargo build` outside CI (build.rs rewrites it) and commit it",
            line + 1
        );
    }
}

// ---------------------------------------------------------------------------
// Building and running the C programs.

/// Where the C programs are built: `target/<profile>/ffi-c`.
fn work_dir() -> PathBuf {
    support::work_dir("ffi-c")
}

/// Compiles the C `args` into `work_dir()/name`.
fn compile(name: &str, args: &[String]) -> PathBuf {
    support::compile(
        &c_compiler(),
        &strict_flags("-std=c11"),
        args,
        &work_dir(),
        name,
    )
}

fn c_compiler() -> String {
    support::compiler("CC", "cc")
}

/// `tests/c/ffi_test.c` linked against the static library.
fn ffi_test_program() -> &'static Path {
    static PROGRAM: OnceLock<PathBuf> = OnceLock::new();
    PROGRAM.get_or_init(|| {
        compile(
            "ffi_test",
            &static_link_args(&["include"], "tests/c/ffi_test.c"),
        )
    })
}

/// `tests/c/models_test.c` (the built-in model constructors) linked against
/// the static library.
fn models_test_program() -> &'static Path {
    static PROGRAM: OnceLock<PathBuf> = OnceLock::new();
    PROGRAM.get_or_init(|| {
        compile(
            "models_test",
            &static_link_args(&["include"], "tests/c/models_test.c"),
        )
    })
}

/// `tests/c/graph_test.c` (graph problems and C decoders) linked against
/// the static library.
fn graph_test_program() -> &'static Path {
    static PROGRAM: OnceLock<PathBuf> = OnceLock::new();
    PROGRAM.get_or_init(|| {
        compile(
            "graph_test",
            &static_link_args(&["include"], "tests/c/graph_test.c"),
        )
    })
}

/// `examples/c/multiclass.c` linked against the static library (for valgrind).
fn example_program_static() -> PathBuf {
    compile(
        "multiclass_static",
        &static_link_args(&["include"], "examples/c/multiclass.c"),
    )
}

/// The lines of the C test's output that start with `tag`, split in words.
fn tagged<'a>(stdout: &'a str, tag: &str) -> Vec<Vec<&'a str>> {
    stdout
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            (words.next() == Some(tag)).then(|| words.collect())
        })
        .collect()
}

// ---------------------------------------------------------------------------
// The Rust twins of the C test problems (tests/c/common.h).

const L1_C: [f64; 7] = [0.3, -2.5, 1.7, 0.0, -0.4, 4.0, -0.9];

/// R(w) = sum_j |w_j - c_j| as a full risk.
struct L1;
impl FullRisk for L1 {
    fn dim(&self) -> usize {
        L1_C.len()
    }
    fn risk(&self, w: &[f64], g: &mut [f64]) -> bmrm::Result<f64> {
        let mut r = 0.0;
        for j in 0..w.len() {
            let d = w[j] - L1_C[j];
            r += d.abs();
            g[j] = if d > 0.0 { 1.0 } else { -1.0 };
        }
        Ok(r)
    }
}

/// The same as one part per coordinate, not thread-safe (as set in C).
struct L1Parts;
impl PartitionedRisk for L1Parts {
    fn dim(&self) -> usize {
        L1_C.len()
    }
    fn num_parts(&self) -> usize {
        L1_C.len()
    }
    fn thread_safe(&self) -> bool {
        false
    }
    fn partial_risk(&self, p: usize, w: &[f64], g: &mut [f64]) -> bmrm::Result<f64> {
        g.fill(0.0); // the C adapter zeroes the subgradient before each call
        let d = w[p] - L1_C[p];
        g[p] = if d > 0.0 { 1.0 } else { -1.0 };
        Ok(d.abs())
    }
}

/// The C test's seeded generator.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 * (1.0 / 9007199254740992.0)
    }
}

/// The multiclass max-oracle of tests/c/common.h, operation for operation.
struct Mc {
    m: usize,
    d: usize,
    k: usize,
    x: Vec<f64>,
    y: Vec<usize>,
}

impl Mc {
    fn new(m: usize, d: usize, k: usize, seed: u64) -> Self {
        let mut g = Lcg(seed);
        let mut x = vec![0.0; m * d];
        let y: Vec<usize> = (0..m).map(|i| i % k).collect();
        for i in 0..m {
            for j in 0..d - 1 {
                let mut v = 2.0 * g.next() - 1.0;
                if j == y[i] % (d - 1) {
                    v += 1.5;
                }
                x[i * d + j] = v;
            }
            x[i * d + d - 1] = 1.0;
        }
        Mc { m, d, k, x, y }
    }
    fn score(&self, w: &[f64], c: usize, x: &[f64]) -> f64 {
        let mut s = 0.0;
        for j in 0..self.d {
            s += w[c * self.d + j] * x[j];
        }
        s
    }
}

impl MaxOracle for Mc {
    fn dim(&self) -> usize {
        self.k * self.d
    }
    fn num_examples(&self) -> usize {
        self.m
    }
    fn max_oracle(&self, i: usize, w: &[f64], out: &mut Corner) -> bmrm::Result<()> {
        let x = &self.x[i * self.d..(i + 1) * self.d];
        let yi = self.y[i];
        let (mut best, mut best_score) = (yi, self.score(w, yi, x));
        for c in 0..self.k {
            if c == yi {
                continue;
            }
            let s = 1.0 + self.score(w, c, x);
            if s > best_score {
                best = c;
                best_score = s;
            }
        }
        out.set_label(best as u64);
        if best == yi {
            out.set_loss(0.0);
            return Ok(());
        }
        out.set_loss(1.0);
        for (j, &v) in x.iter().enumerate() {
            out.add(yi * self.d + j, v)?;
        }
        for (j, &v) in x.iter().enumerate() {
            out.add(best * self.d + j, -v)?;
        }
        Ok(())
    }
}

/// The problem and settings behind a RESULT line of the C test.
fn rust_twin(case: &str, algorithm: i32) -> (Problem, Settings) {
    let alg = Algorithm::from_i32(algorithm).expect("a known algorithm");
    let exact = |lambda: f64| {
        let mut s = Settings::new(alg, lambda);
        s.tol_rel = 0.0;
        s.tol_abs = 1e-9;
        s.max_iterations = 2000;
        s
    };
    match (case, alg) {
        ("l1", _) => (Problem::from_risk(L1), exact(0.8)),
        ("l1cp", Algorithm::CuttingPlane) => {
            let mut s = Settings::new(alg, 0.8);
            s.max_iterations = 500;
            s.tol_rel = 1e-2;
            (Problem::from_risk(L1), s)
        }
        ("l1parts", Algorithm::Sgd) => {
            let mut s = Settings::new(alg, 0.8);
            s.sgd_passes = 20;
            (Problem::from_partitioned(L1Parts), s)
        }
        ("l1parts", _) => (Problem::from_partitioned(L1Parts), exact(0.8)),
        ("mc", Algorithm::Bmrm) => {
            let mut s = Settings::new(alg, 1e-2);
            s.tol_rel = 1e-8;
            (Problem::from_max_oracle(Mc::new(120, 6, 3, 7)), s)
        }
        ("mc", _) => {
            let mut s = Settings::new(alg, 1e-3);
            s.num_parts = 4;
            s.tol_rel = 1e-6;
            s.num_threads = 1;
            (Problem::from_max_oracle(Mc::new(120, 6, 3, 7)), s)
        }
        _ => panic!("no Rust twin for case {case}, algorithm {algorithm}"),
    }
}

fn parse_f64(s: &str) -> f64 {
    match s {
        "inf" => f64::INFINITY,
        "-inf" => f64::NEG_INFINITY,
        "nan" | "-nan" => f64::NAN,
        _ => s.parse().unwrap_or_else(|_| panic!("not a number: {s}")),
    }
}

/// Every check of tests/c/ffi_test.c passes; its view of the header agrees
/// with the Rust types; its solutions equal the Rust API's.
#[test]
fn c_test_program_passes_and_agrees_with_rust() {
    let program = ffi_test_program();
    let out = run_ok(&mut Command::new(program), "tests/c/ffi_test.c");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(
        summary.ends_with(" passed, 0 failed"),
        "C checks: {summary}\n{stdout}"
    );
    println!("C checks: {summary}");
    for l in stdout.lines().filter(|l| {
        l.starts_with("ERROR") || l.starts_with("DETERMINISM") || l.starts_with("WARMSTART")
    }) {
        println!("{l}");
    }

    // The C compiler's view of bmrm.h is the Rust layout.
    let c_layouts: Vec<(String, usize, usize)> = tagged(&stdout, "LAYOUT")
        .iter()
        .map(|w| {
            (
                w[0].to_string(),
                w[1].parse().unwrap(),
                w[2].parse().unwrap(),
            )
        })
        .collect();
    let rust: Vec<(String, usize, usize)> = rust_layouts()
        .into_iter()
        .map(|(n, s, a)| (n.to_string(), s, a))
        .collect();
    assert_eq!(
        c_layouts, rust,
        "sizeof/_Alignof in C vs size_of/align_of in Rust"
    );
    let c_offsets: HashMap<(String, String), usize> = tagged(&stdout, "OFFSET")
        .iter()
        .map(|w| ((w[0].to_string(), w[1].to_string()), w[2].parse().unwrap()))
        .collect();
    let mut checked = 0;
    for (ty, fields) in [
        ("bmrm_settings", settings_offsets()),
        ("bmrm_info", info_offsets()),
        ("bmrm_iteration", iteration_offsets()),
    ] {
        for (field, off) in fields {
            let key = (ty.to_string(), field.to_string());
            assert_eq!(c_offsets.get(&key), Some(&off), "offsetof({ty}, {field})");
            checked += 1;
        }
    }
    assert_eq!(
        checked,
        c_offsets.len(),
        "the C test prints fields Rust does not know"
    );
    let c_values: Vec<(String, i64)> = tagged(&stdout, "ENUM")
        .iter()
        .map(|w| (w[0].to_string(), w[1].parse().unwrap()))
        .collect();
    let rust_values: Vec<(String, i64)> = rust_enum_values()
        .into_iter()
        .map(|(n, v)| (n.to_string(), v))
        .collect();
    assert_eq!(c_values, rust_values, "enum values in C vs Rust");
    let version = tagged(&stdout, "VERSION");
    assert_eq!(version, vec![vec![env!("CARGO_PKG_VERSION")]]);

    // The same problems through the Rust API.
    let results = tagged(&stdout, "RESULT");
    let ws = tagged(&stdout, "W");
    assert_eq!(results.len(), ws.len());
    assert_eq!(
        results.len(),
        10,
        "the C test printed {} results",
        results.len()
    );
    let mut identical = 0;
    for (r, wline) in results.iter().zip(&ws) {
        let (case, algorithm) = (r[0], r[1].parse::<i32>().unwrap());
        assert_eq!((wline[0], wline[1]), (r[0], r[1]));
        let (status, exit, primal, lower) = (
            r[2].parse::<i32>().unwrap(),
            r[3].parse::<i32>().unwrap(),
            parse_f64(r[5]),
            parse_f64(r[6]),
        );
        let w_c: Vec<f64> = wline[2..].iter().map(|s| parse_f64(s)).collect();
        assert_eq!(status, 0, "{case} {algorithm}: the C run failed");

        let (problem, settings) = rust_twin(case, algorithm);
        let lambda = settings.lambda;
        let mut solver = Solver::new(problem, settings).expect("valid settings");
        let mut w_r = vec![0.0; solver.dim()];
        let info = solver.run(&mut w_r).expect("the Rust run succeeds");
        let what = format!("{case} {}", Algorithm::from_i32(algorithm).unwrap().name());
        assert_eq!(exit, bmrm_exit::from(info.exit) as i32, "{what}: exit");
        assert_eq!(w_c.len(), w_r.len(), "{what}: dimension");

        // Both primals lie in [F*, F* + gap] of their own run; by strong
        // convexity ||w - w*||^2 <= 2 gap / lambda for each.
        let gap_c = primal - lower;
        let gap_r = info.primal - info.lower_bound;
        let tol_f = gap_c.max(gap_r) + 1e-12 * primal.abs().max(1.0);
        assert!(
            (primal - info.primal).abs() <= tol_f,
            "{what}: F = {primal} from C, {} from Rust",
            info.primal
        );
        let dist = w_c
            .iter()
            .zip(&w_r)
            .map(|(a, b)| (a - b) * (a - b))
            .sum::<f64>()
            .sqrt();
        let tol_w = (2.0 * gap_c / lambda).sqrt() + (2.0 * gap_r / lambda).sqrt() + 1e-9;
        assert!(dist <= tol_w, "{what}: ||w_C - w_Rust|| = {dist} > {tol_w}");
        if w_c == w_r && primal == info.primal {
            identical += 1;
        }
    }
    println!(
        "{} solutions equal to the Rust API's ({identical} bit-identical)",
        results.len()
    );
}

/// Every check of tests/c/models_test.c passes: the built-in multiclass
/// (dense and CSR) and chain (dense and sparse) constructors solve to the
/// optimum of their callback or dense twins, predict, and refuse bad input.
#[test]
fn c_models_test_passes() {
    let out = run_ok(
        &mut Command::new(models_test_program()),
        "tests/c/models_test.c",
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(
        summary.ends_with(" passed, 0 failed"),
        "C checks: {summary}\n{stdout}"
    );
    for l in stdout.lines().filter(|l| l.starts_with("MODEL")) {
        println!("{l}");
    }
    println!("C model checks: {summary}");
}

/// `graph_test oom`: under a 900 MB address-space limit set in the child
/// process, graph problems whose copies cannot be held are
/// BMRM_ERROR_OUT_OF_MEMORY (a valid 480 MB feature array, a node_dim of
/// 2^40), never an abort.
#[test]
fn graph_problems_out_of_memory_are_a_status_not_an_abort() {
    let out = Command::new(graph_test_program())
        .arg("oom")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.trim_end().ends_with(" passed, 0 failed"), "{stdout}");
}

/// Every check of tests/c/graph_test.c passes: a C decoder over the
/// library's potentials gives the built-in engine's solves bit for bit, a
/// decoder returning non-maximisers keeps the bound below the optimum, and
/// bad graphs are refused with messages naming the example and node or edge.
#[test]
fn c_graph_test_passes() {
    let out = run_ok(
        &mut Command::new(graph_test_program()),
        "tests/c/graph_test.c",
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(
        summary.ends_with(" passed, 0 failed"),
        "C checks: {summary}\n{stdout}"
    );
    println!("C graph checks: {summary}");
}

/// scripts/install.sh puts the library, the header and bmrm.pc into a
/// prefix, and the C example builds against them with pkg-config (linked
/// to the shared library, and statically) and runs.
#[test]
fn c_example_builds_against_the_installed_library() {
    let prefix = work_dir().join(format!("prefix-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&prefix);
    run_ok(
        Command::new("bash")
            .arg(root().join("scripts/install.sh"))
            .arg(&prefix)
            .env("BMRM_LIB_DIR", lib_dir())
            .env_remove("DESTDIR")
            .env_remove("LIBDIR"),
        "scripts/install.sh",
    );
    let libdir = prefix.join("lib");
    for f in [
        prefix.join("include/bmrm.h"),
        libdir.join(shared_lib_name()),
        libdir.join("libbmrm.a"),
        libdir.join("pkgconfig/bmrm.pc"),
    ] {
        assert!(f.is_file(), "{} was not installed", f.display());
    }
    // libbmrm.so -> libbmrm.so.<ABI> (the SONAME) -> the real file.
    let soname = format!("libbmrm.so.{BMRM_ABI_VERSION}");
    if !cfg!(target_os = "macos") {
        let link = |name: &str| std::fs::read_link(libdir.join(name)).ok();
        assert_eq!(link("libbmrm.so"), Some(PathBuf::from(&soname)));
        let real = link(&soname).expect("libbmrm.so.<ABI> is a link");
        assert_eq!(
            real,
            PathBuf::from(format!("{soname}.{}", env!("CARGO_PKG_VERSION")))
        );
        assert!(libdir.join(&real).is_file() && !libdir.join(&real).is_symlink());
    }

    let pkg_config = |args: &[&str]| -> Vec<String> {
        let out = run_ok(
            Command::new("pkg-config")
                .args(args)
                .arg("bmrm")
                .env("PKG_CONFIG_PATH", libdir.join("pkgconfig")),
            "pkg-config (install it: scripts/test.sh does)",
        );
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    let version = pkg_config(&["--modversion"]);
    assert_eq!(version, vec![env!("CARGO_PKG_VERSION").to_string()]);
    let example = path_arg(&root().join("examples/c/multiclass.c"));

    // Shared: cc multiclass.c $(pkg-config --cflags --libs bmrm) -lm
    let mut args = pkg_config(&["--cflags"]);
    args.push(example.clone());
    args.extend(pkg_config(&["--libs"]));
    args.push("-lm".into());
    let shared = compile("multiclass_installed", &args);
    let out = run_ok(
        Command::new(&shared)
            .env("LD_LIBRARY_PATH", &libdir)
            .env("DYLD_LIBRARY_PATH", &libdir),
        "the C example (shared library)",
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    println!("{text}");
    assert!(text.contains("test error"), "{text}");
    let ldd = Command::new("ldd")
        .arg(&shared)
        .env("LD_LIBRARY_PATH", &libdir)
        .output();
    if let Ok(ldd) = ldd {
        let ldd = String::from_utf8_lossy(&ldd.stdout).into_owned();
        if !ldd.is_empty() && !cfg!(target_os = "macos") {
            // Linked against the versioned name (the SONAME), found in libdir.
            let lib = path_arg(&libdir.join(&soname));
            assert!(
                ldd.lines().any(|l| {
                    l.trim_start().starts_with(&format!("{soname} => "))
                        && l.contains(&format!("{lib} "))
                }),
                "the example is not linked to the installed {lib}:\n{ldd}"
            );
        }
    }

    // The installed shared library exports exactly the header's functions.
    let nm = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(libdir.join(shared_lib_name()))
        .output();
    if let (Ok(nm), false) = (nm, cfg!(target_os = "macos")) {
        let mut exported: Vec<String> = String::from_utf8_lossy(&nm.stdout)
            .lines()
            .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
            .collect();
        exported.sort();
        let header = std::fs::read_to_string(prefix.join("include/bmrm.h")).unwrap();
        // The MPI entry points (`#if defined(BMRM_MPI)`) exist only in a
        // library built with `--features mpi`; install.sh builds without.
        let mut in_mpi = false;
        let mut declared: Vec<String> = header
            .lines()
            .filter(|l| {
                if l.starts_with("#if defined(BMRM_MPI)") {
                    in_mpi = true;
                } else if in_mpi && l.starts_with("#endif") {
                    in_mpi = false;
                }
                !in_mpi
            })
            .filter(|l| !l.starts_with(' ') && !l.starts_with("typedef") && l.contains('('))
            .filter_map(|l| {
                let name = l[..l.find('(').unwrap()].rsplit([' ', '*']).next()?;
                name.starts_with("bmrm_").then(|| name.to_string())
            })
            .collect();
        declared.sort();
        // 27 core functions (bmrm_corner_mark_inexact since ABI 4,
        // bmrm_solver_set_linear_constraints), 9 of BCFW (src/ffi/bcfw.rs),
        // 7 of the built-in models (src/ffi/models.rs), 5 of graph problems
        // (src/ffi/graph.rs), 1 naming an engine (src/ffi/engine.rs).
        assert_eq!(declared.len(), 49, "functions in bmrm.h: {declared:?}");
        assert_eq!(
            exported, declared,
            "exported symbols vs the header's functions"
        );
    }

    // Static: the archive and the system libraries of Libs.private.
    let mut args = pkg_config(&["--cflags"]);
    args.push(example);
    args.push(path_arg(&libdir.join("libbmrm.a")));
    args.extend(
        pkg_config(&["--static", "--libs-only-l"])
            .into_iter()
            .filter(|l| l != "-lbmrm"),
    );
    let static_program = compile("multiclass_installed_static", &args);
    let out = run_ok(&mut Command::new(&static_program), "the C example (static)");
    let text_static = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        text_static.lines().last(),
        text.lines().last(),
        "static and shared builds disagree"
    );
    let _ = std::fs::remove_dir_all(&prefix);
}

/// The header is also valid C++ (when a C++ compiler is installed).
#[test]
fn header_compiles_as_cpp() {
    let cxx = support::compiler("CXX", "c++");
    if Command::new(&cxx).arg("--version").output().is_err() {
        println!("no C++ compiler ({cxx}): skipped");
        return;
    }
    let src = work_dir().join("header_check.cpp");
    std::fs::write(
        &src,
        "#include \"bmrm.h\"\nint main() { bmrm_settings s = \
         bmrm_settings_default(BMRM_ALGORITHM_BMRM); return s.algorithm == BMRM_ALGORITHM_BMRM \
         && bmrm_abi_version() == BMRM_ABI_VERSION ? 0 : 1; }\n",
    )
    .unwrap();
    run_ok(
        Command::new(&cxx)
            .args([
                "-std=c++11",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-pedantic",
                "-c",
            ])
            .arg(format!("-I{}", path_arg(&root().join("include"))))
            .arg(&src)
            .arg("-o")
            .arg(work_dir().join("header_check.o")),
        "compiling bmrm.h as C++",
    );
}

/// Both C programs under valgrind's memcheck: no error and no definite leak
/// (rayon's worker threads may leave "possibly lost" blocks at exit). The
/// suppressions file, tests/c/valgrind.supp, is for documented false
/// positives only (it holds none at present).
/// Slow; scripts/test.sh runs it with `cargo test --release --test ffi --
/// --ignored`.
#[test]
#[ignore = "slow: scripts/test.sh runs it (needs valgrind)"]
fn c_programs_under_valgrind() {
    let programs = [
        ffi_test_program().to_path_buf(),
        models_test_program().to_path_buf(),
        graph_test_program().to_path_buf(),
        example_program_static(),
    ];
    for program in programs {
        let started = std::time::Instant::now();
        let summary = support::valgrind(&program);
        println!(
            "valgrind {} ({:.1} s): {}",
            program.file_name().unwrap().to_string_lossy(),
            started.elapsed().as_secs_f64(),
            summary
        );
    }
}

/// scripts/install.sh also installs a CMake package: `find_package(bmrm
/// CONFIG REQUIRED)` gives `bmrm::bmrm` (shared) and `bmrm::bmrm_static`,
/// and the C and C++ examples build with them and run.
#[test]
fn c_and_cpp_examples_build_with_find_package_against_the_installed_tree() {
    assert!(
        support::has_program("cmake"),
        "no cmake: scripts/test.sh installs it"
    );
    let dir = work_dir().join(format!("cmake-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let prefix = dir.join("prefix");
    run_ok(
        Command::new("bash")
            .arg(root().join("scripts/install.sh"))
            .arg(&prefix)
            .env("BMRM_LIB_DIR", lib_dir())
            .env_remove("DESTDIR")
            .env_remove("LIBDIR"),
        "scripts/install.sh",
    );
    let project = |version: &str| {
        format!(
            "cmake_minimum_required(VERSION 3.16)\n\
             project(consumer C CXX)\n\
             find_package(bmrm {version} CONFIG REQUIRED)\n\
             add_executable(c_shared {ex}/c/multiclass.c)\n\
             target_link_libraries(c_shared PRIVATE bmrm::bmrm m)\n\
             add_executable(c_static {ex}/c/multiclass.c)\n\
             target_link_libraries(c_static PRIVATE bmrm::bmrm_static m)\n\
             add_executable(cpp_shared {ex}/cpp/multiclass_shogun.cpp)\n\
             set_target_properties(cpp_shared PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)\n\
             target_link_libraries(cpp_shared PRIVATE bmrm::bmrm)\n",
            ex = path_arg(&root().join("examples")),
        )
    };
    let configure = |version: &str, name: &str| {
        let src = dir.join(name);
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("CMakeLists.txt"), project(version)).unwrap();
        Command::new("cmake")
            .arg("-S")
            .arg(&src)
            .arg("-B")
            .arg(src.join("build"))
            .arg(format!("-DCMAKE_PREFIX_PATH={}", path_arg(&prefix)))
            .output()
            .unwrap()
    };
    let major_minor: Vec<&str> = env!("CARGO_PKG_VERSION").split('.').collect();
    let out = configure(&format!("{}.{}", major_minor[0], major_minor[1]), "ok");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let build = dir.join("ok/build");
    run_ok(
        Command::new("cmake").arg("--build").arg(&build),
        "cmake --build",
    );
    for program in ["c_shared", "c_static", "cpp_shared"] {
        let out = run_ok(&mut Command::new(build.join(program)), program);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(text.contains("test error"), "{program}: {text}");
    }
    // A later version than the one installed is not found.
    let out = configure("99.0", "too_new");
    assert!(!out.status.success(), "find_package(bmrm 99.0) succeeded");
}

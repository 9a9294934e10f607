/*
 * bmrm.hpp: a header-only C++17 wrapper over the C ABI of bmrm (bmrm.h).
 *
 *     #include "bmrm.hpp"       // with include/ and bindings/cpp/ on the include path
 *
 *     bmrm::Problem problem(dim);
 *     problem.set_max_oracle(m, [&](std::size_t i, bmrm::span<const double> w,
 *                                   bmrm::Corner &out) {
 *         ...                        // the loss-augmented argmax of example i
 *         out.set_loss(1.0);
 *         out.set_label(y_hat);
 *         out.add(j, value);         // psi = phi(x_i, y_i) - phi(x_i, y^), sparse ...
 *         out.dense()[j] += value;   // ... or dense (they add up)
 *     }, true);                      // thread-safe: calls may overlap
 *     bmrm::Settings settings(bmrm::Algorithm::prox_p_bmrm, 1e-3);
 *     settings.num_parts = 8;
 *     settings.set_progress([](const bmrm::Info &info) { std::cout << info.gap << "\n"; });
 *     bmrm::Solver solver(problem, settings);
 *     std::vector<double> w(dim);     // in: the start, out: the solution
 *     bmrm::Info info = solver.run(w);
 *
 * What the wrapper adds to the C ABI:
 * - RAII, move-only handles (Problem, Solver); Settings, Info, Iteration are
 *   plain value types (Settings starts at bmrm_settings_default's values).
 * - Any callable for the risk, the partitioned risk, the max-oracle and the
 *   progress observer (std::function underneath).
 * - Exceptions: a C error becomes bmrm::error (status + the library's
 *   message). An exception thrown inside a callback is caught at the C
 *   boundary (nothing unwinds through the library), the callback reports
 *   failure, the solve stops, and Solver::run rethrows that same exception
 *   (the first one, when thread-safe callbacks throw concurrently).
 * - Each Solver owns its callback context (the callables, shared with the
 *   Problem, and its own exception slot): a Solver may outlive its Problem,
 *   and two solvers of one problem never see each other's exceptions.
 *
 * bmrm::shogun (at the end of this file) is the SHOGUN-style adapter: an
 * abstract StructuredModel with a loss-augmented argmax, and the trainer
 * DualLibQPBMSOSVM / svm_bmrm_solver / svm_ppbm_solver / svm_p3bm_solver
 * with SHOGUN's option names and a BmrmStatistics result (see the README for
 * the mapping table).
 *
 * Threads: callbacks of a problem that is not declared thread-safe (and the
 * full risk, always) run on the thread that called Solver::run; callbacks of
 * a thread-safe problem run on the solver's pool and may overlap.
 */
#ifndef BMRM_HPP
#define BMRM_HPP

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "bmrm.h"

namespace bmrm {

// ---------------------------------------------------------------------------
// Enums (the C values).

/// Did a C call succeed (bmrm_status).
enum class Status : int {
    ok = BMRM_OK,
    null_argument = BMRM_ERROR_NULL_ARGUMENT,
    invalid_argument = BMRM_ERROR_INVALID_ARGUMENT,
    dimension_mismatch = BMRM_ERROR_DIMENSION_MISMATCH,
    no_oracle = BMRM_ERROR_NO_ORACLE,
    oracle_failed = BMRM_ERROR_ORACLE_FAILED,
    non_finite = BMRM_ERROR_NON_FINITE,
    out_of_memory = BMRM_ERROR_OUT_OF_MEMORY,
    internal = BMRM_ERROR_INTERNAL,
    io = BMRM_ERROR_IO,
    rank_lost = BMRM_ERROR_RANK_LOST,
};

/// How a solve ended (bmrm_exit).
enum class Exit : int {
    not_run = BMRM_EXIT_NOT_RUN,
    converged_rel = BMRM_EXIT_CONVERGED_REL,
    converged_abs = BMRM_EXIT_CONVERGED_ABS,
    max_iterations = BMRM_EXIT_MAX_ITERATIONS,
    time_limit = BMRM_EXIT_TIME_LIMIT,
    stopped_by_user = BMRM_EXIT_STOPPED_BY_USER,
};

/// Which optimiser (bmrm_algorithm).
enum class Algorithm : int {
    bmrm = BMRM_ALGORITHM_BMRM,
    prox_bmrm = BMRM_ALGORITHM_PROX_BMRM,
    p_bmrm = BMRM_ALGORITHM_P_BMRM,
    prox_p_bmrm = BMRM_ALGORITHM_PROX_P_BMRM,
    bcfw = BMRM_ALGORITHM_BCFW,
    sgd = BMRM_ALGORITHM_SGD,
    cutting_plane = BMRM_ALGORITHM_CUTTING_PLANE,
};

/// BCFW block sampling (bmrm_sampling).
enum class Sampling : int {
    uniform = BMRM_SAMPLING_UNIFORM,
    perm = BMRM_SAMPLING_PERM,
    gap = BMRM_SAMPLING_GAP,
};

/// BCFW steps (bmrm_step_type).
enum class StepType : int {
    fw = BMRM_STEP_FW,
    pairwise = BMRM_STEP_PAIRWISE,
    away = BMRM_STEP_AWAY,
};

/// What a progress observer answers.
enum class Control : int { go_on = 0, stop = 1 };

inline const char *to_string(Status s) noexcept {
    return bmrm_status_string(static_cast<bmrm_status>(s));
}
inline const char *to_string(Exit e) noexcept {
    return bmrm_exit_string(static_cast<bmrm_exit>(e));
}
inline const char *to_string(Algorithm a) noexcept {
    return bmrm_algorithm_name(static_cast<bmrm_algorithm>(a));
}
/// The library's version string, e.g. "0.1.0".
inline const char *version() noexcept { return bmrm_version(); }

// ---------------------------------------------------------------------------
// Errors.

/// A failed C call: the status and the library's message (bmrm_last_error()).
class error : public std::runtime_error {
  public:
    error(Status status, const std::string &message)
        : std::runtime_error(message), status_(status) {}
    /// The C status of the failed call.
    Status status() const noexcept { return status_; }

  private:
    Status status_;
};

namespace detail {
/// Throws bmrm::error for a failed status, with this thread's last message.
inline void check(bmrm_status st) {
    if (st != BMRM_OK) {
        const char *msg = bmrm_last_error();
        std::string text = (msg != nullptr && *msg != '\0') ? msg : bmrm_status_string(st);
        throw error(static_cast<Status>(st), text);
    }
}
} // namespace detail

// ---------------------------------------------------------------------------
// span: a pointer and a length (C++17 has no std::span).

template <class T>
class span {
  public:
    using element_type = T;
    using value_type = typename std::remove_cv<T>::type;
    using size_type = std::size_t;
    using iterator = T *;

    constexpr span() noexcept = default;
    constexpr span(T *data, std::size_t size) noexcept : data_(data), size_(size) {}
    /// From a vector (of a const or non-const element type).
    template <class U, class A,
              class = typename std::enable_if<std::is_convertible<U *, T *>::value>::type>
    span(std::vector<U, A> &v) noexcept : data_(v.data()), size_(v.size()) {}
    template <class U, class A,
              class = typename std::enable_if<std::is_convertible<const U *, T *>::value>::type>
    span(const std::vector<U, A> &v) noexcept : data_(v.data()), size_(v.size()) {}
    /// span<T> converts to span<const T>.
    template <class U,
              class = typename std::enable_if<std::is_convertible<U *, T *>::value>::type>
    constexpr span(const span<U> &o) noexcept : data_(o.data()), size_(o.size()) {}

    constexpr T *data() const noexcept { return data_; }
    constexpr std::size_t size() const noexcept { return size_; }
    constexpr bool empty() const noexcept { return size_ == 0; }
    constexpr T &operator[](std::size_t i) const noexcept { return data_[i]; }
    constexpr T *begin() const noexcept { return data_; }
    constexpr T *end() const noexcept { return data_ + size_; }
    /// A copy of the elements.
    std::vector<value_type> to_vector() const { return std::vector<value_type>(begin(), end()); }

  private:
    T *data_ = nullptr;
    std::size_t size_ = 0;
};

// ---------------------------------------------------------------------------
// Value types: Info, Iteration, Settings.

/// The summary of a solve (bmrm_info).
struct Info {
    Exit exit = Exit::not_run;
    std::uint64_t iterations = 0;
    std::uint64_t oracle_calls = 0;
    double primal = 0.0;      ///< F(w) at the returned w
    double lower_bound = 0.0; ///< a valid lower bound on min F
    double gap = 0.0;         ///< primal - lower_bound
    double risk = 0.0;        ///< R(w) at the returned w
    std::uint64_t num_planes = 0;
    std::uint64_t active_planes = 0;
    double elapsed_seconds = 0.0;
    double oracle_seconds = 0.0;
    double qp_seconds = 0.0;
    /// Every max-oracle answer was trusted as a maximiser (none marked
    /// inexact, none below the ground truth): the gap certifies (ABI 4).
    bool certified = false;

    Info() = default;
    explicit Info(const bmrm_info &c)
        : exit(static_cast<Exit>(c.exit)), iterations(c.iterations),
          oracle_calls(c.oracle_calls), primal(c.primal), lower_bound(c.lower_bound),
          gap(c.gap), risk(c.risk), num_planes(c.num_planes), active_planes(c.active_planes),
          elapsed_seconds(c.elapsed_seconds), oracle_seconds(c.oracle_seconds),
          qp_seconds(c.qp_seconds), certified(c.certified != 0) {}
};

/// One row of a solve's history (bmrm_iteration).
struct Iteration {
    std::uint64_t iteration = 0;
    double primal = 0.0;      ///< best F so far
    double lower_bound = 0.0; ///< best lower bound so far
    double risk = 0.0;        ///< R at this iteration's point
    double objective = 0.0;   ///< F at this iteration's point
    std::uint64_t num_planes = 0;
    std::uint64_t active_planes = 0;
    double alpha = 0.0;     ///< the prox constant of the step
    double step_norm = 0.0; ///< ||w_t - w_{t-1}||
    double elapsed_seconds = 0.0;
    double oracle_seconds = 0.0;
    double qp_seconds = 0.0;
    std::uint64_t oracle_calls = 0;

    Iteration() = default;
    explicit Iteration(const bmrm_iteration &c)
        : iteration(c.iteration), primal(c.primal), lower_bound(c.lower_bound), risk(c.risk),
          objective(c.objective), num_planes(c.num_planes), active_planes(c.active_planes),
          alpha(c.alpha), step_norm(c.step_norm), elapsed_seconds(c.elapsed_seconds),
          oracle_seconds(c.oracle_seconds), qp_seconds(c.qp_seconds),
          oracle_calls(c.oracle_calls) {}
};

/// BCFW's figures, cumulative over the runs of one solver (bmrm_bcfw_info).
struct BcfwInfo {
    std::uint64_t passes = 0;
    std::uint64_t oracle_calls = 0;
    std::uint64_t cache_hits = 0;
    std::uint64_t corners = 0;
    std::uint64_t active_corners = 0;
    std::uint64_t dense_blocks = 0;
    std::uint64_t memory_bytes = 0;
    double effective_passes = 0.0;
    double ell = 0.0;            ///< the dual's loss term l = sum_i l_i
    double dual = 0.0;           ///< the dual value at the current weights
    double gap_estimate = 0.0;   ///< the sum of the block-gap estimates
    double last_exact_gap = 0.0; ///< the last exact total gap (inf before the first)

    BcfwInfo() = default;
    explicit BcfwInfo(const bmrm_bcfw_info &c)
        : passes(c.passes), oracle_calls(c.oracle_calls), cache_hits(c.cache_hits),
          corners(c.corners), active_corners(c.active_corners), dense_blocks(c.dense_blocks),
          memory_bytes(c.memory_bytes), effective_passes(c.effective_passes), ell(c.ell),
          dual(c.dual), gap_estimate(c.gap_estimate), last_exact_gap(c.last_exact_gap) {}
};

/// One BCFW pass of the last run (bmrm_bcfw_pass).
struct BcfwPass {
    std::uint64_t pass = 0;
    std::uint64_t oracle_calls = 0;
    double effective_passes = 0.0;
    double primal = 0.0;      ///< best primal so far (inf before the first exact pass)
    double lower_bound = 0.0; ///< best dual so far
    double gap_estimate = 0.0;
    double exact_gap = 0.0;   ///< NaN unless an exact pass ended this pass
    double elapsed_seconds = 0.0;

    BcfwPass() = default;
    explicit BcfwPass(const bmrm_bcfw_pass &c)
        : pass(c.pass), oracle_calls(c.oracle_calls), effective_passes(c.effective_passes),
          primal(c.primal), lower_bound(c.lower_bound), gap_estimate(c.gap_estimate),
          exact_gap(c.exact_gap), elapsed_seconds(c.elapsed_seconds) {}
};

/// Called after every iteration; Control::stop ends the run (exit
/// stopped_by_user). An exception thrown here also stops it and is
/// rethrown by Solver::run.
using ProgressFn = std::function<Control(const Info &)>;

/// Every setting of the engine (bmrm_settings) as a value type. A default
/// constructed Settings has bmrm_settings_default's values; lambda has no
/// default (0 is rejected by the Solver): pass it or set it.
struct Settings {
    Algorithm algorithm = Algorithm::bmrm;
    double lambda = 0.0;
    double tol_rel = 1e-3;
    double tol_abs = 0.0;
    std::uint64_t max_iterations = 0;  ///< 0 = none
    double time_limit_seconds = 0.0;   ///< 0 = none
    std::uint64_t num_threads = 0;     ///< 0 = all cores
    std::uint64_t seed = 0;
    std::uint64_t num_parts = 0;       ///< P-BMRM parts (0 = the engine's choice)
    std::uint64_t buffer_size = 2000;  ///< most cutting planes
    std::uint64_t qp_max_updates = 0;
    std::uint32_t clean_after = 10;    ///< 0 = never remove inactive planes
    std::uint32_t sgd_passes = 0;
    bool reuse_planes = true;
    double prox_t = 100.0;             ///< Prox-BMRM's T
    double prox_k = 0.0;               ///< Prox-BMRM's K (0 = automatic)
    double cp_radius = 0.0;
    // BCFW
    bool line_search = true;
    bool weighted_averaging = false;
    bool use_cache = false;
    Sampling sampling = Sampling::gap;
    StepType step_type = StepType::fw;
    std::uint32_t gap_check = 10;
    std::uint32_t cache_size = 50;
    double cache_nu = 0.01;
    double cache_factor = 0.25;
    std::uint64_t num_passes = 0;
    double path_a = 0.9;
    double gap_degree = 1.0;           ///< gap sampling by gap^gap_degree
    double early_exact_factor = 0.0;   ///< 0 = no early exact gap pass
    // Multi-plane BCFW (docs/bcfw.md)
    bool multi_plane = false;
    bool mp_timed = false;             ///< stop approximate passes by time
    std::uint32_t mp_approx_passes = 10;
    std::uint32_t mp_inactive_passes = 10;
    std::uint32_t mp_block_steps = 0;
    std::uint32_t mini_batch = 0;      ///< mini-batch BCFW (0 = off)
    /// The progress observer (empty: none).
    ProgressFn progress;

    /// bmrm_settings_default(algorithm), with `lambda`.
    explicit Settings(Algorithm a = Algorithm::bmrm, double lambda_ = 0.0) {
        *this = from_c(bmrm_settings_default(static_cast<bmrm_algorithm>(a)));
        lambda = lambda_;
    }

    /// From a C struct (its progress pointer is not kept).
    static Settings from_c(const bmrm_settings &c) {
        Settings s(NoDefaults{});
        s.algorithm = static_cast<Algorithm>(c.algorithm);
        s.lambda = c.lambda;
        s.tol_rel = c.tol_rel;
        s.tol_abs = c.tol_abs;
        s.max_iterations = c.max_iterations;
        s.time_limit_seconds = c.time_limit_seconds;
        s.num_threads = c.num_threads;
        s.seed = c.seed;
        s.num_parts = c.num_parts;
        s.buffer_size = c.buffer_size;
        s.qp_max_updates = c.qp_max_updates;
        s.clean_after = c.clean_after;
        s.sgd_passes = c.sgd_passes;
        s.reuse_planes = c.reuse_planes != 0;
        s.prox_t = c.prox_t;
        s.prox_k = c.prox_k;
        s.cp_radius = c.cp_radius;
        s.line_search = c.line_search != 0;
        s.weighted_averaging = c.weighted_averaging != 0;
        s.use_cache = c.use_cache != 0;
        s.sampling = static_cast<Sampling>(c.sampling);
        s.step_type = static_cast<StepType>(c.step_type);
        s.gap_check = c.gap_check;
        s.cache_size = c.cache_size;
        s.cache_nu = c.cache_nu;
        s.cache_factor = c.cache_factor;
        s.num_passes = c.num_passes;
        s.path_a = c.path_a;
        s.gap_degree = c.gap_degree;
        s.early_exact_factor = c.early_exact_factor;
        s.multi_plane = c.multi_plane != 0;
        s.mp_timed = c.mp_timed != 0;
        s.mp_approx_passes = c.mp_approx_passes;
        s.mp_inactive_passes = c.mp_inactive_passes;
        s.mp_block_steps = c.mp_block_steps;
        s.mini_batch = c.mini_batch;
        return s;
    }

    /// The C struct (without a progress callback: the Solver sets its own).
    bmrm_settings to_c() const {
        bmrm_settings c = bmrm_settings_default(static_cast<bmrm_algorithm>(algorithm));
        c.algorithm = static_cast<bmrm_algorithm>(algorithm);
        c.lambda = lambda;
        c.tol_rel = tol_rel;
        c.tol_abs = tol_abs;
        c.max_iterations = max_iterations;
        c.time_limit_seconds = time_limit_seconds;
        c.num_threads = num_threads;
        c.seed = seed;
        c.num_parts = num_parts;
        c.buffer_size = buffer_size;
        c.qp_max_updates = qp_max_updates;
        c.clean_after = clean_after;
        c.sgd_passes = sgd_passes;
        c.reuse_planes = reuse_planes ? 1 : 0;
        c.prox_t = prox_t;
        c.prox_k = prox_k;
        c.cp_radius = cp_radius;
        c.line_search = line_search ? 1 : 0;
        c.weighted_averaging = weighted_averaging ? 1 : 0;
        c.use_cache = use_cache ? 1 : 0;
        c.sampling = static_cast<bmrm_sampling>(sampling);
        c.step_type = static_cast<bmrm_step_type>(step_type);
        c.gap_check = gap_check;
        c.cache_size = cache_size;
        c.cache_nu = cache_nu;
        c.cache_factor = cache_factor;
        c.num_passes = num_passes;
        c.path_a = path_a;
        c.gap_degree = gap_degree;
        c.early_exact_factor = early_exact_factor;
        c.multi_plane = multi_plane ? 1 : 0;
        c.mp_timed = mp_timed ? 1 : 0;
        c.mp_approx_passes = mp_approx_passes;
        c.mp_inactive_passes = mp_inactive_passes;
        c.mp_block_steps = mp_block_steps;
        c.mini_batch = mini_batch;
        c.progress = nullptr;
        c.progress_user = nullptr;
        return c;
    }

    /// Sets the observer from any callable taking `const Info &` and
    /// returning Control, bool (true = stop) or nothing (go on).
    template <class F>
    Settings &set_progress(F &&f) {
        using R = decltype(f(std::declval<const Info &>()));
        if constexpr (std::is_void<R>::value) {
            progress = [g = std::forward<F>(f)](const Info &i) mutable {
                g(i);
                return Control::go_on;
            };
        } else if constexpr (std::is_same<typename std::decay<R>::type, bool>::value) {
            progress = [g = std::forward<F>(f)](const Info &i) mutable {
                return g(i) ? Control::stop : Control::go_on;
            };
        } else {
            progress = std::forward<F>(f);
        }
        return *this;
    }

  private:
    struct NoDefaults {};
    explicit Settings(NoDefaults) {}
};

// ---------------------------------------------------------------------------
// The corner writer of a max-oracle call.

/// The output of one max-oracle call: loss, label id and
/// psi = phi(x_i, y_i) - phi(x_i, y^), given sparsely (add), densely
/// (dense / add_dense) or both (they add up). Valid only inside the call.
class Corner {
  public:
    Corner(bmrm_corner *c, std::size_t dim) noexcept : c_(c), dim_(dim) {}
    Corner(const Corner &) = delete;
    Corner &operator=(const Corner &) = delete;

    /// The dimension of psi.
    std::size_t dim() const noexcept { return dim_; }
    /// The loss L_i(y^) (0 until set).
    void set_loss(double loss) noexcept { bmrm_corner_set_loss(c_, loss); }
    /// A 64-bit id of y^ (0 until set); BCFW's caches and active sets use it.
    void set_label(std::uint64_t id) noexcept { bmrm_corner_set_label(c_, id); }
    /// psi[index] += value; throws bmrm::error for index >= dim.
    void add(std::size_t index, double value) { detail::check(bmrm_corner_add(c_, index, value)); }
    /// Sparse pairs: any range of (index, value) pairs (std::pair or a struct
    /// with first/second), e.g. std::vector<std::pair<std::size_t, double>>.
    template <class Range>
    void add_sparse(const Range &pairs) {
        for (const auto &p : pairs) add(static_cast<std::size_t>(p.first), p.second);
    }
    /// Parallel arrays of indices and values, in one call
    /// (bmrm_corner_add_many): all added, or none and bmrm::error.
    void add_sparse(span<const std::size_t> index, span<const double> value) {
        if (index.size() != value.size())
            throw error(Status::dimension_mismatch, "Corner::add_sparse: " +
                                                        std::to_string(index.size()) +
                                                        " indices but " +
                                                        std::to_string(value.size()) + " values");
        detail::check(bmrm_corner_add_many(c_, index.data(), value.data(), index.size()));
    }
    /// psi[start + j] += scale * values[j], the zeros of values skipped: a
    /// feature vector placed in a label's block, in one call
    /// (bmrm_corner_add_row): all added, or none and bmrm::error.
    void add_row(std::size_t start, span<const double> values, double scale = 1.0) {
        detail::check(bmrm_corner_add_row(c_, start, values.data(), values.size(), scale));
    }
    /// The zeroed dense psi buffer (dim doubles), owned by the library.
    span<double> dense() {
        if (dense_ == nullptr) {
            dense_ = bmrm_corner_dense(c_);
            if (dense_ == nullptr) detail::check(BMRM_ERROR_NULL_ARGUMENT);
        }
        return span<double>(dense_, dim_);
    }
    /// psi += v, a dense vector of length dim.
    void add_dense(span<const double> v) {
        if (v.size() != dim_)
            throw error(Status::dimension_mismatch,
                        "Corner::add_dense: a vector of length " + std::to_string(v.size()) +
                            " but dim = " + std::to_string(dim_));
        span<double> d = dense();
        for (std::size_t j = 0; j < dim_; j++) d[j] += v[j];
    }
    /// The C handle (for bmrm_corner_* calls).
    bmrm_corner *get() const noexcept { return c_; }

  private:
    bmrm_corner *c_;
    std::size_t dim_;
    double *dense_ = nullptr;
};

/// R(w) and one subgradient written into `subgrad` (zeroed on entry).
using RiskFn = std::function<double(span<const double> w, span<double> subgrad)>;
/// R(w, part) and one of its subgradients (zeroed on entry).
using PartialRiskFn =
    std::function<double(std::size_t part, span<const double> w, span<double> subgrad)>;
/// The loss-augmented argmax of `example` at w, written into `out`.
using MaxOracleFn = std::function<void(std::size_t example, span<const double> w, Corner &out)>;

// ---------------------------------------------------------------------------
// Graph problems: the factor-graph model of the library (bmrm_graph_data).

/// How the nodes' features give their unary scores (bmrm_node_features).
enum class NodeFeatures : int {
    dense = BMRM_NODE_FEATURES_DENSE,
    csr = BMRM_NODE_FEATURES_CSR,
    per_state = BMRM_NODE_FEATURES_PER_STATE,
};

/// What the edges score (bmrm_edge_features).
enum class EdgeFeatures : int {
    constant = BMRM_EDGE_FEATURES_CONSTANT,
    dense = BMRM_EDGE_FEATURES_DENSE,
    displacement = BMRM_EDGE_FEATURES_DISPLACEMENT,
    potts = BMRM_EDGE_FEATURES_POTTS,
};

/// The loss of a labelling (bmrm_graph_loss).
enum class GraphLoss : int {
    hamming = BMRM_GRAPH_LOSS_HAMMING,
    table = BMRM_GRAPH_LOSS_TABLE,
};

/// The built-in inference engines (bmrm_engine); `automatic` is AUTO.
enum class Engine : int {
    automatic = BMRM_ENGINE_AUTO,
    exhaustive = BMRM_ENGINE_EXHAUSTIVE,
    tree_max_sum = BMRM_ENGINE_TREE_MAX_SUM,
    distance_transform = BMRM_ENGINE_DISTANCE_TRANSFORM,
    graph_cut = BMRM_ENGINE_GRAPH_CUT,
    alpha_expansion = BMRM_ENGINE_ALPHA_EXPANSION,
    loopy_max_product = BMRM_ENGINE_LOOPY_MAX_PRODUCT,
    exact_or_loopy = BMRM_ENGINE_EXACT_OR_LOOPY,
    ad3 = BMRM_ENGINE_AD3,
    ad3_branch_and_bound = BMRM_ENGINE_AD3_BRANCH_AND_BOUND,
    conditioning = BMRM_ENGINE_CONDITIONING,
    unary = BMRM_ENGINE_UNARY,
    qpbo = BMRM_ENGINE_QPBO,
};

/// The engine named `name`: the library's engine names ("tree-max-sum",
/// '_' for '-') and their aliases (bmrm_graph_engine_from_name). Throws
/// bmrm::error naming the engines for an unknown name.
inline Engine engine_from_name(const std::string &name) {
    bmrm_engine e = BMRM_ENGINE_AUTO;
    detail::check(bmrm_graph_engine_from_name(name.c_str(), &e));
    return static_cast<Engine>(e);
}

/// The examples of a graph problem as std::vectors, example after example;
/// the fields are those of bmrm_graph_data (docs/c-api.md), an empty vector
/// standing for NULL. Fill the vectors directly, or with add_example /
/// add_node / add_edge for dense node features and constant, dense or Potts
/// edges. Problem::graph copies what it needs.
struct GraphData {
    std::vector<std::size_t> node_start;   ///< m + 1 offsets
    std::vector<std::uint32_t> states;     ///< n state counts
    std::vector<std::uint32_t> labels;     ///< n true states
    std::vector<std::uint32_t> node_types; ///< n types, or empty for all 0
    NodeFeatures node_features = NodeFeatures::dense;
    std::size_t node_dim = 0;
    std::vector<float> node_values;
    std::vector<std::size_t> node_indptr;    ///< CSR only
    std::vector<std::uint32_t> node_indices; ///< CSR only
    bool bias = false;
    std::vector<std::size_t> edge_start;   ///< m + 1 offsets
    std::vector<std::uint32_t> edges;      ///< 2 E node indices, local to the example
    std::vector<std::uint32_t> edge_types; ///< E types, or empty for all 0
    EdgeFeatures edge_features = EdgeFeatures::constant;
    std::size_t edge_dim = 0;
    std::vector<float> edge_values;
    std::vector<std::size_t> symmetric, antisymmetric;
    std::vector<bmrm_grid> grids; ///< DISPLACEMENT: one per node
    GraphLoss loss = GraphLoss::hamming;
    std::vector<double> class_weight;
    bool normalise = false;
    std::vector<double> loss_table;
    Engine engine = Engine::automatic;

    /// The number of examples (node_start.size() - 1).
    std::size_t num_examples() const noexcept {
        return node_start.empty() ? 0 : node_start.size() - 1;
    }
    /// The nodes of example `i`.
    std::size_t num_nodes(std::size_t i) const {
        if (i >= num_examples())
            throw error(Status::invalid_argument,
                        "example " + std::to_string(i) + " is out of range (" +
                            std::to_string(num_examples()) + " examples)");
        return node_start[i + 1] - node_start[i];
    }

    /// Starts a new example (its nodes and edges follow); returns its index.
    std::size_t add_example() {
        if (node_start.empty()) node_start.push_back(states.size());
        if (edge_start.empty()) edge_start.push_back(edges.size() / 2);
        node_start.push_back(node_start.back());
        edge_start.push_back(edge_start.back());
        return num_examples() - 1;
    }
    /// Appends a node to the last example (dense features, node_dim of
    /// them); returns its index within the example.
    std::size_t add_node(std::uint32_t num_states, std::uint32_t label,
                         span<const float> features = {}) {
        if (node_start.empty())
            throw error(Status::invalid_argument, "GraphData::add_node: call add_example first");
        if (features.size() != node_dim)
            throw error(Status::dimension_mismatch,
                        "GraphData::add_node: example " + std::to_string(num_examples() - 1) +
                            ", node " + std::to_string(node_start.back() - node_start[node_start.size() - 2]) +
                            ": " + std::to_string(features.size()) +
                            " features but node_dim = " + std::to_string(node_dim));
        states.push_back(num_states);
        labels.push_back(label);
        node_values.insert(node_values.end(), features.begin(), features.end());
        return node_start.back()++ - node_start[node_start.size() - 2];
    }
    /// Appends the edge (u, v) (node indices within the example) to the last
    /// example, with edge_dim features for dense and Potts edges.
    void add_edge(std::uint32_t u, std::uint32_t v, span<const float> features = {}) {
        if (edge_start.empty())
            throw error(Status::invalid_argument, "GraphData::add_edge: call add_example first");
        if (features.size() != edge_dim)
            throw error(Status::dimension_mismatch,
                        "GraphData::add_edge: example " + std::to_string(num_examples() - 1) +
                            ", edge " + std::to_string(edge_start.back() - edge_start[edge_start.size() - 2]) +
                            ": " + std::to_string(features.size()) +
                            " features but edge_dim = " + std::to_string(edge_dim));
        edges.push_back(u);
        edges.push_back(v);
        edge_values.insert(edge_values.end(), features.begin(), features.end());
        edge_start.back()++;
    }

    /// The C view of the vectors (valid while they are neither changed nor
    /// destroyed). Throws when node_start and edge_start disagree.
    bmrm_graph_data to_c() const {
        if (!edge_start.empty() && edge_start.size() != node_start.size())
            throw error(Status::dimension_mismatch,
                        "GraphData: node_start has " + std::to_string(node_start.size()) +
                            " entries but edge_start " + std::to_string(edge_start.size()));
        auto ptr = [](const auto &v) { return v.empty() ? nullptr : v.data(); };
        bmrm_graph_data g = bmrm_graph_data_default();
        g.num_examples = num_examples();
        g.node_start = ptr(node_start);
        g.states = ptr(states);
        g.labels = ptr(labels);
        g.node_types = ptr(node_types);
        g.node_features = static_cast<bmrm_node_features>(node_features);
        g.node_dim = node_dim;
        g.node_values = ptr(node_values);
        g.node_indptr = ptr(node_indptr);
        g.node_indices = ptr(node_indices);
        g.bias = bias;
        g.edge_start = ptr(edge_start);
        g.edges = ptr(edges);
        g.edge_types = ptr(edge_types);
        g.edge_features = static_cast<bmrm_edge_features>(edge_features);
        g.edge_dim = edge_dim;
        g.edge_values = ptr(edge_values);
        g.symmetric = ptr(symmetric);
        g.num_symmetric = symmetric.size();
        g.antisymmetric = ptr(antisymmetric);
        g.num_antisymmetric = antisymmetric.size();
        g.grids = ptr(grids);
        g.loss = static_cast<bmrm_graph_loss>(loss);
        g.class_weight = ptr(class_weight);
        g.num_class_weights = class_weight.size();
        g.normalise = normalise;
        g.loss_table = ptr(loss_table);
        g.engine = static_cast<bmrm_engine>(engine);
        return g;
    }
};

/// One example's potentials as a decoder sees them (bmrm_potentials): find
/// y maximising score(y) = sum_i unary(i, y_i) + sum_e pair(e, y_u, y_v).
/// Valid only during the decoder call.
class Potentials {
  public:
    explicit Potentials(const bmrm_potentials &p) noexcept : p_(p) {}
    std::size_t example() const noexcept { return p_.example; }
    std::size_t num_nodes() const noexcept { return p_.num_nodes; }
    std::size_t num_edges() const noexcept { return p_.num_edges; }
    /// The state count of node i.
    std::uint32_t states(std::size_t i) const noexcept { return p_.states[i]; }
    /// The first and second node of edge e.
    std::uint32_t edge_u(std::size_t e) const noexcept { return p_.edges[2 * e]; }
    std::uint32_t edge_v(std::size_t e) const noexcept { return p_.edges[2 * e + 1]; }
    /// The unary score of node i in state s (loss augmentation included).
    double unary(std::size_t i, std::uint32_t s) const noexcept {
        return p_.unary[p_.unary_start[i] + s];
    }
    /// Whether the edges are tables (else displacement costs on grids).
    bool has_tables() const noexcept { return p_.pairwise != nullptr; }
    /// The score of edge e with its ends in states (a, b).
    double pair(std::size_t e, std::uint32_t a, std::uint32_t b) const noexcept {
        std::uint32_t u = edge_u(e), v = edge_v(e);
        if (p_.pairwise != nullptr)
            return p_.pairwise[p_.pairwise_start[e] + a * p_.states[v] + b];
        const bmrm_grid &gu = p_.grids[u], &gv = p_.grids[v];
        double dx = (gv.origin_x + static_cast<double>(b % gv.width)) -
                    (gu.origin_x + static_cast<double>(a % gu.width));
        double dy = (gv.origin_y + static_cast<double>(b / gv.width)) -
                    (gu.origin_y + static_cast<double>(a / gu.width));
        const double *c = p_.displacement_cost + 4 * e;
        return -(c[0] * dx + c[1] * dy + c[2] * dx * dx + c[3] * dy * dy);
    }
    /// The score of a labelling (num_nodes states), nodes first, then edges.
    double score(span<const std::uint32_t> y) const noexcept {
        double s = 0.0;
        for (std::size_t i = 0; i < num_nodes(); i++) s += unary(i, y[i]);
        for (std::size_t e = 0; e < num_edges(); e++) s += pair(e, y[edge_u(e)], y[edge_v(e)]);
        return s;
    }
    /// The C struct.
    const bmrm_potentials &raw() const noexcept { return p_; }

  private:
    const bmrm_potentials &p_;
};

/// A labelling and whether it is known to be a maximiser.
struct Labelling {
    std::vector<std::uint32_t> labels;
    bool exact = true;
    Labelling() = default;
    Labelling(std::vector<std::uint32_t> y, bool exact_ = true)
        : labels(std::move(y)), exact(exact_) {}
};

/// The caller's decoder: a maximiser of the potentials' score (Labelling,
/// or a std::vector<std::uint32_t> taken as exact).
using GraphDecoderFn = std::function<Labelling(const Potentials &)>;

// ---------------------------------------------------------------------------
// Callback plumbing.

namespace detail {

enum class Level { none, risk, partitioned, max_oracle, graph };

/// The oracle a Problem describes; shared (read-only) by its solvers.
struct Oracle {
    Level level = Level::none;
    std::size_t dim = 0;
    std::size_t count = 0; ///< parts or examples
    bool thread_safe = false;
    RiskFn risk;
    PartialRiskFn partial;
    MaxOracleFn max_oracle;
    std::shared_ptr<const GraphData> graph; ///< Level::graph: the examples
    GraphDecoderFn decoder;                 ///< Level::graph: empty = built-in engine
};

/// The `user` of the C callbacks: the oracle, the observer, and the first
/// exception a callback threw during the current run.
struct Context {
    std::shared_ptr<const Oracle> oracle;
    ProgressFn progress;
    std::mutex mutex;
    std::exception_ptr error;
    std::atomic<bool> failed{false};

    /// Runs `body`; an exception is kept (the first one) and reported as 1.
    template <class F>
    std::int32_t guard(F &&body) noexcept {
        if (failed.load(std::memory_order_relaxed)) return 1; // fail fast
        try {
            body();
            return 0;
        } catch (...) {
            std::lock_guard<std::mutex> lock(mutex);
            if (!error) error = std::current_exception();
            failed.store(true);
            return 1;
        }
    }

    /// Takes the kept exception, if any, and resets the slot.
    std::exception_ptr take() noexcept {
        std::lock_guard<std::mutex> lock(mutex);
        std::exception_ptr e = error;
        error = nullptr;
        failed.store(false);
        return e;
    }
};

} // namespace detail
} // namespace bmrm

// The C trampolines (C linkage, as the C function pointer types require).
extern "C" {
inline std::int32_t bmrm_hpp_risk_trampoline(void *user, const double *w, std::size_t dim,
                                             double *risk, double *subgrad) {
    auto *ctx = static_cast<bmrm::detail::Context *>(user);
    return ctx->guard([&] {
        *risk = ctx->oracle->risk(bmrm::span<const double>(w, dim),
                                  bmrm::span<double>(subgrad, dim));
    });
}
inline std::int32_t bmrm_hpp_partial_trampoline(void *user, std::size_t part, const double *w,
                                                std::size_t dim, double *risk,
                                                double *subgrad) {
    auto *ctx = static_cast<bmrm::detail::Context *>(user);
    return ctx->guard([&] {
        *risk = ctx->oracle->partial(part, bmrm::span<const double>(w, dim),
                                     bmrm::span<double>(subgrad, dim));
    });
}
inline std::int32_t bmrm_hpp_oracle_trampoline(void *user, std::size_t example, const double *w,
                                               std::size_t dim, bmrm_corner *out) {
    auto *ctx = static_cast<bmrm::detail::Context *>(user);
    return ctx->guard([&] {
        bmrm::Corner corner(out, dim);
        ctx->oracle->max_oracle(example, bmrm::span<const double>(w, dim), corner);
    });
}
inline std::int32_t bmrm_hpp_graph_decoder_trampoline(void *user, const bmrm_potentials *p,
                                                      std::uint32_t *labels, bool *exact) {
    auto *ctx = static_cast<bmrm::detail::Context *>(user);
    return ctx->guard([&] {
        bmrm::Labelling y = ctx->oracle->decoder(bmrm::Potentials(*p));
        std::string where = "graph decoder: example " + std::to_string(p->example);
        if (y.labels.size() != p->num_nodes)
            throw bmrm::error(bmrm::Status::dimension_mismatch,
                              where + ": " + std::to_string(y.labels.size()) + " labels for " +
                                  std::to_string(p->num_nodes) + " nodes");
        for (std::size_t i = 0; i < p->num_nodes; i++)
            if (y.labels[i] >= p->states[i])
                throw bmrm::error(bmrm::Status::invalid_argument,
                                  where + ", node " + std::to_string(i) + ": state " +
                                      std::to_string(y.labels[i]) + " out of range (" +
                                      std::to_string(p->states[i]) + " states)");
        std::copy(y.labels.begin(), y.labels.end(), labels);
        *exact = y.exact;
    });
}
inline std::int32_t bmrm_hpp_progress_trampoline(void *user, const bmrm_info *info) {
    auto *ctx = static_cast<bmrm::detail::Context *>(user);
    bool stop = false;
    std::int32_t rc = ctx->guard([&] { stop = ctx->progress(bmrm::Info(*info)) == bmrm::Control::stop; });
    return rc != 0 || stop ? 1 : 0;
}
}

namespace bmrm {

namespace detail {
/// Sets `oracle` on the C problem `p` with `user` as the callbacks' user.
inline void install(bmrm_problem *p, const Oracle &oracle, void *user) {
    switch (oracle.level) {
    case Level::risk:
        check(bmrm_problem_set_risk(p, bmrm_hpp_risk_trampoline, user));
        break;
    case Level::partitioned:
        check(bmrm_problem_set_partitioned_risk(p, oracle.count, bmrm_hpp_partial_trampoline,
                                                user, oracle.thread_safe));
        break;
    case Level::max_oracle:
        check(bmrm_problem_set_max_oracle(p, oracle.count, bmrm_hpp_oracle_trampoline, user,
                                          oracle.thread_safe));
        break;
    case Level::none:
        break; // bmrm_solver_new reports BMRM_ERROR_NO_ORACLE
    case Level::graph:
        throw error(Status::invalid_argument, "a graph problem has no oracle to install");
    }
}

/// A new C graph problem for `oracle` (Level::graph), its decoder (if any)
/// reporting to `user`.
inline bmrm_problem *new_graph_problem(const Oracle &oracle, void *user) {
    bmrm_graph_data g = oracle.graph->to_c();
    bmrm_problem *p = nullptr;
    if (oracle.decoder)
        check(bmrm_problem_new_graph_decoder(&g, bmrm_hpp_graph_decoder_trampoline, user,
                                             oracle.thread_safe, &p));
    else
        check(bmrm_problem_new_graph(&g, &p));
    return p;
}

/// Owns a bmrm_problem.
struct ProblemHandle {
    bmrm_problem *p = nullptr;
    explicit ProblemHandle(std::size_t dim) { check(bmrm_problem_new(dim, &p)); }
    /// A problem for `oracle` whose callbacks report to `user`.
    ProblemHandle(const Oracle &oracle, void *user) {
        if (oracle.level == Level::graph) {
            p = new_graph_problem(oracle, user);
        } else {
            check(bmrm_problem_new(oracle.dim, &p));
            install(p, oracle, user); // on a throw the destructor frees p
        }
    }
    ~ProblemHandle() { bmrm_problem_free(p); }
    ProblemHandle(const ProblemHandle &) = delete;
    ProblemHandle &operator=(const ProblemHandle &) = delete;
};
} // namespace detail

// ---------------------------------------------------------------------------
// Problem and Solver.

/// A problem: the dimension of w and one oracle. Move-only; owns a
/// bmrm_problem (every set_* call is validated by the C library at once and
/// throws bmrm::error on a bad argument). The callables are shared with the
/// solvers made from it, which may outlive it.
class Problem {
  public:
    /// A problem over w of dimension `dim` (> 0) with no oracle yet.
    explicit Problem(std::size_t dim)
        : oracle_(std::make_shared<detail::Oracle>()), ctx_(std::make_unique<detail::Context>()) {
        oracle_->dim = dim;
        detail::check(bmrm_problem_new(dim, &p_));
    }
    ~Problem() { bmrm_problem_free(p_); }
    Problem(Problem &&o) noexcept
        : p_(std::exchange(o.p_, nullptr)), oracle_(std::move(o.oracle_)),
          ctx_(std::move(o.ctx_)) {}
    Problem &operator=(Problem &&o) noexcept {
        if (this != &o) {
            bmrm_problem_free(p_);
            p_ = std::exchange(o.p_, nullptr);
            oracle_ = std::move(o.oracle_);
            ctx_ = std::move(o.ctx_);
        }
        return *this;
    }
    Problem(const Problem &) = delete;
    Problem &operator=(const Problem &) = delete;

    std::size_t dim() const noexcept { return oracle_ ? oracle_->dim : 0; }

    /// The full risk: f(w, subgrad) returns R(w) and writes a subgradient.
    /// Enables BMRM, Prox-BMRM, SGD and the cutting-plane method. Always
    /// called on the thread that runs the solver.
    Problem &set_risk(RiskFn f) {
        auto o = fresh(detail::Level::risk, 1, false);
        o->risk = std::move(f);
        commit(std::move(o));
        return *this;
    }

    /// The partitioned risk R = sum_{p < num_parts} f(p, w, subgrad).
    /// With `thread_safe`, calls for different parts may overlap on the
    /// solver's threads; without, they run on the thread that runs the solver.
    Problem &set_partitioned_risk(std::size_t num_parts, PartialRiskFn f,
                                  bool thread_safe = false) {
        auto o = fresh(detail::Level::partitioned, num_parts, thread_safe);
        o->partial = std::move(f);
        commit(std::move(o));
        return *this;
    }

    /// The max-oracle over `num_examples` examples (the risk is the mean
    /// structured hinge). `thread_safe` as for set_partitioned_risk.
    Problem &set_max_oracle(std::size_t num_examples, MaxOracleFn f, bool thread_safe = false) {
        auto o = fresh(detail::Level::max_oracle, num_examples, thread_safe);
        o->max_oracle = std::move(f);
        commit(std::move(o));
        return *this;
    }

    /// The factor-graph model over `data`, decoded by the built-in engine
    /// data.engine; the dimension is the model's (docs/c-api.md). Throws
    /// bmrm::error naming the example and the node or edge of a bad graph.
    static Problem graph(const GraphData &data) { return graph_problem(data, {}, false); }

    /// The same model decoded by the caller's `decoder` over the potentials
    /// the library computes (data.engine must be Engine::automatic). An
    /// exception the decoder throws stops the solve and Solver::run (or
    /// predict_graph) rethrows it. With `thread_safe` calls may overlap.
    template <class F>
    static Problem graph_decoder(const GraphData &data, F &&decoder, bool thread_safe = false) {
        GraphDecoderFn f = std::forward<F>(decoder);
        if (!f) throw error(Status::null_argument, "Problem::graph_decoder: empty decoder");
        return graph_problem(data, std::move(f), thread_safe);
    }

    /// Whether this is a graph problem (Problem::graph / graph_decoder).
    bool is_graph() const noexcept { return oracle_ && oracle_->level == detail::Level::graph; }

    /// Graph problems: the labelling of `example` maximising <w, phi> (no
    /// loss), and whether the engine knows it to be a maximiser. Rethrows an
    /// exception of the decoder.
    Labelling predict_graph(span<const double> w, std::size_t example) const {
        if (!is_graph())
            throw error(Status::invalid_argument,
                        "predict_graph: the problem is not a graph problem (Problem::graph)");
        std::size_t n = oracle_->graph->num_nodes(example);
        Labelling y(std::vector<std::uint32_t>(n, 0), false);
        bool exact = false;
        ctx_->take();
        bmrm_status st = bmrm_graph_predict(p_, w.data(), w.size(), example, y.labels.data(),
                                            n, &exact);
        std::string message = st != BMRM_OK ? bmrm_last_error() : "";
        if (std::exception_ptr e = ctx_->take()) std::rethrow_exception(e);
        if (st != BMRM_OK) throw error(static_cast<Status>(st), message);
        y.exact = exact;
        return y;
    }

    /// Graph problems: the weights that must stay non-negative for the exact
    /// engines to stay exact on every iterate (the Potts weights, the
    /// quadratic displacement weights), increasing; give them to
    /// Solver::set_bounds as a lower bound of 0.
    std::vector<std::size_t> positivity_coordinates() const {
        if (!is_graph())
            throw error(Status::invalid_argument,
                        "positivity_coordinates: the problem is not a graph problem "
                        "(Problem::graph)");
        std::size_t count = 0;
        detail::check(bmrm_graph_positivity_coordinates(p_, nullptr, 0, &count));
        std::vector<std::size_t> coords(count);
        detail::check(bmrm_graph_positivity_coordinates(p_, coords.data(), coords.size(), &count));
        return coords;
    }

    /// The C handle, for C calls. Its callbacks report a C++ exception as a
    /// failed callback only (bmrm::Solver rethrows it; a C solver made from
    /// this handle cannot) and live as long as this Problem.
    bmrm_problem *get() const noexcept { return p_; }

  private:
    friend class Solver;

    Problem() = default;
    static Problem graph_problem(const GraphData &data, GraphDecoderFn decoder, bool ts) {
        auto o = std::make_shared<detail::Oracle>();
        o->level = detail::Level::graph;
        o->graph = std::make_shared<const GraphData>(data);
        o->decoder = std::move(decoder);
        o->thread_safe = ts;
        o->count = o->graph->num_examples();
        Problem p;
        p.ctx_ = std::make_unique<detail::Context>();
        p.ctx_->oracle = o;
        p.p_ = detail::new_graph_problem(*o, p.ctx_.get());
        detail::check(bmrm_problem_dim(p.p_, &o->dim));
        p.oracle_ = std::move(o);
        return p;
    }

    std::shared_ptr<detail::Oracle> fresh(detail::Level level, std::size_t count, bool ts) const {
        if (!oracle_) throw error(Status::null_argument, "bmrm::Problem: moved-from problem");
        auto o = std::make_shared<detail::Oracle>();
        o->level = level;
        o->dim = oracle_->dim;
        o->count = count;
        o->thread_safe = ts;
        return o;
    }
    void commit(std::shared_ptr<detail::Oracle> o) {
        // A context of its own for the handle: solvers made from this Problem
        // keep the old oracle and their own contexts.
        auto ctx = std::make_unique<detail::Context>();
        ctx->oracle = o;
        detail::install(p_, *o, ctx.get()); // throws on a bad argument: nothing changed
        oracle_ = std::move(o);
        ctx_ = std::move(ctx);
    }

    bmrm_problem *p_ = nullptr;
    std::shared_ptr<detail::Oracle> oracle_;
    std::unique_ptr<detail::Context> ctx_;
};

/// Problem::predict_graph as a free function.
inline Labelling predict_graph(const Problem &problem, span<const double> w,
                               std::size_t example) {
    return problem.predict_graph(w, example);
}

/// A solver for one problem with fixed settings (lambda aside), keeping its
/// state between runs for warm starts. Move-only; owns a bmrm_solver.
class Solver {
  public:
    /// Validates the settings against the problem (bmrm::error when bad).
    Solver(const Problem &problem, const Settings &settings)
        : ctx_(std::make_unique<detail::Context>()) {
        if (!problem.oracle_) throw error(Status::null_argument, "bmrm::Solver: moved-from problem");
        ctx_->oracle = problem.oracle_;
        ctx_->progress = settings.progress;
        dim_ = problem.dim();
        // A C problem of the solver's own, whose callbacks report to this
        // solver's context; the solver keeps the oracle, so it goes at once.
        detail::ProblemHandle own(*ctx_->oracle, ctx_.get());
        bmrm_settings c = settings.to_c();
        if (ctx_->progress) {
            c.progress = bmrm_hpp_progress_trampoline;
            c.progress_user = ctx_.get();
        }
        detail::check(bmrm_solver_new(own.p, &c, &s_));
    }
    ~Solver() { bmrm_solver_free(s_); }
    Solver(Solver &&o) noexcept
        : s_(std::exchange(o.s_, nullptr)), ctx_(std::move(o.ctx_)), dim_(o.dim_) {}
    Solver &operator=(Solver &&o) noexcept {
        if (this != &o) {
            bmrm_solver_free(s_);
            s_ = std::exchange(o.s_, nullptr);
            ctx_ = std::move(o.ctx_);
            dim_ = o.dim_;
        }
        return *this;
    }
    Solver(const Solver &) = delete;
    Solver &operator=(const Solver &) = delete;

    std::size_t dim() const noexcept { return dim_; }

    /// Minimises F from the start `w` and writes the best point into it.
    /// Rethrows the first exception a callback threw; throws bmrm::error for
    /// a failed run (w then holds the best valid point, see bmrm_solver_run).
    Info run(span<double> w) {
        if (s_ == nullptr) throw error(Status::null_argument, "bmrm::Solver: moved-from solver");
        ctx_->take(); // a clean slot
        bmrm_status st = bmrm_solver_run(s_, w.data(), w.size());
        // Read the message now, on this thread, before any other C call.
        std::string message = st != BMRM_OK ? bmrm_last_error() : "";
        if (std::exception_ptr e = ctx_->take()) std::rethrow_exception(e);
        if (st != BMRM_OK) throw error(static_cast<Status>(st), message);
        return info();
    }
    /// The same for a vector (resized to dim with zeros when empty).
    Info run(std::vector<double> &w) {
        if (w.empty()) w.assign(dim_, 0.0);
        return run(span<double>(w));
    }

    /// Changes lambda for the next run, keeping the cutting planes.
    void set_lambda(double lambda) { detail::check(bmrm_solver_set_lambda(s_, lambda)); }

    /// The summary of the last run.
    Info info() const {
        bmrm_info c;
        detail::check(bmrm_solver_info(s_, &c));
        return Info(c);
    }

    /// The last run's history, one row per iteration.
    std::vector<Iteration> history() const { return rows<Iteration>(bmrm_solver_history); }

    /// BCFW: box constraints lower <= w <= upper (empty: no bound; use
    /// +-infinity for free coordinates); the next run starts afresh.
    void set_bounds(span<const double> lower, span<const double> upper) {
        detail::check(bmrm_solver_set_bounds(s_, lower.empty() ? nullptr : lower.data(),
                                             upper.empty() ? nullptr : upper.data(), dim_));
    }

    /// BCFW's figures (bmrm::error unless the solver ran BCFW).
    BcfwInfo bcfw_info() const {
        bmrm_bcfw_info c;
        detail::check(bmrm_solver_bcfw_info(s_, &c));
        return BcfwInfo(c);
    }

    /// The last BCFW run's passes, one row each.
    std::vector<BcfwPass> bcfw_passes() const { return rows<BcfwPass>(bmrm_solver_bcfw_pass); }

    /// The C handle.
    bmrm_solver *get() const noexcept { return s_; }

  private:
    /// The last run's rows (bmrm_solver_history_len of them) through the C
    /// getter `row`; history() and bcfw_passes() differ only in the getter.
    template <class Row, class C>
    std::vector<Row> rows(bmrm_status (*row)(const bmrm_solver *, std::size_t, C *)) const {
        std::size_t n = bmrm_solver_history_len(s_);
        std::vector<Row> out;
        out.reserve(n);
        for (std::size_t k = 0; k < n; k++) {
            C r;
            detail::check(row(s_, k, &r));
            out.emplace_back(r);
        }
        return out;
    }

    bmrm_solver *s_ = nullptr;
    std::unique_ptr<detail::Context> ctx_; // stable address: the C callbacks' user
    std::size_t dim_ = 0;
};

// ---------------------------------------------------------------------------
// The SHOGUN-style adapter.

namespace shogun {

/// Sparse entries of a joint feature vector: (index, value) pairs.
using SparseVector = std::vector<std::pair<std::size_t, double>>;

/// What StructuredModel::argmax returns (SHOGUN's CResultSet): the loss
/// `delta` = Delta(y_i, y^) and the joint features of the truth and of the
/// prediction. Give psi_truth / psi_pred (dense, SHOGUN's fields), their
/// sparse forms, or the difference `psi` = psi_truth - psi_pred directly
/// (dense or sparse): every field that is filled adds up. `argmax` is a
/// 64-bit id of y^ (SHOGUN returns a CStructuredData object).
struct ResultSet {
    double delta = 0.0;
    double score = 0.0; ///< optional: delta + <w, psi_pred> - <w, psi_truth>
    std::uint64_t argmax = 0;
    std::vector<double> psi_truth, psi_pred, psi;
    SparseVector psi_truth_sparse, psi_pred_sparse, psi_sparse;
};

/// SHOGUN's CStructuredModel as far as the bundle methods use it: the
/// dimension of w, the number of training examples, and the
/// loss-augmented argmax of example `feat_idx` at w.
class StructuredModel {
  public:
    virtual ~StructuredModel() = default;
    /// The dimension of w (SHOGUN: get_dim()).
    virtual std::size_t get_dim() const = 0;
    /// The number of training examples (SHOGUN: get_labels()->get_num_labels()).
    virtual std::size_t get_num_examples() const = 0;
    /// y^ = argmax_y Delta(y_i, y) + <w, Psi(x_i, y)> (with training = true;
    /// SHOGUN's argmax). Exceptions propagate out of train().
    virtual ResultSet argmax(span<const double> w, std::size_t feat_idx, bool training = true) = 0;
    /// Whether argmax may be called for different examples at once (default
    /// no: then it runs on the thread that called train()).
    virtual bool thread_safe() const { return false; }

    /// SHOGUN's risk (structured hinge summed over the examples), and its
    /// subgradient (length get_dim()), through argmax.
    double risk(span<double> subgrad, span<const double> w) {
        for (double &g : subgrad) g = 0.0;
        double r = 0.0;
        for (std::size_t i = 0; i < get_num_examples(); i++) {
            ResultSet res = argmax(w, i, true);
            std::vector<double> psi(get_dim(), 0.0);
            accumulate(res, psi);
            double h = res.delta;
            for (std::size_t j = 0; j < psi.size(); j++) {
                h -= w[j] * psi[j];
                subgrad[j] -= psi[j];
            }
            r += h;
        }
        return r;
    }

    /// psi += psi_truth - psi_pred (all the fields of `res`), dense.
    static void accumulate(const ResultSet &res, std::vector<double> &psi) {
        auto dense = [&](const std::vector<double> &v, double sign) {
            for (std::size_t j = 0; j < v.size() && j < psi.size(); j++) psi[j] += sign * v[j];
        };
        auto sparse = [&](const SparseVector &v, double sign) {
            for (const auto &p : v)
                if (p.first < psi.size()) psi[p.first] += sign * p.second;
        };
        dense(res.psi_truth, 1.0);
        dense(res.psi_pred, -1.0);
        dense(res.psi, 1.0);
        sparse(res.psi_truth_sparse, 1.0);
        sparse(res.psi_pred_sparse, -1.0);
        sparse(res.psi_sparse, 1.0);
    }
};

/// SHOGUN's solver choice (ESolver).
enum ESolver { BMRM = 1, PPBMRM = 2, P3BMRM = 3 };

/// SHOGUN's BmrmStatistics, on SHOGUN's (summed-risk) scale.
struct BmrmStatistics {
    std::uint32_t nIter = 0; ///< iterations
    std::uint32_t nCP = 0;   ///< cutting planes in the model
    std::uint32_t nzA = 0;   ///< active cutting planes
    double Fp = 0.0;         ///< primal value F(W) (SHOGUN's scale)
    double Fd = 0.0;         ///< lower bound on min F (SHOGUN's scale)
    std::int8_t qp_exitflag = 0;
    /// 1 TolRel, 2 TolAbs (as in SHOGUN); 3 iteration limit, 4 time limit,
    /// 5 stopped by the observer (bmrm_exit's values). SHOGUN's -1 (buffer
    /// full) never happens: the buffer aggregates planes.
    std::int8_t exitflag = 0;
    std::vector<double> hist_Fp, hist_Fd, hist_wdist; ///< per iteration
    std::uint32_t get_n_iters() const { return nIter; }
};

/// SHOGUN's options (CDualLibQPBMSOSVM's setters), with its defaults.
struct BmrmOptions {
    double lambda = 1.0;      ///< SHOGUN's _lambda (summed risk): ours is lambda / m
    double TolRel = 1e-3;
    double TolAbs = 0.0;      ///< on SHOGUN's scale: ours is TolAbs / m
    std::uint32_t BufSize = 1000;
    bool cleanICP = true;
    std::uint32_t cleanAfter = 10;
    double K = 0.4;           ///< Prox-BMRM's step bound ||w - w_t|| <= K
    std::uint32_t Tmax = 100; ///< Prox-BMRM's T
    std::uint32_t cp_models = 1;
    bool verbose = false;
    ESolver solver = BMRM;
    /// Anything else, on the engine's settings (e.g. max_iterations,
    /// num_threads), applied last.
    std::function<void(Settings &)> tweak;
};

/// The engine settings a SHOGUN configuration maps to, for m examples.
inline Settings to_settings(const BmrmOptions &o, std::size_t m) {
    Algorithm a = o.solver == BMRM     ? Algorithm::bmrm
                  : o.solver == PPBMRM ? Algorithm::prox_bmrm
                                       : Algorithm::prox_p_bmrm;
    double scale = m > 0 ? static_cast<double>(m) : 1.0;
    Settings s(a, o.lambda / scale);
    s.tol_rel = o.TolRel;
    s.tol_abs = o.TolAbs / scale;
    s.buffer_size = o.BufSize;
    s.clean_after = o.cleanICP ? o.cleanAfter : 0;
    if (a != Algorithm::bmrm) {
        s.prox_k = o.K;
        s.prox_t = o.Tmax;
    }
    if (a == Algorithm::prox_p_bmrm) s.num_parts = o.cp_models;
    if (o.verbose) {
        s.set_progress([scale](const Info &i) {
            std::printf("%4llu: tim=%.3f, Fp=%f, Fd=%f, (Fp-Fd)=%f, (Fp-Fd)/Fp=%f, R=%f, "
                        "nCP=%llu, nzA=%llu\n",
                        static_cast<unsigned long long>(i.iterations), i.elapsed_seconds,
                        i.primal * scale, i.lower_bound * scale, i.gap * scale,
                        i.primal != 0.0 ? i.gap / std::fabs(i.primal) : 0.0, i.risk * scale,
                        static_cast<unsigned long long>(i.num_planes),
                        static_cast<unsigned long long>(i.active_planes));
        });
    }
    if (o.tweak) o.tweak(s);
    return s;
}

/// The model's argmax as a bmrm::Problem (a max-oracle). The model must
/// outlive the problem and its solvers.
inline Problem make_problem(StructuredModel &model) {
    Problem p(model.get_dim());
    std::size_t dim = model.get_dim();
    p.set_max_oracle(
        model.get_num_examples(),
        [&model, dim](std::size_t i, span<const double> w, Corner &out) {
            ResultSet r = model.argmax(w, i, true);
            out.set_loss(r.delta);
            out.set_label(r.argmax);
            auto dense = [&](const std::vector<double> &v, double sign) {
                if (v.empty()) return;
                if (v.size() != dim)
                    throw error(Status::dimension_mismatch,
                                "StructuredModel::argmax: a dense psi of length " +
                                    std::to_string(v.size()) + " but get_dim() = " +
                                    std::to_string(dim));
                span<double> d = out.dense();
                for (std::size_t j = 0; j < dim; j++) d[j] += sign * v[j];
            };
            auto sparse = [&](const SparseVector &v, double sign) {
                for (const auto &e : v) out.add(e.first, sign * e.second);
            };
            dense(r.psi_truth, 1.0);
            dense(r.psi_pred, -1.0);
            dense(r.psi, 1.0);
            sparse(r.psi_truth_sparse, 1.0);
            sparse(r.psi_pred_sparse, -1.0);
            sparse(r.psi_sparse, 1.0);
        },
        model.thread_safe());
    return p;
}

/// Trains with options `o` from the start W (length get_dim(), overwritten
/// with the solution) and returns SHOGUN's statistics on SHOGUN's scale.
inline BmrmStatistics train(StructuredModel &model, std::vector<double> &W,
                            const BmrmOptions &o) {
    std::size_t m = model.get_num_examples();
    if (W.empty()) W.assign(model.get_dim(), 0.0);
    Problem p = make_problem(model);
    Solver solver(p, to_settings(o, m));
    Info info = solver.run(W);
    double scale = static_cast<double>(m);
    BmrmStatistics st;
    st.nIter = static_cast<std::uint32_t>(info.iterations);
    st.nCP = static_cast<std::uint32_t>(info.num_planes);
    st.nzA = static_cast<std::uint32_t>(info.active_planes);
    st.Fp = info.primal * scale;
    st.Fd = info.lower_bound * scale;
    st.exitflag = static_cast<std::int8_t>(info.exit);
    for (const Iteration &r : solver.history()) {
        st.hist_Fp.push_back(r.primal * scale);
        st.hist_Fd.push_back(r.lower_bound * scale);
        st.hist_wdist.push_back(r.step_norm);
    }
    return st;
}

namespace detail {
/// The options of SHOGUN's svm_*_solver functions, which share their
/// arguments and differ only in the solver (and P3BMRM's cp_models).
inline BmrmOptions solver_options(ESolver solver, double TolRel, double TolAbs, double _lambda,
                                  std::uint32_t _BufSize, bool cleanICP,
                                  std::uint32_t cleanAfter, double K, std::uint32_t Tmax,
                                  bool verbose) {
    BmrmOptions o;
    o.solver = solver;
    o.TolRel = TolRel;
    o.TolAbs = TolAbs;
    o.lambda = _lambda;
    o.BufSize = _BufSize;
    o.cleanICP = cleanICP;
    o.cleanAfter = cleanAfter;
    o.K = K;
    o.Tmax = Tmax;
    o.verbose = verbose;
    return o;
}
} // namespace detail

/// SHOGUN's svm_bmrm_solver (K and Tmax are unused by BMRM, as in SHOGUN).
inline BmrmStatistics svm_bmrm_solver(StructuredModel &model, std::vector<double> &W,
                                      double TolRel, double TolAbs, double _lambda,
                                      std::uint32_t _BufSize, bool cleanICP,
                                      std::uint32_t cleanAfter, double K, std::uint32_t Tmax,
                                      bool verbose = false) {
    return train(model, W,
                 detail::solver_options(BMRM, TolRel, TolAbs, _lambda, _BufSize, cleanICP,
                                        cleanAfter, K, Tmax, verbose));
}

/// SHOGUN's svm_ppbm_solver: proximal BMRM.
inline BmrmStatistics svm_ppbm_solver(StructuredModel &model, std::vector<double> &W,
                                      double TolRel, double TolAbs, double _lambda,
                                      std::uint32_t _BufSize, bool cleanICP,
                                      std::uint32_t cleanAfter, double K, std::uint32_t Tmax,
                                      bool verbose = false) {
    return train(model, W,
                 detail::solver_options(PPBMRM, TolRel, TolAbs, _lambda, _BufSize, cleanICP,
                                        cleanAfter, K, Tmax, verbose));
}

/// SHOGUN's svm_p3bm_solver: proximal P-BMRM with cp_models models.
inline BmrmStatistics svm_p3bm_solver(StructuredModel &model, std::vector<double> &W,
                                      double TolRel, double TolAbs, double _lambda,
                                      std::uint32_t _BufSize, bool cleanICP,
                                      std::uint32_t cleanAfter, double K, std::uint32_t Tmax,
                                      std::uint32_t cp_models, bool verbose = false) {
    BmrmOptions o = detail::solver_options(P3BMRM, TolRel, TolAbs, _lambda, _BufSize, cleanICP,
                                           cleanAfter, K, Tmax, verbose);
    o.cp_models = cp_models;
    return train(model, W, o);
}

/// SHOGUN's CDualLibQPBMSOSVM: the model, lambda, the setters with SHOGUN's
/// names, train() (true when exitflag == 1, as in SHOGUN), get_w() and
/// get_result().
class DualLibQPBMSOSVM {
  public:
    DualLibQPBMSOSVM(StructuredModel &model, double _lambda, std::vector<double> W = {})
        : model_(&model), w_(std::move(W)) {
        opts_.lambda = _lambda;
        if (w_.empty()) w_.assign(model.get_dim(), 0.0);
        if (w_.size() != model.get_dim())
            throw error(Status::dimension_mismatch,
                        "DualLibQPBMSOSVM: W has length " + std::to_string(w_.size()) +
                            " but the model's dimension is " + std::to_string(model.get_dim()));
    }
    void set_lambda(double v) { opts_.lambda = v; }
    double get_lambda() const { return opts_.lambda; }
    void set_TolRel(double v) { opts_.TolRel = v; }
    double get_TolRel() const { return opts_.TolRel; }
    void set_TolAbs(double v) { opts_.TolAbs = v; }
    double get_TolAbs() const { return opts_.TolAbs; }
    void set_BufSize(std::uint32_t v) { opts_.BufSize = v; }
    std::uint32_t get_BufSize() const { return opts_.BufSize; }
    void set_cleanICP(bool v) { opts_.cleanICP = v; }
    bool get_cleanICP() const { return opts_.cleanICP; }
    void set_cleanAfter(std::uint32_t v) { opts_.cleanAfter = v; }
    std::uint32_t get_cleanAfter() const { return opts_.cleanAfter; }
    void set_K(double v) { opts_.K = v; }
    double get_K() const { return opts_.K; }
    void set_Tmax(std::uint32_t v) { opts_.Tmax = v; }
    std::uint32_t get_Tmax() const { return opts_.Tmax; }
    void set_cp_models(std::uint32_t v) { opts_.cp_models = v; }
    std::uint32_t get_cp_models() const { return opts_.cp_models; }
    void set_verbose(bool v) { opts_.verbose = v; }
    bool get_verbose() const { return opts_.verbose; }
    void set_solver(ESolver s) { opts_.solver = s; }
    ESolver get_solver() const { return opts_.solver; }
    void set_w(std::vector<double> W) {
        if (W.size() != model_->get_dim())
            throw error(Status::dimension_mismatch,
                        "set_w: dimension of the initial solution must match the model's");
        w_ = std::move(W);
    }
    const std::vector<double> &get_w() const { return w_; }
    BmrmStatistics get_result() const { return result_; }
    /// All options at once (and `tweak` for the engine's other settings).
    BmrmOptions &options() { return opts_; }

    /// Trains from the current w; true when converged by TolRel (SHOGUN).
    bool train() {
        result_ = shogun::train(*model_, w_, opts_);
        return result_.exitflag == 1;
    }

  private:
    StructuredModel *model_;
    std::vector<double> w_;
    BmrmOptions opts_;
    BmrmStatistics result_;
};

} // namespace shogun
} // namespace bmrm

#endif // BMRM_HPP

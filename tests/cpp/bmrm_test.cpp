// The C++ wrapper (bindings/cpp/bmrm.hpp): every callback kind, the corner
// writers, the progress observer, exceptions thrown in callbacks, C errors as
// bmrm::error, the threads callbacks run on, move semantics, and the
// SHOGUN-style adapter agreeing with the C API on a multiclass SVM, and graph
// problems (a C++ decoder giving the built-in exhaustive engine's solves).
//
// Compiled with the system C++ compiler (C++17) against the static library
// and run by tests/cpp.rs; exits 0 when every check passed, and prints
// "N passed, 0 failed" last.
#include "bmrm.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <vector>

static int passed = 0, failed = 0;

#define CHECK(cond, ...)                                                                     \
    do {                                                                                     \
        if (cond) {                                                                          \
            passed++;                                                                        \
        } else {                                                                             \
            failed++;                                                                        \
            std::printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                      \
            std::printf(__VA_ARGS__);                                                        \
            std::printf("\n");                                                               \
        }                                                                                    \
    } while (0)

// `expr` throws E; `then` runs on the caught exception `e`.
#define CHECK_THROWS(E, expr, then)                                                          \
    do {                                                                                     \
        bool caught_ = false;                                                                \
        try {                                                                                \
            expr;                                                                            \
        } catch (const E &e) {                                                               \
            caught_ = true;                                                                  \
            then;                                                                            \
        } catch (const std::exception &other_) {                                             \
            CHECK(false, "%s threw another exception: %s", #expr, other_.what());            \
            caught_ = true;                                                                  \
        }                                                                                    \
        CHECK(caught_, "%s did not throw %s", #expr, #E);                                    \
    } while (0)

using bmrm::span;

// ---------------------------------------------------------------------------
// L1: R(w) = sum_j |w_j - c_j|, optimum clip(c, +-1/lambda).

static const std::vector<double> L1_C = {0.3, -2.5, 1.7, 0.0, -0.4, 4.0, -0.9};

static double l1_risk(span<const double> w, span<double> g) {
    double r = 0;
    for (std::size_t j = 0; j < w.size(); j++) {
        double d = w[j] - L1_C[j];
        r += std::fabs(d);
        g[j] = d > 0 ? 1.0 : -1.0;
    }
    return r;
}

static double l1_part(std::size_t p, span<const double> w, span<double> g) {
    double d = w[p] - L1_C[p];
    g[p] = d > 0 ? 1.0 : -1.0;
    return std::fabs(d);
}

static std::vector<double> l1_optimum(double lambda) {
    std::vector<double> w;
    for (double c : L1_C) w.push_back(std::max(-1.0 / lambda, std::min(1.0 / lambda, c)));
    return w;
}

static double l1_objective(const std::vector<double> &w, double lambda) {
    double f = 0;
    for (std::size_t j = 0; j < w.size(); j++)
        f += 0.5 * lambda * w[j] * w[j] + std::fabs(w[j] - L1_C[j]);
    return f;
}

static double dist(const std::vector<double> &a, const std::vector<double> &b) {
    double s = 0;
    for (std::size_t j = 0; j < a.size(); j++) s += (a[j] - b[j]) * (a[j] - b[j]);
    return std::sqrt(s);
}

static bmrm::Settings exact(bmrm::Algorithm a, double lambda) {
    bmrm::Settings s(a, lambda);
    s.tol_rel = 0;
    s.tol_abs = 1e-9;
    s.max_iterations = 2000;
    return s;
}

// ---------------------------------------------------------------------------
// Multiclass SVM with 0/1 loss (the C tests' problem: tests/c/common.h).

struct Lcg {
    std::uint64_t state;
    double next() {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<double>(state >> 11) * (1.0 / 9007199254740992.0);
    }
};

struct Mc {
    std::size_t m, d, k;
    std::vector<double> x; // m x d, last feature 1
    std::vector<std::size_t> y;

    Mc(std::size_t m_, std::size_t d_, std::size_t k_, std::uint64_t seed)
        : m(m_), d(d_), k(k_), x(m_ * d_), y(m_) {
        Lcg g{seed};
        for (std::size_t i = 0; i < m; i++) {
            y[i] = i % k;
            for (std::size_t j = 0; j + 1 < d; j++) {
                double v = 2.0 * g.next() - 1.0;
                if (j == y[i] % (d - 1)) v += 1.5;
                x[i * d + j] = v;
            }
            x[i * d + d - 1] = 1.0;
        }
    }
    std::size_t dim() const { return k * d; }
    double score(const double *w, std::size_t c, std::size_t i) const {
        double s = 0;
        for (std::size_t j = 0; j < d; j++) s += w[c * d + j] * x[i * d + j];
        return s;
    }
    std::size_t argmax(const double *w, std::size_t i) const {
        std::size_t yi = y[i], best = yi;
        double best_score = score(w, yi, i);
        for (std::size_t c = 0; c < k; c++) {
            if (c == yi) continue;
            double s = 1.0 + score(w, c, i);
            if (s > best_score) {
                best = c;
                best_score = s;
            }
        }
        return best;
    }
};

// The C API's oracle (plain C callback) for the comparison.
extern "C" std::int32_t mc_c_oracle(void *user, std::size_t i, const double *w, std::size_t,
                                    bmrm_corner *out) {
    const Mc *mc = static_cast<const Mc *>(user);
    std::size_t yi = mc->y[i], best = mc->argmax(w, i);
    bmrm_corner_set_label(out, best);
    if (best == yi) return 0;
    bmrm_corner_set_loss(out, 1.0);
    for (std::size_t j = 0; j < mc->d; j++)
        if (bmrm_corner_add(out, yi * mc->d + j, mc->x[i * mc->d + j]) != BMRM_OK) return 1;
    for (std::size_t j = 0; j < mc->d; j++)
        if (bmrm_corner_add(out, best * mc->d + j, -mc->x[i * mc->d + j]) != BMRM_OK) return 1;
    return 0;
}

// The C++ corner writers: sparse pairs, the dense span, add_dense, parallel
// arrays, rows.
enum class Writer { pairs, dense_span, add_dense, parallel_arrays, rows };

static bmrm::MaxOracleFn mc_oracle(const Mc &mc, Writer how) {
    return [&mc, how](std::size_t i, span<const double> w, bmrm::Corner &out) {
        std::size_t yi = mc.y[i], best = mc.argmax(w.data(), i);
        out.set_label(best);
        if (best == yi) return;
        out.set_loss(1.0);
        const double *x = &mc.x[i * mc.d];
        switch (how) {
        case Writer::pairs: {
            std::vector<std::pair<std::size_t, double>> pairs;
            for (std::size_t j = 0; j < mc.d; j++) pairs.emplace_back(yi * mc.d + j, x[j]);
            for (std::size_t j = 0; j < mc.d; j++) pairs.emplace_back(best * mc.d + j, -x[j]);
            out.add_sparse(pairs);
            break;
        }
        case Writer::dense_span: {
            span<double> psi = out.dense();
            for (std::size_t j = 0; j < mc.d; j++) {
                psi[yi * mc.d + j] += x[j];
                psi[best * mc.d + j] -= x[j];
            }
            break;
        }
        case Writer::add_dense: {
            std::vector<double> psi(mc.dim(), 0.0);
            for (std::size_t j = 0; j < mc.d; j++) {
                psi[yi * mc.d + j] += x[j];
                psi[best * mc.d + j] -= x[j];
            }
            out.add_dense(psi);
            break;
        }
        case Writer::parallel_arrays: {
            std::vector<std::size_t> idx;
            std::vector<double> val;
            for (std::size_t j = 0; j < mc.d; j++) {
                idx.push_back(yi * mc.d + j);
                val.push_back(x[j]);
                idx.push_back(best * mc.d + j);
                val.push_back(-x[j]);
            }
            out.add_sparse(idx, val);
            break;
        }
        case Writer::rows: {
            out.add_row(yi * mc.d, span<const double>(x, mc.d));
            out.add_row(best * mc.d, span<const double>(x, mc.d), -1.0);
            break;
        }
        }
    };
}

// ---------------------------------------------------------------------------

static void test_settings() {
    bmrm::Settings s;
    bmrm_settings c = bmrm_settings_default(BMRM_ALGORITHM_BMRM);
    CHECK(s.algorithm == bmrm::Algorithm::bmrm && s.lambda == 0.0, "defaults");
    CHECK(s.tol_rel == c.tol_rel && s.tol_abs == c.tol_abs, "tolerances");
    CHECK(s.buffer_size == c.buffer_size && s.clean_after == c.clean_after, "bundle");
    CHECK(s.qp_max_updates == c.qp_max_updates && s.prox_t == c.prox_t, "qp, prox");
    CHECK(s.sampling == bmrm::Sampling::gap && s.gap_check == 10 && s.cache_size == 50, "bcfw");
    CHECK(!s.multi_plane && s.mp_approx_passes == 10 && s.mp_inactive_passes == 10 &&
              s.mp_block_steps == 0 && !s.mp_timed && s.gap_degree == 1.0 && s.mini_batch == 0,
          "multi-plane defaults");
    bmrm::Settings sgd(bmrm::Algorithm::sgd, 0.5);
    CHECK(sgd.sgd_passes == 5 && sgd.lambda == 0.5, "sgd defaults %u", sgd.sgd_passes);
    // A round trip through the C struct keeps every field.
    bmrm::Settings t(bmrm::Algorithm::prox_p_bmrm, 0.25);
    t.num_parts = 3;
    t.seed = 77;
    t.use_cache = true;
    t.step_type = bmrm::StepType::pairwise;
    t.cache_nu = 0.5;
    t.multi_plane = true;
    t.mp_timed = true;
    t.mp_approx_passes = 7;
    t.mp_inactive_passes = 4;
    t.mp_block_steps = 2;
    t.mini_batch = 64;
    t.gap_degree = 2.0;
    bmrm::Settings u = bmrm::Settings::from_c(t.to_c());
    CHECK(u.algorithm == t.algorithm && u.lambda == 0.25 && u.num_parts == 3 && u.seed == 77,
          "round trip");
    CHECK(u.use_cache && u.step_type == bmrm::StepType::pairwise && u.cache_nu == 0.5,
          "round trip (bcfw)");
    CHECK(u.multi_plane && u.mp_timed && u.mp_approx_passes == 7 && u.mp_inactive_passes == 4 &&
              u.mp_block_steps == 2 && u.gap_degree == 2.0 && u.mini_batch == 64,
          "round trip (multi-plane)");
    CHECK(std::string(bmrm::to_string(bmrm::Algorithm::prox_p_bmrm)) == "Prox-P-BMRM", "name");
    CHECK(std::string(bmrm::version()).find('.') != std::string::npos, "version");
}

static void test_full_and_partitioned_risk() {
    const double lambda = 0.8;
    std::vector<double> opt = l1_optimum(lambda);
    double f_opt = l1_objective(opt, lambda);

    bmrm::Problem full(L1_C.size());
    full.set_risk(l1_risk);
    for (auto a : {bmrm::Algorithm::bmrm, bmrm::Algorithm::prox_bmrm}) {
        bmrm::Solver solver(full, exact(a, lambda));
        std::vector<double> w;
        bmrm::Info info = solver.run(w);
        CHECK(info.exit == bmrm::Exit::converged_abs, "%s: exit %s", bmrm::to_string(a),
              bmrm::to_string(info.exit));
        CHECK(dist(w, opt) < 1e-4, "%s: ||w - w*|| = %g", bmrm::to_string(a), dist(w, opt));
        CHECK(info.lower_bound <= f_opt + 1e-12 && f_opt <= info.primal + 1e-12,
              "%s: %g <= %g <= %g", bmrm::to_string(a), info.lower_bound, f_opt, info.primal);
        CHECK(std::fabs(info.primal - l1_objective(w, lambda)) < 1e-12, "primal is F(w)");
        CHECK(solver.history().size() == info.iterations, "history rows %zu vs %llu",
              solver.history().size(), (unsigned long long)info.iterations);
    }
    // P-BMRM on a full risk: the C error as bmrm::error.
    CHECK_THROWS(bmrm::error, bmrm::Solver(full, exact(bmrm::Algorithm::p_bmrm, lambda)),
                 CHECK(e.status() == bmrm::Status::no_oracle, "status %d", (int)e.status()));

    // Partitioned, serial and thread-safe.
    for (bool ts : {false, true}) {
        bmrm::Problem parts(L1_C.size());
        std::atomic<int> calls{0};
        parts.set_partitioned_risk(
            L1_C.size(),
            [&calls](std::size_t p, span<const double> w, span<double> g) {
                calls++;
                return l1_part(p, w, g);
            },
            ts);
        for (auto a : {bmrm::Algorithm::p_bmrm, bmrm::Algorithm::prox_p_bmrm,
                       bmrm::Algorithm::bmrm}) {
            bmrm::Settings s = exact(a, lambda);
            s.num_threads = 2;
            bmrm::Solver solver(parts, s);
            std::vector<double> w(L1_C.size(), 0.0);
            bmrm::Info info = solver.run(w);
            CHECK(dist(w, opt) < 1e-4, "partitioned (ts=%d) %s: ||w - w*|| = %g", ts,
                  bmrm::to_string(a), dist(w, opt));
            CHECK(info.lower_bound <= f_opt + 1e-12 && f_opt <= info.primal + 1e-12,
                  "partitioned bound");
        }
        CHECK(calls > 0, "the partial risk was called");
    }
}

static void test_max_oracle_writers() {
    Mc mc(120, 6, 3, 7);
    // The engine sums sparse and dense psi in different orders, so the
    // writers agree within the certified tolerance, not bit for bit.
    std::vector<std::vector<double>> ws;
    std::vector<bmrm::Info> infos;
    const double lambda = 1e-3;
    for (Writer how : {Writer::pairs, Writer::dense_span, Writer::add_dense,
                       Writer::parallel_arrays, Writer::rows}) {
        bmrm::Problem p(mc.dim());
        p.set_max_oracle(mc.m, mc_oracle(mc, how), true);
        bmrm::Settings s(bmrm::Algorithm::p_bmrm, lambda);
        s.num_parts = 4;
        s.tol_rel = 1e-6;
        s.num_threads = 1;
        bmrm::Solver solver(p, s);
        std::vector<double> w(mc.dim(), 0.0);
        bmrm::Info info = solver.run(w);
        CHECK(info.exit == bmrm::Exit::converged_rel, "exit %s", bmrm::to_string(info.exit));
        ws.push_back(w);
        infos.push_back(info);
    }
    int identical = 0;
    for (std::size_t k = 1; k < ws.size(); k++) {
        double tol_f = std::max(infos[k].gap, infos[0].gap) + 1e-15;
        CHECK(std::fabs(infos[k].primal - infos[0].primal) <= tol_f, "writer %zu: F %.15g vs %.15g",
              k, infos[k].primal, infos[0].primal);
        double tol_w = std::sqrt(2 * infos[k].gap / lambda) + std::sqrt(2 * infos[0].gap / lambda);
        CHECK(dist(ws[k], ws[0]) <= tol_w, "writer %zu: ||dw|| = %g > %g", k, dist(ws[k], ws[0]),
              tol_w);
        identical += ws[k] == ws[0];
    }
    // Rows add the entries of pairs in the same order: the same bits.
    CHECK(ws[4] == ws[0] && infos[4].primal == infos[0].primal, "rows differ from pairs");
    std::printf("WRITERS 5 corner writers agree (F = %.12g; %d of 4 bit-identical to pairs)\n",
                infos[0].primal, identical);

    // A bad index is a bmrm::error thrown inside the oracle, rethrown by run().
    bmrm::Problem bad(mc.dim());
    bad.set_max_oracle(mc.m, [&mc](std::size_t, span<const double>, bmrm::Corner &out) {
        out.set_loss(1.0);
        out.add(mc.dim(), 1.0);
    });
    bmrm::Solver solver(bad, bmrm::Settings(bmrm::Algorithm::bmrm, 1e-2));
    std::vector<double> w(mc.dim(), 0.0);
    CHECK_THROWS(bmrm::error, solver.run(w), {
        CHECK(e.status() == bmrm::Status::dimension_mismatch, "status %d", (int)e.status());
        CHECK(std::string(e.what()).find("index") != std::string::npos, "'%s'", e.what());
    });
    // add_dense with the wrong length.
    bmrm::Problem bad2(mc.dim());
    bad2.set_max_oracle(mc.m, [](std::size_t, span<const double>, bmrm::Corner &out) {
        std::vector<double> v(3, 1.0);
        out.add_dense(v);
    });
    bmrm::Solver solver2(bad2, bmrm::Settings(bmrm::Algorithm::bmrm, 1e-2));
    CHECK_THROWS(bmrm::error, solver2.run(w),
                 CHECK(e.status() == bmrm::Status::dimension_mismatch, "add_dense length"));
    // A row past the end and a list with an index out of range.
    for (int list = 0; list < 2; list++) {
        bmrm::Problem bad3(mc.dim());
        bad3.set_max_oracle(mc.m, [&mc, list](std::size_t, span<const double>, bmrm::Corner &out) {
            std::vector<double> v(3, 1.0);
            std::vector<std::size_t> idx = {0, mc.dim(), 1};
            if (list)
                out.add_sparse(idx, v);
            else
                out.add_row(mc.dim() - 2, v);
        });
        bmrm::Solver solver3(bad3, bmrm::Settings(bmrm::Algorithm::bmrm, 1e-2));
        CHECK_THROWS(bmrm::error, solver3.run(w), {
            CHECK(e.status() == bmrm::Status::dimension_mismatch, "status %d", (int)e.status());
            CHECK(std::string(e.what()).find("out of range") != std::string::npos, "'%s'",
                  e.what());
        });
    }
}

static void test_progress() {
    bmrm::Problem p(L1_C.size());
    p.set_risk(l1_risk);
    // Control::stop after 3 iterations.
    {
        bmrm::Settings s = exact(bmrm::Algorithm::bmrm, 0.01);
        int calls = 0;
        std::uint64_t last = 0;
        bool monotone = true;
        s.progress = [&](const bmrm::Info &i) {
            calls++;
            monotone = monotone && i.iterations > last && i.lower_bound <= i.primal;
            last = i.iterations;
            return calls >= 3 ? bmrm::Control::stop : bmrm::Control::go_on;
        };
        bmrm::Solver solver(p, s);
        std::vector<double> w(L1_C.size(), 0.0);
        bmrm::Info info = solver.run(w);
        CHECK(info.exit == bmrm::Exit::stopped_by_user && calls == 3 && info.iterations == 3,
              "exit %s after %d calls, %llu iterations", bmrm::to_string(info.exit), calls,
              (unsigned long long)info.iterations);
        CHECK(monotone, "iterations and bounds in order");
    }
    // A bool observer (true = stop) and a void observer (never stops).
    {
        bmrm::Settings s = exact(bmrm::Algorithm::bmrm, 0.8);
        s.set_progress([](const bmrm::Info &i) { return i.iterations >= 2; });
        bmrm::Solver solver(p, s);
        std::vector<double> w;
        CHECK(solver.run(w).exit == bmrm::Exit::stopped_by_user, "bool observer");
        int seen = 0;
        bmrm::Settings v = exact(bmrm::Algorithm::bmrm, 0.8);
        v.set_progress([&seen](const bmrm::Info &) { seen++; });
        bmrm::Solver solver2(p, v);
        std::vector<double> w2;
        bmrm::Info info = solver2.run(w2);
        // The engine does not call the observer on the iteration that converges.
        CHECK(info.exit == bmrm::Exit::converged_abs && seen <= (int)info.iterations &&
                  seen + 1 >= (int)info.iterations,
              "void observer: %d calls, %llu iterations", seen,
              (unsigned long long)info.iterations);
    }
}

struct MyError : std::exception {
    int code;
    explicit MyError(int c) : code(c) {}
    const char *what() const noexcept override { return "my error"; }
};

static void test_exceptions() {
    // A full risk throwing a user type at the 3rd call.
    {
        int calls = 0;
        bmrm::Problem p(L1_C.size());
        p.set_risk([&calls](span<const double> w, span<double> g) {
            if (++calls == 3) throw MyError(42);
            return l1_risk(w, g);
        });
        bmrm::Solver solver(p, exact(bmrm::Algorithm::bmrm, 0.8));
        std::vector<double> w(L1_C.size(), 0.0);
        CHECK_THROWS(MyError, solver.run(w), CHECK(e.code == 42, "code %d", e.code));
        CHECK(calls == 3, "the solve stopped at the throwing call (%d calls)", calls);
        CHECK(solver.info().exit == bmrm::Exit::not_run, "a failed run");
        // The slot is reset: the next run (no throw now) succeeds.
        bmrm::Info info = solver.run(w);
        CHECK(info.exit == bmrm::Exit::converged_abs, "run after an exception");
    }
    // A partitioned thread-safe risk throwing in every part: one is rethrown.
    {
        bmrm::Problem p(L1_C.size());
        p.set_partitioned_risk(
            L1_C.size(),
            [](std::size_t part, span<const double>, span<double>) -> double {
                throw std::runtime_error("part " + std::to_string(part) + " failed");
            },
            true);
        bmrm::Settings s = exact(bmrm::Algorithm::p_bmrm, 0.8);
        s.num_threads = 4;
        bmrm::Solver solver(p, s);
        std::vector<double> w(L1_C.size(), 0.0);
        CHECK_THROWS(std::runtime_error, solver.run(w), {
            std::string m = e.what();
            CHECK(m.rfind("part ", 0) == 0 && m.find(" failed") != std::string::npos, "'%s'",
                  m.c_str());
        });
    }
    // A max-oracle throwing std::out_of_range from a thread-safe oracle.
    {
        Mc mc(60, 4, 3, 1);
        bmrm::Problem p(mc.dim());
        p.set_max_oracle(
            mc.m,
            [](std::size_t i, span<const double>, bmrm::Corner &) {
                if (i == 41) throw std::out_of_range("example 41 is bad");
            },
            true);
        bmrm::Solver solver(p, bmrm::Settings(bmrm::Algorithm::prox_p_bmrm, 1e-2));
        std::vector<double> w(mc.dim(), 0.0);
        CHECK_THROWS(std::out_of_range, solver.run(w),
                     CHECK(std::string(e.what()) == "example 41 is bad", "'%s'", e.what()));
    }
    // The progress observer throwing.
    {
        bmrm::Problem p(L1_C.size());
        p.set_risk(l1_risk);
        bmrm::Settings s = exact(bmrm::Algorithm::bmrm, 0.01);
        s.progress = [](const bmrm::Info &i) -> bmrm::Control {
            if (i.iterations == 2) throw MyError(7);
            return bmrm::Control::go_on;
        };
        bmrm::Solver solver(p, s);
        std::vector<double> w(L1_C.size(), 0.0);
        CHECK_THROWS(MyError, solver.run(w), CHECK(e.code == 7, "code %d", e.code));
        CHECK(solver.info().iterations == 2, "stopped at the observer's iteration");
    }
    // A NaN is a C error: bmrm::error with the library's message.
    {
        bmrm::Problem p(L1_C.size());
        p.set_risk([](span<const double> w, span<double> g) {
            double r = l1_risk(w, g);
            g[1] = std::nan("");
            return r;
        });
        bmrm::Solver solver(p, exact(bmrm::Algorithm::bmrm, 0.8));
        std::vector<double> w(L1_C.size(), 0.0);
        CHECK_THROWS(bmrm::error, solver.run(w), {
            CHECK(e.status() == bmrm::Status::non_finite, "status %d", (int)e.status());
            CHECK(std::string(e.what()).find("subgradient[1]") != std::string::npos, "'%s'",
                  e.what());
        });
    }
}

static void test_c_errors() {
    CHECK_THROWS(bmrm::error, bmrm::Problem(0), {
        CHECK(e.status() == bmrm::Status::invalid_argument, "status %d", (int)e.status());
        CHECK(std::string(e.what()).find("bmrm_problem_new") != std::string::npos, "'%s'",
              e.what());
    });
    bmrm::Problem p(L1_C.size());
    CHECK_THROWS(bmrm::error, p.set_partitioned_risk(0, l1_part),
                 CHECK(e.status() == bmrm::Status::invalid_argument, "0 parts"));
    CHECK_THROWS(bmrm::error, bmrm::Solver(p, bmrm::Settings(bmrm::Algorithm::bmrm, 1.0)),
                 CHECK(e.status() == bmrm::Status::no_oracle, "no oracle"));
    p.set_risk(l1_risk);
    CHECK_THROWS(bmrm::error, bmrm::Solver(p, bmrm::Settings(bmrm::Algorithm::bmrm)), {
        CHECK(e.status() == bmrm::Status::invalid_argument, "lambda 0");
        CHECK(std::string(e.what()).find("lambda") != std::string::npos, "'%s'", e.what());
    });
    bmrm::Solver solver(p, bmrm::Settings(bmrm::Algorithm::bmrm, 1.0));
    std::vector<double> w(3, 0.0);
    CHECK_THROWS(bmrm::error, solver.run(w),
                 CHECK(e.status() == bmrm::Status::dimension_mismatch, "wrong dim"));
    CHECK_THROWS(bmrm::error, solver.set_lambda(-1.0),
                 CHECK(e.status() == bmrm::Status::invalid_argument, "set_lambda"));
}

// Callbacks of a problem that is not thread-safe run on the thread that
// calls run(), whatever num_threads is (the MEX gateway depends on this).
static void test_callback_threads() {
    Mc mc(90, 5, 3, 3);
    auto run_on = [&](int level, std::set<std::thread::id> &seen) {
        std::mutex m;
        auto note = [&] {
            std::lock_guard<std::mutex> lock(m);
            seen.insert(std::this_thread::get_id());
        };
        bmrm::Problem p(level == 2 ? mc.dim() : L1_C.size());
        bmrm::Algorithm a = bmrm::Algorithm::bmrm;
        if (level == 0) {
            p.set_risk([&](span<const double> w, span<double> g) {
                note();
                return l1_risk(w, g);
            });
        } else if (level == 1) {
            p.set_partitioned_risk(L1_C.size(), [&](std::size_t k, span<const double> w,
                                                    span<double> g) {
                note();
                return l1_part(k, w, g);
            });
            a = bmrm::Algorithm::prox_p_bmrm;
        } else {
            auto inner = mc_oracle(mc, Writer::pairs);
            p.set_max_oracle(mc.m, [&, inner](std::size_t i, span<const double> w,
                                              bmrm::Corner &out) {
                note();
                inner(i, w, out);
            });
            a = bmrm::Algorithm::prox_p_bmrm;
        }
        bmrm::Settings s(a, level == 2 ? 1e-2 : 0.8);
        s.num_threads = 4;
        s.sgd_passes = level == 2 ? 1 : 0;
        s.set_progress([&](const bmrm::Info &) { note(); });
        bmrm::Solver solver(p, s);
        std::vector<double> w(p.dim(), 0.0);
        solver.run(w);
    };
    for (int level = 0; level < 3; level++) {
        // From a thread that is not the main thread, too.
        std::set<std::thread::id> seen_main, seen_other;
        run_on(level, seen_main);
        std::thread::id other_id;
        std::thread t([&] {
            other_id = std::this_thread::get_id();
            run_on(level, seen_other);
        });
        t.join();
        CHECK(seen_main.size() == 1 && *seen_main.begin() == std::this_thread::get_id(),
              "level %d: callbacks on %zu threads, not only the caller's", level,
              seen_main.size());
        CHECK(seen_other.size() == 1 && *seen_other.begin() == other_id,
              "level %d (from another thread): callbacks on %zu threads", level,
              seen_other.size());
    }
    // Every algorithm over a max-oracle that is not thread-safe, with a warm
    // start; BCFW with several exact passes, the averaged point
    // and its regularisation path: every oracle call on the caller's thread.
    const bmrm::Algorithm all[] = {
        bmrm::Algorithm::bmrm,  bmrm::Algorithm::prox_bmrm, bmrm::Algorithm::p_bmrm,
        bmrm::Algorithm::prox_p_bmrm, bmrm::Algorithm::bcfw, bmrm::Algorithm::sgd,
        bmrm::Algorithm::cutting_plane};
    for (bmrm::Algorithm a : all) {
        std::set<std::thread::id> seen;
        std::mutex m;
        bmrm::Problem p(mc.dim());
        auto inner = mc_oracle(mc, Writer::pairs);
        p.set_max_oracle(mc.m, [&, inner](std::size_t i, span<const double> w,
                                          bmrm::Corner &out) {
            {
                std::lock_guard<std::mutex> lock(m);
                seen.insert(std::this_thread::get_id());
            }
            inner(i, w, out);
        });
        bmrm::Settings s(a, 1e-2);
        s.num_threads = 4;
        s.max_iterations = 25;
        if (a == bmrm::Algorithm::bcfw) {
            s.gap_check = 2;
            s.weighted_averaging = true;
        }
        bmrm::Solver solver(p, s);
        std::vector<double> w(p.dim(), 0.0);
        solver.run(w);
        solver.set_lambda(5e-3);
        solver.run(w);
        if (a == bmrm::Algorithm::bcfw) {
            bmrm_path *path = nullptr;
            CHECK(bmrm_solver_bcfw_path(solver.get(), 0.05, 1e-3, 10, &path) == BMRM_OK,
                  "bcfw path: %s", bmrm_last_error());
            CHECK(path != nullptr && bmrm_path_len(path) > 0, "bcfw path: no breakpoint");
            bmrm_path_free(path);
        }
        CHECK(seen.size() == 1 && *seen.begin() == std::this_thread::get_id(),
              "%s: non-thread-safe max-oracle called on %zu threads",
              bmrm_algorithm_name(static_cast<bmrm_algorithm>(a)), seen.size());
    }
    // A thread-safe max-oracle may use the pool (checked only to run).
    std::printf("THREADS callbacks of non-thread-safe problems ran on the caller's thread\n");
}

static void test_moves_and_warm_start() {
    bmrm::Solver solver = [] {
        bmrm::Problem p(L1_C.size());
        p.set_risk(l1_risk);
        bmrm::Problem moved = std::move(p); // the problem moves ...
        CHECK(p.get() == nullptr && moved.get() != nullptr, "moved-from problem is empty");
        return bmrm::Solver(moved, exact(bmrm::Algorithm::bmrm, 0.8));
    }(); // ... and dies here: the solver keeps the callables
    bmrm::Solver other = std::move(solver);
    CHECK(solver.get() == nullptr && other.get() != nullptr, "moved-from solver is empty");
    std::vector<double> w;
    bmrm::Info first = other.run(w);
    CHECK(dist(w, l1_optimum(0.8)) < 1e-4, "solver outlives its problem");
    other.set_lambda(0.4);
    bmrm::Info second = other.run(w);
    CHECK(dist(w, l1_optimum(0.4)) < 1e-4 && second.exit == bmrm::Exit::converged_abs,
          "warm start after set_lambda (%llu then %llu iterations)",
          (unsigned long long)first.iterations, (unsigned long long)second.iterations);
    CHECK_THROWS(bmrm::error, solver.run(w),
                 CHECK(e.status() == bmrm::Status::null_argument, "moved-from run"));

    // Replacing a problem's oracle leaves the solvers made before alone.
    bmrm::Problem p(L1_C.size());
    p.set_risk(l1_risk);
    bmrm::Solver before(p, exact(bmrm::Algorithm::bmrm, 0.8));
    p.set_risk([](span<const double>, span<double>) -> double { throw MyError(1); });
    std::vector<double> w2;
    CHECK(before.run(w2).exit == bmrm::Exit::converged_abs, "old oracle kept");
    bmrm::Solver after(p, exact(bmrm::Algorithm::bmrm, 0.8));
    CHECK_THROWS(MyError, after.run(w2), (void)e);
}

// ---------------------------------------------------------------------------
// The SHOGUN-style adapter.

class McModel : public bmrm::shogun::StructuredModel {
  public:
    explicit McModel(const Mc &mc, bool dense) : mc_(mc), dense_(dense) {}
    std::size_t get_dim() const override { return mc_.dim(); }
    std::size_t get_num_examples() const override { return mc_.m; }
    bmrm::shogun::ResultSet argmax(span<const double> w, std::size_t i, bool) override {
        bmrm::shogun::ResultSet r;
        std::size_t yi = mc_.y[i], best = mc_.argmax(w.data(), i);
        r.argmax = best;
        if (best == yi) return r; // delta 0, psi_truth = psi_pred: nothing to add
        r.delta = 1.0;
        const double *x = &mc_.x[i * mc_.d];
        if (dense_) {
            r.psi_truth.assign(get_dim(), 0.0);
            r.psi_pred.assign(get_dim(), 0.0);
            for (std::size_t j = 0; j < mc_.d; j++) {
                r.psi_truth[yi * mc_.d + j] = x[j];
                r.psi_pred[best * mc_.d + j] = x[j];
            }
        } else {
            for (std::size_t j = 0; j < mc_.d; j++) {
                r.psi_truth_sparse.emplace_back(yi * mc_.d + j, x[j]);
                r.psi_pred_sparse.emplace_back(best * mc_.d + j, x[j]);
            }
        }
        return r;
    }
    bool thread_safe() const override { return true; }

  private:
    const Mc &mc_;
    bool dense_;
};

static void test_shogun_adapter() {
    Mc mc(120, 6, 3, 7);
    const double lambda = 1e-2;                           // ours (mean risk)
    const double lambda_sum = lambda * (double)mc.m;      // SHOGUN's (summed risk)

    // The C API, by hand.
    bmrm_problem *cp = nullptr;
    bmrm_problem_new(mc.dim(), &cp);
    bmrm_problem_set_max_oracle(cp, mc.m, mc_c_oracle, &mc, true);
    bmrm_settings cs = bmrm_settings_default(BMRM_ALGORITHM_BMRM);
    cs.lambda = lambda;
    cs.tol_rel = 1e-8;
    cs.buffer_size = 1000;
    bmrm_solver *csolver = nullptr;
    CHECK(bmrm_solver_new(cp, &cs, &csolver) == BMRM_OK, "C solver: %s", bmrm_last_error());
    std::vector<double> w_c(mc.dim(), 0.0);
    CHECK(bmrm_solver_run(csolver, w_c.data(), w_c.size()) == BMRM_OK, "C run");
    bmrm_info ci;
    bmrm_solver_info(csolver, &ci);
    bmrm_solver_free(csolver);
    bmrm_problem_free(cp);

    // The adapter, SHOGUN's way: CDualLibQPBMSOSVM with its setters.
    for (bool dense : {false, true}) {
        McModel model(mc, dense);
        bmrm::shogun::DualLibQPBMSOSVM sosvm(model, lambda_sum);
        sosvm.set_TolRel(1e-8);
        sosvm.set_solver(bmrm::shogun::BMRM);
        bool converged = sosvm.train();
        bmrm::shogun::BmrmStatistics st = sosvm.get_result();
        const std::vector<double> &w = sosvm.get_w();
        double m = (double)mc.m;
        CHECK(converged && st.exitflag == 1, "exitflag %d", st.exitflag);
        // SHOGUN's scale: Fp = lambda_sum/2 ||w||^2 + sum_i H_i(w).
        std::vector<double> g(mc.dim());
        double f_shogun = 0.5 * lambda_sum *
                              std::inner_product(w.begin(), w.end(), w.begin(), 0.0) +
                          model.risk(span<double>(g), span<const double>(w));
        CHECK(std::fabs(st.Fp - f_shogun) <= 1e-9 * std::fabs(f_shogun), "Fp %.15g vs %.15g",
              st.Fp, f_shogun);
        CHECK(st.Fd <= st.Fp && st.nIter == st.hist_Fp.size() && st.hist_Fd.size() == st.nIter &&
                  st.hist_wdist.size() == st.nIter && st.nzA <= st.nCP,
              "statistics shape");
        // Agreement with the C API (within both runs' certified gaps).
        double gap_c = ci.primal - ci.lower_bound, gap_a = (st.Fp - st.Fd) / m;
        double tol_f = std::max(gap_c, gap_a) + 1e-12;
        CHECK(std::fabs(st.Fp / m - ci.primal) <= tol_f, "F: adapter %.15g, C %.15g",
              st.Fp / m, ci.primal);
        double tol_w = std::sqrt(2 * gap_c / lambda) + std::sqrt(2 * gap_a / lambda) + 1e-9;
        CHECK(dist(w, w_c) <= tol_w, "||w_adapter - w_C|| = %g > %g", dist(w, w_c), tol_w);
        std::printf("SHOGUN %s: nIter %u (C: %llu), Fp/m %.12g (C: %.12g), ||dw|| %.3g%s\n",
                    dense ? "dense" : "sparse", st.nIter, (unsigned long long)ci.iterations,
                    st.Fp / m, ci.primal, dist(w, w_c), w == w_c ? " (bit-identical)" : "");
    }

    // svm_ppbm_solver and svm_p3bm_solver: each one's primal above the
    // others' lower bounds.
    McModel model(mc, false);
    std::vector<double> w1, w2, w3;
    auto s1 = bmrm::shogun::svm_bmrm_solver(model, w1, 1e-6, 0, lambda_sum, 1000, true, 10, 0.4,
                                            100);
    auto s2 = bmrm::shogun::svm_ppbm_solver(model, w2, 1e-6, 0, lambda_sum, 1000, true, 10, 0.4,
                                            100);
    auto s3 = bmrm::shogun::svm_p3bm_solver(model, w3, 1e-6, 0, lambda_sum, 1000, true, 10, 0.4,
                                            100, 4);
    double max_fd = std::max({s1.Fd, s2.Fd, s3.Fd}), min_fp = std::min({s1.Fp, s2.Fp, s3.Fp});
    CHECK(max_fd <= min_fp * (1 + 1e-12), "max Fd %.15g > min Fp %.15g", max_fd, min_fp);
    CHECK(s1.exitflag == 1 && s2.exitflag == 1 && s3.exitflag == 1, "exitflags %d %d %d",
          s1.exitflag, s2.exitflag, s3.exitflag);
    std::printf("SHOGUN bmrm %u / ppbm %u / p3bm(4) %u iterations, Fp %.10g %.10g %.10g\n",
                s1.nIter, s2.nIter, s3.nIter, s1.Fp, s2.Fp, s3.Fp);

    // An exception from the model's argmax reaches train()'s caller.
    struct Failing : McModel {
        using McModel::McModel;
        bmrm::shogun::ResultSet argmax(span<const double>, std::size_t i, bool) override {
            throw std::invalid_argument("argmax failed on example " + std::to_string(i));
        }
        bool thread_safe() const override { return false; }
    } failing(mc, false);
    bmrm::shogun::DualLibQPBMSOSVM bad(failing, lambda_sum);
    CHECK_THROWS(std::invalid_argument, bad.train(),
                 CHECK(std::string(e.what()) == "argmax failed on example 0", "'%s'", e.what()));
    CHECK_THROWS(bmrm::error, bmrm::shogun::DualLibQPBMSOSVM(model, 1.0, {1.0, 2.0}),
                 CHECK(e.status() == bmrm::Status::dimension_mismatch, "W length"));
}

// BCFW through the wrapper: its info and passes, bounds agreeing with BMRM.
static void test_bcfw() {
    Mc mc(120, 6, 3, 7);
    const double lambda = 1e-2;
    bmrm::Problem p(mc.dim());
    p.set_max_oracle(mc.m, mc_oracle(mc, Writer::pairs), true);
    bmrm::Settings sb(bmrm::Algorithm::bmrm, lambda);
    sb.tol_rel = 1e-8;
    bmrm::Solver bundle(p, sb);
    std::vector<double> wb;
    bmrm::Info ib = bundle.run(wb);
    CHECK_THROWS(bmrm::error, bundle.bcfw_info(),
                 CHECK(e.status() == bmrm::Status::invalid_argument, "bcfw_info of BMRM"));
    for (auto step : {bmrm::StepType::fw, bmrm::StepType::pairwise, bmrm::StepType::away}) {
        bmrm::Settings s(bmrm::Algorithm::bcfw, lambda);
        s.tol_rel = 0;
        s.tol_abs = 1e-5;
        s.step_type = step;
        s.use_cache = step != bmrm::StepType::fw;
        bmrm::Solver solver(p, s);
        std::vector<double> w;
        bmrm::Info info = solver.run(w);
        bmrm::BcfwInfo bi = solver.bcfw_info();
        std::vector<bmrm::BcfwPass> passes = solver.bcfw_passes();
        CHECK(info.exit == bmrm::Exit::converged_abs, "bcfw exit %s", bmrm::to_string(info.exit));
        CHECK(info.lower_bound <= ib.primal + 1e-12 && ib.lower_bound <= info.primal + 1e-12,
              "bcfw [%.12g, %.12g] vs bmrm [%.12g, %.12g]", info.lower_bound, info.primal,
              ib.lower_bound, ib.primal);
        double dual_w = bi.ell - 0.5 * lambda * std::inner_product(w.begin(), w.end(), w.begin(), 0.0);
        CHECK(std::fabs(dual_w - bi.dual) <= 1e-9, "ell - lambda/2 |w|^2 = %.15g, dual %.15g", dual_w,
              bi.dual);
        CHECK(!passes.empty() && passes.size() == bi.passes && passes.back().pass == passes.size(),
              "%zu pass rows, %llu passes", passes.size(), (unsigned long long)bi.passes);
        std::printf("BCFW step %d: %zu passes, %.1f effective, %llu cache hits, F %.12g (BMRM %.12g)\n",
                    (int)step, passes.size(), bi.effective_passes,
                    (unsigned long long)bi.cache_hits, info.primal, ib.primal);
    }
}

// ---------------------------------------------------------------------------
// Graph problems: Problem::graph / graph_decoder / predict_graph.

// Six chains of 2..4 binary nodes with two features each, built with the
// GraphData helpers.
static bmrm::GraphData graph_chains(bmrm::Engine engine) {
    bmrm::GraphData g;
    g.node_dim = 2;
    g.bias = true;
    g.normalise = true;
    g.engine = engine;
    std::uint64_t state = 27;
    auto next = [&state] {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<double>(state >> 11) / 9007199254740992.0;
    };
    for (std::size_t i = 0; i < 6; i++) {
        g.add_example();
        std::size_t len = 2 + i % 3;
        for (std::size_t t = 0; t < len; t++) {
            std::uint32_t y = next() < 0.5 ? 0 : 1;
            std::vector<float> x(2);
            for (float &v : x) v = static_cast<float>((y ? 0.5 : -0.5) + next() - 0.5);
            std::size_t node = g.add_node(2, y, x);
            if (node > 0) g.add_edge(static_cast<std::uint32_t>(node - 1),
                                     static_cast<std::uint32_t>(node));
        }
    }
    return g;
}

// Exhaustive search over the potentials, node 0 fastest, the first best
// kept: the built-in exhaustive engine's order.
static bmrm::Labelling enumerate_labellings(const bmrm::Potentials &p) {
    std::vector<std::uint32_t> y(p.num_nodes(), 0), best_y = y;
    double best = -INFINITY;
    for (;;) {
        double s = p.score(y);
        if (s > best) {
            best = s;
            best_y = y;
        }
        std::size_t i = 0;
        while (i < p.num_nodes() && ++y[i] == p.states(i)) y[i++] = 0;
        if (i == p.num_nodes()) break;
    }
    return best_y;
}

static void test_graph() {
    // Engines by name, resolved by the library's registry.
    CHECK(bmrm::engine_from_name("conditioning") == bmrm::Engine::conditioning, "conditioning");
    CHECK(bmrm::engine_from_name("tree_max_sum") == bmrm::Engine::tree_max_sum, "'_' for '-'");
    CHECK(bmrm::engine_from_name("max-product") == bmrm::Engine::loopy_max_product, "an alias");
    CHECK(bmrm::engine_from_name("qpbo") == bmrm::Engine::qpbo, "qpbo");
    CHECK_THROWS(bmrm::error, bmrm::engine_from_name("trw"),
                 CHECK(std::strstr(e.what(), "not an engine") != nullptr, "%s", e.what()));
    bmrm::Problem built = bmrm::Problem::graph(graph_chains(bmrm::Engine::exhaustive));
    std::atomic<int> calls{0};
    bmrm::Problem user = bmrm::Problem::graph_decoder(
        graph_chains(bmrm::Engine::automatic), [&calls](const bmrm::Potentials &p) {
            calls++;
            return enumerate_labellings(p);
        });
    // 2 states x (2 features + bias) + a 2 x 2 table.
    CHECK(built.dim() == 10 && user.dim() == 10, "dims %zu %zu", built.dim(), user.dim());
    CHECK(built.is_graph() && user.is_graph(), "graph problems");
    for (bmrm::Algorithm a : {bmrm::Algorithm::bmrm, bmrm::Algorithm::bcfw}) {
        bmrm::Settings s(a, 0.05);
        s.tol_rel = a == bmrm::Algorithm::bcfw ? 1e-3 : 1e-7;
        s.num_threads = 2;
        std::vector<double> wa(10, 0.0), wb(10, 0.0);
        bmrm::Info ia = bmrm::Solver(built, s).run(wa);
        bmrm::Info ib = bmrm::Solver(user, s).run(wb);
        CHECK(wa == wb, "%s: w differs", bmrm::to_string(a));
        CHECK(ia.primal == ib.primal && ia.lower_bound == ib.lower_bound,
              "%s: F %.17g / %.17g, bound %.17g / %.17g", bmrm::to_string(a), ia.primal,
              ib.primal, ia.lower_bound, ib.lower_bound);
        CHECK(ia.lower_bound <= ia.primal && ia.gap <= 1e-3 * ia.primal + 1e-12, "gap %g",
              ia.gap);
        CHECK(ia.primal > 0.0, "a non-trivial problem: F %g", ia.primal);
        if (a == bmrm::Algorithm::bmrm)
            std::printf("GRAPH decoder vs exhaustive engine: F %.17g, bound %.17g "
                        "(bit-identical)\n",
                        ia.primal, ia.lower_bound);
        // Predictions of both problems agree with an enumeration at w, no loss.
        for (std::size_t i = 0; i < 6; i++) {
            bmrm::Labelling pa = built.predict_graph(wa, i);
            bmrm::Labelling pb = bmrm::predict_graph(user, wb, i);
            CHECK(pa.labels == pb.labels && pa.exact && pb.exact, "example %zu: predictions", i);
            CHECK(pa.labels.size() == 2 + i % 3, "example %zu: %zu labels", i, pa.labels.size());
        }
    }
    CHECK(calls > 0, "the decoder was called %d times", calls.load());
    CHECK_THROWS(bmrm::error, built.predict_graph(std::vector<double>(10, 0.0), 6),
                 CHECK(std::string(e.what()).find("example 6 is out of range") !=
                           std::string::npos,
                       "'%s'", e.what()));
    CHECK_THROWS(bmrm::error, built.predict_graph(std::vector<double>(9, 0.0), 0),
                 CHECK(e.status() == bmrm::Status::dimension_mismatch, "status %d",
                       (int)e.status()));

    // Bad graphs throw with the library's message naming example and node/edge.
    {
        bmrm::GraphData g = graph_chains(bmrm::Engine::automatic);
        g.edges[2 * g.edge_start[1]] = 9;
        CHECK_THROWS(bmrm::error, bmrm::Problem::graph(g), {
            CHECK(e.status() == bmrm::Status::invalid_argument, "status %d", (int)e.status());
            CHECK(std::string(e.what()).find("example 1: edge 0 (9, 1) joins node 9") !=
                      std::string::npos,
                  "'%s'", e.what());
        });
        g = graph_chains(bmrm::Engine::automatic);
        g.states[g.node_start[3] + 1] = 0;
        CHECK_THROWS(bmrm::error,
                     bmrm::Problem::graph_decoder(g, enumerate_labellings),
                     CHECK(std::string(e.what()).find("example 3: node 1 has zero states") !=
                               std::string::npos,
                           "'%s'", e.what()));
        g = graph_chains(bmrm::Engine::automatic);
        g.edge_start.pop_back();
        CHECK_THROWS(bmrm::error, bmrm::Problem::graph(g),
                     CHECK(e.status() == bmrm::Status::dimension_mismatch, "status %d",
                           (int)e.status()));
        bmrm::GraphData h;
        h.node_dim = 2;
        CHECK_THROWS(bmrm::error, h.add_node(2, 0), ); // no example yet
        h.add_example();
        CHECK_THROWS(bmrm::error, h.add_node(2, 0, std::vector<float>(3)),
                     CHECK(std::string(e.what()).find("example 0, node 0: 3 features") !=
                               std::string::npos,
                           "'%s'", e.what()));
        CHECK_THROWS(bmrm::error,
                     bmrm::Problem::graph_decoder(graph_chains(bmrm::Engine::exhaustive),
                                                  enumerate_labellings),
                     CHECK(std::string(e.what()).find("engine = 1") != std::string::npos,
                           "'%s'", e.what()));
    }

    // A decoder that throws: caught at the C boundary, rethrown by run()
    // and by predict_graph; a decoder answering badly is a bmrm::error.
    {
        int n = 0;
        bmrm::Problem p = bmrm::Problem::graph_decoder(
            graph_chains(bmrm::Engine::automatic), [&n](const bmrm::Potentials &pot) {
                if (++n == 5) throw MyError(pot.example() == 4 ? 5 : 0);
                return enumerate_labellings(pot);
            });
        bmrm::Solver solver(p, bmrm::Settings(bmrm::Algorithm::bcfw, 0.05));
        std::vector<double> w(p.dim(), 0.0);
        CHECK_THROWS(MyError, solver.run(w), CHECK(e.code == 5 || e.code == 0, "code %d", e.code));
        CHECK(n == 5, "the solve stopped at the throwing call (%d calls)", n);
        bmrm::Info info = solver.run(w); // the slot is reset; n > 5 now never throws
        CHECK(info.lower_bound <= info.primal, "run after an exception");
        n = 4;
        CHECK_THROWS(MyError, p.predict_graph(w, 2), CHECK(e.code == 0, "code %d", e.code));
        bmrm::Problem wrong = bmrm::Problem::graph_decoder(
            graph_chains(bmrm::Engine::automatic), [](const bmrm::Potentials &pot) {
                return std::vector<std::uint32_t>(pot.num_nodes() + 1, 0);
            });
        bmrm::Solver ws(wrong, bmrm::Settings(bmrm::Algorithm::bmrm, 0.05));
        CHECK_THROWS(bmrm::error, ws.run(w), {
            CHECK(e.status() == bmrm::Status::dimension_mismatch, "status %d", (int)e.status());
            CHECK(std::string(e.what()).find("graph decoder: example ") != std::string::npos,
                  "'%s'", e.what());
        });
        bmrm::Problem out_of_range = bmrm::Problem::graph_decoder(
            graph_chains(bmrm::Engine::automatic), [](const bmrm::Potentials &pot) {
                return std::vector<std::uint32_t>(pot.num_nodes(), 2);
            });
        CHECK_THROWS(bmrm::error, out_of_range.predict_graph(w, 1),
                     CHECK(std::string(e.what()).find("example 1, node 0: state 2 out of range") !=
                               std::string::npos,
                           "'%s'", e.what()));
    }
}

// Problem::positivity_coordinates: the Potts weights of a Potts problem
// (after 2 states x (2 features + bias) unary weights: 6 and 7), none for
// constant edges; a solve bounded below by 0 on them keeps them there.
static void test_graph_positivity() {
    bmrm::GraphData g = graph_chains(bmrm::Engine::automatic);
    CHECK(bmrm::Problem::graph(g).positivity_coordinates().empty(), "constant edges: none");
    g.edge_features = bmrm::EdgeFeatures::potts;
    g.edge_dim = 2;
    g.edge_values.clear();
    for (std::size_t e = 0; e < g.edges.size() / 2; e++) {
        g.edge_values.push_back(1.0f);
        g.edge_values.push_back(static_cast<float>(e % 3) * 0.25f);
    }
    bmrm::Problem potts = bmrm::Problem::graph(g);
    CHECK(potts.dim() == 8, "dim %zu", potts.dim());
    std::vector<std::size_t> coords = potts.positivity_coordinates();
    CHECK((coords == std::vector<std::size_t>{6, 7}), "coordinates %zu", coords.size());
    bmrm::Settings s(bmrm::Algorithm::bmrm, 0.05);
    bmrm::Solver solver(potts, s);
    std::vector<double> lo(8, -INFINITY), hi(8, INFINITY);
    for (std::size_t j : coords) lo[j] = 0.0;
    solver.set_bounds(lo, hi);
    std::vector<double> w(8, 0.0);
    solver.run(w);
    CHECK(w[6] >= 0.0 && w[7] >= 0.0, "w = %g %g", w[6], w[7]);
    bmrm::Problem decoded = bmrm::Problem::graph_decoder(g, enumerate_labellings);
    CHECK(decoded.positivity_coordinates() == coords, "the decoder's problem agrees");
}

int main() {
    test_settings();
    test_full_and_partitioned_risk();
    test_max_oracle_writers();
    test_progress();
    test_exceptions();
    test_c_errors();
    test_callback_threads();
    test_moves_and_warm_start();
    test_shogun_adapter();
    test_bcfw();
    test_graph();
    test_graph_positivity();
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}

/*
 * The C ABI under attack: first the regression cases of the
 * attack run's findings, then a randomized call-sequence test. With a fixed
 * list of seeds it calls random functions with random (often hostile)
 * arguments on a few live problems and solvers, with callbacks that fail,
 * return NaN or 1e308, re-enter the library or free their own problem, and
 * after every call checks the documented invariants:
 *   - the status is a bmrm_status, and a failure leaves a message that
 *     starts with the function's name;
 *   - out-parameters are untouched on failure;
 *   - after a successful run lower_bound <= primal, and exit is a real exit;
 *     after a failed run bmrm_solver_info says "not run".
 * Settings (environment): BMRM_ATTACK_SEEDS (comma-separated, default
 * 1,2,3,4) and BMRM_ATTACK_CALLS (calls per seed, default 25000). Prints
 * "ATTACK calls <n> failures <f>"; exits 0 when every check passed.
 * Run by tests/attack.rs, also under AddressSanitizer and UBSan.
 */
#include "common.h"

#include <stdbool.h>

/* Distinct addresses no handle can have: an out-parameter still holding one
 * after a failure was not written. */
static double sentinel_storage[4];
#define SENTINEL_PROBLEM ((bmrm_problem *)(void *)&sentinel_storage[0])
#define SENTINEL_SOLVER ((bmrm_solver *)(void *)&sentinel_storage[2])

/* ------------------------------------------------------------------------ */
/* A small generator of our own (the Rust side need not reproduce it). */

static uint64_t rng_state = 1;

static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static size_t below(size_t n) { return n == 0 ? 0 : (size_t)(rnd() % n); }

static double unit(void) { return (double)(rnd() >> 11) * (1.0 / 9007199254740992.0); }

static double pick_double(const double *values, size_t n) { return values[below(n)]; }

/* ------------------------------------------------------------------------ */
/* Callbacks whose behaviour the attack chooses. */

enum mode {
    MODE_OK,
    MODE_FAIL,
    MODE_NAN,
    MODE_HUGE,
    MODE_REENTER,
    MODE_FREE_PROBLEM,
    MODE_COUNT
};

#define MAX_DIM 8
#define NUM_PROBLEMS 4
#define NUM_SOLVERS 4

typedef struct {
    bmrm_problem *p; /* NULL when free */
    size_t dim;
    int kind;   /* 0 risk, 1 partitioned, 2 max-oracle, 3 built-in multiclass, 4 chain, 5 none */
    int mode;   /* enum mode of its callbacks */
    size_t num; /* parts or examples */
    size_t m_tokens;
    int thread_safe;
    volatile int freed_in_callback;
    void *retired_next; /* the list of records a solver may still call with */
} problem_slot;

typedef struct {
    bmrm_solver *s;
    size_t dim;
    int algorithm;
    /* Its callbacks may return NaN or 1e308-scaled subgradients: answers
     * that are no risk, so no certificate can be asked of the run. */
    int garbage;
} solver_slot;

/* A problem's record is the `user` of its callbacks, so it never changes
 * once registered: a solver made from the problem keeps calling with it
 * after the slot holds a new problem (a reused record once gave a callback
 * registered thread-safe the mode of a new one, which freed the new problem
 * from two threads). Replaced records are freed when no solver is left. */
static problem_slot *problems[NUM_PROBLEMS];
static problem_slot *retired = NULL;
static solver_slot solvers[NUM_SOLVERS];
/* The solver a run is under way on (callbacks re-enter it). */
static bmrm_solver *volatile running = NULL;
static long calls = 0;
static long violations = 0;

#define INVARIANT(cond, ...)                                                 \
    do {                                                                     \
        if (!(cond)) {                                                       \
            violations++;                                                    \
            if (violations <= 20) {                                          \
                printf("VIOLATION %s:%d: %s: ", __FILE__, __LINE__, #cond);  \
                printf(__VA_ARGS__);                                         \
                printf("\n");                                                \
            }                                                                \
        }                                                                    \
    } while (0)

/* The status invariant: a known value; a failure names the function. */
static bmrm_status checked(bmrm_status st, const char *function) {
    calls++;
    INVARIANT((int)st >= 0 && (int)st <= 8, "%s returned %d", function, (int)st);
    if (st != BMRM_OK) {
        const char *e = bmrm_last_error();
        INVARIANT(e != NULL && strncmp(e, function, strlen(function)) == 0 &&
                      e[strlen(function)] == ':',
                  "%s failed (%d) with the message '%s'", function, (int)st, e ? e : "(null)");
    }
    return st;
}

#define CALL(f, ...) checked(f(__VA_ARGS__), #f)

/* What a callback does besides its job, by mode. Returns nonzero to fail. */
static int32_t misbehave(problem_slot *slot, double *risk, double *g, size_t dim) {
    switch (slot->mode) {
        case MODE_FAIL:
            return (rnd() & 3) == 0 ? 7 : 0;
        case MODE_NAN:
            if ((rnd() & 3) == 0) {
                if (rnd() & 1) {
                    *risk = NAN;
                } else if (g != NULL && dim > 0) {
                    g[below(dim)] = NAN;
                }
            }
            return 0;
        case MODE_HUGE:
            if (g != NULL)
                for (size_t j = 0; j < dim; j++) g[j] *= 1e308;
            return 0;
        case MODE_REENTER: {
            bmrm_solver *s = running;
            if (s != NULL && !slot->thread_safe) {
                double w[MAX_DIM] = {0};
                bmrm_info info;
                /* Each must be refused: the solver is busy. */
                INVARIANT(CALL(bmrm_solver_run, s, w, dim) != BMRM_OK, "re-entrant run accepted");
                INVARIANT(CALL(bmrm_solver_set_lambda, s, 0.5) != BMRM_OK,
                          "re-entrant set_lambda accepted");
                INVARIANT(CALL(bmrm_solver_info, s, &info) != BMRM_OK,
                          "re-entrant info accepted");
                bmrm_solver_free(s); /* refused; the solver stays */
                calls++;
            }
            return 0;
        }
        case MODE_FREE_PROBLEM:
            /* The solver holds its own reference: freeing the problem from
             * inside a callback must be harmless. */
            if (!slot->thread_safe && slot->p != NULL) {
                bmrm_problem_free(slot->p);
                calls++;
                slot->p = NULL;
                slot->freed_in_callback = 1;
            }
            return 0;
        default:
            return 0;
    }
}

static double target(size_t j) { return 0.3 * (double)j - 1.0; }

static int32_t cb_risk(void *user, const double *w, size_t dim, double *risk, double *g) {
    problem_slot *slot = user;
    double r = 0.0;
    for (size_t j = 0; j < dim; j++) {
        double d = w[j] - target(j);
        r += fabs(d);
        g[j] = d > 0.0 ? 1.0 : -1.0;
    }
    *risk = r;
    return misbehave(slot, risk, g, dim);
}

static int32_t cb_part(void *user, size_t p, const double *w, size_t dim, double *risk,
                       double *g) {
    problem_slot *slot = user;
    size_t j = p % dim;
    double d = w[j] - target(j);
    g[j] = d > 0.0 ? 1.0 : -1.0;
    *risk = fabs(d);
    return misbehave(slot, risk, g, dim);
}

/* Binary hinge as a max-oracle: example i has x_ij = cos(i + 2j), label
 * +-1 by parity; the violating answer has loss 1 and psi = y x. */
static int32_t cb_oracle(void *user, size_t i, const double *w, size_t dim, bmrm_corner *out) {
    problem_slot *slot = user;
    double y = (i % 2) ? 1.0 : -1.0, margin = 0.0;
    for (size_t j = 0; j < dim; j++) margin += y * w[j] * cos((double)(i + 2 * j));
    if (margin < 1.0) {
        bmrm_corner_set_label(out, 1);
        bmrm_corner_set_loss(out, 1.0);
        for (size_t j = 0; j < dim; j++) {
            double v = y * cos((double)(i + 2 * j));
            if (slot->mode == MODE_HUGE) v *= 1e308;
            if (bmrm_corner_add(out, j, v) != BMRM_OK) return 1;
        }
    }
    double risk = 0.0;
    if (slot->mode == MODE_NAN && (rnd() & 3) == 0) bmrm_corner_set_loss(out, NAN);
    int saved = slot->mode;
    if (saved == MODE_NAN || saved == MODE_HUGE) return 0;
    return misbehave(slot, &risk, NULL, dim);
}

static int32_t cb_progress(void *user, const bmrm_info *info) {
    (void)info;
    long *n = user;
    (*n)++;
    return (rnd() % 8) == 0; /* stop now and then */
}

/* ------------------------------------------------------------------------ */
/* The regression cases of the attack run's findings. */

static int32_t huge_oracle(void *user, size_t i, const double *w, size_t dim, bmrm_corner *out) {
    (void)user, (void)i, (void)w, (void)dim, (void)out;
    return 1;
}

static int poison = 0;

static int32_t poisonable_risk(void *user, const double *w, size_t dim, double *risk,
                               double *g) {
    (void)user;
    double r = 0.0;
    for (size_t j = 0; j < dim; j++) {
        double d = w[j] - 1.0;
        r += fabs(d);
        g[j] = (d > 0.0 ? 1.0 : -1.0) * (poison ? 1e308 : 1.0);
    }
    *risk = r;
    return 0;
}

static void regressions(void) {
    bmrm_problem *p = SENTINEL_PROBLEM;
    size_t indptr[3] = {0, 1, 2};
    uint32_t indices[2] = {0, 1};
    uint32_t y[2] = {0, 1};
    size_t lengths[1] = {2};

    /* Finding 4: d + bias wrapped around to a dimension of 0. */
    CHECK_STATUS(bmrm_problem_new_multiclass_csr(indptr, indices, NULL, 2, SIZE_MAX, y, 2, true,
                                                 &p),
                 BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(p == SENTINEL_PROBLEM, "out written on failure");
    CHECK_STATUS(bmrm_problem_new_chain_sparse(indptr, indices, NULL, SIZE_MAX, lengths, 1, y, 2,
                                               true, &p),
                 BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(p == SENTINEL_PROBLEM, "out written on failure");

    /* Finding 6: a NaN w predicts nothing. */
    float x[4] = {1, 0, 0, 1};
    bmrm_problem *mc = NULL;
    CHECK_STATUS(bmrm_problem_new_multiclass(x, 2, 2, y, 2, true, &mc), BMRM_OK);
    double w6[6] = {0, 0, 0, 0, NAN, 0};
    uint32_t labels[2] = {77, 77};
    CHECK_STATUS(bmrm_multiclass_predict(mc, w6, 6, labels, 2), BMRM_ERROR_NON_FINITE);
    CHECK(labels[0] == 77 && labels[1] == 77, "labels written on failure");
    bmrm_problem_free(mc);

    /* Findings 3 and 5: huge thread and example counts, huge dimensions. */
    bmrm_problem *huge = NULL;
    CHECK_STATUS(bmrm_problem_new(4, &huge), BMRM_OK);
    bmrm_solver *s = SENTINEL_SOLVER;
    bmrm_settings st = bmrm_settings_default(BMRM_ALGORITHM_BMRM);
    st.lambda = 0.1;
    st.num_threads = 100000;
    CHECK_STATUS(bmrm_problem_set_risk(huge, poisonable_risk, NULL), BMRM_OK);
    CHECK_STATUS(bmrm_solver_new(huge, &st, &s), BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("num_threads"), "%s", bmrm_last_error());
    size_t counts[2] = {(size_t)1 << 40, SIZE_MAX};
    int algorithms[2] = {BMRM_ALGORITHM_BCFW, BMRM_ALGORITHM_SGD};
    for (int c = 0; c < 2; c++) {
        CHECK_STATUS(bmrm_problem_set_max_oracle(huge, counts[c], huge_oracle, NULL, true),
                     BMRM_OK);
        for (int a = 0; a < 2; a++) {
            st = bmrm_settings_default(algorithms[a]);
            st.lambda = 0.1;
            CHECK_STATUS(bmrm_solver_new(huge, &st, &s), BMRM_ERROR_OUT_OF_MEMORY);
            CHECK(s == SENTINEL_SOLVER, "out written on failure");
        }
        st = bmrm_settings_default(BMRM_ALGORITHM_P_BMRM);
        st.lambda = 0.1;
        st.num_parts = SIZE_MAX;
        bmrm_status got = bmrm_solver_new(huge, &st, &s);
        CHECK(got == BMRM_ERROR_INVALID_ARGUMENT || got == BMRM_ERROR_OUT_OF_MEMORY,
              "num_parts SIZE_MAX: %d %s", (int)got, bmrm_last_error());
    }
    bmrm_problem_free(huge);
    huge = NULL;
    CHECK_STATUS(bmrm_problem_new((size_t)1 << 50, &huge), BMRM_OK);
    if (huge == NULL) return;
    CHECK_STATUS(bmrm_problem_set_risk(huge, poisonable_risk, NULL), BMRM_OK);
    st = bmrm_settings_default(BMRM_ALGORITHM_BMRM);
    st.lambda = 0.1;
    CHECK_STATUS(bmrm_solver_new(huge, &st, &s), BMRM_ERROR_OUT_OF_MEMORY);
    bmrm_problem_free(huge);

    /* Finding 6: a run failing on 1e308 leaves a usable solver whose info
     * says the run failed. */
    bmrm_problem *r = NULL;
    CHECK_STATUS(bmrm_problem_new(3, &r), BMRM_OK);
    CHECK_STATUS(bmrm_problem_set_risk(r, poisonable_risk, NULL), BMRM_OK);
    st = bmrm_settings_default(BMRM_ALGORITHM_BMRM);
    st.lambda = 0.5;
    s = NULL;
    CHECK_STATUS(bmrm_solver_new(r, &st, &s), BMRM_OK);
    double w[3] = {0, 0, 0};
    bmrm_info info;
    CHECK_STATUS(bmrm_solver_run(s, w, 3), BMRM_OK);
    poison = 1;
    memset(w, 0, sizeof w);
    CHECK(bmrm_solver_run(s, w, 3) != BMRM_OK, "1e308 accepted");
    CHECK_STATUS(bmrm_solver_info(s, &info), BMRM_OK);
    CHECK(info.exit == BMRM_EXIT_NOT_RUN, "info after a failed run: exit %d", (int)info.exit);
    poison = 0;
    memset(w, 0, sizeof w);
    CHECK_STATUS(bmrm_solver_run(s, w, 3), BMRM_OK);
    CHECK_STATUS(bmrm_solver_info(s, &info), BMRM_OK);
    /* min 0.25 ||w||^2 + sum |w_j - 1|: w = 1, F = 0.75. */
    CHECK(fabs(info.primal - 0.75) < 1e-3 && info.lower_bound <= info.primal, "F %g lb %g",
          info.primal, info.lower_bound);
    bmrm_solver_free(s);
    bmrm_problem_free(r);
}

/* ------------------------------------------------------------------------ */
/* The random calls. */

static const size_t SIZES[] = {0, 1, 2, 3, 5, 8, SIZE_MAX, SIZE_MAX / 2, (size_t)1 << 40};
#define NSIZES (sizeof SIZES / sizeof SIZES[0])
static const double LAMBDAS[] = {0.1, 1.0, 0.01, 0.0, -1.0, NAN, INFINITY, 1e-300, 1e300, 5.0};
#define NLAMBDAS (sizeof LAMBDAS / sizeof LAMBDAS[0])

static size_t small_or_hostile(size_t good) {
    return (rnd() % 6) == 0 ? SIZES[below(NSIZES)] : good;
}

static void new_problem(void) {
    problem_slot **place = &problems[below(NUM_PROBLEMS)];
    problem_slot *old = *place;
    if (old->p != NULL) {
        bmrm_problem_free(old->p);
        calls++;
        old->p = NULL;
    }
    old->retired_next = retired;
    retired = old;
    problem_slot *slot = calloc(1, sizeof *slot);
    if (slot == NULL) abort();
    *place = slot;
    slot->kind = (int)below(6);
    slot->mode = (rnd() % 3) == 0 ? (int)below(MODE_COUNT) : MODE_OK;
    slot->thread_safe = (slot->mode == MODE_OK || slot->mode == MODE_HUGE) && (rnd() & 1);
    size_t dim = 1 + below(MAX_DIM);
    bmrm_problem *p = SENTINEL_PROBLEM;
    if (slot->kind == 3) {
        size_t m = 2 + below(8), d = 1 + below(3), k = 2 + below(2);
        float xs[10 * 3];
        uint32_t ys[10];
        for (size_t i = 0; i < m * d; i++) xs[i] = (float)(2.0 * unit() - 1.0);
        for (size_t i = 0; i < m; i++) ys[i] = (uint32_t)(i % k);
        if ((rnd() % 10) == 0) ys[below(m)] = (uint32_t)k; /* out of range */
        bool bias = rnd() & 1;
        /* Sizes of arrays must be true (a lie is the caller's undefined
         * behaviour); the class count may be anything. */
        k = small_or_hostile(k);
        bmrm_status st = CALL(bmrm_problem_new_multiclass, xs, m, d, ys, k, bias, &p);
        if (st != BMRM_OK) {
            INVARIANT(p == SENTINEL_PROBLEM, "out written on failure");
            return;
        }
        slot->dim = k * (d + bias);
        slot->num = m;
    } else if (slot->kind == 4) {
        size_t m = 1 + below(3), d = 1 + below(3), k = 2 + below(2);
        size_t lens[3], tokens = 0;
        for (size_t i = 0; i < m; i++) tokens += (lens[i] = 1 + below(3));
        float xs[9 * 3];
        uint32_t ys[9];
        for (size_t i = 0; i < tokens * d; i++) xs[i] = (float)(2.0 * unit() - 1.0);
        for (size_t t = 0; t < tokens; t++) ys[t] = (uint32_t)below(k);
        bool bias = rnd() & 1;
        k = small_or_hostile(k);
        bmrm_status st = CALL(bmrm_problem_new_chain_dense, xs, d, lens, m, ys, k, bias, &p);
        if (st != BMRM_OK) {
            INVARIANT(p == SENTINEL_PROBLEM, "out written on failure");
            return;
        }
        slot->dim = k * (d + bias) + k * k + 2 * k;
        slot->num = m;
        slot->m_tokens = tokens;
    } else {
        size_t asked = small_or_hostile(dim);
        bmrm_status st = CALL(bmrm_problem_new, asked, &p);
        if (st != BMRM_OK) {
            INVARIANT(p == SENTINEL_PROBLEM, "out written on failure");
            return;
        }
        dim = asked;
        /* A max-oracle of 2^40 examples would be evaluated in full by the
         * bundle methods (hours); the sizes BCFW and SGD are refused for are
         * in regressions(). */
        size_t num = slot->kind == 2 ? below(11) : small_or_hostile(1 + below(10));
        if (slot->kind == 0) {
            CALL(bmrm_problem_set_risk, p, (rnd() % 20) ? cb_risk : NULL, slot);
        } else if (slot->kind == 1) {
            CALL(bmrm_problem_set_partitioned_risk, p, num, (rnd() % 20) ? cb_part : NULL, slot,
                 slot->thread_safe);
        } else if (slot->kind == 2) {
            CALL(bmrm_problem_set_max_oracle, p, num, (rnd() % 20) ? cb_oracle : NULL, slot,
                 slot->thread_safe);
        }
        slot->num = num;
    }
    slot->p = p;
    if (slot->kind != 3 && slot->kind != 4) slot->dim = dim;
}

static bmrm_settings random_settings(int algorithm) {
    bmrm_settings s = bmrm_settings_default(algorithm);
    if ((rnd() % 5) == 0) s.algorithm = (int)below(10) - 1;
    s.lambda = (rnd() % 4) ? pick_double(LAMBDAS, 3) : pick_double(LAMBDAS, NLAMBDAS);
    s.max_iterations = 1 + below(8);
    if ((rnd() % 8) == 0) s.tol_rel = pick_double(LAMBDAS, NLAMBDAS);
    if ((rnd() % 8) == 0) s.time_limit_seconds = 0.05 * unit();
    if ((rnd() % 10) == 0) s.num_threads = (uint64_t)SIZES[below(NSIZES)];
    else s.num_threads = below(3);
    if ((rnd() % 6) == 0) s.num_parts = (uint64_t)SIZES[below(NSIZES)];
    if ((rnd() % 10) == 0) s.buffer_size = (uint64_t)SIZES[below(NSIZES)];
    if ((rnd() % 6) == 0) s.sgd_passes = (uint32_t)below(3);
    if ((rnd() % 10) == 0) s.prox_t = pick_double(LAMBDAS, NLAMBDAS);
    if ((rnd() % 10) == 0) s.path_a = unit() * 1.2;
    if ((rnd() % 10) == 0) s.gap_check = (uint32_t)below(3);
    if ((rnd() % 10) == 0) s.sampling = (int)below(5) - 1;
    if ((rnd() % 10) == 0) s.step_type = (int)below(5) - 1;
    s.use_cache = rnd() & 1;
    s.num_passes = 1 + below(6);
    s.seed = rnd();
    if ((rnd() % 10) == 0) {
        s.progress = cb_progress;
        static long progress_calls = 0;
        s.progress_user = &progress_calls;
    }
    return s;
}

static void new_solver(void) {
    solver_slot *slot = &solvers[below(NUM_SOLVERS)];
    problem_slot *ps = problems[below(NUM_PROBLEMS)];
    if (slot->s != NULL) {
        bmrm_solver_free(slot->s);
        calls++;
        slot->s = NULL;
    }
    int algorithm = (int)below(7);
    bmrm_settings s = random_settings(algorithm);
    bmrm_solver *out = SENTINEL_SOLVER;
    bmrm_status st = CALL(bmrm_solver_new, (rnd() % 30) ? ps->p : NULL, &s, &out);
    if (st != BMRM_OK) {
        INVARIANT(out == SENTINEL_SOLVER, "out written on failure");
        return;
    }
    slot->s = out;
    slot->dim = ps->dim;
    slot->algorithm = s.algorithm;
    slot->garbage = ps->mode == MODE_HUGE || ps->mode == MODE_NAN;
}

static void run_solver(void) {
    solver_slot *slot = &solvers[below(NUM_SOLVERS)];
    if (slot->s == NULL) return;
    double w[MAX_DIM + 2];
    for (size_t j = 0; j < MAX_DIM + 2; j++) w[j] = 0.0;
    if ((rnd() % 10) == 0) w[below(MAX_DIM)] = pick_double(LAMBDAS, NLAMBDAS);
    size_t dim = (rnd() % 10) == 0 ? below(MAX_DIM + 2) : slot->dim;
    if (dim > MAX_DIM + 2) return; /* a built-in model larger than the buffer */
    running = slot->s;
    bmrm_status st = CALL(bmrm_solver_run, slot->s, w, dim);
    running = NULL;
    bmrm_info info;
    memset(&info, 0xab, sizeof info);
    bmrm_status si = CALL(bmrm_solver_info, slot->s, &info);
    INVARIANT(si == BMRM_OK, "info after a run: %d", (int)si);
    if (si != BMRM_OK) return;
    if (st == BMRM_OK) {
        INVARIANT(info.exit >= 1 && info.exit <= 5, "exit %d after a successful run",
                  (int)info.exit);
        INVARIANT(slot->garbage ||
                      !(info.lower_bound > info.primal + 1e-9 * (1.0 + fabs(info.primal))),
                  "lower bound %.17g above primal %.17g (algorithm %d)", info.lower_bound,
                  info.primal, slot->algorithm);
    } else if (dim == slot->dim) {
        /* A run refused before it starts (wrong dim) leaves the last info;
         * one that started and failed says "not run". */
        INVARIANT(info.exit == BMRM_EXIT_NOT_RUN, "exit %d after a failed run (%s)",
                  (int)info.exit, bmrm_last_error());
    }
}

static void query_solver(void) {
    solver_slot *slot = &solvers[below(NUM_SOLVERS)];
    bmrm_solver *s = (rnd() % 20) ? slot->s : NULL;
    switch (below(7)) {
        case 0: {
            bmrm_info info, before;
            memset(&info, 0x5a, sizeof info);
            before = info;
            if (CALL(bmrm_solver_info, s, (rnd() % 20) ? &info : NULL) != BMRM_OK)
                INVARIANT(memcmp(&info, &before, sizeof info) == 0, "info written on failure");
            break;
        }
        case 1: {
            size_t n = bmrm_solver_history_len(s);
            calls++;
            bmrm_iteration row, before;
            memset(&row, 0x5a, sizeof row);
            before = row;
            size_t k = (rnd() & 1) ? below(n + 2) : SIZES[below(NSIZES)];
            if (CALL(bmrm_solver_history, s, k, &row) != BMRM_OK)
                INVARIANT(memcmp(&row, &before, sizeof row) == 0, "row written on failure");
            else
                INVARIANT(k < n, "row %zu of %zu given", k, n);
            break;
        }
        case 2:
            CALL(bmrm_solver_set_lambda, s, pick_double(LAMBDAS, NLAMBDAS));
            break;
        case 3: {
            double lo[MAX_DIM], hi[MAX_DIM];
            for (size_t j = 0; j < MAX_DIM; j++) {
                lo[j] = (rnd() & 1) ? -INFINITY : unit() - 0.5;
                hi[j] = (rnd() & 1) ? INFINITY : unit() + (rnd() % 4 == 0 ? -1.0 : 0.0);
            }
            size_t dim = (rnd() % 8) ? slot->dim : below(MAX_DIM + 1);
            if (dim <= MAX_DIM) CALL(bmrm_solver_set_bounds, s, lo, hi, dim);
            break;
        }
        case 4: {
            bmrm_bcfw_info info, before;
            memset(&info, 0x5a, sizeof info);
            before = info;
            if (CALL(bmrm_solver_bcfw_info, s, &info) != BMRM_OK)
                INVARIANT(memcmp(&info, &before, sizeof info) == 0, "bcfw info written");
            bmrm_bcfw_pass pass, pass_before;
            memset(&pass, 0x5a, sizeof pass);
            pass_before = pass;
            if (CALL(bmrm_solver_bcfw_pass, s, below(4), &pass) != BMRM_OK)
                INVARIANT(memcmp(&pass, &pass_before, sizeof pass) == 0, "pass written");
            break;
        }
        case 5: {
            static const double EPS[] = {0.5, 0.1, 1e300, 0.0, -1.0, NAN, INFINITY, 1e-3};
            bmrm_path *path = NULL;
            running = s;
            bmrm_status st =
                CALL(bmrm_solver_bcfw_path, s, EPS[below(8)], pick_double(LAMBDAS, NLAMBDAS),
                     below(4), &path);
            running = NULL;
            if (st == BMRM_OK) {
                size_t n = bmrm_path_len(path);
                calls++;
                for (size_t k = 0; k <= n; k++) {
                    bmrm_breakpoint b;
                    double w[MAX_DIM];
                    size_t dim = slot->dim <= MAX_DIM ? slot->dim : 0;
                    st = CALL(bmrm_path_breakpoint, path, k, &b, dim ? w : NULL, dim);
                    INVARIANT((st == BMRM_OK) == (k < n), "breakpoint %zu of %zu: %d", k, n,
                              (int)st);
                    if (st == BMRM_OK) {
                        INVARIANT(b.gap == b.gap && b.primal == b.primal,
                                  "breakpoint with NaN gap %g or primal %g", b.gap, b.primal);
                    }
                }
                bmrm_path_free(path);
                calls++;
            } else {
                INVARIANT(path == NULL, "path written on failure");
            }
            break;
        }
        default: {
            size_t dim = 0;
            problem_slot *ps = problems[below(NUM_PROBLEMS)];
            if (CALL(bmrm_problem_dim, ps->p, &dim) == BMRM_OK)
                INVARIANT(dim == ps->dim, "dim %zu, made with %zu", dim, ps->dim);
            break;
        }
    }
}

static void predict(void) {
    problem_slot *ps = problems[below(NUM_PROBLEMS)];
    double w[64];
    for (size_t j = 0; j < 64; j++) w[j] = unit() - 0.5;
    if ((rnd() % 4) == 0) w[below(8)] = NAN;
    uint32_t labels[16], before[16];
    for (size_t i = 0; i < 16; i++) labels[i] = before[i] = 0xdead;
    size_t dim = (rnd() % 6) ? ps->dim : below(20);
    if (dim > 64) return;
    bmrm_status st;
    if (rnd() & 1) {
        st = CALL(bmrm_multiclass_predict, ps->p, w, dim, labels, (rnd() % 6) ? ps->num : 3);
    } else {
        st = CALL(bmrm_chain_predict, ps->p, w, dim, labels, (rnd() % 6) ? ps->m_tokens : 3);
    }
    if (st != BMRM_OK)
        INVARIANT(memcmp(labels, before, sizeof labels) == 0, "labels written on failure");
}

/* ------------------------------------------------------------------------ */
/* Graph problems: random examples of 1..3 small graphs (chains, some closed
 * into a cycle) with every node and edge feature kind but grids, then one
 * fault or none. Valid data must give a problem whose positivity
 * coordinates, short run and predictions keep the documented promises; a
 * fault must give the status the docs promise, never a problem. Every
 * handle made here is freed here. */

#define G_MAX_EXAMPLES 3
#define G_MAX_NODES 12
#define G_MAX_EDGES 12
#define G_MAX_DIM 4
#define G_W 512

static long graph_sequences = 0;
static long graph_calls = 0;

enum graph_fault {
    G_VALID,
    G_DUPLICATE_SYMMETRIC,
    G_DUPLICATE_ANTISYMMETRIC,
    G_BAD_NODES,
    G_BAD_EDGES,
    G_NAN_FEATURE,
    G_HUGE_NODE_TYPE,
    G_HUGE_EDGE_TYPE,
    G_UNREAD_POINTER,
    G_FAULT_COUNT
};

typedef struct {
    size_t node_start[G_MAX_EXAMPLES + 1], edge_start[G_MAX_EXAMPLES + 1];
    uint32_t states[G_MAX_NODES], labels[G_MAX_NODES], node_types[G_MAX_NODES];
    uint32_t edges[2 * G_MAX_EDGES], edge_types[G_MAX_EDGES];
    float node_values[G_MAX_NODES * 3 * G_MAX_DIM];
    size_t node_indptr[G_MAX_NODES + 1];
    uint32_t node_indices[G_MAX_NODES * G_MAX_DIM];
    float edge_values[G_MAX_EDGES * G_MAX_DIM];
    size_t symmetric[G_MAX_DIM], antisymmetric[G_MAX_DIM];
    double class_weight[3], loss_table[G_MAX_NODES * 3];
    bmrm_grid grid;
} graph_arrays;

/* Valid data for `a`'s arrays: every node has `k` states, so every edge
 * type's table and every node type's block has one shape. */
static bmrm_graph_data random_graph(graph_arrays *a, uint32_t k) {
    bmrm_graph_data g = bmrm_graph_data_default();
    size_t m = 1 + below(G_MAX_EXAMPLES), n = 0, e = 0;
    for (size_t i = 0; i < m; i++) {
        size_t len = 1 + below(4);
        a->node_start[i] = n;
        a->edge_start[i] = e;
        for (size_t t = 0; t < len; t++, n++) {
            a->states[n] = k;
            a->labels[n] = (uint32_t)below(k);
            a->node_types[n] = (uint32_t)below(2);
            if (t > 0) {
                a->edges[2 * e] = (uint32_t)(t - 1);
                a->edges[2 * e + 1] = (uint32_t)t;
                a->edge_types[e++] = (uint32_t)below(2);
            }
        }
        if (len >= 3 && (rnd() & 1)) { /* a cycle */
            a->edges[2 * e] = (uint32_t)(len - 1);
            a->edges[2 * e + 1] = 0;
            a->edge_types[e++] = (uint32_t)below(2);
        }
    }
    a->node_start[m] = n;
    a->edge_start[m] = e;
    g.num_examples = m;
    g.node_start = a->node_start;
    g.states = a->states;
    g.labels = a->labels;
    g.node_types = (rnd() & 1) ? a->node_types : NULL;
    g.edge_start = a->edge_start;
    g.edges = a->edges;
    g.edge_types = (rnd() & 1) ? a->edge_types : NULL;

    size_t d = 1 + below(G_MAX_DIM);
    g.node_dim = d;
    switch (below(3)) {
        case 0:
            g.node_features = BMRM_NODE_FEATURES_DENSE;
            for (size_t j = 0; j < n * d; j++) a->node_values[j] = (float)(2.0 * unit() - 1.0);
            g.node_values = a->node_values;
            g.bias = rnd() & 1;
            break;
        case 1:
            g.node_features = BMRM_NODE_FEATURES_PER_STATE;
            for (size_t j = 0; j < n * k * d; j++)
                a->node_values[j] = (float)(2.0 * unit() - 1.0);
            g.node_values = a->node_values;
            break;
        default: {
            g.node_features = BMRM_NODE_FEATURES_CSR;
            size_t nnz = 0;
            for (size_t i = 0; i < n; i++) {
                a->node_indptr[i] = nnz;
                for (size_t c = 0; c < d; c++)
                    if (rnd() & 1) {
                        a->node_indices[nnz] = (uint32_t)c;
                        a->node_values[nnz++] = (float)(2.0 * unit() - 1.0);
                    }
            }
            a->node_indptr[n] = nnz;
            g.node_indptr = a->node_indptr;
            g.node_indices = a->node_indices;
            g.node_values = (rnd() & 1) ? a->node_values : NULL;
            g.bias = rnd() & 1;
            break;
        }
    }

    size_t f = 1 + below(G_MAX_DIM);
    switch (below(3)) {
        case 0:
            g.edge_features = BMRM_EDGE_FEATURES_CONSTANT;
            break;
        case 1: {
            g.edge_features = BMRM_EDGE_FEATURES_DENSE;
            g.edge_dim = f;
            for (size_t j = 0; j < e * f; j++) a->edge_values[j] = (float)(2.0 * unit() - 1.0);
            g.edge_values = a->edge_values;
            /* A shuffled 0..f split into a symmetric, an antisymmetric and
             * an unlisted part: distinct entries, disjoint lists. */
            size_t order[G_MAX_DIM];
            for (size_t j = 0; j < f; j++) order[j] = j;
            for (size_t j = f; j > 1; j--) {
                size_t r = below(j), t = order[j - 1];
                order[j - 1] = order[r];
                order[r] = t;
            }
            size_t ns = below(f + 1), na = below(f - ns + 1);
            for (size_t j = 0; j < ns; j++) a->symmetric[j] = order[j];
            for (size_t j = 0; j < na; j++) a->antisymmetric[j] = order[ns + j];
            g.symmetric = ns ? a->symmetric : NULL;
            g.num_symmetric = ns;
            g.antisymmetric = na ? a->antisymmetric : NULL;
            g.num_antisymmetric = na;
            break;
        }
        default:
            g.edge_features = BMRM_EDGE_FEATURES_POTTS;
            g.edge_dim = f;
            for (size_t j = 0; j < e * f; j++) a->edge_values[j] = (float)unit();
            g.edge_values = a->edge_values;
            break;
    }

    if (rnd() & 1) {
        g.loss = BMRM_GRAPH_LOSS_HAMMING;
        g.normalise = rnd() & 1;
        if (rnd() & 1) {
            for (size_t s = 0; s < k; s++) a->class_weight[s] = 0.5 + unit();
            g.class_weight = a->class_weight;
            g.num_class_weights = k;
        }
    } else {
        g.loss = BMRM_GRAPH_LOSS_TABLE;
        for (size_t i = 0; i < n; i++)
            for (size_t s = 0; s < k; s++)
                a->loss_table[i * k + s] = s == a->labels[i] ? 0.0 : 2.0 * unit();
        g.loss_table = a->loss_table;
    }
    g.engine = (rnd() & 1) ? BMRM_ENGINE_AUTO : BMRM_ENGINE_EXHAUSTIVE;
    return g;
}

/* Breaks valid data `g` the way `fault` says; returns the fault made (a
 * fault the data cannot take becomes another or none). */
static int break_graph(bmrm_graph_data *g, graph_arrays *a, int fault) {
    size_t m = g->num_examples, n = a->node_start[m], e = a->edge_start[m];
    switch (fault) {
        case G_DUPLICATE_SYMMETRIC:
        case G_DUPLICATE_ANTISYMMETRIC: {
            /* Any kind of edge features but dense ones must refuse the lists
             * too, so the edges are made dense here. */
            size_t f = g->edge_dim ? g->edge_dim : 1 + below(G_MAX_DIM);
            g->edge_features = BMRM_EDGE_FEATURES_DENSE;
            g->edge_dim = f;
            for (size_t j = 0; j < e * f; j++) a->edge_values[j] = (float)unit();
            g->edge_values = a->edge_values;
            size_t *list = fault == G_DUPLICATE_SYMMETRIC ? a->symmetric : a->antisymmetric;
            size_t len = 2 + below(G_MAX_DIM - 1);
            for (size_t j = 0; j < len; j++) list[j] = below(f);
            list[below(len - 1) + 1] = list[0];
            /* Keep the other list disjoint from this one: empty. */
            if (fault == G_DUPLICATE_SYMMETRIC) {
                g->symmetric = list, g->num_symmetric = len;
                g->antisymmetric = NULL, g->num_antisymmetric = 0;
            } else {
                g->antisymmetric = list, g->num_antisymmetric = len;
                g->symmetric = NULL, g->num_symmetric = 0;
            }
            return fault;
        }
        case G_BAD_NODES:
            switch (below(3)) {
                case 0:
                    if (m >= 2) { /* offsets that run backwards */
                        a->node_start[1] = n + 1;
                        return fault;
                    }
                    /* fall through */
                case 1:
                    a->states[below(n)] = 0;
                    return fault;
                default:
                    a->labels[below(n)] = a->states[0] + (uint32_t)below(3);
                    return fault;
            }
        case G_BAD_EDGES:
            if (e == 0) return break_graph(g, a, G_BAD_NODES);
            switch (below(3)) {
                case 0:
                    if (m >= 2) {
                        a->edge_start[1] = e + 1;
                        return fault;
                    }
                    /* fall through */
                case 1: { /* to a node past its example's */
                    size_t at = below(e), ex = 0;
                    while (a->edge_start[ex + 1] <= at) ex++;
                    size_t len = a->node_start[ex + 1] - a->node_start[ex];
                    a->edges[2 * at + (rnd() & 1)] = (uint32_t)(len + below(3));
                    return fault;
                }
                default: { /* a self loop */
                    size_t at = below(e);
                    a->edges[2 * at + 1] = a->edges[2 * at];
                    return fault;
                }
            }
        case G_NAN_FEATURE: {
            float bad = (rnd() & 1) ? NAN : INFINITY;
            if (g->edge_values != NULL && e > 0 && (rnd() & 1)) {
                a->edge_values[below(e * g->edge_dim)] = bad;
                return fault;
            }
            size_t count = g->node_features == BMRM_NODE_FEATURES_CSR
                               ? (g->node_values ? a->node_indptr[n] : 0)
                               : g->node_features == BMRM_NODE_FEATURES_PER_STATE
                                     ? n * a->states[0] * g->node_dim
                                     : n * g->node_dim;
            if (count == 0) return break_graph(g, a, G_BAD_NODES);
            a->node_values[below(count)] = bad;
            return fault;
        }
        case G_HUGE_NODE_TYPE:
            a->node_types[below(n)] = (rnd() & 1) ? UINT32_MAX : UINT32_MAX - (uint32_t)below(1u << 20);
            g->node_types = a->node_types;
            return fault;
        case G_HUGE_EDGE_TYPE:
            if (e == 0) return break_graph(g, a, G_HUGE_NODE_TYPE);
            a->edge_types[below(e)] = (rnd() & 1) ? UINT32_MAX : UINT32_MAX - (uint32_t)below(1u << 20);
            g->edge_types = a->edge_types;
            return fault;
        case G_UNREAD_POINTER:
            switch (below(3)) {
                case 0: /* grids without displacement edges */
                    g->grids = &a->grid;
                    return fault;
                case 1:
                    if (g->edge_features == BMRM_EDGE_FEATURES_CONSTANT) {
                        g->edge_values = a->edge_values;
                        return fault;
                    }
                    /* fall through */
                default:
                    if (g->loss == BMRM_GRAPH_LOSS_TABLE) {
                        g->class_weight = a->class_weight;
                        g->num_class_weights = 1;
                    } else {
                        g->loss_table = a->loss_table;
                    }
                    return fault;
            }
        default:
            return G_VALID;
    }
}

/* The graph a fault names, for the message check. */
static const char *fault_names(int fault) {
    switch (fault) {
        case G_DUPLICATE_SYMMETRIC: return "symmetric edge feature";
        case G_DUPLICATE_ANTISYMMETRIC: return "antisymmetric edge feature";
        case G_HUGE_NODE_TYPE: return "node_types";
        case G_HUGE_EDGE_TYPE: return "edge_types";
        default: return NULL;
    }
}

/* A short run on a graph problem; its certificate, when it claims one, must
 * be a lower bound on the primal value it reports. */
static void graph_run(bmrm_problem *p, size_t dim, const size_t *coords, size_t count) {
    int algorithms[] = {BMRM_ALGORITHM_BMRM, BMRM_ALGORITHM_PROX_BMRM, BMRM_ALGORITHM_P_BMRM,
                        BMRM_ALGORITHM_BCFW, BMRM_ALGORITHM_SGD};
    bmrm_settings s = bmrm_settings_default(algorithms[below(5)]);
    s.lambda = (rnd() & 1) ? 0.1 : 1.0;
    s.max_iterations = 1 + below(6);
    if (s.algorithm == BMRM_ALGORITHM_BCFW) s.num_passes = 1 + below(3);
    s.num_threads = below(3);
    s.seed = rnd();
    bmrm_solver *solver = SENTINEL_SOLVER;
    if (CALL(bmrm_solver_new, p, &s, &solver) != BMRM_OK) {
        INVARIANT(solver == SENTINEL_SOLVER, "out written on failure");
        return;
    }
    static double w[G_W], lo[G_W], hi[G_W];
    for (size_t j = 0; j < dim; j++) {
        w[j] = 0.0;
        lo[j] = -INFINITY;
        hi[j] = INFINITY;
    }
    if (count > 0 && (rnd() & 1)) {
        for (size_t c = 0; c < count; c++) lo[coords[c]] = 0.0;
        CALL(bmrm_solver_set_bounds, solver, lo, hi, dim);
    }
    bmrm_status st = CALL(bmrm_solver_run, solver, w, dim);
    bmrm_info info;
    INVARIANT(CALL(bmrm_solver_info, solver, &info) == BMRM_OK, "info after a graph run");
    if (st == BMRM_OK) {
        INVARIANT(info.exit >= 1 && info.exit <= 5, "exit %d after a graph run", (int)info.exit);
        INVARIANT(!info.certified ||
                      !(info.lower_bound > info.primal + 1e-9 * (1.0 + fabs(info.primal))),
                  "graph run: lower bound %.17g above primal %.17g (algorithm %d)",
                  info.lower_bound, info.primal, (int)s.algorithm);
    } else {
        INVARIANT(info.exit == BMRM_EXIT_NOT_RUN, "exit %d after a failed graph run (%s)",
                  (int)info.exit, bmrm_last_error());
    }
    bmrm_solver_free(solver);
    calls++;
}

/* Predictions on a graph problem: right arguments and a finite w give a
 * labelling in range; anything else a failure that writes nothing. */
static void graph_predict_checks(bmrm_problem *p, size_t dim, const graph_arrays *a, size_t m) {
    static double w[G_W + 1];
    for (size_t j = 0; j <= G_W; j++) w[j] = unit() - 0.5;
    bool bad_w = (rnd() % 5) == 0;
    if (bad_w) w[below(dim)] = (rnd() & 1) ? NAN : INFINITY;
    size_t example = (rnd() % 6) ? below(m) : (rnd() & 1) ? m : SIZES[below(NSIZES)];
    size_t nodes = example < m ? a->node_start[example + 1] - a->node_start[example] : 1;
    bool bad_nodes = (rnd() % 6) == 0;
    size_t asked_nodes = bad_nodes ? nodes + 1 + below(3) : nodes;
    bool bad_dim = (rnd() % 6) == 0;
    size_t asked_dim = bad_dim ? dim + 1 : dim;
    uint32_t labels[G_MAX_NODES + 4], before[G_MAX_NODES + 4];
    for (size_t i = 0; i < G_MAX_NODES + 4; i++) labels[i] = before[i] = 0xdead;
    bool exact = false;
    bmrm_status st = CALL(bmrm_graph_predict, p, w, asked_dim, example, labels, asked_nodes, &exact);
    bool valid = !bad_w && example < m && !bad_nodes && !bad_dim;
    INVARIANT((st == BMRM_OK) == valid,
              "graph predict: status %d (w %s, example %zu of %zu, nodes %zu of %zu, dim %zu "
              "of %zu): %s",
              (int)st, bad_w ? "non-finite" : "finite", example, m, asked_nodes, nodes,
              asked_dim, dim, bmrm_last_error());
    /* With the right dim, a NaN or infinite weight is refused first, named. */
    if (bad_w && !bad_dim)
        INVARIANT(st == BMRM_ERROR_NON_FINITE && last_error_has("w["),
                  "graph predict with a non-finite w: status %d: %s", (int)st, bmrm_last_error());
    if (st == BMRM_OK) {
        for (size_t i = 0; i < nodes; i++)
            INVARIANT(labels[i] < a->states[a->node_start[example] + i],
                      "predicted state %u of %u", labels[i],
                      a->states[a->node_start[example] + i]);
        INVARIANT(exact, "tiny graph predicted inexactly");
    } else {
        INVARIANT(memcmp(labels, before, sizeof labels) == 0, "labels written on failure");
    }
}

static void graph_sequence(void) {
    long start = calls;
    graph_sequences++;
    graph_arrays a;
    memset(&a, 0, sizeof a);
    uint32_t k = 2 + (uint32_t)below(2);
    bmrm_graph_data g = random_graph(&a, k);
    int fault = G_VALID;
    if (rnd() & 1) fault = break_graph(&g, &a, 1 + (int)below(G_FAULT_COUNT - 1));
    bmrm_problem *p = SENTINEL_PROBLEM;
    if ((rnd() % 20) == 0) {
        INVARIANT(CALL(bmrm_problem_new_graph, NULL, &p) == BMRM_ERROR_NULL_ARGUMENT,
                  "graph data NULL accepted");
        INVARIANT(CALL(bmrm_problem_new_graph, &g, NULL) == BMRM_ERROR_NULL_ARGUMENT,
                  "out NULL accepted");
        INVARIANT(p == SENTINEL_PROBLEM, "out written on failure");
    }
    bmrm_status st = CALL(bmrm_problem_new_graph, &g, &p);
    if (fault != G_VALID) {
        const char *name = fault_names(fault);
        if (name != NULL) /* duplicated lists, type ids of 2^32 - 2^20 or more */
            INVARIANT(st == BMRM_ERROR_INVALID_ARGUMENT, "fault %d (%s): status %d", fault, name,
                      (int)st);
        else
            INVARIANT(st == BMRM_ERROR_INVALID_ARGUMENT || st == BMRM_ERROR_DIMENSION_MISMATCH,
                      "fault %d: status %d", fault, (int)st);
        if (st != BMRM_OK && name != NULL)
            INVARIANT(last_error_has(name), "fault %d: the message '%s' does not name %s",
                      fault, bmrm_last_error(), name);
        if (st == BMRM_OK) {
            bmrm_problem_free(p);
            calls++;
        } else {
            INVARIANT(p == SENTINEL_PROBLEM, "out written on failure");
        }
        graph_calls += calls - start;
        return;
    }
    INVARIANT(st == BMRM_OK, "valid graph refused (%d): %s", (int)st, bmrm_last_error());
    if (st != BMRM_OK) {
        graph_calls += calls - start;
        return;
    }
    size_t dim = 0;
    INVARIANT(CALL(bmrm_problem_dim, p, &dim) == BMRM_OK && dim > 0 && dim <= G_W,
              "graph problem dim %zu", dim);
    if (dim > 0 && dim <= G_W) {
        size_t count = SIZE_MAX;
        INVARIANT(CALL(bmrm_graph_positivity_coordinates, p, NULL, 0, &count) == BMRM_OK,
                  "positivity count: %s", bmrm_last_error());
        bool potts = g.edge_features == BMRM_EDGE_FEATURES_POTTS && a.edge_start[g.num_examples] > 0;
        INVARIANT(potts ? count > 0 && count <= dim : count == 0,
                  "%zu positivity coordinates for edge kind %d", count, (int)g.edge_features);
        size_t coords[G_W], coords_before[G_W];
        for (size_t j = 0; j < G_W; j++) coords[j] = coords_before[j] = 0xbeef;
        if (count > 0 && count <= dim) {
            size_t again = 0;
            INVARIANT(CALL(bmrm_graph_positivity_coordinates, p, coords, count - 1, &again) ==
                          BMRM_ERROR_DIMENSION_MISMATCH,
                      "short capacity accepted");
            INVARIANT(memcmp(coords, coords_before, sizeof coords) == 0,
                      "coords written on failure");
            INVARIANT(CALL(bmrm_graph_positivity_coordinates, p, coords, count + below(3),
                           &again) == BMRM_OK && again == count,
                      "positivity coordinates: %s", bmrm_last_error());
            for (size_t c = 0; c < count; c++)
                INVARIANT(coords[c] < dim && (c == 0 || coords[c - 1] < coords[c]),
                          "positivity coordinate %zu is %zu (dim %zu)", c, coords[c], dim);
        }
        for (int r = (int)below(3); r > 0; r--) graph_predict_checks(p, dim, &a, g.num_examples);
        graph_run(p, dim, coords, count <= dim ? count : 0);
        graph_predict_checks(p, dim, &a, g.num_examples);
    }
    /* The graph functions refuse a problem of another kind. */
    problem_slot *other = problems[below(NUM_PROBLEMS)];
    if (other->p != NULL) {
        size_t count = 77;
        INVARIANT(CALL(bmrm_graph_positivity_coordinates, other->p, NULL, 0, &count) != BMRM_OK &&
                      count == 77,
                  "positivity coordinates of a problem of kind %d", other->kind);
    }
    bmrm_problem_free(p);
    calls++;
    graph_calls += calls - start;
}

static void strings(void) {
    int v = (int)below(20) - 5;
    INVARIANT(bmrm_status_string(v) != NULL, "status string");
    INVARIANT(bmrm_exit_string(v) != NULL, "exit string");
    INVARIANT(bmrm_algorithm_name(v) != NULL, "algorithm name");
    INVARIANT(bmrm_last_error() != NULL, "last error");
    CALL(bmrm_corner_add, NULL, 0, 1.0);
    bmrm_corner_set_loss(NULL, 1.0);
    bmrm_corner_set_label(NULL, 1);
    INVARIANT(bmrm_corner_dense(NULL) == NULL, "dense of NULL");
    calls += 7;
}

static void attack(uint64_t seed, long budget) {
    rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;
    for (int i = 0; i < NUM_PROBLEMS; i++)
        if (problems[i] == NULL && (problems[i] = calloc(1, sizeof *problems[i])) == NULL) abort();
    long start = calls;
    while (calls - start < budget) {
        switch (below(11)) {
            case 0: new_problem(); break;
            case 10: graph_sequence(); break;
            case 1: case 2: new_solver(); break;
            case 3: run_solver(); break;
            case 4: case 5: case 6: query_solver(); break;
            case 7: predict(); break;
            case 8: strings(); break;
            default: {
                /* Free something. */
                if (rnd() & 1) {
                    solver_slot *slot = &solvers[below(NUM_SOLVERS)];
                    bmrm_solver_free(slot->s);
                    slot->s = NULL;
                } else {
                    problem_slot *ps = problems[below(NUM_PROBLEMS)];
                    bmrm_problem_free(ps->p);
                    ps->p = NULL;
                }
                calls++;
            }
        }
    }
    for (int i = 0; i < NUM_SOLVERS; i++) {
        bmrm_solver_free(solvers[i].s);
        solvers[i].s = NULL;
    }
    for (int i = 0; i < NUM_PROBLEMS; i++) {
        bmrm_problem_free(problems[i]->p);
        problems[i]->p = NULL;
    }
    while (retired != NULL) {
        problem_slot *next = retired->retired_next;
        free(retired);
        retired = next;
    }
}

int main(void) {
    regressions();
    const char *seeds = getenv("BMRM_ATTACK_SEEDS");
    const char *per = getenv("BMRM_ATTACK_CALLS");
    long budget = per ? atol(per) : 25000;
    char list[4096];
    snprintf(list, sizeof list, "%s", seeds ? seeds : "1,2,3,4");
    for (char *tok = strtok(list, ","); tok != NULL; tok = strtok(NULL, ",")) {
        attack((uint64_t)strtoull(tok, NULL, 10), budget);
    }
    printf("ATTACK calls %ld violations %ld checks %d failed %d graph_sequences %ld "
           "graph_calls %ld\n",
           calls, violations, checks_passed, checks_failed, graph_sequences, graph_calls);
    return (violations == 0 && checks_failed == 0) ? 0 : 1;
}

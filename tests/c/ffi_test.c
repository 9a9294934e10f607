/*
 * The C ABI from C: every function and every error path. Run by tests/ffi.rs
 * (which compares the RESULT / W lines with the Rust API and the LAYOUT /
 * OFFSET / ENUM lines with the Rust types) and, under valgrind, by
 * scripts/test.sh. Exits 0 when every check passed.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <time.h>

#include "common.h"

/* ---------------------------------------------------------------------- */
/* Layout and enum values, printed for the Rust side to compare.          */

#define LAYOUT(T) printf("LAYOUT %s %zu %zu\n", #T, sizeof(T), _Alignof(T))
#define OFFSET(T, f) printf("OFFSET %s %s %zu\n", #T, #f, offsetof(T, f))
#define ENUM(V) printf("ENUM %s %d\n", #V, (int)(V))

static void print_layout(void) {
    LAYOUT(bmrm_settings);
    LAYOUT(bmrm_info);
    LAYOUT(bmrm_iteration);
    LAYOUT(bmrm_status);
    LAYOUT(bmrm_exit);
    LAYOUT(bmrm_algorithm);
    LAYOUT(bmrm_sampling);
    LAYOUT(bmrm_step_type);
    LAYOUT(bmrm_bcfw_info);
    LAYOUT(bmrm_bcfw_pass);
    LAYOUT(bmrm_breakpoint);
    OFFSET(bmrm_settings, algorithm);
    OFFSET(bmrm_settings, sgd_passes);
    OFFSET(bmrm_settings, lambda);
    OFFSET(bmrm_settings, tol_rel);
    OFFSET(bmrm_settings, tol_abs);
    OFFSET(bmrm_settings, max_iterations);
    OFFSET(bmrm_settings, time_limit_seconds);
    OFFSET(bmrm_settings, num_threads);
    OFFSET(bmrm_settings, seed);
    OFFSET(bmrm_settings, num_parts);
    OFFSET(bmrm_settings, buffer_size);
    OFFSET(bmrm_settings, qp_max_updates);
    OFFSET(bmrm_settings, clean_after);
    OFFSET(bmrm_settings, reuse_planes);
    OFFSET(bmrm_settings, line_search);
    OFFSET(bmrm_settings, weighted_averaging);
    OFFSET(bmrm_settings, use_cache);
    OFFSET(bmrm_settings, prox_t);
    OFFSET(bmrm_settings, prox_k);
    OFFSET(bmrm_settings, cp_radius);
    OFFSET(bmrm_settings, sampling);
    OFFSET(bmrm_settings, step_type);
    OFFSET(bmrm_settings, gap_check);
    OFFSET(bmrm_settings, cache_size);
    OFFSET(bmrm_settings, cache_nu);
    OFFSET(bmrm_settings, cache_factor);
    OFFSET(bmrm_settings, num_passes);
    OFFSET(bmrm_settings, path_a);
    OFFSET(bmrm_settings, progress);
    OFFSET(bmrm_settings, progress_user);
    OFFSET(bmrm_settings, bcfw_iterate);
    OFFSET(bmrm_settings, bcfw_iterate_user);
    OFFSET(bmrm_settings, gap_degree);
    OFFSET(bmrm_settings, early_exact_factor);
    OFFSET(bmrm_settings, multi_plane);
    OFFSET(bmrm_settings, mp_timed);
    OFFSET(bmrm_settings, mp_approx_passes);
    OFFSET(bmrm_settings, mp_inactive_passes);
    OFFSET(bmrm_settings, mp_block_steps);
    OFFSET(bmrm_settings, mini_batch);
    OFFSET(bmrm_info, exit);
    OFFSET(bmrm_info, iterations);
    OFFSET(bmrm_info, oracle_calls);
    OFFSET(bmrm_info, primal);
    OFFSET(bmrm_info, lower_bound);
    OFFSET(bmrm_info, gap);
    OFFSET(bmrm_info, risk);
    OFFSET(bmrm_info, num_planes);
    OFFSET(bmrm_info, active_planes);
    OFFSET(bmrm_info, elapsed_seconds);
    OFFSET(bmrm_info, oracle_seconds);
    OFFSET(bmrm_info, qp_seconds);
    OFFSET(bmrm_info, certified);
    OFFSET(bmrm_iteration, iteration);
    OFFSET(bmrm_iteration, primal);
    OFFSET(bmrm_iteration, lower_bound);
    OFFSET(bmrm_iteration, risk);
    OFFSET(bmrm_iteration, objective);
    OFFSET(bmrm_iteration, num_planes);
    OFFSET(bmrm_iteration, active_planes);
    OFFSET(bmrm_iteration, alpha);
    OFFSET(bmrm_iteration, step_norm);
    OFFSET(bmrm_iteration, elapsed_seconds);
    OFFSET(bmrm_iteration, oracle_seconds);
    OFFSET(bmrm_iteration, qp_seconds);
    OFFSET(bmrm_iteration, oracle_calls);
    ENUM(BMRM_ABI_VERSION);
    ENUM(BMRM_OK);
    ENUM(BMRM_ERROR_NULL_ARGUMENT);
    ENUM(BMRM_ERROR_INVALID_ARGUMENT);
    ENUM(BMRM_ERROR_DIMENSION_MISMATCH);
    ENUM(BMRM_ERROR_NO_ORACLE);
    ENUM(BMRM_ERROR_ORACLE_FAILED);
    ENUM(BMRM_ERROR_NON_FINITE);
    ENUM(BMRM_ERROR_OUT_OF_MEMORY);
    ENUM(BMRM_ERROR_INTERNAL);
    ENUM(BMRM_ERROR_IO);
    ENUM(BMRM_ERROR_RANK_LOST);
    ENUM(BMRM_EXIT_NOT_RUN);
    ENUM(BMRM_EXIT_CONVERGED_REL);
    ENUM(BMRM_EXIT_CONVERGED_ABS);
    ENUM(BMRM_EXIT_MAX_ITERATIONS);
    ENUM(BMRM_EXIT_TIME_LIMIT);
    ENUM(BMRM_EXIT_STOPPED_BY_USER);
    ENUM(BMRM_ALGORITHM_BMRM);
    ENUM(BMRM_ALGORITHM_PROX_BMRM);
    ENUM(BMRM_ALGORITHM_P_BMRM);
    ENUM(BMRM_ALGORITHM_PROX_P_BMRM);
    ENUM(BMRM_ALGORITHM_BCFW);
    ENUM(BMRM_ALGORITHM_SGD);
    ENUM(BMRM_ALGORITHM_CUTTING_PLANE);
    ENUM(BMRM_SAMPLING_UNIFORM);
    ENUM(BMRM_SAMPLING_PERM);
    ENUM(BMRM_SAMPLING_GAP);
    ENUM(BMRM_SAMPLING_MAX_GAP);
    ENUM(BMRM_STEP_FW);
    ENUM(BMRM_STEP_PAIRWISE);
    ENUM(BMRM_STEP_AWAY);
    ENUM(BMRM_STEP_ALL);
    ENUM(BMRM_STEP_EXACT);
}

/* ---------------------------------------------------------------------- */
/* Helpers.                                                               */

static double sentinel_storage[4];
#define SENTINEL_PROBLEM ((bmrm_problem *)(void *)sentinel_storage)
#define SENTINEL_SOLVER ((bmrm_solver *)(void *)sentinel_storage)

static bmrm_problem *problem_with_risk(size_t dim, bmrm_risk_fn f, void *user) {
    bmrm_problem *p = NULL;
    CHECK_STATUS(bmrm_problem_new(dim, &p), BMRM_OK);
    CHECK_STATUS(bmrm_problem_set_risk(p, f, user), BMRM_OK);
    return p;
}

static bmrm_problem *problem_with_oracle(const mc_data *data, bmrm_max_oracle_fn f,
                                         int thread_safe) {
    bmrm_problem *p = NULL;
    CHECK_STATUS(bmrm_problem_new(data->k * data->d, &p), BMRM_OK);
    CHECK_STATUS(bmrm_problem_set_max_oracle(p, data->m, f, (void *)data, thread_safe != 0),
                 BMRM_OK);
    return p;
}

static bmrm_settings settings_for(bmrm_algorithm a, double lambda) {
    bmrm_settings s = bmrm_settings_default(a);
    s.lambda = lambda;
    return s;
}

/* Runs a fresh solver from w = 0 and returns its status; w and info out. */
static bmrm_status solve(const bmrm_problem *p, const bmrm_settings *s, double *w, size_t dim,
                         bmrm_info *info) {
    bmrm_solver *solver = NULL;
    bmrm_status st = bmrm_solver_new(p, s, &solver);
    if (st != BMRM_OK) return st;
    for (size_t j = 0; j < dim; j++) w[j] = 0.0;
    st = bmrm_solver_run(solver, w, dim);
    CHECK_STATUS(bmrm_solver_info(solver, info), BMRM_OK);
    bmrm_solver_free(solver);
    return st;
}

static void print_result(const char *name, const bmrm_settings *s, bmrm_status st,
                         const bmrm_info *info, const double *w, size_t dim) {
    printf("RESULT %s %d %d %d %llu %.17g %.17g\n", name, (int)s->algorithm, (int)st,
           (int)info->exit, (unsigned long long)info->iterations, info->primal,
           info->lower_bound);
    printf("W %s %d", name, (int)s->algorithm);
    for (size_t j = 0; j < dim; j++) printf(" %.17g", w[j]);
    printf("\n");
}

static double l1_objective(const double *w, double lambda) {
    double f = 0.0;
    for (size_t j = 0; j < L1_DIM; j++) f += 0.5 * lambda * w[j] * w[j] + fabs(w[j] - L1_C[j]);
    return f;
}

/* ---------------------------------------------------------------------- */
/* Strings, versions, the last error.                                     */

static void *other_thread(void *arg) {
    const char **seen = arg;
    seen[0] = strdup(bmrm_last_error());
    bmrm_problem *p = SENTINEL_PROBLEM;
    bmrm_problem_new(0, &p); /* fails on this thread only */
    seen[1] = strdup(bmrm_last_error());
    return NULL;
}

static void test_strings_and_last_error(void) {
    CHECK(strcmp(bmrm_last_error(), "") == 0, "no failure yet, got '%s'", bmrm_last_error());
    CHECK(bmrm_abi_version() == BMRM_ABI_VERSION, "abi %u", bmrm_abi_version());
    const char *v = bmrm_version();
    CHECK(v != NULL && strlen(v) >= 5 && strchr(v, '.') != NULL, "version '%s'", v);
    printf("VERSION %s\n", v);
    for (int s = 0; s <= BMRM_ERROR_RANK_LOST; s++) {
        const char *t = bmrm_status_string((bmrm_status)s);
        CHECK(t != NULL && strlen(t) > 0 && strcmp(t, "unknown status") != 0, "status %d", s);
    }
    CHECK(strcmp(bmrm_status_string(BMRM_OK), "ok") == 0, "ok");
    CHECK(strcmp(bmrm_status_string((bmrm_status)99), "unknown status") == 0, "99");
    CHECK(strcmp(bmrm_status_string((bmrm_status)-1), "unknown status") == 0, "-1");
    for (int e = 0; e <= 5; e++) {
        CHECK(strcmp(bmrm_exit_string((bmrm_exit)e), "unknown exit") != 0, "exit %d", e);
    }
    CHECK(strcmp(bmrm_exit_string((bmrm_exit)6), "unknown exit") == 0, "exit 6");
    CHECK(strcmp(bmrm_algorithm_name(BMRM_ALGORITHM_PROX_P_BMRM), "Prox-P-BMRM") == 0, "name");
    CHECK(strcmp(bmrm_algorithm_name((bmrm_algorithm)7), "unknown algorithm") == 0, "name 7");

    /* A failure sets this thread's message; successes leave it. */
    bmrm_problem *p = SENTINEL_PROBLEM;
    CHECK_STATUS(bmrm_problem_new(0, &p), BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(p == SENTINEL_PROBLEM, "out written on failure");
    CHECK(last_error_has("bmrm_problem_new") && last_error_has("dim"), "'%s'",
          bmrm_last_error());
    char *mine = strdup(bmrm_last_error());
    CHECK(bmrm_abi_version() == BMRM_ABI_VERSION, "abi");
    CHECK(strcmp(bmrm_last_error(), mine) == 0, "a success changed the message");

    /* Thread-local: another thread sees "" and its own failure only. */
    const char *seen[2] = {NULL, NULL};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, other_thread, seen) == 0, "pthread_create");
    pthread_join(t, NULL);
    CHECK(seen[0] != NULL && strcmp(seen[0], "") == 0, "other thread saw '%s'", seen[0]);
    CHECK(seen[1] != NULL && strstr(seen[1], "bmrm_problem_new") != NULL, "'%s'", seen[1]);
    CHECK(strcmp(bmrm_last_error(), mine) == 0, "another thread changed this thread's message");
    free((void *)seen[0]);
    free((void *)seen[1]);
    free(mine);
}

/* ---------------------------------------------------------------------- */
/* Problems.                                                              */

static void test_problem_errors(void) {
    bmrm_problem *p = SENTINEL_PROBLEM;
    CHECK_STATUS(bmrm_problem_new(3, NULL), BMRM_ERROR_NULL_ARGUMENT);
    CHECK(last_error_has("out"), "'%s'", bmrm_last_error());
    CHECK_STATUS(bmrm_problem_new(SIZE_MAX, &p), BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(p == SENTINEL_PROBLEM, "out written on failure");

    CHECK_STATUS(bmrm_problem_set_risk(NULL, l1_risk, NULL), BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_problem_set_partitioned_risk(NULL, 2, l1_part, NULL, true),
                 BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_problem_set_max_oracle(NULL, 2, mc_oracle, NULL, true),
                 BMRM_ERROR_NULL_ARGUMENT);

    CHECK_STATUS(bmrm_problem_new(L1_DIM, &p), BMRM_OK);
    CHECK(p != NULL && p != SENTINEL_PROBLEM, "problem");
    CHECK_STATUS(bmrm_problem_set_risk(p, NULL, NULL), BMRM_ERROR_NULL_ARGUMENT);
    CHECK(last_error_has("risk function"), "'%s'", bmrm_last_error());
    CHECK_STATUS(bmrm_problem_set_partitioned_risk(p, 3, NULL, NULL, true),
                 BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_problem_set_partitioned_risk(p, 0, l1_part, NULL, true),
                 BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("num_parts"), "'%s'", bmrm_last_error());
    CHECK_STATUS(bmrm_problem_set_max_oracle(p, 5, NULL, NULL, true), BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_problem_set_max_oracle(p, 0, mc_oracle, NULL, true),
                 BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("num_examples"), "'%s'", bmrm_last_error());

    /* No oracle yet: the solver says so. */
    bmrm_settings s = settings_for(BMRM_ALGORITHM_BMRM, 1.0);
    bmrm_solver *solver = SENTINEL_SOLVER;
    CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_ERROR_NO_ORACLE);
    CHECK(solver == SENTINEL_SOLVER, "out written on failure");
    CHECK(last_error_has("no oracle"), "'%s'", bmrm_last_error());

    bmrm_problem_free(p);
    bmrm_problem_free(NULL);
}

/* ---------------------------------------------------------------------- */
/* Settings.                                                              */

static void test_settings(void) {
    for (int a = 0; a <= 6; a++) {
        bmrm_settings s = bmrm_settings_default((bmrm_algorithm)a);
        CHECK((int)s.algorithm == a, "algorithm %d", a);
        CHECK(s.lambda == 0.0, "lambda has no default");
        CHECK(s.tol_rel == 1e-3 && s.tol_abs == 0.0, "tolerances");
        CHECK(s.max_iterations == 0 && s.time_limit_seconds == 0.0, "limits");
        CHECK(s.num_threads == 0 && s.num_parts == 0 && s.seed == 0, "threads, parts, seed");
        CHECK(s.buffer_size == 2000 && s.clean_after == 10 && s.reuse_planes == 1, "bundle");
        CHECK(s.qp_max_updates == 10000000, "qp_max_updates");
        CHECK(s.prox_t == 100.0 && s.prox_k == 0.0 && s.cp_radius == 0.0, "prox, cp");
        CHECK(s.sgd_passes == (a == BMRM_ALGORITHM_SGD ? 5u : 0u), "sgd_passes %u", s.sgd_passes);
        CHECK(s.sampling == BMRM_SAMPLING_GAP && s.step_type == BMRM_STEP_FW, "bcfw enums");
        CHECK(s.gap_check == 10 && s.line_search == 1 && s.weighted_averaging == 0, "bcfw");
        CHECK(s.use_cache == 0 && s.cache_size == 50, "cache");
        CHECK(s.cache_nu == 0.01 && s.cache_factor == 0.25, "cache constants");
        CHECK(s.num_passes == 0 && s.path_a == 0.9, "passes, path");
        CHECK(s.progress == NULL && s.progress_user == NULL, "progress");
    }

    bmrm_problem *p = problem_with_risk(L1_DIM, l1_risk, NULL);
    bmrm_solver *solver = SENTINEL_SOLVER;
    bmrm_settings s = settings_for(BMRM_ALGORITHM_BMRM, 1.0);

    CHECK_STATUS(bmrm_solver_new(NULL, &s, &solver), BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_solver_new(p, NULL, &solver), BMRM_ERROR_NULL_ARGUMENT);
    CHECK(last_error_has("settings"), "'%s'", bmrm_last_error());
    CHECK_STATUS(bmrm_solver_new(p, &s, NULL), BMRM_ERROR_NULL_ARGUMENT);

    const double bad_lambdas[] = {0.0, -1.0, NAN, INFINITY};
    for (size_t i = 0; i < 4; i++) {
        s = settings_for(BMRM_ALGORITHM_BMRM, bad_lambdas[i]);
        CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_ERROR_INVALID_ARGUMENT);
        CHECK(last_error_has("lambda"), "'%s'", bmrm_last_error());
    }
    s = bmrm_settings_default(BMRM_ALGORITHM_BMRM); /* lambda left at 0 */
    CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_ERROR_INVALID_ARGUMENT);

    s = bmrm_settings_default((bmrm_algorithm)42);
    s.lambda = 1.0;
    CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("algorithm = 42"), "'%s'", bmrm_last_error());
    s = settings_for(BMRM_ALGORITHM_BMRM, 1.0);
    s.algorithm = (bmrm_algorithm)-3;
    CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_ERROR_INVALID_ARGUMENT);

    s = settings_for(BMRM_ALGORITHM_BCFW, 1.0); /* a full risk: BCFW needs a max-oracle */
    CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_ERROR_NO_ORACLE);
    CHECK(last_error_has("BCFW"), "'%s'", bmrm_last_error());

    s = settings_for(BMRM_ALGORITHM_BMRM, 1.0);
    s.sampling = (bmrm_sampling)4;
    CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("sampling"), "'%s'", bmrm_last_error());
    s = settings_for(BMRM_ALGORITHM_BMRM, 1.0);
    s.step_type = (bmrm_step_type)-1;
    CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("step_type"), "'%s'", bmrm_last_error());

    s = settings_for(BMRM_ALGORITHM_BMRM, 1.0);
    s.tol_rel = 0.0;
    CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("stopping rule"), "'%s'", bmrm_last_error());
    s = settings_for(BMRM_ALGORITHM_BMRM, 1.0);
    s.tol_rel = -1e-3;
    CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_ERROR_INVALID_ARGUMENT);
    s = settings_for(BMRM_ALGORITHM_BMRM, 1.0);
    s.buffer_size = 1;
    CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("buffer_size"), "'%s'", bmrm_last_error());
    s = settings_for(BMRM_ALGORITHM_PROX_BMRM, 1.0);
    s.prox_t = 0.0;
    CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_ERROR_INVALID_ARGUMENT);
    s = settings_for(BMRM_ALGORITHM_SGD, 1.0);
    s.sgd_passes = 0;
    CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_ERROR_INVALID_ARGUMENT);

    /* The algorithm needs an oracle level the problem lacks. */
    s = settings_for(BMRM_ALGORITHM_P_BMRM, 1.0);
    CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_ERROR_NO_ORACLE);
    CHECK(last_error_has("P-BMRM") && last_error_has("full risk"), "'%s'", bmrm_last_error());
    s = settings_for(BMRM_ALGORITHM_PROX_P_BMRM, 1.0);
    CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_ERROR_NO_ORACLE);
    CHECK(solver == SENTINEL_SOLVER, "out written on failure");

    /* A partitioned risk with another number of parts than asked for. */
    CHECK_STATUS(bmrm_problem_set_partitioned_risk(p, L1_DIM, l1_part, NULL, true), BMRM_OK);
    s = settings_for(BMRM_ALGORITHM_P_BMRM, 1.0);
    s.num_parts = 3;
    CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("num_parts"), "'%s'", bmrm_last_error());
    s.num_parts = 0;
    CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_OK); /* the oracle was replaced */
    bmrm_solver_free(solver);
    bmrm_problem_free(p);

    /* A dimension too large for memory is an error, not a crash. */
    if (SIZE_MAX > 0xffffffffu) {
        p = problem_with_risk((size_t)1 << 59, l1_risk, NULL);
        s = settings_for(BMRM_ALGORITHM_BMRM, 1.0);
        solver = SENTINEL_SOLVER;
        CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_ERROR_OUT_OF_MEMORY);
        CHECK(solver == SENTINEL_SOLVER, "out written on failure");
        bmrm_problem_free(p);
    }
}

/* ---------------------------------------------------------------------- */
/* Solutions of the L1 problem, full and partitioned, every solver.        */

static void test_l1_solutions(void) {
    const double lambda = 0.8;
    double w[L1_DIM];
    bmrm_info info;
    bmrm_problem *full = problem_with_risk(L1_DIM, l1_risk, NULL);
    bmrm_problem *parts = NULL;
    CHECK_STATUS(bmrm_problem_new(L1_DIM, &parts), BMRM_OK);
    CHECK_STATUS(bmrm_problem_set_partitioned_risk(parts, L1_DIM, l1_part, NULL, false), BMRM_OK);

    double w_star[L1_DIM];
    for (size_t j = 0; j < L1_DIM; j++) {
        double c = L1_C[j], r = 1.0 / lambda;
        w_star[j] = c > r ? r : (c < -r ? -r : c);
    }
    const double f_star = l1_objective(w_star, lambda);

    const bmrm_algorithm full_algorithms[] = {BMRM_ALGORITHM_BMRM, BMRM_ALGORITHM_PROX_BMRM};
    for (size_t a = 0; a < 2; a++) {
        bmrm_settings s = settings_for(full_algorithms[a], lambda);
        s.tol_rel = 0.0;
        s.tol_abs = 1e-9;
        s.max_iterations = 2000;
        bmrm_status st = solve(full, &s, w, L1_DIM, &info);
        CHECK_STATUS(st, BMRM_OK);
        print_result("l1", &s, st, &info, w, L1_DIM);
        CHECK(info.exit == BMRM_EXIT_CONVERGED_ABS, "%s: exit %s",
              bmrm_algorithm_name(s.algorithm), bmrm_exit_string(info.exit));
        CHECK(info.lower_bound <= f_star + 1e-12 && info.primal >= f_star - 1e-12,
              "%s: bounds %.17g %.17g around %.17g", bmrm_algorithm_name(s.algorithm),
              info.lower_bound, info.primal, f_star);
        CHECK(fabs(info.primal - l1_objective(w, lambda)) <= 1e-12, "primal is F(w)");
        for (size_t j = 0; j < L1_DIM; j++) {
            CHECK(fabs(w[j] - w_star[j]) < 1e-6, "%s: w[%zu] = %g, want %g",
                  bmrm_algorithm_name(s.algorithm), j, w[j], w_star[j]);
        }
    }

    /* The cutting-plane baseline, to 1 % (it is slow: the baseline). */
    bmrm_settings cp = settings_for(BMRM_ALGORITHM_CUTTING_PLANE, lambda);
    cp.max_iterations = 500;
    cp.tol_rel = 1e-2;
    bmrm_status st = solve(full, &cp, w, L1_DIM, &info);
    CHECK_STATUS(st, BMRM_OK);
    print_result("l1cp", &cp, st, &info, w, L1_DIM);
    CHECK(info.exit == BMRM_EXIT_CONVERGED_REL, "cutting plane: exit %s",
          bmrm_exit_string(info.exit));
    CHECK(info.lower_bound <= f_star + 1e-12 && info.primal >= f_star - 1e-12, "cp bounds");

    /* SGD alone: a valid certificate, not an exact optimum. */
    bmrm_settings sgd = settings_for(BMRM_ALGORITHM_SGD, lambda);
    sgd.sgd_passes = 20;
    st = solve(parts, &sgd, w, L1_DIM, &info);
    CHECK_STATUS(st, BMRM_OK);
    print_result("l1parts", &sgd, st, &info, w, L1_DIM);
    CHECK(info.lower_bound <= f_star + 1e-12 && info.primal >= f_star - 1e-12, "sgd bounds");

    const bmrm_algorithm part_algorithms[] = {BMRM_ALGORITHM_BMRM, BMRM_ALGORITHM_P_BMRM,
                                              BMRM_ALGORITHM_PROX_P_BMRM};
    for (size_t a = 0; a < 3; a++) {
        bmrm_settings s = settings_for(part_algorithms[a], lambda);
        s.tol_rel = 0.0;
        s.tol_abs = 1e-9;
        s.max_iterations = 2000;
        st = solve(parts, &s, w, L1_DIM, &info);
        CHECK_STATUS(st, BMRM_OK);
        print_result("l1parts", &s, st, &info, w, L1_DIM);
        for (size_t j = 0; j < L1_DIM; j++) {
            CHECK(fabs(w[j] - w_star[j]) < 1e-6, "%s parts: w[%zu] = %g, want %g",
                  bmrm_algorithm_name(s.algorithm), j, w[j], w_star[j]);
        }
    }
    bmrm_problem_free(full);
    bmrm_problem_free(parts);
}

/* ---------------------------------------------------------------------- */
/* Runs: argument errors, the problem freed first, info and history.      */

static void test_run_info_history(void) {
    const double lambda = 0.8;
    double w[L1_DIM + 1];
    bmrm_problem *p = problem_with_risk(L1_DIM, l1_risk, NULL);
    bmrm_settings s = settings_for(BMRM_ALGORITHM_BMRM, lambda);
    s.tol_rel = 1e-9;
    bmrm_solver *solver = NULL;
    CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_OK);
    bmrm_problem_free(p); /* the solver keeps its own reference */

    bmrm_info info;
    memset(&info, 0xab, sizeof info);
    CHECK_STATUS(bmrm_solver_info(solver, &info), BMRM_OK);
    CHECK(info.exit == BMRM_EXIT_NOT_RUN && info.iterations == 0, "before the first run");
    CHECK(bmrm_solver_history_len(solver) == 0, "no history before the first run");

    for (size_t j = 0; j <= L1_DIM; j++) w[j] = 0.25;
    CHECK_STATUS(bmrm_solver_run(NULL, w, L1_DIM), BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_solver_run(solver, NULL, L1_DIM), BMRM_ERROR_NULL_ARGUMENT);
    CHECK(last_error_has("w is NULL"), "'%s'", bmrm_last_error());
    CHECK_STATUS(bmrm_solver_run(solver, w, 0), BMRM_ERROR_DIMENSION_MISMATCH);
    CHECK_STATUS(bmrm_solver_run(solver, w, L1_DIM + 1), BMRM_ERROR_DIMENSION_MISMATCH);
    CHECK(last_error_has("dim = 8") && last_error_has("7"), "'%s'", bmrm_last_error());
    w[2] = NAN;
    CHECK_STATUS(bmrm_solver_run(solver, w, L1_DIM), BMRM_ERROR_NON_FINITE);
    CHECK(last_error_has("w[2]"), "'%s'", bmrm_last_error());
    CHECK(isnan(w[2]) && w[0] == 0.25, "w changed by an argument error");
    w[2] = INFINITY;
    CHECK_STATUS(bmrm_solver_run(solver, w, L1_DIM), BMRM_ERROR_NON_FINITE);

    for (size_t j = 0; j < L1_DIM; j++) w[j] = 0.0;
    CHECK_STATUS(bmrm_solver_run(solver, w, L1_DIM), BMRM_OK);

    CHECK_STATUS(bmrm_solver_info(NULL, &info), BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_solver_info(solver, NULL), BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_solver_info(solver, &info), BMRM_OK);
    CHECK(info.exit == BMRM_EXIT_CONVERGED_REL, "exit %s", bmrm_exit_string(info.exit));
    CHECK(info.gap == info.primal - info.lower_bound, "gap");
    CHECK(info.gap <= 1e-9 * fabs(info.primal), "converged");
    CHECK(info.oracle_calls >= info.iterations && info.iterations > 0, "counts");
    CHECK(info.num_planes >= info.active_planes && info.active_planes > 0, "planes");
    CHECK(info.elapsed_seconds >= info.oracle_seconds && info.oracle_seconds >= 0.0 &&
              info.qp_seconds >= 0.0,
          "times");
    CHECK(fabs(info.primal - l1_objective(w, lambda)) < 1e-12 && info.risk > 0.0, "primal");

    size_t n = bmrm_solver_history_len(solver);
    CHECK(n == info.iterations, "history has %zu rows for %llu iterations", n,
          (unsigned long long)info.iterations);
    bmrm_iteration row, prev;
    memset(&prev, 0, sizeof prev);
    for (size_t k = 0; k < n; k++) {
        CHECK_STATUS(bmrm_solver_history(solver, k, &row), BMRM_OK);
        CHECK(row.iteration == k + 1, "row %zu is iteration %llu", k,
              (unsigned long long)row.iteration);
        CHECK(row.primal <= row.objective + 1e-15 && row.lower_bound <= row.primal, "row %zu", k);
        CHECK(row.risk >= 0.0 && row.step_norm >= 0.0 && row.alpha == 0.0, "row %zu", k);
        if (k > 0) {
            CHECK(row.primal <= prev.primal && row.lower_bound >= prev.lower_bound,
                  "row %zu: best values not monotone", k);
            CHECK(row.oracle_calls > prev.oracle_calls, "oracle calls");
            CHECK(row.elapsed_seconds >= prev.elapsed_seconds, "time");
        }
        prev = row;
    }
    CHECK(prev.primal == info.primal && prev.lower_bound == info.lower_bound, "last row");
    printf("HISTORY l1 %zu %.17g %.17g\n", n, prev.primal, prev.lower_bound);

    bmrm_iteration untouched;
    memset(&untouched, 0x5a, sizeof untouched);
    row = untouched;
    CHECK_STATUS(bmrm_solver_history(solver, n, &row), BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("k = "), "'%s'", bmrm_last_error());
    CHECK(memcmp(&row, &untouched, sizeof row) == 0, "out written on failure");
    CHECK_STATUS(bmrm_solver_history(solver, 0, NULL), BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_solver_history(NULL, 0, &row), BMRM_ERROR_NULL_ARGUMENT);
    CHECK(bmrm_solver_history_len(NULL) == 0, "history_len(NULL)");
    CHECK(last_error_has("bmrm_solver_history_len"), "'%s'", bmrm_last_error());

    /* set_lambda: validation, and the new lambda is used. */
    const double bad_lambdas[] = {0.0, -1.0, NAN, INFINITY};
    for (size_t i = 0; i < 4; i++) {
        CHECK_STATUS(bmrm_solver_set_lambda(solver, bad_lambdas[i]), BMRM_ERROR_INVALID_ARGUMENT);
        CHECK(last_error_has("bmrm_solver_set_lambda") && last_error_has("lambda"), "'%s'",
              bmrm_last_error());
    }
    CHECK_STATUS(bmrm_solver_set_lambda(NULL, 1.0), BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_solver_set_lambda(solver, 0.25), BMRM_OK);
    CHECK_STATUS(bmrm_solver_run(solver, w, L1_DIM), BMRM_OK);
    CHECK_STATUS(bmrm_solver_info(solver, &info), BMRM_OK);
    for (size_t j = 0; j < L1_DIM; j++) {
        double c = L1_C[j], r = 1.0 / 0.25;
        double want = c > r ? r : (c < -r ? -r : c);
        CHECK(fabs(w[j] - want) < 1e-5, "lambda 0.25: w[%zu] = %g, want %g", j, w[j], want);
    }

    bmrm_solver_free(solver);
    bmrm_solver_free(NULL);
}

/* ---------------------------------------------------------------------- */
/* Failing callbacks: non-zero returns, NaN and Inf.                      */

typedef struct {
    int calls, fail_at, mode;  /* mode: 0 fail, 1 NaN risk, 2 Inf subgradient, 3 Inf risk */
    double lambda;
    double best_f, best_w[L1_DIM];
} failing_risk;

static int32_t l1_failing(void *user, const double *w, size_t dim, double *risk, double *g) {
    failing_risk *f = user;
    f->calls++;
    if (f->calls == f->fail_at) {
        l1_risk(NULL, w, dim, risk, g);
        switch (f->mode) {
        case 0: return 3;
        case 1: *risk = NAN; return 0;
        case 2: g[1] = INFINITY; return 0;
        default: *risk = -INFINITY; return 0;
        }
    }
    l1_risk(NULL, w, dim, risk, g);
    double obj = *risk;
    for (size_t j = 0; j < dim; j++) obj += 0.5 * f->lambda * w[j] * w[j];
    if (obj < f->best_f) { /* the best point evaluated successfully */
        f->best_f = obj;
        memcpy(f->best_w, w, sizeof f->best_w);
    }
    return 0;
}

static void test_failing_risk(void) {
    const char *wanted[] = {"risk callback returned 3", "risk is NaN", "subgradient[1] is inf",
                            "risk is -inf"};
    const bmrm_status statuses[] = {BMRM_ERROR_ORACLE_FAILED, BMRM_ERROR_NON_FINITE,
                                    BMRM_ERROR_NON_FINITE, BMRM_ERROR_NON_FINITE};
    for (int mode = 0; mode < 4; mode++) {
        failing_risk f = {0, 4, mode, 0.8, INFINITY, {0}};
        bmrm_problem *p = problem_with_risk(L1_DIM, l1_failing, &f);
        bmrm_settings s = settings_for(BMRM_ALGORITHM_BMRM, 0.8);
        s.tol_rel = 1e-12;
        bmrm_solver *solver = NULL;
        CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_OK);
        double w[L1_DIM] = {0};
        CHECK_STATUS(bmrm_solver_run(solver, w, L1_DIM), statuses[mode]);
        printf("ERROR risk mode %d: %s\n", mode, bmrm_last_error());
        CHECK(last_error_has(wanted[mode]) && last_error_has("at iteration 3"),
              "mode %d: '%s'", mode, bmrm_last_error());
        CHECK(last_error_has("bmrm_solver_run"), "'%s'", bmrm_last_error());
        CHECK(memcmp(w, f.best_w, sizeof w) == 0, "mode %d: w is not the best valid iterate",
              mode);
        bmrm_info info;
        CHECK_STATUS(bmrm_solver_info(solver, &info), BMRM_OK);
        CHECK(info.exit == BMRM_EXIT_NOT_RUN && info.primal == f.best_f,
              "mode %d: info after a failure: exit %d primal %g best %g", mode, (int)info.exit,
              info.primal, f.best_f);
        /* The solver is still usable after a failed run. */
        f.fail_at = -1;
        CHECK_STATUS(bmrm_solver_run(solver, w, L1_DIM), BMRM_OK);
        bmrm_solver_free(solver);
        bmrm_problem_free(p);
    }
}

typedef struct {
    atomic_int calls_of_part; /* calls for part 3 */
    int mode;                 /* 0 return 5, 1 NaN in the subgradient */
} failing_parts;

static int32_t l1_part_failing(void *user, size_t p, const double *w, size_t dim, double *risk,
                               double *g) {
    failing_parts *f = user;
    int32_t rc = l1_part(NULL, p, w, dim, risk, g);
    if (p == 3 && atomic_fetch_add(&f->calls_of_part, 1) + 1 == 2) {
        if (f->mode == 0) return 5;
        g[2] = NAN;
    }
    return rc;
}

static void test_failing_parts(void) {
    const char *wanted[] = {"partial-risk callback returned 5", "subgradient[2] is NaN"};
    const bmrm_status statuses[] = {BMRM_ERROR_ORACLE_FAILED, BMRM_ERROR_NON_FINITE};
    for (int mode = 0; mode < 2; mode++) {
        failing_parts f;
        atomic_init(&f.calls_of_part, 0);
        f.mode = mode;
        bmrm_problem *p = NULL;
        CHECK_STATUS(bmrm_problem_new(L1_DIM, &p), BMRM_OK);
        CHECK_STATUS(bmrm_problem_set_partitioned_risk(p, L1_DIM, l1_part_failing, &f, true),
                     BMRM_OK);
        bmrm_settings s = settings_for(BMRM_ALGORITHM_P_BMRM, 0.1);
        s.num_threads = 4;
        s.tol_rel = 1e-12;
        double w[L1_DIM] = {0};
        bmrm_info info;
        CHECK_STATUS(solve(p, &s, w, L1_DIM, &info), statuses[mode]);
        printf("ERROR parts mode %d: %s\n", mode, bmrm_last_error());
        CHECK(last_error_has(wanted[mode]) && last_error_has("part 3") &&
                  last_error_has("at iteration 1"),
              "mode %d: '%s'", mode, bmrm_last_error());
        bmrm_problem_free(p);
    }
}

typedef struct {
    const mc_data *data;
    int mode;  /* 0 return 3, 1 NaN psi (dense), 2 Inf loss, 3 bad index ignored, 4 Inf psi (sparse),
                  5 a row past the end ignored, 6 a bad index in a list ignored */
    size_t example;
    int calls_of_example, fail_at;
} failing_oracle;

static int32_t mc_failing(void *user, size_t i, const double *w, size_t dim, bmrm_corner *out) {
    failing_oracle *f = user;
    int32_t rc = mc_oracle((void *)f->data, i, w, dim, out);
    if (i != f->example || ++f->calls_of_example != f->fail_at) return rc;
    switch (f->mode) {
    case 0: return 3;
    case 1: bmrm_corner_dense(out)[2] = NAN; return rc;
    case 2: bmrm_corner_set_loss(out, INFINITY); return rc;
    case 3:
        CHECK_STATUS(bmrm_corner_add(out, dim, 1.0), BMRM_ERROR_DIMENSION_MISMATCH);
        return rc; /* the failure is ignored here, and still fails the solve */
    case 4: bmrm_corner_add(out, 5, -INFINITY); return rc;
    case 5: {
        const double row[3] = {1.0, 2.0, 3.0};
        CHECK_STATUS(bmrm_corner_add_row(out, dim - 2, row, 3, 1.0),
                     BMRM_ERROR_DIMENSION_MISMATCH);
        return rc;
    }
    default: {
        const size_t index[3] = {0, dim + 4, 1};
        const double value[3] = {1.0, 2.0, 3.0};
        CHECK_STATUS(bmrm_corner_add_many(out, index, value, 3), BMRM_ERROR_DIMENSION_MISMATCH);
        return rc;
    }
    }
}

static void test_failing_oracle(const mc_data *data) {
    const char *wanted[] = {"max-oracle returned 3", "psi[2] is NaN", "loss is inf",
                            "out of range", "psi[5] is -inf", "entries 16..19 are out of range",
                            "index 22 (entry 1) is out of range"};
    const bmrm_status statuses[] = {BMRM_ERROR_ORACLE_FAILED, BMRM_ERROR_NON_FINITE,
                                    BMRM_ERROR_NON_FINITE, BMRM_ERROR_DIMENSION_MISMATCH,
                                    BMRM_ERROR_NON_FINITE, BMRM_ERROR_DIMENSION_MISMATCH,
                                    BMRM_ERROR_DIMENSION_MISMATCH};
    size_t dim = data->k * data->d;
    double *w = calloc(dim, sizeof(double));
    for (int mode = 0; mode < 7; mode++) {
        failing_oracle f = {data, mode, 41, 0, 7};
        bmrm_problem *p = NULL;
        CHECK_STATUS(bmrm_problem_new(dim, &p), BMRM_OK);
        CHECK_STATUS(bmrm_problem_set_max_oracle(p, data->m, mc_failing, &f, false), BMRM_OK);
        bmrm_settings s = settings_for(BMRM_ALGORITHM_P_BMRM, 1e-3);
        s.num_parts = 4;
        s.tol_rel = 1e-12;
        bmrm_solver *solver = NULL;
        CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_OK);
        for (size_t j = 0; j < dim; j++) w[j] = 0.0;
        CHECK_STATUS(bmrm_solver_run(solver, w, dim), statuses[mode]);
        printf("ERROR oracle mode %d: %s\n", mode, bmrm_last_error());
        CHECK(last_error_has(wanted[mode]) && last_error_has("example 41") &&
                  last_error_has("at iteration 6"),
              "mode %d: '%s'", mode, bmrm_last_error());
        int finite = 1;
        for (size_t j = 0; j < dim; j++) finite &= isfinite(w[j]) != 0;
        CHECK(finite, "w holds non-finite values after a failure");
        bmrm_solver_free(solver);
        bmrm_problem_free(p);
    }
    free(w);
}

/* ---------------------------------------------------------------------- */
/* The corner functions outside an oracle: NULL handles.                  */

static void test_corner_null(void) {
    bmrm_corner_set_loss(NULL, 1.0);
    CHECK(last_error_has("bmrm_corner_set_loss") && last_error_has("NULL"), "'%s'",
          bmrm_last_error());
    bmrm_corner_set_label(NULL, 7);
    CHECK(last_error_has("bmrm_corner_set_label"), "'%s'", bmrm_last_error());
    CHECK_STATUS(bmrm_corner_add(NULL, 0, 1.0), BMRM_ERROR_NULL_ARGUMENT);
    const size_t index[1] = {0};
    const double value[1] = {1.0};
    CHECK_STATUS(bmrm_corner_add_many(NULL, index, value, 1), BMRM_ERROR_NULL_ARGUMENT);
    CHECK(last_error_has("bmrm_corner_add_many") && last_error_has("NULL"), "'%s'",
          bmrm_last_error());
    CHECK_STATUS(bmrm_corner_add_row(NULL, 0, value, 1, 1.0), BMRM_ERROR_NULL_ARGUMENT);
    CHECK(last_error_has("bmrm_corner_add_row") && last_error_has("NULL"), "'%s'",
          bmrm_last_error());
    CHECK(bmrm_corner_dense(NULL) == NULL, "dense(NULL)");
    CHECK(last_error_has("bmrm_corner_dense"), "'%s'", bmrm_last_error());
}

/* ---------------------------------------------------------------------- */
/* Progress: stopping, what it sees, calls back into a busy solver.       */

typedef struct {
    bmrm_solver *solver;
    int stop_after, calls, last_iteration, monotone;
    bmrm_status info_status, set_lambda_status;
    size_t history_len;
    int try_free;
} progress_state;

static int32_t on_progress(void *user, const bmrm_info *info) {
    progress_state *ps = user;
    ps->calls++;
    if ((int)info->iterations != ps->last_iteration + 1 || info->exit != BMRM_EXIT_NOT_RUN)
        ps->monotone = 0;
    ps->last_iteration = (int)info->iterations;
    if (ps->solver != NULL && ps->calls == 1) {
        bmrm_info other;
        ps->info_status = bmrm_solver_info(ps->solver, &other);
        ps->set_lambda_status = bmrm_solver_set_lambda(ps->solver, 2.0);
        ps->history_len = bmrm_solver_history_len(ps->solver);
        if (ps->try_free) bmrm_solver_free(ps->solver); /* refused: the solver is busy */
    }
    return ps->calls >= ps->stop_after;
}

static void test_progress(const mc_data *data) {
    size_t dim = data->k * data->d;
    double *w = calloc(dim, sizeof(double));
    bmrm_problem *p = problem_with_oracle(data, mc_oracle, 1);
    progress_state ps = {NULL, 3, 0, 0, 1, BMRM_OK, BMRM_OK, 99, 1};
    bmrm_settings s = settings_for(BMRM_ALGORITHM_PROX_P_BMRM, 1e-3);
    s.tol_rel = 1e-9;
    s.progress = on_progress;
    s.progress_user = &ps;
    bmrm_solver *solver = NULL;
    CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_OK);
    ps.solver = solver;
    CHECK_STATUS(bmrm_solver_run(solver, w, dim), BMRM_OK);
    bmrm_info info;
    CHECK_STATUS(bmrm_solver_info(solver, &info), BMRM_OK);
    CHECK(info.exit == BMRM_EXIT_STOPPED_BY_USER, "exit %s", bmrm_exit_string(info.exit));
    CHECK(info.iterations == 3 && ps.calls == 3, "stopped after %llu iterations, %d calls",
          (unsigned long long)info.iterations, ps.calls);
    CHECK(ps.monotone, "progress saw iterations out of order or a final exit");
    CHECK(ps.info_status == BMRM_ERROR_INVALID_ARGUMENT, "info from a callback: %d",
          (int)ps.info_status);
    CHECK(ps.set_lambda_status == BMRM_ERROR_INVALID_ARGUMENT, "set_lambda from a callback: %d",
          (int)ps.set_lambda_status);
    CHECK(ps.history_len == 0, "history_len from a callback");
    CHECK(bmrm_solver_history_len(solver) == 3, "history after the stop");

    /* The stopped solver runs on from where it was (the progress callback
     * is kept; let it go on this time). */
    ps.stop_after = 1000000;
    ps.solver = NULL;
    ps.calls = 0;
    ps.last_iteration = 0;
    CHECK_STATUS(bmrm_solver_run(solver, w, dim), BMRM_OK);
    CHECK_STATUS(bmrm_solver_info(solver, &info), BMRM_OK);
    CHECK(info.exit == BMRM_EXIT_CONVERGED_REL, "exit %s", bmrm_exit_string(info.exit));
    CHECK(ps.calls > 0, "progress not called");
    bmrm_solver_free(solver);
    bmrm_problem_free(p);
    free(w);
}

/* ---------------------------------------------------------------------- */
/* Threads: determinism and the thread-safety flag.                       */

typedef struct {
    const mc_data *data;
    atomic_int in_flight, max_in_flight, calls;
} counting_oracle;

static int32_t mc_counting(void *user, size_t i, const double *w, size_t dim, bmrm_corner *out) {
    counting_oracle *c = user;
    int now = atomic_fetch_add(&c->in_flight, 1) + 1;
    int seen = atomic_load(&c->max_in_flight);
    while (now > seen && !atomic_compare_exchange_weak(&c->max_in_flight, &seen, now)) {
    }
    atomic_fetch_add(&c->calls, 1);
    volatile double spin = 0.0; /* a little work, so that overlaps would show */
    for (int k = 0; k < 2000; k++) spin += (double)k;
    int32_t rc = mc_oracle((void *)c->data, i, w, dim, out);
    atomic_fetch_sub(&c->in_flight, 1);
    return rc;
}

static void test_threads(const mc_data *data) {
    size_t dim = data->k * data->d;
    double *w[3];
    const uint64_t threads[3] = {1, 2, 4};
    const bmrm_algorithm algorithms[2] = {BMRM_ALGORITHM_P_BMRM, BMRM_ALGORITHM_PROX_P_BMRM};
    for (size_t a = 0; a < 2; a++) {
        bmrm_info info[3];
        for (size_t t = 0; t < 3; t++) {
            w[t] = calloc(dim, sizeof(double));
            bmrm_problem *p = problem_with_oracle(data, mc_oracle, 1);
            bmrm_settings s = settings_for(algorithms[a], 1e-3);
            s.num_parts = 4;
            s.tol_rel = 1e-6;
            s.num_threads = threads[t];
            CHECK_STATUS(solve(p, &s, w[t], dim, &info[t]), BMRM_OK);
            if (t == 0) print_result("mc", &s, BMRM_OK, &info[t], w[t], dim);
            bmrm_problem_free(p);
        }
        for (size_t t = 1; t < 3; t++) {
            CHECK(memcmp(w[0], w[t], dim * sizeof(double)) == 0,
                  "%s: w differs between 1 and %llu threads", bmrm_algorithm_name(algorithms[a]),
                  (unsigned long long)threads[t]);
            CHECK(info[0].iterations == info[t].iterations && info[0].primal == info[t].primal,
                  "info differs across threads");
        }
        printf("DETERMINISM %s %llu iterations, bit-identical over 1, 2, 4 threads\n",
               bmrm_algorithm_name(algorithms[a]), (unsigned long long)info[0].iterations);
        for (size_t t = 0; t < 3; t++) free(w[t]);
    }

    /* Not thread-safe: never two calls at once, even with 4 threads. */
    for (int safe = 0; safe <= 1; safe++) {
        counting_oracle c;
        c.data = data;
        atomic_init(&c.in_flight, 0);
        atomic_init(&c.max_in_flight, 0);
        atomic_init(&c.calls, 0);
        bmrm_problem *p = NULL;
        CHECK_STATUS(bmrm_problem_new(dim, &p), BMRM_OK);
        CHECK_STATUS(bmrm_problem_set_max_oracle(p, data->m, mc_counting, &c, safe != 0),
                     BMRM_OK);
        bmrm_settings s = settings_for(BMRM_ALGORITHM_P_BMRM, 1e-3);
        s.num_threads = 4;
        s.max_iterations = 5;
        double *w1 = calloc(dim, sizeof(double));
        bmrm_info info;
        CHECK_STATUS(solve(p, &s, w1, dim, &info), BMRM_OK);
        if (!safe) {
            CHECK(atomic_load(&c.max_in_flight) == 1, "a non-thread-safe oracle overlapped: %d",
                  atomic_load(&c.max_in_flight));
        }
        CHECK((uint64_t)atomic_load(&c.calls) == info.oracle_calls, "calls %d, oracle_calls %llu",
              atomic_load(&c.calls), (unsigned long long)info.oracle_calls);
        printf("CONCURRENCY thread_safe=%d max_in_flight=%d\n", safe,
               atomic_load(&c.max_in_flight));
        free(w1);
        bmrm_problem_free(p);
    }
}

/* ---------------------------------------------------------------------- */
/* Sparse and dense psi agree; warm start by set_lambda.                  */

static void test_dense_and_warm_start(const mc_data *data) {
    size_t dim = data->k * data->d;
    double *ws = calloc(dim, sizeof(double)), *wd = calloc(dim, sizeof(double));
    bmrm_info is, id;
    bmrm_problem *sparse = problem_with_oracle(data, mc_oracle, 1);
    bmrm_problem *dense = problem_with_oracle(data, mc_oracle_dense, 1);
    bmrm_settings s = settings_for(BMRM_ALGORITHM_BMRM, 1e-2);
    s.tol_rel = 1e-8;
    CHECK_STATUS(solve(sparse, &s, ws, dim, &is), BMRM_OK);
    CHECK_STATUS(solve(dense, &s, wd, dim, &id), BMRM_OK);
    CHECK(fabs(is.primal - id.primal) <= 1e-7 * fabs(is.primal), "sparse %.17g dense %.17g",
          is.primal, id.primal);
    print_result("mc", &s, BMRM_OK, &is, ws, dim);

    /* Cold solve at the small lambda, for reference. */
    const double lambdas[2] = {1e-2, 1e-3};
    bmrm_settings cold_s = settings_for(BMRM_ALGORITHM_BMRM, lambdas[1]);
    cold_s.tol_rel = 1e-6;
    bmrm_info cold;
    double *wc = calloc(dim, sizeof(double));
    CHECK_STATUS(solve(sparse, &cold_s, wc, dim, &cold), BMRM_OK);

    /* Warm: solve at the large lambda, then set_lambda and run from there. */
    bmrm_settings warm_s = settings_for(BMRM_ALGORITHM_BMRM, lambdas[0]);
    warm_s.tol_rel = 1e-6;
    bmrm_solver *solver = NULL;
    CHECK_STATUS(bmrm_solver_new(sparse, &warm_s, &solver), BMRM_OK);
    double *ww = calloc(dim, sizeof(double));
    CHECK_STATUS(bmrm_solver_run(solver, ww, dim), BMRM_OK);
    CHECK_STATUS(bmrm_solver_set_lambda(solver, lambdas[1]), BMRM_OK);
    CHECK_STATUS(bmrm_solver_run(solver, ww, dim), BMRM_OK);
    bmrm_info warm;
    CHECK_STATUS(bmrm_solver_info(solver, &warm), BMRM_OK);
    CHECK(warm.exit == BMRM_EXIT_CONVERGED_REL && cold.exit == BMRM_EXIT_CONVERGED_REL, "exits");
    CHECK(fabs(warm.primal - cold.primal) <= 2e-6 * fabs(cold.primal), "warm %.17g cold %.17g",
          warm.primal, cold.primal);
    CHECK(warm.lower_bound <= cold.primal && cold.lower_bound <= warm.primal, "certificates");
    CHECK(warm.iterations < cold.iterations, "warm start took %llu iterations, cold %llu",
          (unsigned long long)warm.iterations, (unsigned long long)cold.iterations);
    printf("WARMSTART mc BMRM lambda %g -> %g: warm %llu iterations, cold %llu\n", lambdas[0],
           lambdas[1], (unsigned long long)warm.iterations, (unsigned long long)cold.iterations);
    bmrm_solver_free(solver);
    bmrm_problem_free(sparse);
    bmrm_problem_free(dense);
    free(ws);
    free(wd);
    free(wc);
    free(ww);
}

/* ---------------------------------------------------------------------- */
/* psi by rows (bmrm_corner_add_row) or as one list (bmrm_corner_add_many) */
/* gives the solves of the entry-by-entry oracle, to the bit.              */

/* The same oracle giving psi's two rows by bmrm_corner_add_row. */
static int32_t mc_oracle_rows(void *user, size_t i, const double *w, size_t dim,
                              bmrm_corner *out) {
    const mc_data *data = user;
    (void)dim;
    const double *x = data->x + i * data->d;
    size_t yi = data->y[i], best = mc_answer(data, i, w, out);
    if (best == yi) return 0;
    if (bmrm_corner_add_row(out, yi * data->d, x, data->d, 1.0) != BMRM_OK) return 1;
    return bmrm_corner_add_row(out, best * data->d, x, data->d, -1.0) != BMRM_OK;
}

/* The same oracle giving psi as one list by bmrm_corner_add_many. */
static int32_t mc_oracle_many(void *user, size_t i, const double *w, size_t dim,
                              bmrm_corner *out) {
    const mc_data *data = user;
    (void)dim;
    const double *x = data->x + i * data->d;
    size_t yi = data->y[i], best = mc_answer(data, i, w, out);
    if (best == yi) return 0;
    size_t *index = malloc(2 * data->d * sizeof(size_t));
    double *value = malloc(2 * data->d * sizeof(double));
    if (index == NULL || value == NULL) {
        free(index);
        free(value);
        return 1;
    }
    for (size_t j = 0; j < data->d; j++) {
        index[j] = yi * data->d + j;
        value[j] = x[j];
        index[data->d + j] = best * data->d + j;
        value[data->d + j] = -x[j];
    }
    bmrm_status st = bmrm_corner_add_many(out, index, value, 2 * data->d);
    free(index);
    free(value);
    return st != BMRM_OK;
}

static void test_rows_and_lists(const mc_data *data) {
    size_t dim = data->k * data->d;
    bmrm_max_oracle_fn oracles[3] = {mc_oracle, mc_oracle_rows, mc_oracle_many};
    const bmrm_algorithm algorithms[2] = {BMRM_ALGORITHM_PROX_P_BMRM, BMRM_ALGORITHM_BCFW};
    for (int a = 0; a < 2; a++) {
        double *w[3];
        bmrm_info info[3];
        for (int o = 0; o < 3; o++) {
            w[o] = calloc(dim, sizeof(double));
            bmrm_problem *p = problem_with_oracle(data, oracles[o], 1);
            bmrm_settings s = settings_for(algorithms[a], 1e-2);
            s.tol_rel = 1e-6;
            s.num_threads = 2;
            CHECK_STATUS(solve(p, &s, w[o], dim, &info[o]), BMRM_OK);
            bmrm_problem_free(p);
        }
        for (int o = 1; o < 3; o++) {
            CHECK(info[o].primal == info[0].primal && info[o].lower_bound == info[0].lower_bound &&
                      info[o].iterations == info[0].iterations,
                  "algorithm %d oracle %d: F %.17g LB %.17g (%llu iterations) against %.17g %.17g "
                  "(%llu)",
                  a, o, info[o].primal, info[o].lower_bound,
                  (unsigned long long)info[o].iterations, info[0].primal, info[0].lower_bound,
                  (unsigned long long)info[0].iterations);
            CHECK(memcmp(w[o], w[0], dim * sizeof(double)) == 0, "algorithm %d oracle %d: w differs",
                  a, o);
        }
        CHECK(info[0].primal - info[0].lower_bound <= 1e-6 * info[0].primal, "not converged");
        for (int o = 0; o < 3; o++) free(w[o]);
    }
}

/* ---------------------------------------------------------------------- */
/* Oracles that do not maximise (ABI 4): an answer below the ground truth  */
/* (loss -1, psi 0) is clipped to the truth and the run has certified = 0; */
/* so does an answer marked with bmrm_corner_mark_inexact.                 */

static int32_t mc_oracle_below_truth(void *user, size_t i, const double *w, size_t dim,
                                     bmrm_corner *out) {
    const mc_data *data = user;
    (void)w;
    (void)dim;
    bmrm_corner_set_label(out, data->y[i]);
    bmrm_corner_set_loss(out, -1.0);
    return 0;
}

static int32_t mc_oracle_marked(void *user, size_t i, const double *w, size_t dim,
                                bmrm_corner *out) {
    int32_t r = mc_oracle(user, i, w, dim, out);
    bmrm_corner_mark_inexact(out);
    return r;
}

static void test_uncertified(const mc_data *data) {
    size_t dim = data->k * data->d;
    bmrm_max_oracle_fn oracles[3] = {mc_oracle, mc_oracle_below_truth, mc_oracle_marked};
    const bmrm_algorithm algorithms[2] = {BMRM_ALGORITHM_BMRM, BMRM_ALGORITHM_BCFW};
    for (int a = 0; a < 2; a++) {
        for (int o = 0; o < 3; o++) {
            double *w = calloc(dim, sizeof(double));
            bmrm_problem *p = problem_with_oracle(data, oracles[o], 1);
            bmrm_settings s = settings_for(algorithms[a], 1e-2);
            bmrm_info info;
            memset(&info, 0xab, sizeof info);
            CHECK_STATUS(solve(p, &s, w, dim, &info), BMRM_OK);
            CHECK(info.certified == (o == 0), "algorithm %d oracle %d: certified = %d", a, o,
                  info.certified);
            if (o == 1) {
                /* Clipped at the truth: every hinge is 0, so F(0) = 0 = min F. */
                CHECK(info.primal == 0.0 && info.lower_bound <= 0.0,
                      "algorithm %d: F %.17g LB %.17g", a, info.primal, info.lower_bound);
            }
            bmrm_problem_free(p);
            free(w);
        }
    }
}

/* Runs one group of checks and prints its wall time. */
/* BCFW through the C ABI: every step type against BMRM's certificate,
 * its own figures and per-pass rows, box constraints, the regularisation
 * path, and the errors of the new functions. */
static void test_bcfw(const mc_data *data) {
    size_t dim = data->k * data->d;
    bmrm_problem *p = problem_with_oracle(data, mc_oracle, true);
    double *w = calloc(dim, sizeof(double));
    bmrm_info ref;
    bmrm_settings s = settings_for(BMRM_ALGORITHM_BMRM, 0.05);
    s.tol_rel = 1e-7;
    CHECK_STATUS(solve(p, &s, w, dim, &ref), BMRM_OK);

    for (int step = 0; step < 3; step++) {
        bmrm_settings b = settings_for(BMRM_ALGORITHM_BCFW, 0.05);
        b.step_type = (bmrm_step_type)step;
        b.use_cache = step == 1;
        b.tol_rel = 1e-3;
        bmrm_solver *solver = NULL;
        CHECK_STATUS(bmrm_solver_new(p, &b, &solver), BMRM_OK);
        bmrm_bcfw_info bi;
        CHECK_STATUS(bmrm_solver_bcfw_info(solver, &bi), BMRM_ERROR_INVALID_ARGUMENT);
        memset(w, 0, dim * sizeof(double));
        CHECK_STATUS(bmrm_solver_run(solver, w, dim), BMRM_OK);
        bmrm_info info;
        CHECK_STATUS(bmrm_solver_info(solver, &info), BMRM_OK);
        CHECK(info.exit == BMRM_EXIT_CONVERGED_REL || info.exit == BMRM_EXIT_CONVERGED_ABS,
              "step %d exit %d", step, (int)info.exit);
        CHECK(info.primal - ref.lower_bound <= 1.01e-3 * fabs(info.primal),
              "step %d: primal %g vs BMRM bound %g", step, info.primal, ref.lower_bound);
        CHECK(info.lower_bound <= ref.primal + 1e-12, "step %d bound", step);
        CHECK_STATUS(bmrm_solver_bcfw_info(solver, &bi), BMRM_OK);
        CHECK(bi.passes == info.iterations && bi.oracle_calls >= bi.passes * data->m / 2,
              "passes %llu, calls %llu", (unsigned long long)bi.passes,
              (unsigned long long)bi.oracle_calls);
        CHECK(bi.memory_bytes > 0 && bi.ell > 0.0 && bi.dual <= info.primal, "bcfw info");
        CHECK(step != 1 || bi.cache_hits > 0, "cache hits");
        size_t rows = bmrm_solver_history_len(solver);
        CHECK(rows == info.iterations, "rows %zu", rows);
        bmrm_bcfw_pass row;
        CHECK_STATUS(bmrm_solver_bcfw_pass(solver, rows - 1, &row), BMRM_OK);
        CHECK(row.pass == rows && row.primal - row.lower_bound >= 0.0, "last row");
        CHECK_STATUS(bmrm_solver_bcfw_pass(solver, rows, &row), BMRM_ERROR_INVALID_ARGUMENT);
        CHECK_STATUS(bmrm_solver_bcfw_pass(solver, 0, NULL), BMRM_ERROR_NULL_ARGUMENT);
        /* A later run must start from the w returned. */
        w[0] += 1.0;
        CHECK_STATUS(bmrm_solver_run(solver, w, dim), BMRM_ERROR_INVALID_ARGUMENT);
        bmrm_solver_free(solver);
    }

    /* Box constraints: w >= 0 on the first class's block. */
    bmrm_settings b = settings_for(BMRM_ALGORITHM_BCFW, 0.05);
    bmrm_solver *solver = NULL;
    CHECK_STATUS(bmrm_solver_new(p, &b, &solver), BMRM_OK);
    double *lo = malloc(dim * sizeof(double));
    for (size_t j = 0; j < dim; j++) lo[j] = j < data->d ? 0.0 : -INFINITY;
    CHECK_STATUS(bmrm_solver_set_bounds(solver, lo, NULL, dim - 1), BMRM_ERROR_DIMENSION_MISMATCH);
    CHECK_STATUS(bmrm_solver_set_bounds(NULL, lo, NULL, dim), BMRM_ERROR_NULL_ARGUMENT);
    double *hi = malloc(dim * sizeof(double));
    for (size_t j = 0; j < dim; j++) hi[j] = -1.0;
    CHECK_STATUS(bmrm_solver_set_bounds(solver, lo, hi, dim), BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("coordinate 0"), "'%s'", bmrm_last_error());
    CHECK_STATUS(bmrm_solver_set_bounds(solver, lo, NULL, dim), BMRM_OK);
    memset(w, 0, dim * sizeof(double));
    CHECK_STATUS(bmrm_solver_run(solver, w, dim), BMRM_OK);
    int inside = 1;
    for (size_t j = 0; j < data->d; j++) inside &= w[j] >= 0.0;
    CHECK(inside, "box violated");
    bmrm_info boxed;
    CHECK_STATUS(bmrm_solver_info(solver, &boxed), BMRM_OK);
    CHECK(boxed.primal >= ref.lower_bound, "a box cannot beat the free optimum");

    /* The regularisation path. */
    bmrm_path *path = NULL;
    CHECK_STATUS(bmrm_solver_bcfw_path(solver, 0.05, 1e-3, 0, NULL), BMRM_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(bmrm_solver_bcfw_path(solver, -1.0, 1e-3, 0, &path), BMRM_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(bmrm_solver_set_bounds(solver, NULL, NULL, dim), BMRM_OK);
    CHECK_STATUS(bmrm_solver_bcfw_path(solver, 0.05, 1e-3, 0, &path), BMRM_OK);
    size_t len = bmrm_path_len(path);
    CHECK(len >= 2, "%zu breakpoints", len);
    double previous = INFINITY;
    for (size_t k = 0; k < len; k++) {
        bmrm_breakpoint bp;
        CHECK_STATUS(bmrm_path_breakpoint(path, k, &bp, w, dim), BMRM_OK);
        CHECK(bp.gap <= 0.9 * 0.05 + 1e-12 && bp.lambda < previous, "breakpoint %zu", k);
        previous = bp.lambda;
    }
    bmrm_breakpoint bp;
    CHECK_STATUS(bmrm_path_breakpoint(path, len, &bp, NULL, 0), BMRM_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(bmrm_path_breakpoint(path, 0, &bp, w, dim + 1), BMRM_ERROR_DIMENSION_MISMATCH);
    CHECK(bmrm_path_len(NULL) == 0, "len of NULL");
    bmrm_path_free(path);
    bmrm_path_free(NULL);
    bmrm_solver_free(solver);

    /* The same box on every bundle method: feasible, and its bound and BCFW's
     * boxed primal do not cross. A start outside the box is projected. */
    for (int a = BMRM_ALGORITHM_BMRM; a <= BMRM_ALGORITHM_PROX_P_BMRM; a++) {
        s = settings_for((bmrm_algorithm)a, 0.05);
        s.tol_rel = 1e-6;
        CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_OK);
        CHECK_STATUS(bmrm_solver_set_bounds(solver, lo, NULL, dim), BMRM_OK);
        for (size_t j = 0; j < dim; j++) w[j] = -1.0;
        CHECK_STATUS(bmrm_solver_run(solver, w, dim), BMRM_OK);
        int in_box = 1;
        for (size_t j = 0; j < data->d; j++) in_box &= w[j] >= 0.0;
        CHECK(in_box, "%s: box violated", bmrm_algorithm_name((bmrm_algorithm)a));
        bmrm_info info;
        CHECK_STATUS(bmrm_solver_info(solver, &info), BMRM_OK);
        CHECK(info.lower_bound <= boxed.primal + 1e-12 && boxed.lower_bound <= info.primal + 1e-12,
              "%s: bounds %.17g %.17g vs primals %.17g %.17g",
              bmrm_algorithm_name((bmrm_algorithm)a), info.lower_bound, boxed.lower_bound,
              info.primal, boxed.primal);
        if (a != BMRM_ALGORITHM_BMRM) {
            bmrm_solver_free(solver);
            continue;
        }
        /* A w >= b: the first two weights sum to at least 0.5. */
        double *rows = calloc(dim, sizeof(double));
        rows[0] = 1.0;
        rows[1] = 1.0;
        double rhs = 0.5;
        CHECK_STATUS(bmrm_solver_set_linear_constraints(solver, rows, 1, dim + 1, &rhs),
                     BMRM_ERROR_DIMENSION_MISMATCH);
        CHECK_STATUS(bmrm_solver_set_linear_constraints(solver, NULL, 1, dim, &rhs),
                     BMRM_ERROR_NULL_ARGUMENT);
        CHECK_STATUS(bmrm_solver_set_linear_constraints(NULL, rows, 1, dim, &rhs),
                     BMRM_ERROR_NULL_ARGUMENT);
        rows[1] = NAN;
        CHECK_STATUS(bmrm_solver_set_linear_constraints(solver, rows, 1, dim, &rhs),
                     BMRM_ERROR_NON_FINITE);
        CHECK(last_error_has("A[0][1]"), "'%s'", bmrm_last_error());
        rows[1] = 1.0;
        CHECK_STATUS(bmrm_solver_set_linear_constraints(solver, rows, 1, dim, &rhs), BMRM_OK);
        memset(w, 0, dim * sizeof(double));
        CHECK_STATUS(bmrm_solver_run(solver, w, dim), BMRM_ERROR_INVALID_ARGUMENT);
        CHECK(last_error_has("row 0"), "'%s'", bmrm_last_error());
        w[0] = 1.0;
        CHECK_STATUS(bmrm_solver_run(solver, w, dim), BMRM_OK);
        CHECK(w[0] + w[1] >= 0.5 && w[0] >= 0.0 && w[1] >= 0.0, "A w >= b violated");
        bmrm_info cut;
        CHECK_STATUS(bmrm_solver_info(solver, &cut), BMRM_OK);
        CHECK(cut.lower_bound <= cut.primal && cut.primal >= info.lower_bound - 1e-12,
              "a row cannot beat the box alone");
        CHECK_STATUS(bmrm_solver_set_linear_constraints(solver, NULL, 0, dim, NULL), BMRM_OK);
        free(rows);
        bmrm_solver_free(solver);
    }
    /* SGD projects onto a box and refuses rows by name; the cutting-plane
       method refuses both; BCFW refuses rows. */
    s = settings_for(BMRM_ALGORITHM_SGD, 0.05);
    CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_OK);
    CHECK_STATUS(bmrm_solver_set_bounds(solver, lo, NULL, dim), BMRM_OK);
    CHECK_STATUS(bmrm_solver_run(solver, w, dim), BMRM_OK);
    for (size_t j = 0; j < dim; j++) CHECK(w[j] >= lo[j], "SGD: w[%zu] = %g below the box", j, w[j]);
    CHECK_STATUS(bmrm_solver_set_linear_constraints(solver, w, 1, dim, w),
                 BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("SGD"), "'%s'", bmrm_last_error());
    bmrm_solver_free(solver);
    s = settings_for(BMRM_ALGORITHM_CUTTING_PLANE, 0.05);
    CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_OK);
    CHECK_STATUS(bmrm_solver_set_bounds(solver, lo, NULL, dim), BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("cutting-plane"), "'%s'", bmrm_last_error());
    bmrm_solver_free(solver);
    s = settings_for(BMRM_ALGORITHM_BCFW, 0.05);
    CHECK_STATUS(bmrm_solver_new(p, &s, &solver), BMRM_OK);
    double one = 1.0;
    CHECK_STATUS(bmrm_solver_set_linear_constraints(solver, lo, 1, dim, &one),
                 BMRM_ERROR_INVALID_ARGUMENT);
    CHECK(last_error_has("BCFW"), "'%s'", bmrm_last_error());
    bmrm_solver_free(solver);
    free(lo);
    free(hi);
    free(w);
    bmrm_problem_free(p);
}

static void timed(const char *name, void (*f)(const mc_data *), const mc_data *data) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    f(data);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("TIME %s %.3f\n", name,
           (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
}

static void strings_and_last_error(const mc_data *d) { (void)d; test_strings_and_last_error(); }
static void problem_errors(const mc_data *d) { (void)d; test_problem_errors(); }
static void settings(const mc_data *d) { (void)d; test_settings(); }
static void l1_solutions(const mc_data *d) { (void)d; test_l1_solutions(); }
static void run_info_history(const mc_data *d) { (void)d; test_run_info_history(); }
static void failing_risk_(const mc_data *d) { (void)d; test_failing_risk(); }
static void corner_null(const mc_data *d) { (void)d; test_corner_null(); }
static void failing_parts_(const mc_data *d) { (void)d; test_failing_parts(); }

int main(void) {
    print_layout();
    mc_data data = mc_make(120, 6, 3, 7);
    timed("strings_and_last_error", strings_and_last_error, &data);
    timed("problem_errors", problem_errors, &data);
    timed("settings", settings, &data);
    timed("l1_solutions", l1_solutions, &data);
    timed("run_info_history", run_info_history, &data);
    timed("failing_risk", failing_risk_, &data);
    timed("corner_null", corner_null, &data);
    timed("rows_and_lists", test_rows_and_lists, &data);
    timed("failing_parts", failing_parts_, &data);
    timed("failing_oracle", test_failing_oracle, &data);
    timed("progress", test_progress, &data);
    timed("threads", test_threads, &data);
    timed("dense_and_warm_start", test_dense_and_warm_start, &data);
    timed("bcfw", test_bcfw, &data);
    timed("uncertified", test_uncertified, &data);
    mc_free(&data);
    printf("%d passed, %d failed\n", checks_passed, checks_failed);
    return checks_failed == 0 ? 0 : 1;
}

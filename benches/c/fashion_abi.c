/*
 * The multiclass SVM on Fashion-MNIST trained through the C ABI, for
 * benches/liblinear.rs: the data come from raw files the benchmark writes,
 * the run stops (from the progress callback) once its best primal value is
 * at most TARGET and its own certificate says gap <= WITHIN * F, and the
 * program prints the times at which each happened.
 *
 * Two ways a C user gets the problem:
 * - builtin: bmrm_problem_new_multiclass (the library's batched model);
 * - callback: bmrm_problem_new + bmrm_problem_set_max_oracle with the
 *   oracle below, written as a C user would (dense scores, the corner given
 *   sparsely, one bmrm_corner_add per non-zero), thread-safe;
 * - callback-row: the same oracle giving each of the corner's two feature
 *   rows in one bmrm_corner_add_row call.
 *
 * usage: fashion_abi X_FILE Y_FILE M D K LAMBDA TARGET WITHIN THREADS PARTS
 *                    ALGORITHM(proxp|p|bmrm|bcfw|bcpfw-cache)
 *                    MODE(builtin|callback|callback-row) W_OUT
 * X_FILE: M * D floats (native byte order), Y_FILE: M uint32 labels in 0..K.
 * Prints one line: "result <to_target s|-> <certified s|-> <iterations>
 * <oracle_calls> <primal> <run wall s> <oracle s>" (the last from
 * bmrm_info: the time in the oracle), and writes w (doubles) to W_OUT.
 */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bmrm.h>

typedef struct {
    size_t m, d, k;
    const float *x; /* m x d */
    const uint32_t *y;
} data;

/* Class c's score of example i: <w_c, (x_i, 1)>. */
static double score(const data *s, const double *w, size_t c, const float *x) {
    const double *wc = w + c * (s->d + 1);
    double v = wc[s->d];
    for (size_t j = 0; j < s->d; j++) v += wc[j] * (double)x[j];
    return v;
}

/* y^ = argmax_c [c != y_i] + <w_c, (x_i, 1)>, set as the corner's label with
 * its loss [y^ != y_i]. */
static size_t answer(const data *s, size_t i, const double *w, bmrm_corner *out) {
    const float *x = s->x + i * s->d;
    size_t yi = s->y[i], best = yi;
    double best_score = score(s, w, yi, x);
    for (size_t c = 0; c < s->k; c++) {
        if (c == yi) continue;
        double v = 1.0 + score(s, w, c, x);
        if (v > best_score) {
            best = c;
            best_score = v;
        }
    }
    bmrm_corner_set_label(out, (uint64_t)best);
    if (best != yi) bmrm_corner_set_loss(out, 1.0);
    return best;
}

/* The oracle: psi = +(x_i, 1) in block y_i and -(x_i, 1) in block y^, one
 * bmrm_corner_add per non-zero. */
static int32_t oracle(void *user, size_t i, const double *w, size_t dim, bmrm_corner *out) {
    const data *s = user;
    const float *x = s->x + i * s->d;
    size_t yi = s->y[i], best = answer(s, i, w, out), dp = s->d + 1;
    (void)dim;
    if (best == yi) return 0;
    for (size_t j = 0; j <= s->d; j++) {
        double v = j < s->d ? (double)x[j] : 1.0;
        if (v == 0.0) continue;
        if (bmrm_corner_add(out, yi * dp + j, v) != BMRM_OK) return 1;
        if (bmrm_corner_add(out, best * dp + j, -v) != BMRM_OK) return 1;
    }
    return 0;
}

/* The same oracle, psi's two rows in two bmrm_corner_add_row calls. */
static int32_t oracle_rows(void *user, size_t i, const double *w, size_t dim, bmrm_corner *out) {
    const data *s = user;
    const float *x = s->x + i * s->d;
    size_t yi = s->y[i], best = answer(s, i, w, out), dp = s->d + 1;
    (void)dim;
    if (best == yi) return 0;
    double row[1024];
    if (dp > sizeof row / sizeof row[0]) return 1;
    for (size_t j = 0; j < s->d; j++) row[j] = (double)x[j];
    row[s->d] = 1.0;
    if (bmrm_corner_add_row(out, yi * dp, row, dp, 1.0) != BMRM_OK) return 1;
    return bmrm_corner_add_row(out, best * dp, row, dp, -1.0) != BMRM_OK;
}

typedef struct {
    double target, within;
    double to_target, certified; /* seconds, -1 until seen */
} watch;

/* Stops the run once both figures are in (as the Rust rows' observer). */
static int32_t progress(void *user, const bmrm_info *info) {
    watch *t = user;
    if (t->to_target < 0 && info->primal <= t->target) t->to_target = info->elapsed_seconds;
    if (t->certified < 0 && isfinite(info->primal) && info->gap <= t->within * fabs(info->primal))
        t->certified = info->elapsed_seconds;
    return t->to_target >= 0 && t->certified >= 0;
}

static void *read_file(const char *path, size_t bytes) {
    FILE *f = fopen(path, "rb");
    void *buf = malloc(bytes ? bytes : 1);
    if (!f || !buf || fread(buf, 1, bytes, f) != bytes) {
        fprintf(stderr, "cannot read %zu bytes from %s\n", bytes, path);
        exit(2);
    }
    fclose(f);
    return buf;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define TRY(call)                                                                    \
    do {                                                                             \
        bmrm_status st_ = (call);                                                    \
        if (st_ != BMRM_OK) {                                                        \
            fprintf(stderr, "%s: %s\n", bmrm_status_string(st_), bmrm_last_error()); \
            return 1;                                                                \
        }                                                                            \
    } while (0)

int main(int argc, char **argv) {
    if (argc != 14) {
        fprintf(stderr, "usage: see the comment at the top of fashion_abi.c\n");
        return 2;
    }
    if (bmrm_abi_version() != BMRM_ABI_VERSION) {
        fprintf(stderr, "libbmrm has ABI %u, this program was built for %u\n",
                bmrm_abi_version(), BMRM_ABI_VERSION);
        return 2;
    }
    data s;
    s.m = strtoull(argv[3], NULL, 10);
    s.d = strtoull(argv[4], NULL, 10);
    s.k = strtoull(argv[5], NULL, 10);
    s.x = read_file(argv[1], s.m * s.d * sizeof(float));
    s.y = read_file(argv[2], s.m * sizeof(uint32_t));
    double lambda = strtod(argv[6], NULL);
    watch t = {strtod(argv[7], NULL), strtod(argv[8], NULL), -1.0, -1.0};
    uint64_t threads = strtoull(argv[9], NULL, 10), parts = strtoull(argv[10], NULL, 10);
    const char *alg = argv[11], *mode = argv[12];
    const size_t dim = s.k * (s.d + 1);

    bmrm_algorithm algorithm;
    if (!strcmp(alg, "proxp")) algorithm = BMRM_ALGORITHM_PROX_P_BMRM;
    else if (!strcmp(alg, "p")) algorithm = BMRM_ALGORITHM_P_BMRM;
    else if (!strcmp(alg, "bmrm")) algorithm = BMRM_ALGORITHM_BMRM;
    else if (!strcmp(alg, "bcfw") || !strcmp(alg, "bcpfw-cache")) algorithm = BMRM_ALGORITHM_BCFW;
    else {
        fprintf(stderr, "unknown algorithm %s\n", alg);
        return 2;
    }

    bmrm_problem *problem = NULL;
    if (!strcmp(mode, "builtin")) {
        TRY(bmrm_problem_new_multiclass(s.x, s.m, s.d, s.y, s.k, true, &problem));
    } else if (!strcmp(mode, "callback")) {
        TRY(bmrm_problem_new(dim, &problem));
        TRY(bmrm_problem_set_max_oracle(problem, s.m, oracle, &s, true));
    } else if (!strcmp(mode, "callback-row")) {
        TRY(bmrm_problem_new(dim, &problem));
        TRY(bmrm_problem_set_max_oracle(problem, s.m, oracle_rows, &s, true));
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }

    bmrm_settings settings = bmrm_settings_default(algorithm);
    settings.lambda = lambda;
    settings.tol_rel = 0.0; /* stopped by the progress callback */
    settings.max_iterations = 100000;
    settings.time_limit_seconds = 1800.0;
    settings.num_threads = threads;
    if (algorithm == BMRM_ALGORITHM_P_BMRM || algorithm == BMRM_ALGORITHM_PROX_P_BMRM)
        settings.num_parts = parts;
    if (!strcmp(alg, "bcpfw-cache")) {
        settings.step_type = BMRM_STEP_PAIRWISE;
        settings.use_cache = 1;
    }
    settings.progress = progress;
    settings.progress_user = &t;

    bmrm_solver *solver = NULL;
    TRY(bmrm_solver_new(problem, &settings, &solver));
    bmrm_problem_free(problem);
    double *w = calloc(dim, sizeof(double));
    double start = now();
    TRY(bmrm_solver_run(solver, w, dim));
    double wall = now() - start;
    bmrm_info info;
    TRY(bmrm_solver_info(solver, &info));
    bmrm_solver_free(solver);

    FILE *f = fopen(argv[13], "wb");
    if (!f || fwrite(w, sizeof(double), dim, f) != dim || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", argv[13]);
        return 2;
    }
    char a[32] = "-", b[32] = "-";
    if (t.to_target >= 0) snprintf(a, sizeof a, "%.4f", t.to_target);
    if (t.certified >= 0) snprintf(b, sizeof b, "%.4f", t.certified);
    printf("result %s %s %llu %llu %.12e %.4f %.4f\n", a, b, (unsigned long long)info.iterations,
           (unsigned long long)info.oracle_calls, info.primal, wall, info.oracle_seconds);
    free(w);
    free((void *)s.x);
    free((void *)s.y);
    return 0;
}

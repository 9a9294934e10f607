/*
 * A multiclass SVM (Crammer-Singer, 0/1 loss) trained from C through the
 * max-oracle, psi given as two rows with bmrm_corner_add_row. The data are
 * generated here: K Gaussian blobs in D dimensions.
 *
 * Build against an installed bmrm (see scripts/install.sh):
 *     cc multiclass.c $(pkg-config --cflags --libs bmrm) -lm -o multiclass
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <bmrm.h>

enum { K = 4, D = 10, M_TRAIN = 2000, M_TEST = 1000, DP = D + 1 /* with a bias */ };

typedef struct {
    size_t m;
    double *x; /* m x DP, row-major, last feature 1 */
    int *y;    /* labels in 0..K */
} dataset;

/* A seeded generator: 64-bit LCG, uniform in [0, 1), Gaussian by Box-Muller. */
static uint64_t rng_state = 12345;
static double uniform(void) {
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return ((double)(rng_state >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
static double gaussian(void) {
    return sqrt(-2.0 * log(uniform())) * cos(6.283185307179586 * uniform());
}

/* Class c has its mean at 2 on coordinates c and c + K; unit noise. */
static dataset make_data(size_t m) {
    dataset s = {m, malloc(m * DP * sizeof(double)), malloc(m * sizeof(int))};
    for (size_t i = 0; i < m; i++) {
        int c = (int)(uniform() * K);
        s.y[i] = c;
        for (int j = 0; j < D; j++) {
            double mean = (j == c || j == c + K) ? 2.0 : 0.0;
            s.x[i * DP + j] = mean + gaussian();
        }
        s.x[i * DP + D] = 1.0;
    }
    return s;
}

static double score(const double *w, int c, const double *x) {
    double s = 0.0;
    for (int j = 0; j < DP; j++) s += w[c * DP + j] * x[j];
    return s;
}

/* The loss-augmented argmax of example i: y^ = argmax_c [c != y_i] + <w_c, x_i>,
 * reported as loss [y^ != y_i], psi = +x_i in block y_i and -x_i in block y^,
 * label id y^. Thread-safe: it only reads the data and w. */
static int32_t oracle(void *user, size_t i, const double *w, size_t dim, bmrm_corner *out) {
    const dataset *s = user;
    const double *x = s->x + i * DP;
    int yi = s->y[i], best = yi;
    double best_score = score(w, yi, x);
    (void)dim;
    for (int c = 0; c < K; c++) {
        double v = 1.0 + score(w, c, x);
        if (c != yi && v > best_score) {
            best = c;
            best_score = v;
        }
    }
    bmrm_corner_set_label(out, (uint64_t)best);
    if (best == yi) return 0; /* loss 0, psi 0 */
    bmrm_corner_set_loss(out, 1.0);
    /* psi = +x in block y_i, -x in block y^ (zeros skipped), a row each */
    if (bmrm_corner_add_row(out, (size_t)yi * DP, x, DP, 1.0) != BMRM_OK) return 1;
    return bmrm_corner_add_row(out, (size_t)best * DP, x, DP, -1.0) != BMRM_OK;
}

static int32_t progress(void *user, const bmrm_info *info) {
    (void)user;
    if (info->iterations % 10 == 0) {
        printf("  iteration %3llu  F = %.6f  gap = %.2e\n", (unsigned long long)info->iterations,
               info->primal, info->gap);
    }
    return 0; /* non-zero would stop the run */
}

static double error_rate(const dataset *s, const double *w) {
    size_t wrong = 0;
    for (size_t i = 0; i < s->m; i++) {
        int best = 0;
        for (int c = 1; c < K; c++) {
            if (score(w, c, s->x + i * DP) > score(w, best, s->x + i * DP)) best = c;
        }
        wrong += best != s->y[i];
    }
    return (double)wrong / (double)s->m;
}

#define TRY(call)                                                                      \
    do {                                                                               \
        bmrm_status st_ = (call);                                                      \
        if (st_ != BMRM_OK) {                                                          \
            fprintf(stderr, "%s: %s\n", bmrm_status_string(st_), bmrm_last_error());   \
            return 1;                                                                  \
        }                                                                              \
    } while (0)

int main(void) {
    if (bmrm_abi_version() != BMRM_ABI_VERSION) {
        fprintf(stderr, "libbmrm has ABI %u, this program was built for %u\n",
                bmrm_abi_version(), BMRM_ABI_VERSION);
        return 1;
    }
    dataset train = make_data(M_TRAIN), test = make_data(M_TEST);
    const size_t dim = K * DP;
    double w[K * DP] = {0};

    bmrm_problem *problem = NULL;
    TRY(bmrm_problem_new(dim, &problem));
    TRY(bmrm_problem_set_max_oracle(problem, train.m, oracle, &train, true));

    bmrm_settings settings = bmrm_settings_default(BMRM_ALGORITHM_PROX_P_BMRM);
    settings.lambda = 1e-3; /* mean hinge: LIBLINEAR's C = 1 / (m lambda) = 0.5 */
    settings.num_parts = 8; /* 8 cutting-plane models of 250 examples each */
    settings.tol_rel = 1e-4;
    settings.progress = progress;

    bmrm_solver *solver = NULL;
    TRY(bmrm_solver_new(problem, &settings, &solver));
    bmrm_problem_free(problem); /* the solver keeps what it needs */

    printf("bmrm %s: %s, %d classes, %d features, %d examples\n", bmrm_version(),
           bmrm_algorithm_name(settings.algorithm), K, D, M_TRAIN);
    TRY(bmrm_solver_run(solver, w, dim));
    bmrm_info info;
    TRY(bmrm_solver_info(solver, &info));
    printf("%s after %llu iterations: F = %.6f, lower bound = %.6f, gap = %.2e\n",
           bmrm_exit_string(info.exit), (unsigned long long)info.iterations, info.primal,
           info.lower_bound, info.gap);

    /* A smaller lambda, warm-started from this solution and the kept planes. */
    TRY(bmrm_solver_set_lambda(solver, 1e-4));
    TRY(bmrm_solver_run(solver, w, dim));
    bmrm_info info2;
    TRY(bmrm_solver_info(solver, &info2));
    printf("lambda 1e-4, warm start: %llu iterations, F = %.6f, gap = %.2e\n",
           (unsigned long long)info2.iterations, info2.primal, info2.gap);

    double train_error = error_rate(&train, w), test_error = error_rate(&test, w);
    printf("training error %.4f, test error %.4f\n", train_error, test_error);

    bmrm_solver_free(solver);
    free(train.x);
    free(train.y);
    free(test.x);
    free(test.y);
    return test_error < 0.2 ? 0 : 1;
}
